//! The reference agora-spaces client (agora-spaces.zh.md): a WebSocket client of a
//! hub. It connects at `{url}?agent_id=…`, waits for `agent.registered`, joins one
//! space, in scenario `join-publish` publishes one text, and then takes the space's
//! events until the hub closes the connection:
//!
//! ```text
//! connect ──▶ wait for agent.registered
//! space.join {id} ──▶ wait for space.joined {id}      (error {request_id: id}: refused)
//! [join-publish] space.publish {data: {from, text, timestamp}}
//! space.event ───────────────────────────▶ one complete event
//! space.event.delta … space.event.done ──▶ one complete event, the chunks in order
//! space.event.delta … space.event.cancel ▶ nothing
//! Close or end of stream ────────────────▶ the events taken
//! [leave_after_ms] that long after the join (and the publish) with no error for
//! them: Close ──────────────────────────▶ the events taken
//! ```
//!
//! While connected it sends `agent.heartbeat` every heartbeat interval (never in
//! answer to the hub's), and gives up on a hub that has sent nothing at all for the
//! heartbeat timeout. Every frame read has a size cap, the connect a deadline, and
//! the whole scenario the caller's deadline.
//!
//! Its faults (`CLIENT_FAULTS`) model clients that break one of these rules.

use crate::agora_exchange::client::percent_encode;
use crate::fault;
use crate::faults::Fault;
use crate::wire::clock::{Clock, SystemClock};
use crate::wire::new_id;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The largest frame (and message) the client reads.
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;
/// The most text the unfinished delta streams may hold together.
pub const MAX_PARTIAL_BYTES: usize = 16 * 1024 * 1024;
/// How long the WebSocket connect (TCP and upgrade) may take.
const CONNECT_DEADLINE: Duration = Duration::from_secs(10);
/// How long the client spends closing a socket, or reading on after a failed send.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Heartbeat intervals and timeouts above this (a week) are taken as this: longer
/// than any scenario, and far from the overflow of `Instant` arithmetic.
const MAX_HEARTBEAT_MS: u64 = 7 * 24 * 3600 * 1000;

/// Client faults, each caught by the client cases it names.
pub const CLIENT_FAULTS: &[Fault] = &[
    fault!(
        "no-reassembly",
        "deltas",
        "presents each delta chunk as a complete event (so the chunks of a cancelled stream too)",
        ["agora-spaces/client-deltas", "agora-spaces/client-cancel"]
    ),
    fault!(
        "keeps-cancelled",
        "cancel",
        "presents the partial text of a cancelled stream as a complete event",
        ["agora-spaces/client-cancel"]
    ),
    fault!(
        "never-heartbeats",
        "heartbeats",
        "sends no agent.heartbeat",
        ["agora-spaces/client-heartbeat"]
    ),
    fault!(
        "ignores-silence",
        "heartbeats",
        "keeps waiting on a hub that sends nothing, past the heartbeat timeout",
        ["agora-spaces/client-silent-hub"]
    ),
    fault!(
        "ignores-join-error",
        "errors",
        "never takes an error event for the refusal of its space.join: it waits on for space.joined",
        ["agora-spaces/client-join-refused"]
    ),
    fault!(
        "ignores-publish-error",
        "errors",
        "goes on taking events after an error event answering its space.publish",
        ["agora-spaces/client-publish-refused"]
    ),
    fault!(
        "no-timestamp",
        "events",
        "sends events without a timestamp",
        ["agora-spaces/client-join-publish"]
    ),
];

/// Why a scenario failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("WebSocket: {0}")]
    Ws(String),
    #[error("a frame larger than {0} bytes")]
    TooLarge(usize),
    #[error("unfinished delta streams hold more than {0} bytes")]
    Overflow(usize),
    #[error("the hub refused: {0}")]
    Refused(String),
    #[error("the hub closed the connection {0}")]
    Closed(String),
    #[error("the hub sent nothing for {0} ms (the heartbeat timeout)")]
    Silent(u64),
    #[error("the scenario did not end within {0:?}")]
    Timeout(Duration),
}

