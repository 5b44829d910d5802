//! `agentconform proxy`: stands between a real client and a real server over HTTP,
//! forwards every request and reply unchanged (method, path and query, status,
//! headers, body), and judges both directions with the suite's own rules:
//! the server's replies with the reply rules of the server role (`Suite::reread`),
//! the client's messages with the rules of the client role (`Suite::client_message`).
//! Every header passes on but those of one connection (`HOP_BY_HOP`).
//! Each finding is attributed to the side whose bytes it is about (`<suite>/proxy:server`
//! or `<suite>/proxy:client` in the report).
//!
//! Bounded: at most [`IN_FLIGHT`] exchanges are forwarded at once; a request body past
//! the cap is refused with 413, a reply body past it answered with 502 and recorded
//! as a transport finding of the server; at most [`MAX_EXCHANGES`] exchanges are kept
//! for judging (the rest are forwarded and counted). Every upstream exchange has the
//! profile's deadline. Bodies are read whole (up to the cap) before they are passed
//! on. WebSocket bindings are not forwarded yet.

use crate::case::{CaseResult, Entry, Level, Met, Outcome, Recorded, Suite};
use crate::counterparty::Exchange;
use crate::drive::Transport;
use crate::finding::Finding;
use crate::runner::{merge_findings, RunOutput};
use crate::script::{Ctx, RunShared};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Exchanges kept for judging; later ones are forwarded and counted only.
pub const MAX_EXCHANGES: usize = 10_000;

/// Headers of one connection, not passed on (RFC 9110 §7.6.1), and those the
/// forwarding sets itself.
const HOP_BY_HOP: &[&str] = &[
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

/// Exchanges forwarded at once (each holding at most two bodies of the cap); the
/// others wait their turn.
pub const IN_FLIGHT: usize = 8;

/// One exchange through the proxy: what the client sent and what the server
/// answered, or why the proxy answered in its place.
#[derive(Debug, Clone)]
pub struct Seen {
    pub exchange: Exchange,
    /// The Content-Type of the server's reply.
    pub reply_type: Option<String>,
    /// Why the server's reply did not come through (unreachable, timeout, too large).
    pub failed: Option<(&'static str, String)>,
    pub at_ms: u64,
}

#[derive(Clone)]
struct Forwarder {
    upstream: String,
    http: reqwest::Client,
    cap: usize,
    timeout: Duration,
    started: Instant,
    seen: Arc<Mutex<(Vec<Seen>, u64)>>,
    in_flight: Arc<tokio::sync::Semaphore>,
    first: Arc<OnceLock<Instant>>,
}

/// A listening proxy.
pub struct Proxy {
    running: reference_impl::serve::Running,
    seen: Arc<Mutex<(Vec<Seen>, u64)>>,
    first: Arc<OnceLock<Instant>>,
    pub url: String,
}

impl Proxy {
    /// Starts a proxy on `listen` (loopback) forwarding to `upstream`, with bodies of
    /// at most `cap` bytes each way and `timeout` per upstream exchange.
    pub async fn start(
        listen: &str,
        upstream: &str,
        http: reqwest::Client,
        cap: usize,
        timeout: Duration,
    ) -> Result<Proxy, String> {
        let seen = Arc::new(Mutex::new((Vec::new(), 0)));
        let first = Arc::new(OnceLock::new());
        let fwd = Forwarder {
            upstream: upstream.trim_end_matches('/').to_string(),
            http,
            cap,
            timeout,
            started: Instant::now(),
            seen: seen.clone(),
            in_flight: Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT)),
            first: first.clone(),
        };
        let router = axum::Router::new()
            .fallback(forward)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(fwd);
        let running = reference_impl::serve::spawn(listen, router)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let url = format!("http://{}", running.addr);
        Ok(Proxy {
            running,
            seen,
            first,
            url,
        })
    }

    /// When the first request came (a client driver's deadline counts from it).
    pub fn first(&self) -> &OnceLock<Instant> {
        &self.first
    }

    /// Stops listening; the exchanges kept, and how many more went through.
    pub async fn stop(self) -> (Vec<Seen>, u64) {
        self.running.stop().await;
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Forwards one request and records it.
async fn forward(
    State(fwd): State<Forwarder>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let _ = fwd.first.set(Instant::now());
    // The semaphore is never closed, so acquiring it cannot fail.
    let Ok(_turn) = fwd.in_flight.acquire().await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let Ok(body) = axum::body::to_bytes(body, fwd.cap).await else {
        let why = format!(
            "agentconform proxy: the request body passes {} bytes",
            fwd.cap
        );
        return (StatusCode::PAYLOAD_TOO_LARGE, why).into_response();
    };
    let path = uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let reply = upstream_reply(&fwd, &method, &path, &headers, &body).await;
    let (status, reply_headers, answered, failed) = match reply {
        Ok((s, h, b)) => (s, h, b, None),
        Err((kind, why)) => {
            let mut h = HeaderMap::new();
            h.insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            (502, h, why.clone().into_bytes(), Some((kind, why)))
        }
    };
    let reply_type = reply_headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    record(
        &fwd,
        Seen {
            exchange: Exchange {
                method: method.to_string(),
                path,
                content_type,
                received: body.to_vec(),
                answered: answered.clone(),
                status,
                written: None,
            },
            reply_type,
            failed,
            at_ms: fwd.started.elapsed().as_millis() as u64,
        },
    );
    let mut r = Response::new(axum::body::Body::from(answered));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    *r.headers_mut() = reply_headers;
    r
}

/// The upstream's status, headers and body (read up to the cap), or the kind of
/// failure and its words.
async fn upstream_reply(
    fwd: &Forwarder,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(u16, HeaderMap, Vec<u8>), (&'static str, String)> {
    let url = format!("{}{path}", fwd.upstream);
    let mut req = fwd
        .http
        .request(method.clone(), &url)
        .timeout(fwd.timeout)
        .body(body.clone());
    // Every header of the client but those of its own connection to the proxy.
    for (name, value) in headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            req = req.header(name, value);
        }
    }
    let mut resp = req.send().await.map_err(|e| {
        let kind = if e.is_timeout() {
            "timeout"
        } else {
            "unreachable"
        };
        (kind, format!("agentconform proxy: {url}: {e}"))
    })?;
    let status = resp.status().as_u16();
    let mut reply_headers = HeaderMap::new();
    for (name, value) in resp.headers() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            reply_headers.append(name.clone(), value.clone());
        }
    }
    let mut out = Vec::new();
    loop {
        match tokio::time::timeout(fwd.timeout, resp.chunk()).await {
            Ok(Ok(Some(c))) if out.len() + c.len() <= fwd.cap => out.extend_from_slice(&c),
            Ok(Ok(Some(_))) => {
                let why = format!(
                    "agentconform proxy: the reply of {url} passes {} bytes",
                    fwd.cap
                );
                return Err(("too-large", why));
            }
            Ok(Ok(None)) => return Ok((status, reply_headers, out)),
            Ok(Err(e)) => return Err(("reset", format!("agentconform proxy: {url}: {e}"))),
            Err(_) => {
                let why = format!("agentconform proxy: {url}: the reply body stalled");
                return Err(("timeout", why));
            }
        }
    }
}

