//! Error handling (agora-spaces.zh.md, 错误处理): errors and their request_id, the invalid-
//! requests and rate-limit cases; and how the fuzzer judges what answers an event
//! against what the spec fixes for it (`Want`, `judge_answer`), with a barrier that
//! marks the end of an answer.

use super::connection::Peer;
use super::replies::{joined_findings, ERROR_CODE, ERROR_REQUEST_ID};
use super::wire::{agent_id, hex, said_error, shown, timeout, user_space, RATE_LIMITED};
use crate::case::{fail, Bindings, Case, Level, Step};
use crate::drive::Transport;
use crate::fuzzing::verdict::{
    finding, first_failing, rules_since, under, Codes, Expected, FuzzStep, Oracle,
};
use crate::rules::rules;
use crate::script::Ctx;
use serde_json::{json, Value};
use std::time::Duration;

rules! {
    // by check_request_id (the id absent or another); same ids and owner.
    INVALID_REQUESTS {
        key: "agora-spaces/invalid-requests",
        requirements: &["ASP-018", "ASP-041", "ASP-042", "ASP-043"],
        level: Some(Level::Fact),
        owner: "agora-spaces/invalid-requests",
        summary: "non-JSON, an unknown type, a join without space, a frame without type, and a join, leave or publish with a member of the wrong type draw INVALID_REQUEST",
        fails: "one or more of them drew an error with another code (each named)",
        passes: "INVALID_REQUEST for each",
    }
}

/// Whether `v` answers the message `id`: it echoes the id, or it is an error whose
/// request_id is that id or absent (an error without it is still read as the answer;
/// the missing request_id is the finding of [`check_request_id`]).
pub fn answers(v: &Value, id: &str) -> bool {
    v["id"] == id
        || (v["type"] == "error" && (v["request_id"] == id || v.get("request_id").is_none()))
}

/// An error event with `code`.
pub fn is_error(v: &Value, code: &str) -> bool {
    v["type"] == "error" && v["code"] == code
}

/// The code of an error event a case judges. An error without a code the harness can
/// read blocks the case: the error's shape is the subject of another case.
pub fn code_of(ctx: &mut Ctx, v: &Value) -> Step<String> {
    match v["code"].as_str() {
        Some(c) => Ok(c.to_string()),
        None => Err(ctx.block(ERROR_CODE.found(format!(
            "an error event carries no code the harness can read: {}",
            shown(v)
        )))),
    }
}

