//! The agora-exchange reference server (agora-exchange.txt): `POST {url}`,
//! `POST {url}/conversations/{id}`, `GET {url}/wellknown`.
//!
//! Errors go to their layer (§10): transport-level problems (malformed JSON, invalid
//! fields, unknown endpoints and conversations) are HTTP 400/404; Agora-level ones
//! (unsupported protocol, expired conversation) are HTTP 200 with status failure;
//! protocol-level ones (a body that breaks the protocol document) are status success
//! with `body.error`. Every reply is JSON with `Content-Type: application/json`.
//!
//! ```text
//! POST /  {multiround:true} ──▶ success {conversationId, conversationExpires = now + ttl}
//! POST /conversations/{id}  ──▶ success while now < conversationExpires
//!                           ──▶ 200 failure "Conversation expired" afterwards
//!                           ──▶ 404 for an id never issued
//! ```

use super::document::{is_sha1_hex, sha1_base64, sha1_hex, ProtocolDocument, ECHO_DOCUMENT};
use super::faults::FAULTS;
use crate::faults::FaultSet;
use crate::wire::clock::{SharedClock, SystemClock};
use crate::wire::json;
use axum::body::{to_bytes, Body};
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Tunable behaviour of the reference server.
#[derive(Debug, Clone)]
pub struct ExchangeConfig {
    /// Lifetime of a conversation, in seconds (short by default, so that a harness
    /// can watch one expire).
    pub conversation_ttl_s: u64,
    pub documents: Vec<ProtocolDocument>,
    pub max_body_bytes: usize,
    /// Most conversations remembered at once (expired ones are dropped first).
    pub max_conversations: usize,
    /// How long an expired conversation is still answered "Conversation expired"
    /// before it is forgotten (then it is unknown: 404).
    pub expired_grace_s: u64,
    /// Read conversationExpires as the whole second it names: a conversation is
    /// expired only once that second has passed, not from its first instant. The
    /// spec gives a Unix timestamp in seconds and leaves the reading open (ambiguity
    /// AEX-A11); the default expires at the instant.
    pub expiry_whole_second: bool,
    /// Take protocol documents in `protocolSources` only by reference: each entry
    /// must be an http(s) URL, which the server fetches (at most `max_body_bytes`,
    /// within 2 s) and checks against protocolHash; text is refused with "No valid
    /// protocol source provided." (agora-exchange.txt §6.1 allows either form).
    pub sources_by_reference: bool,
    /// Serve `GET /wellknown` (true), or answer it 404 as a server does that
    /// leaves the optional endpoint out (agora-exchange.txt §9).
    pub wellknown: bool,
    pub faults: FaultSet,
}

impl Default for ExchangeConfig {
    fn default() -> Self {
        ExchangeConfig {
            conversation_ttl_s: 3,
            documents: vec![ProtocolDocument::new(ECHO_DOCUMENT)],
            max_body_bytes: 64 * 1024,
            max_conversations: 10_000,
            expired_grace_s: 600,
            expiry_whole_second: false,
            sources_by_reference: false,
            wellknown: true,
            faults: FaultSet::none(),
        }
    }
}

impl ExchangeConfig {
    pub fn with_faults<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self, String> {
        self.faults = FaultSet::from_names(FAULTS, names)?;
        Ok(self)
    }
}

#[derive(Debug, Clone)]
struct Conversation {
    protocol: Option<String>,
    expires: i64,
}

/// The server state.
pub struct Exchange {
    cfg: ExchangeConfig,
    clock: SharedClock,
    conversations: Mutex<HashMap<String, Conversation>>,
}

/// A reply: HTTP status and JSON body.
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

fn transport_error(status: u16, message: impl Into<String>) -> Reply {
    Reply {
        status,
        body: json!({"status": "failure", "error": message.into()}),
    }
}

/// A request the server cannot read answered as if read: HTTP 200 with status
/// "error" (`transport-error-200`).
fn unreadable_200(message: impl Into<String>) -> Reply {
    Reply {
        status: 200,
        body: json!({"status": "error", "message": message.into()}),
    }
}

/// An unhandled exception: HTTP 500, rendered by `respond` as the framework's HTML
/// error page (`crash-500-html`).
fn crash() -> Reply {
    Reply {
        status: 500,
        body: Value::Null,
    }
}

