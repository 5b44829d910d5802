//! `agentconform proxy`: stands between a real client and a real server, forwards
//! every HTTP request and reply (method, path and query, status, headers, body) and
//! every WebSocket frame unchanged, and judges both directions with the suite's own
//! rules ([`judge`]): the server's replies and frames with the reply rules of the
//! server role (`Suite::reread`), the client's messages and frames with the rules of
//! the client role (`Suite::client_message`). Each finding is attributed to the side
//! whose bytes it is about (`<suite>/proxy:server` or `<suite>/proxy:client`).
//!
//! - [`http`]: one request, its reply; every header passes on but those of one
//!   connection.
//! - [`ws`]: an upgrade is first made upstream (a refusal passes back as it came),
//!   then every frame is relayed both ways until either side closes or the proxy
//!   stops.
//!
//! Bounded: at most [`IN_FLIGHT`] HTTP exchanges and [`SOCKETS`] WebSocket
//! connections at once; a request body past the cap is refused with 413, a reply
//! body past it answered with 502 and recorded as a transport finding of the server;
//! a frame past it ends its connection; at most [`MAX_KEPT`] exchanges and frames,
//! and [`KEPT_BYTES`] of their bodies, are kept for judging (the rest are forwarded
//! and counted). Every upstream
//! exchange, connect and send has the profile's deadline. HTTP bodies stream
//! through as they come ([`stream`]); only tamper mode, which changes whole
//! messages, reads them whole (up to the cap) first.

mod http;
mod judge;
mod stream;
pub mod tamper;
mod ws;

pub use judge::judge;

use crate::exchange::Exchange;
use crate::script::RunShared;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Headers of one connection, not passed on (RFC 9110 §7.6.1), and those the
/// forwarding sets itself.
pub(crate) const HOP_BY_HOP: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// A message's Content-Type.
fn type_of(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from)
}

