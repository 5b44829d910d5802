//! The agora-v1 reference agent: a provider with the fixtures of the target profile.
//!
//! ```text
//!  REQUEST agora:echo:v1 ───────────────────────────────▶ RESULT   (direct flow)
//!  REQUEST agora:quote:v1 ─▶ OFFER (ttl) ─ ACCEPT in ttl ─▶ RESULT (negotiated flow)
//!                                        └ ACCEPT late ───▶ ERROR 408
//!  HELLO ─▶ WELCOME {resources}      STATUS {request_id} ─▶ STATUS {request_id, state}
//! ```
//!
//! Every message is checked in this order, each failure answered by an ERROR
//! envelope: JSON text (400), envelope shape (400), signature (401), freshness
//! (401), replayed id (401), payload shape (400), then the flow itself (402, 404,
//! 408). The agent is transport-free: [`Agent::handle`] takes the bytes of one
//! message and returns the reply and the HTTP status the HTTP binding should use.

use super::envelope::{self, SigVariant, ERROR_CODES, PROTOCOL, TYPES};
use super::faults::{self, FAULTS};
use crate::faults::FaultSet;
use crate::wire::clock::{parse_timestamp, SharedClock, SystemClock};
use crate::wire::keys::{self, Keypair};
use crate::wire::{json, new_id};
use serde_json::{json, Map, Value};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use time::{Duration, OffsetDateTime};

/// Tunable behaviour; the defaults are the target profile's.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub replay_window: Duration,
    pub offer_ttl_ms: u64,
    pub offer_cost: f64,
    pub offer_eta_ms: u64,
    pub direct_resource: String,
    pub negotiated_resource: String,
    /// Largest message the agent reads.
    pub max_message_bytes: usize,
    /// Most offers and ids remembered at once (oldest dropped first).
    pub max_remembered: usize,
    /// The room kept for the other senders: once less than this is left of
    /// `max_remembered`, a sender holding at least this many ids gets ERROR 429
    /// until its ids leave the replay window, so that no sender fills the memory of
    /// all and locks the others out.
    pub max_per_sender: usize,
    pub faults: FaultSet,
    /// Behaviours the spec allows or only warns about (`faults::VARIANTS`).
    pub variants: Vec<&'static str>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            replay_window: Duration::seconds(60),
            offer_ttl_ms: 2000,
            offer_cost: 5.0,
            offer_eta_ms: 1000,
            direct_resource: "agora:echo:v1".into(),
            negotiated_resource: "agora:quote:v1".into(),
            max_message_bytes: 64 * 1024,
            max_remembered: 100_000,
            max_per_sender: 10_000,
            faults: FaultSet::none(),
            variants: Vec::new(),
        }
    }
}

impl AgentConfig {
    pub fn with_faults<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self, String> {
        self.faults = FaultSet::from_names(FAULTS, names)?;
        Ok(self)
    }

    /// Switches on variants by name (see `faults::VARIANTS`).
    pub fn with_variants<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self, String> {
        for n in names {
            let v = faults::variant(n.as_ref())
                .ok_or_else(|| format!("unknown agora-v1 variant {:?}", n.as_ref()))?;
            self.variants.push(v.name);
        }
        Ok(self)
    }
}

/// A reply: the envelope bytes and the HTTP status for the HTTP binding.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone)]
struct Offer {
    request_id: String,
    /// The sender of the REQUEST: the only one whose ACCEPT is taken.
    requester: String,
    params: Value,
    expires: OffsetDateTime,
    accepted: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Message ids seen inside the replay window, for replay detection, each
    /// under its sender ([`Agent::by_sender`]).
    seen: HashSet<String>,
    /// When each seen id leaves the window (its timestamp + window), oldest first.
    seen_expiry: BinaryHeap<Reverse<(OffsetDateTime, String, String)>>,
    /// How many ids in `seen` each sender has.
    per_sender: HashMap<String, usize>,
    offers: HashMap<String, Offer>,
    /// Request id, under its sender ([`Agent::by_sender`]) → state name.
    requests: HashMap<String, &'static str>,
}

