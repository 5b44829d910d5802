//! The rules of agora-spaces: every finding key its cases and reply checks give, other
//! than a case's own failures (keyed by the case id) and the rules every suite shares
//! (`crate::rules::SHARED`). Most come from the one reading of every server frame
//! (`expect::check_frame`), owned by the case whose subject the shape is; the
//! `client:*` rules judge the frames a client sends in the client role.
//!
//! Left to the shared rules: `transport:*` (including `transport:connection-closed`,
//! given with no requirement ids), `control:none`, and `schema:<name>` without a
//! pointer (the harness cannot load a schema). A case's `ctx.warn` text becomes a
//! finding keyed `<case id>~<requirement id>` by the runner: the case explains it.

use crate::case::Level;
use crate::rules::rules;

rules! {
    // The detail is the kind: no-answer, refused, unreachable or failed (same ids).
    CONNECT {
        key: "agora-spaces/connect:*",
        requirements: &["ASP-003"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "a WebSocket connection with agent_id and the profile's token opens",
        fails: "the upgrade is not completed in time, is refused with an HTTP status (401 or 403: perhaps another token), or the target cannot be reached; the case is blocked",
        passes: "the upgrade completes with 101",
    }
    FRAME_NOT_JSON {
        key: "agora-spaces/frame:not-json",
        requirements: &["ASP-001"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "every server frame is JSON",
        fails: "a server frame that does not parse as JSON; it is skipped, and a wait that then ends empty-handed is blocked by it",
        passes: "every frame parses as JSON",
    }
    FRAME_NOT_OBJECT {
        key: "agora-spaces/frame:not-object",
        requirements: &["ASP-001"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "every server frame is a JSON object",
        fails: "a server frame that is JSON but not an object (an array, a string, a number)",
        passes: "every frame is a JSON object",
    }
    FRAME_JSON_RPC {
        key: "agora-spaces/frame:json-rpc",
        requirements: &["ASP-A1"],
        level: None,
        owner: "",
        summary: "events come as plain event objects with a type (informational: JSON-RPC framing is read too)",
        fails: "events in JSON-RPC framing: the type in method and members in params, the event in result, or a JSON-RPC error object",
        passes: "events with a top-level type member",
    }
    FRAME_NO_TYPE {
        key: "agora-spaces/frame:no-type",
        requirements: &["ASP-018"],
        level: None,
        owner: "agora-spaces/invalid-requests",
        summary: "every server frame has a non-empty string type",
        fails: "a server object with no string type that is not JSON-RPC framing either; it is skipped as unreadable",
        passes: "every frame names its type",
    }
    EVENT_NO_TIMESTAMP {
        key: "agora-spaces/event:no-timestamp",
        requirements: &["ASP-020", "ASP-A6"],
        level: Some(Level::Should),
        owner: "agora-spaces/handshake",
        summary: "server events carry a timestamp",
        fails: "a server event without a timestamp member",
        passes: "every event with a timestamp",
    }
    EVENT_TIMESTAMP {
        key: "agora-spaces/event:timestamp",
        requirements: &["ASP-020", "ASP-A6"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "an event's timestamp is a number, Unix seconds or milliseconds",
        fails: "a timestamp that is not a number, or a number neither seconds nor milliseconds within a day of the harness clock",
        passes: "a numeric timestamp near the harness clock, in seconds or milliseconds",
    }
    // Exact `registered:connection-id` is also given where a case reads the
    // connection id (expect::connection_id); the detail is agent-id or connection-id.
    REGISTERED {
        key: "agora-spaces/registered:*",
        requirements: &["ASP-008"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "agent.registered carries agent.id and agent.connection_id as non-empty strings",
        fails: "no agent.id or connection_id, a value of another type or empty, or either under another name (agent_id, connectionId, a string agent); read on leniently",
        passes: "agent.registered with agent.id and agent.connection_id, non-empty strings",
    }
    HANDSHAKE_REFUSED {
        key: "agora-spaces/handshake:refused",
        requirements: &["ASP-003"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "a connection with agent_id and the profile's token is registered, not refused",
        fails: "the connection draws an error event (UNAUTHORIZED: perhaps another token), or is closed without agent.registered or an error; the case is blocked",
        passes: "agent.registered, unprompted or in answer to agent.register",
    }
    HANDSHAKE_NO_REGISTERED {
        key: "agora-spaces/handshake:no-registered",
        requirements: &["ASP-010", "ASP-A3"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "agent.registered comes after connecting, or at the latest in answer to agent.register",
        fails: "no agent.registered within 5 s of connecting (or half the heartbeat timeout), and agent.register draws an error or nothing within the case timeout",
        passes: "agent.registered unprompted, or in answer to agent.register",
    }
    // Given both by the reading of every error event and by a case that needs the
    // code (expect::code_of, which blocks the case); same ids and owner.
    ERROR_CODE {
        key: "agora-spaces/error:code",
        requirements: &["ASP-041"],
        level: None,
        owner: "agora-spaces/invalid-requests",
        summary: "an error event carries its code, a string, in `code`",
        fails: "an error with no code, a code of another type, or the code under another name (error_code, errorCode, error.code, status)",
        passes: "an error event with a string code",
    }
    ERROR_MESSAGE {
        key: "agora-spaces/error:message",
        requirements: &["ASP-041"],
        level: None,
        owner: "agora-spaces/invalid-requests",
        summary: "an error event carries its message, a string, in `message`",
        fails: "an error with no message, a message of another type, or the message under another name (detail, msg, reason, error.message)",
        passes: "an error event with a string message",
    }
    // Given both by the reading of every error event (the id under another name) and
    // by expect::check_request_id (the id absent or another); same ids and owner.
    ERROR_REQUEST_ID {
        key: "agora-spaces/error:request-id",
        requirements: &["ASP-041"],
        level: None,
        owner: "agora-spaces/join-missing",
        summary: "an error answering a message with an id carries that id in `request_id`",
        fails: "an error answering a message with no request_id, another request_id, or the id under another name (requestId, req_id)",
        passes: "the error's request_id is the id of the message it answers",
    }
    // The detail is the code the target sent.
    ERROR_UNKNOWN_CODE {
        key: "agora-spaces/error:unknown-code:*",
        requirements: &["ASP-042"],
        level: Some(Level::Should),
        owner: "agora-spaces/invalid-requests",
        summary: "an error code is one of the table of agora-spaces.zh.md",
        fails: "an error code outside INVALID_REQUEST, UNAUTHORIZED, AGENT_EXISTS, SPACE_NOT_FOUND, SPACE_FULL and RATE_LIMITED",
        passes: "every error code from the table",
    }
    JOINED_MEMBERS {
        key: "agora-spaces/joined:members",
        requirements: &["ASP-023"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "space.joined lists its members in `members`, an array of agent ids",
        fails: "no members list, members as objects or a map, or the list under another name (agents, users, participants); read on leniently",
        passes: "members, an array of agent id strings",
    }
    MEMBERS_LIST {
        key: "agora-spaces/members:list",
        requirements: &["ASP-026"],
        level: None,
        owner: "agora-spaces/member-updates",
        summary: "space.members lists the members in `members`, an array of agent ids",
        fails: "no members list, members as objects or a map, or the list under another name (agents, users, participants); read on leniently",
        passes: "members, an array of agent id strings",
    }
    EVENT_DATA {
        key: "agora-spaces/event:data",
        requirements: &["ASP-029"],
        level: None,
        owner: "agora-spaces/publish-fanout",
        summary: "space.event carries its text in data.text and its sender in data.from, strings",
        fails: "no data.text, a data.from that is not a string, or text or sender under other names (content, message, sender, agent_id) or beside data",
        passes: "data.text and data.from, strings",
    }
    DELTA_DATA {
        key: "agora-spaces/delta:data",
        requirements: &["ASP-032"],
        level: None,
        owner: "agora-spaces/delta-stream",
        summary: "space.event.delta carries its chunk in data.text, and data.from when given is a string",
        fails: "no data.text, a data.from that is not a string, or text or sender under other names (content, message, sender, agent_id) or beside data",
        passes: "data.text a string, data.from a string or absent",
    }
    HEARTBEAT_SHAPE {
        key: "agora-spaces/heartbeat:shape",
        requirements: &["ASP-017"],
        level: None,
        owner: "agora-spaces/heartbeat-keepalive",
        summary: "a server heartbeat is agent.heartbeat {type, timestamp}",
        fails: "a heartbeat of a type the spec does not define (ping, pong, ack, keepalive, heartbeat)",
        passes: "heartbeats of type agent.heartbeat",
    }
    // The schema rules: the suite gives `schema:<name>:<pointer>` with each schema's
    // own requirement ids and owner (expect::owner_of); the detail is the pointer,
    // array indices as `*`. Pointers judged by the rules above are passed over.
    SCHEMA_AGENT_REGISTERED {
        key: "agora-spaces/schema:agent-registered:*",
        requirements: &["ASP-008"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "agent.registered matches schemas/agora-spaces/agent-registered.schema.json",
        fails: "a member missing, of another type or outside its pattern (other than agent.id and connection_id, judged apart)",
        passes: "an agent.registered the schema validates",
    }
    SCHEMA_AGENT_HEARTBEAT {
        key: "agora-spaces/schema:agent-heartbeat:*",
        requirements: &["ASP-017"],
        level: None,
        owner: "agora-spaces/heartbeat-keepalive",
        summary: "agent.heartbeat matches schemas/agora-spaces/agent-heartbeat.schema.json",
        fails: "a member missing, of another type or outside its pattern",
        passes: "an agent.heartbeat the schema validates",
    }
    SCHEMA_SPACE_JOINED {
        key: "agora-spaces/schema:space-joined:*",
        requirements: &["ASP-023"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "space.joined matches schemas/agora-spaces/space-joined.schema.json",
        fails: "a member missing, of another type or outside its pattern (other than members, judged apart)",
        passes: "a space.joined the schema validates",
    }
    SCHEMA_SPACE_MEMBERS {
        key: "agora-spaces/schema:space-members:*",
        requirements: &["ASP-026"],
        level: None,
        owner: "agora-spaces/member-updates",
        summary: "space.members matches schemas/agora-spaces/space-members.schema.json",
        fails: "a member missing (joined, left), of another type or outside its pattern (other than members, judged apart)",
        passes: "a space.members the schema validates",
    }
    SCHEMA_SPACE_EVENT {
        key: "agora-spaces/schema:space-event:*",
        requirements: &["ASP-029"],
        level: None,
        owner: "agora-spaces/publish-fanout",
        summary: "space.event matches schemas/agora-spaces/space-event.schema.json",
        fails: "a member missing, of another type or outside its pattern (other than data.text and data.from, judged apart)",
        passes: "a space.event the schema validates",
    }
    SCHEMA_SPACE_EVENT_DELTA {
        key: "agora-spaces/schema:space-event-delta:*",
        requirements: &["ASP-032"],
        level: None,
        owner: "agora-spaces/delta-stream",
        summary: "space.event.delta matches schemas/agora-spaces/space-event-delta.schema.json",
        fails: "a member missing (event_id, space), of another type or outside its pattern (other than data, judged apart)",
        passes: "a space.event.delta the schema validates",
    }
    SCHEMA_SPACE_EVENT_DONE {
        key: "agora-spaces/schema:space-event-done:*",
        requirements: &["ASP-034"],
        level: None,
        owner: "agora-spaces/delta-stream",
        summary: "space.event.done matches schemas/agora-spaces/space-event-done.schema.json",
        fails: "a member missing (event_id, space), of another type or outside its pattern",
        passes: "a space.event.done the schema validates",
    }
    SCHEMA_SPACE_EVENT_CANCEL {
        key: "agora-spaces/schema:space-event-cancel:*",
        requirements: &["ASP-036"],
        level: None,
        owner: "agora-spaces/delta-cancel",
        summary: "space.event.cancel matches schemas/agora-spaces/space-event-cancel.schema.json",
        fails: "a member missing (event_id, space), of another type or outside its pattern",
        passes: "a space.event.cancel the schema validates",
    }
    SCHEMA_SPACE_LIST_REPLY {
        key: "agora-spaces/schema:space-list-reply:*",
        requirements: &["ASP-039"],
        level: None,
        owner: "agora-spaces/space-list",
        summary: "the space.list reply matches schemas/agora-spaces/space-list-reply.schema.json",
        fails: "a member missing (spaces, an entry's id, type or member_count), of another type or outside its pattern",
        passes: "a space.list reply the schema validates",
    }
    // Also given by the space-list case itself, which is blocked by it: the same key
    // as the schema's finding for a missing spaces array.
    SCHEMA_SPACE_LIST_REPLY_SPACES {
        key: "agora-spaces/schema:space-list-reply:/spaces",
        requirements: &["ASP-039"],
        level: None,
        owner: "agora-spaces/space-list",
        summary: "the space.list reply carries a spaces array",
        fails: "a space.list reply with no spaces array, or spaces of another type; the member counts cannot be judged, so the case is blocked",
        passes: "spaces, an array of space entries",
    }
    SCHEMA_ERROR {
        key: "agora-spaces/schema:error:*",
        requirements: &["ASP-041"],
        level: None,
        owner: "agora-spaces/invalid-requests",
        summary: "an error event matches schemas/agora-spaces/error.schema.json",
        fails: "a member missing, of another type or outside its pattern (other than code, message and a renamed request_id, judged apart)",
        passes: "an error event the schema validates",
    }
    JOIN_NO_ANSWER {
        key: "agora-spaces/join:no-answer",
        requirements: &["ASP-022"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "space.join is answered by space.joined or an error event",
        fails: "no answer to space.join within the case timeout; the case is blocked",
        passes: "space.joined (or an error) in answer to the join",
    }
    JOIN_REFUSED {
        key: "agora-spaces/join:refused",
        requirements: &["ASP-022"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "joining a valid space is accepted",
        fails: "space.join of a valid space draws an error event (SPACE_NOT_FOUND for a fresh user space skips the case instead); the case is blocked",
        passes: "space.joined in answer to the join",
    }
    JOINED_ID {
        key: "agora-spaces/joined:id",
        requirements: &["ASP-021", "ASP-023"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "space.joined echoes the id of the space.join it answers",
        fails: "space.joined with no id, or an id other than the join's",
        passes: "space.joined whose id is the join's id",
    }
    // Client role: the frames the client sends (expect::client_frames).
    CLIENT_NOT_EVENT {
        key: "agora-spaces/client:not-event",
        requirements: &["ASP-001", "ASP-018"],
        level: None,
        owner: "",
        summary: "every frame a client sends is a JSON event object with a string type",
        fails: "a client frame that is not JSON, not an object, or has no string type (seen by the proxy; a client case fails on it)",
        passes: "JSON objects with a string type",
    }
    CLIENT_TIMESTAMP {
        key: "agora-spaces/client:timestamp",
        requirements: &["ASP-020", "ASP-A6"],
        level: None,
        owner: "",
        summary: "a client event's timestamp is a number",
        fails: "a client event whose timestamp is not a number (a string, an object)",
        passes: "numeric timestamps, or none (its own rule)",
    }
    CLIENT_NO_TIMESTAMP {
        key: "agora-spaces/client:no-timestamp",
        requirements: &["ASP-020", "ASP-A6"],
        level: Some(Level::Should),
        owner: "",
        summary: "a client's events carry a timestamp",
        fails: "client events without a timestamp member; one warning names the first type without it",
        passes: "every client event with a timestamp",
    }
    // The detail is the schema (agent-register, space-join, space-publish, ...) and
    // the JSON pointer, array indices as `*`; the same ids for every schema.
    CLIENT_SCHEMA {
        key: "agora-spaces/client:schema:*",
        requirements: &["ASP-018"],
        level: None,
        owner: "",
        summary: "a client's event matches the suite's schema for its type (schemas/agora-spaces/)",
        fails: "a member missing, of another type or outside its pattern in a client event (the timestamp judged apart)",
        passes: "client events the schemas validate",
    }
    // Recorded with ctx.deviation by the client-silent-hub case only (no owned_by).
    CLIENT_SILENT_HUB {
        key: "agora-spaces/client:silent-hub",
        requirements: &["ASP-015", "ASP-A5"],
        level: Some(Level::Should),
        owner: "",
        summary: "a client gives up on a hub silent for the heartbeat timeout soon after it",
        fails: "the client ends with an error long after heartbeat_timeout_ms (over three timeouts and a second), or still waits at the deadline",
        passes: "the client closes and reports an error soon after the timeout",
    }
    // A member's disconnect (derived ASP-052), recorded by its case.
    DISCONNECT_IS_DEPARTURE_UNANNOUNCED {
        key: "agora-spaces/disconnect-is-departure:unannounced",
        requirements: &["ASP-052", "ASP-027"],
        level: None,
        owner: "agora-spaces/disconnect-is-departure",
        summary: "a member that disconnects without space.leave is announced to the members that remain, as a departure",
        fails: "no space.members with left = the agent that disconnected reaches a remaining member within the case timeout (at most a quarter of the heartbeat timeout)",
        passes: "space.members with left = that agent",
    }
    DISCONNECT_IS_DEPARTURE_ID_STILL_TAKEN {
        key: "agora-spaces/disconnect-is-departure:id-still-taken",
        requirements: &["ASP-052", "ASP-013"],
        level: None,
        owner: "agora-spaces/disconnect-is-departure",
        summary: "the agent id of a connection that ended is free: a new connection with it is registered",
        fails: "a new connection with that id refused (an error such as AGENT_EXISTS, an HTTP refusal, or a close without agent.registered)",
        passes: "agent.registered for the new connection",
    }
    DISCONNECT_IS_DEPARTURE_GHOST {
        key: "agora-spaces/disconnect-is-departure:ghost",
        requirements: &["ASP-052", "ASP-040"],
        level: None,
        owner: "agora-spaces/disconnect-is-departure",
        summary: "a member alone in a space is gone from it once its connection ends, though nobody is left to be told",
        fails: "a later joiner's space.joined lists the agent whose connection ended, or space.list counts it (judged once the hub shows it handled the disconnect)",
        passes: "the later joiner is the space's only member",
    }
    // ------------------------------------------------------------------
    // A case's own subject, judged by a shared check (keyed by the case id).
    HANDSHAKE_NAMED {
        key: "agora-spaces/handshake",
        requirements: &["ASP-001", "ASP-002", "ASP-003", "ASP-005", "ASP-007", "ASP-008", "ASP-020"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "agent.registered names the agent that connected",
        fails: "agent.registered names another agent id than the one the connection gave",
        passes: "the connecting agent's id",
    }
    JOIN_GENERAL {
        key: "agora-spaces/join-general",
        requirements: &["ASP-022", "ASP-023"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "space.joined names the space joined and lists the joiner among its members",
        fails: "a space.joined naming another space, or whose members leave out the joiner",
        passes: "the space joined, the joiner listed",
    }
    SPACE_LIST {
        key: "agora-spaces/space-list",
        requirements: &["ASP-019", "ASP-038", "ASP-039", "ASP-040", "ASP-046", "ASP-047", "ASP-049", "ASP-050"],
        level: None,
        owner: "agora-spaces/space-list",
        summary: "space.list gives the system spaces the type system",
        fails: "a system space listed with another type",
        passes: "system spaces typed system",
    }
    CONNECTION_IDS_DISTINCT {
        key: "agora-spaces/connection-ids-distinct",
        requirements: &["ASP-009"],
        level: None,
        owner: "agora-spaces/connection-ids-distinct",
        summary: "two connections get two connection ids",
        fails: "two connections registered with the same connection_id",
        passes: "distinct connection ids",
    }
    MEMBER_UPDATES {
        key: "agora-spaces/member-updates",
        requirements: &["ASP-025", "ASP-026", "ASP-027"],
        level: None,
        owner: "agora-spaces/member-updates",
        summary: "space.members after a join or a leave names the space, lists the members and sets joined or left",
        fails: "an update naming another space, leaving out a member, listing the one who left, or with the other of joined and left set",
        passes: "the update as ASP-026 (join) and ASP-027 (leave) give it",
    }
    INVALID_REQUESTS {
        key: "agora-spaces/invalid-requests",
        requirements: &["ASP-018", "ASP-041", "ASP-042", "ASP-043"],
        level: Some(Level::Fact),
        owner: "agora-spaces/invalid-requests",
        summary: "non-JSON, an unknown type, a join without space and a frame without type draw INVALID_REQUEST",
        fails: "one or more of them drew an error with another code (each named)",
        passes: "INVALID_REQUEST for each",
    }
    SPACE_NAMES_BAD_JOINED {
        key: "agora-spaces/space-names:bad-name-joined",
        requirements: &["ASP-046"],
        level: None,
        owner: "agora-spaces/space-names",
        summary: "a space name with upper case or a space is never joined",
        fails: "the hub joined \"Bad Name!\" or \"General\" (each named)",
        passes: "an error for each",
    }
}
