//! The chorus suite (chorus.md), laid out by spec section: `wire` (§1, §2: the
//! reply type, the calls, the data types), `registration` (§3.1), `discovery`
//! (§3.2), `ranking` (§3.2's filters and order over known scores), `jobs` (§3.3),
//! `results` (§3.4), `ledger` (§3.5), `reputation` (§4), `errors` (§5), and for the
//! client role `counterpart` (the registry, agents and ledger the harness plays)
//! and `orchestrator`. Each area file holds its rules, its checks, its cases and its
//! fuzz generators side by side; this file holds the descriptor, the hooks `proxy`
//! reads a recorded exchange with, and the fuzzer's draw over the areas. The areas
//! import each other downward only, in the order above (`wire` at the bottom).
//!
//! Live fuzzing (`SPEC`, and `orchestrator::CLIENT_SPEC` for the client role) (chorus.md): registrations, discovery queries, jobs for the
//! fixture agent, credit transfers and outcome reports drawn from the seed (valid
//! messages, field mutations, raw byte edits, respellings, short stateful sequences),
//! each judged against a model of what the spec fixes for the message as sent.
//!
//! Discovery, reputation and ranking cases share a pool of agents the run registers
//! once and sets to known scores (50.0, 45.5, 53.0, 100.0, 0.0) through the profile's
//! outcome channel (CHO-A1); the set-up itself is checked against the model.
//!
//! Oracles, beyond the reply checks of the shared helpers:
//! - server-error: never a 5xx for a client's message (a 503 to a valid registration
//!   is read as a full registry: the case is skipped);
//! - a 2xx reply is JSON (CHO-001): the rule chorus/reply:not-json, as in `run`;
//! - the rules `run` applies: registration replies by `judge_registered`
//!   (201, schema register-response, the echoed id, 50.0: CHO-012 to CHO-014), job
//!   results by `read_result` (schema job-result, CHO-029) and discovery
//!   replies by `discovery_reply` (schema discover-response, CHO-017), each finding
//!   under its rule key;
//! - verdict: a valid registration, job or transfer is accepted; an invalid one is
//!   rejected with a 4xx or a FAILURE result: a body that is no JSON (CHO-001), an
//!   agent_id, job_id or transfer_id that is no UUID (CHO-002, CHO-003, CHO-039), a
//!   missing or mistyped essential member (CHO-009, CHO-010, CHO-024, CHO-039), a
//!   timestamp_utc that is no date (CHO-004), an amount that is not a positive number
//!   of credits (CHO-005, CHO-039); where the spec leaves the choice open (CHO-A7,
//!   CHO-A10, CHO-A11, CHO-A18, CHO-A21; members beyond the spec's, other currencies,
//!   dates in other spellings) the verdict is not judged;
//! - error-code: a rejection the spec names carries its code (SKILL_MISMATCH CHO-027,
//!   BUDGET_INSUFFICIENT CHO-028, TRANSFER_FAILED CHO-040); which other code of
//!   chorus.md §5 a refusal carries is not judged (CHO-046 asks only that codes come
//!   from the table, a warning of the reply checks);
//! - registration: an accepted agent is then found under its skill at 50.0 with its
//!   cost (CHO-015, CHO-018);
//! - discovery: for drawn min_reputation / max_cost filters (inclusive bounds, CHO-019,
//!   CHO-020, CHO-A12) over agents whose scores and costs the run knows, exactly those
//!   that pass are listed, once each, each showing the queried skill and its cost
//!   (CHO-017, CHO-018), at the score the model gives (highest first is the rule
//!   discover:ranking); a percent-encoded skill or a number spelt with trailing
//!   zeros is the same query;
//! - reputation: a drawn sequence of SUCCESS and FAILURE outcomes from hirers at known
//!   scores moves a fresh agent from 50.0 as chorus.md §4 says (CHO-014, CHO-042 to
//!   CHO-044); more outcomes for agents at 0.0 and 100.0 leave them there (CHO-045);
//!   outcome: the profile's outcome channel takes every report (CHO-A1);
//! - delivery: a job's result comes in the response or is posted to callback_url
//!   within the case timeout, as the profile's result_delivery allows (CHO-026,
//!   CHO-A4);
//! - job: a valid job for the fixture agent (its input_data from the profile's
//!   fixture_input) ends in a SUCCESS result that names the request's job_id and the
//!   fixture's agent_id (CHO-030, CHO-031; ids compared as `run` compares them) and
//!   has a two-decimal execution_cost (CHO-005, CHO-033); an output other than the
//!   profile's fixture_output is the profile's to fix, as in `run`, not a finding; a
//!   job the spec rejects never ends in SUCCESS;
//! - ledger: over a drawn sequence of transfers between two fresh owners, a transfer
//!   within the balance is accepted (CHO-038), one above it fails with
//!   TRANSFER_FAILED and moves nothing (CHO-040), a repeated transfer_id is applied
//!   once where the profile declares it (CHO-039, CHO-A14, as the transfer-idempotent
//!   case reads it), and the balance ends where the model says: draining it exactly
//!   works, one cent more fails; the owners are set up by the profile's `owner` setup
//!   requests;
//! - wire-form: a respelled message (key order, whitespace, escapes) gets the verdict
//!   of its value.

