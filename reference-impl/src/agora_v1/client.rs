//! The reference agora-v1 requester (agora-v1.md §4, the requester states): sends a
//! REQUEST over the HTTP binding, and when an OFFER comes back, checks it and
//! ACCEPTs it; returns the RESULT's data. Every reply must be an agora/1.0 envelope
//! with an id not seen before in the conversation, signed over RFC 8785, fresh, and
//! naming the REQUEST; an OFFER over the budget or past its ttl is refused (never
//! ACCEPTed).
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
        "refuse-offer-at-budget",
        "budget",
        "refuses an OFFER whose cost equals its budget, as if it were over it",
        ["agora-v1/client-accepts-offer-at-budget"]
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
        "accept-any-protocol",
        "envelope",
        "takes a reply whatever its protocol tag",
        ["agora-v1/client-refuses-wrong-protocol"]
    ),
    fault!(
        "accept-reused-id",
        "envelope",
        "takes a reply whose id repeats one already seen in the conversation",
        ["agora-v1/client-refuses-reused-id"]
    ),
    fault!(
        "ignore-request-link",
        "negotiation",
        "takes an OFFER or RESULT whatever request its request_id names",
        [
            "agora-v1/client-refuses-foreign-offer",
            "agora-v1/client-refuses-foreign-result"
        ]
    ),
    fault!(
        "ignore-offer-ttl",
        "negotiation",
        "ACCEPTs an OFFER whose ttl has run out, if it is within the replay window",
        ["agora-v1/client-refuses-expired-offer"]
    ),
    fault!(
        "accept-stale-result",
        "freshness",
        "takes a RESULT stamped outside the replay window",
        ["agora-v1/client-refuses-stale-result"]
    ),
    fault!(
        "verify-sorted-keys",
        "signature checking",
        "verifies signatures over sorted-key JSON with non-ASCII text escaped (Python's json.dumps(sort_keys=True)) instead of RFC 8785: it refuses sound replies holding such text and takes one signed that way",
        [
            "agora-v1/client-direct",
            "agora-v1/client-negotiated",
            "agora-v1/client-refuses-bad-result-signature"
        ]
    ),
    fault!(
        "accept-python-dumps-signature",
        "signature checking",
        "verifies signatures over RFC 8785, and when that fails takes one over Python's json.dumps(sort_keys=True) too",
        ["agora-v1/client-refuses-bad-result-signature"]
    ),
    fault!(
        "error-in-200-taken",
        "errors",
        "takes any reply to its REQUEST with HTTP 200 that is not an OFFER as the outcome, an ERROR among them",
        ["agora-v1/client-reports-malformed-error"]
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
    fault!(
        "sign-sorted-keys",
        "signing",
        "signs sorted-key JSON with non-ASCII text escaped (Python's json.dumps(sort_keys=True)) instead of the RFC 8785 bytes",
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
        if self.fault("sign-insertion-order") || self.fault("sign-sorted-keys") {
            env["sender"]["signature"] = json!("");
            let text = if self.fault("sign-sorted-keys") {
                crate::wire::pyjson::python_sorted_json(&env, true)
            } else {
                serde_json::to_string(&env).unwrap_or_default()
            };
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
        self.send_status(bytes).await.map(|(_, v)| v)
    }

    async fn send_status(&self, bytes: Vec<u8>) -> Result<(u16, Value), ClientError> {
        let r = self
            .http
            .post(self.url)
            .header("content-type", "application/json")
            .body(bytes)
            .send()
            .await
            .map_err(|e| ClientError(format!("cannot reach {}: {e}", self.url)))?;
        let status = r.status().as_u16();
        let body = r
            .bytes()
            .await
            .map_err(|e| ClientError(format!("cannot read the reply: {e}")))?;
        serde_json::from_slice(&body)
            .map(|v| (status, v))
            .map_err(|e| ClientError(format!("the reply is not JSON: {e}")))
    }

    /// The checks every reply gets: a verified signature, a fresh timestamp, a link
    /// to the REQUEST.
    fn check(
        &self,
        reply: &Value,
        request_id: &str,
        skip_signature: bool,
        seen: &mut Vec<String>,
    ) -> Result<(), ClientError> {
        let ty = reply["type"].as_str().unwrap_or("reply");
        if reply["protocol"] != envelope::PROTOCOL && !self.fault("accept-any-protocol") {
            return Err(ClientError(format!(
                "the {ty} carries protocol {}, not {:?}",
                reply["protocol"],
                envelope::PROTOCOL
            )));
        }
        let id = reply["id"].as_str().unwrap_or_default().to_string();
        if seen.contains(&id) && !self.fault("accept-reused-id") {
            return Err(ClientError(format!(
                "the {ty}'s id {id:?} repeats one already seen in this conversation"
            )));
        }
        seen.push(id);
        let mut blank = reply.clone();
        blank["sender"]["signature"] = json!("");
        let verified = if self.fault("verify-sorted-keys") {
            envelope::verifies_over(
                reply,
                crate::wire::pyjson::python_sorted_json(&blank, true).as_bytes(),
            )
        } else {
            let bytes = serde_json::to_vec(reply).unwrap_or_default();
            envelope::verify_bytes(&bytes).ok()
                || (self.fault("accept-python-dumps-signature")
                    && envelope::verifies_over(
                        reply,
                        crate::wire::pyjson::python_sorted_json(&blank, false).as_bytes(),
                    ))
        };
        if !skip_signature && !verified {
            return Err(ClientError(format!(
                "the {ty} does not carry a valid signature"
            )));
        }
        let stamp = reply["timestamp"].as_str().unwrap_or_default();
        let at = parse_timestamp(stamp).ok();
        let fresh = at.is_some_and(|t| (OffsetDateTime::now_utc() - t).abs() <= self.window);
        let let_stale_pass = (ty == "OFFER" && self.fault("accept-stale-offer"))
            || (ty == "RESULT" && self.fault("accept-stale-result"));
        if !(fresh || let_stale_pass) {
            return Err(ClientError(format!(
                "the reply is stamped {stamp:?}, outside the replay window"
            )));
        }
        if ty == "OFFER" && !self.fault("ignore-offer-ttl") {
            let ttl = reply["payload"]["ttl"].as_f64().unwrap_or(0.0);
            let lapsed = at.is_some_and(|t| {
                t + time::Duration::milliseconds(ttl as i64) < OffsetDateTime::now_utc()
            });
            if lapsed {
                return Err(ClientError(format!(
                    "the OFFER stamped {stamp:?} with a ttl of {ttl} ms has run out: not accepted"
                )));
            }
        }
        if reply["payload"]["request_id"] != request_id && !self.fault("ignore-request-link") {
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
    // Every id of the conversation, the requester's own among them (AV1-004).
    let mut seen = vec![request_id.clone()];
    let (status, reply) = r.send_status(bytes).await?;
    out.received.push(reply.clone());
    let reply = match reply["type"].as_str() {
        Some("RESULT") => reply,
        Some(t) if t != "OFFER" && status == 200 && r.fault("error-in-200-taken") => {
            out.data = Some(reply["payload"]["data"].clone());
            return Ok(());
        }
        Some("OFFER") => {
            r.check(
                &reply,
                &request_id,
                r.fault("accept-bad-offer-signature"),
                &mut seen,
            )?;
            let cost = reply["payload"]["cost"].as_f64().unwrap_or(f64::INFINITY);
            // A budget equal to the cost covers it (AV1-055).
            let over =
                |max: &f64| cost > *max || (r.fault("refuse-offer-at-budget") && cost == *max);
            if let Some(max) = ask.budget.filter(over) {
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
            let (accept_id, accept) = r.message("ACCEPT", json!({"offer_id": offer_id}))?;
            seen.push(accept_id);
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
    r.check(&reply, &request_id, false, &mut seen)?;
    out.data = Some(reply["payload"]["data"].clone());
    Ok(())
}
