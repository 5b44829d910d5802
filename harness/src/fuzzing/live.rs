//! `agentconform fuzz`: structure-aware and raw mutation of agora-v1 messages sent
//! to a live target, with oracles, crash files and replay.
//!
//! Each case is a pure function of (seed, index, stamp): the same seed gives the same
//! inputs; `stamp` (message id and timestamp) is the only part taken from the clock,
//! so that a replay is fresh for the target's replay window.
//!
//! Oracles:
//! - every reply is an envelope that passes the schemas and whose signature verifies;
//! - the target never answers with a 5xx, a timeout or a dropped connection;
//! - **unsigned**: a message mutated after signing, whose signed form changed, is
//!   rejected (any ERROR; never OFFER, RESULT, WELCOME or STATUS);
//! - **re-signed**: a mutated and re-signed message that breaks the schemas is
//!   rejected; one that keeps them may be accepted;
//! - **wire form**: the same content in another spelling (key order, white space,
//!   `\u` escapes) gets the same verdict as its canonical form;
//! - **liveness**: a HELLO after every finding and every 1,000 cases is answered.

use super::scripted::{edit_bytes, respell, ByteEdit, Val, WireForm};
use super::verdict::{FuzzFinding, Oracle};
use crate::drive::{DriveError, Driver, Limits, Received};
use crate::schemas::Schemas;
use arbitrary::{Arbitrary, Unstructured};
use rand::{Rng, SeedableRng};
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::clock::format_timestamp;
use reference_impl::wire::jcs;
use reference_impl::wire::keys::Keypair;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Template {
    Echo,
    Quote,
    Hello,
    Status,
    AcceptUnknown,
    UnknownResource,
}

/// Reference faults no agora-v1 fuzz case can reach, and why.
pub const UNREACHABLE: &[(&str, &str)] = &[
    (
        "expired-offer-code-400",
        "needs a wait past an offer's ttl; the offer-expiry cases wait, the fuzzer does not",
    ),
    (
        "accept-expired-offer",
        "needs a wait past an offer's ttl; the offer-expiry cases wait, the fuzzer does not",
    ),
    (
        "offer-id-in-payload",
        "its only symptom is an ACCEPT that draws no RESULT, which the negotiated fuzz cases leave unjudged (the offer may have lapsed while the fuzzer was busy)",
    ),
];

#[derive(Debug, Clone, Arbitrary)]
enum FieldMut {
    Protocol(u8),
    Type(u8),
    /// The template's own type in lower case.
    LowercaseType,
    RemoveTop(u8),
    SetPayload(u8, Val),
    RemovePayload(u8),
    SetParams(Val),
    SenderId(u8),
    ShiftTimestamp(i16),
}

/// What a negotiated-flow case does after its REQUEST drew an OFFER.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Negotiation {
    /// ACCEPT: a RESULT that names the REQUEST (AV1-036).
    Accept,
    /// ACCEPT twice: the second is rejected.
    AcceptTwice,
    /// The same signed REQUEST again: rejected as a replay (AV1-012).
    ReplayRequest,
    /// A new REQUEST whose budget is below the offered cost: ERROR 402.
    BudgetBelowCost,
}

#[derive(Debug, Clone, Arbitrary)]
enum Kind {
    Valid(Template),
    Resigned(Template, FieldMut),
    Unsigned(Template, FieldMut),
    WireForm(Template, WireForm),
    /// A valid message with its timestamp moved by this many seconds beyond the
    /// replay window, re-signed.
    Stale(Template, u16, bool),
    /// A valid message whose signature is removed (`true`) or emptied.
    Strip(Template, bool),
    /// The negotiated flow, then one step of it bent.
    Negotiate(Negotiation),
    Raw(Template, Vec<ByteEdit>),
}

/// The parts of a message taken from the clock.
#[derive(Debug, Clone)]
pub struct Stamp {
    pub id: String,
    pub at: time::OffsetDateTime,
}

