//! How every frame is read (agora-spaces.zh.md, 事件类型 and 错误处理): `read_frame` and
//! `check_frame` apply each rule a frame can break (JSON, the type, the timestamp, the
//! event schemas, error codes, registered and joined replies, member lists), each a
//! typed finding with one owner case.

use super::wire::{code_like, first_of, nonempty_str, shown};
use crate::case::{Level, Step};
use crate::finding::{quote, Finding};
use crate::rules::{rules, Rule};
use crate::script::Ctx;
use reference_impl::wire::json;
use serde_json::{json, Map, Value};

rules! {
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
    // connection id (connection_id); the detail is agent-id or connection-id.
    REGISTERED {
        key: "agora-spaces/registered:*",
        requirements: &["ASP-008"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "agent.registered carries agent.id and agent.connection_id as non-empty strings",
        fails: "no agent.id or connection_id, a value of another type or empty, or either under another name (agent_id, connectionId, a string agent); read on leniently",
        passes: "agent.registered with agent.id and agent.connection_id, non-empty strings",
    }
    // code (code_of, which blocks the case); same ids and owner.
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
    // own requirement ids and owner (owner_of); the detail is the pointer,
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
    ERROR_REQUEST_ID {
        key: "agora-spaces/error:request-id",
        requirements: &["ASP-041"],
        level: None,
        owner: "agora-spaces/join-missing",
        summary: "an error answering a message with an id carries that id in `request_id`",
        fails: "an error answering a message with no request_id, another request_id, or the id under another name (requestId, req_id)",
        passes: "the error's request_id is the id of the message it answers",
    }
    HANDSHAKE_NAMED {
        key: "agora-spaces/handshake",
        requirements: &["ASP-001", "ASP-002", "ASP-003", "ASP-005", "ASP-007", "ASP-008", "ASP-020"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "agent.registered names the agent that connected",
        fails: "agent.registered names another agent id than the one the connection gave",
        passes: "the connecting agent's id",
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
    JOIN_GENERAL {
        key: "agora-spaces/join-general",
        requirements: &["ASP-022", "ASP-023"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "space.joined names the space joined and lists the joiner among its members",
        fails: "a space.joined naming another space, or whose members leave out the joiner",
        passes: "the space joined, the joiner listed",
    }
}

pub const CODES: [&str; 6] = [
    "INVALID_REQUEST",
    "UNAUTHORIZED",
    "AGENT_EXISTS",
    "SPACE_NOT_FOUND",
    "SPACE_FULL",
    "RATE_LIMITED",
];

/// The event types a server sends (agora-spaces.zh.md, 事件类型).
pub const SERVER_TYPES: [&str; 10] = [
    "agent.registered",
    "agent.heartbeat",
    "space.joined",
    "space.members",
    "space.event",
    "space.event.delta",
    "space.event.done",
    "space.event.cancel",
    "space.list",
    "error",
];

/// The cases that own the rules the shared reading meets.
const JOIN: &str = "agora-spaces/join-general";

/// The schema of a server frame, by its type.
pub fn schema_for(v: &Value) -> Option<&'static str> {
    Some(match v["type"].as_str()? {
        "agent.registered" => "agent-registered",
        "agent.heartbeat" => "agent-heartbeat",
        "space.joined" => "space-joined",
        "space.members" => "space-members",
        "space.event" => "space-event",
        "space.event.delta" => "space-event-delta",
        "space.event.done" => "space-event-done",
        "space.event.cancel" => "space-event-cancel",
        "space.list" => "space-list-reply",
        "error" => "error",
        _ => return None,
    })
}

/// The case that owns a schema's shape, and the requirements the shape comes from.
fn schema_rule(schema: &str) -> &'static Rule {
    RULES
        .iter()
        .copied()
        .find(|r| {
            r.key
                .strip_prefix("agora-spaces/schema:")
                .and_then(|k| k.strip_suffix(":*"))
                == Some(schema)
        })
        .unwrap_or(&SCHEMA_ERROR)
}

/// What a space.joined answering the join `id` (when it had one) of `space` by `me`
/// breaks: it echoes the id (`joined:id`, ASP-021), names the space and lists the
/// joiner (the join-general case's rule, ASP-023). A members list that cannot be
/// read is `joined:members`, judged when the frame is read.
pub fn joined_findings(v: &Value, id: Option<&str>, space: &str, me: &str) -> Vec<Finding> {
    let mut found = Vec::new();
    if let Some(id) = id.filter(|id| v["id"] != *id) {
        found.push(JOINED_ID.found(format!(
            "space.joined does not echo the join id {id:?}: its id is {}",
            v.get("id").map_or("absent".to_string(), Value::to_string)
        )));
    }
    // A space.joined without `space` is the schema's finding alone.
    if v.get("space").is_some_and(|s| s != space) {
        found.push(JOIN_GENERAL.found(format!("space.joined names {}, not {space}", v["space"])));
    } else if v["members"]
        .as_array()
        .is_some_and(|m| !m.iter().any(|x| x == me))
    {
        found.push(JOIN_GENERAL.found(format!(
            "space.joined members {} do not include the joiner {me} (ASP-023)",
            v["members"]
        )));
    }
    found.into_iter().map(|f| f.owned_by(JOIN)).collect()
}

/// What an agent.registered for the agent `me` breaks: it names that agent
/// (the handshake's rule, ASP-008). An agent.id that cannot be read is
/// `registered:agent-id`, judged when the frame is read.
pub fn registered_finding(reg: &Value, me: &str) -> Option<Finding> {
    let named = &reg["agent"]["id"];
    (named.is_string() && named != me).then(|| {
        HANDSHAKE_NAMED.found(format!(
            "agent.registered names {named}, not {me} (ASP-008)"
        ))
    })
}

/// Whether `space` is a fresh name of [`user_space`] (possibly under `task.`).
pub fn is_fresh(space: &str) -> bool {
    space
        .strip_prefix("task.")
        .unwrap_or(space)
        .starts_with("h_")
}

// ---------------------------------------------------------------------------
// Reading server frames.

/// Reads one frame: its canonical form, or the finding that it cannot be read.
pub(super) fn read_frame(ctx: &mut Ctx, bytes: &[u8]) -> Result<Value, Finding> {
    match json::parse(bytes) {
        Ok(t) => check_frame(ctx, t.to_serde()),
        Err(e) => Err(FRAME_NOT_JSON.found(format!(
            "a server frame is not JSON ({e}): {}",
            quote(&String::from_utf8_lossy(&bytes[..bytes.len().min(512)]))
        ))),
    }
}

/// Checks every server frame (ASP-001, ASP-018, ASP-020, ASP-041, ASP-042 and each
/// event's schema) and returns its canonical form. Deviations that leave the frame
/// readable are incidental findings, owned by the case whose subject they are; a
/// frame that is not an object with a type is returned as the finding that says so.
pub fn check_frame(ctx: &mut Ctx, v: Value) -> Result<Value, Finding> {
    let whole = shown(&v);
    let Value::Object(mut m) = v else {
        return Err(FRAME_NOT_OBJECT.found(format!("a server frame is not a JSON object: {whole}")));
    };
    if !nonempty_str(m.get("type")) {
        match unwrap_jsonrpc(&m) {
            Some((inner, how)) => {
                // Informational (ambiguity ASP-A1): reported, never scored.
                ctx.finding(FRAME_JSON_RPC.found(format!(
                    "events come in JSON-RPC framing ({how}), e.g. {whole}"
                )));
                m = inner;
            }
            None => {
                return Err(
                    FRAME_NO_TYPE.found(format!("a server frame has no string type: {whole}"))
                )
            }
        }
    }
    let ty = m["type"].as_str().unwrap_or_default().to_string();
    check_timestamp(ctx, &ty, m.get("timestamp"));
    // Pointers judged here, which the schema check below passes over.
    let mut judged: Vec<&'static str> = vec!["/timestamp"];
    read_by_type(ctx, &ty, &mut m, &mut judged, &whole);
    let v = Value::Object(m);
    if let Some(schema) = schema_for(&v) {
        shape_findings(ctx, schema, &v, &judged);
    }
    Ok(v)
}

/// An event's timestamp (ASP-020): present (a warning when not, ASP-A6), a number
/// of Unix seconds or milliseconds within a day of the harness clock.
fn check_timestamp(ctx: &mut Ctx, ty: &str, t: Option<&Value>) {
    match t {
        None => ctx.finding(
            EVENT_NO_TIMESTAMP.found(format!("server events carry no timestamp, e.g. {ty}")),
        ),
        Some(t) if t.is_number() => {
            // Unix seconds or milliseconds, told apart by magnitude (ASP-A6): a
            // number that is neither, within a day of the harness clock, is no time.
            let now = ctx.clock().unix_timestamp() as f64;
            let f = t.as_f64().unwrap_or(f64::NAN);
            const DAY: f64 = 86_400.0;
            if !((f - now).abs() <= DAY || (f / 1000.0 - now).abs() <= DAY) {
                ctx.finding(
                    EVENT_TIMESTAMP.found(format!(
                            "{ty} carries the timestamp {t}, neither Unix seconds nor milliseconds within a day of the harness clock ({now})"
                        )),
                );
            }
        }
        Some(t) => ctx.finding(EVENT_TIMESTAMP.found(format!(
            "{ty} carries the timestamp {t}, not a number (Unix seconds or milliseconds)"
        ))),
    }
}

/// The members of the frame's type: an error's code and message, the registration,
/// the member lists, an event's data; a heartbeat in another shape, or a type the
/// spec does not define.
fn read_by_type(
    ctx: &mut Ctx,
    ty: &str,
    m: &mut Map<String, Value>,
    judged: &mut Vec<&'static str>,
    whole: &str,
) {
    match ty {
        "error" => read_error(ctx, m, judged),
        "agent.registered" => read_registered(ctx, m, judged),
        "space.joined" => read_members(ctx, m, judged, &JOINED_MEMBERS),
        "space.members" => read_members(ctx, m, judged, &MEMBERS_LIST),
        "space.event" => read_data(ctx, m, judged, &EVENT_DATA),
        "space.event.delta" => read_data(ctx, m, judged, &DELTA_DATA),
        t if !SERVER_TYPES.contains(&t) => unknown_type(ctx, t, whole),
        _ => {}
    }
}

/// A frame of a type the spec does not define: a heartbeat in another shape is
/// the heartbeat case's finding; anything else a note.
fn unknown_type(ctx: &mut Ctx, t: &str, whole: &str) {
    let lower = t.to_ascii_lowercase();
    if [
        "heartbeat",
        "pong",
        "ping",
        "ack",
        "keepalive",
        "keep_alive",
        "keep-alive",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        ctx.finding(
            HEARTBEAT_SHAPE.found(format!(
                    "a heartbeat comes as {whole}; agent.heartbeat has the form {{type: \"agent.heartbeat\", timestamp}}"
                )),
        );
    } else {
        ctx.note(format!(
            "a server event of a type the spec does not define: {whole}"
        ));
    }
}

/// The event inside JSON-RPC framing (ambiguity ASP-A1), and how it was framed.
fn unwrap_jsonrpc(m: &Map<String, Value>) -> Option<(Map<String, Value>, &'static str)> {
    if let Some(method) = m.get("method").and_then(Value::as_str) {
        let mut inner = m
            .get("params")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        inner.insert("type".into(), json!(method));
        for k in ["id", "timestamp"] {
            if let (Some(x), false) = (m.get(k), inner.contains_key(k)) {
                inner.insert(k.into(), x.clone());
            }
        }
        return Some((inner, "the type in method, the members in params"));
    }
    if let Some(result) = m.get("result").and_then(Value::as_object) {
        if nonempty_str(result.get("type")) {
            let mut inner = result.clone();
            if let (Some(x), false) = (m.get("id"), inner.contains_key("id")) {
                inner.insert("id".into(), x.clone());
            }
            return Some((inner, "the event in result"));
        }
    }
    if let Some(err) = m.get("error").and_then(Value::as_object) {
        let mut inner = Map::new();
        inner.insert("type".into(), json!("error"));
        for k in ["code", "message"] {
            if let Some(x) = err.get(k) {
                inner.insert(k.into(), x.clone());
            }
        }
        if let Some(x) = err.get("data").and_then(|d| d.get("request_id")) {
            inner.insert("request_id".into(), x.clone());
        } else if let Some(x) = m.get("id").filter(|x| x.is_string()) {
            inner.insert("request_id".into(), x.clone());
        }
        if let Some(x) = m.get("timestamp") {
            inner.insert("timestamp".into(), x.clone());
        }
        return Some((inner, "a JSON-RPC error object"));
    }
    None
}

/// An error event: code, message and request_id, wherever the target put them
/// (ASP-041). Each deviation is one finding of the invalid-requests case (the
/// request id's of join-missing).
fn read_error(ctx: &mut Ctx, m: &mut Map<String, Value>, judged: &mut Vec<&'static str>) {
    let whole = shown(&Value::Object(m.clone()));
    let nested = m.get("error").and_then(Value::as_object).cloned();
    if !m.get("code").is_some_and(Value::is_string) {
        judged.push("/code");
        let summary = error_code_found(m, nested.as_ref(), &whole);
        ctx.finding(ERROR_CODE.found(summary));
    }
    if !m.get("message").is_some_and(Value::is_string) {
        judged.push("/message");
        let summary = error_message_found(m, nested.as_ref(), &whole);
        ctx.finding(ERROR_MESSAGE.found(summary));
    }
    if !m.contains_key("request_id") {
        if let Some((name, x)) = first_of(
            m,
            &["requestId", "request-id", "req_id", "reqId"],
            Value::is_string,
        ) {
            let x = x.clone();
            m.insert("request_id".into(), x);
            judged.push("/request_id");
            ctx.finding(ERROR_REQUEST_ID.found(format!(
                "the error event carries the request id in `{name}`, not in `request_id`: {whole}"
            )));
        }
    }
    if let Some(code) = m.get("code").and_then(Value::as_str) {
        if !CODES.contains(&code) {
            ctx.finding(ERROR_UNKNOWN_CODE.found_as(
                code,
                format!(
                    "error code {code} is not in the table of agora-spaces.zh.md ({})",
                    quote(m.get("message").and_then(Value::as_str).unwrap_or_default())
                ),
            ));
        }
    }
}

/// Where an error event without a string `code` has its code (read on as `code`),
/// in words for the finding (ASP-041).
fn error_code_found(
    m: &mut Map<String, Value>,
    nested: Option<&Map<String, Value>>,
    whole: &str,
) -> String {
    if let Some(c) = m.get("code") {
        format!("the error code is {c}, not a string such as INVALID_REQUEST: {whole}")
    } else if let Some((name, c)) = first_of(
        m,
        &["error_code", "errorCode", "error", "err", "status"],
        code_like,
    ) {
        let c = c.clone();
        m.insert("code".into(), c.clone());
        format!("the error event carries its code {c} in `{name}`, not in `code`: {whole}")
    } else if let Some(c) = nested
        .and_then(|e| e.get("code"))
        .filter(|c| code_like(c))
        .cloned()
    {
        m.insert("code".into(), c.clone());
        format!("the error event carries its code {c} in `error.code`, not in `code`: {whole}")
    } else {
        format!("the error event has no code: {whole}")
    }
}

/// Where an error event without a string `message` has its message (read on as
/// `message`), in words for the finding (ASP-041).
fn error_message_found(
    m: &mut Map<String, Value>,
    nested: Option<&Map<String, Value>>,
    whole: &str,
) -> String {
    let text = |v: &Value| v.is_string() && !code_like(v);
    if let Some(x) = m.get("message") {
        format!("the error message is {x}, not a string: {whole}")
    } else if let Some((name, x)) = first_of(
        m,
        &[
            "detail",
            "error",
            "msg",
            "description",
            "reason",
            "error_message",
        ],
        text,
    ) {
        let x = x.clone();
        m.insert("message".into(), x);
        format!("the error event carries its message in `{name}`, not in `message`: {whole}")
    } else if let Some(x) = nested
        .and_then(|e| e.get("message"))
        .filter(|x| x.is_string())
        .cloned()
    {
        m.insert("message".into(), x);
        format!("the error event carries its message in `error.message`, not in `message`: {whole}")
    } else {
        format!("the error event has no message: {whole}")
    }
}

/// agent.registered: agent.id and agent.connection_id, wherever the target put them,
/// a connection id of another type as its text (ASP-008). Findings of the handshake.
fn read_registered(ctx: &mut Ctx, m: &mut Map<String, Value>, judged: &mut Vec<&'static str>) {
    let whole = shown(&Value::Object(m.clone()));
    judged.extend(["/agent", "/agent/id", "/agent/connection_id"]);
    let mut agent = match m.get("agent") {
        Some(Value::Object(a)) => a.clone(),
        _ => Map::new(),
    };
    let f = |key: &str, summary: String| REGISTERED.found_as(key, summary);
    if !nonempty_str(agent.get("id")) {
        let top = m.get("agent").filter(|a| nonempty_str(Some(a)));
        let found = if let Some(a) = top {
            Some(("agent (a string)", a.clone()))
        } else if let Some((n, x)) = first_of(&agent, &["agent_id", "agentId", "name"], |x| {
            nonempty_str(Some(x))
        }) {
            Some((n, x.clone()))
        } else {
            first_of(m, &["agent_id", "agentId"], |x| nonempty_str(Some(x)))
                .map(|(n, x)| (n, x.clone()))
        };
        let summary = match (&found, agent.get("id")) {
            (_, Some(x)) => {
                format!("agent.registered names the agent as {x}, not a non-empty string: {whole}")
            }
            (Some((n, x)), None) => {
                format!("agent.registered names the agent {x} in `{n}`, not in `agent.id`: {whole}")
            }
            (None, None) => {
                format!("agent.registered does not name the agent (no agent.id): {whole}")
            }
        };
        if let (Some((_, x)), None) = (found, agent.get("id")) {
            agent.insert("id".into(), x);
        }
        ctx.finding(f("agent-id", summary));
    }
    if !nonempty_str(agent.get("connection_id")) {
        let summary = connection_id_found(m, &mut agent, &whole);
        ctx.finding(f("connection-id", summary));
    }
    m.insert("agent".into(), Value::Object(agent));
}

/// Where agent.registered has its connection id (read on as the string
/// `agent.connection_id`, or left out when it has none), in words for the finding
/// (ASP-008).
fn connection_id_found(
    m: &Map<String, Value>,
    agent: &mut Map<String, Value>,
    whole: &str,
) -> String {
    let found = match agent.get("connection_id") {
        Some(x) => Some(("agent.connection_id", x.clone())),
        None => first_of(agent, &["connectionId", "conn_id", "connection"], |x| {
            !x.is_null()
        })
        .map(|(n, x)| (n, x.clone()))
        .or_else(|| {
            first_of(m, &["connection_id", "connectionId"], |x| !x.is_null())
                .map(|(n, x)| (n, x.clone()))
        }),
    };
    let summary = match &found {
        Some((_, Value::String(s))) if s.is_empty() => {
            format!("agent.registered carries an empty connection_id: {whole}")
        }
        Some(("agent.connection_id", x)) => {
            format!("agent.registered carries the connection_id {x}, not a string: {whole}")
        }
        Some((n, x)) => format!(
            "agent.registered carries the connection id {x} in `{n}`, not in `agent.connection_id`: {whole}"
        ),
        None => format!("agent.registered carries no connection_id: {whole}"),
    };
    match found {
        Some((_, Value::String(s))) if !s.is_empty() => {
            agent.insert("connection_id".into(), json!(s));
        }
        Some((_, x @ (Value::Number(_) | Value::Bool(_)))) => {
            agent.insert("connection_id".into(), json!(x.to_string()));
        }
        _ => {
            agent.remove("connection_id");
        }
    }
    summary
}

/// The data of space.event or space.event.delta: text and from, wherever the target
/// put them (in `data` under another name, or beside it).
fn read_data(
    ctx: &mut Ctx,
    m: &mut Map<String, Value>,
    judged: &mut Vec<&'static str>,
    rule: &'static Rule,
) {
    let text_ok = m
        .get("data")
        .and_then(|d| d.get("text"))
        .is_some_and(Value::is_string);
    let from_ok = m
        .get("data")
        .is_some_and(|d| d.get("from").is_none_or(Value::is_string));
    if text_ok && from_ok {
        return;
    }
    judged.extend(["/data", "/data/text", "/data/from"]);
    let ty = m["type"].as_str().unwrap_or_default().to_string();
    let whole = shown(&Value::Object(m.clone()));
    let outer = m.clone();
    let mut data = match m.get("data") {
        Some(Value::Object(d)) => d.clone(),
        _ => Map::new(),
    };
    let mut moved: Vec<String> = Vec::new();
    if !text_ok {
        let inner = first_of(
            &data,
            &["content", "message", "body", "msg"],
            Value::is_string,
        )
        .map(|(n, x)| (format!("data.{n}"), x.clone()));
        let found = inner.or_else(|| {
            first_of(
                &outer,
                &["text", "content", "message", "body"],
                Value::is_string,
            )
            .map(|(n, x)| (n.to_string(), x.clone()))
        });
        if let Some((n, x)) = found {
            data.insert("text".into(), x);
            moved.push(format!("the text in `{n}`"));
        }
    }
    let from_given = data.get("from").cloned();
    if from_given.as_ref().is_none_or(|f| !f.is_string()) {
        let inner = first_of(
            &data,
            &["sender", "agent_id", "agentId", "from_agent"],
            Value::is_string,
        )
        .map(|(n, x)| (format!("data.{n}"), x.clone()));
        let found = inner.or_else(|| {
            first_of(&outer, &["from", "sender", "agent_id"], Value::is_string)
                .map(|(n, x)| (n.to_string(), x.clone()))
        });
        if let Some((n, x)) = found {
            data.insert("from".into(), x);
            moved.push(format!("the sender in `{n}`"));
        }
    }
    let summary = if !data.get("text").is_some_and(Value::is_string) {
        format!("{ty} carries no text (data.text): {whole}")
    } else if !moved.is_empty() {
        format!(
            "{ty} carries {}, not in data.text and data.from: {whole}",
            moved.join(" and ")
        )
    } else {
        format!(
            "{ty} carries data.from {}, not a string: {whole}",
            from_given.unwrap_or(Value::Null)
        )
    };
    m.insert("data".into(), Value::Object(data));
    ctx.finding(rule.found(summary));
}

/// The agent ids of a member list in another form: objects with an id, or an object
/// keyed by agent id.
fn ids_of(list: &Value) -> Option<Vec<Value>> {
    match list {
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(_) => Some(x.clone()),
                Value::Object(o) => first_of(o, &["id", "agent_id", "agentId"], |v| v.is_string())
                    .map(|(_, v)| v.clone()),
                _ => None,
            })
            .collect(),
        Value::Object(o) => Some(o.keys().map(|k| json!(k)).collect()),
        _ => None,
    }
}

