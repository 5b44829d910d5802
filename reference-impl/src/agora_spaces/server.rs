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
//! silence for heartbeat_timeout ──▶ Close 1000 "heartbeat timeout: …"
//! a client's Close ──▶ its echo (RFC 6455 §5.5.1)
//! ```
//!
//! Each connection has an outbox bounded in bytes (`SpacesConfig::max_pending_bytes`,
//! default 8 MiB, and in frames), its frames shared with every other receiver of the
//! same event. A publisher whose event finds a receiver past half the bound waits
//! until that receiver drains below it; a receiver that passes the bound, or stays
//! past half of it for `slow_grace` (2 s), is cut off: closed with
//! [`SLOW_CLOSE_CODE`] and a reason that says so, leaving its spaces like any
//! disconnect. Receivers that read never wait on a stalled one, and lose nothing. A stream's first deltas go out
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
    /// Frames queued for one connection before it is cut off as too slow.
    pub outbox: usize,
    /// Bytes queued for one connection and not yet sent before it is cut off as
    /// too slow (`serve --max-pending-bytes`).
    pub max_pending_bytes: usize,
    /// How long a publisher waits for a receiver past half that bound to drain
    /// below it before the receiver is cut off.
    pub slow_grace: Duration,
    pub max_spaces: usize,
    /// Joining a user space that does not exist creates it (true), or draws
    /// SPACE_NOT_FOUND (false), as a hub does that serves only spaces made otherwise
    /// (allowed, ambiguity ASP-A8).
    pub create_user_spaces: bool,
    /// The public space the hub serves from the start (`general` by default).
    pub public_space: String,
    /// An error answering a frame without an id (one that is not JSON) carries
    /// `"request_id": null` (true) or no request_id (false): both allowed, the spec
    /// leaves it undefined (ambiguity ASP-A7).
    pub null_request_id: bool,
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
            max_pending_bytes: DEFAULT_MAX_PENDING_BYTES,
            slow_grace: Duration::from_secs(2),
            max_spaces: 10_000,
            create_user_spaces: true,
            public_space: "general".into(),
            null_request_id: false,
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
    /// Made by the join of a name that did not exist: freed once it is empty again.
    made_by_join: bool,
    /// (agent id, connection) in join order.
    members: Vec<(String, u64)>,
}

/// Event ids a receiver has cancelled.
type Cancels = Arc<Mutex<HashSet<String>>>;

/// A frame in an outbox: text shared by every receiver it is queued for (a
/// fan-out or a member update queues one copy, not one per member).
type Frame = axum::extract::ws::Utf8Bytes;

/// The default bound of one connection's unsent bytes.
pub const DEFAULT_MAX_PENDING_BYTES: usize = 8 * 1024 * 1024;
/// How long the writer of a connection cut off tries to send its Close.
const CUT_CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The close code of a connection cut off as a slow consumer: 1008, policy
/// violation (RFC 6455 §7.4.1). No error event precedes it: none of the spec's
/// error codes names a reader that does not read, and it would not read one.
pub const SLOW_CLOSE_CODE: u16 = 1008;

/// The close reason of a connection cut off as a slow consumer: its unsent bytes
/// passed `limit`, or stayed past half of it for `slow_grace` while a publisher
/// waited.
pub fn slow_close_reason(limit: usize) -> String {
    format!("slow consumer: outbound queue not drained (bound {limit} bytes)")
}

/// Resolves once the connection is cut off as a slow consumer. A session that ends
/// otherwise drops its outbox, and with it the sender `cut` watches: that is no
/// cut, and this never resolves then (the writer then closes as the session ended,
/// answering a client's Close with its echo). With fault `every-end-a-cut`, every
/// ending is taken for a cut.
async fn cut_seen(cut: &mut tokio::sync::watch::Receiver<bool>, every_end: bool) {
    if cut.wait_for(|c| *c).await.is_err() && !every_end {
        std::future::pending::<()>().await;
    }
}

/// The Close of a session that ended without a cut: code 1000 with the reason
/// `why` holds, if any.
fn ending(why: &std::sync::OnceLock<String>) -> Option<axum::extract::ws::CloseFrame> {
    why.get().map(|reason| axum::extract::ws::CloseFrame {
        code: 1000,
        reason: reason.as_str().into(),
    })
}

