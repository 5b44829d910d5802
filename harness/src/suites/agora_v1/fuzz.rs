//! Live fuzzing of agora-v1 (agora-v1.md): structure-aware and raw mutation of
//! signed envelopes, on the shared engine. Each worker keeps one connection.
//!
//! Every message goes through the case context and every reply through
//! `suites::agora_v1::expect::check_reply` (JSON, the envelope and payload schemas, a
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

use crate::drive::{Received, Transport};
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, Val, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{
    about, finding, first_failing, judge, under, Codes, Expected, FuzzFuture, FuzzStep, Observed,
    Oracle,
};
use crate::suites::agora_v1::expect::{
    accept_finding, accept_offer, check_client_message, check_offer, check_reply, check_result,
    message_at, now, request_payload, send, sign_with, wire, Env,
};
use crate::suites::agora_v1::rules;
use arbitrary::Arbitrary;
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::keys::Keypair;
use serde_json::{json, Value};

pub static SPEC: Spec = Spec {
    transports: &[Transport::Http, Transport::Ws],
    case: case_fn,
    probe: probe_fn,
    resend: Some(resend_fn),
    kinds: &envelope::TYPES,
    unreachable: &[
        (
            "refuse-any-budget",
            "its ERROR 402 answers a quote with a budget of 10, which the fuzzer leaves open (the cost of a quote is the target's); the budget-too-low case sends a budget that covers the offered cost",
        ),
        (
            "refuse-exact-budget",
            "its ERROR 402 answers only a budget equal to the offered cost to the cent, which the fuzzer's drawn budgets do not hit; the budget-too-low case sends it",
        ),
        (
            "forget-expired-offers",
            "needs a wait past an offer's ttl; the offer-expiry cases wait, the fuzzer does not",
        ),
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
    workers: crate::fuzzing::spec::WORKERS,
};

fn case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(one_case(f))
}

/// Sends the input alone as the fuzzed message of a connection of its own (for
/// shrinking a frame): its reply is read by the suite's reply checks. A frame whose
/// edits break its signature draws another verdict, so only what the signature
/// does not need shrinks away.
fn resend_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let bytes = f.sent.clone();
        if serde_json::from_slice::<Value>(&bytes).is_err() {
            return malformed(f, bytes).await;
        }
        exchange(f, bytes).await.map(|_| ())
    })
}

/// Sends bytes that are no JSON: ERROR 400, as the reject-malformed-json case
/// holds; a 5xx or ERROR 500 to them is that case's wrong answer.
async fn malformed(f: &mut FuzzCtx, bytes: Vec<u8>) -> FuzzStep<()> {
    let want = Expected::Reject(Codes::OneOf(vec![400]));
    let plain = (Oracle::Verdict, Oracle::Verdict);
    let judged = match server_error_as_answer(&want, exchange(f, bytes).await) {
        Ok((v, env)) => judge_reply("malformed JSON", &want, &v, env.as_ref(), plain),
        Err(e) => Err(e),
    };
    under(Some("agora-v1/reject-malformed-json"), judged)
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
    sign_with(&mut m, &f.ctx.shared.key, SigVariant::Blank)?;
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
/// by `suites::agora_v1::expect`), or nothing.
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

/// What a carried-out agora-v1 message must be answered with.
type Want = Expected<&'static [&'static str], i64>;

/// Judges a reply against `want`: silence is a refusal (AV1-A5) where one is due;
/// a message carried out must draw one of the reply types `want` names.
fn judge_reply(
    what: &str,
    want: &Want,
    v: &Verdict,
    env: Option<&Env>,
    oracles: (Oracle, Oracle),
) -> FuzzStep<()> {
    let got = match v {
        Verdict::Silence if matches!(want, Expected::Reject(_)) => return Ok(()),
        Verdict::Silence => Observed::Refused(None),
        Verdict::Reply { ty, code } if ty == "ERROR" => Observed::Refused(*code),
        Verdict::Reply { .. } => Observed::Carried,
    };
    let judged = match judge(want, &got, oracles, || v.said(env)) {
        Ok(Some(types)) if !env.is_some_and(|e| types.contains(&e.ty.as_str())) => finding(
            oracles.0,
            format!(
                "expected {}; the target said {}",
                types.join(" or "),
                v.said(env)
            ),
        ),
        other => other.map(|_| ()),
    };
    about(what, judged)
}

const ANY: Codes<i64> = Codes::Any;

