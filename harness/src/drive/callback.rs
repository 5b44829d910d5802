//! The callback receiver: a loopback listener a case starts to receive results
//! POSTed by a target (chorus `callback_url`). Bodies are size-capped; the listener
//! stops when dropped.

use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use reference_impl::serve::{spawn, Running};
use std::time::Duration;
use tokio::sync::mpsc;

/// Most callbacks kept before the listener refuses more (503).
const QUEUE: usize = 64;

pub struct CallbackListener {
    pub url: String,
    rx: mpsc::Receiver<Vec<u8>>,
    _running: Running,
}

#[derive(Clone)]
struct Sink {
    tx: mpsc::Sender<Vec<u8>>,
    max_bytes: usize,
}

async fn receive(State(sink): State<Sink>, body: Body) -> StatusCode {
    match to_bytes(body, sink.max_bytes).await {
        Ok(b) => match sink.tx.try_send(b.to_vec()) {
            Ok(()) => StatusCode::OK,
            Err(_) => StatusCode::SERVICE_UNAVAILABLE,
        },
        Err(_) => StatusCode::PAYLOAD_TOO_LARGE,
    }
}

impl CallbackListener {
    /// Listens on 127.0.0.1 (any free port); every POST path is accepted.
    pub async fn start(max_bytes: usize) -> Result<CallbackListener, String> {
        let (tx, rx) = mpsc::channel(QUEUE);
        let sink = Sink { tx, max_bytes };
        let router = Router::new()
            .route("/", post(receive))
            .route("/{*rest}", post(receive))
            .with_state(sink);
        let running = spawn("127.0.0.1:0", router)
            .await
            .map_err(|e| format!("cannot start the callback listener: {e}"))?;
        Ok(CallbackListener {
            url: format!("http://{}/results", running.addr),
            rx,
            _running: running,
        })
    }

    /// The next body POSTed to the listener within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<Vec<u8>> {
        tokio::time::timeout(wait, self.rx.recv())
            .await
            .ok()
            .flatten()
    }
}
