//! agora-exchange expectations: requests, reply checks, the protocol fixture.
//!
//! Every reply is read leniently. A deviation that leaves it readable (another
//! Content-Type, a status word in another case or another word, the failure text in
//! `message` instead of `error`, a conversation without `conversationExpires`, a
//! protocol named by another hash form) is one typed finding with a stable key,
//! owned by the case whose subject that rule is, and the reply is read on, so that
//! the case that met it still judges its own subject. Only a reply with nothing
//! usable left (not JSON, not an object, no recognisable status) blocks the case.

use super::rules;
use crate::case::{fail, skip, Step, Stop};
use crate::drive::http::HttpReply;
use crate::finding::{quote, Finding, Verdict};
use crate::rules::Rule;
use crate::schemas::Schemas;
use crate::script::Ctx;
use reference_impl::agora_exchange::document::{self, hash_form, is_sha1_hex, sha1_hex, HashForm};
use reference_impl::wire::{jcs, json};
use serde_json::{json, Map, Value};

/// The rules that are the subject of the reply-shape case.
pub static FAILURE_SHAPE_RULES: &[&Rule] = &[
    &rules::REPLY_FAILURE_SHAPE,
    &rules::REPLY_SUCCESS_WITHOUT_BODY,
    &rules::REPLY_SUCCESS_WITH_ERROR,
    &rules::REPLY_FAILURE_WITH_BODY,
];
/// The rules that are the subject of the single-round case.
pub static SHAPE_RULES: &[&Rule] = &[
    &rules::REPLY_CONTENT_TYPE,
    &rules::REPLY_NOT_JSON,
    &rules::REPLY_NOT_OBJECT,
    &rules::REPLY_DUPLICATE_MEMBER,
    &rules::REPLY_STATUS,
    &rules::REPLY_STATUS_CASE,
    &rules::REPLY_BODY_TYPE,
];
/// The rules that are the subject of the multiround-start case.
pub static CONVERSATION_RULES: &[&Rule] = &[
    &rules::REPLY_CONVERSATION_ID,
    &rules::REPLY_CONVERSATION_EXPIRES,
    &rules::REPLY_CONVERSATION_EXPIRES_MS,
];

/// Status words other than "failure" that servers use for a failure.
const FAILURE_WORDS: &[&str] = &["error", "fail", "failed", "err", "ko", "rejected"];
/// Status words other than "success" that servers use for a success.
const SUCCESS_WORDS: &[&str] = &["ok", "succeeded", "done"];

/// What a reply says, read leniently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    Success,
    Failure,
    /// No status to read (a transport-level reply without one, or not JSON).
    Unknown,
}

/// A reply after the checks every reply gets.
#[derive(Debug, Clone)]
pub struct Reply {
    pub http: u16,
    /// The JSON body, when there is one.
    pub json: Option<Value>,
    /// The status, read leniently ("Success", "error" and the like count).
    pub said: Said,
}

impl Reply {
    /// The status read leniently: "success" or "failure".
    pub fn status(&self) -> Option<&'static str> {
        match self.said {
            Said::Success => Some("success"),
            Said::Failure => Some("failure"),
            Said::Unknown => None,
        }
    }

    /// The failure text, wherever the target put it (`error`, `error.message`,
    /// `message`, `detail`, or on a failure its `body`).
    pub fn error(&self) -> Option<&str> {
        let v = self.json.as_ref()?;
        failure_text(v, self.said == Said::Failure).map(|(_, t)| t)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.json.as_ref()?.get(key)
    }

    pub fn is_success(&self) -> bool {
        self.http == 200 && self.said == Said::Success
    }

    pub fn is_agora_failure(&self) -> bool {
        self.http == 200 && self.said == Said::Failure
    }

    /// A transport-level refusal: any 4xx (the spec names a code only for some).
    pub fn is_client_error(&self) -> bool {
        (400..500).contains(&self.http)
    }

    pub fn conversation_id(&self) -> Option<&str> {
        self.get("conversationId")?.as_str()
    }

    /// conversationExpires read leniently: an integer, a whole float or a numeric
    /// string (the reply checks report the form).
    pub fn expires(&self) -> Option<i64> {
        let e = self.get("conversationExpires")?;
        integer(e).or_else(|| e.as_str()?.trim().parse().ok())
    }

    pub fn describe(&self) -> String {
        match &self.json {
            Some(j) => format!("HTTP {} {}", self.http, j),
            None => format!("HTTP {} (no JSON body)", self.http),
        }
    }
}

fn integer(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
            .map(|f| f as i64)
    })
}

/// The failure text and the member it came from.
fn failure_text(v: &Value, failure: bool) -> Option<(&'static str, &str)> {
    let at = |p: &str| v.pointer(p).and_then(Value::as_str);
    let mut places: Vec<(&'static str, &str)> = vec![
        ("error", "/error"),
        ("error.message", "/error/message"),
        ("message", "/message"),
        ("detail", "/detail"),
        ("detail[0].msg", "/detail/0/msg"),
        ("reason", "/reason"),
        ("description", "/description"),
    ];
    if failure {
        places.extend([("body", "/body"), ("body.error", "/body/error")]);
    }
    places
        .into_iter()
        .find_map(|(name, p)| at(p).map(|t| (name, t)))
}

