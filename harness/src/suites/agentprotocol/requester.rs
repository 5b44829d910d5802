//! The client role: the checks of what a requesting agent sends, its cases, and its
//! fuzzer (the peer's replies edited).

use super::counterpart::{defined, peer, PeerPlan, PeerSpoil, CLIENT_PLAIN, PLAIN};
use super::replies::read_reply;
use super::wire::Asked;
use crate::case::{fail, fail_rows, Bindings, Case, Level, Step};
use crate::drive::Transport;
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{self, finding, FuzzFuture, FuzzStep, Oracle};
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use reference_impl::agentprotocol::message;
use serde_json::{json, Value};
use std::collections::HashSet;

rules! {
    CLIENT_ID_REUSED {
        key: "agentprotocol/client:id-reused",
        requirements: &["AGP-003"],
        level: None,
        owner: "",
        summary: "every message of a client has an id of its own",
        fails: "a client's message whose id an earlier message carried: another of its messages in the whole run (whichever case sent it), or through the proxy its hello's, say, or the server's",
        passes: "a fresh id on every message",
    }
    CLIENT_CORRELATION_REUSED {
        key: "agentprotocol/client:correlation-reused",
        requirements: &["AGP-019", "AGP-A7"],
        level: Some(Level::Should),
        owner: "",
        summary: "every request of a client has a correlationId of its own",
        fails: "a client's request whose correlationId an earlier request of its run carried (a warning: the spec is silent on duplicates, AGP-A7)",
        passes: "a fresh correlationId on every request",
    }
}

/// Judges a message the client under test sent with the rules of [`read_reply`]
/// (members, protocol, id, timestamp, signature, the type's payload).
pub fn check_client_message(ctx: &mut Ctx, bytes: &[u8]) -> Step<Value> {
    let before = ctx.findings().len();
    let read = read_reply(ctx, bytes, None, &Asked::default(), &mut HashSet::new());
    ctx.reword_since(before, "client's message");
    let m = read?;
    unique_across_run(ctx, &m, bytes);
    Ok(m)
}

/// A client's message id, and a request's correlationId, that another message of
/// the client carried in the whole run ([`Ctx::reused`]): a message id is unique
/// to its message (AGP-003); a correlationId matches one request's answer
/// (AGP-019; its reuse is a warning, the spec silent on duplicates, AGP-A7).
fn unique_across_run(ctx: &mut Ctx, m: &Value, bytes: &[u8]) {
    if let Some(id) = m["id"].as_str() {
        if let Some(first) = ctx.reused("message id", id, bytes) {
            ctx.finding(CLIENT_ID_REUSED.found(format!(
                "the client's {} message reuses id {id:?}, which {first} carried first in this run",
                m["type"]
            )));
        }
    }
    if m["type"] != "request" {
        return;
    }
    if let Some(c) = m["payload"]["correlationId"].as_str() {
        if let Some(first) = ctx.reused("correlationId", c, bytes) {
            ctx.finding(
                CLIENT_CORRELATION_REUSED.found(format!(
                        "the client's request reuses correlationId {c:?}, which {first} carried first in this run: an answer to one cannot be told from an answer to the other"
                    )),
            );
        }
    }
}

