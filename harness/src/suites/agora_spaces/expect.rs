//! agora-spaces expectations: peers (one WebSocket connection each, as one agent),
//! the lenient reading of server events, refusals, and the delta-stream judge.
//!
//! Every server frame is read once, by [`Peer`], through [`check_frame`]. A
//! deviation of its shape (a schema breach, an error code in another member, the
//! member list under another name, a connection id that is a number) is an
//! *incidental* finding, owned by the case whose subject that shape is, and the frame
//! is read on in its canonical form, so that every other case still judges its own
//! subject. A frame that cannot be read at all (not JSON, no type) is skipped; a case
//! that then waits in vain is blocked by it rather than failed.
//!
//! Connecting and registering (the handshake), and joining a space, are the subjects
//! of `handshake` and `join-general`: when they go wrong, every other case is blocked
//! by one finding instead of failing with a message of its own.
//!
//! A refusal is an HTTP 4xx on upgrade or an error event (ambiguity ASP-A21). A
//! timeout, a reset or a dropped connection is not one; a close without an error
//! counts only once a valid connection is shown to be answered right after.

use super::rules;
use crate::case::{fail, skip, Step, Stop};
use crate::drive::ws::WsDriver;
use crate::drive::{DriveError, Limits};
use crate::finding::{quote, Finding};
use crate::rules::Rule;
use crate::script::{describe_drive_error, Ctx};
use reference_impl::wire::{json, new_id};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub const CODES: [&str; 6] = [
    "INVALID_REQUEST",
    "UNAUTHORIZED",
    "AGENT_EXISTS",
    "SPACE_NOT_FOUND",
    "SPACE_FULL",
    "RATE_LIMITED",
];

/// The event types a server sends (agora-spaces.zh.md, 事件类型).
pub const SERVER_TYPES: [&str; 10] = [
    "agent.registered",
    "agent.heartbeat",
    "space.joined",
    "space.members",
    "space.event",
    "space.event.delta",
    "space.event.done",
    "space.event.cancel",
    "space.list",
    "error",
];

/// The cases that own the rules the shared reading meets.
const JOIN: &str = "agora-spaces/join-general";

/// The schema of a server frame, by its type.
pub fn schema_for(v: &Value) -> Option<&'static str> {
    Some(match v["type"].as_str()? {
        "agent.registered" => "agent-registered",
        "agent.heartbeat" => "agent-heartbeat",
        "space.joined" => "space-joined",
        "space.members" => "space-members",
        "space.event" => "space-event",
        "space.event.delta" => "space-event-delta",
        "space.event.done" => "space-event-done",
        "space.event.cancel" => "space-event-cancel",
        "space.list" => "space-list-reply",
        "error" => "error",
        _ => return None,
    })
}

/// The case that owns a schema's shape, and the requirements the shape comes from.
fn schema_rule(schema: &str) -> &'static Rule {
    rules::RULES
        .iter()
        .copied()
        .find(|r| {
            r.key
                .strip_prefix("agora-spaces/schema:")
                .and_then(|k| k.strip_suffix(":*"))
                == Some(schema)
        })
        .unwrap_or(&rules::SCHEMA_ERROR)
}

/// A fresh agent id for a case.
pub fn agent_id(tag: &str) -> String {
    format!("h-{tag}-{}", &new_id()[..8])
}

/// A fresh user space name.
pub fn user_space() -> String {
    format!("h_{}", &new_id().replace('-', "")[..16])
}

/// What a space.joined answering the join `id` (when it had one) of `space` by `me`
/// breaks: it echoes the id (`joined:id`, ASP-021), names the space and lists the
/// joiner (the join-general case's rule, ASP-023). A members list that cannot be
/// read is `joined:members`, judged when the frame is read.
pub fn joined_findings(v: &Value, id: Option<&str>, space: &str, me: &str) -> Vec<Finding> {
    let mut found = Vec::new();
    if let Some(id) = id.filter(|id| v["id"] != *id) {
        found.push(rules::JOINED_ID.found(format!(
            "space.joined does not echo the join id {id:?}: its id is {}",
            v.get("id").map_or("absent".to_string(), Value::to_string)
        )));
    }
    // A space.joined without `space` is the schema's finding alone.
    if v.get("space").is_some_and(|s| s != space) {
        found.push(
            rules::JOIN_GENERAL.found(format!("space.joined names {}, not {space}", v["space"])),
        );
    } else if v["members"]
        .as_array()
        .is_some_and(|m| !m.iter().any(|x| x == me))
    {
        found.push(rules::JOIN_GENERAL.found(format!(
            "space.joined members {} do not include the joiner {me} (ASP-023)",
            v["members"]
        )));
    }
    found.into_iter().map(|f| f.owned_by(JOIN)).collect()
}

/// What an agent.registered for the agent `me` breaks: it names that agent
/// (the handshake's rule, ASP-008). An agent.id that cannot be read is
/// `registered:agent-id`, judged when the frame is read.
pub fn registered_finding(reg: &Value, me: &str) -> Option<Finding> {
    let named = &reg["agent"]["id"];
    (named.is_string() && named != me).then(|| {
        rules::HANDSHAKE_NAMED.found(format!(
            "agent.registered names {named}, not {me} (ASP-008)"
        ))
    })
}

/// Whether `s` names a system space (`agent.`, `file.`, `mcp.`; ASP-047).
pub fn is_system_name(s: &str) -> bool {
    ["agent.", "file.", "mcp."].iter().any(|p| s.starts_with(p))
}

/// What the entries of a space.list reply break: a system space is typed
/// `system` (the space-list case's rule, ASP-047, ASP-049, ASP-050).
pub fn list_finding(spaces: &[Value]) -> Option<Finding> {
    let wrong = spaces.iter().find(|s| {
        is_system_name(s["id"].as_str().unwrap_or_default())
            && !s["type"]
                .as_str()
                .is_some_and(|t| t.eq_ignore_ascii_case("system"))
    })?;
    Some(rules::SPACE_LIST.found(format!(
        "{} is a system space but is listed as {} (ASP-047/049/050)",
        wrong["id"], wrong["type"]
    )))
}

/// Whether `space` is a fresh name of [`user_space`] (possibly under `task.`).
pub fn is_fresh(space: &str) -> bool {
    space
        .strip_prefix("task.")
        .unwrap_or(space)
        .starts_with("h_")
}

pub fn now_s() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// The URL for one agent: the target URL with agent_id and token in the query.
pub fn url_for(base: &str, agent_id: Option<&str>, token: Option<&str>) -> String {
    let mut params = Vec::new();
    if let Some(a) = agent_id {
        params.push(format!(
            "agent_id={}",
            reference_impl::agora_exchange::client::percent_encode(a)
        ));
    }
    if let Some(t) = token {
        params.push(format!(
            "token={}",
            reference_impl::agora_exchange::client::percent_encode(t)
        ));
    }
    if params.is_empty() {
        return base.to_string();
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}{}", params.join("&"))
}

/// The HTTP status of a refused upgrade (the driver names it in its error).
pub fn refused_status(e: &DriveError) -> Option<u16> {
    match e {
        DriveError::Connect(m) => m
            .strip_prefix("the upgrade was refused with HTTP ")?
            .trim()
            .parse()
            .ok(),
        _ => None,
    }
}

/// A connection with agent_id and the profile's token that did not open: one finding
/// of the handshake case, whichever case met it.
fn connect_finding(e: &DriveError, agent_id: &str) -> Finding {
    let (kind, what) = match (e, refused_status(e)) {
        (DriveError::Timeout(ms), _) => (
            "no-answer",
            format!("the target did not complete the WebSocket upgrade within {ms} ms"),
        ),
        (_, Some(s @ (401 | 403))) => (
            "refused",
            format!(
                "the upgrade was refused with HTTP {s} (does the target want another token? [target] token in the profile)"
            ),
        ),
        (_, Some(s)) => ("refused", format!("the upgrade was refused with HTTP {s}")),
        (DriveError::Connect(m), None) => ("unreachable", format!("cannot connect: {m}")),
        (other, None) => ("failed", describe_drive_error(other)),
    };
    rules::CONNECT.found_as(
        kind,
        format!("connecting as {agent_id} with the profile's token: {what}"),
    )
}

/// A transport failure on an open connection: one finding per kind, no owner (the
/// first case that meets it fails for it), and the case cannot go on.
fn transport_block(ctx: &mut Ctx, who: &str, e: &DriveError) -> Stop {
    let kind = e.kind();
    ctx.block(crate::rules::TRANSPORT.found_in(
        "agora-spaces",
        kind,
        format!("[{who}] {}", describe_drive_error(e)),
    ))
}

/// How a connection attempt ended.
pub enum Attempt {
    /// The upgrade completed.
    Open(Box<Peer>),
    /// The upgrade was answered with this HTTP status instead of 101.
    Refused(u16),
    /// No answer, a reset or another failure: not a refusal.
    Failed(DriveError),
}

/// What a connection that must not be registered got (ambiguity ASP-A21).
pub enum Refusal {
    /// An HTTP 4xx on upgrade.
    Http(u16),
    /// An error event, read leniently.
    Error(Value),
    /// A close without an error event; a valid connection was answered right after.
    Closed,
}

