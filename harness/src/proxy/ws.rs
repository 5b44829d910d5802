//! A WebSocket connection through the proxy: the upgrade is made upstream first (a
//! refusal goes back to the client as the server gave it), then every message is
//! relayed both ways, unchanged, until a side closes or the proxy stops.

use super::{Changed, Forwarder, Frame, FrameWhat, Passed, HOP_BY_HOP};
use crate::tamper::{Changes, InFlight};
use axum::extract::ws::{CloseFrame as AxClose, Message as AxMsg, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use std::sync::atomic::Ordering;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Upstream = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Headers the WebSocket handshake sets for itself on each hop.
const HANDSHAKE: &[&str] = &[
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "sec-websocket-accept",
];

/// Takes a client's upgrade: connects upstream on the same path with the client's
/// headers, then upgrades the client (with the subprotocol the server chose) and
/// relays; a refused or failed upstream upgrade is answered as the server did, or
/// with 502.
pub(super) async fn upgrade(fwd: Forwarder, req: Request) -> Response {
    let conn = fwd.conns.fetch_add(1, Ordering::Relaxed) + 1;
    let (mut parts, _) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let frame = |what| Frame {
        conn,
        path: path.clone(),
        what,
        changed: None,
        at_ms: fwd.at_ms(),
        sent_at: time::OffsetDateTime::now_utc(),
    };
    let Ok(upg) = WebSocketUpgrade::from_request_parts(&mut parts, &()).await else {
        return (
            StatusCode::BAD_REQUEST,
            "agentconform proxy: not a WebSocket upgrade",
        )
            .into_response();
    };
    let permit =
        match tokio::time::timeout(fwd.setup.timeout, fwd.sockets.clone().acquire_owned()).await {
            Ok(Ok(p)) => p,
            _ => {
                let why = "agentconform proxy: every relayed connection is busy";
                return (StatusCode::SERVICE_UNAVAILABLE, why).into_response();
            }
        };
    let (server, protocol) = match connect(&fwd, &path, &parts.headers).await {
        Ok(s) => s,
        Err(Refusal::Status(status, body)) => {
            fwd.record(Passed::Frame(frame(FrameWhat::Refused(
                status,
                body.clone(),
            ))));
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            return (status, body).into_response();
        }
        Err(Refusal::Failed(kind, why)) => {
            fwd.record(Passed::Frame(frame(FrameWhat::ServerFailed(
                kind,
                why.clone(),
            ))));
            return (StatusCode::BAD_GATEWAY, why).into_response();
        }
    };
    fwd.record(Passed::Frame(frame(FrameWhat::Opened)));
    let cap = fwd.setup.cap;
    let mut upg = upg
        .max_message_size(cap)
        .max_frame_size(cap)
        .read_buffer_size(reference_impl::wire::WS_READ_BUFFER_BYTES);
    if let Some(p) = protocol {
        upg = upg.protocols([p]);
    }
    upg.on_upgrade(move |client| async move {
        let relays = fwd.relays.clone();
        let mut set = relays.lock().unwrap_or_else(|p| p.into_inner());
        set.spawn(async move {
            relay(&fwd, conn, &path, client, server).await;
            drop(permit);
        });
    })
}

/// Why the upstream upgrade did not happen.
enum Refusal {
    /// The server answered the upgrade with this status and body.
    Status(u16, Vec<u8>),
    /// It could not be reached (a kind, the words).
    Failed(&'static str, String),
}

/// The upstream connection, and the subprotocol the server chose.
async fn connect(
    fwd: &Forwarder,
    path: &str,
    headers: &axum::http::HeaderMap,
) -> Result<(Upstream, Option<String>), Refusal> {
    let url = format!("{}{path}", fwd.ws_base);
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| Refusal::Failed("unreachable", format!("agentconform proxy: {url}: {e}")))?;
    for (name, value) in headers {
        let n = name.as_str();
        if !HOP_BY_HOP.contains(&n) && !HANDSHAKE.contains(&n) {
            request.headers_mut().append(name.clone(), value.clone());
        }
    }
    let cap = fwd.setup.cap;
    let config = reference_impl::wire::ws_client_config(cap);
    let connecting = tokio_tungstenite::connect_async_tls_with_config(
        request,
        Some(config),
        true,
        Some(fwd.setup.tls.connector()),
    );
    match tokio::time::timeout(fwd.setup.timeout, connecting).await {
        Ok(Ok((socket, resp))) => {
            let protocol = resp
                .headers()
                .get(header::SEC_WEBSOCKET_PROTOCOL)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(String::from);
            Ok((socket, protocol))
        }
        Ok(Err(WsError::Http(resp))) => {
            let status = resp.status().as_u16();
            let mut body = resp.into_body().unwrap_or_default();
            body.truncate(cap);
            Err(Refusal::Status(status, body))
        }
        Ok(Err(e)) => Err(Refusal::Failed(
            "unreachable",
            format!("agentconform proxy: {url}: {e}"),
        )),
        Err(_) => Err(Refusal::Failed(
            "timeout",
            format!(
                "agentconform proxy: {url}: no upgrade within {} ms",
                fwd.setup.timeout.as_millis()
            ),
        )),
    }
}

/// One side's next message, as the relay sees it.
enum Step {
    Client(Option<Result<AxMsg, axum::Error>>),
    Server(Option<Result<Message, WsError>>),
    Stop,
}

/// One relayed connection, as the record names it.
struct Link<'a> {
    fwd: &'a Forwarder,
    conn: usize,
    path: &'a str,
}

