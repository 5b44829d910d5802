//! The client role (chorus.md §3.3 to §3.5 from the hirer's side): the checks of what
//! an orchestrator sends, its cases, and its fuzzer (the counterpart's replies edited).

use super::counterpart::{
    defined, hire_input, hired_by_job_path, hired_ids, jobs_sent, registry, sent_to,
    transfers_sent, Hire, HIRED, HIRE_COST, OVER_BUDGET_BY,
};
use super::wire::{is_utc_timestamp, EXACT};
use crate::case::{fail, fail_rows, Bindings, Case, Level, Step};
use crate::drive::Transport;
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{finding, FuzzFuture, FuzzStep, Oracle};
use crate::rules::{rules, schema_findings};
use crate::script::Ctx;
use arbitrary::Arbitrary;
use reference_impl::wire::is_uuid;
use serde_json::Value;

rules! {
    CLIENT_JOBS {
        key: "chorus/client:jobs",
        requirements: &["CHO-023"],
        level: None,
        owner: "",
        summary: "a client sends one job for one hire",
        fails: "the client sent more than one job request for one hire",
        passes: "one job",
    }
    CLIENT_SCHEMA_JOB_REQUEST {
        key: "chorus/client:schema:job-request:*",
        requirements: &["CHO-024"],
        level: None,
        owner: "",
        summary: "the client's job request matches the job-request schema",
        fails: "a member of the client's job missing, of another type or outside its pattern (job_id, timestamp_utc and currency are judged apart)",
        passes: "a job request the schema validates",
    }
    CLIENT_JOB_ID {
        key: "chorus/client:job-id",
        requirements: &["CHO-003"],
        level: None,
        owner: "",
        summary: "the client's job_id is a UUID",
        fails: "a job_id that is not a UUID string",
        passes: "a UUID job_id",
    }
    CLIENT_JOB_ID_REUSED {
        key: "chorus/client:job-id-reused",
        requirements: &["CHO-003"],
        level: None,
        owner: "chorus/client-hire",
        summary: "every job of a client has a job_id of its own, across the client's whole run",
        fails: "a job whose job_id another job of the client carried in the run (whichever case sent it)",
        passes: "a fresh job_id on every job",
    }
    CLIENT_JOB_ID_VERSION {
        key: "chorus/client:job-id-version",
        requirements: &["CHO-003", "CHO-A7"],
        level: Some(Level::Should),
        owner: "",
        summary: "the client's job_id is a version 4 UUID",
        fails: "a job_id that is a UUID of another version than 4",
        passes: "a version 4 UUID",
    }
    CLIENT_TIMESTAMP {
        key: "chorus/client:timestamp",
        requirements: &["CHO-004"],
        level: None,
        owner: "",
        summary: "the client's job timestamp_utc is ISO 8601 UTC",
        fails: "a timestamp_utc that is not a date-time with Z or a zero offset",
        passes: "an ISO 8601 UTC timestamp",
    }
    CLIENT_CURRENCY {
        key: "chorus/client:currency",
        requirements: &["CHO-025"],
        level: None,
        owner: "",
        summary: "the client's job names the currency chorus_credits_v1",
        fails: "a job with another currency than \"chorus_credits_v1\"",
        passes: "\"chorus_credits_v1\"",
    }
    CLIENT_OUTCOME_CONTENT {
        key: "chorus/client:outcome-content",
        requirements: &["CHO-A1"],
        level: Some(Level::Profile),
        owner: "",
        summary: "the client's outcome report carries the result it received",
        fails: "a POST /results for the job whose status, or for a SUCCESS output_data or execution_cost, is not the result's",
        passes: "a report with the received result",
    }
    CLIENT_OUTCOME {
        key: "chorus/client:outcome",
        requirements: &["CHO-A1"],
        level: Some(Level::Profile),
        owner: "",
        summary: "the client reports the job's outcome with POST /results (the profile's outcome channel)",
        fails: "no POST /results for the job",
        passes: "an outcome report for the job",
    }
    CLIENT_PAID_TWICE {
        key: "chorus/client:paid-twice",
        requirements: &["CHO-038"],
        level: None,
        owner: "",
        summary: "the client pays once for one job",
        fails: "more than one POST /transfer for one successful job",
        passes: "one transfer",
    }
    CLIENT_SCHEMA_TRANSFER_REQUEST {
        key: "chorus/client:schema:transfer-request:*",
        requirements: &["CHO-039"],
        level: None,
        owner: "",
        summary: "the client's transfer matches the transfer-request schema",
        fails: "a member of the client's transfer missing, of another type or outside its pattern (transfer_id, job_id and amount are judged apart)",
        passes: "a transfer the schema validates",
    }
    CLIENT_TRANSFER_ID {
        key: "chorus/client:transfer-id",
        requirements: &["CHO-039"],
        level: None,
        owner: "",
        summary: "the client's transfer_id is a UUID",
        fails: "a transfer_id that is not a UUID string",
        passes: "a UUID transfer_id",
    }
    CLIENT_FROM_OWNER {
        key: "chorus/client:from-owner",
        requirements: &["CHO-039"],
        level: None,
        owner: "",
        summary: "the client pays from the owner it was given",
        fails: "a transfer whose from_owner is not the scenario's owner",
        passes: "the scenario's owner",
    }
    CLIENT_AMOUNT_MISSING {
        key: "chorus/client:amount-missing",
        requirements: &["CHO-039"],
        level: None,
        owner: "",
        summary: "the client's transfer has a numeric amount",
        fails: "a transfer whose amount is missing or not a number",
        passes: "a number of credits",
    }
    CLIENT_AMOUNT_OVER_BUDGET {
        key: "chorus/client:amount-over-budget",
        requirements: &["CHO-033", "CHO-038"],
        level: None,
        owner: "",
        summary: "the client never pays more than the job's budget",
        fails: "a transfer of more than the job's budget",
        passes: "an amount within the budget",
    }
    CLIENT_AMOUNT {
        key: "chorus/client:amount",
        requirements: &["CHO-033", "CHO-038"],
        level: Some(Level::Should),
        owner: "",
        summary: "the client pays the execution_cost the result charged",
        fails: "a transfer within the budget of another amount than the execution_cost",
        passes: "the execution_cost",
    }
}