/// The requester's side (`run --role client`): the harness is the peer, the client
/// driver runs scenario `request` against it over the HTTP binding.
pub const CLIENT_CASES: &[Case] = &[
    client_case!("client-request", "the requester says hello first, then sends a signed request with a string correlationId to POST /agentprotocol", ["AGP-013", "AGP-018", "AGP-030", "AGP-040"], Fact, |ctx| {
        let input = client_input(ctx);
        let run = drive_peer(ctx, &input, PLAIN).await?;
        let hello = client_message(ctx, &run, 0)?;
        if hello["type"] != "hello" {
            return fail(format!("the requester's first message is {}, not hello (AGP-013)", hello["type"]));
        }
        ctx.checked("the requester says hello first");
        let req = client_message(ctx, &run, 1)?;
        if req["type"] != "request" || req["payload"]["action"] != input["action"] || req["payload"]["params"] != input["params"] {
            return fail(format!("the second message is {} {}, not a request for {} with {}", req["type"], req["payload"], input["action"], input["params"]));
        }
        if !req["payload"]["correlationId"].is_string() {
            return fail(format!("the request's correlationId is {}, not a string (AGP-018)", req["payload"]["correlationId"]));
        }
        ctx.checked("the request names the scenario's action and params with a string correlationId");
        for (what, m) in [("hello", &hello), ("request", &req)] {
            if m["to"]["agentId"] != input["peer"] {
                return fail(format!("the {what} is addressed to {}, not to the peer it was given, {} (AGP-008)", m["to"]["agentId"], input["peer"]));
            }
        }
        ctx.checked("both messages are addressed to the peer the scenario names");
        if hello["id"] == req["id"] {
            return fail(format!("the hello and the request share the id {} (AGP-003: an id is unique to each message)", req["id"]));
        }
        ctx.checked("every message of the requester has an id of its own");
        if run.failed() || !run.lines.iter().any(|l| l.get("result") == Some(&input["params"])) {
            return fail(format!("the requester did not take the response: {}; stdout: {}", run.ended(), crate::finding::clipped(run.stdout.trim(), 300)));
        }
        ctx.checked("the requester took the response's result");
        Ok(())
    }),
    client_case!("client-checks-capabilities", "the requester sends no request to a peer whose hello lacks the capability", ["AGP-036"], Should, |ctx| {
        // A requester that never sends a request passes here only if it sends one
        // to a peer that has the capability.
        ctx.controlled_by(CLIENT_REQUEST);
        let plan = PeerPlan { capabilities: &["agentprotocol:core"], ..PLAIN };
        let input = client_input(ctx);
        let run = drive_peer(ctx, &input, plan).await?;
        let hello = client_message(ctx, &run, 0)?;
        if hello["type"] != "hello" {
            return fail(format!("the requester's first message is {}, not hello: it cannot have read the peer's capabilities (AGP-013)", hello["type"]));
        }
        let sent_request = run.sent().any(|b| serde_json::from_slice::<Value>(b).is_ok_and(|v| v["type"] == "request"));
        if sent_request {
            return fail(format!("the requester sent its request to a peer whose hello does not list {} (AGP-036)", input["capability"]));
        }
        ctx.checked("no request to a peer without the capability");
        Ok(())
    }),
    client_case!("client-checks-correlation", "a response that echoes another correlationId, or spells it correlation_id, is not taken", ["AGP-019"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_REQUEST);
        let mut wrong = Vec::new();
        for (plan, what) in [
            (PeerPlan { wrong_correlation: true, ..PLAIN }, "a response echoing another correlationId"),
            (PeerPlan { spoil: PeerSpoil::SnakeCorrelation, ..PLAIN }, "a response that names the correlation id correlation_id, not correlationId"),
        ] {
            let run = drive_peer(ctx, &client_input(ctx), plan).await?;
            let judged = not_taken(ctx, &run, what);
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("responses the requester took", &wrong)
    }),
    client_case!("client-verifies-response", "a response whose signature does not verify over the RFC 8785 form (spoiled, missing, or over Python's json.dumps) is not taken", ["AGP-035"], Should, |ctx| {
        ctx.controlled_by(CLIENT_REQUEST);
        let mut wrong = Vec::new();
        for (plan, what) in [
            (PeerPlan { bad_signature: true, ..PLAIN }, "a response whose signature does not verify"),
            (PeerPlan { spoil: PeerSpoil::Unsigned, ..PLAIN }, "a response without a signature"),
            (PeerPlan { spoil: PeerSpoil::PythonSigned, ..PLAIN }, "a response signed over Python's json.dumps(sort_keys=True), not RFC 8785"),
        ] {
            let run = drive_peer(ctx, &client_input(ctx), plan).await?;
            let judged = not_taken(ctx, &run, what);
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("responses the requester took", &wrong)
    }),
    client_case!("client-reports-error-response", "an error answering the request is reported as an error, never taken as a result, whatever its code or shape", ["AGP-020", "AGP-022"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_REQUEST);
        let mut wrong = Vec::new();
        for (spoil, what) in [
            (PeerSpoil::Error("INTERNAL_ERROR"), "an INTERNAL_ERROR error"),
            (PeerSpoil::Error("INVALID_SIGNATURE"), "an INVALID_SIGNATURE error"),
            (PeerSpoil::Error("TIMEOUT"), "a TIMEOUT error"),
            (PeerSpoil::ErrorNested, "an error whose code and message sit under payload.error"),
        ] {
            let run = drive_peer(ctx, &client_input(ctx), PeerPlan { spoil, ..PLAIN }).await?;
            let judged = not_taken(ctx, &run, what);
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("errors the requester took", &wrong)
    }),
    client_case!("client-refuses-misaddressed-response", "a response addressed to another agent is not taken", ["AGP-009"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_REQUEST);
        let run = drive_peer(ctx, &client_input(ctx), PeerPlan { spoil: PeerSpoil::Misaddressed, ..PLAIN }).await?;
        not_taken(ctx, &run, "a response whose to.agentId names another agent")
    }),
];