/// The HTML page a web framework answers an unhandled exception with.
const CRASH_PAGE: &str = "<!doctype html>\n<html><head><title>500 Internal Server Error</title></head>\n<body><h1>Internal Server Error</h1><p>The server encountered an internal error and was unable to complete your request.</p></body></html>\n";

/// A validation error in the default shape of a Python web framework (FastAPI /
/// pydantic): HTTP 422 with `{"detail": [{"loc", "msg", "type"}]}`.
fn framework_error(loc: &[&str], msg: &str, kind: &str) -> Reply {
    Reply {
        status: 422,
        body: json!({"detail": [{"loc": loc, "msg": msg, "type": kind}]}),
    }
}

const KNOWN_FIELDS: [&str; 4] = ["body", "protocolHash", "protocolSources", "multiround"];

impl Exchange {
    pub fn new(cfg: ExchangeConfig, clock: SharedClock) -> Exchange {
        Exchange {
            cfg,
            clock,
            conversations: Mutex::new(HashMap::new()),
        }
    }

    pub fn with_config(cfg: ExchangeConfig) -> Exchange {
        Exchange::new(cfg, Arc::new(SystemClock))
    }

    pub fn config(&self) -> &ExchangeConfig {
        &self.cfg
    }

    fn fault(&self, name: &str) -> bool {
        self.cfg.faults.has(name)
    }

    fn now_unix(&self) -> i64 {
        self.clock.now().unix_timestamp()
    }

    /// An Agora-level failure (HTTP 200), shaped as the faults say.
    fn agora_failure(&self, message: &str) -> Reply {
        Reply {
            status: 200,
            body: json!({"status": "failure", "error": message}),
        }
    }

    /// Applies the reply-shape faults to an outgoing body.
    pub fn finish(&self, mut reply: Reply) -> Reply {
        if self.fault("malformed-request-422") && reply.status == 400 {
            let msg = reply.body["error"].as_str().unwrap_or("Invalid request");
            let kind = if msg.starts_with("Malformed JSON") {
                "json_invalid"
            } else {
                "value_error"
            };
            reply = framework_error(&["body"], msg, kind);
        }
        if let Value::Object(o) = &mut reply.body {
            if self.fault("failure-status-error") && o.get("status") == Some(&json!("failure")) {
                o.insert("status".into(), json!("error"));
                if let Some(e) = o.remove("error") {
                    o.insert("message".into(), e);
                }
            }
            if self.fault("failure-without-error") && o.get("status") == Some(&json!("failure")) {
                if let Some(e) = o.remove("error") {
                    o.insert("body".into(), e);
                }
            }
            if self.fault("status-capitalized") {
                if let Some(Value::String(s)) = o.get_mut("status") {
                    let mut c = s.chars();
                    if let Some(first) = c.next() {
                        *s = first.to_uppercase().chain(c).collect();
                    }
                }
            }
        }
        reply
    }

    /// `GET /wellknown`.
    pub fn wellknown(&self) -> Value {
        let mut map = Map::new();
        for d in &self.cfg.documents {
            let key = if self.fault("wellknown-bad-hash") {
                sha1_hex(d.text.replace('\n', "\r\n").as_bytes())
            } else if self.fault("protocol-hash-base64") {
                sha1_base64(d.text.as_bytes())
            } else {
                d.hash.clone()
            };
            map.insert(key, json!([d.text]));
        }
        Value::Object(map)
    }

    /// The document a well-formed `hash` names, if the server supports it. Under
    /// `protocol-hash-base64` only the base64 form names a document.
    fn supported(&self, hash: &str) -> Option<&ProtocolDocument> {
        if self.fault("protocol-hash-base64") {
            return self
                .cfg
                .documents
                .iter()
                .find(|d| sha1_base64(d.text.as_bytes()) == hash);
        }
        if !is_sha1_hex(hash) {
            return None;
        }
        self.cfg
            .documents
            .iter()
            .find(|d| d.hash.eq_ignore_ascii_case(hash))
    }

    /// Handles `POST /` (conversation `None`) or `POST /conversations/{id}`.
    pub fn handle(&self, conversation: Option<&str>, bytes: &[u8]) -> Reply {
        let reply = self.process(conversation, bytes);
        self.finish(reply)
    }

