//! agentprotocol expectations: a per-case identity and connection over the case's
//! binding, message builders, and the reading every target reply gets.
//!
//! [`read_reply`] reads a reply leniently. Each deviation it meets becomes a typed
//! finding with a stable key (the same on every binding), the requirement ids it
//! breaks, the case that owns the rule, and the target's own words; the reply is then
//! read as the target meant it (`correlation_id` as `correlationId`, a capability map
//! as a list, an error payload nested under `error` as the payload, a respelled error
//! code as the code). Only a reply that is not JSON or not a message at all, or has
//! no type, stops a case (blocked). The HTTP status is never judged (AGP-A10).
//!
//! | key (`agentprotocol/…`) | ids | owner case |
//! |---|---|---|
//! | `reply:not-json`, `reply:not-a-message`, `envelope:<member>`, `type` | AGP-001, AGP-010 | hello |
//! | `error:not-a-message` (HTTP ≥ 400 or an error-like body that is no message) | AGP-001, AGP-020 | invalid-message |
//! | `protocol`, `timestamp`, `payload` | AGP-002, AGP-004, AGP-011 | hello |
//! | `id:not-uuid`, `id:reused` | AGP-003 | ids-unique |
//! | `agent-id:encoding` (base58: a warning, AGP-A4) | AGP-005 | hello |
//! | `signature:missing` (a warning outside hello, AGP-A3), `signature:encoding`, `signature:mismatch` | AGP-001, AGP-012, AGP-030, AGP-031 | hello |
//! | `capabilities:not-a-list`, `capabilities:not-strings`, `capabilities:missing` (a warning) | AGP-007 | hello |
//! | `to:not-the-sender`, `to:agentId`, `to:broadcast`, `to:broadcast-true` (informational, AGP-A13), `from:not-the-target` | AGP-008, AGP-009 | hello |
//! | `correlationId:renamed`, `correlationId:misplaced`, `correlationId:not-echoed`, `response-payload:status` | AGP-019, AGP-020, AGP-A7 | echo-request |
//! | `correlationId:not-echoed-in-errors`, `error-payload:nested`, `error-payload:code`, `error-payload:message`, `error-code:spelling`, `error-code:unknown` (warnings, AGP-022) | AGP-020, AGP-022 | unknown-action |
//! | `schema:<payload schema>:<pointer>` | AGP-014, AGP-019, AGP-020 | hello, echo-request, unknown-action |
//! | `hello:not-hello`, `hello:no-reply` (a warning, AGP-A9), `from:not-the-addressee` | AGP-009, AGP-013 | hello |

use super::rules;
use crate::case::{Step, Stop};
use crate::drive::file::FileDriver;
use crate::drive::http::HttpDriver;
use crate::drive::ws::WsDriver;
use crate::drive::{DriveError, Driver, Limits, Received, Transport};
use crate::finding::{quote, Finding};
use crate::rules::schema_findings;
use crate::rules::Rule;
use crate::script::{describe_drive_error, join_url, Ctx};
use reference_impl::agentprotocol::message::{self, agent_id, CODES, PROTOCOL, TYPES};
use reference_impl::wire::clock::format_timestamp;
use reference_impl::wire::keys::{self, KeyForm, Keypair};
use reference_impl::wire::{is_uuid, json, new_id};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::time::Duration;

/// A finding key of this suite.
pub fn key(rule: &str) -> String {
    format!("agentprotocol/{rule}")
}

/// A case's own deviation, as the stop that ends it.
pub fn own(rule: &'static Rule, summary: impl Into<String>) -> Stop {
    Stop::Finding(rule.found(summary))
}

/// What the reply `r` to an echo request (`what`) of `params` breaks: it is a
/// response (`echo-request:not-carried-out`, AGP-018, AGP-043; a response carries
/// the request out whatever its status, AGP-A11) whose result is the params
/// (`echo-request:result`, AGP-019, numbers compared by value) when `params` are
/// known.
pub fn echo_finding(r: &Value, params: Option<&Value>, what: &str) -> Option<Finding> {
    if r["type"] != "response" {
        return Some(
            rules::ECHO_REQUEST_NOT_CARRIED_OUT
                .found(format!("{what} drew {} (AGP-018, AGP-043)", describe(r))),
        );
    }
    let got = &r["payload"]["result"];
    let params = params.filter(|p| !json_eq(got, p))?;
    Some(rules::ECHO_REQUEST_RESULT.found(format!(
        "the echo response's result is {}, not the params {params} (AGP-019)",
        shown(&got.to_string())
    )))
}

/// JSON equality with numbers compared by value (4 and 4.0 are one number).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| json_eq(p, q)))
        }
        _ => a == b,
    }
}

/// What a reply answers, to hold it to.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The agentId the reply must be addressed to.
    pub sender: Option<String>,
    /// The agent that said hello: the reply must come from it.
    pub target: Option<String>,
    /// The request's correlationId (a string), which a response or error echoes.
    pub correlation: Option<String>,
}

/// What came back for one message.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A message, as read by [`read_reply`].
    Reply(Value),
    /// An HTTP answer below 400 with no body: the target took the message and sent
    /// nothing in the response.
    Empty(u16),
    /// Nothing within the wait (WebSocket, files).
    Silence,
}

/// One case's agent: its own key (so that per-sender limits and file names never mix
/// cases), its connection, and what it learned of the target.
pub struct Me {
    pub key: Keypair,
    pub id: String,
    drv: Driver,
    /// The target's agentId, once a hello told it.
    pub target: Option<String>,
    pub target_capabilities: Vec<String>,
    pub target_features: Vec<String>,
    seen_ids: HashSet<String>,
    /// The profile's `agent_id`: whom the first hello is addressed to (AGP-A22).
    addressed: Option<String>,
    /// The last signatures made, with the bytes signed ([`Me::signed`]).
    signed: std::sync::Mutex<Vec<(String, Vec<u8>)>>,
}

/// Signatures [`Me`] remembers.
const REMEMBERED_SIGNATURES: usize = 8;

/// Where each binding's endpoint lies below the target URL (target-profile.md); the
/// suite's descriptor lists them.
pub const ENDPOINT_PATHS: &[(Transport, &str)] = &[
    (Transport::Http, "agentprotocol"),
    (Transport::Ws, "agentprotocol/ws"),
];

/// A new connection to the target's endpoint of the case's binding.
pub fn endpoint_driver(ctx: &Ctx) -> Driver {
    let at = |t: Transport| {
        let path = ENDPOINT_PATHS
            .iter()
            .find(|(b, _)| *b == t)
            .map_or("", |(_, p)| *p);
        join_url(&ctx.url, path)
    };
    match ctx.transport {
        Transport::Http => Driver::Http(HttpDriver::new(
            ctx.shared.http.clone(),
            &at(Transport::Http),
        )),
        Transport::Ws => Driver::Ws(WsDriver::new(&at(Transport::Ws), &ctx.shared.tls)),
        Transport::File => Driver::File(FileDriver::new(&ctx.url)),
    }
}

impl Me {
    pub fn new(ctx: &Ctx) -> Me {
        let key = Keypair::generate();
        let id = agent_id(&key);
        let drv = endpoint_driver(ctx);
        Me {
            key,
            id,
            drv,
            target: None,
            target_capabilities: Vec::new(),
            target_features: Vec::new(),
            seen_ids: HashSet::new(),
            addressed: ctx.profile().agentprotocol.agent_id.clone(),
            signed: Default::default(),
        }
    }

    /// An unsigned message from this agent, addressed to the target when known (from
    /// its hello, else from the profile), a broadcast otherwise (AGP-A22).
    pub fn message(&self, ty: &str, payload: Value) -> Value {
        let to = match self.target.as_ref().or(self.addressed.as_ref()) {
            Some(t) => json!({"agentId": t, "broadcast": false}),
            None => json!({"broadcast": true}),
        };
        json!({
            "protocol": PROTOCOL, "id": new_id(), "timestamp": format_timestamp(time::OffsetDateTime::now_utc()),
            "from": {"agentId": self.id, "capabilities": ["agentprotocol:core", "harness:probe/v1"]},
            "to": to, "type": ty, "payload": payload,
        })
    }