/// The member list of space.joined or space.members, wherever the target put it.
fn read_members(
    ctx: &mut Ctx,
    m: &mut Map<String, Value>,
    judged: &mut Vec<&'static str>,
    rule: &'static Rule,
) {
    let fine = m
        .get("members")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().all(Value::is_string));
    if fine {
        return;
    }
    judged.extend(["/members", "/members/*"]);
    let ty = m["type"].as_str().unwrap_or_default().to_string();
    let whole = shown(&Value::Object(m.clone()));
    let found = match m.get("members") {
        Some(list) => ids_of(list).map(|ids| ("members", ids)),
        None => [
            "agents",
            "member_list",
            "memberList",
            "member_ids",
            "memberIds",
            "users",
            "participants",
        ]
        .iter()
        .find_map(|n| m.get(*n).and_then(ids_of).map(|ids| (*n, ids))),
    };
    let summary = match &found {
        Some(("members", _)) => format!(
            "{ty} lists its members as {}, not as an array of agent ids: {whole}",
            m["members"]
        ),
        Some((n, _)) => format!("{ty} lists its members in `{n}`, not in `members`: {whole}"),
        None => format!("{ty} carries no members list: {whole}"),
    };
    if let Some((_, ids)) = found {
        m.insert("members".into(), Value::Array(ids));
    }
    ctx.finding(rule.found(summary));
}

