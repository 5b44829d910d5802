//! The reference chorus orchestrator (chorus.md, with the target profile's
//! choices): the client that hires an agent. Scenario `hire` discovers an agent for a
//! skill (§3.2), sends it a job (§3.3) with a `callback_url` on a loopback listener of
//! its own, takes the Job Result (§3.4) from the reply or from the callback, reports
//! the outcome to the registry (`POST /results`, the result plus `orchestrator_id`:
//! a profile extension), and pays the agent's owner the `execution_cost` of a
//! SUCCESS (§3.5); a FAILURE is reported and not paid.
//!
//! The whole scenario runs under one deadline: every request ends by it, and every
//! reply body (and every callback body) is capped at [`MAX_BYTES`].
//!
//! Its faults (`CLIENT_FAULTS`) model orchestrators that pay wrongly, send malformed
//! jobs, or do not wait for a callback.

use crate::agora_exchange::client::{join, percent_encode};
use crate::fault;
use crate::faults::{Fault, FaultSet};
use crate::serve;
use crate::wire::clock::format_timestamp;
use crate::wire::new_id;
use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The cap on every reply body and every callback body.
pub const MAX_BYTES: usize = 1024 * 1024;

/// The currency every job names (§3.3).
pub const CURRENCY: &str = "chorus_credits_v1";

/// The error codes of chorus.md §5, looked for in refusals.
pub const ERROR_CODES: &[&str] = &[
    "SKILL_MISMATCH",
    "BUDGET_INSUFFICIENT",
    "AGENT_OFFLINE",
    "EXECUTION_ERROR",
    "TRANSFER_FAILED",
];

/// Where the callback listener takes results.
const CALLBACK_PATH: &str = "/results";

/// How many callbacks may wait unread before the listener answers 503.
const CALLBACK_QUEUE: usize = 64;

/// How long stopping the callback listener may take before it is left to finish on
/// its own (it has been told to stop either way).
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Orchestrator faults, each caught by the client cases it names.
pub const CLIENT_FAULTS: &[Fault] = &[
    fault!(
        "pays-after-failure",
        "payment",
        "pays for a job whose result is FAILURE",
        ["chorus/client-failure-no-pay"]
    ),
    fault!(
        "pays-the-budget",
        "payment",
        "pays the offered budget instead of the execution_cost",
        ["chorus/client-hire"]
    ),
    fault!(
        "no-currency",
        "jobs",
        "sends jobs without currency",
        ["chorus/client-hire"]
    ),
    fault!(
        "job-id-not-uuid",
        "jobs",
        "sends job ids that are not UUIDs",
        ["chorus/client-hire"]
    ),
    fault!(
        "ignores-callback",
        "results",
        "takes a PENDING reply as the end of the job and never waits for the callback",
        [
            "chorus/client-callback",
            "chorus/client-callback-missing",
            "chorus/client-refuses-foreign-result"
        ]
    ),
    fault!(
        "pays-over-budget",
        "payment",
        "pays the execution_cost charged even when it is above the job's budget",
        ["chorus/client-refuses-cost-over-budget"]
    ),
    fault!(
        "takes-foreign-result",
        "results",
        "takes a result whatever job_id it names, in the reply or by callback",
        ["chorus/client-refuses-foreign-result"]
    ),
    fault!(
        "ignores-transfer-failure",
        "payment",
        "takes any HTTP 2xx answer to its transfer as paid, TRANSFER_FAILED with status \"failed\" among them",
        ["chorus/client-transfer-failed"]
    ),
    fault!(
        "job-id-uuid-v1",
        "jobs",
        "sends version-1 (time-based) UUIDs as job ids",
        ["chorus/client-hire"]
    ),
    fault!(
        "report-pending-outcome",
        "results",
        "reports the PENDING reply of a job answered 202 as its outcome, before the result comes",
        ["chorus/client-callback"]
    ),
    fault!(
        "reuse-job-id",
        "jobs",
        "sends every job with one fixed job_id, a well-formed UUID v4",
        ["chorus/client-hire"]
    ),
    fault!(
        "job-id-from-identity",
        "jobs",
        "derives each job_id from its own orchestrator_id (a UUID v4 made of the id's SHA1), so every job of one orchestrator carries the same one",
        ["chorus/client-hire"]
    ),
    fault!(
        "pays-on-error",
        "payment",
        "pays even when the agent refuses the job",
        [
            "chorus/client-skill-mismatch",
            "chorus/client-budget-insufficient"
        ]
    ),
];

/// Why the orchestrator gave up.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("HTTP: {0}")]
    Http(String),
    #[error("no end within {0:?}")]
    Timeout(Duration),
    #[error("reply larger than {0} bytes")]
    TooLarge(usize),
    #[error("reply is not JSON: {0}")]
    NotJson(String),
    #[error("bad scenario input: {0}")]
    BadInput(String),
    #[error("cannot start the callback listener: {0}")]
    Listener(String),
    #[error("the reply is not what chorus.md describes: {0}")]
    Malformed(String),
    #[error("discover found no agent for the skill")]
    NoAgent,
    #[error("refused: HTTP {status}{}: {body}", code_note(.body))]
    Refused { status: u16, body: String },
    #[error("the result's job_id is not the job's")]
    WrongJob,
    #[error("the agent answered FAILURE: {0}")]
    Failure(String),
}

