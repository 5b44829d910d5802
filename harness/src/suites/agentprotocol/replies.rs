//! How every reply is read (agentprotocol.md, Message Format, Request/Response, Error
//! Codes, Signature Verification): `read_reply` runs each check of `CHECKS` (the
//! envelope, id, timestamp, from, capabilities, to, signature, payload), each rule a
//! typed finding with one owner case; the signature verifier `explain` uses.

use super::payloads::read_payload;
use super::wire::{describe, json_eq, shown, Asked};
use crate::case::{Level, Step};
use crate::finding::{quote, Finding};
use crate::rules::rules;
use crate::script::Ctx;
use reference_impl::agentprotocol::message::{self, TYPES};
use reference_impl::wire::keys::{self, KeyForm};
use reference_impl::wire::{is_uuid, json};
use serde_json::{json, Map, Value};
use std::collections::HashSet;

rules! {
    // --- What every reply is held to (read_reply), also a client's messages.
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
        // Three sites in agent_id_form: not a key (AGP-005), hex or did:key
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
        // Two sites: a case's twin or control not carried out (Me::twin,
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
    ECHO_REQUEST_RESULT {
        key: "agentprotocol/echo-request:result",
        requirements: &["AGP-019"],
        level: None,
        owner: "",
        summary: "the echo response's result equals the request's params",
        fails: "an echo response whose result differs from the params (numbers compared by value)",
        passes: "result = params",
    }
}

/// What the reply `r` to an echo request (`what`) of `params` breaks: it is a
/// response (`echo-request:not-carried-out`, AGP-018, AGP-043; a response carries
/// the request out whatever its status, AGP-A11) whose result is the params
/// (`echo-request:result`, AGP-019, numbers compared by value) when `params` are
/// known.
pub fn echo_finding(r: &Value, params: Option<&Value>, what: &str) -> Option<Finding> {
    if r["type"] != "response" {
        return Some(
            ECHO_REQUEST_NOT_CARRIED_OUT
                .found(format!("{what} drew {} (AGP-018, AGP-043)", describe(r))),
        );
    }
    let got = &r["payload"]["result"];
    let params = params.filter(|p| !json_eq(got, p))?;
    Some(ECHO_REQUEST_RESULT.found(format!(
        "the echo response's result is {}, not the params {params} (AGP-019)",
        shown(&got.to_string())
    )))
}

/// Whether two agent ids name the same agent: equal, or the same key bytes in two
/// base64 flavours (AGP-A4 accepts both).
pub fn same_agent(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (keys::b64_decode_any(a), keys::b64_decode_any(b)) {
        (Some((x, _)), Some((y, _))) => x == y && x.len() == 32,
        _ => false,
    }
}

/// How an agent id spells its key, and the finding when that is not base64 of a
/// 32-byte Ed25519 key (AGP-005): base58 is a warning (AGP-A4), hex or did:key a
/// deviation read past, anything else a deviation with no key to verify against.
/// `whose` names where the id came from. The first value says whether a key was read.
pub fn agent_id_form(id: &str, whose: &str) -> (bool, Option<Finding>) {
    match keys::candidate_keys(id) {
        Err(_) => (
            false,
            Some(AGENT_ID_ENCODING.found(format!(
                "{whose} {} is not an Ed25519 public key in base64 (AGP-005)",
                quote(id)
            ))),
        ),
        Ok(c) if c.iter().any(|(_, f)| matches!(f, KeyForm::RawBase64(_))) => (true, None),
        Ok(c) if c.iter().all(|(_, f)| *f == KeyForm::RawBase58) => (
            true,
            Some(AGENT_ID_BASE58.found(format!(
                "{whose} {} is a key in base58, accepted as a last resort (AGP-005; a warning, AGP-A4)",
                quote(id)
            ))),
        ),
        Ok(c) => (
            true,
            Some(AGENT_ID_ENCODING.found(format!(
                    "{whose} {} is a {}, not base64 (AGP-005); read as such to go on",
                    quote(id),
                    c.first().map(|(_, f)| f.to_string()).unwrap_or_default()
                ),
            )),
        ),
    }
}