/// The client sent exactly one job: to a listed agent's job URL, a complete job
/// request (CHO-023, CHO-024; the schema; a UUID job_id, CHO-003; an ISO 8601 UTC
/// timestamp, CHO-004; the currency, CHO-025) with the scenario's skill, input,
/// orchestrator and a budget between the agent's cost and the one given. Returns
/// the agent's index and the job.
pub fn check_job_sent(
    ctx: &mut Ctx,
    run: &crate::counterparty::DriverRun,
    input: &Value,
) -> Step<(usize, Value)> {
    let jobs = jobs_sent(run);
    let Some((agent, job)) = jobs.first().cloned() else {
        let paths: Vec<String> = run
            .exchanges
            .iter()
            .map(|x| format!("{} {}", x.method, x.path))
            .collect();
        return fail(format!(
            "the client sent no job to a discovered agent's job URL (CHO-023); it sent {paths:?}; {}; stderr: {}",
            run.ended(),
            crate::finding::clipped(run.stderr.trim(), 300)
        ));
    };
    if jobs.len() > 1 {
        ctx.finding(CLIENT_JOBS.found(format!("the client sent {} jobs for one hire", jobs.len())));
    }
    if !job.is_object() {
        return fail(format!(
            "the client's job request is not a JSON object: {job}"
        ));
    }
    check_job_members(ctx, &job);
    job_matches_scenario(&job, input)?;
    ctx.checked(format!(
        "the client sent one complete job to {} with the scenario's skill, input and budget",
        HIRED[agent].0
    ));
    Ok((agent, job))
}

/// The job request's members: its schema (CHO-024), a UUID v4 job_id (CHO-003;
/// another version a warning, CHO-A7) no other job of the client's run carried,
/// an ISO 8601 UTC timestamp (CHO-004), the currency (CHO-025).
pub fn check_job_members(ctx: &mut Ctx, job: &Value) {
    // job_id, timestamp_utc and currency are judged below, once.
    let below = ["/job_id", "/timestamp_utc", "/currency"];
    let family = (RULES, &CLIENT_SCHEMA_JOB_REQUEST);
    for mut f in schema_findings(&ctx.shared.schemas, "chorus/job-request", family, job) {
        if below.contains(&f.detail()) {
            continue;
        }
        f.summary = format!("the client's job request: {}", f.summary);
        ctx.finding(f);
    }
    let id = job["job_id"].as_str().unwrap_or_default();
    if let Some(first) = ctx.reused("job_id", id, job.to_string().as_bytes()) {
        ctx.finding(CLIENT_JOB_ID_REUSED.found(format!(
                "the client's job reuses job_id {}, which {first} carried first in this run: a job_id names one job",
                job["job_id"]
            )));
    }
    if !is_uuid(id) {
        ctx.finding(CLIENT_JOB_ID.found(format!(
            "the client's job_id {} is not a UUID",
            job["job_id"]
        )));
    } else if job["job_id"].as_str().and_then(|id| id.as_bytes().get(14)) != Some(&b'4') {
        // RFC 4122 syntax of another version: CHO-A7 warns.
        ctx.finding(CLIENT_JOB_ID_VERSION.found(format!(
                    "the client's job_id {} is a UUID of version {}, not 4",
                    job["job_id"],
                    job["job_id"]
                        .as_str()
                        .and_then(|id| id.get(14..15))
                        .unwrap_or("?")
                )));
    }
    if !is_utc_timestamp(&job["timestamp_utc"]) {
        ctx.finding(CLIENT_TIMESTAMP.found(format!(
            "the client's job timestamp_utc {} is not ISO 8601 UTC",
            job["timestamp_utc"]
        )));
    }
    if job["currency"] != "chorus_credits_v1" {
        ctx.finding(CLIENT_CURRENCY.found(format!(
            "the client's job names the currency {}, not \"chorus_credits_v1\"",
            job["currency"]
        )));
    }
}

