//! agentprotocol expectations: a per-case identity and connection over the case's
//! binding, message builders, and the checks every target message gets.

use crate::case::{fail, Step};
use crate::drive::file::FileDriver;
use crate::drive::http::HttpDriver;
use crate::drive::ws::WsDriver;
use crate::drive::{Driver, Limits, Received, Transport};
use crate::script::{describe_drive_error, join_url, Ctx};
use reference_impl::agentprotocol::message::{self, agent_id, CODES, PROTOCOL};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::keys::Keypair;
use reference_impl::wire::{json, new_id};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

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
}

impl Me {
    pub fn new(ctx: &Ctx) -> Me {
        let key = Keypair::generate();
        let id = agent_id(&key);
        let drv = match ctx.transport {
            Transport::Http => Driver::Http(HttpDriver::new(
                ctx.shared.http.clone(),
                &join_url(&ctx.url, "agentprotocol"),
            )),
            Transport::Ws => Driver::Ws(WsDriver::new(&join_url(&ctx.url, "agentprotocol/ws"))),
            Transport::File => Driver::File(FileDriver::new(&ctx.url)),
        };
        Me {
            key,
            id,
            drv,
            target: None,
            target_capabilities: Vec::new(),
            target_features: Vec::new(),
            seen_ids: HashSet::new(),
        }
    }

