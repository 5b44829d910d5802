//! The client role: the checks of what a requesting agent sends (its messages, its
//! ACCEPT against the OFFER it saw), its cases, and its fuzzer (the provider's replies
//! edited).

use super::counterpart::{defined, mutated_provider, spoiled_provider, Provide, ReplyMut, Spoil};
use super::replies::check_reply;
use super::wire::Env;
use crate::case::{fail, fail_rows, Bindings, Case, Step, Stop};
use crate::drive::{Received, Transport};
use crate::finding::Finding;
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{finding, first_failing, FuzzFuture, FuzzStep, Oracle};
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use serde_json::{json, Value};

rules! {
    // (check_client_message), besides every rule above.
    SCHEMA_REQUEST {
        key: "agora-v1/schema:request:*",
        requirements: &["AV1-032", "AV1-033", "AV1-034", "AV1-035"],
        level: None,
        owner: "",
        summary: "a requester's REQUEST payload has resource (string), params (object), and optional budget (object) and timeout (integer ms)",
        fails: "a REQUEST payload the request schema rejects; the detail is the JSON pointer",
        passes: "a REQUEST payload the request schema validates",
    }
    SCHEMA_ACCEPT {
        key: "agora-v1/schema:accept:*",
        requirements: &["AV1-040", "AV1-041"],
        level: None,
        owner: "",
        summary: "a requester's ACCEPT payload has offer_id (string) and an optional payment_proof (string)",
        fails: "an ACCEPT payload the accept schema rejects; the detail is the JSON pointer",
        passes: "an ACCEPT payload the accept schema validates",
    }
    CLIENT_ID_REUSED {
        key: "agora-v1/client:id-reused",
        requirements: &["AV1-004"],
        level: None,
        owner: "",
        summary: "every message of a client has an id of its own",
        fails: "a client's message whose id an earlier message carried: another of its messages in the whole run (whichever case sent it), or through the proxy its own or the server's",
        passes: "a fresh id on every message",
    }
    // (accept_against_offer).
    CLIENT_ACCEPT_OFFER_ID {
        key: "agora-v1/client:accept-offer-id",
        requirements: &["AV1-040"],
        level: None,
        owner: "",
        summary: "a client's ACCEPT names the OFFER by the OFFER's envelope id",
        fails: "an ACCEPT whose offer_id is no OFFER's id the proxy saw (the REQUEST's id, say, as payload.request_id repeats it)",
        passes: "offer_id is the id of an OFFER the server sent",
    }
    CLIENT_ACCEPT_OVER_BUDGET {
        key: "agora-v1/client:accept-over-budget",
        requirements: &["AV1-029", "AV1-034"],
        level: None,
        owner: "",
        summary: "a client does not ACCEPT an OFFER over its REQUEST's budget",
        fails: "an ACCEPT of an OFFER whose cost is above the budget.max of the REQUEST it answers",
        passes: "ACCEPTs of OFFERs within the budget, or with no budget given",
    }
    CLIENT_ACCEPT_EXPIRED_OFFER {
        key: "agora-v1/client:accept-expired-offer",
        requirements: &["AV1-029", "AV1-039"],
        level: None,
        owner: "",
        summary: "a client does not ACCEPT an OFFER whose ttl has run out",
        fails: "an ACCEPT sent more than a second after the OFFER's timestamp plus its ttl (by the proxy's clock)",
        passes: "ACCEPTs within the OFFER's ttl",
    }
    CLIENT_NEGOTIATED {
        key: "agora-v1/client-negotiated",
        requirements: &["AV1-040"],
        level: None,
        owner: "agora-v1/client-negotiated",
        summary: "a requester's ACCEPT names the OFFER it accepts by the OFFER's id",
        fails: "an ACCEPT whose offer_id is not the id of the OFFER it answers",
        passes: "the OFFER's id",
    }
}

