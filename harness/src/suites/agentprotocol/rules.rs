//! The rules of agentprotocol: every finding key its cases and reply checks give,
//! with the requirement ids it enforces, the case that owns it and what passes and
//! fails. The reading every reply gets (`expect::read_reply`) comes first, then
//! what a hello teaches, then each case's own checks in the order of `CASES`.
//!
//! Left out: the keys that are a case's own id (a case's failure in text), and the
//! families every suite shares (`crate::rules::SHARED`): transport failures (the
//! `transport:no-answer` this suite gives too), refusals of a valid message
//! (`refused*`, given through `expect::refused` with AGP-013 for a hello and AGP-018
//! for a request), controls, and the requests a client makes outside the spec. The
//! payload schemas are listed here, each with the ids and the owner this suite gives
//! its findings.

use crate::case::Level;
use crate::rules::rules;

rules! {
    // --- What every reply is held to (expect::read_reply), also a client's messages.
    REPLY_NOT_JSON {
        key: "agentprotocol/reply:not-json",
        requirements: &["AGP-001"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply is a JSON text",
        fails: "a reply body that does not parse as JSON (with an HTTP status below 400 and a body); the case is blocked",
        passes: "a reply that parses as JSON",
    }
    ERROR_NOT_A_MESSAGE {
        key: "agentprotocol/error:not-a-message",
        requirements: &["AGP-001", "AGP-020"],
        level: None,
        owner: "agentprotocol/invalid-message",
        summary: "an error is a message of type error, whatever the HTTP status",
        fails: "an HTTP status of 400 and more, an empty body, or an error-like body (detail, error, message, code) that is no agentprotocol message; the status is not judged (AGP-A10)",
        passes: "every error sent as an agentprotocol message of type error",
    }
    REPLY_NOT_A_MESSAGE {
        key: "agentprotocol/reply:not-a-message",
        requirements: &["AGP-001"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply is an agentprotocol message: a JSON object with the envelope's members",
        fails: "a reply that is not a JSON object, or an object with no string type and fewer than two of protocol, from, payload, signature; the case is blocked",
        passes: "a JSON object that reads as a message",
    }
    ENVELOPE_TYPE {
        key: "agentprotocol/envelope:type",
        requirements: &["AGP-001", "AGP-010"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply carries its type as a string",
        fails: "a reply with no `type`, or a type that is not a string; the case is blocked",
        passes: "a string type",
    }
    ENVELOPE_FROM_AGENTID {
        key: "agentprotocol/envelope:from.agentId",
        requirements: &["AGP-001", "AGP-005"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply's `from` names the sender's agentId",
        fails: "a `from` object with no agentId",
        passes: "from.agentId present",
    }
    ENVELOPE_TO {
        // Two sites: `to` missing (AGP-001, AGP-A22) and `to` with no agentId
        // (AGP-008, AGP-A22); both at Level::Should.
        key: "agentprotocol/envelope:to",
        requirements: &["AGP-001", "AGP-008", "AGP-A22"],
        level: Some(Level::Should),
        owner: "agentprotocol/hello",
        summary: "a reply carries `to` with the agentId it answers (a warning, AGP-A22)",
        fails: "a reply with no `to`, or a `to` that names no agentId",
        passes: "a `to` object with an agentId",
    }
    ENVELOPE {
        // The loop over protocol, id, timestamp, from, payload (all AGP-001), and
        // envelope:from for a `from` that is not an object (AGP-001).
        key: "agentprotocol/envelope:*",
        requirements: &["AGP-001"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply carries the full envelope: protocol, id, timestamp, from and payload (AGP-A6)",
        fails: "a reply without one of those members (the detail names it), or a `from` that is not an object",
        passes: "every envelope member present, `from` an object",
    }
    TYPE {
        key: "agentprotocol/type",
        requirements: &["AGP-010"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply's type is one of hello, request, response, notify, error",
        fails: "a reply whose type is another string",
        passes: "one of the five types",
    }
    PROTOCOL {
        key: "agentprotocol/protocol",
        requirements: &["AGP-002"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply's protocol is \"agentprotocol/0.1\"",
        fails: "a reply whose protocol member has another value",
        passes: "protocol \"agentprotocol/0.1\"",
    }
    ID_NOT_UUID {
        key: "agentprotocol/id:not-uuid",
        requirements: &["AGP-003"],
        level: None,
        owner: "agentprotocol/ids-unique",
        summary: "a reply's id is a UUID string",
        fails: "a reply whose id is a string that is not a UUID, or not a string",
        passes: "a UUID id",
    }
    ID_REUSED {
        key: "agentprotocol/id:reused",
        requirements: &["AGP-003"],
        level: None,
        owner: "agentprotocol/ids-unique",
        summary: "every reply has an id of its own",
        fails: "two replies on one connection of a case carry the same id",
        passes: "distinct ids on every reply",
    }
    TIMESTAMP {
        key: "agentprotocol/timestamp",
        requirements: &["AGP-004"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply's timestamp is an ISO 8601 date-time",
        fails: "a timestamp that does not parse as an RFC 3339 date-time; an offset other than UTC or a skewed clock is only noted (AGP-A12)",
        passes: "a date-time timestamp",
    }
    AGENT_ID_ENCODING {
        // Three sites in expect::agent_id_form: not a key (AGP-005), hex or did:key
        // (AGP-005), and base58, the only one made .at(Level::Should) (AGP-005,
        // AGP-A4): the level is left to the ids.
        key: "agentprotocol/agent-id:encoding",
        requirements: &["AGP-005"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "an agentId (a reply's from.agentId, or the profile's agent_id) is an Ed25519 public key in base64",
        fails: "an id that is no key, or a key in hex or did:key form (a key in base58 is agent-id:base58)",
        passes: "a 32-byte key in base64, standard or URL-safe, padded or not",
    }
    AGENT_ID_BASE58 {
        key: "agentprotocol/agent-id:base58",
        requirements: &["AGP-005", "AGP-A4"],
        level: Some(Level::Should),
        owner: "agentprotocol/hello",
        summary: "an agentId in base58 is read as a last resort, with a warning (AGP-A4)",
        fails: "an agentId that is an Ed25519 key in base58 only",
        passes: "a key in base64",
    }
    FROM_NOT_THE_TARGET {
        key: "agentprotocol/from:not-the-target",
        requirements: &["AGP-009"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply comes from the agent that answered the case's hello",
        fails: "a reply whose from.agentId names another agent than the hello's",
        passes: "from.agentId the agent that said hello (the same key in any base64 flavour)",
    }
    CAPABILITIES_MISSING {
        key: "agentprotocol/capabilities:missing",
        requirements: &["AGP-007", "AGP-A6"],
        level: Some(Level::Should),
        owner: "agentprotocol/hello",
        summary: "a reply other than hello carries from.capabilities (a warning, AGP-A6)",
        fails: "a response, error or other non-hello reply with no from.capabilities",
        passes: "from.capabilities on every reply",
    }
    CAPABILITIES_NOT_STRINGS {
        key: "agentprotocol/capabilities:not-strings",
        requirements: &["AGP-007"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "from.capabilities is a list of strings",
        fails: "a from.capabilities list holding something other than strings",
        passes: "a list of capability strings",
    }
    CAPABILITIES_NOT_A_LIST {
        key: "agentprotocol/capabilities:not-a-list",
        requirements: &["AGP-007"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "from.capabilities is a list of capability URIs",
        fails: "from.capabilities as a map or a string (read as a list to go on), or any other non-list",
        passes: "a JSON array of capabilities",
    }
    TO_NOT_THE_SENDER {
        key: "agentprotocol/to:not-the-sender",
        requirements: &["AGP-008", "AGP-009"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply is addressed to the agent that sent the message it answers",
        fails: "a reply whose to.agentId names another agent than the sender",
        passes: "to.agentId the sender (the same key in any base64 flavour)",
    }
    TO_AGENTID {
        key: "agentprotocol/to:agentId",
        requirements: &["AGP-008"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "to.agentId is a string",
        fails: "a to.agentId of another type",
        passes: "a string to.agentId",
    }
    TO_BROADCAST_TRUE {
        key: "agentprotocol/to:broadcast-true",
        requirements: &["AGP-A13"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "the broadcast flag of a reply is recorded; its meaning is undefined (informational, AGP-A13)",
        fails: "a reply with to.broadcast true",
        passes: "to.broadcast false or absent",
    }
    TO_BROADCAST {
        key: "agentprotocol/to:broadcast",
        requirements: &["AGP-008"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "to.broadcast, when present, is a boolean",
        fails: "a to.broadcast of another type",
        passes: "a boolean to.broadcast, or none",
    }
    TO {
        key: "agentprotocol/to",
        requirements: &["AGP-008"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply's `to` is an object",
        fails: "a `to` that is a string, list or other non-object",
        passes: "a `to` object",
    }
    SIGNATURE_MISSING {
        // Two sites: a hello reply (AGP-001, AGP-030, AGP-A6) and any other reply
        // (AGP-030, AGP-A3, a warning by the ids).
        key: "agentprotocol/signature:missing",
        requirements: &["AGP-001", "AGP-030", "AGP-A3", "AGP-A6"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply is signed",
        fails: "a reply with no signature, a null or an empty one; on a hello reply it breaks the full envelope (AGP-A6), on others it is a warning (AGP-A3)",
        passes: "a signature on every reply",
    }
    SIGNATURE_ENCODING {
        key: "agentprotocol/signature:encoding",
        requirements: &["AGP-012"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a signature is a base64-encoded Ed25519 signature",
        fails: "a signature in hex (read as such to go on), one that does not decode as a 64-byte signature, or one that is not a string",
        passes: "a 64-byte signature in base64, standard or URL-safe",
    }
    SIGNATURE_MISMATCH {
        key: "agentprotocol/signature:mismatch",
        requirements: &["AGP-005", "AGP-031"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply's signature verifies with from.agentId's key over its RFC 8785 form without `signature`",
        fails: "a signature that does not verify over that form; the summary says which other signing input it verifies over, if any",
        passes: "a signature that verifies over the RFC 8785 form",
    }
    PAYLOAD {
        key: "agentprotocol/payload",
        requirements: &["AGP-011"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a reply's payload is an object",
        fails: "a payload that is a string, list or other non-object",
        passes: "a payload object",
    }
    CORRELATIONID_RENAMED {
        key: "agentprotocol/correlationId:renamed",
        requirements: &["AGP-019", "AGP-020"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a response or error names its correlation id `correlationId`",
        fails: "a payload spelling it correlation_id, correlationID, CorrelationId, correlation-id or correlation (read as correlationId to go on)",
        passes: "payload.correlationId",
    }
    CORRELATIONID_MISPLACED {
        key: "agentprotocol/correlationId:misplaced",
        requirements: &["AGP-019", "AGP-020"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a reply carries correlationId in its payload",
        fails: "a correlationId at the top level of the message, not in its payload (read from there to go on)",
        passes: "correlationId inside the payload",
    }
    CORRELATIONID_NOT_ECHOED {
        key: "agentprotocol/correlationId:not-echoed",
        requirements: &["AGP-019", "AGP-A7"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a response echoes the request's correlationId",
        fails: "a response carrying another correlationId, or none, for a request that sent one",
        passes: "the request's correlationId, unchanged",
    }
    CORRELATIONID_NOT_ECHOED_IN_ERRORS {
        key: "agentprotocol/correlationId:not-echoed-in-errors",
        requirements: &["AGP-020", "AGP-A7"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error echoes the correlationId of the request it refuses",
        fails: "an error carrying another correlationId, or none, for a request that sent one",
        passes: "the request's correlationId in the error payload",
    }
    ERROR_PAYLOAD_NESTED {
        // Two sites: members nested under payload.error, or the code given as
        // `error`; both AGP-020.
        key: "agentprotocol/error-payload:nested",
        requirements: &["AGP-020"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error payload carries code and message at its top",
        fails: "an error payload nesting its members under payload.error, or naming its code in `error` (read as the payload to go on)",
        passes: "payload.code and payload.message",
    }
    ERROR_CODE_SPELLING {
        key: "agentprotocol/error-code:spelling",
        requirements: &["AGP-022"],
        level: Some(Level::Should),
        owner: "agentprotocol/unknown-action",
        summary: "an error code is spelled as in agentprotocol.md's table (a warning)",
        fails: "a table code in another case or separator (invalid_message, InvalidSignature, rate-limited), read as the table code to go on",
        passes: "INVALID_MESSAGE, INVALID_SIGNATURE, UNKNOWN_AGENT, CAPABILITY_NOT_SUPPORTED, TIMEOUT, RATE_LIMITED or INTERNAL_ERROR",
    }
    ERROR_CODE_UNKNOWN {
        key: "agentprotocol/error-code:unknown",
        requirements: &["AGP-022"],
        level: Some(Level::Should),
        owner: "agentprotocol/unknown-action",
        summary: "an error code is one of agentprotocol.md's table; any other is a warning (AGP-022)",
        fails: "an error code that is no table code, however spelled",
        passes: "a table code",
    }
    ERROR_PAYLOAD_CODE {
        key: "agentprotocol/error-payload:code",
        requirements: &["AGP-020"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error payload carries its code as a string",
        fails: "an error with no code, or a code that is not a string; where a refusal was expected the case is blocked",
        passes: "a string code",
    }
    ERROR_PAYLOAD_MESSAGE {
        key: "agentprotocol/error-payload:message",
        requirements: &["AGP-020"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error payload carries its message as a string",
        fails: "an error with no message, or a message that is not a string",
        passes: "a string message",
    }
    RESPONSE_PAYLOAD_STATUS {
        key: "agentprotocol/response-payload:status",
        requirements: &["AGP-019"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a response payload carries its status as a string",
        fails: "a response with no status, or a status that is not a string",
        passes: "a string status (any value, AGP-A11)",
    }
    SCHEMA_HELLO_PAYLOAD {
        key: "agentprotocol/schema:hello-payload:*",
        requirements: &["AGP-014"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a hello reply's payload matches schemas/agentprotocol/hello-payload.schema.json",
        fails: "a payload member missing, of another type or outside its pattern; the key names the JSON pointer, array indices as `*`",
        passes: "a hello payload the schema validates",
    }
    SCHEMA_RESPONSE_PAYLOAD {
        key: "agentprotocol/schema:response-payload:*",
        requirements: &["AGP-019"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a response's payload matches schemas/agentprotocol/response-payload.schema.json",
        fails: "a payload member missing, of another type or outside its pattern (correlationId and status are judged by their own rules); the key names the JSON pointer",
        passes: "a response payload the schema validates",
    }
    SCHEMA_ERROR_PAYLOAD {
        key: "agentprotocol/schema:error-payload:*",
        requirements: &["AGP-020"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error's payload matches schemas/agentprotocol/error-payload.schema.json",
        fails: "a payload member missing, of another type or outside its pattern (correlationId, code and message are judged by their own rules); the key names the JSON pointer",
        passes: "an error payload the schema validates",
    }
    // --- The hello every case opens with (expect::Me::hello) and its controls.
    HELLO_NOT_HELLO {
        key: "agentprotocol/hello:not-hello",
        requirements: &["AGP-013"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a hello is answered with a hello",
        fails: "a hello answered with a response, notify or request (an error is a refusal of the valid hello)",
        passes: "a reply of type hello",
    }
    HELLO_NO_REPLY {
        key: "agentprotocol/hello:no-reply",
        requirements: &["AGP-013", "AGP-A9"],
        level: Some(Level::Should),
        owner: "agentprotocol/hello",
        summary: "a hello draws a reply (a warning, AGP-A9)",
        fails: "no reply to a hello, or HTTP with no body, while a request after it is answered",
        passes: "a reply to the hello",
    }
    FROM_NOT_THE_ADDRESSEE {
        key: "agentprotocol/from:not-the-addressee",
        requirements: &["AGP-009"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a hello addressed to the profile's agent_id is answered by that agent",
        fails: "the hello reply's from.agentId names another agent than the profile's [agentprotocol] agent_id",
        passes: "the addressee answers (the same key in any base64 flavour)",
    }
    ECHO_REQUEST_NOT_CARRIED_OUT {
        // Two sites: a case's twin or control not carried out (expect::Me::twin,
        // AGP-018, AGP-019, owned by echo-request), and the echo-request case's own
        // stop (AGP-018, AGP-019, AGP-043, not .owned_by).
        key: "agentprotocol/echo-request:not-carried-out",
        requirements: &["AGP-018", "AGP-019", "AGP-043"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a valid request is carried out with a response",
        fails: "a valid request (a case's control, or an echo with metadata and an extra payload member) answered with something other than a response or an error",
        passes: "a response",
    }
    // --- The cases' own checks (mod.rs, in the order of CASES).
    HELLO_VERSION {
        // Two sites: no version, and a string version other than "0.1".
        key: "agentprotocol/hello:version",
        requirements: &["AGP-014"],
        level: None,
        owner: "",
        summary: "the hello payload carries version \"0.1\"",
        fails: "a hello payload with no version, or a version string other than \"0.1\" (a version of another type is the schema's finding)",
        passes: "version \"0.1\"",
    }
    HELLO_FEATURES {
        key: "agentprotocol/hello:features",
        requirements: &["AGP-014"],
        level: None,
        owner: "",
        summary: "the hello payload carries a features list",
        fails: "a hello payload with no features member",
        passes: "a features member",
    }
    HELLO_NO_CAPABILITIES {
        key: "agentprotocol/hello:no-capabilities",
        requirements: &["AGP-015"],
        level: None,
        owner: "",
        summary: "the target's hello lists its capabilities in from.capabilities",
        fails: "a hello whose from.capabilities is empty or missing",
        passes: "at least one capability",
    }
    HELLO_CORE_CAPABILITIES {
        key: "agentprotocol/hello:core-capabilities",
        requirements: &["AGP-016"],
        level: None,
        owner: "",
        summary: "a capability in the agentprotocol: namespace is one of the core five",
        fails: "an agentprotocol: capability other than core, tasks, proofs, reputation or directory",
        passes: "only core capabilities under agentprotocol:, anything under other prefixes",
    }
    HELLO_CAPABILITY_FORM {
        key: "agentprotocol/hello:capability-form",
        requirements: &["AGP-007"],
        level: None,
        owner: "",
        summary: "a capability has the form prefix:name",
        fails: "a capability with no colon",
        passes: "every capability prefix:name",
    }
    HELLO_NO_CORE {
        key: "agentprotocol/hello:no-core",
        requirements: &["AGP-016", "AGP-A20"],
        level: Some(Level::Info),
        owner: "",
        summary: "whether the target advertises agentprotocol:core is recorded (informational, AGP-A20)",
        fails: "a hello listing capabilities, none of them agentprotocol:core",
        passes: "agentprotocol:core among the capabilities",
    }
    ECHO_REQUEST_STATUS {
        key: "agentprotocol/echo-request:status",
        requirements: &["AGP-A11"],
        level: Some(Level::Info),
        owner: "",
        summary: "the echo response's status is recorded (informational, AGP-A11)",
        fails: "an echo response with a string status other than \"success\"",
        passes: "status \"success\"",
    }
    ECHO_REQUEST_RESULT {
        key: "agentprotocol/echo-request:result",
        requirements: &["AGP-019"],
        level: None,
        owner: "",
        summary: "the echo response's result equals the request's params",
        fails: "an echo response whose result differs from the params (numbers compared by value)",
        passes: "result = params",
    }
    UNKNOWN_ACTION_CODE {
        key: "agentprotocol/unknown-action:code",
        requirements: &["AGP-020", "AGP-026"],
        level: None,
        owner: "",
        summary: "an action the target lacks draws error CAPABILITY_NOT_SUPPORTED",
        fails: "a request for an unknown action answered with another code, a response, no body, or silence while the target answers other requests",
        passes: "error CAPABILITY_NOT_SUPPORTED",
    }
    UNKNOWN_ACTION_DETAILS {
        key: "agentprotocol/unknown-action:details",
        requirements: &["AGP-020"],
        level: None,
        owner: "",
        summary: "CAPABILITY_NOT_SUPPORTED details name the requested action and list the available ones",
        fails: "details without requested equal to the action asked for, or without an available list",
        passes: "details.requested and details.available (a list)",
    }
    INVALID_MESSAGE_ACCEPTED {
        // The ids depend on the variant: AGP-023 for no type and id 123, AGP-010
        // and AGP-023 for type "bogus", AGP-018 and AGP-023 for params as a string.
        key: "agentprotocol/invalid-message:accepted",
        requirements: &["AGP-010", "AGP-018", "AGP-023"],
        level: None,
        owner: "",
        summary: "a malformed request draws error INVALID_MESSAGE",
        fails: "a request with no type, id 123, type \"bogus\" or params as a string answered with another code, a response, no body or silence",
        passes: "error INVALID_MESSAGE for each variant",
    }
    INPUT_VALIDATION_NOT_REFUSED {
        key: "agentprotocol/input-validation:not-refused",
        requirements: &["AGP-038"],
        level: None,
        owner: "",
        summary: "odd payloads are validated and draw INVALID_MESSAGE",
        fails: "a request with action 7 or timeout \"soon\" answered with another code (INTERNAL_ERROR), a response, no body or silence",
        passes: "error INVALID_MESSAGE",
    }
    REJECT_TAMPERED_CARRIED_OUT {
        // The ids depend on what was changed: AGP-024 for the payload, AGP-033 for
        // to.broadcast; each with AGP-035.
        key: "agentprotocol/reject-tampered:carried-out",
        requirements: &["AGP-024", "AGP-033", "AGP-035"],
        level: None,
        owner: "",
        summary: "a message changed after signing is not carried out",
        fails: "a request whose payload or to.broadcast was changed after signing answered with a response",
        passes: "error INVALID_SIGNATURE",
    }
    REJECT_TAMPERED_CODE {
        // Ids as for reject-tampered:carried-out.
        key: "agentprotocol/reject-tampered:code",
        requirements: &["AGP-024", "AGP-033", "AGP-035"],
        level: None,
        owner: "",
        summary: "a message changed after signing draws error INVALID_SIGNATURE",
        fails: "a request changed after signing refused with another code, or answered with no body or silence",
        passes: "error INVALID_SIGNATURE",
    }
    VERIFY_BEFORE_HELLO {
        key: "agentprotocol/verify:before-hello",
        requirements: &["AGP-024", "AGP-034", "AGP-035"],
        level: None,
        owner: "agentprotocol/reject-tampered",
        summary: "signatures are verified from a sender that never said hello, as after hello",
        fails: "a tampered or wrongly signed request from a sender that never said hello carried out, while after hello the same drew INVALID_SIGNATURE",
        passes: "INVALID_SIGNATURE (or another refusal) before hello too; a target that wants hello first is not judged",
    }
    REJECT_WRONG_KEY_CARRIED_OUT {
        key: "agentprotocol/reject-wrong-key:carried-out",
        requirements: &["AGP-034", "AGP-035"],
        level: None,
        owner: "",
        summary: "a message signed by another key than from.agentId's is not carried out",
        fails: "a request signed by another key answered with a response",
        passes: "error INVALID_SIGNATURE",
    }
    REJECT_WRONG_KEY_CODE {
        key: "agentprotocol/reject-wrong-key:code",
        requirements: &["AGP-034", "AGP-035"],
        level: None,
        owner: "",
        summary: "a message signed by another key than from.agentId's draws error INVALID_SIGNATURE",
        fails: "a request signed by another key refused with another code, or answered with no body or silence",
        passes: "error INVALID_SIGNATURE",
    }
    UNSIGNED_REQUEST_CARRIED_OUT {
        key: "agentprotocol/unsigned-request:carried-out",
        requirements: &["AGP-030", "AGP-035"],
        level: None,
        owner: "",
        summary: "an unsigned request is refused, above all by a target that advertises signed-messages",
        fails: "an unsigned request answered with a response (a warning, AGP-A3)",
        passes: "an error, no message, or a silent drop while the target stays alive",
    }
    UNKNOWN_AGENT_CARRIED_OUT {
        // .at(Level::Profile) when the profile says the target is a hub or relay
        // ([agentprotocol] unknown_agent_error, true by default), .at(Level::Info)
        // otherwise.
        key: "agentprotocol/unknown-agent:carried-out",
        requirements: &["AGP-025"],
        level: Some(Level::Profile),
        owner: "",
        summary: "a message addressed to another agent is not carried out where the profile says UNKNOWN_AGENT is sent",
        fails: "a request whose to.agentId names another agent answered with a response",
        passes: "error UNKNOWN_AGENT; informational for a single agent (unknown_agent_error = false)",
    }
    UNKNOWN_AGENT_CODE {
        // Levels as for unknown-agent:carried-out.
        key: "agentprotocol/unknown-agent:code",
        requirements: &["AGP-025"],
        level: Some(Level::Profile),
        owner: "",
        summary: "a message addressed to another agent draws error UNKNOWN_AGENT where the profile says it is sent",
        fails: "a request whose to.agentId names another agent refused with another code, or answered with no body or silence",
        passes: "error UNKNOWN_AGENT; informational for a single agent (unknown_agent_error = false)",
    }
    NOTIFY_ERROR {
        key: "agentprotocol/notify:error",
        requirements: &["AGP-021", "AGP-A14"],
        level: Some(Level::Should),
        owner: "",
        summary: "a valid notify draws no error (a warning, AGP-A14)",
        fails: "a valid notify answered with an error",
        passes: "no reply, HTTP with no message, or an acknowledgement (informational)",
    }
    TIMEOUT_WITHIN_TIMEOUT {
        key: "agentprotocol/timeout:within-timeout",
        requirements: &["AGP-018", "AGP-027"],
        level: None,
        owner: "",
        summary: "a delay within its request's timeout is carried out",
        fails: "a delay of 20 ms with timeout 1500 ms answered with TIMEOUT or something other than a response or an error",
        passes: "a response",
    }
    TIMEOUT_NOT_TIMED_OUT {
        // Two sites: AGP-027 .at(Level::Profile) when the profile says the target
        // sends TIMEOUT ([agentprotocol] timeout_error, true by default); AGP-A18,
        // informational, otherwise.
        key: "agentprotocol/timeout:not-timed-out",
        requirements: &["AGP-027", "AGP-A18"],
        level: Some(Level::Profile),
        owner: "",
        summary: "a delay longer than the request's timeout draws error TIMEOUT where the profile says it is sent",
        fails: "a delay of 2000 ms with timeout 100 ms answered with a response, another code, no body or silence",
        passes: "error TIMEOUT; informational when timeout_error = false (AGP-A18)",
    }
    TIMEOUT_RECORDED {
        key: "agentprotocol/timeout:recorded",
        requirements: &["AGP-A18"],
        level: Some(Level::Info),
        owner: "",
        summary: "what a target that leaves TIMEOUT to the requester ([agentprotocol] timeout_error = false) does with a delay past its timeout, recorded",
        fails: "never fails: a delay of 2000 ms with timeout 100 ms answered otherwise than with error TIMEOUT, recorded (AGP-A18)",
        passes: "error TIMEOUT",
    }
    UNKNOWN_AGENT_RECORDED {
        key: "agentprotocol/unknown-agent:recorded:*",
        requirements: &["AGP-025"],
        level: Some(Level::Info),
        owner: "",
        summary: "what a single agent ([agentprotocol] unknown_agent_error = false) does with a request addressed to another agent, recorded",
        fails: "never fails: a request whose to.agentId names another agent carried out or refused with another code than UNKNOWN_AGENT, recorded",
        passes: "error UNKNOWN_AGENT",
    }
    NON_ASCII_CANONICAL_FORM_REJECTED {
        key: "agentprotocol/non-ascii-canonical-form:rejected",
        requirements: &["AGP-031", "AGP-A1"],
        level: Some(Level::Info),
        owner: "",
        summary: "a request signed over RFC 8785 with non-ASCII text and exponent numbers is accepted (informational, AGP-A1)",
        fails: "such a request drew INVALID_SIGNATURE: the target's canonical form differs from RFC 8785",
        passes: "anything but INVALID_SIGNATURE",
    }
    RATE_LIMIT_CODE {
        key: "agentprotocol/rate-limit:code",
        requirements: &["AGP-028"],
        level: None,
        owner: "",
        summary: "a throttled request draws error RATE_LIMITED",
        fails: "a request of a burst of 60 answered with something other than a response or error RATE_LIMITED",
        passes: "responses and RATE_LIMITED errors only",
    }
    RATE_LIMIT_NONE {
        key: "agentprotocol/rate-limit:none",
        requirements: &["AGP-037"],
        level: None,
        owner: "",
        summary: "incoming messages are rate-limited",
        fails: "a burst of 60 requests from one sender drew no RATE_LIMITED",
        passes: "at least one RATE_LIMITED in the burst",
    }
    RATE_LIMIT_NEVER_RESET {
        key: "agentprotocol/rate-limit:never-reset",
        requirements: &["AGP-028"],
        level: Some(Level::Profile),
        owner: "",
        summary: "a throttled sender is served again after the rate window the profile gives",
        fails: "one request past [agentprotocol] rate_window_ms after the burst still drew RATE_LIMITED",
        passes: "the request after the window is not RATE_LIMITED",
    }
    // The proxy's reading of a real client's message against the ones before it.
    CLIENT_ID_REUSED {
        key: "agentprotocol/client:id-reused",
        requirements: &["AGP-003"],
        level: None,
        owner: "",
        summary: "every message of a client has an id of its own",
        fails: "a client's message whose id an earlier message carried: another of its messages in the whole run (whichever case sent it), or through the proxy its hello's, say, or the server's",
        passes: "a fresh id on every message",
    }
    CLIENT_CORRELATION_REUSED {
        key: "agentprotocol/client:correlation-reused",
        requirements: &["AGP-019", "AGP-A7"],
        level: Some(Level::Should),
        owner: "",
        summary: "every request of a client has a correlationId of its own",
        fails: "a client's request whose correlationId an earlier request of its run carried (a warning: the spec is silent on duplicates, AGP-A7)",
        passes: "a fresh correlationId on every request",
    }
}