/// The conformance case whose subject a kind's message is: a fuzz finding of it is
/// filed under that case's key, the key `run` gives the same deviation.
fn subject(kind: &Kind) -> Option<&'static str> {
    match kind {
        Kind::Resigned(_, mu) => field_subject(mu),
        Kind::Strip(..) => Some("agora-v1/reject-unsigned"),
        Kind::Unsigned(..) => Some("agora-v1/reject-tampered-payload"),
        Kind::Stale(..) => Some("agora-v1/reject-stale-timestamp"),
        Kind::Valid(Template::Hello) => Some("agora-v1/hello-welcome"),
        Kind::Valid(Template::Echo) => Some("agora-v1/echo-direct"),
        Kind::Valid(Template::UnknownResource) => Some("agora-v1/error-unknown-resource"),
        _ => None,
    }
}

/// The conformance case whose subject a re-signed field change is, where one case
/// sends that field wrong: a protocol other than agora/1.0, a type the spec does not
/// name, a payload member of the wrong kind.
fn field_subject(mu: &FieldMut) -> Option<&'static str> {
    let payload = |k: &str| match k {
        "resource" => Some("agora-v1/reject-bad-resource"),
        "params" => Some("agora-v1/reject-params-string"),
        "budget" => Some("agora-v1/reject-budget-number"),
        "timeout" => Some(rules::REJECT_BAD_TIMEOUT.key),
        _ => None,
    };
    // RemoveTop(i) removes ["protocol", "id", "timestamp", "type", "payload"][i % 5].
    let removed = |want: u8| matches!(mu, FieldMut::RemoveTop(i) if i % 5 == want);
    match mu {
        FieldMut::Protocol(_) => Some("agora-v1/reject-wrong-protocol"),
        _ if removed(0) => Some("agora-v1/reject-wrong-protocol"),
        FieldMut::Type(_) | FieldMut::LowercaseType => Some(rules::REJECT_UNKNOWN_TYPE.key),
        _ if removed(3) => Some(rules::REJECT_UNKNOWN_TYPE.key),
        _ if removed(4) => Some("agora-v1/reject-missing-payload"),
        FieldMut::SetPayload(i, _) | FieldMut::RemovePayload(i) => {
            payload(PAYLOAD_KEYS[usize::from(*i) % PAYLOAD_KEYS.len()])
        }
        FieldMut::SetParams(_) => payload("params"),
        // A P-256 did:key (the first of the drawn ids) is reject-ecdsa-sender's
        // subject; another id than the signing key's, reject-wrong-key's.
        FieldMut::SenderId(i) if i % 4 == 0 => Some("agora-v1/reject-ecdsa-sender"),
        FieldMut::SenderId(_) => Some("agora-v1/reject-wrong-key"),
        _ => None,
    }
}

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let kind: Kind = f.draw();
    let key = subject(&kind);
    under(key, planned_case(f, kind).await)
}

async fn planned_case(f: &mut FuzzCtx, kind: Kind) -> FuzzStep<()> {
    // Each kind: the bytes, what the spec fixes for them, and the oracles of a
    // valid message refused and of an invalid one carried out.
    let (bytes, want, oracles) = match kind {
        Kind::Valid(t) => valid(f, t)?,
        Kind::Resigned(t, mu) => resigned(f, t, &mu)?,
        Kind::Unsigned(t, mu) => unsigned(f, t, &mu)?,
        Kind::WireForm(t, w) => return wire_form(f, t, w).await,
        Kind::Stale(t, extra, future) => stale(f, t, extra, future)?,
        Kind::Strip(t, remove) => {
            // No signature: never processed (AV1-016).
            let mut m = signed(f, t)?;
            if let Some(o) = m["sender"].as_object_mut() {
                if remove {
                    o.remove("signature");
                } else {
                    o.insert("signature".into(), json!(""));
                }
            }
            (
                wire(&m),
                Expected::Reject(ANY),
                (Oracle::Verdict, Oracle::Signature),
            )
        }
        Kind::Negotiate(n) => return negotiate(f, n).await,
        Kind::Raw(t, edits) => {
            let m = signed(f, t)?;
            let bytes = edit_bytes(wire(&m), &edits);
            if serde_json::from_slice::<Value>(&bytes).is_err() {
                return malformed(f, bytes).await;
            }
            let want = Expected::Open("byte edits leave the verdict open".into());
            (bytes, want, (Oracle::Verdict, Oracle::Verdict))
        }
    };
    let (v, env) = server_error_as_answer(&want, exchange(f, bytes).await)?;
    judge_reply("the fuzzed message", &want, &v, env.as_ref(), oracles)
}