    pub fn sign(&self, msg: &mut Value) {
        // Our own messages are I-JSON; a failure would leave them unsigned, which the
        // target then rejects visibly.
        if let Ok(bytes) = message::sign(msg, &self.key) {
            if let Some(sig) = msg["signature"].as_str() {
                let mut signed = self.signed.lock().unwrap_or_else(|p| p.into_inner());
                if signed.len() >= REMEMBERED_SIGNATURES {
                    signed.remove(0);
                }
                signed.push((sig.to_string(), bytes));
            }
        }
    }

    /// Whether `sig` is a signature this identity made over exactly `bytes`, among
    /// the last few it made: Ed25519 signing is deterministic, so such a signature
    /// verifies under this identity's key without verifying it again.
    pub fn signed(&self, sig: &str, bytes: &[u8]) -> bool {
        self.signed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|(s, b)| s == sig && b == bytes)
    }

    /// A signed request with every member AGP-018 lists (action, correlationId,
    /// params, and a timeout of 30 s unless `extra` gives another), so that a target
    /// that requires them never refuses the harness's own valid requests.
    pub fn request(&self, action: &str, params: Value, extra: Value) -> Value {
        let mut payload = json!({"action": action, "correlationId": format!("req-{}", &new_id()[..8]), "params": params, "timeout": 30000});
        if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        let mut m = self.message("request", payload);
        self.sign(&mut m);
        m
    }

    /// Sends `bytes` and reads what comes back within `wait`. A transport failure is
    /// returned as it is, for the caller to judge; a reply is read by
    /// [`read_reply`], which may block the case.
    pub async fn exchange(
        &mut self,
        ctx: &mut Ctx,
        bytes: Vec<u8>,
        wait: Duration,
    ) -> Step<Result<Answer, DriveError>> {
        let who = ctx.transport.to_string();
        ctx.log_frame("send", &who, &String::from_utf8_lossy(&bytes));
        let sent = json::parse(&bytes).ok().map(|t| t.to_serde());
        let asked = Asked {
            sender: Some(self.id.clone()),
            target: self.target.clone(),
            correlation: sent
                .as_ref()
                .and_then(|m| m["payload"]["correlationId"].as_str())
                .map(String::from),
        };
        let limits = Limits {
            timeout: wait,
            max_bytes: ctx.profile().timing.max_response_bytes,
        };
        let received = self.drv.exchange(bytes, limits).await;
        if let Ok(r) = &received {
            ctx.note_if_retried(r);
        }
        let (status, body) = match received {
            Err(e) => return Ok(Err(e)),
            Ok(Received::Silence) => return Ok(Ok(Answer::Silence)),
            Ok(Received::Frame(b)) => (None, b),
            Ok(Received::Http { status, body, .. }) => {
                if !(200..300).contains(&status) {
                    ctx.note(format!("HTTP status {status} (informational, AGP-A10)"));
                }
                if body.is_empty() && status < 400 {
                    ctx.log_frame("recv", &who, &format!("HTTP {status} with no body"));
                    return Ok(Ok(Answer::Empty(status)));
                }
                (Some(status), body)
            }
        };
        ctx.log_frame("recv", &who, &String::from_utf8_lossy(&body));
        let v = read_reply(ctx, &body, status, &asked, &mut self.seen_ids)?;
        Ok(Ok(Answer::Reply(v)))
    }

    /// Sends `msg` and returns what came back within `wait`; a transport failure
    /// blocks the case.
    pub async fn send_answer(
        &mut self,
        ctx: &mut Ctx,
        msg: &Value,
        wait: Duration,
    ) -> Step<Answer> {
        let bytes = serde_json::to_vec(msg).unwrap_or_default();
        match self.exchange(ctx, bytes, wait).await? {
            Ok(a) => Ok(a),
            Err(e) => Err(ctx.block(transport_finding(&e))),
        }
    }

    /// Sends `msg` as it is; returns the reply within `wait`, or `None` when nothing
    /// came (silence, or an HTTP 2xx with no body).
    pub async fn send_wait(
        &mut self,
        ctx: &mut Ctx,
        msg: &Value,
        wait: Duration,
    ) -> Step<Option<Value>> {
        Ok(match self.send_answer(ctx, msg, wait).await? {
            Answer::Reply(v) => Some(v),
            Answer::Empty(_) | Answer::Silence => None,
        })
    }

    /// Sends and requires a reply within the case timeout: nothing is a transport
    /// finding that blocks the case (silence is never a pass).
    pub async fn send(&mut self, ctx: &mut Ctx, msg: &Value) -> Step<Value> {
        let wait = case_wait(ctx);
        match self.send_answer(ctx, msg, wait).await? {
            Answer::Reply(v) => Ok(v),
            other => Err(ctx.block(no_answer(&other, wait))),
        }
    }

    /// Whether the target answers a valid echo request right now: what proves that a
    /// silence before was the target's choice. The reply, when one came.
    pub async fn probe(&mut self, ctx: &mut Ctx) -> Step<Option<Value>> {
        let echo = ctx.profile().agentprotocol.echo_action.clone();
        let req = self.request(&echo, json!({"probe": "alive"}), json!({}));
        ctx.note("liveness probe: a valid echo request on the same binding");
        let wait = case_wait(ctx);
        let bytes = serde_json::to_vec(&req).unwrap_or_default();
        Ok(match self.exchange(ctx, bytes, wait).await? {
            Ok(Answer::Reply(v)) => Some(v),
            Ok(Answer::Empty(s)) => Some(json!({"type": format!("HTTP {s} with no body")})),
            Ok(Answer::Silence) | Err(_) => None,
        })
    }

    /// Sends `msg`, a valid message the target must carry out, and returns its reply
    /// for the case to judge. A response makes it the case's control
    /// ([`Ctx::control`]); an error is a refusal of a valid message, one finding
    /// however many cases meet it ([`refused`]), which blocks the case.
    pub async fn accepted(&mut self, ctx: &mut Ctx, msg: &Value, what: &str) -> Step<Value> {
        let r = self.send(ctx, msg).await?;
        match r["type"].as_str() {
            Some("response") => ctx.control(what),
            Some("error") => return Err(ctx.block(refused(&r, what, &["AGP-018"]))),
            _ => {}
        }
        Ok(r)
    }

    /// The case's control: a valid echo request, which must be carried out before a
    /// refusal in the same case counts (a target that refuses everything looks like
    /// one that checks everything).
    pub async fn control(&mut self, ctx: &mut Ctx) -> Step<()> {
        let echo = ctx.profile().agentprotocol.echo_action.clone();
        let req = self.request(&echo, json!({"control": true}), json!({}));
        self.twin(ctx, &req, "a valid echo request (the case's control)")
            .await
    }

    /// Sends `msg`, the valid twin of what the case will send spoiled, which must be
    /// carried out: the case's control. Anything but a response blocks the case.
    pub async fn twin(&mut self, ctx: &mut Ctx, msg: &Value, what: &str) -> Step<()> {
        let r = self.accepted(ctx, msg, what).await?;
        if r["type"] != "response" {
            return Err(ctx.block(
                rules::ECHO_REQUEST_NOT_CARRIED_OUT
                    .found(format!("{what} drew {} (AGP-018)", describe(&r))),
            ));
        }
        Ok(())
    }

    /// hello → hello; learns the target's id, capabilities and features. A hello
    /// answered otherwise is the hello case's finding; the others go on with what
    /// the answer tells (AGP-A9).
    pub async fn hello(&mut self, ctx: &mut Ctx) -> Step<Value> {
        if let Some(t) = self.addressed.clone() {
            if let Some(f) = agent_id_form(&t, "the profile's [agentprotocol] agent_id").1 {
                ctx.finding(f);
            }
            ctx.note(format!(
                "the first hello is addressed to the profile's agent_id {t}"
            ));
        }
        let mut h = self.message(
            "hello",
            json!({"version": "0.1", "features": ["signed-messages"]}),
        );
        self.sign(&mut h);
        let wait = case_wait(ctx);
        let r = match self.send_answer(ctx, &h, wait).await? {
            Answer::Reply(r) => {
                if r["type"] == "error" {
                    return Err(ctx.block(refused(&r, "a valid hello", &["AGP-013"])));
                }
                if r["type"] != "hello" {
                    ctx.finding(rules::HELLO_NOT_HELLO.found(format!(
                        "hello was answered with {} (AGP-013)",
                        describe(&r)
                    )));
                }
                r
            }
            other => {
                // No hello reply is a warning if the target is alive (AGP-A9).
                let Some(r) = self.probe(ctx).await? else {
                    return Err(ctx.block(no_answer(&other, wait)));
                };
                ctx.finding(rules::HELLO_NO_REPLY.found(format!(
                    "hello drew {}, while a request is answered (AGP-013; a warning, AGP-A9)",
                    answer_text(&other)
                )));
                r
            }
        };
        let from = r["from"]["agentId"].as_str().map(String::from);
        if let (Some(t), Some(f)) = (&self.addressed, &from) {
            if !same_agent(t, f) {
                ctx.finding(
                    rules::FROM_NOT_THE_ADDRESSEE.found(format!("the hello addressed to {t} (the profile's agent_id) was answered by {f} (AGP-009)")),
                );
            }
        }
        self.target = from.or(self.target.take());
        self.target_capabilities = strings(&r["from"]["capabilities"]);
        self.target_features = strings(&r["payload"]["features"]);
        Ok(r)
    }

    /// Sends `msg`, which the target must refuse with error `code`. `Ok(Ok(reply))`
    /// when it did; `Ok(Err(what came instead))`, in the target's words, when it
    /// answered otherwise or stayed silent while it answers other requests. A silent
    /// target blocks the case; so does an error whose code cannot be read.
    pub async fn refusal(
        &mut self,
        ctx: &mut Ctx,
        msg: &Value,
        code: &str,
        what: &str,
    ) -> Step<Result<Value, Other>> {
        let wait = case_wait(ctx);
        let other = |text: String| Other {
            text,
            carried_out: false,
        };
        let r = match self.send_answer(ctx, msg, wait).await? {
            Answer::Reply(r) => r,
            Answer::Empty(s) => return Ok(Err(other(format!("HTTP {s} with no body")))),
            Answer::Silence => {
                // Silence is not a refusal unless the target is shown alive.
                return match self.probe(ctx).await? {
                    Some(_) => Ok(Err(other(format!(
                        "no reply within {} ms (the target answers other requests)",
                        wait.as_millis()
                    )))),
                    None => Err(ctx.block(no_answer(&Answer::Silence, wait))),
                };
            }
        };
        if r["type"] == "error" && !r["payload"]["code"].is_string() {
            return Err(ctx.block(no_code(&r["payload"])));
        }
        if r["type"] == "error" && r["payload"]["code"] == code {
            ctx.checked(format!("{what}: {code}"));
            return Ok(Ok(r));
        }
        Ok(Err(Other {
            text: describe(&r),
            carried_out: r["type"] == "response",
        }))
    }
}