impl Link<'_> {
    fn record(&self, what: FrameWhat, changed: Option<Changed>) {
        self.fwd.record(Passed::Frame(Frame {
            conn: self.conn,
            path: self.path.to_string(),
            what,
            changed,
            at_ms: self.fwd.at_ms(),
            sent_at: time::OffsetDateTime::now_utc(),
        }))
    }

    /// Records a message of `side` (its Close sets `closed`), and gives what to
    /// pass on: the message, or tamper mode's change of it.
    fn take(&self, side: Changes, m: AxMsg, closed: &mut bool) -> AxMsg {
        let Some(what) = event(&m, side == Changes::Request) else {
            return m;
        };
        *closed |= matches!(what, FrameWhat::Closed(..));
        let changed = tampered(self.fwd, side, self.path, &what);
        let m = match changed.as_ref().filter(|c| !c.control) {
            Some(c) => as_message(&m, c.body.clone()),
            None => m,
        };
        self.record(what, changed);
        m
    }

    /// How a side's failure or end is recorded (none once a side has closed: many
    /// servers drop the connection at a Close, and that is no finding).
    fn end(&self, step: Step, closed: (bool, bool)) -> Option<FrameWhat> {
        if closed.0 || closed.1 {
            return None;
        }
        let path = self.path;
        Some(match step {
            Step::Client(Some(Err(e))) => {
                FrameWhat::ClientFailed(format!("the client's side failed: {e}"))
            }
            Step::Server(Some(Err(e))) => {
                let kind = if matches!(e, WsError::Capacity(_)) {
                    "too-large"
                } else {
                    "reset"
                };
                let why = format!("agentconform proxy: the server's side of {path} failed: {e}");
                FrameWhat::ServerFailed(kind, why)
            }
            Step::Client(None) => FrameWhat::ClientFailed("the client left without a close".into()),
            Step::Server(None) => FrameWhat::ServerFailed(
                "reset",
                format!("agentconform proxy: the server left {path} without a close"),
            ),
            Step::Client(Some(Ok(_))) | Step::Server(Some(Ok(_))) | Step::Stop => return None,
        })
    }
}

