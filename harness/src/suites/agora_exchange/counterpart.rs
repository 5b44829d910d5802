//! The scripted counterpart of the client role: the server the harness plays for a
//! requesting agent under test, and the plan (`Serve`) it answers by.

use super::wire::unix_now;
use reference_impl::agora_exchange::document::{self, sha1_hex};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// The client role: the harness as the server a client under test talks to.

/// How the harness, as agora-exchange server, answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serve {
    /// Success; a request with `"multiround": true` opens conversation `conv-1`.
    Plain,
    /// Success, but multi-round mode declined: no conversationId (AEX-028).
    DeclineConversation,
    /// Every request fails: `{"status": "failure", "error": "Unsupported protocol"}`.
    Failure,
    /// The conversation opens, then expires: every follow-up is answered
    /// `{"status": "failure", "error": "Conversation expired"}` (AEX-033).
    ExpireOnFollowUp,
    /// The conversation opens already expired (`conversationExpires` a second in
    /// the past), and follow-ups are answered with success as a server that does
    /// not check expiry would (`ignore-expiry`): only the client's reading of
    /// `conversationExpires` keeps it from using the conversation (AEX-034).
    ExpiredOnOpen,
    /// Every reply says `"status": "Success"` (`status-capitalized`; AEX-009).
    StatusCapitalized,
    /// Every request fails as `{"status": "error", "message": …}`
    /// (`failure-status-error`).
    StatusError,
    /// Every request fails with the failure described in `body`, without `error`
    /// (`failure-without-error`).
    FailureWithoutError,
    /// Every new exchange is refused as a Python server's KeyError on
    /// protocolSources (`require-protocol-sources`).
    RequireSources,
}

/// The requests agora-exchange.txt defines for a server: POST to the base URL
/// (a new exchange, §5), POST to `/conversations/{id}` (a follow-up, §7.2), and
/// GET `/wellknown` (§9).
pub fn defined(method: &str, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    match method {
        "POST" => {
            path.is_empty()
                || path
                    .strip_prefix("/conversations/")
                    .is_some_and(|id| !id.is_empty() && !id.contains('/'))
        }
        "GET" => path == "/wellknown",
        _ => false,
    }
}

/// The conversation the scripted server opens.
pub const CONVERSATION: &str = "conv-1";

/// The scripted server: echoes each request's body, opens [`CONVERSATION`] when asked
/// (unless told to decline), answers follow-ups on it, and 404 elsewhere.
pub fn server(plan: Serve) -> crate::counterparty::Answer {
    Box::new(move |path: &str, bytes: &[u8]| {
        let reply = |status: u16, v: Value| (status, v.to_string().into_bytes());
        if path == "/wellknown" {
            let doc = document::ECHO_DOCUMENT;
            return reply(200, json!({ sha1_hex(doc.as_bytes()): [doc] }));
        }
        let Ok(req) = serde_json::from_slice::<Value>(bytes) else {
            return reply(400, json!({"status": "failure", "error": "malformed JSON"}));
        };
        let expires = if plan == Serve::ExpiredOnOpen {
            unix_now() - 1
        } else {
            unix_now() + 300
        };
        let echo = json!({"status": "success", "body": {"echo": req["body"]}});
        if let Some(v) = every_reply(plan, &req) {
            return reply(200, v);
        }
        match path.trim_end_matches('/') {
            "" if plan == Serve::Failure => reply(
                200,
                json!({"status": "failure", "error": "Unsupported protocol"}),
            ),
            "" if req["multiround"] == true
                && matches!(
                    plan,
                    Serve::Plain | Serve::ExpireOnFollowUp | Serve::ExpiredOnOpen
                ) =>
            {
                let mut v = echo;
                v["conversationId"] = json!(CONVERSATION);
                v["conversationExpires"] = json!(expires);
                reply(200, v)
            }
            "" => reply(200, echo),
            p if p == format!("/conversations/{CONVERSATION}")
                && plan == Serve::ExpireOnFollowUp =>
            {
                reply(
                    200,
                    json!({"status": "failure", "error": "Conversation expired"}),
                )
            }
            p if p == format!("/conversations/{CONVERSATION}") => {
                let mut v = echo;
                v["conversationId"] = json!(CONVERSATION);
                v["conversationExpires"] = json!(expires);
                reply(200, v)
            }
            _ => reply(
                404,
                json!({"status": "failure", "error": "unknown conversation"}),
            ),
        }
    })
}

/// The reply a plan gives every request, whatever it asks: a status spelled
/// "Success" or "error", a failure without error, or the KeyError of a server that
/// requires protocolSources.
fn every_reply(plan: Serve, req: &Value) -> Option<Value> {
    match plan {
        Serve::StatusCapitalized => {
            Some(json!({"status": "Success", "body": {"echo": req["body"]}}))
        }
        Serve::StatusError => Some(json!({"status": "error", "message": "Unsupported protocol"})),
        Serve::FailureWithoutError => {
            Some(json!({"status": "failure", "body": {"reason": "Unsupported protocol"}}))
        }
        Serve::RequireSources => Some(json!({"status": "failure", "error": "'protocolSources'"})),
        _ => None,
    }
}
