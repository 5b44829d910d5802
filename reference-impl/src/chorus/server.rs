//! The chorus reference: registry, ledger and a fixture agent in one process
//! (chorus.md), with the target profile's extensions.
//!
//! - Registry: `POST /register` (201, reputation 50.0), `GET /discover` (filtered by
//!   skill, min_reputation and max_cost, inclusive; ranked by reputation, highest first).
//! - Outcomes (extension): `POST /results` with a Job Result plus `orchestrator_id`, or
//!   `POST /reputation/{agent_id}/{outcome}?job_id=…` with the same body. Reputation
//!   follows chorus.md §4: +2.0 × hirer / 100 on SUCCESS, −4.5 on FAILURE, clamped.
//! - Ledger (extension; mountable on its own URL): `POST /transfer`,
//!   `GET /balance/{owner}`, `POST /accounts` (`{owner_id, credits}`: adds credits to
//!   an owner's balance). Every owner starts with `initial_credits`; amounts are
//!   kept in cents; a repeated `transfer_id` is applied once.
//! - Fixture agent: `POST /agents/echo/jobs`, skill `echo_text` (cost 0.10), results
//!   in the response body or by POST to `callback_url`.
//!
//! Errors are HTTP 4xx with `{"error": CODE, "message": …}`; validation errors use
//! the code `validation`.

use super::faults::FAULTS;
use crate::faults::FaultSet;
use crate::wire::clock::{format_timestamp, parse_timestamp, SharedClock, SystemClock};
use crate::wire::{is_uuid, json, new_id};
use axum::body::{to_bytes, Body};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const FIXTURE_SKILL: &str = "echo_text";
pub const FIXTURE_COST: f64 = 0.10;
pub const CURRENCY: &str = "chorus_credits_v1";

/// How the fixture agent delivers job results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// In the `/jobs` response body.
    Sync,
    /// `202 {status: PENDING}` at once, then a POST to `callback_url`.
    Callback,
}

#[derive(Debug, Clone)]
pub struct ChorusConfig {
    pub initial_credits_cents: i64,
    pub delivery: Delivery,
    pub max_agents: usize,
    pub max_records: usize,
    pub max_body_bytes: usize,
    pub faults: FaultSet,
    /// Outcomes take the hirer's reputation from this member of the outcome body
    /// (required there) instead of looking the orchestrator up in the registry, as a
    /// registry does that keeps no score for hirers it did not register.
    pub hirer_reputation_member: Option<String>,
    /// Timestamps are written with the offset `+00:00` instead of `Z` (both UTC).
    pub utc_offset_form: bool,
    /// The member of `output_data` that carries the echoed text (default `text`),
    /// as a fixture does whose output has a shape of its own.
    pub fixture_output_member: Option<String>,
    /// Outcome replies also carry `old_score`, `new_score` and `success` (the
    /// outcome recorded), as a registry did whose FAILURE reports are answered 200
    /// with `"success": false`: allowed, and no refusal.
    pub outcome_success_flag: bool,
    /// FAILURE results also carry `"error_code": "EXECUTION_ERROR"`, as an agent
    /// does that names why its execution failed: still a FAILURE result (CHO-032).
    pub failure_error_code: bool,
    /// The skill the fixture agent registers (default [`FIXTURE_SKILL`]), as a
    /// registry does whose agent serves a skill of its own name.
    pub fixture_skill: String,
    /// The registry publishes its routes in an OpenAPI document at
    /// `GET /openapi.json` ([`super::published`]) and takes outcomes only at the route
    /// it lists there, `POST /reputation/{agent_id}/{outcome}` (no `POST /results`),
    /// as a deployment does whose routes are its own.
    pub openapi: bool,
}

impl Default for ChorusConfig {
    fn default() -> Self {
        ChorusConfig {
            initial_credits_cents: 10_000,
            delivery: Delivery::Sync,
            max_agents: 10_000,
            max_records: 100_000,
            max_body_bytes: 64 * 1024,
            faults: FaultSet::none(),
            hirer_reputation_member: None,
            utc_offset_form: false,
            fixture_output_member: None,
            outcome_success_flag: false,
            failure_error_code: false,
            fixture_skill: FIXTURE_SKILL.into(),
            openapi: false,
        }
    }
}

impl ChorusConfig {
    pub fn with_faults<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self, String> {
        self.faults = FaultSet::from_names(FAULTS, names)?;
        Ok(self)
    }
}