/// One connection, as one agent. Frames that a wait did not want stay queued.
pub struct Peer {
    pub agent_id: String,
    drv: WsDriver,
    inbox: VecDeque<Value>,
    pub closed: bool,
    /// The finding of the last frame that could not be read at all: a wait that ends
    /// empty-handed after it is blocked by it (the awaited answer may have been it).
    unreadable: Option<Finding>,
    /// When the harness last sent on this connection (or opened it).
    last_sent: Instant,
    /// The largest message this connection takes ([`Peer::join_as_taking`]).
    cap: usize,
}

impl Peer {
    /// The largest message a connection takes unless its case says more: the
    /// profile's cap. Every connection of a run may be assembling one message at
    /// once (a target that sends one without end), so the cap is paid per
    /// connection; only a case that awaits a large event raises it, on the one
    /// connection that awaits it.
    fn default_cap(ctx: &Ctx) -> usize {
        ctx.profile().timing.max_response_bytes
    }

    fn limits(&self, timeout: Duration) -> Limits {
        Limits {
            timeout,
            max_bytes: self.cap,
        }
    }

    pub fn case_wait(ctx: &Ctx) -> Duration {
        Duration::from_millis(ctx.profile().timing.case_timeout_ms)
    }

    /// Connects as `agent_id` with the profile's token. A connection that does not
    /// open blocks the case by one `agora-spaces/connect:*` finding, owned by the
    /// handshake case.
    pub async fn connect(ctx: &mut Ctx, agent_id: &str) -> Step<Peer> {
        let cap = Peer::default_cap(ctx);
        Peer::connect_taking(ctx, agent_id, cap).await
    }

    /// [`Peer::connect`], taking messages of up to `cap` bytes.
    async fn connect_taking(ctx: &mut Ctx, agent_id: &str, cap: usize) -> Step<Peer> {
        let token = ctx.profile().target.token.clone();
        match Peer::connect_capped(ctx, Some(agent_id), token.as_deref(), cap).await? {
            Ok(p) => Ok(p),
            Err(e) => Err(ctx.block(connect_finding(&e, agent_id))),
        }
    }

    /// Connects with explicit query values; a failure is returned, not judged.
    pub async fn connect_raw(
        ctx: &mut Ctx,
        agent_id: Option<&str>,
        token: Option<&str>,
    ) -> Step<Result<Peer, DriveError>> {
        let cap = Peer::default_cap(ctx);
        Peer::connect_capped(ctx, agent_id, token, cap).await
    }

    async fn connect_capped(
        ctx: &mut Ctx,
        agent_id: Option<&str>,
        token: Option<&str>,
        cap: usize,
    ) -> Step<Result<Peer, DriveError>> {
        let url = url_for(&ctx.url, agent_id, token);
        let mut drv = WsDriver::new(&url, &ctx.shared.tls);
        let limits = Limits {
            timeout: Peer::case_wait(ctx),
            max_bytes: cap,
        };
        ctx.log_frame("send", agent_id.unwrap_or("-"), &format!("connect {url}"));
        Ok(match drv.open(limits).await {
            Ok(()) => Ok(Peer {
                agent_id: agent_id.unwrap_or_default().to_string(),
                drv,
                inbox: VecDeque::new(),
                closed: false,
                unreadable: None,
                last_sent: Instant::now(),
                cap,
            }),
            Err(e) => {
                ctx.log_frame("note", agent_id.unwrap_or("-"), &describe_drive_error(&e));
                Err(e)
            }
        })
    }

    /// The hub's answer to this new connection: agent.registered or an error, sent
    /// unsolicited within a short wait, else answering the agent.register sent for
    /// `register` (none: nothing is sent). None when neither came.
    pub async fn registration(
        &mut self,
        ctx: &mut Ctx,
        register: Option<&str>,
    ) -> Step<Option<Value>> {
        let answer = |v: &Value| v["type"] == "agent.registered" || v["type"] == "error";
        let heartbeat_ms = ctx.profile().timing.heartbeat_timeout_s * 1000 / 2;
        let first = Duration::from_millis(heartbeat_ms.clamp(500, 2000));
        let got = self.wait_for(ctx, first, answer).await?;
        if got.is_some() || self.closed {
            return Ok(got);
        }
        let Some(id) = register else {
            return Ok(None);
        };
        let reg = json!({"type": "agent.register", "id": format!("reg-{}", &new_id()[..8]), "timestamp": now_s(),
                         "agent": {"id": id, "type": "process", "capabilities": ["text"], "metadata": {}}});
        self.send(ctx, &reg).await?;
        self.wait_for(ctx, Peer::case_wait(ctx), answer).await
    }

    /// A connection attempt for a case that judges refusals.
    pub async fn attempt(
        ctx: &mut Ctx,
        agent_id: Option<&str>,
        token: Option<&str>,
    ) -> Step<Attempt> {
        Ok(match Peer::connect_raw(ctx, agent_id, token).await? {
            Ok(p) => Attempt::Open(Box::new(p)),
            Err(e) => match refused_status(&e) {
                Some(s) => Attempt::Refused(s),
                None => Attempt::Failed(e),
            },
        })
    }

    pub async fn send(&mut self, ctx: &mut Ctx, v: &Value) -> Step<()> {
        self.send_text(ctx, reference_impl::wire::json_text(v))
            .await
    }

    pub async fn send_text(&mut self, ctx: &mut Ctx, text: String) -> Step<()> {
        ctx.log_frame("send", &self.agent_id, &text);
        self.last_sent = Instant::now();
        let limits = self.limits(Peer::case_wait(ctx));
        match self.drv.send_text(text, limits).await {
            Ok(()) => Ok(()),
            Err(e) => {
                if matches!(e, DriveError::Closed) {
                    self.closed = true;
                }
                Err(transport_block(ctx, &self.agent_id, &e))
            }
        }
    }