/// One connection's queue of frames to send: bounded in frames (the channel) and in
/// bytes not yet sent (`pending`, lowered by the writer as frames go out). Passing
/// either bound cuts the connection off: `cut` turns true, the writer drops what is
/// queued and closes, the session leaves the connection's spaces.
#[derive(Clone)]
struct Outbox {
    tx: mpsc::Sender<Frame>,
    pending: Arc<std::sync::atomic::AtomicUsize>,
    limit: usize,
    cut: Arc<tokio::sync::watch::Sender<bool>>,
    /// Told by the writer when the unsent bytes fall below the high-water mark.
    drained: Arc<tokio::sync::Notify>,
}

impl Outbox {
    fn new(frames: usize, limit: usize) -> (Outbox, mpsc::Receiver<Frame>) {
        let (tx, rx) = mpsc::channel(frames.max(1));
        let (cut, _) = tokio::sync::watch::channel(false);
        let outbox = Outbox {
            tx,
            pending: Arc::default(),
            limit,
            cut: Arc::new(cut),
            drained: Arc::default(),
        };
        (outbox, rx)
    }

    /// Half the bound: past it, a publisher waits for this receiver to drain.
    fn high_water(&self) -> usize {
        self.limit / 2
    }

    fn past_high_water(&self) -> bool {
        self.pending.load(std::sync::atomic::Ordering::Acquire) > self.high_water()
            && !*self.cut.borrow()
    }

    /// Waits until the unsent bytes are below the high-water mark, or the
    /// connection is cut off.
    async fn drained_below(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if !self.past_high_water() {
                return;
            }
            drained.await;
        }
    }

    fn cut_off(&self) {
        self.cut.send_replace(true);
        self.drained.notify_waiters();
    }

    /// Queues `frame`; false when the connection is cut off (now or before).
    fn push(&self, frame: Frame) -> bool {
        use std::sync::atomic::Ordering;
        if *self.cut.borrow() {
            return false;
        }
        let n = frame.len();
        let before = self.pending.fetch_add(n, Ordering::AcqRel);
        if before + n > self.limit || self.tx.try_send(frame).is_err() {
            self.pending.fetch_sub(n, Ordering::AcqRel);
            self.cut_off();
            return false;
        }
        true
    }
}

struct Conn {
    agent_id: String,
    outbox: Outbox,
    cancels: Cancels,
    /// By publisher connection: the lane of a stream under way from it to this
    /// connection ([`Lane`]).
    lanes: HashMap<u64, Lane>,
}

/// What a publisher sends one receiver while its stream to that receiver is still
/// paced out: held here (`Some`) and queued once the stream ends, so that nothing a
/// publisher sends overtakes its own earlier stream. `None` once that stream ended.
type Lane = Arc<Mutex<Option<Vec<Frame>>>>;

/// Queues `frame` behind the stream under way in `lane`, if there is one; false
/// when there is none (the frame goes out at once).
fn behind_stream(lane: Option<&Lane>, frame: &Frame) -> bool {
    let Some(lane) = lane else {
        return false;
    };
    match lane.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        Some(held) => {
            held.push(frame.clone());
            true
        }
        None => false,
    }
}

/// Ends a stream's lane: what was held behind it is queued now, in order.
struct LaneEnd {
    lane: Lane,
    outbox: Outbox,
}