/// A 5xx or ERROR 500 to a message the spec rejects with a code is the wrong answer
/// to it, as the case whose subject the message is judges it (its key), not a
/// crash.
fn server_error_as_answer<T>(want: &Want, r: FuzzStep<T>) -> FuzzStep<T> {
    match r {
        Err(crate::fuzzing::verdict::FuzzStop::Found(mut found))
            if found.oracle == Oracle::ServerError
                && matches!(want, Expected::Reject(Codes::OneOf(_))) =>
        {
            found.oracle = Oracle::ErrorCode;
            Err(crate::fuzzing::verdict::FuzzStop::Found(found))
        }
        other => other,
    }
}

/// A message to send: its bytes, what the spec fixes for it, and the oracles of a
/// valid message refused and of an invalid one carried out.
type Planned = (Vec<u8>, Want, (Oracle, Oracle));

/// A valid message of a template, and what it must draw.
fn valid(f: &mut FuzzCtx, t: Template) -> FuzzStep<Planned> {
    let want = match t {
        Template::Echo => Expected::Accept(&["RESULT", "OFFER"][..], Codes::none()),
        Template::Hello => Expected::Accept(&["WELCOME"][..], Codes::none()),
        Template::UnknownResource => Expected::Reject(Codes::OneOf(vec![404])),
        Template::Quote => Expected::Open("the cost of a quote is the target's".into()),
        Template::Status | Template::AcceptUnknown => {
            Expected::Open("an unknown request or offer is judged by the conformance cases".into())
        }
    };
    Ok((
        wire(&signed(f, t)?),
        want,
        (Oracle::ValidRejected, Oracle::Verdict),
    ))
}

/// A field mutated, then signed again: open while the envelope schema holds, else
/// refused.
fn resigned(f: &mut FuzzCtx, t: Template, mu: &FieldMut) -> FuzzStep<Planned> {
    let mut m = template(f, t, now());
    apply(&mut m, mu);
    sign_with(&mut m, &f.ctx.shared.key, SigVariant::Blank)?;
    let want = if f.ctx.shared.schemas.check("agora-v1/envelope", &m).is_ok() {
        Expected::Open("a re-signed message that keeps the schemas may be accepted".into())
    } else {
        Expected::Reject(ANY)
    };
    Ok((wire(&m), want, (Oracle::Verdict, Oracle::InvalidAccepted)))
}

/// A field mutated after signing: refused, with 401 when only the signature is
/// wrong (AV1-046).
fn unsigned(f: &mut FuzzCtx, t: Template, mu: &FieldMut) -> FuzzStep<Planned> {
    let mut m = signed(f, t)?;
    let before = signing_bytes(&m);
    apply(&mut m, mu);
    let want = if signing_bytes(&m) == before {
        Expected::Open("the change left the signed form as it was".into())
    } else if f.ctx.shared.schemas.check("agora-v1/envelope", &m).is_ok()
        && matches!(mu, FieldMut::ShiftTimestamp(_) | FieldMut::SenderId(0))
    {
        // Only the signature is wrong: ERROR 401 (AV1-046).
        Expected::Reject(Codes::OneOf(vec![401]))
    } else {
        Expected::Reject(ANY)
    };
    Ok((wire(&m), want, (Oracle::Verdict, Oracle::Signature)))
}

/// Another spelling of the same message draws the verdict of its canonical twin.
async fn wire_form(f: &mut FuzzCtx, t: Template, w: WireForm) -> FuzzStep<()> {
    let twin = signed(f, t)?;
    let m = signed(f, t)?;
    let (first, first_env) = exchange(f, wire(&twin)).await?;
    let (v, env) = exchange(f, respell(&m, w)).await?;
    if v != first {
        let other = finding(
            Oracle::WireForm,
            format!(
                "the canonical form drew {}, this spelling {}",
                first.said(first_env.as_ref()),
                v.said(env.as_ref())
            ),
        );
        return under(Some("agora-v1/accept-noncanonical-spelling"), other);
    }
    Ok(())
}