/// The job carries the scenario's skill, input and orchestrator, and a budget
/// between the agent's cost and the scenario's budget (CHO-028).
fn job_matches_scenario(job: &Value, input: &Value) -> Step<()> {
    for (member, want) in [
        ("skill_name", &input["skill"]),
        ("input_data", &input["input_data"]),
        ("orchestrator_id", &input["orchestrator_id"]),
    ] {
        if job[member] != *want {
            return fail(format!(
                "the client's job carries {member} {}, not the scenario's {want}",
                job[member]
            ));
        }
    }
    let budget = job["budget"].as_f64();
    let given = input["budget"].as_f64().unwrap_or(f64::MAX);
    if !budget.is_some_and(|b| b + EXACT >= HIRE_COST && b <= given + EXACT) {
        return fail(format!(
            "the client's job offers the budget {}, not an amount between the agent's cost {HIRE_COST:.2} and the scenario's budget {given:.2} (CHO-028)",
            job["budget"]
        ));
    }
    Ok(())
}

/// The client paid nothing, and reported the failure with a non-zero exit.
pub fn check_not_paid(ctx: &mut Ctx, run: &crate::counterparty::DriverRun, why: &str) -> Step<()> {
    if let Some(t) = transfers_sent(run).first() {
        return fail(format!(
            "the client paid after {why}: POST /transfer {} (CHO-038, CHO-041: payment settles a successful job)",
            crate::finding::clipped_json(t, 300)
        ));
    }
    ctx.checked(format!("no payment after {why}"));
    if !run.failed() {
        return fail(format!(
            "the client reported success after {why}: {}; stdout: {}",
            run.ended(),
            crate::finding::clipped(run.stdout.trim(), 300)
        ));
    }
    ctx.checked("the client reported the failure");
    Ok(())
}

/// How the client paid for one successful job, judged the same in `run` and in
/// `fuzz`: once, the execution_cost charged (CHO-033, CHO-038), never above the
/// job's budget.
#[derive(Debug, Clone, PartialEq)]
pub enum Payment {
    /// One transfer of the execution_cost.
    Exact,
    /// No transfer.
    Missing,
    /// More than one transfer for the job.
    Twice(usize),
    /// One transfer without a numeric amount.
    NoAmount(Value),
    /// One transfer of more than the job's budget (a failure).
    OverBudget(f64),
    /// One transfer of another amount within the budget (a warning).
    OtherAmount(f64),
}

/// Judges the transfers of a run for a job whose result charged `cost` within
/// `budget`.
pub fn judge_payment(transfers: &[Value], cost: f64, budget: f64) -> Payment {
    match transfers {
        [] => Payment::Missing,
        [t] => match t["amount"].as_f64() {
            None => Payment::NoAmount(t["amount"].clone()),
            Some(a) if a > budget + EXACT => Payment::OverBudget(a),
            Some(a) if (a - cost).abs() > EXACT => Payment::OtherAmount(a),
            Some(_) => Payment::Exact,
        },
        many => Payment::Twice(many.len()),
    }
}