#[derive(Debug, Clone)]
struct Skill {
    name: String,
    cost: f64,
}

#[derive(Debug, Clone)]
struct AgentRecord {
    agent_id: String,
    agent_name: String,
    api_endpoint: String,
    skills: Vec<Skill>,
    reputation: f64,
}

#[derive(Debug, Default)]
struct State_ {
    agents: HashMap<String, AgentRecord>,
    balances: HashMap<String, i64>,
    /// transfer_id → the reply it got.
    transfers: HashMap<String, Value>,
    outcomes: HashSet<String>,
}

pub struct Chorus {
    cfg: ChorusConfig,
    clock: SharedClock,
    state: Mutex<State_>,
    fixture_id: String,
    http: reqwest::Client,
    /// The bytes of callbacks under way, at most [`CALLBACK_BYTES`] together: a
    /// callback past the budget is dropped like a refused one, so that clients whose
    /// callback URLs never answer cannot make the fixture buffer without bound.
    callbacks: Arc<tokio::sync::Semaphore>,
    /// Where a ledger of its own listens, once it does (the OpenAPI document names it).
    pub(crate) ledger_at: std::sync::OnceLock<String>,
}

/// The bytes of callback bodies the fixture agent holds at once, at most.
pub const CALLBACK_BYTES: usize = 8 * 1024 * 1024;

/// A reply: HTTP status and JSON body.
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

fn err(status: u16, code: &str, message: impl Into<String>) -> Reply {
    Reply {
        status,
        body: json!({"error": code, "message": message.into()}),
    }
}

fn invalid(message: impl Into<String>) -> Reply {
    err(400, "validation", message)
}

/// The §4 update before its clamp: +2.0 × hirer / 100 on SUCCESS, −3.0 × 1.5 on
/// FAILURE.
fn reputation_step(old: f64, success: bool, hirer: f64) -> f64 {
    if success {
        old + (2.0 * hirer / 100.0)
    } else {
        old - (3.0 * 1.5)
    }
}

/// The §4 update, clamped to [0, 100]: what the registry applies with its faults off.
pub fn reputation_after(old: f64, success: bool, hirer: f64) -> f64 {
    reputation_step(old, success, hirer).clamp(0.0, 100.0)
}

fn req_str<'a>(o: &'a Map<String, Value>, k: &str) -> Result<&'a str, Reply> {
    match o.get(k) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(invalid(format!("`{k}` must be a non-empty string"))),
    }
}

fn opt_timestamp(o: &Map<String, Value>) -> Result<(), Reply> {
    match o.get("timestamp_utc") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if parse_timestamp(s).is_ok() => Ok(()),
        Some(other) => Err(invalid(format!(
            "`timestamp_utc` {other} is not an ISO 8601 UTC date-time"
        ))),
    }
}

fn credits(v: Option<&Value>, k: &str) -> Result<f64, Reply> {
    match v.and_then(Value::as_f64) {
        Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(invalid(format!(
            "`{k}` must be a non-negative number of credits"
        ))),
    }
}

fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, Reply> {
    let tree = json::parse(bytes).map_err(|e| invalid(format!("malformed JSON: {e}")))?;
    match tree.to_serde() {
        Value::Object(o) => Ok(o),
        _ => Err(invalid("the body must be a JSON object")),
    }
}

impl Chorus {
    pub fn new(cfg: ChorusConfig, clock: SharedClock) -> Chorus {
        let http = crate::wire::http::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        Chorus {
            cfg,
            clock,
            state: Mutex::new(State_::default()),
            fixture_id: new_id(),
            http,
            callbacks: Arc::new(tokio::sync::Semaphore::new(CALLBACK_BYTES)),
            ledger_at: std::sync::OnceLock::new(),
        }
    }

    pub fn with_config(cfg: ChorusConfig) -> Chorus {
        Chorus::new(cfg, Arc::new(SystemClock))
    }

