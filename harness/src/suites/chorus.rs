//! The chorus suite (chorus.md): the cases, nothing else.

use crate::case::{fail, Bindings, Case, Suite, Untestable};
use crate::drive::Transport;
use crate::expect::chorus::*;
use serde_json::{json, Value};

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident,
     |$ctx:ident| $body:block) => {
        crate::define_case!("chorus", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| $body)
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
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "CHO-035", reason: "needs a slow job fixture that reports PENDING before its final result; the target profile defines none (a PENDING reply before a callback is accepted by the job cases)" },
    Untestable { requirement: "CHO-036", reason: "needs a fault-injection input that makes the agent fail internally; the target profile defines none" },
    Untestable { requirement: "CHO-037", reason: "the heartbeat check behind AGENT_OFFLINE has no endpoint, interval or rule in chorus.md (CHO-A13)" },
];

pub const CASES: &[Case] = &[
    case!("register", "a complete registration is answered 201 with status registered, the agent_id and a reputation",
        ["CHO-001", "CHO-008", "CHO-009", "CHO-011", "CHO-012", "CHO-013"], Fact, |ctx| {
        let body = registration(&[("h_register", 0.1)]);
        let r = post(ctx, Base::Registry, "register", &body).await?;
        if r.http != 201 {
            return fail(format!("registration answered {}, not 201 Created (CHO-012)", r.describe()));
        }
        let reply = r.json.clone().unwrap_or_default();
        schema(ctx, "register-response", &reply)?;
        if reply["agent_id"] != body["agent_id"] {
            return fail(format!("the reply names agent {}, not the registered {}", reply["agent_id"], body["agent_id"]));
        }
        Ok(())
    }),
    case!("register-initial-reputation", "a new agent starts at 50.0, on registration and in discovery", ["CHO-007", "CHO-014"], Fact, |ctx| {
        let skill = unique_skill();
        let body = registration(&[(&skill, 0.1)]);
        let id = body["agent_id"].as_str().unwrap_or_default().to_string();
        let r = post(ctx, Base::Registry, "register", &body).await?;
        let at_register = r.get("reputation_score").and_then(Value::as_f64);
        if at_register != Some(50.0) {
            return fail(format!("registration reports reputation {at_register:?}, not 50.0"));
        }
        let s = score(ctx, &id, &skill).await?;
        check_score(ctx, s, 50.0, "discovered reputation of a new agent")
    }),
    case!("register-rejects-invalid", "registrations with a bad agent_id, no api_endpoint, no skills, a bad skill or timestamp, or no JSON draw a 4xx",
        ["CHO-001", "CHO-002", "CHO-004", "CHO-009", "CHO-010"], Fact, |ctx| {
        let good = registration(&[("h_invalid", 0.1)]);
        let mut cases: Vec<(&str, Value)> = Vec::new();
        let mut v = good.clone(); v["agent_id"] = json!("not-a-uuid"); cases.push(("agent_id \"not-a-uuid\"", v));
        let mut v = good.clone(); v.as_object_mut().map(|o| o.remove("api_endpoint")); cases.push(("no api_endpoint", v));
        let mut v = good.clone(); v.as_object_mut().map(|o| o.remove("skills")); cases.push(("no skills", v));
        let mut v = good.clone(); v["skills"][0]["cost_per_call"] = json!("cheap"); cases.push(("cost_per_call \"cheap\"", v));
        let mut v = good.clone(); v["skills"][0].as_object_mut().map(|o| o.remove("skill_name")); cases.push(("skill without skill_name", v));
        let mut v = good.clone(); v["timestamp_utc"] = json!("yesterday"); cases.push(("timestamp_utc \"yesterday\"", v));
        for (what, body) in cases {
            let r = post(ctx, Base::Registry, "register", &body).await?;
            if !(400..500).contains(&r.http) {
                return fail(format!("{what}: expected a 4xx, got {}", r.describe()));
            }
            ctx.checked(format!("{what}: {}", r.http));
        }
        let r = ctx.http(reqwest::Method::POST, "register", &[("content-type", "application/json")], Some(b"agent_id=1".to_vec())).await?;
        if !(400..500).contains(&r.status) {
            return fail(format!("a non-JSON body drew HTTP {}, not a 4xx (CHO-001)", r.status));
        }
        Ok(())
    }),
    case!("discover-by-skill", "discovery lists the agents with the skill, each showing that skill, and only them",
        ["CHO-002", "CHO-015", "CHO-016", "CHO-017", "CHO-018", "CHO-022"], Fact, |ctx| {
        let (x, y) = (unique_skill(), unique_skill());
        let a = register(ctx, &[(&x, 0.1)]).await?;
        let b = register(ctx, &[(&y, 0.1)]).await?;
        let found = discover(ctx, &format!("skill={x}&min_reputation=0&max_cost=100")).await?;
        let Some(e) = entry(&found, &a) else {
            return fail(format!("agent {a} with skill {x} is not discovered (CHO-015)"));
        };
        if e["skill"]["skill_name"] != x.as_str() {
            return fail(format!("the entry shows skill {}, not {x} (CHO-018)", e["skill"]));
        }
        if entry(&found, &b).is_some() {
            return fail(format!("agent {b} without skill {x} is listed (CHO-018)"));
        }
        if e["status"] != "online" {
            ctx.note(format!("status {} (informational, CHO-A13)", e["status"]));
        }
        let none = discover(ctx, &format!("skill={}", unique_skill())).await?;
        if !none.is_empty() {
            return fail("a skill nobody has still lists agents");
        }
        Ok(())
    }),
    case!("discover-min-reputation", "min_reputation is an inclusive lower bound", ["CHO-019"], Fact, |ctx| {
        let skill = unique_skill();
        let a = register(ctx, &[(&skill, 0.1)]).await?;
        let at = discover(ctx, &format!("skill={skill}&min_reputation=50")).await?;
        if entry(&at, &a).is_none() {
            return fail("an agent at 50.0 is left out by min_reputation=50 (inclusive bound)");
        }
        let above = discover(ctx, &format!("skill={skill}&min_reputation=50.1")).await?;
        if entry(&above, &a).is_some() {
            return fail("an agent at 50.0 is listed with min_reputation=50.1");
        }
        Ok(())
    }),
    case!("discover-max-cost", "max_cost is an inclusive upper bound on the skill's cost", ["CHO-005", "CHO-020"], Fact, |ctx| {
        let skill = unique_skill();
        let cheap = register(ctx, &[(&skill, 0.10)]).await?;
        let dear = register(ctx, &[(&skill, 0.20)]).await?;
        let low = discover(ctx, &format!("skill={skill}&max_cost=0.15")).await?;
        if entry(&low, &cheap).is_none() || entry(&low, &dear).is_some() {
            return fail(format!("max_cost=0.15 should list only the 0.10 agent; got {} entries", low.len()));
        }
        let both = discover(ctx, &format!("skill={skill}&max_cost=0.20")).await?;
        if entry(&both, &cheap).is_none() || entry(&both, &dear).is_none() {
            return fail("max_cost=0.20 should list both agents (inclusive bound)");
        }
        for e in &both {
            if let Some(c) = e["skill"]["cost_per_call"].as_f64() {
                if !two_decimals(c) {
                    return fail(format!("cost_per_call {c} has more than two decimals (CHO-005)"));
                }
            }
        }
        Ok(())
    }),
    case!("discover-ranking", "discovery ranks by reputation, highest first", ["CHO-021"], Profile, |ctx| {
        let skill = unique_skill();
        let hirer = register(ctx, &[(&unique_skill(), 0.1)]).await?;
        let up = register(ctx, &[(&skill, 0.1)]).await?;
        let mid = register(ctx, &[(&skill, 0.1)]).await?;
        let down = register(ctx, &[(&skill, 0.1)]).await?;
        report_outcome(ctx, &up, &hirer, true).await?;
        report_outcome(ctx, &down, &hirer, false).await?;
        let found = discover(ctx, &format!("skill={skill}")).await?;
        let ids: Vec<&str> = found.iter().filter_map(|e| e["agent_id"].as_str()).collect();
        if ids != [up.as_str(), mid.as_str(), down.as_str()] {
            return fail(format!("expected the order {up}, {mid}, {down} (51.0, 50.0, 45.5); got {ids:?}"));
        }
        let scores: Vec<f64> = found.iter().filter_map(|e| e["reputation_score"].as_f64()).collect();
        if scores.windows(2).any(|w| w[1] > w[0]) {
            return fail(format!("reputation increases down the list: {scores:?}"));
        }
        Ok(())
    }),
    case!("job-echo", "the fixture agent completes a job: result schema, ids, output, cost and time",
        ["CHO-003", "CHO-004", "CHO-006", "CHO-023", "CHO-024", "CHO-026", "CHO-029", "CHO-030", "CHO-031", "CHO-033", "CHO-034"], Fact, |ctx| {
        let (agent, url) = fixture_agent(ctx).await?;
        let (job, outcome) = run_job(ctx, &url, |_| {}).await?;
        let JobOutcome::Result { result, via, rtt } = outcome else {
            return fail("the fixture agent refused a valid job");
        };
        ctx.checked(format!("result delivered {via}"));
        schema(ctx, "job-result", &result)?;
        if result["job_id"] != job["job_id"] {
            return fail(format!("result job_id {} is not the request's {} (CHO-030)", result["job_id"], job["job_id"]));
        }
        if result["agent_id"] != agent["agent_id"] {
            return fail(format!("result agent_id {} is not the registered {} (CHO-030)", result["agent_id"], agent["agent_id"]));
        }
        if result["status"] != "SUCCESS" || result["output_data"] != json!({"text": "hello chorus"}) || !result["error_message"].is_null() {
            return fail(format!("the echo fixture should succeed with output {{text}} and a null error_message: {result}"));
        }
        let cost = result["execution_cost"].as_f64().unwrap_or(-1.0);
        if !two_decimals(cost) {
            return fail(format!("execution_cost {cost} has more than two decimals (CHO-005, CHO-033)"));
        }
        if cost > job["budget"].as_f64().unwrap_or(0.0) {
            ctx.warn(format!("execution_cost {cost} exceeds the budget (CHO-A20)"));
        }
        let ms = result["execution_time_ms"].as_u64().unwrap_or(u64::MAX);
        if u128::from(ms) > rtt.as_millis() + 1000 {
            return fail(format!("execution_time_ms {ms} exceeds the observed round trip of {} ms (CHO-034)", rtt.as_millis()));
        }
        if !is_utc_timestamp(&result["timestamp_utc"]) {
            return fail(format!("timestamp_utc {} is not ISO 8601 UTC with Z (CHO-004)", result["timestamp_utc"]));
        }
        Ok(())
    }),
    case!("job-skill-mismatch", "a job for a skill the agent lacks draws SKILL_MISMATCH", ["CHO-027", "CHO-046"], Fact, |ctx| {
        let (_, url) = fixture_agent(ctx).await?;
        let (_, outcome) = run_job(ctx, &url, |j| j["skill_name"] = json!("h_no_such_skill")).await?;
        match outcome {
            JobOutcome::Rejected(r) => expect_code(ctx, &r, "SKILL_MISMATCH", "unknown skill"),
            JobOutcome::Result { result, .. } => {
                let r = Resp { http: 200, json: Some(result) };
                expect_code(ctx, &r, "SKILL_MISMATCH", "unknown skill")
            }
        }
    }),
    case!("job-budget-insufficient", "a budget below the cost draws BUDGET_INSUFFICIENT; a budget equal to it is accepted", ["CHO-028"], Fact, |ctx| {
        let (agent, url) = fixture_agent(ctx).await?;
        let cost = agent["skill"]["cost_per_call"].as_f64().unwrap_or(0.1);
        let (_, low) = run_job(ctx, &url, |j| j["budget"] = json!(cost / 2.0)).await?;
        match low {
            JobOutcome::Rejected(r) => expect_code(ctx, &r, "BUDGET_INSUFFICIENT", "budget below cost")?,
            JobOutcome::Result { result, .. } => {
                expect_code(ctx, &Resp { http: 200, json: Some(result) }, "BUDGET_INSUFFICIENT", "budget below cost")?
            }
        }
        let (_, exact) = run_job(ctx, &url, |j| j["budget"] = json!(cost)).await?;
        match exact {
            JobOutcome::Result { result, .. } if result["status"] == "SUCCESS" => Ok(()),
            JobOutcome::Result { result, .. } => fail(format!("a budget equal to the cost failed: {result}")),
            JobOutcome::Rejected(r) => fail(format!("a budget equal to the cost was refused: {}", r.describe())),
        }
    }),
    case!("job-rejects-invalid", "jobs with job_id \"123\", or without skill_name or input_data, are rejected", ["CHO-003", "CHO-024", "CHO-025"], Fact, |ctx| {
        let (_, url) = fixture_agent(ctx).await?;
        let mutations: [(&str, Mutation); 3] = [
            ("job_id \"123\"", |j| j["job_id"] = json!("123")),
            ("no skill_name", |j| { j.as_object_mut().map(|o| o.remove("skill_name")); }),
            ("no input_data", |j| { j.as_object_mut().map(|o| o.remove("input_data")); }),
        ];
        for (what, m) in mutations {
            let (_, outcome) = run_job(ctx, &url, m).await?;
            match outcome {
                JobOutcome::Rejected(r) => expect_rejected(ctx, &r, what)?,
                JobOutcome::Result { result, .. } if result["status"] == "FAILURE" => ctx.checked(format!("{what}: FAILURE result")),
                JobOutcome::Result { result, .. } => return fail(format!("{what}: processed: {result}")),
            }
        }
        let (_, usd) = run_job(ctx, &url, |j| j["currency"] = json!("usd")).await?;
        if let JobOutcome::Result { result, .. } = usd {
            if result["status"] == "SUCCESS" {
                ctx.note("currency \"usd\" was accepted (informational, CHO-025)");
            }
        }
        Ok(())
    }),
    case!("job-failure-result", "a job with bad input ends in a FAILURE result that explains itself", ["CHO-032"], Profile, |ctx| {
        let (_, url) = fixture_agent(ctx).await?;
        let (_, outcome) = run_job(ctx, &url, |j| j["input_data"] = json!({"text": 42})).await?;
        match outcome {
            JobOutcome::Result { result, .. } => {
                schema(ctx, "job-result", &result)?;
                if result["status"] != "FAILURE" || result["error_message"].as_str().is_none_or(str::is_empty) {
                    return fail(format!("expected FAILURE with an error_message: {result}"));
                }
                Ok(())
            }
            JobOutcome::Rejected(r) => {
                ctx.warn(format!("bad input was refused with {} rather than answered with a FAILURE result", r.http));
                Ok(())
            }
        }
    }),
    case!("transfer", "a complete transfer is accepted; one without amount or to_owner draws a 4xx", ["CHO-038", "CHO-039", "CHO-041"], Fact, |ctx| {
        let (from, to) = (fresh_owner(), fresh_owner());
        let r = post(ctx, Base::Ledger, "transfer", &transfer(&from, &to, 0.10)).await?;
        if !r.ok() {
            return fail(format!("a valid transfer drew {} (CHO-038)", r.describe()));
        }
        for key in ["amount", "to_owner"] {
            let mut body = transfer(&from, &to, 0.10);
            body.as_object_mut().map(|o| o.remove(key));
            let r = post(ctx, Base::Ledger, "transfer", &body).await?;
            if !(400..500).contains(&r.http) {
                return fail(format!("a transfer without {key} drew {} (CHO-039)", r.describe()));
            }
        }
        ctx.note("a transfer for a job the ledger never saw was accepted or refused: informational (CHO-041)");
        Ok(())
    }),
    case!("transfer-insufficient", "a transfer above the balance draws TRANSFER_FAILED and moves nothing", ["CHO-040"], Profile, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        let (from, to) = (fresh_owner(), fresh_owner());
        let r = post(ctx, Base::Ledger, "transfer", &transfer(&from, &to, initial + 1.0)).await?;
        expect_code(ctx, &r, "TRANSFER_FAILED", "transfer above the balance")?;
        let r = post(ctx, Base::Ledger, "transfer", &transfer(&from, &to, initial)).await?;
        if !r.ok() {
            return fail(format!("after a failed transfer, moving the whole initial balance {initial} was refused: {}", r.describe()));
        }
        let r = post(ctx, Base::Ledger, "transfer", &transfer(&from, &to, 0.01)).await?;
        expect_code(ctx, &r, "TRANSFER_FAILED", "transfer from an empty balance")
    }),
    case!("transfer-idempotent", "a repeated transfer_id is applied once", ["CHO-039"], Profile, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        let (from, to) = (fresh_owner(), fresh_owner());
        let first = transfer(&from, &to, 30.0_f64.min(initial));
        for _ in 0..2 {
            let r = post(ctx, Base::Ledger, "transfer", &first).await?;
            if !r.ok() {
                return fail(format!("the transfer (or its repeat) drew {}", r.describe()));
            }
        }
        let rest = ((initial - 30.0_f64.min(initial)) * 100.0).round() / 100.0;
        if rest > 0.0 {
            let r = post(ctx, Base::Ledger, "transfer", &transfer(&from, &to, rest)).await?;
            if !r.ok() {
                return fail(format!("moving the remaining {rest} failed: the repeated transfer_id was applied twice ({})", r.describe()));
            }
        }
        Ok(())
    }),
    case!("reputation-success", "a SUCCESS adds 2.0 × the hirer's reputation / 100", ["CHO-042", "CHO-043"], Profile, |ctx| {
        let skill = unique_skill();
        let hirer = register(ctx, &[(&skill, 0.1)]).await?;
        let t = register(ctx, &[(&skill, 0.1)]).await?;
        report_outcome(ctx, &t, &hirer, true).await?;
        let s = score(ctx, &t, &skill).await?;
        check_score(ctx, s, expected_after(50.0, true, 50.0), "after a SUCCESS from a hirer at 50")?;
        // t (now 51.0) hires u: the gain follows the hirer's own score.
        let u = register(ctx, &[(&skill, 0.1)]).await?;
        report_outcome(ctx, &u, &t, true).await?;
        let su = score(ctx, &u, &skill).await?;
        check_score(ctx, su, expected_after(50.0, true, s), "after a SUCCESS from a hirer at 51")
    }),
    case!("reputation-failure", "a FAILURE subtracts 4.5", ["CHO-044"], Profile, |ctx| {
        let skill = unique_skill();
        let hirer = register(ctx, &[(&skill, 0.1)]).await?;
        let t = register(ctx, &[(&skill, 0.1)]).await?;
        let mut want = 50.0;
        for i in 1..=3 {
            report_outcome(ctx, &t, &hirer, false).await?;
            want = expected_after(want, false, 50.0);
            let s = score(ctx, &t, &skill).await?;
            check_score(ctx, s, want, &format!("after FAILURE {i}"))?;
        }
        Ok(())
    }),
    case!("reputation-clamp", "scores clamp at 100.0 and 0.0; a hirer at 100 gives 2.0", ["CHO-043", "CHO-045"], Profile, |ctx| {
        let skill = unique_skill();
        let hirer = register(ctx, &[(&skill, 0.1)]).await?;
        let top = register(ctx, &[(&skill, 0.1)]).await?;
        let mut want = 50.0;
        for _ in 0..51 {
            report_outcome(ctx, &top, &hirer, true).await?;
            want = expected_after(want, true, 50.0);
        }
        let s = score(ctx, &top, &skill).await?;
        check_score(ctx, s, want, "after 51 successes from a hirer at 50 (clamped at 100)")?;
        let fresh = register(ctx, &[(&skill, 0.1)]).await?;
        report_outcome(ctx, &fresh, &top, true).await?;
        let sf = score(ctx, &fresh, &skill).await?;
        check_score(ctx, sf, expected_after(50.0, true, want), "after a SUCCESS from a hirer at 100")?;
        let bottom = register(ctx, &[(&skill, 0.1)]).await?;
        let mut low = 50.0;
        for _ in 0..12 {
            report_outcome(ctx, &bottom, &hirer, false).await?;
            low = expected_after(low, false, 50.0);
        }
        let sb = score(ctx, &bottom, &skill).await?;
        check_score(ctx, sb, low, "after 12 failures (clamped at 0)")
    }),
    case!("reputation-sequence", "a scripted sequence of successes and failures from hirers at different scores", ["CHO-042", "CHO-044", "CHO-045"], Profile, |ctx| {
        let skill = unique_skill();
        let low_hirer = register(ctx, &[(&skill, 0.1)]).await?;
        let high_hirer = register(ctx, &[(&skill, 0.1)]).await?;
        // Lift one hirer first, so that two different hirer scores are in play.
        for _ in 0..3 {
            report_outcome(ctx, &high_hirer, &low_hirer, true).await?;
        }
        let high = score(ctx, &high_hirer, &skill).await?;
        check_score(ctx, high, 53.0, "hirer after three successes")?;
        let t = register(ctx, &[(&skill, 0.1)]).await?;
        let mut want = 50.0;
        let steps = [(true, true), (false, false), (true, false), (true, true), (false, true), (true, true)];
        for (i, (success, from_high)) in steps.into_iter().enumerate() {
            let (who, r) = if from_high { (&high_hirer, high) } else { (&low_hirer, 50.0) };
            report_outcome(ctx, &t, who, success).await?;
            want = expected_after(want, success, r);
            let s = score(ctx, &t, &skill).await?;
            check_score(ctx, s, want, &format!("step {}: {}", i + 1, if success { "SUCCESS" } else { "FAILURE" }))?;
        }
        Ok(())
    }),
];
