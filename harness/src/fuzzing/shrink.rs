//! Shrinking a signature's input against the live target: members removed,
//! strings and arrays shortened, numbers moved toward 0 (an input that is not JSON:
//! runs of its characters removed, or of its bytes when it is not UTF-8 either), for
//! as long as the signature still reproduces,
//! within a bounded budget.
//!
//! An input shrinks when it reproduces alone: sent again, as the same request to
//! the same endpoint (a frame: as the fuzzed frame of a fresh connection, by the
//! suite's `resend`), it shows the same signature. That holds for a crash class
//! (the target's status, a reply that is not JSON, a transport failure) and for a
//! rule the suite's reply checks judge from the reply alone (`Suite::reread`). A
//! fuzz oracle that judges the reply against what its case expected, a fixed
//! request's reply, or a frame of a suite without `resend` is kept as first sent,
//! and the crash file says why.

use super::corpus::{signature, Corpus, Filed, Request, Sample, Shrunk, Signature};
use super::spec::{CaseRun, Spec, Target};
use super::verdict::{classify, FuzzFinding, Oracle, Outcome};
use crate::script::Ctx;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Candidates sent to the target for one signature, at most.
pub const MAX_TRIES: u64 = 200;
/// Time spent on one signature, at most.
pub const MAX_TIME: Duration = Duration::from_secs(15);

/// Shrinks every signature of the corpus, one after the other, and writes each
/// crash file again with its smallest input and how it was shrunk.
pub async fn shrink_all(corpus: &Corpus, spec: &Spec, target: &Target) {
    for mut e in corpus.entries() {
        e.shrunk = Some(shrink(&mut e, spec, target).await);
        corpus.update(e);
    }
}

/// Why `e`'s input cannot be shrunk by sending it alone, if it cannot; `frames`:
/// the suite can send a frame alone (its `resend`).
pub fn not_shrinkable(e: &Filed, frames: bool) -> Option<String> {
    if e.fixed {
        return Some("the reply of a fixed request, not of a fuzzed input".into());
    }
    match &e.signature {
        Signature::Crash {
            class: super::corpus::Class::Death,
            ..
        } => return Some("a death is not one input's; the last inputs are listed".into()),
        Signature::Crash {
            class: super::corpus::Class::ClientCrash | super::corpus::Class::ClientHang,
            ..
        } => return Some("a client's crash is shrunk by its case, not by sending a request".into()),
        Signature::Oracle { .. } => {
            return Some(
                "the fuzz oracle judges the reply against what its case expected; the case's input is kept".into(),
            )
        }
        _ => {}
    }
    match &e.request {
        // A fuzzed query (`GET /discover?…`): the input is the request line, which
        // sending a body again would not change.
        Some(r) if r.method != "WS" && r.body.is_empty() => {
            return Some("the input is a request line, not a body: kept as sent".into())
        }
        Some(r) if r.method != "WS" || frames => {}
        Some(_) => return Some("a WebSocket frame needs its connection's state".into()),
        None => return Some("the transcript kept no request".into()),
    }
    if e.smallest.bytes.is_empty() {
        return Some("no input to shrink".into());
    }
    None
}

async fn shrink(e: &mut Filed, spec: &Spec, target: &Target) -> Shrunk {
    let mut done = Shrunk::default();
    if let Some(why) = not_shrinkable(e, spec.resend.is_some()) {
        done.not_shrunk = Some(why);
        return done;
    }
    let Some(req) = e.request.clone() else {
        return done;
    };
    let mut current = Input::of(&e.smallest.bytes);
    let want = e.id.clone();
    done.tried += 1;
    if !reproduces(spec, target, &req, &e.smallest.bytes, &want).await {
        done.not_shrunk = Some(
            "sent alone, the input did not show the signature again: it needs its case's state"
                .into(),
        );
        return done;
    }
    done.alone = true;
    let started = Instant::now();
    'outer: loop {
        for c in current.candidates() {
            if done.tried >= MAX_TRIES || started.elapsed() >= MAX_TIME {
                done.not_shrunk = Some(format!(
                    "the budget ran out ({MAX_TRIES} candidates or {} s)",
                    MAX_TIME.as_secs()
                ));
                break 'outer;
            }
            if c.measure() >= current.measure() {
                continue;
            }
            done.tried += 1;
            if reproduces(spec, target, &req, &c.bytes(), &want).await {
                done.kept += 1;
                current = c;
                continue 'outer;
            }
        }
        break;
    }
    e.smallest = Sample {
        index: e.smallest.index,
        bytes: current.bytes(),
    };
    done
}

