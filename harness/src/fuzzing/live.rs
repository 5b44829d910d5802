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
}

#[derive(Debug, Clone, Arbitrary)]
enum Val {
    Null,
    Bool(bool),
    Int(i32),
    Float(i16, u8),
    Str(String),
    Array(Vec<u8>),
    Object,
}

impl Val {
    fn json(&self) -> Value {
        match self {
            Val::Null => Value::Null,
            Val::Bool(b) => json!(b),
            Val::Int(i) => json!(i),
            Val::Float(m, e) => json!(f64::from(*m) / f64::from(u32::from(*e) + 1)),
            Val::Str(s) => json!(s.chars().take(64).collect::<String>()),
            Val::Array(v) => json!(v.iter().take(8).collect::<Vec<_>>()),
            Val::Object => json!({"k": 1}),
        }
    }
}

#[derive(Debug, Clone, Arbitrary)]
enum FieldMut {
    Protocol(u8),
    Type(u8),
    RemoveTop(u8),
    SetPayload(u8, Val),
    RemovePayload(u8),
    SetParams(Val),
    SenderId(u8),
    ShiftTimestamp(i16),
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum WireMut {
    ReverseKeys,
    Spaces,
    Escapes,
}

#[derive(Debug, Clone, Arbitrary)]
struct ByteMut {
    at: u16,
    op: u8,
    val: u8,
}

#[derive(Debug, Clone, Arbitrary)]
enum Kind {
    Valid(Template),
    Resigned(Template, FieldMut),
    Unsigned(Template, FieldMut),
    WireForm(Template, WireMut),
    Raw(Template, Vec<ByteMut>),
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
    };
    envelope::build(ty, &stamp.id, stamp.at, &key.did(), payload)
}