    /// Reads the next readable frame from the socket within `wait`, in its canonical
    /// form; `None` on silence or close. Unreadable frames are recorded and skipped.
    async fn read(&mut self, ctx: &mut Ctx, wait: Duration) -> Step<Option<Value>> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.read_one(ctx, left).await? {
                Some(Some(v)) => return Ok(Some(v)),
                // A fuzz case has its finding in the unreadable frame: it waits no
                // longer for what might come after it.
                Some(None) if ctx.fuzzing => return Ok(None),
                Some(None) => {}
                None => return Ok(None),
            }
        }
    }

    /// Whether a frame of any kind arrives within `wait`; a readable one is queued,
    /// an unreadable one recorded as its finding.
    pub async fn next_frame(&mut self, ctx: &mut Ctx, wait: Duration) -> Step<bool> {
        Ok(match self.read_one(ctx, wait).await? {
            Some(Some(v)) => {
                if self.inbox.len() < 10_000 {
                    self.inbox.push_back(v);
                }
                true
            }
            Some(None) => true,
            None => false,
        })
    }

    /// Reads one frame within `wait`: `Some(Some(v))` a readable frame in its
    /// canonical form, `Some(None)` one that cannot be read (recorded as its
    /// finding), `None` silence or close.
    async fn read_one(&mut self, ctx: &mut Ctx, wait: Duration) -> Step<Option<Option<Value>>> {
        if self.closed {
            return Ok(None);
        }
        match self.drv.recv(self.limits(wait)).await {
            Ok(Some(bytes)) => {
                let text = crate::script::clip_bytes(&bytes);
                ctx.log_frame("recv", &self.agent_id, &text);
                match read_frame(ctx, &bytes) {
                    Ok(v) => Ok(Some(Some(v))),
                    Err(f) => {
                        ctx.finding(f.clone());
                        self.unreadable = Some(f);
                        Ok(Some(None))
                    }
                }
            }
            Ok(None) => Ok(None),
            Err(DriveError::Closed) => {
                self.closed = true;
                ctx.log_frame("note", &self.agent_id, "connection closed by the server");
                Ok(None)
            }
            Err(e) => Err(transport_block(ctx, &self.agent_id, &e)),
        }
    }

    /// Waits up to `wait` for a frame matching `pred`; others stay queued.
    pub async fn wait_for(
        &mut self,
        ctx: &mut Ctx,
        wait: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Step<Option<Value>> {
        if let Some(i) = self.inbox.iter().position(&pred) {
            return Ok(self.inbox.remove(i));
        }
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.read(ctx, left).await? {
                Some(v) if pred(&v) => return Ok(Some(v)),
                Some(v) => {
                    if self.inbox.len() < 10_000 {
                        self.inbox.push_back(v);
                    }
                }
                None => return Ok(None),
            }
        }
    }

    /// Whether the harness has been silent on this connection for the profile's
    /// heartbeat timeout, so that a close is the server's heartbeat rule (ASP-015).
    fn silent_too_long(&self, ctx: &Ctx) -> bool {
        self.last_sent.elapsed() >= Duration::from_secs(ctx.profile().timing.heartbeat_timeout_s)
    }

    /// Why a wait ended empty-handed, when that is not the case's to judge: a frame
    /// that could not be read (it may have been the answer), or a closed connection
    /// (unless the harness itself was silent for the heartbeat timeout).
    fn not_ours(&self, ctx: &mut Ctx, what: &str) -> Option<Stop> {
        if let Some(f) = self.unreadable.clone() {
            return Some(ctx.block(f));
        }
        if self.closed && !self.silent_too_long(ctx) {
            return Some(ctx.block(crate::rules::TRANSPORT.found_in(
                "agora-spaces",
                "connection-closed",
                format!(
                    "[{}] the target closed the connection while the harness waited for {what}",
                    self.agent_id
                ),
            )));
        }
        None
    }

    /// A frame matching `pred` must arrive within the case timeout.
    pub async fn expect(
        &mut self,
        ctx: &mut Ctx,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Step<Value> {
        let wait = Peer::case_wait(ctx);
        match self.wait_for(ctx, wait, pred).await? {
            Some(v) => {
                ctx.checked(format!("[{}] {what}", self.agent_id));
                Ok(v)
            }
            None => match self.not_ours(ctx, what) {
                Some(stop) => Err(stop),
                None if self.closed => fail(format!(
                    "[{}] expected {what}; none came before the server closed the connection, silent for the heartbeat timeout",
                    self.agent_id
                )),
                None => fail(format!(
                    "[{}] expected {what} within {} ms",
                    self.agent_id,
                    wait.as_millis()
                )),
            },
        }
    }

    /// No frame matching `pred` may arrive within `wait`.
    pub async fn expect_none(
        &mut self,
        ctx: &mut Ctx,
        wait: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Step<()> {
        match self.wait_for(ctx, wait, pred).await? {
            Some(v) => fail(format!("[{}] received {what}: {v}", self.agent_id)),
            None => Ok(()),
        }
    }

    /// Every frame queued or arriving within `wait`.
    pub async fn drain(&mut self, ctx: &mut Ctx, wait: Duration) -> Step<Vec<Value>> {
        let mut out: Vec<Value> = self.inbox.drain(..).collect();
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(out);
            }
            match self.read(ctx, left).await? {
                Some(v) => out.push(v),
                None => return Ok(out),
            }
        }
    }

    /// Whether the server closes the connection within `wait` (frames are drained).
    pub async fn closed_within(&mut self, ctx: &mut Ctx, wait: Duration) -> Step<bool> {
        let deadline = Instant::now() + wait;
        while !self.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            if self.read(ctx, left).await?.is_none() && !self.closed {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub async fn close(&mut self) {
        self.drv.close().await;
    }

    /// Connects and completes the handshake: `agent.registered` unsolicited within
    /// 5 s (or half the heartbeat timeout, if shorter), else in answer to
    /// `agent.register` (ASP-A3). Returns the registered event
    /// and whether it came unsolicited. A handshake that fails blocks the case by one
    /// finding of the handshake case.
    pub async fn join_as(ctx: &mut Ctx, agent_id: &str) -> Step<(Peer, Value, bool)> {
        let cap = Peer::default_cap(ctx);
        Peer::join_as_taking(ctx, agent_id, cap).await
    }

    /// [`Peer::join_as`] for a connection that awaits one large event: it takes
    /// messages of up to `cap` bytes (at least the profile's cap).
    pub async fn join_as_taking(
        ctx: &mut Ctx,
        agent_id: &str,
        cap: usize,
    ) -> Step<(Peer, Value, bool)> {
        let cap = cap.max(Peer::default_cap(ctx));
        let mut p = Peer::connect_taking(ctx, agent_id, cap).await?;
        let answer = |v: &Value| v["type"] == "agent.registered" || v["type"] == "error";
        // ASP-007's 5 s, but within half the heartbeat timeout, so that a server does
        // not drop the connection as silent while the harness waits.
        let heartbeat_ms = ctx.profile().timing.heartbeat_timeout_s * 1000 / 2;
        let unsolicited = Duration::from_millis(heartbeat_ms.clamp(500, 5000));
        let first = p.wait_for(ctx, unsolicited, answer).await?;
        match first {
            Some(v) if v["type"] == "agent.registered" => {
                registered_control(ctx, agent_id);
                return Ok((p, v, true));
            }
            Some(v) => {
                let hint = if v["code"] == "UNAUTHORIZED" {
                    " (does the target want another token? [target] token in the profile)"
                } else {
                    ""
                };
                let f = handshake_finding(
                    &rules::HANDSHAKE_REFUSED,
                    format!(
                        "a connection as {agent_id} with the profile's token drew {}{hint}",
                        said_error(&v)
                    ),
                );
                return Err(ctx.block(f));
            }
            None if p.closed => {
                let f = handshake_finding(&rules::HANDSHAKE_REFUSED,
                    format!(
                        "the target closed a connection as {agent_id} with the profile's token without agent.registered or an error"
                    ),
                );
                return Err(ctx.block(f));
            }
            None => {}
        }
        let id = format!("reg-{}", &new_id()[..8]);
        let reg = json!({"type": "agent.register", "id": id, "timestamp": now_s(),
                         "agent": {"id": agent_id, "type": "process", "capabilities": ["text"], "metadata": {}}});
        p.send(ctx, &reg).await?;
        let wait = Peer::case_wait(ctx);
        match p.wait_for(ctx, wait, answer).await? {
            Some(v) if v["type"] == "agent.registered" => {
                registered_control(ctx, agent_id);
                Ok((p, v, false))
            }
            Some(v) => Err(ctx.block(handshake_finding(&rules::HANDSHAKE_NO_REGISTERED,
                format!(
                    "no agent.registered within {} ms of connecting as {agent_id}, and agent.register drew {}",
                    unsolicited.as_millis(),
                    said_error(&v)
                ),
            ))),
            None => match p.not_ours(ctx, "agent.registered") {
                Some(stop) => Err(stop),
                None => Err(ctx.block(handshake_finding(&rules::HANDSHAKE_NO_REGISTERED,
                    format!(
                        "no agent.registered for {agent_id}: none within {} ms of connecting, none within {} ms of agent.register (ASP-007, ASP-010)",
                        unsolicited.as_millis(),
                        wait.as_millis()
                    ),
                ))),
            },
        }
    }

    /// Joins `space`; returns the space.joined event. A join that is not answered, or
    /// refused, blocks the case by one finding of the join-general case; a fresh user
    /// space the target will not create skips it (ambiguity ASP-A8 allows that).
    pub async fn join(&mut self, ctx: &mut Ctx, space: &str) -> Step<Value> {
        let id = format!("join-{}", &new_id()[..8]);
        self.send(
            ctx,
            &json!({"type": "space.join", "id": id, "space": space, "timestamp": now_s()}),
        )
        .await?;
        let want = id.clone();
        let wait = Peer::case_wait(ctx);
        let got = self
            .wait_for(ctx, wait, move |v| {
                (v["type"] == "space.joined" && (v["id"] == want.as_str() || v.get("id").is_none()))
                    || (v["type"] == "error"
                        && (v["request_id"] == want.as_str() || v.get("request_id").is_none()))
            })
            .await?;
        let Some(v) = got else {
            let what = format!("an answer to joining {space}");
            return Err(self.not_ours(ctx, &what).unwrap_or_else(|| {
                ctx.block(rules::JOIN_NO_ANSWER.found(format!(
                    "space.join {space:?} drew no answer within {} ms",
                    wait.as_millis()
                )))
            }));
        };
        if v["type"] == "error" {
            if v["code"] == "SPACE_NOT_FOUND" && is_fresh(space) {
                return skip(format!(
                    "the target does not create the space {space:?} on join (SPACE_NOT_FOUND; ambiguity ASP-A8 allows it), and this case needs a space of its own"
                ));
            }
            return Err(ctx.block(
                rules::JOIN_REFUSED.found(format!("joining {space:?} drew {}", said_error(&v))),
            ));
        }
        for f in joined_findings(&v, Some(&id), space, &self.agent_id) {
            ctx.finding(f);
        }
        Ok(v)
    }

    /// [`Peer::join`] of the case's own fresh space; where the target does not
    /// create spaces on join (allowed, ASP-A8), the profile's public space instead,
    /// noted, and `space` names it from then on. For cases whose frames are told
    /// apart by their own ids and texts, so that other cases in that space do not
    /// disturb them.
    pub async fn join_own(&mut self, ctx: &mut Ctx, space: &mut String) -> Step<Value> {
        match self.join(ctx, space).await {
            Err(Stop::Skip(why)) if is_fresh(space) => {
                let public = ctx.profile().agora_spaces.public_space.clone();
                ctx.note(format!(
                    "{why}; the case runs in the public space {public} instead, shared with other cases"
                ));
                *space = public;
                self.join(ctx, space).await
            }
            other => other,
        }
    }

    pub async fn publish(&mut self, ctx: &mut Ctx, space: &str, text: &str) -> Step<()> {
        let msg = json!({"type": "space.publish", "id": format!("pub-{}", &new_id()[..8]), "space": space,
                         "data": {"from": self.agent_id, "text": text, "timestamp": now_s()}, "timestamp": now_s()});
        self.send(ctx, &msg).await
    }

    /// After an error that closed the connection (allowed, ambiguity ASP-A21), goes on
    /// with a fresh connection as a new agent.
    pub async fn reopen_if_closed(&mut self, ctx: &mut Ctx, tag: &str) -> Step<()> {
        if self.closed {
            ctx.note(format!(
                "the target closed the connection of {} after an error (allowed, ASP-A21); going on as a new agent",
                self.agent_id
            ));
            let (p, _, _) = Peer::join_as(ctx, &agent_id(tag)).await?;
            *self = p;
        }
        Ok(())
    }

    /// Judges a connection that must not be registered (`what`, rule `req`): an HTTP
    /// 4xx on upgrade, an error event, or a close is a refusal (ambiguity ASP-A21);
    /// registration fails the case. Silence, a timeout, a reset or another HTTP status
    /// fails it only once a valid connection is shown to be answered (else the case is
    /// blocked); a close without an error counts only then. `register`: the agent id
    /// to send agent.register for when nothing arrives unprompted (ambiguity ASP-A3).
    pub async fn expect_refusal(
        ctx: &mut Ctx,
        attempt: Attempt,
        what: &str,
        req: &str,
        register: Option<&str>,
    ) -> Step<Refusal> {
        let mut p = match attempt {
            Attempt::Refused(s) if (400..500).contains(&s) => {
                ctx.checked(format!("{what}: the upgrade was refused with HTTP {s}"));
                refusal_counts(ctx, what).await?;
                return Ok(Refusal::Http(s));
            }
            Attempt::Refused(s) => {
                prove_alive(ctx).await?;
                return fail(format!(
                    "{what}: the upgrade was answered with HTTP {s}, which is neither a 4xx refusal nor an error event ({req}, ASP-A21)"
                ));
            }
            Attempt::Failed(e) => {
                prove_alive(ctx).await?;
                return fail(format!(
                    "{what} was not refused: {} (a timeout, a reset or a dropped connection is not a refusal; {req}, ASP-A21)",
                    describe_drive_error(&e)
                ));
            }
            Attempt::Open(p) => *p,
        };
        let got = p.registration(ctx, register).await?;
        let out = match got {
            Some(v) if v["type"] == "agent.registered" => {
                return fail(format!("{what} was registered ({req}): {v}"));
            }
            Some(v) => {
                ctx.checked(format!("{what}: refused with {}", said_error(&v)));
                Refusal::Error(v)
            }
            // A close after the harness was silent for the heartbeat timeout is the
            // heartbeat rule, not a refusal.
            None if p.closed && !p.silent_too_long(ctx) => {
                prove_alive(ctx).await?;
                ctx.note(format!(
                    "{what}: the target closed the connection without an error event (a close counts as a refusal, ASP-A21)"
                ));
                Refusal::Closed
            }
            None => {
                if let Some(f) = p.unreadable.clone() {
                    return Err(ctx.block(f));
                }
                prove_alive(ctx).await?;
                return fail(format!(
                    "{what} drew neither an error nor a close ({req}, ASP-A21)"
                ));
            }
        };
        p.close().await;
        refusal_counts(ctx, what).await?;
        Ok(out)
    }
}

/// A valid connection was registered: the case's control, unless it has one.
fn registered_control(ctx: &mut Ctx, agent_id: &str) {
    if ctx.has_control().is_none() {
        ctx.control(format!("a valid connection as {agent_id}"));
    }
}

/// A refusal counts only beside a control: a valid connection registered in the same
/// case, made now when there is none yet ([`prove_alive`]).
async fn refusal_counts(ctx: &mut Ctx, what: &str) -> Step<()> {
    if ctx.has_control().is_none() {
        prove_alive(ctx).await?;
    }
    ctx.refusal_counts(what)
}

/// Shows that the target answers a valid connection (agent_id and the profile's
/// token) right now, or blocks the case: a case that takes a close, a timeout or
/// silence as meaningful calls it first, since a dead target refuses everything.
pub async fn prove_alive(ctx: &mut Ctx) -> Step<()> {
    let (mut p, _, _) = Peer::join_as(ctx, &agent_id("alive")).await?;
    ctx.checked("a valid connection is answered with agent.registered: the target is alive");
    p.close().await;
    Ok(())
}

/// The handshake's one finding (ASP-003, ASP-010), whichever case met it.
fn handshake_finding(rule: &'static Rule, summary: String) -> Finding {
    rule.found(summary)
}

/// A frame as the target sent it (compact JSON), shortened to fit one report line.
pub fn shown(v: &Value) -> String {
    crate::finding::clipped_json(v, 240)
}

/// An error event in a few words: its code and message, as the target said them.
pub fn said_error(v: &Value) -> String {
    if v["type"] != "error" {
        return v["type"].as_str().unwrap_or("an untyped frame").to_string();
    }
    let code = match &v["code"] {
        Value::String(s) => s.clone(),
        Value::Null => "(no code)".into(),
        other => other.to_string(),
    };
    match v["message"].as_str() {
        Some(m) => format!("error {code} {}", quote(m)),
        None => format!("error {code}"),
    }
}

/// Whether `v` answers the message `id`: it echoes the id, or it is an error whose
/// request_id is that id or absent (an error without it is still read as the answer;
/// the missing request_id is the finding of [`check_request_id`]).
pub fn answers(v: &Value, id: &str) -> bool {
    v["id"] == id
        || (v["type"] == "error" && (v["request_id"] == id || v.get("request_id").is_none()))
}

/// An error event with `code`.
pub fn is_error(v: &Value, code: &str) -> bool {
    v["type"] == "error" && v["code"] == code
}

/// The code of an error event a case judges. An error without a code the harness can
/// read blocks the case: the error's shape is the subject of another case.
pub fn code_of(ctx: &mut Ctx, v: &Value) -> Step<String> {
    match v["code"].as_str() {
        Some(c) => Ok(c.to_string()),
        None => Err(ctx.block(rules::ERROR_CODE.found(format!(
            "an error event carries no code the harness can read: {}",
            shown(v)
        )))),
    }
}

/// Checks that an error answering the message `request_id` carries it (ASP-041);
/// a miss is a finding of the join-missing case, and the case goes on.
pub fn check_request_id(ctx: &mut Ctx, v: &Value, request_id: &str) {
    if v["request_id"] == request_id {
        ctx.checked(format!("the error carries request_id {request_id:?}"));
        return;
    }
    let carried = match v.get("request_id") {
        None => "no request_id".to_string(),
        Some(x) => format!("request_id {x}"),
    };
    ctx.finding(rules::ERROR_REQUEST_ID.found(format!(
        "{} answering the message {request_id:?} carries {carried}",
        said_error(v)
    )));
}

/// The connection id of an agent.registered event, for a case that compares them.
pub fn connection_id(ctx: &mut Ctx, reg: &Value) -> Step<String> {
    match reg["agent"]["connection_id"].as_str() {
        Some(c) => Ok(c.to_string()),
        None => Err(ctx.block(rules::REGISTERED.found_as(
            "connection-id",
            format!("agent.registered carries no connection_id: {}", shown(reg)),
        ))),
    }
}

/// What two connections' agent.registered events `ra` and `rb` break: they name
/// different connection ids (the connection-ids-distinct case's rule, ASP-009).
pub fn distinct_connections(ctx: &mut Ctx, ra: &Value, rb: &Value) -> Step<Option<Finding>> {
    let (ca, cb) = (connection_id(ctx, ra)?, connection_id(ctx, rb)?);
    Ok((ca == cb).then(|| {
        rules::CONNECTION_IDS_DISTINCT.found(format!(
            "both connections got connection_id {ca:?} (ASP-009)"
        ))
    }))
}

/// What a space.members of `space` announcing that `who` joined (`joined`) or left
/// breaks: it names the space, the other of joined and left is null, and members
/// lists each of `listed` and, after a leave, not `who` (the member-updates case's
/// rule, ASP-026, ASP-027). A members list that cannot be read is `members:list`,
/// judged when the frame is read; `left` absent reads as null and `space` absent is
/// not judged (each the schema's finding).
pub fn update_finding(
    v: &Value,
    space: &str,
    who: &str,
    joined: bool,
    listed: &[&str],
) -> Option<Finding> {
    let (other, req, what) = match joined {
        true => ("left", "ASP-026", "join"),
        false => ("joined", "ASP-027", "leave"),
    };
    let members = v["members"].as_array();
    let lists = |id: &str| members.is_none_or(|m| m.iter().any(|x| x == id));
    let gone = joined || members.is_none_or(|m| !m.iter().any(|x| x == who));
    // Without `space` the schema's finding alone.
    let named = v.get("space").is_none_or(|s| s == space);
    let ok = named && v[other].is_null() && listed.iter().all(|id| lists(id)) && gone;
    let without = if joined {
        String::new()
    } else {
        format!(", not {who}")
    };
    (!ok).then(|| {
        rules::MEMBER_UPDATES.found(format!("the {what} update should name {space}, list {listed:?}{without} and have {other} null ({req}): {v}"),
        )
    })
}

// ---------------------------------------------------------------------------
// Reading server frames.

/// Reads one frame: its canonical form, or the finding that it cannot be read.
fn read_frame(ctx: &mut Ctx, bytes: &[u8]) -> Result<Value, Finding> {
    match json::parse(bytes) {
        Ok(t) => check_frame(ctx, t.to_serde()),
        Err(e) => Err(rules::FRAME_NOT_JSON.found(format!(
            "a server frame is not JSON ({e}): {}",
            quote(&String::from_utf8_lossy(&bytes[..bytes.len().min(512)]))
        ))),
    }
}

fn nonempty_str(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

/// The first of `names` in `m` whose value `ok` accepts, with its name.
fn first_of<'a>(
    m: &'a Map<String, Value>,
    names: &[&'static str],
    ok: impl Fn(&Value) -> bool,
) -> Option<(&'static str, &'a Value)> {
    names
        .iter()
        .find_map(|n| m.get(*n).filter(|v| ok(v)).map(|v| (*n, v)))
}

/// An error code in the table's form: upper-case words joined by underscores.
fn code_like(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        !s.is_empty()
            && s.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
            && s.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// Checks every server frame (ASP-001, ASP-018, ASP-020, ASP-041, ASP-042 and each
/// event's schema) and returns its canonical form. Deviations that leave the frame
/// readable are incidental findings, owned by the case whose subject they are; a
/// frame that is not an object with a type is returned as the finding that says so.
pub fn check_frame(ctx: &mut Ctx, v: Value) -> Result<Value, Finding> {
    let whole = shown(&v);
    let Value::Object(mut m) = v else {
        return Err(
            rules::FRAME_NOT_OBJECT.found(format!("a server frame is not a JSON object: {whole}"))
        );
    };
    if !nonempty_str(m.get("type")) {
        match unwrap_jsonrpc(&m) {
            Some((inner, how)) => {
                // Informational (ambiguity ASP-A1): reported, never scored.
                ctx.finding(rules::FRAME_JSON_RPC.found(format!(
                    "events come in JSON-RPC framing ({how}), e.g. {whole}"
                )));
                m = inner;
            }
            None => {
                return Err(rules::FRAME_NO_TYPE
                    .found(format!("a server frame has no string type: {whole}")))
            }
        }
    }
    let ty = m["type"].as_str().unwrap_or_default().to_string();
    check_timestamp(ctx, &ty, m.get("timestamp"));
    // Pointers judged here, which the schema check below passes over.
    let mut judged: Vec<&'static str> = vec!["/timestamp"];
    read_by_type(ctx, &ty, &mut m, &mut judged, &whole);
    let v = Value::Object(m);
    if let Some(schema) = schema_for(&v) {
        shape_findings(ctx, schema, &v, &judged);
    }
    Ok(v)
}

/// An event's timestamp (ASP-020): present (a warning when not, ASP-A6), a number
/// of Unix seconds or milliseconds within a day of the harness clock.
fn check_timestamp(ctx: &mut Ctx, ty: &str, t: Option<&Value>) {
    match t {
        None => ctx.finding(
            rules::EVENT_NO_TIMESTAMP.found(format!("server events carry no timestamp, e.g. {ty}")),
        ),
        Some(t) if t.is_number() => {
            // Unix seconds or milliseconds, told apart by magnitude (ASP-A6): a
            // number that is neither, within a day of the harness clock, is no time.
            let now = ctx.clock().unix_timestamp() as f64;
            let f = t.as_f64().unwrap_or(f64::NAN);
            const DAY: f64 = 86_400.0;
            if !((f - now).abs() <= DAY || (f / 1000.0 - now).abs() <= DAY) {
                ctx.finding(
                    rules::EVENT_TIMESTAMP.found(format!(
                            "{ty} carries the timestamp {t}, neither Unix seconds nor milliseconds within a day of the harness clock ({now})"
                        )),
                );
            }
        }
        Some(t) => ctx.finding(rules::EVENT_TIMESTAMP.found(format!(
            "{ty} carries the timestamp {t}, not a number (Unix seconds or milliseconds)"
        ))),
    }
}

/// The members of the frame's type: an error's code and message, the registration,
/// the member lists, an event's data; a heartbeat in another shape, or a type the
/// spec does not define.
fn read_by_type(
    ctx: &mut Ctx,
    ty: &str,
    m: &mut Map<String, Value>,
    judged: &mut Vec<&'static str>,
    whole: &str,
) {
    match ty {
        "error" => read_error(ctx, m, judged),
        "agent.registered" => read_registered(ctx, m, judged),
        "space.joined" => read_members(ctx, m, judged, &rules::JOINED_MEMBERS),
        "space.members" => read_members(ctx, m, judged, &rules::MEMBERS_LIST),
        "space.event" => read_data(ctx, m, judged, &rules::EVENT_DATA),
        "space.event.delta" => read_data(ctx, m, judged, &rules::DELTA_DATA),
        t if !SERVER_TYPES.contains(&t) => unknown_type(ctx, t, whole),
        _ => {}
    }
}

/// A frame of a type the spec does not define: a heartbeat in another shape is
/// the heartbeat case's finding; anything else a note.
fn unknown_type(ctx: &mut Ctx, t: &str, whole: &str) {
    let lower = t.to_ascii_lowercase();
    if [
        "heartbeat",
        "pong",
        "ping",
        "ack",
        "keepalive",
        "keep_alive",
        "keep-alive",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        ctx.finding(
            rules::HEARTBEAT_SHAPE.found(format!(
                    "a heartbeat comes as {whole}; agent.heartbeat has the form {{type: \"agent.heartbeat\", timestamp}}"
                )),
        );
    } else {
        ctx.note(format!(
            "a server event of a type the spec does not define: {whole}"
        ));
    }
}

/// The event inside JSON-RPC framing (ambiguity ASP-A1), and how it was framed.
fn unwrap_jsonrpc(m: &Map<String, Value>) -> Option<(Map<String, Value>, &'static str)> {
    if let Some(method) = m.get("method").and_then(Value::as_str) {
        let mut inner = m
            .get("params")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        inner.insert("type".into(), json!(method));
        for k in ["id", "timestamp"] {
            if let (Some(x), false) = (m.get(k), inner.contains_key(k)) {
                inner.insert(k.into(), x.clone());
            }
        }
        return Some((inner, "the type in method, the members in params"));
    }
    if let Some(result) = m.get("result").and_then(Value::as_object) {
        if nonempty_str(result.get("type")) {
            let mut inner = result.clone();
            if let (Some(x), false) = (m.get("id"), inner.contains_key("id")) {
                inner.insert("id".into(), x.clone());
            }
            return Some((inner, "the event in result"));
        }
    }
    if let Some(err) = m.get("error").and_then(Value::as_object) {
        let mut inner = Map::new();
        inner.insert("type".into(), json!("error"));
        for k in ["code", "message"] {
            if let Some(x) = err.get(k) {
                inner.insert(k.into(), x.clone());
            }
        }
        if let Some(x) = err.get("data").and_then(|d| d.get("request_id")) {
            inner.insert("request_id".into(), x.clone());
        } else if let Some(x) = m.get("id").filter(|x| x.is_string()) {
            inner.insert("request_id".into(), x.clone());
        }
        if let Some(x) = m.get("timestamp") {
            inner.insert("timestamp".into(), x.clone());
        }
        return Some((inner, "a JSON-RPC error object"));
    }
    None
}

/// An error event: code, message and request_id, wherever the target put them
/// (ASP-041). Each deviation is one finding of the invalid-requests case (the
/// request id's of join-missing).
fn read_error(ctx: &mut Ctx, m: &mut Map<String, Value>, judged: &mut Vec<&'static str>) {
    let whole = shown(&Value::Object(m.clone()));
    let nested = m.get("error").and_then(Value::as_object).cloned();
    if !m.get("code").is_some_and(Value::is_string) {
        judged.push("/code");
        let summary = error_code_found(m, nested.as_ref(), &whole);
        ctx.finding(rules::ERROR_CODE.found(summary));
    }
    if !m.get("message").is_some_and(Value::is_string) {
        judged.push("/message");
        let summary = error_message_found(m, nested.as_ref(), &whole);
        ctx.finding(rules::ERROR_MESSAGE.found(summary));
    }
    if !m.contains_key("request_id") {
        if let Some((name, x)) = first_of(
            m,
            &["requestId", "request-id", "req_id", "reqId"],
            Value::is_string,
        ) {
            let x = x.clone();
            m.insert("request_id".into(), x);
            judged.push("/request_id");
            ctx.finding(rules::ERROR_REQUEST_ID.found(format!(
                "the error event carries the request id in `{name}`, not in `request_id`: {whole}"
            )));
        }
    }
    if let Some(code) = m.get("code").and_then(Value::as_str) {
        if !CODES.contains(&code) {
            ctx.finding(rules::ERROR_UNKNOWN_CODE.found_as(
                code,
                format!(
                    "error code {code} is not in the table of agora-spaces.zh.md ({})",
                    quote(m.get("message").and_then(Value::as_str).unwrap_or_default())
                ),
            ));
        }
    }
}

/// Where an error event without a string `code` has its code (read on as `code`),
/// in words for the finding (ASP-041).
fn error_code_found(
    m: &mut Map<String, Value>,
    nested: Option<&Map<String, Value>>,
    whole: &str,
) -> String {
    if let Some(c) = m.get("code") {
        format!("the error code is {c}, not a string such as INVALID_REQUEST: {whole}")
    } else if let Some((name, c)) = first_of(
        m,
        &["error_code", "errorCode", "error", "err", "status"],
        code_like,
    ) {
        let c = c.clone();
        m.insert("code".into(), c.clone());
        format!("the error event carries its code {c} in `{name}`, not in `code`: {whole}")
    } else if let Some(c) = nested
        .and_then(|e| e.get("code"))
        .filter(|c| code_like(c))
        .cloned()
    {
        m.insert("code".into(), c.clone());
        format!("the error event carries its code {c} in `error.code`, not in `code`: {whole}")
    } else {
        format!("the error event has no code: {whole}")
    }
}

/// Where an error event without a string `message` has its message (read on as
/// `message`), in words for the finding (ASP-041).
fn error_message_found(
    m: &mut Map<String, Value>,
    nested: Option<&Map<String, Value>>,
    whole: &str,
) -> String {
    let text = |v: &Value| v.is_string() && !code_like(v);
    if let Some(x) = m.get("message") {
        format!("the error message is {x}, not a string: {whole}")
    } else if let Some((name, x)) = first_of(
        m,
        &[
            "detail",
            "error",
            "msg",
            "description",
            "reason",
            "error_message",
        ],
        text,
    ) {
        let x = x.clone();
        m.insert("message".into(), x);
        format!("the error event carries its message in `{name}`, not in `message`: {whole}")
    } else if let Some(x) = nested
        .and_then(|e| e.get("message"))
        .filter(|x| x.is_string())
        .cloned()
    {
        m.insert("message".into(), x);
        format!("the error event carries its message in `error.message`, not in `message`: {whole}")
    } else {
        format!("the error event has no message: {whole}")
    }
}

/// agent.registered: agent.id and agent.connection_id, wherever the target put them,
/// a connection id of another type as its text (ASP-008). Findings of the handshake.
fn read_registered(ctx: &mut Ctx, m: &mut Map<String, Value>, judged: &mut Vec<&'static str>) {
    let whole = shown(&Value::Object(m.clone()));
    judged.extend(["/agent", "/agent/id", "/agent/connection_id"]);
    let mut agent = match m.get("agent") {
        Some(Value::Object(a)) => a.clone(),
        _ => Map::new(),
    };
    let f = |key: &str, summary: String| rules::REGISTERED.found_as(key, summary);
    if !nonempty_str(agent.get("id")) {
        let top = m.get("agent").filter(|a| nonempty_str(Some(a)));
        let found = if let Some(a) = top {
            Some(("agent (a string)", a.clone()))
        } else if let Some((n, x)) = first_of(&agent, &["agent_id", "agentId", "name"], |x| {
            nonempty_str(Some(x))
        }) {
            Some((n, x.clone()))
        } else {
            first_of(m, &["agent_id", "agentId"], |x| nonempty_str(Some(x)))
                .map(|(n, x)| (n, x.clone()))
        };
        let summary = match (&found, agent.get("id")) {
            (_, Some(x)) => {
                format!("agent.registered names the agent as {x}, not a non-empty string: {whole}")
            }
            (Some((n, x)), None) => {
                format!("agent.registered names the agent {x} in `{n}`, not in `agent.id`: {whole}")
            }
            (None, None) => {
                format!("agent.registered does not name the agent (no agent.id): {whole}")
            }
        };
        if let (Some((_, x)), None) = (found, agent.get("id")) {
            agent.insert("id".into(), x);
        }
        ctx.finding(f("agent-id", summary));
    }
    if !nonempty_str(agent.get("connection_id")) {
        let summary = connection_id_found(m, &mut agent, &whole);
        ctx.finding(f("connection-id", summary));
    }
    m.insert("agent".into(), Value::Object(agent));
}

/// Where agent.registered has its connection id (read on as the string
/// `agent.connection_id`, or left out when it has none), in words for the finding
/// (ASP-008).
fn connection_id_found(
    m: &Map<String, Value>,
    agent: &mut Map<String, Value>,
    whole: &str,
) -> String {
    let found = match agent.get("connection_id") {
        Some(x) => Some(("agent.connection_id", x.clone())),
        None => first_of(agent, &["connectionId", "conn_id", "connection"], |x| {
            !x.is_null()
        })
        .map(|(n, x)| (n, x.clone()))
        .or_else(|| {
            first_of(m, &["connection_id", "connectionId"], |x| !x.is_null())
                .map(|(n, x)| (n, x.clone()))
        }),
    };
    let summary = match &found {
        Some((_, Value::String(s))) if s.is_empty() => {
            format!("agent.registered carries an empty connection_id: {whole}")
        }
        Some(("agent.connection_id", x)) => {
            format!("agent.registered carries the connection_id {x}, not a string: {whole}")
        }
        Some((n, x)) => format!(
            "agent.registered carries the connection id {x} in `{n}`, not in `agent.connection_id`: {whole}"
        ),
        None => format!("agent.registered carries no connection_id: {whole}"),
    };
    match found {
        Some((_, Value::String(s))) if !s.is_empty() => {
            agent.insert("connection_id".into(), json!(s));
        }
        Some((_, x @ (Value::Number(_) | Value::Bool(_)))) => {
            agent.insert("connection_id".into(), json!(x.to_string()));
        }
        _ => {
            agent.remove("connection_id");
        }
    }
    summary
}

/// The data of space.event or space.event.delta: text and from, wherever the target
/// put them (in `data` under another name, or beside it).
fn read_data(
    ctx: &mut Ctx,
    m: &mut Map<String, Value>,
    judged: &mut Vec<&'static str>,
    rule: &'static Rule,
) {
    let text_ok = m
        .get("data")
        .and_then(|d| d.get("text"))
        .is_some_and(Value::is_string);
    let from_ok = m
        .get("data")
        .is_some_and(|d| d.get("from").is_none_or(Value::is_string));
    if text_ok && from_ok {
        return;
    }
    judged.extend(["/data", "/data/text", "/data/from"]);
    let ty = m["type"].as_str().unwrap_or_default().to_string();
    let whole = shown(&Value::Object(m.clone()));
    let outer = m.clone();
    let mut data = match m.get("data") {
        Some(Value::Object(d)) => d.clone(),
        _ => Map::new(),
    };
    let mut moved: Vec<String> = Vec::new();
    if !text_ok {
        let inner = first_of(
            &data,
            &["content", "message", "body", "msg"],
            Value::is_string,
        )
        .map(|(n, x)| (format!("data.{n}"), x.clone()));
        let found = inner.or_else(|| {
            first_of(
                &outer,
                &["text", "content", "message", "body"],
                Value::is_string,
            )
            .map(|(n, x)| (n.to_string(), x.clone()))
        });
        if let Some((n, x)) = found {
            data.insert("text".into(), x);
            moved.push(format!("the text in `{n}`"));
        }
    }
    let from_given = data.get("from").cloned();
    if from_given.as_ref().is_none_or(|f| !f.is_string()) {
        let inner = first_of(
            &data,
            &["sender", "agent_id", "agentId", "from_agent"],
            Value::is_string,
        )
        .map(|(n, x)| (format!("data.{n}"), x.clone()));
        let found = inner.or_else(|| {
            first_of(&outer, &["from", "sender", "agent_id"], Value::is_string)
                .map(|(n, x)| (n.to_string(), x.clone()))
        });
        if let Some((n, x)) = found {
            data.insert("from".into(), x);
            moved.push(format!("the sender in `{n}`"));
        }
    }
    let summary = if !data.get("text").is_some_and(Value::is_string) {
        format!("{ty} carries no text (data.text): {whole}")
    } else if !moved.is_empty() {
        format!(
            "{ty} carries {}, not in data.text and data.from: {whole}",
            moved.join(" and ")
        )
    } else {
        format!(
            "{ty} carries data.from {}, not a string: {whole}",
            from_given.unwrap_or(Value::Null)
        )
    };
    m.insert("data".into(), Value::Object(data));
    ctx.finding(rule.found(summary));
}

/// The agent ids of a member list in another form: objects with an id, or an object
/// keyed by agent id.
fn ids_of(list: &Value) -> Option<Vec<Value>> {
    match list {
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(_) => Some(x.clone()),
                Value::Object(o) => first_of(o, &["id", "agent_id", "agentId"], |v| v.is_string())
                    .map(|(_, v)| v.clone()),
                _ => None,
            })
            .collect(),
        Value::Object(o) => Some(o.keys().map(|k| json!(k)).collect()),
        _ => None,
    }
}

/// The member list of space.joined or space.members, wherever the target put it.
fn read_members(
    ctx: &mut Ctx,
    m: &mut Map<String, Value>,
    judged: &mut Vec<&'static str>,
    rule: &'static Rule,
) {
    let fine = m
        .get("members")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().all(Value::is_string));
    if fine {
        return;
    }
    judged.extend(["/members", "/members/*"]);
    let ty = m["type"].as_str().unwrap_or_default().to_string();
    let whole = shown(&Value::Object(m.clone()));
    let found = match m.get("members") {
        Some(list) => ids_of(list).map(|ids| ("members", ids)),
        None => [
            "agents",
            "member_list",
            "memberList",
            "member_ids",
            "memberIds",
            "users",
            "participants",
        ]
        .iter()
        .find_map(|n| m.get(*n).and_then(ids_of).map(|ids| (*n, ids))),
    };
    let summary = match &found {
        Some(("members", _)) => format!(
            "{ty} lists its members as {}, not as an array of agent ids: {whole}",
            m["members"]
        ),
        Some((n, _)) => format!("{ty} lists its members in `{n}`, not in `members`: {whole}"),
        None => format!("{ty} carries no members list: {whole}"),
    };
    if let Some((_, ids)) = found {
        m.insert("members".into(), Value::Array(ids));
    }
    ctx.finding(rule.found(summary));
}