/// The schema violations of a frame in its canonical form, one finding each, keyed by
/// schema and pointer (a missing member by its own pointer), passing over the
/// pointers `judged` already.
fn shape_findings(ctx: &mut Ctx, schema: &str, v: &Value, judged: &[&str]) {
    let rule = schema_rule(schema);
    let list = match ctx
        .shared
        .schemas
        .violations(&format!("agora-spaces/{schema}"), v)
    {
        Ok(list) => list,
        Err(e) => {
            ctx.finding(rule.found_as("/", e));
            return;
        }
    };
    for viol in list {
        // A missing member comes keyed at its own pointer (`Schemas::violations`).
        let at = viol.shape();
        if judged
            .iter()
            .any(|j| at == *j || at.starts_with(&format!("{j}/")))
        {
            continue;
        }
        ctx.finding(rule.found_as(
            &at,
            format!("{} at {}: {}", v["type"], viol.pointer, viol.message),
        ));
    }
}

/// Judges a recorded server frame again with [`check_frame`] (an exported vector's
/// offline run).
pub fn reread(ctx: &mut Ctx, r: &crate::case::Recorded) {
    match json::parse(&r.body) {
        Ok(tree) => {
            if let Err(f) = check_frame(ctx, tree.to_serde()) {
                ctx.finding(f);
            }
        }
        Err(e) => ctx.finding(FRAME_NOT_JSON.found(format!(
            "a server frame is not JSON ({e}): {}",
            quote(&String::from_utf8_lossy(&r.body))
        ))),
    }
}