impl Stamp {
    pub fn now(n: u64) -> Stamp {
        let nanos = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
        Stamp {
            id: format!("fz-{nanos:x}-{n}"),
            at: time::OffsetDateTime::now_utc(),
        }
    }
}

/// One generated case.
pub struct Input {
    /// The id and time the case's messages are built from.
    stamp: Stamp,
    pub label: String,
    kind: Kind,
    /// The bytes sent (for wire-form cases, the reformatted message).
    pub bytes: Vec<u8>,
    /// Wire-form cases: the canonical twin, sent first.
    twin: Option<Vec<u8>>,
    /// Unsigned cases: whether the signed form changed.
    signed_form_changed: bool,
    /// Re-signed cases: whether the message still passes the schemas.
    schema_valid: bool,
}

const PAYLOAD_KEYS: [&str; 6] = [
    "resource",
    "params",
    "budget",
    "timeout",
    "offer_id",
    "request_id",
];
const TYPES: [&str; 10] = [
    "REQUEST", "ACCEPT", "HELLO", "STATUS", "OFFER", "RESULT", "ERROR", "WELCOME", "request",
    "PING",
];

fn template(t: Template, key: &Keypair, stamp: &Stamp, n: u64) -> Value {
    let (ty, payload) = match t {
        Template::Echo => (
            "REQUEST",
            json!({"resource": "agora:echo:v1", "params": {"text": "fuzz", "n": n}}),
        ),
        Template::Quote => (
            "REQUEST",
            json!({"resource": "agora:quote:v1", "params": {}, "budget": {"max": 10}}),
        ),
        Template::Hello => ("HELLO", json!({})),
        Template::Status => ("STATUS", json!({"request_id": "fz-unknown"})),
        Template::AcceptUnknown => ("ACCEPT", json!({"offer_id": "fz-unknown"})),
        Template::UnknownResource => (
            "REQUEST",
            json!({"resource": "agora:fuzz-nonexistent:v1", "params": {}}),
        ),
    };
    envelope::build(ty, &stamp.id, stamp.at, &key.did(), payload)
}

fn apply(m: &mut Value, f: &FieldMut) {
    match f {
        FieldMut::Protocol(i) => {
            m["protocol"] = json!(["agora/1.1", "agora/2.0", "", "AGORA/1.0"][usize::from(*i) % 4])
        }
        FieldMut::Type(i) => m["type"] = json!(TYPES[usize::from(*i) % TYPES.len()]),
        FieldMut::LowercaseType => {
            let lower = m["type"].as_str().map(str::to_ascii_lowercase);
            if let Some(t) = lower {
                m["type"] = json!(t);
            }
        }
        FieldMut::RemoveTop(i) => {
            let k = ["protocol", "id", "timestamp", "type", "payload"][usize::from(*i) % 5];
            if let Some(o) = m.as_object_mut() {
                o.remove(k);
            }
        }
        FieldMut::SetPayload(i, v) => {
            m["payload"][PAYLOAD_KEYS[usize::from(*i) % PAYLOAD_KEYS.len()]] = v.json()
        }
        FieldMut::RemovePayload(i) => {
            if let Some(o) = m["payload"].as_object_mut() {
                o.remove(PAYLOAD_KEYS[usize::from(*i) % PAYLOAD_KEYS.len()]);
            }
        }
        FieldMut::SetParams(v) => m["payload"]["params"] = v.json(),
        FieldMut::SenderId(i) => {
            m["sender"]["id"] = json!(
                [
                    "did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169",
                    "",
                    "did:web:example.com",
                    "AAAA"
                ][usize::from(*i) % 4]
            )
        }
        FieldMut::ShiftTimestamp(min) => {
            if let Some(t) = m["timestamp"]
                .as_str()
                .and_then(|s| reference_impl::wire::clock::parse_timestamp(s).ok())
            {
                m["timestamp"] = json!(format_timestamp(
                    t + time::Duration::minutes(i64::from(*min) % 600)
                ));
            }
        }
    }
}

