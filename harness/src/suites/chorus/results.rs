//! Job results (chorus.md §3.4): reading a result from the reply or the callback, its
//! checks, the FAILURE case, and how the fuzzer judges a job's result.

use super::errors::{rejected_row, Model};
use super::wire::{same_id, shape_findings, two_decimals, Resp};
use crate::case::{Level, Step};
use crate::drive::callback::CallbackListener;
use crate::finding::{quote, Finding};
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, finding, Codes, Expected, FuzzStep, Observed, Oracle};
use crate::rules::rules;
use crate::script::Ctx;
use crate::template::render_json;
use reference_impl::wire::{is_uuid, json};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

rules! {
    PROFILE_RESULT_DELIVERY {
        key: "chorus/profile:result_delivery",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/job-echo",
        summary: "job results come as the profile's [chorus] result_delivery says (sync, callback or either)",
        fails: "a result in the /jobs response where the profile says callback, or none there where it says sync",
        passes: "the result delivered the way the profile declares",
        setting: Some("[chorus] result_delivery"),
    }
    JOB_NO_CALLBACK {
        key: "chorus/job:no-callback",
        requirements: &["CHO-026"],
        level: None,
        owner: "chorus/job-echo",
        summary: "a job answered without a final result gets its result POSTed to callback_url",
        fails: "/jobs answered without a final result and no result was POSTed to callback_url within the case timeout",
        passes: "a final result at callback_url in time",
    }
    JOB_CALLBACK_NOT_JSON {
        key: "chorus/job:callback-not-json",
        requirements: &["CHO-001", "CHO-026"],
        level: None,
        owner: "chorus/job-echo",
        summary: "the result POSTed to callback_url is JSON",
        fails: "the body POSTed to callback_url is not JSON",
        passes: "a JSON result body",
    }
    SCHEMA_JOB_RESULT {
        key: "chorus/schema:job-result:*",
        requirements: &["CHO-029"],
        level: None,
        owner: "chorus/job-echo",
        summary: "a final job result matches the job-result schema",
        fails: "a member of the result (timestamp, status, ids, cost, error_message) missing, of another type or outside its pattern; values the job sent invalid on purpose are not judged",
        passes: "a result the schema validates",
    }
    JOB_RESULT_JOB_ID {
        key: "chorus/job-result:job-id",
        requirements: &["CHO-030"],
        level: None,
        owner: "",
        summary: "a job result names the job it answers",
        fails: "the result's job_id is not the request's (however the UUID is written)",
        passes: "the request's job_id",
    }
    JOB_RESULT_AGENT_ID {
        key: "chorus/job-result:agent-id",
        requirements: &["CHO-030"],
        level: None,
        owner: "",
        summary: "a job result names the agent that ran it",
        fails: "the result's agent_id is not the registered agent's",
        passes: "the registered agent_id",
    }
    PROFILE_FIXTURE_OUTPUT {
        key: "chorus/profile:fixture_output",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "the fixture's output_data holds what the profile's [chorus] fixture_output describes",
        fails: "the output_data does not hold the members of fixture_output: set it to what the fixture returns",
        passes: "output_data holding fixture_output",
        setting: Some("[chorus] fixture_output"),
    }
    JOB_RESULT_COST_DECIMALS {
        key: "chorus/job-result:cost-decimals",
        requirements: &["CHO-005", "CHO-033"],
        level: None,
        owner: "",
        summary: "execution_cost has at most two decimals",
        fails: "an execution_cost with more than two decimals",
        passes: "credits to the cent",
    }
    JOB_RESULT_TIME {
        key: "chorus/job-result:time",
        requirements: &["CHO-034"],
        level: None,
        owner: "",
        summary: "execution_time_ms is no longer than the job took",
        fails: "execution_time_ms exceeds the observed round trip by more than a second",
        passes: "a time within the round trip",
    }
    PROFILE_FIXTURE_FAILING_INPUT {
        key: "chorus/profile:fixture_failing_input",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "the profile's [chorus] fixture_failing_input is an input the fixture fails on",
        fails: "the fixture processed that input with a result other than FAILURE: set it to an input the fixture fails on",
        passes: "a FAILURE result, or a refusal (a warning)",
        setting: Some("[chorus] fixture_failing_input"),
    }
    JOB_FAILURE_RESULT_REFUSED {
        key: "chorus/job-failure-result:refused",
        requirements: &["CHO-032"],
        level: Some(Level::Should),
        owner: "chorus/job-failure-result",
        summary: "a job whose input the fixture cannot process ends in a FAILURE result rather than a refusal",
        fails: "the job with the profile's fixture_failing_input refused (a 4xx, or a reply with an error code other than EXECUTION_ERROR) instead of answered with a FAILURE result; a warning",
        passes: "a FAILURE result with an error_message, with or without error_code EXECUTION_ERROR",
    }
}