/// The client case whose pass (the requester took a valid response) is the control
/// of the cases where it must refuse one.
const CLIENT_REQUEST: &str = "agentprotocol/client-request";

/// The scenario input: the action, the capability it needs, its params, and the
/// harness's agentId (the peer the requester addresses).
fn client_input(ctx: &Ctx) -> Value {
    let peer = reference_impl::agentprotocol::message::agent_id(&ctx.shared.key);
    // Non-ASCII text, where RFC 8785 and sorted-key JSON part ways.
    json!({"action": "echo", "capability": "agentconform:echo", "params": {"text": "héllo from the harness, ça va"}, "peer": peer})
}

async fn drive_peer(
    ctx: &mut Ctx,
    input: &Value,
    plan: PeerPlan,
) -> Step<crate::counterparty::DriverRun> {
    let answer = peer(ctx.shared.key.clone(), plan);
    crate::counterparty::drive(ctx, "request", input, answer, defined).await
}

/// Message `i` the requester sent: POSTed to /agentprotocol as application/json
/// (AGP-040) and judged like every message.
fn client_message(ctx: &mut Ctx, run: &crate::counterparty::DriverRun, i: usize) -> Step<Value> {
    let Some(x) = run.exchanges.get(i) else {
        return fail(format!(
            "the requester sent {} messages, not {}; {}; stderr: {}",
            run.exchanges.len(),
            i + 1,
            run.ended(),
            crate::finding::clipped(run.stderr.trim(), 300)
        ));
    };
    if x.path.trim_end_matches('/') != "/agentprotocol" {
        return fail(format!(
            "message {} was POSTed to {}, not /agentprotocol (AGP-040)",
            i + 1,
            x.path
        ));
    }
    if !x
        .content_type
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        return fail(format!(
            "message {} says Content-Type {}, not application/json (AGP-040)",
            i + 1,
            crate::finding::json(&x.content_type)
        ));
    }
    check_client_message(ctx, &x.received)
}

/// The requester did not report the reply as a success.
fn not_taken(ctx: &mut Ctx, run: &crate::counterparty::DriverRun, what: &str) -> Step<()> {
    run.took_nothing("the requester", "took", what)?;
    ctx.checked(format!("the requester did not take {what}"));
    Ok(())
}

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the peer and edits its
// hello or its response to the requester under test.

/// Fuzzing a requester: each case runs the client driver once (scenario
/// `request`) against the scripted peer of `suites::agentprotocol::expect`, its hello or
/// its response edited. Oracles: hello comes first; every message passes the
/// shared message checks, is addressed to the peer given (AGP-008) and has an id
/// of its own (AGP-003); no request to a peer whose hello lacks the capability
/// (AGP-036); a response with another correlationId (or correlation_id), a
/// signature that does not verify or is missing, a value changed after signing, an
/// addressee other than the requester (AGP-009), or an error in its place is never
/// taken; replies that keep their value complete the request; no crash, no hang.
pub static CLIENT_SPEC: Spec =
    crate::fuzzing::client::spec(&[Transport::Http], client_case_fn, client_probe_fn, &[]);

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let input = fuzz_client_input(&f.ctx);
        let answer = peer(f.ctx.shared.key.clone(), CLIENT_PLAIN);
        let run =
            crate::counterparty::drive(&mut f.ctx, "request", &input, answer, defined).await?;
        crate::fuzzing::client::completed(&run, "a plain request")
    })
}

fn fuzz_client_input(ctx: &crate::script::Ctx) -> Value {
    let peer = message::agent_id(&ctx.shared.key);
    json!({"action": "echo", "capability": "agentconform:echo", "params": {"text": "fuzz"}, "peer": peer})
}

/// One client fuzz case.
#[derive(Debug, Clone, Default, Arbitrary)]
struct ClientCase {
    /// 0: plain, 1: the hello lacks the capability, 2: the response echoes
    /// another correlationId, 3: the response's signature does not verify.
    plan: u8,
    /// Edit the hello (else the response).
    on_hello: bool,
    edit: crate::fuzzing::client::Edit,
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    use crate::fuzzing::client::{edit_answer, ended_well, Served};
    let c: ClientCase = f.draw();
    let kind = c.plan % 8;
    let plan = client_plan(kind);
    let input = fuzz_client_input(&f.ctx);
    let served = std::sync::Arc::new(std::sync::Mutex::new(Served::default()));
    let on_hello = c.on_hello;
    let mut n = 0;
    let answer = edit_answer(
        peer(f.ctx.shared.key.clone(), plan),
        move |_| {
            n += 1;
            n == if on_hello { 1 } else { 2 }
        },
        c.edit.clone(),
        served.clone(),
    );
    let run = crate::counterparty::drive(&mut f.ctx, "request", &input, answer, defined).await?;
    ended_well(&run)?;
    let served = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let types = client_messages(f, &run, &input)?;
    client_verdict(&run, &c, plan, &served, &types)
}