fn record(fwd: &Forwarder, seen: Seen) {
    let mut kept = fwd.seen.lock().unwrap_or_else(|p| p.into_inner());
    if kept.0.len() < MAX_EXCHANGES {
        kept.0.push(seen);
    } else {
        kept.1 += 1;
    }
}

/// Judges what went through the proxy: the server's replies by the server role's
/// reply rules, the client's messages by the client role's; one result per side,
/// findings merged as a run merges them.
pub fn judge(
    suite: &'static Suite,
    shared: Arc<RunShared>,
    upstream: &str,
    seen: &[Seen],
) -> RunOutput {
    let started = Instant::now();
    let mut server = Ctx::new(shared.clone(), Transport::Http, upstream);
    server.suite_id = Some(suite.id);
    let mut client = Ctx::new(shared, Transport::Http, upstream);
    client.suite_id = Some(suite.id);
    for s in seen {
        match &s.failed {
            Some((kind, why)) => server.finding(Finding::new(
                format!("{}/transport:{kind}", suite.id),
                &[],
                why.clone(),
            )),
            None => (suite.reread)(
                &mut server,
                &Recorded {
                    body: s.exchange.answered.clone(),
                    http_status: Some(s.exchange.status),
                    content_type: s.reply_type.clone(),
                },
            ),
        }
        if let Some(judge_client) = suite.client_message {
            judge_client(&mut client, &s.exchange);
        }
    }
    let took = started.elapsed();
    // Each side is merged on its own: a key both sides break (a signature that does
    // not verify) is two deviations, one of each side.
    let server_met = server.take_findings();
    let client_met = client.take_findings();
    let mut server = [side(suite, "server", server_met, transcript(seen, true))];
    let mut client = [side(suite, "client", client_met, transcript(seen, false))];
    let mut findings = merge_findings(&mut server);
    findings.extend(merge_findings(&mut client));
    let results: Vec<CaseResult> = server.into_iter().chain(client).collect();
    RunOutput {
        results,
        findings,
        untestable: Vec::new(),
        duration: took,
    }
}

/// One side's result: its findings, its messages as the transcript.
fn side(suite: &Suite, who: &str, met: Vec<Met>, transcript: Vec<Entry>) -> CaseResult {
    let met: Vec<Met> = met
        .into_iter()
        .map(|m| Met {
            finding: m.finding,
            own: true,
        })
        .collect();
    CaseResult {
        id: format!("{}/proxy:{who}", suite.id),
        suite: suite.id.to_string(),
        title: format!("the {who}'s messages through the proxy, by the {who} role's rules"),
        requirements: Vec::new(),
        level: Level::Must,
        transport: Transport::Http,
        outcome: crate::runner::own_outcome(Outcome::Pass, &met),
        message: String::new(),
        findings: met.iter().map(|m| m.finding.key.clone()).collect(),
        reproduce: None,
        duration_ms: 0,
        transcript,
        met,
        control_case: None,
    }
}

/// The side's messages, at most 400, each cut at 8 KiB.
fn transcript(seen: &[Seen], server: bool) -> Vec<Entry> {
    seen.iter()
        .take(400)
        .map(|s| {
            let x = &s.exchange;
            let (bytes, kind) = if server {
                (&x.answered, "recv")
            } else {
                (&x.received, "send")
            };
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(8192)]);
            Entry {
                at_ms: s.at_ms,
                kind,
                text: format!("{} {}\n{text}", x.method, x.path),
                http_status: server.then_some(x.status),
            }
        })
        .collect()
}