/// The schema violations of a frame in its canonical form, one finding each, keyed by
/// schema and pointer (a missing member by its own pointer), passing over the
/// pointers `judged` already.
fn shape_findings(ctx: &mut Ctx, schema: &str, v: &Value, judged: &[&str]) {
    let rule = schema_rule(schema);
    let list = match ctx
        .shared
        .schemas
        .violations(&format!("agora-spaces/{schema}"), v)
    {
        Ok(list) => list,
        Err(e) => {
            ctx.finding(rule.found_as("/", e));
            return;
        }
    };
    for viol in list {
        // A missing member comes keyed at its own pointer (`Schemas::violations`).
        let at = viol.shape();
        if judged
            .iter()
            .any(|j| at == *j || at.starts_with(&format!("{j}/")))
        {
            continue;
        }
        ctx.finding(rule.found_as(
            &at,
            format!("{} at {}: {}", v["type"], viol.pointer, viol.message),
        ));
    }
}

/// The judge of a delta stream (vectors/agora-spaces/README.md): one event_id and one
/// space; string texts; the first delta carries data.from; exactly one done, last;
/// the concatenation equals the published text.
pub fn judge_stream(frames: &[Value], published: &str) -> Result<String, String> {
    let Some(first) = frames.first() else {
        return Err("no frames".into());
    };
    let (event_id, space) = (&first["event_id"], &first["space"]);
    let mut text = String::new();
    let mut done = 0;
    for (i, f) in frames.iter().enumerate() {
        if f["event_id"] != *event_id || f["space"] != *space {
            return Err(format!("frame {i} changes event_id or space"));
        }
        match f["type"].as_str() {
            Some("space.event.delta") => {
                if done > 0 {
                    return Err(format!("frame {i}: a delta after done (ASP-034)"));
                }
                let Some(t) = f["data"]["text"].as_str() else {
                    return Err(format!("frame {i}: data.text is not a string (ASP-032)"));
                };
                if i == 0 && !f["data"]["from"].is_string() {
                    return Err("the first delta carries no data.from (ASP-032)".into());
                }
                text.push_str(t);
            }
            Some("space.event.done") => done += 1,
            other => return Err(format!("frame {i} has type {other:?}")),
        }
    }
    if done != 1
        || frames
            .last()
            .is_some_and(|f| f["type"] != "space.event.done")
    {
        return Err(format!(
            "{done} done frames; exactly one, last, is expected (ASP-034)"
        ));
    }
    if text != published {
        return Err(format!(
            "the reassembled text ({} bytes) differs from the published text ({} bytes) (ASP-033)",
            text.len(),
            published.len()
        ));
    }
    Ok(text)
}

