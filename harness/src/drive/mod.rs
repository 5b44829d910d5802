//! Drivers: how the harness sends bytes to a target and reads what comes back.
//! Every wait has a deadline and every read a size cap.

pub mod callback;
pub mod file;
pub mod http;
pub mod ws;

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

/// Deadline and size cap for one exchange.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_bytes: usize,
}

/// What came back.
#[derive(Debug, Clone)]
pub enum Received {
    /// An HTTP response: status and body.
    Http { status: u16, body: Vec<u8> },
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