/// A message stamped outside the replay window: never processed (AV1-006).
fn stale(f: &mut FuzzCtx, t: Template, extra: u16, future: bool) -> FuzzStep<Planned> {
    let window = i64::try_from(f.ctx.profile().timing.replay_window_s).unwrap_or(60);
    let secs = window + 5 + i64::from(extra % 3600);
    let shift = time::Duration::seconds(if future { secs } else { -secs });
    let m = signed_at(f, t, now() + shift)?;
    Ok((
        wire(&m),
        Expected::Reject(ANY),
        (Oracle::Verdict, Oracle::Freshness),
    ))
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
    sign_with(&mut req, &f.ctx.shared.key, SigVariant::Blank)?;
    let req_id = req["id"].as_str().unwrap_or_default().to_string();
    let request = wire(&req);
    let (v, env) = exchange(f, request.clone()).await?;
    let offered = Expected::Accept(&["OFFER"][..], Codes::none());
    let plain = (Oracle::Verdict, Oracle::Verdict);
    judge_reply(
        "a valid REQUEST for the negotiated resource",
        &offered,
        &v,
        env.as_ref(),
        plain,
    )?;
    let Some(mut offer) = env else {
        return Ok(());
    };
    check_offer(&mut f.ctx, &offer, &req_id);
    let refused = Expected::Reject(ANY);
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
                let judged = judge_reply(
                    "a second ACCEPT of one offer",
                    &refused,
                    &v,
                    env.as_ref(),
                    plain,
                );
                under(Some("agora-v1/accept-twice"), judged)?;
            }
            Ok(())
        }
        Negotiation::ReplayRequest => {
            let (v, env) = exchange(f, request).await?;
            let oracles = (Oracle::Verdict, Oracle::Replay);
            let what = "the same signed REQUEST sent again, AV1-012";
            let judged = judge_reply(what, &refused, &v, env.as_ref(), oracles);
            under(Some("agora-v1/reject-replayed-id"), judged)
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
            sign_with(&mut low, &f.ctx.shared.key, SigVariant::Blank)?;
            let (v, env) = exchange(f, wire(&low)).await?;
            let want = Expected::Reject(Codes::OneOf(vec![402]));
            let what = format!("a budget of half the offered cost {cost}");
            let judged = judge_reply(&what, &want, &v, env.as_ref(), plain);
            under(Some("agora-v1/budget-too-low"), judged)
        }
    }
}

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the provider and serves
// mutated replies to the requester under test, through its client driver.

/// Fuzzing a requester: each case runs the client driver once against a provider
/// whose OFFER or RESULT is mutated. Oracles: a requester never ACCEPTs an OFFER it
/// must refuse (a signature that does not verify or is missing, a stale stamp, a
/// link to another request, a cost over its budget), never reports success for a
/// RESULT it must refuse, takes a respelled reply like its canonical form, names
/// the OFFER by its id, sends messages that pass the reply checks of
/// `suites::agora_v1::expect`, and neither crashes (an exit other than 0 or 1) nor hangs.
pub static CLIENT_SPEC: Spec = Spec {
    transports: &[Transport::Http],
    case: client_case_fn,
    probe: client_probe_fn,
    resend: None,
    kinds: &[],
    unreachable: &[
        (
            "error-in-200-taken",
            "the fuzzer mutates OFFERs and RESULTs and never serves an ERROR; client-reports-malformed-error serves one with HTTP 200",
        ),
    ],
    connection_per_worker: false,
    workers: crate::fuzzing::spec::WORKERS,
};

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

/// A plain direct request must complete.
fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let ask = client_ask(&f.ctx, false, 10.0);
        let answer = mutated_provider(&f.ctx, ReplyMut::None, false, None);
        let run = crate::counterparty::drive(
            &mut f.ctx,
            "request",
            &ask,
            answer,
            crate::suites::agora_v1::expect::defined,
        )
        .await?;
        crate::fuzzing::client::ended_well(&run)?;
        if run.failed() {
            return finding(
                Oracle::Liveness,
                format!("a plain request did not complete: {}", run.ended()),
            );
        }
        Ok(())
    })
}

