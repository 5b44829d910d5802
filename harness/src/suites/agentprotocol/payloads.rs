//! Payloads (agentprotocol.md, Request/Response and Error Codes): the payload of a
//! response or an error read against its schema, its correlationId wherever a target
//! puts it, and its error code against the table.

use super::wire::{shown, Asked};
use crate::case::Level;
use crate::finding::{quote, Finding};
use crate::rules::{rules, schema_findings};
use crate::script::Ctx;
use reference_impl::agentprotocol::message::CODES;
use serde_json::{json, Map, Value};

rules! {
    CORRELATIONID_RENAMED {
        key: "agentprotocol/correlationId:renamed",
        requirements: &["AGP-019", "AGP-020"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a response or error names its correlation id `correlationId`",
        fails: "a payload spelling it correlation_id, correlationID, CorrelationId, correlation-id or correlation (read as correlationId to go on)",
        passes: "payload.correlationId",
    }
    CORRELATIONID_MISPLACED {
        key: "agentprotocol/correlationId:misplaced",
        requirements: &["AGP-019", "AGP-020"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a reply carries correlationId in its payload",
        fails: "a correlationId at the top level of the message, not in its payload (read from there to go on)",
        passes: "correlationId inside the payload",
    }
    CORRELATIONID_NOT_ECHOED {
        key: "agentprotocol/correlationId:not-echoed",
        requirements: &["AGP-019", "AGP-A7"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a response echoes the request's correlationId",
        fails: "a response carrying another correlationId, or none, for a request that sent one",
        passes: "the request's correlationId, unchanged",
    }
    CORRELATIONID_NOT_ECHOED_IN_ERRORS {
        key: "agentprotocol/correlationId:not-echoed-in-errors",
        requirements: &["AGP-020", "AGP-A7"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error echoes the correlationId of the request it refuses",
        fails: "an error carrying another correlationId, or none, for a request that sent one",
        passes: "the request's correlationId in the error payload",
    }
    ERROR_PAYLOAD_NESTED {
        // Two sites: members nested under payload.error, or the code given as
        // `error`; both AGP-020.
        key: "agentprotocol/error-payload:nested",
        requirements: &["AGP-020"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error payload carries code and message at its top",
        fails: "an error payload nesting its members under payload.error, or naming its code in `error` (read as the payload to go on)",
        passes: "payload.code and payload.message",
    }
    ERROR_CODE_SPELLING {
        key: "agentprotocol/error-code:spelling",
        requirements: &["AGP-022"],
        level: Some(Level::Should),
        owner: "agentprotocol/unknown-action",
        summary: "an error code is spelled as in agentprotocol.md's table (a warning)",
        fails: "a table code in another case or separator (invalid_message, InvalidSignature, rate-limited), read as the table code to go on",
        passes: "INVALID_MESSAGE, INVALID_SIGNATURE, UNKNOWN_AGENT, CAPABILITY_NOT_SUPPORTED, TIMEOUT, RATE_LIMITED or INTERNAL_ERROR",
    }
    ERROR_CODE_UNKNOWN {
        key: "agentprotocol/error-code:unknown",
        requirements: &["AGP-022"],
        level: Some(Level::Should),
        owner: "agentprotocol/unknown-action",
        summary: "an error code is one of agentprotocol.md's table; any other is a warning (AGP-022)",
        fails: "an error code that is no table code, however spelled",
        passes: "a table code",
    }
    ERROR_PAYLOAD_CODE {
        key: "agentprotocol/error-payload:code",
        requirements: &["AGP-020"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error payload carries its code as a string",
        fails: "an error with no code, or a code that is not a string; where a refusal was expected the case is blocked",
        passes: "a string code",
    }
    ERROR_PAYLOAD_MESSAGE {
        key: "agentprotocol/error-payload:message",
        requirements: &["AGP-020"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error payload carries its message as a string",
        fails: "an error with no message, or a message that is not a string",
        passes: "a string message",
    }
    RESPONSE_PAYLOAD_STATUS {
        key: "agentprotocol/response-payload:status",
        requirements: &["AGP-019"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a response payload carries its status as a string",
        fails: "a response with no status, or a status that is not a string",
        passes: "a string status (any value, AGP-A11)",
    }
    SCHEMA_RESPONSE_PAYLOAD {
        key: "agentprotocol/schema:response-payload:*",
        requirements: &["AGP-019"],
        level: None,
        owner: "agentprotocol/echo-request",
        summary: "a response's payload matches schemas/agentprotocol/response-payload.schema.json",
        fails: "a payload member missing, of another type or outside its pattern (correlationId and status are judged by their own rules); the key names the JSON pointer",
        passes: "a response payload the schema validates",
    }
    SCHEMA_ERROR_PAYLOAD {
        key: "agentprotocol/schema:error-payload:*",
        requirements: &["AGP-020"],
        level: None,
        owner: "agentprotocol/unknown-action",
        summary: "an error's payload matches schemas/agentprotocol/error-payload.schema.json",
        fails: "a payload member missing, of another type or outside its pattern (correlationId, code and message are judged by their own rules); the key names the JSON pointer",
        passes: "an error payload the schema validates",
    }
    SCHEMA_HELLO_PAYLOAD {
        key: "agentprotocol/schema:hello-payload:*",
        requirements: &["AGP-014"],
        level: None,
        owner: "agentprotocol/hello",
        summary: "a hello reply's payload matches schemas/agentprotocol/hello-payload.schema.json",
        fails: "a payload member missing, of another type or outside its pattern; the key names the JSON pointer, array indices as `*`",
        passes: "a hello payload the schema validates",
    }
}

/// Members some implementations use for `correlationId`.
const CORRELATION_SPELLINGS: [&str; 5] = [
    "correlation_id",
    "correlationID",
    "CorrelationId",
    "correlation-id",
    "correlation",
];

/// The table code a respelled code means (`invalid_message`, `InvalidMessage`).
fn table_code(code: &str) -> Option<&'static str> {
    let mut norm = String::new();
    let mut prev_lower = false;
    for c in code.trim().chars() {
        if c.is_ascii_uppercase() && prev_lower {
            norm.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        norm.push(match c {
            '-' | ' ' | '.' => '_',
            c => c.to_ascii_uppercase(),
        });
    }
    CODES.iter().copied().find(|k| *k == norm)
}

/// The payload of a reply: correlationId where the target put it (AGP-019, AGP-020,
/// AGP-A7), an error's code and message (AGP-020, AGP-022), then the payload schema
/// of the type for the rest.
pub(super) fn read_payload(
    ctx: &mut Ctx,
    p: &mut Map<String, Value>,
    ty: &str,
    what: &str,
    asked: &Asked,
    top_level_corr: Option<Value>,
) {
    read_correlation(ctx, p, ty, what, asked, top_level_corr);
    if ty == "error" {
        read_error_payload(ctx, p);
    }
    if ty == "response" && !p.get("status").is_some_and(Value::is_string) {
        ctx.finding(RESPONSE_PAYLOAD_STATUS.found(format!(
                    "a response's status is {}, not a string (AGP-019)",
                    p.get("status")
                        .map(|s| s.to_string())
                        .unwrap_or("missing".into())
                )));
    }
    payload_schema(ctx, p, ty);
    if ty == "hello" {
        // Features as a list, however the target wrote them (the schema finding
        // reports another shape).
        match p.get("features").cloned() {
            Some(Value::String(s)) => {
                let list: Vec<&str> = s.split([',', ' ']).filter(|x| !x.is_empty()).collect();
                p.insert("features".into(), json!(list));
            }
            Some(Value::Object(o)) => {
                let list: Vec<&String> = o.keys().collect();
                p.insert("features".into(), json!(list));
            }
            _ => {}
        }
    }
}

/// correlationId: where the target put it (renamed, or at the top level), and the
/// request's, echoed in a response or an error (AGP-019, AGP-020, AGP-A7).
fn read_correlation(
    ctx: &mut Ctx,
    p: &mut Map<String, Value>,
    ty: &str,
    what: &str,
    asked: &Asked,
    top_level_corr: Option<Value>,
) {
    if !p.contains_key("correlationId") {
        if let Some((name, val)) = CORRELATION_SPELLINGS
            .iter()
            .find_map(|n| p.get(*n).map(|x| (*n, x.clone())))
        {
            ctx.finding(CORRELATIONID_RENAMED.found(format!(
                "the {what} spells correlationId as `{name}` ({val}) (AGP-019, AGP-020)"
            )));
            p.insert("correlationId".into(), val);
        } else if let Some(val) = top_level_corr {
            ctx.finding(
                CORRELATIONID_MISPLACED.found(format!("the {what} carries correlationId {val} at the top level, not in its payload (AGP-019, AGP-020)")),
            );
            p.insert("correlationId".into(), val);
        }
    }
    if let Some(c) = &asked.correlation {
        if (ty == "response" || ty == "error") && p.get("correlationId") != Some(&json!(c)) {
            let carried = match p.get("correlationId") {
                Some(x) => format!("correlationId {x}"),
                None => "no correlationId".into(),
            };
            let f = if ty == "response" {
                CORRELATIONID_NOT_ECHOED.found(format!(
                    "a response carries {carried}, not the request's {c:?} (AGP-019, AGP-A7)"
                ))
            } else {
                CORRELATIONID_NOT_ECHOED_IN_ERRORS.found(format!(
                    "an error carries {carried}, not the request's {c:?} (AGP-020, AGP-A7)"
                ))
            };
            ctx.finding(f);
        }
    }
}

/// The payload schema of the type, for what the checks above leave.
fn payload_schema(ctx: &mut Ctx, p: &Map<String, Value>, ty: &str) {
    let schema = match ty {
        "hello" => Some(("agentprotocol/hello-payload", &SCHEMA_HELLO_PAYLOAD)),
        "response" => Some(("agentprotocol/response-payload", &SCHEMA_RESPONSE_PAYLOAD)),
        "error" => Some(("agentprotocol/error-payload", &SCHEMA_ERROR_PAYLOAD)),
        _ => None,
    };
    if let Some((name, family)) = schema {
        let value = Value::Object(p.clone());
        // Members judged above are left out: one deviation, one finding.
        let judged = ["/", "/correlationId", "/code", "/message", "/status"];
        for f in schema_findings(&ctx.shared.schemas, name, (RULES, family), &value) {
            if judged.contains(&f.detail()) {
                continue;
            }
            ctx.finding(f);
        }
    }
}

/// An error payload: code and message where the target put them, the code's
/// spelling against the table (a warning otherwise, AGP-022).
fn read_error_payload(ctx: &mut Ctx, p: &mut Map<String, Value>) {
    if !p.contains_key("code") {
        match p.get("error").cloned() {
            Some(Value::Object(e)) => {
                ctx.finding(ERROR_PAYLOAD_NESTED.found(format!(
                    "the error payload nests its members under payload.error: {} (AGP-020)",
                    shown(&Value::Object(e.clone()).to_string())
                )));
                for (k, x) in e {
                    p.entry(k).or_insert(x);
                }
            }
            Some(Value::String(code)) => {
                ctx.finding(ERROR_PAYLOAD_NESTED.found(format!(
                    "the error payload names its code in `error` ({code:?}), not `code` (AGP-020)"
                )));
                p.insert("code".into(), json!(code));
            }
            _ => {}
        }
    }
    let message = p.get("message").and_then(Value::as_str).map(String::from);
    match p.get("code").cloned() {
        Some(Value::String(code)) if CODES.contains(&code.as_str()) => {}
        Some(Value::String(code)) => {
            let said = message
                .as_deref()
                .map(|m| format!(": {}", quote(m)))
                .unwrap_or_default();
            match table_code(&code) {
                Some(known) => {
                    ctx.finding(
                        ERROR_CODE_SPELLING.found(format!("error code {code:?} is {known} spelled another way (AGP-022, a warning){said}")),
                    );
                    p.insert("code".into(), json!(known));
                }
                None => ctx.finding(unknown_code(&code, message.as_deref())),
            }
        }
        _ => ctx.finding(no_code(&Value::Object(p.clone()))),
    }
    if !p.get("message").is_some_and(Value::is_string) {
        ctx.finding(ERROR_PAYLOAD_MESSAGE.found(format!(
                    "an error's message is {}, not a string (AGP-020)",
                    p.get("message")
                        .map(|m| m.to_string())
                        .unwrap_or("missing".into())
                )));
    }
}

/// The verdict on an error code outside agentprotocol.md's table: a warning
/// (AGP-022: "any other code is a warning"). The live fuzzer takes the same verdict.
pub fn unknown_code(code: &str, message: Option<&str>) -> Finding {
    let said = message
        .map(|m| format!(": {}", quote(m)))
        .unwrap_or_default();
    ERROR_CODE_UNKNOWN.found(format!(
        "error code {code:?} is not in agentprotocol.md's table (AGP-022, a warning){said}"
    ))
}

pub(super) fn no_code(p: &Value) -> Finding {
    let text = match p.get("code") {
        None => format!("an error carries no code: {}", shown(&p.to_string())),
        Some(c) => format!("an error's code is {c}, not a string"),
    };
    ERROR_PAYLOAD_CODE.found(format!("{text} (AGP-020)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respelled_codes_are_read_as_the_table_code() {
        assert_eq!(table_code("invalid_message"), Some("INVALID_MESSAGE"));
        assert_eq!(table_code("InvalidSignature"), Some("INVALID_SIGNATURE"));
        assert_eq!(table_code("rate-limited"), Some("RATE_LIMITED"));
        assert_eq!(table_code("NOT_FOUND"), None);
    }

    #[test]
    fn unknown_codes_warn() {
        let f = unknown_code("NOT_FOUND", Some("no"));
        assert_eq!(f.outcome, crate::finding::Verdict::Warn);
    }
}
