//! The reference client: single-round requests and multi-round conversations
//! against any agora-exchange server. Every request has a deadline and every reply a
//! size cap.

use serde_json::{json, Value};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("HTTP: {0}")]
    Http(String),
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    #[error("reply larger than {0} bytes")]
    TooLarge(usize),
    #[error("reply is not JSON: {0}")]
    NotJson(String),
    #[error("the server answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("the server answered failure: {0}")]
    Failure(String),
    #[error("the server did not open a conversation (no conversationId)")]
    NoConversation,
    #[error("the conversation expired at {0} (conversationExpires): no follow-up sent")]
    Expired(i64),
}

/// One reply.
#[derive(Debug, Clone)]
pub struct ExchangeReply {
    pub http_status: u16,
    pub json: Value,
}

pub struct Client {
    http: reqwest::Client,
    base: String,
    pub timeout: Duration,
    pub max_bytes: usize,
    /// Whether requests say Content-Type application/json (AEX-005); off only
    /// under the `no-content-type` fault.
    pub content_type: bool,
}

/// Joins a base URL and a path with exactly one slash.
pub fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

impl Client {
    pub fn new(base: &str) -> Result<Client, ClientError> {
        let http = crate::wire::http::client(crate::wire::http::Setting {
            no_proxy: true,
            ..Default::default()
        })
        .map_err(ClientError::Http)?;
        Ok(Client {
            http,
            base: base.to_string(),
            timeout: Duration::from_secs(5),
            max_bytes: 1024 * 1024,
            content_type: true,
        })
    }

    /// POSTs `request` to `path` below the base URL.
    pub async fn post(&self, path: &str, request: &Value) -> Result<ExchangeReply, ClientError> {
        let url = join(&self.base, path);
        let body = serde_json::to_vec(request).map_err(|e| ClientError::Http(e.to_string()))?;
        let work = async {
            let mut req = self.http.post(&url);
            if self.content_type {
                req = req.header(reqwest::header::CONTENT_TYPE, "application/json");
            }
            let mut resp = req
                .body(body)
                .send()
                .await
                .map_err(|e| ClientError::Http(e.to_string()))?;
            let status = resp.status().as_u16();
            let mut bytes = Vec::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| ClientError::Http(e.to_string()))?
            {
                if bytes.len() + chunk.len() > self.max_bytes {
                    return Err(ClientError::TooLarge(self.max_bytes));
                }
                bytes.extend_from_slice(&chunk);
            }
            let json: Value =
                serde_json::from_slice(&bytes).map_err(|e| ClientError::NotJson(e.to_string()))?;
            Ok(ExchangeReply {
                http_status: status,
                json,
            })
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| ClientError::Timeout(self.timeout))?
    }

    /// A single-round request; a failure reply is an error.
    pub async fn ask(
        &self,
        body: Value,
        protocol_hash: Option<&str>,
    ) -> Result<Value, ClientError> {
        let reply = self
            .post("", &json!({"protocolHash": protocol_hash, "body": body}))
            .await?;
        success_body(reply)
    }

    /// Opens a multi-round conversation with a first message.
    pub async fn start(
        &self,
        body: Value,
        protocol_hash: Option<&str>,
    ) -> Result<(Conversation<'_>, Value), ClientError> {
        let reply = self
            .post(
                "",
                &json!({"protocolHash": protocol_hash, "body": body, "multiround": true}),
            )
            .await?;
        let id = reply.json["conversationId"].as_str().map(String::from);
        let expires = reply.json["conversationExpires"].as_i64();
        let answer = success_body(reply)?;
        let id = id.ok_or(ClientError::NoConversation)?;
        Ok((
            Conversation {
                client: self,
                id,
                expires,
            },
            answer,
        ))
    }
}

fn success_body(reply: ExchangeReply) -> Result<Value, ClientError> {
    success_body_read(reply, |s| s == "success")
}

/// [`success_body`] with `success` deciding which status words are a success.
fn success_body_read(
    reply: ExchangeReply,
    success: impl Fn(&str) -> bool,
) -> Result<Value, ClientError> {
    if reply.http_status != 200 {
        return Err(ClientError::Status {
            status: reply.http_status,
            body: reply.json.to_string(),
        });
    }
    match reply.json["status"].as_str() {
        Some(s) if success(s) => Ok(reply.json.get("body").cloned().unwrap_or(Value::Null)),
        _ => Err(ClientError::Failure(
            reply.json["error"]
                .as_str()
                .unwrap_or("(no error given)")
                .to_string(),
        )),
    }
}

/// An open conversation. Follow-ups carry `body` only: the protocol is inherited.
pub struct Conversation<'c> {
    client: &'c Client,
    pub id: String,
    pub expires: Option<i64>,
}