    fn process(&self, conversation: Option<&str>, bytes: &[u8]) -> Reply {
        if bytes.len() > self.cfg.max_body_bytes {
            return transport_error(
                400,
                format!("request larger than {} bytes", self.cfg.max_body_bytes),
            );
        }
        let tree = match json::parse(bytes) {
            Ok(t) => t,
            Err(e) if self.fault("transport-error-200") => {
                return unreadable_200(format!("Malformed JSON: {e}"));
            }
            Err(e) => {
                let status = if self.fault("malformed-json-500") {
                    500
                } else {
                    400
                };
                return transport_error(status, format!("Malformed JSON: {e}"));
            }
        };
        let Value::Object(req) = tree.to_serde() else {
            if self.fault("crash-500-html") {
                return crash();
            }
            if self.fault("transport-error-200") {
                return unreadable_200("The request must be a JSON object");
            }
            return transport_error(400, "The request must be a JSON object");
        };
        if self.fault("crash-500-html") && !req.contains_key("body") {
            // request["body"] in a server without error handling.
            return crash();
        }
        if conversation.is_some()
            && self.fault("follow-up-crashes-without-body")
            && !req.contains_key("body")
        {
            // The same, in a follow-up handler only: POST / checks it.
            return crash();
        }
        if conversation.is_none()
            && self.fault("require-protocol-hash")
            && !req.contains_key("protocolHash")
        {
            return framework_error(&["body", "protocolHash"], "Field required", "missing");
        }
        if self.fault("reject-extra-fields") {
            if let Some(k) = req.keys().find(|k| !KNOWN_FIELDS.contains(&k.as_str())) {
                return transport_error(400, format!("Unknown field '{k}'"));
            }
        }
        // Follow-ups: the conversation must exist and be alive.
        let mut conv_protocol: Option<String> = None;
        let mut conv_reply: Option<(String, i64)> = None;
        if let Some(id) = conversation {
            let now = self.now_unix();
            let known = self.lock().get(id).cloned();
            match known {
                None if self.fault("accept-unknown-conversation") => {
                    conv_reply = Some((id.to_string(), now + self.cfg.conversation_ttl_s as i64));
                }
                None => return transport_error(404, "Unknown conversation"),
                Some(c) => {
                    let expired_from = c.expires + i64::from(self.cfg.expiry_whole_second);
                    if now >= expired_from && !self.fault("ignore-expiry") {
                        return self.agora_failure("Conversation expired");
                    }
                    conv_protocol = c.protocol.clone();
                    conv_reply = Some((id.to_string(), c.expires));
                }
            }
        }
        if conversation.is_none()
            && self.fault("require-protocol-sources")
            && req.get("protocolSources").is_none()
        {
            // request["protocolSources"] in a Python server, its KeyError as the error.
            return self.agora_failure("'protocolSources'");
        }
        let body = match req.get("body") {
            None if self.fault("malformed-request-422") => {
                return framework_error(&["body", "body"], "Field required", "missing")
            }
            None => return self.agora_failure("Missing field 'body'"),
            Some(b @ (Value::String(_) | Value::Object(_))) => b.clone(),
            Some(_) => {
                return transport_error(400, "Invalid field 'body': expected a string or an object")
            }
        };
        let multiround = match req.get("multiround") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return transport_error(400, "Invalid field 'multiround': expected a boolean")
            }
        };
        match req.get("protocolSources") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
            Some(_) => {
                return transport_error(
                    400,
                    "Invalid field 'protocolSources': expected an array of strings",
                )
            }
        }
        let hash = match req.get("protocolHash") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return transport_error(
                    400,
                    "Invalid field 'protocolHash': expected a string or null",
                )
            }
        };
        let protocol = if conversation.is_some() {
            match (&hash, &conv_protocol) {
                (None, _) => conv_protocol.clone(),
                (Some(h), Some(orig)) if h.eq_ignore_ascii_case(orig) => conv_protocol.clone(),
                // The fault: the new hash is ignored and the conversation goes on.
                (Some(_), _) if self.fault("allow-protocol-change") => conv_protocol.clone(),
                (Some(_), _) => {
                    return transport_error(
                        400,
                        "Malformed request: the protocol cannot change within a conversation",
                    )
                }
            }
        } else {
            hash
        };
        let document = match &protocol {
            None => None,
            Some(h) => match self.supported(h) {
                Some(d) => Some(d.clone()),
                _ if self.fault("unsupported-protocol-400") => {
                    return transport_error(400, "Unsupported protocol")
                }
                _ => return self.agora_failure("Unsupported protocol"),
            },
        };
        // The answer itself.
        let mut out = Map::new();
        match &document {
            None => {
                out.insert("status".into(), json!("success"));
                out.insert("body".into(), json!({"echo": body}));
            }
            Some(d) => match super::document::answer(d, &body) {
                Ok(answer) => {
                    out.insert("status".into(), json!("success"));
                    out.insert("body".into(), answer);
                }
                Err(why) => {
                    if self.fault("protocol-error-as-failure") {
                        out.insert("status".into(), json!("failure"));
                        out.insert("error".into(), json!(why));
                    } else {
                        out.insert("status".into(), json!("success"));
                        out.insert("body".into(), json!({"error": why}));
                    }
                }
            },
        }
        if conversation.is_none() && multiround {
            match self.open_conversation(protocol.clone()) {
                Some(c) => conv_reply = Some(c),
                None => return self.agora_failure("Too many open conversations; try later"),
            }
        }
        if let Some((id, expires)) = conv_reply {
            out.insert("conversationId".into(), json!(id));
            if !self.fault("no-conversation-expires") {
                out.insert("conversationExpires".into(), json!(expires));
            }
        }
        Reply {
            status: 200,
            body: Value::Object(out),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Conversation>> {
        self.conversations.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new conversation: 128 random bits as hex, expiring after the ttl.
    fn open_conversation(&self, protocol: Option<String>) -> Option<(String, i64)> {
        let now = self.now_unix();
        let mut convs = self.lock();
        if convs.len() >= self.cfg.max_conversations {
            let grace = self.cfg.expired_grace_s as i64;
            convs.retain(|_, c| c.expires + grace > now);
            if convs.len() >= self.cfg.max_conversations {
                convs.retain(|_, c| c.expires > now);
            }
            if convs.len() >= self.cfg.max_conversations {
                return None;
            }
        }
        let bytes: [u8; 16] = rand::random();
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let expires = now + self.cfg.conversation_ttl_s as i64;
        convs.insert(id.clone(), Conversation { protocol, expires });
        Some((id, expires))
    }
}

/// The router serving `exchange` at `/`.
pub fn router(exchange: Arc<Exchange>) -> Router {
    Router::new()
        .route("/", post(post_root).fallback(method_not_allowed))
        .route(
            "/conversations/{id}",
            post(post_conversation).fallback(method_not_allowed),
        )
        .route(
            "/wellknown",
            get(get_wellknown).fallback(method_not_allowed),
        )
        .fallback(not_found)
        .with_state(exchange)
}

fn respond(ex: &Exchange, reply: Reply) -> Response {
    if reply.status == 500 && ex.fault("crash-500-html") {
        let html = [(header::CONTENT_TYPE, "text/html; charset=utf-8")];
        return (StatusCode::INTERNAL_SERVER_ERROR, html, CRASH_PAGE).into_response();
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let ct = if ex.fault("text-content-type") {
        "text/plain"
    } else {
        "application/json"
    };
    let body = serde_json::to_vec(&reply.body).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, ct)], body).into_response()
}

