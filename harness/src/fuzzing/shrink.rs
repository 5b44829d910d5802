//! Shrinking a signature's input against the live target: members removed,
//! strings and arrays shortened, numbers moved toward 0, for as long as the
//! signature still reproduces, within a bounded budget.
//!
//! An input shrinks when it reproduces alone: sent again, as the same request to
//! the same endpoint, it shows the same signature. That holds for a crash class
//! (the target's status or transport failure) and for a rule the suite's reply
//! checks judge from the reply alone (`Suite::reread`). A fuzz oracle that judges
//! the reply against what its case expected, a fixed request's reply, or a
//! WebSocket frame (which needs its connection's state) is kept as first sent, and
//! the crash file says why.

use super::corpus::{signature, Corpus, Filed, Request, Sample, Shrunk, Signature};
use super::engine::{CaseRun, Target};
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
pub async fn shrink_all(corpus: &Corpus, target: &Target) {
    for mut e in corpus.entries() {
        e.shrunk = Some(shrink(&mut e, target).await);
        corpus.update(e);
    }
}

/// Why `e`'s input cannot be shrunk by sending it alone, if it cannot.
pub fn not_shrinkable(e: &Filed) -> Option<String> {
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
        Some(r) if r.method != "WS" => {}
        Some(_) => return Some("a WebSocket frame needs its connection's state".into()),
        None => return Some("the transcript kept no request".into()),
    }
    if serde_json::from_slice::<Value>(&e.smallest.bytes).is_err() {
        return Some("not JSON: kept as sent".into());
    }
    None
}

async fn shrink(e: &mut Filed, target: &Target) -> Shrunk {
    let mut done = Shrunk::default();
    if let Some(why) = not_shrinkable(e) {
        done.not_shrunk = Some(why);
        return done;
    }
    let (Some(req), Ok(mut current)) = (
        e.request.clone(),
        serde_json::from_slice::<Value>(&e.smallest.bytes),
    ) else {
        return done;
    };
    let want = e.id.clone();
    done.tried += 1;
    if !reproduces(target, &req, &e.smallest.bytes, &want).await {
        done.not_shrunk = Some(
            "sent alone, the input did not show the signature again: it needs its case's state"
                .into(),
        );
        return done;
    }
    done.alone = true;
    let started = Instant::now();
    'outer: loop {
        for c in candidates(&current) {
            if done.tried >= MAX_TRIES || started.elapsed() >= MAX_TIME {
                done.not_shrunk = Some(format!(
                    "the budget ran out ({MAX_TRIES} candidates or {} s)",
                    MAX_TIME.as_secs()
                ));
                break 'outer;
            }
            if measure(&c) >= measure(&current) {
                continue;
            }
            done.tried += 1;
            let bytes = serde_json::to_vec(&c).unwrap_or_default();
            if reproduces(target, &req, &bytes, &want).await {
                done.kept += 1;
                current = c;
                continue 'outer;
            }
        }
        break;
    }
    e.smallest = Sample {
        index: e.smallest.index,
        bytes: serde_json::to_vec(&current).unwrap_or_default(),
    };
    done
}

/// Sends `bytes` as `req` again; the signature of what the target did.
pub async fn resend(target: &Target, req: &Request, bytes: &[u8]) -> Option<String> {
    let mut ctx = Ctx::new(target.shared.clone(), target.transport, &target.url);
    ctx.fuzzing = true;
    ctx.suite_id = Some(target.suite);
    let method = reqwest::Method::from_bytes(req.method.as_bytes()).ok()?;
    let headers = [("content-type", "application/json")];
    let sent = ctx
        .http_at(&req.url, method, "", &headers, Some(bytes.to_vec()))
        .await;
    let outcome = match sent {
        Err(stop) => classify(Err(stop.into()), ctx.findings()),
        Ok(reply) => {
            if let Some(suite) = crate::suites::by_id(target.suite) {
                (suite.reread)(
                    &mut ctx,
                    &crate::case::Recorded {
                        body: reply.body.clone(),
                        http_status: Some(reply.status),
                        content_type: reply.content_type.clone(),
                    },
                );
            }
            match classify(Ok(()), ctx.findings()) {
                // Nothing failed: only a crash class can still show (a 5xx the
                // reply checks leave to the transport).
                Outcome::Pass | Outcome::Skip(_) => Outcome::Finding(FuzzFinding {
                    oracle: Oracle::ReplyCheck,
                    detail: String::new(),
                    key: None,
                }),
                found => found,
            }
        }
    };
    let Outcome::Finding(found) = outcome else {
        return None;
    };
    let run = CaseRun {
        label: String::new(),
        sent: bytes.to_vec(),
        transcript: ctx.take_transcript(),
        outcome: Outcome::Pass,
    };
    let sig = signature(&found, &run, &target.url, target.transport);
    match &sig {
        Signature::Crash { .. } | Signature::Rule(_) => Some(sig.id(target.suite)),
        Signature::Oracle { .. } => None,
    }
}

async fn reproduces(target: &Target, req: &Request, bytes: &[u8], want: &str) -> bool {
    resend(target, req, bytes).await.as_deref() == Some(want)
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

    #[test]
    fn every_candidate_is_smaller_or_equal_in_bytes() {
        let v = json!({"a": [1, 2.5, "xyz"], "b": {"c": null}});
        for c in candidates(&v) {
            assert!(measure(&c).0 <= measure(&v).0, "{c}");
        }
    }
}