impl Conversation<'_> {
    pub async fn send(&mut self, body: Value) -> Result<Value, ClientError> {
        let path = format!("conversations/{}", percent_encode(&self.id));
        let reply = self.client.post(&path, &json!({"body": body})).await?;
        if let Some(e) = reply.json["conversationExpires"].as_i64() {
            self.expires = Some(e);
        }
        success_body(reply)
    }
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Client faults, each caught by the client cases it names.
pub const CLIENT_FAULTS: &[crate::faults::Fault] = &[
    crate::fault!(
        "resend-protocol-hash",
        "conversations",
        "repeats protocolHash on every follow-up",
        ["agora-exchange/client-conversation"]
    ),
    crate::fault!(
        "no-content-type",
        "headers",
        "sends requests without Content-Type application/json",
        ["agora-exchange/client-single"]
    ),
    crate::fault!(
        "invent-conversation",
        "conversations",
        "sends follow-ups to a conversation id of its own when the server declined multi-round mode",
        ["agora-exchange/client-declined-conversation"]
    ),
    crate::fault!(
        "retry-expired",
        "conversations",
        "goes on sending the follow-ups after a conversation has expired",
        ["agora-exchange/client-expired-conversation"]
    ),
    crate::fault!(
        "ignore-expires",
        "conversations",
        "never reads conversationExpires: it sends follow-ups to a conversation past its expiry",
        ["agora-exchange/client-reads-expiry"]
    ),
    crate::fault!(
        "status-case-insensitive",
        "failures",
        "takes any spelling of success (\"Success\", \"SUCCESS\") for a success",
        ["agora-exchange/client-status-exact"]
    ),
    crate::fault!(
        "status-not-failure",
        "failures",
        "takes every status other than \"failure\" for a success, \"error\" among them",
        ["agora-exchange/client-status-exact"]
    ),
    crate::fault!(
        "ignore-failure",
        "failures",
        "takes a failure reply for a success (so an expired conversation's too)",
        [
            "agora-exchange/client-failure-reported",
            "agora-exchange/client-expired-conversation",
            "agora-exchange/client-status-exact"
        ]
    ),
];

/// A scenario of `agentconform client --suite agora-exchange`: `single` (one
/// request: `{"body", "protocolHash"}`) or `conversation` (a multi-round
/// conversation: `{"body", "protocolHash", "followups": [...]}`). Returns every
/// reply received, and the bodies of the successes or the first error.
pub async fn scenario(
    base: &str,
    name: &str,
    input: &Value,
    faults: &[String],
) -> (Vec<Value>, Result<Vec<Value>, ClientError>) {
    let fault = |f: &str| faults.iter().any(|x| x == f);
    let mut client = match Client::new(base) {
        Ok(c) => c,
        Err(e) => return (Vec::new(), Err(e)),
    };
    client.content_type = !fault("no-content-type");
    let mut received = Vec::new();
    let hash = input["protocolHash"].as_str();
    let body = input["body"].clone();
    let take = |reply: ExchangeReply, received: &mut Vec<Value>| {
        received.push(reply.json.clone());
        if fault("ignore-failure") {
            return Ok(reply.json.get("body").cloned().unwrap_or(Value::Null));
        }
        success_body_read(reply, |s| {
            s == "success"
                || (fault("status-case-insensitive") && s.eq_ignore_ascii_case("success"))
                || (fault("status-not-failure") && s != "failure")
        })
    };
    // The conversation's expiry as the last reply gave it (AEX-022, AEX-034).
    let expired = |expires: Option<i64>| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        expires.filter(|e| *e <= now && !fault("ignore-expires"))
    };
    let result = async {
        match name {
            "single" => {
                let reply = client
                    .post("", &json!({"protocolHash": hash, "body": body}))
                    .await?;
                Ok(vec![take(reply, &mut received)?])
            }
            "conversation" => {
                let first = json!({"protocolHash": hash, "body": body, "multiround": true});
                let reply = client.post("", &first).await?;
                let id = reply.json["conversationId"].as_str().map(String::from);
                let mut expires = reply.json["conversationExpires"].as_i64();
                let mut out = vec![take(reply, &mut received)?];
                let id = match id {
                    Some(id) => id,
                    None if fault("invent-conversation") => "my-conversation".to_string(),
                    None => return Err(ClientError::NoConversation),
                };
                let path = format!("conversations/{}", percent_encode(&id));
                for f in input["followups"].as_array().into_iter().flatten() {
                    if let Some(at) = expired(expires) {
                        return Err(ClientError::Expired(at));
                    }
                    let mut req = json!({"body": f});
                    if fault("resend-protocol-hash") {
                        req["protocolHash"] = json!(hash);
                    }
                    let reply = client.post(&path, &req).await?;
                    if let Some(e) = reply.json["conversationExpires"].as_i64() {
                        expires = Some(e);
                    }
                    if fault("retry-expired") && reply.json["status"] == "failure" {
                        received.push(reply.json.clone());
                        continue;
                    }
                    out.push(take(reply, &mut received)?);
                }
                Ok(out)
            }
            other => Err(ClientError::Http(format!("unknown scenario {other:?}"))),
        }
    }
    .await;
    (received, result)
}
