//! Job requests (chorus.md §3.3): the fixture agent, the job a case sends, the cases on
//! refusals, and the fuzzer's jobs with what the spec fixes for each.

use super::discovery::discover;
use super::errors::{
    expect_code, extras, is_rejection, judge, no_server_error, rejected_row, status_of, Model,
    Subject,
};
use super::registration::unique_skill;
use super::results::{
    callback_result, contains, delivery_finding, fixture_output, is_final, job_row, judge_cost,
    judge_result, judge_result_ids, read_result, Fixture, JobOutcome, JOB_FAILURE_RESULT_REFUSED,
    JOB_RESULT_TIME, PROFILE_FIXTURE_FAILING_INPUT, PROFILE_FIXTURE_OUTPUT,
};
use super::wire::{
    credits_of, credits_value, encode, floor_cents, id_class, id_value, memo_part, memo_set,
    now_utc, numeric_string, oracle_for, post, post_bytes, remove, set, setup, timestamp_class,
    timestamp_value, two_decimals, unreadable_bodies, Base, Class, Credits, IdForm, Parsed, Resp,
    TsForm, Wire,
};
use crate::case::{fail, skip, Bindings, Case, Level, Step, Stop};
use crate::drive::callback::CallbackListener;
use crate::drive::Transport;
use crate::finding::Finding;
use crate::fuzzing::mutate::Val;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{tagged, FuzzStep, Oracle};
use crate::profile::{ResultDelivery, SetupEvent};
use crate::rules::rules;
use crate::script::Ctx;
use crate::template::render_json;
use arbitrary::Arbitrary;
use reference_impl::wire::{is_uuid, new_id};
use serde_json::{json, Value};
use std::time::Instant;

rules! {
    PROFILE_FIXTURE_SKILL {
        key: "chorus/profile:fixture_skill",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/job-echo",
        summary: "an agent is listed under the profile's fixture skill ([chorus] fixture_skill)",
        fails: "discovery lists no agent under the fixture skill: set fixture_skill to the skill of the agent the target registers at start-up",
        passes: "the fixture agent listed",
        setting: Some("[chorus] fixture_skill"),
    }
    PROFILE_FIXTURE_INPUT {
        key: "chorus/profile:fixture_input",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/job-echo",
        summary: "the fixture agent completes a valid job with the profile's [chorus] fixture_input",
        fails: "the fixture refuses a valid job or answers it with FAILURE: set fixture_input to an input the fixture takes",
        passes: "a SUCCESS result",
        setting: Some("[chorus] fixture_input"),
    }
    JOB_REJECTS_INVALID {
        key: "chorus/job-rejects-invalid",
        requirements: &["CHO-003", "CHO-024"],
        level: None,
        owner: "chorus/job-rejects-invalid",
        summary: "a job with job_id \"123\", without skill_name or input_data, or without a JSON object as its body, is rejected",
        fails: "the agent processed or failed on one or more bad jobs (each named: job_id \"123\", no skill_name, no input_data, no body, a non-JSON body, a JSON array)",
        passes: "a 4xx or a FAILURE result for each",
    }
    JOB_CURRENCY_TAKEN {
        key: "chorus/job-rejects-invalid:currency",
        requirements: &["CHO-025"],
        level: Some(Level::Info),
        owner: "chorus/job-rejects-invalid",
        summary: "a job in a currency other than chorus_credits_v1 should be rejected (informational)",
        fails: "the agent processed a job with currency \"usd\"",
        passes: "a 4xx or a FAILURE result",
    }
}

// ---------------------------------------------------------------------------
// Jobs

/// The fixture agent: its discovery entry and its jobs URL (CHO-A3). No agent with
/// the fixture skill blocks the case with a PROFILE finding.
pub async fn fixture_agent(ctx: &mut Ctx) -> Step<(Value, String)> {
    let skill = ctx.profile().chorus.fixture_skill.clone();
    let entries = discover(ctx, &format!("skill={skill}")).await?;
    let Some(e) = entries.first().cloned() else {
        let f = PROFILE_FIXTURE_SKILL.found(format!(
                "no agent is listed under the fixture skill {skill:?}: set [chorus] fixture_skill to the skill of the agent the target registers at start-up"
            ));
        return Err(ctx.block(f));
    };
    let endpoint = e["api_endpoint"]
        .as_str()
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_string();
    let url = if endpoint.ends_with("/jobs") {
        endpoint
    } else {
        format!("{endpoint}/jobs")
    };
    ctx.note(format!("fixture agent {} at {url}", e["agent_id"]));
    Ok((e, url))
}

