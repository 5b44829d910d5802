//! The agentprotocol reference agent, transport-free: [`ApAgent::handle`] takes one
//! message and returns the reply, if any (a notify gets none).
//!
//! Checks, in order: JSON and shape (INVALID_MESSAGE), signature (INVALID_SIGNATURE;
//! the agent advertises `signed-messages`, so unsigned messages are refused),
//! `to.agentId` (UNKNOWN_AGENT), the per-sender rate (RATE_LIMITED), then the type:
//! hello → hello; request `echo` → response with result = params; request `delay`
//! `{ms}` → response after ms, or TIMEOUT when the request's timeout is shorter;
//! another action → CAPABILITY_NOT_SUPPORTED with `details.available`.
//!
//! [`ApAgent::handle_reply`] also says whom a reply is for and the HTTP status it
//! goes with (200, or what a fault chooses), which the bindings use.

use super::faults::FAULTS;
use super::message::{self, agent_id, PROTOCOL, TYPES};
use crate::faults::FaultSet;
use crate::wire::clock::format_timestamp;
use crate::wire::keys::Keypair;
use crate::wire::{is_uuid, json, new_id};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct ApConfig {
    pub capabilities: Vec<String>,
    /// Requests per second one sender may make; unset: no limit.
    pub rate_limit_per_s: Option<u32>,
    pub max_message_bytes: usize,
    /// Longest `delay` the agent performs.
    pub max_delay_ms: u64,
    pub faults: FaultSet,
}

impl Default for ApConfig {
    fn default() -> Self {
        ApConfig {
            capabilities: vec![
                "agentprotocol:core".into(),
                "agentconform:echo".into(),
                "agentconform:delay".into(),
            ],
            rate_limit_per_s: Some(20),
            max_message_bytes: 256 * 1024,
            max_delay_ms: 10_000,
            faults: FaultSet::none(),
        }
    }
}

impl ApConfig {
    pub fn with_faults<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self, String> {
        self.faults = FaultSet::from_names(FAULTS, names)?;
        Ok(self)
    }
}

pub const ACTIONS: [&str; 2] = ["echo", "delay"];

pub struct ApAgent {
    key: Keypair,
    cfg: ApConfig,
    rate: Mutex<HashMap<String, (i64, u32)>>,
    /// Senders that said hello (kept only under `verify-only-after-hello`, at most
    /// [`GREETED_CAP`]).
    greeted: Mutex<std::collections::HashSet<String>>,
}

/// Most senders `verify-only-after-hello` remembers.
const GREETED_CAP: usize = 10_000;

/// One reply: the bytes, the agent it is addressed to (what the file binding names
/// it after) and the HTTP status it goes out with.
#[derive(Debug, Clone)]
pub struct ApReply {
    pub to: String,
    pub status: u16,
    pub body: Vec<u8>,
}

struct Refusal {
    code: &'static str,
    message: String,
    details: Option<Value>,
}

fn refuse(code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
        details: None,
    }
}

impl ApAgent {
    pub fn new(key: Keypair, cfg: ApConfig) -> ApAgent {
        ApAgent {
            key,
            cfg,
            rate: Mutex::new(HashMap::new()),
            greeted: Mutex::new(Default::default()),
        }
    }

    /// The agent's id: its key in standard base64 (in hex under `agent-id-hex`).
    pub fn agent_id(&self) -> String {
        if self.fault("agent-id-hex") {
            return self
                .key
                .public()
                .as_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
        }
        agent_id(&self.key)
    }

    pub fn config(&self) -> &ApConfig {
        &self.cfg
    }

    fn fault(&self, n: &str) -> bool {
        self.cfg.faults.has(n)
    }

    /// A signed reply to `to` (an agentId).
    fn reply(&self, to: &str, ty: &str, mut payload: Value) -> Vec<u8> {
        let caps: Vec<String> = if ty == "hello" && self.fault("hello-without-capabilities") {
            Vec::new()
        } else {
            self.cfg.capabilities.clone()
        };
        // A map of capability → true, as some implementations keep them.
        let caps = if self.fault("capabilities-as-object") {
            Value::Object(caps.into_iter().map(|c| (c, Value::Bool(true))).collect())
        } else {
            json!(caps)
        };
        let id = if self.fault("reply-ids-not-uuid") {
            format!("msg_{}", new_id().replace('-', ""))
        } else {
            new_id()
        };
        if self.fault("correlation-id-snake-case") {
            if let Some(p) = payload.as_object_mut() {
                if let Some(c) = p.remove("correlationId") {
                    p.insert("correlation_id".into(), c);
                }
            }
        }
        let mut m = json!({
            "protocol": PROTOCOL, "id": id, "timestamp": format_timestamp(time::OffsetDateTime::now_utc()),
            "from": {"agentId": self.agent_id(), "name": "agentconform reference", "capabilities": caps},
            "to": {"agentId": to, "broadcast": false},
            "type": ty, "payload": payload,
        });
        if self.fault("unsigned-replies") {
            return serde_json::to_vec(&m).unwrap_or_default();
        }
        if self.fault("python-json-signing") {
            // json.dumps(message, sort_keys=True) with its default separators.
            let text = message::python_sorted_json(&m, false);
            let sig = crate::wire::keys::b64std(&self.key.sign(text.as_bytes()).to_bytes());
            m["signature"] = json!(sig);
        } else if message::sign(&mut m, &self.key).is_err() {
            // Cannot happen: our own messages hold only strings, integers and objects.
            if let Some(o) = m.as_object_mut() {
                o.remove("signature");
            }
        }
        serde_json::to_vec(&m).unwrap_or_default()
    }

