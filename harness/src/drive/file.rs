//! The file driver (agentprotocol's file binding): a message is written atomically
//! into the shared folder, and the reply is the next file addressed to the sender.

use super::{DriveError, Limits, Received};
use reference_impl::agentprotocol::file::{file_name, take_addressed, write_atomic};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub struct FileDriver {
    dir: PathBuf,
}

/// The folder a `file:///dir` URL names.
pub fn dir_of(url: &str) -> Option<PathBuf> {
    reference_impl::start::dir_of(url)
}

impl FileDriver {
    pub fn new(url: &str) -> FileDriver {
        FileDriver {
            dir: dir_of(url).unwrap_or_else(|| PathBuf::from(url)),
        }
    }

    /// Writes one message; waits for a file addressed to its sender.
    pub async fn exchange(
        &mut self,
        bytes: Vec<u8>,
        limits: Limits,
    ) -> Result<Received, DriveError> {
        let msg: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let me = msg["from"]["agentId"]
            .as_str()
            .unwrap_or("unknown")
            .to_string();
        let name = file_name(&msg);
        write_atomic(&self.dir, &name, &bytes).map_err(|e| {
            DriveError::Io(format!(
                "cannot write {}: {e}",
                self.dir.join(&name).display()
            ))
        })?;
        self.recv_for(&me, limits).await
    }

    /// The next file addressed to `me` within the deadline.
    pub async fn recv_for(&mut self, me: &str, limits: Limits) -> Result<Received, DriveError> {
        let deadline = Instant::now() + limits.timeout;
        loop {
            let found = take_addressed(&self.dir, me, false, 1, limits.max_bytes as u64)
                .map_err(|e| DriveError::Io(format!("cannot read {}: {e}", self.dir.display())))?;
            if let Some((_, bytes)) = found.into_iter().next() {
                return Ok(Received::Frame(bytes));
            }
            if Instant::now() >= deadline {
                return Ok(Received::Silence);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