fn canonical_without_signature(v: &Value) -> Option<Vec<u8>> {
    let tree = reference_impl::wire::json::Value::from_serde(v);
    envelope::signing_bytes(tree, SigVariant::Blank).ok()
}

/// The case `index` of the run with `seed`.
pub fn generate(
    seed: u64,
    index: u64,
    stamp: &Stamp,
    key: &Keypair,
    schemas: &Schemas,
    window_s: u64,
) -> Input {
    let mut rng =
        rand::rngs::StdRng::seed_from_u64(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut raw = vec![0u8; 256];
    rng.fill_bytes(&mut raw);
    let mut u = Unstructured::new(&raw);
    let kind = Kind::arbitrary(&mut u).unwrap_or(Kind::Valid(Template::Echo));
    let sign = |m: &mut Value| {
        let _ = envelope::sign(m, key, SigVariant::Blank);
    };
    let wire = |m: &Value| {
        jcs::canonicalize_serde(m)
            .or_else(|_| serde_json::to_vec(m))
            .unwrap_or_default()
    };
    let mut input = Input {
        stamp: stamp.clone(),
        label: String::new(),
        kind: kind.clone(),
        bytes: Vec::new(),
        twin: None,
        signed_form_changed: true,
        schema_valid: true,
    };
    match &kind {
        Kind::Valid(t) => {
            let mut m = template(*t, key, stamp, index);
            sign(&mut m);
            input.label = format!("valid {t:?}");
            input.bytes = wire(&m);
        }
        Kind::Resigned(t, f) => {
            let mut m = template(*t, key, stamp, index);
            apply(&mut m, f);
            sign(&mut m);
            input.schema_valid = schemas.check("agora-v1/envelope", &m).is_ok();
            input.label = format!("re-signed {t:?} {f:?}");
            input.bytes = wire(&m);
        }
        Kind::Unsigned(t, f) => {
            let mut m = template(*t, key, stamp, index);
            sign(&mut m);
            let before = canonical_without_signature(&m);
            apply(&mut m, f);
            input.signed_form_changed = canonical_without_signature(&m) != before;
            input.schema_valid = schemas.check("agora-v1/envelope", &m).is_ok();
            input.label = format!("unsigned {t:?} {f:?}");
            input.bytes = wire(&m);
        }
        Kind::WireForm(t, w) => {
            let mut twin = template(*t, key, stamp, index);
            sign(&mut twin);
            let twin_stamp = Stamp {
                id: format!("{}-w", stamp.id),
                at: stamp.at,
            };
            let mut m = template(*t, key, &twin_stamp, index);
            sign(&mut m);
            input.twin = Some(wire(&twin));
            input.label = format!("wire form {t:?} {w:?}");
            input.bytes = respell(&m, *w);
        }
        Kind::Stale(t, extra, future) => {
            let secs = i64::try_from(window_s).unwrap_or(60) + 5 + i64::from(*extra % 3600);
            let shift = time::Duration::seconds(if *future { secs } else { -secs });
            let moved = Stamp {
                id: stamp.id.clone(),
                at: stamp.at + shift,
            };
            let mut m = template(*t, key, &moved, index);
            sign(&mut m);
            input.label = format!("stale {t:?} ({:+} s)", shift.whole_seconds());
            input.bytes = wire(&m);
        }
        Kind::Strip(t, remove) => {
            let mut m = template(*t, key, stamp, index);
            sign(&mut m);
            if let Some(o) = m["sender"].as_object_mut() {
                if *remove {
                    o.remove("signature");
                } else {
                    o.insert("signature".into(), json!(""));
                }
            }
            input.label = format!(
                "signature {} {t:?}",
                if *remove { "removed" } else { "emptied" }
            );
            input.bytes = wire(&m);
        }
        Kind::Negotiate(n) => {
            let mut m = template(Template::Quote, key, stamp, index);
            if let Some(p) = m["payload"].as_object_mut() {
                p.remove("budget");
            }
            sign(&mut m);
            input.label = format!("negotiated flow {n:?}");
            input.bytes = wire(&m);
        }
        Kind::Raw(t, muts) => {
            let mut m = template(*t, key, stamp, index);
            sign(&mut m);
            let b = edit_bytes(wire(&m), muts);
            input.label = format!("raw {t:?} ({} byte edits)", muts.len().min(8));
            input.bytes = b;
        }
    }
    input
}

/// What the target did with one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A reply envelope: its type and ERROR code.
    Reply {
        ty: String,
        code: Option<i64>,
    },
    Silence,
}

