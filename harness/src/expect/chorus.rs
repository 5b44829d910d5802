//! chorus expectations: registry, discovery, jobs, ledger and outcome helpers, and
//! the harness's own reputation calculator (kept apart from the reference's on
//! purpose: a bug there must not hide the same bug in a target).

use crate::case::{fail, skip, Step};
use crate::drive::callback::CallbackListener;
use crate::profile::ResultDelivery;
use crate::script::Ctx;
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::{json, new_id};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub const CODES: [&str; 5] = [
    "SKILL_MISMATCH",
    "BUDGET_INSUFFICIENT",
    "AGENT_OFFLINE",
    "EXECUTION_ERROR",
    "TRANSFER_FAILED",
];

/// A reply: HTTP status and the JSON body, if any.
#[derive(Debug, Clone)]
pub struct Resp {
    pub http: u16,
    pub json: Option<Value>,
}

impl Resp {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.http)
    }

    pub fn describe(&self) -> String {
        match &self.json {
            Some(j) => format!("HTTP {} {j}", self.http),
            None => format!("HTTP {} (no JSON body)", self.http),
        }
    }

    pub fn get(&self, k: &str) -> Option<&Value> {
        self.json.as_ref()?.get(k)
    }

    /// Upper-case code strings in top-level string members, and in the
    /// error_message of a FAILURE result (CHO-A5).
    pub fn codes(&self) -> Vec<String> {
        let Some(Value::Object(o)) = &self.json else {
            return Vec::new();
        };
        let is_code =
            |s: &str| s.len() > 3 && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
        let mut out: Vec<String> = o
            .values()
            .filter_map(Value::as_str)
            .filter(|s| is_code(s) && !["SUCCESS", "FAILURE", "PENDING"].contains(s))
            .map(String::from)
            .collect();
        if o.get("status").and_then(Value::as_str) == Some("FAILURE") {
            if let Some(m) = o.get("error_message").and_then(Value::as_str) {
                out.extend(
                    CODES
                        .iter()
                        .filter(|c| m.contains(*c))
                        .map(|c| c.to_string()),
                );
            }
        }
        out
    }
}

pub enum Base {
    Registry,
    Ledger,
    Url(String),
}

