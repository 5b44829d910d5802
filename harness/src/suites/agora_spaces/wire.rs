//! The wire of agora-spaces (agora-spaces.zh.md, 连接: URL 格式): the URL an agent connects
//! with, frames parsed, ids, clocks and the small helpers every area shares.

use crate::case::Stop;
use crate::drive::DriveError;
use crate::finding::quote;
use crate::profile::Profile;
use crate::script::{describe_drive_error, Ctx};
use reference_impl::wire::new_id;
use serde_json::{Map, Value};
use std::time::Duration;

/// A fresh agent id for a case.
pub fn agent_id(tag: &str) -> String {
    format!("h-{tag}-{}", &new_id()[..8])
}

pub fn now_s() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// The URL for one agent: the target URL with agent_id and token in the query.
pub fn url_for(base: &str, agent_id: Option<&str>, token: Option<&str>) -> String {
    let mut params = Vec::new();
    if let Some(a) = agent_id {
        params.push(format!(
            "agent_id={}",
            reference_impl::agora_exchange::client::percent_encode(a)
        ));
    }
    if let Some(t) = token {
        params.push(format!(
            "token={}",
            reference_impl::agora_exchange::client::percent_encode(t)
        ));
    }
    if params.is_empty() {
        return base.to_string();
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}{}", params.join("&"))
}

/// The HTTP status of a refused upgrade (the driver names it in its error).
pub fn refused_status(e: &DriveError) -> Option<u16> {
    match e {
        DriveError::Connect(m) => m
            .strip_prefix("the upgrade was refused with HTTP ")?
            .trim()
            .parse()
            .ok(),
        _ => None,
    }
}

/// A transport failure on an open connection: one finding per kind, no owner (the
/// first case that meets it fails for it), and the case cannot go on.
pub(super) fn transport_block(ctx: &mut Ctx, who: &str, e: &DriveError) -> Stop {
    let kind = e.kind();
    ctx.block(crate::rules::TRANSPORT.found_in(
        "agora-spaces",
        kind,
        format!("[{who}] {}", describe_drive_error(e)),
    ))
}

/// A frame as the target sent it (compact JSON), shortened to fit one report line.
pub fn shown(v: &Value) -> String {
    crate::finding::clipped_json(v, 240)
}

pub(super) fn nonempty_str(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

/// The first of `names` in `m` whose value `ok` accepts, with its name.
pub(super) fn first_of<'a>(
    m: &'a Map<String, Value>,
    names: &[&'static str],
    ok: impl Fn(&Value) -> bool,
) -> Option<(&'static str, &'a Value)> {
    names
        .iter()
        .find_map(|n| m.get(*n).filter(|v| ok(v)).map(|v| (*n, v)))
}

/// An error code in the table's form: upper-case words joined by underscores.
pub(super) fn code_like(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        !s.is_empty()
            && s.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
            && s.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// The heartbeat timeout is short enough to test without --include-slow.
pub(super) fn short_heartbeat(p: &Profile) -> bool {
    p.timing.heartbeat_timeout_s <= 10
}

pub(super) const SHORT: Duration = Duration::from_millis(700);

pub(super) fn text_of(len: usize) -> String {
    // Multi-byte characters, so that chunk boundaries are tested too.
    let unit = "chorus of agents · 日本語 · 🙂 · ";
    unit.repeat(len / unit.len() + 1)
        .chars()
        .take(len)
        .collect()
}

/// An error event in a few words: its code and message, as the target said them.
pub fn said_error(v: &Value) -> String {
    if v["type"] != "error" {
        return v["type"].as_str().unwrap_or("an untyped frame").to_string();
    }
    let code = match &v["code"] {
        Value::String(s) => s.clone(),
        Value::Null => "(no code)".into(),
        other => other.to_string(),
    };
    match v["message"].as_str() {
        Some(m) => format!("error {code} {}", quote(m)),
        None => format!("error {code}"),
    }
}

/// A fresh user space name.
pub fn user_space() -> String {
    format!("h_{}", &new_id().replace('-', "")[..16])
}

// ---------------------------------------------------------------------------
// Fuzzing

pub(super) const RATE_LIMITED: &str = "RATE_LIMITED";

pub(super) fn hex(n: usize) -> String {
    new_id().replace('-', "").chars().take(n.min(32)).collect()
}

pub(super) fn fresh_agent(tag: &str) -> String {
    format!("fz-{tag}-{}", hex(16))
}

pub(super) fn rid_of(kind: &str) -> String {
    format!("fz-{kind}-{}", hex(10))
}

pub(super) fn timeout(ctx: &Ctx) -> Duration {
    Duration::from_millis(ctx.profile().timing.case_timeout_ms)
}

/// A text of exactly `len` bytes; `fancy` mixes in multi-byte characters and
/// characters JSON escapes.
pub(super) fn sized(len: usize, fancy: bool) -> String {
    const UNIT: &str = "agents · 日本語 · 🙂 · \"q\" \\ \t\n ";
    let mut s = String::with_capacity(len);
    if fancy {
        for c in UNIT.chars().cycle() {
            if s.len() + c.len_utf8() > len {
                break;
            }
            s.push(c);
        }
    }
    s.push_str(&"x".repeat(len.saturating_sub(s.len())));
    s
}

pub(super) fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// How the frame reads: the model judges only what both a strict reader (the
/// project's) and serde_json read alike.
pub(super) enum Parsed {
    Json(Value),
    NotJson,
    Ambiguous,
}

pub(super) fn parse(bytes: &[u8]) -> Parsed {
    let strict = reference_impl::wire::json::parse(bytes).map(|t| t.to_serde());
    let loose = serde_json::from_slice::<Value>(bytes);
    match (strict, loose) {
        (Ok(a), Ok(b)) if a == b => Parsed::Json(b),
        (Err(_), Err(_)) => Parsed::NotJson,
        _ => Parsed::Ambiguous,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::DriveError;
    use serde_json::json;

    #[test]
    fn refusals_are_read_from_the_driver_error() {
        let e = DriveError::Connect("the upgrade was refused with HTTP 400".into());
        assert_eq!(refused_status(&e), Some(400));
        assert_eq!(refused_status(&DriveError::Timeout(300)), None);
        assert_eq!(
            refused_status(&DriveError::Connect("connection refused".into())),
            None
        );
    }

    #[test]
    fn codes_look_like_the_table() {
        assert!(code_like(&json!("SPACE_NOT_FOUND")));
        assert!(!code_like(&json!("Space not found")));
        assert!(!code_like(&json!(404)));
    }
}