impl Drop for LaneEnd {
    fn drop(&mut self) {
        let held = self.lane.lock().unwrap_or_else(|p| p.into_inner()).take();
        for f in held.unwrap_or_default() {
            self.outbox.push(f);
        }
    }
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
            cfg.public_space.clone(),
            Space {
                kind: Kind::Public,
                capacity: None,
                made_by_join: false,
                members: Vec::new(),
            },
        );
        hub.spaces.insert(
            "agent.status".into(),
            Space {
                kind: Kind::System,
                capacity: None,
                made_by_join: false,
                members: Vec::new(),
            },
        );
        if let Some((name, cap)) = &cfg.full_space {
            hub.spaces.insert(
                name.clone(),
                Space {
                    kind: Kind::Public,
                    capacity: Some(*cap),
                    made_by_join: false,
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
        match request_id {
            Some(id) if !self.fault("error-without-request-id") => e["request_id"] = json!(id),
            None if self.cfg.null_request_id => e["request_id"] = Value::Null,
            _ => {}
        }
        json_text(&e)
    }

    /// Queues a frame for `conn`; an outbox over its bound cuts the connection off
    /// (its session then closes it and leaves its spaces).
    fn send_to(hub: &mut Hub, conn: u64, frame: impl Into<Frame>) {
        if let Some(c) = hub.conns.get(&conn) {
            c.outbox.push(frame.into());
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
        outbox: Outbox,
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
                outbox,
                cancels: cancels.clone(),
                lanes: HashMap::new(),
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
        for other in hub.conns.values_mut() {
            other.lanes.remove(&conn);
        }
        if hub.agents.get(&c.agent_id) == Some(&conn) && !self.fault("keep-id-after-disconnect") {
            hub.agents.remove(&c.agent_id);
        }
        // The fault handles only the spaces someone else is in, so a lone member stays.
        let ghost = self.fault("lone-member-ghost");
        let names: Vec<String> = hub
            .spaces
            .iter()
            .filter(|(_, s)| s.members.iter().any(|(_, m)| *m == conn))
            .filter(|(_, s)| !ghost || s.members.len() > 1)
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
            if !self.fault("disconnect-unannounced") {
                self.announce(&mut hub, &n, conn, None, Some(&c.agent_id));
            }
            self.free_if_empty(&mut hub, &n);
        }
    }

    /// Frees space `name` if a join made it and it is empty again, so that names
    /// that come and go never use up the hub's `max_spaces`; fault
    /// `spaces-never-freed` keeps every one.
    fn free_if_empty(&self, hub: &mut Hub, name: &str) {
        let empty = hub
            .spaces
            .get(name)
            .is_some_and(|s| s.made_by_join && s.members.is_empty());
        if empty && !self.fault("spaces-never-freed") {
            hub.spaces.remove(name);
        }
    }

    /// Handles the text frames of one connection of its own, outside any socket, and
    /// returns what the server sent on it (for in-process fuzzing and tests). The
    /// connection is closed afterwards, leaving its spaces. Refused connections
    /// return the refusal frame.
    pub fn handle_detached(self: &Arc<Self>, agent_id: &str, frames: &[&str]) -> Vec<String> {
        let (outbox, mut rx) = Outbox::new(self.cfg.outbox, self.cfg.max_pending_bytes);
        let (conn, _cancels, connection_id) =
            match self.open(agent_id, self.cfg.token.as_deref(), outbox) {
                Ok(c) => c,
                Err(frame) => return vec![frame],
            };
        let mut publishes = (0, 0);
        let mut out = Vec::new();
        for f in frames {
            self.handle(conn, &connection_id, f, &mut publishes, &mut Vec::new());
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
    /// A publish leaves in `behind` the receivers whose unsent bytes are past the
    /// high-water mark, for the publisher's session to wait on (see
    /// [`Outbox::drained_below`]).
    fn handle(
        self: &Arc<Self>,
        conn: u64,
        connection_id: &str,
        text: &str,
        publishes: &mut (i64, u32),
        behind: &mut Vec<Outbox>,
    ) {
        let reply = |hub: &mut Hub, frame: String| Self::send_to(hub, conn, frame);
        let parsed = crate::wire::json::parse(text.as_bytes()).map(|t| t.to_serde());
        let mut hub = self.lock();
        let Ok(Value::Object(msg)) = parsed else {
            if self.fault("crash-text-frame") {
                let crash = "Internal Server Error: Expecting value: line 1 column 1 (char 0)";
                return reply(&mut hub, crash.to_string());
            }
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
                if want != agent_id && !self.fault("register-other-id-unrecorded") {
                    // Registered as another id, the connection is that agent from
                    // now on: the new id is held (ASP-013), the old one free, and its
                    // events and memberships carry the new one.
                    if hub.agents.get(&agent_id) == Some(&conn) {
                        hub.agents.remove(&agent_id);
                    }
                    hub.agents.insert(want.to_string(), conn);
                    if let Some(c) = hub.conns.get_mut(&conn) {
                        c.agent_id = want.to_string();
                    }
                    for space in hub.spaces.values_mut() {
                        for m in space.members.iter_mut().filter(|m| m.1 == conn) {
                            m.0 = want.to_string();
                        }
                    }
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
                                made_by_join: true,
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
                // Back in the space: its streams reach this member again.
                if let Some(c) = hub.conns.get(&conn) {
                    c.cancels
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&left_mark(&name));
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
                    self.free_if_empty(&mut hub, &name);
                    // A member that left gets nothing more of the space: the rest
                    // of any stream under way to it stops here (ASP-025).
                    if let Some(c) = hub.conns.get(&conn) {
                        c.cancels
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(left_mark(&name));
                    }
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
                // The publisher's timestamp as it wrote it (an integer stays one);
                // under the fault, read as a float and written back as one.
                let told = msg.get("data").and_then(|d| d.get("timestamp"));
                let ts = match told.filter(|t| t.is_number()) {
                    Some(t) if self.fault("relay-integer-as-float") => {
                        json!(t.as_f64().unwrap_or_default())
                    }
                    Some(t) => t.clone(),
                    None => json!(now_s()),
                };
                let targets: Vec<u64> = space
                    .members
                    .iter()
                    .map(|(_, c)| *c)
                    .filter(|c| *c != conn)
                    .collect();
                behind.extend(
                    targets
                        .iter()
                        .filter_map(|t| hub.conns.get(t))
                        .filter(|c| c.outbox.past_high_water())
                        .map(|c| c.outbox.clone()),
                );
                let overtake = self.fault("small-overtakes-stream");
                if text.len() <= self.cfg.delta_threshold || self.fault("no-delta") {
                    let frame = json!({"type": "space.event", "space": name,
                                       "data": {"from": agent_id, "text": text, "timestamp": ts}, "timestamp": now_s()});
                    let frame = Frame::from(json_text(&frame));
                    for t in targets {
                        let lane = hub.conns.get(&t).and_then(|c| c.lanes.get(&conn));
                        if overtake || !behind_stream(lane, &frame) {
                            Self::send_to(&mut hub, t, frame.clone());
                        }
                    }
                } else {
                    let event_id = format!("evt_{}", crate::wire::new_id().replace('-', ""));
                    // The stream's frames, made once and shared by every receiver's
                    // queue (one copy of the text however many are slow).
                    let frames = Arc::new(self.stream_frames(&name, &event_id, &agent_id, &text));
                    // The unpaced frames are queued here, at once, so that the
                    // next publish already sees them pending; a task paces the rest.
                    let unpaced = self.cfg.unpaced_chunks.min(frames.len());
                    for t in targets {
                        let Some(c) = hub.conns.get_mut(&t) else {
                            continue;
                        };
                        // Behind a stream of this publisher still under way, the
                        // whole of this one waits its turn, unpaced.
                        let lane = c.lanes.get(&conn);
                        if !overtake && frames.iter().all(|f| behind_stream(lane, f)) {
                            continue;
                        }
                        if !frames[..unpaced].iter().all(|f| c.outbox.push(f.clone()))
                            || unpaced == frames.len()
                        {
                            continue;
                        }
                        let lane: Lane = Arc::new(Mutex::new(Some(Vec::new())));
                        c.lanes.insert(conn, lane.clone());
                        let (outbox, cancels) = (c.outbox.clone(), c.cancels.clone());
                        let me = self.clone();
                        let (event_id, frames) = (event_id.clone(), frames.clone());
                        let name = name.clone();
                        tokio::spawn(async move {
                            let _end = LaneEnd {
                                lane,
                                outbox: outbox.clone(),
                            };
                            me.stream(outbox, cancels, (name, event_id), frames, unpaced)
                                .await
                        });
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

    /// The frames of one streamed text: its deltas (the first naming the sender)
    /// and the done.
    fn stream_frames(&self, space: &str, event_id: &str, from: &str, text: &str) -> Vec<Frame> {
        let mut frames = Vec::new();
        for (i, chunk) in chunks(text, self.cfg.chunk_bytes).into_iter().enumerate() {
            if i == 1 && self.fault("delta-drops-chunk") {
                continue;
            }
            let mut data = json!({"text": chunk});
            if i == 0 {
                data["from"] = json!(from);
            }
            let frame = json!({"type": "space.event.delta", "space": space, "event_id": event_id, "data": data, "timestamp": now_s()});
            frames.push(json_text(&frame).into());
        }
        let done = json!({"type": "space.event.done", "space": space, "event_id": event_id, "timestamp": now_s()});
        frames.push(json_text(&done).into());
        frames
    }

    /// Streams the rest of one text to one receiver, from frame `from` (the first
    /// `unpaced_chunks` went out at once): one frame, then a pause, to the done;
    /// stops when the receiver cancels the event or is cut off.
    async fn stream(
        &self,
        outbox: Outbox,
        cancels: Cancels,
        (space, event_id): (String, String),
        frames: Arc<Vec<Frame>>,
        from: usize,
    ) {
        let cancelled = || {
            cancels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&event_id)
        };
        let left = || {
            !self.fault("stream-to-leavers")
                && cancels
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains(&left_mark(&space))
        };
        let last = frames.len().saturating_sub(1);
        for (i, frame) in frames.iter().enumerate().skip(from) {
            tokio::time::sleep(self.cfg.chunk_pause).await;
            if i < last && cancelled() && !self.fault("ignore-cancel") {
                return;
            }
            if left() {
                return;
            }
            if !outbox.push(frame.clone()) {
                return;
            }
        }
    }
}

/// What a connection's cancel set holds while it is out of `space`: no stream of
/// the space reaches it (a name no event id takes: event ids are `evt_…`).
fn left_mark(space: &str) -> String {
    format!("\u{0}left:{space}")
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
    let (outbox, mut rx) = Outbox::new(s.cfg.outbox, s.cfg.max_pending_bytes);
    let mut cut = outbox.cut.subscribe();
    let mut writer_cut = outbox.cut.subscribe();
    let limit = outbox.limit;
    let (conn, _cancels, connection_id) = match s.open(&agent_id, token.as_deref(), outbox.clone())
    {
        Ok(c) => c,
        Err(frame) => {
            let _ = sink.send(Message::Text(frame.into())).await;
            let _ = sink.send(Message::Close(None)).await;
            return;
        }
    };
    let pending = outbox.pending.clone();
    let drained = outbox.drained.clone();
    let high_water = outbox.high_water();
    let every_end = s.fault("every-end-a-cut");
    // Why the session ended, where its Close says so (a heartbeat timeout).
    let why = Arc::new(std::sync::OnceLock::<String>::new());
    let why_w = why.clone();
    let writer = tokio::spawn(async move {
        let mut was_cut = false;
        loop {
            let frame = tokio::select! {
                biased;
                _ = cut_seen(&mut writer_cut, every_end) => {
                    was_cut = true;
                    break;
                }
                f = rx.recv() => f,
            };
            let Some(frame) = frame else { break };
            let n = frame.len();
            let sent = tokio::select! {
                biased;
                _ = cut_seen(&mut writer_cut, every_end) => {
                    was_cut = true;
                    break;
                }
                r = sink.send(Message::Text(frame)) => r,
            };
            let left = pending.fetch_sub(n, std::sync::atomic::Ordering::AcqRel) - n;
            if left <= high_water {
                drained.notify_waiters();
            }
            if sent.is_err() {
                break;
            }
        }
        if was_cut {
            // What was queued goes now; the Close follows what the socket already
            // holds, if the reader ever reads it.
            drop(rx);
            let close = Message::Close(Some(axum::extract::ws::CloseFrame {
                code: SLOW_CLOSE_CODE,
                reason: slow_close_reason(limit).into(),
            }));
            let _ = tokio::time::timeout(CUT_CLOSE_WAIT, sink.send(close)).await;
        } else if sink.send(Message::Close(ending(&why_w))).await.is_err() {
            // After a client's Close the socket holds its echo (RFC 6455 §5.5.1)
            // and refuses another Close: closing the sink sends the echo.
            let _ = tokio::time::timeout(CUT_CLOSE_WAIT, sink.close()).await;
        }
    });
    if !s.fault("no-registered") {
        let hello = s.registered(&agent_id, conn, &connection_id);
        outbox.push(json_text(&hello).into());
    }
    drop(outbox);
    let mut publishes = (0i64, 0u32);
    let mut behind = Vec::new();
    loop {
        let read = async {
            if s.fault("no-heartbeat-timeout") {
                Ok(stream.next().await)
            } else {
                tokio::time::timeout(s.cfg.heartbeat_timeout, stream.next()).await
            }
        };
        let next = tokio::select! {
            biased;
            _ = cut_seen(&mut cut, every_end) => break, // cut off as a slow consumer
            n = read => n,
        };
        match next {
            Err(_) => {
                // Silent for too long: the Close says so (1000, RFC 6455 §7.4.1).
                let t = s.cfg.heartbeat_timeout.as_secs_f64();
                let _ = why.set(format!("heartbeat timeout: nothing received for {t} s"));
                break;
            }
            Ok(None) | Ok(Some(Err(_))) => break,
            Ok(Some(Ok(Message::Text(t)))) => s.handle(
                conn,
                &connection_id,
                t.as_str(),
                &mut publishes,
                &mut behind,
            ),
            Ok(Some(Ok(Message::Binary(b)))) => s.handle(
                conn,
                &connection_id,
                &String::from_utf8_lossy(&b),
                &mut publishes,
                &mut behind,
            ),
            Ok(Some(Ok(Message::Close(_)))) => break,
            Ok(Some(Ok(_))) => {}
        }
        // A publisher goes on once each receiver past its high-water mark has
        // drained below it; those that have not within `slow_grace` (one deadline
        // for all) are cut off. The receivers that read never wait; stalled ones
        // hold a publisher up for `slow_grace` at most.
        let deadline = tokio::time::Instant::now() + s.cfg.slow_grace;
        for o in behind.drain(..) {
            if tokio::time::timeout_at(deadline, o.drained_below())
                .await
                .is_err()
            {
                o.cut_off();
            }
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
