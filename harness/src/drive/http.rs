//! The HTTP driver: one request, one response, under a deadline and a size cap.

use super::{DriveError, Limits, Received};

/// A reply body past this size is large.
const LARGE_BODY: usize = 64 * 1024;

/// How many large reply bodies the process reads at once. A run starts up to 64
/// cases together; against a target whose every reply is endless, each would hold
/// up to `max_response_bytes` (1 MiB) before it is refused as too large. The others
/// wait their turn (within their own deadline), so reply bodies stay under 64 × 64
/// KiB plus 4 × 1 MiB together, whatever the target sends (with 16 of 256 KiB, a
/// run against a target announcing a gigabyte reached 67 MiB; with 8, 50 to 68 MiB
/// from run to run, the connections' own buffers counting as much; with 4 of 128
/// KiB, 43 to 53 MiB over ten runs, and with 4 of 64 KiB, 45 to 53 MiB).
static LARGE_BODIES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

#[derive(Clone)]
pub struct HttpDriver {
    client: reqwest::Client,
    url: String,
}

/// A response as the harness sees it.
#[derive(Debug, Clone)]
pub struct HttpReply {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// Set when the target closed the first attempt's connection before it replied
    /// and the request was sent again: the first attempt's error.
    pub retried: Option<String>,
}

/// Whether `e` is the connection closing before a reply came (hyper's "connection
/// closed before message completed"): what a reused keep-alive connection does when
/// the target closes it, idle, just as the next request goes out on it.
fn closed_before_reply(e: &reqwest::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(h) = c.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message();
        }
        cause = c.source();
    }
    false
}

fn send_error(e: &reqwest::Error) -> DriveError {
    if e.is_connect() {
        DriveError::Connect(error_chain(e))
    } else {
        DriveError::Io(error_chain(e))
    }
}

/// A client that trusts the platform's roots. A run builds its client from its
/// [`super::Tls`] instead ([`super::Tls::http_client`]), so that `--ca-file` and
/// `--insecure` hold for it.
pub fn client() -> Result<reqwest::Client, String> {
    super::Tls::platform()?.http_client()
}

/// An error with its causes ("error sending request: … : Connection refused").
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !text.contains(&t) {
            text.push_str(": ");
            text.push_str(&t);
        }
        cause = c.source();
    }
    text
}

/// Sends one request. `headers` come after the defaults; a `body` is sent as is.
///
/// A request whose connection closes before any reply is sent once more (the
/// reply's `retried` says so): the client keeps connections alive between cases,
/// and a target that closes an idle one as the next request goes out on it has
/// done nothing wrong. The pool drops connections it has seen close, so the second
/// attempt goes out on a live or a new one. If it fails too, both errors are told.
pub async fn request(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
    limits: Limits,
) -> Result<HttpReply, DriveError> {
    let work = async {
        let mut req = client.request(method, url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        // Every request here has a byte body or none, so it can be cloned.
        let again = req.try_clone();
        let mut retried = None;
        let mut resp = match req.send().await {
            Ok(r) => r,
            Err(e) => match again {
                Some(again) if closed_before_reply(&e) => {
                    let first = error_chain(&e);
                    let r = again.send().await.map_err(|e2| {
                        DriveError::Io(format!(
                            "{first}; sent again, on another connection: {}",
                            error_chain(&e2)
                        ))
                    })?;
                    retried = Some(first);
                    r
                }
                _ => return Err(send_error(&e)),
            },
        };
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let mut out = Vec::new();
        let mut large = None;
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| DriveError::Io(e.to_string()))?
        {
            if out.len() + chunk.len() > limits.max_bytes {
                return Err(DriveError::TooLarge(limits.max_bytes));
            }
            if large.is_none() && out.len() + chunk.len() > LARGE_BODY {
                // Only so many large bodies are read at once (see LARGE_BODIES).
                large = Some(LARGE_BODIES.acquire().await);
            }
            // Grown by doubling, but never past the cap: a body near it holds the
            // cap, not twice it.
            let need = out.len() + chunk.len();
            if need > out.capacity() {
                let grown = (out.capacity() * 2).max(need).min(limits.max_bytes);
                out.reserve_exact(grown - out.len());
            }
            out.extend_from_slice(&chunk);
        }
        Ok(HttpReply {
            status,
            content_type,
            body: out,
            retried,
        })
    };
    match tokio::time::timeout(limits.timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(DriveError::Timeout(limits.timeout.as_millis())),
    }
}

impl HttpDriver {
    pub fn new(client: reqwest::Client, url: &str) -> HttpDriver {
        HttpDriver {
            client,
            url: url.to_string(),
        }
    }

    pub async fn post(&mut self, body: Vec<u8>, limits: Limits) -> Result<Received, DriveError> {
        let r = request(
            &self.client,
            reqwest::Method::POST,
            &self.url,
            &[("content-type", "application/json")],
            Some(body),
            limits,
        )
        .await?;
        Ok(Received::Http {
            status: r.status,
            body: r.body,
            retried: r.retried,
        })
    }
}