/// Every header of one side but those of its own connection.
fn passed_on(headers: &axum::http::HeaderMap) -> axum::http::HeaderMap {
    let mut out = axum::http::HeaderMap::new();
    for (name, value) in headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// Exchanges and frames kept for judging; later ones are forwarded and counted only.
pub const MAX_KEPT: usize = 10_000;

/// The bytes of bodies and frames kept for judging, all told; past them, messages
/// are forwarded and counted only.
pub const KEPT_BYTES: usize = 8 << 20;

/// Exchanges forwarded at once (each holding at most two bodies of the cap); the
/// others wait their turn.
pub const IN_FLIGHT: usize = 8;

/// WebSocket connections relayed at once (each holding at most one frame of the cap
/// each way); a further upgrade waits its turn, up to the deadline.
pub const SOCKETS: usize = 8;

/// One HTTP exchange through the proxy: what the client sent and what the server
/// answered, or why the proxy answered in its place.
#[derive(Debug, Clone)]
pub struct Seen {
    pub exchange: Exchange,
    /// The Content-Type of the server's reply.
    pub reply_type: Option<String>,
    /// Why the server's reply did not come through (unreachable, timeout, too large).
    pub failed: Option<(&'static str, String)>,
    /// What tamper mode did to the request or the reply.
    pub changed: Option<Changed>,
    /// The request, the reply, kept only in part (past the cap, or a side that
    /// failed or left midway): that side is not judged.
    pub cut: (bool, bool),
    pub at_ms: u64,
    /// When the proxy took the request (the rules of a conversation's expiry).
    pub sent_at: time::OffsetDateTime,
}

/// A message the tamper applies to: changed, or passed untouched as the control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Passed as it came (the tamper was not armed yet).
    pub control: bool,
    /// What the other side got: the path, Content-Type and body (the changed ones;
    /// for a control, the message's own).
    pub path: String,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// One event of a relayed WebSocket connection.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The connection's number (from 1, in the order of the upgrades).
    pub conn: usize,
    /// The path and query the client upgraded on.
    pub path: String,
    pub what: FrameWhat,
    /// What tamper mode did to the message.
    pub changed: Option<Changed>,
    pub at_ms: u64,
    /// When the proxy took it.
    pub sent_at: time::OffsetDateTime,
}

/// What happened on a relayed connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameWhat {
    /// The server took the upgrade.
    Opened,
    /// The server refused the upgrade with this status and body (passed back).
    Refused(u16, Vec<u8>),
    /// A text or binary message of the client.
    Client(Vec<u8>),
    /// A text or binary message of the server.
    Server(Vec<u8>),
    /// A side closed (true: the client), with the code it gave.
    Closed(bool, Option<u16>),
    /// The server could not be reached or read (a kind, the words).
    ServerFailed(&'static str, String),
    /// The client's side ended without a close, or sent past the cap.
    ClientFailed(String),
}

/// What went through the proxy, in order.
#[derive(Debug, Clone)]
pub enum Passed {
    Http(Box<Seen>),
    Frame(Frame),
}

/// What was kept, its bytes, and how many more went through.
#[derive(Default)]
struct Kept {
    passed: Vec<Passed>,
    bytes: usize,
    extra: u64,
}

impl Passed {
    /// The bytes of its bodies or frame.
    fn size(&self) -> usize {
        match self {
            Passed::Http(s) => s.exchange.received.len() + s.exchange.answered.len(),
            Passed::Frame(f) => match &f.what {
                FrameWhat::Client(b) | FrameWhat::Server(b) | FrameWhat::Refused(_, b) => b.len(),
                _ => 0,
            },
        }
    }
}

/// How the proxy reaches the server and bounds itself.
#[derive(Clone)]
pub struct Setup {
    pub http: reqwest::Client,
    /// Whom `wss://` upstreams are trusted by.
    pub tls: crate::drive::Tls,
    /// The most bytes of one body or frame.
    pub cap: usize,
    /// The deadline of each upstream exchange, connect and send.
    pub timeout: Duration,
    /// Listen over TLS (`https://`, `wss://`) with this certificate.
    pub identity: Option<reference_impl::serve::TlsIdentity>,
    /// Tamper mode: the change applied in flight, and whether it arms itself after
    /// the first message it applies to (else [`Proxy::arm`] arms it).
    pub tamper: Option<(crate::tamper::Tamper, bool)>,
}

impl Setup {
    /// The run's HTTP client and trust, the profile's cap and deadline, plain.
    pub fn of(shared: &RunShared) -> Setup {
        let t = &shared.profile.timing;
        Setup {
            http: shared.http.clone(),
            tls: shared.tls.clone(),
            cap: t.max_response_bytes,
            timeout: Duration::from_millis(t.case_timeout_ms),
            identity: None,
            tamper: None,
        }
    }
}

/// The state the forwarding tasks share.
#[derive(Clone)]
struct Forwarder {
    /// The upstream's base for HTTP (`http(s)://…`) and for WebSocket (`ws(s)://…`).
    http_base: String,
    ws_base: String,
    setup: Setup,
    started: Instant,
    kept: Arc<Mutex<Kept>>,
    in_flight: Arc<tokio::sync::Semaphore>,
    sockets: Arc<tokio::sync::Semaphore>,
    /// Connections so far (numbers the relayed ones).
    conns: Arc<std::sync::atomic::AtomicUsize>,
    /// Set when the proxy stops: the relays end.
    stopping: tokio::sync::watch::Receiver<bool>,
    relays: Arc<Mutex<tokio::task::JoinSet<()>>>,
    first: Arc<OnceLock<Instant>>,
    /// Tamper mode armed: the messages it applies to are changed from now on.
    armed: Arc<std::sync::atomic::AtomicBool>,
    /// Messages changed so far.
    changes: Arc<std::sync::atomic::AtomicU64>,
}

impl Forwarder {
    fn record(&self, p: Passed) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let size = p.size();
        if kept.passed.len() < MAX_KEPT && kept.bytes + size <= KEPT_BYTES {
            kept.bytes += size;
            kept.passed.push(p);
        } else {
            kept.extra += 1;
        }
    }

    fn at_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Tamper mode on one message of `side`: what to pass on instead, and the
    /// record of it; `None` when no tamper applies (the message passes as it came).
    fn tamper(
        &self,
        side: crate::tamper::Changes,
        mut m: crate::tamper::InFlight,
    ) -> Option<Changed> {
        use std::sync::atomic::Ordering;
        let (t, auto_arm) = self.setup.tamper.as_ref()?;
        if t.changes != side {
            return None;
        }
        let (path, content_type, body) = (m.path.clone(), m.content_type.clone(), m.body.clone());
        if !(t.apply)(&mut m) {
            return None;
        }
        if self.armed.load(Ordering::Relaxed) {
            self.changes.fetch_add(1, Ordering::Relaxed);
            return Some(Changed {
                control: false,
                path: m.path,
                content_type: m.content_type,
                body: m.body,
            });
        }
        if *auto_arm {
            self.armed.store(true, Ordering::Relaxed);
        }
        Some(Changed {
            control: true,
            path,
            content_type,
            body,
        })
    }
}