/// Whether `sig` (base64 in any flavour) verifies over `bytes` with a key `id` names.
fn verifies(id: &str, sig: &str, bytes: &[u8]) -> bool {
    let Ok((sig, _)) = keys::decode_signature(sig) else {
        return false;
    };
    keys::candidate_keys(id)
        .map(|c| c.iter().any(|(k, _)| keys::verify(k, bytes, &sig)))
        .unwrap_or(false)
}

/// One reply as it is read: the bytes and their JSON, what it answers, and the
/// reply as the harness reads it on (`v`: capabilities as a list, the payload as an
/// object, correlationId where it belongs).
struct Reading<'a> {
    ctx: &'a mut Ctx,
    body: &'a [u8],
    raw: Value,
    /// `raw` as an object (a message always is one).
    obj: Map<String, Value>,
    ty: String,
    /// "response" or "<type> reply", for the findings' words.
    what: String,
    asked: &'a Asked,
    seen: &'a mut HashSet<String>,
    v: Value,
    from_id: Option<String>,
    /// Whether from.agentId gave a key to verify the signature with.
    key_read: bool,
}

impl Reading<'_> {
    /// A finding of a rule the hello case owns.
    fn hello_owned(&mut self, f: Finding) {
        self.ctx.finding(f);
    }
}

/// One check of a reply.
type Check = fn(&mut Reading);

/// The checks every reply is held to, in the order they read it: each gives the
/// findings of its rules (the `rules!` blocks of the area files) and may read the reply on as the target meant it.
const CHECKS: &[(&str, Check)] = &[
    ("envelope", check_envelope),
    ("id", check_id),
    ("timestamp", check_timestamp),
    ("from", check_from),
    ("capabilities", check_capabilities),
    ("to", check_to),
    ("signature", check_signature),
    ("payload", check_payload),
];

/// Reads one target reply (`status`: the HTTP status, when HTTP carried it). Every
/// deviation becomes a finding in `ctx`; the reply comes back as the target meant it.
/// A reply that is not JSON, not a message, or has no type blocks the case.
pub fn read_reply(
    ctx: &mut Ctx,
    body: &[u8],
    status: Option<u16>,
    asked: &Asked,
    seen: &mut HashSet<String>,
) -> Step<Value> {
    let (raw, ty) = message_of(ctx, body, status)?;
    let what = match ty.as_str() {
        "response" => "response".to_string(),
        t => format!("{t} reply"),
    };
    let mut r = Reading {
        ctx,
        body,
        v: raw.clone(),
        obj: raw.as_object().cloned().unwrap_or_default(),
        raw,
        ty,
        what,
        asked,
        seen,
        from_id: None,
        key_read: false,
    };
    for (_, check) in CHECKS {
        check(&mut r);
    }
    Ok(r.v)
}

/// A reply that is no message at all: an error-like one belongs to the invalid-message
/// case (an error is a message of type error), any other to hello.
fn not_a_message(status: Option<u16>, text: &str, error_like: bool, why: String) -> Finding {
    let at = status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
    if error_like {
        ERROR_NOT_A_MESSAGE.found(format!("{at}{why}: {} (an error is a message of type error, AGP-020; the status is not judged, AGP-A10)", shown(text)))
    } else {
        REPLY_NOT_A_MESSAGE.found(format!("{at}{why}: {} (AGP-001)", shown(text)))
    }
}

