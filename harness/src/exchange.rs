//! One HTTP exchange between a client and the other side, as the counterparty and
//! the proxy record it; below both, and below the case model that judges it.

/// One message the client sent, and the harness's answer; or one callback the
/// harness POSTed to the client (method `CALLBACK`, path the client's URL,
/// `answered` what the harness sent, `received` the client's reply).
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: String,
    /// The path the client sent to, with its query (`/` for the base URL).
    pub path: String,
    pub content_type: Option<String>,
    pub received: Vec<u8>,
    pub answered: Vec<u8>,
    pub status: u16,
    /// The path as the client wrote it, when it differed from `path` by doubled
    /// slashes (`//conversations/…`), which `path` has collapsed.
    pub written: Option<String>,
}