/// Checks that an error answering the message `request_id` carries it (ASP-041);
/// a miss is a finding of the join-missing case, and the case goes on.
pub fn check_request_id(ctx: &mut Ctx, v: &Value, request_id: &str) {
    if v["request_id"] == request_id {
        ctx.checked(format!("the error carries request_id {request_id:?}"));
        return;
    }
    let carried = match v.get("request_id") {
        None => "no request_id".to_string(),
        Some(x) => format!("request_id {x}"),
    };
    ctx.finding(ERROR_REQUEST_ID.found(format!(
        "{} answering the message {request_id:?} carries {carried}",
        said_error(v)
    )));
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("invalid-requests", "non-JSON, unknown types, a join without space, a frame without type and requests with a member of the wrong type draw INVALID_REQUEST",
        ["ASP-018", "ASP-041", "ASP-042", "ASP-043"], Fact, false, None, |ctx| {
        let (mut p, _, _) = Peer::join_as(ctx, &agent_id("bad")).await?;
        p.send_text(ctx, "{not json".into()).await?;
        let v = p.expect(ctx, "INVALID_REQUEST for non-JSON", |v| v["type"] == "error").await?;
        let mut wrong = Vec::new();
        if code_of(ctx, &v)? != "INVALID_REQUEST" {
            wrong.push(format!("non-JSON drew {}", said_error(&v)));
        }
        // Each request type with a member of the wrong type, the publish from a member.
        let mut own = user_space();
        p.join_own(ctx, &mut own).await?;
        for (id, msg) in [
            ("h-unknown", json!({"type": "foo.bar", "id": "h-unknown"})),
            ("h-nospace", json!({"type": "space.join", "id": "h-nospace"})),
            ("h-notype", json!({"id": "h-notype", "space": "general"})),
            ("h-join-42", json!({"type": "space.join", "id": "h-join-42", "space": 42})),
            ("h-leave-42", json!({"type": "space.leave", "id": "h-leave-42", "space": 42})),
            ("h-data-text", json!({"type": "space.publish", "id": "h-data-text", "space": own, "data": "hello"})),
        ] {
            p.reopen_if_closed(ctx, "bad").await?;
            p.send(ctx, &msg).await?;
            let v = p.expect(ctx, &format!("INVALID_REQUEST for {id}"), |v| v["type"] == "error").await?;
            check_request_id(ctx, &v, id);
            if code_of(ctx, &v)? != "INVALID_REQUEST" {
                wrong.push(format!("{msg} drew {}", said_error(&v)));
            }
        }
        ctx.rows_wrong(&INVALID_REQUESTS, "invalid requests drew another error than INVALID_REQUEST", &wrong);
        Ok(())
    }),
    case!("rate-limit", "a burst of publishes: throttling, if any, uses RATE_LIMITED", ["ASP-045"], Fact, false, None, |ctx| {
        let space = user_space();
        let (mut a, _, _) = Peer::join_as(ctx, &agent_id("rl")).await?;
        a.join(ctx, &space).await?;
        for i in 0..500 {
            a.publish(ctx, &space, &format!("burst {i}")).await?;
        }
        let frames = a.drain(ctx, Duration::from_millis(500)).await?;
        let errors: Vec<&Value> = frames.iter().filter(|v| v["type"] == "error").collect();
        for e in &errors {
            if code_of(ctx, e)? != "RATE_LIMITED" {
                return fail(format!("the burst drew {}, not RATE_LIMITED (ASP-045)", said_error(e)));
            }
        }
        ctx.note(format!("500 publishes: {} RATE_LIMITED errors", errors.len()));
        if a.closed {
            ctx.warn("the server closed the connection during the burst without RATE_LIMITED (ASP-045)");
        }
        Ok(())
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// The event type of the barrier: one no spec defines.
const BARRIER_TYPE: &str = "fz.barrier";

// ---------------------------------------------------------------------------
// The verdict model.

/// What a carried-out event must draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Shows {
    /// space.joined for this space (echoing the id, listing the joiner).
    Joined(String),
    /// agent.registered (echoing the id, naming the agent).
    Registered,
    /// A space.list reply echoing the id.
    List,
    /// No error (a reply of another kind is allowed).
    Quiet,
}

/// What the spec fixes for one event: refusals by their error code; the spec's
/// own "any" is any code of its table (agora-spaces.zh.md §6), and RATE_LIMITED is
/// always allowed.
pub(super) type Want = Expected<Shows, &'static str>;

/// Whether `codes` allow an error with `code`. Where any refusal will do, any code
/// will: one outside the spec's six is the frame checks' warning
/// (`error:unknown-code:*`, ASP-042), as in `run`, not a fuzz finding.
pub(super) fn allows(codes: &Codes<&'static str>, code: &str) -> bool {
    code == RATE_LIMITED
        || match codes {
            Codes::Any => true,
            Codes::OneOf(c) => c.contains(&code),
        }
}

pub(super) fn invalid() -> Codes<&'static str> {
    Codes::OneOf(vec!["INVALID_REQUEST"])
}

pub(super) fn only(codes: &[&'static str]) -> Codes<&'static str> {
    Codes::OneOf(codes.to_vec())
}

pub(super) fn open(why: &str) -> Want {
    Expected::Open(why.into())
}

// ---------------------------------------------------------------------------
// Exchanges.

/// An error a case sees, judged by the suite's rules: its code by the checks every
/// frame gets when it is read (`error:code`, ASP-042 by `error:unknown-code`), and
/// the request id when the request carried one (`check_request_id`, ASP-041).
pub(super) fn check_error(ctx: &mut Ctx, e: &Value, rid: Option<&str>) -> FuzzStep<()> {
    let Some(rid) = rid else {
        return Ok(());
    };
    let from = ctx.findings().len();
    check_request_id(ctx, e, rid);
    rules_since(ctx, from)
}

/// Sends the barrier and returns every frame that arrived before its answer (and
/// any queued before), plus whether the connection was closed instead. `strict`:
/// every request so far carried a string id, so an error without request_id is a
/// finding.
pub(super) async fn barrier(
    ctx: &mut Ctx,
    p: &mut Peer,
    strict: bool,
) -> FuzzStep<(Vec<Value>, bool)> {
    if p.closed {
        return Ok((p.drain(ctx, Duration::ZERO).await?, true));
    }
    let bid = format!("fzb-{}", hex(12));
    p.send(ctx, &json!({"type": BARRIER_TYPE, "id": bid}))
        .await?;
    let wait = timeout(ctx);
    let mut early = Vec::new();
    loop {
        let want = bid.clone();
        let got = p
            .wait_for(ctx, wait, move |v| {
                v["type"] == "error"
                    && (v["request_id"] == want.as_str() || v.get("request_id").is_none())
            })
            .await?;
        match got {
            None if p.closed => {
                let mut frames = early;
                frames.extend(p.drain(ctx, Duration::ZERO).await?);
                return Ok((frames, true));
            }
            // An error without request_id came, and none with it: the barrier's
            // answer lacked its id (the rule `run` applies, error:request-id).
            None if !early.is_empty() => {
                return under(
                    Some(ERROR_REQUEST_ID.key),
                    finding(
                        Oracle::RequestId,
                        format!("an event of unknown type {BARRIER_TYPE} with id {bid:?} drew no error with that request_id within {} ms, only an error without request_id (ASP-041): {}", wait.as_millis(), early[0]),
                    ),
                );
            }
            None => {
                return finding(
                    Oracle::Barrier,
                    format!("an event of unknown type {BARRIER_TYPE} with id {bid:?} drew no INVALID_REQUEST with that request_id within {} ms (ASP-041, ASP-043)", wait.as_millis()),
                )
            }
            Some(e) if e["request_id"] == bid.as_str() => {
                if e["code"] != "INVALID_REQUEST" && e["code"] != RATE_LIMITED {
                    return finding(
                        Oracle::Verdict,
                        format!("an event of unknown type drew {e}, not INVALID_REQUEST (ASP-043)"),
                    );
                }
                let mut frames = early;
                frames.extend(p.drain(ctx, Duration::ZERO).await?);
                return Ok((frames, false));
            }
            // The event had no usable id, so its own error may lack request_id; a
            // second such error answers the barrier.
            Some(e) if strict || !early.is_empty() => {
                return under(
                    Some(ERROR_REQUEST_ID.key),
                    finding(
                        Oracle::RequestId,
                        format!("an error without request_id although the request carried an id (ASP-041): {e}"),
                    ),
                );
            }
            Some(e) => early.push(e),
        }
    }
}

pub(super) fn is_answer(v: &Value) -> bool {
    matches!(
        v["type"].as_str(),
        Some("error" | "space.joined" | "agent.registered")
    ) || (v["type"] == "space.list" && v.get("spaces").is_some())
}

/// For an event that draws no answer of its own (`quiet`: no error either, else an
/// open verdict): judges what arrives before the barrier's answer. Errors get the
/// common checks (ASP-041, ASP-042) and, when `quiet`, are a finding unless
/// RATE_LIMITED; a space.joined answering the event must list the joiner `me`
/// (ASP-023); a close after a quiet event is a finding.
pub(super) async fn judge_until_barrier(
    ctx: &mut Ctx,
    p: &mut Peer,
    quiet: bool,
    rid: Option<&str>,
    what: &str,
    me: &str,
) -> FuzzStep<()> {
    let (frames, closed) = barrier(ctx, p, rid.is_some()).await?;
    for v in &frames {
        if v["type"] == "error" {
            check_error(ctx, v, rid)?;
            if quiet && v["code"] != RATE_LIMITED {
                return finding(Oracle::Verdict, format!("{what} drew an error: {v}"));
            }
        }
        // A space.joined answering the event lists the joiner (joined_findings).
        if v["type"] == "space.joined" && rid.is_none_or(|r| v["id"] == r) {
            let space = v["space"].as_str().unwrap_or_default();
            first_failing(joined_findings(v, None, space, me))?;
        }
    }
    if closed && quiet {
        return finding(
            Oracle::Dropped,
            format!("the target closed the connection after {what}, which draws no error"),
        );
    }
    Ok(())
}

/// The answer is an error `codes` allows (`Ok(false)`: nothing more to check), or an
/// event of type `ty` that echoes the request id `rid` (`Ok(true)`).
pub(super) fn expected_event(
    answer: &Value,
    codes: &Codes<&'static str>,
    what: &str,
    ty: &str,
    reqs: &str,
    rid: Option<&str>,
) -> FuzzStep<bool> {
    if answer["type"] == "error" {
        let code = answer["code"].as_str().unwrap_or_default();
        return if allows(codes, code) {
            Ok(false)
        } else {
            finding(
                Oracle::Verdict,
                format!("{what} drew {answer}; expected {ty} ({reqs})"),
            )
        };
    }
    if answer["type"] != ty {
        return finding(
            Oracle::Verdict,
            format!("{what} drew {answer}; expected {ty}"),
        );
    }
    match rid {
        Some(rid) if answer["id"] != rid => finding(
            Oracle::Verdict,
            format!("{ty} does not echo the request id {rid:?} (ASP-021): {answer}"),
        ),
        _ => Ok(true),
    }
}

/// What a case knows when it sends an event.
pub(super) struct St {
    pub(super) me: String,
    pub(super) joined: Vec<String>,
    pub(super) public: String,
    pub(super) full: Option<String>,
    pub(super) missing: String,
    /// The case's fresh token: a name containing it was never created.
    pub(super) tok: String,
    pub(super) pool: String,
}

pub(super) type Obj = serde_json::Map<String, Value>;

/// The object member `key` of `o`, set to `init` first when it is not an object.
pub(super) fn member_object<'a>(o: &'a mut Obj, key: &str, init: Value) -> Option<&'a mut Obj> {
    if !o.get(key).is_some_and(Value::is_object) {
        o.insert(key.into(), init);
    }
    o.get_mut(key).and_then(Value::as_object_mut)
}