/// The reply's JSON and type, or the finding that blocks the case: not JSON, not an
/// object, not a message, no type.
fn message_of(ctx: &mut Ctx, body: &[u8], status: Option<u16>) -> Step<(Value, String)> {
    let text = String::from_utf8_lossy(body);
    let errorish_status = status.is_some_and(|s| s >= 400);
    let at = status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
    let raw = match json::parse(body) {
        Ok(t) => t.to_serde(),
        Err(e) if errorish_status || body.is_empty() => {
            let why = format!("the reply is not an agentprotocol message ({e})");
            return Err(ctx.block(not_a_message(status, &text, true, why)));
        }
        Err(e) => {
            return Err(ctx.block(REPLY_NOT_JSON.found(format!(
                "{at}the reply is not JSON ({e}): {} (AGP-001)",
                shown(&text)
            ))))
        }
    };
    let Some(obj) = raw.as_object() else {
        let why = "the reply is not a JSON object".to_string();
        return Err(ctx.block(not_a_message(status, &text, errorish_status, why)));
    };
    let looks_like_message = obj.get("type").is_some_and(Value::is_string)
        || ["protocol", "from", "payload", "signature"]
            .iter()
            .filter(|k| obj.contains_key(**k))
            .count()
            >= 2;
    if !looks_like_message {
        let error_like = errorish_status
            || ["detail", "error", "errors", "message", "code"]
                .iter()
                .any(|k| obj.contains_key(*k));
        let why = "the reply is not an agentprotocol message".to_string();
        return Err(ctx.block(not_a_message(status, &text, error_like, why)));
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.clone(),
        other => {
            let what = match other {
                None => "has no `type`".to_string(),
                Some(t) => format!("has type {t}, not a string"),
            };
            return Err(ctx.block(ENVELOPE_TYPE.found(format!(
                "{at}the reply {what}: {} (AGP-001, AGP-010)",
                shown(&text)
            ))));
        }
    };
    Ok((raw, ty))
}

/// The envelope's members (AGP-001, AGP-A6: target output carries all of it), its
/// type (AGP-010) and protocol tag (AGP-002).
fn check_envelope(r: &mut Reading) {
    let what = r.what.clone();
    for m in ["protocol", "id", "timestamp", "from", "payload"] {
        if !r.obj.contains_key(m) {
            let summary = format!("the {what} has no `{m}` (AGP-001, AGP-A6)");
            r.hello_owned(ENVELOPE.found_as(m, summary));
        }
    }
    if !TYPES.contains(&r.ty.as_str()) {
        let summary = format!(
            "a reply has type {:?}, not one of {TYPES:?} (AGP-010)",
            r.ty
        );
        r.hello_owned(TYPE.found(summary));
    }
    if let Some(p) = r.obj.get("protocol").filter(|p| *p != message::PROTOCOL) {
        let summary = format!(
            "the {what} has protocol {p}, not {:?} (AGP-002)",
            message::PROTOCOL
        );
        r.hello_owned(PROTOCOL.found(summary));
    }
}

/// The id: a UUID (AGP-003), never one the target used before.
fn check_id(r: &mut Reading) {
    let what = &r.what;
    let f = |summary: String| ID_NOT_UUID.found(summary);
    match r.obj.get("id") {
        Some(Value::String(id)) => {
            if !is_uuid(id) {
                r.ctx
                    .finding(f(format!("the {what} has id {id:?}, not a UUID (AGP-003)")));
            }
            if !r.seen.insert(id.clone()) {
                r.ctx
                    .finding(ID_REUSED.found(format!("reply id {id:?} was used twice (AGP-003)")));
            }
        }
        Some(other) => r.ctx.finding(f(format!(
            "the {what} has id {other}, not a UUID string (AGP-003)"
        ))),
        None => {}
    }
}

/// The timestamp: an ISO 8601 date-time (AGP-004); neither UTC nor freshness is
/// required (AGP-A12), so those are notes.
fn check_timestamp(r: &mut Reading) {
    let Some(t) = r.obj.get("timestamp").cloned() else {
        return;
    };
    let parsed = t.as_str().and_then(|s| {
        time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
    });
    let Some(when) = parsed else {
        let summary = format!(
            "the {} has timestamp {t}, not an ISO 8601 date-time (AGP-004)",
            r.what
        );
        return r.hello_owned(TIMESTAMP.found(summary));
    };
    if when.offset() != time::UtcOffset::UTC {
        r.ctx.note(format!(
            "reply timestamp {t} is not in UTC (informational, AGP-A12)"
        ));
    }
    let skew = (r.ctx.clock() - when).whole_seconds().abs();
    if skew > 60 {
        r.ctx.note(format!(
            "reply timestamp is {skew} s off the harness clock (informational, AGP-A12)"
        ));
    }
}