impl ClientError {
    /// For a refusal: the error code its body carries ([`error_code`]).
    pub fn code(&self) -> Option<String> {
        match self {
            ClientError::Refused { body, .. } => serde_json::from_str::<Value>(body)
                .ok()
                .and_then(|v| error_code(&v)),
            _ => None,
        }
    }
}

fn code_note(body: &str) -> String {
    match serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| error_code(&v))
    {
        Some(code) => format!(" ({code})"),
        None => String::new(),
    }
}

/// The error a refusal names: one of [`ERROR_CODES`] as any string value in `body`
/// (depth first, in document order), else its `error_message`.
pub fn error_code(body: &Value) -> Option<String> {
    fn known(v: &Value) -> Option<&'static str> {
        match v {
            Value::String(s) => ERROR_CODES.iter().copied().find(|c| c == s),
            Value::Array(a) => a.iter().find_map(known),
            Value::Object(o) => o.values().find_map(known),
            _ => None,
        }
    }
    known(body).map(String::from).or_else(|| {
        body["error_message"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(String::from)
    })
}

/// The job URL (profile): `api_endpoint` unchanged when it ends in `/jobs`, else
/// `api_endpoint + "/jobs"` with one slash.
pub fn job_url(api_endpoint: &str) -> String {
    let trimmed = api_endpoint.trim_end_matches('/');
    if trimmed.ends_with("/jobs") {
        trimmed.to_string()
    } else {
        join(trimmed, "jobs")
    }
}

/// What scenario `hire` is asked to do, with the defaults filled in.
#[derive(Debug, Clone)]
struct Hire {
    skill: String,
    input_data: Value,
    /// A JSON number.
    budget: Value,
    /// `max_cost` and `min_reputation` as query values.
    max_cost: String,
    min_reputation: String,
    orchestrator_id: String,
    owner_id: String,
    /// How long it waits for the result at its callback_url after a reply that
    /// is not final (`result_wait_ms`; the scenario's deadline when absent).
    result_wait: Option<Duration>,
    /// Where it pays (`ledger_url`; the registry when absent).
    ledger: Option<String>,
}

impl Hire {
    fn from_input(v: &Value) -> Result<Hire, ClientError> {
        let empty = Map::new();
        let o = match v {
            Value::Null => &empty,
            Value::Object(o) => o,
            other => return Err(bad(format!("the input must be an object, not {other}"))),
        };
        let get = |k: &str| o.get(k).filter(|x| !x.is_null());
        let text = |k: &str, default: &dyn Fn() -> String| match get(k) {
            None => Ok(default()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(bad(format!("`{k}` must be a string, not {other}"))),
        };
        let query = |k: &str, default: &str| match get(k) {
            None => Ok(default.to_string()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) => Ok(n.to_string()),
            Some(other) => Err(bad(format!("`{k}` must be a number, not {other}"))),
        };
        let budget = match get("budget") {
            None => json!(0.15),
            Some(n @ Value::Number(_)) => n.clone(),
            Some(other) => return Err(bad(format!("`budget` must be a number, not {other}"))),
        };
        Ok(Hire {
            skill: text("skill", &|| "echo_text".to_string())?,
            input_data: get("input_data")
                .cloned()
                .unwrap_or_else(|| json!({"text": "hello"})),
            budget,
            max_cost: query("max_cost", "0.15")?,
            min_reputation: query("min_reputation", "0")?,
            orchestrator_id: text("orchestrator_id", &new_id)?,
            owner_id: text("owner_id", &|| "reference-orchestrator".to_string())?,
            ledger: match get("ledger_url") {
                None => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => {
                    return Err(bad(format!("`ledger_url` must be a string, not {other}")))
                }
            },
            result_wait: match get("result_wait_ms") {
                None => None,
                Some(v) => Some(Duration::from_millis(v.as_u64().ok_or_else(|| {
                    bad(format!("`result_wait_ms` must be a whole number, not {v}"))
                })?)),
            },
        })
    }
}

fn bad(why: String) -> ClientError {
    ClientError::BadInput(why)
}

/// One reply: HTTP status and the body as received.
struct Reply {
    status: u16,
    bytes: Vec<u8>,
}

impl Reply {
    fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    fn json(&self) -> Result<Value, ClientError> {
        serde_json::from_slice(&self.bytes).map_err(|e| ClientError::NotJson(e.to_string()))
    }

