//! Offline vectors: a failing case of a report, or a fuzz crash file, exported as
//! the exchanges it recorded (bytes sent, reply received, HTTP status), its verdict
//! and requirement ids; and the offline run of such a vector, which judges every
//! recorded reply again with the suite's own reply checks (`Suite::reread`), at
//! the time the reply was received.
//!
//! A vector keeps the deviations its replies alone show (a reply's shape, schema,
//! signature, codes): those replay without the target. What a case concluded from
//! the whole exchange (a message carried out that should have been refused) is
//! recorded as the case's verdict, with the command that reruns it live.

use crate::case::{Recorded, Suite};
use crate::profile::Profile;
use crate::schemas::Schemas;
use crate::script::{Ctx, RunShared};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::keys::Keypair;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// The format tag of an exported vector.
pub const FORMAT: &str = "agentconform-vector/1";

/// Why a vector cannot be exported or run.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Malformed(String),
    #[error("{0}")]
    NothingOffline(String),
    #[error("the harness cannot judge offline: {0}")]
    Harness(String),
}

/// One exchange as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// What the harness sent (for HTTP requests of their own, the method and URL
    /// on the first line); empty when the target spoke unprompted.
    pub sent: String,
    /// The reply, exactly as received.
    pub received: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// When the reply was received (RFC 3339): it is judged at that time.
    pub received_at: String,
}

/// What the vector expects of the harness's judgement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expect {
    /// The verdict of the case or fuzz case: fail, warn or blocked.
    pub verdict: String,
    /// The deviations the recorded replies show: the offline run must find each.
    pub findings: Vec<String>,
    /// The case's own words for its verdict.
    pub summary: String,
}

/// An exported vector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vector {
    pub format: String,
    pub description: String,
    pub suite: String,
    pub requirements: Vec<String>,
    /// Where it came from: the report's case or the crash file, the target, and
    /// the command that reruns it live.
    pub source: Value,
    pub exchanges: Vec<Exchange>,
    pub expect: Expect,
}

/// What the offline run found.
#[derive(Debug, Clone)]
pub struct Rejudged {
    /// Every finding key the recorded replies gave, with its summary.
    pub found: Vec<(String, String)>,
    /// Keys the vector expects that the run did not find.
    pub missing: Vec<String>,
    /// Replies that could not be judged (cut short in the transcript).
    pub skipped: usize,
}

impl Rejudged {
    pub fn reproduced(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Pairs each reply of a transcript with what was sent before it. Replies the
/// transcript cut short are kept (marked by their text) and skipped when judged.
fn exchanges(transcript: &[Value], started: time::OffsetDateTime) -> Vec<Exchange> {
    let mut out = Vec::new();
    let mut sent = String::new();
    for e in transcript {
        let text = e["text"].as_str().unwrap_or_default();
        match e["kind"].as_str() {
            Some("send") => sent = text.to_string(),
            Some("recv") => {
                let at = started
                    + time::Duration::milliseconds(
                        i64::try_from(e["at_ms"].as_u64().unwrap_or(0)).unwrap_or(0),
                    );
                let mut status = e["http_status"]
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok());
                // A side connection's frame: "[who] text", an HTTP one "[who] HTTP n: text".
                let mut body = text;
                if let Some(rest) = body.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                    body = rest.1;
                    if let Some((code, tail)) = body
                        .strip_prefix("HTTP ")
                        .and_then(|r| r.split_once(": "))
                        .and_then(|(c, t)| Some((c.parse::<u16>().ok()?, t)))
                    {
                        status = Some(code);
                        body = tail;
                    }
                }
                let (content_type, body) = match body.strip_prefix("Content-Type: ") {
                    Some(rest) => {
                        let (ct, b) = rest.split_once('\n').unwrap_or((rest, ""));
                        ((ct != "(none)").then(|| ct.to_string()), b)
                    }
                    None => (None, body),
                };
                out.push(Exchange {
                    sent: std::mem::take(&mut sent),
                    received: body.to_string(),
                    http_status: status,
                    content_type,
                    received_at: format_timestamp(at),
                });
            }
            _ => {}
        }
    }
    out
}

