//! chorus expectations: registry, discovery, jobs, ledger and outcome helpers, and
//! the harness's own reputation calculator (kept apart from the reference's on
//! purpose: a bug there must not hide the same bug in a target).
//!
//! Every rule that several cases meet is checked here once and reported as a typed
//! finding owned by the case whose subject it is; the reply is then read leniently
//! (a discovery entry with a `skills` list instead of one `skill`, an agent id in
//! another encoding, a result status in lower case, a refusal answered with HTTP
//! 200), so that each case still reaches its own subject. What the profile assumes
//! and a target does not do (the fixture's output, funded owners, the outcome
//! request) is a PROFILE finding that names the key to set.

use super::rules;
use crate::case::{fail, skip, Step, Stop};
use crate::drive::callback::CallbackListener;
use crate::finding::{quote, Finding};
use crate::profile::{ChorusSection, ResultDelivery, SetupBase, SetupEvent};
use crate::rules::schema_findings;
use crate::script::Ctx;
use crate::template::{render, render_json};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::{is_uuid, json, new_id};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub const CODES: [&str; 5] = [
    "SKILL_MISMATCH",
    "BUDGET_INSUFFICIENT",
    "AGENT_OFFLINE",
    "EXECUTION_ERROR",
    "TRANSFER_FAILED",
];

/// Differences up to this are the same score; up to `ROUNDED` a two-decimal
/// rounding, which chorus.md leaves open (CHO-A10).
const EXACT: f64 = 1e-9;
const ROUNDED: f64 = 0.005 + 1e-9;

/// A reply: HTTP status, the JSON body if any, and the body as text.
#[derive(Debug, Clone, Default)]
pub struct Resp {
    pub http: u16,
    pub json: Option<Value>,
    pub raw: String,
}

/// Status words a refusal may carry in a 2xx reply.
const FAILURE_WORDS: [&str; 8] = [
    "error", "failed", "failure", "fail", "rejected", "refused", "denied", "declined",
];

