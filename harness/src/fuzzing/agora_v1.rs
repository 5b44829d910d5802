//! Live fuzzing of agora-v1 (agora-v1.md): structure-aware and raw mutation of
//! signed envelopes, on the shared engine. Each worker keeps one connection.
//!
//! Every message goes through the case context and every reply through
//! `expect::agora_v1::check_reply` (JSON, the envelope and payload schemas, a
//! signature that verifies, a fresh id, a timestamp within the window, the
//! profile's HTTP status rule): a failing finding it records fails the fuzz case.
//! The oracles of this module come on top:
//! - **server error**: never an HTTP 5xx or an ERROR 5xx;
//! - **signature**: a message changed after signing, whose signed form changed, or
//!   one without a signature, is never processed (OFFER, RESULT, WELCOME, STATUS);
//!   a valid message whose signature no longer verifies draws ERROR 401 (AV1-046);
//! - **invalid accepted**: a re-signed message that breaks the schemas is never
//!   processed; one that keeps them may be;
//! - **freshness**: a message stamped outside the replay window is never processed
//!   (AV1-006);
//! - **wire form**: the same content in another spelling (key order, white space,
//!   `\u` escapes) gets the same verdict as its canonical form;
//! - **valid rejected / verdict**: a valid echo REQUEST draws RESULT or OFFER, a
//!   HELLO draws WELCOME, an unknown resource ERROR 404; the negotiated flow links
//!   OFFER and RESULT to the REQUEST, refuses a second ACCEPT and a replayed
//!   REQUEST, and answers a budget below the cost with ERROR 402;
//! - **liveness**: a HELLO after every finding and every 500 cases is answered.

use super::engine::{FuzzCtx, Spec};
use super::mutate::{edit_bytes, respell, ByteEdit, Val, WireForm};
use super::verdict::{finding, FuzzFuture, FuzzStep, Oracle};
use crate::drive::{Received, Transport};
use crate::expect::agora_v1::{
    accept_offer, check_offer, check_reply, check_result, message_at, now, request_payload, send,
    sign_with, wire, Env,
};
use arbitrary::Arbitrary;
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use serde_json::{json, Value};

pub static SPEC: Spec = Spec {
    suite: "agora-v1",
    transports: &[Transport::Http, Transport::Ws],
    case: case_fn,
    probe: probe_fn,
    unreachable: &[
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
    ],
    connection_per_worker: true,
};

fn case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(one_case(f))
}

/// A HELLO must be answered.
fn probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let hello = message_at(&f.ctx, "HELLO", json!({}), now());
        let r = send(&mut f.ctx, hello).await?;
        match check_reply(&mut f.ctx, &r)? {
            Some(_) => Ok(()),
            None => finding(Oracle::Liveness, "no answer to a HELLO"),
        }
    })
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum Template {
    #[default]
    Echo,
    Quote,
    Hello,
    Status,
    AcceptUnknown,
    UnknownResource,
}

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
enum Negotiation {
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
    /// replay window (into the future when `true`), re-signed.
    Stale(Template, u16, bool),
    /// A valid message whose signature is removed (`true`) or emptied.
    Strip(Template, bool),
    /// The negotiated flow, then one step of it bent.
    Negotiate(Negotiation),
    Raw(Template, Vec<ByteEdit>),
}

