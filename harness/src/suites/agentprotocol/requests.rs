//! Requests and responses (agentprotocol.md, Request/Response): the echo, notify,
//! timeout and unknown-agent cases, and what the spec fixes for a fuzzed request.

use super::errors::{Expect, Shows, CNS, IM, TIMEOUT, UNKNOWN_ACTION_CODE};
use super::handshake::Me;
use super::messages::FuzzCase;
use super::replies::echo_finding;
use super::wire::{case_verdict, describe, echo, own, Answer, SHORT};
use crate::case::{Bindings, Case, Level, Stop};
use crate::finding::Finding;
use crate::rules::rules;
use serde_json::{json, Map, Value};

rules! {
    ECHO_REQUEST_STATUS {
        key: "agentprotocol/echo-request:status",
        requirements: &["AGP-A11"],
        level: Some(Level::Info),
        owner: "",
        summary: "the echo response's status is recorded (informational, AGP-A11)",
        fails: "an echo response with a string status other than \"success\"",
        passes: "status \"success\"",
    }
    NOTIFY_ERROR {
        key: "agentprotocol/notify:error",
        requirements: &["AGP-021", "AGP-A14"],
        level: Some(Level::Should),
        owner: "",
        summary: "a valid notify draws no error (a warning, AGP-A14)",
        fails: "a valid notify answered with an error",
        passes: "no reply, HTTP with no message, or an acknowledgement (informational)",
    }
    TIMEOUT_WITHIN_TIMEOUT {
        key: "agentprotocol/timeout:within-timeout",
        requirements: &["AGP-018", "AGP-027"],
        level: None,
        owner: "",
        summary: "a delay within its request's timeout is carried out",
        fails: "a delay of 20 ms with timeout 1500 ms answered with TIMEOUT or something other than a response or an error",
        passes: "a response",
    }
    TIMEOUT_NOT_TIMED_OUT {
        // Two sites: AGP-027 .at(Level::Profile) when the profile says the target
        // sends TIMEOUT ([agentprotocol] timeout_error, true by default); AGP-A18,
        // informational, otherwise.
        key: "agentprotocol/timeout:not-timed-out",
        requirements: &["AGP-027", "AGP-A18"],
        level: Some(Level::Profile),
        owner: "",
        summary: "a delay longer than the request's timeout draws error TIMEOUT where the profile says it is sent",
        fails: "a delay of 2000 ms with timeout 100 ms answered with a response, another code, no body or silence",
        passes: "error TIMEOUT; informational when timeout_error = false (AGP-A18)",
    }
    TIMEOUT_RECORDED {
        key: "agentprotocol/timeout:recorded",
        requirements: &["AGP-A18"],
        level: Some(Level::Info),
        owner: "",
        summary: "what a target that leaves TIMEOUT to the requester ([agentprotocol] timeout_error = false) does with a delay past its timeout, recorded",
        fails: "never fails: a delay of 2000 ms with timeout 100 ms answered otherwise than with error TIMEOUT, recorded (AGP-A18)",
        passes: "error TIMEOUT",
    }
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("echo-request", "a request for the echo action gets a response echoing correlationId, status success and result = params",
        ["AGP-018", "AGP-019", "AGP-043"], Fact, |ctx| {
        // The correlationId echo and the response payload are read by read_reply,
        // whose findings on them this case owns.
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        let params = json!({"text": "hello", "n": 3, "nested": {"ok": true}});
        let mut req = me.message("request", json!({"action": echo(ctx), "correlationId": "req-123", "params": params, "timeout": 30000, "x-extra": 1}));
        req["metadata"] = json!({"priority": "high", "x-h": 1});
        me.sign(&mut req);
        let r = me.accepted(ctx, &req, "a valid echo request with metadata and an extra payload member").await?;
        // Refused from the sender that said hello, the echo is judged as another
        // sender had it carried out; the refusal is still this case's own subject.
        let refusal = ctx.findings().iter().find(|m| m.finding.rule.is_some_and(|r| *r == crate::rules::REFUSED)).map(|m| m.finding.clone());
        if let Some(f) = refusal {
            ctx.deviation(f);
        }
        if let Some(f) = echo_finding(&r, Some(&params), "an echo request with metadata and an extra payload member") {
            return Err(Stop::Finding(f));
        }
        let p = &r["payload"];
        if p["status"].is_string() && p["status"] != "success" {
            found.push(ECHO_REQUEST_STATUS.found(format!("the echo response has status {} (informational, AGP-A11)", p["status"])));
        }
        case_verdict(ctx, found)
    }),
    case!("notify", "a notify draws no response", ["AGP-021"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        me.control(ctx).await?;
        let mut m = me.message("notify", json!({"event": "harness-ping"}));
        me.sign(&mut m);
        match me.send_answer(ctx, &m, SHORT).await? {
            Answer::Reply(r) if r["type"] == "error" => {
                found.push(NOTIFY_ERROR.found(format!("a valid notify drew {} (a warning, AGP-A14)", describe(&r))));
            }
            Answer::Reply(r) => ctx.note(format!("a notify was acknowledged with {} (informational, AGP-A14)", describe(&r))),
            Answer::Empty(s) => ctx.checked(format!("the notify drew HTTP {s} with no message")),
            Answer::Silence => {
                // No reply is the expected answer; the target must still be alive.
                if me.probe(ctx).await?.is_none() {
                    return Err(ctx.block(crate::rules::TRANSPORT.found_in("agentprotocol", "no-answer", "the target answered neither a notify (as expected) nor a request after it")));
                }
                ctx.checked("no reply to the notify; a request after it is answered");
            }
        }
        case_verdict(ctx, found)
    }),
    case!("timeout", "a delay longer than the request's timeout draws TIMEOUT", ["AGP-027"], Profile, |ctx| {
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        let delay = ctx.profile().agentprotocol.delay_action.clone();
        let within = me.request(&delay, json!({"ms": 20}), json!({"timeout": 1500}));
        let what = format!("a {delay} of 20 ms with timeout 1500 ms (the case's control)");
        let r = me.send(ctx, &within).await?;
        match (r["type"].as_str(), r["payload"]["code"].as_str()) {
            (Some("response"), _) => ctx.control(&what),
            (Some("error"), Some(c)) if c != "TIMEOUT" => {
                me.refused_valid(ctx, &within, &what, &r).await?;
            }
            _ => return Err(own(&TIMEOUT_WITHIN_TIMEOUT, format!("{what} drew {}: a delay within its timeout must be carried out (AGP-018)", describe(&r)))),
        }
        let req = me.request(&delay, json!({"ms": 2000}), json!({"timeout": 100}));
        if let Err(got) = me.refusal(ctx, &req, "TIMEOUT", "delay 2000 ms with timeout 100 ms").await? {
            let summary = format!("a {delay} of 2000 ms with timeout 100 ms drew {got}, not error TIMEOUT");
            if ctx.profile().agentprotocol.timeout_error {
                return Err(Stop::Finding(TIMEOUT_NOT_TIMED_OUT.found(format!("{summary} (AGP-027); the profile says the target sends TIMEOUT: set [agentprotocol] timeout_error = false if it leaves that to the requester (AGP-A18)"))));
            }
            found.push(TIMEOUT_RECORDED.found(format!("{summary} (informational, AGP-A18)")));
        } else {
            ctx.refusal_counts("a delay longer than its timeout")?;
        }
        case_verdict(ctx, found)
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// What the message's type asks of the target: a hello, a request carried out, or
/// nothing fixed (AGP-014, AGP-021, AGP-A14, AGP-A16).
pub(super) fn by_type(
    ty: Option<&str>,
    payload: Option<&Map<String, Value>>,
    c: &FuzzCase,
    e: &mut Expect,
) {
    match (ty, payload) {
        (Some("hello"), Some(p)) => {
            e.want = Shows::Hello;
            if !p.get("version").is_none_or(|v| v == "0.1") {
                e.soft(&[IM], "hello version is not \"0.1\" (AGP-014, AGP-A16)");
            }
            if !p
                .get("features")
                .is_none_or(|f| f.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
            {
                e.soft(&[IM], "hello features is not an array of strings (AGP-014)");
            }
        }
        (Some("request"), Some(p)) => request(p, c, e),
        (Some(_), _) => {
            // notify, or a response or error nobody asked for: no reply is expected;
            // an acknowledgement or an error is allowed (AGP-021, AGP-A14).
            e.want = Shows::Nothing;
            e.open = true;
            e.silence_ok = true;
        }
        (None, _) => {}
    }
}

fn request(p: &Map<String, Value>, c: &FuzzCase, e: &mut Expect) {
    match p.get("correlationId") {
        Some(Value::String(_)) => {}
        Some(_) => e.soft(&[IM], "correlationId is not a string (AGP-018)"),
        None => e.soft(&[IM], "no correlationId (AGP-018)"),
    }
    let params = request_params(p, e);
    let timeout = request_timeout(p, e);
    let action = match p.get("action") {
        Some(Value::String(a)) => a.clone(),
        // Not refusing it is a warning (AGP-038, a SHOULD: the input-validation case).
        _ => {
            e.soft(
                &[IM],
                "action is missing or not a string (AGP-018, AGP-038)",
            );
            e.open = true;
            return;
        }
    };
    e.action = Some(action.clone());
    if action == c.echo {
        e.want = Shows::Echo(params);
        if timeout.is_some_and(|t| t < 200) {
            e.soft(&[TIMEOUT], "a timeout shorter than a round trip (AGP-027)");
        }
    } else if action == c.delay {
        delay_request(params, timeout, c.timeout_error, e);
    } else if action.starts_with("fz-") || action.is_empty() {
        let lacks = (&UNKNOWN_ACTION_CODE, Some(&UNKNOWN_ACTION_CODE));
        e.hard_as(
            lacks,
            &[CNS],
            format!("no target offers action {action:?} (AGP-020, AGP-026)"),
        );
        if action.is_empty() {
            e.soft(&[IM], "an empty action (AGP-018)");
        }
    } else {
        // An action the target may or may not offer (AGP-A8): CAPABILITY_NOT_SUPPORTED
        // says it does not.
        e.open = true;
        e.action_open = true;
        e.soft(
            &[CNS],
            format!("the target may not offer action {action:?} (AGP-A8)"),
        );
    }
}

/// The request's params when they are an object, else a hard problem (AGP-018).
fn request_params(p: &Map<String, Value>, e: &mut Expect) -> Option<Value> {
    match p.get("params") {
        None => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            e.hard(&[IM], "params is not an object (AGP-018)");
            None
        }
    }
}

/// The request's timeout in milliseconds when it is a non-negative integer (or
/// one written as a float), else a problem (AGP-018, AGP-038).
fn request_timeout(p: &Map<String, Value>, e: &mut Expect) -> Option<u64> {
    match p.get("timeout") {
        None => None,
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(t), _) => Some(t),
            (None, Some(x)) if x >= 0.0 && x.fract() == 0.0 && x < 1e15 => {
                e.soft(
                    &[IM],
                    "timeout is an integral number written as a float (AGP-018)",
                );
                Some(x as u64)
            }
            // Not refusing it is a warning (AGP-038, the input-validation case).
            _ => {
                e.soft(
                    &[IM],
                    "timeout is not a non-negative integer (AGP-018, AGP-038)",
                );
                e.open = true;
                None
            }
        },
        Some(_) => {
            e.soft(&[IM], "timeout is not a number (AGP-018, AGP-038)");
            e.open = true;
            None
        }
    }
}

/// What a delay request must draw, from its `ms` and its timeout: success, TIMEOUT
/// (or no reply), or a verdict left open by timing (AGP-027, AGP-A18).
fn delay_request(params: Option<Value>, timeout: Option<u64>, timeout_error: bool, e: &mut Expect) {
    e.want = Shows::Success;
    let ms = params.as_ref().map(|p| p.get("ms").and_then(Value::as_u64));
    match (ms, timeout) {
        // TIMEOUT is judged where the profile says the target sends it, as the
        // timeout case judges it; else what it does is informational (AGP-A18).
        (Some(Some(ms)), Some(t))
            if t.saturating_mul(2).saturating_add(50) <= ms && !timeout_error =>
        {
            e.soft(
                &[TIMEOUT],
                format!("a delay of {ms} ms with a timeout of {t} ms (AGP-A18, informational)"),
            );
            e.open = true;
            e.timing_open = true;
        }
        (Some(Some(ms)), Some(t)) if t.saturating_mul(2).saturating_add(50) <= ms => {
            let late = (&TIMEOUT_NOT_TIMED_OUT, Some(&TIMEOUT_NOT_TIMED_OUT));
            e.hard_as(
                late,
                &[TIMEOUT],
                format!("a delay of {ms} ms with a timeout of {t} ms (AGP-027, AGP-A18)"),
            );
            e.silence_ok = true;
        }
        // Carried out: TIMEOUT, or no answer in time, is the timeout case's
        // within-timeout rule.
        (Some(Some(ms)), Some(t)) if t >= ms.saturating_add(200) => {
            e.refused_as = Some((TIMEOUT, &TIMEOUT_WITHIN_TIMEOUT));
        }
        (Some(Some(_)), None) => {}
        (None, None) => {}
        (Some(Some(_)), Some(_)) => {
            e.open = true;
            e.timing_open = true;
            e.soft(&[TIMEOUT], "a timeout close to the delay (AGP-A18)");
        }
        _ => {
            // `ms` is the profile's fixture; without it the delay is undefined.
            e.soft(&[IM], "delay without an integer params.ms");
            if timeout.is_some() {
                e.open = true;
                e.timing_open = true;
                e.soft(&[TIMEOUT], "a timeout for an undefined delay (AGP-A18)");
            }
        }
    }
}