/// The fixture's `input_data` for `text` ([chorus] fixture_input).
pub fn fixture_input(ctx: &Ctx, text: &str) -> Value {
    render_json(
        &ctx.profile().chorus.fixture_input,
        &[("text", json!(text))],
    )
    .unwrap_or_else(|_| json!({"text": text}))
}

/// A complete job request for the fixture agent.
pub fn job(ctx: &Ctx, input: Value, budget: f64, callback_url: &str) -> Value {
    json!({
        "job_id": new_id(), "orchestrator_id": new_id(), "skill_name": ctx.profile().chorus.fixture_skill,
        "input_data": input, "budget": budget, "currency": "chorus_credits_v1",
        "callback_url": callback_url, "timestamp_utc": now_utc(),
    })
}

/// A change made to a valid job request.
type Mutation = fn(&mut Value);

/// The fixture answered a valid job with FAILURE: it takes another input.
/// The case's control for a job it expects refused: a valid job for the fixture skill
/// must complete with SUCCESS first. A refusal or a FAILURE of it is the one
/// fixture finding job-echo owns, which blocks the case.
async fn job_control(ctx: &mut crate::script::Ctx, url: &str) -> crate::case::Step<()> {
    let (job, outcome) = run_job(ctx, url, |_| {}).await?;
    match outcome {
        JobOutcome::Result { result, .. } if result["status"] == "SUCCESS" => {
            ctx.control("a valid job for the fixture skill");
            Ok(())
        }
        JobOutcome::Result { result, .. } => Err(ctx.block(fixture_failed(&result, &job))),
        JobOutcome::Rejected(r) => Err(ctx.block(fixture_refused(&r, &job))),
    }
}

/// The fixture agent refused a valid job: the one PROFILE finding job-echo owns.
fn fixture_refused(r: &Resp, job: &Value) -> Finding {
    PROFILE_FIXTURE_INPUT.found(format!(
            "the fixture agent refused a valid job with {}: if it takes another input than {}, set [chorus] fixture_input",
            r.describe(),
            job["input_data"]
        ))
}

fn fixture_failed(result: &Value, job: &Value) -> Finding {
    PROFILE_FIXTURE_INPUT.found(format!(
            "the fixture answered FAILURE ({}) to input_data {}: if it takes another input, set [chorus] fixture_input",
            result["error_message"], job["input_data"]
        ))
}

