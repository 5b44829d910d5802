//! One HTTP exchange through the proxy; an upgrade to WebSocket goes to [`super::ws`].

use super::{passed_on, type_of, Changed, Forwarder, Passed, Seen, HOP_BY_HOP};
use crate::exchange::Exchange;
use crate::tamper::{Changes, InFlight};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use std::time::Instant;

/// Whether a request asks to upgrade to WebSocket.
fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Forwards one request and records it: streamed ([`super::stream`]), or read
/// whole in tamper mode; an upgrade is relayed instead.
pub(super) async fn forward(State(fwd): State<Forwarder>, req: Request) -> Response {
    let _ = fwd.first.set(Instant::now());
    let sent_at = time::OffsetDateTime::now_utc();
    if is_upgrade(req.headers()) {
        return super::ws::upgrade(fwd, req).await;
    }
    // The semaphore is never closed, so acquiring it cannot fail.
    let Ok(turn) = fwd.in_flight.clone().acquire_owned().await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let (parts, body) = req.into_parts();
    if fwd.setup.tamper.is_none() {
        let path = parts
            .uri
            .path_and_query()
            .map_or("/".to_string(), |p| p.as_str().to_string());
        return super::stream::exchange(fwd, parts, body, path, sent_at, turn).await;
    }
    let response = whole(&fwd, parts, body, sent_at).await;
    drop(turn);
    response
}

/// Tamper mode: the request read whole (up to the cap), changed or not, sent on;
/// the reply read whole, changed or not, passed back; recorded.
async fn whole(
    fwd: &Forwarder,
    parts: axum::http::request::Parts,
    body: axum::body::Body,
    sent_at: time::OffsetDateTime,
) -> Response {
    let Ok(body) = axum::body::to_bytes(body, fwd.setup.cap).await else {
        let why = format!(
            "agentconform proxy: the request body passes {} bytes",
            fwd.setup.cap
        );
        return (StatusCode::PAYLOAD_TOO_LARGE, why).into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let content_type = type_of(&parts.headers);
    let asked = fwd.tamper(
        Changes::Request,
        InFlight {
            method: parts.method.as_str(),
            path: path.clone(),
            request: &[],
            content_type: content_type.clone(),
            body: body.to_vec(),
        },
    );
    let (status, mut reply_headers, answered, failed) =
        exchange(fwd, &parts, &path, &body, asked.as_ref()).await;
    let reply_type = type_of(&reply_headers);
    let told = match (&failed, &asked) {
        (None, None) => fwd.tamper(
            Changes::Reply,
            InFlight {
                method: parts.method.as_str(),
                path: path.clone(),
                request: &body,
                content_type: reply_type.clone(),
                body: answered.clone(),
            },
        ),
        _ => None,
    };
    // The client gets the changed reply; the record keeps the server's own.
    let sent = match told.as_ref().filter(|c| !c.control) {
        Some(c) => {
            set_type(&mut reply_headers, c.content_type.as_deref());
            c.body.clone()
        }
        None => answered.clone(),
    };
    fwd.record(Passed::Http(Box::new(Seen {
        exchange: Exchange {
            method: parts.method.to_string(),
            path,
            content_type,
            received: body.to_vec(),
            answered,
            status,
            written: None,
        },
        reply_type,
        failed,
        changed: asked.or(told),
        cut: (false, false),
        at_ms: fwd.at_ms(),
        sent_at,
    })));
    let mut r = Response::new(axum::body::Body::from(sent));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    *r.headers_mut() = reply_headers;
    r
}

/// The server's status, headers, body and failure for the request (as tamper
/// mode changed it), or the proxy's 502 with why.
async fn exchange(
    fwd: &Forwarder,
    parts: &axum::http::request::Parts,
    path: &str,
    body: &Bytes,
    asked: Option<&Changed>,
) -> (u16, HeaderMap, Vec<u8>, Option<(&'static str, String)>) {
    let reply = match asked.filter(|c| !c.control) {
        Some(c) => {
            let mut headers = parts.headers.clone();
            set_type(&mut headers, c.content_type.as_deref());
            let body = Bytes::from(c.body.clone());
            upstream_reply(fwd, &parts.method, &c.path, &headers, &body).await
        }
        None => upstream_reply(fwd, &parts.method, path, &parts.headers, body).await,
    };
    match reply {
        Ok((s, h, b)) => (s, h, b, None),
        Err((kind, why)) => {
            let mut h = HeaderMap::new();
            set_type(&mut h, Some("text/plain; charset=utf-8"));
            (502, h, why.clone().into_bytes(), Some((kind, why)))
        }
    }
}

/// Sets, or with `None` removes, a Content-Type.
fn set_type(headers: &mut HeaderMap, value: Option<&str>) {
    match value.and_then(|v| header::HeaderValue::from_str(v).ok()) {
        Some(v) => {
            headers.insert(header::CONTENT_TYPE, v);
        }
        None => {
            headers.remove(header::CONTENT_TYPE);
        }
    }
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
    let url = format!("{}{path}", fwd.http_base);
    let (cap, timeout) = (fwd.setup.cap, fwd.setup.timeout);
    let mut req = fwd
        .setup
        .http
        .request(method.clone(), &url)
        .timeout(timeout)
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
    let reply_headers = passed_on(resp.headers());
    let mut out = Vec::new();
    loop {
        match tokio::time::timeout(timeout, resp.chunk()).await {
            Ok(Ok(Some(c))) if out.len() + c.len() <= cap => out.extend_from_slice(&c),
            Ok(Ok(Some(_))) => {
                let why = format!("agentconform proxy: the reply of {url} passes {cap} bytes");
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