/// What is done to the provider's reply.
#[derive(Debug, Clone, Default, Arbitrary)]
enum ReplyMut {
    #[default]
    None,
    /// The signature of the reply no longer verifies.
    BadSignature,
    /// No signature at all.
    NoSignature,
    /// Signed over Python's `json.dumps(v, sort_keys=True)`, compact (`true`) or
    /// with its default separators, not over RFC 8785 (AV1-017).
    PythonSigned(bool),
    /// Stamped this many seconds outside the replay window (in the past when
    /// `false`).
    Stale(u16, bool),
    /// The reply names another request.
    OtherRequest,
    /// The reply carries protocol "agora/1.1" (AV1-003).
    OtherProtocol,
    /// The reply's id is the REQUEST's (AV1-004).
    ReusedId,
    /// An OFFER stamped 5 s ago with a ttl of 1000 ms (AV1-039); other replies
    /// are left as they are.
    LapsedTtl,
    /// The same reply in another spelling (it still verifies).
    Respell(WireForm),
    /// Raw byte edits of the reply.
    Bytes(Vec<ByteEdit>),
    /// The reply's payload member set to a drawn value (re-signed).
    Member(u8, Val),
}

impl ReplyMut {
    /// Whether a requester must refuse the reply (an OFFER when `offer`).
    fn must_refuse(&self, offer: bool) -> bool {
        matches!(
            self,
            ReplyMut::BadSignature
                | ReplyMut::NoSignature
                | ReplyMut::PythonSigned(_)
                | ReplyMut::Stale(..)
                | ReplyMut::OtherRequest
                | ReplyMut::OtherProtocol
                | ReplyMut::ReusedId
        ) || (offer && matches!(self, ReplyMut::LapsedTtl))
    }
}

/// A reply's edit as a finding's detail says it (never a debug form).
impl std::fmt::Display for ReplyMut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplyMut::None => f.write_str("the reply as planned"),
            ReplyMut::BadSignature => f.write_str("a signature that does not verify"),
            ReplyMut::NoSignature => f.write_str("no signature"),
            ReplyMut::PythonSigned(compact) => write!(
                f,
                "signed over Python's json.dumps(sort_keys=True){}, not RFC 8785",
                if *compact { " compact" } else { "" }
            ),
            ReplyMut::Stale(s, future) => write!(
                f,
                "stamped {s} s {} the replay window",
                if *future { "ahead of" } else { "behind" }
            ),
            ReplyMut::OtherRequest => f.write_str("naming another request"),
            ReplyMut::OtherProtocol => f.write_str("protocol agora/1.1"),
            ReplyMut::ReusedId => f.write_str("the REQUEST's id"),
            ReplyMut::LapsedTtl => f.write_str("an OFFER whose ttl has lapsed"),
            ReplyMut::Respell(w) => write!(f, "respelled with {w}"),
            ReplyMut::Bytes(b) => write!(f, "{} raw byte edits", b.len()),
            ReplyMut::Member(i, v) => write!(f, "payload member {i} set to {}", v.json()),
        }
    }
}

/// An OFFER's cost against the REQUEST's budget of 10.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Arbitrary)]
enum CostDraw {
    /// 5: within the budget.
    #[default]
    Within,
    /// 10: exactly the budget, which covers it (AV1-055).
    AtBudget,
    /// 20: over the budget, never ACCEPTed (AV1-034).
    Over,
}

impl CostDraw {
    fn cost(self) -> f64 {
        match self {
            CostDraw::Within => 5.0,
            CostDraw::AtBudget => 10.0,
            CostDraw::Over => 20.0,
        }
    }
}

/// One client fuzz case: the flow, which reply is mutated, how.
#[derive(Debug, Clone, Default, Arbitrary)]
struct ClientCase {
    /// An OFFER first (else a RESULT at once).
    negotiated: bool,
    /// The OFFER's cost against the budget.
    cost: CostDraw,
    /// Mutate the RESULT rather than the OFFER (negotiated flows).
    mutate_result: bool,
    how: ReplyMut,
}

fn client_ask(ctx: &crate::script::Ctx, negotiated: bool, budget: f64) -> Value {
    let p = &ctx.profile().agora_v1;
    let resource = if negotiated {
        &p.negotiated_resource
    } else {
        &p.direct_resource
    };
    // Non-ASCII text, where RFC 8785 and sorted-key JSON part ways (AV1-017).
    json!({"resource": resource, "params": {"text": "fuzz, ça va"}, "budget": budget})
}

