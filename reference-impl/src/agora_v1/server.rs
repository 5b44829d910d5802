//! HTTP and WebSocket bindings of the agora-v1 reference agent (target profile):
//! `POST {url}` with one envelope, the reply envelope in the body with HTTP status
//! 200 or the ERROR code; `GET {url}` upgraded to a WebSocket, one envelope per text
//! frame, replies on the same socket.

use super::agent::Agent;
use axum::body::{to_bytes, Body};
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The router serving `agent` at `/`.
pub fn router(agent: Arc<Agent>) -> Router {
    Router::new()
        .route("/", get(ws_upgrade).post(post_envelope))
        .with_state(agent)
}

fn json_response(status: u16, body: Vec<u8>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn post_envelope(State(agent): State<Arc<Agent>>, body: Body) -> Response {
    let limit = agent.config().max_message_bytes;
    let reply = match to_bytes(body, limit).await {
        Ok(bytes) => {
            let a = agent.clone();
            // Signature checks are CPU work; keep them off the I/O threads.
            match tokio::task::spawn_blocking(move || a.handle(&bytes)).await {
                Ok(r) => r,
                Err(_) => agent.too_large(),
            }
        }
        Err(_) => agent.too_large(),
    };
    json_response(reply.status, reply.body)
}

async fn ws_upgrade(State(agent): State<Arc<Agent>>, ws: WebSocketUpgrade) -> Response {
    let limit = agent.config().max_message_bytes;
    ws.max_message_size(limit)
        .max_frame_size(limit)
        .read_buffer_size(crate::wire::WS_READ_BUFFER_BYTES)
        .on_upgrade(move |socket| ws_session(agent, socket))
}

async fn ws_session(agent: Arc<Agent>, mut socket: WebSocket) {
    while let Some(Ok(msg)) = socket.recv().await {
        let bytes = match msg {
            Message::Text(t) => t.as_bytes().to_vec(),
            Message::Binary(b) => b.to_vec(),
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        let a = agent.clone();
        let reply = match tokio::task::spawn_blocking(move || a.handle_frame(&bytes)).await {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break,
        };
        let text = String::from_utf8_lossy(&reply.body).into_owned();
        if socket.send(Message::Text(text.into())).await.is_err() {
            break;
        }
    }
}
