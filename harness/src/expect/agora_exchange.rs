//! agora-exchange expectations: requests, reply checks, the protocol fixture.

use crate::case::{fail, skip, Step};
use crate::drive::http::HttpReply;
use crate::schemas::Schemas;
use crate::script::Ctx;
use reference_impl::agora_exchange::document::{self, is_sha1_hex, sha1_hex};
use reference_impl::wire::{jcs, json};
use serde_json::{json, Value};

/// A reply after the checks every reply must pass.
#[derive(Debug, Clone)]
pub struct Reply {
    pub http: u16,
    /// The JSON body, when there is one.
    pub json: Option<Value>,
}

impl Reply {
    pub fn status(&self) -> Option<&str> {
        self.json.as_ref()?.get("status")?.as_str()
    }

    pub fn error(&self) -> Option<&str> {
        self.json.as_ref()?.get("error")?.as_str()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.json.as_ref()?.get(key)
    }

    pub fn is_success(&self) -> bool {
        self.http == 200 && self.status() == Some("success")
    }

    pub fn is_agora_failure(&self) -> bool {
        self.http == 200 && self.status() == Some("failure")
    }

    pub fn describe(&self) -> String {
        match &self.json {
            Some(j) => format!("HTTP {} {}", self.http, j),
            None => format!("HTTP {} (no JSON body)", self.http),
        }
    }
}

