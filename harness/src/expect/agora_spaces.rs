//! agora-spaces expectations: peers (one WebSocket connection each, as one agent),
//! frame checks, and the delta-stream judge.

use crate::case::{fail, Step};
use crate::drive::ws::WsDriver;
use crate::drive::{DriveError, Limits};
use crate::script::{describe_drive_error, Ctx};
use reference_impl::wire::{json, new_id};
use serde_json::{json, Value};
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

/// The schema of a server event, by its type.
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

/// A fresh agent id for a case.
pub fn agent_id(tag: &str) -> String {
    format!("h-{tag}-{}", &new_id()[..8])
}

/// A fresh user space name.
pub fn user_space() -> String {
    format!("h_{}", &new_id().replace('-', "")[..16])
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

/// One connection, as one agent. Frames that a wait did not want stay queued.
pub struct Peer {
    pub agent_id: String,
    drv: WsDriver,
    inbox: VecDeque<Value>,
    pub closed: bool,
}

impl Peer {
    fn limits(ctx: &Ctx, timeout: Duration) -> Limits {
        Limits {
            timeout,
            max_bytes: ctx.profile().timing.max_response_bytes.max(8 * 1024 * 1024),
        }
    }

    /// Connects as `agent_id` with the profile's token.
    pub async fn connect(ctx: &mut Ctx, agent_id: &str) -> Step<Peer> {
        let token = ctx.profile().target.token.clone();
        match Peer::connect_raw(ctx, Some(agent_id), token.as_deref()).await? {
            Ok(p) => Ok(p),
            Err(e) => fail(format!(
                "cannot connect as {agent_id}: {}",
                describe_drive_error(&e)
            )),
        }
    }

    /// Connects with explicit query values; a refusal is returned, not failed.
    pub async fn connect_raw(
        ctx: &mut Ctx,
        agent_id: Option<&str>,
        token: Option<&str>,
    ) -> Step<Result<Peer, DriveError>> {
        let url = url_for(&ctx.url, agent_id, token);
        let mut drv = WsDriver::new(&url);
        let limits = Peer::limits(
            ctx,
            Duration::from_millis(ctx.profile().timing.case_timeout_ms),
        );
        ctx.log_frame("send", agent_id.unwrap_or("-"), &format!("connect {url}"));
        Ok(match drv.open(limits).await {
            Ok(()) => Ok(Peer {
                agent_id: agent_id.unwrap_or_default().to_string(),
                drv,
                inbox: VecDeque::new(),
                closed: false,
            }),
            Err(e) => {
                ctx.log_frame("note", agent_id.unwrap_or("-"), &describe_drive_error(&e));
                Err(e)
            }
        })
    }

    pub async fn send(&mut self, ctx: &mut Ctx, v: &Value) -> Step<()> {
        self.send_text(ctx, v.to_string()).await
    }

    pub async fn send_text(&mut self, ctx: &mut Ctx, text: String) -> Step<()> {
        ctx.log_frame("send", &self.agent_id, &text);
        let limits = Peer::limits(
            ctx,
            Duration::from_millis(ctx.profile().timing.case_timeout_ms),
        );
        self.drv
            .send_text(text, limits)
            .await
            .or_else(|e| fail(format!("[{}] {}", self.agent_id, describe_drive_error(&e))))
    }

    /// Reads one frame from the socket within `wait`, checking it; `None` on silence
    /// or close.
    async fn read(&mut self, ctx: &mut Ctx, wait: Duration) -> Step<Option<Value>> {
        if self.closed {
            return Ok(None);
        }
        let limits = Peer::limits(ctx, wait);
        match self.drv.recv(limits).await {
            Ok(Some(bytes)) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                ctx.log_frame("recv", &self.agent_id, &text);
                let v = match json::parse(&bytes) {
                    Ok(t) => t.to_serde(),
                    Err(e) => {
                        return fail(format!(
                            "[{}] a server frame is not JSON (ASP-001): {e}",
                            self.agent_id
                        ))
                    }
                };
                check_frame(ctx, &v)?;
                Ok(Some(v))
            }
            Ok(None) => Ok(None),
            Err(DriveError::Closed) => {
                self.closed = true;
                ctx.log_frame("note", &self.agent_id, "connection closed by the server");
                Ok(None)
            }
            Err(e) => fail(format!("[{}] {}", self.agent_id, describe_drive_error(&e))),
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

    /// A frame matching `pred` must arrive within the case timeout.
    pub async fn expect(
        &mut self,
        ctx: &mut Ctx,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Step<Value> {
        let wait = Duration::from_millis(ctx.profile().timing.case_timeout_ms);
        match self.wait_for(ctx, wait, pred).await? {
            Some(v) => {
                ctx.checked(format!("[{}] {what}", self.agent_id));
                Ok(v)
            }
            None if self.closed => fail(format!(
                "[{}] expected {what}; the server closed the connection",
                self.agent_id
            )),
            None => fail(format!(
                "[{}] expected {what} within {} ms",
                self.agent_id,
                wait.as_millis()
            )),
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
    /// 5 s, else in answer to `agent.register` (ASP-A3). Returns the registered event
    /// and whether it came unsolicited.
    pub async fn join_as(ctx: &mut Ctx, agent_id: &str) -> Step<(Peer, Value, bool)> {
        let mut p = Peer::connect(ctx, agent_id).await?;
        let registered = |v: &Value| v["type"] == "agent.registered";
        if let Some(v) = p.wait_for(ctx, Duration::from_secs(5), registered).await? {
            return Ok((p, v, true));
        }
        let id = format!("reg-{}", &new_id()[..8]);
        let reg = json!({"type": "agent.register", "id": id, "timestamp": now_s(),
                         "agent": {"id": agent_id, "type": "process", "capabilities": ["text"], "metadata": {}}});
        p.send(ctx, &reg).await?;
        let v = p
            .expect(
                ctx,
                "agent.registered in answer to agent.register",
                registered,
            )
            .await?;
        Ok((p, v, false))
    }

    /// Joins `space`; returns the space.joined event.
    pub async fn join(&mut self, ctx: &mut Ctx, space: &str) -> Step<Value> {
        let id = format!("join-{}", &new_id()[..8]);
        self.send(
            ctx,
            &json!({"type": "space.join", "id": id, "space": space, "timestamp": now_s()}),
        )
        .await?;
        let want = id.clone();
        let v = self
            .expect(ctx, &format!("an answer to joining {space}"), move |v| {
                (v["type"] == "space.joined" && v["id"] == want.as_str())
                    || (v["type"] == "error" && v["request_id"] == want.as_str())
                    || (v["type"] == "space.joined" && v.get("id").is_none())
            })
            .await?;
        if v["type"] == "error" {
            return fail(format!("[{}] joining {space} drew {}", self.agent_id, v));
        }
        if v["id"] != id.as_str() {
            return fail(format!(
                "space.joined does not echo the join id {id} (ASP-021, ASP-023): {v}"
            ));
        }
        Ok(v)
    }

    pub async fn publish(&mut self, ctx: &mut Ctx, space: &str, text: &str) -> Step<()> {
        let msg = json!({"type": "space.publish", "id": format!("pub-{}", &new_id()[..8]), "space": space,
                         "data": {"from": self.agent_id, "text": text, "timestamp": now_s()}, "timestamp": now_s()});
        self.send(ctx, &msg).await
    }
}

/// The checks every server frame gets (ASP-001, ASP-018, ASP-020, ASP-042).
pub fn check_frame(ctx: &mut Ctx, v: &Value) -> Step<()> {
    if !v.is_object() || v["type"].as_str().is_none_or(str::is_empty) {
        return fail(format!(
            "a server frame is not an object with a string type (ASP-001, ASP-018): {v}"
        ));
    }
    if let Some(schema) = schema_for(v) {
        if let Err(e) = ctx
            .shared
            .schemas
            .check(&format!("agora-spaces/{schema}"), v)
        {
            return fail(format!("a {} event violates its schema: {e}", v["type"]));
        }
    }
    if !v.get("timestamp").is_some_and(Value::is_number)
        && !ctx.warnings().iter().any(|w| w.contains("ASP-020"))
    {
        ctx.warn(format!(
            "server events carry no numeric timestamp, e.g. {} (ASP-020, ASP-A6)",
            v["type"]
        ));
    }
    if v["type"] == "error" {
        let code = v["code"].as_str().unwrap_or_default();
        if !CODES.contains(&code) {
            ctx.warn(format!(
                "error code {code} is not in the table of agora-spaces.zh.md (ASP-042)"
            ));
        }
    }
    Ok(())
}

/// An error event with `code` answering the message `request_id`.
pub fn is_error(v: &Value, code: &str) -> bool {
    v["type"] == "error" && v["code"] == code
}

/// Checks an error event's request_id (ASP-041).
pub fn check_request_id(v: &Value, request_id: &str) -> Step<()> {
    if v["request_id"] == request_id {
        Ok(())
    } else {
        fail(format!(
            "error {} does not carry request_id {request_id:?} (ASP-041): {v}",
            v["code"]
        ))
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
