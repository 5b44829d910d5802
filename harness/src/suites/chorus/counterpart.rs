//! The scripted counterpart of the client role: the registry, agents and ledger the
//! harness plays for an orchestrator under test, and the plan each answers by.

use super::wire::now_utc;
use reference_impl::wire::new_id;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// The orchestrator's side (`run --role client`)

/// What the harness's registry and agents do in one client case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hire {
    /// The job succeeds, its result in the reply.
    Success,
    /// The job reply is 202 with a PENDING result; the final one is POSTed to the
    /// job's callback_url.
    Callback,
    /// The job fails: a FAILURE result.
    Failure,
    /// The agent refuses the job: SKILL_MISMATCH.
    SkillMismatch,
    /// The agent refuses the job: BUDGET_INSUFFICIENT.
    BudgetInsufficient,
    /// The agent refuses the job the way a web framework does, HTTP 404
    /// `{"detail": …}` without SKILL_MISMATCH (`skill-mismatch-detail-404`).
    SkillMismatchDetail,
    /// The result names another job (CHO-030).
    ForeignResult,
    /// The reply is 202 PENDING and the result POSTed to callback_url names
    /// another job (CHO-030).
    ForeignCallback,
    /// The result charges an execution_cost above the job's budget (CHO-033;
    /// `ignore-budget`).
    CostOverBudget,
    /// The reply is 202 PENDING and no result ever comes (`callback-never-sent`).
    CallbackNever,
    /// The job succeeds, and the transfer is answered HTTP 200 with status
    /// "failed" and TRANSFER_FAILED (`transfer-failed-200`; CHO-040).
    TransferFailed,
}

/// How far over the budget [`Hire::CostOverBudget`] charges.
pub const OVER_BUDGET_BY: f64 = 0.05;

/// The cost of the harness's agents' skill, charged as execution_cost.
pub const HIRE_COST: f64 = 0.10;

/// The harness's two agents for a client case, ranked: (name, owner, reputation,
/// api_endpoint below the base URL). The first endpoint ends in `/jobs`, the second
/// does not (CHO-A3: both forms occur).
pub const HIRED: [(&str, &str, f64, &str); 2] = [
    ("first", "h-owner-first", 72.5, "agents/first/jobs"),
    ("second", "h-owner-second", 50.0, "agents/second"),
];

/// The input of the `hire` scenario, for the client acting as `identity`.
pub fn hire_input(identity: &str) -> Value {
    json!({
        "skill": "echo_text",
        "input_data": {"text": format!("hired by the harness {}", &new_id()[..8])},
        "budget": 0.15,
        "max_cost": 0.15,
        "min_reputation": 0,
        "orchestrator_id": identity,
        "owner_id": "h-orchestrator-owner",
        "result_wait_ms": 1000,
    })
}

/// The agent ids of the harness's agents, one per case.
pub fn hired_ids() -> [String; 2] {
    [new_id(), new_id()]
}

/// The harness's registry, agents and ledger for a client case: `GET /discover`
/// lists [`HIRED`], a POST to either agent's job URL (with `/jobs` once or, for the
/// first, twice) is answered by `plan`, `POST /results` and `POST /transfer` are
/// acknowledged.
pub fn registry(
    plan: Hire,
    input: &Value,
    ids: [String; 2],
    outbox: crate::counterparty::Outbox,
) -> crate::counterparty::Answer {
    let skill = input["skill"].clone();
    Box::new(move |path: &str, body: &[u8]| {
        let route = path.split('?').next().unwrap_or_default();
        let (status, v) = match route {
            "/discover" => (200, scripted_listing(&skill, &ids, outbox.base())),
            "/results" => (200, json!({"status": "recorded"})),
            "/register" => {
                // A hirer may announce itself first, as chorus.md's agents do (§3.1).
                let r: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                let id = r["agent_id"].as_str().map_or_else(new_id, String::from);
                (
                    201,
                    json!({"status": "registered", "agent_id": id, "reputation_score": 50.0}),
                )
            }
            "/transfer" => transfer_reply(plan, body),
            _ => match hired_by_job_path(route).map(|i| ids[i].clone()) {
                Some(agent) => job_reply(plan, &agent, body, &outbox),
                None => (
                    404,
                    json!({"error": "NOT_FOUND", "message": format!("no route {route}")}),
                ),
            },
        };
        (status, v.to_string().into_bytes())
    })
}

/// The discovery listing: the [`HIRED`] agents with the skill asked for.
fn scripted_listing(skill: &Value, ids: &[String; 2], base: &str) -> Value {
    let agents: Vec<Value> = HIRED
        .iter()
        .zip(ids)
        .map(|((name, owner, score, endpoint), id)| {
            json!({
                "agent_id": id, "agent_name": format!("h-agent-{name}"),
                "api_endpoint": format!("{base}/{endpoint}"),
                "skill": {"skill_name": skill, "cost_per_call": HIRE_COST},
                "reputation_score": score, "status": "online", "owner_id": owner,
            })
        })
        .collect();
    json!({ "agents": agents })
}