/// The client paid once for the job, after its SUCCESS: a complete transfer
/// (CHO-039) from the scenario's owner to the hired agent's owner, for the job,
/// of the execution_cost charged (CHO-033, CHO-038).
pub fn check_paid(
    ctx: &mut Ctx,
    run: &crate::counterparty::DriverRun,
    input: &Value,
    agent: usize,
    job: &Value,
    ids: &[String; 2],
) -> Step<()> {
    let transfers = transfers_sent(run);
    let budget = job["budget"].as_f64().unwrap_or(f64::MAX);
    let verdict = judge_payment(&transfers, HIRE_COST, budget);
    let Some(t) = transfers.first() else {
        return fail(format!(
            "the client never paid for the successful job: no POST /transfer (CHO-038); {}",
            run.ended()
        ));
    };
    if let Payment::Twice(n) = verdict {
        ctx.finding(CLIENT_PAID_TWICE.found(format!("the client sent {n} transfers for one job")));
    }
    check_transfer_members(ctx, t);
    if t["job_id"] != job["job_id"] {
        return fail(format!(
            "the client's transfer names the job {}, not the one it hired, {} (CHO-039)",
            t["job_id"], job["job_id"]
        ));
    }
    if t["from_owner"] != input["owner_id"] {
        ctx.finding(CLIENT_FROM_OWNER.found(format!(
            "the client's transfer is from {}, not the scenario's owner {}",
            t["from_owner"], input["owner_id"]
        )));
    }
    let owner = HIRED[agent].1;
    if t["to_owner"] != owner && t["to_owner"] != ids[agent].as_str() {
        ctx.note(format!(
            "the transfer goes to {}; the hired agent's owner is {owner} (chorus.md does not say how an orchestrator learns it)",
            t["to_owner"]
        ));
    }
    check_amount(ctx, verdict, budget);
    ctx.checked("the client paid the job once, to its agent");
    Ok(())
}

/// The transfer's members: its schema (CHO-039) and a UUID transfer_id.
pub(super) fn check_transfer_members(ctx: &mut Ctx, t: &Value) {
    // transfer_id, job_id and amount are judged below, once.
    let below = ["/transfer_id", "/job_id", "/amount"];
    let family = (RULES, &CLIENT_SCHEMA_TRANSFER_REQUEST);
    for mut f in schema_findings(&ctx.shared.schemas, "chorus/transfer-request", family, t) {
        if below.contains(&f.detail()) {
            continue;
        }
        f.summary = format!("the client's transfer: {}", f.summary);
        ctx.finding(f);
    }
    if !t["transfer_id"].as_str().is_some_and(is_uuid) {
        ctx.finding(CLIENT_TRANSFER_ID.found(format!(
            "the client's transfer_id {} is not a UUID",
            t["transfer_id"]
        )));
    }
}

/// The amount paid (CHO-033, CHO-038, CHO-039): a number of credits, within the
/// budget, the execution_cost (another amount a warning).
fn check_amount(ctx: &mut Ctx, verdict: Payment, budget: f64) {
    match verdict {
        Payment::NoAmount(a) => ctx.finding(CLIENT_AMOUNT_MISSING.found(format!("the client's transfer has the amount {a}, not a number of credits"))),
        Payment::OverBudget(a) => ctx.finding(CLIENT_AMOUNT_OVER_BUDGET.found(format!(
                "the client pays {a} for a job whose execution_cost is {HIRE_COST:.2} and whose budget is {budget:.2}"
            ))),
        Payment::OtherAmount(a) => ctx.finding(
            CLIENT_AMOUNT.found(format!(
                    "the client pays {a} for a job whose execution_cost is {HIRE_COST:.2}"
                )),
        ),
        Payment::Exact | Payment::Missing | Payment::Twice(_) => {}
    }
}

/// The outcome reported to the registry (the default outcome channel, `POST
/// /results` with the result and orchestrator_id; a profile choice, CHO-A1).
pub fn check_outcome_reported(
    ctx: &mut Ctx,
    run: &crate::counterparty::DriverRun,
    job: &Value,
    status: &str,
) {
    let reports: Vec<Value> = sent_to(run, "POST", "/results")
        .iter()
        .map(|x| serde_json::from_slice::<Value>(&x.received).unwrap_or(Value::Null))
        .filter(|r| r["job_id"] == job["job_id"])
        .collect();
    // The report comes after the result and carries it: its final status, and for
    // a SUCCESS the output and the charge the harness's agent sent.
    let carries = |r: &Value| {
        r["status"] == status
            && (status != "SUCCESS"
                || (r["output_data"] == job["input_data"]
                    && r["execution_cost"]
                        .as_f64()
                        .is_some_and(|c| (c - HIRE_COST).abs() <= EXACT)))
    };
    if let Some(r) = reports.iter().find(|r| !carries(r)) {
        ctx.finding(
            CLIENT_OUTCOME_CONTENT.found(format!(
                    "the client's outcome report of job {} does not carry the {status} result it received: {}",
                    job["job_id"],
                    crate::finding::clipped_json(r, 300)
                )),
        );
    } else if !reports.is_empty() {
        ctx.checked(format!(
            "the client reported the {status} outcome to the registry, with the result it received"
        ));
    } else {
        ctx.finding(
            CLIENT_OUTCOME.found(format!(
                    "the client did not report the {status} outcome of job {} with POST /results (the profile's outcome channel; chorus.md has none)",
                    job["job_id"]
                )),
        );
    }
}

/// The client case whose pass (a job taken and paid) is the control of the cases
/// where the client must not pay.
const CLIENT_HIRE: &str = "chorus/client-hire";