/// Judges every recorded reply of `v` again with the reply checks of its suite,
/// one of `suites`.
pub fn rejudge(
    suites: &[&'static Suite],
    v: &Vector,
    schemas: Schemas,
) -> Result<Rejudged, ExportError> {
    let suite = suites
        .iter()
        .find(|s| s.id == v.suite)
        .ok_or_else(|| ExportError::Malformed(format!("unknown suite {:?}", v.suite)))?;
    let mut found: Vec<(String, String)> = Vec::new();
    let mut skipped = 0;
    // Nothing is sent: the connection settings are there because a context has
    // them. The trust settings need no file, so only a broken TLS backend fails.
    let tls = crate::drive::Tls::insecure().map_err(ExportError::Harness)?;
    let http = tls.http_client().map_err(ExportError::Harness)?;
    let shared = Arc::new(RunShared {
        transcript_budget: crate::script::TranscriptBudget::default(),
        adapted: Default::default(),
        client_ids: Default::default(),
        documents: Default::default(),
        embedded: false,
        profile: Profile::default(),
        key: Keypair::generate(),
        other_key: Keypair::generate(),
        schemas,
        http,
        tls,
    });
    // One context for the whole exchange, as the case had: ids repeated across
    // replies are judged as they were live.
    let mut ctx = Ctx::new(shared, suite.transports[0], "http://127.0.0.1:9/");
    for x in &v.exchanges {
        if crate::script::was_clipped(&x.received) {
            skipped += 1;
            continue;
        }
        ctx.pinned_clock = parse_timestamp(&x.received_at).ok();
        let r = Recorded {
            body: x.received.as_bytes().to_vec(),
            http_status: x.http_status,
            content_type: x.content_type.clone(),
        };
        (suite.reread)(&mut ctx, &r);
    }
    for m in ctx.findings() {
        if !found.iter().any(|(k, _)| *k == m.finding.key) {
            found.push((m.finding.key.to_string(), m.finding.summary.clone()));
        }
    }
    let missing = v
        .expect
        .findings
        .iter()
        .filter(|k| !found.iter().any(|(f, _)| f == *k))
        .cloned()
        .collect();
    Ok(Rejudged {
        found,
        missing,
        skipped,
    })
}

/// Keeps, of the findings `met` (every finding the replies show, when empty), those
/// the recorded replies show offline; fails when none is left.
fn settle(
    suites: &[&'static Suite],
    mut v: Vector,
    schemas: Schemas,
    (met, rerun): (&[String], &str),
) -> Result<Vector, ExportError> {
    let r = rejudge(suites, &v, schemas)?;
    v.expect.findings = r
        .found
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| met.is_empty() || met.contains(k))
        .collect();
    if v.expect.findings.is_empty() {
        return Err(ExportError::NothingOffline(format!(
            "the deviation ({}) follows from the whole exchange, not from a reply alone, so no offline vector can show it; rerun it live: {rerun}",
            v.expect.summary
        )));
    }
    Ok(v)
}

fn started_at(report: &Value) -> time::OffsetDateTime {
    report["started_at"]
        .as_str()
        .and_then(|s| parse_timestamp(s).ok())
        .unwrap_or_else(time::OffsetDateTime::now_utc)
}

/// The case `id` of a report (its id, or `id [transport]`), exported: its
/// exchanges, verdict and requirement ids, and the findings its replies show.
pub fn from_report(
    suites: &[&'static Suite],
    report: &Value,
    id: &str,
    schemas: Schemas,
) -> Result<Vector, ExportError> {
    let cases = report["cases"]
        .as_array()
        .ok_or_else(|| ExportError::Malformed("not a report.json: no cases".into()))?;
    let (want_id, want_transport) = match id.split_once(" [") {
        Some((i, t)) => (i, Some(t.trim_end_matches(']'))),
        None => (id, None),
    };
    let case = cases
        .iter()
        .filter(|c| c["id"] == want_id)
        .filter(|c| want_transport.is_none_or(|t| c["transport"] == t))
        .find(|c| matches!(c["outcome"].as_str(), Some("fail" | "warn" | "blocked")))
        .ok_or_else(|| {
            ExportError::NotFound(format!(
                "the report has no failing, warned or blocked case {id:?}"
            ))
        })?;
    let suite = case["suite"].as_str().unwrap_or_default().to_string();
    let findings: Vec<String> = case["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut requirements: Vec<String> = case["requirements"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    for f in report["findings"].as_array().into_iter().flatten() {
        if findings.iter().any(|k| f["key"] == k.as_str()) {
            for r in f["requirements"].as_array().into_iter().flatten() {
                if let Some(r) = r.as_str().filter(|r| !requirements.iter().any(|x| x == r)) {
                    requirements.push(r.to_string());
                }
            }
        }
    }
    let transcript = case["transcript"].as_array().cloned().unwrap_or_default();
    let rerun = case["reproduce"].as_str().unwrap_or_default().to_string();
    let v = Vector {
        format: FORMAT.into(),
        description: format!(
            "{} [{}] against {}: {}",
            want_id,
            case["transport"].as_str().unwrap_or_default(),
            report["target"].as_str().unwrap_or_default(),
            case["message"].as_str().unwrap_or_default()
        ),
        suite,
        requirements,
        source: serde_json::json!({
            "case": want_id,
            "transport": case["transport"],
            "target": report["target"],
            "started_at": report["started_at"],
            "reproduce": rerun,
        }),
        exchanges: exchanges(&transcript, started_at(report)),
        expect: Expect {
            verdict: case["outcome"].as_str().unwrap_or_default().to_string(),
            findings: Vec::new(),
            summary: case["message"].as_str().unwrap_or_default().to_string(),
        },
    };
    settle(suites, v, schemas, (&findings, &rerun))
}

/// A fuzz crash file exported: its exchanges and the oracle that fired. A crash
/// of the reply checks keeps the findings its replies show; any other oracle is
/// judged from the whole exchange and cannot be shown offline.
pub fn from_crash(
    suites: &[&'static Suite],
    crash: &Value,
    schemas: Schemas,
) -> Result<Vector, ExportError> {
    let suite = crash["suite"]
        .as_str()
        .filter(|id| suites.iter().any(|s| s.id == *id))
        .ok_or_else(|| ExportError::Malformed("not a crash file: no known suite".into()))?;
    let transcript = crash["transcript"].as_array().cloned().unwrap_or_default();
    if transcript.is_empty() {
        return Err(ExportError::Malformed(
            "the crash file has no transcript (written by an older agentconform?)".into(),
        ));
    }
    let written = crash["written_at"]
        .as_str()
        .and_then(|s| parse_timestamp(s).ok())
        .unwrap_or_else(time::OffsetDateTime::now_utc);
    let oracle = crash["oracle"].as_str().unwrap_or_default();
    let rerun = crash["replay"].as_str().unwrap_or_default().to_string();
    let v = Vector {
        format: FORMAT.into(),
        description: format!(
            "{suite} fuzz case {} of seed {} ({}) against {}: [{oracle}] {}",
            crash["index"],
            crash["seed"],
            crash["input"].as_str().unwrap_or_default(),
            crash["target"].as_str().unwrap_or_default(),
            crash["detail"].as_str().unwrap_or_default()
        ),
        suite: suite.to_string(),
        requirements: crate::inventory::ids_in(crash["detail"].as_str().unwrap_or_default()),
        source: serde_json::json!({
            "crash": {"seed": crash["seed"], "index": crash["index"], "oracle": oracle},
            "target": crash["target"],
            "reproduce": rerun,
        }),
        exchanges: exchanges(&transcript, written),
        expect: Expect {
            verdict: "fail".into(),
            findings: Vec::new(),
            summary: crash["detail"].as_str().unwrap_or_default().to_string(),
        },
    };
    // A finding of the suite's reply rules can be shown offline: by its rule when
    // the crash file names one, else by whatever the replies show.
    let rule: Vec<String> = crash["rule"]
        .as_str()
        .map(String::from)
        .into_iter()
        .collect();
    if oracle != "reply-check" && rule.is_empty() {
        return Err(ExportError::NothingOffline(format!(
            "the {oracle} oracle judges the whole exchange, not a reply alone, so no offline vector can show it; replay it live: {rerun}"
        )));
    }
    settle(suites, v, schemas, (&rule, &rerun))
}

/// Reads an exported vector (`None` when `v` is not one).
pub fn read(v: &Value) -> Option<Result<Vector, ExportError>> {
    if v["format"] != FORMAT {
        return None;
    }
    Some(
        serde_json::from_value::<Vector>(v.clone())
            .map_err(|e| ExportError::Malformed(format!("not an exported vector: {e}"))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_transcript_pairs_each_reply_with_what_was_sent() {
        let t = vec![
            json!({"at_ms": 0, "kind": "send", "text": "POST http://x/\n{}"}),
            json!({"at_ms": 5, "kind": "recv", "text": "Content-Type: application/json\n{\"a\":1}", "http_status": 400}),
            json!({"at_ms": 6, "kind": "check", "text": "x"}),
            json!({"at_ms": 7, "kind": "recv", "text": "[ws] {\"b\":2}"}),
            json!({"at_ms": 8, "kind": "recv", "text": "[http] HTTP 500: oops"}),
        ];
        let start = parse_timestamp("2026-01-01T00:00:00Z").expect("a time");
        let x = exchanges(&t, start);
        assert_eq!(x.len(), 3);
        assert_eq!(x[0].sent, "POST http://x/\n{}");
        assert_eq!(x[0].received, "{\"a\":1}");
        assert_eq!(x[0].http_status, Some(400));
        assert_eq!(x[0].content_type.as_deref(), Some("application/json"));
        assert_eq!(x[0].received_at, "2026-01-01T00:00:00Z");
        assert_eq!(x[1].sent, "");
        assert_eq!(x[1].received, "{\"b\":2}");
        assert_eq!(x[2].http_status, Some(500));
        assert_eq!(x[2].received, "oops");
    }

    #[test]
    fn a_clipped_reply_is_known() {
        let long = "x".repeat(9000);
        assert!(crate::script::was_clipped(&crate::script::clip_entry(
            &long
        )));
        assert!(!crate::script::was_clipped("{\"a\":1}"));
    }
}
