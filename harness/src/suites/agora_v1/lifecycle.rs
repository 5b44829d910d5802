//! The request lifecycle (agora-v1.md §3): the direct flow and the negotiated flow
//! (REQUEST, OFFER, ACCEPT, RESULT), offers accepted, expired, unknown or twice; their
//! cases, and the fuzzer's negotiations.

use super::errors::{
    control, exchange, expect_baseline, expect_error, expect_processed, expect_rejection,
    expect_reply, expect_type, judge_reply, read, refused_as_unknown, refused_valid, CodeRule,
    ANY_CODE,
};
use super::replies::SCHEMA_OFFER;
use super::wire::{
    from_other_sender, message, message_at, now, offer_ref, peek_error_code, request_payload, send,
    send_as_is, sign_with, wire, Env, ANY,
};
use crate::case::{fail, skip, Bindings, Case, Level, Step};
use crate::drive::{Received, Transport};
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{under, Codes, Expected, FuzzStep, Oracle};
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use reference_impl::agora_v1::envelope::SigVariant;
use serde_json::{json, Value};
use std::time::Duration;

rules! {
    RESULT_REQUEST_ID_AFTER_ACCEPT {
        key: "agora-v1/result:request-id-after-accept",
        requirements: &["AV1-042"],
        level: None,
        owner: "agora-v1/negotiated-flow",
        summary: "after an ACCEPT, RESULT.request_id is the original REQUEST's id, not the OFFER's or the ACCEPT's",
        fails: "a RESULT ending a negotiated flow whose request_id names the OFFER, the ACCEPT or another message",
        passes: "RESULT.request_id equal to the REQUEST's id",
    }
    BUDGET_TOO_LOW_EXACT_BUDGET {
        key: "agora-v1/budget-too-low:exact-budget",
        requirements: &["AV1-055"],
        level: None,
        owner: "agora-v1/budget-too-low",
        summary: "a REQUEST whose budget.max equals the cost is answered like one that covers it (derived: only a budget below the cost is too low)",
        fails: "a REQUEST whose budget.max equals the offered cost is refused (ERROR 402 or another error)",
        passes: "an OFFER or a RESULT to the REQUEST with the exact budget",
    }
    RESULT_REQUEST_ID {
        key: "agora-v1/result:request-id",
        requirements: &["AV1-042"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "in the direct flow, RESULT.request_id is the REQUEST's id",
        fails: "a RESULT answering a REQUEST directly whose request_id names another message",
        passes: "RESULT.request_id equal to the REQUEST's id",
    }
    OFFER_REQUEST_ID {
        key: "agora-v1/offer:request-id",
        requirements: &["AV1-037"],
        level: None,
        owner: "agora-v1/negotiated-flow",
        summary: "OFFER.request_id is the id of the REQUEST it answers",
        fails: "an OFFER whose request_id names another message",
        passes: "OFFER.request_id equal to the REQUEST's id",
    }
    OFFER_ID_SOURCE {
        key: "agora-v1/offer:id-source",
        requirements: &["AV1-040", "AV1-A11"],
        level: Some(Level::Profile),
        owner: "agora-v1/negotiated-flow",
        summary: "an ACCEPT naming an OFFER by the id the profile says (its envelope id, AV1-A11) is taken",
        fails: "the target refuses an ACCEPT quoting the profile's offer id and takes one quoting the other (payload.offer_id or envelope id); set [agora-v1] offer_id",
        passes: "the ACCEPT quoting the profile's offer id is taken",
    }
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
        OFFER_ID_SOURCE.found(format!(
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
                &RESULT_REQUEST_ID_AFTER_ACCEPT
            } else {
                &RESULT_REQUEST_ID
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
        Some(linked) if linked != req_id => ctx.finding(OFFER_REQUEST_ID.found(format!(
            "OFFER.request_id is {linked:?}, not the REQUEST's id {req_id:?}"
        ))),
        Some(_) => ctx.checked("OFFER links to the REQUEST"),
        None => {}
    }
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("echo-direct", "REQUEST for the direct resource completes with a well-formed, signed RESULT echoing the params",
        ["AV1-001", "AV1-002", "AV1-003", "AV1-009", "AV1-010", "AV1-012", "AV1-014", "AV1-015", "AV1-016", "AV1-017", "AV1-019", "AV1-020", "AV1-026", "AV1-042", "AV1-043", "AV1-044", "AV1-054"],
        Must, ANY, false, |ctx| {
        // The envelope, signature and RESULT payload rules are judged by check_reply,
        // whose findings this case owns; its own subject here is the echo.
        let params = json!({"text": "hello", "n": 3});
        let (_, result) = complete_request(ctx, params.clone()).await?;
        if !result.data().is_object() {
            // The RESULT schema's finding (owned here) says what the output is.
            ctx.note(format!("the RESULT output is {}, not an object: the echo is not compared", result.data()));
            return Ok(());
        }
        if *result.data() != params {
            return fail(format!("the echo fixture's RESULT output is {}, not the params {params}", result.data()));
        }
        if let Some((variant, form)) = result.verified {
            ctx.checked(format!("reply signed as {variant} with key form {form}"));
        }
        Ok(())
    }),
    case!("negotiated-flow", "REQUEST → OFFER → ACCEPT → RESULT for the negotiated resource", ["AV1-025", "AV1-037", "AV1-038", "AV1-040", "AV1-042"], Profile, ANY, false, |ctx| {
        let (req_id, mut offer) = obtain_offer(ctx).await?;
        let r = accept_offer(ctx, &mut offer, json!({})).await?;
        let result = expect_processed(ctx, &r, &["RESULT"]).await?;
        check_result(ctx, &result, &req_id, true);
        Ok(())
    }),
    case!("no-result-without-accept", "an OFFER never accepted yields no RESULT", ["AV1-027"], Fact, Bindings::Only(Transport::Ws), false, |ctx| {
        let (_, offer) = obtain_offer(ctx).await?;
        let ttl = offer.payload["ttl"].as_u64().unwrap_or(0);
        let max = ctx.profile().timing.offer_wait_max_ms;
        let wait = (ttl + 500).min(max);
        ctx.note(format!("listening {wait} ms for an unsolicited message"));
        if let Some(b) = ctx.listen(Duration::from_millis(wait)).await? {
            let r = Received::Frame(b);
            let env = expect_reply(ctx, &r)?;
            if env.ty == "RESULT" {
                return fail("a RESULT arrived for an offer that was never accepted");
            }
        }
        Ok(())
    }),
    case!("offer-expiry", "an ACCEPT after the offer's ttl draws ERROR 408 and no RESULT", ["AV1-039", "AV1-050"], Fact, ANY, false, |ctx| {
        let (_, mut offer) = obtain_offer(ctx).await?;
        let Some(ttl) = offer.payload["ttl"].as_u64() else {
            // The OFFER schema's finding says what the ttl is; without it there is
            // no expiry to wait for.
            let f = ctx.findings().iter().find(|m| m.finding.rule.is_some_and(|r| *r == SCHEMA_OFFER) && m.finding.detail().starts_with("/ttl")).map(|m| m.finding.clone());
            return match f {
                Some(f) => Err(ctx.block(f)),
                None => skip(format!("the OFFER's ttl is {}, not a number of ms", offer.payload["ttl"])),
            };
        };
        let max = ctx.profile().timing.offer_wait_max_ms;
        let margin = 300;
        if ttl + margin > max {
            return skip(format!("the offer ttl is {ttl} ms; waiting it out exceeds offer_wait_max_ms = {max}"));
        }
        // A second offer, accepted late only after another quote REQUEST: a target
        // that forgets expired offers on a new REQUEST answers it 404, not 408.
        let (_, mut second) = obtain_offer(ctx).await?;
        ctx.note(format!("waiting {} ms for the offers to expire", ttl + margin));
        tokio::time::sleep(Duration::from_millis(ttl + margin)).await;
        let r = accept_offer_late(ctx, &mut offer).await?;
        expect_error(ctx, &r, 408)?;
        ctx.note("another quote REQUEST, then a late ACCEPT of the second offer");
        obtain_offer(ctx).await?;
        let r = accept_offer_late(ctx, &mut second).await?;
        expect_error(ctx, &r, 408).map(|_| ())
    }),
    case!("accept-unknown-offer", "an ACCEPT naming an unknown offer draws ERROR 400 or 404", ["AV1-040"], Fact, ANY, false, |ctx| {
        let accept = message(ctx, "ACCEPT", json!({"offer_id": reference_impl::wire::new_id()}));
        let r = send(ctx, accept).await?;
        expect_rejection(ctx, &r, &[400, 404], CodeRule::Strict, "ACCEPT of an unknown offer").await
    }),
    case!("accept-only-requester", "an ACCEPT of an offer from another sender than the requester is refused (derived: the offer is the requester's, agora-v1.md section 3)", ["AV1-040"], Fact, ANY, false, |ctx| {
        let (_, mut offer) = obtain_offer(ctx).await?;
        let theirs = from_other_sender(ctx, "ACCEPT", json!({"offer_id": offer_ref(ctx, &offer)}))?;
        let r = send_as_is(ctx, &theirs).await?;
        expect_rejection(ctx, &r, &[400, 401, 404], CodeRule::Lenient, "an ACCEPT of the requester's offer from another sender").await?;
        // The refusal took nothing from the requester: its own ACCEPT is carried out.
        let r = accept_offer(ctx, &mut offer, json!({})).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty != "RESULT" {
            ctx.note(format!("the requester's own ACCEPT of the offer, after another sender's was refused, drew {}", env.said()));
        }
        Ok(())
    }),
    case!("ids-per-sender", "a REQUEST whose id another sender used first is carried out (derived: a message id is its sender's, AV1-004; another sender cannot make it a replay)", ["AV1-004", "AV1-008"], Fact, ANY, false, |ctx| {
        let resource = ctx.profile().agora_v1.direct_resource.clone();
        let theirs = from_other_sender(ctx, "REQUEST", request_payload(&resource, json!({"text": "first"})))?;
        let id = theirs["id"].clone();
        let r = send_as_is(ctx, &theirs).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty == "ERROR" {
            return skip(format!("a valid REQUEST from a second sender drew {}: the target takes no second sender, so an id it used cannot be judged", env.said()));
        }
        let mut mine = message(ctx, "REQUEST", request_payload(&resource, json!({"text": "second"})));
        mine["id"] = id.clone();
        let r = send(ctx, mine).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty == "ERROR" {
            // Refused for the id only if the same sender's fresh REQUEST is taken.
            control(ctx).await?;
            return fail(format!("a valid REQUEST whose id {id} another sender had used first drew {}: another sender made it a replay (AV1-004, AV1-008)", env.said()));
        }
        ctx.checked(format!("a REQUEST with an id another sender used first drew {}", env.ty));
        Ok(())
    }),
    case!("accept-twice", "a second ACCEPT of the same offer is rejected", ["AV1-040"], Profile, ANY, false, |ctx| {
        let (_, mut offer) = obtain_offer(ctx).await?;
        let r = accept_offer(ctx, &mut offer, json!({})).await?;
        expect_processed(ctx, &r, &["RESULT"]).await?;
        let again = message(ctx, "ACCEPT", json!({"offer_id": offer_ref(ctx, &offer)}));
        let r = send(ctx, again).await?;
        expect_rejection(ctx, &r, &[400, 404], CodeRule::Strict, "second ACCEPT of one offer").await
    }),
    case!("budget-too-low", "a REQUEST whose budget.max is below the negotiated resource's cost draws ERROR 402; one equal to the cost covers it", ["AV1-048", "AV1-055"], Profile, ANY, false, |ctx| {
        let resource = ctx.profile().agora_v1.negotiated_resource.clone();
        let (_, offer) = obtain_offer(ctx).await?;
        let cost = offer.payload["cost"].as_f64().unwrap_or(0.0);
        if cost <= 0.0 {
            return skip(format!("the negotiated resource costs {cost}; no budget can be below it"));
        }
        // The valid twin: a budget that covers the cost is optional and fine (AV1-034).
        let enough = message(ctx, "REQUEST", json!({"resource": resource, "params": {}, "budget": {"max": cost * 2.0}}));
        let r = send(ctx, enough).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty != "OFFER" && env.ty != "RESULT" {
            return fail(format!("a REQUEST whose budget.max {} covers the cost {cost} drew {} (AV1-034)", cost * 2.0, env.said()));
        }
        ctx.control(format!("a REQUEST whose budget covers the cost (answered {})", env.ty));
        // A budget of exactly the cost is not below it (AV1-055, derived).
        let exact = message(ctx, "REQUEST", json!({"resource": resource, "params": {}, "budget": {"max": cost}}));
        let r = send(ctx, exact).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty != "OFFER" && env.ty != "RESULT" {
            ctx.deviation(BUDGET_TOO_LOW_EXACT_BUDGET.found(format!("a REQUEST whose budget.max equals the cost {cost} drew {}, as if it were below it", env.said())));
        }
        let req = message(ctx, "REQUEST", json!({"resource": resource, "params": {}, "budget": {"max": cost / 2.0}}));
        let r = send(ctx, req).await?;
        expect_error(ctx, &r, 402).map(|_| ())
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// What a negotiated-flow case does after its REQUEST drew an OFFER.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub(super) enum Negotiation {
    /// ACCEPT: a RESULT that names the REQUEST (AV1-036).
    Accept,
    /// ACCEPT twice: the second is rejected.
    AcceptTwice,
    /// The same signed REQUEST again: rejected as a replay (AV1-012).
    ReplayRequest,
    /// A new REQUEST whose budget is below the offered cost: ERROR 402.
    BudgetBelowCost,
    /// Another sender ACCEPTs the offer: refused (the accept-only-requester case).
    AcceptAsOther,
    /// Another sender uses a fresh id first; the case's REQUEST with that id is
    /// still carried out (the ids-per-sender case).
    IdTakenByOther,
}

/// Another sender ACCEPTs `offer`: refused, as the accept-only-requester case
/// judges it.
async fn accept_as_other(f: &mut FuzzCtx, offer: &Env) -> FuzzStep<()> {
    let theirs = from_other_sender(
        &f.ctx,
        "ACCEPT",
        json!({"offer_id": offer_ref(&f.ctx, offer)}),
    )?;
    let (v, env) = exchange(f, wire(&theirs)).await?;
    let what = "an ACCEPT of the offer from another sender than the requester";
    let refused = Expected::Reject(ANY_CODE);
    let plain = (Oracle::Verdict, Oracle::Verdict);
    let judged = judge_reply(what, &refused, &v, env.as_ref(), plain);
    under(Some("agora-v1/accept-only-requester"), judged)
}

/// Another sender uses a fresh id first; a REQUEST of the harness's key with that
/// id is then carried out, as the ids-per-sender case judges it.
async fn id_taken_by_other(f: &mut FuzzCtx) -> FuzzStep<()> {
    let direct = f.ctx.profile().agora_v1.direct_resource.clone();
    let payload = request_payload(&direct, json!({"text": "first"}));
    let theirs = from_other_sender(&f.ctx, "REQUEST", payload.clone())?;
    let (_, env) = exchange(f, wire(&theirs)).await?;
    if env.as_ref().is_none_or(|e| e.ty == "ERROR") {
        // The target takes no second sender: nothing to judge.
        return Ok(());
    }
    let mut mine = message_at(&f.ctx, "REQUEST", payload, now());
    mine["id"] = theirs["id"].clone();
    sign_with(&mut mine, &f.ctx.shared.key, SigVariant::Blank)?;
    let (v, env) = exchange(f, wire(&mine)).await?;
    let carried = Expected::Accept(&["OFFER", "RESULT"][..], Codes::none());
    let what = "a REQUEST whose id another sender used first";
    let plain = (Oracle::Verdict, Oracle::Verdict);
    let judged = judge_reply(what, &carried, &v, env.as_ref(), plain);
    under(Some("agora-v1/ids-per-sender"), judged)
}

/// The negotiated flow: a REQUEST for the negotiated resource must draw an OFFER
/// linked to it; then one step of the flow is bent.
pub(super) async fn negotiate(f: &mut FuzzCtx, n: Negotiation) -> FuzzStep<()> {
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
    let what = "a valid REQUEST for the negotiated resource";
    let judged = judge_reply(
        what,
        &offered,
        &v,
        env.as_ref(),
        (Oracle::ValidRejected, Oracle::Verdict),
    );
    refused_valid(judged, env.as_ref(), what)?;
    let Some(mut offer) = env else {
        return Ok(());
    };
    check_offer(&mut f.ctx, &offer, &req_id);
    let refused = Expected::Reject(ANY_CODE);
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
        Negotiation::AcceptAsOther => accept_as_other(f, &offer).await,
        Negotiation::IdTakenByOther => id_taken_by_other(f).await,
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