/// Judges a recorded server frame again with [`check_frame`] (an exported vector's
/// offline run).
pub fn reread(ctx: &mut Ctx, r: &crate::case::Recorded) {
    match json::parse(&r.body) {
        Ok(tree) => {
            if let Err(f) = check_frame(ctx, tree.to_serde()) {
                ctx.finding(f);
            }
        }
        Err(e) => ctx.finding(rules::FRAME_NOT_JSON.found(format!(
            "a server frame is not JSON ({e}): {}",
            quote(&String::from_utf8_lossy(&r.body))
        ))),
    }
}

/// What the harness's hub does in one client case (`run --role client`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HubPlan {
    /// Registers, answers the join, and closes after the client's publish.
    Plain,
    /// After the join: one whole event, then one event as a delta stream, then close.
    Deltas,
    /// After the join: a delta stream that the hub cancels, then one whole event,
    /// then close.
    Cancel,
    /// After the join: the hub heartbeats, and closes once the client has sent
    /// [`HEARTBEATS_WANTED`] heartbeats (or after four times as many intervals).
    Heartbeats,
    /// After the join: nothing at all, no heartbeats.
    Silent,
    /// The join is answered with this error event instead of space.joined.
    JoinRefused(HubRefusal),
    /// The join succeeds, the publish is answered with this error event.
    PublishRefused(HubRefusal),
    /// The connection is answered with this error event instead of
    /// agent.registered, and closed (as a hub does for AGENT_EXISTS).
    RegisterRefused(HubRefusal),
}

