//! How every reply is read (agora-v1.md §1, §2 and §4): `read_reply` and `check_reply`
//! apply each rule a reply can break on the way to a case's subject (JSON, the envelope
//! and payload schemas, ids, the timestamp, the signature, the HTTP status, the ERROR
//! code), each a typed finding with one owner case; the reply is then read leniently so
//! that each case still judges its own subject.

use super::wire::{error_code_of, error_message_of, reply_bytes, Env, Read};
use crate::case::{Level, Step};
use crate::drive::Received;
use crate::finding::{quote, Finding};
use crate::profile::HttpStatusRule;
use crate::rules::{rules, Rule};
use crate::script::Ctx;
use reference_impl::agora_v1::envelope::{self, SigVariant, ERROR_CODES, PROTOCOL, TYPES};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::keys::{B64Flavor, KeyForm, Keypair};
use reference_impl::wire::{jcs, json};
use serde_json::{json, Value};

rules! {
    REPLY_NOT_JSON {
        key: "agora-v1/reply:not-json",
        requirements: &["AV1-001"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a reply is JSON",
        fails: "a body or frame that does not parse as JSON, with no refusing HTTP status (a refusal of 400 and more is reply:error-not-envelope)",
        passes: "a reply that parses as JSON",
    }
    REPLY_NOT_OBJECT {
        key: "agora-v1/reply:not-object",
        requirements: &["AV1-001"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a reply is a JSON object, the envelope, never a bare value",
        fails: "a reply that is JSON but not an object (an array, a string, a number), with no refusing HTTP status",
        passes: "a reply that is a JSON object",
    }
    REPLY_NOT_ENVELOPE {
        key: "agora-v1/reply:not-envelope",
        requirements: &["AV1-001"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a reply object is an envelope: it has sender and payload",
        fails: "a JSON object with neither sender nor payload that looks like no refusal (no code, no message, no status of 400 and more)",
        passes: "an object with a sender or a payload member, read on as an envelope",
    }
    REPLY_ERROR_NOT_ENVELOPE {
        key: "agora-v1/reply:error-not-envelope",
        requirements: &["AV1-001", "AV1-045"],
        level: None,
        owner: "agora-v1/error-unknown-resource",
        summary: "a refusal is an ERROR envelope, not a body of another shape",
        fails: "a refusal outside the envelope: a web framework's error body or a bare {\"error\", \"code\"} object, or a non-envelope reply with HTTP 400 and more",
        passes: "a refusal sent as an ERROR envelope with its code and message in the payload",
    }
    REPLY_NO_TYPE {
        key: "agora-v1/reply:no-type",
        requirements: &["AV1-002", "AV1-009"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope has a string type",
        fails: "an envelope whose type is missing or not a string; the reply cannot be read on and blocks the case",
        passes: "a string type (a known type in lower case is read as upper case; schema:envelope:/type says so)",
    }
    // member at fault (envelope_findings); the timestamp has its own rules.
    // string after it; both with AV1-003 and the same owner.
    SCHEMA_ENVELOPE_PROTOCOL {
        key: "agora-v1/schema:envelope:/protocol",
        requirements: &["AV1-003"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope's protocol is exactly \"agora/1.0\"",
        fails: "protocol missing, or any other string (\"agora/1.1\", \"agora/2.0\", \"Agora/1.0\")",
        passes: "protocol \"agora/1.0\"",
    }
    SCHEMA_ENVELOPE_ID {
        key: "agora-v1/schema:envelope:/id",
        requirements: &["AV1-004"],
        level: None,
        owner: "agora-v1/ids-unique",
        summary: "an envelope has an id, a string that identifies the message",
        fails: "an id missing or not a string in the envelope schema's form",
        passes: "an id the envelope schema accepts",
    }
    SCHEMA_ENVELOPE_TYPE {
        key: "agora-v1/schema:envelope:/type",
        requirements: &["AV1-009"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope's type is one of the eight upper-case types of agora-v1.md",
        fails: "a type outside HELLO, WELCOME, STATUS, REQUEST, OFFER, ACCEPT, RESULT, ERROR, or one spelled in lower case (then read as upper case)",
        passes: "one of the eight types, in upper case",
    }
    SCHEMA_ENVELOPE_SENDER_ID {
        key: "agora-v1/schema:envelope:/sender/id",
        requirements: &["AV1-012"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "sender.id is a string naming the agent's public key",
        fails: "sender.id missing, not a string or outside the schema's form; the signature cannot then be judged",
        passes: "a sender.id the envelope schema accepts",
    }
    SCHEMA_ENVELOPE_SENDER_SIGNATURE {
        key: "agora-v1/schema:envelope:/sender/signature",
        requirements: &["AV1-014", "AV1-016"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "every message is signed, its signature in sender.signature",
        fails: "sender.signature missing, empty or not a string in the schema's form",
        passes: "a sender.signature the envelope schema accepts",
    }
    SCHEMA_ENVELOPE_SIGNATURE {
        key: "agora-v1/schema:envelope:/signature",
        requirements: &["AV1-014", "AV1-016"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "the signature sits in sender.signature, not at the top level",
        fails: "a top-level signature member (one finding, not also a missing sender.signature)",
        passes: "no top-level signature; the signature in sender.signature",
    }
    SCHEMA_ENVELOPE_PAYLOAD {
        key: "agora-v1/schema:envelope:/payload",
        requirements: &["AV1-015"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope's payload is a JSON object",
        fails: "payload missing, or an array, a string or another non-object",
        passes: "a payload object (its members are judged per type)",
    }
    SCHEMA_ENVELOPE {
        key: "agora-v1/schema:envelope:*",
        requirements: &["AV1-002"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope has the members protocol, id, timestamp, type, sender {id, signature} and payload",
        fails: "another envelope member at fault (sender not an object, a member the schema does not allow); the detail is the JSON pointer",
        passes: "an envelope the envelope schema validates",
    }
    SCHEMA_RESULT_REQUEST_ID {
        key: "agora-v1/schema:result:/request_id",
        requirements: &["AV1-042"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a RESULT payload has request_id, a string",
        fails: "RESULT.request_id missing or not a string",
        passes: "a string request_id (that it names the REQUEST is result:request-id)",
    }
    SCHEMA_RESULT_STATUS {
        key: "agora-v1/schema:result:/status",
        requirements: &["AV1-043"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a RESULT's status is \"success\" or \"partial\", in lower case",
        fails: "status missing, in upper case (\"SUCCESS\"), or another value",
        passes: "status \"success\" or \"partial\"",
    }
    SCHEMA_RESULT {
        key: "agora-v1/schema:result:*",
        requirements: &["AV1-044"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a RESULT payload holds its output in data, an object",
        fails: "data missing (the output under result or output instead), not an object, or another member at fault; the detail is the JSON pointer",
        passes: "a RESULT payload the result schema validates",
    }
    SCHEMA_OFFER_REQUEST_ID {
        key: "agora-v1/schema:offer:/request_id",
        requirements: &["AV1-037"],
        level: None,
        owner: "agora-v1/negotiated-flow",
        summary: "an OFFER payload has request_id, a string",
        fails: "OFFER.request_id missing or not a string",
        passes: "a string request_id (that it names the REQUEST is offer:request-id)",
    }
    SCHEMA_OFFER {
        key: "agora-v1/schema:offer:*",
        requirements: &["AV1-038"],
        level: None,
        owner: "agora-v1/negotiated-flow",
        summary: "an OFFER payload carries cost (number), ttl (integer ms) and eta (integer ms)",
        fails: "cost, ttl or eta missing or of another type, or another member at fault; the detail is the JSON pointer",
        passes: "an OFFER payload the offer schema validates",
    }
    SCHEMA_ERROR_CODE {
        key: "agora-v1/schema:error:/code",
        requirements: &["AV1-045"],
        level: None,
        owner: "agora-v1/error-unknown-resource",
        summary: "an ERROR payload has code, an integer",
        fails: "no code, a string code (\"403\"), or the code elsewhere (error.code, error_code, status); one finding, which also covers a message found elsewhere",
        passes: "an integer code in payload.code",
    }
    SCHEMA_ERROR {
        key: "agora-v1/schema:error:*",
        requirements: &["AV1-045"],
        level: None,
        owner: "agora-v1/error-unknown-resource",
        summary: "an ERROR payload has message (a string) and an optional request_id (a string)",
        fails: "message missing or not a string, request_id not a string, or another member at fault; the detail is the JSON pointer",
        passes: "an ERROR payload the error schema validates",
    }
    REPLY_ID_REUSED {
        key: "agora-v1/reply:id-reused",
        requirements: &["AV1-004"],
        level: None,
        owner: "agora-v1/ids-unique",
        summary: "a reply's id is its own, never the id of a message the harness sent",
        fails: "a reply whose id is one the harness gave a message of its own (the REQUEST's id reused)",
        passes: "a reply id the harness never sent",
    }
    REPLY_ID_REPEATED {
        key: "agora-v1/reply:id-repeated",
        requirements: &["AV1-004"],
        level: None,
        owner: "agora-v1/ids-unique",
        summary: "every reply has an id no earlier reply had",
        fails: "a reply whose id an earlier reply in the case already used",
        passes: "distinct ids across the case's replies",
    }
    REPLY_TIMESTAMP_FORMAT {
        key: "agora-v1/reply:timestamp-format",
        requirements: &["AV1-006"],
        level: None,
        owner: "agora-v1/reply-timestamp-fresh",
        summary: "a reply's timestamp is an ISO 8601 (RFC 3339) date-time string in UTC",
        fails: "no timestamp, a timestamp that is not a string, or one that does not parse as RFC 3339 in UTC (an offset other than Z or +00:00)",
        passes: "an RFC 3339 UTC timestamp, Z or +00:00",
    }
    REPLY_TIMESTAMP_SKEW {
        key: "agora-v1/reply:timestamp-skew",
        requirements: &["AV1-006"],
        level: None,
        owner: "agora-v1/reply-timestamp-fresh",
        summary: "a reply's timestamp is within the replay window of the harness clock",
        fails: "a timestamp further from the harness clock than the profile's replay_window_s, so a peer would refuse the reply",
        passes: "a timestamp inside the replay window",
    }
    REPLY_SIGNATURE_ENCODING_STANDARD_BASE64 {
        key: "agora-v1/reply:signature-encoding:standard-base64",
        requirements: &["AV1-021", "AV1-A1"],
        level: Some(Level::Should),
        owner: "agora-v1/reply-signature-encoding",
        summary: "a signature is in the Base64Url alphabet",
        fails: "a signature that verifies but is in standard base64 (+ and /): a warning (AV1-A1)",
        passes: "a Base64Url signature, padded or not",
    }
    REPLY_SIGNATURE_ENCODING {
        key: "agora-v1/reply:signature-encoding",
        requirements: &["AV1-021"],
        level: None,
        owner: "agora-v1/reply-signature-encoding",
        summary: "a signature is 64 bytes in Base64Url",
        fails: "a signature of 128 hex digits that verifies only once read as hex",
        passes: "a signature that verifies as Base64Url",
    }
    REPLY_SIGNATURE {
        key: "agora-v1/reply:signature",
        requirements: &["AV1-016", "AV1-017", "AV1-020"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a signature verifies over the RFC 8785 form with sender.signature blanked or removed, by the key of sender.id",
        fails: "a signature that does not verify under either variant and any key form of sender.id: empty, by another key, over non-canonical JSON",
        passes: "a signature that verifies",
    }
    REPLY_HTTP_STATUS {
        key: "agora-v1/reply:http-status",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "agora-v1/echo-direct",
        summary: "over HTTP, a reply has status 200, or an ERROR's status is its code (profile http_status = \"code-or-200\")",
        fails: "another HTTP status, such as 201 for a RESULT or 400 for an ERROR 404; set [agora-v1] http_status = \"any\" if the binding uses other statuses",
        passes: "200, or for an ERROR its own code",
    }
    REPLY_ERROR_CODE {
        key: "agora-v1/reply:error-code:*",
        requirements: &["AV1-046", "AV1-A20"],
        level: Some(Level::Should),
        owner: "",
        summary: "an ERROR code comes from the table of agora-v1.md section 5: 400, 401, 402, 404, 408, 429, 500, 503",
        fails: "an ERROR code outside the table (the detail is the code): a warning (AV1-A20)",
        passes: "a code from the table",
    }
}

/// The schema of a payload of a reply type whose payload every case may meet
/// (RESULT, OFFER, ERROR) and its rule family; `None` for the others, which their
/// own cases judge.
fn payload_schema(ty: &str) -> Option<(&'static str, &'static Rule)> {
    Some(match ty {
        "RESULT" => ("result", &SCHEMA_RESULT),
        "OFFER" => ("offer", &SCHEMA_OFFER),
        "ERROR" => ("error", &SCHEMA_ERROR),
        _ => return None,
    })
}

/// One schema violation with the member at fault (a missing member is named by its
/// own pointer, `/data`, not by the object that lacks it).
struct Violation {
    ptr: String,
    missing: bool,
    message: String,
}

fn violations(ctx: &Ctx, schema: &str, value: &Value) -> Vec<Violation> {
    let list = match ctx.shared.schemas.violations(schema, value) {
        Ok(l) => l,
        Err(e) => {
            return vec![Violation {
                ptr: "/".into(),
                missing: false,
                message: e,
            }]
        }
    };
    let mut out: Vec<Violation> = Vec::new();
    for v in list {
        // The schemas module names a missing member by its own pointer already.
        let missing = v.message.ends_with(" is a required property");
        let ptr = v.shape();
        if !out.iter().any(|o| o.ptr == ptr) {
            out.push(Violation {
                ptr,
                missing,
                message: v.message,
            });
        }
    }
    out
}

fn members(v: &Value) -> String {
    v.as_object()
        .map(|o| o.keys().cloned().collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// The envelope schema's findings, one per member at fault. Payload members are
/// judged per type ([`payload_findings`]) and the timestamp by its own check.
fn envelope_findings(ctx: &Ctx, whole: &Value) -> Vec<Finding> {
    let payload_is_object = whole.get("payload").is_some_and(Value::is_object);
    let list = violations(ctx, "agora-v1/envelope", whole);
    // A signature at the top level is one deviation, not also a missing
    // sender.signature.
    let top_signature = list.iter().any(|v| v.ptr == "/signature");
    let mut out = Vec::new();
    for v in list {
        let ptr = v.ptr.as_str();
        if ptr == "/timestamp"
            || (ptr.starts_with("/payload") && (payload_is_object || ptr != "/payload"))
            || (top_signature && ptr == "/sender/signature" && v.missing)
        {
            continue;
        }
        let summary = if ptr == "/signature" {
            format!(
                "the signature is a top-level member ({}), not sender.signature",
                quote(&whole["signature"].to_string())
            )
        } else if v.missing {
            format!("the reply has no {ptr} member (it has: {})", members(whole))
        } else {
            format!("reply at {ptr}: {}", v.message)
        };
        out.push(crate::rules::found_among(
            RULES,
            &SCHEMA_ENVELOPE,
            ptr,
            summary,
        ));
    }
    out
}

/// The findings of a RESULT, OFFER or ERROR payload against its schema, keyed
/// `agora-v1/schema:<type>:<member>`. An ERROR whose code and message sit elsewhere
/// (`error.code`, `error_code`, …) is one finding at `/code`, not one per member.
fn payload_findings(ctx: &Ctx, ty: &str, payload: &Value) -> Vec<Finding> {
    let Some((name, family)) = payload_schema(ty) else {
        return Vec::new();
    };
    if !payload.is_object() {
        return Vec::new();
    }
    let mut list = violations(ctx, &format!("agora-v1/{name}"), payload);
    let mut out = Vec::new();
    if ty == "ERROR" {
        if let Some(i) = list.iter().position(|v| v.ptr == "/code") {
            let v = list.remove(i);
            let msg = error_message_of(payload);
            let summary = match error_code_of(payload) {
                Some((code, place)) if place != "/code" => {
                    if msg.as_ref().is_some_and(|(_, p)| p != "/message") {
                        list.retain(|v| v.ptr != "/message");
                    }
                    format!(
                        "the ERROR payload has no integer code: the code {code} is at {place}{}",
                        msg.map(|(m, p)| format!(", the message {} at {p}", quote(m)))
                            .unwrap_or_default()
                    )
                }
                Some((code, _)) => format!(
                    "the ERROR code is {} (the code {code} as a {}), not an integer",
                    payload["code"],
                    if payload["code"].is_string() {
                        "string"
                    } else {
                        "number"
                    }
                ),
                None if v.missing => format!(
                    "the ERROR payload has no code (it has: {}){}",
                    members(payload),
                    msg.map(|(m, _)| format!("; its message: {}", quote(m)))
                        .unwrap_or_default()
                ),
                None => format!("ERROR payload at /code: {}", v.message),
            };
            out.push(SCHEMA_ERROR_CODE.found(summary));
        }
    }
    for v in list {
        let summary = if v.missing {
            format!(
                "the {ty} payload has no {} member (it has: {})",
                v.ptr,
                members(payload)
            )
        } else {
            format!("{ty} payload at {}: {}", v.ptr, v.message)
        };
        out.push(crate::rules::found_among(RULES, family, &v.ptr, summary));
    }
    out
}

/// Judges the reply's timestamp: RFC 3339 in UTC (`Z` or `+00:00`, AV1-A8) and
/// inside the replay window of the harness clock.
fn check_timestamp(ctx: &mut Ctx, whole: &Value) {
    let bad = |said: String| REPLY_TIMESTAMP_FORMAT.found(said);
    let Some(text) = whole.get("timestamp").and_then(Value::as_str) else {
        let said = match whole.get("timestamp") {
            None => "the reply has no timestamp".to_string(),
            Some(v) => format!("the reply timestamp is {v}, not an ISO 8601 UTC date-time string"),
        };
        return ctx.finding(bad(said));
    };
    match parse_timestamp(text) {
        Err(e) => ctx.finding(bad(format!(
            "reply timestamp {}: {e} (agora-v1.md §1: ISO 8601 UTC date-time)",
            quote(text)
        ))),
        Ok(ts) => {
            let window = time::Duration::seconds(ctx.profile().timing.replay_window_s as i64);
            let at = ctx.clock();
            let skew = at - ts;
            if skew.abs() > window {
                ctx.finding(REPLY_TIMESTAMP_SKEW.found(format!(
                        "reply timestamp {text} is {} s away from the harness clock ({}), outside the {} s window a peer accepts",
                        skew.whole_seconds(),
                        format_timestamp(at),
                        window.whole_seconds()
                    )));
            }
        }
    }
}

/// 64 bytes in hex, the encoding real implementations use instead of Base64Url.
fn hex_signature(text: &str) -> Option<Vec<u8>> {
    if text.len() != 128 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..64)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// Verifies the reply's signature (either variant, any key form of `sender.id`).
/// A signature that verifies but is spelled in another encoding is a finding of the
/// encoding, not of the signature. When the envelope schema already found the
/// sender at fault, that finding says why the signature cannot be judged.
fn check_signature(
    ctx: &mut Ctx,
    tree: json::Value<'_>,
    whole: &Value,
    sender_finding: Option<Finding>,
) -> (
    Option<(SigVariant, KeyForm)>,
    Option<B64Flavor>,
    Option<Finding>,
) {
    let v = envelope::verify_tree(tree);
    if let Some((variant, form)) = v.verified {
        let flavor = v.signature_flavor;
        ctx.checked(format!(
            "signature verifies ({variant}, key {form}, {})",
            flavor.map(|f| f.to_string()).unwrap_or_default()
        ));
        if flavor == Some(B64Flavor::Standard) {
            ctx.finding(REPLY_SIGNATURE_ENCODING_STANDARD_BASE64.found(format!(
                "the signature is in standard base64 ({}), not Base64Url: a warning (AV1-A1)",
                quote(whole["sender"]["signature"].as_str().unwrap_or_default())
            )));
        }
        return (v.verified, flavor, None);
    }
    let sig = whole["sender"]["signature"].as_str().unwrap_or_default();
    if let Some(bytes) = hex_signature(sig) {
        let mut recoded = whole.clone();
        recoded["sender"]["signature"] = json!(reference_impl::wire::keys::b64url(&bytes));
        let again = envelope::verify_tree(json::Value::from_serde(&recoded));
        if let Some((variant, form)) = again.verified {
            ctx.checked(format!(
                "signature verifies once read as hex ({variant}, key {form})"
            ));
            ctx.finding(
                REPLY_SIGNATURE_ENCODING.found(format!(
                        "the signature is 128 hex digits ({}), not Base64Url (agora-v1.md §2, signing step 5)",
                        quote(sig)
                    )),
            );
            return (again.verified, None, None);
        }
    }
    if let Some(f) = sender_finding {
        return (None, v.signature_flavor, Some(f));
    }
    let f = REPLY_SIGNATURE.found(format!(
        "the reply's signature does not verify: {}",
        v.problem.clone().unwrap_or_default()
    ));
    ctx.finding(f.clone());
    (None, v.signature_flavor, Some(f))
}

/// Reads a reply and records every rule it breaks that some case owns. `None` on
/// silence; `Read::Bare` when it is no envelope at all.
pub(super) fn read_reply(ctx: &mut Ctx, r: &Received) -> Step<Option<Read>> {
    let Some((bytes, http_status)) = reply_bytes(r) else {
        return Ok(None);
    };
    let (tree, whole, ty) = match envelope_of(bytes, http_status) {
        Ok(parsed) => parsed,
        Err(bare) => return Ok(Some(*bare)),
    };
    let shape = envelope_findings(ctx, &whole);
    let flagged = |ptr: &str| shape.iter().any(|f| f.detail() == ptr);
    let id_flagged = flagged("/id");
    let protocol_flagged = flagged("/protocol");
    let sender_finding = shape
        .iter()
        .find(|f| f.detail().starts_with("/sender") || f.detail() == "/signature")
        .cloned();
    for f in shape {
        ctx.finding(f);
    }
    let payload = whole.get("payload").cloned().unwrap_or(Value::Null);
    for f in payload_findings(ctx, &ty, &payload) {
        ctx.finding(f);
    }
    let id = whole["id"].as_str().unwrap_or_default().to_string();
    if !id_flagged {
        check_reply_id(ctx, &id);
    }
    check_timestamp(ctx, &whole);
    let (verified, sig_flavor, sig_problem) = check_signature(ctx, tree, &whole, sender_finding);
    let code = if ty == "ERROR" {
        error_code_of(&payload)
            .map(|(c, _)| c)
            .or_else(|| http_status.filter(|s| *s >= 400).map(i64::from))
    } else {
        None
    };
    check_http_status(ctx, http_status, &ty, code);
    check_error_code(ctx, code, &payload);
    if !protocol_flagged {
        check_protocol(ctx, &whole);
    }
    Ok(Some(Read::Env(Box::new(Env {
        ty,
        id,
        payload,
        whole,
        http_status,
        verified,
        sig_flavor,
        sig_problem,
        offer_ref: None,
        received_at: std::time::Instant::now(),
    }))))
}

/// The reply as an envelope: its parsed tree, its JSON and its type (a known type in
/// another case read as that type; the schema finding at /type says so). Anything
/// that is no envelope is `Read::Bare` with its one finding.
fn envelope_of(
    bytes: &[u8],
    http_status: Option<u16>,
) -> Result<(json::Value<'_>, Value, String), Box<Read>> {
    let said = quote(&String::from_utf8_lossy(bytes));
    let status = http_status
        .map(|s| format!("HTTP {s}: "))
        .unwrap_or_default();
    let bare = |rule: &'static Rule, text: String, value: Option<Value>| {
        let f = bare_finding(rule, http_status, text, value.as_ref());
        Box::new(Read::Bare(f, http_status, value))
    };
    let tree = json::parse(bytes).map_err(|e| {
        bare(
            &REPLY_NOT_JSON,
            format!("the reply is not JSON ({e}): {said}"),
            None,
        )
    })?;
    let whole = tree.to_serde();
    let Some(obj) = whole.as_object() else {
        let text = format!("the reply is not a JSON object: {said}");
        return Err(bare(&REPLY_NOT_OBJECT, text, None));
    };
    // A bare object (an error in a web framework's shape, a flat
    // `{"type": "ERROR", "code": …}`) is one deviation, not one per missing member.
    if !obj.contains_key("sender") && !obj.contains_key("payload") {
        return Err(bare(
            &REPLY_NOT_ENVELOPE,
            format!("the reply is a JSON object but no envelope (no sender, no payload): {said}"),
            Some(whole.clone()),
        ));
    }
    let Some(ty_said) = whole["type"].as_str() else {
        let f = REPLY_NO_TYPE.found(format!("{status}the reply has no string type: {said}"));
        return Err(Box::new(Read::Bare(f, http_status, None)));
    };
    let upper = ty_said.to_ascii_uppercase();
    let ty = if TYPES.contains(&upper.as_str()) {
        upper
    } else {
        ty_said.to_string()
    };
    Ok((tree, whole, ty))
}

/// A reply that is no envelope: a refusal outside the envelope (a web framework's
/// error body, a bare `{"error": …, "code": …}`) belongs to the ERROR shape's case,
/// anything else (`key`) to the shape's case.
fn bare_finding(
    rule: &'static Rule,
    http_status: Option<u16>,
    text: String,
    value: Option<&Value>,
) -> Finding {
    let status = http_status
        .map(|s| format!("HTTP {s}: "))
        .unwrap_or_default();
    let error_like = http_status.is_some_and(|s| s >= 400)
        || value.is_some_and(|v| error_code_of(v).is_some() || error_message_of(v).is_some());
    if error_like {
        REPLY_ERROR_NOT_ENVELOPE.found(format!(
            "{status}a refusal outside the ERROR envelope: {text}"
        ))
    } else {
        rule.found(format!("{status}{text}"))
    }
}

/// The reply's id: never one of the harness's messages, never an earlier reply's
/// (AV1-004).
fn check_reply_id(ctx: &mut Ctx, id: &str) {
    let first = ctx.reply_ids.insert(id.to_string());
    // A reply that takes the id of a message the harness sent is that one cause,
    // however often the harness sent the id (a case that sends one id twice).
    if ctx.sent_ids.contains(id) {
        ctx.finding(REPLY_ID_REUSED.found(format!(
            "the reply reuses the id {id:?} of a message the harness sent"
        )));
    } else if !first {
        ctx.finding(REPLY_ID_REPEATED.found(format!(
            "the reply id {id:?} was already used by an earlier reply"
        )));
    }
}

/// The profile's HTTP status rule: 200, or an ERROR's code (`[agora-v1] http_status`).
fn check_http_status(ctx: &mut Ctx, http_status: Option<u16>, ty: &str, code: Option<i64>) {
    let judge_status = ctx.profile().agora_v1.http_status == HttpStatusRule::CodeOr200;
    let Some(status) = http_status.filter(|_| judge_status) else {
        return;
    };
    if status == 200 || (ty == "ERROR" && code == Some(i64::from(status))) {
        return;
    }
    ctx.finding(
        REPLY_HTTP_STATUS.found(format!(
                "HTTP status {status} for a {ty} reply{}: the profile requires 200 or the ERROR code (set [agora-v1] http_status = \"any\" if the target's binding uses other statuses)",
                code.map(|c| format!(" with code {c}")).unwrap_or_default()
            )),
    );
}

/// An ERROR code outside agora-v1.md §5's table: a warning (AV1-046, AV1-A20).
fn check_error_code(ctx: &mut Ctx, code: Option<i64>, payload: &Value) {
    let Some(code) = code.filter(|c| !ERROR_CODES.contains(c)) else {
        return;
    };
    ctx.finding(REPLY_ERROR_CODE.found_as(
        code,
        format!(
                "ERROR code {code} is not in the table of agora-v1.md §5 ({})",
                quote(
                    error_message_of(payload)
                        .map(|(m, _)| m)
                        .unwrap_or_default()
                )
            ),
    ));
}

/// The protocol string (AV1-003). Unreachable while the schema pins the protocol;
/// kept so that a schema change cannot let another protocol string through unseen.
fn check_protocol(ctx: &mut Ctx, whole: &Value) {
    if whole["protocol"].as_str() == Some(PROTOCOL) {
        return;
    }
    ctx.finding(SCHEMA_ENVELOPE_PROTOCOL.found(format!(
        "reply protocol is {}, not \"agora/1.0\"",
        whole["protocol"]
    )));
}

/// Checks what every target message must be (AV1-001…006, 009, 012, 014…017, 019,
/// 020, 021, 042…046 and the profile's HTTP status rule). `Ok(None)` on silence.
///
/// A deviation that leaves the message readable (a schema breach, another protocol
/// string, a timestamp out of the window or in another form, a signature that does
/// not verify, an HTTP status off the profile's rule, a payload member spelled
/// another way) is recorded as a finding with its owner case and the message is
/// read on, so that the case still judges its own subject. Only a reply that is not
/// an envelope at all (not JSON, not an object, no envelope member, no string
/// `type`) blocks the case.
pub fn check_reply(ctx: &mut Ctx, r: &Received) -> Step<Option<Env>> {
    match read_reply(ctx, r)? {
        None => Ok(None),
        Some(Read::Env(env)) => Ok(Some(*env)),
        Some(Read::Bare(f, _, _)) => Err(ctx.block(f)),
    }
}

/// `agentconform sign --suite agora-v1`: sets `sender.id` to the key's did:key and signs
/// with the signature blanked; returns the canonical bytes.
pub fn sign_message(mut env: Value, key: &Keypair) -> Result<Vec<u8>, String> {
    if !env.get("sender").is_some_and(|s| s.is_object()) {
        env["sender"] = json!({});
    }
    env["sender"]["id"] = json!(key.did());
    envelope::sign(&mut env, key, SigVariant::Blank).map_err(|e| e.to_string())?;
    jcs::canonicalize_serde(&env).map_err(|e| e.to_string())
}

/// `agentconform verify --suite agora-v1`: how the key was read, every signing variant
/// tried with its canonical bytes, and the verdict.
pub fn explain_verify(bytes: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<bool> {
    let v = envelope::verify_bytes(bytes);
    if let Some(id) = &v.sender_id {
        writeln!(out, "sender.id: {id}")?;
        let forms: Vec<String> = v.key_forms.iter().map(|f| f.to_string()).collect();
        writeln!(
            out,
            "key read as: {}",
            if forms.is_empty() {
                "-".into()
            } else {
                forms.join(", ")
            }
        )?;
    }
    if let Some(f) = v.signature_flavor {
        writeln!(out, "signature encoding: {f}")?;
    }
    for a in &v.attempts {
        match &a.canonical {
            Ok(c) => writeln!(
                out,
                "tried variant ({}): {}\n  canonical bytes: {}",
                a.variant,
                if a.verified_with.is_some() {
                    "verifies"
                } else {
                    "does not verify"
                },
                String::from_utf8_lossy(c)
            )?,
            Err(e) => writeln!(
                out,
                "tried variant ({}): cannot canonicalize: {e}",
                a.variant
            )?,
        }
    }
    match v.verified {
        Some((variant, form)) => {
            writeln!(out, "VALID: signature verifies ({variant}, key as {form})")?;
            Ok(true)
        }
        None => {
            writeln!(out, "INVALID: {}", v.problem.unwrap_or_default())?;
            Ok(false)
        }
    }
}

/// Judges a recorded reply again with [`check_reply`] (an exported vector's offline
/// run).
pub fn reread(ctx: &mut Ctx, r: &crate::case::Recorded) {
    let received = match r.http_status {
        Some(status) => Received::Http {
            status,
            body: r.body.clone(),
            retried: None,
        },
        None => Received::Frame(r.body.clone()),
    };
    let _ = check_reply(ctx, &received);
}