macro_rules! client_case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, |$ctx:ident| $body:block) => {
        crate::define_case!("chorus", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| $body)
    };
}

/// One `hire` run against the harness's registry and agents, answering the job by
/// `plan`.
async fn hire(
    ctx: &mut crate::script::Ctx,
    plan: Hire,
) -> crate::case::Step<(crate::counterparty::DriverRun, Value, [String; 2])> {
    let input = hire_input(&ctx.client_identity());
    let ids = hired_ids();
    let outbox = crate::counterparty::Outbox::default();
    let answer = registry(plan, &input, ids.clone(), outbox.clone());
    let run = crate::counterparty::drive_http(ctx, "hire", &input, answer, defined, outbox).await?;
    Ok((run, input, ids))
}

/// The client's discovery: `GET /discover` for the scenario's skill (CHO-016).
fn check_discovered(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
    input: &Value,
) -> crate::case::Step<()> {
    let found = sent_to(run, "GET", "/discover");
    let Some(d) = found.first() else {
        return fail(format!(
            "the client did not discover agents with GET /discover (CHO-016) before hiring; {}",
            run.ended()
        ));
    };
    let query = d.path.split_once('?').map_or("", |(_, q)| q);
    let skill = input["skill"].as_str().unwrap_or_default();
    if !query.split('&').any(|kv| kv == format!("skill={skill}")) {
        return fail(format!(
            "the client's discovery {} does not ask for the skill {skill} (CHO-016)",
            d.path
        ));
    }
    ctx.checked(format!("the client discovered agents with GET {}", d.path));
    Ok(())
}

/// The driver exited 0 and printed the job's output_data.
fn check_took_output(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
    input: &Value,
) -> crate::case::Step<()> {
    if run.failed() {
        return fail(format!(
            "the client did not complete the hire: {}; stdout: {}",
            run.ended(),
            crate::finding::clipped(run.stdout.trim(), 300)
        ));
    }
    if run.results() != [&input["input_data"]] {
        return fail(format!(
            "the driver printed the results {}, not the job's output_data {}",
            crate::finding::json(&run.results()),
            input["input_data"]
        ));
    }
    ctx.checked("the client took the job's output_data");
    Ok(())
}