/// The reference agent.
pub struct Agent {
    key: Keypair,
    /// Signs replies under the `reply-wrong-key` fault.
    other_key: Keypair,
    clock: SharedClock,
    cfg: AgentConfig,
    state: Mutex<State>,
}

/// A reply to send back: its type and payload, the id of the message it answers,
/// and its own envelope id when that is fixed in advance (an OFFER's id is its offer id).
struct Out {
    ty: &'static str,
    payload: Value,
    answers: String,
    own_id: Option<String>,
}

fn out(ty: &'static str, payload: Value, answers: &str) -> Out {
    Out {
        ty,
        payload,
        answers: answers.to_string(),
        own_id: None,
    }
}

/// An ERROR to send back.
struct Rejection {
    code: i64,
    message: String,
    request_id: Option<String>,
}

fn reject(code: i64, message: impl Into<String>) -> Rejection {
    Rejection {
        code,
        message: message.into(),
        request_id: None,
    }
}

impl Agent {
    pub fn new(key: Keypair, clock: SharedClock, cfg: AgentConfig) -> Agent {
        Agent {
            key,
            other_key: Keypair::generate(),
            clock,
            cfg,
            state: Mutex::new(State::default()),
        }
    }

    /// An agent with a fresh key, the system clock and the given configuration.
    pub fn with_config(cfg: AgentConfig) -> Agent {
        Agent::new(Keypair::generate(), Arc::new(SystemClock), cfg)
    }

    pub fn did(&self) -> String {
        self.key.did()
    }

    pub fn config(&self) -> &AgentConfig {
        &self.cfg
    }

    fn fault(&self, name: &str) -> bool {
        self.cfg.faults.has(name)
    }

