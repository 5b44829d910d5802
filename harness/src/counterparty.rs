//! The harness as the counterparty of a client under test (`run --role client`).
//! A client case serves its scripted side of the exchange on loopback, runs the
//! implementer's client driver against it, and judges what the client sent and
//! how it reacted.
//!
//! The driver is a shell command (`[client] command`, `--client`) with `{url}`,
//! `{scenario}` and `{case}` replaced; the same values, and `AGENTCONFORM_INPUT` (a
//! JSON file with the scenario's inputs), are in its environment. It prints what
//! its client received as JSON lines and exits non-zero when its client reports an
//! error. It has a deadline, its output is capped, and its process group is ended
//! when the case ends.

use crate::case::{skip, Step};
use crate::script::Ctx;
use axum::body::{to_bytes, Body};
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::{any, get};
use axum::Router;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

pub use crate::exchange::Exchange;

/// The scripted side: answers each message the client sends to a path (with its
/// query) with a status and a body.
pub type Answer = Box<dyn FnMut(&str, &[u8]) -> (u16, Vec<u8>) + Send>;

/// Whether a request (method, path without its query) is one the suite's spec
/// defines for the counterparty. Any other request is answered 405 (a known path)
/// or 404 without reaching the scripted side, kept apart from the scenario's
/// exchanges (`DriverRun::outside`) and reported once per method and path as what
/// it is, a request the spec does not define (a warning).
pub type Defined = fn(&str, &str) -> bool;

/// A callback: the URL and the body.
type Post = (String, Vec<u8>);

/// Requests the scripted side wants POSTed to the client after its answer (a job
/// result to a `callback_url`): an answer pushes (URL, body) here. It also tells
/// the answer the counterparty's own base URL, once it listens (for URLs the
/// answer hands out, such as an agent's `api_endpoint`).
#[derive(Clone, Default)]
pub struct Outbox {
    posts: Arc<Mutex<Vec<Post>>>,
    base: Arc<std::sync::OnceLock<String>>,
}

impl Outbox {
    /// The counterparty's base URL, without a trailing slash (empty before it
    /// listens).
    pub fn base(&self) -> &str {
        self.base.get().map_or("", String::as_str)
    }

    pub fn push(&self, url: String, body: Vec<u8>) {
        self.posts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((url, body));
    }