async fn read_body(ex: &Exchange, body: Body) -> Result<Vec<u8>, Response> {
    to_bytes(body, ex.cfg.max_body_bytes)
        .await
        .map(|b| b.to_vec())
        .map_err(|_| {
            respond(
                ex,
                transport_error(
                    400,
                    format!("request larger than {} bytes", ex.cfg.max_body_bytes),
                ),
            )
        })
}

async fn post_root(State(ex): State<Arc<Exchange>>, body: Body) -> Response {
    match read_body(&ex, body).await {
        Ok(bytes) => {
            if let Some(refused) = sources_refused(&ex, &bytes).await {
                return respond(&ex, refused);
            }
            let reply = ex.handle(None, &bytes);
            respond(&ex, reply)
        }
        Err(r) => r,
    }
}

/// Under `sources_by_reference`, the refusal of a request whose protocolSources
/// holds text, a URL that cannot be fetched, or a document that does not hash to
/// protocolHash; `None` when its sources are taken (or it has none).
async fn sources_refused(ex: &Exchange, bytes: &[u8]) -> Option<Reply> {
    if !ex.cfg.sources_by_reference {
        return None;
    }
    let req: Value = serde_json::from_slice(bytes).ok()?;
    let sources = req.get("protocolSources")?.as_array()?;
    let hash = req.get("protocolHash").and_then(Value::as_str);
    let client = crate::wire::http::builder()
        .timeout(std::time::Duration::from_secs(2))
        .build()
        .ok()?;
    for s in sources {
        let Some(url) = s
            .as_str()
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        else {
            return Some(ex.agora_failure("No valid protocol source provided."));
        };
        let text = match client.get(url).send().await {
            Ok(r) if r.status().is_success() => {
                let mut r = r;
                let mut body = Vec::new();
                loop {
                    match r.chunk().await {
                        Ok(Some(c)) if body.len() + c.len() <= ex.cfg.max_body_bytes => {
                            body.extend_from_slice(&c)
                        }
                        Ok(None) => break body,
                        _ => return Some(ex.agora_failure("No valid protocol source provided.")),
                    }
                }
            }
            _ => return Some(ex.agora_failure("No valid protocol source provided.")),
        };
        if hash.is_some_and(|h| !h.eq_ignore_ascii_case(&super::document::sha1_hex(&text))) {
            return Some(ex.agora_failure("The protocol source does not match protocolHash."));
        }
    }
    None
}

