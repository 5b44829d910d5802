//! The connection (agora-spaces.zh.md, 连接): the case's own agent (`Peer`: its
//! connection, what its handshake said, how a refusal of it is read), heartbeats and
//! their cases.

use super::replies::{connection_id, is_fresh, joined_findings, read_frame, registered_finding};
use super::wire::{
    agent_id, now_s, refused_status, said_error, short_heartbeat, timeout, transport_block, url_for,
};
use crate::case::{fail, skip, Bindings, Case, Step, Stop};
use crate::drive::ws::{CloseAnswer, WsDriver};
use crate::drive::{DriveError, Limits, Transport};
use crate::finding::Finding;
use crate::fuzzing::verdict::{first_failing, FuzzStep};
use crate::rules::{rules, Rule};
use crate::script::{describe_drive_error, Ctx};
use reference_impl::wire::new_id;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

rules! {
    CONNECT {
        key: "agora-spaces/connect:*",
        requirements: &["ASP-003"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "a WebSocket connection with agent_id and the profile's token opens",
        fails: "the upgrade is not completed in time, is refused with an HTTP status (401 or 403: perhaps another token), or the target cannot be reached; the case is blocked",
        passes: "the upgrade completes with 101",
    }
    HANDSHAKE_REFUSED {
        key: "agora-spaces/handshake:refused",
        requirements: &["ASP-003"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "a connection with agent_id and the profile's token is registered, not refused",
        fails: "the connection draws an error event (UNAUTHORIZED: perhaps another token), or is closed without agent.registered or an error; the case is blocked",
        passes: "agent.registered, unprompted or in answer to agent.register",
    }
    HANDSHAKE_NO_REGISTERED {
        key: "agora-spaces/handshake:no-registered",
        requirements: &["ASP-010", "ASP-A3"],
        level: None,
        owner: "agora-spaces/handshake",
        summary: "agent.registered comes after connecting, or at the latest in answer to agent.register",
        fails: "no agent.registered within 5 s of connecting (or half the heartbeat timeout), and agent.register draws an error or nothing within the case timeout",
        passes: "agent.registered unprompted, or in answer to agent.register",
    }
    CONNECTION_IDS_DISTINCT {
        key: "agora-spaces/connection-ids-distinct",
        requirements: &["ASP-009"],
        level: None,
        owner: "agora-spaces/connection-ids-distinct",
        summary: "two connections get two connection ids",
        fails: "two connections registered with the same connection_id",
        passes: "distinct connection ids",
    }
    JOIN_NO_ANSWER {
        key: "agora-spaces/join:no-answer",
        requirements: &["ASP-022"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "space.join is answered by space.joined or an error event",
        fails: "no answer to space.join within the case timeout; the case is blocked",
        passes: "space.joined (or an error) in answer to the join",
    }
    JOIN_REFUSED {
        key: "agora-spaces/join:refused",
        requirements: &["ASP-022"],
        level: None,
        owner: "agora-spaces/join-general",
        summary: "joining a valid space is accepted",
        fails: "space.join of a valid space draws an error event (SPACE_NOT_FOUND for a fresh user space skips the case instead); the case is blocked",
        passes: "space.joined in answer to the join",
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
    CONNECT.found_as(
        kind,
        format!("connecting as {agent_id} with the profile's token: {what}"),
    )
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
                let how = match &self.drv.peer_close {
                    Some((code, reason)) => format!(
                        "connection closed by the server: Close {code} {}",
                        crate::finding::quote(reason)
                    ),
                    None => "connection closed by the server".to_string(),
                };
                ctx.log_frame("note", &self.agent_id, &how);
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
    pub(super) fn not_ours(&self, ctx: &mut Ctx, what: &str) -> Option<Stop> {
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

    /// Sends `frames` and reads until `want` answers arrive (frames for which
    /// `answer` holds) or `wait` passes; returns the answers. A bulk the transcript
    /// must not hold one by one: it logs one line for the frames sent, and none for
    /// the answers (the caller logs what it judges). A frame that is not JSON is no
    /// answer.
    pub async fn bulk(
        &mut self,
        ctx: &mut Ctx,
        frames: Vec<String>,
        (want, answer): (usize, impl Fn(&Value) -> bool),
        wait: Duration,
    ) -> Step<Vec<Value>> {
        let n = frames.len();
        self.last_sent = Instant::now();
        let limits = self.limits(wait);
        for text in frames {
            if let Err(e) = self.drv.send_text(text, limits).await {
                self.closed = matches!(e, DriveError::Closed);
                return Err(transport_block(ctx, &self.agent_id, &e));
            }
        }
        ctx.log_frame(
            "send",
            &self.agent_id,
            &format!("({n} frames, not logged one by one)"),
        );
        let deadline = Instant::now() + wait;
        let mut got = Vec::new();
        while got.len() < want {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.drv.recv(self.limits(left)).await {
                Ok(Some(bytes)) => {
                    if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                        if answer(&v) {
                            got.push(v);
                        }
                    }
                }
                Ok(None) => break,
                Err(DriveError::Closed) => {
                    self.closed = true;
                    break;
                }
                Err(e) => return Err(transport_block(ctx, &self.agent_id, &e)),
            }
        }
        Ok(got)
    }

    /// The code and reason of the Close the server ended this connection with, where
    /// it sent one that had them.
    pub fn server_close(&self) -> Option<&(u16, String)> {
        self.drv.peer_close.as_ref()
    }

    /// Closes this connection by the closing handshake (Close 1000) and waits `wait`
    /// for the server's Close (RFC 6455 §5.5.1); both are logged.
    pub async fn close_handshake(&mut self, ctx: &mut Ctx, wait: Duration) -> Step<CloseAnswer> {
        ctx.log_frame("send", &self.agent_id, "(Close 1000 \"done\")");
        let answer = match self
            .drv
            .close_handshake(1000, "done", self.limits(wait))
            .await
        {
            Ok(a) => a,
            Err(DriveError::Closed) => CloseAnswer::Ended("the connection was closed".into()),
            Err(e) => return Err(transport_block(ctx, &self.agent_id, &e)),
        };
        self.closed = true;
        let seen = match &answer {
            CloseAnswer::Close(Some((code, reason))) => {
                format!("(Close {code} {})", crate::finding::quote(reason))
            }
            CloseAnswer::Close(None) => "(Close, no code)".to_string(),
            CloseAnswer::Ended(how) => format!("(no Close: {how})"),
            CloseAnswer::Silent => format!("(nothing within {} ms)", wait.as_millis()),
        };
        ctx.log_frame("recv", &self.agent_id, &seen);
        Ok(answer)
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
                    &HANDSHAKE_REFUSED,
                    format!(
                        "a connection as {agent_id} with the profile's token drew {}{hint}",
                        said_error(&v)
                    ),
                );
                return Err(ctx.block(f));
            }
            None if p.closed => {
                let f = handshake_finding(&HANDSHAKE_REFUSED,
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
            Some(v) => Err(ctx.block(handshake_finding(&HANDSHAKE_NO_REGISTERED,
                format!(
                    "no agent.registered within {} ms of connecting as {agent_id}, and agent.register drew {}",
                    unsolicited.as_millis(),
                    said_error(&v)
                ),
            ))),
            None => match p.not_ours(ctx, "agent.registered") {
                Some(stop) => Err(stop),
                None => Err(ctx.block(handshake_finding(&HANDSHAKE_NO_REGISTERED,
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
                ctx.block(JOIN_NO_ANSWER.found(format!(
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
            return Err(
                ctx.block(JOIN_REFUSED.found(format!("joining {space:?} drew {}", said_error(&v))))
            );
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

/// What two connections' agent.registered events `ra` and `rb` break: they name
/// different connection ids (the connection-ids-distinct case's rule, ASP-009).
pub fn distinct_connections(ctx: &mut Ctx, ra: &Value, rb: &Value) -> Step<Option<Finding>> {
    let (ca, cb) = (connection_id(ctx, ra)?, connection_id(ctx, rb)?);
    Ok((ca == cb).then(|| {
        CONNECTION_IDS_DISTINCT.found(format!(
            "both connections got connection_id {ca:?} (ASP-009)"
        ))
    }))
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "heartbeat-keepalive",
        "client heartbeats draw no error, and server heartbeats are well formed",
        ["ASP-016", "ASP-017"],
        Fact,
        false,
        None,
        |ctx| {
            let (mut p, _, _) = Peer::join_as(ctx, &agent_id("hb")).await?;
            let t = ctx.profile().timing.heartbeat_timeout_s;
            // With a short timeout, stay connected for two timeouts by heartbeating.
            let rounds = if t <= 10 {
                (2 * t * 1000 / (t * 1000 / 3).max(1)).min(12)
            } else {
                3
            };
            let pause = if t <= 10 {
                Duration::from_millis(t * 1000 / 3)
            } else {
                Duration::from_millis(300)
            };
            for _ in 0..rounds {
                p.send(
                    ctx,
                    &json!({"type": "agent.heartbeat", "timestamp": now_s()}),
                )
                .await?;
                if let Some(e) = p.wait_for(ctx, pause, |v| v["type"] == "error").await? {
                    return fail(format!("a heartbeat drew {} (ASP-017)", said_error(&e)));
                }
                if p.closed {
                    return fail("the server closed a connection that heartbeats (ASP-016)");
                }
            }
            Ok(())
        }
    ),
    case!(
        "heartbeat-timeout",
        "a silent client is disconnected after the heartbeat timeout",
        ["ASP-014", "ASP-015"],
        Fact,
        true,
        Some(short_heartbeat),
        |ctx| {
            let (mut p, _, _) = Peer::join_as(ctx, &agent_id("silent")).await?;
            let t = ctx.profile().timing.heartbeat_timeout_s;
            let started = std::time::Instant::now();
            let limit = Duration::from_secs(t + t / 2 + 2);
            if !p.closed_within(ctx, limit).await? {
                return fail(format!(
                    "a client silent for {} s is still connected (timeout {t} s, ASP-015)",
                    limit.as_secs()
                ));
            }
            let after = started.elapsed();
            if after + Duration::from_millis(500) < Duration::from_secs(t) {
                return fail(format!(
                    "the server closed the connection after {} ms, before the {t} s timeout",
                    after.as_millis()
                ));
            }
            ctx.checked(format!("closed after {} ms of silence", after.as_millis()));
            // Which code and words fit a heartbeat timeout, the spec does not say.
            if let Some((code, reason)) = p.server_close() {
                ctx.note(format!(
                    "the Close says {code} {} (informational)",
                    crate::finding::quote(reason)
                ));
            }
            Ok(())
        }
    ),
    case!(
        "close-handshake",
        "a client's Close is answered with a Close (RFC 6455 §5.5.1, derived from ASP-001)",
        ["ASP-001"],
        Fact,
        false,
        None,
        |ctx| {
            let (mut p, _, _) = Peer::join_as(ctx, &agent_id("bye")).await?;
            let wait = timeout(ctx);
            match p.close_handshake(ctx, wait).await? {
                CloseAnswer::Close(c) => {
                    let said = c.map_or("no code".into(), |(code, _)| code.to_string());
                    ctx.checked(format!("the client's Close is answered with a Close ({said})"));
                    Ok(())
                }
                CloseAnswer::Ended(how) => fail(format!(
                    "the server ended the connection without answering the client's Close 1000 with a Close ({how}); the WebSocket closing handshake wants one back (RFC 6455 §5.5.1)"
                )),
                CloseAnswer::Silent => fail(format!(
                    "the client's Close 1000 got no Close back within {} ms (RFC 6455 §5.5.1)",
                    wait.as_millis()
                )),
            }
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// Connects as `me` and checks the handshake.
pub(super) async fn connect(ctx: &mut Ctx, me: &str) -> FuzzStep<(Peer, Value)> {
    connect_taking(ctx, me, 0).await
}

/// [`connect`], taking messages of up to `cap` bytes (at least the profile's cap).
pub(super) async fn connect_taking(ctx: &mut Ctx, me: &str, cap: usize) -> FuzzStep<(Peer, Value)> {
    let (p, reg, _) = Peer::join_as_taking(ctx, me, cap).await?;
    first_failing(registered_finding(&reg, me).into_iter().collect())?;
    Ok((p, reg))
}
