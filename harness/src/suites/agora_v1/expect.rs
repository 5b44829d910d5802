//! agora-v1 expectations: how the harness builds messages and judges replies.
//!
//! Verdicts come from the project's schemas and the checks here, using only the wire
//! primitives of reference-impl (canonical form, keys), never the reference agent's
//! own validation.
//!
//! Every rule a reply can break on the way to a case's subject is a typed finding
//! with one owner case (see [`check_reply`]); the reply is then read leniently (a
//! code nested in `error`, `data` spelled `result`, a type in lower case) so that
//! each case still judges its own subject.

use super::rules;
use crate::case::{fail, skip, Step};
use crate::drive::Received;
use crate::finding::{quote, Finding};
use crate::profile::{HttpStatusRule, OfferIdSource};
use crate::rules::Rule;
use crate::script::Ctx;
use reference_impl::agora_v1::envelope::{self, SigVariant, ERROR_CODES, PROTOCOL, TYPES};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::keys::{self, B64Flavor, KeyForm, Keypair};
use reference_impl::wire::{jcs, json, new_id};
use serde_json::{json, Value};
use time::{Duration, OffsetDateTime};

/// A reply read as an envelope: every rule it breaks is a finding already (see
/// [`check_reply`]), and what follows is read leniently.
#[derive(Debug, Clone)]
pub struct Env {
    /// The type, in upper case when the target spelled a known type in another case
    /// (a finding says so).
    pub ty: String,
    pub id: String,
    pub payload: Value,
    pub whole: Value,
    pub http_status: Option<u16>,
    /// How the signature verified; `None` when it did not (a finding says so).
    pub verified: Option<(SigVariant, KeyForm)>,
    /// The base64 flavour of the signature, when it was base64 of 64 bytes.
    pub sig_flavor: Option<B64Flavor>,
    /// Why the signature could not be judged, when it did not verify: the finding
    /// recorded for it, which blocks a case whose subject needs the signature.
    pub sig_problem: Option<Finding>,
    /// For an OFFER: the id the target knows it by, when that is not the id the
    /// profile says to quote (learned from a refused ACCEPT, see [`accept_offer`]).
    pub offer_ref: Option<String>,
    /// When the harness had read and checked it.
    pub received_at: std::time::Instant,
}

/// Members where real implementations put an ERROR's code when not in `code`.
const CODE_PLACES: &[&[&str]] = &[
    &["code"],
    &["error", "code"],
    &["error_code"],
    &["errorCode"],
    &["status_code"],
    &["status"],
];
/// Members where real implementations put an ERROR's message when not in `message`.
const MESSAGE_PLACES: &[&[&str]] = &[
    &["message"],
    &["error", "message"],
    &["error"],
    &["detail"],
    &["msg"],
    &["description"],
];

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn pointer(path: &[&str]) -> String {
    path.iter().map(|k| format!("/{k}")).collect()
}

/// An ERROR payload's code, read leniently: an integer (or a string of digits) in
/// `code` or one of the other members real implementations use, with where it was.
pub fn error_code_of(payload: &Value) -> Option<(i64, String)> {
    CODE_PLACES.iter().find_map(|path| {
        let code = match at(payload, path)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }?;
        Some((code, pointer(path)))
    })
}

/// An ERROR payload's message, read leniently, with where it was.
pub fn error_message_of(payload: &Value) -> Option<(&str, String)> {
    MESSAGE_PLACES
        .iter()
        .find_map(|path| Some((at(payload, path)?.as_str()?, pointer(path))))
}

impl Env {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.payload.get(key).and_then(Value::as_str)
    }

    /// The ERROR code, if this is an ERROR (read leniently: a finding says where the
    /// code was when not an integer in `code`; with no code at all, an HTTP status
    /// of 400 or more stands for it).
    pub fn error_code(&self) -> Option<i64> {
        if self.ty != "ERROR" {
            return None;
        }
        error_code_of(&self.payload)
            .map(|(c, _)| c)
            .or_else(|| self.http_status.filter(|s| *s >= 400).map(i64::from))
    }

    /// The ERROR message, read leniently.
    pub fn error_message(&self) -> Option<&str> {
        error_message_of(&self.payload).map(|(m, _)| m)
    }

    /// A RESULT's output: `data`, else the member a target put it in instead
    /// (`result`, `output`; the schema finding says so).
    pub fn data(&self) -> &Value {
        ["data", "result", "output"]
            .iter()
            .find_map(|k| self.payload.get(*k))
            .unwrap_or(&Value::Null)
    }

    /// The reply in the target's own words, for a report line: the type, and for
    /// an ERROR its code and message.
    pub fn said(&self) -> String {
        if self.ty != "ERROR" {
            return self.ty.clone();
        }
        let code = self
            .error_code()
            .map(|c| c.to_string())
            .unwrap_or_else(|| "without a code".into());
        match self.error_message() {
            Some(m) => format!("ERROR {code} {}", quote(m)),
            None => format!("ERROR {code}"),
        }
    }
}

pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// A new unsigned envelope from the harness, stamped now.
pub fn message(ctx: &Ctx, ty: &str, payload: Value) -> Value {
    message_at(ctx, ty, payload, now())
}

pub fn message_at(ctx: &Ctx, ty: &str, payload: Value, at: OffsetDateTime) -> Value {
    envelope::build(ty, &new_id(), at, &ctx.key().did(), payload)
}

/// Signs `env` in place with `key` (the `sender.id` is left as it is).
pub fn sign_with(env: &mut Value, key: &Keypair, variant: SigVariant) -> Step<()> {
    envelope::sign(env, key, variant).map(|_| ()).map_err(|e| {
        crate::case::Stop::Skip(format!("the harness could not sign its own message: {e}"))
    })
}