async fn post_conversation(
    State(ex): State<Arc<Exchange>>,
    Path(id): Path<String>,
    body: Body,
) -> Response {
    match read_body(&ex, body).await {
        Ok(bytes) => {
            let reply = ex.handle(Some(&id), &bytes);
            respond(&ex, reply)
        }
        Err(r) => r,
    }
}

async fn get_wellknown(State(ex): State<Arc<Exchange>>) -> Response {
    if !ex.cfg.wellknown {
        return not_found(State(ex)).await;
    }
    let mut body = ex.wellknown();
    if ex.fault("wellknown-wrapped") {
        body = json!({"status": "success", "protocols": body});
    }
    respond(&ex, Reply { status: 200, body })
}

async fn method_not_allowed(State(ex): State<Arc<Exchange>>) -> Response {
    if ex.fault("non-post-empty-200") {
        // A catch-all route that answers anything it does not serve with 200 and nothing.
        return StatusCode::OK.into_response();
    }
    let reply = ex.finish(transport_error(
        405,
        "Method not allowed: Agora exchanges use POST",
    ));
    respond(&ex, reply)
}

async fn not_found(State(ex): State<Arc<Exchange>>) -> Response {
    let reply = ex.finish(transport_error(404, "Unknown endpoint"));
    respond(&ex, reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::clock::{Clock, ManualClock};
    use time::macros::datetime;

    #[test]
    fn conversation_lifecycle_on_the_injected_clock() {
        let clock = ManualClock::new(datetime!(2025-01-01 0:00 UTC));
        let ex = Exchange::new(ExchangeConfig::default(), clock.clone());
        let h = ProtocolDocument::new(ECHO_DOCUMENT).hash;
        let start = ex.handle(
            None,
            format!(r#"{{"protocolHash":"{h}","body":{{"text":"a"}},"multiround":true}}"#)
                .as_bytes(),
        );
        assert_eq!(start.status, 200);
        let id = start.body["conversationId"].as_str().unwrap().to_string();
        assert_eq!(id.len(), 32);
        assert_eq!(
            start.body["conversationExpires"],
            clock.now().unix_timestamp() + 3
        );
        let next = ex.handle(Some(&id), br#"{"body":{"text":"b"}}"#);
        assert_eq!(next.body["body"]["text"], "b");
        assert_eq!(next.body["conversationId"], id.as_str());
        let change = ex.handle(
            Some(&id),
            format!(r#"{{"protocolHash":"{}","body":"x"}}"#, "0".repeat(40)).as_bytes(),
        );
        assert_eq!(change.status, 400);
        clock.advance(time::Duration::seconds(3));
        let late = ex.handle(Some(&id), br#"{"body":{"text":"c"}}"#);
        assert_eq!(
            (late.status, late.body["status"].as_str()),
            (200, Some("failure"))
        );
        assert_eq!(ex.handle(Some("nope"), br#"{"body":"x"}"#).status, 404);
    }

    /// At the cap, live conversations are never evicted: a new one is refused until
    /// others have expired, while every live one goes on.
    #[test]
    fn the_conversation_cap_never_evicts_a_live_conversation() {
        let clock = ManualClock::new(datetime!(2025-01-01 0:00 UTC));
        let cfg = ExchangeConfig {
            max_conversations: 3,
            ..ExchangeConfig::default()
        };
        let ttl = cfg.conversation_ttl_s as i64;
        let ex = Exchange::new(cfg, clock.clone());
        let open = |ex: &Exchange| ex.handle(None, br#"{"body":"start","multiround":true}"#);
        let ids: Vec<String> = (0..3)
            .map(|_| {
                let r = open(&ex);
                assert_eq!(r.body["status"], "success", "{}", r.body);
                r.body["conversationId"].as_str().unwrap().to_string()
            })
            .collect();
        let full = open(&ex);
        assert!(full.body.get("conversationId").is_none(), "{}", full.body);
        for id in &ids {
            let r = ex.handle(Some(id), br#"{"body":"still here"}"#);
            assert_eq!(r.body["status"], "success", "{id} was evicted: {}", r.body);
        }
        // A second before they expire: still live, still refused.
        clock.advance(time::Duration::seconds(ttl - 1));
        assert!(open(&ex).body.get("conversationId").is_none());
        for id in &ids {
            let r = ex.handle(Some(id), br#"{"body":"still here"}"#);
            assert_eq!(r.body["status"], "success", "{id} was evicted: {}", r.body);
        }
        // Once expired, they make room.
        clock.advance(time::Duration::seconds(2));
        assert!(open(&ex).body["conversationId"].is_string());
    }

    #[test]
    fn errors_go_to_their_layer() {
        let ex = Exchange::with_config(ExchangeConfig::default());
        assert_eq!(ex.handle(None, b"{not json").status, 400);
        assert_eq!(ex.handle(None, b"[]").status, 400);
        let unsupported = ex.handle(
            None,
            format!(r#"{{"protocolHash":"{}","body":"x"}}"#, "a".repeat(40)).as_bytes(),
        );
        assert_eq!(
            (unsupported.status, unsupported.body["error"].as_str()),
            (200, Some("Unsupported protocol"))
        );
        let h = ProtocolDocument::new(ECHO_DOCUMENT).hash;
        let proto = ex.handle(
            None,
            format!(r#"{{"protocolHash":"{h}","body":{{"txt":1}}}}"#).as_bytes(),
        );
        assert_eq!(proto.body["status"], "success");
        assert!(proto.body["body"]["error"].is_string());
        let extra = ex.handle(None, br#"{"body":"x","x-harness-extra":{"a":1}}"#);
        assert_eq!(extra.body["status"], "success");
    }

    fn with(fault: &str) -> Exchange {
        Exchange::with_config(ExchangeConfig::default().with_faults(&[fault]).unwrap())
    }

    #[test]
    fn faults_modelled_on_real_servers() {
        let unsupported = format!(r#"{{"protocolHash":"{}","body":"x"}}"#, "a".repeat(40));
        let r = with("failure-status-error").handle(None, unsupported.as_bytes());
        assert_eq!(
            r.body,
            json!({"status": "error", "message": "Unsupported protocol"})
        );
        let ex = with("protocol-hash-base64");
        let key = sha1_base64(ECHO_DOCUMENT.as_bytes());
        assert!(ex.wellknown().get(&key).is_some());
        let ok = ex.handle(
            None,
            format!(r#"{{"protocolHash":"{key}","body":{{"text":"a"}}}}"#).as_bytes(),
        );
        assert_eq!(ok.body["body"]["text"], "a");
        let hex = ProtocolDocument::new(ECHO_DOCUMENT).hash;
        let hexed = ex.handle(
            None,
            format!(r#"{{"protocolHash":"{hex}","body":{{"text":"a"}}}}"#).as_bytes(),
        );
        assert_eq!(hexed.body["error"], "Unsupported protocol");
        let ex = with("require-protocol-hash");
        let r = ex.handle(None, br#"{"body":"x"}"#);
        assert_eq!(r.status, 422);
        assert_eq!(r.body["detail"][0]["loc"], json!(["body", "protocolHash"]));
        assert_eq!(
            ex.handle(None, br#"{"protocolHash":null,"body":"x"}"#)
                .status,
            200
        );
        let ex = with("malformed-request-422");
        let r = ex.handle(None, b"{not json");
        assert_eq!(r.status, 422);
        assert!(r.body["detail"][0]["msg"].is_string());
        assert_eq!(ex.handle(None, b"{}").status, 422);
    }
}
