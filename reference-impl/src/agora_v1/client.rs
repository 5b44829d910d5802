//! The reference agora-v1 requester (agora-v1.md §4, the requester states): sends a
//! REQUEST over the HTTP binding, and when an OFFER comes back, checks it and
//! ACCEPTs it; returns the RESULT's data. Every reply must be a signed envelope
//! that verifies, is fresh, and names the REQUEST; an OFFER over the budget is
//! refused (never ACCEPTed).
//!
//! Its faults (`CLIENT_FAULTS`) model real requesters that skip one of these checks.

use super::envelope::{self, SigVariant};
use crate::fault;
use crate::faults::Fault;
use crate::wire::clock::parse_timestamp;
use crate::wire::http;
use crate::wire::keys::Keypair;
use crate::wire::{jcs, new_id};
use serde_json::{json, Value};
use time::OffsetDateTime;

/// Requester faults, each caught by the client cases it names.
pub const CLIENT_FAULTS: &[Fault] = &[
    fault!(
        "accept-bad-offer-signature",
        "signature checking",
        "accepts an OFFER whose signature does not verify",
        ["agora-v1/client-refuses-bad-offer-signature"]
    ),
    fault!(
        "accept-over-budget",
        "budget",
        "accepts an OFFER that costs more than its budget",
        ["agora-v1/client-refuses-offer-over-budget"]
    ),
    fault!(
        "accept-stale-offer",
        "freshness",
        "accepts an OFFER stamped outside the replay window",
        ["agora-v1/client-refuses-stale-offer"]
    ),
    fault!(
        "offer-id-from-payload",
        "negotiation",
        "names the offer by payload.request_id in its ACCEPT instead of the OFFER's id",
        ["agora-v1/client-negotiated"]
    ),
    fault!(
        "stale-timestamps",
        "freshness",
        "stamps its messages ten minutes in the past",
        ["agora-v1/client-direct"]
    ),
    fault!(
        "sign-insertion-order",
        "signing",
        "signs compact JSON in insertion order (as JSON.stringify gives) instead of the RFC 8785 bytes",
        ["agora-v1/client-direct"]
    ),
];

/// What the requester is asked to do (the scenario's input).
#[derive(Debug, Clone)]
pub struct Ask {
    pub resource: String,
    pub params: Value,
    /// `budget.max`, when the REQUEST carries a budget.
    pub budget: Option<f64>,
}

impl Ask {
    /// Reads `{"resource": …, "params": …, "budget": N}`.
    pub fn from_input(v: &Value) -> Result<Ask, String> {
        let resource = v["resource"]
            .as_str()
            .ok_or("the input has no string resource")?
            .to_string();
        Ok(Ask {
            resource,
            params: v.get("params").cloned().unwrap_or_else(|| json!({})),
            budget: v["budget"].as_f64(),
        })
    }
}

/// What went on, for the driver's output.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every reply received, as JSON.
    pub received: Vec<Value>,
    /// The RESULT's data, when the request completed.
    pub data: Option<Value>,
}

/// Why the requester gave up (it never ACCEPTs what it refuses).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

struct Requester<'a> {
    http: reqwest::Client,
    url: &'a str,
    key: &'a Keypair,
    faults: &'a [String],
    window: time::Duration,
}