/// One request; a 2xx reply must be JSON.
pub async fn call(
    ctx: &mut Ctx,
    base: Base,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> Step<Resp> {
    let base = match base {
        Base::Registry => ctx.url.clone(),
        Base::Ledger => ctx
            .profile()
            .target
            .ledger_url
            .clone()
            .unwrap_or_else(|| ctx.url.clone()),
        Base::Url(u) => u,
    };
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
    let headers: &[(&str, &str)] = if bytes.is_some() {
        &[("content-type", "application/json")]
    } else {
        &[]
    };
    let r = ctx.http_at(&base, method, path, headers, bytes).await?;
    let parsed = json::parse(&r.body).ok().map(|t| t.to_serde());
    if (200..300).contains(&r.status) && parsed.is_none() {
        return fail(format!(
            "HTTP {} reply to {path} is not JSON (CHO-001)",
            r.status
        ));
    }
    let resp = Resp {
        http: r.status,
        json: parsed,
    };
    for code in resp.codes() {
        if !CODES.contains(&code.as_str()) {
            ctx.warn(format!(
                "error code {code} is not one of chorus.md §5 (CHO-046)"
            ));
        }
    }
    Ok(resp)
}

pub async fn post(ctx: &mut Ctx, base: Base, path: &str, body: &Value) -> Step<Resp> {
    call(ctx, base, reqwest::Method::POST, path, Some(body)).await
}

/// Schema check of a value against `chorus/<name>`.
pub fn schema(ctx: &Ctx, name: &str, v: &Value) -> Step<()> {
    ctx.shared
        .schemas
        .check(&format!("chorus/{name}"), v)
        .or_else(fail)
}

/// The rejection must be a 4xx/5xx or a FAILURE result carrying `code` (CHO-A5).
pub fn expect_code(ctx: &mut Ctx, r: &Resp, code: &str, what: &str) -> Step<()> {
    let failure_result =
        r.http == 200 && r.get("status").and_then(Value::as_str) == Some("FAILURE");
    if !(r.http >= 400 || failure_result) {
        return fail(format!(
            "{what}: expected a rejection with {code}, got {}",
            r.describe()
        ));
    }
    if !r.codes().iter().any(|c| c == code) {
        return fail(format!(
            "{what}: rejected, but {code} appears nowhere in {}",
            r.describe()
        ));
    }
    ctx.checked(format!("{what}: {code}"));
    Ok(())
}

/// Rejected: a 4xx, or a FAILURE result.
pub fn expect_rejected(ctx: &mut Ctx, r: &Resp, what: &str) -> Step<()> {
    let failure_result = r.get("status").and_then(Value::as_str) == Some("FAILURE");
    if (400..500).contains(&r.http) || (r.http == 200 && failure_result) {
        ctx.checked(format!("{what}: rejected ({})", r.http));
        Ok(())
    } else {
        fail(format!(
            "{what}: expected a 4xx or a FAILURE result, got {}",
            r.describe()
        ))
    }
}

pub fn now_utc() -> String {
    format_timestamp(time::OffsetDateTime::now_utc())
}

/// A complete registration with fresh ids.
pub fn registration(skills: &[(&str, f64)]) -> Value {
    let skills: Vec<Value> = skills
        .iter()
        .map(|(name, cost)| {
            json!({"skill_name": name, "description": "harness test skill", "cost_per_call": cost,
                   "input_schema": {"text": "string"}, "output_schema": {"text": "string"}})
        })
        .collect();
    json!({
        "agent_id": new_id(), "agent_name": "agentconform test agent", "owner_id": format!("owner-{}", new_id()),
        // Never called: test agents exist only to be discovered and scored.
        "api_endpoint": "http://127.0.0.1:9/jobs", "skills": skills, "version": "0.1",
        "timestamp_utc": now_utc(),
    })
}

/// Registers a test agent; returns its id. Any 2xx is accepted here (CHO-012 has
/// its own case).
pub async fn register(ctx: &mut Ctx, skills: &[(&str, f64)]) -> Step<String> {
    let body = registration(skills);
    let id = body["agent_id"].as_str().unwrap_or_default().to_string();
    let r = post(ctx, Base::Registry, "register", &body).await?;
    if !r.ok() {
        return fail(format!("registering a test agent failed: {}", r.describe()));
    }
    Ok(id)
}

/// A unique skill name, so that concurrent cases never see each other's agents.
pub fn unique_skill() -> String {
    format!("h_skill_{}", new_id().replace('-', ""))
}

/// `GET /discover` with a query; the entries, schema-checked. A 404 is read as
/// no match, with a warning (CHO-A12).
pub async fn discover(ctx: &mut Ctx, query: &str) -> Step<Vec<Value>> {
    let r = call(
        ctx,
        Base::Registry,
        reqwest::Method::GET,
        &format!("discover?{query}"),
        None,
    )
    .await?;
    if r.http == 404 {
        ctx.warn(
            "discover answered 404 for no match; 200 with an empty list is expected (CHO-A12)",
        );
        return Ok(Vec::new());
    }
    if r.http != 200 {
        return fail(format!(
            "GET /discover?{query} answered {} (CHO-016)",
            r.describe()
        ));
    }
    let body = r.json.unwrap_or_default();
    schema(ctx, "discover-response", &body)?;
    Ok(body["agents"].as_array().cloned().unwrap_or_default())
}

pub fn entry<'a>(entries: &'a [Value], agent_id: &str) -> Option<&'a Value> {
    entries.iter().find(|e| e["agent_id"] == agent_id)
}

/// An agent's score as discovery shows it under `skill`.
pub async fn score(ctx: &mut Ctx, agent_id: &str, skill: &str) -> Step<f64> {
    let entries = discover(ctx, &format!("skill={skill}")).await?;
    match entry(&entries, agent_id).and_then(|e| e["reputation_score"].as_f64()) {
        Some(s) => Ok(s),
        None => fail(format!(
            "agent {agent_id} is not discoverable under skill {skill}"
        )),
    }
}

/// The harness's calculator for chorus.md §4.
pub fn expected_after(old: f64, success: bool, hirer: f64) -> f64 {
    let new = if success {
        old + (2.0 * hirer / 100.0)
    } else {
        old - (3.0 * 1.5)
    };
    new.clamp(0.0, 100.0)
}

/// Exact to 1e-9 passes; within 0.005 (two-decimal rounding, CHO-A10) warns.
pub fn check_score(ctx: &mut Ctx, got: f64, want: f64, what: &str) -> Step<()> {
    let d = (got - want).abs();
    if d <= 1e-9 {
        ctx.checked(format!("{what}: {got}"));
        Ok(())
    } else if d <= 0.005 + 1e-9 {
        ctx.warn(format!(
            "{what}: {got}, the formula gives {want} (rounded? CHO-A10)"
        ));
        Ok(())
    } else {
        fail(format!(
            "{what}: discovery shows {got}, the formula of chorus.md §4 gives {want}"
        ))
    }
}

