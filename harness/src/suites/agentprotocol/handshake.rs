//! The handshake (agentprotocol.md, Handshake Flow and Capabilities): the case's own
//! agent (`Me`: its key, its connection, what its hello learned of the target), the
//! checks of a hello reply, and the hello case.

use super::payloads::no_code;
use super::replies::{
    agent_id_form, read_reply, same_agent, strings, ECHO_REQUEST_NOT_CARRIED_OUT,
    FROM_NOT_THE_ADDRESSEE,
};
use super::wire::{
    answer_text, case_verdict, case_wait, describe, endpoint_driver, no_answer, refused, shown,
    transport_finding, Answer, Asked, Other, REMEMBERED_SIGNATURES,
};
use crate::case::{Bindings, Case, Level, Step};
use crate::drive::{DriveError, Driver, Limits, Received};
use crate::finding::Finding;
use crate::rules::rules;
use crate::script::Ctx;
use reference_impl::agentprotocol::message::{self, agent_id};
use reference_impl::wire::clock::format_timestamp;
use reference_impl::wire::keys::Keypair;
use reference_impl::wire::{json, new_id};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

rules! {
    // --- The hello every case opens with (Me::hello) and its controls.
    HELLO_NOT_HELLO {
        key: "agentprotocol/hello:not-hello",
        requirements: &["AGP-013"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a hello is answered with a hello",
        fails: "a hello answered with a response, notify or request (an error is a refusal of the valid hello)",
        passes: "a reply of type hello",
    }
    HELLO_NO_REPLY {
        key: "agentprotocol/hello:no-reply",
        requirements: &["AGP-013", "AGP-A9"],
        level: Some(Level::Should),
        owner: "agentprotocol/hello",
        summary: "a hello draws a reply (a warning, AGP-A9)",
        fails: "no reply to a hello, or HTTP with no body, while a request after it is answered",
        passes: "a reply to the hello",
    }
    // --- The cases' own checks (mod.rs, in the order of CASES).
    HELLO_VERSION {
        // Two sites: no version, and a string version other than "0.1".
        key: "agentprotocol/hello:version",
        requirements: &["AGP-014"],
        level: None,
        owner: "",
        summary: "the hello payload carries version \"0.1\"",
        fails: "a hello payload with no version, or a version string other than \"0.1\" (a version of another type is the schema's finding)",
        passes: "version \"0.1\"",
    }
    HELLO_FEATURES {
        key: "agentprotocol/hello:features",
        requirements: &["AGP-014"],
        level: None,
        owner: "",
        summary: "the hello payload carries a features list",
        fails: "a hello payload with no features member",
        passes: "a features member",
    }
    HELLO_NO_CAPABILITIES {
        key: "agentprotocol/hello:no-capabilities",
        requirements: &["AGP-015"],
        level: None,
        owner: "",
        summary: "the target's hello lists its capabilities in from.capabilities",
        fails: "a hello whose from.capabilities is empty or missing",
        passes: "at least one capability",
    }
    HELLO_CORE_CAPABILITIES {
        key: "agentprotocol/hello:core-capabilities",
        requirements: &["AGP-016"],
        level: None,
        owner: "",
        summary: "a capability in the agentprotocol: namespace is one of the core five",
        fails: "an agentprotocol: capability other than core, tasks, proofs, reputation or directory",
        passes: "only core capabilities under agentprotocol:, anything under other prefixes",
    }
    HELLO_CAPABILITY_FORM {
        key: "agentprotocol/hello:capability-form",
        requirements: &["AGP-007"],
        level: None,
        owner: "",
        summary: "a capability has the form prefix:name",
        fails: "a capability with no colon",
        passes: "every capability prefix:name",
    }
    HELLO_NO_CORE {
        key: "agentprotocol/hello:no-core",
        requirements: &["AGP-016", "AGP-A20"],
        level: Some(Level::Info),
        owner: "",
        summary: "whether the target advertises agentprotocol:core is recorded (informational, AGP-A20)",
        fails: "a hello listing capabilities, none of them agentprotocol:core",
        passes: "agentprotocol:core among the capabilities",
    }
    UNKNOWN_ACTION_DETAILS {
        key: "agentprotocol/unknown-action:details",
        requirements: &["AGP-020"],
        level: None,
        owner: "",
        summary: "CAPABILITY_NOT_SUPPORTED details name the requested action and list the available ones",
        fails: "details without requested equal to the action asked for, or without an available list",
        passes: "details.requested and details.available (a list)",
    }
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
    /// This agent said hello.
    greeted: bool,
    /// The case judges this very sender (a claim about senders that said hello):
    /// a refused valid message never hands the case to another sender.
    kept: bool,
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
            greeted: false,
            kept: false,
        }
    }

    /// Keeps the case to this sender: its claims are about a sender that said hello,
    /// so a valid message refused blocks them ([`Me::accepted`]).
    pub fn keep_sender(&mut self) {
        self.kept = true;
    }

    /// An unsigned message from this agent, addressed to the target when known (from
    /// its hello, else from the profile), a broadcast otherwise (AGP-A22).
    pub fn message(&self, ty: &str, payload: Value) -> Value {
        let to = match self.target.as_ref().or(self.addressed.as_ref()) {
            Some(t) => json!({"agentId": t, "broadcast": false}),
            None => json!({"broadcast": true}),
        };
        json!({
            "protocol": message::PROTOCOL, "id": new_id(), "timestamp": format_timestamp(time::OffsetDateTime::now_utc()),
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
            Some("error") => return self.refused_valid(ctx, msg, what, &r).await,
            _ => {}
        }
        Ok(r)
    }

    /// `msg`, a valid message of this sender, was refused with `r`: a finding, one
    /// however many cases meet it. The rest of agentprotocol.md does not depend on
    /// the handshake (signature verification, AGP-024, least of all), so when this
    /// sender said hello the same message goes again from a sender that never did
    /// ([`Me::other_sender`]): carried out, that sender speaks for the case from
    /// here on, its acceptance the case's control, and the case is judged beside
    /// it. When no other sender is carried out either, the refusal blocks the case.
    pub async fn refused_valid(
        &mut self,
        ctx: &mut Ctx,
        msg: &Value,
        what: &str,
        r: &Value,
    ) -> Step<Value> {
        let refusal = refused(r, what, &["AGP-018"]);
        match self.other_sender(ctx, msg, what).await? {
            Some(reply) => {
                ctx.finding(judged_beside_other_sender(refusal));
                Ok(reply)
            }
            None => Err(ctx.block(refusal)),
        }
    }

    /// Sends `msg` again from a new sender that never said hello, when this one
    /// said hello and the case may change senders. Carried out, the new sender
    /// takes this one's place, its acceptance is the case's control, and its reply
    /// is returned; anything else leaves this sender in place (`None`).
    async fn other_sender(
        &mut self,
        ctx: &mut Ctx,
        msg: &Value,
        what: &str,
    ) -> Step<Option<Value>> {
        if !self.greeted || self.kept {
            return Ok(None);
        }
        let mut s = Me::new(ctx);
        s.target = self.target.clone();
        s.target_capabilities = self.target_capabilities.clone();
        s.target_features = self.target_features.clone();
        s.addressed = self.addressed.clone();
        let mut m = msg.clone();
        m["from"]["agentId"] = json!(s.id);
        m["id"] = json!(new_id());
        if let Some(o) = m.as_object_mut() {
            o.remove("signature");
        }
        s.sign(&mut m);
        let again = format!("{what}, sent again from a sender that never said hello");
        ctx.note(format!("the sender that said hello had a valid message refused: {again}, as the control the case's claims are judged beside"));
        let wait = case_wait(ctx);
        let reply = match s.send_answer(ctx, &m, wait).await? {
            Answer::Reply(r) if r["type"] == "response" => r,
            other => {
                ctx.note(format!(
                    "{again} drew {}: no sender of the case's own is carried out",
                    answer_text(&other)
                ));
                return Ok(None);
            }
        };
        ctx.control(&again);
        *self = s;
        Ok(Some(reply))
    }

    /// Chooses the case's sender before probes whose control comes after them: a
    /// valid echo request, which, refused from the sender that said hello, goes
    /// again from one that never did ([`Me::refused_valid`]). A refusal of both is
    /// left for the case's own control to meet.
    pub async fn choose_sender(&mut self, ctx: &mut Ctx) -> Step<()> {
        let echo = ctx.profile().agentprotocol.echo_action.clone();
        let req = self.request(&echo, json!({"sender": "check"}), json!({}));
        let what = "a valid echo request (to choose the case's sender)";
        let r = self.send(ctx, &req).await?;
        if r["type"] == "error" && self.other_sender(ctx, &req, what).await?.is_some() {
            ctx.finding(judged_beside_other_sender(refused(&r, what, &["AGP-018"])));
        }
        Ok(())
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
                ECHO_REQUEST_NOT_CARRIED_OUT
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
        self.greeted = true;
        let wait = case_wait(ctx);
        let r = match self.send_answer(ctx, &h, wait).await? {
            Answer::Reply(r) => {
                if r["type"] == "error" {
                    return Err(ctx.block(refused(&r, "a valid hello", &["AGP-013"])));
                }
                if r["type"] != "hello" {
                    ctx.finding(HELLO_NOT_HELLO.found(format!(
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
                ctx.finding(HELLO_NO_REPLY.found(format!(
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
                    FROM_NOT_THE_ADDRESSEE.found(format!("the hello addressed to {t} (the profile's agent_id) was answered by {f} (AGP-009)")),
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

/// A refusal of the sender that said hello, once a sender that never did had the
/// same message carried out: the cases were judged beside that one, not blocked.
fn judged_beside_other_sender(mut f: Finding) -> Finding {
    if let Some((said, _)) = f.summary.split_once("; every case that needs") {
        f.summary = format!("{said}; the same message from a sender that never said hello was carried out, and the cases were judged beside that sender");
    }
    f
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
    Some(UNKNOWN_ACTION_DETAILS.found(format!(
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
        None => found.push(HELLO_VERSION.found(format!(
            "the hello payload carries no version (AGP-014): {}",
            shown(&p.to_string())
        ))),
        Some(Value::String(v)) if v != "0.1" => found.push(HELLO_VERSION.found(format!(
            "the hello payload's version is {v:?}, not \"0.1\" (AGP-014)"
        ))),
        Some(_) => {}
    }
    if p.get("features").is_none() {
        found.push(HELLO_FEATURES.found(format!(
            "the hello payload carries no features list (AGP-014): {}",
            shown(&p.to_string())
        )));
    }
    if caps.is_empty() {
        found.push(HELLO_NO_CAPABILITIES.found(format!(
            "the target's hello lists no capability: from is {} (AGP-015)",
            shown(&r["from"].to_string())
        )));
    }
    for c in caps {
        if c.starts_with("agentprotocol:") && !CORE.contains(&c.as_str()) {
            found.push(
                HELLO_CORE_CAPABILITIES
                    .found(format!("{c} is not one of the core capabilities (AGP-016)")),
            );
        }
        if !c.contains(':') {
            found.push(HELLO_CAPABILITY_FORM.found(format!(
                "capability {c:?} is not of the form prefix:name (AGP-007)"
            )));
        }
    }
    if !caps.is_empty() && !caps.iter().any(|c| c == "agentprotocol:core") {
        found
            .push(HELLO_NO_CORE.found(
                "the target does not advertise agentprotocol:core (informational, AGP-A20)",
            ));
    }
    found
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("hello", "hello is answered by a signed hello with the full envelope, version, features and capabilities",
        ["AGP-001", "AGP-002", "AGP-003", "AGP-004", "AGP-005", "AGP-006", "AGP-007", "AGP-008", "AGP-009", "AGP-011", "AGP-012",
         "AGP-013", "AGP-014", "AGP-015", "AGP-016", "AGP-017", "AGP-030", "AGP-031", "AGP-032", "AGP-040", "AGP-041", "AGP-042", "AGP-044"],
        Fact, |ctx| {
        // The envelope, signature, addressee and payload types of the reply are read
        // by read_reply, whose findings this case owns.
        let mut me = Me::new(ctx);
        let r = me.hello(ctx).await?;
        if r["type"] != "hello" {
            // Judged by the hello:not-hello or hello:no-reply finding this case owns.
            return Ok(());
        }
        let found = hello_findings(&r, &me.target_capabilities);
        ctx.note(format!("over {}: capabilities {:?}, features {:?} (informational, AGP-A17)", ctx.transport, me.target_capabilities, me.target_features));
        case_verdict(ctx, found)
    }),
];