/// The bytes sent for an envelope: its canonical form (plain text when the case
/// built something that has none on purpose).
pub fn wire(env: &Value) -> Vec<u8> {
    jcs::canonicalize_serde(env)
        .or_else(|_| serde_json::to_vec(env))
        .unwrap_or_default()
}

/// A REQUEST payload.
pub fn request_payload(resource: &str, params: Value) -> Value {
    json!({"resource": resource, "params": params})
}

/// Signs with the run key and sends; records the id as the harness's.
pub async fn send(ctx: &mut Ctx, mut env: Value) -> Step<Received> {
    sign_with(&mut env, &ctx.shared.key, SigVariant::Blank)?;
    send_as_is(ctx, &env).await
}

/// Sends an envelope exactly as built (signed or not).
pub async fn send_as_is(ctx: &mut Ctx, env: &Value) -> Step<Received> {
    if let Some(id) = env.get("id").and_then(Value::as_str) {
        ctx.sent_ids.insert(id.to_string());
    }
    ctx.send_bytes(wire(env)).await
}

fn reply_bytes(r: &Received) -> Option<(&[u8], Option<u16>)> {
    match r {
        Received::Http { status, body, .. } => Some((body, Some(*status))),
        Received::Frame(b) => Some((b, None)),
        Received::Silence => None,
    }
}

/// What a reply turned out to be.
enum Read {
    Env(Box<Env>),
    /// Not an envelope at all: the finding that says so, the HTTP status, and the
    /// bare object when it is one (`{"type": "ERROR", "code": 401, …}`).
    Bare(Finding, Option<u16>, Option<Value>),
}