impl Requester<'_> {
    fn fault(&self, name: &str) -> bool {
        self.faults.iter().any(|f| f == name)
    }

    fn message(&self, ty: &str, payload: Value) -> Result<(String, Vec<u8>), ClientError> {
        let mut at = OffsetDateTime::now_utc();
        if self.fault("stale-timestamps") {
            at -= time::Duration::minutes(10);
        }
        let id = new_id();
        let mut env = envelope::build(ty, &id, at, &self.key.did(), payload);
        if self.fault("sign-insertion-order") {
            env["sender"]["signature"] = json!("");
            let text = serde_json::to_string(&env).unwrap_or_default();
            let sig = crate::wire::keys::b64url(&self.key.sign(text.as_bytes()).to_bytes());
            env["sender"]["signature"] = json!(sig);
        } else {
            envelope::sign(&mut env, self.key, SigVariant::Blank)
                .map_err(|e| ClientError(format!("cannot sign: {e}")))?;
        }
        let bytes = jcs::canonicalize_serde(&env)
            .map_err(|e| ClientError(format!("cannot write the message: {e}")))?;
        Ok((id, bytes))
    }

    async fn send(&self, bytes: Vec<u8>) -> Result<Value, ClientError> {
        let r = self
            .http
            .post(self.url)
            .header("content-type", "application/json")
            .body(bytes)
            .send()
            .await
            .map_err(|e| ClientError(format!("cannot reach {}: {e}", self.url)))?;
        let body = r
            .bytes()
            .await
            .map_err(|e| ClientError(format!("cannot read the reply: {e}")))?;
        serde_json::from_slice(&body)
            .map_err(|e| ClientError(format!("the reply is not JSON: {e}")))
    }

    /// The checks every reply gets: a verified signature, a fresh timestamp, a link
    /// to the REQUEST.
    fn check(
        &self,
        reply: &Value,
        request_id: &str,
        skip_signature: bool,
    ) -> Result<(), ClientError> {
        let bytes = serde_json::to_vec(reply).unwrap_or_default();
        if !skip_signature && !envelope::verify_bytes(&bytes).ok() {
            return Err(ClientError(format!(
                "the {} does not carry a valid signature",
                reply["type"].as_str().unwrap_or("reply")
            )));
        }
        let stamp = reply["timestamp"].as_str().unwrap_or_default();
        let fresh = parse_timestamp(stamp)
            .map(|t| (OffsetDateTime::now_utc() - t).abs() <= self.window)
            .unwrap_or(false);
        let let_stale_pass = reply["type"] == "OFFER" && self.fault("accept-stale-offer");
        if !(fresh || let_stale_pass) {
            return Err(ClientError(format!(
                "the reply is stamped {stamp:?}, outside the replay window"
            )));
        }
        if reply["payload"]["request_id"] != request_id {
            return Err(ClientError(format!(
                "the reply names request {}, not {request_id:?}",
                reply["payload"]["request_id"]
            )));
        }
        Ok(())
    }
}

/// Runs the `request` scenario against the provider at `url` (HTTP binding).
pub async fn request(
    url: &str,
    key: &Keypair,
    ask: &Ask,
    faults: &[String],
    timeout: std::time::Duration,
) -> (Outcome, Result<(), ClientError>) {
    let mut out = Outcome::default();
    let setting = http::Setting {
        timeout: Some(timeout),
        ..http::Setting::default()
    };
    let http = match http::client(setting) {
        Ok(h) => h,
        Err(e) => return (out, Err(ClientError(e))),
    };
    let r = Requester {
        http,
        url,
        key,
        faults,
        window: time::Duration::seconds(60),
    };
    let result = run(&r, ask, &mut out).await;
    (out, result)
}

async fn run(r: &Requester<'_>, ask: &Ask, out: &mut Outcome) -> Result<(), ClientError> {
    let mut payload = json!({"resource": ask.resource, "params": ask.params});
    if let Some(max) = ask.budget {
        payload["budget"] = json!({"max": max});
    }
    let (request_id, bytes) = r.message("REQUEST", payload)?;
    let reply = r.send(bytes).await?;
    out.received.push(reply.clone());
    let reply = match reply["type"].as_str() {
        Some("RESULT") => reply,
        Some("OFFER") => {
            r.check(&reply, &request_id, r.fault("accept-bad-offer-signature"))?;
            let cost = reply["payload"]["cost"].as_f64().unwrap_or(f64::INFINITY);
            if let Some(max) = ask.budget.filter(|m| cost > *m) {
                if !r.fault("accept-over-budget") {
                    return Err(ClientError(format!(
                        "the OFFER costs {cost}, over the budget of {max}: not accepted"
                    )));
                }
            }
            // The OFFER's envelope id names it (AV1-040, AV1-A11).
            let offer_id = if r.fault("offer-id-from-payload") {
                reply["payload"]["request_id"].clone()
            } else {
                reply["id"].clone()
            };
            let (_, accept) = r.message("ACCEPT", json!({"offer_id": offer_id}))?;
            let result = r.send(accept).await?;
            out.received.push(result.clone());
            result
        }
        Some("ERROR") => {
            return Err(ClientError(format!(
                "the provider refused: ERROR {} {}",
                reply["payload"]["code"], reply["payload"]["message"]
            )))
        }
        _ => return Err(ClientError(format!("an unexpected reply: {reply}"))),
    };
    if reply["type"] != "RESULT" {
        return Err(ClientError(format!("no RESULT: {reply}")));
    }
    r.check(&reply, &request_id, false)?;
    out.data = Some(reply["payload"]["data"].clone());
    Ok(())
}