/// The scripted peer of a case kind: plain, a hello that lacks the capability, a
/// response with another correlationId, one whose signature does not verify, or
/// one spoiled otherwise (misaddressed, an error, correlation_id, unsigned).
fn client_plan(kind: u8) -> PeerPlan {
    let spoiled = |spoil| PeerPlan {
        spoil,
        ..CLIENT_PLAIN
    };
    match kind {
        4 => spoiled(PeerSpoil::Misaddressed),
        5 => spoiled(PeerSpoil::Error("INTERNAL_ERROR")),
        6 => spoiled(PeerSpoil::SnakeCorrelation),
        7 => spoiled(PeerSpoil::Unsigned),
        1 => PeerPlan {
            capabilities: &["agentprotocol:core"],
            ..CLIENT_PLAIN
        },
        2 => PeerPlan {
            wrong_correlation: true,
            ..CLIENT_PLAIN
        },
        3 => PeerPlan {
            bad_signature: true,
            ..CLIENT_PLAIN
        },
        _ => CLIENT_PLAIN,
    }
}

/// Checks every message the requester sent: the shared message checks, addressed
/// to the peer given (AGP-008), an id of its own (AGP-003); returns their types in
/// order.
fn client_messages(
    f: &mut FuzzCtx,
    run: &crate::counterparty::DriverRun,
    input: &Value,
) -> FuzzStep<Vec<String>> {
    let mut types = Vec::new();
    for x in &run.exchanges {
        f.fuzzed(&x.received);
        // The rules `run` holds a client's message to (an id reused across the run
        // among them), whose first failing finding stops the case.
        let from = f.ctx.findings().len();
        let m = check_client_message(&mut f.ctx, &x.received)?;
        verdict::rules_since(&f.ctx, from)?;
        types.push(m["type"].as_str().unwrap_or_default().to_string());
        if m["to"]["agentId"] != input["peer"] {
            return finding(
                Oracle::ReplyCheck,
                format!(
                    "the requester's {} is addressed to {}, not to the peer it was given (AGP-008)",
                    m["type"], m["to"]["agentId"]
                ),
            );
        }
    }
    Ok(types)
}

/// Judges what the requester did with the peer's answers: hello first, no request
/// to a peer whose hello lacks the capability (AGP-036), a response it must refuse
/// never taken, and a valid request completed.
fn client_verdict(
    run: &crate::counterparty::DriverRun,
    c: &ClientCase,
    plan: PeerPlan,
    served: &crate::fuzzing::client::Served,
    types: &[String],
) -> FuzzStep<()> {
    use crate::fuzzing::client::{must_complete, took};
    let kind = c.plan % 8;
    let on_hello = c.on_hello;
    if types.first().is_some_and(|t| t != "hello") {
        return finding(
            Oracle::Hello,
            format!(
                "the requester's first message is a {}, not a hello",
                types[0]
            ),
        );
    }
    let hello_kept = !(on_hello && served.applied) || served.same_value;
    if kind == 1 && hello_kept && types.iter().any(|t| t == "request") {
        return finding(
            Oracle::Hello,
            "the requester sent a request to a peer whose hello lacks the capability (AGP-036)",
        );
    }
    let response_changed = !on_hello && served.applied && !served.same_value;
    let must_refuse = plan.wrong_correlation
        || plan.bad_signature
        || plan.spoil != PeerSpoil::None
        || response_changed;
    if took(run) && must_refuse {
        let oracle = if plan.wrong_correlation || plan.spoil == PeerSpoil::SnakeCorrelation {
            Oracle::Correlation
        } else {
            Oracle::Signature
        };
        return finding(
            oracle,
            format!(
                "the requester took a response it must refuse ({plan:?}, {})",
                c.edit
            ),
        );
    }
    if kind == 0 && hello_kept && !response_changed {
        let respelled = served.applied && !matches!(c.edit, crate::fuzzing::client::Edit::None);
        return must_complete(run, respelled, &format!("a valid request ({})", c.edit));
    }
    Ok(())
}