/// The schema of a payload of a reply type whose payload every case may meet
/// (RESULT, OFFER, ERROR) and its rule family; `None` for the others, which their
/// own cases judge.
fn payload_schema(ty: &str) -> Option<(&'static str, &'static Rule)> {
    Some(match ty {
        "RESULT" => ("result", &rules::SCHEMA_RESULT),
        "OFFER" => ("offer", &rules::SCHEMA_OFFER),
        "ERROR" => ("error", &rules::SCHEMA_ERROR),
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
            rules::RULES,
            &rules::SCHEMA_ENVELOPE,
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
            out.push(rules::SCHEMA_ERROR_CODE.found(summary));
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
        out.push(crate::rules::found_among(
            rules::RULES,
            family,
            &v.ptr,
            summary,
        ));
    }
    out
}

/// Judges the reply's timestamp: RFC 3339 in UTC (`Z` or `+00:00`, AV1-A8) and
/// inside the replay window of the harness clock.
fn check_timestamp(ctx: &mut Ctx, whole: &Value) {
    let bad = |said: String| rules::REPLY_TIMESTAMP_FORMAT.found(said);
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
            let window = Duration::seconds(ctx.profile().timing.replay_window_s as i64);
            let at = ctx.clock();
            let skew = at - ts;
            if skew.abs() > window {
                ctx.finding(rules::REPLY_TIMESTAMP_SKEW.found(format!(
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
            ctx.finding(
                rules::REPLY_SIGNATURE_ENCODING_STANDARD_BASE64.found(format!(
                    "the signature is in standard base64 ({}), not Base64Url: a warning (AV1-A1)",
                    quote(whole["sender"]["signature"].as_str().unwrap_or_default())
                )),
            );
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
                rules::REPLY_SIGNATURE_ENCODING.found(format!(
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
    let f = rules::REPLY_SIGNATURE.found(format!(
        "the reply's signature does not verify: {}",
        v.problem.clone().unwrap_or_default()
    ));
    ctx.finding(f.clone());
    (None, v.signature_flavor, Some(f))
}

/// Reads a reply and records every rule it breaks that some case owns. `None` on
/// silence; `Read::Bare` when it is no envelope at all.
fn read_reply(ctx: &mut Ctx, r: &Received) -> Step<Option<Read>> {
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
            &rules::REPLY_NOT_JSON,
            format!("the reply is not JSON ({e}): {said}"),
            None,
        )
    })?;
    let whole = tree.to_serde();
    let Some(obj) = whole.as_object() else {
        let text = format!("the reply is not a JSON object: {said}");
        return Err(bare(&rules::REPLY_NOT_OBJECT, text, None));
    };
    // A bare object (an error in a web framework's shape, a flat
    // `{"type": "ERROR", "code": …}`) is one deviation, not one per missing member.
    if !obj.contains_key("sender") && !obj.contains_key("payload") {
        return Err(bare(
            &rules::REPLY_NOT_ENVELOPE,
            format!("the reply is a JSON object but no envelope (no sender, no payload): {said}"),
            Some(whole.clone()),
        ));
    }
    let Some(ty_said) = whole["type"].as_str() else {
        let f = rules::REPLY_NO_TYPE.found(format!("{status}the reply has no string type: {said}"));
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
        rules::REPLY_ERROR_NOT_ENVELOPE.found(format!(
            "{status}a refusal outside the ERROR envelope: {text}"
        ))
    } else {
        rule.found(format!("{status}{text}"))
    }
}

/// The reply's id: never one of the harness's messages, never an earlier reply's
/// (AV1-004).
fn check_reply_id(ctx: &mut Ctx, id: &str) {
    if ctx.sent_ids.contains(id) {
        ctx.finding(rules::REPLY_ID_REUSED.found(format!(
            "the reply reuses the id {id:?} of a message the harness sent"
        )));
    }
    if !ctx.reply_ids.insert(id.to_string()) {
        ctx.finding(rules::REPLY_ID_REPEATED.found(format!(
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
        rules::REPLY_HTTP_STATUS.found(format!(
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
    ctx.finding(rules::REPLY_ERROR_CODE.found_as(
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
    ctx.finding(rules::SCHEMA_ENVELOPE_PROTOCOL.found(format!(
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

/// The target said nothing where an answer was due: the case is blocked by the
/// one finding every silent exchange shares.
fn no_answer(ctx: &mut Ctx, what: &str) -> crate::case::Stop {
    let ms = ctx.profile().timing.case_timeout_ms;
    ctx.block(crate::rules::TRANSPORT.found_in(
        "agora-v1",
        "no-answer",
        format!("the target did not answer within {ms} ms{what}"),
    ))
}

/// A reply must be there and pass [`check_reply`].
pub fn expect_reply(ctx: &mut Ctx, r: &Received) -> Step<Env> {
    match check_reply(ctx, r)? {
        Some(env) => Ok(env),
        None => Err(no_answer(ctx, "")),
    }
}

/// The reply must be of one of `types`.
pub fn expect_type(ctx: &mut Ctx, r: &Received, types: &[&str]) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    env_of_type(ctx, env, types)
}

/// A valid message the case built, its own subject, has been answered: the reply
/// must be of one of `types`. An ERROR instead counts only beside a control
/// ([`control`]): when a plain valid REQUEST on the same connection is processed, the
/// ERROR is this case's own failure; when that is refused too, the refusal is one
/// finding, which blocks the case.
pub async fn expect_processed(ctx: &mut Ctx, r: &Received, types: &[&str]) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    if env.ty == "ERROR" && !types.contains(&"ERROR") {
        control(ctx).await?;
    }
    env_of_type(ctx, env, types)
}

/// A plain valid message, which no case has as its subject, has been answered
/// (`what` says what it was): an ERROR is a refusal, one finding however many cases
/// meet it, which blocks the case; one of `types` is the case's control.
pub fn expect_baseline(ctx: &mut Ctx, r: &Received, types: &[&str], what: &str) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    baseline(ctx, env, types, what)
}

/// [`expect_baseline`] of a reply already read.
fn baseline(ctx: &mut Ctx, env: Env, types: &[&str], what: &str) -> Step<Env> {
    if env.ty == "ERROR" && !types.contains(&"ERROR") {
        let code = env.error_code().map(|c| c.to_string()).unwrap_or_default();
        let f = crate::rules::refusal(
            (&rules::REFUSED, "agora-v1", &[]),
            &code,
            env.error_message().unwrap_or_default(),
            what,
        );
        return Err(ctx.block(f));
    }
    let env = env_of_type(ctx, env, types)?;
    ctx.control(what);
    Ok(env)
}

/// The case's control: a valid message of the case the target processed already,
/// else a plain valid REQUEST for the direct resource, sent now on the same
/// connection, which must be processed (an ERROR is the refusal finding).
pub async fn control(ctx: &mut Ctx) -> Step<()> {
    if ctx.has_control().is_some() {
        return Ok(());
    }
    let probe = request_with(ctx, |p| p["params"] = json!({"control": true}));
    let r = send(ctx, probe).await?;
    expect_baseline(
        ctx,
        &r,
        &["RESULT", "OFFER"],
        "a valid REQUEST for the direct resource (the case's control)",
    )
    .map(|_| ())
}

fn env_of_type(ctx: &mut Ctx, env: Env, types: &[&str]) -> Step<Env> {
    if !types.contains(&env.ty.as_str()) {
        return fail(format!(
            "expected {}, got {}",
            types.join(" or "),
            env.said()
        ));
    }
    ctx.checked(format!("reply is {}", env.ty));
    Ok(env)
}

/// The reply must be an ERROR with exactly `code` (read leniently: a code in
/// another member is the ERROR shape's finding, not this case's).
pub fn expect_error(ctx: &mut Ctx, r: &Received, code: i64) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    if env.error_code() == Some(code) {
        ctx.checked(format!("ERROR code {code}"));
        Ok(env)
    } else {
        fail(format!("expected ERROR {code}, got {}", env.said()))
    }
}

/// How strictly a rejection's code is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeRule {
    /// Another code fails.
    Strict,
    /// Another code warns.
    Lenient,
}

fn judge_code(
    ctx: &mut Ctx,
    code: Option<i64>,
    said: &str,
    codes: &[i64],
    rule: CodeRule,
    what: &str,
) -> Step<()> {
    if code.is_some_and(|c| codes.contains(&c)) {
        ctx.checked(format!("{what}: rejected with {said}"));
        return Ok(());
    }
    let want = codes
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(" or ");
    let msg = format!("{what}: rejected, but with {said} instead of code {want}");
    match rule {
        CodeRule::Strict => fail(msg),
        CodeRule::Lenient => {
            ctx.warn(msg);
            Ok(())
        }
    }
}

/// The target must not process the message: an ERROR (with one of `codes`) passes,
/// and so does a refusal outside the envelope that carries a code or a refusing
/// HTTP status (a finding records the shape; one with neither blocks the case). An
/// OFFER or RESULT (any non-ERROR envelope) fails.
///
/// Silence is a refusal (AV1-A5) only from a target that is alive: the harness then
/// sends a valid REQUEST on the same connection, and the case passes only if that is
/// answered. A target silent to both blocks the case; a late OFFER or RESULT for the
/// rejected message fails it.
pub async fn expect_rejection(
    ctx: &mut Ctx,
    r: &Received,
    codes: &[i64],
    rule: CodeRule,
    what: &str,
) -> Step<()> {
    match read_reply(ctx, r)? {
        None => silence_as_refusal(ctx, what).await,
        Some(Read::Bare(f, status, value)) => {
            let said = f.summary.clone();
            let ty = value
                .as_ref()
                .and_then(|v| v["type"].as_str())
                .map(str::to_ascii_uppercase);
            if matches!(ty.as_deref(), Some("RESULT" | "OFFER")) {
                ctx.finding(f);
                return fail(format!(
                    "{what}: the target processed it and answered {said}"
                ));
            }
            let code = value
                .as_ref()
                .and_then(|v| error_code_of(v).map(|(c, _)| c))
                .or_else(|| status.filter(|s| *s >= 400).map(i64::from));
            // Without a code or a refusing status, nothing says the message was
            // refused rather than processed.
            if code.is_none() {
                return Err(ctx.block(f));
            }
            ctx.finding(f);
            // A refusal, of whatever code, means something only beside a control.
            control(ctx).await?;
            judge_code(ctx, code, &said, codes, rule, what)?;
            ctx.refusal_counts(what)
        }
        Some(Read::Env(env)) => {
            if env.ty != "ERROR" {
                return fail(format!(
                    "{what}: the target processed it and answered {}",
                    env.said()
                ));
            }
            control(ctx).await?;
            judge_code(ctx, env.error_code(), &env.said(), codes, rule, what)?;
            ctx.refusal_counts(what)
        }
    }
}

/// After a silence: proves the target alive with a valid REQUEST on the same
/// connection, or blocks the case.
async fn silence_as_refusal(ctx: &mut Ctx, what: &str) -> Step<()> {
    ctx.note(format!(
        "{what}: no reply within the deadline; a silent drop is a refusal only from a live target: sending a valid REQUEST on the same connection"
    ));
    let probe = request_with(ctx, |p| p["params"] = json!({"probe": "alive"}));
    let probe_id = probe["id"].as_str().unwrap_or_default().to_string();
    let r = send(ctx, probe).await?;
    let mut reply = read_reply(ctx, &r)?;
    for _ in 0..2 {
        let env = match reply {
            None => {
                return Err(no_answer(
                    ctx,
                    &format!(
                        ": {what} drew no reply, and neither did a valid REQUEST sent right after on the same connection (silence is a refusal only from a live target)"
                    ),
                ))
            }
            Some(Read::Bare(f, _, _)) => {
                ctx.finding(f);
                break;
            }
            Some(Read::Env(env)) => env,
        };
        let about = env.str("request_id").unwrap_or_default();
        let late = about != probe_id && ctx.sent_ids.contains(about);
        if !late {
            // The probe is the case's control: refused, it proves nothing.
            baseline(
                ctx,
                *env,
                &["RESULT", "OFFER"],
                "a valid REQUEST sent right after on the same connection (the case's control)",
            )?;
            break;
        }
        if env.ty != "ERROR" {
            return fail(format!(
                "{what}: no reply within the deadline, then a late {} for it: the target processed it",
                env.said()
            ));
        }
        ctx.note(format!(
            "{what}: refused late with {}; waiting for the answer to the REQUEST",
            env.said()
        ));
        let limits = ctx.limits().timeout;
        reply = match ctx.listen(limits).await? {
            Some(b) => read_reply(ctx, &Received::Frame(b))?,
            None => None,
        };
    }
    ctx.checked(format!(
        "{what}: dropped silently, and the target answered a valid REQUEST right after: a silent refusal (AV1-A5)"
    ));
    ctx.refusal_counts(what)
}

/// Sends a REQUEST for the direct resource and completes it, following an OFFER
/// with an ACCEPT if the target negotiates (AV1-A12). Returns (request id, RESULT).
pub async fn complete_request(ctx: &mut Ctx, params: Value) -> Step<(String, Env)> {
    let resource = ctx.profile().agora_v1.direct_resource.clone();
    let req = message(ctx, "REQUEST", request_payload(&resource, params));
    let req_id = req["id"].as_str().unwrap_or_default().to_string();
    let r = send(ctx, req).await?;
    let mut first = expect_baseline(
        ctx,
        &r,
        &["RESULT", "OFFER"],
        "a valid REQUEST for the direct resource",
    )?;
    let result = if first.ty == "OFFER" {
        ctx.note("the target negotiates the direct resource (OFFER first); accepting it");
        check_offer(ctx, &first, &req_id);
        let r = accept_offer(ctx, &mut first, json!({})).await?;
        let result = expect_type(ctx, &r, &["RESULT"])?;
        check_result(ctx, &result, &req_id, true);
        result
    } else {
        check_result(ctx, &first, &req_id, false);
        first
    };
    Ok((req_id, result))
}

/// RESULT.request_id names the REQUEST (AV1-042); `after_accept` says whether the
/// RESULT ends a negotiated flow. The payload's schema is judged by
/// [`check_reply`]; a missing request_id is that finding, not this one.
pub fn check_result(ctx: &mut Ctx, env: &Env, req_id: &str, after_accept: bool) {
    match env.str("request_id") {
        Some(linked) if linked != req_id => {
            let what = if ctx.reply_ids.contains(linked) {
                " (an id the target gave an earlier reply, such as the OFFER)"
            } else if ctx.sent_ids.contains(linked) {
                " (an id of another message the harness sent)"
            } else {
                ""
            };
            let rule = if after_accept {
                &rules::RESULT_REQUEST_ID_AFTER_ACCEPT
            } else {
                &rules::RESULT_REQUEST_ID
            };
            ctx.finding(rule.found(format!(
                "RESULT.request_id is {linked:?}{what}, not the REQUEST's id {req_id:?}"
            )));
        }
        Some(_) => ctx.checked("RESULT links to the REQUEST"),
        None => {}
    }
}

/// OFFER.request_id names the REQUEST (AV1-037). The payload's schema is judged by
/// [`check_reply`].
pub fn check_offer(ctx: &mut Ctx, env: &Env, req_id: &str) {
    match env.str("request_id") {
        Some(linked) if linked != req_id => ctx.finding(rules::OFFER_REQUEST_ID.found(format!(
            "OFFER.request_id is {linked:?}, not the REQUEST's id {req_id:?}"
        ))),
        Some(_) => ctx.checked("OFFER links to the REQUEST"),
        None => {}
    }
}

/// The ERROR code of a reply, read without recording anything (the caller judges
/// the reply itself afterwards).
fn peek_error_code(r: &Received) -> Option<i64> {
    let (bytes, _) = reply_bytes(r)?;
    let v: Value = serde_json::from_slice(bytes).ok()?;
    if !v["type"].as_str()?.eq_ignore_ascii_case("ERROR") {
        return None;
    }
    error_code_of(&v["payload"]).map(|(c, _)| c)
}

/// The id an ACCEPT quotes for `offer`: the one learned from a refused ACCEPT, else
/// the OFFER's envelope id (AV1-A11) or, with `[agora-v1] offer_id = "payload"`, the
/// `offer_id` in its payload.
pub fn offer_ref(ctx: &Ctx, offer: &Env) -> String {
    if let Some(r) = &offer.offer_ref {
        return r.clone();
    }
    match ctx.profile().agora_v1.offer_id {
        OfferIdSource::Payload => offer.str("offer_id").unwrap_or(&offer.id).to_string(),
        OfferIdSource::Envelope => offer.id.clone(),
    }
}

fn refused_as_unknown(r: &Received) -> bool {
    matches!(peek_error_code(r), Some(400 | 404))
}

/// Sends an ACCEPT of `offer` with `payload` (offer_id added, see [`offer_ref`]).
///
/// When the target refuses it (400 or 404) and the OFFER's payload names another
/// `offer_id`, the harness ACCEPTs by that one; if the target takes it, the profile's
/// assumption (AV1-A11) is what failed: one finding names the key to set, and the
/// case goes on with the id the target knows.
async fn send_accept(ctx: &mut Ctx, offer: &mut Env, payload: &Value) -> Step<Received> {
    let quoted = offer_ref(ctx, offer);
    let mut p = payload.clone();
    p["offer_id"] = json!(quoted);
    let accept = message(ctx, "ACCEPT", p);
    let r = send(ctx, accept).await?;
    // The other id the OFFER gives: its payload's offer_id, or its envelope id.
    let other = if quoted == offer.id {
        offer.str("offer_id").map(String::from)
    } else {
        Some(offer.id.clone())
    }
    .filter(|o| *o != quoted);
    let Some(other) = other.filter(|_| offer.offer_ref.is_none() && refused_as_unknown(&r)) else {
        return Ok(r);
    };
    ctx.note(format!(
        "the ACCEPT quoting {quoted:?} was refused; the OFFER's payload names offer_id {other:?}: trying that"
    ));
    let mut p = payload.clone();
    p["offer_id"] = json!(other);
    let again = message(ctx, "ACCEPT", p);
    let again = send(ctx, again).await?;
    if refused_as_unknown(&again) {
        return Ok(again);
    }
    let (by, other_by, key_value) = if quoted == offer.id {
        ("its envelope id", "payload.offer_id", "payload")
    } else {
        ("payload.offer_id", "its envelope id", "envelope")
    };
    ctx.finding(
        rules::OFFER_ID_SOURCE.found(format!(
                "the target refused an ACCEPT quoting the OFFER by {by} ({quoted:?}) and took one quoting {other_by} ({other:?}); the profile follows AV1-A11 unless told otherwise: set [agora-v1] offer_id = \"{key_value}\" if that is the target's design"
            )),
    );
    offer.offer_ref = Some(other);
    Ok(again)
}

/// Sends an ACCEPT of `offer` with `payload` (see [`send_accept`]). When the target
/// answers ERROR 408 but the harness itself needed longer than the offer's ttl to
/// send the ACCEPT, the case cannot judge the target and is skipped with that reason.
pub async fn accept_offer(ctx: &mut Ctx, offer: &mut Env, payload: Value) -> Step<Received> {
    let waited = offer.received_at.elapsed();
    let r = send_accept(ctx, offer, &payload).await?;
    let ttl = offer.payload["ttl"].as_u64().unwrap_or(u64::MAX);
    if waited.as_millis() >= u128::from(ttl) && peek_error_code(&r) == Some(408) {
        return skip(format!(
            "the harness needed {} ms to ACCEPT an offer whose ttl is {ttl} ms; the expiry is not the target's fault",
            waited.as_millis()
        ));
    }
    Ok(r)
}

/// Sends an ACCEPT of `offer` on purpose after its ttl (see [`send_accept`]).
pub async fn accept_offer_late(ctx: &mut Ctx, offer: &mut Env) -> Step<Received> {
    send_accept(ctx, offer, &json!({})).await
}

/// Obtains an OFFER for the negotiated resource. Returns (request id, OFFER).
pub async fn obtain_offer(ctx: &mut Ctx) -> Step<(String, Env)> {
    let resource = ctx.profile().agora_v1.negotiated_resource.clone();
    let req = message(
        ctx,
        "REQUEST",
        request_payload(&resource, json!({"text": "quote me"})),
    );
    let req_id = req["id"].as_str().unwrap_or_default().to_string();
    let r = send(ctx, req).await?;
    let offer = expect_baseline(
        ctx,
        &r,
        &["OFFER"],
        "a valid REQUEST for the negotiated resource",
    )?;
    check_offer(ctx, &offer, &req_id);
    Ok((req_id, offer))
}

/// A REQUEST for the direct resource, signed, with `mutate` applied to the payload
/// before signing.
pub fn request_with(ctx: &Ctx, mutate: impl FnOnce(&mut Value)) -> Value {
    let resource = ctx.profile().agora_v1.direct_resource.clone();
    let mut payload = request_payload(&resource, json!({"text": "hi"}));
    mutate(&mut payload);
    message(ctx, "REQUEST", payload)
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

// ---------------------------------------------------------------------------
// The client role: the harness as the provider a requester under test talks to.

/// How the harness, as provider, answers a requester's REQUEST.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Provide {
    /// A RESULT at once (the direct flow).
    Direct,
    /// An OFFER at this cost, then a RESULT for its ACCEPT; `stale` stamps the
    /// OFFER ten minutes in the past, `bad_signature` breaks its signature.
    Offer {
        cost: f64,
        stale: bool,
        bad_signature: bool,
    },
    /// An ERROR with this code.
    Error(i64),
}

/// The requests agora-v1.md defines for a provider's HTTP binding: POST to the
/// endpoint (the base URL).
pub fn defined(method: &str, path: &str) -> bool {
    method == "POST" && path == "/"
}

/// The requests a real client may send through the proxy: agora-v1.md's HTTP binding is one POST of a message to
/// the provider's endpoint, and the proxy's URL may stand for that endpoint or for the
/// base below which it lies, so any POST is a message; any other method is outside
/// the spec.
pub fn proxied(method: &str, _path: &str) -> bool {
    method == "POST"
}

/// How the harness's provider spoils one reply, for a client case that serves a
/// reply the client must refuse or report (the client side of a server fault).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spoil {
    None,
    /// The RESULT carries protocol `agora/1.1` (AV1-003; `wrong-protocol-tag`).
    ResultProtocol,
    /// The RESULT reuses the REQUEST's id (AV1-004; `reuse-request-id`).
    ResultReusesId,
    /// The RESULT's request_id names the OFFER (AV1-042; `result-links-offer`).
    ResultNamesOffer,
    /// The OFFER's request_id names another request (AV1-037).
    OfferNamesOther,
    /// The OFFER is fresh (stamped 5 s ago) but its ttl of 1 s has run out (AV1-039).
    OfferExpired,
    /// The RESULT is stamped ten minutes ago (AV1-007; `stale-reply-timestamp`).
    ResultStale,
    /// The RESULT's signature is empty (`unsigned-replies`).
    ResultUnsigned,
    /// The RESULT is signed with a key other than its sender.id's (`reply-wrong-key`).
    ResultWrongKey,
    /// The RESULT is signed over its members in insertion order and sent so
    /// (`sign-non-canonical`).
    ResultInsertionOrder,
    /// The RESULT is signed over sorted-key JSON with non-ASCII text escaped
    /// (AV1-017, AV1-023), its data holding such text.
    ResultSortedKeys,
    /// The RESULT is signed over Python's `json.dumps(v, sort_keys=True)` with its
    /// default separators (", " and ": "), the form a verifier that also tries it
    /// takes (AV1-017, AV1-023).
    ResultPythonDumps,
    /// The REQUEST is refused with a bare `{"error", "code"}` and HTTP 401
    /// (`bare-error-replies`).
    BareError,
    /// The ERROR's code is a string (`error-code-string`).
    ErrorCodeString,
    /// The ERROR goes out with HTTP 200, code and message nested under
    /// payload.error (`error-code-nested`).
    ErrorNested,
    /// The ACCEPT is answered ERROR 404 (`offer-id-in-payload`).
    AcceptRefused,
}

/// The provider's answers, signed with `key`: REQUEST as `plan` says, ACCEPT with a
/// RESULT for the REQUEST, anything else with ERROR 400.
pub fn provider(key: Keypair, plan: Provide) -> crate::counterparty::Answer {
    spoiled_provider(key, plan, Spoil::None)
}

/// [`provider`], with one reply spoiled as `spoil` says.
pub fn spoiled_provider(key: Keypair, plan: Provide, spoil: Spoil) -> crate::counterparty::Answer {
    let mut p = Provider {
        key,
        plan,
        spoil,
        other_key: Keypair::generate(),
        request: None,
        offer_id: String::new(),
    };
    Box::new(move |_path: &str, bytes: &[u8]| p.answer(bytes))
}

/// The scripted provider's state: the REQUEST it answered with an OFFER, and the
/// OFFER's id.
struct Provider {
    key: Keypair,
    plan: Provide,
    spoil: Spoil,
    /// Signs the RESULT of `Spoil::ResultWrongKey`.
    other_key: Keypair,
    request: Option<(String, Value)>,
    offer_id: String,
}

/// The reply the plan gives a message, before its envelope: type, payload, the
/// timestamp it is stamped with, and whether its signature is to be spoiled.
struct Planned {
    ty: &'static str,
    payload: Value,
    at: OffsetDateTime,
    bad_signature: bool,
}

impl Provider {
    /// The HTTP status and body answering one message of the client.
    fn answer(&mut self, bytes: &[u8]) -> (u16, Vec<u8>) {
        let msg: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let id = msg["id"].as_str().unwrap_or_default().to_string();
        let planned = self.plan_reply(&msg, &id);
        let bad = planned.bad_signature;
        let (result, error) = (planned.ty == "RESULT", planned.ty == "ERROR");
        let mut env = self.envelope(planned, &id);
        let body = match self.spoil_signed(&mut env, result, error) {
            Ok(body) => body,
            Err(early) => return early,
        };
        if bad {
            let spoiled =
                crate::script::spoil(env["sender"]["signature"].as_str().unwrap_or_default(), 5);
            env["sender"]["signature"] = json!(spoiled);
        }
        let code = if error {
            env["payload"]["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .or_else(|| env["payload"]["code"].as_str().and_then(|c| c.parse().ok()))
                .unwrap_or(400)
        } else {
            200
        };
        (code, body.unwrap_or_else(|| wire(&env)))
    }

    /// What the plan answers `msg` (of id `id`) with.
    fn plan_reply(&mut self, msg: &Value, id: &str) -> Planned {
        let ty = msg["type"].as_str().unwrap_or_default();
        let planned = |ty, payload| Planned {
            ty,
            payload,
            at: now(),
            bad_signature: false,
        };
        let error = |payload| planned("ERROR", payload);
        match (ty, self.plan) {
            ("REQUEST", Provide::Direct) => planned(
                "RESULT",
                json!({"request_id": id, "status": "success", "data": msg["payload"]["params"]}),
            ),
            (
                "REQUEST",
                Provide::Offer {
                    cost,
                    stale,
                    bad_signature,
                },
            ) => self.offer(msg, id, cost, stale, bad_signature),
            ("REQUEST", Provide::Error(code)) => {
                error(json!({"code": code, "message": "refused by the harness", "request_id": id}))
            }
            ("ACCEPT", _) if self.spoil == Spoil::AcceptRefused => error(
                json!({"code": 404, "message": "unknown offer (refused by the harness on purpose)", "request_id": id}),
            ),
            ("ACCEPT", _) => match &self.request {
                Some((rid, params)) => {
                    let names = if self.spoil == Spoil::ResultNamesOffer {
                        self.offer_id.clone()
                    } else {
                        rid.clone()
                    };
                    planned(
                        "RESULT",
                        json!({"request_id": names, "status": "success", "data": params}),
                    )
                }
                None => error(json!({"code": 404, "message": "no offer was made"})),
            },
            _ => error(json!({"code": 400, "message": "unexpected message"})),
        }
    }

    /// The OFFER answering a REQUEST, stale or expired or naming another request as
    /// the spoil says.
    fn offer(&mut self, msg: &Value, id: &str, cost: f64, stale: bool, bad: bool) -> Planned {
        self.request = Some((id.to_string(), msg["payload"]["params"].clone()));
        let mut at = now();
        let mut ttl = 30_000;
        if stale {
            // Outside the 60 s window, but within its own ttl: only the freshness
            // check refuses it.
            at -= Duration::minutes(2);
            ttl = 900_000;
        }
        if self.spoil == Spoil::OfferExpired {
            at -= Duration::seconds(5);
            ttl = 1000;
        }
        let names = if self.spoil == Spoil::OfferNamesOther {
            new_id()
        } else {
            id.to_string()
        };
        Planned {
            ty: "OFFER",
            payload: json!({"request_id": names, "cost": cost, "ttl": ttl, "eta": 10}),
            at,
            bad_signature: bad,
        }
    }

    /// The reply's signed envelope, with the spoils of its payload, id, timestamp,
    /// protocol and signer.
    fn envelope(&mut self, planned: Planned, id: &str) -> Value {
        let Planned {
            ty,
            mut payload,
            mut at,
            ..
        } = planned;
        let result = ty == "RESULT";
        if result && self.spoil == Spoil::ResultSortedKeys {
            payload["data"] = json!({"text": "déjà vu, naïve café"});
        }
        if result && self.spoil == Spoil::ResultStale {
            at -= Duration::minutes(10);
        }
        let reply_id = if result && self.spoil == Spoil::ResultReusesId {
            self.request
                .as_ref()
                .map_or(id.to_string(), |(rid, _)| rid.clone())
        } else {
            new_id()
        };
        let mut env = envelope::build(ty, &reply_id, at, &self.key.did(), payload);
        if ty == "OFFER" {
            // The OFFER's envelope id names it (AV1-A11); the payload says so too.
            env["payload"]["offer_id"] = env["id"].clone();
            self.offer_id = reply_id.clone();
        }
        if result && self.spoil == Spoil::ResultProtocol {
            env["protocol"] = json!("agora/1.1");
        }
        let signer = if result && self.spoil == Spoil::ResultWrongKey {
            &self.other_key
        } else {
            &self.key
        };
        let _ = envelope::sign(&mut env, signer, SigVariant::Blank);
        env
    }

    /// The spoils of a signed reply: `Ok` with the body to send as is (else the
    /// envelope's wire form), `Err` with a whole reply in its place.
    fn spoil_signed(
        &self,
        env: &mut Value,
        result: bool,
        error: bool,
    ) -> Result<Option<Vec<u8>>, (u16, Vec<u8>)> {
        let key = &self.key;
        match self.spoil {
            Spoil::ResultUnsigned if result => env["sender"]["signature"] = json!(""),
            Spoil::ResultInsertionOrder if result => {
                env["sender"]["signature"] = json!("");
                let text = serde_json::to_vec(&*env).unwrap_or_default();
                env["sender"]["signature"] = json!(keys::b64url(&key.sign(&text).to_bytes()));
                return Ok(serde_json::to_vec(&*env).ok());
            }
            Spoil::ResultSortedKeys | Spoil::ResultPythonDumps if result => {
                env["sender"]["signature"] = json!("");
                let compact = self.spoil == Spoil::ResultSortedKeys;
                let text = reference_impl::wire::pyjson::python_sorted_json(env, compact);
                env["sender"]["signature"] =
                    json!(keys::b64url(&key.sign(text.as_bytes()).to_bytes()));
            }
            Spoil::BareError if error => {
                return Err((
                    401,
                    json!({"error": "untrusted sender (refused by the harness on purpose)", "code": 401})
                        .to_string()
                        .into_bytes(),
                ));
            }
            Spoil::ErrorCodeString if error => {
                env["payload"]["code"] = json!(env["payload"]["code"].to_string());
                let _ = envelope::sign(env, key, SigVariant::Blank);
            }
            Spoil::ErrorNested if error => {
                let code = env["payload"]["code"].clone();
                let message = env["payload"]["message"].clone();
                env["payload"] = json!({"error": {"code": code, "message": message}});
                let _ = envelope::sign(env, key, SigVariant::Blank);
                return Err((200, wire(env)));
            }
            _ => {}
        }
        Ok(None)
    }
}

/// What a requester's ACCEPT `accept` of the OFFER `offer` (as served) breaks: it
/// names the OFFER by its id (the client-negotiated case's rule, AV1-040).
pub fn accept_finding(accept: &Env, offer: &Value) -> Option<Finding> {
    (accept.payload["offer_id"] != offer["id"]).then(|| {
        rules::CLIENT_NEGOTIATED.found(format!(
            "the ACCEPT names offer {}, not the OFFER's id {} (AV1-040)",
            accept.payload["offer_id"], offer["id"]
        ))
    })
}

/// Judges a message the client under test sent: every rule of [`check_reply`]
/// (the envelope, its signature, a fresh id and timestamp), an id no other message
/// of the client carried in the whole run (AV1-004, [`Ctx::reused`]), and its
/// payload against its type's schema (REQUEST: AV1-032…035; ACCEPT: AV1-040,
/// AV1-041).
pub fn check_client_message(ctx: &mut Ctx, bytes: &[u8]) -> Step<Env> {
    let before = ctx.findings().len();
    let read = check_reply(ctx, &Received::Frame(bytes.to_vec()));
    ctx.reword_since(before, "client's message");
    let env = match read? {
        Some(e) => e,
        None => return fail("the client sent an empty message"),
    };
    if let Some(first) = ctx.reused("message id", &env.id, bytes) {
        ctx.finding(rules::CLIENT_ID_REUSED.found(format!(
            "the client's {} reuses id {:?}, which {first} carried first in this run",
            env.ty, env.id
        )));
    }
    let (schema, family) = match env.ty.as_str() {
        "REQUEST" => ("agora-v1/request", &rules::SCHEMA_REQUEST),
        "ACCEPT" => ("agora-v1/accept", &rules::SCHEMA_ACCEPT),
        _ => return Ok(env),
    };
    let found = crate::rules::schema_findings(
        &ctx.shared.schemas,
        schema,
        (rules::RULES, family),
        &env.payload,
    );
    for f in found {
        ctx.finding(f);
    }
    Ok(env)
}
/// A message a real client sent through `agentconform proxy`: every rule of
/// [`check_client_message`], an id no earlier message through the proxy carried
/// (AV1-004), and an ACCEPT against the OFFER it names ([`accept_against_offer`]).
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, h: &crate::exchange::History) {
    if let Ok(env) = check_client_message(ctx, &x.received) {
        if let Some(who) = h.id_used(&env.id) {
            ctx.finding(rules::CLIENT_ID_REUSED.found(format!(
                "the client's {} reuses id {:?}, which {who}'s earlier message carried",
                env.ty, env.id
            )));
        }
        if env.ty == "ACCEPT" {
            accept_against_offer(ctx, &env, h);
        }
    }
}

/// An ACCEPT against the conversation the proxy saw: it names an OFFER the server
/// sent (by the OFFER's id, AV1-040), not one over the REQUEST's budget (AV1-034),
/// nor one whose ttl had run out when it was sent (AV1-039, a second's margin for
/// the OFFER's whole-second timestamp). Judged only when an OFFER went through the
/// proxy: a negotiation begun elsewhere says nothing.
fn accept_against_offer(ctx: &mut Ctx, accept: &Env, h: &crate::exchange::History) {
    let offers: Vec<Value> = h
        .replies()
        .map(|(_, v)| v)
        .filter(|v| v["type"] == "OFFER")
        .collect();
    let Some(latest) = offers.first() else { return };
    let named = &accept.payload["offer_id"];
    let Some(offer) = offers.iter().find(|o| o["id"] == *named) else {
        let which = if *named == latest["payload"]["request_id"] {
            " (the REQUEST's id, which the OFFER's payload.request_id repeats)"
        } else {
            ""
        };
        ctx.finding(rules::CLIENT_ACCEPT_OFFER_ID.found(format!(
                "the client's ACCEPT names offer {named}{which}; the latest OFFER through the proxy has the id {}",
                latest["id"]
            )));
        return;
    };
    let asked = h
        .sent()
        .map(|(_, v)| v)
        .find(|v| v["type"] == "REQUEST" && v["id"] == offer["payload"]["request_id"]);
    let cost = offer["payload"]["cost"].as_f64();
    let max = asked
        .as_ref()
        .and_then(|r| r["payload"]["budget"]["max"].as_f64());
    if let (Some(cost), Some(max)) = (cost, max) {
        if cost > max {
            ctx.finding(rules::CLIENT_ACCEPT_OVER_BUDGET.found(format!("the client ACCEPTed offer {named} costing {cost}, over its REQUEST's budget of {max}")));
        }
    }
    let stamped = offer["timestamp"]
        .as_str()
        .and_then(|s| reference_impl::wire::clock::parse_timestamp(s).ok());
    if let (Some(at), Some(ttl)) = (stamped, offer["payload"]["ttl"].as_u64()) {
        let ends = at + time::Duration::milliseconds(ttl as i64) + time::Duration::seconds(1);
        if h.now > ends {
            ctx.finding(rules::CLIENT_ACCEPT_EXPIRED_OFFER.found(format!(
                    "the client ACCEPTed offer {named}, stamped {} with a ttl of {ttl} ms, {} ms after its ttl ran out",
                    offer["timestamp"],
                    (h.now - ends).whole_milliseconds() + 1000
                )));
        }
    }
}