/// An oracle that fired.
#[derive(Debug, Clone)]
pub struct Finding {
    pub oracle: Oracle,
    pub detail: String,
    pub reply: String,
}

/// What the oracles need besides the bytes.
#[derive(Clone, Copy)]
pub struct Judge<'a> {
    pub limits: Limits,
    pub schemas: &'a Schemas,
    /// The target's replay window in seconds: reply timestamps must fall within it.
    pub window_s: u64,
    /// The key the case signs with.
    pub key: &'a Keypair,
}

fn found(oracle: Oracle, detail: impl Into<String>, reply: &str) -> Finding {
    Finding {
        oracle,
        detail: detail.into(),
        reply: reply.to_string(),
    }
}

/// Sends one message and checks the reply's own validity: JSON, the envelope schema,
/// a signature that verifies, no 5xx, a fresh id of its own (AV1-004), a timestamp
/// within the window (AV1-006), HTTP status 200 or the ERROR's code. Returns the
/// verdict, the reply text and the reply (`Null` on silence).
async fn exchange(
    drv: &mut Driver,
    bytes: Vec<u8>,
    j: Judge<'_>,
) -> Result<(Verdict, String, Value), Finding> {
    let sent_id = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v["id"].as_str().map(String::from));
    let r = match drv.exchange(bytes, j.limits).await {
        Ok(r) => r,
        Err(e) => {
            let oracle = if matches!(e, DriveError::Timeout(_)) {
                Oracle::Timeout
            } else {
                Oracle::Transport
            };
            return Err(found(oracle, crate::script::describe_drive_error(&e), ""));
        }
    };
    let (status, body) = match r {
        Received::Http { status, body } => (Some(status), body),
        Received::Frame(b) => (None, b),
        Received::Silence => return Ok((Verdict::Silence, String::new(), Value::Null)),
    };
    let text = String::from_utf8_lossy(&body).into_owned();
    if let Some(s) = status.filter(|s| *s >= 500) {
        return Err(found(Oracle::ServerError, format!("HTTP {s}"), &text));
    }
    let v: Value = match reference_impl::wire::json::parse(&body) {
        Ok(t) => t.to_serde(),
        Err(e) => return Err(found(Oracle::ReplyNotJson, e.to_string(), &text)),
    };
    if let Err(e) = j.schemas.check("agora-v1/envelope", &v) {
        return Err(found(Oracle::ReplySchema, e, &text));
    }
    let ver = envelope::verify_bytes(&body);
    if !ver.ok() {
        return Err(found(
            Oracle::ReplySignature,
            ver.problem.unwrap_or_default(),
            &text,
        ));
    }
    let ty = v["type"].as_str().unwrap_or_default().to_string();
    let code = v["payload"]["code"].as_i64();
    if let Some(c) = code.filter(|c| ty == "ERROR" && *c >= 500) {
        return Err(found(Oracle::ServerError, format!("ERROR {c}"), &text));
    }
    if v["protocol"] != envelope::PROTOCOL {
        return Err(found(
            Oracle::ReplyShape,
            format!(
                "reply protocol {} is not \"agora/1.0\" (AV1-003)",
                v["protocol"]
            ),
            &text,
        ));
    }
    if sent_id.is_some() && v["id"].as_str() == sent_id.as_deref() {
        return Err(found(
            Oracle::ReplyShape,
            "the reply reuses the id of the message it answers (AV1-004)",
            &text,
        ));
    }
    let stamp = v["timestamp"].as_str().unwrap_or_default();
    if let Ok(t) = reference_impl::wire::clock::parse_timestamp(stamp) {
        let skew = (time::OffsetDateTime::now_utc() - t).whole_seconds().abs();
        if skew > i64::try_from(j.window_s).unwrap_or(i64::MAX) {
            return Err(found(
                Oracle::ReplyShape,
                format!("the reply is stamped {stamp}, {skew} s from now, outside the {} s window (AV1-006)", j.window_s),
                &text,
            ));
        }
    }
    if let Some(s) = status.filter(|s| *s != 200 && !(ty == "ERROR" && code == Some(i64::from(*s))))
    {
        return Err(found(
            Oracle::ReplyShape,
            format!("HTTP status {s} for a {ty} reply: the profile requires 200 or the ERROR code"),
            &text,
        ));
    }
    Ok((Verdict::Reply { ty, code }, text, v))
}