/// The orchestrator's side (`run --role client`): the harness is the registry, the
/// agents and the ledger; the client driver runs scenario `hire`.
pub const CLIENT_CASES: &[Case] = &[
    client_case!("client-hire", "the client discovers, sends a complete job to a listed agent, takes the result, reports the outcome and pays the execution_cost; a second job has a job_id of its own",
        ["CHO-003", "CHO-004", "CHO-016", "CHO-023", "CHO-024", "CHO-025", "CHO-033", "CHO-038", "CHO-039"], Fact, |ctx| {
        let (run, input, ids) = hire(ctx, Hire::Success).await?;
        check_discovered(ctx, &run, &input)?;
        let (agent, job) = check_job_sent(ctx, &run, &input)?;
        check_outcome_reported(ctx, &run, &job, "SUCCESS");
        check_paid(ctx, &run, &input, agent, &job, &ids)?;
        check_took_output(ctx, &run, &input)?;
        // The same task again: the client's whole run is compared too (every job
        // goes through check_job_members), and this case owns what it shows.
        let (run, input, _) = hire(ctx, Hire::Success).await?;
        let (_, again) = check_job_sent(ctx, &run, &input)?;
        if again["job_id"] == job["job_id"] {
            ctx.deviation(CLIENT_JOB_ID_REUSED.found(format!("the client's second job reuses the job_id {} of its first: a job_id names one job", job["job_id"])));
        } else {
            ctx.checked("a second job has a job_id of its own");
        }
        Ok(())
    }),
    client_case!("client-callback", "a job answered 202 PENDING is finished by the result POSTed to callback_url; the client takes it and pays then",
        ["CHO-026", "CHO-035", "CHO-038"], Fact, |ctx| {
        let (run, input, ids) = hire(ctx, Hire::Callback).await?;
        let (agent, job) = check_job_sent(ctx, &run, &input)?;
        if !job["callback_url"].is_string() {
            return fail(format!("the client's job has callback_url {}, so the result cannot be delivered (CHO-026)", job["callback_url"]));
        }
        let callbacks = sent_to(&run, "CALLBACK", job["callback_url"].as_str().unwrap_or_default());
        match callbacks.first() {
            Some(c) if (200..300).contains(&c.status) => ctx.checked(format!("the client's callback_url took the result (HTTP {})", c.status)),
            Some(c) => ctx.note(format!("the client's callback_url answered HTTP {}: {}", c.status, crate::finding::clipped(&String::from_utf8_lossy(&c.received), 200))),
            None => ctx.note("the result was not POSTed to the client's callback_url (the driver ended first)"),
        }
        check_outcome_reported(ctx, &run, &job, "SUCCESS");
        check_paid(ctx, &run, &input, agent, &job, &ids)?;
        check_took_output(ctx, &run, &input)
    }),
    client_case!("client-failure-no-pay", "a FAILURE result is reported and not paid for",
        ["CHO-032", "CHO-038", "CHO-041"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_HIRE);
        let (run, input, _) = hire(ctx, Hire::Failure).await?;
        let (_, job) = check_job_sent(ctx, &run, &input)?;
        check_outcome_reported(ctx, &run, &job, "FAILURE");
        check_not_paid(ctx, &run, "a FAILURE result")
    }),
    client_case!("client-skill-mismatch", "a job refused with SKILL_MISMATCH, or with a web framework's 404 {detail}, is reported as an error and not paid for",
        ["CHO-027", "CHO-038"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_HIRE);
        let mut wrong = Vec::new();
        for (plan, what) in [
            (Hire::SkillMismatch, "a SKILL_MISMATCH refusal"),
            (Hire::SkillMismatchDetail, "a refusal as HTTP 404 {\"detail\": …}"),
        ] {
            let (run, input, _) = hire(ctx, plan).await?;
            let judged = check_job_sent(ctx, &run, &input).and_then(|_| check_not_paid(ctx, &run, what));
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("refusals the client did not take as such", &wrong)
    }),
    client_case!("client-budget-insufficient", "a job refused with BUDGET_INSUFFICIENT is reported as an error and not paid for",
        ["CHO-028", "CHO-038"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_HIRE);
        let (run, input, _) = hire(ctx, Hire::BudgetInsufficient).await?;
        check_job_sent(ctx, &run, &input)?;
        check_not_paid(ctx, &run, "a BUDGET_INSUFFICIENT refusal")
    }),
    client_case!("client-refuses-foreign-result", "a result naming another job, in the reply or by callback, is not taken and not paid for",
        ["CHO-030", "CHO-038"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_HIRE);
        let mut wrong = Vec::new();
        for (plan, what) in [
            (Hire::ForeignResult, "a job reply whose result names another job_id"),
            (Hire::ForeignCallback, "a callback whose result names another job_id (and no result for its own job)"),
        ] {
            let (run, input, _) = hire(ctx, plan).await?;
            let judged = check_job_sent(ctx, &run, &input).and_then(|_| check_not_paid(ctx, &run, what));
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("refusals the client did not take as such", &wrong)
    }),
    client_case!("client-refuses-cost-over-budget", "a result that charges an execution_cost above the job's budget is not paid as charged",
        ["CHO-033", "CHO-038"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_HIRE);
        let (run, input, _) = hire(ctx, Hire::CostOverBudget).await?;
        let (_, job) = check_job_sent(ctx, &run, &input)?;
        let budget = job["budget"].as_f64().unwrap_or(f64::MAX);
        if let Some(t) = transfers_sent(&run).iter().find(|t| t["amount"].as_f64().is_some_and(|a| a > budget + 1e-9)) {
            return fail(format!(
                "the client paid {} for a job whose budget was {} (the result charged {:.2} over it; CHO-033: the charge is not above the budget)",
                t["amount"], job["budget"], OVER_BUDGET_BY
            ));
        }
        ctx.checked(format!("the client paid nothing above the job's budget of {}", job["budget"]));
        if !run.failed() {
            ctx.note("the driver exited 0 although the result charged more than the budget");
        }
        Ok(())
    }),
    client_case!("client-callback-missing", "a job answered 202 PENDING whose result never comes is reported as an error after the wait and not paid for",
        ["CHO-026", "CHO-035", "CHO-038"], Fact, |ctx| {
        ctx.controlled_by("chorus/client-callback");
        let (run, input, _) = hire(ctx, Hire::CallbackNever).await?;
        check_job_sent(ctx, &run, &input)?;
        check_not_paid(ctx, &run, "a 202 PENDING reply whose result never came")
    }),
    client_case!("client-transfer-failed", "a payment answered TRANSFER_FAILED, even with HTTP 200, is reported as an error",
        ["CHO-040", "CHO-046"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_HIRE);
        let (run, input, _) = hire(ctx, Hire::TransferFailed).await?;
        check_job_sent(ctx, &run, &input)?;
        if transfers_sent(&run).is_empty() {
            return fail(format!("the client never paid for the successful job: no POST /transfer (CHO-038); {}", run.ended()));
        }
        if !run.failed() {
            return fail(format!(
                "the client reported success although its transfer was answered {{\"status\": \"failed\", \"error\": \"TRANSFER_FAILED\"}}: {}; stdout: {}",
                run.ended(),
                crate::finding::clipped(run.stdout.trim(), 300)
            ));
        }
        ctx.checked("the client reported the failed transfer as an error");
        Ok(())
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the registry, the agents
// and the ledger, and edits its discovery or job reply to the orchestrator under
// test.

/// Fuzzing an orchestrator: each case runs the client driver once (scenario
/// `hire`) against the scripted registry of `suites::chorus::expect`, the discovery or the
/// job reply edited. Oracles: every job is complete (a UUID job_id, an ISO 8601 UTC
/// timestamp, the currency); nothing is paid for a job refused or failed, whose
/// result does not say SUCCESS or names another job, or whose result never came;
/// nothing above the job's budget; a failed transfer is not a success; when every
/// reply keeps its value a successful job is paid once, judged as `run` judges it
/// (`judge_payment`), and its output taken; no crash, no hang.
pub static CLIENT_SPEC: Spec = crate::fuzzing::client::spec(
    &[Transport::Http],
    client_case_fn,
    client_probe_fn,
    &[
        (
            "pays-the-budget",
            "paying another amount than the execution_cost within the budget is a warning in run (judge_payment), and the fuzzer reports only what fails; client-hire warns",
        ),
        (
            "job-id-uuid-v1",
            "a UUID of another version is a warning (CHO-A7), and the fuzzer reports only what fails; client-hire warns",
        ),
    ],
);

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let input = hire_input(&f.ctx.client_identity());
        let outbox = crate::counterparty::Outbox::default();
        let answer = registry(Hire::Success, &input, hired_ids(), outbox.clone());
        let run =
            crate::counterparty::drive_http(&mut f.ctx, "hire", &input, answer, defined, outbox)
                .await?;
        crate::fuzzing::client::completed(&run, "a plain hire")
    })
}