    fn take(&self) -> Vec<Post> {
        std::mem::take(&mut *self.posts.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What a WebSocket hub sees: a connection opened (with its query string), a text
/// frame from the client, or its own timer.
#[derive(Debug)]
pub enum HubEvent<'a> {
    Open { query: &'a str },
    Text(&'a str),
    Tick,
}

/// What a hub does in answer: send a text frame, or close the connection (1000).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubAct {
    Send(String),
    Close,
}

/// The scripted WebSocket side (agora-spaces): called on every event of every
/// connection, with a timer every `tick` when set.
pub struct Hub {
    pub tick: Option<Duration>,
    pub script: Box<dyn FnMut(HubEvent<'_>) -> Vec<HubAct> + Send>,
}

/// One thing seen on the hub's WebSocket connections, with the time since the
/// driver started and the connection's number.
#[derive(Debug, Clone)]
pub struct WsFrame {
    pub conn: usize,
    pub at: Duration,
    pub what: Ws,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ws {
    /// The client connected, with this query string.
    Open(String),
    /// A text frame from the client (a binary frame, read as UTF-8).
    Client(String),
    /// A text frame the hub sent.
    Hub(String),
    /// The client closed the connection, or it broke.
    ClientClosed,
    /// The hub closed it.
    HubClosed,
}

/// How long the hub waits for the client's Close after its own.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// At most this many WebSocket frames are kept per driver run; the rest are
/// counted, not kept.
const MAX_FRAMES: usize = 20_000;

/// How the driver ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Ended by a signal it did not get from the harness.
    Signal,
    /// Still running at the deadline: the harness ended it.
    Deadline,
}

/// What one driver run did.
#[derive(Debug, Clone)]
pub struct DriverRun {
    /// The scenario's exchanges: the requests the suite's spec defines, and the
    /// callbacks.
    pub exchanges: Vec<Exchange>,
    /// Requests the spec does not define for the counterparty (another method or
    /// path), answered 404 or 405 without reaching the scripted side.
    pub outside: Vec<Exchange>,
    /// The hub's WebSocket frames (empty for HTTP counterparts).
    pub frames: Vec<WsFrame>,
    pub exit: Exit,
    /// How long the driver ran.
    pub took: Duration,
    /// Standard output (capped), and its lines that are JSON.
    pub stdout: String,
    pub lines: Vec<Value>,
    pub stderr: String,
}

impl DriverRun {
    /// Whether the driver said its client failed (a non-zero exit).
    pub fn failed(&self) -> bool {
        self.exit != Exit::Code(0)
    }

    /// The messages the client sent, in order.
    pub fn sent(&self) -> impl Iterator<Item = &[u8]> {
        self.exchanges
            .iter()
            .filter(|x| x.method != "CALLBACK")
            .map(|x| x.received.as_slice())
    }

    /// The text frames the client sent on the hub's connections, in order, with
    /// their times.
    pub fn client_frames(&self) -> impl Iterator<Item = (Duration, &str)> {
        self.frames.iter().filter_map(|f| match &f.what {
            Ws::Client(t) => Some((f.at, t.as_str())),
            _ => None,
        })
    }

    /// The `result` members of the driver's JSON lines, in order.
    pub fn results(&self) -> Vec<&Value> {
        self.lines.iter().filter_map(|l| l.get("result")).collect()
    }

    /// The client took nothing and said it failed (no `result` line, a non-zero
    /// exit), as it must at a reply it refuses or an error it reports; else the
    /// failure "`who` `verb` `what`" with how the driver ended and what it printed.
    pub fn took_nothing(&self, who: &str, verb: &str, what: &str) -> Step<()> {
        if !self.failed() || self.lines.iter().any(|l| l.get("result").is_some()) {
            return crate::case::fail(format!(
                "{who} {verb} {what}: {}; stdout: {}",
                self.ended(),
                crate::finding::clipped(self.stdout.trim(), 300)
            ));
        }
        Ok(())
    }

    /// How it ended, in words.
    pub fn ended(&self) -> String {
        match &self.exit {
            Exit::Code(c) => format!("the driver exited with {c}"),
            Exit::Signal => "the driver was ended by a signal".into(),
            Exit::Deadline => "the driver was still running at the deadline and was ended".into(),
        }
    }
}

#[derive(Clone)]
struct Side {
    state: Arc<Mutex<(Answer, Vec<Exchange>)>>,
    outbox: Outbox,
    max_bytes: usize,
    defined: Defined,
    outside: Arc<Mutex<Vec<Exchange>>>,
    first: Arc<std::sync::OnceLock<Instant>>,
}

impl Side {
    fn record(&self, x: Exchange) {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .push(x);
    }
}

/// `path` with every run of slashes before its query collapsed into one, and
/// whether that changed it.
fn collapse_slashes(path: &str) -> (String, bool) {
    let (route, query) = match path.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (path, None),
    };
    let mut out = String::with_capacity(path.len());
    for c in route.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    let changed = out.len() != route.len();
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    (out, changed)
}

async fn on_message(
    State(side): State<Side>,
    method: Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
    body: Body,
) -> axum::response::Response {
    let Ok(bytes) = to_bytes(body, side.max_bytes).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let _ = side.first.set(Instant::now());
    let as_written = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string());
    let (path, doubled) = collapse_slashes(&as_written);
    let written = doubled.then_some(as_written);
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let route = path.split('?').next().unwrap_or_default();
    let exchange = |path: String, status: u16, answered: Vec<u8>| Exchange {
        method: method.to_string(),
        path,
        content_type,
        received: bytes.to_vec(),
        answered,
        status,
        written,
    };
    if !(side.defined)(method.as_str(), route) {
        let (status, error) = if ["GET", "POST"]
            .iter()
            .any(|m| *m != method.as_str() && (side.defined)(m, route))
        {
            (405, "method not allowed")
        } else {
            (404, "no such endpoint")
        };
        let out = serde_json::json!({"error": error}).to_string().into_bytes();
        let x = exchange(path.clone(), status, out.clone());
        side.outside
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(x);
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::NOT_FOUND);
        return (code, [(header::CONTENT_TYPE, "application/json")], out).into_response();
    }
    let (status, out) = {
        let mut guard = side.state.lock().unwrap_or_else(|p| p.into_inner());
        let (answer, log) = &mut *guard;
        let (status, out) = answer(&path, &bytes);
        log.push(exchange(path.clone(), status, out.clone()));
        (status, out)
    };
    for (url, body) in side.outbox.take() {
        tokio::spawn(call_back(side.clone(), url, body));
    }
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    (code, [(header::CONTENT_TYPE, "application/json")], out).into_response()
}

/// POSTs one callback to the client (deadline 5 s, reply capped) and records it.
async fn call_back(side: Side, url: String, body: Vec<u8>) {
    let sent = async {
        let http = reference_impl::wire::http::builder()
            .no_proxy()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        let mut resp = http
            .post(&url)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.clone())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let mut got = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
            let room = side.max_bytes.saturating_sub(got.len());
            got.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if chunk.len() >= room {
                break;
            }
        }
        Ok::<_, String>((status, got))
    }
    .await;
    let (status, received) = match sent {
        Ok(x) => x,
        Err(e) => (
            0,
            format!("the callback could not be delivered: {e}").into_bytes(),
        ),
    };
    side.record(Exchange {
        method: "CALLBACK".into(),
        path: url,
        content_type: None,
        received,
        answered: body,
        status,
        written: None,
    });
}