/// Sends a job and waits for its result, synchronously or through a callback
/// listener, as the profile allows (CHO-A4, CHO-A17).
pub async fn run_job(
    ctx: &mut Ctx,
    jobs_url: &str,
    mutate: impl FnOnce(&mut Value),
) -> Step<(Value, JobOutcome)> {
    let mut listener = CallbackListener::start(ctx.profile().timing.max_response_bytes)
        .await
        .or_else(skip)?;
    let input = fixture_input(ctx, "hello chorus");
    let mut body = job(ctx, input, 0.15, &listener.url);
    mutate(&mut body);
    let pick = |k: &str| body.get(k).cloned().unwrap_or(Value::Null);
    let vars = [
        ("job_id", pick("job_id")),
        ("orchestrator_id", pick("orchestrator_id")),
        ("skill_name", pick("skill_name")),
        ("budget", pick("budget")),
        ("callback_url", pick("callback_url")),
    ];
    setup(ctx, SetupEvent::Job, &vars).await?;
    let delivery = ctx.profile().chorus.result_delivery;
    let started = Instant::now();
    let r = post(ctx, Base::Url(jobs_url.to_string()), "", &body).await?;
    if !r.ok() {
        return Ok((body, JobOutcome::Rejected(r)));
    }
    if let Some(j) = r.json.as_ref().filter(|j| is_final(j)) {
        if delivery == ResultDelivery::Callback {
            ctx.finding(delivery_finding(format!(
                "the result came in the /jobs response ({}); the profile says result_delivery = callback: set it to sync or either",
                r.describe()
            )));
        }
        let result = read_result(ctx, j, &body);
        // A FAILURE result is a result, also with error_code EXECUTION_ERROR (the
        // agent ran and failed, CHO-032, CHO-036); another code makes it a refusal.
        if result["status"] == "FAILURE" && r.codes().iter().any(|c| c != "EXECUTION_ERROR") {
            return Ok((body, JobOutcome::Rejected(r)));
        }
        let rtt = started.elapsed();
        return Ok((
            body,
            JobOutcome::Result {
                result,
                via: "sync",
                rtt,
            },
        ));
    }
    if r.refusal_in_2xx() {
        return Ok((body, JobOutcome::Rejected(r)));
    }
    if delivery == ResultDelivery::Sync {
        let f = delivery_finding(format!(
            "no result in the /jobs response ({}); the profile says result_delivery = sync: set it to callback or either",
            r.describe()
        ));
        return Err(ctx.block(f));
    }
    ctx.note(format!(
        "/jobs answered {}; waiting for the callback",
        r.describe()
    ));
    let result = callback_result(ctx, &mut listener, &r, &body).await?;
    let rtt = started.elapsed();
    Ok((
        body,
        JobOutcome::Result {
            result,
            via: "callback",
            rtt,
        },
    ))
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "job-echo",
        "the fixture agent completes a job: result schema, ids, output, cost and time",
        [
            "CHO-003", "CHO-004", "CHO-006", "CHO-023", "CHO-024", "CHO-026", "CHO-029", "CHO-030",
            "CHO-031", "CHO-033", "CHO-034"
        ],
        Fact,
        |ctx| {
            let (agent, url) = fixture_agent(ctx).await?;
            let (job, outcome) = run_job(ctx, &url, |_| {}).await?;
            // The result's schema (timestamp, status, members) is judged in `run_job`.
            let (result, via, rtt) = match outcome {
                JobOutcome::Result { result, via, rtt } => (result, via, rtt),
                JobOutcome::Rejected(r) => return Err(ctx.block(fixture_refused(&r, &job))),
            };
            ctx.checked(format!("result delivered {via}"));
            judge_result_ids(
                ctx,
                &result,
                &job,
                agent["agent_id"].as_str().unwrap_or_default(),
            );
            if result["status"] != "SUCCESS" {
                return Err(ctx.block(fixture_failed(&result, &job)));
            }
            let want = fixture_output(ctx, "hello chorus");
            if !contains(&result["output_data"], &want) {
                ctx.deviation(PROFILE_FIXTURE_OUTPUT.found(format!("the fixture's output_data {} does not hold {want}, as [chorus] fixture_output describes: set fixture_output to what the fixture returns for input_data {}",
                    result["output_data"], job["input_data"])));
            }
            judge_cost(ctx, &result, &job);
            if let Some(ms) = result["execution_time_ms"].as_u64() {
                if u128::from(ms) > rtt.as_millis() + 1000 {
                    ctx.deviation(JOB_RESULT_TIME.found(format!(
                        "execution_time_ms {ms} exceeds the observed round trip of {} ms",
                        rtt.as_millis()
                    )));
                }
            }
            Ok(())
        }
    ),
    case!(
        "job-skill-mismatch",
        "a job for a skill the agent lacks draws SKILL_MISMATCH",
        ["CHO-027", "CHO-046"],
        Fact,
        |ctx| {
            let (_, url) = fixture_agent(ctx).await?;
            job_control(ctx, &url).await?;
            let (_, outcome) =
                run_job(ctx, &url, |j| j["skill_name"] = json!("h_no_such_skill")).await?;
            match outcome {
                JobOutcome::Rejected(r) => expect_code(ctx, &r, "SKILL_MISMATCH", "unknown skill"),
                JobOutcome::Result { result, .. } => {
                    let r = Resp {
                        http: 200,
                        json: Some(result),
                        raw: String::new(),
                    };
                    expect_code(ctx, &r, "SKILL_MISMATCH", "unknown skill")
                }
            }
        }
    ),
    case!(
        "job-budget-insufficient",
        "a budget below the cost draws BUDGET_INSUFFICIENT; a budget equal to it is accepted",
        ["CHO-028"],
        Fact,
        |ctx| {
            let (agent, url) = fixture_agent(ctx).await?;
            job_control(ctx, &url).await?;
            let cost = agent["skill"]["cost_per_call"].as_f64().unwrap_or(0.1);
            let low = floor_cents(cost / 2.0);
            let (_, outcome) = run_job(ctx, &url, |j| j["budget"] = json!(low)).await?;
            match outcome {
                JobOutcome::Rejected(r) => {
                    expect_code(ctx, &r, "BUDGET_INSUFFICIENT", "budget below cost")?
                }
                JobOutcome::Result { result, .. } => expect_code(
                    ctx,
                    &Resp {
                        http: 200,
                        json: Some(result),
                        raw: String::new(),
                    },
                    "BUDGET_INSUFFICIENT",
                    "budget below cost",
                )?,
            }
            let (job, exact) = run_job(ctx, &url, |j| j["budget"] = json!(cost)).await?;
            match exact {
                JobOutcome::Result { result, .. } if result["status"] == "SUCCESS" => Ok(()),
                JobOutcome::Result { result, .. } => {
                    let r = Resp {
                        http: 200,
                        json: Some(result.clone()),
                        raw: String::new(),
                    };
                    if r.codes().iter().any(|c| c == "BUDGET_INSUFFICIENT") {
                        fail(format!("a budget equal to the cost {cost} failed with BUDGET_INSUFFICIENT: {result} (CHO-028)"))
                    } else {
                        Err(ctx.block(fixture_failed(&result, &job)))
                    }
                }
                JobOutcome::Rejected(r) => fail(format!(
                    "a budget equal to the cost {cost} was refused: {} (CHO-028)",
                    r.describe()
                )),
            }
        }
    ),
    case!(
        "job-rejects-invalid",
        "jobs with job_id \"123\", without skill_name or input_data, or without a JSON object as body, are rejected",
        ["CHO-003", "CHO-024", "CHO-025"],
        Fact,
        |ctx| {
            let (_, url) = fixture_agent(ctx).await?;
            job_control(ctx, &url).await?;
            let mutations: [(&str, Mutation); 3] = [
                ("job_id \"123\"", |j| j["job_id"] = json!("123")),
                ("no skill_name", |j| {
                    j.as_object_mut().map(|o| o.remove("skill_name"));
                }),
                ("no input_data", |j| {
                    j.as_object_mut().map(|o| o.remove("input_data"));
                }),
            ];
            let mut taken = Vec::new();
            for (what, m) in mutations {
                let (_, outcome) = run_job(ctx, &url, m).await?;
                taken.extend(job_row(ctx, outcome, what));
            }
            // What every POST route refuses alike, sent to the job route too.
            for (what, r) in unreadable_bodies(ctx, Base::Url(url.clone()), "").await? {
                taken.extend(rejected_row(ctx, &r, what));
            }
            ctx.rows_wrong(&JOB_REJECTS_INVALID, "the agent processed bad jobs", &taken);
            let (_, usd) = run_job(ctx, &url, |j| j["currency"] = json!("usd")).await?;
            let usd: Vec<String> = job_row(ctx, usd, "currency \"usd\"").into_iter().collect();
            ctx.rows_wrong(
                &JOB_CURRENCY_TAKEN,
                "the agent processed a job in another currency",
                &usd,
            );
            Ok(())
        }
    ),
    case!(
        "job-failure-result",
        "a job with bad input ends in a FAILURE result that explains itself",
        ["CHO-032"],
        Fact,
        |ctx| {
            let (_, url) = fixture_agent(ctx).await?;
            let bad: Value = serde_json::from_str(&ctx.profile().chorus.fixture_failing_input)
                .unwrap_or(json!({"text": 42}));
            let (_, outcome) = run_job(ctx, &url, |j| j["input_data"] = bad.clone()).await?;
            // The FAILURE result's error_message is judged by the result schema in `run_job`.
            match outcome {
            JobOutcome::Result { result, .. } if result["status"] == "FAILURE" => {
                ctx.checked(format!("FAILURE: {}", result["error_message"]));
                Ok(())
            }
            JobOutcome::Result { result, .. } => {
                Err(Stop::Finding(PROFILE_FIXTURE_FAILING_INPUT.found(format!("the fixture processed input_data {bad}, which [chorus] fixture_failing_input says it cannot: {result}; set it to an input the fixture fails on"))))
            }
            JobOutcome::Rejected(r) => {
                ctx.deviation(JOB_FAILURE_RESULT_REFUSED.found(format!("bad input was refused with {} rather than answered with a FAILURE result", r.describe())));
                Ok(())
            }
        }
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum SkillForm {
    #[default]
    Fixture,
    Other,
    Upper,
    Empty,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum InputForm {
    #[default]
    Text,
    TextNot(Val),
    NoText,
    NotObject(Val),
    Extra(Val),
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum JobField {
    #[default]
    JobId,
    Orchestrator,
    Skill,
    Input,
    Budget,
    Currency,
    Timestamp,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum JobMut {
    #[default]
    Keep,
    Skill(SkillForm),
    Budget(Credits),
    BudgetAtCost(i8),
    JobId(IdForm),
    Orchestrator(IdForm),
    Input(InputForm),
    Currency(Val),
    Timestamp(TsForm),
    Remove(JobField),
    Set(JobField, Val),
    Extra(u8, Val),
    NotAnObject(Val),
}

/// The change a job case starts from (before its mutations).
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum JobTweak {
    #[default]
    None,
    Valid,
    OtherSkill,
    BudgetBelowCost(u8),
    BudgetAroundCost(i8),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) struct JobCase {
    text: String,
    tweak: JobTweak,
    muts: Vec<JobMut>,
    wire: Wire,
}

fn job_model(v: &Value, fx: &Fixture) -> Model {
    let Some(o) = v.as_object() else {
        return Model::rejecting(JOB_SUBJECT);
    };
    let mut m = Model::of(JOB_SUBJECT);
    extras(
        &mut m,
        o,
        &[
            "job_id",
            "orchestrator_id",
            "skill_name",
            "input_data",
            "budget",
            "currency",
            "callback_url",
            "timestamp_utc",
        ],
    );
    m.note(id_class(o.get("job_id")), "job_id (CHO-003)");
    note_job_skill(&mut m, o.get("skill_name"), fx);
    note_job_input(&mut m, o.get("input_data"));
    note_budget(&mut m, o.get("budget"), fx);
    if o.get("currency") != Some(&json!("chorus_credits_v1")) {
        m.note(
            Class::Open,
            "currency other than chorus_credits_v1 (CHO-025)",
        );
    }
    match o.get("orchestrator_id") {
        Some(Value::String(s)) if is_uuid(s) => {}
        _ => m.note(Class::Open, "orchestrator_id missing or no UUID (CHO-A11)"),
    }
    if !o.get("callback_url").is_some_and(Value::is_string) {
        m.note(Class::Open, "callback_url missing or retyped");
    }
    m.note(
        timestamp_class(o.get("timestamp_utc")),
        "timestamp_utc (CHO-004)",
    );
    m
}

/// Notes a job's skill_name against the fixture's skill: missing, empty or not a
/// string (CHO-024), another skill, which names SKILL_MISMATCH (CHO-027), or the
/// fixture's skill in other letter case, left open.
fn note_job_skill(m: &mut Model, skill: Option<&Value>, fx: &Fixture) {
    match skill {
        Some(Value::String(s)) if *s == fx.skill => {}
        Some(Value::String(s)) if s.eq_ignore_ascii_case(&fx.skill) => {
            m.note(Class::Open, "the fixture's skill in other letter case");
        }
        Some(Value::String(s)) if !s.is_empty() => m.code(
            "SKILL_MISMATCH",
            format!("the fixture has no skill {s:?} (CHO-027)"),
        ),
        _ => {
            m.note(
                Class::Reject,
                "skill_name missing, empty or not a string (CHO-024)",
            );
        }
    }
}

/// Notes a job's input_data: an object (CHO-024) with a string text, the echo
/// fixture's input.
fn note_job_input(m: &mut Model, input: Option<&Value>) {
    match input {
        Some(Value::Object(i)) => {
            if !i.get("text").is_some_and(Value::is_string) {
                m.note(
                    Class::Open,
                    "input_data without a string text (the echo fixture's input)",
                );
            }
        }
        _ => m.note(
            Class::Reject,
            "input_data missing or not an object (CHO-024)",
        ),
    }
}

/// Notes a job's budget against the fixture's cost: absent (CHO-A11), negative
/// (CHO-005), below the cost, which names BUDGET_INSUFFICIENT (CHO-028), more than
/// two decimals (CHO-A10) or not a number (CHO-024); BUDGET_INSUFFICIENT may apply
/// unless the budget is a number that covers the cost.
fn note_budget(m: &mut Model, budget: Option<&Value>, fx: &Fixture) {
    match budget {
        None | Some(Value::Null) => m.note(Class::Open, "no budget (CHO-A11)"),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x < 0.0 => m.note(Class::Reject, "a negative budget (CHO-005)"),
            Some(x) if x > 1e9 => m.note(Class::Open, "a budget above 1e9"),
            Some(x) if x < fx.cost && two_decimals(x) => m.code(
                "BUDGET_INSUFFICIENT",
                format!("budget {x} below the cost {} (CHO-028)", fx.cost),
            ),
            Some(x) if x < fx.cost => m.note(
                Class::Reject,
                format!("budget {x} below the cost, more than two decimals"),
            ),
            Some(x) if !two_decimals(x) => m.note(
                Class::Open,
                "a budget with more than two decimals (CHO-A10)",
            ),
            Some(_) => {}
            None => m.note(Class::Open, "an unreadable budget"),
        },
        Some(s @ Value::String(_)) if numeric_string(s).is_some() => {
            m.note(Class::Open, "budget as a numeric string")
        }
        Some(_) => m.note(Class::Reject, "budget is not a number (CHO-024)"),
    }
}

fn job_key(field: JobField) -> &'static str {
    match field {
        JobField::JobId => "job_id",
        JobField::Orchestrator => "orchestrator_id",
        JobField::Skill => "skill_name",
        JobField::Input => "input_data",
        JobField::Budget => "budget",
        JobField::Currency => "currency",
        JobField::Timestamp => "timestamp_utc",
    }
}

fn job_mutate(v: &mut Value, m: &JobMut, fx: &Fixture) {
    match m {
        JobMut::Keep => {}
        JobMut::Skill(form) => {
            let s = match form {
                SkillForm::Fixture => fx.skill.clone(),
                SkillForm::Other => unique_skill(),
                SkillForm::Upper => fx.skill.to_ascii_uppercase(),
                SkillForm::Empty => String::new(),
            };
            set(v, "skill_name", json!(s));
        }
        JobMut::Budget(c) => set(v, "budget", credits_value(*c)),
        JobMut::BudgetAtCost(d) => {
            let cents = (fx.cost * 100.0).round() as i64 + i64::from(*d % 3);
            set(v, "budget", credits_of(cents.max(0)));
        }
        JobMut::JobId(form) => set(v, "job_id", id_value(*form)),
        JobMut::Orchestrator(form) => set(v, "orchestrator_id", id_value(*form)),
        JobMut::Input(form) => {
            let text = v["input_data"]["text"].clone();
            let input = match form {
                InputForm::Text => json!({"text": text}),
                InputForm::TextNot(x) => json!({"text": x.json()}),
                InputForm::NoText => json!({"data": text}),
                InputForm::NotObject(x) => x.json(),
                InputForm::Extra(x) => json!({"text": text, "x_fuzz": x.json()}),
            };
            set(v, "input_data", input);
        }
        JobMut::Currency(x) => set(v, "currency", x.json()),
        JobMut::Timestamp(form) => set(v, "timestamp_utc", timestamp_value(*form)),
        JobMut::Remove(field) => remove(v, job_key(*field)),
        JobMut::Set(field, x) => set(v, job_key(*field), x.json()),
        JobMut::Extra(i, x) => set(v, &format!("x_fuzz_{}", i % 4), x.json()),
        JobMut::NotAnObject(x) => *v = x.json(),
    }
}

async fn fixture(f: &mut FuzzCtx) -> FuzzStep<Fixture> {
    let m = match memo_part(f, "fixture") {
        Some(m) => m,
        None => {
            let (e, url) = fixture_agent(&mut f.ctx).await?;
            let m = json!({"agent_id": e["agent_id"], "url": url,
                           "cost": e["skill"]["cost_per_call"].as_f64().unwrap_or(0.1)});
            memo_set(f, "fixture", m.clone());
            m
        }
    };
    Ok(Fixture {
        agent_id: m["agent_id"].as_str().unwrap_or_default().to_string(),
        url: m["url"].as_str().unwrap_or_default().to_string(),
        skill: f.ctx.profile().chorus.fixture_skill.clone(),
        cost: m["cost"].as_f64().unwrap_or(0.1),
    })
}

pub(super) async fn job_case(f: &mut FuzzCtx, c: JobCase) -> FuzzStep<()> {
    let fx = fixture(f).await?;
    let text: String = c.text.chars().take(100).collect();
    let mut muts: Vec<JobMut> = match c.tweak {
        JobTweak::None | JobTweak::Valid => Vec::new(),
        JobTweak::OtherSkill => vec![JobMut::Skill(SkillForm::Other)],
        JobTweak::BudgetBelowCost(n) => vec![JobMut::Budget(Credits::Cents(u16::from(n) % 10))],
        JobTweak::BudgetAroundCost(d) => vec![JobMut::BudgetAtCost(d)],
    };
    muts.extend(c.muts.iter().take(3).cloned());
    let oracle = oracle_for(&c.wire);
    if let Wire::Canonical = c.wire {
        return canonical_job(f, &fx, &text, &muts, oracle).await;
    }
    raw_job(f, &fx, &text, &muts, &c.wire, oracle).await
}

/// Runs the job as the shared helpers send it (the result in the response or at the
/// callback_url, CHO-026, CHO-A4) and judges the rejection or the result.
async fn canonical_job(
    f: &mut FuzzCtx,
    fx: &Fixture,
    text: &str,
    muts: &[JobMut],
    oracle: Oracle,
) -> FuzzStep<()> {
    let input = fixture_input(&f.ctx, text);
    let ran = run_job(&mut f.ctx, &fx.url, |j| {
        set(j, "input_data", input);
        for m in muts {
            job_mutate(j, m, fx);
        }
    })
    .await;
    let (sent, outcome) = tagged(Oracle::Delivery, ran)?;
    f.fuzzed(&serde_json::to_vec(&sent).unwrap_or_default());
    let m = job_model(&sent, fx);
    match outcome {
        JobOutcome::Rejected(r) => judge(f, &r, &m, "the job", oracle),
        JobOutcome::Result { result, .. } => {
            judge_result(f, &result, (&sent, text), &m, fx, oracle)
        }
    }
}

/// Sends the job as bytes in the drawn wire form and judges the immediate reply.
async fn raw_job(
    f: &mut FuzzCtx,
    fx: &Fixture,
    text: &str,
    muts: &[JobMut],
    wire: &Wire,
    oracle: Oracle,
) -> FuzzStep<()> {
    // Raw bytes: the immediate reply is judged; a callback is not waited for.
    let mut body = job(
        &f.ctx,
        fixture_input(&f.ctx, text),
        0.15,
        "http://127.0.0.1:9/results",
    );
    for m in muts {
        job_mutate(&mut body, m, fx);
    }
    let (bytes, parsed) = encode(&body, wire);
    let (m, sent) = match parsed {
        Parsed::Json(v) => (job_model(&v, fx), v),
        Parsed::NotJson => (Model::rejecting(JOB_SUBJECT), Value::Null),
        Parsed::Unsure => (Model::unsure(JOB_SUBJECT), Value::Null),
    };
    let r = post_bytes(f, Base::Url(fx.url.clone()), "", bytes).await?;
    let fin = r.ok() && matches!(status_of(&r), Some("SUCCESS" | "FAILURE"));
    if fin && !is_rejection(&r) {
        no_server_error(&r, "the job")?;
        let result = read_result(&mut f.ctx, &r.json.clone().unwrap_or_default(), &sent);
        return judge_result(f, &result, (&sent, text), &m, fx, oracle);
    }
    if r.ok() && !fin {
        // Taken for later delivery: the callback is not waited for, so only the codes
        // are judged.
        no_server_error(&r, "the job")?;
        return Ok(());
    }
    judge(f, &r, &m, "the job", oracle)?;
    if fin {
        let result = read_result(&mut f.ctx, &r.json.clone().unwrap_or_default(), &sent);
        judge_result(f, &result, (&sent, text), &m, fx, oracle)?;
    }
    Ok(())
}

/// What a job gets wrong is filed under the job rules; a valid job for the fixture
/// refused says the fixture's input is the profile's to set, as `run`'s job-echo
/// reads it.
pub(super) const JOB_SUBJECT: Subject = Subject {
    taken: &JOB_REJECTS_INVALID,
    refused: &PROFILE_FIXTURE_INPUT,
    odd: &PROFILE_FIXTURE_INPUT,
};