/// The provider, with `how` applied to its first reply, or to its RESULT when
/// `on_result`.
fn mutated_provider(
    ctx: &crate::script::Ctx,
    how: ReplyMut,
    on_result: bool,
    offer: Option<f64>,
) -> crate::counterparty::Answer {
    let key = ctx.shared.key.clone();
    let plan = match offer {
        Some(cost) => crate::suites::agora_v1::expect::Provide::Offer {
            cost,
            stale: false,
            bad_signature: false,
        },
        None => crate::suites::agora_v1::expect::Provide::Direct,
    };
    let mut inner = crate::suites::agora_v1::expect::provider(key.clone(), plan);
    let mut n = 0;
    Box::new(move |path: &str, bytes: &[u8]| {
        let (status, out) = inner(path, bytes);
        n += 1;
        let target = if on_result { 2 } else { 1 };
        if n != target {
            return (status, out);
        }
        (status, mutate_reply(&key, &how, out))
    })
}

fn mutate_reply(key: &Keypair, how: &ReplyMut, out: Vec<u8>) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(&out) else {
        return out;
    };
    let resign = |v: &mut Value| {
        let _ = envelope::sign(v, key, SigVariant::Blank);
    };
    match how {
        ReplyMut::None => return out,
        ReplyMut::BadSignature => {
            let spoiled =
                crate::script::spoil(v["sender"]["signature"].as_str().unwrap_or_default(), 7);
            v["sender"]["signature"] = json!(spoiled);
        }
        ReplyMut::NoSignature => v["sender"]["signature"] = json!(""),
        ReplyMut::PythonSigned(compact) => {
            v["sender"]["signature"] = json!("");
            let mut text = reference_impl::wire::pyjson::python_sorted_json(&v, *compact);
            // An ASCII reply of integers has the same compact bytes in both forms
            // (its signature is sound): the default separators always differ.
            let canonical = reference_impl::wire::jcs::canonicalize_serde(&v).unwrap_or_default();
            if text.as_bytes() == canonical.as_slice() {
                text = reference_impl::wire::pyjson::python_sorted_json(&v, false);
            }
            v["sender"]["signature"] = json!(reference_impl::wire::keys::b64url(
                &key.sign(text.as_bytes()).to_bytes()
            ));
        }
        ReplyMut::Stale(extra, future) => {
            let secs = 65 + i64::from(*extra % 3600);
            let at = now() + time::Duration::seconds(if *future { secs } else { -secs });
            v["timestamp"] = json!(format_timestamp(at));
            resign(&mut v);
        }
        ReplyMut::OtherRequest => {
            v["payload"]["request_id"] = json!(reference_impl::wire::new_id());
            resign(&mut v);
        }
        ReplyMut::OtherProtocol => {
            v["protocol"] = json!("agora/1.1");
            resign(&mut v);
        }
        ReplyMut::ReusedId => {
            v["id"] = v["payload"]["request_id"].clone();
            if v["type"] == "OFFER" {
                v["payload"]["offer_id"] = v["id"].clone();
            }
            resign(&mut v);
        }
        ReplyMut::LapsedTtl => {
            if v["type"] != "OFFER" {
                return out;
            }
            v["timestamp"] = json!(format_timestamp(now() - time::Duration::seconds(5)));
            v["payload"]["ttl"] = json!(1000);
            resign(&mut v);
        }
        ReplyMut::Respell(w) => return respell(&v, *w),
        ReplyMut::Bytes(edits) => return edit_bytes(out, edits),
        ReplyMut::Member(i, val) => {
            let k = ["cost", "ttl", "eta", "data", "status", "offer_id"][usize::from(*i) % 6];
            v["payload"][k] = val.json();
            resign(&mut v);
        }
    }
    wire(&v)
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let c: ClientCase = f.draw();
    let budget = 10.0;
    let cost = c.cost.cost();
    let on_result = c.negotiated && c.mutate_result;
    let ask = client_ask(&f.ctx, c.negotiated, budget);
    let answer = mutated_provider(
        &f.ctx,
        c.how.clone(),
        on_result,
        c.negotiated.then_some(cost),
    );
    let run = crate::counterparty::drive(
        &mut f.ctx,
        "request",
        &ask,
        answer,
        crate::suites::agora_v1::expect::defined,
    )
    .await?;
    crate::fuzzing::client::ended_well(&run)?;
    // Every message the client sent passes the shared checks.
    for x in &run.exchanges {
        let env = check_client_message(&mut f.ctx, &x.received)?;
        f.fuzzed(&x.received);
        if env.ty == "ACCEPT" {
            let offer: Value =
                serde_json::from_slice(&run.exchanges[0].answered).unwrap_or_default();
            if c.negotiated && !on_result && (c.how.must_refuse(true) || c.cost == CostDraw::Over) {
                let oracle = match c.how {
                    ReplyMut::Stale(..) => Oracle::Freshness,
                    ReplyMut::BadSignature | ReplyMut::NoSignature => Oracle::Signature,
                    _ => Oracle::Verdict,
                };
                return finding(
                    oracle,
                    format!("the requester ACCEPTed an OFFER it must refuse ({}, cost {cost} for a budget of {budget})", c.how),
                );
            }
            let named = accept_finding(&env, &offer).filter(|_| matches!(c.how, ReplyMut::None));
            first_failing(named.into_iter().collect())?;
        }
    }
    judge_outcome(&run, &c, on_result)
}