    /// The body as JSON; an empty body is `null`, any other non-JSON its text.
    fn lenient(&self) -> Value {
        if self.bytes.iter().all(u8::is_ascii_whitespace) {
            return Value::Null;
        }
        self.json().unwrap_or_else(|_| Value::String(self.text()))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// An HTTP client whose every request ends by the scenario's deadline.
struct Http {
    client: reqwest::Client,
    deadline: Instant,
    total: Duration,
}

impl Http {
    fn new(total: Duration) -> Result<Http, ClientError> {
        let client = crate::wire::http::client(crate::wire::http::Setting {
            timeout: Some(total),
            no_proxy: true,
            follow_redirects: false,
        })
        .map_err(ClientError::Http)?;
        Ok(Http {
            client,
            deadline: Instant::now() + total,
            total,
        })
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Reply, ClientError> {
        let work = async {
            let mut resp = req
                .send()
                .await
                .map_err(|e| ClientError::Http(e.to_string()))?;
            let status = resp.status().as_u16();
            let mut bytes = Vec::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| ClientError::Http(e.to_string()))?
            {
                if bytes.len() + chunk.len() > MAX_BYTES {
                    return Err(ClientError::TooLarge(MAX_BYTES));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(Reply { status, bytes })
        };
        tokio::time::timeout_at(self.deadline, work)
            .await
            .map_err(|_| ClientError::Timeout(self.total))?
    }

    async fn get(&self, url: &str) -> Result<Reply, ClientError> {
        self.send(self.client.get(url)).await
    }

    async fn post(&self, url: &str, body: &Value) -> Result<Reply, ClientError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ClientError::Http(e.to_string()))?;
        let req = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes);
        self.send(req).await
    }
}

/// What one hire works with once the agent is chosen.
struct Ctx<'a> {
    http: &'a Http,
    base: &'a str,
    hire: &'a Hire,
    faults: &'a FaultSet,
    /// Who is paid: the agent's `owner_id`, else its `agent_id`.
    payee: String,
}

impl Ctx<'_> {
    /// `POST {base}/transfer` of `amount` for `job_id`; the reply is recorded.
    async fn pay(
        &self,
        amount: &Value,
        job_id: &str,
        received: &mut Vec<Value>,
    ) -> Result<Reply, ClientError> {
        let transfer = json!({
            "transfer_id": new_id(),
            "from_owner": self.hire.owner_id,
            "to_owner": self.payee,
            "amount": amount,
            "job_id": job_id,
            "timestamp_utc": now(),
        });
        let ledger = self.hire.ledger.as_deref().unwrap_or(self.base);
        let reply = self.http.post(&join(ledger, "transfer"), &transfer).await?;
        received.push(reply.lenient());
        Ok(reply)
    }
}

fn now() -> String {
    format_timestamp(time::OffsetDateTime::now_utc())
}

/// A job id: a fresh UUID v4, or under `job-id-not-uuid` "job-" and a counter,
/// under `reuse-job-id` one fixed UUID v4, under `job-id-from-identity` one made of
/// the orchestrator's id.
fn job_id(faults: &FaultSet, orchestrator_id: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    if faults.has("job-id-from-identity") {
        use sha1::Digest;
        let h = sha1::Sha1::digest(orchestrator_id.as_bytes());
        let mut b = [0u8; 16];
        b.copy_from_slice(&h[..16]);
        return uuid::Builder::from_random_bytes(b).into_uuid().to_string();
    }
    if faults.has("reuse-job-id") {
        "0f6c8e1a-3b5d-4f7a-9c2e-8d4b6a1f3e57".to_string()
    } else if faults.has("job-id-not-uuid") {
        format!("job-{}", COUNTER.fetch_add(1, Ordering::Relaxed))
    } else if faults.has("job-id-uuid-v1") {
        // A version-1 layout: the version digit is 1, the variant bits 10.
        let mut id: Vec<char> = new_id().chars().collect();
        id[14] = '1';
        id.into_iter().collect()
    } else {
        new_id()
    }
}

/// Whether `v` is a Job Result (§3.4): an object with a string job_id and status.
fn is_result(v: &Value) -> bool {
    v["job_id"].is_string() && v["status"].is_string()
}

/// Whether `v` is a Job Result with a final status.
fn is_final(v: &Value) -> bool {
    is_result(v) && matches!(v["status"].as_str(), Some("SUCCESS" | "FAILURE"))
}

/// Runs scenario `name` (only "hire") against the registry at `base`
/// (`http://127.0.0.1:PORT/`). Returns every reply body received (parsed JSON;
/// discovery, job reply, callback bodies, outcome and transfer replies), and either
/// the results (a one-element vec: the `output_data` of the SUCCESS result) or why
/// it failed. `timeout` bounds the whole scenario.
///
/// Input (defaults when missing): `{"skill": "echo_text", "input_data": {"text":
/// "hello"}, "budget": 0.15, "max_cost": 0.15, "min_reputation": 0,
/// "orchestrator_id": <a fresh UUID v4>, "owner_id": "reference-orchestrator"}`.
pub async fn scenario(
    base: &str,
    name: &str,
    input: &Value,
    faults: &[String],
    timeout: Duration,
) -> (Vec<Value>, Result<Vec<Value>, ClientError>) {
    let mut received = Vec::new();
    let faults = match FaultSet::from_names(CLIENT_FAULTS, faults) {
        Ok(f) => f,
        Err(e) => return (received, Err(ClientError::BadInput(e))),
    };
    let result = match name {
        "hire" => {
            let work = async {
                let hire = Hire::from_input(input)?;
                let http = Http::new(timeout)?;
                run_hire(&http, base, &hire, &faults, &mut received).await
            };
            tokio::time::timeout(timeout, work)
                .await
                .unwrap_or(Err(ClientError::Timeout(timeout)))
        }
        other => Err(ClientError::BadInput(format!(
            "unknown scenario {other:?} (known: hire)"
        ))),
    };
    (received, result)
}

