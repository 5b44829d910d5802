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

/// The exchanges a conversation's state is looked up among: those before a message.
pub const HISTORY: usize = 256;

/// What went through the proxy before a client's message, for the rules that need
/// the conversation (an ACCEPT against its OFFER, a follow-up against its
/// conversation's expiry): at most [`HISTORY`] earlier exchanges, oldest first
/// (a WebSocket frame as an exchange of one side: `received` for the client's,
/// `answered` for the server's), each with the time the proxy took its request,
/// and the time of this message.
pub struct History<'a> {
    pub earlier: &'a [(&'a Exchange, time::OffsetDateTime)],
    pub now: time::OffsetDateTime,
}

impl History<'_> {
    /// No earlier exchange (a message judged alone).
    pub fn none() -> History<'static> {
        History {
            earlier: &[],
            now: time::OffsetDateTime::now_utc(),
        }
    }

    /// The server's earlier replies that are JSON, newest first, with the request
    /// each answered.
    pub fn replies(&self) -> impl Iterator<Item = (&Exchange, serde_json::Value)> + '_ {
        self.earlier.iter().rev().filter_map(|(x, _)| {
            serde_json::from_slice::<serde_json::Value>(&x.answered)
                .ok()
                .map(|v| (*x, v))
        })
    }

    /// Which side's earlier message (`"the client"`, `"the server"`) already
    /// carried `id` as its top-level `id`, if one did.
    pub fn id_used(&self, id: &str) -> Option<&'static str> {
        let has = |bytes: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(bytes)
                .is_ok_and(|v| v["id"].as_str() == Some(id))
        };
        self.earlier.iter().find_map(|(x, _)| {
            if has(&x.received) {
                Some("the client")
            } else if has(&x.answered) {
                Some("the server")
            } else {
                None
            }
        })
    }

    /// The client's earlier messages that are JSON, newest first.
    pub fn sent(&self) -> impl Iterator<Item = (&Exchange, serde_json::Value)> + '_ {
        self.earlier.iter().rev().filter_map(|(x, _)| {
            serde_json::from_slice::<serde_json::Value>(&x.received)
                .ok()
                .map(|v| (*x, v))
        })
    }
}

/// A request path as a route: its query left out, and each segment holding a digit
/// as `*` (an id), so that one kind of request is named once.
pub fn route_shape(path: &str) -> String {
    let route = path.split('?').next().unwrap_or_default();
    route
        .split('/')
        .map(|seg| {
            if seg.chars().any(|c| c.is_ascii_digit()) {
                "*"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}