pub mod client;
pub mod in_process;
pub mod init;
pub mod load;
pub mod tamper;

use crate::case::{Case, Suite, Untestable};
use crate::drive::Transport;
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{finding, FuzzFuture, FuzzStep, Oracle};
use crate::script::Ctx;
use reference_impl::wire::json;
use serde_json::Value;

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident,
     |$ctx:ident| $body:block) => {
        crate::define_case!("chorus", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| {
            crate::suites::chorus::wire::setup_case($ctx).await?;
            $body
        })
    };
}

pub mod counterpart;
pub mod discovery;
pub mod errors;
pub mod jobs;
pub mod ledger;
pub mod orchestrator;
pub mod ranking;
pub mod registration;
pub mod reputation;
pub mod results;
pub mod wire;

use discovery::*;
use jobs::*;
use ledger::*;
use orchestrator::*;
use ranking::*;
use registration::*;
use reputation::*;
use wire::*;

pub static SUITE: Suite = Suite {
    id: "chorus",
    spec: crate::case::SpecText {
        file: "chorus.md",
        repository: "github.com/HeatoXSophi/chorus",
        path: "PROTOCOL_SPEC.md",
        commit: "7857650744ecadb6bfc19fafb13e66f0af2969b7",
        form: "byte for byte",
    },
    prefix: "CHO",
    cases: CASES,
    untestable: UNTESTABLE,
    transports: &[Transport::Http],
    endpoint_paths: &[],
    faults: reference_impl::chorus::faults::FAULTS,
    start: crate::embedded::chorus,
    signing: None,
    schemas: SCHEMAS,
    client_cases: CLIENT_CASES,
    client_faults: reference_impl::chorus::client::CLIENT_FAULTS,
    reread,
    rules: crate::joined!(&'static crate::rules::Rule;
        wire::RULES,
        errors::RULES,
        registration::RULES,
        discovery::RULES,
        jobs::RULES,
        results::RULES,
        ledger::RULES,
        reputation::RULES,
        orchestrator::RULES,
    ),
    reference_client: client::REFERENCE,
    tampers: crate::suites::chorus::tamper::TAMPERS,
    // Jobs go to each agent's own URL, which the target profile names: no fixed
    // set of requests to hold a real client's to.
    defined: None,
    reply_to: Some(proxy_reply),
    client_message: Some(proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &SPEC,
    client_fuzzer: Some(&CLIENT_SPEC),
    discover: Some(crate::suites::chorus::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "CHO-036", reason: "needs a fault-injection input that makes the agent fail internally; the target profile defines none" },
    Untestable { requirement: "CHO-037", reason: "the heartbeat check behind AGENT_OFFLINE has no endpoint, interval or rule in chorus.md (CHO-A13)" },
];

/// The cases, area by area in the order they run.
pub const CASES: &[Case] = crate::joined!(Case;
    registration::CASES,
    discovery::CASES,
    ranking::CASES,
    jobs::CASES,
    ledger::CASES,
    reputation::CASES,
);

/// The suite's JSON Schemas (schemas/chorus/), by name, built into the binary.
const SCHEMAS: &[(&str, &str)] = &[
    (
        "register-request",
        include_str!("../../../../schemas/chorus/register-request.schema.json"),
    ),
    (
        "register-response",
        include_str!("../../../../schemas/chorus/register-response.schema.json"),
    ),
    (
        "discover-response",
        include_str!("../../../../schemas/chorus/discover-response.schema.json"),
    ),
    (
        "job-request",
        include_str!("../../../../schemas/chorus/job-request.schema.json"),
    ),
    (
        "job-result",
        include_str!("../../../../schemas/chorus/job-result.schema.json"),
    ),
    (
        "transfer-request",
        include_str!("../../../../schemas/chorus/transfer-request.schema.json"),
    ),
    (
        "error",
        include_str!("../../../../schemas/chorus/error.schema.json"),
    ),
];

// ---------------------------------------------------------------------------
// The hooks `proxy` and a recorded run read a reply with

/// Judges a recorded reply again (an exported vector's offline run): JSON
/// (CHO-001) and the codes of a refusal (CHO-046); what a reply must hold beyond
/// that depends on the request, which the case judged live.
pub fn reread(ctx: &mut Ctx, r: &crate::case::Recorded) {
    let resp = Resp {
        http: r.http_status.unwrap_or(200),
        json: json::parse(&r.body).ok().map(|t| t.to_serde()),
        raw: String::from_utf8_lossy(&r.body).into_owned(),
    };
    if !r.body.is_empty() {
        let _ = need_json(ctx, &resp, "a recorded request");
    }
    check_codes(ctx, &resp);
}

/// A reply of a real server seen by `agentconform proxy`, with the request it
/// answers: a discovery by [`discovery_reply`]; false for the others, which the
/// generic reply rules read (`reread`).
pub fn proxy_reply(ctx: &mut Ctx, x: &crate::exchange::Exchange, _: Option<&str>) -> bool {
    let (route, query) = x.path.split_once('?').unwrap_or((x.path.as_str(), ""));
    if x.method != "GET" || route != "/discover" {
        return false;
    }
    let r = Resp {
        http: x.status,
        json: json::parse(&x.answered).ok().map(|t| t.to_serde()),
        raw: String::from_utf8_lossy(&x.answered).into_owned(),
    };
    let _ = discovery_reply(ctx, query, &r);
    true
}

/// A request a real client sent through `agentconform proxy`: a job (a POST to a
/// `…/jobs` URL) by [`check_job_members`], a transfer by [`check_transfer_members`].
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, _: &crate::exchange::History) {
    let route = x.path.split('?').next().unwrap_or_default();
    let Ok(body) = serde_json::from_slice::<Value>(&x.received) else {
        return;
    };
    if x.method != "POST" || !body.is_object() {
        return;
    }
    if route.ends_with("/jobs") {
        check_job_members(ctx, &body);
    } else if route == "/transfer" {
        check_transfer_members(ctx, &body);
    }
}