async fn run_hire(
    http: &Http,
    base: &str,
    hire: &Hire,
    faults: &FaultSet,
    received: &mut Vec<Value>,
) -> Result<Vec<Value>, ClientError> {
    // 1. Discover; the registry ranks, the first agent is hired.
    let url = format!(
        "{}?skill={}&min_reputation={}&max_cost={}",
        join(base, "discover"),
        percent_encode(&hire.skill),
        percent_encode(&hire.min_reputation),
        percent_encode(&hire.max_cost)
    );
    let reply = http.get(&url).await?;
    let found = reply.json()?;
    received.push(found.clone());
    if !reply.ok() {
        return Err(ClientError::Refused {
            status: reply.status,
            body: reply.text(),
        });
    }
    let Some(agent) = found["agents"].as_array().and_then(|a| a.first()) else {
        return Err(ClientError::NoAgent);
    };
    let endpoint = agent["api_endpoint"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ClientError::Malformed("the first agent has no api_endpoint".into()))?;
    let payee = agent["owner_id"]
        .as_str()
        .or_else(|| agent["agent_id"].as_str())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ClientError::Malformed("the first agent has neither owner_id nor agent_id".into())
        })?
        .to_string();
    let listed_cost = agent["skill"]["cost_per_call"].clone();
    let ctx = Ctx {
        http,
        base,
        hire,
        faults,
        payee,
    };

    // 2. The callback listener, then the job.
    let (tx, mut rx) = mpsc::channel(CALLBACK_QUEUE);
    let listener = serve::spawn("127.0.0.1:0", callback_router(tx))
        .await
        .map_err(|e| ClientError::Listener(e.to_string()))?;
    let callback_url = format!("http://{}{CALLBACK_PATH}", listener.addr);
    let job_id = job_id(faults, &hire.orchestrator_id);
    let mut job = json!({
        "job_id": job_id,
        "orchestrator_id": hire.orchestrator_id,
        "skill_name": hire.skill,
        "input_data": hire.input_data,
        "budget": hire.budget,
        "currency": CURRENCY,
        "callback_url": callback_url,
        "timestamp_utc": now(),
    });
    if faults.has("no-currency") {
        if let Some(o) = job.as_object_mut() {
            o.remove("currency");
        }
    }
    // 3. The result, from the reply or the callback.
    // Under report-pending-outcome: whether a PENDING reply went out as the outcome.
    let mut reported = false;
    let got = obtain_result(
        &ctx,
        &job_url(endpoint),
        &job,
        &job_id,
        &mut rx,
        received,
        &mut reported,
    )
    .await;
    let _ = tokio::time::timeout(STOP_GRACE, listener.stop()).await;
    let Some(result) = got? else {
        // ignores-callback: a PENDING reply taken for the end of the job.
        return Ok(vec![Value::Null]);
    };

    // 4. The result must be this job's (CHO-030).
    if result["job_id"].as_str() != Some(job_id.as_str()) && !faults.has("takes-foreign-result") {
        return Err(ClientError::WrongJob);
    }

    // 5. The outcome, for reputation; a refusal is only recorded.
    if !reported {
        let mut report = result.clone();
        report["orchestrator_id"] = json!(hire.orchestrator_id);
        if let Ok(reply) = http.post(&join(base, "results"), &report).await {
            received.push(reply.lenient());
        }
    }

    // 6. A FAILURE is not paid.
    if result["status"] != "SUCCESS" {
        if faults.has("pays-after-failure") {
            let amount = match &result["execution_cost"] {
                n @ Value::Number(_) => n.clone(),
                _ => hire.budget.clone(),
            };
            let _ = ctx.pay(&amount, &job_id, received).await;
        }
        let why = result["error_message"]
            .as_str()
            .unwrap_or("(no error_message)");
        return Err(ClientError::Failure(why.to_string()));
    }

    // 7. A SUCCESS is paid its execution_cost (else the listed cost_per_call).
    let amount = if faults.has("pays-the-budget") {
        hire.budget.clone()
    } else {
        match (&result["execution_cost"], &listed_cost) {
            (n @ Value::Number(_), _) | (Value::Null, n @ Value::Number(_)) => n.clone(),
            (other, _) => {
                return Err(ClientError::Malformed(format!(
                    "the result's execution_cost is {other}, not a number"
                )))
            }
        }
    };
    // 8. Never above the job's budget (CHO-033).
    let over = amount
        .as_f64()
        .zip(hire.budget.as_f64())
        .filter(|(a, b)| a > b);
    if let (Some((a, b)), false) = (over, faults.has("pays-over-budget")) {
        return Err(ClientError::Malformed(format!(
            "the result charges {a}, above the job's budget of {b}: not paid"
        )));
    }
    let reply = ctx.pay(&amount, &job_id, received).await?;
    let failed_anyway = reply.ok()
        && !faults.has("ignores-transfer-failure")
        && reply
            .json()
            .ok()
            .and_then(|v| error_code(&v))
            .is_some_and(|c| c == "TRANSFER_FAILED");
    if !reply.ok() || failed_anyway {
        return Err(ClientError::Refused {
            status: reply.status,
            body: reply.text(),
        });
    }
    Ok(vec![result
        .get("output_data")
        .cloned()
        .unwrap_or(Value::Null)])
}