/// What the details of a CAPABILITY_NOT_SUPPORTED error for `action` must say, as
/// the unknown-action case judges them: the requested action (when the request
/// named one as a string) and the available ones (AGP-020). `None` when they say it.
pub fn cns_details_finding(payload: &Value, action: Option<&str>) -> Option<Finding> {
    let d = &payload["details"];
    if action.is_none_or(|a| d["requested"] == a) && d["available"].is_array() {
        return None;
    }
    let named = action.map_or(String::new(), |a| format!(" {a:?}"));
    Some(rules::UNKNOWN_ACTION_DETAILS.found(format!(
            "CAPABILITY_NOT_SUPPORTED details are {}: they should name the requested action{named} and list the available ones (AGP-020)",
            shown(&d.to_string())
        )))
}

/// The core capabilities agentprotocol.md lists (AGP-016).
pub const CORE: [&str; 5] = [
    "agentprotocol:core",
    "agentprotocol:tasks",
    "agentprotocol:proofs",
    "agentprotocol:reputation",
    "agentprotocol:directory",
];

/// What a hello reply's payload and the sender's capabilities `caps` must say, as the
/// hello case judges them (AGP-007, AGP-014 to AGP-016): the findings of its rules.
/// A version or features list of another type is the payload schema's (`read_reply`).
pub fn hello_findings(r: &Value, caps: &[String]) -> Vec<Finding> {
    let mut found = Vec::new();
    let p = &r["payload"];
    match p.get("version") {
        None => found.push(rules::HELLO_VERSION.found(format!(
            "the hello payload carries no version (AGP-014): {}",
            shown(&p.to_string())
        ))),
        Some(Value::String(v)) if v != "0.1" => found.push(rules::HELLO_VERSION.found(format!(
            "the hello payload's version is {v:?}, not \"0.1\" (AGP-014)"
        ))),
        Some(_) => {}
    }
    if p.get("features").is_none() {
        found.push(rules::HELLO_FEATURES.found(format!(
            "the hello payload carries no features list (AGP-014): {}",
            shown(&p.to_string())
        )));
    }
    if caps.is_empty() {
        found.push(rules::HELLO_NO_CAPABILITIES.found(format!(
            "the target's hello lists no capability: from is {} (AGP-015)",
            shown(&r["from"].to_string())
        )));
    }
    for c in caps {
        if c.starts_with("agentprotocol:") && !CORE.contains(&c.as_str()) {
            found.push(
                rules::HELLO_CORE_CAPABILITIES
                    .found(format!("{c} is not one of the core capabilities (AGP-016)")),
            );
        }
        if !c.contains(':') {
            found.push(rules::HELLO_CAPABILITY_FORM.found(format!(
                "capability {c:?} is not of the form prefix:name (AGP-007)"
            )));
        }
    }
    if !caps.is_empty() && !caps.iter().any(|c| c == "agentprotocol:core") {
        found
            .push(rules::HELLO_NO_CORE.found(
                "the target does not advertise agentprotocol:core (informational, AGP-A20)",
            ));
    }
    found
}

/// JSON the target sent, shortened to fit one report line (unlike [`quote`], not
/// escaped again).
pub fn shown(text: &str) -> String {
    crate::finding::clipped(&text.trim().replace(['\n', '\r'], " "), 200)
}

/// What came instead of the refusal a message should draw.
#[derive(Debug, Clone)]
pub struct Other {
    /// In the target's words (see [`describe`]).
    pub text: String,
    /// The target answered with a response: it carried the message out.
    pub carried_out: bool,
}

