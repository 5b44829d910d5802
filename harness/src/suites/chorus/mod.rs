//! The chorus suite (chorus.md): the descriptor and the cases; its reply checks and counterparts are in `expect`, its fuzz specs in `fuzz`.

pub mod client;
pub mod expect;
pub mod fuzz;
pub mod in_process;
pub mod init;
pub mod load;
pub mod rules;
pub mod tamper;

use crate::case::{fail, fail_rows, skip, Bindings, Case, Stop, Suite, Untestable};
use crate::drive::Transport;
use crate::finding::Finding;
use crate::suites::chorus::expect::*;
use serde_json::{json, Value};

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident,
     |$ctx:ident| $body:block) => {
        crate::define_case!("chorus", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| {
            setup_case($ctx).await?;
            $body
        })
    };
}

/// A change made to a valid job request.
type Mutation = fn(&mut Value);

pub static SUITE: Suite = Suite {
    id: "chorus",
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
    reread: crate::suites::chorus::expect::reread,
    rules: rules::RULES,
    reference_client: client::REFERENCE,
    tampers: crate::suites::chorus::tamper::TAMPERS,
    // Jobs go to each agent's own URL, which the target profile names: no fixed
    // set of requests to hold a real client's to.
    defined: None,
    reply_to: Some(expect::proxy_reply),
    client_message: Some(expect::proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &crate::suites::chorus::fuzz::SPEC,
    client_fuzzer: Some(&crate::suites::chorus::fuzz::CLIENT_SPEC),
    discover: Some(crate::suites::chorus::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "CHO-036", reason: "needs a fault-injection input that makes the agent fail internally; the target profile defines none" },
    Untestable { requirement: "CHO-037", reason: "the heartbeat check behind AGENT_OFFLINE has no endpoint, interval or rule in chorus.md (CHO-A13)" },
];

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
    rules::PROFILE_FIXTURE_INPUT.found(format!(
            "the fixture agent refused a valid job with {}: if it takes another input than {}, set [chorus] fixture_input",
            r.describe(),
            job["input_data"]
        ))
}

/// The client case whose pass (a job taken and paid) is the control of the cases
/// where the client must not pay.
const CLIENT_HIRE: &str = "chorus/client-hire";

fn fixture_failed(result: &Value, job: &Value) -> Finding {
    rules::PROFILE_FIXTURE_INPUT.found(format!(
            "the fixture answered FAILURE ({}) to input_data {}: if it takes another input, set [chorus] fixture_input",
            result["error_message"], job["input_data"]
        ))
}

/// Cents, rounded down.
fn floor_cents(x: f64) -> f64 {
    (x * 100.0 + 1e-6).floor() / 100.0
}