/// An input being shrunk: a JSON value, or a text that is not JSON.
#[derive(Debug, Clone, PartialEq)]
enum Input {
    Json(Value),
    Text(Vec<char>),
    /// Bytes that are neither (not UTF-8): shrunk by runs of bytes.
    Bytes(Vec<u8>),
}

impl Input {
    fn of(bytes: &[u8]) -> Input {
        if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
            return Input::Json(v);
        }
        match std::str::from_utf8(bytes) {
            Ok(t) => Input::Text(t.chars().collect()),
            Err(_) => Input::Bytes(bytes.to_vec()),
        }
    }

    /// The bytes sent.
    fn bytes(&self) -> Vec<u8> {
        match self {
            Input::Json(v) => serde_json::to_vec(v).unwrap_or_default(),
            Input::Text(t) => t.iter().collect::<String>().into_bytes(),
            Input::Bytes(b) => b.clone(),
        }
    }

    fn measure(&self) -> (usize, u128) {
        match self {
            Input::Json(v) => measure(v),
            other => (other.bytes().len(), 0),
        }
    }

    fn candidates(&self) -> Vec<Input> {
        match self {
            Input::Json(v) => candidates(v).into_iter().map(Input::Json).collect(),
            Input::Text(t) => text_candidates(t).into_iter().map(Input::Text).collect(),
            Input::Bytes(b) => text_candidates(b).into_iter().map(Input::Bytes).collect(),
        }
    }
}

/// The text `t` with one run of its characters (or bytes) removed, longest runs
/// first: halves, quarters, … down to single characters.
fn text_candidates<T: Clone>(t: &[T]) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let mut run = t.len() / 2;
    while run >= 1 {
        let mut at = 0;
        while at < t.len() {
            let mut c = t[..at].to_vec();
            c.extend_from_slice(&t[(at + run).min(t.len())..]);
            out.push(c);
            at += run;
        }
        run /= 2;
    }
    out
}

/// Sends `bytes` as `req` again (a frame: by the suite's `resend`); the signature
/// of what the target did.
pub async fn resend(spec: &Spec, target: &Target, req: &Request, bytes: &[u8]) -> Option<String> {
    let (found, run) = if req.method == "WS" {
        let mut run = super::spec::resend_frame(spec, target, bytes).await?;
        let outcome = std::mem::replace(&mut run.outcome, Outcome::Pass);
        (answered(outcome)?, run)
    } else if spec.resend.is_some() && req.method == "POST" {
        let mut run = super::spec::resend_request(spec, target, &req.url, bytes).await?;
        let outcome = std::mem::replace(&mut run.outcome, Outcome::Pass);
        (answered(outcome)?, run)
    } else {
        resend_http(target, req, bytes).await?
    };
    // Shrinking resends to a server: its replies are the target's.
    let sig = signature(
        &found,
        &run,
        &target.url,
        (target.transport, spec.kinds),
        crate::verdict::Role::Server,
    );
    match &sig {
        Signature::Crash { .. } | Signature::Rule(_) => Some(sig.id(target.suite.id)),
        Signature::Oracle { .. } => None,
    }
}