/// Sends the job and takes its final result: from a 2xx reply that carries one, else
/// from the first callback with this job's id and a final status (PENDING and other
/// jobs' callbacks are skipped). `None` under `ignores-callback` when the reply says
/// nothing final. Under `report-pending-outcome` a PENDING reply is reported as the
/// outcome, and `reported` says so.
async fn obtain_result(
    ctx: &Ctx<'_>,
    url: &str,
    job: &Value,
    job_id: &str,
    rx: &mut mpsc::Receiver<Value>,
    received: &mut Vec<Value>,
    reported: &mut bool,
) -> Result<Option<Value>, ClientError> {
    let reply = ctx.http.post(url, job).await?;
    let body = reply.lenient();
    received.push(body.clone());
    if !reply.ok() {
        if ctx.faults.has("pays-on-error") && (400..500).contains(&reply.status) {
            let _ = ctx.pay(&ctx.hire.budget, job_id, received).await;
        }
        return Err(ClientError::Refused {
            status: reply.status,
            body: reply.text(),
        });
    }
    if is_final(&body) {
        return Ok(Some(body));
    }
    if ctx.faults.has("ignores-callback") {
        return Ok(None);
    }
    if ctx.faults.has("report-pending-outcome") {
        let mut report = body.clone();
        report["orchestrator_id"] = json!(ctx.hire.orchestrator_id);
        if let Ok(reply) = ctx.http.post(&join(ctx.base, "results"), &report).await {
            received.push(reply.lenient());
        }
        *reported = true;
    }
    let (until, waited) = match ctx.hire.result_wait {
        Some(w) => ((Instant::now() + w).min(ctx.http.deadline), w),
        None => (ctx.http.deadline, ctx.http.total),
    };
    loop {
        let next = tokio::time::timeout_at(until, rx.recv())
            .await
            .map_err(|_| ClientError::Timeout(waited))?;
        let Some(callback) = next else {
            return Err(ClientError::Listener(
                "the callback listener stopped".into(),
            ));
        };
        received.push(callback.clone());
        let ours = callback["job_id"] == job_id || ctx.faults.has("takes-foreign-result");
        if is_final(&callback) && ours {
            return Ok(Some(callback));
        }
    }
}

/// The callback listener: `POST /results` takes one JSON body (at most
/// [`MAX_BYTES`]), hands it over `tx` and answers 200 `{}`.
fn callback_router(tx: mpsc::Sender<Value>) -> Router {
    Router::new()
        .route(CALLBACK_PATH, post(take_callback))
        .fallback(|| async { answer(StatusCode::NOT_FOUND, "unknown endpoint") })
        .with_state(tx)
}

