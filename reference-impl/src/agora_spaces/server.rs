//! The agora-spaces reference server (agora-spaces.zh.md): WebSocket events at
//! `/ws?agent_id=…&token=…`.
//!
//! ```text
//! connect ──▶ agent.registered {agent:{id, connection_id}}   (or error + close:
//!             UNAUTHORIZED for a bad token, AGENT_EXISTS for a live agent_id)
//! space.join ──▶ space.joined {members}; others get space.members {joined}
//! space.leave ─▶ others get space.members {left}
//! space.publish ─▶ others get space.event, or for text above the delta threshold
//!                  space.event.delta … space.event.done (cancellable per receiver)
//! silence for heartbeat_timeout ──▶ the server closes the socket
//! ```
//!
//! Each connection has a bounded outbox; a receiver that cannot keep up is
//! disconnected rather than buffered without limit. A stream's first deltas go out
//! at once, the rest paced (`SpacesConfig::chunk_pause`), so that a long stream
//! lasts long enough for its receiver to cancel it under way.

use super::faults::FAULTS;
use crate::faults::FaultSet;
use crate::wire::json_text;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

#[derive(Debug, Clone)]
pub struct SpacesConfig {
    /// Required connection token, if any.
    pub token: Option<String>,
    pub heartbeat_timeout: Duration,
    /// Texts longer than this many bytes are streamed as deltas.
    pub delta_threshold: usize,
    pub chunk_bytes: usize,
    /// Pause between two deltas of one stream, once `unpaced_chunks` have gone out
    /// at once: a short stream arrives without waiting, a long one lasts long enough
    /// for its receiver to cancel it under way.
    pub chunk_pause: Duration,
    /// Deltas of a stream sent before the pauses start.
    pub unpaced_chunks: usize,
    /// A space with a capacity, as (name, capacity).
    pub full_space: Option<(String, usize)>,
    /// Publishes per second per connection; unset: no limit.
    pub rate_limit_per_s: Option<u32>,
    pub max_frame_bytes: usize,
    /// Frames queued for one connection before it is dropped as too slow.
    pub outbox: usize,
    pub max_spaces: usize,
    /// Joining a user space that does not exist creates it (true), or draws
    /// SPACE_NOT_FOUND (false), as a hub does that serves only spaces made otherwise
    /// (allowed, ambiguity ASP-A8).
    pub create_user_spaces: bool,
    pub faults: FaultSet,
}

impl Default for SpacesConfig {
    fn default() -> Self {
        SpacesConfig {
            token: None,
            heartbeat_timeout: Duration::from_secs(60),
            delta_threshold: 4096,
            chunk_bytes: 4096,
            chunk_pause: Duration::from_millis(2),
            unpaced_chunks: 8,
            full_space: Some(("full".into(), 1)),
            rate_limit_per_s: None,
            max_frame_bytes: 4 * 1024 * 1024,
            outbox: 4096,
            max_spaces: 10_000,
            create_user_spaces: true,
            faults: FaultSet::none(),
        }
    }
}

impl SpacesConfig {
    pub fn with_faults<S: AsRef<str>>(mut self, names: &[S]) -> Result<Self, String> {
        self.faults = FaultSet::from_names(FAULTS, names)?;
        Ok(self)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Public,
    System,
}

#[derive(Debug)]
struct Space {
    kind: Kind,
    capacity: Option<usize>,
    /// (agent id, connection) in join order.
    members: Vec<(String, u64)>,
}

/// Event ids a receiver has cancelled.
type Cancels = Arc<Mutex<HashSet<String>>>;

/// A frame in an outbox: text shared by every receiver it is queued for (a
/// fan-out or a member update queues one copy, not one per member).
type Frame = axum::extract::ws::Utf8Bytes;

struct Conn {
    agent_id: String,
    tx: mpsc::Sender<Frame>,
    cancels: Cancels,
}

#[derive(Default)]
struct Hub {
    conns: HashMap<u64, Conn>,
    agents: HashMap<String, u64>,
    spaces: BTreeMap<String, Space>,
    next: u64,
}

pub struct Spaces {
    cfg: SpacesConfig,
    hub: Mutex<Hub>,
}

fn now_s() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn is_user_name(s: &str) -> bool {
    let plain = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    };
    plain(s)
        || s.strip_prefix("task.")
            .is_some_and(|rest| rest.split('.').all(plain))
}

