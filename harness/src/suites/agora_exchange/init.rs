//! What `agentconform init` finds of an agora-exchange server: a protocol it
//! supports and its document (GET /wellknown), the hash's form, and the form of
//! `protocolSources` it takes (text, or a reference the harness serves).

use super::documents::wellknown;
use super::wire::post_as_is;
use crate::init::{DiscoverFuture, Entry};
use crate::script::Ctx;
use reference_impl::agora_exchange::document::{self, hash_form};
use serde_json::{json, Value};

const S: &str = "agora-exchange";

pub fn discover(ctx: &mut Ctx) -> DiscoverFuture<'_> {
    Box::pin(async move {
        let mut out = Vec::new();
        let Some(known) = listed(ctx, &mut out).await else {
            return out;
        };
        let echo = document::ECHO_DOCUMENT;
        let key = known
            .keys()
            .find(|k| hash_form(k, echo.as_bytes()).is_some())
            .or_else(|| known.keys().next())
            .cloned()
            .unwrap_or_default();
        // /wellknown maps each hash to its sources: the document's text, or URLs.
        let sources: Vec<String> = known
            .get(&key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let text = sources
            .iter()
            .find(|s| !s.starts_with("http://") && !s.starts_with("https://"))
            .cloned();
        let form = text
            .as_deref()
            .and_then(|t| hash_form(&key, t.as_bytes()))
            .map_or(
                "a form of its document's SHA1 the harness does not recognise".to_string(),
                |f| f.to_string(),
            );
        // The cases' fixture reads /wellknown the same way.
        out.push(Entry::found_by_cases(
            S,
            "protocol_hash",
            key.clone(),
            format!(
                "GET /wellknown lists {} protocol(s); this one is spelled as {form}",
                known.len()
            ),
        ));
        let Some(text) = text else {
            out.push(Entry::missing(S, "protocol_document", format!("GET /wellknown gives no text for it (its sources: {}). Set it to the protocol document's text.", crate::finding::json(&sources))));
            return out;
        };
        out.push(Entry::found_by_cases(
            S,
            "protocol_document",
            text.clone(),
            "the text GET /wellknown serves for that protocol",
        ));
        let is_echo = hash_form(&key, echo.as_bytes()).is_some();
        let body = if is_echo {
            json!({"text": "hi"})
        } else {
            out.push(Entry::missing(S, "valid_body", "the protocol is not the harness's echo protocol: set it to the JSON text of a body that follows the document, and invalid_body to one that breaks it."));
            return out;
        };
        sources_form(ctx, &key, &text, &body, &mut out).await;
        out
    })
}

/// The protocols GET /wellknown lists, or the entry that says why none is known.
async fn listed(ctx: &mut Ctx, out: &mut Vec<Entry>) -> Option<serde_json::Map<String, Value>> {
    match wellknown(ctx).await {
        Ok(Some(m)) if !m.is_empty() => Some(m),
        Ok(_) => {
            out.push(Entry::missing(S, "protocol_hash", "GET /wellknown lists no protocol (no endpoint, or an empty map). Set it to the hash of a protocol the server supports, as the server spells it, and protocol_document to that protocol's text."));
            None
        }
        Err(_) => {
            let why = ctx.findings().last().map_or_else(
                || "GET /wellknown could not be read".to_string(),
                |m| format!("GET /wellknown could not be read: {}", m.finding.summary),
            );
            out.push(Entry::missing(
                S,
                "protocol_hash",
                format!("{why}. Set it to the hash of a protocol the server supports."),
            ));
            None
        }
    }
}

/// The form of `protocolSources` the server takes: the text, else a URL at which
/// the harness serves the document on loopback.
async fn sources_form(ctx: &mut Ctx, hash: &str, text: &str, body: &Value, out: &mut Vec<Entry>) {
    let req = json!({"protocolHash": hash, "protocolSources": [text], "body": body});
    let Ok(r) = post_as_is(ctx, "", &req).await else {
        out.push(Entry::missing(
            S,
            "protocol_sources",
            "a new exchange with the document as text drew no reply the harness could read.",
        ));
        return;
    };
    if r.is_success() {
        // The default form.
        out.push(Entry::found_by_cases(
            S,
            "protocol_sources",
            "text",
            format!(
                "a new exchange with the document's text in protocolSources drew {}",
                r.describe()
            ),
        ));
        return;
    }
    let name = format!("{}.md", document::sha1_hex(text.as_bytes()));
    let url = match ctx.shared.documents.serve(&name, text).await {
        Ok(u) => u,
        Err(e) => {
            out.push(Entry::missing(
                S,
                "protocol_sources",
                format!(
                    "the text drew {}, and the document could not be served by reference: {e}",
                    r.describe()
                ),
            ));
            return;
        }
    };
    let by_ref = json!({"protocolHash": hash, "protocolSources": [url], "body": body});
    match post_as_is(ctx, "", &by_ref).await {
        Ok(r2) if r2.is_success() => out.push(Entry::found(
            S,
            "protocol_sources",
            "url",
            format!("the document's text in protocolSources drew {}; a URL the harness serves it at drew {}", r.describe(), r2.describe()),
        )),
        Ok(r2) => out.push(Entry::missing(S, "protocol_sources", format!("the document's text drew {}, a URL {}: neither form was taken", r.describe(), r2.describe()))),
        Err(_) => out.push(Entry::missing(S, "protocol_sources", format!("the document's text drew {}; the request by reference drew no reply the harness could read", r.describe()))),
    }
}