#[derive(Clone)]
struct HubSide {
    hub: Arc<Mutex<Hub>>,
    tick: Option<Duration>,
    frames: Arc<Mutex<(Vec<WsFrame>, usize)>>,
    conns: Arc<std::sync::atomic::AtomicUsize>,
    start: Instant,
    max_bytes: usize,
    first: Arc<std::sync::OnceLock<Instant>>,
}

impl HubSide {
    fn record(&self, conn: usize, what: Ws) {
        let mut g = self.frames.lock().unwrap_or_else(|p| p.into_inner());
        if g.0.len() < MAX_FRAMES {
            g.0.push(WsFrame {
                conn,
                at: self.start.elapsed(),
                what,
            });
        } else {
            g.1 += 1;
        }
    }

    fn call(&self, event: HubEvent<'_>) -> Vec<HubAct> {
        let mut g = self.hub.lock().unwrap_or_else(|p| p.into_inner());
        (g.script)(event)
    }
}

async fn on_upgrade(
    State(side): State<HubSide>,
    uri: Uri,
    ws: WebSocketUpgrade,
) -> axum::response::Response {
    let _ = side.first.set(Instant::now());
    let query = uri.query().unwrap_or("").to_string();
    ws.max_message_size(side.max_bytes)
        .max_frame_size(side.max_bytes)
        .read_buffer_size(reference_impl::wire::WS_READ_BUFFER_BYTES)
        .on_upgrade(move |socket| serve_hub(socket, side, query))
}