/// What the client is asked to do; every member of the input may be missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub agent_id: String,
    pub space: String,
    /// The text `join-publish` publishes.
    pub text: String,
    pub heartbeat_interval_ms: u64,
    pub heartbeat_timeout_ms: u64,
    /// Leave (close, with the events taken) this long after joining, rather than
    /// wait for the hub to close: a hub never closes on its own.
    pub leave_after_ms: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            agent_id: "reference-client".into(),
            space: "general".into(),
            text: "hello from the reference client".into(),
            heartbeat_interval_ms: 30_000,
            heartbeat_timeout_ms: 60_000,
            leave_after_ms: None,
        }
    }
}

impl Options {
    /// Reads `{"agent_id", "space", "text", "heartbeat_interval_ms",
    /// "heartbeat_timeout_ms", "leave_after_ms"}`; a missing or null member takes its
    /// default.
    pub fn from_input(v: &Value) -> Result<Options, ClientError> {
        let d = Options::default();
        let given = |k: &str| v.get(k).filter(|x| !x.is_null());
        let s = |k: &str, default: String| match given(k) {
            None => Ok(default),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(ClientError::Usage(format!(
                "the input's {k} must be a string, not {other}"
            ))),
        };
        let ms = |k: &str, default: u64| match given(k) {
            None => Ok(default),
            Some(x) => x
                .as_u64()
                .filter(|n| *n > 0)
                .map(|n| n.min(MAX_HEARTBEAT_MS))
                .ok_or_else(|| {
                    ClientError::Usage(format!(
                        "the input's {k} must be a positive whole number of milliseconds, not {x}"
                    ))
                }),
        };
        Ok(Options {
            agent_id: s("agent_id", d.agent_id)?,
            space: s("space", d.space)?,
            text: s("text", d.text)?,
            heartbeat_interval_ms: ms("heartbeat_interval_ms", d.heartbeat_interval_ms)?,
            heartbeat_timeout_ms: ms("heartbeat_timeout_ms", d.heartbeat_timeout_ms)?,
            leave_after_ms: match given("leave_after_ms") {
                None => None,
                Some(_) => Some(ms("leave_after_ms", 0)?),
            },
        })
    }
}

/// Runs scenario `name` ("join-publish" or "listen") against the hub at `url` (a
/// ws:// URL such as ws://127.0.0.1:PORT/ws).
/// Returns every frame received from the hub except heartbeats (parsed JSON), and
/// either the complete events the client took (each {"space","from","text"}) in
/// order, or why it failed.
pub async fn scenario(
    url: &str,
    name: &str,
    input: &Value,
    faults: &[String],
    timeout: Duration,
) -> (Vec<Value>, Result<Vec<Value>, ClientError>) {
    let mut received = Vec::new();
    let result =
        match tokio::time::timeout(timeout, run(url, name, input, faults, &mut received)).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout(timeout)),
        };
    (received, result)
}

/// A client's open WebSocket connection to a hub.
pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Where the client is in the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for agent.registered.
    Registering,
    /// space.join sent, waiting for space.joined.
    Joining,
    /// Taking events.
    Joined,
}

/// What woke the client.
enum Step {
    Heartbeat,
    Frame(Option<Result<Message, WsError>>),
    Silent,
    /// A send failed and nothing ended the connection within the grace period.
    Broken,
    /// `leave_after_ms` has passed since the join.
    Leave,
}