/// The connection id of an agent.registered event, for a case that compares them.
pub fn connection_id(ctx: &mut Ctx, reg: &Value) -> Step<String> {
    match reg["agent"]["connection_id"].as_str() {
        Some(c) => Ok(c.to_string()),
        None => Err(ctx.block(REGISTERED.found_as(
            "connection-id",
            format!("agent.registered carries no connection_id: {}", shown(reg)),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_lists_in_other_forms() {
        assert_eq!(
            ids_of(&json!([{"id": "a"}, {"agent_id": "b"}, "c"])),
            Some(vec![json!("a"), json!("b"), json!("c")])
        );
        assert_eq!(ids_of(&json!({"a": {}})), Some(vec![json!("a")]));
        assert_eq!(ids_of(&json!([1])), None);
    }

    #[test]
    fn jsonrpc_framing_is_unwrapped() {
        let m = json!({"jsonrpc": "2.0", "method": "agent.registered", "params": {"agent": {"id": "a"}}});
        let (inner, _) = unwrap_jsonrpc(m.as_object().expect("object")).expect("unwrapped");
        assert_eq!(inner["type"], "agent.registered");
        let m = json!({"jsonrpc": "2.0", "id": "x", "error": {"code": "INVALID_REQUEST", "message": "m"}});
        let (inner, _) = unwrap_jsonrpc(m.as_object().expect("object")).expect("unwrapped");
        assert_eq!(inner["request_id"], "x");
        assert_eq!(inner["code"], "INVALID_REQUEST");
    }
}