/// Sends the hub's acts; false once it closed the connection or sending failed.
async fn act(socket: &mut WebSocket, side: &HubSide, conn: usize, acts: Vec<HubAct>) -> bool {
    for a in acts {
        match a {
            HubAct::Send(text) => {
                side.record(conn, Ws::Hub(text.clone()));
                if socket.send(Message::Text(text.into())).await.is_err() {
                    side.record(conn, Ws::ClientClosed);
                    return false;
                }
            }
            HubAct::Close => {
                side.record(conn, Ws::HubClosed);
                let _ = socket
                    .send(Message::Close(Some(axum::extract::ws::CloseFrame {
                        code: 1000,
                        reason: "".into(),
                    })))
                    .await;
                // The closing handshake: the client's Close (or its end) is awaited
                // briefly, so that a frame it sent meanwhile never turns the close
                // into a reset that loses the hub's Close on the client's side.
                let _ = tokio::time::timeout(CLOSE_WAIT, async {
                    while let Some(Ok(m)) = socket.recv().await {
                        if matches!(m, Message::Close(_)) {
                            break;
                        }
                    }
                })
                .await;
                return false;
            }
        }
    }
    true
}

async fn serve_hub(mut socket: WebSocket, side: HubSide, query: String) {
    let conn = side
        .conns
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    side.record(conn, Ws::Open(query.clone()));
    let acts = side.call(HubEvent::Open { query: &query });
    if !act(&mut socket, &side, conn, acts).await {
        return;
    }
    let mut timer = side
        .tick
        .map(|d| tokio::time::interval_at(tokio::time::Instant::now() + d, d));
    loop {
        let tick = async {
            match timer.as_mut() {
                Some(t) => {
                    t.tick().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let text = tokio::select! {
            m = socket.recv() => match m {
                Some(Ok(Message::Text(t))) => Some(t.to_string()),
                Some(Ok(Message::Binary(b))) => Some(String::from_utf8_lossy(&b).into_owned()),
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(Message::Close(_)) | Err(_)) | None => {
                    side.record(conn, Ws::ClientClosed);
                    return;
                }
            },
            () = tick => None,
        };
        let acts = match &text {
            Some(t) => {
                side.record(conn, Ws::Client(t.clone()));
                side.call(HubEvent::Text(t))
            }
            None => side.call(HubEvent::Tick),
        };
        if !act(&mut socket, &side, conn, acts).await {
            return;
        }
    }
}

/// Serves `answer` on loopback over HTTP (any method; an answer may queue
/// callbacks in `outbox`), runs the client driver for `scenario` with `input`, and
/// returns what happened; the exchanges and the driver's output go to the
/// transcript. Skips (with the reason) when no driver is configured.
pub async fn drive(
    ctx: &mut Ctx,
    scenario: &str,
    input: &Value,
    answer: Answer,
    defined: Defined,
) -> Step<DriverRun> {
    drive_http(ctx, scenario, input, answer, defined, Outbox::default()).await
}

/// [`drive`], with callbacks.
pub async fn drive_http(
    ctx: &mut Ctx,
    scenario: &str,
    input: &Value,
    answer: Answer,
    defined: Defined,
    outbox: Outbox,
) -> Step<DriverRun> {
    let side = Side {
        state: Arc::new(Mutex::new((answer, Vec::new()))),
        outbox,
        max_bytes: ctx.profile().timing.max_response_bytes,
        defined,
        outside: Arc::default(),
        first: Arc::default(),
    };
    let router = Router::new()
        .route("/", any(on_message))
        .route("/{*rest}", any(on_message))
        .with_state(side.clone());
    let mut run = run_driver(
        ctx,
        scenario,
        input,
        router,
        ("http", ""),
        Some(&side.outbox.base),
        &side.first,
    )
    .await?;
    run.exchanges = std::mem::take(&mut side.state.lock().unwrap_or_else(|p| p.into_inner()).1);
    run.outside = std::mem::take(&mut *side.outside.lock().unwrap_or_else(|p| p.into_inner()));
    report_slashes(ctx, &run);
    for x in &run.outside {
        log_exchange(ctx, x, " (not defined by the spec)");
    }
    report_outside(ctx, &run);
    for x in &run.exchanges {
        log_exchange(ctx, x, "");
    }
    Ok(run)
}

/// One exchange in the transcript: the client's request and the harness's answer,
/// or for a callback the harness's POST and the client's answer.
fn log_exchange(ctx: &mut Ctx, x: &Exchange, note: &str) {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if x.method == "CALLBACK" {
        let posted = format!("callback POST {}\n{}", x.path, text(&x.answered));
        ctx.log_frame("send", "harness", &posted);
        let answer = format!("HTTP {}: {}", x.status, text(&x.received));
        ctx.log_frame("recv", "client", &answer);
        return;
    }
    let said = format!("{} {}{note}\n{}", x.method, x.path, text(&x.received));
    ctx.log_frame("recv", "client", &said);
    let answer = format!("HTTP {}: {}", x.status, text(&x.answered));
    ctx.log_frame("send", "harness", &answer);
}

/// Serves `hub` on loopback over WebSocket (`ws://127.0.0.1:PORT/ws`), runs the
/// client driver, and returns what happened, the frames in the transcript.
pub async fn drive_hub(ctx: &mut Ctx, scenario: &str, input: &Value, hub: Hub) -> Step<DriverRun> {
    let side = HubSide {
        tick: hub.tick,
        hub: Arc::new(Mutex::new(hub)),
        frames: Arc::new(Mutex::new((Vec::new(), 0))),
        conns: Arc::default(),
        start: Instant::now(),
        max_bytes: ctx.profile().timing.max_response_bytes,
        first: Arc::default(),
    };
    let router = Router::new()
        .route("/ws", get(on_upgrade))
        .route("/", get(on_upgrade))
        .with_state(side.clone());
    let mut run = run_driver(
        ctx,
        scenario,
        input,
        router,
        ("ws", "/ws"),
        None,
        &side.first,
    )
    .await?;
    let (frames, dropped) =
        std::mem::take(&mut *side.frames.lock().unwrap_or_else(|p| p.into_inner()));
    for f in &frames {
        let n = f.conn;
        match &f.what {
            Ws::Open(q) => ctx.log_frame("recv", "client", &format!("connection {n} opened: ?{q}")),
            Ws::Client(t) => ctx.log_frame("recv", "client", &format!("#{n} {t}")),
            Ws::Hub(t) => ctx.log_frame("send", "harness", &format!("#{n} {t}")),
            Ws::ClientClosed => ctx.log_frame(
                "recv",
                "client",
                &format!("connection {n} closed by the client"),
            ),
            Ws::HubClosed => ctx.log_frame(
                "send",
                "harness",
                &format!("connection {n} closed by the harness"),
            ),
        }
    }
    if dropped > 0 {
        ctx.note(format!("{dropped} further WebSocket frames were counted, not kept (at most {MAX_FRAMES} per case)"));
    }
    run.frames = frames;
    Ok(run)
}

/// A request path the client wrote with doubled slashes (`{url}/` joined with
/// `/path`): one warning per suite, the request itself judged by its collapsed
/// path. The specs write a base URL without a trailing slash and the harness gives
/// it so; most servers take `//path` like `/path`, some do not.
fn report_slashes(ctx: &mut Ctx, run: &DriverRun) {
    let doubled = run.exchanges.iter().chain(&run.outside).find_map(|x| {
        x.written
            .as_deref()
            .map(|w| (x.method.as_str(), w, &x.path))
    });
    if let Some((method, written, path)) = doubled {
        let suite = ctx.suite();
        ctx.finding(
            crate::rules::CLIENT_DOUBLE_SLASH.found_in(suite, "",
                format!(
                    "the client sent {method} {written}, with doubled slashes; the harness took it as {path}, which a server may not (the URL it was given has no trailing slash)"
                ),
            ),
        );
    }
}

/// Each request outside the spec's endpoints, once per method and path: a warning
/// that says what it was and how the harness answered.
fn report_outside(ctx: &mut Ctx, run: &DriverRun) {
    let suite = ctx.suite();
    let mut seen = std::collections::BTreeSet::new();
    for x in &run.outside {
        let shape = crate::exchange::route_shape(&x.path);
        let detail = format!("{} {shape}", x.method);
        if !seen.insert(detail.clone()) {
            continue;
        }
        ctx.finding(
            crate::rules::CLIENT_UNDEFINED_REQUEST.found_in(suite, detail,
                format!(
                    "the client sent {} {}, a request {suite} does not define; the harness answered HTTP {} and left it out of the scenario",
                    x.method, x.path, x.status
                ),
            ),
        );
    }
}

/// Reads a pipe to its end, keeping at most `cap` bytes (the rest is read and
/// dropped, so that the child never blocks on a full pipe).
async fn capped(mut r: impl tokio::io::AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, cut),
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                cut |= n > room;
            }
        }
    }
}