/// from: an object naming the sender's key (AGP-005), the agent that said hello
/// (AGP-009).
fn check_from(r: &mut Reading) {
    let what = r.what.clone();
    r.from_id = r
        .obj
        .get("from")
        .and_then(|f| f.get("agentId"))
        .and_then(Value::as_str)
        .map(String::from);
    match (r.obj.get("from").cloned(), r.from_id.clone()) {
        (Some(Value::Object(_)), Some(id)) => {
            let (read, f) = agent_id_form(&id, "from.agentId");
            r.key_read = read;
            if let Some(f) = f {
                r.ctx.finding(f);
            }
        }
        (Some(Value::Object(from)), None) => {
            let summary = format!(
                "the {what}'s `from` names no agentId: {} (AGP-005)",
                Value::Object(from)
            );
            r.hello_owned(ENVELOPE_FROM_AGENTID.found(summary));
        }
        (Some(f), _) => {
            let summary = format!(
                "the {what}'s `from` is {}, not an object (AGP-001)",
                shown(&f.to_string())
            );
            r.hello_owned(ENVELOPE.found_as("from", summary));
        }
        (None, _) => {}
    }
    let asked = r.asked;
    if let (Some(t), Some(f)) = (&asked.target, r.from_id.clone()) {
        if !same_agent(t, &f) {
            let summary =
                format!("the {what} comes from {f}, not the agent that said hello ({t}) (AGP-009)");
            r.hello_owned(FROM_NOT_THE_TARGET.found(summary));
        }
    }
}

/// from.capabilities: a list of capability URIs (AGP-007), read on as a list
/// whatever the target wrote; missing outside hello is a warning (AGP-A6).
fn check_capabilities(r: &mut Reading) {
    let Some(Value::Object(from)) = r.v.get("from") else {
        return;
    };
    let list: Option<Vec<String>> = match from.get("capabilities").cloned() {
        None => {
            if r.ty != "hello" {
                r.ctx.finding(CAPABILITIES_MISSING.found(
                    "replies carry no from.capabilities (AGP-007; a warning outside hello, AGP-A6)",
                ));
            }
            None
        }
        Some(Value::Array(a)) => {
            if !a.iter().all(Value::is_string) {
                let summary = format!(
                    "from.capabilities holds more than strings: {} (AGP-007)",
                    shown(&Value::Array(a.clone()).to_string())
                );
                r.hello_owned(CAPABILITIES_NOT_STRINGS.found(summary));
            }
            Some(
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect(),
            )
        }
        Some(other) => {
            let summary = format!(
                "from.capabilities is {}, not a list of capability URIs (AGP-007)",
                shown(&other.to_string())
            );
            r.hello_owned(CAPABILITIES_NOT_A_LIST.found(summary));
            Some(capability_list(&other))
        }
    };
    if let (Some(list), Some(Value::Object(from))) = (list, r.v.get_mut("from")) {
        from.insert("capabilities".into(), json!(list));
    }
}

