//! The reference agentprotocol requester (agentprotocol.md): over the HTTP binding
//! (`POST {url}/agentprotocol`) it says hello, checks that the peer's hello lists
//! the capability it needs (AGP-036), sends one signed request, and takes the
//! response only when its signature verifies (AGP-035) and it echoes the request's
//! correlationId (AGP-019).
//!
//! Its faults (`CLIENT_FAULTS`) model requesters that skip one of these steps.

use super::message::{self, agent_id, PROTOCOL};
use crate::fault;
use crate::faults::Fault;
use crate::wire::clock::format_timestamp;
use crate::wire::keys::Keypair;
use crate::wire::new_id;
use serde_json::{json, Value};

/// Requester faults, each caught by the client cases it names.
pub const CLIENT_FAULTS: &[Fault] = &[
    fault!(
        "skip-capability-check",
        "capabilities",
        "sends its request without looking at the peer's capabilities",
        ["agentprotocol/client-checks-capabilities"]
    ),
    fault!(
        "no-hello",
        "handshake",
        "sends its request without a hello first (so without looking at the peer's capabilities)",
        [
            "agentprotocol/client-request",
            "agentprotocol/client-checks-capabilities"
        ]
    ),
    fault!(
        "ignore-correlation",
        "correlation",
        "takes a response whatever correlationId it echoes",
        ["agentprotocol/client-checks-correlation"]
    ),
    fault!(
        "trust-unsigned",
        "signature checking",
        "takes a response whose signature does not verify",
        ["agentprotocol/client-verifies-response"]
    ),
    fault!(
        "ignore-addressee",
        "addressing",
        "takes a response addressed to another agent",
        ["agentprotocol/client-refuses-misaddressed-response"]
    ),
    fault!(
        "error-as-result",
        "errors",
        "takes any reply that echoes its correlationId as the outcome, an error among them",
        ["agentprotocol/client-reports-error-response"]
    ),
    fault!(
        "read-snake-case-correlation",
        "correlation",
        "reads the correlation id from correlation_id when correlationId is missing",
        ["agentprotocol/client-checks-correlation"]
    ),
    fault!(
        "reuse-message-id",
        "ids",
        "sends its hello and its request under one message id",
        ["agentprotocol/client-request"]
    ),
    fault!(
        "broadcast-request",
        "addressing",
        "sends its request as a broadcast, without the peer's agentId",
        ["agentprotocol/client-request"]
    ),
    fault!(
        "verify-python-json",
        "signature checking",
        "verifies signatures over Python's json.dumps(sort_keys=True) instead of RFC 8785: it refuses the sound hello of every peer, fails the valid exchange, and the cases it controls are blocked",
        ["agentprotocol/client-request"]
    ),
    fault!(
        "refuse-every-response",
        "signature checking",
        "refuses every response after hello (it cannot verify anyone it has greeted): it fails the valid exchange, and its refusals of bad responses prove nothing, so those cases are blocked",
        ["agentprotocol/client-request"]
    ),
];

/// What the requester is asked to do: `{"action", "capability", "params", "peer"}`.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The peer's agentId, when known: the hello is addressed to it.
    pub peer: Option<String>,
    pub action: String,
    /// The capability the peer must list for the action.
    pub capability: String,
    pub params: Value,
}

impl Ask {
    pub fn from_input(v: &Value) -> Result<Ask, String> {
        let s = |k: &str| {
            v[k].as_str()
                .map(String::from)
                .ok_or(format!("the input has no string {k}"))
        };
        Ok(Ask {
            peer: v["peer"].as_str().map(String::from),
            action: s("action")?,
            capability: s("capability")?,
            params: v.get("params").cloned().unwrap_or_else(|| json!({})),
        })
    }
}

/// Why the requester gave up.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

fn fail<T>(why: impl Into<String>) -> Result<T, ClientError> {
    Err(ClientError(why.into()))
}

/// Runs scenario `request` against the peer at `url`: every reply received, and the
/// response's result or why the requester gave up.
pub async fn request(
    url: &str,
    ask: &Ask,
    faults: &[String],
    timeout: std::time::Duration,
) -> (Vec<Value>, Result<Value, ClientError>) {
    let mut received = Vec::new();
    let result = run(url, ask, faults, timeout, &mut received).await;
    (received, result)
}