fn apply(m: &mut Value, f: &FieldMut) {
    match f {
        FieldMut::Protocol(i) => {
            m["protocol"] = json!(["agora/1.1", "agora/2.0", "", "AGORA/1.0"][usize::from(*i) % 4])
        }
        FieldMut::Type(i) => m["type"] = json!(TYPES[usize::from(*i) % TYPES.len()]),
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

fn reformat(v: &Value, w: WireMut) -> Vec<u8> {
    fn write(v: &Value, w: WireMut, out: &mut String) {
        match v {
            Value::Object(o) => {
                out.push('{');
                let mut entries: Vec<(&String, &Value)> = o.iter().collect();
                if matches!(w, WireMut::ReverseKeys) {
                    entries.reverse();
                }
                for (i, (k, val)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if matches!(w, WireMut::Spaces) {
                            " ,\n "
                        } else {
                            ","
                        });
                    }
                    write(&Value::String((*k).clone()), w, out);
                    out.push_str(if matches!(w, WireMut::Spaces) {
                        " : "
                    } else {
                        ":"
                    });
                    write(val, w, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, w, out);
                }
                out.push(']');
            }
            Value::String(s) if matches!(w, WireMut::Escapes) => {
                out.push('"');
                for c in s.chars() {
                    match c {
                        'a'..='z' | 'A'..='Z' => out.push_str(&format!("\\u{:04x}", c as u32)),
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(v, w, &mut s);
    s.into_bytes()
}

fn canonical_without_signature(v: &Value) -> Option<Vec<u8>> {
    let tree = reference_impl::wire::json::Value::from_serde(v);
    envelope::signing_bytes(tree, SigVariant::Blank).ok()
}

/// The case `index` of the run with `seed`.
pub fn generate(seed: u64, index: u64, stamp: &Stamp, key: &Keypair, schemas: &Schemas) -> Input {
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
            input.bytes = reformat(&m, *w);
        }
        Kind::Raw(t, muts) => {
            let mut m = template(*t, key, stamp, index);
            sign(&mut m);
            let mut b = wire(&m);
            for bm in muts.iter().take(8) {
                if b.is_empty() {
                    break;
                }
                let at = usize::from(bm.at) % b.len();
                match bm.op % 3 {
                    0 => b[at] ^= bm.val | 1,
                    1 => b.insert(at, bm.val),
                    _ => {
                        b.remove(at);
                    }
                }
            }
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
    pub oracle: &'static str,
    pub detail: String,
    pub reply: String,
}

/// Sends one message and checks the reply's own validity.
async fn exchange(
    drv: &mut Driver,
    bytes: Vec<u8>,
    limits: Limits,
    schemas: &Schemas,
) -> Result<(Verdict, String), Finding> {
    let r = match drv.exchange(bytes, limits).await {
        Ok(r) => r,
        Err(e) => {
            let oracle = if matches!(e, DriveError::Timeout(_)) {
                "timeout"
            } else {
                "transport"
            };
            return Err(Finding {
                oracle,
                detail: crate::script::describe_drive_error(&e),
                reply: String::new(),
            });
        }
    };
    let (status, body) = match r {
        Received::Http { status, body } => (Some(status), body),
        Received::Frame(b) => (None, b),
        Received::Silence => return Ok((Verdict::Silence, String::new())),
    };
    let text = String::from_utf8_lossy(&body).into_owned();
    if status.is_some_and(|s| s >= 500) {
        return Err(Finding {
            oracle: "server-error",
            detail: format!("HTTP {}", status.unwrap_or(0)),
            reply: text,
        });
    }
    let v: Value = match reference_impl::wire::json::parse(&body) {
        Ok(t) => t.to_serde(),
        Err(e) => {
            return Err(Finding {
                oracle: "reply-not-json",
                detail: e.to_string(),
                reply: text,
            })
        }
    };
    if let Err(e) = schemas.check("agora-v1/envelope", &v) {
        return Err(Finding {
            oracle: "reply-schema",
            detail: e,
            reply: text,
        });
    }
    let ver = envelope::verify_bytes(&body);
    if !ver.ok() {
        return Err(Finding {
            oracle: "reply-signature",
            detail: ver.problem.unwrap_or_default(),
            reply: text,
        });
    }
    let ty = v["type"].as_str().unwrap_or_default().to_string();
    let code = v["payload"]["code"].as_i64();
    if ty == "ERROR" && code.is_some_and(|c| c >= 500) {
        return Err(Finding {
            oracle: "server-error",
            detail: format!("ERROR {}", code.unwrap_or(0)),
            reply: text,
        });
    }
    Ok((Verdict::Reply { ty, code }, text))
}

fn processed(v: &Verdict) -> bool {
    matches!(v, Verdict::Reply { ty, .. } if ty != "ERROR")
}

/// Runs one case against the driver; `Some` when an oracle fired.
pub async fn run_case(
    drv: &mut Driver,
    input: &Input,
    limits: Limits,
    schemas: &Schemas,
) -> Option<Finding> {
    if let Some(twin) = &input.twin {
        let first = match exchange(drv, twin.clone(), limits, schemas).await {
            Ok((v, _)) => v,
            Err(f) => return Some(f),
        };
        let second = exchange(drv, input.bytes.clone(), limits, schemas).await;
        return match second {
            Err(f) => Some(f),
            Ok((v, text)) if v != first => Some(Finding {
                oracle: "wire-form",
                detail: format!("the canonical form drew {first:?}, this spelling {v:?}"),
                reply: text,
            }),
            Ok(_) => None,
        };
    }
    let (verdict, text) = match exchange(drv, input.bytes.clone(), limits, schemas).await {
        Ok(x) => x,
        Err(f) => return Some(f),
    };
    match &input.kind {
        Kind::Unsigned(..) if input.signed_form_changed && processed(&verdict) => Some(Finding {
            oracle: "signature",
            detail: format!("a message changed after signing was processed: {verdict:?}"),
            reply: text,
        }),
        Kind::Resigned(..) if !input.schema_valid && processed(&verdict) => Some(Finding {
            oracle: "invalid-accepted",
            detail: format!("a message that breaks the schemas was processed: {verdict:?}"),
            reply: text,
        }),
        Kind::Valid(Template::Echo) if !matches!(verdict, Verdict::Reply { ref ty, .. } if ty == "RESULT" || ty == "OFFER") => {
            Some(Finding {
                oracle: "valid-rejected",
                detail: format!("a valid echo REQUEST drew {verdict:?}"),
                reply: text,
            })
        }
        _ => None,
    }
}

/// A HELLO must be answered.
pub async fn alive(
    drv: &mut Driver,
    key: &Keypair,
    limits: Limits,
    schemas: &Schemas,
) -> Result<(), Finding> {
    let stamp = Stamp::now(u64::MAX);
    let mut hello = template(Template::Hello, key, &stamp, 0);
    let _ = envelope::sign(&mut hello, key, SigVariant::Blank);
    let bytes = jcs::canonicalize_serde(&hello).unwrap_or_default();
    match exchange(drv, bytes, limits, schemas).await {
        Ok((Verdict::Reply { .. }, _)) => Ok(()),
        Ok((Verdict::Silence, _)) => Err(Finding {
            oracle: "liveness",
            detail: "no answer to a HELLO".into(),
            reply: String::new(),
        }),
        Err(mut f) => {
            f.oracle = "liveness";
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
    let dir = out.join("crashes");
    std::fs::create_dir_all(&dir)?;
    let stem = format!("{index:08}-{}", f.oracle);
    let bin = dir.join(format!("{stem}.bin"));
    std::fs::write(&bin, &input.bytes)?;
    let meta = dir.join(format!("{stem}.json"));
    let record = json!({
        "suite": suite, "target": target, "oracle": f.oracle, "detail": f.detail, "input": input.label,
        "reply": f.reply, "seed": seed, "index": index, "bytes": bin.file_name().map(|n| n.to_string_lossy().into_owned()),
        "replay": format!("agentconform replay {} --target {target}", meta.display()),
    });
    std::fs::write(
        &meta,
        serde_json::to_vec_pretty(&record).unwrap_or_default(),
    )?;
    Ok(meta)
}

/// Progress of a run.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub cases: u64,
    pub findings: u64,
    pub elapsed: Duration,
}

/// Bounds of a run.
pub struct Bounds {
    pub cases: Option<u64>,
    pub duration: Option<Duration>,
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
) -> Summary {
    let started = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let findings = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let max_cases = bounds.cases.unwrap_or(u64::MAX);
    let deadline = bounds.duration.map(|d| started + d);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        let mut drv = make_driver();
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
                let input = generate(seed, index, &Stamp::now(index), &key, &schemas);
                let mut finding = run_case(&mut drv, &input, limits, &schemas).await;
                if finding.is_some() || index % 1000 == 999 {
                    if let Err(f) = alive(&mut drv, &key, limits, &schemas).await {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                        finding = finding.or(Some(f));
                    }
                }
                if let Some(f) = finding {
                    findings.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let _ = write_finding(&out, "agora-v1", &target, seed, index, &input, &f);
                    if findings.load(std::sync::atomic::Ordering::Relaxed) >= 100 {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    // A dropped connection is reopened by the driver on its next use.
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Summary {
        cases: next
            .load(std::sync::atomic::Ordering::Relaxed)
            .min(max_cases),
        findings: findings.load(std::sync::atomic::Ordering::Relaxed),
        elapsed: started.elapsed(),
    }
}
