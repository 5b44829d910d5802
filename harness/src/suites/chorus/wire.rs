//! The wire of chorus (chorus.md §1 and §2): the reply type and the calls to the
//! registry and the ledger, the data types (UUIDs, UTC timestamps, credits) and how the
//! fuzzer spells them, the error codes a reply may carry, the profile's setup requests,
//! and the hooks `proxy` reads a recorded exchange with.

use crate::case::{skip, Level, Step, Stop};
use crate::finding::{quote, Finding};
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, WireForm};
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{FuzzStep, Oracle};
use crate::profile::{SetupBase, SetupEvent};
use crate::rules::{rules, schema_findings};
use crate::script::Ctx;
use crate::template::{render, render_json};
use arbitrary::Arbitrary;
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::{is_uuid, json, json as wire_json, new_id};
use serde_json::{json, Value};

rules! {
    REPLY_NOT_JSON {
        key: "chorus/reply:not-json",
        requirements: &["CHO-001"],
        level: None,
        owner: "chorus/register",
        summary: "a reply the spec defines as JSON has a JSON body",
        fails: "a reply (registration, discovery, or a recorded one read again) whose body is not JSON, or is empty; the case that needs it is blocked",
        passes: "a JSON body",
    }
    PROFILE_SETUP_REQUESTS {
        key: "chorus/profile:setup_requests:*",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "the profile's setup requests ([[chorus.setup_requests]]) are taken by the target",
        fails: "a setup request of the profile answered with a non-2xx status or a 2xx that says no; the detail is its event (case, agent, job, owner, transfer): fix it in the profile",
        passes: "every setup request for the event taken",
        setting: Some("[chorus] setup_requests"),
    }
    AGENT_ID_ENCODING {
        key: "chorus/agent-id:encoding",
        requirements: &["CHO-002"],
        level: None,
        owner: "chorus/register",
        summary: "an agent id is written as a UUID string",
        fails: "a registration reply or a discovery entry writes the agent id as the same UUID in another encoding (upper case, no hyphens, braces, urn:uuid:)",
        passes: "the agent id in canonical UUID form",
    }
    ERROR_CODE {
        key: "chorus/error-code:*",
        requirements: &["CHO-046"],
        level: Some(Level::Should),
        owner: "chorus/job-skill-mismatch",
        summary: "a refusal carries only the error codes of chorus.md section 5",
        fails: "a refusal carries an upper-case code that is not SKILL_MISMATCH, BUDGET_INSUFFICIENT, AGENT_OFFLINE, EXECUTION_ERROR or TRANSFER_FAILED; the detail names the code",
        passes: "a refusal with no code, or with one of chorus.md section 5",
    }
}

pub const CODES: [&str; 5] = [
    "SKILL_MISMATCH",
    "BUDGET_INSUFFICIENT",
    "AGENT_OFFLINE",
    "EXECUTION_ERROR",
    "TRANSFER_FAILED",
];

/// Differences up to this are the same score; up to `ROUNDED` a two-decimal
/// rounding, which chorus.md leaves open (CHO-A10).
pub(super) const EXACT: f64 = 1e-9;

pub(super) const ROUNDED: f64 = 0.005 + 1e-9;

/// A reply: HTTP status, the JSON body if any, and the body as text.
#[derive(Debug, Clone, Default)]
pub struct Resp {
    pub http: u16,
    pub json: Option<Value>,
    pub raw: String,
}

/// Status words a refusal may carry in a 2xx reply.
const FAILURE_WORDS: [&str; 8] = [
    "error", "failed", "failure", "fail", "rejected", "refused", "denied", "declined",
];