fn is_json_media_type(ct: Option<&str>) -> bool {
    ct.and_then(|c| c.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

fn said_bytes(body: &[u8]) -> String {
    quote(&String::from_utf8_lossy(body))
}

/// POSTs a JSON request to `path` (empty: the base URL).
///
/// A new exchange sent without `protocolSources` that is refused with words naming
/// that member is sent once more with `protocolSources: []`; when that is taken, the
/// target requires what §6.1 makes optional: one finding, and from then on every new
/// exchange of the run carries `protocolSources: []` (noted in each case), so that
/// the rest of the suite is judged. [`post_as_is`] never adds it.
pub async fn post(ctx: &mut Ctx, path: &str, request: &Value) -> Step<Reply> {
    if text_sources(request) {
        return post_sources(ctx, path, request).await;
    }
    let adaptable = path.is_empty()
        && request.get("body").is_some()
        && request.get("protocolSources").is_none();
    if !adaptable {
        return post_as_is(ctx, path, request).await;
    }
    let mut with_sources = request.clone();
    with_sources["protocolSources"] = json!([]);
    if ctx
        .shared
        .adapted
        .has(rules::REQUEST_PROTOCOL_SOURCES_OPTIONAL.key)
    {
        ctx.note(format!(
            "protocolSources [] added: the target refuses a new exchange without it ({})",
            rules::REQUEST_PROTOCOL_SOURCES_OPTIONAL.key
        ));
        return post_as_is(ctx, path, &with_sources).await;
    }
    let r = post_as_is(ctx, path, request).await?;
    let names_sources = |r: &Reply| {
        !r.is_success()
            && r.json.as_ref().is_some_and(|j| {
                j.to_string()
                    .to_ascii_lowercase()
                    .contains("protocolsources")
            })
    };
    if !names_sources(&r) {
        return Ok(r);
    }
    ctx.note("the refusal names protocolSources, which a client may leave out (§6.1): the same request once more with protocolSources []");
    let retry = post_as_is(ctx, path, &with_sources).await?;
    if !retry.is_success() {
        return Ok(r);
    }
    ctx.shared
        .adapted
        .adopt(rules::REQUEST_PROTOCOL_SOURCES_OPTIONAL.key);
    ctx.finding(rules::REQUEST_PROTOCOL_SOURCES_OPTIONAL.found(format!(
            "the target requires protocolSources, which agora-exchange.txt §6.1 and §8.3 make optional: a request without it drew {}, the same with protocolSources [] drew {}; the rest of the run sends protocolSources []",
            r.describe(),
            retry.describe()
        )));
    Ok(retry)
}

/// The run's adaptation to a target that takes protocol documents only by
/// reference: the rest of the run sends each as a loopback URL. No finding:
/// agora-exchange.txt §6.1 allows "the full text or references".
pub const SOURCES_BY_URL: &str = "agora-exchange/adapted:protocol-sources-url";

fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// The request carries protocol documents as text in `protocolSources`.
fn text_sources(request: &Value) -> bool {
    request
        .get("protocolSources")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty() && a.iter().all(|s| s.as_str().is_some_and(|t| !is_url(t))))
}

/// The request with each document of its `protocolSources` replaced by the URL at
/// which the harness serves it on loopback (`Documents`).
async fn by_reference(ctx: &mut Ctx, request: &Value) -> Step<Value> {
    let mut r = request.clone();
    let texts: Vec<String> = r["protocolSources"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut urls = Vec::new();
    for t in texts {
        let name = format!("{}.md", sha1_hex(t.as_bytes()));
        match ctx.shared.documents.serve(&name, &t).await {
            Ok(url) => urls.push(json!(url)),
            Err(e) => return crate::case::skip(e),
        }
    }
    ctx.note(format!(
        "protocolSources by reference: the harness serves the document at {}",
        crate::finding::json(&urls)
    ));
    r["protocolSources"] = Value::Array(urls);
    Ok(r)
}

/// POSTs a request whose `protocolSources` holds documents as text, in the form
/// the profile names (`[agora-exchange] protocol_sources`). A refusal in words
/// naming the sources is answered by the same request with the documents by
/// reference; when that is taken, the rest of the run sends references
/// ([`SOURCES_BY_URL`]), with a note and no finding.
async fn post_sources(ctx: &mut Ctx, path: &str, request: &Value) -> Step<Reply> {
    let by_url = ctx.profile().agora_exchange.protocol_sources == crate::profile::SourcesForm::Url
        || ctx.shared.adapted.has(SOURCES_BY_URL);
    if by_url {
        let r = by_reference(ctx, request).await?;
        return post_as_is(ctx, path, &r).await;
    }
    let r = post_as_is(ctx, path, request).await?;
    let names_sources = !r.is_success()
        && r.json
            .as_ref()
            .is_some_and(|j| j.to_string().to_ascii_lowercase().contains("source"));
    if !names_sources {
        return Ok(r);
    }
    ctx.note("the refusal names the protocol's sources: the same request once more with the document by reference (agora-exchange.txt §6.1 allows the text or a reference)");
    let referenced = by_reference(ctx, request).await?;
    let retry = post_as_is(ctx, path, &referenced).await?;
    if !retry.is_success() {
        return Ok(r);
    }
    ctx.shared.adapted.adopt(SOURCES_BY_URL);
    ctx.note(format!(
        "the target takes protocol documents by reference only: the text drew {}, the reference {}; the rest of the run sends references ({SOURCES_BY_URL}; set [agora-exchange] protocol_sources = \"url\")",
        r.describe(),
        retry.describe()
    ));
    Ok(retry)
}

/// POSTs a JSON request to `path` exactly as given.
pub async fn post_as_is(ctx: &mut Ctx, path: &str, request: &Value) -> Step<Reply> {
    let bytes = serde_json::to_vec(request).unwrap_or_default();
    post_bytes(ctx, path, bytes, &[]).await
}

/// The case's control: a plain single-round request, which the target must take
/// before a refusal in the same case counts. A refusal of it is one finding, keyed
/// by the target's words, which blocks the case.
pub async fn control(ctx: &mut Ctx) -> Step<()> {
    let r = post(ctx, "", &json!({"protocolHash": null, "body": "ping"})).await?;
    let what = "a plain single-round request (the case's control)";
    if r.is_success() {
        ctx.control(what);
        return Ok(());
    }
    let status = r
        .status()
        .map(String::from)
        .unwrap_or_else(|| format!("HTTP {}", r.http));
    Err(ctx.block(crate::rules::refusal(
        (&rules::REFUSED, "agora-exchange", &[]),
        &status,
        r.error().unwrap_or_default(),
        what,
    )))
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

/// POSTs bytes the server cannot read as a request (malformed JSON, a JSON array):
/// the reply is read as a transport-level one whatever its status, so that a 2xx
/// body, which answers no Agora request, is judged by its status alone (its shape
/// would be a second finding of the same cause).
pub async fn post_unreadable(ctx: &mut Ctx, path: &str, bytes: Vec<u8>) -> Step<Reply> {
    let r = ctx
        .http(
            reqwest::Method::POST,
            path,
            &[("content-type", "application/json")],
            Some(bytes),
        )
        .await?;
    let reading = transport_reply(&r);
    for f in reading.findings {
        ctx.finding(f);
    }
    match reading.reply {
        Ok(r) => Ok(r),
        Err(f) => Err(ctx.block(f)),
    }
}

/// Everything the reply checks found in one reply.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The reply read leniently, or the finding that leaves nothing usable.
    pub reply: Result<Reply, Finding>,
    /// Deviations read past.
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

/// The checks every reply gets (AEX-004, 009, 010, 011, 012, 020, 021, 022, 023,
/// 027, 058; ambiguities A4, A11, A15, A22), without a case context.
///
/// HTTP 200 replies are Agora replies and are judged; other statuses are
/// transport-level replies, of which only the Content-Type is judged (a warning,
/// AEX-A15) and whose JSON body, if any, is read for its failure text.
pub fn read_reply(schemas: &Schemas, r: &HttpReply) -> Reading {
    if r.status != 200 {
        return transport_reply(r);
    }
    let mut findings = Vec::new();
    let ct = r.content_type.as_deref();
    if !is_json_media_type(ct) {
        findings.push(content_type_finding(ct));
    }
    let blocked = |findings: Vec<Finding>, f: Finding| Reading {
        reply: Err(f),
        findings,
        notes: Vec::new(),
    };
    let v = match reply_object(&r.body, &mut findings) {
        Ok(v) => v,
        Err(f) => return blocked(findings, f),
    };
    let shown = quote(&v.to_string());
    let (said, word) = lenient_status(&v);
    if let Err(f) = check_status_word(said, &word, &shown, &mut findings) {
        return blocked(findings, f);
    }
    match said {
        Said::Failure => check_failure_shape(&v, &word, &shown, &mut findings),
        Said::Success => check_success_shape(&v, &shown, &mut findings),
        Said::Unknown => {}
    }
    check_body_type(&v, &shown, &mut findings);
    conversation_checks(&v, &shown, &mut findings);
    check_schema_rest(schemas, &v, &mut findings);
    let notes = extra_members(&v);
    Reading {
        reply: Ok(Reply {
            http: 200,
            json: Some(v),
            said,
        }),
        findings,
        notes,
    }
}

/// A reply of another status than 200: only its Content-Type is judged (a warning,
/// AEX-A15); its JSON body, if any, is read for what it says.
fn transport_reply(r: &HttpReply) -> Reading {
    let mut findings = Vec::new();
    let ct = r.content_type.as_deref();
    if !is_json_media_type(ct) {
        findings.push(rules::REPLY_ERROR_CONTENT_TYPE.found(format!(
            "an HTTP {} reply has Content-Type {}, not application/json",
            r.status,
            quote(ct.unwrap_or("(none)"))
        )));
    }
    let json: Option<Value> = serde_json::from_slice(&r.body).ok();
    let said = json.as_ref().map_or(Said::Unknown, |v| lenient_status(v).0);
    Reading {
        reply: Ok(Reply {
            http: r.status,
            json,
            said,
        }),
        findings,
        notes: Vec::new(),
    }
}

/// The reply's JSON object (AEX-009, AEX-058), a repeated member name being a
/// warning; or the finding that leaves nothing to read.
fn reply_object(body: &[u8], findings: &mut Vec<Finding>) -> Result<Value, Finding> {
    let tree = json::parse(body).map_err(|e| {
        rules::REPLY_NOT_JSON.found(format!(
            "an HTTP 200 reply is not JSON ({e}): {}",
            said_bytes(body)
        ))
    })?;
    if let Err(e) = jcs::canonicalize(body) {
        if matches!(e.kind, jcs::CanonErrorKind::DuplicateName(_)) {
            findings.push(
                rules::REPLY_DUPLICATE_MEMBER.found(format!("a reply repeats a member name: {e}")),
            );
        }
    }
    let v = tree.to_serde();
    if v.is_object() {
        Ok(v)
    } else {
        Err(rules::REPLY_NOT_OBJECT.found(format!(
            "an HTTP 200 reply is not a JSON object: {}",
            said_bytes(body)
        )))
    }
}

/// The status word: exactly "success" or "failure" (AEX-009; another case is one
/// finding, AEX-A22). A word that says neither blocks the reply.
fn check_status_word(
    said: Said,
    word: &Word,
    shown: &str,
    findings: &mut Vec<Finding>,
) -> Result<(), Finding> {
    match word {
        Word::Case(w) => findings.push(
            rules::REPLY_STATUS_CASE.found(format!(
                    "replies spell the status {w:?}, not exactly \"success\" or \"failure\" in lower case: {shown}"
                )),
        ),
        Word::Other(what) if said != Said::Failure => {
            let f = rules::REPLY_STATUS.found(format!("a reply's status is {what}, not \"success\" or \"failure\": {shown}"));
            if said == Said::Unknown {
                return Err(f);
            }
            findings.push(f);
        }
        // A failure's word is judged with the rest of its shape.
        Word::Exact | Word::Failure(_) | Word::Other(_) => {}
    }
    Ok(())
}

/// A failure: status "failure" and a string `error` (AEX-009, AEX-010), one finding
/// for the whole shape; no body (a warning, AEX-011, AEX-A4).
fn check_failure_shape(v: &Value, word: &Word, shown: &str, findings: &mut Vec<Finding>) {
    let mut parts = Vec::new();
    match word {
        Word::Failure(w) => {
            parts.push(format!("status {w:?} instead of \"failure\""));
        }
        Word::Other(what) => {
            parts.push(format!("status {what} instead of \"failure\""));
        }
        Word::Exact | Word::Case(_) => {}
    }
    if !v["error"].is_string() {
        parts.push(match (v.get("error"), failure_text(v, true)) {
            (Some(e), _) => format!("error is {e}, not a string"),
            (None, Some((member, _))) => {
                format!("the failure is described in {member:?}, not in a string \"error\"")
            }
            (None, None) => "no error member describes the failure".to_string(),
        });
    }
    if !parts.is_empty() {
        findings.push(
            rules::REPLY_FAILURE_SHAPE.found(format!(
                    "failure replies read {shown}: {}; agora-exchange.txt §5.2 wants {{\"status\": \"failure\", \"error\": \"…\"}}",
                    parts.join("; ")
                )),
        );
    } else if v.get("body").is_some() {
        findings.push(
            rules::REPLY_FAILURE_WITH_BODY.found(format!("a failure reply carries body: {shown}")),
        );
    }
}

/// A success: a body (AEX-011) and no error (AEX-012), both warnings (AEX-A4).
fn check_success_shape(v: &Value, shown: &str, findings: &mut Vec<Finding>) {
    if v.get("body").is_none() {
        findings.push(
            rules::REPLY_SUCCESS_WITHOUT_BODY
                .found(format!("a success reply without body: {shown}")),
        );
    }
    if v.get("error").is_some() {
        findings.push(
            rules::REPLY_SUCCESS_WITH_ERROR
                .found(format!("a success reply carries error: {shown}")),
        );
    }
}

/// body: a string or an object (AEX-020).
fn check_body_type(v: &Value, shown: &str, findings: &mut Vec<Finding>) {
    if let Some(b) = v.get("body").filter(|b| !(b.is_string() || b.is_object())) {
        findings.push(rules::REPLY_BODY_TYPE.found(format!(
            "a reply's body is {b}, not a string or an object: {shown}"
        )));
    }
}

/// The schema, for anything the explicit checks do not judge: every member it
/// constrains is judged by them, so this only speaks if the schema grows.
fn check_schema_rest(schemas: &Schemas, v: &Value, findings: &mut Vec<Finding>) {
    const JUDGED: [&str; 6] = [
        "",
        "status",
        "error",
        "body",
        "conversationId",
        "conversationExpires",
    ];
    let Ok(list) = schemas.violations("agora-exchange/response", v) else {
        return;
    };
    for viol in list {
        let top = viol.pointer.split('/').nth(1).unwrap_or("");
        if JUDGED.contains(&top) {
            continue;
        }
        let key = format!("agora-exchange/schema:response:{}", viol.shape());
        if findings.iter().any(|f| f.key == key) {
            continue;
        }
        findings.push(rules::SCHEMA_RESPONSE.found_as(
            viol.shape(),
            format!("reply at {}: {}", viol.pointer, viol.message),
        ));
    }
}

/// Members beyond the spec's, noted (allowed, AEX-023).
fn extra_members(v: &Value) -> Vec<String> {
    let known = [
        "status",
        "body",
        "error",
        "conversationId",
        "conversationExpires",
    ];
    let extra: Vec<&String> = v
        .as_object()
        .map(|o| o.keys().filter(|k| !known.contains(&k.as_str())).collect())
        .unwrap_or_default();
    if extra.is_empty() {
        Vec::new()
    } else {
        vec![format!("extra reply members (allowed, AEX-023): {extra:?}")]
    }
}

/// How the status word deviates, if it does.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Word {
    Exact,
    /// "Success", "FAILURE": the right word in another case.
    Case(String),
    /// "error", "fail": another word for a failure.
    Failure(String),
    /// Missing, not a string, or a word read only by the reply's other members.
    Other(String),
}

/// Reads the status leniently: the right word in any case, the failure and success
/// words servers use, else what the other members say (an error text without body
/// is a failure, a body without error is a success).
fn lenient_status(v: &Value) -> (Said, Word) {
    let word = v.get("status");
    match word.and_then(Value::as_str) {
        Some("success") => return (Said::Success, Word::Exact),
        Some("failure") => return (Said::Failure, Word::Exact),
        Some(s) if s.eq_ignore_ascii_case("success") => {
            return (Said::Success, Word::Case(s.to_string()))
        }
        Some(s) if s.eq_ignore_ascii_case("failure") => {
            return (Said::Failure, Word::Case(s.to_string()))
        }
        Some(s) if FAILURE_WORDS.contains(&s.to_ascii_lowercase().as_str()) => {
            return (Said::Failure, Word::Failure(s.to_string()))
        }
        Some(s) if SUCCESS_WORDS.contains(&s.to_ascii_lowercase().as_str()) => {
            return (Said::Success, Word::Other(format!("{s:?}")))
        }
        _ => {}
    }
    let what = match word {
        None => "missing".to_string(),
        Some(w) => w.to_string(),
    };
    let has_body = v.get("body").is_some();
    let said = if has_body && v.get("error").is_none() {
        Said::Success
    } else if failure_text(v, false).is_some() {
        Said::Failure
    } else {
        Said::Unknown
    };
    (said, Word::Other(what))
}

fn conversation_checks(v: &Value, shown: &str, findings: &mut Vec<Finding>) {
    let id = v.get("conversationId");
    let exp = v.get("conversationExpires");
    match id {
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(other) => findings.push(rules::REPLY_CONVERSATION_ID.found(format!(
            "conversationId is {other}, not a non-empty string: {shown}"
        ))),
        None => {
            if exp.is_some() {
                findings.push(rules::REPLY_CONVERSATION_ID.found(format!(
                    "a reply carries conversationExpires without conversationId: {shown}"
                )));
            }
        }
    }
    if id.is_none() {
        return;
    }
    match exp {
        None => findings.push(expires_finding(&format!(
            "a reply carries conversationId but no conversationExpires: {shown}"
        ))),
        Some(e) => match integer(e) {
            None => findings.push(rules::REPLY_CONVERSATION_EXPIRES.found(format!(
                "conversationExpires is {e}, not an integer Unix timestamp: {shown}"
            ))),
            Some(n) if n >= 1_000_000_000_000 => {
                findings.push(rules::REPLY_CONVERSATION_EXPIRES_MS.found(format!(
                    "conversationExpires {n} looks like milliseconds, not Unix seconds"
                )))
            }
            Some(_) => {}
        },
    }
}

/// An approved conversation without conversationExpires (AEX-027).
pub fn expires_finding(summary: &str) -> Finding {
    rules::REPLY_CONVERSATION_EXPIRES.found(summary)
}

/// An HTTP 200 reply that is not application/json (AEX-004; AEX-A15: the row fails).
fn content_type_finding(ct: Option<&str>) -> Finding {
    rules::REPLY_CONTENT_TYPE.found(format!(
        "HTTP 200 replies have Content-Type {}, not application/json",
        quote(ct.unwrap_or("(none)"))
    ))
}

/// What the reply checks make of one reply, for the vectors: `Err` with every failing
/// finding, or the reply with the warnings.
#[derive(Debug, Clone)]
pub struct Judged {
    pub reply: Reply,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

/// [`read_reply`] as a verdict: invalid (`Err`), warning (`Ok` with warnings) or
/// valid. The vectors judge replies with it.
pub fn judge(schemas: &Schemas, r: &HttpReply) -> Result<Judged, String> {
    let reading = read_reply(schemas, r);
    let mut failing: Vec<String> = reading
        .findings
        .iter()
        .filter(|f| f.outcome == Verdict::Fail)
        .map(|f| format!("{}: {}", f.key, f.summary))
        .collect();
    let reply = match reading.reply {
        Ok(r) => r,
        Err(f) => {
            failing.push(format!("{}: {}", f.key, f.summary));
            return Err(failing.join("; "));
        }
    };
    if !failing.is_empty() {
        return Err(failing.join("; "));
    }
    Ok(Judged {
        reply,
        warnings: reading
            .findings
            .iter()
            .map(|f| format!("{}: {}", f.key, f.summary))
            .collect(),
        notes: reading.notes,
    })
}

/// [`read_reply`] inside a case: the findings and notes go to the case, which reads
/// on unless nothing usable is left.
pub fn check_reply(ctx: &mut Ctx, r: &HttpReply) -> Step<Reply> {
    let reading = read_reply(&ctx.shared.schemas, r);
    for f in reading.findings {
        ctx.finding(f);
    }
    for n in reading.notes {
        ctx.note(n);
    }
    match reading.reply {
        Ok(r) => Ok(r),
        Err(f) => Err(ctx.block(f)),
    }
}

/// Records a deviation of the case's own subject and notes it (the case goes on).
pub fn own(ctx: &mut Ctx, f: Finding) {
    ctx.note(format!("{}: {}", f.key, f.summary));
    ctx.deviation(f);
}

/// Takes the findings of `rules` the case met as its own subject, and notes what
/// they say (failing ones last, so that the case's message names one).
pub fn claim(ctx: &mut Ctx, rules: &[&Rule]) {
    let mut mine: Vec<Finding> = ctx
        .findings()
        .iter()
        .filter(|m| rules.iter().any(|r| r.key == m.finding.key))
        .map(|m| m.finding.clone())
        .collect();
    mine.sort_by_key(|f| f.outcome == Verdict::Fail);
    for f in mine {
        own(ctx, f);
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

/// A rejection: any HTTP 4xx (the spec names no code for most invalid requests;
/// AEX-A1, A3, A14) or HTTP 200 with status failure. A success or a 5xx fails.
pub fn expect_rejected(ctx: &mut Ctx, r: &Reply, what: &str) -> Step<()> {
    match rejected_row(ctx, r, what)? {
        None => Ok(()),
        Some(_) => fail(format!(
            "{what}: expected an HTTP 4xx or HTTP 200 with status failure, got {}",
            r.describe()
        )),
    }
}

/// Judges one row of a table of bad requests: `None` when the target refused it
/// (a refusal counts only beside an accepted control), else the row as a wrong one
/// names it, with what the target answered.
pub fn rejected_row(ctx: &mut Ctx, r: &Reply, what: &str) -> Step<Option<String>> {
    if r.is_client_error() || r.is_agora_failure() {
        ctx.checked(format!("{what}: rejected ({})", r.describe()));
        ctx.refusal_counts(what)?;
        Ok(None)
    } else {
        Ok(Some(format!("{what}: {}", r.describe())))
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
    /// The hash names the agentconform echo document (in any form).
    pub echo: bool,
    /// The hash comes from the profile, not from /wellknown.
    pub from_profile: bool,
}

/// A protocol identifier that is not 40 hex digits (AEX-039): one finding however it
/// is met (in /wellknown, in the profile), owned by the wellknown case.
pub fn hash_form_finding(what: &str, form: Option<HashForm>) -> Finding {
    let how = match form {
        Some(f) => format!("; it is the {f} form of the SHA1 of its document"),
        None => "; it is no form of the SHA1 of its document the harness recognises".into(),
    };
    rules::PROTOCOL_HASH_FORM.found(format!(
        "{what} is not the 40 hex digits of a SHA1 digest{how}"
    ))
}

/// The profile's protocol_hash, when it is not 40 hex digits: used as given, and
/// reported once (AEX-039).
pub fn check_profile_hash(ctx: &mut Ctx) {
    let p = ctx.profile().agora_exchange.clone();
    let Some(hash) = p.protocol_hash else {
        return;
    };
    if is_sha1_hex(&hash) {
        return;
    }
    let form = p
        .protocol_document
        .as_deref()
        .and_then(|t| hash_form(&hash, t.as_bytes()))
        .or_else(|| hash_form(&hash, document::ECHO_DOCUMENT.as_bytes()));
    ctx.finding(hash_form_finding(
        &format!("the protocol hash {hash:?} (profile [agora-exchange] protocol_hash)"),
        form,
    ));
}

/// An unsupported protocol refused otherwise than with HTTP 200 and status failure
/// (AEX-041, AEX-052), owned by the unsupported-protocol case.
pub fn unsupported_reply_finding(r: &Reply) -> Finding {
    rules::UNSUPPORTED_PROTOCOL_REPLY.found(format!(
            "an unsupported protocolHash drew {}; an Agora-level error needs HTTP 200 with {{\"status\": \"failure\", \"error\": \"Unsupported protocol\"}}",
            r.describe()
        ))
}

/// Reads `GET {url}/wellknown`: `Ok(None)` when the target has no such endpoint
/// (404, 405, 501). Its deviations are findings of the wellknown case; a reply with
/// nothing usable blocks.
pub async fn wellknown(ctx: &mut Ctx) -> Step<Option<Map<String, Value>>> {
    let r = ctx
        .http(reqwest::Method::GET, "wellknown", &[], None)
        .await?;
    if matches!(r.status, 404 | 405 | 501) {
        ctx.note(format!("GET /wellknown: HTTP {} (no endpoint)", r.status));
        return Ok(None);
    }
    let block = |ctx: &mut Ctx, rule: &'static Rule, summary: String| -> Stop {
        ctx.block(rule.found(summary))
    };
    if r.status != 200 {
        return Err(block(
            ctx,
            &rules::WELLKNOWN_HTTP_STATUS,
            format!(
                "GET /wellknown answered HTTP {}: {}",
                r.status,
                said_bytes(&r.body)
            ),
        ));
    }
    if !is_json_media_type(r.content_type.as_deref()) {
        ctx.finding(content_type_finding(r.content_type.as_deref()));
    }
    let v: Value = match json::parse(&r.body) {
        Ok(t) => t.to_serde(),
        Err(e) => {
            return Err(block(
                ctx,
                &rules::WELLKNOWN_NOT_JSON,
                format!("/wellknown is not JSON ({e}): {}", said_bytes(&r.body)),
            ))
        }
    };
    let Value::Object(map) = v else {
        return Err(block(
            ctx,
            &rules::WELLKNOWN_NOT_OBJECT,
            format!("/wellknown is not a JSON object: {}", quote(&v.to_string())),
        ));
    };
    for (key, sources) in &map {
        let ok = sources
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string));
        if !ok {
            ctx.finding(rules::WELLKNOWN_SOURCES.found(format!(
                "/wellknown maps {key:?} to {}, not a non-empty list of document sources",
                quote(&sources.to_string())
            )));
        }
        if !is_sha1_hex(key) {
            let list = sources.as_array().cloned().unwrap_or_default();
            let form = identify(key, &list).map(|(_, f)| f);
            ctx.finding(hash_form_finding(
                &format!("the /wellknown protocol key {key:?}"),
                form,
            ));
        }
    }
    Ok(Some(map))
}

/// What each /wellknown entry's documents say, as the wellknown case judges them: a
/// 40-hex key that is the SHA1 of none of its sources, alone or joined (AEX-038),
/// and a document whose metadata does not parse (AEX-036, AEX-037). Sources given as
/// URLs are not fetched, and a key in another form is the hash-form finding alone.
/// What passed is noted in `ctx`.
pub fn document_findings(ctx: &mut Ctx, map: &Map<String, Value>) -> Vec<Finding> {
    let mut found = Vec::new();
    for (key, sources) in map {
        let list = sources.as_array().cloned().unwrap_or_default();
        let strings: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
        if !strings.is_empty()
            && strings
                .iter()
                .all(|s| s.starts_with("http://") || s.starts_with("https://"))
        {
            ctx.note(format!(
                "{key}: sources are references; not fetched (AEX-A7)"
            ));
            continue;
        }
        match identify(key, &list) {
            None if !is_hex40(key) => {}
            None => found.push(rules::WELLKNOWN_DOCUMENT_HASH.found(format!(
                "no source of {key} (alone or joined) has that SHA1: {}",
                quote(&sources.to_string())
            ))),
            Some((text, form)) => match document::metadata(&text) {
                Err(e) => {
                    found.push(rules::WELLKNOWN_METADATA.found(format!("document {key}: {e}")))
                }
                Ok(_) => ctx.checked(format!(
                    "{key}: {form} of the SHA1 of its document; metadata verified"
                )),
            },
        }
    }
    found
}

/// The text among a /wellknown entry's sources that `key` names, and the form in
/// which it names it (AEX-A7: each string alone, the concatenation, the
/// newline-joined concatenation; AEX-A8: hex in either case).
pub fn identify(key: &str, sources: &[Value]) -> Option<(String, HashForm)> {
    let strings: Vec<&str> = sources.iter().filter_map(Value::as_str).collect();
    let mut candidates: Vec<String> = strings.iter().map(|s| s.to_string()).collect();
    candidates.push(strings.concat());
    candidates.push(strings.join("\n"));
    candidates
        .into_iter()
        .find_map(|c| hash_form(key, c.as_bytes()).map(|f| (c, f)))
}

/// The strings of a /wellknown entry that `key` names (see [`identify`]).
pub fn document_for(key: &str, sources: &[Value]) -> Option<String> {
    identify(key, sources).map(|(t, _)| t)
}

/// The protocol the cases use: the profile's, else the agentconform echo document when
/// the target lists it, else the first /wellknown entry. Skips when there is none.
/// A hash in another form than 40 hex digits is used as the target spells it, and
/// reported once.
pub async fn fixture(ctx: &mut Ctx) -> Step<Fixture> {
    let echo_text = document::ECHO_DOCUMENT;
    let names_echo = |k: &str| hash_form(k, echo_text.as_bytes()).is_some();
    let p = ctx.profile().agora_exchange.clone();
    let parse = |s: &Option<String>| {
        s.as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
    };
    if let Some(hash) = p.protocol_hash {
        check_profile_hash(ctx);
        let is_echo = names_echo(&hash);
        return Ok(Fixture {
            text: p
                .protocol_document
                .or(is_echo.then(|| echo_text.to_string())),
            valid_body: parse(&p.valid_body).unwrap_or_else(|| json!({"text": "hi"})),
            invalid_body: parse(&p.invalid_body).or(is_echo.then(|| json!({"txt": 1}))),
            hash,
            echo: is_echo,
            from_profile: true,
        });
    }
    let Some(known) = wellknown(ctx).await? else {
        return Err(no_protocol(ctx, "the target has no /wellknown"));
    };
    let key = match known
        .keys()
        .find(|k| names_echo(k))
        .or_else(|| known.keys().next())
    {
        Some(k) => k.clone(),
        None => return Err(no_protocol(ctx, "/wellknown lists no protocol")),
    };
    let is_echo = names_echo(&key);
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
        echo: is_echo,
        from_profile: false,
    })
}

/// No protocol to run the cases under: neither the profile nor /wellknown names
/// one. A setting the run lacks, not a deviation: the case is blocked by the key
/// to set.
fn no_protocol(ctx: &mut Ctx, why: &str) -> Stop {
    ctx.block(
        rules::PROFILE_PROTOCOL_HASH.found(format!("{why} and the profile names no protocol: set [agora-exchange] protocol_hash to the hash of a protocol the target supports, as it spells it, and protocol_document to its text (agentconform init writes what it can find)")),
    )
}

/// Whether a reply refuses a protocol as unsupported (HTTP 200 failure, or a 4xx,
/// whose text says so).
pub fn refuses_as_unsupported(r: &Reply) -> bool {
    (r.is_agora_failure() || r.is_client_error())
        && r.error()
            .is_some_and(|e| e.to_ascii_lowercase().contains("unsupported"))
}

/// A listed protocol refused as unsupported (AEX-046), owned by the
/// wellknown-hashes-supported case.
pub fn listed_unsupported(hash: &str, r: &Reply) -> Finding {
    rules::WELLKNOWN_LISTED_UNSUPPORTED.found(format!(
        "protocol {hash:?} is listed in /wellknown but refused: {}",
        r.describe()
    ))
}

/// A request under the fixture protocol that the target refuses as unsupported: the
/// case cannot judge its subject under that protocol and is blocked by the finding
/// that says so (a listed protocol refused, or a profile protocol the target does
/// not support).
pub fn fixture_refused(ctx: &mut Ctx, fx: &Fixture, r: &Reply) -> Step<()> {
    if !refuses_as_unsupported(r) {
        return Ok(());
    }
    let f = if fx.from_profile {
        rules::PROFILE_PROTOCOL_UNSUPPORTED.found(format!(
                "the profile's protocol_hash {:?} is refused as unsupported ({}); set [agora-exchange] protocol_hash to a protocol the target supports",
                fx.hash,
                r.describe()
            ))
    } else {
        listed_unsupported(&fx.hash, r)
    };
    Err(ctx.block(f))
}

/// A random 40-hex hash no target supports.
pub fn random_hash() -> String {
    sha1_hex(reference_impl::wire::new_id().as_bytes())
}

/// Opens a conversation (under the fixture protocol when `fx` is given); skips when
/// the target declines multi-round mode.
pub async fn open_conversation(
    ctx: &mut Ctx,
    fx: Option<&Fixture>,
    request: Value,
) -> Step<(String, Option<i64>, Reply)> {
    let r = post(ctx, "", &request).await?;
    if let Some(fx) = fx {
        fixture_refused(ctx, fx, &r)?;
    }
    expect_success(&r, "multi-round request")?;
    ctx.control("a multi-round request");
    let Some(id) = r.conversation_id().map(String::from) else {
        return skip("the target declined multi-round mode (no conversationId; allowed, AEX-028)");
    };
    let expires = r.expires();
    Ok((id, expires, r))
}

/// What the reply `r` to a follow-up in conversation `id` breaks: a conversationId
/// it carries names that conversation (the follow-up case's rule, AEX-021; none at
/// all only warns, AEX-A11).
pub fn follow_up_finding(r: &Reply, id: &str) -> Option<Finding> {
    let other = r.conversation_id().filter(|c| *c != id)?;
    Some(rules::FOLLOW_UP.found(format!(
        "the follow-up reply names conversation {other:?}, not {id:?} (AEX-021)"
    )))
}

/// What the reply `r` to a follow-up in a conversation never issued breaks: it is
/// HTTP 404 or an Agora failure (the unknown-conversation case's rule, AEX-035; a
/// failure with HTTP 200 only warns, AEX-A9).
pub fn unknown_conversation_finding(r: &Reply) -> Option<Finding> {
    (r.http != 404 && !r.is_agora_failure()).then(|| {
        rules::UNKNOWN_CONVERSATION.found(format!(
            "a follow-up to a never-issued conversation drew {}",
            r.describe()
        ))
    })
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

/// Milliseconds of Unix time.
pub fn unix_now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// How far past an instant the harness waits before it takes the instant as past
/// on the target's clock too (clocks apart by less than this).
pub const CLOCK_MARGIN_MS: i64 = 200;

/// Waits until `at_ms` (Unix milliseconds) plus [`CLOCK_MARGIN_MS`], then POSTs a
/// follow-up to conversation `id`.
pub async fn post_after(ctx: &mut Ctx, id: &str, at_ms: i64) -> Step<Reply> {
    let wait = (at_ms + CLOCK_MARGIN_MS - unix_now_ms()).max(0) as u64;
    ctx.note(format!("waiting {wait} ms for the conversation to expire"));
    tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    post(
        ctx,
        &conversation_path(id),
        &serde_json::json!({"body": "late"}),
    )
    .await
}

pub fn is_hex40(s: &str) -> bool {
    is_sha1_hex(s)
}

/// Judges a recorded reply again with [`check_reply`] (an exported vector's offline
/// run).
pub fn reread(ctx: &mut Ctx, r: &crate::case::Recorded) {
    let reply = HttpReply {
        status: r.http_status.unwrap_or(200),
        content_type: r.content_type.clone(),
        body: r.body.clone(),
        retried: None,
    };
    let _ = check_reply(ctx, &reply);
}

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

/// AEX-005: a client's request says `Content-Type: application/json`. What it says
/// instead, when it does not.
pub fn client_content_type(x: &crate::counterparty::Exchange) -> Option<String> {
    let ct = x.content_type.as_deref().unwrap_or("");
    (!ct.to_ascii_lowercase().starts_with("application/json")).then(|| {
        format!(
            "the client's request says Content-Type {}, not application/json",
            quote(ct)
        )
    })
}

/// A follow-up (a POST to `/conversations/{id}`) goes to a conversation a reply
/// opened (AEX-028) and leaves protocolHash out (AEX-030). What it does instead, when
/// it does not; `None` for any other request.
pub fn client_follow_up(
    x: &crate::counterparty::Exchange,
    request: &Value,
    opened: bool,
) -> Option<String> {
    if !x.path.contains("/conversations/") {
        return None;
    }
    if !opened {
        return Some(format!(
            "the client POSTed to {} although no reply opened a conversation (AEX-028)",
            x.path
        ));
    }
    request
        .get("protocolHash")
        .filter(|h| !h.is_null())
        .map(|h| {
            format!(
                "a follow-up to {} repeats protocolHash {h} (AEX-030: follow-ups leave it out)",
                x.path
            )
        })
}

/// A request a real client sent through `agentconform proxy`: sent as
/// application/json (AEX-005); a follow-up leaves protocolHash out (AEX-030) and
/// goes to a conversation that is open ([`follow_up_against_conversation`]).
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, h: &crate::exchange::History) {
    if x.method != "POST" {
        return;
    }
    follow_up_against_conversation(ctx, x, h);
    if let Some(why) = client_content_type(x) {
        ctx.finding(rules::CLIENT_CONTENT_TYPE.found(why));
    }
    let request: Value = serde_json::from_slice(&x.received).unwrap_or(Value::Null);
    if let Some(why) = client_follow_up(x, &request, true) {
        ctx.finding(rules::CLIENT_FOLLOW_UP_PROTOCOL_HASH.found(why));
    }
}

/// A follow-up against the conversation the proxy saw: its id was issued by a reply
/// (AEX-025, AEX-028, AEX-029: judged once the client's opening request went
/// through the proxy), and it is sent before the conversationExpires of the last
/// reply that gave one (AEX-022, AEX-034: a second's margin for the whole-second
/// timestamp, by the proxy's clock).
fn follow_up_against_conversation(
    ctx: &mut Ctx,
    x: &crate::exchange::Exchange,
    h: &crate::exchange::History,
) {
    let route = x.path.split('?').next().unwrap_or_default();
    let Some((_, id)) = route.split_once("/conversations/") else {
        return;
    };
    // The id as the path spells it: the issued id, percent-encoded or not.
    let names = |v: &Value| {
        v["conversationId"].as_str().is_some_and(|c| {
            c == id || reference_impl::agora_exchange::client::percent_encode(c) == id
        })
    };
    if !h.replies().any(|(_, v)| names(&v)) {
        let opening_seen = h
            .earlier
            .iter()
            .any(|(e, _)| e.method == "POST" && !e.path.contains("/conversations/"));
        if opening_seen {
            ctx.finding(rules::CLIENT_FOLLOW_UP_UNOPENED.found(format!("the client POSTed a follow-up to {}, a conversation no reply through the proxy opened", x.path)));
        }
        return;
    }
    let latest = h
        .replies()
        .filter(|(e, v)| {
            names(v)
                || e.path
                    .split('?')
                    .next()
                    .is_some_and(|p| p.ends_with(&format!("/conversations/{id}")))
        })
        .find_map(|(_, v)| v["conversationExpires"].as_i64());
    if let Some(expires) = latest {
        let now = h.now.unix_timestamp();
        if now > expires {
            ctx.finding(rules::CLIENT_FOLLOW_UP_EXPIRED.found(format!(
                    "the client POSTed a follow-up to {} at {now}, {} s after the conversation expired (conversationExpires {expires})",
                    x.path,
                    now - expires
                )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(status: u16, ct: &str, body: &str) -> Reading {
        let schemas = Schemas::load().expect("schemas");
        read_reply(
            &schemas,
            &HttpReply {
                status,
                content_type: Some(ct.to_string()),
                body: body.as_bytes().to_vec(),
                retried: None,
            },
        )
    }

    fn keys(r: &Reading) -> Vec<&str> {
        r.findings.iter().map(|f| f.key.as_str()).collect()
    }

    #[test]
    fn another_failure_shape_is_one_finding_and_still_a_failure() {
        let r = read(
            200,
            "application/json",
            r#"{"status":"error","message":"Unsupported protocol"}"#,
        );
        assert_eq!(keys(&r), [rules::REPLY_FAILURE_SHAPE.key]);
        let f = &r.findings[0];
        assert_eq!(f.requirements, ["AEX-009", "AEX-010"]);
        assert!(f.summary.contains("message"), "{}", f.summary);
        let reply = r.reply.expect("readable");
        assert!(reply.is_agora_failure());
        assert_eq!(reply.error(), Some("Unsupported protocol"));
    }

    #[test]
    fn lenient_readings() {
        // A capitalised status is a success still.
        let r = read(
            200,
            "application/json",
            r#"{"status":"Success","body":"x"}"#,
        );
        assert_eq!(keys(&r), [rules::REPLY_STATUS_CASE.key]);
        assert!(r.reply.expect("readable").is_success());
        // A 200 without application/json is read on.
        let r = read(200, "text/plain", r#"{"status":"success","body":"x"}"#);
        assert_eq!(keys(&r), [rules::REPLY_CONTENT_TYPE.key]);
        // A framework's 422 is a transport-level refusal with its text.
        let r = read(
            422,
            "application/json",
            r#"{"detail":[{"msg":"Field required"}]}"#,
        );
        assert!(r.findings.is_empty());
        let reply = r.reply.expect("readable");
        assert!(reply.is_client_error() && !reply.is_agora_failure());
        assert_eq!(reply.error(), Some("Field required"));
        // A 4xx as text/html warns only.
        let r = read(404, "text/html", "<h1>Not Found</h1>");
        assert_eq!(keys(&r), [rules::REPLY_ERROR_CONTENT_TYPE.key]);
        assert_eq!(r.findings[0].outcome, Verdict::Warn);
        // Nothing usable: blocked.
        let r = read(200, "application/json", r#"{"status":7}"#);
        assert!(r.reply.is_err());
    }

    #[test]
    fn conversation_members() {
        let r = read(
            200,
            "application/json",
            r#"{"status":"success","body":"x","conversationId":"c1"}"#,
        );
        assert_eq!(keys(&r), [rules::REPLY_CONVERSATION_EXPIRES.key]);
        let r = read(
            200,
            "application/json",
            r#"{"status":"success","body":"x","conversationId":"c1","conversationExpires":"1741910401"}"#,
        );
        assert_eq!(keys(&r), [rules::REPLY_CONVERSATION_EXPIRES.key]);
        assert_eq!(r.reply.expect("readable").expires(), Some(1741910401));
    }
}