fn is_json_media_type(ct: Option<&str>) -> bool {
    ct.and_then(|c| c.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// POSTs a JSON request to `path` (empty: the base URL).
pub async fn post(ctx: &mut Ctx, path: &str, request: &Value) -> Step<Reply> {
    let bytes = serde_json::to_vec(request).unwrap_or_default();
    post_bytes(ctx, path, bytes, &[]).await
}

/// POSTs raw bytes with `Content-Type: application/json` plus `headers`.
pub async fn post_bytes(
    ctx: &mut Ctx,
    path: &str,
    bytes: Vec<u8>,
    headers: &[(&str, &str)],
) -> Step<Reply> {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    let r = ctx
        .http(reqwest::Method::POST, path, &all, Some(bytes))
        .await?;
    check_reply(ctx, &r)
}

/// What the reply checks found: the reply, or why it fails; warnings and notes.
#[derive(Debug, Clone)]
pub struct Judged {
    pub reply: Reply,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

/// The checks every reply gets (AEX-004, 009, 010, 011, 012, 020, 022, 023, 027, 058),
/// without a case context, so that vectors can be judged the same way.
pub fn judge(schemas: &Schemas, r: &HttpReply) -> Result<Judged, String> {
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    if r.status != 200 {
        if !is_json_media_type(r.content_type.as_deref()) {
            warnings.push(format!(
                "HTTP {} reply has Content-Type {:?}, not application/json (AEX-A15)",
                r.status, r.content_type
            ));
        }
        let json = serde_json::from_slice(&r.body).ok();
        return Ok(Judged {
            reply: Reply {
                http: r.status,
                json,
            },
            warnings,
            notes,
        });
    }
    if !is_json_media_type(r.content_type.as_deref()) {
        return Err(format!(
            "HTTP 200 reply has Content-Type {:?}, not application/json (AEX-004)",
            r.content_type
        ));
    }
    let tree = json::parse(&r.body).map_err(|e| format!("the reply is not JSON (AEX-058): {e}"))?;
    if let Err(e) = jcs::canonicalize(&r.body) {
        if matches!(e.kind, jcs::CanonErrorKind::DuplicateName(_)) {
            warnings.push(format!("the reply repeats a member name (AEX-058): {e}"));
        }
    }
    let v = tree.to_serde();
    if !v.is_object() {
        return Err("the reply is not a JSON object (AEX-009)".into());
    }
    schemas.check("agora-exchange/response", &v).map_err(|e| {
        format!("the reply violates the response schema (AEX-009/010/022/027): {e}")
    })?;
    let status = v["status"].as_str().unwrap_or_default();
    let (has_body, has_error) = (v.get("body").is_some(), v.get("error").is_some());
    match status {
        "success" if !has_body => {
            warnings.push("a success reply without body (AEX-011, AEX-A4)".into())
        }
        "success" if has_error => {
            warnings.push("a success reply that carries error (AEX-012, AEX-A4)".into())
        }
        "failure" if has_body => {
            warnings.push("a failure reply that carries body (AEX-011, AEX-A4)".into())
        }
        _ => {}
    }
    if let Some(e) = v.get("conversationExpires").and_then(Value::as_i64) {
        if e >= 1_000_000_000_000 {
            warnings.push(format!(
                "conversationExpires {e} looks like milliseconds, not Unix seconds (AEX-A11)"
            ));
        }
    }
    let known = [
        "status",
        "body",
        "error",
        "conversationId",
        "conversationExpires",
    ];
    if let Some(o) = v.as_object() {
        let extra: Vec<&String> = o.keys().filter(|k| !known.contains(&k.as_str())).collect();
        if !extra.is_empty() {
            notes.push(format!("extra reply members (allowed, AEX-023): {extra:?}"));
        }
    }
    Ok(Judged {
        reply: Reply {
            http: 200,
            json: Some(v),
        },
        warnings,
        notes,
    })
}

/// [`judge`] inside a case: warnings and notes go to the case.
pub fn check_reply(ctx: &mut Ctx, r: &HttpReply) -> Step<Reply> {
    match judge(&ctx.shared.schemas, r) {
        Ok(j) => {
            for w in j.warnings {
                ctx.warn(w);
            }
            for n in j.notes {
                ctx.note(n);
            }
            Ok(j.reply)
        }
        Err(m) => fail(m),
    }
}

/// HTTP 200 with status success.
pub fn expect_success(r: &Reply, what: &str) -> Step<()> {
    if r.is_success() {
        Ok(())
    } else {
        fail(format!(
            "{what}: expected HTTP 200 with status success, got {}",
            r.describe()
        ))
    }
}

/// A rejection: HTTP 400 or HTTP 200 with status failure; a success fails.
pub fn expect_rejected(ctx: &mut Ctx, r: &Reply, what: &str) -> Step<()> {
    if r.http == 400 || r.is_agora_failure() {
        ctx.checked(format!("{what}: rejected ({})", r.describe()));
        Ok(())
    } else {
        fail(format!(
            "{what}: expected HTTP 400 or HTTP 200 with status failure, got {}",
            r.describe()
        ))
    }
}

/// A protocol the target supports: its hash, its text when known, and bodies that
/// follow and break it when known.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub hash: String,
    pub text: Option<String>,
    pub valid_body: Value,
    pub invalid_body: Option<Value>,
}

/// Reads `GET {url}/wellknown`: `Ok(None)` when the target has no such endpoint.
pub async fn wellknown(ctx: &mut Ctx) -> Step<Option<serde_json::Map<String, Value>>> {
    let r = ctx
        .http(reqwest::Method::GET, "wellknown", &[], None)
        .await?;
    if r.status == 404 {
        return Ok(None);
    }
    if r.status != 200 {
        return fail(format!("GET /wellknown answered HTTP {}", r.status));
    }
    if !is_json_media_type(r.content_type.as_deref()) {
        return fail(format!(
            "GET /wellknown has Content-Type {:?} (AEX-004)",
            r.content_type
        ));
    }
    let v: Value = match json::parse(&r.body) {
        Ok(t) => t.to_serde(),
        Err(e) => return fail(format!("/wellknown is not JSON: {e}")),
    };
    if let Err(e) = ctx.shared.schemas.check("agora-exchange/wellknown", &v) {
        return fail(format!("/wellknown (AEX-039/045): {e}"));
    }
    match v {
        Value::Object(m) => Ok(Some(m)),
        _ => fail("/wellknown is not a JSON object (AEX-045)"),
    }
}

/// The strings of a /wellknown entry that hash to `key` (AEX-A7: each alone, the
/// concatenation, the newline-joined concatenation).
pub fn document_for(key: &str, sources: &[Value]) -> Option<String> {
    let strings: Vec<&str> = sources.iter().filter_map(Value::as_str).collect();
    let mut candidates: Vec<String> = strings.iter().map(|s| s.to_string()).collect();
    candidates.push(strings.concat());
    candidates.push(strings.join("\n"));
    candidates
        .into_iter()
        .find(|c| sha1_hex(c.as_bytes()).eq_ignore_ascii_case(key))
}

/// The protocol the cases use: the profile's, else the agentconform echo document when
/// the target lists it, else the first /wellknown entry. Skips when there is none.
pub async fn fixture(ctx: &mut Ctx) -> Step<Fixture> {
    let echo = document::ProtocolDocument::new(document::ECHO_DOCUMENT);
    let p = ctx.profile().agora_exchange.clone();
    let parse = |s: &Option<String>| {
        s.as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
    };
    if let Some(hash) = p.protocol_hash {
        let is_echo = hash.eq_ignore_ascii_case(&echo.hash);
        return Ok(Fixture {
            text: p.protocol_document.or(is_echo.then(|| echo.text.clone())),
            valid_body: parse(&p.valid_body).unwrap_or_else(|| json!({"text": "hi"})),
            invalid_body: parse(&p.invalid_body).or(is_echo.then(|| json!({"txt": 1}))),
            hash,
        });
    }
    let Some(known) = wellknown(ctx).await? else {
        return skip("the target has no /wellknown and the profile names no protocol_hash");
    };
    let key = if known.keys().any(|k| k.eq_ignore_ascii_case(&echo.hash)) {
        echo.hash.clone()
    } else {
        match known.keys().next() {
            Some(k) => k.clone(),
            None => {
                return skip("/wellknown lists no protocol and the profile names no protocol_hash")
            }
        }
    };
    let is_echo = key == echo.hash;
    let text = known
        .get(&key)
        .and_then(Value::as_array)
        .and_then(|s| document_for(&key, s));
    Ok(Fixture {
        hash: key,
        text,
        valid_body: parse(&p.valid_body).unwrap_or_else(|| {
            if is_echo {
                json!({"text": "hi"})
            } else {
                json!("hello")
            }
        }),
        invalid_body: parse(&p.invalid_body).or(is_echo.then(|| json!({"txt": 1}))),
    })
}

/// A random 40-hex hash no target supports.
pub fn random_hash() -> String {
    sha1_hex(reference_impl::wire::new_id().as_bytes())
}

/// Opens a conversation; skips when the target declines multi-round mode.
pub async fn open_conversation(
    ctx: &mut Ctx,
    request: Value,
) -> Step<(String, Option<i64>, Reply)> {
    let r = post(ctx, "", &request).await?;
    expect_success(&r, "multi-round request")?;
    let Some(id) = r
        .get("conversationId")
        .and_then(Value::as_str)
        .map(String::from)
    else {
        return skip("the target declined multi-round mode (no conversationId; allowed, AEX-028)");
    };
    let expires = r.get("conversationExpires").and_then(Value::as_i64);
    Ok((id, expires, r))
}

pub fn conversation_path(id: &str) -> String {
    format!(
        "conversations/{}",
        reference_impl::agora_exchange::client::percent_encode(id)
    )
}

pub fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

pub fn is_hex40(s: &str) -> bool {
    is_sha1_hex(s)
}