/// A listening proxy.
pub struct Proxy {
    running: reference_impl::serve::Running,
    fwd: Forwarder,
    stop: tokio::sync::watch::Sender<bool>,
    pub url: String,
}

/// The upstream's bases for HTTP and for WebSocket, from either form of its URL.
fn bases(upstream: &str) -> Result<(String, String), String> {
    let base = upstream.trim_end_matches('/');
    let pairs = [
        ("http://", "ws://"),
        ("https://", "wss://"),
        ("ws://", "http://"),
        ("wss://", "https://"),
    ];
    for (i, (from, to)) in pairs.iter().enumerate() {
        if let Some(rest) = base.strip_prefix(from) {
            let other = format!("{to}{rest}");
            return Ok(if i < 2 {
                (base.to_string(), other)
            } else {
                (other, base.to_string())
            });
        }
    }
    Err(format!(
        "the upstream {upstream:?} is not an http://, https://, ws:// or wss:// URL"
    ))
}

impl Proxy {
    /// Starts a proxy on `listen` (loopback) forwarding to `upstream` (any of
    /// `http(s)://`, `ws(s)://`: both bindings are forwarded to the same host).
    pub async fn start(listen: &str, upstream: &str, setup: Setup) -> Result<Proxy, String> {
        let (http_base, ws_base) = bases(upstream)?;
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let identity = setup.identity.clone();
        let fwd = Forwarder {
            http_base,
            ws_base,
            setup,
            started: Instant::now(),
            kept: Arc::default(),
            in_flight: Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT)),
            sockets: Arc::new(tokio::sync::Semaphore::new(SOCKETS)),
            conns: Arc::default(),
            stopping,
            relays: Arc::default(),
            first: Arc::default(),
            armed: Arc::default(),
            changes: Arc::default(),
        };
        let router = axum::Router::new()
            .fallback(http::forward)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(fwd.clone());
        let running = match &identity {
            Some(id) => reference_impl::serve::spawn_tls(listen, router, id).await,
            None => reference_impl::serve::spawn(listen, router).await,
        }
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let scheme = if identity.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", running.addr);
        Ok(Proxy {
            running,
            fwd,
            stop,
            url,
        })
    }

    /// When the first request came (a client driver's deadline counts from it).
    pub fn first(&self) -> &OnceLock<Instant> {
        &self.fwd.first
    }

    /// Arms tamper mode: the messages its change applies to are changed from now
    /// on (those before passed untouched, as the control).
    pub fn arm(&self) {
        self.fwd
            .armed
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many messages tamper mode has changed so far.
    pub fn changes(&self) -> u64 {
        self.fwd.changes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The proxy's URL for its WebSocket binding (`ws://` or `wss://`).
    pub fn ws_url(&self) -> String {
        self.url.replacen("http", "ws", 1)
    }

    /// Stops listening and relaying; what was kept, and how many more went through.
    pub async fn stop(self) -> (Vec<Passed>, u64) {
        let _ = self.stop.send(true);
        self.running.stop().await;
        let mut relays =
            std::mem::take(&mut *self.fwd.relays.lock().unwrap_or_else(|p| p.into_inner()));
        // Each relay ends at the stop signal; the deadline only guards a send that
        // hangs past its own.
        let _ = tokio::time::timeout(self.fwd.setup.timeout * 2, async {
            while relays.join_next().await.is_some() {}
        })
        .await;
        relays.abort_all();
        let kept = std::mem::take(&mut *self.fwd.kept.lock().unwrap_or_else(|p| p.into_inner()));
        (kept.passed, kept.extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_bases_from_either_url() {
        assert_eq!(
            bases("http://127.0.0.1:1/").unwrap(),
            (
                "http://127.0.0.1:1".to_string(),
                "ws://127.0.0.1:1".to_string()
            )
        );
        assert_eq!(
            bases("wss://h:2/x").unwrap(),
            ("https://h:2/x".to_string(), "wss://h:2/x".to_string())
        );
        assert!(bases("ftp://h").is_err());
    }
}