/// Ends the driver's process group (the driver and whatever it started; it was
/// started with `process_group(0)`, so the group id is its pid), with the system's
/// `kill`, as the project allows no unsafe code.
async fn end_group(pid: Option<u32>) {
    if let Some(pid) = pid {
        let _ = tokio::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .await;
    }
}

/// Waits for the driver: `[client] timeout_ms` from its first connection to the
/// counterparty, and before that at most `[client] startup_ms` from its start (an
/// interpreter that takes seconds to load its libraries is not a failing client).
async fn wait_driver(
    child: &mut tokio::process::Child,
    began: Instant,
    first: &std::sync::OnceLock<Instant>,
    client: &crate::profile::ClientSection,
) -> Exit {
    // How often the wait looks whether the first connection came, before it did.
    const LOOK: Duration = Duration::from_millis(50);
    let run_for = Duration::from_millis(client.timeout_ms);
    let start_for = Duration::from_millis(client.startup_ms);
    loop {
        let (until, settled) = match first.get() {
            Some(t) => (*t + run_for, true),
            None => ((began + start_for).min(Instant::now() + LOOK), false),
        };
        match tokio::time::timeout_at(until.into(), child.wait()).await {
            Ok(Ok(status)) => return status.code().map_or(Exit::Signal, Exit::Code),
            Ok(Err(_)) => return Exit::Signal,
            Err(_) if settled => return Exit::Deadline,
            Err(_) if first.get().is_none() && began.elapsed() >= start_for => {
                return Exit::Deadline
            }
            Err(_) => {}
        }
    }
}