pub const CASES: &[Case] = &[
    case!("register", "a complete registration is answered 201 with status registered, the agent_id and a reputation",
        ["CHO-001", "CHO-008", "CHO-009", "CHO-011", "CHO-012", "CHO-013"], Fact, |ctx| {
        let body = registration(&[("h_skill_register", 0.1)]);
        let r = post(ctx, Base::Registry, "register", &body).await?;
        if !r.ok() || r.refusal_in_2xx() {
            let f = rules::REGISTER_REFUSED.found(format!("a complete registration was refused: {}", r.describe()));
            return Err(ctx.block(f));
        }
        judge_registered(ctx, Some(&body), &r)
    }),
    case!("register-initial-reputation", "a new agent starts at 50.0, on registration and in discovery", ["CHO-007", "CHO-014"], Fact, |ctx| {
        let skill = unique_skill();
        // The registration reply's score is judged by `register` (chorus/reputation:initial).
        let a = register(ctx, &[(&skill, 0.1)]).await?;
        if a.reputation.is_none() {
            ctx.note("the registration reply has no numeric reputation_score (judged by chorus/register)");
        }
        let s = score(ctx, &a.id, &skill).await?;
        if (s - 50.0).abs() > 0.005 {
            ctx.finding(rules::REPUTATION_INITIAL.found(format!("discovery shows a new agent at reputation_score {s}, not 50.0")));
        } else {
            ctx.checked(format!("discovered reputation of a new agent: {s}"));
        }
        Ok(())
    }),
    case!("register-rejects-invalid", "registrations with a bad agent_id, no api_endpoint, no skills, a bad skill or timestamp, or no JSON draw a 4xx",
        ["CHO-001", "CHO-002", "CHO-004", "CHO-009", "CHO-010"], Fact, |ctx| {
        // The control: a complete registration is taken.
        register(ctx, &[(&unique_skill(), 0.1)]).await?;
        ctx.control("a complete registration");
        let good = registration(&[("h_skill_invalid", 0.1)]);
        let mut cases: Vec<(&str, Value)> = Vec::new();
        let mut v = good.clone(); v["agent_id"] = json!("not-a-uuid"); cases.push(("agent_id \"not-a-uuid\"", v));
        let mut v = good.clone(); v.as_object_mut().map(|o| o.remove("api_endpoint")); cases.push(("no api_endpoint", v));
        let mut v = good.clone(); v.as_object_mut().map(|o| o.remove("skills")); cases.push(("no skills", v));
        let mut v = good.clone(); v["skills"][0]["cost_per_call"] = json!("cheap"); cases.push(("cost_per_call \"cheap\"", v));
        let mut v = good.clone(); v["skills"][0].as_object_mut().map(|o| o.remove("skill_name")); cases.push(("skill without skill_name", v));
        let mut v = good.clone(); v["timestamp_utc"] = json!("yesterday"); cases.push(("timestamp_utc \"yesterday\"", v));
        let mut taken = Vec::new();
        for (what, body) in cases {
            let r = post(ctx, Base::Registry, "register", &body).await?;
            taken.extend(rejected_row(ctx, &r, what));
        }
        let r = post_raw(ctx, "register", b"agent_id=1".to_vec()).await?;
        taken.extend(rejected_row(ctx, &r, "a non-JSON body"));
        ctx.rows_wrong(&rules::REGISTER_REJECTS_INVALID, "the registry took bad registrations", &taken);
        Ok(())
    }),
    case!("discover-by-skill", "discovery lists the agents with the skill, each showing that skill, and only them",
        ["CHO-002", "CHO-015", "CHO-016", "CHO-017", "CHO-018", "CHO-022"], Fact, |ctx| {
        let (x, y) = (unique_skill(), unique_skill());
        let a = register(ctx, &[(&x, 0.1)]).await?;
        let b = register(ctx, &[(&y, 0.1)]).await?;
        let found = discover(ctx, &format!("skill={x}&min_reputation=0&max_cost=100")).await?;
        let Some(e) = entry(&found, &a.id) else {
            return Err(ctx.block(agent_missing(&a.id, &x, found.len())));
        };
        if let Some(f) = entry_skill_finding(e, &x) {
            ctx.deviation(f);
        }
        if e["status"] != "online" {
            ctx.note(format!("status {} (informational, CHO-A13)", e["status"]));
        }
        // Only the agents with the skill (CHO-018): each listing that shows another.
        let mut wrong = Vec::new();
        if entry(&found, &b.id).is_some() {
            wrong.push(format!("agent {} without skill {x} is listed", b.id));
        }
        let none = discover(ctx, &format!("skill={}", unique_skill())).await?;
        if !none.is_empty() {
            wrong.push(format!("a skill nobody has lists {} agents", none.len()));
        }
        fail_rows("discovery lists agents without the skill (CHO-018)", &wrong)
    }),
    case!("discover-min-reputation", "min_reputation is an inclusive lower bound", ["CHO-019"], Fact, |ctx| {
        let skill = unique_skill();
        let a = register(ctx, &[(&skill, 0.1)]).await?;
        let s = score(ctx, &a.id, &skill).await?;
        let mut wrong = Vec::new();
        let at = discover(ctx, &format!("skill={skill}&min_reputation={s}")).await?;
        if entry(&at, &a.id).is_none() {
            wrong.push(format!("an agent at {s} is left out by min_reputation={s} (inclusive bound)"));
        }
        let above = s + 0.1;
        let listed = discover(ctx, &format!("skill={skill}&min_reputation={above}")).await?;
        if entry(&listed, &a.id).is_some() {
            wrong.push(format!("an agent at {s} is listed with min_reputation={above}"));
        }
        fail_rows("min_reputation is not an inclusive lower bound", &wrong)
    }),
    case!("discover-max-cost", "max_cost is an inclusive upper bound on the skill's cost", ["CHO-005", "CHO-020"], Fact, |ctx| {
        let skill = unique_skill();
        let cheap = register(ctx, &[(&skill, 0.10)]).await?;
        let dear = register(ctx, &[(&skill, 0.20)]).await?;
        let mut wrong = Vec::new();
        let low = discover(ctx, &format!("skill={skill}&max_cost=0.15")).await?;
        if entry(&low, &cheap.id).is_none() || entry(&low, &dear.id).is_some() {
            wrong.push(format!("max_cost=0.15 should list only the 0.10 agent; got {} entries", low.len()));
        }
        let both = discover(ctx, &format!("skill={skill}&max_cost=0.20")).await?;
        if entry(&both, &cheap.id).is_none() || entry(&both, &dear.id).is_none() {
            wrong.push("max_cost=0.20 should list both agents (inclusive bound)".to_string());
        }
        let costs = both.iter().filter_map(|e| e["skill"]["cost_per_call"].as_f64());
        wrong.extend(costs.filter(|c| !two_decimals(*c)).map(|c| format!("cost_per_call {c} has more than two decimals")));
        fail_rows("max_cost is not an inclusive upper bound on the skill's cost", &wrong)
    }),
    case!("discover-ranking", "discovery ranks by reputation, highest first", ["CHO-021"], Profile, |ctx| {
        let skill = unique_skill();
        let hirer = scored(ctx, &unique_skill()).await?;
        let up = register(ctx, &[(&skill, 0.1)]).await?;
        let mid = register(ctx, &[(&skill, 0.1)]).await?;
        let down = register(ctx, &[(&skill, 0.1)]).await?;
        for (who, success) in [(&up, true), (&down, false)] {
            report_outcome(ctx, &Report {
                agent_id: &who.id, agent_owner: &who.owner_id, reputation: who.reputation.unwrap_or(50.0),
                hirer_id: &hirer.agent.id, hirer_owner: &hirer.agent.owner_id, hirer_reputation: hirer.score, success,
            }).await?;
        }
        // The order is judged in `discover` (chorus/discover:ranking), on every list.
        let found = discover(ctx, &format!("skill={skill}")).await?;
        let mut scores = Vec::new();
        for a in [&up, &mid, &down] {
            let Some(e) = entry(&found, &a.id) else {
                return Err(ctx.block(agent_missing(&a.id, &skill, found.len())));
            };
            scores.push(e["reputation_score"].as_f64().unwrap_or(f64::NAN));
        }
        if scores.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-9) {
            return skip(format!("the outcomes left the three agents at one score ({}): the ranking cannot be judged", crate::finding::json(&scores)));
        }
        ctx.checked(format!("{} agents listed, scores {}", found.len(), crate::finding::json(&scores)));
        Ok(())
    }),
    case!("job-echo", "the fixture agent completes a job: result schema, ids, output, cost and time",
        ["CHO-003", "CHO-004", "CHO-006", "CHO-023", "CHO-024", "CHO-026", "CHO-029", "CHO-030", "CHO-031", "CHO-033", "CHO-034"], Fact, |ctx| {
        let (agent, url) = fixture_agent(ctx).await?;
        let (job, outcome) = run_job(ctx, &url, |_| {}).await?;
        // The result's schema (timestamp, status, members) is judged in `run_job`.
        let (result, via, rtt) = match outcome {
            JobOutcome::Result { result, via, rtt } => (result, via, rtt),
            JobOutcome::Rejected(r) => return Err(ctx.block(fixture_refused(&r, &job))),
        };
        ctx.checked(format!("result delivered {via}"));
        judge_result_ids(ctx, &result, &job, agent["agent_id"].as_str().unwrap_or_default());
        if result["status"] != "SUCCESS" {
            return Err(ctx.block(fixture_failed(&result, &job)));
        }
        let want = fixture_output(ctx, "hello chorus");
        if !contains(&result["output_data"], &want) {
            ctx.deviation(rules::PROFILE_FIXTURE_OUTPUT.found(format!("the fixture's output_data {} does not hold {want}, as [chorus] fixture_output describes: set fixture_output to what the fixture returns for input_data {}",
                    result["output_data"], job["input_data"])));
        }
        judge_cost(ctx, &result, &job);
        if let Some(ms) = result["execution_time_ms"].as_u64() {
            if u128::from(ms) > rtt.as_millis() + 1000 {
                ctx.deviation(rules::JOB_RESULT_TIME.found(format!("execution_time_ms {ms} exceeds the observed round trip of {} ms", rtt.as_millis())));
            }
        }
        Ok(())
    }),
    case!("job-skill-mismatch", "a job for a skill the agent lacks draws SKILL_MISMATCH", ["CHO-027", "CHO-046"], Fact, |ctx| {
        let (_, url) = fixture_agent(ctx).await?;
        job_control(ctx, &url).await?;
        let (_, outcome) = run_job(ctx, &url, |j| j["skill_name"] = json!("h_no_such_skill")).await?;
        match outcome {
            JobOutcome::Rejected(r) => expect_code(ctx, &r, "SKILL_MISMATCH", "unknown skill"),
            JobOutcome::Result { result, .. } => {
                let r = Resp { http: 200, json: Some(result), raw: String::new() };
                expect_code(ctx, &r, "SKILL_MISMATCH", "unknown skill")
            }
        }
    }),
    case!("job-budget-insufficient", "a budget below the cost draws BUDGET_INSUFFICIENT; a budget equal to it is accepted", ["CHO-028"], Fact, |ctx| {
        let (agent, url) = fixture_agent(ctx).await?;
        job_control(ctx, &url).await?;
        let cost = agent["skill"]["cost_per_call"].as_f64().unwrap_or(0.1);
        let low = floor_cents(cost / 2.0);
        let (_, outcome) = run_job(ctx, &url, |j| j["budget"] = json!(low)).await?;
        match outcome {
            JobOutcome::Rejected(r) => expect_code(ctx, &r, "BUDGET_INSUFFICIENT", "budget below cost")?,
            JobOutcome::Result { result, .. } => {
                expect_code(ctx, &Resp { http: 200, json: Some(result), raw: String::new() }, "BUDGET_INSUFFICIENT", "budget below cost")?
            }
        }
        let (job, exact) = run_job(ctx, &url, |j| j["budget"] = json!(cost)).await?;
        match exact {
            JobOutcome::Result { result, .. } if result["status"] == "SUCCESS" => Ok(()),
            JobOutcome::Result { result, .. } => {
                let r = Resp { http: 200, json: Some(result.clone()), raw: String::new() };
                if r.codes().iter().any(|c| c == "BUDGET_INSUFFICIENT") {
                    fail(format!("a budget equal to the cost {cost} failed with BUDGET_INSUFFICIENT: {result} (CHO-028)"))
                } else {
                    Err(ctx.block(fixture_failed(&result, &job)))
                }
            }
            JobOutcome::Rejected(r) => fail(format!("a budget equal to the cost {cost} was refused: {} (CHO-028)", r.describe())),
        }
    }),
    case!("job-rejects-invalid", "jobs with job_id \"123\", or without skill_name or input_data, are rejected", ["CHO-003", "CHO-024", "CHO-025"], Fact, |ctx| {
        let (_, url) = fixture_agent(ctx).await?;
        job_control(ctx, &url).await?;
        let mutations: [(&str, Mutation); 3] = [
            ("job_id \"123\"", |j| j["job_id"] = json!("123")),
            ("no skill_name", |j| { j.as_object_mut().map(|o| o.remove("skill_name")); }),
            ("no input_data", |j| { j.as_object_mut().map(|o| o.remove("input_data")); }),
        ];
        let mut taken = Vec::new();
        for (what, m) in mutations {
            let (_, outcome) = run_job(ctx, &url, m).await?;
            taken.extend(job_row(ctx, outcome, what));
        }
        ctx.rows_wrong(&rules::JOB_REJECTS_INVALID, "the agent processed bad jobs", &taken);
        let (_, usd) = run_job(ctx, &url, |j| j["currency"] = json!("usd")).await?;
        let usd: Vec<String> = job_row(ctx, usd, "currency \"usd\"").into_iter().collect();
        ctx.rows_wrong(&rules::JOB_CURRENCY_TAKEN, "the agent processed a job in another currency", &usd);
        Ok(())
    }),
    case!("job-failure-result", "a job with bad input ends in a FAILURE result that explains itself", ["CHO-032"], Fact, |ctx| {
        let (_, url) = fixture_agent(ctx).await?;
        let bad: Value = serde_json::from_str(&ctx.profile().chorus.fixture_failing_input).unwrap_or(json!({"text": 42}));
        let (_, outcome) = run_job(ctx, &url, |j| j["input_data"] = bad.clone()).await?;
        // The FAILURE result's error_message is judged by the result schema in `run_job`.
        match outcome {
            JobOutcome::Result { result, .. } if result["status"] == "FAILURE" => {
                ctx.checked(format!("FAILURE: {}", result["error_message"]));
                Ok(())
            }
            JobOutcome::Result { result, .. } => {
                Err(Stop::Finding(rules::PROFILE_FIXTURE_FAILING_INPUT.found(format!("the fixture processed input_data {bad}, which [chorus] fixture_failing_input says it cannot: {result}; set it to an input the fixture fails on"))))
            }
            JobOutcome::Rejected(r) => {
                ctx.deviation(rules::JOB_FAILURE_RESULT_REFUSED.found(format!("bad input was refused with {} rather than answered with a FAILURE result", r.describe())));
                Ok(())
            }
        }
    }),
    case!("transfer", "a complete transfer is accepted; one without amount or to_owner draws a 4xx", ["CHO-038", "CHO-039", "CHO-041"], Fact, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        if initial < 0.10 {
            return skip(format!("fresh owners hold {initial} credits ([chorus] initial_credits): add [[chorus.setup_requests]] with on = \"owner\" that fund them, and set initial_credits"));
        }
        let from = funded_owner(ctx).await?;
        let to = funded_owner(ctx).await?;
        let r = send_transfer(ctx, &transfer(&from, &to, 0.10)).await?;
        expect_taken(ctx, &r, 0.10, "a valid transfer")?;
        let mut taken = Vec::new();
        for key in ["amount", "to_owner"] {
            let mut body = transfer(&from, &to, 0.10);
            body.as_object_mut().map(|o| o.remove(key));
            let r = send_transfer(ctx, &body).await?;
            taken.extend(rejected_row(ctx, &r, &format!("a transfer without {key}")));
        }
        ctx.rows_wrong(&rules::TRANSFER_INCOMPLETE_TAKEN, "the ledger took incomplete transfers", &taken);
        ctx.note("a transfer for a job the ledger never saw was accepted or refused: informational (CHO-041)");
        Ok(())
    }),
    case!("transfer-insufficient", "a transfer above the balance draws TRANSFER_FAILED and moves nothing", ["CHO-040"], Profile, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        let from = funded_owner(ctx).await?;
        let to = funded_owner(ctx).await?;
        let r = send_transfer(ctx, &transfer(&from, &to, initial + 1.0)).await?;
        expect_code(ctx, &r, "TRANSFER_FAILED", "transfer above the balance")?;
        if initial >= 0.01 {
            let r = send_transfer(ctx, &transfer(&from, &to, initial)).await?;
            if !taken(&r) {
                // Did the refused transfer move credits, or do owners not hold them?
                let other = funded_owner(ctx).await?;
                let r2 = send_transfer(ctx, &transfer(&other, &to, initial)).await?;
                expect_taken(ctx, &r2, initial, "the whole balance of a fresh owner")?;
                return fail(format!(
                    "after a refused transfer, {from} could not move its {initial} credits ({}), though a fresh owner could: the refused transfer moved credits (CHO-040)",
                    r.describe()
                ));
            }
        }
        let r = send_transfer(ctx, &transfer(&from, &to, 0.01)).await?;
        expect_code(ctx, &r, "TRANSFER_FAILED", "transfer from an empty balance")
    }),
    case!("transfer-credits-recipient", "credits sent to an owner are its to spend: it moves its own and what it got, and not a cent more", ["CHO-038", "CHO-040"], Profile, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        let part = floor_cents(initial * 0.4);
        if part < 0.01 {
            return skip(format!("fresh owners hold {initial} credits ([chorus] initial_credits): too few to send part of them on"));
        }
        let (a, b, c) = (funded_owner(ctx).await?, funded_owner(ctx).await?, funded_owner(ctx).await?);
        let r = send_transfer(ctx, &transfer(&a, &b, part)).await?;
        expect_taken(ctx, &r, part, "A's transfer to B")?;
        ctx.control(format!("a transfer of {part} from A to B"));
        let holds = ((initial + part) * 100.0).round() / 100.0;
        let r = send_transfer(ctx, &transfer(&b, &c, holds)).await?;
        if r.codes().iter().any(|c| c == "TRANSFER_FAILED") {
            return fail(format!("B, funded with {initial} and sent {part} by A, could not move the {holds} it holds: {} (the recipient of a transfer was not credited, CHO-038)", r.describe()));
        }
        expect_taken(ctx, &r, holds, "B's transfer of all it holds")?;
        let r = send_transfer(ctx, &transfer(&b, &c, 0.01)).await?;
        if taken(&r) {
            // Overdraft, which transfer-insufficient judges, or more credit than sent?
            let d = funded_owner(ctx).await?;
            let over = ((initial + 0.01) * 100.0).round() / 100.0;
            let r2 = send_transfer(ctx, &transfer(&d, &c, over)).await?;
            if taken(&r2) {
                ctx.note(format!("B could move 0.01 past all it held, and a fresh owner {over}, past its {initial}: the ledger allows overdraft (the transfer-insufficient case judges that), so what B was credited is not judged"));
                return Ok(());
            }
            return fail(format!("after moving all the {holds} it held, B could still move 0.01 ({}), though a fresh owner cannot overdraw: B was credited more than the {part} sent (CHO-038, CHO-040)", r.describe()));
        }
        expect_code(ctx, &r, "TRANSFER_FAILED", "B's transfer beyond what it holds")
    }),
    case!("transfer-amount-positive", "a transfer of 0 or of a negative amount is refused (derived); three decimals are informational", ["CHO-047"], Fact, |ctx| {
        let from = funded_owner(ctx).await?;
        let to = funded_owner(ctx).await?;
        let r = send_transfer(ctx, &transfer(&from, &to, 0.10)).await?;
        expect_taken(ctx, &r, 0.10, "a valid transfer")?;
        ctx.control("a transfer of 0.10 between the same owners");
        let mut taken_rows = Vec::new();
        for amount in [0.0, -10.0] {
            let r = send_transfer(ctx, &transfer(&from, &to, amount)).await?;
            if taken(&r) {
                taken_rows.push(format!("{amount} credits: {}", r.describe()));
            } else {
                ctx.checked(format!("a transfer of {amount}: refused ({})", r.http));
            }
        }
        ctx.rows_wrong(&rules::TRANSFER_AMOUNT_POSITIVE_TAKEN, "transfers of no or negative credits were taken", &taken_rows);
        let r = send_transfer(ctx, &transfer(&from, &to, 0.001)).await?;
        ctx.note(format!("a transfer of 0.001 (three decimals) drew {}: informational (CHO-A10)", r.describe()));
        Ok(())
    }),
    case!("transfer-idempotent", "a repeated transfer_id is applied once", ["CHO-039"], Profile, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        let part = floor_cents(initial * 0.3);
        let rest = ((initial - part) * 100.0).round() / 100.0;
        if part < 0.01 || rest < 0.01 {
            return skip(format!("fresh owners hold {initial} credits ([chorus] initial_credits): too few to repeat a transfer and move the rest"));
        }
        let from = funded_owner(ctx).await?;
        let to = funded_owner(ctx).await?;
        let first = transfer(&from, &to, part);
        let r = send_transfer(ctx, &first).await?;
        expect_taken(ctx, &r, part, "the first transfer")?;
        let again = send_transfer(ctx, &first).await?;
        ctx.note(format!("the repeat was answered {}", again.describe()));
        let r = send_transfer(ctx, &transfer(&from, &to, rest)).await?;
        if taken(&r) {
            ctx.checked(format!("the remaining {rest} moved: the repeat was applied once"));
            return Ok(());
        }
        // Without a repeat, can a fresh owner move the same two amounts? If not, the
        // owners do not hold `initial_credits`, whatever the repeat did.
        let other = funded_owner(ctx).await?;
        let r1 = send_transfer(ctx, &transfer(&other, &to, part)).await?;
        expect_taken(ctx, &r1, part, "a fresh owner's first transfer")?;
        let r2 = send_transfer(ctx, &transfer(&other, &to, rest)).await?;
        expect_taken(ctx, &r2, rest, "the rest of a fresh owner's credits, without a repeat")?;
        let said = format!(
            "after a transfer of {part} and its repeat (answered {}), moving the remaining {rest} of {initial} was refused with {}: the repeated transfer_id was applied twice",
            again.describe(), r.describe()
        );
        let f = if ctx.profile().chorus.idempotent_transfers {
            rules::TRANSFER_IDEMPOTENT.found(format!(
                "{said}. chorus.md leaves idempotency open (CHO-A14); the profile declares it ([chorus] idempotent_transfers = true, the default): set it to false if the ledger does not promise it"
            ))
        } else {
            rules::TRANSFER_IDEMPOTENT_RECORDED.found(format!("{said} (informational: [chorus] idempotent_transfers = false)"))
        };
        Err(Stop::Finding(f))
    }),
    case!("reputation-success", "a SUCCESS adds 2.0 × the hirer's reputation / 100", ["CHO-042", "CHO-043"], Profile, |ctx| {
        let skill = unique_skill();
        let hirer = scored(ctx, &skill).await?;
        let mut t = scored(ctx, &skill).await?;
        let what = format!("after a SUCCESS from a hirer at {}", hirer.score);
        after_outcomes(ctx, &mut t, &hirer, true, 1, &what).await?;
        // t hires u: the gain follows the hirer's own score.
        let mut u = scored(ctx, &skill).await?;
        let what = format!("after a SUCCESS from a hirer at {}", t.score);
        after_outcomes(ctx, &mut u, &t, true, 1, &what).await?;
        Ok(())
    }),
    case!("reputation-failure", "a FAILURE subtracts 4.5", ["CHO-044"], Profile, |ctx| {
        let skill = unique_skill();
        let hirer = scored(ctx, &skill).await?;
        let mut t = scored(ctx, &skill).await?;
        for i in 1..=3 {
            after_outcomes(ctx, &mut t, &hirer, false, 1, &format!("after FAILURE {i}")).await?;
        }
        Ok(())
    }),
    case!("reputation-clamp", "scores clamp at 100.0 and 0.0; a hirer at 100 gives 2.0", ["CHO-043", "CHO-045"], Profile, |ctx| {
        let skill = unique_skill();
        let hirer = scored(ctx, &skill).await?;
        let gain = 2.0 * hirer.score / 100.0;
        if gain < 0.5 {
            return skip(format!("a new hirer is at {}: too low to lift an agent to 100 in a few outcomes", hirer.score));
        }
        let mut top = scored(ctx, &skill).await?;
        after_outcomes(ctx, &mut top, &hirer, true, 1, "after a first SUCCESS").await?;
        let below = ((100.0 - top.score) / gain + 1e-9).floor().max(0.0) as usize;
        if below > 150 {
            return skip(format!("the agent is at {}: too far from 100", top.score));
        }
        if below > 0 {
            after_outcomes(ctx, &mut top, &hirer, true, below, "up to 100").await?;
        }
        after_outcomes(ctx, &mut top, &hirer, true, 1, "after a SUCCESS across 100 (clamped)").await?;
        after_outcomes(ctx, &mut top, &hirer, true, 1, "after a SUCCESS at 100 (clamped)").await?;
        let mut fresh = scored(ctx, &skill).await?;
        let what = format!("after a SUCCESS from a hirer at {}", top.score);
        after_outcomes(ctx, &mut fresh, &top, true, 1, &what).await?;
        let mut bottom = scored(ctx, &skill).await?;
        let above = (bottom.score / 4.5 + 1e-9).floor().max(0.0) as usize;
        if above > 0 && above <= 150 {
            after_outcomes(ctx, &mut bottom, &hirer, false, above, "down to 0").await?;
        }
        after_outcomes(ctx, &mut bottom, &hirer, false, 1, "after a FAILURE across 0 (clamped)").await?;
        after_outcomes(ctx, &mut bottom, &hirer, false, 1, "after a FAILURE at 0 (clamped)").await?;
        Ok(())
    }),
    case!("reputation-sequence", "a scripted sequence of successes and failures from hirers at different scores", ["CHO-042", "CHO-044", "CHO-045"], Profile, |ctx| {
        let skill = unique_skill();
        let low = scored(ctx, &skill).await?;
        let mut high = scored(ctx, &skill).await?;
        // Lift one hirer first, so that two different hirer scores are in play.
        after_outcomes(ctx, &mut high, &low, true, 3, "hirer after three successes").await?;
        let mut t = scored(ctx, &skill).await?;
        let steps = [(true, true), (false, false), (true, false), (true, true), (false, true), (true, true)];
        for (i, (success, from_high)) in steps.into_iter().enumerate() {
            let hirer = if from_high { &high } else { &low };
            let what = format!("step {}: {} from a hirer at {}", i + 1, if success { "SUCCESS" } else { "FAILURE" }, hirer.score);
            after_outcomes(ctx, &mut t, hirer, success, 1, &what).await?;
        }
        Ok(())
    }),
];

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
    let input = hire_input();
    let ids = hired_ids();
    let outbox = crate::counterparty::Outbox::default();
    let answer = registry(plan, &input, ids.clone(), outbox.clone());
    let run = crate::counterparty::drive_http(
        ctx,
        "hire",
        &input,
        answer,
        crate::suites::chorus::expect::defined,
        outbox,
    )
    .await?;
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
            ctx.deviation(rules::CLIENT_JOB_ID_REUSED.found(format!("the client's second job reuses the job_id {} of its first: a job_id names one job", job["job_id"])));
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