/// The ledger's answer to a transfer: completed, or TRANSFER_FAILED with HTTP 200
/// when the plan says so.
fn transfer_reply(plan: Hire, body: &[u8]) -> (u16, Value) {
    let t: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if plan == Hire::TransferFailed {
        return (
            200,
            json!({"status": "failed", "error": "TRANSFER_FAILED", "message": "the payer has 0.00 credits (on purpose)"}),
        );
    }
    (
        200,
        json!({"status": "completed", "transfer_id": t["transfer_id"]}),
    )
}

/// A hired agent's answer to a job, as the plan says: its result at once, a refusal,
/// or PENDING with the result (if any) by callback through `outbox`.
fn job_reply(
    plan: Hire,
    agent: &str,
    body: &[u8],
    outbox: &crate::counterparty::Outbox,
) -> (u16, Value) {
    let job: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let result = |status: &str, output: Value, error: Value| {
        json!({
            "job_id": job["job_id"], "agent_id": agent, "status": status,
            "output_data": output, "execution_cost": HIRE_COST, "execution_time_ms": 3,
            "error_message": error, "timestamp_utc": now_utc(),
        })
    };
    let done = || result("SUCCESS", job["input_data"].clone(), Value::Null);
    let pending = || {
        let mut p = result("PENDING", Value::Null, Value::Null);
        p["execution_cost"] = Value::Null;
        (202, p)
    };
    match plan {
        Hire::Success | Hire::TransferFailed => (200, done()),
        Hire::ForeignResult => {
            let mut r = done();
            r["job_id"] = json!(new_id());
            (200, r)
        }
        Hire::CostOverBudget => {
            let mut r = done();
            let budget = job["budget"].as_f64().unwrap_or(HIRE_COST);
            r["execution_cost"] = json!(((budget + OVER_BUDGET_BY) * 100.0).round() / 100.0);
            (200, r)
        }
        Hire::SkillMismatchDetail => (
            404,
            json!({"detail": "Not Found: this agent lacks the skill (on purpose)"}),
        ),
        Hire::CallbackNever => pending(),
        Hire::ForeignCallback | Hire::Callback => {
            if let Some(url) = job["callback_url"].as_str() {
                let mut r = done();
                if plan == Hire::ForeignCallback {
                    r["job_id"] = json!(new_id());
                }
                outbox.push(url.to_string(), r.to_string().into_bytes());
            }
            pending()
        }
        Hire::Failure => (
            200,
            result(
                "FAILURE",
                Value::Null,
                json!("the harness's agent failed this job on purpose"),
            ),
        ),
        Hire::SkillMismatch => (
            400,
            json!({"error": "SKILL_MISMATCH", "message": "this agent lacks the skill (on purpose)"}),
        ),
        Hire::BudgetInsufficient => (
            402,
            json!({"error": "BUDGET_INSUFFICIENT", "message": "the budget is below this agent's cost (on purpose)"}),
        ),
    }
}

/// The requests chorus.md and the target profile define for a registry, ledger and
/// agents: `POST /register`, `GET /discover`, `POST /transfer`, the outcome report
/// `POST /results`, and a job to one of [`HIRED`]'s job URLs.
pub fn defined(method: &str, path: &str) -> bool {
    match method {
        "GET" => path == "/discover",
        "POST" => {
            matches!(path, "/register" | "/transfer" | "/results")
                || hired_by_job_path(path).is_some()
        }
        _ => false,
    }
}

/// Which of [`HIRED`] a job path reaches: its `api_endpoint` with `/jobs` appended
/// unless it already ends in `/jobs` (CHO-A3), or appended anyway (the spec's
/// literal `{agent_api_endpoint}/jobs`).
pub fn hired_by_job_path(route: &str) -> Option<usize> {
    HIRED.iter().position(|(_, _, _, endpoint)| {
        let unchanged = format!("/{endpoint}");
        let appended = format!("/{endpoint}/jobs");
        (endpoint.ends_with("/jobs") && route == unchanged) || route == appended
    })
}

/// The client's exchanges with the harness that went to `route` (by method and path).
pub fn sent_to<'a>(
    run: &'a crate::counterparty::DriverRun,
    method: &str,
    route: &str,
) -> Vec<&'a crate::counterparty::Exchange> {
    run.exchanges
        .iter()
        .filter(|x| x.method == method && x.path.split('?').next() == Some(route))
        .collect()
}

/// The client's job requests: POSTs to one of the harness's job URLs.
pub fn jobs_sent(run: &crate::counterparty::DriverRun) -> Vec<(usize, Value)> {
    run.exchanges
        .iter()
        .filter(|x| x.method == "POST")
        .filter_map(|x| {
            let i = hired_by_job_path(x.path.split('?').next().unwrap_or_default())?;
            Some((
                i,
                serde_json::from_slice(&x.received).unwrap_or(Value::Null),
            ))
        })
        .collect()
}

/// The client's transfers (CHO-038, CHO-039): each body parsed.
pub fn transfers_sent(run: &crate::counterparty::DriverRun) -> Vec<Value> {
    sent_to(run, "POST", "/transfer")
        .iter()
        .map(|x| serde_json::from_slice(&x.received).unwrap_or(Value::Null))
        .collect()
}