/// What a requester's ACCEPT `accept` of the OFFER `offer` (as served) breaks: it
/// names the OFFER by its id (the client-negotiated case's rule, AV1-040).
pub fn accept_finding(accept: &Env, offer: &Value) -> Option<Finding> {
    (accept.payload["offer_id"] != offer["id"]).then(|| {
        CLIENT_NEGOTIATED.found(format!(
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
        ctx.finding(CLIENT_ID_REUSED.found(format!(
            "the client's {} reuses id {:?}, which {first} carried first in this run",
            env.ty, env.id
        )));
    }
    let (schema, family) = match env.ty.as_str() {
        "REQUEST" => ("agora-v1/request", &SCHEMA_REQUEST),
        "ACCEPT" => ("agora-v1/accept", &SCHEMA_ACCEPT),
        _ => return Ok(env),
    };
    let found =
        crate::rules::schema_findings(&ctx.shared.schemas, schema, (RULES, family), &env.payload);
    for f in found {
        ctx.finding(f);
    }
    Ok(env)
}

/// An ACCEPT against the conversation the proxy saw: it names an OFFER the server
/// sent (by the OFFER's id, AV1-040), not one over the REQUEST's budget (AV1-034),
/// nor one whose ttl had run out when it was sent (AV1-039, a second's margin for
/// the OFFER's whole-second timestamp). Judged only when an OFFER went through the
/// proxy: a negotiation begun elsewhere says nothing.
pub(super) fn accept_against_offer(ctx: &mut Ctx, accept: &Env, h: &crate::exchange::History) {
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
        ctx.finding(CLIENT_ACCEPT_OFFER_ID.found(format!(
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
            ctx.finding(CLIENT_ACCEPT_OVER_BUDGET.found(format!("the client ACCEPTed offer {named} costing {cost}, over its REQUEST's budget of {max}")));
        }
    }
    let stamped = offer["timestamp"]
        .as_str()
        .and_then(|s| reference_impl::wire::clock::parse_timestamp(s).ok());
    if let (Some(at), Some(ttl)) = (stamped, offer["payload"]["ttl"].as_u64()) {
        let ends = at + time::Duration::milliseconds(ttl as i64) + time::Duration::seconds(1);
        if h.now > ends {
            ctx.finding(CLIENT_ACCEPT_EXPIRED_OFFER.found(format!(
                    "the client ACCEPTed offer {named}, stamped {} with a ttl of {ttl} ms, {} ms after its ttl ran out",
                    offer["timestamp"],
                    (h.now - ends).whole_milliseconds() + 1000
                )));
        }
    }
}

/// The requester's side (`run --role client`): the harness is the provider, the
/// client driver runs scenario `request` against it.
pub const CLIENT_CASES: &[Case] = &[
    client_case!(
        "client-direct",
        "the requester sends a well-formed, signed REQUEST and takes the RESULT",
        ["AV1-001", "AV1-016", "AV1-017", "AV1-028", "AV1-030", "AV1-032", "AV1-033"],
        Must,
        |ctx| {
            let ask = client_ask(ctx, false);
            let run = drive_requester(ctx, &ask, Provide::Direct).await?;
            let request = first_request(ctx, &run)?;
            if request.payload["resource"] != ask["resource"]
                || request.payload["params"] != ask["params"]
            {
                return fail(format!(
                    "the REQUEST asks for {} with {}, not the scenario's {} with {}",
                    request.payload["resource"],
                    request.payload["params"],
                    ask["resource"],
                    ask["params"]
                ));
            }
            ctx.checked("the REQUEST names the scenario's resource and params");
            completed(ctx, &run, &ask["params"])
        }
    ),
    client_case!(
        "client-negotiated",
        "the requester ACCEPTs an OFFER within its budget by the OFFER's id and takes the RESULT",
        ["AV1-029", "AV1-030", "AV1-040"],
        Fact,
        |ctx| {
            let ask = client_ask(ctx, true);
            let plan = Provide::Offer {
                cost: 5.0,
                stale: false,
                bad_signature: false,
            };
            let run = drive_requester(ctx, &ask, plan).await?;
            first_request(ctx, &run)?;
            let offer: serde_json::Value =
                serde_json::from_slice(&run.exchanges[0].answered).unwrap_or_default();
            let Some(accept) = run.exchanges.get(1) else {
                return fail(format!(
                    "the requester sent no ACCEPT for an OFFER within its budget; {}",
                    run.ended()
                ));
            };
            let accept = check_client_message(ctx, &accept.received)?;
            if accept.ty != "ACCEPT" {
                return fail(format!(
                    "after the OFFER the requester sent {}, not ACCEPT",
                    accept.ty
                ));
            }
            if let Some(f) = accept_finding(&accept, &offer) {
                return Err(Stop::Finding(f));
            }
            ctx.checked("the ACCEPT names the OFFER by its id");
            ids_unique(ctx, &run)?;
            completed(ctx, &run, &ask["params"])
        }
    ),
    client_case!(
        "client-refuses-offer-over-budget",
        "the requester does not ACCEPT an OFFER over its budget",
        ["AV1-029", "AV1-034"],
        Fact,
        |ctx| {
            let plan = Provide::Offer {
                cost: 20.0,
                stale: false,
                bad_signature: false,
            };
            offer_refused(ctx, plan, "an OFFER costing 20 over its budget of 10").await
        }
    ),
    client_case!(
        "client-accepts-offer-at-budget",
        "the requester ACCEPTs an OFFER whose cost equals its budget",
        ["AV1-029", "AV1-055"],
        Fact,
        |ctx| {
            let ask = client_ask(ctx, true);
            let budget = ask["budget"].as_f64().unwrap_or(10.0);
            // The twin within the budget first: a requester that ACCEPTs no OFFER
            // fails client-negotiated, and nothing is told here.
            let within = Provide::Offer {
                cost: budget / 2.0,
                stale: false,
                bad_signature: false,
            };
            let twin = drive_requester(ctx, &ask, within).await?;
            if !accepted_offer(&twin) || twin.failed() || !took_result(&twin, &ask["params"]) {
                ctx.note("the requester did not complete a task with an OFFER within its budget either (client-negotiated judges that)");
                return Err(Stop::Blocked(crate::finding::case_key(
                    "agora-v1/client-negotiated",
                    "",
                )));
            }
            ctx.control(format!("an OFFER costing {}, within its budget", budget / 2.0));
            let at_budget = Provide::Offer {
                cost: budget,
                stale: false,
                bad_signature: false,
            };
            let run = drive_requester(ctx, &ask, at_budget).await?;
            first_request(ctx, &run)?;
            if !accepted_offer(&run) {
                return fail(format!(
                    "the requester sent no ACCEPT for an OFFER costing exactly its budget of {budget}, as if the cost were over it (AV1-055); {}",
                    run.ended()
                ));
            }
            ctx.checked("the requester ACCEPTed an OFFER costing exactly its budget");
            completed(ctx, &run, &ask["params"])
        }
    ),
    client_case!(
        "client-refuses-bad-offer-signature",
        "the requester does not ACCEPT an OFFER whose signature does not verify",
        ["AV1-016", "AV1-017", "AV1-023", "AV1-029"],
        Must,
        |ctx| {
            let plan = Provide::Offer {
                cost: 5.0,
                stale: false,
                bad_signature: true,
            };
            offer_refused(ctx, plan, "an OFFER whose signature does not verify").await
        }
    ),
    client_case!(
        "client-refuses-stale-offer",
        "the requester does not ACCEPT an OFFER stamped outside the replay window",
        ["AV1-007", "AV1-029"],
        Must,
        |ctx| {
            let plan = Provide::Offer {
                cost: 5.0,
                stale: true,
                bad_signature: false,
            };
            offer_refused(ctx, plan, "an OFFER stamped two minutes ago, within its own ttl of 15 min").await
        }
    ),
    client_case!(
        "client-error-fails-the-task",
        "an ERROR ends the requester's task as failed",
        ["AV1-031"],
        Fact,
        |ctx| {
            // A requester that fails every task passes here only if it completes one.
            ctx.controlled_by("agora-v1/client-direct");
            let ask = client_ask(ctx, false);
            let run = drive_requester(ctx, &ask, Provide::Error(404)).await?;
            first_request(ctx, &run)?;
            if run.exchanges.len() > 1 {
                return fail("the requester went on after an ERROR");
            }
            if run.lines.iter().any(|l| l.get("result").is_some()) || !run.failed() {
                return fail(format!(
                    "the requester reported success after an ERROR 404: {}; stdout: {}",
                    run.ended(),
                    crate::finding::clipped(run.stdout.trim(), 300)
                ));
            }
            ctx.checked("the requester reported the task as failed");
            // An ERROR to its ACCEPT (a provider that knows the offer by another
            // id) fails the task too.
            let plan = Provide::Offer { cost: 5.0, stale: false, bad_signature: false };
            let ask = client_ask(ctx, true);
            let run = drive_spoiled(ctx, &ask, plan, Spoil::AcceptRefused).await?;
            first_request(ctx, &run)?;
            reported_failure(ctx, &run, "an ERROR 404 to its ACCEPT")
        }
    ),
    client_case!(
        "client-refuses-wrong-protocol",
        "the requester does not take a RESULT whose protocol is not agora/1.0",
        ["AV1-003"],
        Fact,
        |ctx| {
            result_refused(ctx, Spoil::ResultProtocol, "a RESULT with protocol \"agora/1.1\"").await
        }
    ),
    client_case!(
        "client-refuses-reused-id",
        "the requester does not take a RESULT that reuses its REQUEST's id",
        ["AV1-004"],
        Fact,
        |ctx| {
            result_refused(ctx, Spoil::ResultReusesId, "a RESULT whose id is the REQUEST's").await
        }
    ),
    client_case!(
        "client-refuses-foreign-offer",
        "the requester does not ACCEPT an OFFER that names another request",
        ["AV1-029", "AV1-037"],
        Fact,
        |ctx| {
            ctx.controlled_by("agora-v1/client-negotiated");
            let ask = client_ask(ctx, true);
            let plan = Provide::Offer { cost: 5.0, stale: false, bad_signature: false };
            let run = drive_spoiled(ctx, &ask, plan, Spoil::OfferNamesOther).await?;
            first_request(ctx, &run)?;
            refused(ctx, &run, "an OFFER whose request_id names another request")
        }
    ),
    client_case!(
        "client-refuses-foreign-result",
        "the requester does not take a RESULT whose request_id names its OFFER rather than its REQUEST",
        ["AV1-042"],
        Fact,
        |ctx| {
            ctx.controlled_by("agora-v1/client-negotiated");
            let ask = client_ask(ctx, true);
            let plan = Provide::Offer { cost: 5.0, stale: false, bad_signature: false };
            let run = drive_spoiled(ctx, &ask, plan, Spoil::ResultNamesOffer).await?;
            first_request(ctx, &run)?;
            reported_failure(ctx, &run, "a RESULT whose request_id names the OFFER")
        }
    ),
    client_case!(
        "client-refuses-expired-offer",
        "the requester does not ACCEPT an OFFER whose ttl has run out, though it is fresh",
        ["AV1-029", "AV1-039"],
        Fact,
        |ctx| {
            ctx.controlled_by("agora-v1/client-negotiated");
            let ask = client_ask(ctx, true);
            let plan = Provide::Offer { cost: 5.0, stale: false, bad_signature: false };
            let run = drive_spoiled(ctx, &ask, plan, Spoil::OfferExpired).await?;
            first_request(ctx, &run)?;
            refused(ctx, &run, "an OFFER stamped 5 s ago with a ttl of 1000 ms")
        }
    ),
    client_case!(
        "client-refuses-stale-result",
        "the requester does not take a RESULT stamped outside the replay window",
        ["AV1-007"],
        Must,
        |ctx| {
            result_refused(ctx, Spoil::ResultStale, "a RESULT stamped ten minutes ago").await
        }
    ),
    client_case!(
        "client-refuses-bad-result-signature",
        "the requester verifies the RESULT's signature over the RFC 8785 form: an empty signature, another key's, or one over insertion-order or sorted-key JSON (compact, or as json.dumps(sort_keys=True) writes it) is refused",
        ["AV1-016", "AV1-017", "AV1-023"],
        Must,
        |ctx| {
            let mut wrong = Vec::new();
            for (spoil, what) in [
                (Spoil::ResultUnsigned, "a RESULT with an empty signature"),
                (Spoil::ResultWrongKey, "a RESULT signed with a key other than its sender.id's"),
                (Spoil::ResultInsertionOrder, "a RESULT signed over its members in insertion order, and sent so"),
                (Spoil::ResultSortedKeys, "a RESULT signed over sorted-key JSON with its non-ASCII text escaped (\\u00e9), not RFC 8785"),
                (Spoil::ResultPythonDumps, "a RESULT signed over Python's json.dumps(sort_keys=True), with its \", \" and \": \" separators, not RFC 8785"),
            ] {
                let judged = result_refused(ctx, spoil, what).await;
                wrong.extend(ctx.row(judged)?);
            }
            fail_rows("spoiled RESULTs the requester took", &wrong)
        }
    ),
    client_case!(
        "client-reports-malformed-error",
        "a refusal in another shape (a bare {error, code} body, a string code, a nested payload.error) still fails the requester's task",
        ["AV1-031"],
        Fact,
        |ctx| {
            ctx.controlled_by("agora-v1/client-direct");
            let mut wrong = Vec::new();
            for (spoil, what) in [
                (Spoil::BareError, "a bare {\"error\", \"code\"} body with HTTP 401"),
                (Spoil::ErrorCodeString, "an ERROR whose code is the string \"403\""),
                (Spoil::ErrorNested, "an ERROR with HTTP 200 and payload.error {code, message}"),
            ] {
                let ask = client_ask(ctx, false);
                let run = drive_spoiled(ctx, &ask, Provide::Error(403), spoil).await?;
                let judged = first_request(ctx, &run).and_then(|_| reported_failure(ctx, &run, what));
                wrong.extend(ctx.row(judged)?);
            }
            fail_rows("refusals the requester did not report as failures", &wrong)
        }
    ),
];

/// Runs the requester's direct flow against a RESULT spoiled as `spoil` says: it
/// must not take it.
async fn result_refused(
    ctx: &mut crate::script::Ctx,
    spoil: Spoil,
    what: &str,
) -> crate::case::Step<()> {
    // A requester that takes no RESULT passes here only if it takes a sound one.
    ctx.controlled_by("agora-v1/client-direct");
    let ask = client_ask(ctx, false);
    let run = drive_spoiled(ctx, &ask, Provide::Direct, spoil).await?;
    first_request(ctx, &run)?;
    reported_failure(ctx, &run, what)
}

/// The requester's task failed at `what`: no result line, and a non-zero exit.
fn reported_failure(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
    what: &str,
) -> crate::case::Step<()> {
    run.took_nothing("the requester", "took", what)?;
    ctx.checked(format!(
        "the requester refused {what} and reported its task as failed"
    ));
    Ok(())
}

/// The scenario input of a client case: the profile's direct (or negotiated)
/// resource, params, and a budget of 10.
fn client_ask(ctx: &crate::script::Ctx, negotiated: bool) -> serde_json::Value {
    let p = &ctx.profile().agora_v1;
    let resource = if negotiated {
        &p.negotiated_resource
    } else {
        &p.direct_resource
    };
    // Non-ASCII text, where RFC 8785 and sorted-key JSON part ways (AV1-017).
    json!({"resource": resource, "params": {"text": "héllo from the harness, ça va"}, "budget": 10})
}

async fn drive_requester(
    ctx: &mut crate::script::Ctx,
    ask: &serde_json::Value,
    plan: Provide,
) -> crate::case::Step<crate::counterparty::DriverRun> {
    drive_spoiled(ctx, ask, plan, Spoil::None).await
}

async fn drive_spoiled(
    ctx: &mut crate::script::Ctx,
    ask: &serde_json::Value,
    plan: Provide,
    spoil: Spoil,
) -> crate::case::Step<crate::counterparty::DriverRun> {
    let answer = spoiled_provider(ctx.shared.key.clone(), plan, spoil);
    crate::counterparty::drive(ctx, "request", ask, answer, defined).await
}

/// The first message must be a well-formed REQUEST.
fn first_request(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
) -> crate::case::Step<Env> {
    let Some(first) = run.exchanges.first() else {
        return fail(format!(
            "the requester sent nothing; {}; stderr: {}",
            run.ended(),
            crate::finding::clipped(run.stderr.trim(), 300)
        ));
    };
    let env = check_client_message(ctx, &first.received)?;
    if env.ty != "REQUEST" {
        return fail(format!(
            "the requester's first message is {}, not REQUEST",
            env.ty
        ));
    }
    ctx.checked("the requester's first message is a REQUEST");
    Ok(env)
}

/// The task completed: the driver exited 0 and printed the RESULT's data.
fn completed(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
    data: &serde_json::Value,
) -> crate::case::Step<()> {
    if run.failed() {
        return fail(format!(
            "the requester did not complete the task: {}; stdout: {}",
            run.ended(),
            crate::finding::clipped(run.stdout.trim(), 300)
        ));
    }
    if !took_result(run, data) {
        return fail(format!(
            "the driver printed no result line with the RESULT's data {data}: {}",
            crate::finding::clipped(run.stdout.trim(), 300)
        ));
    }
    ctx.checked("the requester completed the task with the RESULT's data");
    Ok(())
}

/// Runs the requester against `plan` (an OFFER it must refuse): a REQUEST, and no
/// ACCEPT.
async fn offer_refused(
    ctx: &mut crate::script::Ctx,
    plan: Provide,
    what: &str,
) -> crate::case::Step<()> {
    // A requester that never ACCEPTs passes here only if it ACCEPTs a sound OFFER.
    ctx.controlled_by("agora-v1/client-negotiated");
    let ask = client_ask(ctx, true);
    let run = drive_requester(ctx, &ask, plan).await?;
    first_request(ctx, &run)?;
    refused(ctx, &run, what)
}

/// Whether the requester printed a result line with the RESULT's `data`.
fn took_result(run: &crate::counterparty::DriverRun, data: &serde_json::Value) -> bool {
    run.lines.iter().any(|l| l.get("result") == Some(data))
}

/// Whether the requester sent an ACCEPT after its REQUEST.
fn accepted_offer(run: &crate::counterparty::DriverRun) -> bool {
    run.sent().skip(1).any(|b| {
        serde_json::from_slice::<serde_json::Value>(b).is_ok_and(|v| v["type"] == "ACCEPT")
    })
}

/// The requester must not ACCEPT what it was offered.
fn refused(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
    what: &str,
) -> crate::case::Step<()> {
    if accepted_offer(run) {
        return fail(format!("the requester ACCEPTed {what}"));
    }
    ctx.checked(format!("the requester did not ACCEPT {what}"));
    if !run.failed() {
        ctx.note("the driver exited 0 although its client refused the offer");
    }
    Ok(())
}

/// Every message of the requester has an id of its own, unlike every other
/// message of the conversation, the provider's among them (AV1-004, AV1-A19).
pub(super) fn ids_unique(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
) -> crate::case::Step<()> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for x in &run.exchanges {
        for (bytes, who) in [(&x.received, "the requester"), (&x.answered, "the harness")] {
            let id = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|v| v["id"].as_str().map(String::from));
            let Some(id) = id else { continue };
            if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
                if who == "the requester" {
                    // The key the run-wide check gives (check_client_message):
                    // one finding for one reused id.
                    ctx.deviation(CLIENT_ID_REUSED.found(format!("the requester's message reuses id {id:?}, already used by {first} (AV1-004: an id is unique to its message)")));
                    return Ok(());
                }
            }
            seen.push((id, who));
        }
    }
    ctx.checked("every message of the requester has an id of its own");
    Ok(())
}

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the provider and serves
// mutated replies to the requester under test, through its client driver.

/// Fuzzing a requester: each case runs the client driver once against a provider
/// whose OFFER or RESULT is mutated. Oracles: a requester never ACCEPTs an OFFER it
/// must refuse (a signature that does not verify or is missing, a stale stamp, a
/// link to another request, a cost over its budget), never reports success for a
/// RESULT it must refuse, takes a respelled reply like its canonical form, names
/// the OFFER by its id, sends messages that pass the reply checks of
/// `replies::check_reply`, and neither crashes (an exit other than 0 or 1) nor hangs.
pub static CLIENT_SPEC: Spec = crate::fuzzing::client::spec(
    &[Transport::Http],
    client_case_fn,
    client_probe_fn,
    &[(
        "error-in-200-taken",
        "the fuzzer mutates OFFERs and RESULTs and never serves an ERROR; client-reports-malformed-error serves one with HTTP 200",
    )],
);

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

/// A plain direct request must complete.
fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let ask = fuzz_ask(&f.ctx, false, 10.0);
        let answer = mutated_provider(&f.ctx, ReplyMut::None, false, None);
        let run = crate::counterparty::drive(&mut f.ctx, "request", &ask, answer, defined).await?;
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

fn fuzz_ask(ctx: &crate::script::Ctx, negotiated: bool, budget: f64) -> Value {
    let p = &ctx.profile().agora_v1;
    let resource = if negotiated {
        &p.negotiated_resource
    } else {
        &p.direct_resource
    };
    // Non-ASCII text, where RFC 8785 and sorted-key JSON part ways (AV1-017).
    json!({"resource": resource, "params": {"text": "fuzz, ça va"}, "budget": budget})
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let c: ClientCase = f.draw();
    let budget = 10.0;
    let cost = c.cost.cost();
    let on_result = c.negotiated && c.mutate_result;
    let ask = fuzz_ask(&f.ctx, c.negotiated, budget);
    let answer = mutated_provider(
        &f.ctx,
        c.how.clone(),
        on_result,
        c.negotiated.then_some(cost),
    );
    let run = crate::counterparty::drive(&mut f.ctx, "request", &ask, answer, defined).await?;
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