/// What an input sent alone showed: its finding, or, when nothing failed, a blank
/// reply check, so that only a crash class the reply shows can still be read from it
/// (a 5xx the reply checks leave to the transport).
fn answered(outcome: Outcome) -> Option<FuzzFinding> {
    match outcome {
        Outcome::Finding(found) => Some(found),
        Outcome::Pass | Outcome::Skip(_) => Some(FuzzFinding {
            oracle: Oracle::ReplyCheck,
            detail: String::new(),
            key: None,
        }),
    }
}
/// Sends `bytes` as the HTTP request `req` again: what it showed, and its transcript.
async fn resend_http(
    target: &Target,
    req: &Request,
    bytes: &[u8],
) -> Option<(FuzzFinding, CaseRun)> {
    let mut ctx = Ctx::new(target.shared.clone(), target.transport, &target.url);
    ctx.fuzzing = true;
    ctx.suite_id = Some(target.suite.id);
    let method = reqwest::Method::from_bytes(req.method.as_bytes()).ok()?;
    let headers = [("content-type", "application/json")];
    let sent = ctx
        .http_at(&req.url, method, "", &headers, Some(bytes.to_vec()))
        .await;
    let found = match sent {
        Err(stop) => match classify(Err(stop.into()), ctx.findings()) {
            Outcome::Finding(found) => found,
            _ => return None,
        },
        Ok(reply) => {
            (target.suite.reread)(
                &mut ctx,
                &crate::case::Recorded {
                    body: reply.body.clone(),
                    http_status: Some(reply.status),
                    content_type: reply.content_type.clone(),
                },
            );
            answered(classify(Ok(()), ctx.findings()))?
        }
    };
    let run = CaseRun {
        label: String::new(),
        sent: bytes.to_vec(),
        transcript: ctx.take_transcript(),
        outcome: Outcome::Pass,
    };
    Some((found, run))
}

async fn reproduces(spec: &Spec, target: &Target, req: &Request, bytes: &[u8], want: &str) -> bool {
    resend(spec, target, req, bytes).await.as_deref() == Some(want)
}

/// How big a value is: its bytes, then the size of its numbers (so that moving a
/// number toward 0 counts even when it keeps its length).
fn measure(v: &Value) -> (usize, u128) {
    fn magnitude(v: &Value) -> u128 {
        match v {
            Value::Number(n) => n.as_f64().map_or(0, |f| f.abs().min(1e30) as u128),
            Value::Array(a) => a.iter().map(magnitude).sum(),
            Value::Object(o) => o.values().map(magnitude).sum(),
            _ => 0,
        }
    }
    (
        serde_json::to_vec(v).map_or(usize::MAX, |b| b.len()),
        magnitude(v),
    )
}