/// A result's ids, as the job-echo case judges them: the job_id of the job it
/// answers (when the job carried a UUID; a fuzzed one is the harness's) and the
/// agent_id of the agent that ran it (CHO-030), each compared as an id ([`same_id`]).
pub fn judge_result_ids(ctx: &mut Ctx, result: &Value, job: &Value, agent_id: &str) {
    let same = |a: &Value, b: &str| a.as_str().is_some_and(|x| same_id(x, b));
    let sent = job["job_id"]
        .as_str()
        .filter(|id| reference_impl::wire::is_uuid(id));
    if let Some(id) = sent.filter(|id| !same(&result["job_id"], id)) {
        ctx.deviation(JOB_RESULT_JOB_ID.found(format!(
            "the result's job_id {} is not the request's {id:?}",
            result["job_id"]
        )));
    }
    if !same(&result["agent_id"], agent_id) {
        ctx.deviation(JOB_RESULT_AGENT_ID.found(format!(
            "the result's agent_id {} is not the registered {agent_id:?}",
            result["agent_id"]
        )));
    }
}

/// A SUCCESS result's execution_cost, as the job-echo case judges it: credits with at
/// most two decimals (CHO-005, CHO-033; its type and sign are the job-result
/// schema's), and a warning above the job's budget (CHO-A20).
pub fn judge_cost(ctx: &mut Ctx, result: &Value, job: &Value) {
    let Some(cost) = result["execution_cost"].as_f64() else {
        return;
    };
    if !two_decimals(cost) {
        ctx.deviation(
            JOB_RESULT_COST_DECIMALS
                .found(format!("execution_cost {cost} has more than two decimals")),
        );
    }
    if cost > job["budget"].as_f64().unwrap_or(0.0) {
        ctx.warn(format!(
            "execution_cost {cost} exceeds the budget (CHO-A20)"
        ));
    }
}

/// What a job came to.
pub enum JobOutcome {
    /// A final result (its status upper-cased), how it came, and the round trip.
    Result {
        result: Value,
        via: &'static str,
        rtt: Duration,
    },
    /// The job was refused.
    Rejected(Resp),
}

pub(super) fn is_final(v: &Value) -> bool {
    v["status"]
        .as_str()
        .is_some_and(|s| s.eq_ignore_ascii_case("SUCCESS") || s.eq_ignore_ascii_case("FAILURE"))
}

/// A final result, judged once by the schema (findings owned by the echo case) and
/// read on with its status upper-cased. A member that echoes a value the job sent
/// invalid on purpose (`sent` breaks the job-request schema there, a job_id "123")
/// is not judged again for that value: the finding would be the harness's own.
pub fn read_result(ctx: &mut Ctx, v: &Value, sent: &Value) -> Value {
    let echoed = echoed_invalid(ctx, v, sent);
    shape_findings(ctx, "job-result", &SCHEMA_JOB_RESULT, v, |f| {
        echoed
            .iter()
            .any(|m| f.detail() == format!("/{m}") || f.detail().starts_with(&format!("/{m}/")))
    });
    for m in &echoed {
        ctx.note(format!(
            "the result echoes {m} {} as the job sent it (invalid on purpose); not judged again",
            v[m.as_str()]
        ));
    }
    let mut out = v.clone();
    if let Some(s) = v["status"].as_str() {
        out["status"] = json!(s.to_ascii_uppercase());
    }
    out
}

/// The top-level members of `result` that repeat `sent`'s value where `sent` itself
/// breaks the job-request schema.
fn echoed_invalid(ctx: &Ctx, result: &Value, sent: &Value) -> Vec<String> {
    let Ok(bad) = ctx.shared.schemas.violations("chorus/job-request", sent) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for v in bad {
        let member = v
            .pointer
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        if !member.is_empty()
            && result.get(&member).is_some()
            && result.get(&member) == sent.get(&member)
            && !out.contains(&member)
        {
            out.push(member);
        }
    }
    out
}

pub(super) fn delivery_finding(summary: String) -> Finding {
    PROFILE_RESULT_DELIVERY.found(summary)
}

/// The final result POSTed to callback_url within the case's deadline (CHO-026),
/// read as [`read_result`] reads it; a callback that never comes, or is not JSON,
/// blocks the case.
pub(super) async fn callback_result(
    ctx: &mut Ctx,
    listener: &mut CallbackListener,
    r: &Resp,
    body: &Value,
) -> Step<Value> {
    let wait = Duration::from_millis(ctx.profile().timing.case_timeout_ms);
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(bytes) = listener.next(left).await else {
            let f = JOB_NO_CALLBACK.found(format!(
                "/jobs answered {}, and no result was POSTed to callback_url within {} ms",
                r.describe(),
                wait.as_millis()
            ));
            return Err(ctx.block(f));
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        ctx.note(format!("callback received: {text}"));
        let v: Value = match json::parse(&bytes) {
            Ok(t) => t.to_serde(),
            Err(e) => {
                let f = JOB_CALLBACK_NOT_JSON.found(format!(
                    "the body POSTed to callback_url is not JSON ({e}): {}",
                    quote(&text)
                ));
                return Err(ctx.block(f));
            }
        };
        if is_final(&v) {
            return Ok(read_result(ctx, &v, body));
        }
    }
}