async fn run(
    url: &str,
    name: &str,
    input: &Value,
    faults: &[String],
    received: &mut Vec<Value>,
) -> Result<Vec<Value>, ClientError> {
    let fault = |f: &str| faults.iter().any(|x| x == f);
    let publish = match name {
        "join-publish" => true,
        "listen" => false,
        other => {
            return Err(ClientError::Usage(format!(
                "unknown scenario {other:?}; known scenarios: join-publish, listen"
            )))
        }
    };
    let opts = Options::from_input(input)?;
    let stamp = !fault("no-timestamp");
    let watch_silence = !fault("ignores-silence");
    let silence = Duration::from_millis(opts.heartbeat_timeout_ms);

    let ws = connect(url, &opts.agent_id).await?;
    let connected = Instant::now();
    let every = Duration::from_millis(opts.heartbeat_interval_ms);
    let heartbeat = (!fault("never-heartbeats")).then(|| {
        let mut i = tokio::time::interval_at(connected + every, every);
        i.set_missed_tick_behavior(MissedTickBehavior::Delay);
        i
    });
    let mut conn = Conn {
        ws,
        heartbeat,
        broken: None,
    };
    let mut taker = Taker::new(!fault("no-reassembly"), fault("keeps-cancelled"));
    let join_id = new_id();
    let publish_id = new_id();
    let mut phase = Phase::Registering;
    let mut last_life = connected;
    // Set at the join: when the client leaves of its own accord.
    let mut leave_at: Option<Instant> = None;
    // The last error event before space.joined, to say why the hub closed.
    let mut hub_error: Option<String> = None;

    loop {
        let silent_at = last_life + silence;
        let broken_at = conn.broken.as_ref().map_or(silent_at, |b| b.1);
        let step = tokio::select! {
            // Heartbeats first (ready at most once an interval, so they cannot starve
            // the reads), then frames, then the alarms.
            biased;
            () = tick(&mut conn.heartbeat) => Step::Heartbeat,
            m = conn.ws.next() => Step::Frame(m),
            () = tokio::time::sleep_until(silent_at), if watch_silence => Step::Silent,
            () = tokio::time::sleep_until(broken_at), if conn.broken.is_some() => Step::Broken,
            () = sleep_until_some(leave_at) => Step::Leave,
        };
        let msg = match step {
            Step::Heartbeat => {
                conn.send(json!({"type": "agent.heartbeat", "timestamp": unix_now()}))
                    .await;
                continue;
            }
            Step::Silent => {
                conn.close().await;
                return Err(ClientError::Silent(opts.heartbeat_timeout_ms));
            }
            Step::Broken => {
                let why = conn.broken.take().map(|b| b.0).unwrap_or_default();
                conn.close().await;
                return Err(ClientError::Ws(format!("cannot send: {why}")));
            }
            Step::Leave => {
                conn.close().await;
                return Ok(taker.events);
            }
            Step::Frame(None) => return ended(phase, taker, hub_error),
            Step::Frame(Some(Err(e))) => return Err(ws_error(e)),
            Step::Frame(Some(Ok(msg))) => msg,
        };
        // Any frame at all, pings included, shows the hub is alive.
        last_life = Instant::now();
        let frame = match msg {
            Message::Text(t) => parse(t.as_str()),
            Message::Binary(b) => parse(&String::from_utf8_lossy(&b)),
            Message::Close(_) => {
                // Sends the answering Close the library has queued.
                conn.close().await;
                return ended(phase, taker, hub_error);
            }
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
        };
        if frame["type"] == "agent.heartbeat" {
            continue;
        }
        received.push(frame.clone());
        match phase {
            Phase::Registering if frame["type"] == "agent.registered" => {
                let mut join = json!({"type": "space.join", "id": join_id, "space": opts.space});
                if stamp {
                    join["timestamp"] = json!(unix_now());
                }
                conn.send(join).await;
                phase = Phase::Joining;
            }
            Phase::Joining
                if frame["type"] == "space.joined" && frame["id"] == join_id.as_str() =>
            {
                phase = Phase::Joined;
                leave_at = opts
                    .leave_after_ms
                    .map(|ms| Instant::now() + Duration::from_millis(ms));
                if publish {
                    let now = unix_now();
                    let mut p = json!({
                        "type": "space.publish", "id": publish_id, "space": opts.space,
                        "data": {"from": opts.agent_id, "text": opts.text, "timestamp": now},
                    });
                    if stamp {
                        p["timestamp"] = json!(now);
                    }
                    conn.send(p).await;
                }
            }
            Phase::Registering | Phase::Joining if frame["type"] == "error" => {
                let ours = frame["request_id"] == join_id.as_str();
                if phase == Phase::Joining && ours && !fault("ignores-join-error") {
                    conn.close().await;
                    return Err(ClientError::Refused(describe_error(&frame)));
                }
                hub_error = Some(describe_error(&frame));
            }
            Phase::Registering | Phase::Joining => {}
            Phase::Joined
                if frame["type"] == "error"
                    && frame["request_id"] == publish_id.as_str()
                    && !fault("ignores-publish-error") =>
            {
                conn.close().await;
                return Err(ClientError::Refused(describe_error(&frame)));
            }
            Phase::Joined => taker.take(&frame)?,
        }
    }
}