    fn error(&self, to: &str, corr: Option<&str>, r: Refusal) -> ApReply {
        if r.code == "INVALID_MESSAGE" && self.fault("invalid-bare-error") {
            // A bare error body, as a handler that never builds an error message.
            return ApReply {
                to: to.into(),
                status: 400,
                body: serde_json::to_vec(&json!({"error": r.message})).unwrap_or_default(),
            };
        }
        if r.code == "INVALID_MESSAGE" && self.fault("errors-framework-detail") {
            // A web framework's own validation error, before the agent sees the message.
            let body =
                json!({"detail": [{"loc": ["body"], "msg": r.message, "type": "value_error"}]});
            return ApReply {
                to: to.into(),
                status: 422,
                body: serde_json::to_vec(&body).unwrap_or_default(),
            };
        }
        let mut e = json!({"code": r.code, "message": r.message});
        if let Some(d) = r.details {
            e["details"] = d;
        }
        let mut p = if self.fault("error-payload-nested") {
            json!({"error": e})
        } else {
            e
        };
        if let Some(c) = corr {
            p["correlationId"] = json!(c);
        }
        ApReply {
            to: to.into(),
            status: 200,
            body: self.reply(to, "error", p),
        }
    }

    /// Handles one message; `None` when nothing is to be sent back.
    pub async fn handle(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        self.handle_reply(bytes).await.map(|r| r.body)
    }

    /// Handles one message: the reply, whom it is for and its HTTP status.
    pub async fn handle_reply(&self, bytes: &[u8]) -> Option<ApReply> {
        if bytes.len() > self.cfg.max_message_bytes {
            return Some(self.error("", None, refuse("INVALID_MESSAGE", "message too large")));
        }
        let tree = match json::parse(bytes) {
            Ok(t) => t,
            Err(e) => {
                return Some(self.error(
                    "",
                    None,
                    refuse("INVALID_MESSAGE", format!("malformed JSON: {e}")),
                ))
            }
        };
        let msg = tree.to_serde();
        let sender = msg["from"]["agentId"].as_str().unwrap_or("").to_string();
        let corr = msg["payload"]["correlationId"].as_str().map(String::from);
        match self.process(tree, &msg, &sender).await {
            Ok(Some((ty, payload))) => Some(ApReply {
                status: 200,
                body: self.reply(&sender, ty, payload),
                to: sender,
            }),
            Ok(None) => None,
            Err(r) => Some(self.error(&sender, corr.as_deref(), r)),
        }
    }