impl Default for Kind {
    fn default() -> Kind {
        Kind::Valid(Template::Echo)
    }
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

/// The unsigned message of template `t`, stamped `at`.
fn template(f: &mut FuzzCtx, t: Template, at: time::OffsetDateTime) -> Value {
    let p = &f.ctx.profile().agora_v1;
    let (direct, negotiated) = (p.direct_resource.clone(), p.negotiated_resource.clone());
    let (ty, payload) = match t {
        Template::Echo => {
            let n = f.below(1 << 20);
            (
                "REQUEST",
                request_payload(&direct, json!({"text": "fuzz", "n": n})),
            )
        }
        Template::Quote => (
            "REQUEST",
            json!({"resource": negotiated, "params": {}, "budget": {"max": 10}}),
        ),
        Template::Hello => ("HELLO", json!({})),
        Template::Status => ("STATUS", json!({"request_id": "fz-unknown"})),
        Template::AcceptUnknown => ("ACCEPT", json!({"offer_id": "fz-unknown"})),
        Template::UnknownResource => (
            "REQUEST",
            request_payload("agora:fuzz-nonexistent:v1", json!({})),
        ),
    };
    message_at(&f.ctx, ty, payload, at)
}

/// The message of template `t`, stamped now and signed with the run key.
fn signed(f: &mut FuzzCtx, t: Template) -> FuzzStep<Value> {
    signed_at(f, t, now())
}

fn signed_at(f: &mut FuzzCtx, t: Template, at: time::OffsetDateTime) -> FuzzStep<Value> {
    let mut m = template(f, t, at);
    sign_with(&mut m, &f.ctx.shared.key.clone(), SigVariant::Blank)?;
    Ok(m)
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
                .and_then(|s| parse_timestamp(s).ok())
            {
                m["timestamp"] = json!(format_timestamp(
                    t + time::Duration::minutes(i64::from(*min) % 600)
                ));
            }
        }
    }
}

/// The bytes a verifier computes for `v` (signature blanked), if it has any.
fn signing_bytes(v: &Value) -> Option<Vec<u8>> {
    let tree = reference_impl::wire::json::Value::from_serde(v);
    envelope::signing_bytes(tree, SigVariant::Blank).ok()
}

/// What the target did with one message: the reply's type and ERROR code (read
/// by `expect::agora_v1`), or nothing.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Reply { ty: String, code: Option<i64> },
    Silence,
}

impl Verdict {
    fn of(env: Option<&Env>) -> Verdict {
        match env {
            Some(e) => Verdict::Reply {
                ty: e.ty.clone(),
                code: e.error_code(),
            },
            None => Verdict::Silence,
        }
    }

    /// The target carried the message out (any reply but an ERROR).
    fn processed(&self) -> bool {
        matches!(self, Verdict::Reply { ty, .. } if ty != "ERROR")
    }

    fn said(&self, env: Option<&Env>) -> String {
        env.map_or_else(|| "no reply".into(), Env::said)
    }
}

/// Sends `bytes` as the fuzzed message and reads the reply with the suite's
/// reply checks; a 5xx is a server-error finding.
async fn exchange(f: &mut FuzzCtx, bytes: Vec<u8>) -> FuzzStep<(Verdict, Option<Env>)> {
    if let Some(id) = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v["id"].as_str().map(String::from))
    {
        f.ctx.sent_ids.insert(id);
    }
    f.fuzzed(&bytes);
    let r = f.ctx.send_bytes(bytes).await?;
    read(f, &r)
}

