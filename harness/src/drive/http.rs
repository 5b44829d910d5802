//! The HTTP driver: `POST {url}` of one message, the reply in the response body.

use super::{DriveError, Limits, Received};

#[derive(Clone)]
pub struct HttpDriver {
    client: reqwest::Client,
    url: String,
}

/// One client per run (connection reuse); no proxies: targets are addressed directly.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

impl HttpDriver {
    pub fn new(client: reqwest::Client, url: &str) -> HttpDriver {
        HttpDriver {
            client,
            url: url.to_string(),
        }
    }

    pub async fn post(&mut self, body: Vec<u8>, limits: Limits) -> Result<Received, DriveError> {
        let work = async {
            let mut resp = self
                .client
                .post(&self.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map_err(|e| {
                    if e.is_connect() {
                        DriveError::Connect(e.to_string())
                    } else {
                        DriveError::Io(e.to_string())
                    }
                })?;
            let status = resp.status().as_u16();
            let mut out = Vec::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| DriveError::Io(e.to_string()))?
            {
                if out.len() + chunk.len() > limits.max_bytes {
                    return Err(DriveError::TooLarge(limits.max_bytes));
                }
                out.extend_from_slice(&chunk);
            }
            Ok(Received::Http { status, body: out })
        };
        match tokio::time::timeout(limits.timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(DriveError::Timeout(limits.timeout.as_millis())),
        }
    }
}
