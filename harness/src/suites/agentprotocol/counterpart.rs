//! The scripted counterpart of the client role: the peer the harness plays for an agent
//! under test (`peer`), and the plan it answers by (`PeerPlan`, `PeerSpoil`).

use reference_impl::agentprotocol::message::{self, agent_id};
use reference_impl::wire::clock::format_timestamp;
use reference_impl::wire::keys::{self, Keypair};
use reference_impl::wire::new_id;
use serde_json::{json, Value};

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
            "protocol": message::PROTOCOL, "id": new_id(),
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

pub(super) const PLAIN: PeerPlan = PeerPlan {
    capabilities: &["agentprotocol:core", "agentconform:echo"],
    wrong_correlation: false,
    bad_signature: false,
    spoil: PeerSpoil::None,
};

// ---------------------------------------------------------------------------
// Fuzzing

pub(super) const CLIENT_PLAIN: PeerPlan = PeerPlan {
    capabilities: &["agentprotocol:core", "agentconform:echo"],
    wrong_correlation: false,
    bad_signature: false,
    spoil: PeerSpoil::None,
};
