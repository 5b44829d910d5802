//! Response fields (agora-exchange.txt §6.2): how a reply is read (its Content-Type,
//! a JSON object, its status word, the failure and success shapes, its body, the
//! conversation members beside it, the response schema), judged in one place for
//! every case, the fuzzer and a recorded exchange read again.

use crate::case::{Level, Step};
use crate::drive::http::HttpReply;
use crate::finding::{quote, Finding, Verdict};
use crate::rules::{rules, Rule};
use crate::schemas::Schemas;
use crate::script::Ctx;
use reference_impl::wire::{jcs, json};
use serde_json::Value;

rules! {
    REPLY_ERROR_CONTENT_TYPE {
        key: "agora-exchange/reply:error-content-type",
        requirements: &["AEX-004", "AEX-A15"],
        level: Some(Level::Should),
        owner: "agora-exchange/malformed-json",
        summary: "a transport-level reply (any status but 200) is application/json",
        fails: "an HTTP 4xx or 5xx reply with another Content-Type (text/html, text/plain) or none",
        passes: "every non-200 reply sent as application/json",
    }
    REPLY_CONTENT_TYPE {
        key: "agora-exchange/reply:content-type",
        requirements: &["AEX-004", "AEX-A15"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "an HTTP 200 reply, and the /wellknown document, have Content-Type application/json",
        fails: "HTTP 200 replies with another Content-Type or none; the reply is read on as JSON",
        passes: "Content-Type application/json (parameters such as charset allowed)",
    }
    REPLY_NOT_JSON {
        key: "agora-exchange/reply:not-json",
        requirements: &["AEX-058"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "an HTTP 200 reply is JSON",
        fails: "an HTTP 200 reply whose body does not parse as JSON; nothing is left to read, so the case is blocked",
        passes: "a body that parses as JSON",
    }
    REPLY_DUPLICATE_MEMBER {
        key: "agora-exchange/reply:duplicate-member",
        requirements: &["AEX-058"],
        level: Some(Level::Should),
        owner: "agora-exchange/single-round",
        summary: "a reply names each member once",
        fails: "a reply object that repeats a member name",
        passes: "every member name once per object",
    }
    REPLY_NOT_OBJECT {
        key: "agora-exchange/reply:not-object",
        requirements: &["AEX-009"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "an HTTP 200 reply is a JSON object",
        fails: "an HTTP 200 reply that is an array, a string or another JSON value; the case is blocked",
        passes: "a JSON object",
    }
    REPLY_STATUS_CASE {
        key: "agora-exchange/reply:status-case",
        requirements: &["AEX-009", "AEX-A22"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "status is exactly \"success\" or \"failure\", in lower case",
        fails: "the right word in another case (\"Success\", \"FAILURE\"); the reply is read as that status",
        passes: "\"success\" or \"failure\" exactly",
    }
    REPLY_STATUS {
        key: "agora-exchange/reply:status",
        requirements: &["AEX-009"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "a reply has a status member that says \"success\" or \"failure\"",
        fails: "status missing, not a string, or another word (\"ok\", \"done\"); blocked when no other member tells success from failure",
        passes: "status \"success\" or \"failure\"",
    }
    REPLY_FAILURE_SHAPE {
        key: "agora-exchange/reply:failure-shape",
        requirements: &["AEX-009", "AEX-010"],
        level: None,
        owner: "agora-exchange/reply-shape",
        summary: "a failure reply reads {\"status\": \"failure\", \"error\": \"...\"} (agora-exchange.txt section 5.2)",
        fails: "a failure spelled \"error\", \"fail\" and the like, or its text in message, detail or body instead of a string error",
        passes: "status \"failure\" with a string error",
    }
    REPLY_FAILURE_WITH_BODY {
        key: "agora-exchange/reply:failure-with-body",
        requirements: &["AEX-011", "AEX-A4"],
        level: Some(Level::Should),
        owner: "agora-exchange/reply-shape",
        summary: "a failure reply carries no body",
        fails: "an otherwise well-formed failure reply that also carries body",
        passes: "a failure reply with status and error only",
    }
    REPLY_SUCCESS_WITHOUT_BODY {
        key: "agora-exchange/reply:success-without-body",
        requirements: &["AEX-011", "AEX-A4"],
        level: Some(Level::Should),
        owner: "agora-exchange/reply-shape",
        summary: "a success reply carries body",
        fails: "a reply with status success and no body member",
        passes: "a success reply with body",
    }
    REPLY_SUCCESS_WITH_ERROR {
        key: "agora-exchange/reply:success-with-error",
        requirements: &["AEX-012", "AEX-A4"],
        level: Some(Level::Should),
        owner: "agora-exchange/reply-shape",
        summary: "a success reply carries no error",
        fails: "a reply with status success that also carries an error member",
        passes: "a success reply without error",
    }
    REPLY_BODY_TYPE {
        key: "agora-exchange/reply:body-type",
        requirements: &["AEX-020"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "a reply's body is a string or an object",
        fails: "body is a number, an array, a boolean or null",
        passes: "body a string or a JSON object (or absent)",
    }
    SCHEMA_RESPONSE {
        key: "agora-exchange/schema:response:*",
        requirements: &["AEX-009"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "an HTTP 200 reply matches schemas/agora-exchange/response.schema.json beyond the members judged above",
        fails: "a violation of the response schema outside status, error, body, conversationId and conversationExpires; the key names the JSON pointer",
        passes: "a reply the schema validates",
    }
    REFUSED {
        key: "agora-exchange/refused*",
        requirements: &["AEX-013", "AEX-015"],
        level: None,
        owner: "",
        summary: "a plain single-round request (protocolHash null, body \"ping\"), a case's control, is accepted",
        fails: "the control request drew no HTTP 200 success; the detail is the status and the words of the error, and the case is blocked",
        passes: "HTTP 200 with status success",
    }
    REPLY_CONVERSATION_ID {
        key: "agora-exchange/reply:conversation-id",
        requirements: &["AEX-021", "AEX-022"],
        level: None,
        owner: "agora-exchange/multiround-start",
        summary: "conversationId, when present, is a non-empty string; conversationExpires comes only with it",
        fails: "conversationId empty or not a string, or conversationExpires without conversationId (a conversation field on a single-round reply)",
        passes: "no conversation members, or a non-empty string conversationId",
    }
    REPLY_CONVERSATION_EXPIRES {
        key: "agora-exchange/reply:conversation-expires",
        requirements: &["AEX-022", "AEX-027"],
        level: None,
        owner: "agora-exchange/multiround-start",
        summary: "a reply with conversationId carries conversationExpires as an integer Unix timestamp",
        fails: "conversationId without conversationExpires, or conversationExpires as a string or a fractional number",
        passes: "an integer conversationExpires beside every conversationId",
    }
    REPLY_CONVERSATION_EXPIRES_MS {
        key: "agora-exchange/reply:conversation-expires-ms",
        requirements: &["AEX-022", "AEX-A11"],
        level: Some(Level::Should),
        owner: "agora-exchange/multiround-start",
        summary: "conversationExpires is in Unix seconds",
        fails: "a conversationExpires of 1000000000000 or more, which looks like milliseconds",
        passes: "a conversationExpires in seconds",
    }
}

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

/// Status words other than "failure" that servers use for a failure.
pub(super) const FAILURE_WORDS: &[&str] = &["error", "fail", "failed", "err", "ko", "rejected"];

/// Status words other than "success" that servers use for a success.
pub(super) const SUCCESS_WORDS: &[&str] = &["ok", "succeeded", "done"];

pub(super) fn integer(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
            .map(|f| f as i64)
    })
}

/// The failure text and the member it came from.
pub(super) fn failure_text(v: &Value, failure: bool) -> Option<(&'static str, &str)> {
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

pub(super) fn is_json_media_type(ct: Option<&str>) -> bool {
    ct.and_then(|c| c.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

pub(super) fn said_bytes(body: &[u8]) -> String {
    quote(&String::from_utf8_lossy(body))
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
pub(super) fn transport_reply(r: &HttpReply) -> Reading {
    let mut findings = Vec::new();
    let ct = r.content_type.as_deref();
    if !is_json_media_type(ct) {
        findings.push(REPLY_ERROR_CONTENT_TYPE.found(format!(
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
        REPLY_NOT_JSON.found(format!(
            "an HTTP 200 reply is not JSON ({e}): {}",
            said_bytes(body)
        ))
    })?;
    if let Err(e) = jcs::canonicalize(body) {
        if matches!(e.kind, jcs::CanonErrorKind::DuplicateName(_)) {
            findings
                .push(REPLY_DUPLICATE_MEMBER.found(format!("a reply repeats a member name: {e}")));
        }
    }
    let v = tree.to_serde();
    if v.is_object() {
        Ok(v)
    } else {
        Err(REPLY_NOT_OBJECT.found(format!(
            "an HTTP 200 reply is not a JSON object: {}",
            said_bytes(body)
        )))
    }
}

/// An HTTP 200 reply that is not application/json (AEX-004; AEX-A15: the row fails).
pub(super) fn content_type_finding(ct: Option<&str>) -> Finding {
    REPLY_CONTENT_TYPE.found(format!(
        "HTTP 200 replies have Content-Type {}, not application/json",
        quote(ct.unwrap_or("(none)"))
    ))
}

/// The rules that are the subject of the reply-shape case.
pub static FAILURE_SHAPE_RULES: &[&Rule] = &[
    &REPLY_FAILURE_SHAPE,
    &REPLY_SUCCESS_WITHOUT_BODY,
    &REPLY_SUCCESS_WITH_ERROR,
    &REPLY_FAILURE_WITH_BODY,
];

/// How the status word deviates, if it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Word {
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
pub(super) fn lenient_status(v: &Value) -> (Said, Word) {
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

/// The status word: exactly "success" or "failure" (AEX-009; another case is one
/// finding, AEX-A22). A word that says neither blocks the reply.
pub(super) fn check_status_word(
    said: Said,
    word: &Word,
    shown: &str,
    findings: &mut Vec<Finding>,
) -> Result<(), Finding> {
    match word {
        Word::Case(w) => findings.push(
            REPLY_STATUS_CASE.found(format!(
                    "replies spell the status {w:?}, not exactly \"success\" or \"failure\" in lower case: {shown}"
                )),
        ),
        Word::Other(what) if said != Said::Failure => {
            let f = REPLY_STATUS.found(format!("a reply's status is {what}, not \"success\" or \"failure\": {shown}"));
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
pub(super) fn check_failure_shape(
    v: &Value,
    word: &Word,
    shown: &str,
    findings: &mut Vec<Finding>,
) {
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
            REPLY_FAILURE_SHAPE.found(format!(
                    "failure replies read {shown}: {}; agora-exchange.txt §5.2 wants {{\"status\": \"failure\", \"error\": \"…\"}}",
                    parts.join("; ")
                )),
        );
    } else if v.get("body").is_some() {
        findings
            .push(REPLY_FAILURE_WITH_BODY.found(format!("a failure reply carries body: {shown}")));
    }
}

/// A success: a body (AEX-011) and no error (AEX-012), both warnings (AEX-A4).
pub(super) fn check_success_shape(v: &Value, shown: &str, findings: &mut Vec<Finding>) {
    if v.get("body").is_none() {
        findings.push(
            REPLY_SUCCESS_WITHOUT_BODY.found(format!("a success reply without body: {shown}")),
        );
    }
    if v.get("error").is_some() {
        findings.push(
            REPLY_SUCCESS_WITH_ERROR.found(format!("a success reply carries error: {shown}")),
        );
    }
}

/// body: a string or an object (AEX-020).
pub(super) fn check_body_type(v: &Value, shown: &str, findings: &mut Vec<Finding>) {
    if let Some(b) = v.get("body").filter(|b| !(b.is_string() || b.is_object())) {
        findings.push(REPLY_BODY_TYPE.found(format!(
            "a reply's body is {b}, not a string or an object: {shown}"
        )));
    }
}

/// The schema, for anything the explicit checks do not judge: every member it
/// constrains is judged by them, so this only speaks if the schema grows.
pub(super) fn check_schema_rest(schemas: &Schemas, v: &Value, findings: &mut Vec<Finding>) {
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
        findings.push(SCHEMA_RESPONSE.found_as(
            viol.shape(),
            format!("reply at {}: {}", viol.pointer, viol.message),
        ));
    }
}

/// Members beyond the spec's, noted (allowed, AEX-023).
pub(super) fn extra_members(v: &Value) -> Vec<String> {
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

/// The rules that are the subject of the multiround-start case.
pub static CONVERSATION_RULES: &[&Rule] = &[
    &REPLY_CONVERSATION_ID,
    &REPLY_CONVERSATION_EXPIRES,
    &REPLY_CONVERSATION_EXPIRES_MS,
];

pub(super) fn conversation_checks(v: &Value, shown: &str, findings: &mut Vec<Finding>) {
    let id = v.get("conversationId");
    let exp = v.get("conversationExpires");
    match id {
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(other) => findings.push(REPLY_CONVERSATION_ID.found(format!(
            "conversationId is {other}, not a non-empty string: {shown}"
        ))),
        None => {
            if exp.is_some() {
                findings.push(REPLY_CONVERSATION_ID.found(format!(
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
            None => findings.push(REPLY_CONVERSATION_EXPIRES.found(format!(
                "conversationExpires is {e}, not an integer Unix timestamp: {shown}"
            ))),
            Some(n) if n >= 1_000_000_000_000 => {
                findings.push(REPLY_CONVERSATION_EXPIRES_MS.found(format!(
                    "conversationExpires {n} looks like milliseconds, not Unix seconds"
                )))
            }
            Some(_) => {}
        },
    }
}

/// An approved conversation without conversationExpires (AEX-027).
pub fn expires_finding(summary: &str) -> Finding {
    REPLY_CONVERSATION_EXPIRES.found(summary)
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
        assert_eq!(keys(&r), [REPLY_FAILURE_SHAPE.key]);
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
        assert_eq!(keys(&r), [REPLY_STATUS_CASE.key]);
        assert!(r.reply.expect("readable").is_success());
        // A 200 without application/json is read on.
        let r = read(200, "text/plain", r#"{"status":"success","body":"x"}"#);
        assert_eq!(keys(&r), [REPLY_CONTENT_TYPE.key]);
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
        assert_eq!(keys(&r), [REPLY_ERROR_CONTENT_TYPE.key]);
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
        assert_eq!(keys(&r), [REPLY_CONVERSATION_EXPIRES.key]);
        let r = read(
            200,
            "application/json",
            r#"{"status":"success","body":"x","conversationId":"c1","conversationExpires":"1741910401"}"#,
        );
        assert_eq!(keys(&r), [REPLY_CONVERSATION_EXPIRES.key]);
        assert_eq!(r.reply.expect("readable").expires(), Some(1741910401));
    }
}