/// Starts `router` on loopback, runs the driver against `scheme://ADDR{path}`, and
/// stops the router; the exchanges are left to the caller.
async fn run_driver(
    ctx: &mut Ctx,
    scenario: &str,
    input: &Value,
    router: Router,
    (scheme, path): (&str, &str),
    base: Option<&std::sync::OnceLock<String>>,
    first: &std::sync::OnceLock<Instant>,
) -> Step<DriverRun> {
    if ctx.profile().client.command.is_none() {
        return skip("no client driver: pass --client COMMAND or set [client] command");
    }
    let running = reference_impl::serve::spawn("127.0.0.1:0", router)
        .await
        .map_err(|e| crate::case::Stop::Skip(format!("cannot start the counterparty: {e}")))?;
    let url = format!("{scheme}://{}{path}", running.addr);
    if let Some(b) = base {
        let _ = b.set(url.clone());
    }
    let run = run_command(ctx, scenario, input, &url, first).await;
    // A connection the client left open ends with its process; the stop waits for it
    // at most this long.
    let _ = tokio::time::timeout(Duration::from_secs(2), running.stop()).await;
    run
}

/// Runs the profile's client driver (`[client] command`) for `scenario` against
/// `url` with `input`, until it exits or its deadline passes (the start-up allowance
/// until `first` is set by the client's first connection, then its own deadline).
pub async fn run_command(
    ctx: &mut Ctx,
    scenario: &str,
    input: &Value,
    url: &str,
    first: &std::sync::OnceLock<Instant>,
) -> Step<DriverRun> {
    let client = ctx.profile().client.clone();
    let Some(template) = client.command.clone() else {
        return skip("no client driver: pass --client COMMAND or set [client] command");
    };
    let case = ctx.case_id.unwrap_or("client");
    let dir = std::env::temp_dir().join(format!(
        "agentconform-client-{}-{}",
        std::process::id(),
        reference_impl::wire::new_id()
    ));
    let input_path = dir.join("input.json");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&input_path, input.to_string()))
        .map_err(|e| crate::case::Stop::Skip(format!("cannot write the scenario input: {e}")))?;
    let suite = ctx.suite();
    let command = template
        .replace("{suite}", suite)
        .replace("{url}", url)
        .replace("{scenario}", scenario)
        .replace("{case}", case);
    ctx.note(format!("client driver: {command}"));
    let vars = [
        ("AGENTCONFORM_URL", url),
        ("AGENTCONFORM_SCENARIO", scenario),
        ("AGENTCONFORM_CASE", case),
        ("AGENTCONFORM_SUITE", suite),
    ];
    let mut cmd = driver_command(&command, &vars, &input_path);
    let mut child = cmd.spawn().map_err(|e| {
        crate::case::Stop::Skip(format!("cannot start the client driver {command:?}: {e}"))
    })?;
    let pid = child.id();
    let cap = client.max_output_bytes;
    let out = child.stdout.take().map(|o| tokio::spawn(capped(o, cap)));
    let err = child.stderr.take().map(|e| tokio::spawn(capped(e, cap)));
    let began = Instant::now();
    let exit = wait_driver(&mut child, began, first, &client).await;
    let took = began.elapsed();
    end_group(pid).await;
    let _ = child.wait().await;
    let (stdout, out_cut) = collected(out).await;
    let (stderr, err_cut) = collected(err).await;
    let _ = std::fs::remove_dir_all(&dir);
    let run = DriverRun {
        lines: stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l.trim()).ok())
            .collect(),
        exchanges: Vec::new(),
        outside: Vec::new(),
        frames: Vec::new(),
        exit,
        took,
        stdout,
        stderr,
    };
    note_output(ctx, &run, (out_cut, err_cut), cap);
    Ok(run)
}