fn read(f: &mut FuzzCtx, r: &Received) -> FuzzStep<(Verdict, Option<Env>)> {
    if let Received::Http { status, .. } = r {
        if *status >= 500 {
            return finding(
                Oracle::ServerError,
                format!("the target answered HTTP {status}"),
            );
        }
    }
    let env = check_reply(&mut f.ctx, r)?;
    if let Some(c) = env.as_ref().and_then(Env::error_code).filter(|c| *c >= 500) {
        return finding(
            Oracle::ServerError,
            format!("the target answered ERROR {c}"),
        );
    }
    Ok((Verdict::of(env.as_ref()), env))
}

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let kind: Kind = f.draw();
    match kind {
        Kind::Valid(t) => {
            let m = signed(f, t)?;
            let (_, env) = exchange(f, wire(&m)).await?;
            valid(t, env)
        }
        Kind::Resigned(t, mu) => {
            let mut m = template(f, t, now());
            apply(&mut m, &mu);
            sign_with(&mut m, &f.ctx.shared.key.clone(), SigVariant::Blank)?;
            let schema_valid = f.ctx.shared.schemas.check("agora-v1/envelope", &m).is_ok();
            let (v, env) = exchange(f, wire(&m)).await?;
            if !schema_valid && v.processed() {
                return finding(
                    Oracle::InvalidAccepted,
                    format!(
                        "a message that breaks the schemas was processed: {}",
                        v.said(env.as_ref())
                    ),
                );
            }
            Ok(())
        }
        Kind::Unsigned(t, mu) => {
            let mut m = signed(f, t)?;
            let before = signing_bytes(&m);
            apply(&mut m, &mu);
            let changed = signing_bytes(&m) != before;
            let schema_valid = f.ctx.shared.schemas.check("agora-v1/envelope", &m).is_ok();
            let (v, env) = exchange(f, wire(&m)).await?;
            if changed && v.processed() {
                return finding(
                    Oracle::Signature,
                    format!(
                        "a message changed after signing was processed: {}",
                        v.said(env.as_ref())
                    ),
                );
            }
            let only_signature_bad =
                matches!(mu, FieldMut::ShiftTimestamp(_) | FieldMut::SenderId(0));
            if changed && schema_valid && only_signature_bad {
                if let Verdict::Reply { code: Some(c), .. } = v {
                    if c != 401 {
                        return finding(
                            Oracle::ErrorCode,
                            format!(
                                "a signature that does not verify drew {}, not ERROR 401 (AV1-046)",
                                v.said(env.as_ref())
                            ),
                        );
                    }
                }
            }
            Ok(())
        }
        Kind::WireForm(t, w) => {
            let twin = signed(f, t)?;
            let m = signed(f, t)?;
            let (first, first_env) = exchange(f, wire(&twin)).await?;
            let (v, env) = exchange(f, respell(&m, w)).await?;
            if v != first {
                return finding(
                    Oracle::WireForm,
                    format!(
                        "the canonical form drew {}, this spelling {}",
                        first.said(first_env.as_ref()),
                        v.said(env.as_ref())
                    ),
                );
            }
            Ok(())
        }
        Kind::Stale(t, extra, future) => {
            let window = i64::try_from(f.ctx.profile().timing.replay_window_s).unwrap_or(60);
            let secs = window + 5 + i64::from(extra % 3600);
            let shift = time::Duration::seconds(if future { secs } else { -secs });
            let m = signed_at(f, t, now() + shift)?;
            let (v, env) = exchange(f, wire(&m)).await?;
            if v.processed() {
                return finding(
                    Oracle::Freshness,
                    format!(
                        "a message stamped {:+} s from now, outside the replay window, was processed: {} (AV1-006)",
                        shift.whole_seconds(),
                        v.said(env.as_ref())
                    ),
                );
            }
            Ok(())
        }
        Kind::Strip(t, remove) => {
            let mut m = signed(f, t)?;
            if let Some(o) = m["sender"].as_object_mut() {
                if remove {
                    o.remove("signature");
                } else {
                    o.insert("signature".into(), json!(""));
                }
            }
            let (v, env) = exchange(f, wire(&m)).await?;
            if v.processed() {
                return finding(
                    Oracle::Signature,
                    format!(
                        "a message without a signature was processed: {} (AV1-016)",
                        v.said(env.as_ref())
                    ),
                );
            }
            Ok(())
        }
        Kind::Negotiate(n) => negotiate(f, n).await,
        Kind::Raw(t, edits) => {
            let m = signed(f, t)?;
            exchange(f, edit_bytes(wire(&m), &edits)).await?;
            Ok(())
        }
    }
}

/// The verdict the spec fixes for a valid message of template `t`.
fn valid(t: Template, env: Option<Env>) -> FuzzStep<()> {
    let ty = env.as_ref().map(|e| e.ty.as_str());
    let said = env.as_ref().map_or_else(|| "no reply".into(), Env::said);
    match t {
        Template::Echo if !matches!(ty, Some("RESULT" | "OFFER")) => finding(
            Oracle::ValidRejected,
            format!("a valid REQUEST for the direct resource drew {said}"),
        ),
        Template::Hello if ty != Some("WELCOME") => finding(
            Oracle::ValidRejected,
            format!("a valid HELLO drew {said}, not WELCOME"),
        ),
        Template::UnknownResource if env.as_ref().and_then(Env::error_code) != Some(404) => finding(
            Oracle::Verdict,
            format!(
                "a REQUEST for a resource the target lacks drew {said}, not ERROR 404 (AV1-046)"
            ),
        ),
        _ => Ok(()),
    }
}

