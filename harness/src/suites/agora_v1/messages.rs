//! Message definitions (agora-v1.md §4): REQUEST, OFFER, ACCEPT, RESULT and ERROR
//! payloads; the checks of an OFFER and a RESULT against their REQUEST, the cases of
//! payload members, HELLO and STATUS; and the fuzzer's messages (templates, field
//! changes, re-signing) with what the spec fixes for each.

use super::errors::{
    expect_processed, expect_rejection, read, refusal_of, CodeRule, Want, ANY_CODE, REFUSED,
};
use super::lifecycle::{accept_offer, complete_request, obtain_offer};
use super::wire::{
    message, message_at, now, request_payload, request_with, send, sign_with, wire, ANY,
};
use crate::case::{fail_rows, Case};
use crate::fuzzing::mutate::Val;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{Codes, Expected, FuzzFinding, FuzzStep, FuzzStop, Oracle};
use crate::rules::rules;
use arbitrary::Arbitrary;
use reference_impl::agora_v1::envelope::{SigVariant, STATES};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use serde_json::{json, Value};

rules! {
    // send_accept).
    REJECT_BAD_TIMEOUT {
        key: "agora-v1/reject-bad-timeout",
        requirements: &["AV1-035"],
        level: None,
        owner: "agora-v1/reject-bad-timeout",
        summary: "a REQUEST with timeout \"10s\" or 1.5 draws ERROR 400",
        fails: "one or both were processed or refused with another code (each named)",
        passes: "ERROR 400 for each",
    }
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "hello-welcome",
        "HELLO is a known type and is answered with WELCOME listing the resources",
        ["AV1-011"],
        Profile,
        ANY,
        false,
        |ctx| {
            let hello = message(ctx, "HELLO", json!({}));
            let r = send(ctx, hello).await?;
            let env = expect_processed(ctx, &r, &["WELCOME"]).await?;
            let mut wrong = Vec::new();
            if let Err(e) = ctx.shared.schemas.check("agora-v1/welcome", &env.payload) {
                wrong.push(format!("WELCOME payload: {e}"));
            }
            let resources = env.payload["resources"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let direct = ctx.profile().agora_v1.direct_resource.clone();
            if !resources
                .iter()
                .any(|r| r.as_str() == Some(direct.as_str()))
            {
                wrong.push(format!(
                    "WELCOME.resources {} does not list the direct resource {}",
                    json!(resources),
                    json!(direct)
                ));
            }
            fail_rows("the WELCOME reply is not the spec's", &wrong)
        }
    ),
    case!(
        "status-query",
        "STATUS for a completed request reports a state from the spec's list",
        ["AV1-011"],
        Profile,
        ANY,
        false,
        |ctx| {
            let (req_id, _) = complete_request(ctx, json!({})).await?;
            let st = message(ctx, "STATUS", json!({"request_id": req_id}));
            let r = send(ctx, st).await?;
            let env = expect_processed(ctx, &r, &["STATUS"]).await?;
            let mut wrong = Vec::new();
            if let Err(e) = ctx.shared.schemas.check("agora-v1/status", &env.payload) {
                wrong.push(format!("STATUS payload: {e}"));
            }
            let state = env.str("state").unwrap_or_default().to_string();
            if !STATES.contains(&state.as_str()) {
                wrong.push(format!("STATUS.state {state:?} is not one of {STATES:?}"));
            } else if state != "COMPLETED" {
                ctx.warn(format!(
                    "a request answered with a RESULT is reported as {state}, not COMPLETED"
                ));
            }
            if env.str("request_id") != Some(req_id.as_str()) {
                wrong.push(format!(
                    "STATUS.request_id is {}, not the request asked about ({req_id:?})",
                    env.payload["request_id"]
                ));
            }
            fail_rows("the STATUS reply is not the spec's", &wrong)
        }
    ),
    case!(
        "reject-bad-payment-proof",
        "an ACCEPT with payment_proof 123 draws ERROR 400",
        ["AV1-041"],
        Fact,
        ANY,
        false,
        |ctx| {
            let (_, mut offer) = obtain_offer(ctx).await?;
            let r = accept_offer(ctx, &mut offer, json!({"payment_proof": 123})).await?;
            expect_rejection(
                ctx,
                &r,
                &[400],
                CodeRule::Strict,
                "payment_proof as a number",
            )
            .await
        }
    ),
    case!(
        "reject-bad-resource",
        "a REQUEST without resource, or with resource 42, draws ERROR 400",
        ["AV1-032"],
        Fact,
        ANY,
        false,
        |ctx| {
            let req = request_with(ctx, |p| {
                if let Some(o) = p.as_object_mut() {
                    o.remove("resource");
                }
            });
            let r = send(ctx, req).await?;
            expect_rejection(ctx, &r, &[400], CodeRule::Strict, "no resource").await?;
            let req = request_with(ctx, |p| p["resource"] = json!(42));
            let r = send(ctx, req).await?;
            expect_rejection(ctx, &r, &[400], CodeRule::Strict, "resource 42").await
        }
    ),
    case!(
        "reject-params-string",
        "a REQUEST whose params is a string draws ERROR 400",
        ["AV1-033"],
        Fact,
        ANY,
        false,
        |ctx| {
            let req = request_with(ctx, |p| p["params"] = json!("text=hi"));
            let r = send(ctx, req).await?;
            expect_rejection(ctx, &r, &[400], CodeRule::Strict, "params as a string").await
        }
    ),
    case!(
        "reject-budget-number",
        "a REQUEST with budget 5 (not an object) draws ERROR 400; no budget is fine",
        ["AV1-034"],
        Fact,
        ANY,
        false,
        |ctx| {
            let req = request_with(ctx, |p| p["budget"] = json!(5));
            let r = send(ctx, req).await?;
            expect_rejection(ctx, &r, &[400], CodeRule::Strict, "budget as a number").await?;
            complete_request(ctx, json!({})).await.map(|_| ())
        }
    ),
    case!(
        "reject-bad-timeout",
        "timeout \"10s\" or 1.5 draws ERROR 400; an omitted timeout is fine",
        ["AV1-035"],
        Fact,
        ANY,
        false,
        |ctx| {
            let mut wrong = Vec::new();
            for bad in [json!("10s"), json!(1.5)] {
                let req = request_with(ctx, |p| p["timeout"] = bad.clone());
                let r = send(ctx, req).await?;
                let judged =
                    expect_rejection(ctx, &r, &[400], CodeRule::Strict, &format!("timeout {bad}"))
                        .await;
                wrong.extend(ctx.row(judged)?);
            }
            ctx.rows_wrong(
                &REJECT_BAD_TIMEOUT,
                "bad timeouts were not refused with ERROR 400",
                &wrong,
            );
            let req = request_with(ctx, |p| p["timeout"] = json!(10000));
            let r = send(ctx, req).await?;
            expect_processed(ctx, &r, &["RESULT", "OFFER"])
                .await
                .map(|_| ())
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum Template {
    #[default]
    Echo,
    Quote,
    Hello,
    Status,
    AcceptUnknown,
    UnknownResource,
}

#[derive(Debug, Clone, Arbitrary)]
pub(super) enum FieldMut {
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

const PAYLOAD_KEYS: [&str; 6] = [
    "resource",
    "params",
    "budget",
    "timeout",
    "offer_id",
    "request_id",
];

const DRAWN_TYPES: [&str; 10] = [
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
pub(super) fn signed(f: &mut FuzzCtx, t: Template) -> FuzzStep<Value> {
    signed_at(f, t, now())
}

pub(super) fn signed_at(f: &mut FuzzCtx, t: Template, at: time::OffsetDateTime) -> FuzzStep<Value> {
    let mut m = template(f, t, at);
    sign_with(&mut m, &f.ctx.shared.key, SigVariant::Blank)?;
    Ok(m)
}

pub(super) fn apply(m: &mut Value, f: &FieldMut) {
    match f {
        FieldMut::Protocol(i) => {
            m["protocol"] = json!(["agora/1.1", "agora/2.0", "", "AGORA/1.0"][usize::from(*i) % 4])
        }
        FieldMut::Type(i) => m["type"] = json!(DRAWN_TYPES[usize::from(*i) % DRAWN_TYPES.len()]),
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

/// The conformance case whose subject a re-signed field change is, where one case
/// sends that field wrong: a protocol other than agora/1.0, a type the spec does not
/// name, a payload member of the wrong kind.
pub(super) fn field_subject(mu: &FieldMut) -> Option<&'static str> {
    let payload = |k: &str| match k {
        "resource" => Some("agora-v1/reject-bad-resource"),
        "params" => Some("agora-v1/reject-params-string"),
        "budget" => Some("agora-v1/reject-budget-number"),
        "timeout" => Some(REJECT_BAD_TIMEOUT.key),
        _ => None,
    };
    // RemoveTop(i) removes ["protocol", "id", "timestamp", "type", "payload"][i % 5].
    let removed = |want: u8| matches!(mu, FieldMut::RemoveTop(i) if i % 5 == want);
    match mu {
        FieldMut::Protocol(_) => Some("agora-v1/reject-wrong-protocol"),
        _ if removed(0) => Some("agora-v1/reject-wrong-protocol"),
        FieldMut::Type(_) | FieldMut::LowercaseType => Some("agora-v1/reject-unknown-type"),
        _ if removed(3) => Some("agora-v1/reject-unknown-type"),
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

/// A message to send: its bytes, what the spec fixes for it, and the oracles of a
/// valid message refused and of an invalid one carried out.
pub(super) type ToSend = (Vec<u8>, Want, (Oracle, Oracle));

/// A valid message of a template, and what it must draw.
pub(super) fn valid(f: &mut FuzzCtx, t: Template) -> FuzzStep<ToSend> {
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
pub(super) fn resigned(f: &mut FuzzCtx, t: Template, mu: &FieldMut) -> FuzzStep<ToSend> {
    let mut m = template(f, t, now());
    apply(&mut m, mu);
    sign_with(&mut m, &f.ctx.shared.key, SigVariant::Blank)?;
    let want = if f.ctx.shared.schemas.check("agora-v1/envelope", &m).is_ok() {
        Expected::Open("a re-signed message that keeps the schemas may be accepted".into())
    } else {
        Expected::Reject(ANY_CODE)
    };
    Ok((wire(&m), want, (Oracle::Verdict, Oracle::InvalidAccepted)))
}

/// A refusal found wrong (a wrong code to a message due a coded refusal, a HELLO
/// refused) counts only beside a control the target carries out, as in `run`: a
/// valid REQUEST is sent after it, and when that is refused too, its refusal is the
/// finding (`refused:<code>:<words>`), as a refused control blocks the case in
/// `run` (a throttled control, ERROR 429, judges nothing: the case is skipped). The
/// finding is logged before the control goes out, so that its crash file
/// keeps the fuzzed message, not the control, as its input. A refusal finding, or
/// one no rule keys, is left as it is.
pub(super) async fn controlled(f: &mut FuzzCtx, judged: FuzzStep<()>) -> FuzzStep<()> {
    let Err(FuzzStop::Found(found)) = judged else {
        return judged;
    };
    let refusal = matches!(found.oracle, Oracle::ErrorCode | Oracle::ValidRejected);
    let Some(key) = found
        .key
        .clone()
        .filter(|k| refusal && !REFUSED.matches("agora-v1", k))
    else {
        return Err(FuzzStop::Found(found));
    };
    f.ctx.checked(format!(
        "finding {key} (fail): {}; a valid REQUEST follows as the control",
        found.detail
    ));
    let probe = signed(f, Template::Echo)?;
    if let Some(id) = probe["id"].as_str() {
        f.ctx.sent_ids.insert(id.to_string());
    }
    let r = f.ctx.send_bytes(wire(&probe)).await?;
    match read(f, &r)? {
        // Throttled: the control proves nothing either way, so neither does the
        // refusal before it.
        (_, Some(e)) if e.ty == "ERROR" && e.error_code() == Some(429) => crate::fuzzing::verdict::skip(
            "the control after a refusal found wrong was throttled (ERROR 429); the refusal cannot be judged",
        ),
        (_, Some(e)) if e.ty == "ERROR" => {
            let what = "a valid REQUEST for the direct resource (the control)";
            let refusal = refusal_of(&e, what);
            Err(FuzzStop::Found(FuzzFinding {
                oracle: Oracle::ValidRejected,
                detail: format!(
                    "{}; the fuzzed message before it: {}",
                    refusal.summary, found.detail
                ),
                key: Some(refusal.key.to_string()),
            }))
        }
        _ => Err(FuzzStop::Found(found)),
    }
}