/// The outcome when the hub has closed the connection.
fn ended(phase: Phase, taker: Taker, hub_error: Option<String>) -> Result<Vec<Value>, ClientError> {
    let before = match phase {
        Phase::Joined => return Ok(taker.events),
        Phase::Registering => "before agent.registered",
        Phase::Joining => "before space.joined",
    };
    Err(ClientError::Closed(match hub_error {
        Some(e) => format!("{before} (after an error event: {e})"),
        None => before.to_string(),
    }))
}

fn describe_error(frame: &Value) -> String {
    let part = |k: &str| match &frame[k] {
        Value::String(s) => s.clone(),
        Value::Null => format!("(no {k})"),
        other => other.to_string(),
    };
    format!("{} {}", part("code"), part("message"))
}

/// A text frame as JSON; one that is not JSON is kept as a JSON string.
fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn unix_now() -> i64 {
    SystemClock.now().unix_timestamp()
}

fn ws_error(e: WsError) -> ClientError {
    match e {
        WsError::Capacity(_) => ClientError::TooLarge(MAX_FRAME_BYTES),
        other => ClientError::Ws(other.to_string()),
    }
}

/// `at`, or never.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The next heartbeat tick; never, when heartbeats are off.
async fn tick(heartbeat: &mut Option<Interval>) {
    match heartbeat {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Opens the WebSocket at `url` with `agent_id` in the query, within
/// [`CONNECT_DEADLINE`], reading at most [`MAX_FRAME_BYTES`] a frame.
pub async fn connect(url: &str, agent_id: &str) -> Result<Socket, ClientError> {
    let sep = if url.contains('?') { '&' } else { '?' };
    let target = format!("{url}{sep}agent_id={}", percent_encode(agent_id));
    let config = crate::wire::ws_client_config(MAX_FRAME_BYTES);
    let conn = tokio_tungstenite::connect_async_with_config(target.as_str(), Some(config), true);
    match tokio::time::timeout(CONNECT_DEADLINE, conn).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(WsError::Http(resp))) => {
            let body = resp
                .body()
                .as_deref()
                .map(|b| {
                    let b = String::from_utf8_lossy(b);
                    format!(": {}", b.chars().take(200).collect::<String>())
                })
                .unwrap_or_default();
            Err(ClientError::Connect(format!(
                "the upgrade was refused with HTTP {}{body}",
                resp.status().as_u16()
            )))
        }
        Ok(Err(e)) => Err(ClientError::Connect(format!("{target}: {e}"))),
        Err(_) => Err(ClientError::Connect(format!(
            "no WebSocket connection to {target} within {CONNECT_DEADLINE:?}"
        ))),
    }
}

/// The open connection.
struct Conn {
    ws: Socket,
    heartbeat: Option<Interval>,
    /// A send failed: why, and until when the client reads on for the hub's Close
    /// (a hub that closes just as a heartbeat leaves is not an error).
    broken: Option<(String, Instant)>,
}

impl Conn {
    /// Sends one JSON text frame; after a failed send nothing more is sent.
    async fn send(&mut self, frame: Value) {
        if self.broken.is_some() {
            return;
        }
        if let Err(e) = self.ws.send(Message::text(frame.to_string())).await {
            self.broken = Some((e.to_string(), Instant::now() + CLOSE_GRACE));
            self.heartbeat = None;
        }
    }

    /// Closes the socket, spending at most [`CLOSE_GRACE`].
    async fn close(&mut self) {
        let _ = tokio::time::timeout(CLOSE_GRACE, self.ws.close(None)).await;
    }
}

/// A delta stream not yet done.
struct Partial {
    space: Value,
    from: Value,
    text: String,
}

/// Takes the space's events: complete ones as they come, streamed ones when done.
struct Taker {
    reassemble: bool,
    keep_cancelled: bool,
    partials: HashMap<String, Partial>,
    /// The bytes of text the partials hold together.
    held: usize,
    events: Vec<Value>,
}

fn event(space: &Value, from: &Value, text: &str) -> Value {
    json!({"space": space, "from": from, "text": text})
}