/// The smaller neighbours of `v`, largest steps first: members and elements
/// removed, then each child shrunk in place, strings and arrays halved, numbers
/// moved toward 0.
pub fn candidates(v: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match v {
        Value::Object(o) => {
            for k in o.keys() {
                let mut c = o.clone();
                c.remove(k);
                out.push(Value::Object(c));
            }
            for (k, child) in o {
                for s in candidates(child) {
                    let mut c = o.clone();
                    c.insert(k.clone(), s);
                    out.push(Value::Object(c));
                }
            }
        }
        Value::Array(a) => {
            if a.len() > 1 {
                out.push(Value::Array(a[..a.len() / 2].to_vec()));
            }
            for i in 0..a.len() {
                let mut c = a.clone();
                c.remove(i);
                out.push(Value::Array(c));
            }
            for (i, child) in a.iter().enumerate() {
                for s in candidates(child) {
                    let mut c = a.clone();
                    c[i] = s;
                    out.push(Value::Array(c));
                }
            }
        }
        Value::String(s) if !s.is_empty() => {
            out.push(Value::String(String::new()));
            let half: String = s.chars().take(s.chars().count() / 2).collect();
            if !half.is_empty() {
                out.push(Value::String(half));
            }
        }
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                if i != 0 {
                    out.push(Value::from(0));
                    out.push(Value::from(i / 2));
                }
            } else if let Some(f) = n.as_f64() {
                out.push(Value::from(0));
                out.push(Value::from(f.trunc() as i64));
            }
        }
        // `0` is shorter than null, true and false.
        Value::Null | Value::Bool(_) => out.push(Value::from(0)),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A greedy shrink with `keep` as the target's signature check.
    fn shrink_with(v: Value, keep: impl Fn(&Value) -> bool) -> Value {
        let mut current = v;
        'outer: loop {
            for c in candidates(&current) {
                if measure(&c) < measure(&current) && keep(&c) {
                    current = c;
                    continue 'outer;
                }
            }
            return current;
        }
    }

    #[test]
    fn a_missing_member_shrinks_to_the_empty_object() {
        let v = json!({"protocolHash": "ab".repeat(20), "multiround": true, "n": 12345});
        let small = shrink_with(v, |c| c.get("body").is_none() && c.is_object());
        assert_eq!(small, json!({}));
    }

    #[test]
    fn an_array_shrinks_to_one_element_and_its_numbers_toward_0() {
        let v = json!([17, "text", {"a": [1, 2, 3]}]);
        let small = shrink_with(v, |c| c.as_array().is_some_and(|a| !a.is_empty()));
        assert_eq!(small, json!([0]));
    }

    #[test]
    fn what_the_signature_needs_stays() {
        let v = json!({"protocolSources": ["a long document text"], "body": {"x": 1}});
        let small = shrink_with(v, |c| {
            c["protocolSources"][0]
                .as_str()
                .is_some_and(|s| s.contains(' '))
        });
        assert_eq!(small, json!({"protocolSources": ["a "]}));
    }

    fn filed(request: Request, input: &[u8]) -> Filed {
        let sample = Sample {
            index: 1,
            bytes: input.to_vec(),
        };
        Filed {
            no: 1,
            signature: Signature::Rule("s/rule".into()),
            id: "s/rule".into(),
            first: FuzzFinding {
                oracle: Oracle::ReplyCheck,
                detail: String::new(),
                key: Some("s/rule".into()),
            },
            first_input: sample.clone(),
            request: Some(request),
            reply: None,
            fixed: false,
            smallest: sample,
            steps: Vec::new(),
            count: 1,
            found_after: Duration::ZERO,
            transcript: Vec::new(),
            shrunk: None,
            last_inputs: Vec::new(),
        }
    }

    fn request(method: &str, body: &str) -> Request {
        Request {
            method: method.into(),
            url: "http://127.0.0.1:9/discover?skill=a".into(),
            endpoint: format!("{method} /discover"),
            body: body.into(),
        }
    }

    #[test]
    fn a_request_line_is_never_shrunk_but_a_body_that_is_not_json_is() {
        let query = filed(request("GET", ""), b"GET /discover?skill=a");
        assert!(not_shrinkable(&query, true).is_some_and(|why| why.contains("request line")));
        let body = filed(request("POST", "{oops"), b"{oops");
        assert_eq!(not_shrinkable(&body, false), None);
        let frame = filed(request("WS", "{oops"), b"{oops");
        assert!(not_shrinkable(&frame, false).is_some());
        assert_eq!(not_shrinkable(&frame, true), None);
    }

    #[test]
    fn a_text_that_is_not_json_shrinks_by_runs_of_characters() {
        let keep =
            |t: &[char]| serde_json::from_str::<Value>(&t.iter().collect::<String>()).is_err();
        let mut current: Vec<char> =
            r#"{"type""agent.heartbeat","tim stamp":17}"#.chars().collect();
        'outer: loop {
            for c in text_candidates(&current) {
                if c.len() < current.len() && keep(&c) {
                    current = c;
                    continue 'outer;
                }
            }
            break;
        }
        // One character that is not JSON on its own is as small as it gets.
        assert_eq!(current.len(), 1, "{current:?}");
        assert!(keep(&current));
    }

    #[test]
    fn an_input_keeps_its_kind_and_its_bytes() {
        assert_eq!(Input::of(b"{\"a\":1}").bytes(), b"{\"a\":1}");
        assert_eq!(
            Input::of("{nicht é".as_bytes()).bytes(),
            "{nicht é".as_bytes()
        );
        assert!(matches!(Input::of(&[0xff, 0x7b]), Input::Bytes(_)));
        // Bytes that are not UTF-8 shrink by runs of bytes: the invalid byte
        // alone is one candidate.
        let bytes: Vec<Vec<u8>> = Input::of(&[0xff, 0x7b])
            .candidates()
            .iter()
            .map(Input::bytes)
            .collect();
        assert_eq!(bytes, vec![vec![0x7b], vec![0xff]]);
        for c in Input::of("ab{é".as_bytes()).candidates() {
            assert!(std::str::from_utf8(&c.bytes()).is_ok());
        }
    }

    #[test]
    fn every_candidate_is_smaller_or_equal_in_bytes() {
        let v = json!({"a": [1, 2.5, "xyz"], "b": {"c": null}});
        for c in candidates(&v) {
            assert!(measure(&c).0 <= measure(&v).0, "{c}");
        }
        for word in [json!(null), json!(true), json!(false)] {
            assert_eq!(candidates(&word), vec![json!(0)], "{word}");
        }
        assert!(candidates(&json!(0)).is_empty());
    }
}