/// One client fuzz case.
#[derive(Debug, Clone, Default, Arbitrary)]
struct ClientCase {
    /// Success, callback, failure, skill mismatch, budget insufficient, a result
    /// naming another job, a charge over the budget, a callback that never comes,
    /// a failed transfer.
    plan: u8,
    /// Edit the job reply (else the discovery reply).
    on_job: bool,
    edit: crate::fuzzing::client::Edit,
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let c: ClientCase = f.draw();
    let plan = [
        Hire::Success,
        Hire::Callback,
        Hire::Failure,
        Hire::SkillMismatch,
        Hire::BudgetInsufficient,
        Hire::ForeignResult,
        Hire::CostOverBudget,
        Hire::CallbackNever,
        Hire::TransferFailed,
    ][usize::from(c.plan % 9)];
    let (run, served) = drive_client(f, &c, plan).await?;
    let kept = !served.applied || served.same_value;
    let jobs = jobs_sent(&run);
    check_jobs_complete(f, &jobs)?;
    let transfers = transfers_sent(&run);
    let pays = matches!(plan, Hire::Success | Hire::Callback | Hire::TransferFailed);
    let job_budget = jobs
        .first()
        .and_then(|(_, j)| j["budget"].as_f64())
        .unwrap_or(f64::MAX);
    if kept {
        check_kept_plan(&run, plan, &transfers, job_budget)?;
    }
    check_paid_for_success(&run, plan, &transfers)?;
    if pays && kept {
        check_payment(&run, plan, &c, &served, &transfers, job_budget)?;
    }
    Ok(())
}

/// Runs the client driver once (scenario `hire`) against the scripted registry
/// answering `plan`, the discovery or the job reply edited as the case says; the run
/// must end well (no crash, no hang). Returns the run and what the edit did.
async fn drive_client(
    f: &mut FuzzCtx,
    c: &ClientCase,
    plan: Hire,
) -> FuzzStep<(
    crate::counterparty::DriverRun,
    crate::fuzzing::client::Served,
)> {
    use crate::fuzzing::client::{edit_answer, ended_well, Served};
    let input = hire_input(&f.ctx.client_identity());
    let outbox = crate::counterparty::Outbox::default();
    let served = std::sync::Arc::new(std::sync::Mutex::new(Served::default()));
    let on_job = c.on_job;
    let answer = edit_answer(
        registry(plan, &input, hired_ids(), outbox.clone()),
        move |path| {
            let route = path.split('?').next().unwrap_or_default();
            if on_job {
                hired_by_job_path(route).is_some()
            } else {
                route == "/discover"
            }
        },
        c.edit.clone(),
        served.clone(),
    );
    let run = crate::counterparty::drive_http(&mut f.ctx, "hire", &input, answer, defined, outbox)
        .await?;
    ended_well(&run)?;
    let served = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok((run, served))
}