    fn variant(&self, name: &str) -> bool {
        self.cfg.variants.contains(&name)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Handles one message and returns the reply.
    pub fn handle(&self, bytes: &[u8]) -> Reply {
        self.reply(self.process(bytes))
    }

    /// Handles one message from a binding where silence is possible (WebSocket).
    /// Under the `silent-refusals` variant, a message refused before it reached a
    /// task (its ERROR would name no request) gets no reply at all (AV1-A5).
    pub fn handle_frame(&self, bytes: &[u8]) -> Option<Reply> {
        match self.process(bytes) {
            Err(r) if r.request_id.is_none() && self.variant("silent-refusals") => None,
            outcome => Some(self.reply(outcome)),
        }
    }

    fn reply(&self, outcome: Result<Out, Rejection>) -> Reply {
        match outcome {
            Ok(out) => Reply {
                status: 200,
                body: self.envelope(out.ty, out.payload, Some(&out.answers), out.own_id),
            },
            Err(r) if self.fault("bare-error-replies") => {
                // The error a web framework sends: no envelope, no signature.
                let mut body = json!({"error": r.message, "code": r.code});
                if let Some(id) = r.request_id {
                    body["request_id"] = json!(id);
                }
                Reply {
                    status: u16::try_from(r.code).unwrap_or(400),
                    body: serde_json::to_vec(&body).unwrap_or_default(),
                }
            }
            Err(r) => {
                let code = r.code;
                let mut payload = json!({"code": code, "message": r.message});
                if self.fault("error-code-string") {
                    payload["code"] = json!(code.to_string());
                }
                if self.fault("error-code-nested") {
                    payload = json!({"error": {"code": code, "message": r.message}});
                }
                if let Some(id) = r.request_id {
                    payload["request_id"] = json!(id);
                }
                let status = if self.fault("error-code-nested") {
                    200
                } else {
                    u16::try_from(code)
                        .ok()
                        .filter(|c| ERROR_CODES.contains(&i64::from(*c)))
                        .unwrap_or(400)
                };
                Reply {
                    status,
                    body: self.envelope("ERROR", payload, None, None),
                }
            }
        }
    }

    /// The error reply for a message too large to read.
    pub fn too_large(&self) -> Reply {
        let payload = json!({
            "code": 400,
            "message": format!("message larger than {} bytes", self.cfg.max_message_bytes),
        });
        Reply {
            status: 400,
            body: self.envelope("ERROR", payload, None, None),
        }
    }

    /// Builds and signs a reply envelope.
    fn envelope(
        &self,
        ty: &str,
        payload: Value,
        in_reply_to: Option<&str>,
        own_id: Option<String>,
    ) -> Vec<u8> {
        let mut now = self.clock.now();
        if self.fault("stale-reply-timestamp") {
            now -= Duration::minutes(10);
        }
        let id = match (in_reply_to, own_id) {
            (Some(req), _) if self.fault("reuse-request-id") => req.to_string(),
            (_, Some(own)) => own,
            _ => new_id(),
        };
        let sender = if self.variant("raw-key-sender") {
            keys::b64url(self.key.public().as_bytes())
        } else {
            self.key.did()
        };
        let mut env = envelope::build(ty, &id, now, &sender, payload);
        if self.fault("wrong-protocol-tag") {
            env["protocol"] = json!("agora/1.1");
        }
        if self.fault("naive-timestamps") {
            let t = now.to_offset(time::UtcOffset::UTC);
            env["timestamp"] = json!(format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                t.microsecond()
            ));
        } else if self.variant("offset-timestamps") {
            let z = crate::wire::clock::format_timestamp(now);
            env["timestamp"] = json!(format!("{}+00:00", z.trim_end_matches('Z')));
        }
        if self.fault("sign-non-canonical") {
            // Signs the insertion-order text instead of the canonical bytes.
            let text = serde_json::to_vec(&env).unwrap_or_default();
            env["sender"]["signature"] = json!(keys::b64url(&self.key.sign(&text).to_bytes()));
        } else if !self.fault("unsigned-replies") {
            let key = if self.fault("reply-wrong-key") {
                &self.other_key
            } else {
                &self.key
            };
            if envelope::sign(&mut env, key, SigVariant::Blank).is_err() {
                // Cannot happen: `build` makes a sender object and only finite numbers
                // reach payloads. Fall back to an unsigned reply rather than panic.
                env["sender"]["signature"] = json!("");
            }
        }
        // Another spelling of the same signature bytes.
        let sig = env["sender"]["signature"].as_str().unwrap_or_default();
        let recoded = keys::b64_decode_any(sig).map(|(bytes, _)| {
            if self.fault("signature-hex") {
                bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
            } else if self.variant("std-base64-signature") {
                keys::b64std(&bytes)
            } else {
                sig.to_string()
            }
        });
        if let Some(r) = recoded.filter(|r| !r.is_empty()) {
            env["sender"]["signature"] = json!(r);
        }
        // Replies go out in canonical form; canonicalization of our own envelope
        // cannot fail (see above), the plain serialization is the fallback.
        crate::wire::jcs::canonicalize_serde(&env)
            .or_else(|_| serde_json::to_vec(&env))
            .unwrap_or_default()
    }