async fn run(
    url: &str,
    ask: &Ask,
    faults: &[String],
    timeout: std::time::Duration,
    received: &mut Vec<Value>,
) -> Result<Value, ClientError> {
    let fault = |f: &str| faults.iter().any(|x| x == f);
    let http = crate::wire::http::client(crate::wire::http::Setting {
        timeout: Some(timeout),
        ..Default::default()
    })
    .map_err(ClientError)?;
    let endpoint = format!("{}/agentprotocol", url.trim_end_matches('/'));
    let key = Keypair::generate();
    let me = agent_id(&key);
    let shared_id = new_id();
    let message = |ty: &str, to: Value, payload: Value| {
        let id = if fault("reuse-message-id") {
            shared_id.clone()
        } else {
            new_id()
        };
        let mut m = json!({
            "protocol": PROTOCOL, "id": id,
            "timestamp": format_timestamp(time::OffsetDateTime::now_utc()),
            "from": {"agentId": me, "capabilities": ["agentprotocol:core"]},
            "to": to, "type": ty, "payload": payload,
        });
        message::sign(&mut m, &key).map(|_| m)
    };
    let send = |m: Value| {
        let http = http.clone();
        let endpoint = endpoint.clone();
        async move {
            let r = http
                .post(&endpoint)
                .header("content-type", "application/json")
                .body(m.to_string())
                .send()
                .await
                .map_err(|e| ClientError(format!("cannot reach {endpoint}: {e}")))?;
            let body = r
                .bytes()
                .await
                .map_err(|e| ClientError(format!("cannot read the reply: {e}")))?;
            serde_json::from_slice::<Value>(&body)
                .map_err(|e| ClientError(format!("the reply is not JSON: {e}")))
        }
    };
    let verifies = |reply: &Value| {
        if fault("verify-python-json") {
            let mut blank = reply.clone();
            if let Some(o) = blank.as_object_mut() {
                o.remove("signature");
            }
            let text = crate::wire::pyjson::python_sorted_json(&blank, false);
            message::verifies_over(reply, text.as_bytes())
        } else {
            message::verify_bytes(reply.to_string().as_bytes()).is_ok()
        }
    };
    let mut peer = match &ask.peer {
        Some(id) => json!({"agentId": id, "broadcast": false}),
        None => json!({"broadcast": true}),
    };
    if !fault("no-hello") {
        let hello = message(
            "hello",
            peer.clone(),
            json!({"version": "0.1", "features": ["signed-messages"]}),
        )
        .map_err(|e| ClientError(format!("cannot sign: {e}")))?;
        let reply = send(hello).await?;
        received.push(reply.clone());
        if reply["type"] != "hello" {
            return fail(format!("the peer answered hello with {}", reply["type"]));
        }
        if !verifies(&reply) {
            return fail("the peer's hello does not carry a valid signature");
        }
        let caps: Vec<&str> = reply["from"]["capabilities"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !caps.contains(&ask.capability.as_str()) && !fault("skip-capability-check") {
            return fail(format!(
                "the peer does not list {} ({caps:?}): no request sent",
                ask.capability
            ));
        }
        if let Some(id) = reply["from"]["agentId"].as_str() {
            peer = json!({"agentId": id, "broadcast": false});
        }
    }
    let corr = new_id();
    if fault("broadcast-request") {
        peer = json!({"broadcast": true});
    }
    let req = message(
        "request",
        peer,
        json!({"action": ask.action, "params": ask.params, "correlationId": corr}),
    )
    .map_err(|e| ClientError(format!("cannot sign: {e}")))?;
    let reply = send(req).await?;
    received.push(reply.clone());
    if fault("refuse-every-response") {
        // A library that looks up the peer's key in a registry it never filled.
        return fail("cannot verify the response: no key known for its sender");
    }
    if !verifies(&reply) && !fault("trust-unsigned") {
        return fail("the response does not carry a valid signature");
    }
    // A reply goes back to its requester (AGP-009).
    if reply["to"]["agentId"] != me.as_str() && !fault("ignore-addressee") {
        return fail(format!(
            "the reply is addressed to {}, not to this requester",
            reply["to"]["agentId"]
        ));
    }
    let mut echoed = &reply["payload"]["correlationId"];
    if echoed.is_null() && fault("read-snake-case-correlation") {
        echoed = &reply["payload"]["correlation_id"];
    }
    if echoed != corr.as_str() && !fault("ignore-correlation") {
        return fail(format!(
            "the reply echoes correlationId {}, not {corr:?}",
            reply["payload"]["correlationId"]
        ));
    }
    match reply["type"].as_str() {
        Some("response") if reply["payload"]["status"] == "success" => {
            Ok(reply["payload"]["result"].clone())
        }
        Some(_) if fault("error-as-result") => Ok(reply["payload"].clone()),
        Some("error") => fail(format!(
            "the peer refused: {} {}",
            reply["payload"]["code"], reply["payload"]["message"]
        )),
        _ => fail(format!("an unexpected reply: {reply}")),
    }
}