impl Taker {
    fn new(reassemble: bool, keep_cancelled: bool) -> Taker {
        Taker {
            reassemble,
            keep_cancelled,
            partials: HashMap::new(),
            held: 0,
            events: Vec::new(),
        }
    }

    fn finish(&mut self, event_id: &str, present: bool) {
        if let Some(p) = self.partials.remove(event_id) {
            self.held = self.held.saturating_sub(p.text.len());
            if present {
                self.events.push(event(&p.space, &p.from, &p.text));
            }
        }
    }

    /// Takes one frame from the hub; events it does not know are ignored.
    fn take(&mut self, frame: &Value) -> Result<(), ClientError> {
        let event_id = frame["event_id"].as_str();
        match (frame["type"].as_str(), event_id) {
            (Some("space.event"), _) => {
                if let Some(text) = frame["data"]["text"].as_str() {
                    self.events
                        .push(event(&frame["space"], &frame["data"]["from"], text));
                }
            }
            (Some("space.event.delta"), Some(id)) => {
                let Some(chunk) = frame["data"]["text"].as_str() else {
                    return Ok(());
                };
                if self.held + chunk.len() > MAX_PARTIAL_BYTES {
                    return Err(ClientError::Overflow(MAX_PARTIAL_BYTES));
                }
                let p = self
                    .partials
                    .entry(id.to_string())
                    .or_insert_with(|| Partial {
                        space: frame["space"].clone(),
                        from: Value::Null,
                        text: String::new(),
                    });
                // `from` comes with the first chunk.
                if p.from.is_null() {
                    p.from = frame["data"]["from"].clone();
                }
                p.text.push_str(chunk);
                self.held += chunk.len();
                if !self.reassemble {
                    let e = event(&p.space, &p.from, chunk);
                    self.events.push(e);
                }
            }
            (Some("space.event.done"), Some(id)) => self.finish(id, self.reassemble),
            (Some("space.event.cancel"), Some(id)) => self.finish(id, self.keep_cancelled),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;
    use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};

    /// How long the test hub waits for anything before giving up.
    const HUB_WAIT: Duration = Duration::from_secs(10);
    /// The scenario deadline of tests that must end before it.
    const LONG: Duration = Duration::from_secs(10);

    /// One step of a test hub's script.
    #[derive(Debug, Clone)]
    enum Hub {
        Send(Value),
        /// Reads until the client's space.join.
        ExpectJoin,
        /// space.joined for the join read.
        Joined,
        /// An error event for the join read.
        RefuseJoin,
        /// Reads until the client has sent this many agent.heartbeat.
        Heartbeats(usize),
        /// Reads for this long.
        Listen(Duration),
        /// Sends a Close frame.
        Close,
    }

    #[derive(Debug, Default)]
    struct Report {
        /// The request target of the upgrade.
        uri: String,
        /// Every text frame the client sent, parsed.
        frames: Vec<Value>,
    }

    impl Report {
        fn of_type(&self, ty: &str) -> Vec<&Value> {
            self.frames.iter().filter(|f| f["type"] == ty).collect()
        }
    }

    type HubSocket = WebSocketStream<TcpStream>;

    /// The next text frame from the client before `until`, recorded in `report`.
    async fn recv(ws: &mut HubSocket, report: &mut Report, until: Instant) -> Option<Value> {
        loop {
            match tokio::time::timeout_at(until, ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => {
                    let v = parse(t.as_str());
                    report.frames.push(v.clone());
                    return Some(v);
                }
                Ok(Some(Ok(_))) => {}
                _ => return None,
            }
        }
    }

    /// A hub on 127.0.0.1 that serves one connection by `script`, then reads until
    /// the client has gone; its task returns what the client sent.
    async fn hub(script: Vec<Hub>) -> (String, tokio::task::JoinHandle<Report>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/ws", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut report = Report::default();
            let Ok(Ok((sock, _))) = tokio::time::timeout(HUB_WAIT, listener.accept()).await else {
                return report;
            };
            let mut uri = String::new();
            // The callback's type is tungstenite's, large error and all.
            #[allow(clippy::result_large_err)]
            let callback = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
                uri = req.uri().to_string();
                Ok(resp)
            };
            let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(sock, callback).await else {
                return report;
            };
            report.uri = uri;
            let until = Instant::now() + HUB_WAIT;
            let mut join_id = Value::Null;
            for step in script {
                match step {
                    Hub::Send(v) => {
                        if ws.send(Message::text(v.to_string())).await.is_err() {
                            return report;
                        }
                    }
                    Hub::ExpectJoin => loop {
                        match recv(&mut ws, &mut report, until).await {
                            Some(f) if f["type"] == "space.join" => {
                                join_id = f["id"].clone();
                                break;
                            }
                            Some(_) => {}
                            None => return report,
                        }
                    },
                    Hub::Joined => {
                        let j = json!({"type": "space.joined", "id": join_id, "space": "general",
                                       "members": ["reference-client"], "timestamp": 1});
                        let _ = ws.send(Message::text(j.to_string())).await;
                    }
                    Hub::RefuseJoin => {
                        let e = json!({"type": "error", "code": "SPACE_FULL",
                                       "message": "Space 'general' is full", "request_id": join_id});
                        let _ = ws.send(Message::text(e.to_string())).await;
                    }
                    Hub::Heartbeats(n) => {
                        while report.of_type("agent.heartbeat").len() < n {
                            if recv(&mut ws, &mut report, until).await.is_none() {
                                return report;
                            }
                        }
                    }
                    Hub::Listen(d) => {
                        let stop = Instant::now() + d;
                        while recv(&mut ws, &mut report, stop).await.is_some() {}
                    }
                    Hub::Close => {
                        let _ = ws.close(None).await;
                    }
                }
            }
            while recv(&mut ws, &mut report, until).await.is_some() {}
            report
        });
        (url, task)
    }

    async fn report(task: tokio::task::JoinHandle<Report>) -> Report {
        tokio::time::timeout(HUB_WAIT + Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap()
    }

    fn registered() -> Hub {
        Hub::Send(
            json!({"type": "agent.registered", "agent": {"id": "reference-client", "connection_id": "ws-1"}, "timestamp": 1}),
        )
    }

    fn delta(id: &str, text: &str, from: Option<&str>) -> Hub {
        let mut data = json!({"text": text});
        if let Some(f) = from {
            data["from"] = json!(f);
        }
        Hub::Send(
            json!({"type": "space.event.delta", "space": "general", "event_id": id, "data": data, "timestamp": 1}),
        )
    }

    fn marker(ty: &str, id: &str) -> Hub {
        Hub::Send(json!({"type": ty, "space": "general", "event_id": id, "timestamp": 1}))
    }

    /// Registered, joined, one complete event, two delta streams of which the second
    /// is cancelled, a hub heartbeat and an unrelated error in between, then Close.
    fn stream_script() -> Vec<Hub> {
        vec![
            registered(),
            Hub::ExpectJoin,
            Hub::Joined,
            Hub::Send(
                json!({"type": "space.event", "space": "general", "data": {"from": "a", "text": "one", "timestamp": 1}, "timestamp": 1}),
            ),
            delta("e1", "Hel", Some("b")),
            delta("e2", "XX", Some("c")),
            Hub::Send(json!({"type": "agent.heartbeat", "timestamp": 1})),
            delta("e1", "lo", None),
            marker("space.event.cancel", "e2"),
            Hub::Send(
                json!({"type": "error", "code": "RATE_LIMITED", "message": "slow down", "request_id": "other"}),
            ),
            marker("space.event.done", "e1"),
            Hub::Close,
        ]
    }

    async fn listen(faults: &[&str]) -> (Vec<Value>, Result<Vec<Value>, ClientError>, Report) {
        let (url, task) = hub(stream_script()).await;
        let faults: Vec<String> = faults.iter().map(|f| f.to_string()).collect();
        let (received, result) = scenario(&url, "listen", &json!({}), &faults, LONG).await;
        (received, result, report(task).await)
    }

    fn ev(from: &str, text: &str) -> Value {
        json!({"space": "general", "from": from, "text": text})
    }

    #[tokio::test]
    async fn listen_reassembles_deltas_and_drops_a_cancelled_stream() {
        let (received, result, hub) = listen(&[]).await;
        assert_eq!(result.unwrap(), vec![ev("a", "one"), ev("b", "Hello")]);
        // Every frame but the heartbeat, the unrelated error included.
        let types: Vec<&str> = received.iter().filter_map(|f| f["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "agent.registered",
                "space.joined",
                "space.event",
                "space.event.delta",
                "space.event.delta",
                "space.event.delta",
                "space.event.cancel",
                "error",
                "space.event.done"
            ]
        );
        // It answered nothing to the hub's heartbeat, and joined with a timestamp.
        assert_eq!(hub.uri, "/ws?agent_id=reference-client");
        assert_eq!(hub.frames.len(), 1, "{:?}", hub.frames);
        let join = &hub.frames[0];
        assert_eq!(join["type"], "space.join");
        assert_eq!(join["space"], "general");
        assert!(join["id"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(join["timestamp"].is_number());
    }

    #[tokio::test]
    async fn no_reassembly_presents_every_chunk() {
        let (_, result, _) = listen(&["no-reassembly"]).await;
        assert_eq!(
            result.unwrap(),
            vec![ev("a", "one"), ev("b", "Hel"), ev("c", "XX"), ev("b", "lo")]
        );
    }

    #[tokio::test]
    async fn keeps_cancelled_presents_the_cancelled_stream() {
        let (_, result, _) = listen(&["keeps-cancelled"]).await;
        assert_eq!(
            result.unwrap(),
            vec![ev("a", "one"), ev("c", "XX"), ev("b", "Hello")]
        );
    }

    #[tokio::test]
    async fn join_publish_sends_stamped_events_and_encodes_the_agent_id() {
        for (faults, stamped) in [(vec![], true), (vec!["no-timestamp".to_string()], false)] {
            let script = vec![registered(), Hub::ExpectJoin, Hub::Joined, Hub::Close];
            let (url, task) = hub(script).await;
            let url = format!("{url}?token=t");
            let input = json!({"agent_id": "ref client/1", "text": "hi", "space": "general"});
            let (received, result) = scenario(&url, "join-publish", &input, &faults, LONG).await;
            assert_eq!(result.unwrap(), Vec::<Value>::new());
            assert_eq!(received.len(), 2);
            let hub = report(task).await;
            assert_eq!(hub.uri, "/ws?token=t&agent_id=ref%20client%2F1");
            let publishes = hub.of_type("space.publish");
            assert_eq!(publishes.len(), 1, "{:?}", hub.frames);
            let p = publishes[0];
            assert_eq!(p["space"], "general");
            assert_eq!(p["data"]["from"], "ref client/1");
            assert_eq!(p["data"]["text"], "hi");
            assert!(p["data"]["timestamp"].is_number());
            assert!(p["id"].as_str().is_some_and(|s| !s.is_empty()));
            assert_ne!(p["id"], hub.of_type("space.join")[0]["id"]);
            for f in [p, hub.of_type("space.join")[0]] {
                assert_eq!(f["timestamp"].is_number(), stamped, "{f}");
                assert_eq!(f.get("timestamp").is_some(), stamped, "{f}");
            }
        }
    }

    #[tokio::test]
    async fn a_refused_join_is_an_error() {
        let script = vec![registered(), Hub::ExpectJoin, Hub::RefuseJoin];
        let (url, task) = hub(script).await;
        let (received, result) = scenario(&url, "listen", &json!({}), &[], LONG).await;
        match result {
            Err(ClientError::Refused(why)) => assert!(why.contains("SPACE_FULL"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(received.len(), 2);
        report(task).await;
    }

    #[tokio::test]
    async fn a_close_before_registration_is_an_error() {
        let script = vec![
            Hub::Send(json!({"type": "error", "code": "AGENT_EXISTS", "message": "taken"})),
            Hub::Close,
        ];
        let (url, task) = hub(script).await;
        let (_, result) = scenario(&url, "listen", &json!({}), &[], LONG).await;
        match result {
            Err(ClientError::Closed(why)) => assert!(why.contains("AGENT_EXISTS"), "{why}"),
            other => panic!("{other:?}"),
        }
        report(task).await;
    }

    fn silent_script() -> Vec<Hub> {
        // After the join, the hub sends nothing and reads until the client goes.
        vec![registered(), Hub::ExpectJoin, Hub::Joined]
    }

    #[tokio::test]
    async fn a_silent_hub_is_detected() {
        let (url, task) = hub(silent_script()).await;
        let input = json!({"heartbeat_timeout_ms": 300});
        let (_, result) = scenario(&url, "listen", &input, &[], LONG).await;
        assert!(
            matches!(result, Err(ClientError::Silent(300))),
            "{result:?}"
        );
        report(task).await;
    }

    #[tokio::test]
    async fn ignores_silence_runs_into_the_deadline() {
        let (url, task) = hub(silent_script()).await;
        let input = json!({"heartbeat_timeout_ms": 300});
        let faults = vec!["ignores-silence".to_string()];
        let deadline = Duration::from_secs(1);
        let (_, result) = scenario(&url, "listen", &input, &faults, deadline).await;
        assert!(
            matches!(result, Err(ClientError::Timeout(d)) if d == deadline),
            "{result:?}"
        );
        report(task).await;
    }

    #[tokio::test]
    async fn heartbeats_are_sent() {
        let script = vec![
            registered(),
            Hub::ExpectJoin,
            Hub::Joined,
            Hub::Heartbeats(2),
            Hub::Close,
        ];
        let (url, task) = hub(script).await;
        let input = json!({"heartbeat_interval_ms": 50});
        let (_, result) = scenario(&url, "listen", &input, &[], LONG).await;
        assert_eq!(result.unwrap(), Vec::<Value>::new());
        let hub = report(task).await;
        let beats = hub.of_type("agent.heartbeat");
        assert!(beats.len() >= 2, "{:?}", hub.frames);
        assert!(beats.iter().all(|b| b["timestamp"].is_number()));
    }

    #[tokio::test]
    async fn never_heartbeats_sends_none() {
        let script = vec![
            registered(),
            Hub::ExpectJoin,
            Hub::Joined,
            Hub::Listen(Duration::from_millis(300)),
            Hub::Close,
        ];
        let (url, task) = hub(script).await;
        let input = json!({"heartbeat_interval_ms": 50});
        let faults = vec!["never-heartbeats".to_string()];
        let (_, result) = scenario(&url, "listen", &input, &faults, LONG).await;
        assert_eq!(result.unwrap(), Vec::<Value>::new());
        assert!(report(task).await.of_type("agent.heartbeat").is_empty());
    }

    #[tokio::test]
    async fn usage_errors() {
        let (received, result) = scenario(
            "ws://127.0.0.1:9/ws",
            "dance",
            &json!({}),
            &[],
            Duration::from_secs(1),
        )
        .await;
        assert!(received.is_empty());
        assert!(matches!(result, Err(ClientError::Usage(_))), "{result:?}");
        for bad in [
            json!({"agent_id": 7}),
            json!({"heartbeat_interval_ms": 0}),
            json!({"heartbeat_timeout_ms": "60"}),
        ] {
            assert!(Options::from_input(&bad).is_err(), "{bad}");
        }
        assert_eq!(
            Options::from_input(&Value::Null).unwrap(),
            Options::default()
        );
    }

    #[tokio::test]
    async fn against_the_reference_server() {
        use crate::agora_spaces::server::{router, Spaces, SpacesConfig};
        // The server closes a client silent for 300 ms, which ends the scenario.
        let cfg = SpacesConfig {
            heartbeat_timeout: Duration::from_millis(300),
            ..SpacesConfig::default()
        };
        let running = crate::serve::spawn("127.0.0.1:0", router(Spaces::new(cfg)))
            .await
            .unwrap();
        let url = format!("ws://{}/ws", running.addr);
        let (received, result) = scenario(&url, "join-publish", &json!({}), &[], LONG).await;
        assert_eq!(result.unwrap(), Vec::<Value>::new());
        let types: Vec<&str> = received.iter().filter_map(|f| f["type"].as_str()).collect();
        assert_eq!(types, ["agent.registered", "space.joined"], "{received:?}");
        // A system space that does not exist: SPACE_NOT_FOUND, tied to the join.
        let input = json!({"agent_id": "second", "space": "agent.nowhere"});
        let (_, result) = scenario(&url, "listen", &input, &[], LONG).await;
        match result {
            Err(ClientError::Refused(why)) => assert!(why.contains("SPACE_NOT_FOUND"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