/// An error event the hub answers with, in the shapes hubs send (the client side
/// of `error-without-request-id` and `error-message-only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubRefusal {
    /// The error code, or none (`{type: "error", message}` only).
    pub code: Option<&'static str>,
    /// Whether the error names the request it answers (`request_id`).
    pub request_id: bool,
}

/// How long the hub waits, heartbeating, after a refusal before it closes the
/// connection itself: a client must have ended by then.
pub const REFUSAL_GRACE: Duration = Duration::from_millis(1500);
/// The hub's tick while it waits after a refusal.
const REFUSAL_TICK: Duration = Duration::from_millis(100);

/// The error event of `r` answering `request` (its `id`).
fn refusal_event(r: HubRefusal, request: &Value, message: &str) -> Value {
    let mut e = json!({"type": "error", "message": message, "timestamp": now_s()});
    if let Some(code) = r.code {
        e["code"] = json!(code);
    }
    if r.request_id && request["id"].is_string() {
        e["request_id"] = request["id"].clone();
    }
    e
}

/// The other member whose events the hub delivers.
pub const CLIENT_PEER: &str = "h-peer";
/// A whole event's text.
pub const WHOLE_TEXT: &str = "a whole event · 完整的事件";
/// The heartbeats a client must send in the heartbeat case.
pub const HEARTBEATS_WANTED: usize = 3;