    fn shape(&self, msg: &Value) -> Result<(), Refusal> {
        let Value::Object(o) = msg else {
            return Err(refuse(
                "INVALID_MESSAGE",
                "the message is not a JSON object",
            ));
        };
        if o.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
            return Err(refuse(
                "INVALID_MESSAGE",
                format!("protocol must be {PROTOCOL:?}"),
            ));
        }
        if !o.get("id").and_then(Value::as_str).is_some_and(is_uuid) {
            return Err(refuse("INVALID_MESSAGE", "id must be a UUID string"));
        }
        if !o.get("timestamp").is_some_and(Value::is_string) {
            return Err(refuse(
                "INVALID_MESSAGE",
                "timestamp must be an ISO 8601 string",
            ));
        }
        if !o
            .get("from")
            .and_then(|f| f.get("agentId"))
            .is_some_and(Value::is_string)
        {
            return Err(refuse("INVALID_MESSAGE", "from.agentId is required"));
        }
        let ty = o.get("type").and_then(Value::as_str);
        if !ty.is_some_and(|t| TYPES.contains(&t)) && !self.fault("accept-invalid-message") {
            return Err(refuse(
                "INVALID_MESSAGE",
                format!("type must be one of {TYPES:?}"),
            ));
        }
        if !o.get("payload").is_some_and(Value::is_object) {
            return Err(refuse("INVALID_MESSAGE", "payload must be an object"));
        }
        Ok(())
    }

    fn rate_ok(&self, sender: &str) -> bool {
        let Some(limit) = self.cfg.rate_limit_per_s else {
            return true;
        };
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let mut r = self.rate.lock().unwrap_or_else(|p| p.into_inner());
        if r.len() > 10_000 {
            r.retain(|_, (t, _)| *t == now);
        }
        let e = r.entry(sender.to_string()).or_insert((now, 0));
        if e.0 != now && !self.fault("rate-window-never-resets") {
            *e = (now, 0);
        }
        e.1 += 1;
        e.1 <= limit
    }

    async fn process(
        &self,
        tree: json::Value<'_>,
        msg: &Value,
        sender: &str,
    ) -> Result<Option<(&'static str, Value)>, Refusal> {
        self.shape(msg)?;
        let ty = msg["type"].as_str().unwrap_or_default();
        if self.fault("refuse-signed-requests") && ty != "hello" {
            return Err(refuse(
                "INVALID_SIGNATURE",
                "Verification error: The first argument must be of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object. Received an instance of Object",
            ));
        }
        let by_hello =
            self.fault("verify-only-after-hello") || self.fault("refuse-greeted-take-strangers");
        let greeted = by_hello
            && self
                .greeted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(sender);
        if self.fault("refuse-greeted-take-strangers") && ty != "hello" && greeted {
            return Err(refuse(
                "INVALID_SIGNATURE",
                "Signature verification failed: public key not found in session",
            ));
        }
        let stranger = by_hello && ty != "hello" && !greeted;
        if !self.fault("skip-signature-check") && !stranger {
            message::verify_tree(tree).map_err(|e| refuse("INVALID_SIGNATURE", e.to_string()))?;
        }
        if by_hello && ty == "hello" {
            let mut g = self.greeted.lock().unwrap_or_else(|p| p.into_inner());
            if g.len() >= GREETED_CAP {
                g.clear();
            }
            g.insert(sender.to_string());
        }
        let to = msg["to"]["agentId"].as_str();
        if let Some(to) = to {
            if !to.is_empty() && to != self.agent_id() && !self.fault("ignore-to-agent") {
                return Err(refuse(
                    "UNKNOWN_AGENT",
                    format!("no agent {to:?} here; this is {}", self.agent_id()),
                ));
            }
        }
        if !self.rate_ok(sender) {
            return Err(refuse("RATE_LIMITED", "too many requests from this sender"));
        }
        let p = msg["payload"].as_object().cloned().unwrap_or_default();
        match msg["type"].as_str().unwrap_or_default() {
            "hello" => Ok(Some((
                "hello",
                json!({"version": "0.1", "features": ["signed-messages"]}),
            ))),
            "request" => self.request(&p).await.map(Some),
            _ => Ok(None),
        }
    }

    async fn request(&self, p: &Map<String, Value>) -> Result<(&'static str, Value), Refusal> {
        let lenient = self.fault("accept-invalid-message");
        let Some(action) = p.get("action").and_then(Value::as_str) else {
            return Err(refuse(
                "INVALID_MESSAGE",
                "request payload needs a string action",
            ));
        };
        let params = match p.get("params") {
            None => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(v) if lenient => v.clone(),
            Some(_) => return Err(refuse("INVALID_MESSAGE", "params must be an object")),
        };
        let timeout = match p.get("timeout") {
            None => None,
            Some(t) => match t.as_u64() {
                Some(ms) => Some(ms),
                None => {
                    return Err(refuse(
                        "INVALID_MESSAGE",
                        "timeout must be a non-negative integer (ms)",
                    ))
                }
            },
        };
        // AGP-018: a request's correlationId is a string; the response echoes it.
        let corr = match p.get("correlationId") {
            Some(c @ Value::String(_)) => c.clone(),
            other if lenient => other.cloned().unwrap_or(Value::Null),
            _ => {
                return Err(refuse(
                    "INVALID_MESSAGE",
                    "a request needs a string correlationId",
                ))
            }
        };
        let corr = if self.fault("wrong-correlation-id") {
            json!(format!("corr-{}", new_id()))
        } else {
            corr
        };
        match action {
            "echo" => Ok((
                "response",
                json!({"correlationId": corr, "status": "success", "result": params}),
            )),
            "delay" => {
                let ms = params
                    .get("ms")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    .min(self.cfg.max_delay_ms);
                match timeout {
                    Some(t)
                        if (t < ms && !self.fault("ignore-timeout"))
                            || self.fault("timeout-always") =>
                    {
                        tokio::time::sleep(Duration::from_millis(t)).await;
                        Err(refuse(
                            "TIMEOUT",
                            format!("the delay of {ms} ms exceeds the request timeout of {t} ms"),
                        ))
                    }
                    _ => {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        Ok((
                            "response",
                            json!({"correlationId": corr, "status": "success", "result": {"slept_ms": ms}}),
                        ))
                    }
                }
            }
            other => {
                let code = if self.fault("unknown-action-internal-error") {
                    "INTERNAL_ERROR"
                } else {
                    "CAPABILITY_NOT_SUPPORTED"
                };
                let details = if self.fault("no-details-available") {
                    json!({"requested": other})
                } else {
                    json!({"requested": other, "available": ACTIONS})
                };
                Err(Refusal {
                    code,
                    message: format!("no action {other:?}"),
                    details: Some(details),
                })
            }
        }
    }
}
