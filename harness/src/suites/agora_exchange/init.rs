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
            match bodies(ctx, &key, &text, &mut out).await {
                Some(b) => b,
                None => return out,
            }
        };
        sources_form(ctx, &key, &text, &body, &mut out).await;
        out
    })
}

/// The most examples of a document init sends.
const MOST_EXAMPLES: usize = 6;

/// The JSON objects a document's specification writes (after its `---`): each
/// balanced `{…}` that parses once its `<placeholders>` outside strings are
/// written as strings, in order, each once, the first [`MOST_EXAMPLES`].
fn examples(text: &str) -> Vec<Value> {
    let spec = document::split(text).map_or(text, |(_, s)| s);
    let mut out: Vec<Value> = Vec::new();
    for (start, _) in spec.match_indices('{') {
        let Some(end) = balanced_end(&spec[start..]) else {
            continue;
        };
        let filled = fill_placeholders(&spec[start..start + end]);
        if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&filled) {
            if !out.contains(&v) {
                out.push(v);
            }
            if out.len() == MOST_EXAMPLES {
                break;
            }
        }
    }
    out
}

/// The longest example read, in bytes: a document full of unclosed braces is read
/// in time linear in its length.
const LONGEST_EXAMPLE: usize = 4096;

/// The length of the `{…}` that `s` opens, strings read as strings; none past
/// [`LONGEST_EXAMPLE`].
fn balanced_end(s: &str) -> Option<usize> {
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in s.char_indices().take_while(|(i, _)| *i < LONGEST_EXAMPLE) {
        match (in_str, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => in_str = false,
            (true, _) => {}
            (false, '"') => in_str = true,
            (false, '{' | '[') => depth += 1,
            (false, '}' | ']') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// `s` with each `<…>` outside a string written as the string `"x"`.
fn fill_placeholders(s: &str) -> String {
    let (mut out, mut in_str, mut skip) = (String::new(), false, false);
    for c in s.chars() {
        match (skip, in_str, c) {
            (true, _, '>') => skip = false,
            (true, _, _) => {}
            (false, false, '<') => {
                skip = true;
                out.push_str("\"x\"");
            }
            (false, _, '"') => {
                in_str = !in_str;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether a reply takes a body as following the protocol: success, and no
/// protocol-level `error` in its body.
fn takes(r: &super::replies::Reply) -> bool {
    r.is_success()
        && r.json
            .as_ref()
            .is_none_or(|j| j["body"].get("error").is_none())
}

/// `valid_body` and `invalid_body` for a protocol that is not the echo protocol:
/// the first example the document writes that the server takes, and that example
/// with its first member's value of another type (else `{}`) where the server
/// refuses it. None, with the entry that says why, when no example is taken.
async fn bodies(ctx: &mut Ctx, key: &str, text: &str, out: &mut Vec<Entry>) -> Option<Value> {
    let mut tried = Vec::new();
    let mut valid = None;
    for ex in examples(text).into_iter().take(MOST_EXAMPLES) {
        let req = json!({"protocolHash": key, "body": ex});
        match post_as_is(ctx, "", &req).await {
            Ok(r) if takes(&r) => {
                valid = Some(ex);
                break;
            }
            Ok(r) => tried.push(format!("{ex} drew {}", r.describe())),
            Err(_) => tried.push(format!("{ex} drew no reply the harness could read")),
        }
    }
    let Some(valid) = valid else {
        let why = match tried.is_empty() {
            true => "the protocol is not the harness's echo protocol, and its document writes no JSON example of a body".to_string(),
            false => format!("the protocol is not the harness's echo protocol, and the server took none of its document's examples ({})", tried.join("; ")),
        };
        out.push(Entry::missing(S, "valid_body", format!("{why}: set it to the JSON text of a body that follows the document, and invalid_body to one that breaks it.")));
        return None;
    };
    out.push(Entry::found(
        S,
        "valid_body",
        valid.to_string(),
        "the document's example, which the server took",
    ));
    let mut broken = valid.clone();
    if let Some((_, v)) = broken.as_object_mut().and_then(|o| o.iter_mut().next()) {
        *v = if v.is_number() { json!("x") } else { json!(42) };
    }
    let mut seen = Vec::new();
    for bad in [broken, json!({})] {
        let req = json!({"protocolHash": key, "body": bad});
        match post_as_is(ctx, "", &req).await {
            Ok(r) if !takes(&r) && r.http < 500 => {
                out.push(Entry::found(
                    S,
                    "invalid_body",
                    bad.to_string(),
                    format!(
                        "the example with its first member changed, which the server refused: {}",
                        r.describe()
                    ),
                ));
                return Some(valid);
            }
            Ok(r) => seen.push(format!("{bad} drew {}", r.describe())),
            Err(_) => seen.push(format!("{bad} drew no reply the harness could read")),
        }
    }
    out.push(Entry::missing(S, "invalid_body", format!("the server took every body that breaks the example ({}): set it to one the protocol refuses.", seen.join("; "))));
    Some(valid)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_examples_a_document_writes() {
        let doc = "name: x\ndescription: y\nmultiround: false\n---\nA body {\"numbers\": [1, 2]} gets {\"sum\": 3};\na body {\"name\": <string>} is \"Hello, <name>!\" {\"g\": \"a}b\"} {not json}\n";
        assert_eq!(
            examples(doc),
            vec![
                json!({"numbers": [1, 2]}),
                json!({"sum": 3}),
                json!({"name": "x"}),
                json!({"g": "a}b"})
            ]
        );
        assert!(
            examples("{\"a\": 1}").contains(&json!({"a": 1})),
            "no metadata: the whole text"
        );
        // Unclosed braces: each start is read at most LONGEST_EXAMPLE bytes far.
        assert!(examples(&"{".repeat(20_000)).is_empty());
    }
}