/// What the requester reported: never a success for a RESULT it must refuse, and a
/// valid exchange (the canonical form, another spelling of it, or a ttl that lapsed
/// only after the OFFER was taken) completes.
fn judge_outcome(
    run: &crate::counterparty::DriverRun,
    c: &ClientCase,
    on_result: bool,
) -> FuzzStep<()> {
    let took = !run.failed() && run.lines.iter().any(|l| l.get("result").is_some());
    let refused_result = if c.negotiated { on_result } else { true };
    if took && refused_result && c.how.must_refuse(false) {
        return finding(
            Oracle::Verdict,
            format!(
                "the requester reported success for a RESULT it must refuse ({})",
                c.how
            ),
        );
    }
    let plain = (matches!(c.how, ReplyMut::None | ReplyMut::Respell(_))
        || (matches!(c.how, ReplyMut::LapsedTtl) && (on_result || !c.negotiated)))
        && c.cost != CostDraw::Over;
    if plain && !took {
        // An OFFER of exactly the budget refused: the rule of AV1-055.
        let at_budget = if c.negotiated && c.cost == CostDraw::AtBudget {
            " for an OFFER costing exactly its budget (AV1-055)"
        } else {
            ""
        };
        let oracle = if matches!(c.how, ReplyMut::Respell(_)) {
            Oracle::WireForm
        } else {
            Oracle::ValidRejected
        };
        return finding(
            oracle,
            format!(
                "the requester did not complete a valid exchange ({}){at_budget}: {}; stdout: {}",
                c.how,
                run.ended(),
                crate::finding::clipped(run.stdout.trim(), 300)
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_kind_is_a_valid_echo() {
        assert!(matches!(Kind::default(), Kind::Valid(Template::Echo)));
    }

    fn reply(ty: &str, code: Option<i64>) -> Verdict {
        Verdict::Reply {
            ty: ty.into(),
            code,
        }
    }

    fn found(r: FuzzStep<()>) -> Option<Oracle> {
        match r {
            Err(crate::fuzzing::verdict::FuzzStop::Found(f)) => Some(f.oracle),
            _ => None,
        }
    }

    #[test]
    fn a_refusal_due_passes_silence_and_the_named_code_only() {
        let want: Want = Expected::Reject(Codes::OneOf(vec![401]));
        let o = (Oracle::Verdict, Oracle::Signature);
        assert_eq!(
            found(judge_reply("m", &want, &Verdict::Silence, None, o)),
            None
        );
        let err401 = reply("ERROR", Some(401));
        assert_eq!(found(judge_reply("m", &want, &err401, None, o)), None);
        let err400 = reply("ERROR", Some(400));
        assert_eq!(
            found(judge_reply("m", &want, &err400, None, o)),
            Some(Oracle::ErrorCode)
        );
        let carried = reply("RESULT", None);
        assert_eq!(
            found(judge_reply("m", &want, &carried, None, o)),
            Some(Oracle::Signature)
        );
    }

    #[test]
    fn a_valid_message_must_be_carried_out() {
        let want: Want = Expected::Accept(&["WELCOME"][..], Codes::none());
        let o = (Oracle::ValidRejected, Oracle::Verdict);
        assert_eq!(
            found(judge_reply("m", &want, &Verdict::Silence, None, o)),
            Some(Oracle::ValidRejected)
        );
        assert_eq!(
            found(judge_reply("m", &want, &reply("ERROR", Some(400)), None, o)),
            Some(Oracle::ValidRejected)
        );
        // Carried out, but without the reply read: not the type it must be.
        assert_eq!(
            found(judge_reply("m", &want, &reply("WELCOME", None), None, o)),
            Some(Oracle::ValidRejected)
        );
    }
}