/// The capabilities a map (the keys not switched off) or a comma or space separated
/// string names.
fn capability_list(caps: &Value) -> Vec<String> {
    match caps {
        Value::Object(o) => o
            .iter()
            .filter(|(_, x)| !matches!(x, Value::Bool(false) | Value::Null))
            .map(|(k, _)| k.clone())
            .collect(),
        Value::String(s) => s
            .split([',', ' '])
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// to: addressed to the sender (AGP-008, AGP-009); missing is a warning (AGP-A22).
fn check_to(r: &mut Reading) {
    let what = r.what.clone();
    let to = match r.obj.get("to").cloned() {
        Some(Value::Object(to)) => to,
        None => {
            return r.ctx.finding(
                ENVELOPE_TO.found(format!("the {what} carries no `to` (a warning, AGP-A22)")),
            )
        }
        Some(other) => {
            let summary = format!(
                "the {what}'s `to` is {}, not an object (AGP-008)",
                shown(&other.to_string())
            );
            return r.hello_owned(TO.found(summary));
        }
    };
    match to.get("agentId") {
        Some(Value::String(t)) => {
            let asked = r.asked;
            if let Some(s) = asked.sender.as_ref().filter(|s| !same_agent(t, s)) {
                let summary = format!(
                    "the {what} is addressed to {t}, not to the sender {s} (AGP-008, AGP-009)"
                );
                r.hello_owned(TO_NOT_THE_SENDER.found(summary));
            }
        }
        None => r.ctx.finding(ENVELOPE_TO.found(format!(
            "the {what}'s `to` names no agentId (a warning, AGP-A22)"
        ))),
        Some(other) => {
            let summary = format!("the {what}'s to.agentId is {other}, not a string (AGP-008)");
            r.hello_owned(TO_AGENTID.found(summary));
        }
    }
    check_broadcast(r, to.get("broadcast"));
}

/// to.broadcast: only typed, its meaning undefined (AGP-A13).
fn check_broadcast(r: &mut Reading, broadcast: Option<&Value>) {
    let what = r.what.clone();
    match broadcast {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => r.ctx.finding(TO_BROADCAST_TRUE.found(format!(
            "the {what} has to.broadcast true (informational: its meaning is undefined, AGP-A13)"
        ))),
        Some(other) => {
            let summary = format!("the {what}'s to.broadcast is {other}, not a boolean (AGP-008)");
            r.hello_owned(TO_BROADCAST.found(summary));
        }
    }
}

/// The signature: base64 in any flavour (AGP-012, AGP-A4), present (AGP-030), and
/// verifying over the RFC 8785 form with from.agentId's key (AGP-031).
fn check_signature(r: &mut Reading) {
    let what = r.what.clone();
    let s = match r.obj.get("signature").cloned() {
        None | Some(Value::Null) => return r.ctx.finding(unsigned(&r.ty)),
        Some(Value::String(s)) if s.is_empty() => return r.ctx.finding(unsigned(&r.ty)),
        Some(Value::String(s)) => s,
        Some(other) => {
            let summary = format!("the {what}'s signature is {other}, not a string (AGP-012)");
            return r.hello_owned(SIGNATURE_ENCODING.found(summary));
        }
    };
    let sig = if keys::decode_signature(&s).is_ok() {
        Some(s.clone())
    } else if s.len() == 128 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        let summary =
            format!("the {what}'s signature is hex, not base64 (AGP-012); read as such to go on");
        r.hello_owned(SIGNATURE_ENCODING.found(summary));
        hex(&s).map(|b| keys::b64std(&b))
    } else {
        let why = keys::decode_signature(&s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let summary = format!(
            "the {what}'s signature {} is not a base64 Ed25519 signature: {why} (AGP-012)",
            quote(&s)
        );
        r.hello_owned(SIGNATURE_ENCODING.found(summary));
        None
    };
    if let (Some(sig), Some(id), true) = (sig, r.from_id.clone(), r.key_read) {
        signature_verdict(r.ctx, r.body, &r.raw, &id, &sig, &what);
    }
}

/// The payload: an object (AGP-011), and its members by type.
fn check_payload(r: &mut Reading) {
    if !r.v.get("payload").is_none_or(Value::is_object) {
        let summary = format!(
            "the {}'s payload is {}, not an object (AGP-011)",
            r.what,
            shown(&r.v["payload"].to_string())
        );
        r.hello_owned(PAYLOAD.found(summary));
    }
    if !r.v["payload"].is_object() {
        r.v["payload"] = json!({});
    }
    let top_level_corr = r.obj.get("correlationId").cloned();
    if let Some(Value::Object(p)) = r.v.get_mut("payload") {
        read_payload(r.ctx, p, &r.ty, &r.what, r.asked, top_level_corr);
    }
}

fn unsigned(ty: &str) -> Finding {
    if ty == "hello" {
        SIGNATURE_MISSING.found("the hello reply carries no signature (AGP-001: target output carries the full envelope, AGP-A6)")
    } else {
        SIGNATURE_MISSING.found(format!(
            "a {ty} reply carries no signature (AGP-030; a warning, AGP-A3)"
        ))
    }
}

fn hex(s: &str) -> Option<Vec<u8>> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// Verifies a reply's signature over its RFC 8785 form without `signature`; when it
/// does not verify, says which other signing input it verifies over, if any.
fn signature_verdict(ctx: &mut Ctx, body: &[u8], raw: &Value, id: &str, sig: &str, what: &str) {
    let canonical = json::parse(body)
        .map_err(|e| e.to_string())
        .and_then(|t| message::signing_bytes(t).map_err(|e| e.to_string()));
    let why = match canonical {
        Ok(c) if verifies(id, sig, &c) => {
            ctx.checked("reply signature verifies over its RFC 8785 form");
            return;
        }
        Ok(_) => {
            let mut stripped = raw.clone();
            if let Some(o) = stripped.as_object_mut() {
                o.remove("signature");
            }
            let forms = [
                ("Python's json.dumps(sort_keys=True) with its default separators \", \" and \": \"", message::python_sorted_json(&stripped, false)),
                ("Python's json.dumps(sort_keys=True, separators=(\",\", \":\")), non-ASCII escaped", message::python_sorted_json(&stripped, true)),
                ("the message as the target wrote it, key order kept", serde_json::to_string(&stripped).unwrap_or_default()),
            ];
            match forms.iter().find(|(_, text)| verifies(id, sig, text.as_bytes())) {
                Some((name, _)) => format!("it verifies over {name}, not over the RFC 8785 form"),
                None => "it verifies over neither the RFC 8785 form nor a sorted-key JSON.stringify or json.dumps form".into(),
            }
        }
        Err(e) => format!("the reply has no canonical form: {e}"),
    };
    ctx.finding(SIGNATURE_MISMATCH.found(format!(
        "the {what}'s signature does not verify with from.agentId's key: {why} (AGP-005, AGP-031)"
    )));
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `agentconform sign --suite agentprotocol`: sets `from.agentId` to the key's id and
/// signs over RFC 8785 without `signature`; returns the canonical bytes.
pub fn sign_message(
    mut env: serde_json::Value,
    key: &reference_impl::wire::keys::Keypair,
) -> Result<Vec<u8>, String> {
    use reference_impl::agentprotocol::message as ap;
    if !env.get("from").is_some_and(|s| s.is_object()) {
        env["from"] = serde_json::json!({});
    }
    env["from"]["agentId"] = serde_json::json!(ap::agent_id(key));
    ap::sign(&mut env, key).map_err(|e| e.to_string())?;
    reference_impl::wire::jcs::canonicalize_serde(&env).map_err(|e| e.to_string())
}

/// `agentconform verify --suite agentprotocol`: the key, the canonical bytes, the
/// verdict.
pub fn explain_verify(bytes: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<bool> {
    use reference_impl::agentprotocol::message as ap;
    let tree = match reference_impl::wire::json::parse(bytes) {
        Ok(t) => t,
        Err(e) => {
            writeln!(out, "INVALID: not JSON: {e}")?;
            return Ok(false);
        }
    };
    let id = tree
        .get("from")
        .and_then(|f| f.get("agentId"))
        .and_then(|a| a.as_str())
        .unwrap_or("")
        .to_string();
    writeln!(out, "from.agentId: {id}")?;
    match ap::signing_bytes(tree.clone()) {
        Ok(c) => writeln!(
            out,
            "canonical bytes (RFC 8785, signature removed): {}",
            String::from_utf8_lossy(&c)
        )?,
        Err(e) => writeln!(out, "cannot canonicalize: {e}")?,
    }
    match ap::verify_tree(tree) {
        Ok(()) => {
            writeln!(
                out,
                "VALID: signature verifies with the key of from.agentId"
            )?;
            Ok(true)
        }
        Err(e) => {
            writeln!(out, "INVALID: {e}")?;
            Ok(false)
        }
    }
}

/// Judges a recorded reply again with [`read_reply`] (an exported vector's offline
/// run; whom it answered is not recorded, so the addressee is not judged).
pub fn reread(ctx: &mut Ctx, r: &crate::case::Recorded) {
    let _ = read_reply(
        ctx,
        &r.body,
        r.http_status,
        &Asked::default(),
        &mut HashSet::new(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use reference_impl::agentprotocol::message::agent_id;
    use reference_impl::wire::keys::Keypair;

    #[test]
    fn agent_id_forms() {
        let k = Keypair::from_seed(&[7; 32]);
        assert_eq!(agent_id_form(&agent_id(&k), "x"), (true, None));
        let url = keys::b64url(k.public().as_bytes());
        assert_eq!(agent_id_form(&url, "x"), (true, None));
        let hex: String = k
            .public()
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let (read, f) = agent_id_form(&hex, "x");
        assert!(read && f.is_some_and(|f| f.outcome == crate::finding::Verdict::Fail));
        assert!(!agent_id_form("nope", "x").0);
        assert!(same_agent(&agent_id(&k), &url));
    }
}