impl std::fmt::Display for Other {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn case_wait(ctx: &Ctx) -> Duration {
    Duration::from_millis(ctx.profile().timing.case_timeout_ms)
}

/// A transport failure as the suite's transport finding (the keys `Ctx` uses).
pub fn transport_finding(e: &DriveError) -> Finding {
    let kind = e.kind();
    crate::rules::TRANSPORT.found_in("agentprotocol", kind, describe_drive_error(e))
}

/// Nothing came where a reply was needed.
fn no_answer(a: &Answer, wait: Duration) -> Finding {
    let text = match a {
        Answer::Empty(s) => format!(
            "HTTP {s} with no body: no reply message in the response (AGP-040; delivery elsewhere, AGP-A10, is not something the profile can declare)"
        ),
        _ => format!("the target did not answer within {} ms", wait.as_millis()),
    };
    crate::rules::TRANSPORT.found_in("agentprotocol", "no-answer", text)
}

fn answer_text(a: &Answer) -> String {
    match a {
        Answer::Reply(v) => describe(v),
        Answer::Empty(s) => format!("HTTP {s} with no body"),
        Answer::Silence => "no reply".into(),
    }
}

/// What a reply says, in the target's words: its type, and the code and message of
/// an error or the status of a response.
pub fn describe(r: &Value) -> String {
    let p = &r["payload"];
    match r["type"].as_str() {
        Some("error") => {
            let code = p["code"].as_str().unwrap_or("(no code)");
            match p["message"].as_str() {
                Some(m) => format!("error {code}: {}", quote(m)),
                None => format!("error {code}"),
            }
        }
        Some("response") => format!(
            "a response with status {} and result {}",
            p["status"],
            shown(&p["result"].to_string())
        ),
        Some(t) => format!("{t} {}", shown(&p.to_string())),
        None => shown(&r.to_string()),
    }
}

/// An error answering a message the harness built valid: the refusal finding,
/// keyed by the error's code and message ([`crate::rules::refusal`]).
/// `ids` are the requirements that make the refused message due an answer (AGP-013
/// for hello, AGP-018 for a request).
pub fn refused(r: &Value, what: &str, ids: &[&str]) -> Finding {
    let p = &r["payload"];
    crate::rules::refusal(
        (&crate::rules::REFUSED, "agentprotocol", ids),
        p["code"].as_str().unwrap_or_default(),
        p["message"].as_str().unwrap_or_default(),
        what,
    )
}

fn no_code(p: &Value) -> Finding {
    let text = match p.get("code") {
        None => format!("an error carries no code: {}", shown(&p.to_string())),
        Some(c) => format!("an error's code is {c}, not a string"),
    };
    rules::ERROR_PAYLOAD_CODE.found(format!("{text} (AGP-020)"))
}

/// Whether two agent ids name the same agent: equal, or the same key bytes in two
/// base64 flavours (AGP-A4 accepts both).
pub fn same_agent(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (keys::b64_decode_any(a), keys::b64_decode_any(b)) {
        (Some((x, _)), Some((y, _))) => x == y && x.len() == 32,
        _ => false,
    }
}

/// How an agent id spells its key, and the finding when that is not base64 of a
/// 32-byte Ed25519 key (AGP-005): base58 is a warning (AGP-A4), hex or did:key a
/// deviation read past, anything else a deviation with no key to verify against.
/// `whose` names where the id came from. The first value says whether a key was read.
pub fn agent_id_form(id: &str, whose: &str) -> (bool, Option<Finding>) {
    match keys::candidate_keys(id) {
        Err(_) => (
            false,
            Some(rules::AGENT_ID_ENCODING.found(format!(
                "{whose} {} is not an Ed25519 public key in base64 (AGP-005)",
                quote(id)
            ))),
        ),
        Ok(c) if c.iter().any(|(_, f)| matches!(f, KeyForm::RawBase64(_))) => (true, None),
        Ok(c) if c.iter().all(|(_, f)| *f == KeyForm::RawBase58) => (
            true,
            Some(rules::AGENT_ID_BASE58.found(format!(
                "{whose} {} is a key in base58, accepted as a last resort (AGP-005; a warning, AGP-A4)",
                quote(id)
            ))),
        ),
        Ok(c) => (
            true,
            Some(rules::AGENT_ID_ENCODING.found(format!(
                    "{whose} {} is a {}, not base64 (AGP-005); read as such to go on",
                    quote(id),
                    c.first().map(|(_, f)| f.to_string()).unwrap_or_default()
                ),
            )),
        ),
    }
}

/// Whether `sig` (base64 in any flavour) verifies over `bytes` with a key `id` names.
fn verifies(id: &str, sig: &str, bytes: &[u8]) -> bool {
    let Ok((sig, _)) = keys::decode_signature(sig) else {
        return false;
    };
    keys::candidate_keys(id)
        .map(|c| c.iter().any(|(k, _)| keys::verify(k, bytes, &sig)))
        .unwrap_or(false)
}

/// Members some implementations use for `correlationId`.
const CORRELATION_SPELLINGS: [&str; 5] = [
    "correlation_id",
    "correlationID",
    "CorrelationId",
    "correlation-id",
    "correlation",
];

/// The table code a respelled code means (`invalid_message`, `InvalidMessage`).
fn table_code(code: &str) -> Option<&'static str> {
    let mut norm = String::new();
    let mut prev_lower = false;
    for c in code.trim().chars() {
        if c.is_ascii_uppercase() && prev_lower {
            norm.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        norm.push(match c {
            '-' | ' ' | '.' => '_',
            c => c.to_ascii_uppercase(),
        });
    }
    CODES.iter().copied().find(|k| *k == norm)
}

/// One reply as it is read: the bytes and their JSON, what it answers, and the
/// reply as the harness reads it on (`v`: capabilities as a list, the payload as an
/// object, correlationId where it belongs).
struct Reading<'a> {
    ctx: &'a mut Ctx,
    body: &'a [u8],
    raw: Value,
    /// `raw` as an object (a message always is one).
    obj: Map<String, Value>,
    ty: String,
    /// "response" or "<type> reply", for the findings' words.
    what: String,
    asked: &'a Asked,
    seen: &'a mut HashSet<String>,
    v: Value,
    from_id: Option<String>,
    /// Whether from.agentId gave a key to verify the signature with.
    key_read: bool,
}

impl Reading<'_> {
    /// A finding of a rule the hello case owns.
    fn hello_owned(&mut self, f: Finding) {
        self.ctx.finding(f);
    }
}

/// One check of a reply.
type Check = fn(&mut Reading);

/// The checks every reply is held to, in the order they read it: each gives the
/// findings of its rules (rules.rs) and may read the reply on as the target meant it.
const CHECKS: &[(&str, Check)] = &[
    ("envelope", check_envelope),
    ("id", check_id),
    ("timestamp", check_timestamp),
    ("from", check_from),
    ("capabilities", check_capabilities),
    ("to", check_to),
    ("signature", check_signature),
    ("payload", check_payload),
];

/// Reads one target reply (`status`: the HTTP status, when HTTP carried it). Every
/// deviation becomes a finding in `ctx`; the reply comes back as the target meant it.
/// A reply that is not JSON, not a message, or has no type blocks the case.
pub fn read_reply(
    ctx: &mut Ctx,
    body: &[u8],
    status: Option<u16>,
    asked: &Asked,
    seen: &mut HashSet<String>,
) -> Step<Value> {
    let (raw, ty) = message_of(ctx, body, status)?;
    let what = match ty.as_str() {
        "response" => "response".to_string(),
        t => format!("{t} reply"),
    };
    let mut r = Reading {
        ctx,
        body,
        v: raw.clone(),
        obj: raw.as_object().cloned().unwrap_or_default(),
        raw,
        ty,
        what,
        asked,
        seen,
        from_id: None,
        key_read: false,
    };
    for (_, check) in CHECKS {
        check(&mut r);
    }
    Ok(r.v)
}

/// A reply that is no message at all: an error-like one belongs to the invalid-message
/// case (an error is a message of type error), any other to hello.
fn not_a_message(status: Option<u16>, text: &str, error_like: bool, why: String) -> Finding {
    let at = status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
    if error_like {
        rules::ERROR_NOT_A_MESSAGE.found(format!("{at}{why}: {} (an error is a message of type error, AGP-020; the status is not judged, AGP-A10)", shown(text)))
    } else {
        rules::REPLY_NOT_A_MESSAGE.found(format!("{at}{why}: {} (AGP-001)", shown(text)))
    }
}