/// Judges one row of a table of bad jobs: `None` when the agent refused it or
/// answered a FAILURE result, else the row with the result it processed.
pub fn job_row(ctx: &mut Ctx, outcome: JobOutcome, what: &str) -> Option<String> {
    match outcome {
        JobOutcome::Rejected(r) => rejected_row(ctx, &r, what),
        JobOutcome::Result { result, .. } if result["status"] == "FAILURE" => {
            ctx.checked(format!("{what}: FAILURE result"));
            None
        }
        JobOutcome::Result { result, .. } => Some(format!("{what}: processed: {result}")),
    }
}

/// What the fixture returns for `text` ([chorus] fixture_output).
pub fn fixture_output(ctx: &Ctx, text: &str) -> Value {
    render_json(
        &ctx.profile().chorus.fixture_output,
        &[("text", json!(text))],
    )
    .unwrap_or_else(|_| json!({"text": text}))
}

/// `got` holds every member of `want` with its value (objects member by member,
/// anything else equal).
pub fn contains(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|x| contains(x, v))),
        _ => got == want,
    }
}

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Jobs

/// Judges a job result (from the response or the callback).
pub(super) fn judge_result(
    f: &mut FuzzCtx,
    result: &Value,
    (sent, text): (&Value, &str),
    m: &Model,
    fx: &Fixture,
    oracle: Oracle,
) -> FuzzStep<()> {
    let r = Resp {
        http: 200,
        json: Some(result.clone()),
        raw: String::new(),
    };
    // The schema judged the result when it was read (`read_result`).
    verdict::rules_since(&f.ctx, 0)?;
    let sent_id = sent["job_id"].as_str().filter(|s| is_uuid(s));
    if let Some(jid) = sent_id {
        if !result["job_id"]
            .as_str()
            .is_some_and(|got| same_id(got, jid))
        {
            let other = finding(
                Oracle::Job,
                format!(
                    "the result names job {}, not the request's {jid} (CHO-030)",
                    result["job_id"]
                ),
            );
            return verdict::under(Some(JOB_RESULT_JOB_ID.key), other);
        }
    }
    let judged = match (result["status"].as_str(), m.verdict()) {
        (Some("SUCCESS"), Expected::Reject(_)) => finding(
            oracle,
            format!(
                "the job should be rejected ({}), yet ended in SUCCESS: {result}",
                m.explain()
            ),
        ),
        (Some("SUCCESS"), Expected::Accept(..)) => {
            return check_success(f, result, (sent, text), fx)
        }
        (Some("FAILURE"), Expected::Accept(..)) => {
            finding(oracle, format!("a valid job ended in FAILURE: {result}"))
        }
        (Some("FAILURE"), Expected::Reject(Codes::OneOf(codes))) if !codes.is_empty() => {
            if r.codes().iter().any(|c| codes.contains(&c.as_str())) {
                Ok(())
            } else {
                finding(
                    Oracle::ErrorCode,
                    format!(
                        "the job ended in FAILURE without {} ({}): {result}",
                        codes.join(" or "),
                        m.explain()
                    ),
                )
            }
        }
        _ => Ok(()),
    };
    let got = if result["status"] == "SUCCESS" {
        Observed::Carried
    } else {
        Observed::Refused(None)
    };
    verdict::under(Some(m.key_for(&got)), judged)
}

/// Checks the SUCCESS result of a valid job: its ids by the job-echo case's rule
/// (CHO-030), and an execution_cost in credits with two decimals (CHO-005,
/// CHO-033); a cost above the budget warns (CHO-A20). The output is what the
/// profile's fixture_output says the fixture returns for `text`; another output is
/// the profile's to fix, as `run` reports it (`chorus/profile:fixture_output`), not a
/// finding.
fn check_success(
    f: &mut FuzzCtx,
    result: &Value,
    (sent, text): (&Value, &str),
    fx: &Fixture,
) -> FuzzStep<()> {
    let from = f.ctx.findings().len();
    judge_result_ids(&mut f.ctx, result, sent, &fx.agent_id);
    verdict::rules_since(&f.ctx, from)?;
    let want = fixture_output(&f.ctx, text);
    if !contains(&result["output_data"], &want) {
        f.ctx.note(format!(
            "the fixture's output_data {} does not hold {want}, as [chorus] fixture_output describes (a profile matter, not judged)",
            result["output_data"]
        ));
    }
    // The cost by the job-echo case's rule (its type and sign by the schema, judged
    // when the result was read).
    let from = f.ctx.findings().len();
    judge_cost(&mut f.ctx, result, sent);
    verdict::rules_since(&f.ctx, from)
}

/// The fixture agent, learnt once per run.
pub(super) struct Fixture {
    pub(super) agent_id: String,
    pub(super) url: String,
    pub(super) skill: String,
    pub(super) cost: f64,
}