/// Relays until a side ends or the proxy stops; records every message and close.
async fn relay(fwd: &Forwarder, conn: usize, path: &str, client: WebSocket, server: Upstream) {
    let link = Link { fwd, conn, path };
    let (mut c_tx, mut c_rx) = client.split();
    let (mut s_tx, mut s_rx) = server.split();
    let mut stopping = fwd.stopping.clone();
    let timeout = fwd.setup.timeout;
    let mut closed = (false, false);
    while !(closed.0 && closed.1) {
        let step = tokio::select! {
            m = c_rx.next(), if !closed.0 => Step::Client(m),
            m = s_rx.next(), if !closed.1 => Step::Server(m),
            _ = stopping.changed() => Step::Stop,
        };
        let failed = match step {
            Step::Stop => return,
            Step::Client(Some(Ok(m))) => {
                let m = link.take(Changes::Request, m, &mut closed.0);
                let sent = tokio::time::timeout(timeout, s_tx.send(to_upstream(m))).await;
                let why = format!("agentconform proxy: cannot pass a client frame on to {path}");
                (!matches!(sent, Ok(Ok(()))) && !closed.0)
                    .then_some(FrameWhat::ServerFailed("reset", why))
            }
            Step::Server(Some(Ok(m))) => {
                let Some(m) = to_client(m) else { continue };
                let m = link.take(Changes::Reply, m, &mut closed.1);
                let sent = tokio::time::timeout(timeout, c_tx.send(m)).await;
                (!matches!(sent, Ok(Ok(()))) && !closed.1)
                    .then(|| FrameWhat::ClientFailed("the client took no more frames".into()))
            }
            ended => {
                if let Some(what) = link.end(ended, closed) {
                    link.record(what, None);
                }
                return;
            }
        };
        if let Some(what) = failed {
            link.record(what, None);
            return;
        }
    }
}

/// Tamper mode on one message (a text or binary one of `side`).
fn tampered(fwd: &Forwarder, side: Changes, path: &str, what: &FrameWhat) -> Option<Changed> {
    let (FrameWhat::Client(body) | FrameWhat::Server(body)) = what else {
        return None;
    };
    fwd.tamper(
        side,
        InFlight {
            method: "WS",
            path: path.to_string(),
            request: &[],
            content_type: None,
            body: body.clone(),
        },
    )
}

/// `body` in the kind of `like`: text when `like` is text and `body` is UTF-8.
fn as_message(like: &AxMsg, body: Vec<u8>) -> AxMsg {
    match (like, String::from_utf8(body)) {
        (AxMsg::Text(_), Ok(t)) => AxMsg::Text(t.into()),
        (_, Ok(t)) => AxMsg::Binary(t.into_bytes().into()),
        (_, Err(e)) => AxMsg::Binary(e.into_bytes().into()),
    }
}

/// What a message of the client (`client`) or the server is for the record (pings
/// and pongs are not kept).
fn event(m: &AxMsg, client: bool) -> Option<FrameWhat> {
    let data = |b: Vec<u8>| {
        if client {
            FrameWhat::Client(b)
        } else {
            FrameWhat::Server(b)
        }
    };
    match m {
        AxMsg::Text(t) => Some(data(t.as_bytes().to_vec())),
        AxMsg::Binary(b) => Some(data(b.to_vec())),
        AxMsg::Close(c) => Some(FrameWhat::Closed(client, c.as_ref().map(|c| c.code))),
        AxMsg::Ping(_) | AxMsg::Pong(_) => None,
    }
}

fn to_upstream(m: AxMsg) -> Message {
    match m {
        AxMsg::Text(t) => Message::Text(t.as_str().into()),
        AxMsg::Binary(b) => Message::Binary(b),
        AxMsg::Ping(b) => Message::Ping(b),
        AxMsg::Pong(b) => Message::Pong(b),
        AxMsg::Close(c) => Message::Close(c.map(|c| CloseFrame {
            code: CloseCode::from(c.code),
            reason: c.reason.as_str().into(),
        })),
    }
}

/// A server message as the client's side sends it (a raw frame, never read whole
/// by the library, has none).
fn to_client(m: Message) -> Option<AxMsg> {
    Some(match m {
        Message::Text(t) => AxMsg::Text(t.as_str().into()),
        Message::Binary(b) => AxMsg::Binary(b),
        Message::Ping(b) => AxMsg::Ping(b),
        Message::Pong(b) => AxMsg::Pong(b),
        Message::Close(c) => AxMsg::Close(c.map(|c| AxClose {
            code: c.code.into(),
            reason: c.reason.as_str().into(),
        })),
        Message::Frame(_) => return None,
    })
}
