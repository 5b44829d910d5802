//! The WebSocket driver: one message per text frame, replies on the same socket.

use super::{DriveError, Limits, Received};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How a target answered the harness's Close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseAnswer {
    /// A Close came back, with its code and reason where it had them.
    Close(Option<(u16, String)>),
    /// The connection ended without a Close: how.
    Ended(String),
    /// Nothing within the deadline.
    Silent,
}

pub struct WsDriver {
    url: String,
    /// How `wss://` is reached (the run's [`super::Tls`]).
    tls: tokio_tungstenite::Connector,
    socket: Option<Box<WebSocketStream<MaybeTlsStream<TcpStream>>>>,
    /// The code and reason of the last Close the target sent, where it had them.
    pub peer_close: Option<(u16, String)>,
}

fn map_err(e: WsError, limits: Limits) -> DriveError {
    match e {
        WsError::Capacity(_) => DriveError::TooLarge(limits.max_bytes),
        WsError::ConnectionClosed | WsError::AlreadyClosed => DriveError::Closed,
        other => DriveError::Io(other.to_string()),
    }
}

impl WsDriver {
    /// A driver for `url` (`ws://` or `wss://`; a `wss://` target's certificate is
    /// checked as `tls` says). It connects on first use.
    pub fn new(url: &str, tls: &super::Tls) -> WsDriver {
        WsDriver {
            url: url.to_string(),
            tls: tls.connector(),
            socket: None,
            peer_close: None,
        }
    }

    async fn connect(&mut self, limits: Limits) -> Result<(), DriveError> {
        if self.socket.is_some() {
            return Ok(());
        }
        let config = reference_impl::wire::ws_client_config(limits.max_bytes);
        let conn = tokio_tungstenite::connect_async_tls_with_config(
            &self.url,
            Some(config),
            true,
            Some(self.tls.clone()),
        );
        match tokio::time::timeout(limits.timeout, conn).await {
            Ok(Ok((s, _))) => {
                self.socket = Some(Box::new(s));
                Ok(())
            }
            Ok(Err(WsError::Http(resp))) => Err(DriveError::Connect(format!(
                "the upgrade was refused with HTTP {}",
                resp.status().as_u16()
            ))),
            Ok(Err(e)) => Err(DriveError::Connect(super::http::error_chain(&e))),
            Err(_) => Err(DriveError::Timeout(limits.timeout.as_millis())),
        }
    }

    /// Sends one message; waits for the next message within the deadline. After a
    /// failure the connection is dropped, so the next use reconnects.
    pub async fn exchange(
        &mut self,
        bytes: Vec<u8>,
        limits: Limits,
    ) -> Result<Received, DriveError> {
        let r = self.exchange_once(bytes, limits).await;
        if r.is_err() {
            self.socket = None;
        }
        r
    }

    async fn exchange_once(
        &mut self,
        bytes: Vec<u8>,
        limits: Limits,
    ) -> Result<Received, DriveError> {
        self.connect(limits).await?;
        let msg = match String::from_utf8(bytes) {
            Ok(text) => Message::Text(text.into()),
            Err(e) => Message::Binary(e.into_bytes().into()),
        };
        let Some(sock) = self.socket.as_mut() else {
            return Err(DriveError::Closed);
        };
        match tokio::time::timeout(limits.timeout, sock.send(msg)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(map_err(e, limits)),
            Err(_) => return Err(DriveError::Timeout(limits.timeout.as_millis())),
        }
        Ok(match self.recv(limits).await? {
            Some(b) => Received::Frame(b),
            None => Received::Silence,
        })
    }

    /// Sends one text message (connecting first if needed).
    pub async fn send_text(&mut self, text: String, limits: Limits) -> Result<(), DriveError> {
        self.connect(limits).await?;
        let Some(sock) = self.socket.as_mut() else {
            return Err(DriveError::Closed);
        };
        match tokio::time::timeout(limits.timeout, sock.send(Message::Text(text.into()))).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(map_err(e, limits)),
            Err(_) => Err(DriveError::Timeout(limits.timeout.as_millis())),
        }
    }

    /// Opens the connection now; an HTTP refusal of the upgrade names its status.
    pub async fn open(&mut self, limits: Limits) -> Result<(), DriveError> {
        self.connect(limits).await
    }

    /// The next data message within the deadline, `None` on silence.
    pub async fn recv(&mut self, limits: Limits) -> Result<Option<Vec<u8>>, DriveError> {
        self.connect(limits).await?;
        let Some(sock) = self.socket.as_mut() else {
            return Err(DriveError::Closed);
        };
        let deadline = tokio::time::Instant::now() + limits.timeout;
        loop {
            let next = tokio::time::timeout_at(deadline, sock.next()).await;
            match next {
                Err(_) => return Ok(None),
                Ok(None) => return Err(DriveError::Closed),
                Ok(Some(Err(e))) => return Err(map_err(e, limits)),
                Ok(Some(Ok(Message::Text(t)))) => return Ok(Some(t.as_bytes().to_vec())),
                Ok(Some(Ok(Message::Binary(b)))) => return Ok(Some(b.to_vec())),
                Ok(Some(Ok(Message::Close(f)))) => {
                    self.peer_close = f.map(|f| (u16::from(f.code), f.reason.to_string()));
                    return Err(DriveError::Closed);
                }
                Ok(Some(Ok(_))) => continue, // ping, pong, raw frames
            }
        }
    }

    /// Starts the closing handshake with a Close of `code` and `reason`, and waits
    /// within the deadline for the target's Close (RFC 6455 §5.5.1); data frames
    /// in between are passed over. The connection is gone afterwards.
    pub async fn close_handshake(
        &mut self,
        code: u16,
        reason: &str,
        limits: Limits,
    ) -> Result<CloseAnswer, DriveError> {
        use tokio_tungstenite::tungstenite::protocol::CloseFrame;
        self.connect(limits).await?;
        let Some(mut sock) = self.socket.take() else {
            return Err(DriveError::Closed);
        };
        let frame = CloseFrame {
            code: code.into(),
            reason: reason.into(),
        };
        match tokio::time::timeout(limits.timeout, sock.send(Message::Close(Some(frame)))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Ok(CloseAnswer::Ended(e.to_string())),
            Err(_) => return Err(DriveError::Timeout(limits.timeout.as_millis())),
        }
        let deadline = tokio::time::Instant::now() + limits.timeout;
        loop {
            return Ok(match tokio::time::timeout_at(deadline, sock.next()).await {
                Err(_) => CloseAnswer::Silent,
                Ok(None) => CloseAnswer::Ended("the connection ended".into()),
                Ok(Some(Err(e))) => CloseAnswer::Ended(e.to_string()),
                Ok(Some(Ok(Message::Close(f)))) => {
                    CloseAnswer::Close(f.map(|f| (u16::from(f.code), f.reason.to_string())))
                }
                Ok(Some(Ok(_))) => continue,
            });
        }
    }

    pub async fn close(&mut self) {
        if let Some(mut s) = self.socket.take() {
            let _ =
                tokio::time::timeout(std::time::Duration::from_millis(200), (*s).close(None)).await;
        }
    }
}