/// The negotiated flow: a REQUEST for the negotiated resource must draw an OFFER
/// linked to it; then one step of the flow is bent.
async fn negotiate(f: &mut FuzzCtx, n: Negotiation) -> FuzzStep<()> {
    let resource = f.ctx.profile().agora_v1.negotiated_resource.clone();
    let mut req = message_at(
        &f.ctx,
        "REQUEST",
        request_payload(&resource, json!({"text": "quote me"})),
        now(),
    );
    sign_with(&mut req, &f.ctx.shared.key.clone(), SigVariant::Blank)?;
    let req_id = req["id"].as_str().unwrap_or_default().to_string();
    let request = wire(&req);
    let (v, env) = exchange(f, request.clone()).await?;
    let said = v.said(env.as_ref());
    let Some(mut offer) = env.filter(|e| e.ty == "OFFER") else {
        return finding(
            Oracle::Verdict,
            format!("a valid REQUEST for the negotiated resource drew {said}, not an OFFER"),
        );
    };
    check_offer(&mut f.ctx, &offer, &req_id);
    match n {
        Negotiation::Accept | Negotiation::AcceptTwice => {
            let r = accept_offer(&mut f.ctx, &mut offer, json!({})).await?;
            let (_, env) = read(f, &r)?;
            let Some(result) = env.filter(|e| e.ty == "RESULT") else {
                // The offer may have expired while the harness was busy: only a
                // RESULT is judged further.
                return Ok(());
            };
            check_result(&mut f.ctx, &result, &req_id, true);
            if matches!(n, Negotiation::AcceptTwice) {
                let r = accept_offer(&mut f.ctx, &mut offer, json!({})).await?;
                let (v, env) = read(f, &r)?;
                if v.processed() {
                    return finding(
                        Oracle::Verdict,
                        format!("a second ACCEPT of one offer drew {}", v.said(env.as_ref())),
                    );
                }
            }
            Ok(())
        }
        Negotiation::ReplayRequest => {
            let (v, env) = exchange(f, request).await?;
            if v.processed() {
                return finding(
                    Oracle::Replay,
                    format!(
                        "the same signed REQUEST sent again drew {} (AV1-012)",
                        v.said(env.as_ref())
                    ),
                );
            }
            Ok(())
        }
        Negotiation::BudgetBelowCost => {
            let Some(cost) = offer.payload["cost"].as_f64().filter(|c| *c > 0.0) else {
                return Ok(());
            };
            let mut low = message_at(
                &f.ctx,
                "REQUEST",
                json!({"resource": resource, "params": {}, "budget": {"max": cost / 2.0}}),
                now(),
            );
            sign_with(&mut low, &f.ctx.shared.key.clone(), SigVariant::Blank)?;
            let (v, env) = exchange(f, wire(&low)).await?;
            if v != (Verdict::Reply {
                ty: "ERROR".into(),
                code: Some(402),
            }) {
                return finding(
                    Oracle::Verdict,
                    format!(
                        "a budget of half the offered cost {cost} drew {}, not ERROR 402",
                        v.said(env.as_ref())
                    ),
                );
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_kind_is_a_valid_echo() {
        assert!(matches!(Kind::default(), Kind::Valid(Template::Echo)));
    }

    #[test]
    fn a_verdict_is_processed_only_when_not_an_error() {
        let ok = Verdict::Reply {
            ty: "RESULT".into(),
            code: None,
        };
        let err = Verdict::Reply {
            ty: "ERROR".into(),
            code: Some(401),
        };
        assert!(ok.processed());
        assert!(!err.processed());
        assert!(!Verdict::Silence.processed());
    }
}