fn processed(v: &Verdict) -> bool {
    matches!(v, Verdict::Reply { ty, .. } if ty != "ERROR")
}

/// Runs one case against the driver; `Some` when an oracle fired.
pub async fn run_case(drv: &mut Driver, input: &Input, j: Judge<'_>) -> Option<Finding> {
    case(drv, input, j).await.err()
}

async fn case(drv: &mut Driver, input: &Input, j: Judge<'_>) -> Result<(), Finding> {
    if let Some(twin) = &input.twin {
        let (first, _, _) = exchange(drv, twin.clone(), j).await?;
        let (v, text, _) = exchange(drv, input.bytes.clone(), j).await?;
        if v != first {
            return Err(found(
                Oracle::WireForm,
                format!("the canonical form drew {first:?}, this spelling {v:?}"),
                &text,
            ));
        }
        return Ok(());
    }
    let (verdict, text, reply) = exchange(drv, input.bytes.clone(), j).await?;
    let is = |ty: &str| matches!(&verdict, Verdict::Reply { ty: t, .. } if t == ty);
    match &input.kind {
        Kind::Unsigned(..) if input.signed_form_changed && processed(&verdict) => Err(found(
            Oracle::Signature,
            format!("a message changed after signing was processed: {verdict:?}"),
            &text,
        )),
        Kind::Unsigned(_, FieldMut::ShiftTimestamp(_) | FieldMut::SenderId(0))
            if input.signed_form_changed
                && input.schema_valid
                && matches!(verdict, Verdict::Reply { code: Some(c), .. } if c != 401) =>
        {
            Err(found(
                Oracle::ErrorCode,
                format!("a signature that does not verify drew {verdict:?}, not ERROR 401 (AV1-046)"),
                &text,
            ))
        }
        Kind::Resigned(..) if !input.schema_valid && processed(&verdict) => Err(found(
            Oracle::InvalidAccepted,
            format!("a message that breaks the schemas was processed: {verdict:?}"),
            &text,
        )),
        Kind::Stale(..) if processed(&verdict) => Err(found(
            Oracle::Freshness,
            format!("a message stamped outside the replay window was processed: {verdict:?} (AV1-006)"),
            &text,
        )),
        Kind::Strip(..) if processed(&verdict) => Err(found(
            Oracle::Signature,
            format!("a message without a signature was processed: {verdict:?} (AV1-016)"),
            &text,
        )),
        Kind::Valid(Template::Echo) if !is("RESULT") && !is("OFFER") => Err(found(
            Oracle::ValidRejected,
            format!("a valid echo REQUEST drew {verdict:?}"),
            &text,
        )),
        Kind::Valid(Template::UnknownResource)
            if !matches!(verdict, Verdict::Reply { code: Some(404), .. }) =>
        {
            Err(found(
                Oracle::Verdict,
                format!("a REQUEST for a resource the target lacks drew {verdict:?}, not ERROR 404 (AV1-046)"),
                &text,
            ))
        }
        Kind::Valid(Template::Hello) if !is("WELCOME") => Err(found(
            Oracle::ValidRejected,
            format!("a valid HELLO drew {verdict:?}, not WELCOME"),
            &text,
        )),
        Kind::Negotiate(n) => negotiate(drv, input, j, *n, &reply).await,
        _ => Ok(()),
    }
}