    /// Checks and performs one message; returns (reply type, payload, id answered).
    fn process(&self, bytes: &[u8]) -> Result<Out, Rejection> {
        if bytes.len() > self.cfg.max_message_bytes {
            return Err(reject(400, "message too large"));
        }
        if self.fault("refuse-everything") {
            // A provider whose allow-list does not name the requester.
            return Err(reject(
                401,
                "untrusted sender: not on this agent's allow-list",
            ));
        }
        let tree = json::parse(bytes).map_err(|e| {
            let code = if self.fault("malformed-code-500") {
                500
            } else {
                400
            };
            reject(code, format!("malformed JSON: {e}"))
        })?;
        let env = tree.to_serde();
        let Value::Object(obj) = &env else {
            return Err(reject(400, "the message is not a JSON object"));
        };
        // Envelope shape.
        let protocol = obj.get("protocol").and_then(Value::as_str);
        match protocol {
            Some(PROTOCOL) => {}
            Some(_) if self.fault("accept-any-protocol") => {}
            Some(p) => return Err(reject(400, format!("unsupported protocol {p:?}"))),
            None => return Err(reject(400, "missing or non-string `protocol`")),
        }
        let id = match obj.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => return Err(reject(400, "missing or empty `id`")),
        };
        let ty_raw = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| reject(400, "missing or non-string `type`"))?;
        let ty_upper;
        let ty = if self.fault("accept-lowercase-type") {
            ty_upper = ty_raw.to_ascii_uppercase();
            ty_upper.as_str()
        } else {
            ty_raw
        };
        if !TYPES.contains(&ty) {
            return Err(reject(400, format!("unknown message type {ty_raw:?}")));
        }
        let ts_text = obj
            .get("timestamp")
            .and_then(Value::as_str)
            .ok_or_else(|| reject(400, "missing or non-string `timestamp`"))?;
        let ts = parse_timestamp(ts_text)
            .map_err(|e| reject(400, format!("bad `timestamp` {ts_text:?}: {e}")))?;
        let sender_ok = obj
            .get("sender")
            .and_then(Value::as_object)
            .is_some_and(|s| s.get("id").is_some_and(Value::is_string));
        if !sender_ok {
            return Err(reject(400, "missing `sender` object with a string `id`"));
        }
        let sender = obj["sender"]["id"].as_str().unwrap_or_default().to_string();
        let payload = match obj.get("payload") {
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return Err(reject(400, "`payload` is not an object")),
            None => return Err(reject(400, "missing `payload`")),
        };

        self.check_signature(bytes, tree)?;

        // Freshness.
        let now = self.clock.now();
        if !self.fault("accept-stale") {
            if now - ts > self.cfg.replay_window {
                return Err(reject(
                    401,
                    format!(
                        "stale message: timestamp {ts_text} is more than {} s old",
                        self.cfg.replay_window.whole_seconds()
                    ),
                ));
            }
            if ts - now > self.cfg.replay_window {
                return Err(reject(401, format!("timestamp {ts_text} is in the future")));
            }
        }
        // Replay.
        {
            let mut st = self.lock();
            let window = self.cfg.replay_window;
            // Ids whose timestamp has left the window can no longer be replayed
            // (the freshness check rejects them), so they are forgotten.
            while let Some(Reverse((expiry, _, _))) = st.seen_expiry.peek() {
                if *expiry >= now {
                    break;
                }
                if let Some(Reverse((_, old, from))) = st.seen_expiry.pop() {
                    st.seen.remove(&old);
                    if let Some(n) = st.per_sender.get_mut(&from) {
                        *n -= 1;
                        if *n == 0 {
                            st.per_sender.remove(&from);
                        }
                    }
                }
            }
            let seen_as = self.by_sender(&sender, &id);
            if st.seen.contains(&seen_as) && !self.fault("accept-replayed-id") {
                return Err(Rejection {
                    code: 401,
                    message: format!("replayed message id {id:?}"),
                    request_id: None,
                });
            }
            let mine = st.per_sender.get(&sender).copied().unwrap_or(0);
            let crowded = st.seen.len() + self.cfg.max_per_sender > self.cfg.max_remembered;
            if crowded && mine >= self.cfg.max_per_sender {
                return Err(reject(
                    429,
                    format!("{mine} messages of this sender inside the replay window; try later"),
                ));
            }
            if st.seen.len() >= self.cfg.max_remembered {
                // Forgetting ids would open the door to replays: refuse instead.
                return Err(reject(
                    503,
                    "too many messages inside the replay window; try later",
                ));
            }
            if st.seen.insert(seen_as.clone()) {
                st.seen_expiry
                    .push(Reverse((ts + window, seen_as, sender.clone())));
                *st.per_sender.entry(sender.clone()).or_default() += 1;
            }
        }

        match ty {
            "REQUEST" => self.on_request(&id, &payload, now, &sender),
            "ACCEPT" => self.on_accept(&id, &payload, now, &sender),
            "HELLO" if self.fault("no-welcome") => {
                Err(reject(400, "unknown message type \"HELLO\""))
            }
            "HELLO" => Ok(out(
                "WELCOME",
                json!({"resources": [self.cfg.direct_resource, self.cfg.negotiated_resource]}),
                &id,
            )),
            "STATUS" => {
                let rid = payload
                    .get("request_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| reject(400, "STATUS needs a string `request_id`"))?;
                // Only the requester learns of its request: another sender's STATUS
                // finds none.
                let state = self
                    .lock()
                    .requests
                    .get(&self.by_sender(&sender, rid))
                    .copied();
                match state {
                    Some(s) => Ok(out("STATUS", json!({"request_id": rid, "state": s}), &id)),
                    None => Err(Rejection {
                        code: 404,
                        message: format!("unknown request {rid:?}"),
                        request_id: Some(rid.to_string()),
                    }),
                }
            }
            other => Err(reject(
                400,
                format!("this agent is a provider and does not take {other} messages"),
            )),
        }
    }

    fn check_signature(&self, bytes: &[u8], tree: json::Value<'_>) -> Result<(), Rejection> {
        if self.fault("skip-signature-check") {
            return Ok(());
        }
        let code = if self.fault("bad-signature-code-400") {
            400
        } else {
            401
        };
        let sig_present = tree
            .get("sender")
            .and_then(|s| s.get("signature"))
            .and_then(json::Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if !sig_present {
            if self.fault("accept-unsigned") {
                return Ok(());
            }
            return Err(reject(code, "the message is unsigned"));
        }
        if self.fault("verify-as-sent") {
            return self.verify_as_sent(bytes).map_err(|m| reject(code, m));
        }
        let v = envelope::verify_tree(tree);
        if v.ok() {
            Ok(())
        } else {
            Err(reject(
                code,
                format!(
                    "invalid signature: {}",
                    v.problem.unwrap_or_else(|| "does not verify".into())
                ),
            ))
        }
    }

    /// The `verify-as-sent` fault: verifies over the text in received member order.
    fn verify_as_sent(&self, bytes: &[u8]) -> Result<(), String> {
        let mut v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let sig = v["sender"]["signature"].as_str().unwrap_or("").to_string();
        v["sender"]["signature"] = json!("");
        let text = serde_json::to_vec(&v).map_err(|e| e.to_string())?;
        let (sig, _) = keys::decode_signature(&sig).map_err(|e| e.to_string())?;
        let id = v["sender"]["id"].as_str().unwrap_or("");
        let cands = keys::candidate_keys(id).map_err(|e| e.to_string())?;
        if cands.iter().any(|(k, _)| keys::verify(k, &text, &sig)) {
            Ok(())
        } else {
            Err("invalid signature".into())
        }
    }

    /// How the agent files a message or request id of `sender`: under the sender, so
    /// that another sender can neither take an id first nor overwrite its state;
    /// under the fault `ids-across-senders`, by the id alone.
    fn by_sender(&self, sender: &str, id: &str) -> String {
        if self.fault("ids-across-senders") {
            id.to_string()
        } else {
            format!("{sender}\u{0}{id}")
        }
    }

    fn remember_request(&self, id: &str, state: &'static str) {
        let mut st = self.lock();
        if st.requests.len() >= self.cfg.max_remembered {
            st.requests.clear();
        }
        st.requests.insert(id.to_string(), state);
    }

    fn on_request(
        &self,
        id: &str,
        p: &Map<String, Value>,
        now: OffsetDateTime,
        sender: &str,
    ) -> Result<Out, Rejection> {
        let with_id = |code: i64, message: String| Rejection {
            code,
            message,
            request_id: Some(id.to_string()),
        };
        let lenient = self.fault("lenient-payload");
        let resource = match p.get("resource") {
            Some(Value::String(s)) => s.clone(),
            Some(other) if lenient => other.to_string(),
            _ => return Err(with_id(400, "REQUEST needs a string `resource`".into())),
        };
        let params = match p.get("params") {
            Some(Value::Object(o)) => Value::Object(o.clone()),
            Some(other) if lenient => other.clone(),
            _ => return Err(with_id(400, "REQUEST needs an object `params`".into())),
        };
        let budget_max = match p.get("budget") {
            None => None,
            Some(Value::Object(b)) => b.get("max").and_then(Value::as_f64),
            Some(_) if lenient => None,
            Some(_) => return Err(with_id(400, "`budget` must be an object".into())),
        };
        match p.get("timeout") {
            None => {}
            Some(Value::Number(n)) if n.is_u64() => {}
            Some(_) if lenient => {}
            Some(_) => {
                return Err(with_id(
                    400,
                    "`timeout` must be a non-negative integer (ms)".into(),
                ))
            }
        }
        if resource == self.cfg.direct_resource {
            self.remember_request(&self.by_sender(sender, id), "COMPLETED");
            Ok(out("RESULT", self.result_payload(id, params), id))
        } else if resource == self.cfg.negotiated_resource {
            let cost = self.cfg.offer_cost;
            if budget_max.is_some() && self.fault("refuse-any-budget") {
                return Err(with_id(402, "payment required".into()));
            }
            if let Some(max) = budget_max {
                let too_low = if self.fault("refuse-exact-budget") {
                    max <= cost
                } else {
                    max < cost
                };
                if too_low && !self.fault("ignore-budget") {
                    let code = if self.fault("budget-code-400") {
                        400
                    } else {
                        402
                    };
                    return Err(with_id(
                        code,
                        format!("budget {max} is below the cost {cost}"),
                    ));
                }
            }
            // Under `reuse-request-id` the OFFER goes out under the REQUEST's id, and
            // that is the id the agent knows the offer by.
            let offer_id = if self.fault("reuse-request-id") {
                id.to_string()
            } else {
                new_id()
            };
            let ttl = self.cfg.offer_ttl_ms;
            {
                let mut st = self.lock();
                if st.offers.len() >= self.cfg.max_remembered || self.fault("forget-expired-offers")
                {
                    st.offers.retain(|_, o| o.expires > now && !o.accepted);
                }
                if st.offers.len() < self.cfg.max_remembered {
                    st.offers.insert(
                        offer_id.clone(),
                        Offer {
                            request_id: id.to_string(),
                            requester: sender.to_string(),
                            params,
                            expires: now + Duration::milliseconds(ttl as i64),
                            accepted: false,
                        },
                    );
                }
            }
            self.remember_request(&self.by_sender(sender, id), "NEGOTIATING");
            // The OFFER's envelope id is its offer id; the payload names it too (AV1-A11).
            let payload = json!({
                "request_id": id, "cost": cost, "ttl": ttl, "eta": self.cfg.offer_eta_ms,
                "offer_id": offer_id,
            });
            // Under `offer-id-in-payload` the envelope gets an id of its own and only
            // the payload's offer_id names the offer.
            let own_id = (!self.fault("offer-id-in-payload")).then_some(offer_id);
            Ok(Out {
                ty: "OFFER",
                payload,
                answers: id.to_string(),
                own_id,
            })
        } else {
            let code = if self.fault("unknown-resource-code-500") {
                500
            } else {
                404
            };
            Err(with_id(
                code,
                format!("resource {resource:?} is not supported"),
            ))
        }
    }

    fn result_payload(&self, request_id: &str, data: Value) -> Value {
        let status = if self.fault("result-status-uppercase") {
            "SUCCESS"
        } else {
            "success"
        };
        if self.fault("result-data-renamed") {
            return json!({"request_id": request_id, "status": status, "result": data});
        }
        json!({"request_id": request_id, "status": status, "data": data})
    }

    fn on_accept(
        &self,
        id: &str,
        p: &Map<String, Value>,
        now: OffsetDateTime,
        sender: &str,
    ) -> Result<Out, Rejection> {
        let offer_id = match p.get("offer_id") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(reject(400, "ACCEPT needs a string `offer_id`")),
        };
        match p.get("payment_proof") {
            None | Some(Value::String(_)) => {}
            Some(_) if self.fault("lenient-payload") => {}
            Some(_) => return Err(reject(400, "`payment_proof` must be a string")),
        }
        let mut st = self.lock();
        let Some(offer) = st.offers.get_mut(&offer_id) else {
            return Err(reject(404, format!("unknown offer {offer_id:?}")));
        };
        let request_id = offer.request_id.clone();
        if offer.requester != sender && !self.fault("accept-from-anyone") {
            // The offer was made to the requester (ACCEPT goes from it, agora-v1.md
            // section 3): another sender learns nothing of it.
            return Err(reject(
                401,
                format!("offer {offer_id:?} was not made to this sender"),
            ));
        }
        if offer.accepted && !self.fault("double-accept") {
            return Err(Rejection {
                code: 400,
                message: format!("offer {offer_id:?} was already accepted"),
                request_id: Some(request_id),
            });
        }
        if now > offer.expires && !self.fault("accept-expired-offer") {
            let code = if self.fault("expired-offer-code-400") {
                400
            } else {
                408
            };
            return Err(Rejection {
                code,
                message: format!(
                    "offer {offer_id:?} expired (ttl {} ms)",
                    self.cfg.offer_ttl_ms
                ),
                request_id: Some(request_id),
            });
        }
        offer.accepted = true;
        let params = offer.params.clone();
        let filed = self.by_sender(&offer.requester.clone(), &request_id);
        st.requests.insert(filed, "COMPLETED");
        drop(st);
        let linked = if self.fault("result-links-offer") {
            offer_id
        } else {
            request_id
        };
        Ok(out("RESULT", self.result_payload(&linked, params), id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::clock::{Clock, ManualClock};
    use time::macros::datetime;

    fn agent(clock: Arc<ManualClock>, cfg: AgentConfig) -> Agent {
        Agent::new(Keypair::from_seed(&[1; 32]), clock, cfg)
    }

    fn signed(k: &Keypair, ty: &str, at: OffsetDateTime, payload: Value) -> Vec<u8> {
        let mut env = envelope::build(ty, &new_id(), at, &k.did(), payload);
        envelope::sign(&mut env, k, SigVariant::Blank).unwrap();
        serde_json::to_vec(&env).unwrap()
    }

    fn reply(a: &Agent, bytes: &[u8]) -> Value {
        serde_json::from_slice(&a.handle(bytes).body).unwrap()
    }

    #[test]
    fn offer_expires_on_the_injected_clock() {
        let t0 = datetime!(2024-01-01 0:00 UTC);
        let clock = ManualClock::new(t0);
        let a = agent(clock.clone(), AgentConfig::default());
        let me = Keypair::from_seed(&[2; 32]);
        let quote = json!({"resource": "agora:quote:v1", "params": {}});
        let offer = reply(&a, &signed(&me, "REQUEST", t0, quote.clone()));
        assert_eq!(offer["type"], "OFFER");
        let accept = json!({"offer_id": offer["id"]});
        clock.advance(Duration::milliseconds(2001));
        let late = reply(&a, &signed(&me, "ACCEPT", clock.now(), accept));
        assert_eq!(
            (late["type"].as_str(), late["payload"]["code"].as_i64()),
            (Some("ERROR"), Some(408))
        );
        // Within the ttl it completes, linked to the request.
        let offer = reply(&a, &signed(&me, "REQUEST", clock.now(), quote));
        clock.advance(Duration::milliseconds(1999));
        let res = reply(
            &a,
            &signed(&me, "ACCEPT", clock.now(), json!({"offer_id": offer["id"]})),
        );
        assert_eq!(res["type"], "RESULT");
        assert_eq!(res["payload"]["request_id"], offer["payload"]["request_id"]);
    }

    #[test]
    fn one_sender_cannot_fill_the_memory_of_all() {
        let t0 = datetime!(2024-01-01 0:00 UTC);
        let clock = ManualClock::new(t0);
        let cfg = AgentConfig {
            max_remembered: 4,
            max_per_sender: 2,
            ..AgentConfig::default()
        };
        let a = agent(clock.clone(), cfg);
        let (me, other) = (Keypair::from_seed(&[2; 32]), Keypair::from_seed(&[3; 32]));
        let echo = json!({"resource": "agora:echo:v1", "params": {}});
        let req = |k: &Keypair| reply(&a, &signed(k, "REQUEST", t0, echo.clone()));
        // Room for all: the sender is served past its share.
        for _ in 0..3 {
            assert_eq!(req(&me)["type"], "RESULT");
        }
        // Less than a share left: the sender that holds one is throttled, the
        // others are served in the room kept for them.
        assert_eq!(req(&me)["payload"]["code"], 429);
        assert_eq!(req(&other)["type"], "RESULT");
        // Once the window has passed, the sender's ids are forgotten.
        clock.advance(Duration::seconds(61));
        assert_eq!(
            reply(&a, &signed(&me, "REQUEST", clock.now(), echo.clone()))["type"],
            "RESULT"
        );
    }

    #[test]
    fn replay_window_and_memory_bound() {
        let t0 = datetime!(2024-01-01 0:00 UTC);
        let clock = ManualClock::new(t0);
        let cfg = AgentConfig {
            max_remembered: 3,
            ..AgentConfig::default()
        };
        let a = agent(clock.clone(), cfg);
        let me = Keypair::from_seed(&[2; 32]);
        let echo = json!({"resource": "agora:echo:v1", "params": {}});
        let msg = signed(&me, "REQUEST", t0, echo.clone());
        assert_eq!(reply(&a, &msg)["type"], "RESULT");
        assert_eq!(reply(&a, &msg)["payload"]["code"], 401);
        for _ in 0..2 {
            assert_eq!(
                reply(&a, &signed(&me, "REQUEST", t0, echo.clone()))["type"],
                "RESULT"
            );
        }
        // Full: refuses rather than forgetting ids still inside the window.
        assert_eq!(
            reply(&a, &signed(&me, "REQUEST", t0, echo.clone()))["payload"]["code"],
            503
        );
        // Once the window has passed, old ids are forgotten and new messages flow.
        clock.advance(Duration::seconds(61));
        assert_eq!(
            reply(&a, &signed(&me, "REQUEST", clock.now(), echo))["type"],
            "RESULT"
        );
        assert_eq!(
            reply(&a, &msg)["payload"]["code"],
            401,
            "the replayed message is stale now"
        );
    }

    #[test]
    fn garbage_never_panics_and_gets_error_400() {
        let a = agent(
            ManualClock::new(datetime!(2024-01-01 0:00 UTC)),
            AgentConfig::default(),
        );
        for bytes in [
            &b""[..],
            b"{",
            b"[]",
            b"null",
            b"\xff\xfe",
            b"{\"protocol\":1}",
            &[b'['; 10_000],
        ] {
            let r = reply(&a, bytes);
            assert_eq!(r["type"], "ERROR", "{:?}", String::from_utf8_lossy(bytes));
            assert_eq!(r["payload"]["code"], 400);
        }
        let big = vec![b' '; a.config().max_message_bytes + 1];
        assert_eq!(reply(&a, &big)["payload"]["code"], 400);
    }
}