/// The reply's JSON and type, or the finding that blocks the case: not JSON, not an
/// object, not a message, no type.
fn message_of(ctx: &mut Ctx, body: &[u8], status: Option<u16>) -> Step<(Value, String)> {
    let text = String::from_utf8_lossy(body);
    let errorish_status = status.is_some_and(|s| s >= 400);
    let at = status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
    let raw = match json::parse(body) {
        Ok(t) => t.to_serde(),
        Err(e) if errorish_status || body.is_empty() => {
            let why = format!("the reply is not an agentprotocol message ({e})");
            return Err(ctx.block(not_a_message(status, &text, true, why)));
        }
        Err(e) => {
            return Err(ctx.block(rules::REPLY_NOT_JSON.found(format!(
                "{at}the reply is not JSON ({e}): {} (AGP-001)",
                shown(&text)
            ))))
        }
    };
    let Some(obj) = raw.as_object() else {
        let why = "the reply is not a JSON object".to_string();
        return Err(ctx.block(not_a_message(status, &text, errorish_status, why)));
    };
    let looks_like_message = obj.get("type").is_some_and(Value::is_string)
        || ["protocol", "from", "payload", "signature"]
            .iter()
            .filter(|k| obj.contains_key(**k))
            .count()
            >= 2;
    if !looks_like_message {
        let error_like = errorish_status
            || ["detail", "error", "errors", "message", "code"]
                .iter()
                .any(|k| obj.contains_key(*k));
        let why = "the reply is not an agentprotocol message".to_string();
        return Err(ctx.block(not_a_message(status, &text, error_like, why)));
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.clone(),
        other => {
            let what = match other {
                None => "has no `type`".to_string(),
                Some(t) => format!("has type {t}, not a string"),
            };
            return Err(ctx.block(rules::ENVELOPE_TYPE.found(format!(
                "{at}the reply {what}: {} (AGP-001, AGP-010)",
                shown(&text)
            ))));
        }
    };
    Ok((raw, ty))
}

/// The envelope's members (AGP-001, AGP-A6: target output carries all of it), its
/// type (AGP-010) and protocol tag (AGP-002).
fn check_envelope(r: &mut Reading) {
    let what = r.what.clone();
    for m in ["protocol", "id", "timestamp", "from", "payload"] {
        if !r.obj.contains_key(m) {
            let summary = format!("the {what} has no `{m}` (AGP-001, AGP-A6)");
            r.hello_owned(rules::ENVELOPE.found_as(m, summary));
        }
    }
    if !TYPES.contains(&r.ty.as_str()) {
        let summary = format!(
            "a reply has type {:?}, not one of {TYPES:?} (AGP-010)",
            r.ty
        );
        r.hello_owned(rules::TYPE.found(summary));
    }
    if let Some(p) = r.obj.get("protocol").filter(|p| *p != PROTOCOL) {
        let summary = format!("the {what} has protocol {p}, not {PROTOCOL:?} (AGP-002)");
        r.hello_owned(rules::PROTOCOL.found(summary));
    }
}

/// The id: a UUID (AGP-003), never one the target used before.
fn check_id(r: &mut Reading) {
    let what = &r.what;
    let f = |summary: String| rules::ID_NOT_UUID.found(summary);
    match r.obj.get("id") {
        Some(Value::String(id)) => {
            if !is_uuid(id) {
                r.ctx
                    .finding(f(format!("the {what} has id {id:?}, not a UUID (AGP-003)")));
            }
            if !r.seen.insert(id.clone()) {
                r.ctx.finding(
                    rules::ID_REUSED.found(format!("reply id {id:?} was used twice (AGP-003)")),
                );
            }
        }
        Some(other) => r.ctx.finding(f(format!(
            "the {what} has id {other}, not a UUID string (AGP-003)"
        ))),
        None => {}
    }
}

/// The timestamp: an ISO 8601 date-time (AGP-004); neither UTC nor freshness is
/// required (AGP-A12), so those are notes.
fn check_timestamp(r: &mut Reading) {
    let Some(t) = r.obj.get("timestamp").cloned() else {
        return;
    };
    let parsed = t.as_str().and_then(|s| {
        time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
    });
    let Some(when) = parsed else {
        let summary = format!(
            "the {} has timestamp {t}, not an ISO 8601 date-time (AGP-004)",
            r.what
        );
        return r.hello_owned(rules::TIMESTAMP.found(summary));
    };
    if when.offset() != time::UtcOffset::UTC {
        r.ctx.note(format!(
            "reply timestamp {t} is not in UTC (informational, AGP-A12)"
        ));
    }
    let skew = (r.ctx.clock() - when).whole_seconds().abs();
    if skew > 60 {
        r.ctx.note(format!(
            "reply timestamp is {skew} s off the harness clock (informational, AGP-A12)"
        ));
    }
}

/// from: an object naming the sender's key (AGP-005), the agent that said hello
/// (AGP-009).
fn check_from(r: &mut Reading) {
    let what = r.what.clone();
    r.from_id = r
        .obj
        .get("from")
        .and_then(|f| f.get("agentId"))
        .and_then(Value::as_str)
        .map(String::from);
    match (r.obj.get("from").cloned(), r.from_id.clone()) {
        (Some(Value::Object(_)), Some(id)) => {
            let (read, f) = agent_id_form(&id, "from.agentId");
            r.key_read = read;
            if let Some(f) = f {
                r.ctx.finding(f);
            }
        }
        (Some(Value::Object(from)), None) => {
            let summary = format!(
                "the {what}'s `from` names no agentId: {} (AGP-005)",
                Value::Object(from)
            );
            r.hello_owned(rules::ENVELOPE_FROM_AGENTID.found(summary));
        }
        (Some(f), _) => {
            let summary = format!(
                "the {what}'s `from` is {}, not an object (AGP-001)",
                shown(&f.to_string())
            );
            r.hello_owned(rules::ENVELOPE.found_as("from", summary));
        }
        (None, _) => {}
    }
    let asked = r.asked;
    if let (Some(t), Some(f)) = (&asked.target, r.from_id.clone()) {
        if !same_agent(t, &f) {
            let summary =
                format!("the {what} comes from {f}, not the agent that said hello ({t}) (AGP-009)");
            r.hello_owned(rules::FROM_NOT_THE_TARGET.found(summary));
        }
    }
}

/// from.capabilities: a list of capability URIs (AGP-007), read on as a list
/// whatever the target wrote; missing outside hello is a warning (AGP-A6).
fn check_capabilities(r: &mut Reading) {
    let Some(Value::Object(from)) = r.v.get("from") else {
        return;
    };
    let list: Option<Vec<String>> = match from.get("capabilities").cloned() {
        None => {
            if r.ty != "hello" {
                r.ctx.finding(rules::CAPABILITIES_MISSING.found(
                    "replies carry no from.capabilities (AGP-007; a warning outside hello, AGP-A6)",
                ));
            }
            None
        }
        Some(Value::Array(a)) => {
            if !a.iter().all(Value::is_string) {
                let summary = format!(
                    "from.capabilities holds more than strings: {} (AGP-007)",
                    shown(&Value::Array(a.clone()).to_string())
                );
                r.hello_owned(rules::CAPABILITIES_NOT_STRINGS.found(summary));
            }
            Some(
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect(),
            )
        }
        Some(other) => {
            let summary = format!(
                "from.capabilities is {}, not a list of capability URIs (AGP-007)",
                shown(&other.to_string())
            );
            r.hello_owned(rules::CAPABILITIES_NOT_A_LIST.found(summary));
            Some(capability_list(&other))
        }
    };
    if let (Some(list), Some(Value::Object(from))) = (list, r.v.get_mut("from")) {
        from.insert("capabilities".into(), json!(list));
    }
}