/// The negotiated flow after the REQUEST: `offer` is the reply to it.
async fn negotiate(
    drv: &mut Driver,
    input: &Input,
    j: Judge<'_>,
    n: Negotiation,
    offer: &Value,
) -> Result<(), Finding> {
    let req_id = input.stamp.id.as_str();
    let text = offer.to_string();
    if offer["type"] != "OFFER" {
        return Err(found(
            Oracle::Verdict,
            "a valid REQUEST for agora:quote:v1 drew no OFFER",
            &text,
        ));
    }
    if offer["payload"]["request_id"] != req_id {
        return Err(found(
            Oracle::Verdict,
            format!("OFFER.request_id is not the REQUEST's id {req_id:?} (AV1-037)"),
            &text,
        ));
    }
    let signed = |ty: &str, suffix: &str, payload: Value| {
        let id = format!("{req_id}-{suffix}");
        let mut m = envelope::build(
            ty,
            &id,
            time::OffsetDateTime::now_utc(),
            &j.key.did(),
            payload,
        );
        let _ = envelope::sign(&mut m, j.key, SigVariant::Blank);
        jcs::canonicalize_serde(&m).unwrap_or_default()
    };
    let accept = |suffix: &str| {
        signed(
            "ACCEPT",
            suffix,
            json!({"offer_id": offer["id"].as_str().unwrap_or_default()}),
        )
    };
    match n {
        Negotiation::Accept | Negotiation::AcceptTwice => {
            let (v, text, result) = exchange(drv, accept("a1"), j).await?;
            if !matches!(&v, Verdict::Reply { ty, .. } if ty == "RESULT") {
                // The offer may have expired while the harness was busy: only a RESULT
                // is judged further.
                return Ok(());
            }
            if result["payload"]["request_id"] != req_id {
                return Err(found(
                    Oracle::Verdict,
                    format!("RESULT.request_id is not the REQUEST's id {req_id:?} (AV1-042)"),
                    &text,
                ));
            }
            if matches!(n, Negotiation::AcceptTwice) {
                let (v, text, _) = exchange(drv, accept("a2"), j).await?;
                if processed(&v) {
                    return Err(found(
                        Oracle::Verdict,
                        format!("a second ACCEPT of one offer drew {v:?}"),
                        &text,
                    ));
                }
            }
            Ok(())
        }
        Negotiation::ReplayRequest => {
            let (v, text, _) = exchange(drv, input.bytes.clone(), j).await?;
            if processed(&v) {
                return Err(found(
                    Oracle::Replay,
                    format!("the same signed REQUEST sent again drew {v:?} (AV1-012)"),
                    &text,
                ));
            }
            Ok(())
        }
        Negotiation::BudgetBelowCost => {
            let Some(cost) = offer["payload"]["cost"].as_f64().filter(|c| *c > 0.0) else {
                return Ok(());
            };
            let req = signed(
                "REQUEST",
                "b",
                json!({"resource": "agora:quote:v1", "params": {}, "budget": {"max": cost / 2.0}}),
            );
            let (v, text, _) = exchange(drv, req, j).await?;
            if !matches!(
                v,
                Verdict::Reply {
                    code: Some(402),
                    ..
                }
            ) {
                return Err(found(
                    Oracle::Verdict,
                    format!("a budget of half the offered cost {cost} drew {v:?}, not ERROR 402"),
                    &text,
                ));
            }
            Ok(())
        }
    }
}

/// A HELLO must be answered.
pub async fn alive(drv: &mut Driver, j: Judge<'_>) -> Result<(), Finding> {
    let stamp = Stamp::now(u64::MAX);
    let mut hello = template(Template::Hello, j.key, &stamp, 0);
    let _ = envelope::sign(&mut hello, j.key, SigVariant::Blank);
    let bytes = jcs::canonicalize_serde(&hello).unwrap_or_default();
    match exchange(drv, bytes, j).await {
        Ok((Verdict::Reply { .. }, _, _)) => Ok(()),
        Ok((Verdict::Silence, _, _)) => Err(Finding {
            oracle: Oracle::Liveness,
            detail: "no answer to a HELLO".into(),
            reply: String::new(),
        }),
        Err(mut f) => {
            f.oracle = Oracle::Liveness;
            Err(f)
        }
    }
}