fn is_system_name(s: &str) -> bool {
    ["agent.", "file.", "mcp."].iter().any(|p| {
        s.strip_prefix(p).is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b))
        })
    })
}

/// Splits `text` into chunks of at most `max` bytes on character boundaries.
pub fn chunks(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + max.max(4)).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

impl Spaces {
    pub fn new(cfg: SpacesConfig) -> Arc<Spaces> {
        let mut hub = Hub::default();
        hub.spaces.insert(
            "general".into(),
            Space {
                kind: Kind::Public,
                capacity: None,
                members: Vec::new(),
            },
        );
        hub.spaces.insert(
            "agent.status".into(),
            Space {
                kind: Kind::System,
                capacity: None,
                members: Vec::new(),
            },
        );
        if let Some((name, cap)) = &cfg.full_space {
            hub.spaces.insert(
                name.clone(),
                Space {
                    kind: Kind::Public,
                    capacity: Some(*cap),
                    members: Vec::new(),
                },
            );
        }
        Arc::new(Spaces {
            cfg,
            hub: Mutex::new(hub),
        })
    }

    pub fn config(&self) -> &SpacesConfig {
        &self.cfg
    }

    fn fault(&self, n: &str) -> bool {
        self.cfg.faults.has(n)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Hub> {
        self.hub.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error(&self, code: &str, message: impl Into<String>, request_id: Option<&str>) -> String {
        let mut e =
            json!({"type": "error", "code": code, "message": message.into(), "timestamp": now_s()});
        if self.fault("error-message-only") {
            if let Some(m) = e.as_object_mut() {
                m.remove("code");
            }
        }
        if let Some(id) = request_id {
            if !self.fault("error-without-request-id") {
                e["request_id"] = json!(id);
            }
        }
        json_text(&e)
    }

    /// Queues a frame for `conn`; a full outbox disconnects it.
    fn send_to(hub: &mut Hub, conn: u64, frame: impl Into<Frame>) {
        let full = match hub.conns.get(&conn) {
            Some(c) => c.tx.try_send(frame.into()).is_err(),
            None => false,
        };
        if full {
            // Dropping the sender ends the writer, which closes the socket.
            hub.conns.remove(&conn);
        }
    }

    fn members_of(space: &Space) -> Vec<String> {
        space.members.iter().map(|(a, _)| a.clone()).collect()
    }

    /// Tells the members of `name` other than `except` who joined or left.
    fn announce(
        &self,
        hub: &mut Hub,
        name: &str,
        except: u64,
        joined: Option<&str>,
        left: Option<&str>,
    ) {
        if self.fault("no-member-updates") {
            return;
        }
        let Some(space) = hub.spaces.get(name) else {
            return;
        };
        let list = if self.fault("members-under-agents") {
            "agents"
        } else {
            "members"
        };
        let mut frame = json!({"type": "space.members", "space": name,
                               "joined": joined, "left": left, "timestamp": now_s()});
        frame[list] = json!(Self::members_of(space));
        let frame = Frame::from(json_text(&frame));
        let targets: Vec<u64> = space
            .members
            .iter()
            .map(|(_, c)| *c)
            .filter(|c| *c != except)
            .collect();
        for t in targets {
            Self::send_to(hub, t, frame.clone());
        }
    }

    /// The agent.registered event for `agent_id` on connection `conn`.
    fn registered(&self, agent_id: &str, conn: u64, connection_id: &str) -> Value {
        let cid = if self.fault("connection-id-number") {
            json!(conn)
        } else {
            json!(connection_id)
        };
        let id_member = if self.fault("registered-agent-id") {
            "agent_id"
        } else {
            "id"
        };
        let mut agent = Map::new();
        agent.insert(id_member.into(), json!(agent_id));
        agent.insert("connection_id".into(), cid);
        json!({"type": "agent.registered", "agent": agent, "timestamp": now_s()})
    }

    /// Registers a new connection; an error frame when it must be refused.
    fn open(
        &self,
        agent_id: &str,
        token: Option<&str>,
        tx: mpsc::Sender<Frame>,
    ) -> Result<(u64, Cancels, String), String> {
        if let Some(want) = &self.cfg.token {
            if token != Some(want.as_str()) {
                return Err(self.error("UNAUTHORIZED", "missing or wrong token", None));
            }
        }
        let mut hub = self.lock();
        if hub.agents.contains_key(agent_id) && !self.fault("allow-duplicate-agent") {
            return Err(self.error(
                "AGENT_EXISTS",
                format!("agent {agent_id:?} is already connected"),
                None,
            ));
        }
        hub.next += 1;
        let conn = hub.next;
        let cancels = Arc::new(Mutex::new(HashSet::new()));
        hub.conns.insert(
            conn,
            Conn {
                agent_id: agent_id.to_string(),
                tx,
                cancels: cancels.clone(),
            },
        );
        hub.agents.insert(agent_id.to_string(), conn);
        let connection_id = format!("ws-{conn}-{}", &crate::wire::new_id()[..8]);
        Ok((conn, cancels, connection_id))
    }

    fn close(&self, conn: u64) {
        let mut hub = self.lock();
        let Some(c) = hub.conns.remove(&conn) else {
            hub.agents.retain(|_, v| *v != conn);
            return;
        };
        if hub.agents.get(&c.agent_id) == Some(&conn) {
            hub.agents.remove(&c.agent_id);
        }
        let names: Vec<String> = hub
            .spaces
            .iter()
            .filter(|(_, s)| s.members.iter().any(|(_, m)| *m == conn))
            .map(|(n, _)| n.clone())
            .collect();
        let drop_all = self.fault("disconnect-drops-all");
        for n in names {
            if let Some(s) = hub.spaces.get_mut(&n) {
                if drop_all {
                    // Membership kept per space, not per connection: one goes, all go.
                    s.members.clear();
                } else {
                    s.members.retain(|(_, m)| *m != conn);
                }
            }
            self.announce(&mut hub, &n, conn, None, Some(&c.agent_id));
        }
    }

    /// Handles the text frames of one connection of its own, outside any socket, and
    /// returns what the server sent on it (for in-process fuzzing and tests). The
    /// connection is closed afterwards, leaving its spaces. Refused connections
    /// return the refusal frame.
    pub fn handle_detached(self: &Arc<Self>, agent_id: &str, frames: &[&str]) -> Vec<String> {
        let (tx, mut rx) = mpsc::channel::<Frame>(self.cfg.outbox);
        let (conn, _cancels, connection_id) =
            match self.open(agent_id, self.cfg.token.as_deref(), tx) {
                Ok(c) => c,
                Err(frame) => return vec![frame],
            };
        let mut publishes = (0, 0);
        let mut out = Vec::new();
        for f in frames {
            self.handle(conn, &connection_id, f, &mut publishes);
            while let Ok(frame) = rx.try_recv() {
                out.push(frame.as_str().to_owned());
            }
        }
        self.close(conn);
        while let Ok(frame) = rx.try_recv() {
            out.push(frame.as_str().to_owned());
        }
        out
    }

    /// Handles one text frame from `conn`.
    fn handle(
        self: &Arc<Self>,
        conn: u64,
        connection_id: &str,
        text: &str,
        publishes: &mut (i64, u32),
    ) {
        let reply = |hub: &mut Hub, frame: String| Self::send_to(hub, conn, frame);
        let parsed = crate::wire::json::parse(text.as_bytes()).map(|t| t.to_serde());
        let mut hub = self.lock();
        let Ok(Value::Object(msg)) = parsed else {
            let e = self.error("INVALID_REQUEST", "the frame is not a JSON object", None);
            return reply(&mut hub, e);
        };
        let id = msg.get("id").and_then(Value::as_str).map(String::from);
        let rid = id.as_deref();
        let Some(ty) = msg.get("type").and_then(Value::as_str) else {
            let e = self.error("INVALID_REQUEST", "the event has no string `type`", rid);
            return reply(&mut hub, e);
        };
        let agent_id = hub
            .conns
            .get(&conn)
            .map(|c| c.agent_id.clone())
            .unwrap_or_default();
        let space_name =
            |m: &Map<String, Value>| m.get("space").and_then(Value::as_str).map(String::from);
        match ty {
            "agent.register" => {
                let agent = msg.get("agent").and_then(Value::as_object);
                let ok = agent.is_some_and(|a| {
                    a.get("id")
                        .and_then(Value::as_str)
                        .is_some_and(|s| !s.is_empty())
                        && a.get("capabilities").is_none_or(|c| {
                            c.as_array().is_some_and(|v| v.iter().all(Value::is_string))
                        })
                        && a.get("metadata").is_none_or(Value::is_object)
                });
                if !ok {
                    let e = self.error(
                        "INVALID_REQUEST",
                        "agent.register needs agent {id, capabilities: [strings], metadata: {}}",
                        rid,
                    );
                    return reply(&mut hub, e);
                }
                if self.fault("no-registered") {
                    return;
                }
                let want = agent
                    .and_then(|a| a.get("id"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if want != agent_id
                    && hub.agents.contains_key(want)
                    && !self.fault("register-takes-live-id")
                {
                    let e = self.error(
                        "AGENT_EXISTS",
                        format!("agent {want:?} is already connected"),
                        rid,
                    );
                    return reply(&mut hub, e);
                }
                let mut r = self.registered(want, conn, connection_id);
                if let Some(i) = rid {
                    r["id"] = json!(i);
                }
                reply(&mut hub, json_text(&r));
            }
            "agent.heartbeat" => {
                let ty = if self.fault("heartbeat-pong") {
                    "pong"
                } else {
                    "agent.heartbeat"
                };
                reply(
                    &mut hub,
                    json_text(&json!({"type": ty, "timestamp": now_s()})),
                );
            }
            "space.join" => {
                let Some(name) = space_name(&msg) else {
                    let e = self.error("INVALID_REQUEST", "space.join needs a string `space`", rid);
                    return reply(&mut hub, e);
                };
                if !hub.spaces.contains_key(&name) {
                    let create = (is_user_name(&name) && self.cfg.create_user_spaces)
                        || (is_system_name(&name) && self.fault("autocreate-system-space"));
                    if create && hub.spaces.len() < self.cfg.max_spaces {
                        let kind = if is_system_name(&name) {
                            Kind::System
                        } else {
                            Kind::Public
                        };
                        hub.spaces.insert(
                            name.clone(),
                            Space {
                                kind,
                                capacity: None,
                                members: Vec::new(),
                            },
                        );
                    } else if is_system_name(&name) || is_user_name(&name) {
                        let e = self.error(
                            "SPACE_NOT_FOUND",
                            format!("Space '{name}' does not exist"),
                            rid,
                        );
                        return reply(&mut hub, e);
                    } else {
                        let e = self.error(
                            "INVALID_REQUEST",
                            format!("{name:?} is not a valid space name"),
                            rid,
                        );
                        return reply(&mut hub, e);
                    }
                }
                let ignore_cap = self.fault("ignore-capacity");
                let Some(space) = hub.spaces.get_mut(&name) else {
                    return;
                };
                let already = space.members.iter().any(|(_, c)| *c == conn);
                if !already {
                    if space.capacity.is_some_and(|cap| space.members.len() >= cap) && !ignore_cap {
                        let e = self.error("SPACE_FULL", format!("Space '{name}' is full"), rid);
                        return reply(&mut hub, e);
                    }
                    space.members.push((agent_id.clone(), conn));
                }
                let members = Self::members_of(space);
                let mut r = json!({"type": "space.joined", "space": name, "members": members, "timestamp": now_s()});
                if let Some(i) = rid {
                    r["id"] = json!(i);
                }
                reply(&mut hub, json_text(&r));
                if !already {
                    self.announce(&mut hub, &name, conn, Some(&agent_id), None);
                }
            }
            "space.leave" => {
                let Some(name) = space_name(&msg) else {
                    let e =
                        self.error("INVALID_REQUEST", "space.leave needs a string `space`", rid);
                    return reply(&mut hub, e);
                };
                let removed = hub.spaces.get_mut(&name).is_some_and(|s| {
                    let before = s.members.len();
                    s.members.retain(|(_, c)| *c != conn);
                    s.members.len() != before
                });
                if removed {
                    self.announce(&mut hub, &name, conn, None, Some(&agent_id));
                }
            }
            "space.list" => {
                let spaces: Vec<Value> = hub
                    .spaces
                    .iter()
                    .map(|(n, s)| json!({"id": n, "type": if s.kind == Kind::System { "system" } else { "public" }, "member_count": s.members.len()}))
                    .collect();
                let mut r = json!({"type": "space.list", "spaces": spaces, "timestamp": now_s()});
                if let Some(i) = rid {
                    r["id"] = json!(i);
                }
                reply(&mut hub, json_text(&r));
            }
            "space.event.cancel" => {
                if let (Some(ev), Some(c)) = (
                    msg.get("event_id").and_then(Value::as_str),
                    hub.conns.get(&conn),
                ) {
                    c.cancels
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(ev.to_string());
                }
            }
            "space.publish" => {
                if let Some(limit) = self.cfg.rate_limit_per_s {
                    let now = now_s();
                    if publishes.0 != now {
                        *publishes = (now, 0);
                    }
                    publishes.1 += 1;
                    if publishes.1 > limit {
                        let e = self.error(
                            "RATE_LIMITED",
                            format!("more than {limit} publishes per second"),
                            rid,
                        );
                        return reply(&mut hub, e);
                    }
                }
                let Some(name) = space_name(&msg) else {
                    let e = self.error(
                        "INVALID_REQUEST",
                        "space.publish needs a string `space`",
                        rid,
                    );
                    return reply(&mut hub, e);
                };
                let Some(text) = msg
                    .get("data")
                    .and_then(|d| d.get("text"))
                    .and_then(Value::as_str)
                    .map(String::from)
                else {
                    let e = self.error("INVALID_REQUEST", "space.publish needs data.text", rid);
                    return reply(&mut hub, e);
                };
                let Some(space) = hub.spaces.get(&name) else {
                    let e = self.error(
                        "SPACE_NOT_FOUND",
                        format!("Space '{name}' does not exist"),
                        rid,
                    );
                    return reply(&mut hub, e);
                };
                if !space.members.iter().any(|(_, c)| *c == conn) {
                    let e = self.error("INVALID_REQUEST", format!("not a member of '{name}'"), rid);
                    return reply(&mut hub, e);
                }
                let ts = msg
                    .get("data")
                    .and_then(|d| d.get("timestamp"))
                    .and_then(Value::as_f64)
                    .map_or(json!(now_s()), |t| json!(t));
                let targets: Vec<u64> = space
                    .members
                    .iter()
                    .map(|(_, c)| *c)
                    .filter(|c| *c != conn)
                    .collect();
                if text.len() <= self.cfg.delta_threshold || self.fault("no-delta") {
                    let frame = json!({"type": "space.event", "space": name,
                                       "data": {"from": agent_id, "text": text, "timestamp": ts}, "timestamp": now_s()});
                    let frame = Frame::from(json_text(&frame));
                    for t in targets {
                        Self::send_to(&mut hub, t, frame.clone());
                    }
                } else {
                    let event_id = format!("evt_{}", crate::wire::new_id().replace('-', ""));
                    let text = Arc::new(text);
                    for t in targets {
                        if let Some(c) = hub.conns.get(&t) {
                            let (tx, cancels) = (c.tx.clone(), c.cancels.clone());
                            let me = self.clone();
                            let (name, event_id, from, text) = (
                                name.clone(),
                                event_id.clone(),
                                agent_id.clone(),
                                text.clone(),
                            );
                            tokio::spawn(async move {
                                me.stream(tx, cancels, name, event_id, from, text).await
                            });
                        }
                    }
                }
            }
            other => {
                let e = self.error(
                    "INVALID_REQUEST",
                    format!("unknown event type {other:?}"),
                    rid,
                );
                reply(&mut hub, e);
            }
        }
    }

    /// Streams one large text to one receiver as deltas and a done.
    async fn stream(
        &self,
        tx: mpsc::Sender<Frame>,
        cancels: Cancels,
        space: String,
        event_id: String,
        from: String,
        text: Arc<String>,
    ) {
        let cancelled = || {
            cancels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&event_id)
        };
        for (i, chunk) in chunks(&text, self.cfg.chunk_bytes).into_iter().enumerate() {
            if cancelled() && !self.fault("ignore-cancel") {
                return;
            }
            if i == 1 && self.fault("delta-drops-chunk") {
                continue;
            }
            let mut data = json!({"text": chunk});
            if i == 0 {
                data["from"] = json!(from);
            }
            let frame = json!({"type": "space.event.delta", "space": space, "event_id": event_id, "data": data, "timestamp": now_s()});
            if tx.send(json_text(&frame).into()).await.is_err() {
                return;
            }
            if i + 1 >= self.cfg.unpaced_chunks {
                tokio::time::sleep(self.cfg.chunk_pause).await;
            }
        }
        let done = json!({"type": "space.event.done", "space": space, "event_id": event_id, "timestamp": now_s()});
        let _ = tx.send(json_text(&done).into()).await;
    }
}

async fn ws_upgrade(
    State(s): State<Arc<Spaces>>,
    Query(q): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let Some(agent_id) = q.get("agent_id").filter(|a| !a.is_empty()).cloned() else {
        let body = json!({"type": "error", "code": "INVALID_REQUEST", "message": "the agent_id query parameter is required"});
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
    };
    let token = q.get("token").cloned();
    let max = s.cfg.max_frame_bytes;
    ws.max_message_size(max)
        .max_frame_size(max)
        .read_buffer_size(crate::wire::WS_READ_BUFFER_BYTES)
        .on_upgrade(move |socket| session(s, socket, agent_id, token))
}

async fn session(s: Arc<Spaces>, socket: WebSocket, agent_id: String, token: Option<String>) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<Frame>(s.cfg.outbox);
    let (conn, _cancels, connection_id) = match s.open(&agent_id, token.as_deref(), tx.clone()) {
        Ok(c) => c,
        Err(frame) => {
            let _ = sink.send(Message::Text(frame.into())).await;
            let _ = sink.send(Message::Close(None)).await;
            return;
        }
    };
    let writer = tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if sink.send(Message::Text(frame)).await.is_err() {
                break;
            }
        }
        let _ = sink.send(Message::Close(None)).await;
    });
    if !s.fault("no-registered") {
        let hello = s.registered(&agent_id, conn, &connection_id);
        let _ = tx.try_send(json_text(&hello).into());
    }
    drop(tx);
    let mut publishes = (0i64, 0u32);
    loop {
        let next = if s.fault("no-heartbeat-timeout") {
            Ok(stream.next().await)
        } else {
            tokio::time::timeout(s.cfg.heartbeat_timeout, stream.next()).await
        };
        match next {
            Err(_) => break, // silent for too long
            Ok(None) | Ok(Some(Err(_))) => break,
            Ok(Some(Ok(Message::Text(t)))) => {
                s.handle(conn, &connection_id, t.as_str(), &mut publishes)
            }
            Ok(Some(Ok(Message::Binary(b)))) => s.handle(
                conn,
                &connection_id,
                &String::from_utf8_lossy(&b),
                &mut publishes,
            ),
            Ok(Some(Ok(Message::Close(_)))) => break,
            Ok(Some(Ok(_))) => {}
        }
        if !s.lock().conns.contains_key(&conn) {
            break; // dropped as too slow
        }
    }
    s.close(conn);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
}

/// The router serving the spaces at `/ws` (and `/`).
pub fn router(s: Arc<Spaces>) -> Router {
    Router::new()
        .route("/ws", get(ws_upgrade))
        .route("/", get(ws_upgrade))
        .with_state(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_char_boundaries() {
        let text = "日本語🙂".repeat(1000);
        let parts = chunks(&text, 4096);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.len() <= 4096));
    }

    #[test]
    fn space_names() {
        assert!(is_user_name("general") && is_user_name("h_test-1") && is_user_name("task.h1"));
        assert!(!is_user_name("General") && !is_user_name("Bad Name!") && !is_user_name("agent.x"));
        assert!(
            is_system_name("agent.status")
                && is_system_name("mcp.harness")
                && !is_system_name("agent.")
        );
    }
}
