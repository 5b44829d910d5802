//! HTTP and WebSocket bindings: `POST /agentprotocol` (the reply in the body, or
//! 202 with no body for a notify; 200 unless a fault picks another status) and
//! `/agentprotocol/ws` (one message per text frame).

use super::agent::ApAgent;
use axum::body::{to_bytes, Body};
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use tokio::sync::mpsc;

async fn post_message(State(a): State<Arc<ApAgent>>, body: Body) -> Response {
    let bytes = match to_bytes(body, a.config().max_message_bytes).await {
        Ok(b) => b,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "message too large").into_response(),
    };
    match a.handle_reply(&bytes).await {
        Some(reply) => (
            StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK),
            [(header::CONTENT_TYPE, "application/json")],
            reply.body,
        )
            .into_response(),
        None => StatusCode::ACCEPTED.into_response(),
    }
}

async fn ws_upgrade(State(a): State<Arc<ApAgent>>, ws: WebSocketUpgrade) -> Response {
    let max = a.config().max_message_bytes;
    ws.max_message_size(max)
        .max_frame_size(max)
        .read_buffer_size(crate::wire::WS_READ_BUFFER_BYTES)
        .on_upgrade(move |s| session(a, s))
}

async fn session(a: Arc<ApAgent>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
    let writer = tokio::spawn(async move {
        while let Some(reply) = rx.recv().await {
            let text = String::from_utf8_lossy(&reply).into_owned();
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
    });
    while let Some(Ok(msg)) = stream.next().await {
        let bytes = match msg {
            Message::Text(t) => t.as_bytes().to_vec(),
            Message::Binary(b) => b.to_vec(),
            Message::Close(_) => break,
            _ => continue,
        };
        // Each message is handled on its own task, so a delay does not hold up others.
        let (a, tx) = (a.clone(), tx.clone());
        tokio::spawn(async move {
            if let Some(reply) = a.handle(&bytes).await {
                let _ = tx.send(reply).await;
            }
        });
    }
    drop(tx);
    let _ = writer.await;
}

/// The router: `/agentprotocol` and `/agentprotocol/ws`.
pub fn router(a: Arc<ApAgent>) -> Router {
    Router::new()
        .route("/agentprotocol", post(post_message))
        .route("/agentprotocol/ws", get(ws_upgrade))
        .with_state(a)
}