impl Resp {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.http)
    }

    /// The status and what the target said, shortened.
    pub fn describe(&self) -> String {
        match &self.json {
            Some(j) => format!("HTTP {} {}", self.http, short(&j.to_string())),
            None if self.raw.trim().is_empty() => format!("HTTP {} (empty body)", self.http),
            None => format!("HTTP {} {} (not JSON)", self.http, quote(&self.raw)),
        }
    }

    pub fn get(&self, k: &str) -> Option<&Value> {
        self.json.as_ref()?.get(k)
    }

    /// The `status` member, upper-cased.
    fn status_upper(&self) -> Option<String> {
        self.get("status")
            .and_then(Value::as_str)
            .map(|s| s.to_ascii_uppercase())
    }

    /// A job result with status FAILURE (in any case).
    pub fn is_failure_result(&self) -> bool {
        self.status_upper().as_deref() == Some("FAILURE")
    }

    /// A 2xx reply that says no: a failure status word (not a job result's), or
    /// `success: false`, or a code of chorus.md §5.
    pub fn refusal_in_2xx(&self) -> bool {
        if !self.ok() {
            return false;
        }
        let Some(Value::Object(o)) = &self.json else {
            return false;
        };
        let status = o
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase);
        if matches!(status.as_deref(), Some("success" | "pending")) {
            return false;
        }
        // Only the shapes chorus.md and its ambiguities give a refusal: a status word
        // of failure, or an error code (CHO-A5). A member that merely reads false
        // (`"success": false` beside the scores of a FAILURE outcome report) says
        // something about the subject, not about the request.
        status
            .as_deref()
            .is_some_and(|s| FAILURE_WORDS.contains(&s) && s != "failure")
            || (!self.is_failure_result()
                && self.codes().iter().any(|c| CODES.contains(&c.as_str())))
    }

    /// A refusal in any form: a 4xx/5xx, a FAILURE result, or a 2xx that says no.
    pub fn is_refusal(&self) -> bool {
        self.http >= 400 || self.is_failure_result() || self.refusal_in_2xx()
    }

    /// Error codes the reply carries (CHO-A5): an upper-case code string that is a
    /// whole top-level member, or one of chorus.md §5 named inside a top-level
    /// string (`{"detail": "SKILL_MISMATCH: …"}`, a FAILURE result's error_message)
    /// or one level down in an `error`, `errors` or `detail` member.
    pub fn codes(&self) -> Vec<String> {
        let Some(Value::Object(o)) = &self.json else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        let mut scan = |v: &Value| {
            let Some(s) = v.as_str() else {
                return;
            };
            if is_code_token(s) {
                if !["SUCCESS", "FAILURE", "PENDING"].contains(&s) && !out.iter().any(|c| c == s) {
                    out.push(s.to_string());
                }
                return;
            }
            for c in CODES {
                if s.contains(c) && !out.iter().any(|x| x == c) {
                    out.push(c.to_string());
                }
            }
        };
        for (k, v) in o {
            if k == "output_data" || k == "input_data" {
                continue;
            }
            scan(v);
            if matches!(k.as_str(), "error" | "errors" | "detail") {
                match v {
                    Value::Object(inner) => inner.values().for_each(&mut scan),
                    Value::Array(items) => {
                        for item in items {
                            match item {
                                Value::Object(inner) => inner.values().for_each(&mut scan),
                                other => scan(other),
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

/// JSON the target sent, shortened to fit one report line.
pub fn short(text: &str) -> String {
    crate::finding::clipped(text.trim(), 200)
}

fn is_code_token(s: &str) -> bool {
    s.len() > 3
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_uppercase())
}

#[derive(Clone)]
pub enum Base {
    Registry,
    Ledger,
    Url(String),
}

/// One request. The reply is read as JSON where it is JSON; callers that need JSON
/// say so ([`need_json`]).
pub async fn call(
    ctx: &mut Ctx,
    base: Base,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> Step<Resp> {
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap_or_default());
    call_bytes(ctx, base, method, path, bytes).await
}

/// One request with `bytes` as it is, labelled JSON (none: no body and no
/// Content-Type); its reply read as [`call`] reads it.
async fn call_bytes(
    ctx: &mut Ctx,
    base: Base,
    method: reqwest::Method,
    path: &str,
    bytes: Option<Vec<u8>>,
) -> Step<Resp> {
    let base = match base {
        Base::Registry => ctx.url.clone(),
        Base::Ledger => ctx
            .profile()
            .target
            .ledger_url
            .clone()
            .unwrap_or_else(|| ctx.url.clone()),
        Base::Url(u) => u,
    };
    let headers: &[(&str, &str)] = if bytes.is_some() {
        &[("content-type", "application/json")]
    } else {
        &[]
    };
    let r = ctx.http_at(&base, method, path, headers, bytes).await?;
    let parsed = json::parse(&r.body).ok().map(|t| t.to_serde());
    let resp = Resp {
        http: r.status,
        json: parsed,
        raw: String::from_utf8_lossy(&r.body).into_owned(),
    };
    check_codes(ctx, &resp);
    Ok(resp)
}

/// A refusal's codes must be chorus.md §5's (CHO-046, a warning).
pub(super) fn check_codes(ctx: &mut Ctx, resp: &Resp) {
    if resp.is_refusal() {
        for code in resp.codes() {
            if !CODES.contains(&code.as_str()) {
                ctx.finding(ERROR_CODE.found_as(
                    &code,
                    format!(
                        "a refusal carries the code {code}, which is not one of chorus.md §5: {}",
                        resp.describe()
                    ),
                ));
            }
        }
    }
}

pub async fn post(ctx: &mut Ctx, base: Base, path: &str, body: &Value) -> Step<Resp> {
    call(ctx, base, reqwest::Method::POST, path, Some(body)).await
}

/// POSTs raw bytes, labelled JSON, to `path` at `base`.
pub async fn post_raw(ctx: &mut Ctx, base: Base, path: &str, bytes: Vec<u8>) -> Step<Resp> {
    call_bytes(ctx, base, reqwest::Method::POST, path, Some(bytes)).await
}

/// The bodies every POST route must refuse alike, whatever it takes (CHO-001: its
/// body is a JSON object): none, malformed JSON, and JSON that is not an object.
/// Each sent to `path` at `base`, with what it is.
pub async fn unreadable_bodies(
    ctx: &mut Ctx,
    base: Base,
    path: &str,
) -> Step<Vec<(&'static str, Resp)>> {
    let mut out = Vec::new();
    for (what, bytes) in [
        ("no body", None),
        ("a non-JSON body", Some(b"agent_id=1".to_vec())),
        ("a JSON array as the body", Some(b"[]".to_vec())),
    ] {
        let r = call_bytes(ctx, base.clone(), reqwest::Method::POST, path, bytes).await?;
        out.push((what, r));
    }
    Ok(out)
}

/// The JSON body of a reply the spec defines as JSON (CHO-001); blocks when there
/// is none.
pub fn need_json(ctx: &mut Ctx, r: &Resp, what: &str) -> Step<Value> {
    match &r.json {
        Some(v) => Ok(v.clone()),
        None => {
            let f =
                REPLY_NOT_JSON.found(format!("the reply to {what} is not JSON: {}", r.describe()));
            Err(ctx.block(f))
        }
    }
}

/// Records the violations of schema `chorus/<name>` as findings owned by `owner`,
/// except those `skip` leaves to another check.
pub fn shape_findings(
    ctx: &mut Ctx,
    name: &str,
    family: &'static crate::rules::Rule,
    v: &Value,
    skip: impl Fn(&Finding) -> bool,
) {
    let found = schema_findings(
        &ctx.shared.schemas,
        &format!("chorus/{name}"),
        (RULES, family),
        v,
    );
    for f in found {
        if !skip(&f) {
            ctx.finding(f);
        }
    }
}

/// Blocks on a finding of `family` already recorded, or on `fallback`.
pub(super) fn block_on(ctx: &mut Ctx, family: &crate::rules::Rule, fallback: Finding) -> Stop {
    let known = ctx
        .findings()
        .iter()
        .find(|m| m.finding.rule.is_some_and(|r| r == family))
        .map(|m| m.finding.clone());
    ctx.block(known.unwrap_or(fallback))
}

// ---------------------------------------------------------------------------
// Templates of the profile

/// Sends the profile's setup requests for `event` with `vars` (the case id, a
/// fresh UUID and the time are added). A refusal blocks the case with a PROFILE
/// finding that names the request.
pub async fn setup(ctx: &mut Ctx, event: SetupEvent, vars: &[(&'static str, Value)]) -> Step<()> {
    let wanted: Vec<crate::profile::SetupRequest> = ctx
        .profile()
        .chorus
        .setup_requests
        .iter()
        .filter(|r| r.on == event)
        .cloned()
        .collect();
    for (i, s) in wanted.into_iter().enumerate() {
        let mut all: Vec<(&str, Value)> = vars.to_vec();
        all.push(("uuid", json!(new_id())));
        all.push(("timestamp_utc", json!(now_utc())));
        all.push(("case_id", json!(ctx.case_id.unwrap_or("chorus"))));
        let path = render(&s.path, &all, false).or_else(skip)?;
        let body = match &s.body {
            Some(b) => Some(render_json(b, &all).or_else(skip)?),
            None => None,
        };
        let method =
            reqwest::Method::from_bytes(s.method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let base = match s.base {
            SetupBase::Registry => Base::Registry,
            SetupBase::Ledger => Base::Ledger,
        };
        let r = call(ctx, base, method, &path, body.as_ref()).await?;
        if !r.ok() || r.refusal_in_2xx() {
            let event = format!("{event:?}").to_ascii_lowercase();
            let f = PROFILE_SETUP_REQUESTS.found_as(&event, format!(
                    "the setup request {} {path} (on = \"{event}\", [[chorus.setup_requests]] #{}) answered {}: fix it in the profile",
                    s.method,
                    i + 1,
                    r.describe()
                ));
            return Err(ctx.block(f));
        }
    }
    Ok(())
}

/// The setup requests sent once before a case.
pub async fn setup_case(ctx: &mut Ctx) -> Step<()> {
    setup(ctx, SetupEvent::Case, &[]).await
}

// ---------------------------------------------------------------------------
// Ids and times

/// An id in the canonical 8-4-4-4-12 lower-case form, from a UUID written another
/// way (upper case, no hyphens, braces, `urn:uuid:`).
pub fn canonical_id(s: &str) -> Option<String> {
    let t = s.trim();
    let t = t.strip_prefix("urn:uuid:").unwrap_or(t);
    let t = t.trim_start_matches('{').trim_end_matches('}');
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let h = hex.to_ascii_lowercase();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

/// The same UUID, however written.
pub fn same_id(a: &str, b: &str) -> bool {
    a == b || matches!((canonical_id(a), canonical_id(b)), (Some(x), Some(y)) if x == y)
}

/// An agent id the registry wrote in an encoding other than a UUID string
/// (CHO-002): one finding, owned by the registration case; the id is read as the
/// UUID it encodes.
pub(super) fn note_id_encoding(ctx: &mut Ctx, got: &str, sent: &str, where_: &str) {
    if got != sent && !is_uuid(got) && same_id(got, sent) {
        ctx.finding(AGENT_ID_ENCODING.found(format!(
            "{where_} writes the agent id {got:?} for the UUID {sent:?}: not a UUID string"
        )));
    }
}

pub fn now_utc() -> String {
    format_timestamp(time::OffsetDateTime::now_utc())
}

/// ISO 8601 UTC as chorus.md §2 says: a date-time with `Z`, or with an offset of
/// zero (`+00:00`, `-00:00`, as RFC 3339 writes UTC too).
pub fn is_utc_timestamp(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        let zero = ["Z", "z", "+00:00", "-00:00"]
            .iter()
            .any(|z| s.ends_with(z));
        let normal = match s.strip_suffix('z') {
            Some(head) => format!("{head}Z"),
            None => s.to_string(),
        };
        zero && parse_timestamp(&normal).is_ok()
    })
}

/// Credits with at most two decimals (CHO-005).
pub fn two_decimals(x: f64) -> bool {
    ((x * 100.0).round() - x * 100.0).abs() < 1e-6
}

/// Cents, rounded down.
pub(super) fn floor_cents(x: f64) -> f64 {
    (x * 100.0 + 1e-6).floor() / 100.0
}

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Draws

/// How the message goes on the wire.
#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum Wire {
    #[default]
    Canonical,
    Respelled(WireForm),
    Edited(Vec<ByteEdit>),
}

/// An id member's value.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum IdForm {
    #[default]
    Fresh,
    Upper,
    Version1,
    NotUuid,
    NoDashes,
    Braced,
    Short,
    Empty,
    Numeric,
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum TsForm {
    #[default]
    Now,
    Fraction,
    Offset,
    NoZone,
    Lowercase,
    DateOnly,
    Yesterday,
    Epoch,
    Empty,
}

/// A credits value, in cents where it has a number.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum Credits {
    Cents(u16),
    #[default]
    Zero,
    ThreeDecimals(u16),
    Negative(u16),
    NumericString(u16),
    Junk,
    Huge,
    Null,
}

pub(super) fn id_class(v: Option<&Value>) -> Class {
    match v {
        Some(Value::String(s)) if is_uuid(s) => Class::Ok,
        Some(Value::String(s)) if loose_uuid(s) => Class::Open,
        _ => Class::Reject,
    }
}

/// A UUID in a spelling other than 8-4-4-4-12 (braces, urn:, no dashes, padding).
fn loose_uuid(s: &str) -> bool {
    let t = s.trim();
    let t = t.strip_prefix("urn:uuid:").unwrap_or(t);
    let t = t.trim_start_matches('{').trim_end_matches('}');
    let hex: Vec<char> = t.chars().filter(|c| *c != '-').collect();
    hex.len() == 32 && hex.iter().all(char::is_ascii_hexdigit)
}

/// A timestamp_utc: valid as the client cases and the schemas read it (a date-time
/// in UTC, `Z` or a zero offset, CHO-004); another date spelling, or none, open
/// (CHO-A11, CHO-A16); anything else refused.
pub(super) fn timestamp_class(v: Option<&Value>) -> Class {
    match v {
        None | Some(Value::Null) => Class::Open,
        Some(t @ Value::String(_)) if is_utc_timestamp(t) => Class::Ok,
        // Some other date spelling, or nothing: the spec does not say (CHO-A11, CHO-A16).
        Some(Value::String(s)) if s.is_empty() || s.bytes().any(|c| c.is_ascii_digit()) => {
            Class::Open
        }
        Some(_) => Class::Reject,
    }
}

pub(super) fn numeric_string(v: &Value) -> Option<f64> {
    v.as_str().and_then(|s| s.trim().parse::<f64>().ok())
}

/// A registration's cost_per_call.
pub(super) fn cost_class(v: Option<&Value>) -> Class {
    match v {
        None | Some(Value::Null) => Class::Reject,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if (0.0..=1e9).contains(&x) && two_decimals(x) => Class::Ok,
            _ => Class::Open,
        },
        Some(s @ Value::String(_)) if numeric_string(s).is_some() => Class::Open,
        Some(_) => Class::Reject,
    }
}

// ---------------------------------------------------------------------------
// Mutations

pub(super) fn set(v: &mut Value, k: &str, x: Value) {
    if let Some(o) = v.as_object_mut() {
        o.insert(k.to_string(), x);
    }
}

pub(super) fn remove(v: &mut Value, k: &str) {
    if let Some(o) = v.as_object_mut() {
        o.remove(k);
    }
}

pub(super) fn id_value(form: IdForm) -> Value {
    let id = new_id();
    match form {
        IdForm::Fresh => json!(id),
        IdForm::Upper => json!(id.to_ascii_uppercase()),
        IdForm::Version1 => {
            let mut s = id.into_bytes();
            s[14] = b'1';
            json!(String::from_utf8_lossy(&s))
        }
        IdForm::NotUuid => json!("not-a-uuid"),
        IdForm::NoDashes => json!(id.replace('-', "")),
        IdForm::Braced => json!(format!("{{{id}}}")),
        IdForm::Short => json!(id[..35].to_string()),
        IdForm::Empty => json!(""),
        IdForm::Numeric => json!("123"),
    }
}

pub(super) fn timestamp_value(form: TsForm) -> Value {
    let now = now_utc();
    let stem = now.trim_end_matches('Z').to_string();
    match form {
        TsForm::Now => json!(now),
        TsForm::Fraction => json!(format!("{stem}.250Z")),
        TsForm::Offset => json!(format!("{stem}+00:00")),
        TsForm::NoZone => json!(stem),
        TsForm::Lowercase => json!(now.to_ascii_lowercase()),
        TsForm::DateOnly => json!(stem.chars().take(10).collect::<String>()),
        TsForm::Yesterday => json!("yesterday"),
        TsForm::Epoch => json!(1_770_819_309),
        TsForm::Empty => json!(""),
    }
}

/// `cents / 100` as the JSON number a client would send.
pub(super) fn credits_of(cents: i64) -> Value {
    json!(cents as f64 / 100.0)
}

pub(super) fn credits_value(c: Credits) -> Value {
    match c {
        Credits::Cents(n) => credits_of(i64::from(n % 20_000)),
        Credits::Zero => json!(0),
        Credits::ThreeDecimals(n) => json!(f64::from(u32::from(n % 20_000) * 10 + 5) / 1000.0),
        Credits::Negative(n) => credits_of(-(i64::from(n % 20_000) + 1)),
        Credits::NumericString(n) => json!(format!("{:.2}", f64::from(n % 20_000) / 100.0)),
        Credits::Junk => json!("cheap"),
        Credits::Huge => json!(1e12),
        Credits::Null => Value::Null,
    }
}

// ---------------------------------------------------------------------------
// Sending and judging

/// What the bytes on the wire read as.
pub(super) enum Parsed {
    Json(Value),
    NotJson,
    /// Two strict readers disagree (duplicate names, out-of-range numbers).
    Unsure,
}

pub(super) fn encode(v: &Value, w: &Wire) -> (Vec<u8>, Parsed) {
    let canonical = serde_json::to_vec(v).unwrap_or_default();
    match w {
        Wire::Canonical => (canonical, Parsed::Json(v.clone())),
        Wire::Respelled(form) => (respell(v, *form), Parsed::Json(v.clone())),
        Wire::Edited(edits) => {
            let bytes = edit_bytes(canonical, edits);
            let a = serde_json::from_slice::<Value>(&bytes).ok();
            let b = wire_json::parse(&bytes).ok().map(|t| t.to_serde());
            let parsed = match (a, b) {
                (Some(a), Some(b)) if a == b => Parsed::Json(a),
                (None, None) => Parsed::NotJson,
                _ => Parsed::Unsure,
            };
            (bytes, parsed)
        }
    }
}

pub(super) fn oracle_for(w: &Wire) -> Oracle {
    match w {
        Wire::Respelled(_) => Oracle::WireForm,
        _ => Oracle::Verdict,
    }
}

fn base_url(f: &FuzzCtx, base: &Base) -> String {
    match base {
        Base::Registry => f.ctx.url.clone(),
        Base::Ledger => f
            .ctx
            .profile()
            .target
            .ledger_url
            .clone()
            .unwrap_or_else(|| f.ctx.url.clone()),
        Base::Url(u) => u.clone(),
    }
}

/// POSTs raw bytes as JSON, as `call` does with a value: a 2xx reply must be JSON.
pub(super) async fn post_bytes(
    f: &mut FuzzCtx,
    base: Base,
    path: &str,
    bytes: Vec<u8>,
) -> FuzzStep<Resp> {
    f.fuzzed(&bytes);
    let url = base_url(f, &base);
    let r = f
        .ctx
        .http_at(
            &url,
            reqwest::Method::POST,
            path,
            &[("content-type", "application/json")],
            Some(bytes),
        )
        .await?;
    let resp = Resp {
        http: r.status,
        json: wire_json::parse(&r.body).ok().map(|t| t.to_serde()),
        raw: String::from_utf8_lossy(&r.body).into_owned(),
    };
    // A 2xx reply is JSON (CHO-001): the rule `run` applies, chorus/reply:not-json.
    if (200..300).contains(&resp.http) {
        need_json(&mut f.ctx, &resp, &format!("POST /{path}"))?;
    }
    Ok(resp)
}

// ---------------------------------------------------------------------------
// Run-wide memo: the fixture agent and a pool of agents at known scores

pub(super) fn memo_part(f: &FuzzCtx, key: &str) -> Option<Value> {
    f.recall().and_then(|m| m.get(key).cloned())
}

pub(super) fn memo_set(f: &FuzzCtx, key: &str, v: Value) {
    let mut m = f
        .recall()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    set(&mut m, key, v);
    f.remember(m);
}

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// The verdict model

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Class {
    Ok,
    Open,
    Reject,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{check_profile, ChorusSection};

    #[test]
    fn templates_fill_strings_and_values() {
        let vars = [
            ("owner_id", json!("o\"1")),
            ("amount", json!(12.5)),
            ("output_data", Value::Null),
        ];
        let v = render_json(
            r#"{"owner": "{owner_id}", "credits": {amount}, "note": "at {amount}", "out": {output_data}}"#,
            &vars,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"owner": "o\"1", "credits": 12.5, "note": "at 12.5", "out": null})
        );
        assert_eq!(
            render("/a/{owner_id}?n={amount}", &vars, false).unwrap(),
            "/a/o\"1?n=12.5"
        );
        let e = render_json(r#"{"x": "{nope}"}"#, &vars).unwrap_err();
        assert!(e.contains("{nope}") && e.contains("{amount}"), "{e}");
        // Braces that are no placeholder stay as they are.
        assert_eq!(
            render_json(r#"{"a": {"b": "{}"}}"#, &vars).unwrap(),
            json!({"a": {"b": "{}"}})
        );
    }

    #[test]
    fn codes_are_found_where_targets_put_them() {
        let r = |http: u16, v: Value| Resp {
            http,
            json: Some(v),
            raw: String::new(),
        };
        assert_eq!(
            r(400, json!({"error": "SKILL_MISMATCH"})).codes(),
            ["SKILL_MISMATCH"]
        );
        assert_eq!(
            r(400, json!({"detail": "SKILL_MISMATCH: no skill x"})).codes(),
            ["SKILL_MISMATCH"]
        );
        assert_eq!(
            r(
                402,
                json!({"error": {"code": "BUDGET_INSUFFICIENT", "message": "low"}})
            )
            .codes(),
            ["BUDGET_INSUFFICIENT"]
        );
        assert!(r(404, json!({"detail": "Skill 'x' not found"}))
            .codes()
            .is_empty());
        let echo = r(
            200,
            json!({"status": "SUCCESS", "output_data": {"text": "TRANSFER_FAILED"}}),
        );
        assert!(echo.codes().is_empty() && !echo.is_refusal());
        let failed = r(200, json!({"status": "failed", "error": "TRANSFER_FAILED"}));
        assert!(failed.refusal_in_2xx() && failed.is_refusal());
        assert!(!r(200, json!({"status": "completed"})).is_refusal());
        assert!(r(200, json!({"status": "FAILURE", "error_message": "x"})).is_failure_result());
    }

    #[test]
    fn utc_is_z_or_a_zero_offset() {
        for ok in [
            "2026-02-11T14:15:09Z",
            "2026-02-11T14:15:09.123Z",
            "2026-02-11T14:15:09+00:00",
            "2026-02-11T14:15:09-00:00",
            "2026-02-11T14:15:09z",
        ] {
            assert!(is_utc_timestamp(&json!(ok)), "{ok}");
        }
        for bad in [
            "2026-02-11T16:15:09+02:00",
            "2026-02-11T14:15:09",
            "yesterday",
        ] {
            assert!(!is_utc_timestamp(&json!(bad)), "{bad}");
        }
    }

    #[test]
    fn ids_in_other_encodings() {
        let id = "a3b8d1b6-0b3b-4b1a-9c1a-1a2b3c4d5e6f";
        assert!(same_id("a3b8d1b60b3b4b1a9c1a1a2b3c4d5e6f", id));
        assert!(same_id("{A3B8D1B6-0B3B-4B1A-9C1A-1A2B3C4D5E6F}", id));
        assert!(same_id(&format!("urn:uuid:{id}"), id));
        assert!(!same_id("123", id));
        assert_eq!(
            canonical_id("A3B8D1B60B3B4B1A9C1A1A2B3C4D5E6F").as_deref(),
            Some(id)
        );
    }

    #[test]
    fn the_default_profile_checks() {
        check_profile(&ChorusSection::default()).unwrap();
    }
}
