//! An HTTP exchange streamed through the proxy (tamper mode off): each body is
//! passed on chunk by chunk as it comes, unchanged and whole, and a copy of at most
//! the cap kept for judging. A reply past the cap still reaches the client; the
//! server's transport finding says it could not be judged. Every read of either
//! side has the profile's deadline, and the whole upstream exchange too.

use super::{Forwarder, Passed, Seen, HOP_BY_HOP};
use crate::exchange::Exchange;
use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

/// Chunks in flight each way, between the reading side and the writing one.
const CHUNKS: usize = 4;

type Chunk = Result<Bytes, std::io::Error>;

/// A body fed by a channel: what one side sends, as the other side reads it, and
/// its length when its sender gave one (Content-Length): passed on, the body keeps
/// its framing rather than turn chunked.
pub(super) struct Channel(mpsc::Receiver<Chunk>, Option<u64>);

impl http_body::Body for Channel {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|r| r.map(http_body::Frame::data)))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self.1 {
            Some(n) => http_body::SizeHint::with_exact(n),
            None => http_body::SizeHint::default(),
        }
    }
}

/// A body's copy for judging: its first bytes up to the cap, whether more came
/// (`over`), and whether the copy is not the whole body (`cut`: past the cap, or
/// a side that failed or left midway).
#[derive(Default)]
pub(super) struct Capture {
    bytes: Vec<u8>,
    over: bool,
    cut: bool,
}

impl Capture {
    fn add(&mut self, chunk: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.bytes.len());
        self.over |= chunk.len() > room;
        self.cut |= self.over;
        self.bytes
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
}

/// What the recording of a streamed exchange needs once its reply has ended.
struct Pending {
    method: String,
    path: String,
    content_type: Option<String>,
    reply_type: Option<String>,
    status: u16,
    request: Arc<Mutex<Capture>>,
    sent_at: time::OffsetDateTime,
}

/// Streams one exchange to the server and its reply back; records it when the
/// reply has ended (or failed, or the client left).
pub(super) async fn exchange(
    fwd: Forwarder,
    parts: axum::http::request::Parts,
    body: axum::body::Body,
    path: String,
    sent_at: time::OffsetDateTime,
    turn: OwnedSemaphorePermit,
) -> Response {
    let (cap, timeout) = (fwd.setup.cap, fwd.setup.timeout);
    let request = Arc::new(Mutex::new(Capture::default()));
    let (req_tx, req_rx) = mpsc::channel(CHUNKS);
    // The body's length as the client framed it: its Content-Length, or none at all
    // (a request without a body stays without one, rather than turn chunked).
    let request_length = http_body::Body::size_hint(&body).exact();
    let pump = tokio::spawn(pump_request(body, req_tx, request.clone(), cap, timeout));
    let url = format!("{}{path}", fwd.http_base);
    let mut req = fwd
        .setup
        .http
        .request(parts.method.clone(), &url)
        .timeout(timeout);
    // A request that came with no body and no Content-Length goes on so: a body of
    // length 0 would add one.
    let bodiless = request_length == Some(0) && !parts.headers.contains_key(header::CONTENT_LENGTH);
    if !bodiless {
        req = req.body(reqwest::Body::wrap(Channel(req_rx, request_length)));
    }
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            req = req.header(name, value);
        }
    }
    let mut pending = Pending {
        method: parts.method.to_string(),
        path,
        content_type: super::type_of(&parts.headers),
        reply_type: None,
        status: 502,
        request,
        sent_at,
    };
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => return upstream_failed(&fwd, pending, pump, e, &url).await,
    };
    pending.status = resp.status().as_u16();
    let reply_length = resp.content_length();
    let headers = super::passed_on(resp.headers());
    pending.reply_type = super::type_of(&headers);
    let (tx, rx) = mpsc::channel(CHUNKS);
    let status = StatusCode::from_u16(pending.status).unwrap_or(StatusCode::BAD_GATEWAY);
    tokio::spawn(async move {
        let (reply, failed) = pump_reply(resp, tx, cap, timeout, &url).await;
        record(&fwd, pending, reply, failed);
        // The exchange's turn ends with its reply.
        drop(turn);
    });
    let mut r = Response::new(axum::body::Body::new(Channel(rx, reply_length)));
    *r.status_mut() = status;
    *r.headers_mut() = headers;
    r
}