/// Checks that every job the orchestrator sent is complete: a UUID job_id (CHO-003),
/// an ISO 8601 UTC timestamp_utc (CHO-004) and the currency (CHO-025).
fn check_jobs_complete(f: &mut FuzzCtx, jobs: &[(usize, Value)]) -> FuzzStep<()> {
    for (_, job) in jobs {
        f.fuzzed(job.to_string().as_bytes());
        // The rules `run` holds a client's job to, with their keys (a failing one
        // is this case's finding): its schema, a UUID job_id no earlier job of the
        // campaign carried, the currency, an ISO 8601 UTC timestamp_utc.
        check_job_members(&mut f.ctx, job);
    }
    Ok(())
}

/// Where every reply keeps its value: nothing is paid for a job whose result is
/// another job's or never came (CHO-030, CHO-038), nothing above the job's budget
/// (CHO-033), and a transfer answered TRANSFER_FAILED is no success (CHO-040).
fn check_kept_plan(
    run: &crate::counterparty::DriverRun,
    plan: Hire,
    transfers: &[Value],
    job_budget: f64,
) -> FuzzStep<()> {
    match plan {
        Hire::ForeignResult | Hire::CallbackNever if !transfers.is_empty() => {
            return finding(
                Oracle::Verdict,
                format!(
                    "the orchestrator paid for a job answered {plan:?}, which has no result of its own: {} (CHO-030, CHO-038)",
                    crate::finding::json(transfers)
                ),
            );
        }
        Hire::CostOverBudget => {
            if let Some(t) = transfers
                .iter()
                .find(|t| t["amount"].as_f64().is_some_and(|a| a > job_budget + 1e-9))
            {
                return finding(
                    Oracle::Verdict,
                    format!("the orchestrator paid {} for a job whose budget was {job_budget} (CHO-033)", t["amount"]),
                );
            }
        }
        Hire::TransferFailed if !transfers.is_empty() && crate::fuzzing::client::took(run) => {
            return finding(
                Oracle::Verdict,
                "the orchestrator reported success although its transfer was answered TRANSFER_FAILED (CHO-040)",
            );
        }
        _ => {}
    }
    Ok(())
}

/// Checks that nothing is paid for a job whose reply does not say SUCCESS (CHO-038,
/// CHO-041); a callback plan, whose result comes to the callback_url, is left out.
fn check_paid_for_success(
    run: &crate::counterparty::DriverRun,
    plan: Hire,
    transfers: &[Value],
) -> FuzzStep<()> {
    // A payment needs a result that says SUCCESS: the job reply, or (after a 202)
    // the result the harness POSTed to the callback_url.
    if let (Some(t), true) = (transfers.first(), plan != Hire::Callback) {
        let job_reply = run
            .exchanges
            .iter()
            .find(|x| hired_by_job_path(x.path.split('?').next().unwrap_or_default()).is_some());
        let said: Value = job_reply
            .and_then(|x| serde_json::from_slice(&x.answered).ok())
            .unwrap_or(Value::Null);
        if said["status"] != "SUCCESS" {
            return finding(
                Oracle::Verdict,
                format!(
                    "the orchestrator paid for a job answered {plan:?}, whose reply says status {}: {t} (CHO-038, CHO-041)",
                    said["status"]
                ),
            );
        }
    }
    Ok(())
}

/// A hire that pays, every reply keeping its value: the job is complete and its
/// output taken, and the payment gets the verdict `run` gives it (`judge_payment`,
/// CHO-033, CHO-038).
fn check_payment(
    run: &crate::counterparty::DriverRun,
    plan: Hire,
    c: &ClientCase,
    served: &crate::fuzzing::client::Served,
    transfers: &[Value],
    job_budget: f64,
) -> FuzzStep<()> {
    use crate::fuzzing::client::must_complete;
    if plan != Hire::TransferFailed {
        let respelled = served.applied && !matches!(c.edit, crate::fuzzing::client::Edit::None);
        must_complete(
            run,
            respelled,
            &format!("a hire answered {plan:?} ({})", c.edit),
        )?;
    }
    // The payment's verdict is the one `run` gives (`judge_payment`): another
    // amount within the budget is a warning there, so no finding here.
    use {judge_payment, Payment, HIRE_COST};
    match judge_payment(transfers, HIRE_COST, job_budget) {
        Payment::Exact | Payment::OtherAmount(_) => {}
        other => {
            return finding(
                Oracle::Verdict,
                format!(
                    "the orchestrator paid {} for one job whose execution_cost is {HIRE_COST:.2} within a budget of {job_budget}: {other:?} (CHO-033, CHO-038)",
                    crate::finding::json(&transfers.iter().map(|t| &t["amount"]).collect::<Vec<_>>())
                ),
            );
        }
    }
    Ok(())
}