/// The capabilities a map (the keys not switched off) or a comma or space separated
/// string names.
fn capability_list(caps: &Value) -> Vec<String> {
    match caps {
        Value::Object(o) => o
            .iter()
            .filter(|(_, x)| !matches!(x, Value::Bool(false) | Value::Null))
            .map(|(k, _)| k.clone())
            .collect(),
        Value::String(s) => s
            .split([',', ' '])
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// to: addressed to the sender (AGP-008, AGP-009); missing is a warning (AGP-A22).
fn check_to(r: &mut Reading) {
    let what = r.what.clone();
    let to = match r.obj.get("to").cloned() {
        Some(Value::Object(to)) => to,
        None => {
            return r.ctx.finding(
                rules::ENVELOPE_TO
                    .found(format!("the {what} carries no `to` (a warning, AGP-A22)")),
            )
        }
        Some(other) => {
            let summary = format!(
                "the {what}'s `to` is {}, not an object (AGP-008)",
                shown(&other.to_string())
            );
            return r.hello_owned(rules::TO.found(summary));
        }
    };
    match to.get("agentId") {
        Some(Value::String(t)) => {
            let asked = r.asked;
            if let Some(s) = asked.sender.as_ref().filter(|s| !same_agent(t, s)) {
                let summary = format!(
                    "the {what} is addressed to {t}, not to the sender {s} (AGP-008, AGP-009)"
                );
                r.hello_owned(rules::TO_NOT_THE_SENDER.found(summary));
            }
        }
        None => r.ctx.finding(rules::ENVELOPE_TO.found(format!(
            "the {what}'s `to` names no agentId (a warning, AGP-A22)"
        ))),
        Some(other) => {
            let summary = format!("the {what}'s to.agentId is {other}, not a string (AGP-008)");
            r.hello_owned(rules::TO_AGENTID.found(summary));
        }
    }
    check_broadcast(r, to.get("broadcast"));
}

/// to.broadcast: only typed, its meaning undefined (AGP-A13).
fn check_broadcast(r: &mut Reading, broadcast: Option<&Value>) {
    let what = r.what.clone();
    match broadcast {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => r.ctx.finding(rules::TO_BROADCAST_TRUE.found(format!(
            "the {what} has to.broadcast true (informational: its meaning is undefined, AGP-A13)"
        ))),
        Some(other) => {
            let summary = format!("the {what}'s to.broadcast is {other}, not a boolean (AGP-008)");
            r.hello_owned(rules::TO_BROADCAST.found(summary));
        }
    }
}

/// The signature: base64 in any flavour (AGP-012, AGP-A4), present (AGP-030), and
/// verifying over the RFC 8785 form with from.agentId's key (AGP-031).
fn check_signature(r: &mut Reading) {
    let what = r.what.clone();
    let s = match r.obj.get("signature").cloned() {
        None | Some(Value::Null) => return r.ctx.finding(unsigned(&r.ty)),
        Some(Value::String(s)) if s.is_empty() => return r.ctx.finding(unsigned(&r.ty)),
        Some(Value::String(s)) => s,
        Some(other) => {
            let summary = format!("the {what}'s signature is {other}, not a string (AGP-012)");
            return r.hello_owned(rules::SIGNATURE_ENCODING.found(summary));
        }
    };
    let sig = if keys::decode_signature(&s).is_ok() {
        Some(s.clone())
    } else if s.len() == 128 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        let summary =
            format!("the {what}'s signature is hex, not base64 (AGP-012); read as such to go on");
        r.hello_owned(rules::SIGNATURE_ENCODING.found(summary));
        hex(&s).map(|b| keys::b64std(&b))
    } else {
        let why = keys::decode_signature(&s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let summary = format!(
            "the {what}'s signature {} is not a base64 Ed25519 signature: {why} (AGP-012)",
            quote(&s)
        );
        r.hello_owned(rules::SIGNATURE_ENCODING.found(summary));
        None
    };
    if let (Some(sig), Some(id), true) = (sig, r.from_id.clone(), r.key_read) {
        signature_verdict(r.ctx, r.body, &r.raw, &id, &sig, &what);
    }
}

/// The payload: an object (AGP-011), and its members by type.
fn check_payload(r: &mut Reading) {
    if !r.v.get("payload").is_none_or(Value::is_object) {
        let summary = format!(
            "the {}'s payload is {}, not an object (AGP-011)",
            r.what,
            shown(&r.v["payload"].to_string())
        );
        r.hello_owned(rules::PAYLOAD.found(summary));
    }
    if !r.v["payload"].is_object() {
        r.v["payload"] = json!({});
    }
    let top_level_corr = r.obj.get("correlationId").cloned();
    if let Some(Value::Object(p)) = r.v.get_mut("payload") {
        read_payload(r.ctx, p, &r.ty, &r.what, r.asked, top_level_corr);
    }
}

fn unsigned(ty: &str) -> Finding {
    if ty == "hello" {
        rules::SIGNATURE_MISSING.found("the hello reply carries no signature (AGP-001: target output carries the full envelope, AGP-A6)")
    } else {
        rules::SIGNATURE_MISSING.found(format!(
            "a {ty} reply carries no signature (AGP-030; a warning, AGP-A3)"
        ))
    }
}

fn hex(s: &str) -> Option<Vec<u8>> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// Verifies a reply's signature over its RFC 8785 form without `signature`; when it
/// does not verify, says which other signing input it verifies over, if any.
fn signature_verdict(ctx: &mut Ctx, body: &[u8], raw: &Value, id: &str, sig: &str, what: &str) {
    let canonical = json::parse(body)
        .map_err(|e| e.to_string())
        .and_then(|t| message::signing_bytes(t).map_err(|e| e.to_string()));
    let why = match canonical {
        Ok(c) if verifies(id, sig, &c) => {
            ctx.checked("reply signature verifies over its RFC 8785 form");
            return;
        }
        Ok(_) => {
            let mut stripped = raw.clone();
            if let Some(o) = stripped.as_object_mut() {
                o.remove("signature");
            }
            let forms = [
                ("Python's json.dumps(sort_keys=True) with its default separators \", \" and \": \"", message::python_sorted_json(&stripped, false)),
                ("Python's json.dumps(sort_keys=True, separators=(\",\", \":\")), non-ASCII escaped", message::python_sorted_json(&stripped, true)),
                ("the message as the target wrote it, key order kept", serde_json::to_string(&stripped).unwrap_or_default()),
            ];
            match forms.iter().find(|(_, text)| verifies(id, sig, text.as_bytes())) {
                Some((name, _)) => format!("it verifies over {name}, not over the RFC 8785 form"),
                None => "it verifies over neither the RFC 8785 form nor a sorted-key JSON.stringify or json.dumps form".into(),
            }
        }
        Err(e) => format!("the reply has no canonical form: {e}"),
    };
    ctx.finding(rules::SIGNATURE_MISMATCH.found(format!(
        "the {what}'s signature does not verify with from.agentId's key: {why} (AGP-005, AGP-031)"
    )));
}

/// The payload of a reply: correlationId where the target put it (AGP-019, AGP-020,
/// AGP-A7), an error's code and message (AGP-020, AGP-022), then the payload schema
/// of the type for the rest.
fn read_payload(
    ctx: &mut Ctx,
    p: &mut Map<String, Value>,
    ty: &str,
    what: &str,
    asked: &Asked,
    top_level_corr: Option<Value>,
) {
    read_correlation(ctx, p, ty, what, asked, top_level_corr);
    if ty == "error" {
        read_error_payload(ctx, p);
    }
    if ty == "response" && !p.get("status").is_some_and(Value::is_string) {
        ctx.finding(rules::RESPONSE_PAYLOAD_STATUS.found(format!(
                    "a response's status is {}, not a string (AGP-019)",
                    p.get("status")
                        .map(|s| s.to_string())
                        .unwrap_or("missing".into())
                )));
    }
    payload_schema(ctx, p, ty);
    if ty == "hello" {
        // Features as a list, however the target wrote them (the schema finding
        // reports another shape).
        match p.get("features").cloned() {
            Some(Value::String(s)) => {
                let list: Vec<&str> = s.split([',', ' ']).filter(|x| !x.is_empty()).collect();
                p.insert("features".into(), json!(list));
            }
            Some(Value::Object(o)) => {
                let list: Vec<&String> = o.keys().collect();
                p.insert("features".into(), json!(list));
            }
            _ => {}
        }
    }
}

/// correlationId: where the target put it (renamed, or at the top level), and the
/// request's, echoed in a response or an error (AGP-019, AGP-020, AGP-A7).
fn read_correlation(
    ctx: &mut Ctx,
    p: &mut Map<String, Value>,
    ty: &str,
    what: &str,
    asked: &Asked,
    top_level_corr: Option<Value>,
) {
    if !p.contains_key("correlationId") {
        if let Some((name, val)) = CORRELATION_SPELLINGS
            .iter()
            .find_map(|n| p.get(*n).map(|x| (*n, x.clone())))
        {
            ctx.finding(rules::CORRELATIONID_RENAMED.found(format!(
                "the {what} spells correlationId as `{name}` ({val}) (AGP-019, AGP-020)"
            )));
            p.insert("correlationId".into(), val);
        } else if let Some(val) = top_level_corr {
            ctx.finding(
                rules::CORRELATIONID_MISPLACED.found(format!("the {what} carries correlationId {val} at the top level, not in its payload (AGP-019, AGP-020)")),
            );
            p.insert("correlationId".into(), val);
        }
    }
    if let Some(c) = &asked.correlation {
        if (ty == "response" || ty == "error") && p.get("correlationId") != Some(&json!(c)) {
            let carried = match p.get("correlationId") {
                Some(x) => format!("correlationId {x}"),
                None => "no correlationId".into(),
            };
            let f = if ty == "response" {
                rules::CORRELATIONID_NOT_ECHOED.found(format!(
                    "a response carries {carried}, not the request's {c:?} (AGP-019, AGP-A7)"
                ))
            } else {
                rules::CORRELATIONID_NOT_ECHOED_IN_ERRORS.found(format!(
                    "an error carries {carried}, not the request's {c:?} (AGP-020, AGP-A7)"
                ))
            };
            ctx.finding(f);
        }
    }
}

/// The payload schema of the type, for what the checks above leave.
fn payload_schema(ctx: &mut Ctx, p: &Map<String, Value>, ty: &str) {
    let schema = match ty {
        "hello" => Some(("agentprotocol/hello-payload", &rules::SCHEMA_HELLO_PAYLOAD)),
        "response" => Some((
            "agentprotocol/response-payload",
            &rules::SCHEMA_RESPONSE_PAYLOAD,
        )),
        "error" => Some(("agentprotocol/error-payload", &rules::SCHEMA_ERROR_PAYLOAD)),
        _ => None,
    };
    if let Some((name, family)) = schema {
        let value = Value::Object(p.clone());
        // Members judged above are left out: one deviation, one finding.
        let judged = ["/", "/correlationId", "/code", "/message", "/status"];
        for f in schema_findings(&ctx.shared.schemas, name, (rules::RULES, family), &value) {
            if judged.contains(&f.detail()) {
                continue;
            }
            ctx.finding(f);
        }
    }
}

/// An error payload: code and message where the target put them, the code's
/// spelling against the table (a warning otherwise, AGP-022).
fn read_error_payload(ctx: &mut Ctx, p: &mut Map<String, Value>) {
    if !p.contains_key("code") {
        match p.get("error").cloned() {
            Some(Value::Object(e)) => {
                ctx.finding(rules::ERROR_PAYLOAD_NESTED.found(format!(
                    "the error payload nests its members under payload.error: {} (AGP-020)",
                    shown(&Value::Object(e.clone()).to_string())
                )));
                for (k, x) in e {
                    p.entry(k).or_insert(x);
                }
            }
            Some(Value::String(code)) => {
                ctx.finding(rules::ERROR_PAYLOAD_NESTED.found(format!(
                    "the error payload names its code in `error` ({code:?}), not `code` (AGP-020)"
                )));
                p.insert("code".into(), json!(code));
            }
            _ => {}
        }
    }
    let message = p.get("message").and_then(Value::as_str).map(String::from);
    match p.get("code").cloned() {
        Some(Value::String(code)) if CODES.contains(&code.as_str()) => {}
        Some(Value::String(code)) => {
            let said = message
                .as_deref()
                .map(|m| format!(": {}", quote(m)))
                .unwrap_or_default();
            match table_code(&code) {
                Some(known) => {
                    ctx.finding(
                        rules::ERROR_CODE_SPELLING.found(format!("error code {code:?} is {known} spelled another way (AGP-022, a warning){said}")),
                    );
                    p.insert("code".into(), json!(known));
                }
                None => ctx.finding(unknown_code(&code, message.as_deref())),
            }
        }
        _ => ctx.finding(no_code(&Value::Object(p.clone()))),
    }
    if !p.get("message").is_some_and(Value::is_string) {
        ctx.finding(rules::ERROR_PAYLOAD_MESSAGE.found(format!(
                    "an error's message is {}, not a string (AGP-020)",
                    p.get("message")
                        .map(|m| m.to_string())
                        .unwrap_or("missing".into())
                )));
    }
}

/// The verdict on an error code outside agentprotocol.md's table: a warning
/// (AGP-022: "any other code is a warning"). The live fuzzer takes the same verdict.
pub fn unknown_code(code: &str, message: Option<&str>) -> Finding {
    let said = message
        .map(|m| format!(": {}", quote(m)))
        .unwrap_or_default();
    rules::ERROR_CODE_UNKNOWN.found(format!(
        "error code {code:?} is not in agentprotocol.md's table (AGP-022, a warning){said}"
    ))
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `agentconform sign --suite agentprotocol`: sets `from.agentId` to the key's id and
/// signs over RFC 8785 without `signature`; returns the canonical bytes.
pub fn sign_message(
    mut env: serde_json::Value,
    key: &reference_impl::wire::keys::Keypair,
) -> Result<Vec<u8>, String> {
    use reference_impl::agentprotocol::message as ap;
    if !env.get("from").is_some_and(|s| s.is_object()) {
        env["from"] = serde_json::json!({});
    }
    env["from"]["agentId"] = serde_json::json!(ap::agent_id(key));
    ap::sign(&mut env, key).map_err(|e| e.to_string())?;
    reference_impl::wire::jcs::canonicalize_serde(&env).map_err(|e| e.to_string())
}

/// `agentconform verify --suite agentprotocol`: the key, the canonical bytes, the
/// verdict.
pub fn explain_verify(bytes: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<bool> {
    use reference_impl::agentprotocol::message as ap;
    let tree = match reference_impl::wire::json::parse(bytes) {
        Ok(t) => t,
        Err(e) => {
            writeln!(out, "INVALID: not JSON: {e}")?;
            return Ok(false);
        }
    };
    let id = tree
        .get("from")
        .and_then(|f| f.get("agentId"))
        .and_then(|a| a.as_str())
        .unwrap_or("")
        .to_string();
    writeln!(out, "from.agentId: {id}")?;
    match ap::signing_bytes(tree.clone()) {
        Ok(c) => writeln!(
            out,
            "canonical bytes (RFC 8785, signature removed): {}",
            String::from_utf8_lossy(&c)
        )?,
        Err(e) => writeln!(out, "cannot canonicalize: {e}")?,
    }
    match ap::verify_tree(tree) {
        Ok(()) => {
            writeln!(
                out,
                "VALID: signature verifies with the key of from.agentId"
            )?;
            Ok(true)
        }
        Err(e) => {
            writeln!(out, "INVALID: {e}")?;
            Ok(false)
        }
    }
}

/// Judges a recorded reply again with [`read_reply`] (an exported vector's offline
/// run; whom it answered is not recorded, so the addressee is not judged).
pub fn reread(ctx: &mut Ctx, r: &crate::case::Recorded) {
    let _ = read_reply(
        ctx,
        &r.body,
        r.http_status,
        &Asked::default(),
        &mut HashSet::new(),
    );
}

// ---------------------------------------------------------------------------
// The client role: the harness as the peer a requester under test talks to.

/// How the harness, as the peer, answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerPlan {
    /// The capabilities its hello lists.
    pub capabilities: &'static [&'static str],
    /// The response echoes another correlationId.
    pub wrong_correlation: bool,
    /// The response's signature does not verify.
    pub bad_signature: bool,
    /// How the response is spoiled beyond those.
    pub spoil: PeerSpoil,
}

/// A response a requester must refuse or report, for a client case (the client
/// side of a server fault).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerSpoil {
    None,
    /// No signature member (`unsigned-replies`).
    Unsigned,
    /// Signed over Python's `json.dumps(sort_keys=True)` (`python-json-signing`).
    PythonSigned,
    /// The correlation id spelled `correlation_id` (`correlation-id-snake-case`).
    SnakeCorrelation,
    /// Addressed to another agent (AGP-009).
    Misaddressed,
    /// An error with this code (`unknown-action-internal-error`,
    /// `refuse-signed-requests`, `timeout-always`; AGP-020, AGP-022).
    Error(&'static str),
    /// An error whose code, message and details sit under payload.error
    /// (`error-payload-nested`).
    ErrorNested,
}

/// The requests agentprotocol.md defines for an agent's HTTP binding: POST
/// `/agentprotocol`.
pub fn defined(method: &str, path: &str) -> bool {
    method == "POST" && path.trim_end_matches('/') == "/agentprotocol"
}

/// The requests a real client may send through the proxy: agentprotocol.md's HTTP binding is one POST of a message to
/// the agent's endpoint, and the proxy's URL may stand for that endpoint or for the
/// base below which it lies, so any POST is a message; any other method is outside
/// the spec.
pub fn proxied(method: &str, _path: &str) -> bool {
    method == "POST"
}

/// The peer's answers, signed with `key`: a hello for a hello, a response for a
/// request (its params as the result), INVALID_MESSAGE otherwise.
pub fn peer(key: Keypair, plan: PeerPlan) -> crate::counterparty::Answer {
    Box::new(move |_path: &str, bytes: &[u8]| {
        let msg: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let corr = msg["payload"]["correlationId"].clone();
        let (ty, payload) = match msg["type"].as_str() {
            Some("hello") => (
                "hello",
                json!({"version": "0.1", "features": ["signed-messages"]}),
            ),
            Some("request") => {
                let corr = if plan.wrong_correlation {
                    json!(format!("not-{}", new_id()))
                } else {
                    corr
                };
                match plan.spoil {
                    PeerSpoil::Error(code) => (
                        "error",
                        json!({"correlationId": corr, "code": code, "message": "refused by the harness on purpose", "details": {}}),
                    ),
                    PeerSpoil::ErrorNested => (
                        "error",
                        json!({"error": {"correlationId": corr, "code": "INTERNAL_ERROR", "message": "refused by the harness on purpose", "details": {}}}),
                    ),
                    PeerSpoil::SnakeCorrelation => (
                        "response",
                        json!({"correlation_id": corr, "status": "success", "result": msg["payload"]["params"]}),
                    ),
                    _ => (
                        "response",
                        json!({"correlationId": corr, "status": "success", "result": msg["payload"]["params"]}),
                    ),
                }
            }
            _ => (
                "error",
                json!({"correlationId": corr, "code": "INVALID_MESSAGE", "message": "not a hello or request", "details": {}}),
            ),
        };
        let mut m = json!({
            "protocol": PROTOCOL, "id": new_id(),
            "timestamp": format_timestamp(time::OffsetDateTime::now_utc()),
            "from": {"agentId": agent_id(&key), "capabilities": plan.capabilities},
            "to": {"agentId": msg["from"]["agentId"], "broadcast": false},
            "type": ty, "payload": payload,
        });
        let answers_request = msg["type"] == "request";
        if answers_request && plan.spoil == PeerSpoil::Misaddressed {
            m["to"]["agentId"] = json!(agent_id(&Keypair::generate()));
        }
        let _ = message::sign(&mut m, &key);
        if plan.bad_signature && ty == "response" {
            let spoiled = crate::script::spoil(m["signature"].as_str().unwrap_or_default(), 3);
            m["signature"] = json!(spoiled);
        }
        if answers_request {
            match plan.spoil {
                PeerSpoil::Unsigned => {
                    if let Some(o) = m.as_object_mut() {
                        o.remove("signature");
                    }
                }
                PeerSpoil::PythonSigned => {
                    if let Some(o) = m.as_object_mut() {
                        o.remove("signature");
                    }
                    let text = message::python_sorted_json(&m, false);
                    m["signature"] = json!(keys::b64std(&key.sign(text.as_bytes()).to_bytes()));
                }
                _ => {}
            }
        }
        (200, m.to_string().into_bytes())
    })
}

/// Judges a message the client under test sent with the rules of [`read_reply`]
/// (members, protocol, id, timestamp, signature, the type's payload).
pub fn check_client_message(ctx: &mut Ctx, bytes: &[u8]) -> Step<Value> {
    let before = ctx.findings().len();
    let read = read_reply(ctx, bytes, None, &Asked::default(), &mut HashSet::new());
    ctx.reword_since(before, "client's message");
    let m = read?;
    unique_across_run(ctx, &m, bytes);
    Ok(m)
}

/// A client's message id, and a request's correlationId, that another message of
/// the client carried in the whole run ([`Ctx::reused`]): a message id is unique
/// to its message (AGP-003); a correlationId matches one request's answer
/// (AGP-019; its reuse is a warning, the spec silent on duplicates, AGP-A7).
fn unique_across_run(ctx: &mut Ctx, m: &Value, bytes: &[u8]) {
    if let Some(id) = m["id"].as_str() {
        if let Some(first) = ctx.reused("message id", id, bytes) {
            ctx.finding(rules::CLIENT_ID_REUSED.found(format!(
                "the client's {} message reuses id {id:?}, which {first} carried first in this run",
                m["type"]
            )));
        }
    }
    if m["type"] != "request" {
        return;
    }
    if let Some(c) = m["payload"]["correlationId"].as_str() {
        if let Some(first) = ctx.reused("correlationId", c, bytes) {
            ctx.finding(
                rules::CLIENT_CORRELATION_REUSED.found(format!(
                        "the client's request reuses correlationId {c:?}, which {first} carried first in this run: an answer to one cannot be told from an answer to the other"
                    )),
            );
        }
    }
}

/// A message a real client sent through `agentconform proxy`: every rule of
/// [`check_client_message`] (HTTP requests with a body), and an id no earlier
/// message through the proxy carried (AGP-003).
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, h: &crate::exchange::History) {
    if x.received.is_empty() {
        return;
    }
    let Ok(m) = check_client_message(ctx, &x.received) else {
        return;
    };
    let Some(id) = m["id"].as_str() else { return };
    if let Some(who) = h.id_used(id) {
        ctx.finding(rules::CLIENT_ID_REUSED.found(format!(
            "the client's {} message reuses id {id:?}, which {who}'s earlier message carried",
            m["type"]
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respelled_codes_are_read_as_the_table_code() {
        assert_eq!(table_code("invalid_message"), Some("INVALID_MESSAGE"));
        assert_eq!(table_code("InvalidSignature"), Some("INVALID_SIGNATURE"));
        assert_eq!(table_code("rate-limited"), Some("RATE_LIMITED"));
        assert_eq!(table_code("NOT_FOUND"), None);
    }

    #[test]
    fn unknown_codes_warn() {
        let f = unknown_code("NOT_FOUND", Some("no"));
        assert_eq!(f.outcome, crate::finding::Verdict::Warn);
    }

    #[test]
    fn agent_id_forms() {
        let k = Keypair::from_seed(&[7; 32]);
        assert_eq!(agent_id_form(&agent_id(&k), "x"), (true, None));
        let url = keys::b64url(k.public().as_bytes());
        assert_eq!(agent_id_form(&url, "x"), (true, None));
        let hex: String = k
            .public()
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let (read, f) = agent_id_form(&hex, "x");
        assert!(read && f.is_some_and(|f| f.outcome == crate::finding::Verdict::Fail));
        assert!(!agent_id_form("nope", "x").0);
        assert!(same_agent(&agent_id(&k), &url));
    }
}