fn answer(status: StatusCode, message: &str) -> Response {
    let body = if status.is_success() {
        json!({})
    } else {
        json!({"error": message})
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn take_callback(State(tx): State<mpsc::Sender<Value>>, body: Body) -> Response {
    let Ok(bytes) = to_bytes(body, MAX_BYTES).await else {
        return answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body cannot be read within 1 MiB",
        );
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return answer(StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    match tx.try_send(value) {
        Ok(()) => answer(StatusCode::OK, ""),
        Err(_) => answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "the orchestrator takes no more callbacks",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chorus::server::{router, Chorus, ChorusConfig, Delivery};
    use crate::wire::clock::parse_timestamp;
    use crate::wire::is_uuid;
    use axum::extract::{Json, Query};
    use axum::routing::get;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    const AGENT_ID: &str = "3f1c9d62-8a47-4b1e-9d0a-6f2b7c5e1a90";
    const AGENT_OWNER: &str = "agent-owner";
    const LONG: Duration = Duration::from_secs(10);

    /// How the fake agent answers a job.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Mode {
        /// 200 with a SUCCESS result (execution_cost 0.10).
        Success,
        /// 200 with a FAILURE result (execution_cost null).
        Failure,
        /// 202 PENDING, then callbacks: PENDING, another job's SUCCESS, this SUCCESS.
        Callback,
        /// 202 PENDING and nothing else.
        Silent,
        /// 400 SKILL_MISMATCH.
        Mismatch,
        /// 200 with a SUCCESS result for another job id.
        WrongJob,
    }

    /// A fake registry, ledger and agent in one router, recording every request.
    struct Fake {
        mode: Mode,
        /// Whether discover lists the agent's owner_id.
        with_owner: bool,
        base: Mutex<String>,
        seen: Mutex<Vec<(String, Value)>>,
    }

    impl Fake {
        fn record(&self, path: &str, body: Value) {
            self.seen.lock().unwrap().push((path.to_string(), body));
        }

        fn paths(&self) -> Vec<String> {
            self.seen
                .lock()
                .unwrap()
                .iter()
                .map(|x| x.0.clone())
                .collect()
        }

        fn bodies(&self, path: &str) -> Vec<Value> {
            let seen = self.seen.lock().unwrap();
            seen.iter()
                .filter(|x| x.0 == path)
                .map(|x| x.1.clone())
                .collect()
        }

        fn job(&self) -> Value {
            let jobs = self.bodies("/agent/jobs");
            assert_eq!(jobs.len(), 1, "one job sent");
            jobs[0].clone()
        }
    }

    fn success(job_id: &Value, text: &Value) -> Value {
        json!({
            "job_id": job_id, "agent_id": AGENT_ID, "status": "SUCCESS",
            "output_data": {"text": text}, "execution_cost": 0.10, "execution_time_ms": 1,
            "error_message": null, "timestamp_utc": "2026-02-11T14:15:09Z",
        })
    }

    async fn discover(
        State(f): State<Arc<Fake>>,
        Query(q): Query<HashMap<String, String>>,
    ) -> Json<Value> {
        f.record("/discover", json!(q));
        let base = f.base.lock().unwrap().clone();
        let mut agent = json!({
            "agent_id": AGENT_ID, "agent_name": "fake", "api_endpoint": format!("{base}/agent"),
            "skill": {"skill_name": "echo_text", "cost_per_call": 0.10},
            "reputation_score": 50.0, "status": "online",
        });
        if f.with_owner {
            agent["owner_id"] = json!(AGENT_OWNER);
        }
        Json(json!({"agents": [agent]}))
    }

    async fn job(State(f): State<Arc<Fake>>, Json(job): Json<Value>) -> Response {
        f.record("/agent/jobs", job.clone());
        let id = job["job_id"].clone();
        let text = job["input_data"]["text"].clone();
        let reply = |status: u16, body: Value| {
            (StatusCode::from_u16(status).unwrap(), Json(body)).into_response()
        };
        let pending = json!({"job_id": id, "agent_id": AGENT_ID, "status": "PENDING"});
        match f.mode {
            Mode::Success => reply(200, success(&id, &text)),
            Mode::WrongJob => reply(200, success(&json!(new_id()), &text)),
            Mode::Failure => reply(
                200,
                json!({
                    "job_id": id, "agent_id": AGENT_ID, "status": "FAILURE",
                    "output_data": null, "execution_cost": null, "execution_time_ms": 1,
                    "error_message": "boom", "timestamp_utc": "2026-02-11T14:15:09Z",
                }),
            ),
            Mode::Mismatch => reply(
                400,
                json!({"error": "SKILL_MISMATCH", "message": "no such skill"}),
            ),
            Mode::Silent => reply(202, pending),
            Mode::Callback => {
                let url = job["callback_url"].as_str().unwrap().to_string();
                let bodies = vec![
                    pending.clone(),
                    success(&json!(new_id()), &json!("someone else's")),
                    success(&id, &text),
                ];
                tokio::spawn(async move {
                    let http = crate::wire::http::builder().no_proxy().build().unwrap();
                    for b in bodies {
                        // A client that stopped listening (ignores-callback) refuses.
                        let _ = http
                            .post(&url)
                            .header(reqwest::header::CONTENT_TYPE, "application/json")
                            .body(b.to_string())
                            .send()
                            .await;
                    }
                });
                reply(202, pending)
            }
        }
    }

    async fn results(State(f): State<Arc<Fake>>, Json(b): Json<Value>) -> Json<Value> {
        f.record("/results", b);
        Json(json!({"agent_id": AGENT_ID, "reputation_score": 51.0}))
    }

    async fn transfer(State(f): State<Arc<Fake>>, Json(b): Json<Value>) -> Json<Value> {
        f.record("/transfer", b.clone());
        Json(json!({"status": "completed", "transfer_id": b["transfer_id"]}))
    }

    async fn run(
        mode: Mode,
        with_owner: bool,
        faults: &[&str],
        timeout: Duration,
    ) -> (Arc<Fake>, Vec<Value>, Result<Vec<Value>, ClientError>) {
        let fake = Arc::new(Fake {
            mode,
            with_owner,
            base: Mutex::new(String::new()),
            seen: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/discover", get(discover))
            .route("/agent/jobs", post(job))
            .route("/results", post(results))
            .route("/transfer", post(transfer))
            .with_state(fake.clone());
        let server = serve::spawn("127.0.0.1:0", app).await.unwrap();
        let base = format!("http://{}", server.addr);
        *fake.base.lock().unwrap() = base.clone();
        let faults: Vec<String> = faults.iter().map(|s| s.to_string()).collect();
        let (received, result) = scenario(
            &format!("{base}/"),
            "hire",
            &json!({"input_data": {"text": "hi"}}),
            &faults,
            timeout,
        )
        .await;
        server.stop().await;
        (fake, received, result)
    }

    #[test]
    fn job_url_rule() {
        assert_eq!(job_url("http://a:1/agent"), "http://a:1/agent/jobs");
        assert_eq!(job_url("http://a:1/agent/"), "http://a:1/agent/jobs");
        assert_eq!(job_url("http://a:1/x/jobs"), "http://a:1/x/jobs");
        assert_eq!(job_url("http://a:1/x/jobs/"), "http://a:1/x/jobs");
    }

    #[test]
    fn error_codes_are_found_anywhere() {
        let code = |v: Value| error_code(&v);
        assert_eq!(
            code(json!({"error": "SKILL_MISMATCH"})).as_deref(),
            Some("SKILL_MISMATCH")
        );
        assert_eq!(
            code(json!({"detail": {"code": ["BUDGET_INSUFFICIENT"]}})).as_deref(),
            Some("BUDGET_INSUFFICIENT")
        );
        assert_eq!(
            code(json!({"status": "FAILURE", "error_message": "out of ink"})).as_deref(),
            Some("out of ink")
        );
        assert_eq!(code(json!({"detail": "nope"})), None);
        let e = ClientError::Refused {
            status: 402,
            body: r#"{"error":"BUDGET_INSUFFICIENT"}"#.into(),
        };
        assert_eq!(e.code().as_deref(), Some("BUDGET_INSUFFICIENT"));
        assert!(e.to_string().contains("(BUDGET_INSUFFICIENT)"));
    }

    #[tokio::test]
    async fn sync_success_reports_then_pays_the_execution_cost_to_the_owner() {
        let (fake, received, result) = run(Mode::Success, true, &[], LONG).await;
        assert_eq!(result.unwrap(), vec![json!({"text": "hi"})]);
        assert_eq!(
            fake.paths(),
            ["/discover", "/agent/jobs", "/results", "/transfer"]
        );
        let q = &fake.bodies("/discover")[0];
        assert_eq!(
            q,
            &json!({"skill": "echo_text", "min_reputation": "0", "max_cost": "0.15"})
        );
        let job = fake.job();
        let id = job["job_id"].as_str().unwrap();
        assert!(is_uuid(id));
        assert!(is_uuid(job["orchestrator_id"].as_str().unwrap()));
        assert_eq!(job["currency"], CURRENCY);
        assert_eq!(job["skill_name"], "echo_text");
        assert_eq!(job["budget"], json!(0.15));
        assert!(job["callback_url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"));
        let ts = job["timestamp_utc"].as_str().unwrap();
        assert!(ts.ends_with('Z') && parse_timestamp(ts).is_ok());
        let outcome = &fake.bodies("/results")[0];
        assert_eq!(outcome["status"], "SUCCESS");
        assert_eq!(outcome["job_id"], id);
        assert_eq!(outcome["orchestrator_id"], job["orchestrator_id"]);
        let pay = &fake.bodies("/transfer")[0];
        assert_eq!(pay["amount"], json!(0.10));
        assert_eq!(pay["to_owner"], AGENT_OWNER);
        assert_eq!(pay["from_owner"], "reference-orchestrator");
        assert_eq!(pay["job_id"], id);
        assert!(is_uuid(pay["transfer_id"].as_str().unwrap()));
        // discovery, job reply, outcome reply, transfer reply
        assert_eq!(received.len(), 4);
        assert_eq!(received[3]["status"], "completed");
    }

    #[tokio::test]
    async fn without_owner_id_the_agent_id_is_paid() {
        let (fake, _, result) = run(Mode::Success, false, &[], LONG).await;
        assert!(result.is_ok());
        assert_eq!(fake.bodies("/transfer")[0]["to_owner"], AGENT_ID);
    }

    #[tokio::test]
    async fn failure_is_reported_and_not_paid() {
        let (fake, _, result) = run(Mode::Failure, true, &[], LONG).await;
        assert!(matches!(result, Err(ClientError::Failure(ref m)) if m == "boom"));
        assert_eq!(fake.paths(), ["/discover", "/agent/jobs", "/results"]);
        assert_eq!(fake.bodies("/results")[0]["status"], "FAILURE");
    }

    #[tokio::test]
    async fn a_202_waits_for_the_final_callback() {
        let (fake, received, result) = run(Mode::Callback, true, &[], LONG).await;
        assert_eq!(result.unwrap(), vec![json!({"text": "hi"})]);
        assert_eq!(
            fake.paths(),
            ["/discover", "/agent/jobs", "/results", "/transfer"]
        );
        let id = fake.job()["job_id"].clone();
        assert_eq!(fake.bodies("/results")[0]["job_id"], id);
        assert_eq!(fake.bodies("/transfer")[0]["job_id"], id);
        assert_eq!(fake.bodies("/transfer")[0]["amount"], json!(0.10));
        // discovery, 202 reply, three callbacks, outcome reply, transfer reply
        assert_eq!(received.len(), 7);
        assert_eq!(received[1]["status"], "PENDING");
        assert_eq!(received[4]["job_id"], id);
    }

    #[tokio::test]
    async fn no_callback_times_out_without_paying() {
        let t = Duration::from_millis(500);
        let (fake, _, result) = run(Mode::Silent, true, &[], t).await;
        assert!(matches!(result, Err(ClientError::Timeout(d)) if d == t));
        assert!(fake.bodies("/transfer").is_empty());
        assert!(fake.bodies("/results").is_empty());
    }

    #[tokio::test]
    async fn skill_mismatch_is_refused_and_not_paid() {
        let (fake, _, result) = run(Mode::Mismatch, true, &[], LONG).await;
        let e = result.unwrap_err();
        assert!(matches!(e, ClientError::Refused { status: 400, .. }));
        assert_eq!(e.code().as_deref(), Some("SKILL_MISMATCH"));
        assert_eq!(fake.paths(), ["/discover", "/agent/jobs"]);
    }

    #[tokio::test]
    async fn a_result_for_another_job_is_refused() {
        let (fake, _, result) = run(Mode::WrongJob, true, &[], LONG).await;
        assert!(matches!(result, Err(ClientError::WrongJob)));
        assert_eq!(fake.paths(), ["/discover", "/agent/jobs"]);
    }

    #[tokio::test]
    async fn unknown_scenarios_and_faults_are_refused() {
        let (r, result) = scenario("http://127.0.0.1:9/", "fire", &Value::Null, &[], LONG).await;
        assert!(r.is_empty() && matches!(result, Err(ClientError::BadInput(_))));
        let faults = vec!["pays-twice".to_string()];
        let (_, result) =
            scenario("http://127.0.0.1:9/", "hire", &Value::Null, &faults, LONG).await;
        assert!(matches!(result, Err(ClientError::BadInput(_))));
    }

    #[tokio::test]
    async fn fault_pays_after_failure() {
        let (fake, _, result) = run(Mode::Failure, true, &["pays-after-failure"], LONG).await;
        assert!(matches!(result, Err(ClientError::Failure(_))));
        let pays = fake.bodies("/transfer");
        assert_eq!(pays.len(), 1);
        // execution_cost is null: the budget is paid.
        assert_eq!(pays[0]["amount"], json!(0.15));
    }

    #[tokio::test]
    async fn fault_pays_the_budget() {
        let (fake, _, result) = run(Mode::Success, true, &["pays-the-budget"], LONG).await;
        assert!(result.is_ok());
        assert_eq!(fake.bodies("/transfer")[0]["amount"], json!(0.15));
    }

    #[tokio::test]
    async fn fault_no_currency() {
        let (fake, _, result) = run(Mode::Success, true, &["no-currency"], LONG).await;
        assert!(result.is_ok());
        assert!(fake.job().get("currency").is_none());
    }

    #[tokio::test]
    async fn fault_job_id_not_uuid() {
        let (fake, _, result) = run(Mode::Success, true, &["job-id-not-uuid"], LONG).await;
        assert!(result.is_ok());
        let id = fake.job()["job_id"].as_str().unwrap().to_string();
        assert!(id.starts_with("job-") && !is_uuid(&id), "{id}");
        assert_eq!(fake.bodies("/transfer")[0]["job_id"], id);
    }

    #[tokio::test]
    async fn fault_ignores_callback() {
        let (fake, _, result) = run(Mode::Callback, true, &["ignores-callback"], LONG).await;
        assert_eq!(result.unwrap(), vec![Value::Null]);
        assert_eq!(fake.paths(), ["/discover", "/agent/jobs"]);
    }

    #[tokio::test]
    async fn fault_pays_on_error() {
        let (fake, _, result) = run(Mode::Mismatch, true, &["pays-on-error"], LONG).await;
        assert!(matches!(
            result,
            Err(ClientError::Refused { status: 400, .. })
        ));
        let pays = fake.bodies("/transfer");
        assert_eq!(pays.len(), 1);
        assert_eq!(pays[0]["amount"], json!(0.15));
        assert_eq!(pays[0]["job_id"], fake.job()["job_id"]);
    }

    /// Against the reference registry, ledger and fixture agent, both deliveries.
    #[tokio::test]
    async fn hires_the_reference_fixture() {
        for delivery in [Delivery::Sync, Delivery::Callback] {
            let chorus = Arc::new(Chorus::with_config(ChorusConfig {
                delivery,
                ..ChorusConfig::default()
            }));
            let server = serve::spawn("127.0.0.1:0", router(chorus.clone(), true))
                .await
                .unwrap();
            let base = format!("http://{}", server.addr);
            chorus.register_fixture(&base);
            let me = new_id();
            let reg =
                json!({"agent_id": me, "api_endpoint": "http://127.0.0.1:9/jobs", "skills": []});
            assert_eq!(chorus.register(reg.to_string().as_bytes()).status, 201);
            let input = json!({"orchestrator_id": me, "input_data": {"text": "ping"}});
            let (received, result) = scenario(&base, "hire", &input, &[], LONG).await;
            server.stop().await;
            assert_eq!(
                result.unwrap(),
                vec![json!({"text": "ping"})],
                "{delivery:?}"
            );
            let fixture = received[0]["agents"][0]["agent_id"].as_str().unwrap();
            let outcome = received
                .iter()
                .find(|r| r.get("reputation_score").is_some());
            assert_eq!(outcome.unwrap()["reputation_score"], json!(51.0));
            assert_eq!(
                chorus.balance_of("reference-orchestrator").body["balance"],
                json!(99.9)
            );
            assert_eq!(chorus.balance_of(fixture).body["balance"], json!(100.1));
        }
    }
}