/// The driver's command line, run by `sh -c` in a process group of its own, with
/// the scenario's variables and its input file, standard input closed and its
/// output piped.
fn driver_command(
    command: &str,
    vars: &[(&str, &str)],
    input_path: &std::path::Path,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.env("AGENTCONFORM_INPUT", input_path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// What a pipe's reader kept (and whether it cut it), waiting for it at most 2 s.
async fn collected(h: Option<tokio::task::JoinHandle<(Vec<u8>, bool)>>) -> (String, bool) {
    match h {
        Some(h) => match tokio::time::timeout(Duration::from_secs(2), h).await {
            Ok(Ok((b, cut))) => (String::from_utf8_lossy(&b).into_owned(), cut),
            _ => (String::new(), false),
        },
        None => (String::new(), false),
    }
}

/// Notes how the driver ended and what it printed (clipped), and where its output
/// was cut at `cap` bytes.
fn note_output(ctx: &mut Ctx, run: &DriverRun, (out_cut, err_cut): (bool, bool), cap: usize) {
    let cut = match (out_cut, err_cut) {
        (false, false) => String::new(),
        (true, false) => format!(" (its standard output was cut at {cap} bytes)"),
        (false, true) => format!(" (its standard error was cut at {cap} bytes)"),
        (true, true) => format!(" (its output was cut at {cap} bytes)"),
    };
    ctx.note(format!(
        "{}{cut}; stdout: {}{}",
        run.ended(),
        crate::finding::clipped(run.stdout.trim(), 600),
        if run.stderr.trim().is_empty() {
            String::new()
        } else {
            format!(
                "; stderr: {}",
                crate::finding::clipped(run.stderr.trim(), 600)
            )
        }
    ));
}