/// The text the hub streams as deltas, and its chunks (split between characters,
/// some of them multi-byte).
pub fn streamed_text(tag: &str) -> (String, Vec<String>) {
    let unit = format!("{tag} · 流式 · 🙂 · ");
    let text = unit.repeat(6);
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(4).max(1);
    let chunks = chars.chunks(size).map(|c| c.iter().collect()).collect();
    (text, chunks)
}

/// The input of a client scenario: the agent, the space, the text to publish, and
/// short heartbeat timings (the scaled 30 s and 60 s).
pub fn client_input(tag: &str) -> Value {
    json!({
        "agent_id": agent_id(tag),
        "space": "general",
        "text": format!("published by the client · {tag}"),
        "heartbeat_interval_ms": 150,
        "heartbeat_timeout_ms": 1000,
    })
}

/// The harness's hub for a client case.
pub fn hub(plan: HubPlan, input: &Value) -> crate::counterparty::Hub {
    hub_edited(plan, input, Box::new(|_, frame| frame))
}

/// A frame edit: the index of the frame among those sent after the join, and its
/// text, to the text sent.
pub type FrameEdit = Box<dyn FnMut(usize, String) -> String + Send>;

/// [`hub`], every frame sent after the join passed through `edit` (the client
/// fuzzer's edits).
pub fn hub_edited(plan: HubPlan, input: &Value, edit: FrameEdit) -> crate::counterparty::Hub {
    use crate::counterparty::HubEvent;
    let interval = Duration::from_millis(input["heartbeat_interval_ms"].as_u64().unwrap_or(150));
    let mut hub = ScriptedHub {
        plan,
        agent: input["agent_id"].as_str().unwrap_or_default().to_string(),
        edit,
        heartbeats: 0,
        ticks: 0,
        since_refusal: None,
        grace_ticks: (REFUSAL_GRACE.as_millis() / REFUSAL_TICK.as_millis()) as usize,
    };
    let script = move |event: HubEvent<'_>| match event {
        HubEvent::Open { .. } => hub.open(),
        HubEvent::Tick => hub.tick(),
        HubEvent::Text(t) => serde_json::from_str::<Value>(t)
            .map(|v| hub.text(&v))
            .unwrap_or_default(),
    };
    let tick = if plan.refuses() {
        Some(REFUSAL_TICK)
    } else {
        (plan == HubPlan::Heartbeats).then_some(interval)
    };
    crate::counterparty::Hub {
        tick,
        script: Box::new(script),
    }
}

/// The scripted hub's state over one connection.
struct ScriptedHub {
    plan: HubPlan,
    agent: String,
    edit: FrameEdit,
    heartbeats: usize,
    ticks: usize,
    /// Ticks since the hub refused a request (refusal plans).
    since_refusal: Option<usize>,
    grace_ticks: usize,
}

fn send(v: Value) -> crate::counterparty::HubAct {
    crate::counterparty::HubAct::Send(v.to_string())
}

fn heartbeat() -> crate::counterparty::HubAct {
    send(json!({"type": "agent.heartbeat", "timestamp": now_s()}))
}

impl ScriptedHub {
    /// agent.registered, or AGENT_EXISTS and the close for a refused registration.
    fn open(&self) -> Vec<crate::counterparty::HubAct> {
        if let HubPlan::RegisterRefused(r) = self.plan {
            let why = format!("agent {:?} is already connected (on purpose)", self.agent);
            let e = refusal_event(r, &Value::Null, &why);
            return vec![send(e), crate::counterparty::HubAct::Close];
        }
        vec![send(json!({
            "type": "agent.registered",
            "agent": {"id": self.agent, "connection_id": new_id()},
            "timestamp": now_s(),
        }))]
    }

    /// A heartbeat, until the plan has seen enough (or the grace after a refusal
    /// has passed): then the close.
    fn tick(&mut self) -> Vec<crate::counterparty::HubAct> {
        let done = if self.plan.refuses() {
            self.since_refusal.as_mut().is_some_and(|n| {
                *n += 1;
                *n >= self.grace_ticks
            })
        } else {
            self.ticks += 1;
            self.ticks >= 4 * HEARTBEATS_WANTED
        };
        if done {
            vec![crate::counterparty::HubAct::Close]
        } else {
            vec![heartbeat()]
        }
    }