/// Reports an outcome through the profile's outcome channel.
pub async fn report_outcome(
    ctx: &mut Ctx,
    agent_id: &str,
    orchestrator_id: &str,
    success: bool,
) -> Step<()> {
    let job_id = new_id();
    let (lower, upper) = if success {
        ("success", "SUCCESS")
    } else {
        ("failure", "FAILURE")
    };
    let template = ctx.profile().chorus.outcome_request.clone();
    let Some((method, path)) = template.split_once(' ') else {
        return skip(format!(
            "outcome_request {template:?} is not \"METHOD /path\""
        ));
    };
    let path = path
        .replace("{agent_id}", agent_id)
        .replace("{outcome}", lower)
        .replace("{OUTCOME}", upper)
        .replace("{job_id}", &job_id);
    let body = json!({
        "job_id": job_id, "agent_id": agent_id, "status": upper,
        "output_data": if success { json!({}) } else { Value::Null },
        "execution_cost": 0.0, "execution_time_ms": 1,
        "error_message": if success { Value::Null } else { json!("harness-reported failure") },
        "timestamp_utc": now_utc(), "orchestrator_id": orchestrator_id,
    });
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let r = call(ctx, Base::Registry, method, &path, Some(&body)).await?;
    if !r.ok() {
        return fail(format!(
            "reporting an outcome through {template:?} failed: {}",
            r.describe()
        ));
    }
    Ok(())
}

/// The fixture agent: its discovery entry and its jobs URL (CHO-A3).
pub async fn fixture_agent(ctx: &mut Ctx) -> Step<(Value, String)> {
    let skill = ctx.profile().chorus.fixture_skill.clone();
    let entries = discover(ctx, &format!("skill={skill}")).await?;
    let Some(e) = entries.first().cloned() else {
        return skip(format!(
            "no agent with the fixture skill {skill:?} is registered"
        ));
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

/// A complete job request for the fixture agent.
pub fn job(ctx: &Ctx, input: Value, budget: f64, callback_url: &str) -> Value {
    json!({
        "job_id": new_id(), "orchestrator_id": new_id(), "skill_name": ctx.profile().chorus.fixture_skill,
        "input_data": input, "budget": budget, "currency": "chorus_credits_v1",
        "callback_url": callback_url, "timestamp_utc": now_utc(),
    })
}

/// What a job came to.
pub enum JobOutcome {
    /// A final result, how it came, and the round trip observed.
    Result {
        result: Value,
        via: &'static str,
        rtt: Duration,
    },
    /// The job was refused.
    Rejected(Resp),
}

fn is_final(v: &Value) -> bool {
    matches!(v["status"].as_str(), Some("SUCCESS" | "FAILURE"))
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
    let mut body = job(ctx, json!({"text": "hello chorus"}), 0.15, &listener.url);
    mutate(&mut body);
    let delivery = ctx.profile().chorus.result_delivery;
    let started = Instant::now();
    let r = post(ctx, Base::Url(jobs_url.to_string()), "", &body).await?;
    if r.http >= 400 {
        return Ok((body, JobOutcome::Rejected(r)));
    }
    if let Some(j) = r.json.as_ref().filter(|j| is_final(j)) {
        if delivery == ResultDelivery::Callback {
            return fail("the result came in the /jobs response; the profile says result_delivery = callback");
        }
        if j["status"] == "FAILURE" && !r.codes().is_empty() {
            return Ok((body, JobOutcome::Rejected(r)));
        }
        let rtt = started.elapsed();
        return Ok((
            body,
            JobOutcome::Result {
                result: j.clone(),
                via: "sync",
                rtt,
            },
        ));
    }
    if delivery == ResultDelivery::Sync {
        return fail(format!(
            "no result in the /jobs response ({}); the profile says result_delivery = sync",
            r.describe()
        ));
    }
    ctx.note(format!(
        "/jobs answered {}; waiting for the callback",
        r.describe()
    ));
    let wait = Duration::from_millis(ctx.profile().timing.case_timeout_ms);
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(bytes) = listener.next(left).await else {
            return fail(format!(
                "no result was POSTed to callback_url within {} ms (CHO-026)",
                wait.as_millis()
            ));
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let v: Value = match json::parse(&bytes) {
            Ok(t) => t.to_serde(),
            Err(e) => return fail(format!("the callback body is not JSON: {e}: {text}")),
        };
        ctx.note(format!("callback received: {text}"));
        if is_final(&v) {
            let rtt = started.elapsed();
            return Ok((
                body,
                JobOutcome::Result {
                    result: v,
                    via: "callback",
                    rtt,
                },
            ));
        }
    }
}

/// Credits with at most two decimals (CHO-005).
pub fn two_decimals(x: f64) -> bool {
    ((x * 100.0).round() - x * 100.0).abs() < 1e-6
}

pub fn is_utc_timestamp(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.ends_with('Z') && parse_timestamp(s).is_ok())
}

/// A transfer body.
pub fn transfer(from: &str, to: &str, amount: f64) -> Value {
    json!({"transfer_id": new_id(), "from_owner": from, "to_owner": to, "amount": amount,
           "job_id": new_id(), "timestamp_utc": now_utc()})
}

/// A fresh owner, whose balance is the profile's initial credits.
pub fn fresh_owner() -> String {
    format!("h-owner-{}", new_id())
}