/// The fuzzing key of a seed: the same seed signs with the same key.
pub fn key_for(seed: u64) -> Keypair {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8] = 0xf0;
    Keypair::from_seed(&s)
}

/// Writes a finding as `DIR/crashes/<index>-<oracle>.bin` and `.json`.
pub fn write_finding(
    out: &Path,
    suite: &str,
    target: &str,
    seed: u64,
    index: u64,
    input: &Input,
    f: &Finding,
) -> std::io::Result<PathBuf> {
    let record = json!({
        "suite": suite, "target": target, "oracle": f.oracle.name(), "detail": f.detail,
        "input": input.label, "reply": f.reply, "seed": seed, "index": index,
    });
    super::scripted::write_crash(out, index, f.oracle, &input.bytes, record)
}

/// Bounds of a run.
pub struct Bounds {
    pub cases: Option<u64>,
    pub duration: Option<Duration>,
    /// Stop after this many findings.
    pub max_findings: u64,
    /// The target's replay window in seconds.
    pub window_s: u64,
}

/// Fuzzes with `workers` connections at once; findings are written under `out`.
#[allow(clippy::too_many_arguments)]
pub async fn fuzz(
    make_driver: impl Fn() -> Driver,
    target: &str,
    seed: u64,
    bounds: Bounds,
    out: &Path,
    schemas: std::sync::Arc<Schemas>,
    limits: Limits,
    workers: u64,
) -> super::scripted::Summary {
    let started = Instant::now();
    let first: std::sync::Arc<std::sync::Mutex<Option<FuzzFinding>>> = Default::default();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let findings = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let max_cases = bounds.cases.unwrap_or(u64::MAX);
    let deadline = bounds.duration.map(|d| started + d);
    let (max_findings, window_s) = (bounds.max_findings, bounds.window_s);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let mut drv = make_driver();
        let first = first.clone();
        let (next, findings, stop, schemas) = (
            next.clone(),
            findings.clone(),
            stop.clone(),
            schemas.clone(),
        );
        let (out, target) = (out.to_path_buf(), target.to_string());
        let key = key_for(seed);
        tasks.spawn(async move {
            loop {
                if stop.load(std::sync::atomic::Ordering::Relaxed)
                    || deadline.is_some_and(|d| Instant::now() >= d)
                {
                    return;
                }
                let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if index >= max_cases {
                    return;
                }
                let input = generate(seed, index, &Stamp::now(index), &key, &schemas, window_s);
                let j = Judge {
                    limits,
                    schemas: &schemas,
                    window_s,
                    key: &key,
                };
                let mut finding = run_case(&mut drv, &input, j).await;
                if finding.is_some() || index % 1000 == 999 {
                    if let Err(f) = alive(&mut drv, j).await {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                        finding = finding.or(Some(f));
                    }
                }
                if let Some(f) = finding {
                    findings.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    first
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert_with(|| FuzzFinding {
                            oracle: f.oracle,
                            detail: f.detail.clone(),
                        });
                    let _ = write_finding(&out, "agora-v1", &target, seed, index, &input, &f);
                    if findings.load(std::sync::atomic::Ordering::Relaxed) >= max_findings {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    // A dropped connection is reopened by the driver on its next use.
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let first_finding = first.lock().unwrap_or_else(|p| p.into_inner()).clone();
    super::scripted::Summary {
        cases: next
            .load(std::sync::atomic::Ordering::Relaxed)
            .min(max_cases),
        findings: findings.load(std::sync::atomic::Ordering::Relaxed),
        elapsed: started.elapsed(),
        first_finding,
        ..Default::default()
    }
}