    /// The answer to one of the client's frames.
    fn text(&mut self, v: &Value) -> Vec<crate::counterparty::HubAct> {
        use crate::counterparty::HubAct;
        let first = self.since_refusal.is_none();
        match (v["type"].as_str().unwrap_or_default(), self.plan) {
            ("space.join", HubPlan::JoinRefused(r)) if first => {
                self.since_refusal = Some(0);
                let code = r.code.unwrap_or("SPACE_NOT_FOUND");
                let message = if code == "SPACE_FULL" {
                    format!("Space {} is full (on purpose)", v["space"])
                } else {
                    format!("Space {} does not exist (on purpose)", v["space"])
                };
                vec![send(refusal_event(r, v, &message))]
            }
            ("space.publish", HubPlan::PublishRefused(r)) if first => {
                self.since_refusal = Some(0);
                let why = "this agent may not publish here (on purpose)";
                vec![send(refusal_event(r, v, why))]
            }
            ("space.join", _) => self.joined(v),
            ("space.publish", HubPlan::Plain) => vec![HubAct::Close],
            ("agent.heartbeat", HubPlan::Heartbeats) => {
                self.heartbeats += 1;
                if self.heartbeats >= HEARTBEATS_WANTED {
                    vec![HubAct::Close]
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }

    /// space.joined, then what the plan sends after a join (each frame through the
    /// edit), and the close for the streaming plans.
    fn joined(&mut self, v: &Value) -> Vec<crate::counterparty::HubAct> {
        let space = v["space"].clone();
        let mut out = vec![send(json!({
            "type": "space.joined", "id": v["id"], "space": space,
            "members": [self.agent, CLIENT_PEER], "timestamp": now_s(),
        }))];
        let edit = &mut self.edit;
        out.extend(
            after_join(self.plan, &space)
                .into_iter()
                .enumerate()
                .map(|(i, v)| crate::counterparty::HubAct::Send(edit(i, v.to_string()))),
        );
        if matches!(self.plan, HubPlan::Deltas | HubPlan::Cancel) {
            out.push(crate::counterparty::HubAct::Close);
        }
        out
    }
}

impl HubPlan {
    /// Whether the hub refuses one of the client's requests with an error event.
    pub fn refuses(self) -> bool {
        matches!(
            self,
            HubPlan::JoinRefused(_) | HubPlan::PublishRefused(_) | HubPlan::RegisterRefused(_)
        )
    }
}

/// The events the hub sends right after a join.
fn after_join(plan: HubPlan, space: &Value) -> Vec<Value> {
    let whole = |text: &str| {
        json!({"type": "space.event", "space": space,
               "data": {"from": CLIENT_PEER, "text": text, "timestamp": now_s()}, "timestamp": now_s()})
    };
    let stream = |tag: &str| -> (String, Vec<Value>) {
        let id = format!("ev-{tag}-{}", &new_id()[..8]);
        let (_, chunks) = streamed_text(tag);
        let frames = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let data = if i == 0 {
                    json!({"from": CLIENT_PEER, "text": c})
                } else {
                    json!({"text": c})
                };
                json!({"type": "space.event.delta", "space": space, "event_id": id, "data": data, "timestamp": now_s()})
            })
            .collect();
        (id, frames)
    };
    match plan {
        HubPlan::Deltas => {
            let (id, mut frames) = stream("streamed");
            frames.insert(0, whole(WHOLE_TEXT));
            frames.push(json!({"type": "space.event.done", "space": space, "event_id": id, "timestamp": now_s()}));
            frames
        }
        HubPlan::Cancel => {
            let (id, mut frames) = stream("cancelled");
            frames.truncate(2);
            frames.push(json!({"type": "space.event.cancel", "space": space, "event_id": id, "timestamp": now_s()}));
            frames.push(whole(WHOLE_TEXT));
            frames
        }
        HubPlan::Plain
        | HubPlan::Heartbeats
        | HubPlan::Silent
        | HubPlan::JoinRefused(_)
        | HubPlan::PublishRefused(_)
        | HubPlan::RegisterRefused(_) => Vec::new(),
    }
}

/// The schema of a frame a client sends, by its type.
fn client_schema_for(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "agent.register" => "agent-register",
        "agent.heartbeat" => "agent-heartbeat",
        "space.join" => "space-join",
        "space.leave" => "space-leave",
        "space.publish" => "space-publish",
        "space.event.cancel" => "space-event-cancel",
        "space.list" => "space-list-request",
        _ => return None,
    })
}

/// Reads every frame the client sent: a JSON object with a string type (ASP-001,
/// ASP-018), a numeric timestamp (ASP-020, a warning when missing), and the schema
/// of its type. Returns the frames that could be read, in order.
pub fn client_frames(ctx: &mut Ctx, run: &crate::counterparty::DriverRun) -> Step<Vec<Value>> {
    let mut out = Vec::new();
    let mut untimed = None;
    for (_, text) in run.client_frames() {
        match client_frame(ctx, text)? {
            Ok((v, timed)) => {
                if !timed {
                    untimed.get_or_insert(v["type"].as_str().unwrap_or_default().to_string());
                }
                out.push(v);
            }
            Err(why) => return fail(why),
        }
    }
    if let Some(ty) = untimed {
        ctx.finding(no_timestamp(&ty));
    }
    Ok(out)
}

/// One frame of a client seen by `agentconform proxy`, by the rules of
/// [`client_frames`] (a frame that is no event object is a finding there).
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, _: &crate::exchange::History) {
    let text = String::from_utf8_lossy(&x.received);
    match client_frame(ctx, &text) {
        Ok(Ok((v, false))) => ctx.finding(no_timestamp(v["type"].as_str().unwrap_or_default())),
        Ok(Ok(_)) => {}
        Ok(Err(why)) => ctx.finding(rules::CLIENT_NOT_EVENT.found(why)),
        Err(stop) => ctx.note(format!("a client frame was not judged: {stop:?}")),
    }
}

fn no_timestamp(ty: &str) -> Finding {
    rules::CLIENT_NO_TIMESTAMP.found(format!("the client's events carry no timestamp, e.g. {ty}"))
}

/// One client frame: the event and whether it carries a timestamp, or why it is
/// not an event object; the timestamp's type and the schema of its type judged as
/// findings.
fn client_frame(ctx: &mut Ctx, text: &str) -> Step<Result<(Value, bool), String>> {
    let v: Value = match serde_json::from_str(text) {
        Ok(v @ Value::Object(_)) if v["type"].is_string() => v,
        _ => {
            return Ok(Err(format!(
                "the client sent a frame that is not a JSON event object with a string type (ASP-001, ASP-018): {}",
                quote(text)
            )))
        }
    };
    let ty = v["type"].as_str().unwrap_or_default().to_string();
    let timed = match v.get("timestamp") {
        None => false,
        Some(t) if t.is_number() => true,
        Some(t) => {
            ctx.finding(rules::CLIENT_TIMESTAMP.found(format!(
                "the client's {ty} carries the timestamp {t}, not a number"
            )));
            true
        }
    };
    if let Some(schema) = client_schema_for(&ty) {
        let list = ctx
            .shared
            .schemas
            .violations(&format!("agora-spaces/{schema}"), &v)
            .map_err(|e| Stop::Skip(format!("the harness has no schema for {ty}: {e}")))?;
        for viol in list.into_iter().filter(|x| x.shape() != "/timestamp") {
            ctx.finding(rules::CLIENT_SCHEMA.found_as(
                format!("{schema}:{}", viol.shape()),
                format!("the client's {ty} at {}: {}", viol.pointer, viol.message),
            ));
        }
    }
    Ok(Ok((v, timed)))
}

/// The texts of the complete events the driver printed (`{"result": {"text"}}`).
pub fn printed_texts(run: &crate::counterparty::DriverRun) -> Vec<String> {
    run.results()
        .iter()
        .map(|r| {
            r["text"]
                .as_str()
                .map_or_else(|| r.to_string(), String::from)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_read_from_the_driver_error() {
        let e = DriveError::Connect("the upgrade was refused with HTTP 400".into());
        assert_eq!(refused_status(&e), Some(400));
        assert_eq!(refused_status(&DriveError::Timeout(300)), None);
        assert_eq!(
            refused_status(&DriveError::Connect("connection refused".into())),
            None
        );
    }

    #[test]
    fn member_lists_in_other_forms() {
        assert_eq!(
            ids_of(&json!([{"id": "a"}, {"agent_id": "b"}, "c"])),
            Some(vec![json!("a"), json!("b"), json!("c")])
        );
        assert_eq!(ids_of(&json!({"a": {}})), Some(vec![json!("a")]));
        assert_eq!(ids_of(&json!([1])), None);
    }

    #[test]
    fn codes_look_like_the_table() {
        assert!(code_like(&json!("SPACE_NOT_FOUND")));
        assert!(!code_like(&json!("Space not found")));
        assert!(!code_like(&json!(404)));
    }

    #[test]
    fn jsonrpc_framing_is_unwrapped() {
        let m = json!({"jsonrpc": "2.0", "method": "agent.registered", "params": {"agent": {"id": "a"}}});
        let (inner, _) = unwrap_jsonrpc(m.as_object().expect("object")).expect("unwrapped");
        assert_eq!(inner["type"], "agent.registered");
        let m = json!({"jsonrpc": "2.0", "id": "x", "error": {"code": "INVALID_REQUEST", "message": "m"}});
        let (inner, _) = unwrap_jsonrpc(m.as_object().expect("object")).expect("unwrapped");
        assert_eq!(inner["request_id"], "x");
        assert_eq!(inner["code"], "INVALID_REQUEST");
    }
}
