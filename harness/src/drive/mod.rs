//! Drivers: how the harness sends bytes to a target and reads what comes back.
//! Every wait has a deadline and every read a size cap.

pub mod callback;
pub mod file;
pub mod http;
pub mod tls;
pub mod ws;

pub use tls::Tls;

use std::fmt;
use std::time::Duration;

/// The binding a case runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Http,
    Ws,
    File,
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transport::Http => "http",
            Transport::Ws => "ws",
            Transport::File => "file",
        })
    }
}

/// Where each binding of a target is.
#[derive(Debug, Clone)]
pub struct Endpoints(pub Vec<(Transport, String)>);

/// Deadline and size cap for one exchange.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_bytes: usize,
}

/// What came back.
#[derive(Debug, Clone)]
pub enum Received {
    /// An HTTP response: status and body, and why the request was sent twice if it
    /// was ([`http::HttpReply::retried`]).
    Http {
        status: u16,
        body: Vec<u8>,
        retried: Option<String>,
    },
    /// A WebSocket message.
    Frame(Vec<u8>),
    /// Nothing within the deadline (only where the binding allows silence).
    Silence,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum DriveError {
    #[error("no answer within {0} ms")]
    Timeout(u128),
    #[error("reply larger than the cap of {0} bytes")]
    TooLarge(usize),
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("transport error: {0}")]
    Io(String),
    #[error("the target closed the connection")]
    Closed,
}

impl DriveError {
    /// The kind of failure, as transport finding keys name it
    /// (`<suite>/transport:<kind>`).
    pub fn kind(&self) -> &'static str {
        match self {
            DriveError::Timeout(_) => "no-answer",
            DriveError::TooLarge(_) => "reply-too-large",
            DriveError::Connect(_) => "unreachable",
            DriveError::Io(_) => "transport-error",
            DriveError::Closed => "connection-closed",
        }
    }
}

/// A connection to a target over one binding.
pub enum Driver {
    Http(http::HttpDriver),
    Ws(ws::WsDriver),
    File(file::FileDriver),
}

impl Driver {
    pub fn transport(&self) -> Transport {
        match self {
            Driver::Http(_) => Transport::Http,
            Driver::Ws(_) => Transport::Ws,
            Driver::File(_) => Transport::File,
        }
    }

    /// Sends one message and waits for the one reply.
    pub async fn exchange(
        &mut self,
        bytes: Vec<u8>,
        limits: Limits,
    ) -> Result<Received, DriveError> {
        match self {
            Driver::Http(d) => d.post(bytes, limits).await,
            Driver::Ws(d) => d.exchange(bytes, limits).await,
            Driver::File(d) => d.exchange(bytes, limits).await,
        }
    }

    /// Waits up to `limits.timeout` for a message nobody asked for. HTTP cannot
    /// carry one and returns `None` at once.
    pub async fn listen(&mut self, limits: Limits) -> Result<Option<Vec<u8>>, DriveError> {
        match self {
            Driver::Http(_) | Driver::File(_) => Ok(None),
            Driver::Ws(d) => d.recv(limits).await,
        }
    }
}

/// Whether a target can be reached at all over `transport`, before any case runs:
/// `Err` names the URL and the error when nothing answers there (refused,
/// unresolvable, TLS on a plain port, no WebSocket endpoint at the path, no such
/// folder). A target that accepts the connection but is slow or silent passes: the
/// cases judge that.
///
/// `http` must be the client built from `tls` ([`Tls::http_client`]); a WebSocket
/// probe connects with `tls`. A certificate the harness does not trust is such an
/// error, and the message says how to trust it.
pub async fn preflight(
    transport: Transport,
    url: &str,
    http: &reqwest::Client,
    tls: &Tls,
    timeout: Duration,
) -> Result<(), String> {
    let unreachable = |why: String| {
        let hint = if why.contains("certificate") {
            match tls.trust() {
                tls::Trust::Insecure => String::new(),
                trust => format!(
                    " (the harness trusts {trust}; pass --ca-file FILE with the certificate \
                     that signed it, or --insecure to accept any certificate)"
                ),
            }
        } else {
            String::new()
        };
        Err(format!("cannot reach the target {url}: {why}{hint}"))
    };
    match transport {
        Transport::Http => {
            let work = http.get(url).send();
            match tokio::time::timeout(timeout, work).await {
                Ok(Ok(_)) | Err(_) => Ok(()),
                Ok(Err(e)) if e.is_connect() || e.is_builder() || e.is_request() => {
                    unreachable(http::error_chain(&e))
                }
                Ok(Err(_)) => Ok(()),
            }
        }
        Transport::Ws => {
            use tokio_tungstenite::tungstenite::Error as WsError;
            let conn = tokio_tungstenite::connect_async_tls_with_config(
                url,
                None,
                true,
                Some(tls.connector()),
            );
            match tokio::time::timeout(timeout, conn).await {
                Ok(Ok((mut s, _))) => {
                    let _ = tokio::time::timeout(timeout, s.close(None)).await;
                    Ok(())
                }
                Ok(Err(WsError::Http(resp))) if resp.status().as_u16() == 404 => unreachable(
                    "the WebSocket upgrade was answered with HTTP 404: nothing listens on that path"
                        .into(),
                ),
                // The endpoint exists and refused this bare handshake (a missing token,
                // say): the cases judge that.
                Ok(Err(WsError::Http(_))) | Err(_) => Ok(()),
                Ok(Err(e)) => unreachable(http::error_chain(&e)),
            }
        }
        Transport::File => match file::dir_of(url) {
            Some(dir) if dir.is_dir() => Ok(()),
            Some(dir) => unreachable(format!("{} is not a folder", dir.display())),
            None => unreachable("not a file:///folder URL".into()),
        },
    }
}