impl Resp {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.http)
    }

    /// The status and what the target said, shortened.
    pub fn describe(&self) -> String {
        match &self.json {
            Some(j) => format!("HTTP {} {}", self.http, short(&j.to_string())),
            None if self.raw.trim().is_empty() => format!("HTTP {} (empty body)", self.http),
            None => format!("HTTP {} {} (not JSON)", self.http, quote(&self.raw)),
        }
    }

    pub fn get(&self, k: &str) -> Option<&Value> {
        self.json.as_ref()?.get(k)
    }

    /// The `status` member, upper-cased.
    fn status_upper(&self) -> Option<String> {
        self.get("status")
            .and_then(Value::as_str)
            .map(|s| s.to_ascii_uppercase())
    }

    /// A job result with status FAILURE (in any case).
    pub fn is_failure_result(&self) -> bool {
        self.status_upper().as_deref() == Some("FAILURE")
    }

    /// A 2xx reply that says no: a failure status word (not a job result's), or
    /// `success: false`, or a code of chorus.md §5.
    pub fn refusal_in_2xx(&self) -> bool {
        if !self.ok() {
            return false;
        }
        let Some(Value::Object(o)) = &self.json else {
            return false;
        };
        let status = o
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase);
        if matches!(status.as_deref(), Some("success" | "pending")) {
            return false;
        }
        // Only the shapes chorus.md and its ambiguities give a refusal: a status word
        // of failure, or an error code (CHO-A5). A member that merely reads false
        // (`"success": false` beside the scores of a FAILURE outcome report) says
        // something about the subject, not about the request.
        status
            .as_deref()
            .is_some_and(|s| FAILURE_WORDS.contains(&s) && s != "failure")
            || (!self.is_failure_result()
                && self.codes().iter().any(|c| CODES.contains(&c.as_str())))
    }

    /// A refusal in any form: a 4xx/5xx, a FAILURE result, or a 2xx that says no.
    pub fn is_refusal(&self) -> bool {
        self.http >= 400 || self.is_failure_result() || self.refusal_in_2xx()
    }

    /// Error codes the reply carries (CHO-A5): an upper-case code string that is a
    /// whole top-level member, or one of chorus.md §5 named inside a top-level
    /// string (`{"detail": "SKILL_MISMATCH: …"}`, a FAILURE result's error_message)
    /// or one level down in an `error`, `errors` or `detail` member.
    pub fn codes(&self) -> Vec<String> {
        let Some(Value::Object(o)) = &self.json else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        let mut scan = |v: &Value| {
            let Some(s) = v.as_str() else {
                return;
            };
            if is_code_token(s) {
                if !["SUCCESS", "FAILURE", "PENDING"].contains(&s) && !out.iter().any(|c| c == s) {
                    out.push(s.to_string());
                }
                return;
            }
            for c in CODES {
                if s.contains(c) && !out.iter().any(|x| x == c) {
                    out.push(c.to_string());
                }
            }
        };
        for (k, v) in o {
            if k == "output_data" || k == "input_data" {
                continue;
            }
            scan(v);
            if matches!(k.as_str(), "error" | "errors" | "detail") {
                match v {
                    Value::Object(inner) => inner.values().for_each(&mut scan),
                    Value::Array(items) => {
                        for item in items {
                            match item {
                                Value::Object(inner) => inner.values().for_each(&mut scan),
                                other => scan(other),
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

/// JSON the target sent, shortened to fit one report line.
pub fn short(text: &str) -> String {
    crate::finding::clipped(text.trim(), 200)
}

fn is_code_token(s: &str) -> bool {
    s.len() > 3
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_uppercase())
}

pub enum Base {
    Registry,
    Ledger,
    Url(String),
}

/// One request. The reply is read as JSON where it is JSON; callers that need JSON
/// say so ([`need_json`]).
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
    let resp = Resp {
        http: r.status,
        json: parsed,
        raw: String::from_utf8_lossy(&r.body).into_owned(),
    };
    check_codes(ctx, &resp);
    Ok(resp)
}

/// A refusal's codes must be chorus.md §5's (CHO-046, a warning).
fn check_codes(ctx: &mut Ctx, resp: &Resp) {
    if resp.is_refusal() {
        for code in resp.codes() {
            if !CODES.contains(&code.as_str()) {
                ctx.finding(rules::ERROR_CODE.found_as(
                    &code,
                    format!(
                        "a refusal carries the code {code}, which is not one of chorus.md §5: {}",
                        resp.describe()
                    ),
                ));
            }
        }
    }
}

pub async fn post(ctx: &mut Ctx, base: Base, path: &str, body: &Value) -> Step<Resp> {
    call(ctx, base, reqwest::Method::POST, path, Some(body)).await
}

/// POSTs raw bytes, labelled JSON, to the registry.
pub async fn post_raw(ctx: &mut Ctx, path: &str, bytes: Vec<u8>) -> Step<Resp> {
    let r = ctx
        .http(
            reqwest::Method::POST,
            path,
            &[("content-type", "application/json")],
            Some(bytes),
        )
        .await?;
    Ok(Resp {
        http: r.status,
        json: json::parse(&r.body).ok().map(|t| t.to_serde()),
        raw: String::from_utf8_lossy(&r.body).into_owned(),
    })
}

/// The JSON body of a reply the spec defines as JSON (CHO-001); blocks when there
/// is none.
pub fn need_json(ctx: &mut Ctx, r: &Resp, what: &str) -> Step<Value> {
    match &r.json {
        Some(v) => Ok(v.clone()),
        None => {
            let f = rules::REPLY_NOT_JSON
                .found(format!("the reply to {what} is not JSON: {}", r.describe()));
            Err(ctx.block(f))
        }
    }
}

/// Records the violations of schema `chorus/<name>` as findings owned by `owner`,
/// except those `skip` leaves to another check.
pub fn shape_findings(
    ctx: &mut Ctx,
    name: &str,
    family: &'static crate::rules::Rule,
    v: &Value,
    skip: impl Fn(&Finding) -> bool,
) {
    let found = schema_findings(
        &ctx.shared.schemas,
        &format!("chorus/{name}"),
        (rules::RULES, family),
        v,
    );
    for f in found {
        if !skip(&f) {
            ctx.finding(f);
        }
    }
}

/// Blocks on a finding of `family` already recorded, or on `fallback`.
fn block_on(ctx: &mut Ctx, family: &crate::rules::Rule, fallback: Finding) -> Stop {
    let known = ctx
        .findings()
        .iter()
        .find(|m| m.finding.rule.is_some_and(|r| r == family))
        .map(|m| m.finding.clone());
    ctx.block(known.unwrap_or(fallback))
}

// ---------------------------------------------------------------------------
// Templates of the profile

/// Sends the profile's setup requests for `event` with `vars` (the case id, a
/// fresh UUID and the time are added). A refusal blocks the case with a PROFILE
/// finding that names the request.
pub async fn setup(ctx: &mut Ctx, event: SetupEvent, vars: &[(&'static str, Value)]) -> Step<()> {
    let wanted: Vec<crate::profile::SetupRequest> = ctx
        .profile()
        .chorus
        .setup_requests
        .iter()
        .filter(|r| r.on == event)
        .cloned()
        .collect();
    for (i, s) in wanted.into_iter().enumerate() {
        let mut all: Vec<(&str, Value)> = vars.to_vec();
        all.push(("uuid", json!(new_id())));
        all.push(("timestamp_utc", json!(now_utc())));
        all.push(("case_id", json!(ctx.case_id.unwrap_or("chorus"))));
        let path = render(&s.path, &all, false).or_else(skip)?;
        let body = match &s.body {
            Some(b) => Some(render_json(b, &all).or_else(skip)?),
            None => None,
        };
        let method =
            reqwest::Method::from_bytes(s.method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let base = match s.base {
            SetupBase::Registry => Base::Registry,
            SetupBase::Ledger => Base::Ledger,
        };
        let r = call(ctx, base, method, &path, body.as_ref()).await?;
        if !r.ok() || r.refusal_in_2xx() {
            let event = format!("{event:?}").to_ascii_lowercase();
            let f = rules::PROFILE_SETUP_REQUESTS.found_as(&event, format!(
                    "the setup request {} {path} (on = \"{event}\", [[chorus.setup_requests]] #{}) answered {}: fix it in the profile",
                    s.method,
                    i + 1,
                    r.describe()
                ));
            return Err(ctx.block(f));
        }
    }
    Ok(())
}

/// The setup requests sent once before a case.
pub async fn setup_case(ctx: &mut Ctx) -> Step<()> {
    setup(ctx, SetupEvent::Case, &[]).await
}

// ---------------------------------------------------------------------------
// Ids and times

/// An id in the canonical 8-4-4-4-12 lower-case form, from a UUID written another
/// way (upper case, no hyphens, braces, `urn:uuid:`).
pub fn canonical_id(s: &str) -> Option<String> {
    let t = s.trim();
    let t = t.strip_prefix("urn:uuid:").unwrap_or(t);
    let t = t.trim_start_matches('{').trim_end_matches('}');
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let h = hex.to_ascii_lowercase();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

/// The same UUID, however written.
pub fn same_id(a: &str, b: &str) -> bool {
    a == b || matches!((canonical_id(a), canonical_id(b)), (Some(x), Some(y)) if x == y)
}

/// An agent id the registry wrote in an encoding other than a UUID string
/// (CHO-002): one finding, owned by the registration case; the id is read as the
/// UUID it encodes.
fn note_id_encoding(ctx: &mut Ctx, got: &str, sent: &str, where_: &str) {
    if got != sent && !is_uuid(got) && same_id(got, sent) {
        ctx.finding(rules::AGENT_ID_ENCODING.found(format!(
            "{where_} writes the agent id {got:?} for the UUID {sent:?}: not a UUID string"
        )));
    }
}

pub fn now_utc() -> String {
    format_timestamp(time::OffsetDateTime::now_utc())
}

/// ISO 8601 UTC as chorus.md §2 says: a date-time with `Z`, or with an offset of
/// zero (`+00:00`, `-00:00`, as RFC 3339 writes UTC too).
pub fn is_utc_timestamp(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        let zero = ["Z", "z", "+00:00", "-00:00"]
            .iter()
            .any(|z| s.ends_with(z));
        let normal = match s.strip_suffix('z') {
            Some(head) => format!("{head}Z"),
            None => s.to_string(),
        };
        zero && parse_timestamp(&normal).is_ok()
    })
}

/// Credits with at most two decimals (CHO-005).
pub fn two_decimals(x: f64) -> bool {
    ((x * 100.0).round() - x * 100.0).abs() < 1e-6
}

// ---------------------------------------------------------------------------
// Registration

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

/// A test agent the harness registered.
#[derive(Debug, Clone)]
pub struct TestAgent {
    pub id: String,
    pub owner_id: String,
    /// Its first skill.
    pub skill: String,
    /// The score the registration reply gave, if it gave one.
    pub reputation: Option<f64>,
}

/// Reads what a registration reply says that other cases own: the agent id (its
/// encoding) and the initial reputation (CHO-014). Returns the reputation.
pub fn registration_reply(ctx: &mut Ctx, sent: &Value, r: &Resp) -> Option<f64> {
    let sent_id = sent["agent_id"].as_str().unwrap_or_default();
    if let Some(got) = r.get("agent_id").and_then(Value::as_str) {
        note_id_encoding(ctx, got, sent_id, "the registration reply");
    }
    let rep = r.get("reputation_score").and_then(Value::as_f64);
    if let Some(x) = rep {
        if (x - 50.0).abs() > ROUNDED {
            ctx.finding(rules::REPUTATION_INITIAL.found(format!(
                "a new agent is registered at reputation_score {x}, not 50.0"
            )));
        }
    }
    rep
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
        ctx.deviation(rules::JOB_RESULT_JOB_ID.found(format!(
            "the result's job_id {} is not the request's {id:?}",
            result["job_id"]
        )));
    }
    if !same(&result["agent_id"], agent_id) {
        ctx.deviation(rules::JOB_RESULT_AGENT_ID.found(format!(
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
            rules::JOB_RESULT_COST_DECIMALS
                .found(format!("execution_cost {cost} has more than two decimals")),
        );
    }
    if cost > job["budget"].as_f64().unwrap_or(0.0) {
        ctx.warn(format!(
            "execution_cost {cost} exceeds the budget (CHO-A20)"
        ));
    }
}

/// Judges the reply to an accepted registration as the register case does: 201
/// Created (CHO-012), the register-response schema (CHO-013: status "registered",
/// the agent_id, a reputation_score), the agent_id echoed (an id in another encoding
/// is a finding of its own, CHO-002) and the initial score (CHO-014). `sent` is the
/// registration as sent, when it was JSON. An agent_id sent that is no UUID (a
/// fuzzed one) is not judged in the reply: the harness sent it.
pub fn judge_registered(ctx: &mut Ctx, sent: Option<&Value>, r: &Resp) -> Step<()> {
    if r.http != 201 {
        ctx.deviation(rules::REGISTER_STATUS.found(format!(
            "a registration is answered {}, not 201 Created",
            r.describe()
        )));
    }
    let mut reply = need_json(ctx, r, "POST /register")?;
    let sent = sent.unwrap_or(&Value::Null);
    registration_reply(ctx, sent, r);
    let sent_id = sent["agent_id"].as_str().filter(|s| is_uuid(s));
    // An id in another encoding is one finding (above); the schema judges the rest.
    let echoed = reply["agent_id"].as_str().map(String::from);
    if let Some(c) = echoed.as_deref().and_then(canonical_id) {
        reply["agent_id"] = json!(c);
    }
    shape_findings(
        ctx,
        "register-response",
        &rules::SCHEMA_REGISTER_RESPONSE,
        &reply,
        |f| sent_id.is_none() && f.detail().starts_with("/agent_id"),
    );
    if let Some(sent_id) = sent_id {
        if !echoed.as_deref().is_some_and(|id| same_id(id, sent_id)) {
            ctx.deviation(rules::REGISTER_AGENT_ID.found(format!(
                "the reply names agent {}, not the registered {sent_id:?}",
                r.get("agent_id").cloned().unwrap_or(Value::Null)
            )));
        }
    }
    Ok(())
}

/// Registers a test agent. A refusal of a complete registration blocks the case
/// (the registration case owns it).
pub async fn register(ctx: &mut Ctx, skills: &[(&str, f64)]) -> Step<TestAgent> {
    let body = registration(skills);
    let r = post(ctx, Base::Registry, "register", &body).await?;
    if !r.ok() || r.refusal_in_2xx() {
        let f = rules::REGISTER_REFUSED.found(format!(
            "a complete registration was refused: {}",
            r.describe()
        ));
        return Err(ctx.block(f));
    }
    let reputation = registration_reply(ctx, &body, &r);
    let agent = TestAgent {
        id: body["agent_id"].as_str().unwrap_or_default().to_string(),
        owner_id: body["owner_id"].as_str().unwrap_or_default().to_string(),
        skill: skills.first().map(|s| s.0.to_string()).unwrap_or_default(),
        reputation,
    };
    let cost = skills.first().map_or(0.0, |s| s.1);
    setup(
        ctx,
        SetupEvent::Agent,
        &[
            ("agent_id", json!(agent.id)),
            ("owner_id", json!(agent.owner_id)),
            ("skill_name", json!(agent.skill)),
            ("cost_per_call", json!(cost)),
            ("reputation", json!(reputation.unwrap_or(50.0))),
        ],
    )
    .await?;
    Ok(agent)
}

/// The prefix of the skills the harness registers itself.
pub const HARNESS_SKILL: &str = "h_skill_";

/// A unique skill name, so that concurrent cases never see each other's agents.
pub fn unique_skill() -> String {
    format!("{HARNESS_SKILL}{}", new_id().replace('-', ""))
}

// ---------------------------------------------------------------------------
// Discovery

/// The skill a discovery query asks for, its percent-encoding decoded.
fn query_skill(query: &str) -> Option<String> {
    let url = reqwest::Url::parse(&format!("http://query.invalid/?{query}")).ok()?;
    let skill = url
        .query_pairs()
        .find_map(|(k, v)| (k == "skill").then(|| v.into_owned()));
    skill
}

/// `GET /discover` with a query: the entries, read leniently. A 404 is read as no
/// match, with a warning (CHO-A12). The body is judged once here, each deviation a
/// finding owned by the case whose subject it is: the list's shape, each entry's
/// shape (a `skills` list instead of one `skill`, the agent id's encoding), the
/// schema, scores in [0, 100] (CHO-007, CHO-045) and the ranking (CHO-021). The
/// entries come back normalized: a `skill` object, canonical agent ids.
pub async fn discover(ctx: &mut Ctx, query: &str) -> Step<Vec<Value>> {
    let r = call(
        ctx,
        Base::Registry,
        reqwest::Method::GET,
        &format!("discover?{query}"),
        None,
    )
    .await?;
    discovery_reply(ctx, query, &r)
}

/// The registry's reply to `GET /discover?{query}`: 200 with the agents under
/// "agents" (CHO-016, CHO-017), each entry's shape and scores; the entries, read
/// past their shape.
pub fn discovery_reply(ctx: &mut Ctx, query: &str, r: &Resp) -> Step<Vec<Value>> {
    let what = format!("GET /discover?{query}");
    if r.http == 404 {
        ctx.finding(rules::DISCOVER_404_FOR_NO_MATCH.found(format!(
            "{what} answered {} where 200 with an empty list is expected",
            r.describe()
        )));
        return Ok(Vec::new());
    }
    if !r.ok() {
        let f = rules::DISCOVER_REFUSED.found(format!("{what} answered {}", r.describe()));
        return Err(ctx.block(f));
    }
    if r.http != 200 {
        ctx.finding(
            rules::DISCOVER_STATUS.found(format!("{what} answered HTTP {}, not 200 OK", r.http)),
        );
    }
    let body = need_json(ctx, r, &what)?;
    // Whether a list of agents was found (under "agents" or read past its shape).
    let (raw_agents, found) = agent_list(ctx, &body, &what);
    let wanted_skill = query_skill(query);
    let agents: Vec<Value> = raw_agents
        .into_iter()
        .map(|e| normalize_entry(ctx, e, wanted_skill.as_deref(), &what))
        .collect();
    // The list is judged by the schema once its shape is read past; the original
    // when no list was found, so that the schema says so.
    let judged = if found {
        json!({"agents": agents})
    } else {
        body.clone()
    };
    let out_of_range = check_scores(ctx, &agents, &what);
    shape_findings(
        ctx,
        "discover-response",
        &rules::SCHEMA_DISCOVER_RESPONSE,
        &judged,
        |f| out_of_range && f.detail().ends_with("/reputation_score"),
    );
    Ok(agents)
}

/// The agents of a discovery reply, and whether a list was found: under "agents",
/// else under the one list member or as a bare list (a finding, CHO-017).
fn agent_list(ctx: &mut Ctx, body: &Value, what: &str) -> (Vec<Value>, bool) {
    let mut found = true;
    let raw_agents = match body {
        Value::Object(o) => match o.get("agents") {
            Some(Value::Array(a)) => a.clone(),
            Some(_) => {
                found = false;
                Vec::new()
            }
            None => {
                let lists: Vec<(&String, &Vec<Value>)> = o
                    .iter()
                    .filter_map(|(k, v)| v.as_array().map(|a| (k, a)))
                    .collect();
                match lists.as_slice() {
                    [(k, a)] => {
                        ctx.finding(rules::DISCOVER_LIST_SHAPE.found(format!(
                            "{what} lists the agents under {k:?}, not \"agents\""
                        )));
                        (*a).clone()
                    }
                    _ => {
                        found = false;
                        Vec::new()
                    }
                }
            }
        },
        Value::Array(a) => {
            ctx.finding(rules::DISCOVER_LIST_SHAPE.found(format!(
                "{what} answered a bare list, not {{\"agents\": [...]}}"
            )));
            a.clone()
        }
        _ => {
            found = false;
            Vec::new()
        }
    };
    (raw_agents, found)
}

/// One discovery entry, normalized: a `skill` object (from a `skills` list or a
/// skill name), the agent id in canonical form.
fn normalize_entry(ctx: &mut Ctx, mut e: Value, skill: Option<&str>, what: &str) -> Value {
    let Some(o) = e.as_object_mut() else {
        return e;
    };
    if let Some(id) = o.get("agent_id").and_then(Value::as_str).map(String::from) {
        if let Some(c) = canonical_id(&id) {
            note_id_encoding(ctx, &id, &c, &format!("{what} (an entry)"));
            o.insert("agent_id".into(), json!(c));
        }
    }
    let has_skill = o.get("skill").is_some_and(Value::is_object);
    if !has_skill {
        if let Some(Value::Array(list)) = o.get("skills").cloned() {
            let pick = list
                .iter()
                .find(|s| skill.is_some_and(|k| s["skill_name"] == k || s.as_str() == Some(k)))
                .or(list.first())
                .cloned();
            if let Some(p) = pick {
                let sk = match p {
                    Value::String(name) => {
                        json!({"skill_name": name, "cost_per_call": o.get("cost_per_call").cloned().unwrap_or(Value::Null)})
                    }
                    other => other,
                };
                ctx.finding(
                    rules::DISCOVER_ENTRY_SKILLS_LIST.found(format!(
                            "{what}: entries carry a `skills` list ({}) instead of the one matched `skill` object",
                            short(&Value::Array(list.clone()).to_string())
                        )),
                );
                o.insert("skill".into(), sk);
            }
        } else if let Some(Value::String(name)) = o.get("skill").cloned() {
            ctx.finding(
                rules::DISCOVER_ENTRY_SKILL_NAME_ONLY.found(format!("{what}: an entry's `skill` is the name {name:?}, not an object {{skill_name, cost_per_call}}")),
            );
            let cost = o.get("cost_per_call").cloned().unwrap_or(Value::Null);
            o.insert(
                "skill".into(),
                json!({"skill_name": name, "cost_per_call": cost}),
            );
        }
    }
    e
}

/// Scores outside [0, 100] (CHO-007, CHO-045) and the ranking (CHO-021). Returns
/// whether a score was out of range (the schema then leaves it to this check).
fn check_scores(ctx: &mut Ctx, agents: &[Value], what: &str) -> bool {
    let scores: Vec<f64> = agents
        .iter()
        .filter_map(|e| e["reputation_score"].as_f64())
        .collect();
    let mut out = false;
    for e in agents {
        if let Some(s) = e["reputation_score"].as_f64() {
            if !(0.0..=100.0).contains(&s) {
                out = true;
                ctx.finding(rules::REPUTATION_CLAMP.found(format!(
                    "{what} shows agent {} at reputation_score {s}, outside [0.0, 100.0]",
                    e["agent_id"]
                )));
            }
        }
    }
    if scores.windows(2).any(|w| w[1] > w[0] + EXACT) {
        ctx.finding(rules::DISCOVER_RANKING.found(format!(
            "{what} does not rank by reputation, highest first: the scores come as {}",
            crate::finding::json(&scores)
        )));
    }
    out
}

pub fn entry<'a>(entries: &'a [Value], agent_id: &str) -> Option<&'a Value> {
    entries.iter().find(|e| {
        e["agent_id"]
            .as_str()
            .is_some_and(|id| same_id(id, agent_id))
    })
}

/// What a discovery entry listed under `skill` breaks: it shows that skill (the
/// discover-by-skill case's rule, CHO-018).
pub fn entry_skill_finding(e: &Value, skill: &str) -> Option<Finding> {
    (e["skill"]["skill_name"] != skill).then(|| {
        rules::DISCOVER_BY_SKILL.found(format!(
            "agent {} is listed under {skill} showing skill {} (CHO-018)",
            e["agent_id"], e["skill"]
        ))
    })
}

/// A registered agent that discovery does not list under its skill (CHO-015).
pub fn agent_missing(agent_id: &str, skill: &str, listed: usize) -> Finding {
    rules::DISCOVER_AGENT_MISSING.found(format!(
            "agent {agent_id}, registered with skill {skill}, is not listed by GET /discover?skill={skill} ({listed} entries)"
        ))
}

/// An agent's score as discovery shows it under `skill`. An agent missing from the
/// list, or listed without a score, blocks the case.
pub async fn score(ctx: &mut Ctx, agent_id: &str, skill: &str) -> Step<f64> {
    let entries = discover(ctx, &format!("skill={skill}")).await?;
    let Some(e) = entry(&entries, agent_id) else {
        return Err(ctx.block(agent_missing(agent_id, skill, entries.len())));
    };
    match e["reputation_score"].as_f64() {
        Some(s) => Ok(s),
        None => {
            let f = rules::DISCOVER_NO_SCORE.found(format!(
                "agent {agent_id} is listed without a numeric reputation_score: {e}"
            ));
            Err(block_on(ctx, &rules::SCHEMA_DISCOVER_RESPONSE, f))
        }
    }
}

// ---------------------------------------------------------------------------
// Reputation

/// The harness's calculator for chorus.md §4.
pub fn expected_after(old: f64, success: bool, hirer: f64) -> f64 {
    let new = if success {
        old + (2.0 * hirer / 100.0)
    } else {
        old - (3.0 * 1.5)
    };
    new.clamp(0.0, 100.0)
}

/// Exact to 1e-9 passes; within 0.005 (two-decimal rounding, CHO-A10) is noted.
/// The live fuzzer's check; the cases use [`after_outcomes`].
pub fn check_score(ctx: &mut Ctx, got: f64, want: f64, what: &str) -> Step<()> {
    let d = (got - want).abs();
    if d <= EXACT {
        ctx.checked(format!("{what}: {got}"));
        Ok(())
    } else if d <= ROUNDED {
        ctx.note(format!(
            "{what}: {got}, the formula gives {want}: rounded to two decimals, accepted (CHO-A10)"
        ));
        Ok(())
    } else if outcome_tells_hirer(&ctx.profile().chorus) {
        fail(format!(
            "{what}: discovery shows {got}; chorus.md §4 gives {want}"
        ))
    } else {
        fail(format!(
            "{what}: discovery shows {got}, not {want}; the outcome request does not tell the target the hirer's reputation: if its registry takes it from the request, put {{hirer_reputation}} in [chorus] outcome_body or outcome_request"
        ))
    }
}

/// One outcome the harness reports to the registry.
pub struct Report<'a> {
    pub agent_id: &'a str,
    /// The agent's owner; empty where the harness does not know it.
    pub agent_owner: &'a str,
    /// The agent's score before the outcome, as the harness last saw it.
    pub reputation: f64,
    pub hirer_id: &'a str,
    pub hirer_owner: &'a str,
    /// The hirer's score, which weighs a SUCCESS (chorus.md §4).
    pub hirer_reputation: f64,
    pub success: bool,
}

/// Whether the outcome request tells the target the hirer's reputation.
fn outcome_tells_hirer(c: &ChorusSection) -> bool {
    c.outcome_request.contains("{hirer_reputation}")
        || c.outcome_body.contains("{hirer_reputation}")
}

/// Reports an outcome through the profile's outcome request (CHO-A1). A refusal
/// blocks the case with a PROFILE finding: the request is the profile's.
pub async fn report_outcome(ctx: &mut Ctx, o: &Report<'_>) -> Step<()> {
    let job_id = new_id();
    let (lower, upper) = if o.success {
        ("success", "SUCCESS")
    } else {
        ("failure", "FAILURE")
    };
    let vars: Vec<(&str, Value)> = vec![
        ("agent_id", json!(o.agent_id)),
        ("owner_id", json!(o.agent_owner)),
        ("reputation", json!(o.reputation)),
        ("job_id", json!(job_id)),
        ("orchestrator_id", json!(o.hirer_id)),
        ("hirer_id", json!(o.hirer_id)),
        ("hirer_owner_id", json!(o.hirer_owner)),
        ("hirer_reputation", json!(o.hirer_reputation)),
        ("outcome", json!(lower)),
        ("OUTCOME", json!(upper)),
        (
            "output_data",
            if o.success { json!({}) } else { Value::Null },
        ),
        (
            "error_message",
            if o.success {
                Value::Null
            } else {
                json!("harness-reported failure")
            },
        ),
        ("execution_cost", json!(0.0)),
        ("timestamp_utc", json!(now_utc())),
        ("uuid", json!(new_id())),
        ("case_id", json!(ctx.case_id.unwrap_or("chorus"))),
    ];
    let c = ctx.profile().chorus.clone();
    let Some((method, path)) = c.outcome_request.split_once(' ') else {
        return skip(format!(
            "outcome_request {:?} is not \"METHOD /path\"",
            c.outcome_request
        ));
    };
    let path = render(path, &vars, false).or_else(skip)?;
    let body = if c.outcome_body.trim().is_empty() {
        None
    } else {
        Some(render_json(&c.outcome_body, &vars).or_else(skip)?)
    };
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let shown = format!("{method} {path}");
    let r = call(ctx, Base::Registry, method, &path, body.as_ref()).await?;
    if !r.ok() || r.refusal_in_2xx() {
        let f = rules::PROFILE_OUTCOME_REQUEST.found(format!(
                "the outcome request {shown} answered {}: set [chorus] outcome_request and outcome_body to the request the target's registry takes for job outcomes (CHO-A1)",
                r.describe()
            ));
        return Err(ctx.block(f));
    }
    Ok(())
}

/// Which rule of chorus.md §4 a score broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    SuccessGain,
    FailurePenalty,
    Clamp,
    /// The gain is off and the outcome request did not tell the hirer's reputation.
    HirerUnknown,
}

/// A test agent and its score as the harness last saw it.
#[derive(Debug, Clone)]
pub struct Scored {
    pub agent: TestAgent,
    pub score: f64,
}

/// Registers a test agent and takes its starting score from the registration
/// reply, else from discovery.
pub async fn scored(ctx: &mut Ctx, skill: &str) -> Step<Scored> {
    let agent = register(ctx, &[(skill, 0.1)]).await?;
    let score = match agent.reputation {
        Some(s) => s,
        None => score(ctx, &agent.id, skill).await?,
    };
    Ok(Scored { agent, score })
}

/// Reports `n` outcomes for `who`, hired by `hirer`, then reads `who`'s score back
/// and judges it by chorus.md §4 from the score last seen. A deviation is recorded
/// as the finding of the rule it breaks (owned by that rule's case) and returned;
/// `who.score` becomes what discovery shows, so that the case reads on from there.
pub async fn after_outcomes(
    ctx: &mut Ctx,
    who: &mut Scored,
    hirer: &Scored,
    success: bool,
    n: usize,
    what: &str,
) -> Step<Option<Rule>> {
    for _ in 0..n {
        report_outcome(
            ctx,
            &Report {
                agent_id: &who.agent.id,
                agent_owner: &who.agent.owner_id,
                reputation: who.score,
                hirer_id: &hirer.agent.id,
                hirer_owner: &hirer.agent.owner_id,
                hirer_reputation: hirer.score,
                success,
            },
        )
        .await?;
    }
    let got = score(ctx, &who.agent.id, &who.agent.skill).await?;
    let old = who.score;
    who.score = got;
    let h = hirer.score;
    let (mut want, mut raw) = (old, old);
    for _ in 0..n {
        want = expected_after(want, success, h);
        raw += if success { 2.0 * h / 100.0 } else { -4.5 };
    }
    let d = (got - want).abs();
    if d <= EXACT {
        ctx.checked(format!("{what}: {got}"));
        return Ok(None);
    }
    if d <= ROUNDED {
        ctx.note(format!(
            "{what}: {got}, chorus.md §4 gives {want}: rounded to two decimals, accepted (CHO-A10)"
        ));
        return Ok(None);
    }
    let kind = if success { "SUCCESS" } else { "FAILURE" };
    let steps = format!("from {old}, {n} {kind} from a hirer at {h}");
    let clamped = (raw - want).abs() > EXACT || !(0.0..=100.0).contains(&got);
    let tells_hirer = outcome_tells_hirer(&ctx.profile().chorus);
    let (rule, f) = reputation_finding(
        clamped,
        success,
        tells_hirer,
        format!("{what}: discovery shows {got}"),
        (want, h, &steps),
    );
    ctx.finding(f);
    Ok(Some(rule))
}

/// Which rule a score off chorus.md §4's formula breaks, and its finding: the clamp
/// to [0.0, 100.0] (CHO-045), the hirer's reputation the outcome request does not
/// carry (a profile finding), the success gain (CHO-042, CHO-043) or the failure
/// penalty (CHO-044). `shows` says what discovery showed, `steps` what led there.
fn reputation_finding(
    clamped: bool,
    success: bool,
    tells_hirer: bool,
    shows: String,
    (want, h, steps): (f64, f64, &str),
) -> (Rule, Finding) {
    let (rule, found, summary): (Rule, &'static crate::rules::Rule, String) = if clamped {
        (
            Rule::Clamp,
            &rules::REPUTATION_CLAMP,
            format!("{shows}; {steps} give {want}, clamped to [0.0, 100.0] (chorus.md §4)"),
        )
    } else if success && !tells_hirer {
        (
            Rule::HirerUnknown,
            &rules::PROFILE_HIRER_REPUTATION,
            format!(
                "{shows}, not the {want} that {steps} give; the outcome request does not tell the target the hirer's reputation: if its registry takes it from the request, put {{hirer_reputation}} in [chorus] outcome_body or outcome_request"
            ),
        )
    } else if success {
        (
            Rule::SuccessGain,
            &rules::REPUTATION_SUCCESS_GAIN,
            format!("{shows}; {steps} give {want} (+2.0 × {h} / 100 each, chorus.md §4)"),
        )
    } else {
        (
            Rule::FailurePenalty,
            &rules::REPUTATION_FAILURE_PENALTY,
            format!("{shows}; {steps} give {want} (−4.5 each, chorus.md §4)"),
        )
    };
    let f = found.found(summary);
    (rule, f)
}

// ---------------------------------------------------------------------------
// Jobs

/// The fixture agent: its discovery entry and its jobs URL (CHO-A3). No agent with
/// the fixture skill blocks the case with a PROFILE finding.
pub async fn fixture_agent(ctx: &mut Ctx) -> Step<(Value, String)> {
    let skill = ctx.profile().chorus.fixture_skill.clone();
    let entries = discover(ctx, &format!("skill={skill}")).await?;
    let Some(e) = entries.first().cloned() else {
        let f = rules::PROFILE_FIXTURE_SKILL.found(format!(
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
    /// A final result (its status upper-cased), how it came, and the round trip.
    Result {
        result: Value,
        via: &'static str,
        rtt: Duration,
    },
    /// The job was refused.
    Rejected(Resp),
}

fn is_final(v: &Value) -> bool {
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
    shape_findings(ctx, "job-result", &rules::SCHEMA_JOB_RESULT, v, |f| {
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

fn delivery_finding(summary: String) -> Finding {
    rules::PROFILE_RESULT_DELIVERY.found(summary)
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

/// The final result POSTed to callback_url within the case's deadline (CHO-026),
/// read as [`read_result`] reads it; a callback that never comes, or is not JSON,
/// blocks the case.
async fn callback_result(
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
            let f = rules::JOB_NO_CALLBACK.found(format!(
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
                let f = rules::JOB_CALLBACK_NOT_JSON.found(format!(
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

// ---------------------------------------------------------------------------
// Refusals

/// The case that owns a code's rule, and the requirement that defines the code.
fn code_id(code: &str) -> &'static str {
    match code {
        "BUDGET_INSUFFICIENT" => "CHO-028",
        "TRANSFER_FAILED" => "CHO-040",
        "AGENT_OFFLINE" => "CHO-037",
        "EXECUTION_ERROR" => "CHO-036",
        _ => "CHO-027",
    }
}

/// The rule keyed `chorus/<head>:<code>`, where the suite has one for that code.
fn rule_for_code(head: &str, code: &str) -> Option<&'static crate::rules::Rule> {
    let key = format!("chorus/{head}:{code}");
    rules::RULES.iter().copied().find(|r| r.key == key)
}

/// A refusal that came with a 2xx status and no FAILURE result: chorus.md names no
/// status, and a 4xx/5xx or a FAILURE result is what its codes come with (CHO-A5).
fn refusal_status_finding(ctx: &mut Ctx, r: &Resp, code: Option<&str>, what: &str) {
    let f = match code {
        Some(c) => rule_for_code("refusal-http-200", c).unwrap_or(&rules::REFUSAL_HTTP_200).found(format!(
                    "{what}: the refusal with {c} came as {}: a 4xx/5xx status, or a FAILURE job result, carries a chorus.md §5 code",
                    r.describe()
                )),
        None => rules::REFUSAL_HTTP_200.found(format!(
                "{what}: the refusal came as {}, not as a 4xx/5xx status or a FAILURE job result",
                r.describe()
            )),
    };
    ctx.finding(f);
}

/// The case's own rule: a refusal that carries `code` (CHO-A5: in any top-level
/// member, or a FAILURE result's error_message; any 4xx/5xx status).
pub fn expect_code(ctx: &mut Ctx, r: &Resp, code: &str, what: &str) -> Step<()> {
    let id = code_id(code);
    let has = r.codes().iter().any(|c| c == code);
    if r.http >= 400 || r.is_failure_result() {
        if !has {
            return without_code(ctx, r, code, what);
        }
    } else if r.refusal_in_2xx() {
        if !has {
            return without_code(ctx, r, code, what);
        }
        refusal_status_finding(ctx, r, Some(code), what);
    } else {
        return fail(format!(
            "{what}: expected a refusal with {code}, got {} ({id})",
            r.describe()
        ));
    }
    ctx.checked(format!("{what}: {code}"));
    Ok(())
}

/// A refusal that carries no `code` where chorus.md names it: one finding keyed by
/// what the target did (`chorus/refusal-without-code:<CODE>`), owned by the case
/// whose subject the code is, however many cases meet it; the refusal itself is
/// what the case wanted, so it goes on.
fn without_code(ctx: &mut Ctx, r: &Resp, code: &str, what: &str) -> Step<()> {
    let id = code_id(code);
    let summary = format!(
        "{what}: refused with {}, which carries no {code} ({id})",
        r.describe()
    );
    ctx.finding(match rule_for_code("refusal-without-code", code) {
        Some(rule) => rule.found(summary),
        None => rules::REFUSAL_WITHOUT_CODE.found_as(code, summary),
    });
    Ok(())
}

/// Rejected: a 4xx, or a FAILURE result; a 2xx that says no is read as a refusal,
/// with a finding.
/// Judges one row of a table of bad messages: `None` when the target refused it (a
/// refusal in a 2xx is the refusal rule's finding), else the row as a wrong one
/// names it, with what the target answered.
pub fn rejected_row(ctx: &mut Ctx, r: &Resp, what: &str) -> Option<String> {
    if (400..500).contains(&r.http) || (r.ok() && r.is_failure_result()) {
        ctx.checked(format!("{what}: rejected ({})", r.http));
        None
    } else if r.refusal_in_2xx() {
        let code = r.codes().into_iter().find(|c| CODES.contains(&c.as_str()));
        refusal_status_finding(ctx, r, code.as_deref(), what);
        None
    } else {
        Some(format!("{what}: {}", r.describe()))
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

// ---------------------------------------------------------------------------
// Ledger

/// A transfer body.
pub fn transfer(from: &str, to: &str, amount: f64) -> Value {
    json!({"transfer_id": new_id(), "from_owner": from, "to_owner": to, "amount": amount,
           "job_id": new_id(), "timestamp_utc": now_utc()})
}

/// A fresh owner name (no setup requests sent).
pub fn fresh_owner() -> String {
    format!("h-owner-{}", new_id())
}

/// A fresh owner, set up by the profile's `owner` requests to hold
/// `initial_credits`.
pub async fn funded_owner(ctx: &mut Ctx) -> Step<String> {
    let owner = fresh_owner();
    let amount = ctx.profile().chorus.initial_credits;
    setup(
        ctx,
        SetupEvent::Owner,
        &[("owner_id", json!(owner)), ("amount", json!(amount))],
    )
    .await?;
    Ok(owner)
}

/// `POST /transfer` on the ledger, after the profile's `transfer` requests.
pub async fn send_transfer(ctx: &mut Ctx, body: &Value) -> Step<Resp> {
    let pick = |k: &str| body.get(k).cloned().unwrap_or(Value::Null);
    let vars = [
        ("transfer_id", pick("transfer_id")),
        ("from_owner", pick("from_owner")),
        ("to_owner", pick("to_owner")),
        ("amount", pick("amount")),
        ("job_id", pick("job_id")),
    ];
    setup(ctx, SetupEvent::Transfer, &vars).await?;
    let r = post(ctx, Base::Ledger, "transfer", body).await?;
    if matches!(r.http, 404 | 405) {
        // No ledger route where the run sends transfers: a setting the run lacks,
        // not a deviation, whatever transfer the case sent.
        return Err(ctx.block(no_ledger_here(ctx, &r)));
    }
    Ok(r)
}

/// The setting finding of a transfer answered HTTP 404 or 405: no ledger at the
/// URL the run sends transfers to.
fn no_ledger_here(ctx: &Ctx, r: &Resp) -> Finding {
    let at = ctx.profile().target.ledger_url.clone().unwrap_or_else(|| {
        format!(
            "{} (the target's URL: [target] ledger_url is not set)",
            ctx.url
        )
    });
    rules::PROFILE_LEDGER_URL.found(format!(
            "POST /transfer at {at} answered {}: no ledger takes transfers there. Set [target] ledger_url to the ledger's base URL",
            r.describe()
        ))
}

/// The transfer was taken: a 2xx that does not say no. The body is the ledger's
/// own (chorus.md defines none, CHO-A14).
pub fn taken(r: &Resp) -> bool {
    r.ok() && !r.refusal_in_2xx()
}

/// A transfer within a fresh owner's credits must be taken. When it is not, the
/// case cannot go on: refused for want of credits, the owners were not funded as
/// the profile says (PROFILE); refused otherwise, the ledger does not take valid
/// transfers (CHO-038). Both owned by the transfer case.
pub fn expect_taken(ctx: &mut Ctx, r: &Resp, amount: f64, what: &str) -> Step<()> {
    if taken(r) {
        ctx.checked(format!("{what}: taken ({})", r.http));
        return Ok(());
    }
    let initial = ctx.profile().chorus.initial_credits;
    let f = if r.codes().iter().any(|c| c == "TRANSFER_FAILED") {
        rules::PROFILE_INITIAL_CREDITS.found(format!(
                "{what}: a transfer of {amount} from a fresh owner was refused with {}: fresh owners do not hold the {initial} credits of [chorus] initial_credits here. Add [[chorus.setup_requests]] with on = \"owner\" that open and fund each owner's account ({{owner_id}}, {{amount}}), or set initial_credits to what a fresh owner holds",
                r.describe()
            ))
    } else {
        rules::TRANSFER_REFUSED.found(format!(
            "{what}: a complete transfer of {amount} was refused: {}",
            r.describe()
        ))
    };
    Err(ctx.block(f))
}

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

/// The input of the `hire` scenario.
pub fn hire_input() -> Value {
    json!({
        "skill": "echo_text",
        "input_data": {"text": format!("hired by the harness {}", &new_id()[..8])},
        "budget": 0.15,
        "max_cost": 0.15,
        "min_reputation": 0,
        "orchestrator_id": new_id(),
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
            "/discover" => (200, listing(&skill, &ids, outbox.base())),
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
fn listing(skill: &Value, ids: &[String; 2], base: &str) -> Value {
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
        ctx.finding(
            rules::CLIENT_JOBS.found(format!("the client sent {} jobs for one hire", jobs.len())),
        );
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
    let family = (rules::RULES, &rules::CLIENT_SCHEMA_JOB_REQUEST);
    for mut f in schema_findings(&ctx.shared.schemas, "chorus/job-request", family, job) {
        if below.contains(&f.detail()) {
            continue;
        }
        f.summary = format!("the client's job request: {}", f.summary);
        ctx.finding(f);
    }
    let id = job["job_id"].as_str().unwrap_or_default();
    if let Some(first) = ctx.reused("job_id", id, job.to_string().as_bytes()) {
        ctx.finding(rules::CLIENT_JOB_ID_REUSED.found(format!(
                "the client's job reuses job_id {}, which {first} carried first in this run: a job_id names one job",
                job["job_id"]
            )));
    }
    if !is_uuid(id) {
        ctx.finding(rules::CLIENT_JOB_ID.found(format!(
            "the client's job_id {} is not a UUID",
            job["job_id"]
        )));
    } else if job["job_id"].as_str().and_then(|id| id.as_bytes().get(14)) != Some(&b'4') {
        // RFC 4122 syntax of another version: CHO-A7 warns.
        ctx.finding(rules::CLIENT_JOB_ID_VERSION.found(format!(
                    "the client's job_id {} is a UUID of version {}, not 4",
                    job["job_id"],
                    job["job_id"]
                        .as_str()
                        .and_then(|id| id.get(14..15))
                        .unwrap_or("?")
                )));
    }
    if !is_utc_timestamp(&job["timestamp_utc"]) {
        ctx.finding(rules::CLIENT_TIMESTAMP.found(format!(
            "the client's job timestamp_utc {} is not ISO 8601 UTC",
            job["timestamp_utc"]
        )));
    }
    if job["currency"] != "chorus_credits_v1" {
        ctx.finding(rules::CLIENT_CURRENCY.found(format!(
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

/// The client's transfers (CHO-038, CHO-039): each body parsed.
pub fn transfers_sent(run: &crate::counterparty::DriverRun) -> Vec<Value> {
    sent_to(run, "POST", "/transfer")
        .iter()
        .map(|x| serde_json::from_slice(&x.received).unwrap_or(Value::Null))
        .collect()
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
        ctx.finding(
            rules::CLIENT_PAID_TWICE.found(format!("the client sent {n} transfers for one job")),
        );
    }
    check_transfer_members(ctx, t);
    if t["job_id"] != job["job_id"] {
        return fail(format!(
            "the client's transfer names the job {}, not the one it hired, {} (CHO-039)",
            t["job_id"], job["job_id"]
        ));
    }
    if t["from_owner"] != input["owner_id"] {
        ctx.finding(rules::CLIENT_FROM_OWNER.found(format!(
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
fn check_transfer_members(ctx: &mut Ctx, t: &Value) {
    // transfer_id, job_id and amount are judged below, once.
    let below = ["/transfer_id", "/job_id", "/amount"];
    let family = (rules::RULES, &rules::CLIENT_SCHEMA_TRANSFER_REQUEST);
    for mut f in schema_findings(&ctx.shared.schemas, "chorus/transfer-request", family, t) {
        if below.contains(&f.detail()) {
            continue;
        }
        f.summary = format!("the client's transfer: {}", f.summary);
        ctx.finding(f);
    }
    if !t["transfer_id"].as_str().is_some_and(is_uuid) {
        ctx.finding(rules::CLIENT_TRANSFER_ID.found(format!(
            "the client's transfer_id {} is not a UUID",
            t["transfer_id"]
        )));
    }
}

/// The amount paid (CHO-033, CHO-038, CHO-039): a number of credits, within the
/// budget, the execution_cost (another amount a warning).
fn check_amount(ctx: &mut Ctx, verdict: Payment, budget: f64) {
    match verdict {
        Payment::NoAmount(a) => ctx.finding(rules::CLIENT_AMOUNT_MISSING.found(format!("the client's transfer has the amount {a}, not a number of credits"))),
        Payment::OverBudget(a) => ctx.finding(rules::CLIENT_AMOUNT_OVER_BUDGET.found(format!(
                "the client pays {a} for a job whose execution_cost is {HIRE_COST:.2} and whose budget is {budget:.2}"
            ))),
        Payment::OtherAmount(a) => ctx.finding(
            rules::CLIENT_AMOUNT.found(format!(
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
            rules::CLIENT_OUTCOME_CONTENT.found(format!(
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
            rules::CLIENT_OUTCOME.found(format!(
                    "the client did not report the {status} outcome of job {} with POST /results (the profile's outcome channel; chorus.md has none)",
                    job["job_id"]
                )),
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::check_profile;

    #[test]
    fn templates_fill_strings_and_values() {
        let vars = [
            ("owner_id", json!("o\"1")),
            ("amount", json!(12.5)),
            ("output_data", Value::Null),
        ];
        let v = render_json(
            r#"{"owner": "{owner_id}", "credits": {amount}, "note": "at {amount}", "out": {output_data}}"#,
            &vars,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"owner": "o\"1", "credits": 12.5, "note": "at 12.5", "out": null})
        );
        assert_eq!(
            render("/a/{owner_id}?n={amount}", &vars, false).unwrap(),
            "/a/o\"1?n=12.5"
        );
        let e = render_json(r#"{"x": "{nope}"}"#, &vars).unwrap_err();
        assert!(e.contains("{nope}") && e.contains("{amount}"), "{e}");
        // Braces that are no placeholder stay as they are.
        assert_eq!(
            render_json(r#"{"a": {"b": "{}"}}"#, &vars).unwrap(),
            json!({"a": {"b": "{}"}})
        );
    }

    #[test]
    fn codes_are_found_where_targets_put_them() {
        let r = |http: u16, v: Value| Resp {
            http,
            json: Some(v),
            raw: String::new(),
        };
        assert_eq!(
            r(400, json!({"error": "SKILL_MISMATCH"})).codes(),
            ["SKILL_MISMATCH"]
        );
        assert_eq!(
            r(400, json!({"detail": "SKILL_MISMATCH: no skill x"})).codes(),
            ["SKILL_MISMATCH"]
        );
        assert_eq!(
            r(
                402,
                json!({"error": {"code": "BUDGET_INSUFFICIENT", "message": "low"}})
            )
            .codes(),
            ["BUDGET_INSUFFICIENT"]
        );
        assert!(r(404, json!({"detail": "Skill 'x' not found"}))
            .codes()
            .is_empty());
        let echo = r(
            200,
            json!({"status": "SUCCESS", "output_data": {"text": "TRANSFER_FAILED"}}),
        );
        assert!(echo.codes().is_empty() && !echo.is_refusal());
        let failed = r(200, json!({"status": "failed", "error": "TRANSFER_FAILED"}));
        assert!(failed.refusal_in_2xx() && failed.is_refusal());
        assert!(!r(200, json!({"status": "completed"})).is_refusal());
        assert!(r(200, json!({"status": "FAILURE", "error_message": "x"})).is_failure_result());
    }

    #[test]
    fn utc_is_z_or_a_zero_offset() {
        for ok in [
            "2026-02-11T14:15:09Z",
            "2026-02-11T14:15:09.123Z",
            "2026-02-11T14:15:09+00:00",
            "2026-02-11T14:15:09-00:00",
            "2026-02-11T14:15:09z",
        ] {
            assert!(is_utc_timestamp(&json!(ok)), "{ok}");
        }
        for bad in [
            "2026-02-11T16:15:09+02:00",
            "2026-02-11T14:15:09",
            "yesterday",
        ] {
            assert!(!is_utc_timestamp(&json!(bad)), "{bad}");
        }
    }

    #[test]
    fn ids_in_other_encodings() {
        let id = "a3b8d1b6-0b3b-4b1a-9c1a-1a2b3c4d5e6f";
        assert!(same_id("a3b8d1b60b3b4b1a9c1a1a2b3c4d5e6f", id));
        assert!(same_id("{A3B8D1B6-0B3B-4B1A-9C1A-1A2B3C4D5E6F}", id));
        assert!(same_id(&format!("urn:uuid:{id}"), id));
        assert!(!same_id("123", id));
        assert_eq!(
            canonical_id("A3B8D1B60B3B4B1A9C1A1A2B3C4D5E6F").as_deref(),
            Some(id)
        );
    }

    #[test]
    fn the_default_profile_checks() {
        check_profile(&ChorusSection::default()).unwrap();
    }
}