    fn fault(&self, name: &str) -> bool {
        self.cfg.faults.has(name)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State_> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An agent id as the registry writes it (fault agent-ids-hex: 32 hex digits).
    fn shown_id(&self, id: &str) -> String {
        if self.fault("agent-ids-hex") {
            id.replace('-', "")
        } else {
            id.to_string()
        }
    }

    fn now_text(&self) -> String {
        let t = format_timestamp(self.clock.now());
        match t.strip_suffix('Z') {
            Some(head) if self.cfg.utc_offset_form => format!("{head}+00:00"),
            _ => t,
        }
    }

    fn initial_reputation(&self) -> f64 {
        if self.fault("initial-reputation-40") {
            40.0
        } else {
            50.0
        }
    }

    /// Registers the fixture agent, served by this process at `base_url`.
    pub fn register_fixture(&self, base_url: &str) {
        let rec = AgentRecord {
            agent_id: self.fixture_id.clone(),
            agent_name: "agentconform echo fixture".into(),
            api_endpoint: format!("{}/agents/echo", base_url.trim_end_matches('/')),
            skills: vec![Skill {
                name: self.cfg.fixture_skill.clone(),
                cost: FIXTURE_COST,
            }],
            reputation: self.initial_reputation(),
        };
        self.lock().agents.insert(rec.agent_id.clone(), rec);
    }

    /// `POST /register`.
    pub fn register(&self, bytes: &[u8]) -> Reply {
        let o = match parse_object(bytes) {
            Ok(o) => o,
            Err(_) if self.fault("validates-nothing") => return self.taken_unread(&Map::new()),
            Err(r) => return r,
        };
        let run = || -> Result<Reply, Reply> {
            let agent_id = req_str(&o, "agent_id")?;
            if !is_uuid(agent_id) {
                return Err(invalid(format!("`agent_id` {agent_id:?} is not a UUID")));
            }
            let api_endpoint = req_str(&o, "api_endpoint")?;
            opt_timestamp(&o)?;
            let Some(Value::Array(raw)) = o.get("skills") else {
                return Err(invalid("`skills` must be an array"));
            };
            let mut skills = Vec::new();
            for (i, s) in raw.iter().enumerate() {
                let Value::Object(s) = s else {
                    return Err(invalid(format!("skills[{i}] must be an object")));
                };
                let name = req_str(s, "skill_name").map_err(|_| {
                    invalid(format!("skills[{i}].skill_name must be a non-empty string"))
                })?;
                let cost = credits(
                    s.get("cost_per_call"),
                    &format!("skills[{i}].cost_per_call"),
                )?;
                // The fault: only flat {member: "type"} schemas are taken.
                let flat = |k: &str| {
                    s.get(k)
                        .and_then(Value::as_object)
                        .is_none_or(|o| o.values().all(Value::is_string))
                };
                if self.fault("schemas-flat-only")
                    && !(flat("input_schema") && flat("output_schema"))
                {
                    return Err(invalid(format!(
                        "skills[{i}]: schema members must be type names (strings)"
                    )));
                }
                skills.push(Skill {
                    name: name.to_string(),
                    cost,
                });
            }
            let name = o
                .get("agent_name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let mut st = self.lock();
            let reputation = match st.agents.get(agent_id) {
                Some(existing) => existing.reputation,
                // A full registry is no bad registration: answered 503 even
                // under the fault "validates-nothing".
                None if st.agents.len() >= self.cfg.max_agents => {
                    return Ok(err(503, "validation", "the registry is full"))
                }
                None => self.initial_reputation(),
            };
            // Under the fault, a second registration is kept beside the first.
            let key = if self.fault("register-again-duplicates") && st.agents.contains_key(agent_id)
            {
                format!("{agent_id}#{}", st.agents.len())
            } else {
                agent_id.to_string()
            };
            st.agents.insert(
                key,
                AgentRecord {
                    agent_id: agent_id.to_string(),
                    agent_name: name,
                    api_endpoint: api_endpoint.to_string(),
                    skills,
                    reputation,
                },
            );
            let status = if self.fault("register-200") { 200 } else { 201 };
            Ok(Reply {
                status,
                body: json!({"status": "registered", "agent_id": self.shown_id(agent_id), "reputation_score": reputation}),
            })
        };
        match run() {
            Err(_) if self.fault("validates-nothing") => self.taken_unread(&o),
            done => done.unwrap_or_else(|e| e),
        }
    }

    /// A bad registration taken all the same (the fault "validates-nothing"):
    /// answered as registered, and kept nowhere.
    fn taken_unread(&self, o: &Map<String, Value>) -> Reply {
        let id = o
            .get("agent_id")
            .and_then(Value::as_str)
            .filter(|id| is_uuid(id));
        let id = id.map_or_else(new_id, str::to_string);
        Reply {
            status: 201,
            body: json!({"status": "registered", "agent_id": self.shown_id(&id), "reputation_score": self.initial_reputation()}),
        }
    }

    /// `GET /discover`.
    pub fn discover(&self, q: &HashMap<String, String>) -> Reply {
        let num = |k: &str| -> Result<Option<f64>, Reply> {
            match q.get(k) {
                None => Ok(None),
                Some(v) => v
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .map(Some)
                    .ok_or_else(|| invalid(format!("`{k}` must be a number, got {v:?}"))),
            }
        };
        let (min_rep, max_cost) = match (num("min_reputation"), num("max_cost")) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let skill = q.get("skill");
        let st = self.lock();
        let mut hits: Vec<(&AgentRecord, &Skill)> = Vec::new();
        for a in st.agents.values() {
            for s in &a.skills {
                if skill.is_some_and(|k| *k != s.name) {
                    continue;
                }
                if !self.fault("ignore-min-reputation") && min_rep.is_some_and(|m| a.reputation < m)
                {
                    continue;
                }
                if !self.fault("ignore-max-cost") && max_cost.is_some_and(|m| s.cost > m) {
                    continue;
                }
                hits.push((a, s));
            }
        }
        hits.sort_by(|x, y| {
            y.0.reputation
                .total_cmp(&x.0.reputation)
                .then_with(|| x.0.agent_id.cmp(&y.0.agent_id))
        });
        if self.fault("ranking-ascending") {
            hits.reverse();
        }
        let skills_list = self.fault("discover-skills-list");
        let agents: Vec<Value> = hits
            .iter()
            .map(|(a, s)| {
                let mut e = json!({
                    "agent_id": self.shown_id(&a.agent_id), "agent_name": a.agent_name, "api_endpoint": a.api_endpoint,
                    "skill": {"skill_name": s.name, "cost_per_call": s.cost},
                    "reputation_score": a.reputation, "status": "online",
                });
                if skills_list {
                    if let Some(o) = e.as_object_mut() {
                        o.remove("skill");
                        let all: Vec<Value> = a
                            .skills
                            .iter()
                            .map(|s| json!({"skill_name": s.name, "cost_per_call": s.cost}))
                            .collect();
                        o.insert("skills".into(), Value::Array(all));
                    }
                }
                e
            })
            .collect();
        Reply {
            status: 200,
            body: json!({"agents": agents}),
        }
    }

    /// An outcome report: `POST /results`, or the templated route with the agent and
    /// outcome in the path.
    pub fn outcome(
        &self,
        path_agent: Option<&str>,
        path_outcome: Option<&str>,
        bytes: &[u8],
    ) -> Reply {
        let o = match parse_object(bytes) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let run = || -> Result<Reply, Reply> {
            let agent_id = match path_agent {
                Some(a) => a,
                None => req_str(&o, "agent_id")?,
            };
            let outcome = match path_outcome {
                Some(p) => p.to_ascii_uppercase(),
                None => req_str(&o, "status")?.to_string(),
            };
            let success = match outcome.as_str() {
                "SUCCESS" => true,
                "FAILURE" => false,
                other => {
                    return Err(invalid(format!(
                        "outcome {other:?} is neither SUCCESS nor FAILURE"
                    )))
                }
            };
            let job_id = req_str(&o, "job_id")?.to_string();
            let orchestrator = req_str(&o, "orchestrator_id")?;
            let told = match &self.cfg.hirer_reputation_member {
                Some(m) => match o.get(m).and_then(Value::as_f64) {
                    Some(x) if (0.0..=100.0).contains(&x) => Some(x),
                    _ => {
                        return Err(err(
                            422,
                            "validation",
                            format!("`{m}` (the hirer's reputation, 0 to 100) is required"),
                        ))
                    }
                },
                None => None,
            };
            // The fault: whatever the default outcome body tells, in range or not.
            let told = match self.fault("told-hirer-no-lower-clamp") {
                true => told.or_else(|| o.get("hirer_reputation").and_then(Value::as_f64)),
                false => told,
            };
            let mut st = self.lock();
            let hirer = match (told, st.agents.get(orchestrator)) {
                (Some(x), _) => x,
                (None, Some(h)) => h.reputation,
                (None, None) => {
                    return Err(invalid(format!(
                    "orchestrator {orchestrator:?} is not registered; its reputation is unknown"
                )))
                }
            };
            if !st.agents.contains_key(agent_id) {
                return Err(err(
                    404,
                    "validation",
                    format!("agent {agent_id:?} is not registered"),
                ));
            }
            if st.outcomes.contains(&job_id) {
                let score = st.agents.get(agent_id).map(|a| a.reputation);
                return Ok(Reply {
                    status: 200,
                    body: json!({"agent_id": agent_id, "reputation_score": score, "duplicate": true}),
                });
            }
            // Forgetting would make a repeated report count twice: a full memory refuses.
            if st.outcomes.len() >= self.cfg.max_records {
                return Err(err(503, "validation", "the outcome memory is full"));
            }
            st.outcomes.insert(job_id);
            let (flat, pen3, no_clamp) = (
                self.fault("success-reward-flat"),
                self.fault("failure-penalty-3"),
                self.fault("no-clamp"),
            );
            let Some(agent) = st.agents.get_mut(agent_id) else {
                return Err(err(404, "validation", "agent vanished"));
            };
            let old = agent.reputation;
            let mut new = match (success, flat, pen3) {
                (true, true, _) => old + 2.0,
                (false, _, true) => old - 3.0,
                _ => reputation_step(old, success, hirer),
            };
            if self.fault("told-hirer-no-lower-clamp") && success {
                new = new.min(100.0);
            } else if !no_clamp {
                new = new.clamp(0.0, 100.0);
            }
            agent.reputation = new;
            let mut body = json!({"agent_id": agent_id, "reputation_score": new});
            if self.cfg.outcome_success_flag {
                // A registry that states the outcome it recorded beside the scores.
                body["old_score"] = json!(old);
                body["new_score"] = json!(new);
                body["success"] = json!(success);
            }
            Ok(Reply { status: 200, body })
        };
        run().unwrap_or_else(|e| e)
    }

    fn balance(&self, st: &State_, owner: &str) -> i64 {
        st.balances
            .get(owner)
            .copied()
            .unwrap_or(self.cfg.initial_credits_cents)
    }

    /// `GET /balance/{owner}` (extension).
    pub fn balance_of(&self, owner: &str) -> Reply {
        let st = self.lock();
        let cents = self.balance(&st, owner);
        Reply {
            status: 200,
            body: json!({"owner": owner, "balance": cents as f64 / 100.0}),
        }
    }

    /// `POST /accounts` (extension): `{owner_id, credits}` adds credits to the owner's
    /// balance (opening it at `initial_credits` first).
    pub fn deposit(&self, bytes: &[u8]) -> Reply {
        let o = match parse_object(bytes) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let run = || -> Result<Reply, Reply> {
            let owner = req_str(&o, "owner_id")?.to_string();
            let amount = credits(o.get("credits"), "credits")?;
            let cents = (amount * 100.0).round();
            if (cents - amount * 100.0).abs() > 1e-6 || cents > 1e12 {
                return Err(invalid("`credits` must have at most two decimals"));
            }
            let mut st = self.lock();
            if !st.balances.contains_key(&owner) && st.balances.len() >= self.cfg.max_records {
                return Err(err(503, "validation", "the ledger is full"));
            }
            let balance = self.balance(&st, &owner) + cents as i64;
            st.balances.insert(owner.clone(), balance);
            Ok(Reply {
                status: 201,
                body: json!({"owner_id": owner, "balance": balance as f64 / 100.0}),
            })
        };
        run().unwrap_or_else(|e| e)
    }

    /// `POST /transfer`.
    pub fn transfer(&self, bytes: &[u8]) -> Reply {
        let o = match parse_object(bytes) {
            Ok(o) => o,
            Err(r) => return r,
        };
        let run = || -> Result<Reply, Reply> {
            let id = req_str(&o, "transfer_id")?;
            if !is_uuid(id) {
                return Err(invalid(format!("`transfer_id` {id:?} is not a UUID")));
            }
            let from = req_str(&o, "from_owner")?.to_string();
            let to = req_str(&o, "to_owner")?.to_string();
            opt_timestamp(&o)?;
            let amount = credits(o.get("amount"), "amount")?;
            let cents = (amount * 100.0).round();
            if (amount <= 0.0 || (cents - amount * 100.0).abs() > 1e-6)
                && !self.fault("transfer-any-amount")
            {
                return Err(invalid(
                    "`amount` must be positive with at most two decimals",
                ));
            }
            let cents = cents as i64;
            let mut st = self.lock();
            if let Some(previous) = st.transfers.get(id) {
                if !self.fault("duplicate-transfer-applied-twice") {
                    let mut body = previous.clone();
                    body["duplicate"] = json!(true);
                    return Ok(Reply { status: 200, body });
                }
            }
            // Forgetting would apply a repeated transfer_id again: a full memory refuses.
            if st.transfers.len() >= self.cfg.max_records {
                return Err(err(503, "validation", "the transfer memory is full"));
            }
            let from_balance = self.balance(&st, &from);
            if from_balance < cents && !self.fault("allow-overdraft") {
                let message = format!(
                    "{from} has {:.2} credits, needs {amount:.2}",
                    from_balance as f64 / 100.0
                );
                if self.fault("transfer-failed-200") {
                    return Ok(Reply {
                        status: 200,
                        body: json!({"status": "failed", "error": "TRANSFER_FAILED", "message": message}),
                    });
                }
                if self.fault("transfer-refused-without-code") {
                    return Ok(Reply {
                        status: 400,
                        body: json!({"detail": format!("Insufficient funds: {message}")}),
                    });
                }
                return Err(err(409, "TRANSFER_FAILED", message));
            }
            let to_balance = self.balance(&st, &to);
            // Saturating: an overdraft of any amount (the fault "allow-overdraft")
            // is taken, never a crash.
            st.balances
                .insert(from.clone(), from_balance.saturating_sub(cents));
            let to_new = if from == to {
                from_balance
            } else if self.fault("transfer-recipient-not-credited") {
                to_balance
            } else {
                to_balance.saturating_add(cents)
            };
            st.balances.insert(to.clone(), to_new);
            // The sender's balance left, in credits (an extension chorus.md leaves
            // open): exact from cents, or float arithmetic's drift with the fault.
            let left = if self.fault("balance-float-drift") {
                from_balance as f64 / 100.0 - amount
            } else {
                st.balances.get(&from).copied().unwrap_or_default() as f64 / 100.0
            };
            let told_id = if self.fault("transfer-id-replaced") {
                crate::wire::new_id()
            } else {
                id.to_string()
            };
            let body = json!({"status": "completed", "transfer_id": told_id, "from_owner": from, "to_owner": to, "amount": cents as f64 / 100.0, "balance": left});
            st.transfers.insert(id.to_string(), body.clone());
            Ok(Reply { status: 200, body })
        };
        run().unwrap_or_else(|e| e)
    }

    /// `POST /agents/echo/jobs`: the reply and, for callback delivery, where to POST
    /// the result.
    pub fn job(&self, bytes: &[u8]) -> (Reply, Option<(String, Value)>) {
        let started = Instant::now();
        if bytes.is_empty() && self.fault("job-crashes-without-body") {
            let r = err(500, "internal", "unexpected end of input");
            return (r, None);
        }
        let o = match parse_object(bytes) {
            Ok(o) => o,
            Err(r) => return (r, None),
        };
        let run = || -> Result<(Reply, Option<(String, Value)>), Reply> {
            let unread = self.fault("validates-nothing");
            let job_id = req_str(&o, "job_id")?.to_string();
            if !is_uuid(&job_id) && !self.fault("accept-any-job-id") && !unread {
                return Err(invalid(format!("`job_id` {job_id:?} is not a UUID")));
            }
            let skill = match req_str(&o, "skill_name") {
                Err(_) if unread => self.cfg.fixture_skill.as_str(),
                s => s?,
            };
            let blank = Map::from_iter([("text".to_string(), json!(""))]);
            let input = match o.get("input_data").and_then(Value::as_object) {
                Some(input) => input,
                None if unread => &blank,
                None => return Err(invalid("`input_data` must be an object")),
            };
            opt_timestamp(&o)?;
            if let Some(c) = o.get("currency") {
                if c != CURRENCY && !unread {
                    return Err(invalid(format!("currency {c} is not {CURRENCY:?}")));
                }
            }
            if skill != self.cfg.fixture_skill && self.fault("skill-mismatch-detail-404") {
                return Err(Reply {
                    status: 404,
                    body: json!({"detail": format!("Skill '{skill}' not found")}),
                });
            }
            if skill != self.cfg.fixture_skill && !self.fault("ignore-skill") {
                return Err(err(
                    400,
                    "SKILL_MISMATCH",
                    format!("this agent has no skill {skill:?}"),
                ));
            }
            let budget = credits(o.get("budget"), "budget")?;
            if budget < FIXTURE_COST && !self.fault("ignore-budget") {
                return Err(err(
                    402,
                    "BUDGET_INSUFFICIENT",
                    format!("budget {budget:.2} is below the cost {FIXTURE_COST:.2}"),
                ));
            }
            let (status, output, error) = match input.get("text").and_then(Value::as_str) {
                Some(t) => {
                    let member = self.cfg.fixture_output_member.as_deref().unwrap_or("text");
                    let mut out = Map::new();
                    out.insert(member.to_string(), json!(t));
                    ("SUCCESS", Value::Object(out), Value::Null)
                }
                None => (
                    "FAILURE",
                    Value::Null,
                    json!("input_data.text must be a string"),
                ),
            };
            let status = if self.fault("result-status-lowercase") {
                status.to_ascii_lowercase()
            } else {
                status.to_string()
            };
            let failed = output.is_null();
            let mut result = json!({
                "job_id": job_id, "agent_id": self.fixture_id, "status": status,
                "output_data": output, "execution_cost": if failed { 0.0 } else { FIXTURE_COST },
                "execution_time_ms": started.elapsed().as_millis() as u64, "error_message": error,
                "timestamp_utc": self.now_text(),
            });
            if failed && self.cfg.failure_error_code {
                result["error_code"] = json!("EXECUTION_ERROR");
            }
            let callback = o
                .get("callback_url")
                .and_then(Value::as_str)
                .map(String::from);
            let by_callback =
                self.cfg.delivery == Delivery::Callback || self.fault("callback-never-sent");
            match callback {
                Some(url) if by_callback => {
                    let pending =
                        json!({"job_id": job_id, "agent_id": self.fixture_id, "status": "PENDING"});
                    let send = (!self.fault("callback-never-sent")).then_some((url, result));
                    Ok((
                        Reply {
                            status: 202,
                            body: pending,
                        },
                        send,
                    ))
                }
                _ => Ok((
                    Reply {
                        status: 200,
                        body: result,
                    },
                    None,
                )),
            }
        };
        run().unwrap_or_else(|e| (e, None))
    }
}

fn respond(reply: Reply) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_vec(&reply.body).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn read(c: &Chorus, body: Body) -> Result<Vec<u8>, Response> {
    to_bytes(body, c.cfg.max_body_bytes)
        .await
        .map(|b| b.to_vec())
        .map_err(|_| {
            respond(invalid(format!(
                "body larger than {} bytes",
                c.cfg.max_body_bytes
            )))
        })
}

async fn post_register(State(c): State<Arc<Chorus>>, body: Body) -> Response {
    match read(&c, body).await {
        Ok(b) => respond(c.register(&b)),
        Err(r) => r,
    }
}

async fn get_discover(
    State(c): State<Arc<Chorus>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    respond(c.discover(&q))
}

async fn post_results(State(c): State<Arc<Chorus>>, body: Body) -> Response {
    match read(&c, body).await {
        Ok(b) => respond(c.outcome(None, None, &b)),
        Err(r) => r,
    }
}

async fn post_reputation(
    State(c): State<Arc<Chorus>>,
    Path((agent, outcome)): Path<(String, String)>,
    body: Body,
) -> Response {
    match read(&c, body).await {
        Ok(b) => respond(c.outcome(Some(&agent), Some(&outcome), &b)),
        Err(r) => r,
    }
}

async fn post_transfer(State(c): State<Arc<Chorus>>, body: Body) -> Response {
    match read(&c, body).await {
        Ok(b) => respond(c.transfer(&b)),
        Err(r) => r,
    }
}

async fn post_accounts(State(c): State<Arc<Chorus>>, body: Body) -> Response {
    match read(&c, body).await {
        Ok(b) => respond(c.deposit(&b)),
        Err(r) => r,
    }
}

async fn get_balance(State(c): State<Arc<Chorus>>, Path(owner): Path<String>) -> Response {
    respond(c.balance_of(&owner))
}

async fn post_job(State(c): State<Arc<Chorus>>, body: Body) -> Response {
    let bytes = match read(&c, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (reply, callback) = c.job(&bytes);
    if let Some((url, result)) = callback {
        let http = c.http.clone();
        let body = serde_json::to_vec(&result).unwrap_or_default();
        let held = u32::try_from(body.len())
            .ok()
            .and_then(|n| c.callbacks.clone().try_acquire_many_owned(n.max(1)).ok());
        let Some(held) = held else {
            // Over the budget of callbacks under way: dropped, as a refused one is.
            return respond(reply);
        };
        tokio::spawn(async move {
            // Delivered once, with the client's own deadline (5 s); a refused
            // callback is dropped. Its bytes are released when it ends.
            let _held = held;
            let _ = http
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await;
        });
    }
    respond(reply)
}

async fn not_found() -> Response {
    respond(err(404, "validation", "unknown endpoint"))
}

fn ledger_routes() -> Router<Arc<Chorus>> {
    Router::new()
        .route("/transfer", post(post_transfer))
        .route("/balance/{owner}", get(get_balance))
        .route("/accounts", post(post_accounts))
}

/// The ledger alone: `POST /transfer`, `GET /balance/{owner}`, `POST /accounts`.
pub fn ledger_router(c: Arc<Chorus>) -> Router {
    ledger_routes().fallback(not_found).with_state(c)
}

/// Registry, outcome routes and fixture agent; with `with_ledger` the ledger too.
/// A registry that publishes its routes (`openapi`) takes outcomes at the route it
/// lists alone.
pub fn router(c: Arc<Chorus>, with_ledger: bool) -> Router {
    let mut r = Router::new()
        .route("/register", post(post_register))
        .route("/discover", get(get_discover))
        .route("/reputation/{agent_id}/{outcome}", post(post_reputation))
        .route("/agents/echo/jobs", post(post_job));
    r = match c.cfg.openapi {
        true => r.route("/openapi.json", get(super::published::get_openapi)),
        false => r.route("/results", post(post_results)),
    };
    if with_ledger {
        r = r.merge(ledger_routes());
    }
    r.fallback(not_found).with_state(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reputation_formula_and_clamp() {
        assert_eq!(reputation_after(50.0, true, 50.0), 51.0);
        assert_eq!(reputation_after(50.0, true, 100.0), 52.0);
        assert_eq!(reputation_after(50.0, false, 100.0), 45.5);
        assert_eq!(reputation_after(99.5, true, 100.0), 100.0);
        assert_eq!(reputation_after(2.0, false, 0.0), 0.0);
    }

    #[test]
    fn ledger_in_cents_and_idempotent() {
        let c = Chorus::with_config(ChorusConfig::default());
        let t = |id: &str, amount: f64| {
            let body =
                json!({"transfer_id": id, "from_owner": "a", "to_owner": "b", "amount": amount});
            c.transfer(body.to_string().as_bytes())
        };
        let id = new_id();
        assert_eq!(t(&id, 30.0).status, 200);
        assert_eq!(t(&id, 30.0).body["duplicate"], true);
        assert_eq!(t(&new_id(), 70.01).status, 409);
        assert_eq!(t(&new_id(), 70.0).status, 200);
        assert_eq!(c.balance_of("a").body["balance"], 0.0);
        assert_eq!(c.balance_of("b").body["balance"], 200.0);
        assert_eq!(t(&new_id(), 0.155).status, 400);
    }

    #[test]
    fn accounts_fund_owners_of_an_empty_ledger() {
        let c = Chorus::with_config(ChorusConfig {
            initial_credits_cents: 0,
            ..ChorusConfig::default()
        });
        let t = |amount: f64| {
            let body = json!({"transfer_id": new_id(), "from_owner": "a", "to_owner": "b", "amount": amount});
            c.transfer(body.to_string().as_bytes()).status
        };
        assert_eq!(t(0.01), 409);
        let r = c.deposit(br#"{"owner_id": "a", "credits": 5.5}"#);
        assert_eq!((r.status, &r.body["balance"]), (201, &json!(5.5)));
        assert_eq!(t(5.5), 200);
        assert_eq!(
            c.deposit(br#"{"owner_id": "a", "credits": 0.001}"#).status,
            400
        );
    }

    #[test]
    fn outcomes_may_take_the_hirer_from_the_body() {
        let c = Chorus::with_config(ChorusConfig {
            hirer_reputation_member: Some("contractor_reputation".into()),
            ..ChorusConfig::default()
        });
        let id = new_id();
        let reg = json!({"agent_id": id, "api_endpoint": "http://x/jobs", "skills": []});
        assert_eq!(c.register(reg.to_string().as_bytes()).status, 201);
        let o = |extra: Value| {
            let mut b = json!({"agent_id": id, "status": "SUCCESS", "job_id": new_id(), "orchestrator_id": "nobody"});
            if let (Some(m), Value::Object(e)) = (b.as_object_mut(), extra) {
                m.extend(e);
            }
            c.outcome(None, None, b.to_string().as_bytes())
        };
        assert_eq!(o(json!({})).status, 422);
        let r = o(json!({"contractor_reputation": 100.0}));
        assert_eq!((r.status, &r.body["reputation_score"]), (200, &json!(52.0)));
    }
}