/// The exchange did not reach the server: the client's own body failed (400, no
/// fault of the server's), or the server could not be reached in time (502, its
/// transport finding).
async fn upstream_failed(
    fwd: &Forwarder,
    pending: Pending,
    pump: tokio::task::JoinHandle<Option<String>>,
    e: reqwest::Error,
    url: &str,
) -> Response {
    let plain = [(header::CONTENT_TYPE, "text/plain; charset=utf-8")];
    let client = tokio::time::timeout(fwd.setup.timeout, pump)
        .await
        .ok()
        .and_then(Result::ok)
        .flatten();
    if let Some(why) = client {
        let no_reply = Capture {
            cut: true,
            ..Capture::default()
        };
        record(fwd, pending, no_reply, None);
        let why = format!("agentconform proxy: {why}");
        return (StatusCode::BAD_REQUEST, plain, why).into_response();
    }
    let kind = if e.is_timeout() {
        "timeout"
    } else {
        "unreachable"
    };
    let why = format!("agentconform proxy: {url}: {e}");
    record(fwd, pending, Capture::default(), Some((kind, why.clone())));
    (StatusCode::BAD_GATEWAY, plain, why).into_response()
}

/// Passes the client's body on to the server as it comes, keeping its copy; why
/// the client's side failed, if it did. When the server takes no more of it (it
/// answered early, or stalls), the rest is read and dropped for at most the
/// deadline, so that a client that writes its whole body before it reads is not
/// left blocked.
async fn pump_request(
    body: axum::body::Body,
    tx: mpsc::Sender<Chunk>,
    copy: Arc<Mutex<Capture>>,
    cap: usize,
    timeout: std::time::Duration,
) -> Option<String> {
    let mut chunks = body.into_data_stream();
    let mut tx = Some(tx);
    let mut drain_until = None;
    loop {
        let why = match tokio::time::timeout(timeout, chunks.next()).await {
            Ok(Some(Ok(chunk))) => {
                copy.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .add(&chunk, cap);
                match (&tx, drain_until) {
                    (Some(to), _) => {
                        let sent = tokio::time::timeout(timeout, to.send(Ok(chunk))).await;
                        if !matches!(sent, Ok(Ok(()))) {
                            copy.lock().unwrap_or_else(|p| p.into_inner()).cut = true;
                            tx = None;
                            drain_until = Some(tokio::time::Instant::now() + timeout);
                        }
                    }
                    (None, Some(until)) if tokio::time::Instant::now() > until => return None,
                    (None, _) => {}
                }
                continue;
            }
            Ok(None) => return None,
            Ok(Some(Err(e))) => format!("the client's body failed: {e}"),
            Err(_) => format!("the client's body stalled for {} ms", timeout.as_millis()),
        };
        copy.lock().unwrap_or_else(|p| p.into_inner()).cut = true;
        if let Some(to) = tx {
            let err = Err(std::io::Error::other(why.clone()));
            let _ = tokio::time::timeout(timeout, to.send(err)).await;
        }
        return Some(why);
    }
}

/// Passes the server's body on to the client as it comes; its copy, and why it
/// did not come whole (stalled, reset) or could not be judged (past the cap, even
/// when the client left before its end).
async fn pump_reply(
    mut resp: reqwest::Response,
    tx: mpsc::Sender<Chunk>,
    cap: usize,
    timeout: std::time::Duration,
    url: &str,
) -> (Capture, Option<(&'static str, String)>) {
    let mut copy = Capture::default();
    let failed = loop {
        match tokio::time::timeout(timeout, resp.chunk()).await {
            Ok(Ok(Some(c))) => {
                copy.add(&c, cap);
                let sent = tokio::time::timeout(timeout, tx.send(Ok(c))).await;
                if !matches!(sent, Ok(Ok(()))) {
                    // The client left, or took nothing for the deadline: what
                    // came is not the whole reply.
                    copy.cut = true;
                    break None;
                }
            }
            Ok(Ok(None)) => break None,
            Ok(Err(e)) => break Some(("reset", format!("agentconform proxy: {url}: {e}"))),
            Err(_) => {
                break Some((
                    "timeout",
                    format!("agentconform proxy: {url}: the reply body stalled"),
                ))
            }
        }
    };
    if let Some((_, words)) = &failed {
        let err = Err(std::io::Error::other(words.clone()));
        let _ = tokio::time::timeout(timeout, tx.send(err)).await;
        copy.cut = true;
    }
    if copy.over {
        let why = format!(
            "agentconform proxy: the reply of {url} passes {cap} bytes: passed on as it came, judged no further"
        );
        return (copy, Some(("too-large", why)));
    }
    (copy, failed)
}

/// Records a streamed exchange once its reply has ended.
fn record(fwd: &Forwarder, p: Pending, reply: Capture, failed: Option<(&'static str, String)>) {
    let request = std::mem::take(&mut *p.request.lock().unwrap_or_else(|e| e.into_inner()));
    fwd.record(Passed::Http(Box::new(Seen {
        exchange: Exchange {
            method: p.method,
            path: p.path,
            content_type: p.content_type,
            received: request.bytes,
            answered: reply.bytes,
            status: p.status,
            written: None,
        },
        reply_type: p.reply_type,
        failed,
        changed: None,
        cut: (request.cut, reply.cut),
        at_ms: fwd.at_ms(),
        sent_at: p.sent_at,
    })));
}