    /// An unsigned message from this agent, addressed to the target when known.
    pub fn message(&self, ty: &str, payload: Value) -> Value {
        let to = match &self.target {
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
        let _ = message::sign(msg, &self.key);
    }

    /// A signed request.
    pub fn request(&self, action: &str, params: Value, extra: Value) -> Value {
        let mut payload = json!({"action": action, "correlationId": format!("req-{}", &new_id()[..8]), "params": params});
        if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        let mut m = self.message("request", payload);
        self.sign(&mut m);
        m
    }

    /// Sends `msg` as it is; returns the reply within `wait`, or `None` on silence
    /// (an HTTP 2xx with no body counts as silence).
    pub async fn send_wait(
        &mut self,
        ctx: &mut Ctx,
        msg: &Value,
        wait: Duration,
    ) -> Step<Option<Value>> {
        let bytes = serde_json::to_vec(msg).unwrap_or_default();
        self.send_bytes_wait(ctx, bytes, wait).await
    }

    pub async fn send_bytes_wait(
        &mut self,
        ctx: &mut Ctx,
        bytes: Vec<u8>,
        wait: Duration,
    ) -> Step<Option<Value>> {
        ctx.log_frame(
            "send",
            &ctx.transport.to_string(),
            &String::from_utf8_lossy(&bytes),
        );
        let limits = Limits {
            timeout: wait,
            max_bytes: ctx.profile().timing.max_response_bytes,
        };
        let r = match self.drv.exchange(bytes, limits).await {
            Ok(r) => r,
            Err(e) => return fail(describe_drive_error(&e)),
        };
        let body = match r {
            Received::Http { status, body } => {
                if !(200..300).contains(&status) {
                    ctx.note(format!("HTTP status {status} (informational, AGP-A10)"));
                }
                if body.is_empty() {
                    return Ok(None);
                }
                body
            }
            Received::Frame(b) => b,
            Received::Silence => return Ok(None),
        };
        ctx.log_frame(
            "recv",
            &ctx.transport.to_string(),
            &String::from_utf8_lossy(&body),
        );
        let v = match json::parse(&body) {
            Ok(t) => t.to_serde(),
            Err(e) => return fail(format!("the reply is not JSON: {e}")),
        };
        self.check(ctx, &body, &v)?;
        Ok(Some(v))
    }

    /// Sends and requires a reply within the case timeout.
    pub async fn send(&mut self, ctx: &mut Ctx, msg: &Value) -> Step<Value> {
        let wait = Duration::from_millis(ctx.profile().timing.case_timeout_ms);
        match self.send_wait(ctx, msg, wait).await? {
            Some(v) => Ok(v),
            None => fail(format!("no reply within {} ms", wait.as_millis())),
        }
    }

    /// The checks every target message gets (AGP-001…005, 007…012, 022, 030, 031).
    fn check(&mut self, ctx: &mut Ctx, bytes: &[u8], v: &Value) -> Step<()> {
        if let Err(e) = ctx.shared.schemas.check("agentprotocol/message", v) {
            return fail(format!("the reply violates the message schema: {e}"));
        }
        for k in ["signature", "to"] {
            if v.get(k).is_none() && k == "to" {
                ctx.warn("the reply carries no `to` (AGP-A22)");
            }
        }
        if v["protocol"] != PROTOCOL {
            return fail(format!(
                "protocol {} is not {PROTOCOL:?} (AGP-002)",
                v["protocol"]
            ));
        }
        let id = v["id"].as_str().unwrap_or_default().to_string();
        if !reference_impl::wire::is_uuid(&id) {
            return fail(format!("reply id {id:?} is not a UUID (AGP-003)"));
        }
        if !self.seen_ids.insert(id.clone()) {
            return fail(format!("reply id {id} was used twice (AGP-003)"));
        }
        match v["timestamp"].as_str().map(parse_timestamp) {
            Some(Ok(t)) => {
                let skew = (time::OffsetDateTime::now_utc() - t).whole_seconds().abs();
                if skew > 60 {
                    ctx.note(format!("reply timestamp is {skew} s off the harness clock (informational, AGP-A12)"));
                }
            }
            _ => {
                return fail(format!(
                    "timestamp {} is not an ISO 8601 UTC date-time (AGP-004)",
                    v["timestamp"]
                ))
            }
        }
        let from = v["from"]["agentId"].as_str().unwrap_or_default();
        if message::key_of(from).is_none() {
            return fail(format!(
                "from.agentId {from:?} is not a base64 Ed25519 public key (AGP-005)"
            ));
        }
        match (v.get("signature"), message::verify_bytes(bytes)) {
            (None, _) => ctx.warn("the reply is unsigned (AGP-030)"),
            (Some(_), Ok(())) => ctx.checked("reply signature verifies over its RFC 8785 form"),
            (Some(_), Err(e)) => {
                return fail(format!(
                    "the reply's signature: {e} (AGP-005, AGP-012, AGP-031)"
                ))
            }
        }
        if let Some(to) = v.get("to") {
            if to["agentId"] != self.id.as_str() {
                return fail(format!(
                    "the reply is addressed to {}, not to the sender {} (AGP-008, AGP-009)",
                    to["agentId"], self.id
                ));
            }
            if to.get("broadcast").is_some_and(|b| b != false) {
                return fail("a reply has broadcast true (AGP-008)");
            }
        }
        if let Some(t) = &self.target {
            if from != t {
                return fail(format!(
                    "the reply comes from {from}, not the agent that said hello ({t}) (AGP-009)"
                ));
            }
        }
        let caps = v["from"]["capabilities"].as_array();
        if caps.is_none()
            && v["type"] != "hello"
            && !ctx.warnings().iter().any(|w| w.contains("AGP-007"))
        {
            ctx.warn("replies carry no from.capabilities (AGP-007)");
        }
        if v["type"] == "error" {
            let code = v["payload"]["code"].as_str().unwrap_or_default();
            if !CODES.contains(&code) {
                ctx.warn(format!(
                    "error code {code} is not in agentprotocol.md's table (AGP-022)"
                ));
            }
        }
        Ok(())
    }

    /// hello → hello; learns the target's id, capabilities and features.
    pub async fn hello(&mut self, ctx: &mut Ctx) -> Step<Value> {
        let mut h = self.message(
            "hello",
            json!({"version": "0.1", "features": ["signed-messages"]}),
        );
        self.sign(&mut h);
        let r = self.send(ctx, &h).await?;
        if r["type"] != "hello" {
            return fail(format!(
                "hello was answered with {} (AGP-013): {}",
                r["type"], r["payload"]
            ));
        }
        self.target = r["from"]["agentId"].as_str().map(String::from);
        self.target_capabilities = strings(&r["from"]["capabilities"]);
        self.target_features = strings(&r["payload"]["features"]);
        Ok(r)
    }

    /// Sends and requires an error with `code` (and the correlationId, when sent).
    pub async fn expect_error(
        &mut self,
        ctx: &mut Ctx,
        msg: &Value,
        code: &str,
        what: &str,
    ) -> Step<Value> {
        let r = self.send(ctx, msg).await?;
        if r["type"] != "error" || r["payload"]["code"] != code {
            return fail(format!(
                "{what}: expected error {code}, got {} {}",
                r["type"], r["payload"]
            ));
        }
        if let Some(c) = msg["payload"]["correlationId"].as_str() {
            if r["payload"]["correlationId"] != c {
                return fail(format!(
                    "{what}: the error does not echo correlationId {c} (AGP-020)"
                ));
            }
        }
        ctx.checked(format!("{what}: {code}"));
        Ok(r)
    }
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