// ---------------------------------------------------------------------------
// Fuzzing: one draw over the areas' generators

pub static SPEC: Spec = Spec {
    transports: &[Transport::Http],
    case: case_fn,
    probe: probe_fn,
    resend: None,
    kinds: &[],
    unreachable: &[],
    connection_per_worker: false,
    workers: crate::fuzzing::spec::WORKERS,
};

fn case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(one_case(f))
}

fn probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        f.fuzzed(b"GET /discover?skill=<unknown>");
        let skill = unique_skill();
        let found = discover(&mut f.ctx, &format!("skill={skill}")).await?;
        if found.is_empty() {
            Ok(())
        } else {
            finding(
                Oracle::Liveness,
                format!("a skill nobody has lists {} agents", found.len()),
            )
        }
    })
}

// ---------------------------------------------------------------------------

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    match f.below(100) {
        0..=17 => {
            let c: RegisterCase = f.draw();
            match register_case(f, c).await? {
                Some((v, skill, again)) => {
                    if again {
                        registered_again(f, &v, &skill).await?;
                    }
                    check_found(f, &v, &skill).await
                }
                None => Ok(()),
            }
        }
        18..=35 => {
            let c: PoolQuery = f.draw();
            pool_query(f, c).await
        }
        36..=42 => {
            let c: FreshQuery = f.draw();
            fresh_query(f, c).await
        }
        43..=55 => {
            let c: Reputation = f.draw();
            reputation_case(f, c).await
        }
        56..=59 => {
            let c: Clamp = f.draw();
            clamp_case(f, c).await
        }
        60..=79 => {
            let c: JobCase = f.draw();
            job_case(f, c).await
        }
        _ => {
            let c: Ledger = f.draw();
            ledger_case(f, c).await
        }
    }
}
