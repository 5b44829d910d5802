//! Error codes and refusals (agora-v1.md §5): what a case expects of a reply
//! (processed, of a type, a refusal with the codes that may say so), the control a
//! refusal is judged against, silence as a refusal; the cases of unknown resources,
//! malformed JSON and rate limits; and how the fuzzer judges a reply against what the
//! spec fixes for its message.

use super::replies::{check_reply, read_reply};
use super::wire::{
    error_code_of, peek_error_code, request_with, send, sign_with, wire, Env, Read, ANY,
};
use crate::case::{fail, Bindings, Case, Step};
use crate::drive::{Received, Transport};
use crate::finding::Finding;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{
    about, finding, judge, under, Codes, Expected, FuzzStep, FuzzStop, Observed, Oracle,
};
use crate::rules::rules;
use crate::script::Ctx;
use reference_impl::agora_v1::envelope::SigVariant;
use serde_json::{json, Value};

rules! {
    // here with the requirement of the direct flow.
    REFUSED {
        key: "agora-v1/refused*",
        requirements: &["AV1-026"],
        level: None,
        owner: "",
        summary: "a valid REQUEST the harness built is processed with a RESULT or an OFFER",
        fails: "an ERROR to a plain valid REQUEST (a case's baseline or control); the detail is the code and message, and the cases that need it accepted are blocked",
        passes: "a RESULT or an OFFER",
    }
}

/// The target said nothing where an answer was due: the case is blocked by the
/// one finding every silent exchange shares.
fn no_answer(ctx: &mut Ctx, what: &str) -> crate::case::Stop {
    let ms = ctx.profile().timing.case_timeout_ms;
    ctx.block(crate::rules::TRANSPORT.found_in(
        "agora-v1",
        "no-answer",
        format!("the target did not answer within {ms} ms{what}"),
    ))
}

/// A reply must be there and pass [`check_reply`].
pub fn expect_reply(ctx: &mut Ctx, r: &Received) -> Step<Env> {
    match check_reply(ctx, r)? {
        Some(env) => Ok(env),
        None => Err(no_answer(ctx, "")),
    }
}

/// The reply must be of one of `types`.
pub fn expect_type(ctx: &mut Ctx, r: &Received, types: &[&str]) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    env_of_type(ctx, env, types)
}

/// A valid message the case built, its own subject, has been answered: the reply
/// must be of one of `types`. An ERROR instead counts only beside a control
/// ([`control`]): when a plain valid REQUEST on the same connection is processed, the
/// ERROR is this case's own failure; when that is refused too, the refusal is one
/// finding, which blocks the case.
pub async fn expect_processed(ctx: &mut Ctx, r: &Received, types: &[&str]) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    if env.ty == "ERROR" && !types.contains(&"ERROR") {
        control(ctx).await?;
    }
    env_of_type(ctx, env, types)
}

/// A plain valid message, which no case has as its subject, has been answered
/// (`what` says what it was): an ERROR is a refusal, one finding however many cases
/// meet it, which blocks the case; one of `types` is the case's control.
pub fn expect_baseline(ctx: &mut Ctx, r: &Received, types: &[&str], what: &str) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    baseline(ctx, env, types, what)
}

/// [`expect_baseline`] of a reply already read.
fn baseline(ctx: &mut Ctx, env: Env, types: &[&str], what: &str) -> Step<Env> {
    if env.ty == "ERROR" && !types.contains(&"ERROR") {
        return Err(ctx.block(refusal_of(&env, what)));
    }
    let env = env_of_type(ctx, env, types)?;
    ctx.control(what);
    Ok(env)
}

/// The refusal finding of an ERROR answering `what`, a message the harness built
/// valid: `refused:<code>:<words>`, keyed by the target's code and message.
pub(super) fn refusal_of(env: &Env, what: &str) -> Finding {
    let code = env.error_code().map(|c| c.to_string()).unwrap_or_default();
    crate::rules::refusal(
        (&REFUSED, "agora-v1", &[]),
        &code,
        env.error_message().unwrap_or_default(),
        what,
    )
}

/// A valid message refused (`Oracle::ValidRejected` with an ERROR reply) is the
/// refusal finding, `refused:<code>:<words>`, as each case's control files it in
/// `run`; other verdicts are left as they are.
pub(super) fn refused_valid(judged: FuzzStep<()>, env: Option<&Env>, what: &str) -> FuzzStep<()> {
    match judged {
        Err(FuzzStop::Found(mut found)) if found.oracle == Oracle::ValidRejected => {
            if let Some(e) = env.filter(|e| e.ty == "ERROR") {
                found.key = Some(refusal_of(e, what).key.to_string());
            }
            Err(FuzzStop::Found(found))
        }
        other => other,
    }
}

/// The case's control: a valid message of the case the target processed already,
/// else a plain valid REQUEST for the direct resource, sent now on the same
/// connection, which must be processed (an ERROR is the refusal finding).
pub async fn control(ctx: &mut Ctx) -> Step<()> {
    if ctx.has_control().is_some() {
        return Ok(());
    }
    let probe = request_with(ctx, |p| p["params"] = json!({"control": true}));
    let r = send(ctx, probe).await?;
    expect_baseline(
        ctx,
        &r,
        &["RESULT", "OFFER"],
        "a valid REQUEST for the direct resource (the case's control)",
    )
    .map(|_| ())
}

fn env_of_type(ctx: &mut Ctx, env: Env, types: &[&str]) -> Step<Env> {
    if !types.contains(&env.ty.as_str()) {
        return fail(format!(
            "expected {}, got {}",
            types.join(" or "),
            env.said()
        ));
    }
    ctx.checked(format!("reply is {}", env.ty));
    Ok(env)
}

/// The reply must be an ERROR with exactly `code` (read leniently: a code in
/// another member is the ERROR shape's finding, not this case's).
pub fn expect_error(ctx: &mut Ctx, r: &Received, code: i64) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    if env.error_code() == Some(code) {
        ctx.checked(format!("ERROR code {code}"));
        Ok(env)
    } else {
        fail(format!("expected ERROR {code}, got {}", env.said()))
    }
}

/// How strictly a rejection's code is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeRule {
    /// Another code fails.
    Strict,
    /// Another code warns.
    Lenient,
}

fn judge_code(
    ctx: &mut Ctx,
    code: Option<i64>,
    said: &str,
    codes: &[i64],
    rule: CodeRule,
    what: &str,
) -> Step<()> {
    if code.is_some_and(|c| codes.contains(&c)) {
        ctx.checked(format!("{what}: rejected with {said}"));
        return Ok(());
    }
    let want = codes
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(" or ");
    let msg = format!("{what}: rejected, but with {said} instead of code {want}");
    match rule {
        CodeRule::Strict => fail(msg),
        CodeRule::Lenient => {
            ctx.warn(msg);
            Ok(())
        }
    }
}

/// The target must not process the message: an ERROR (with one of `codes`) passes,
/// and so does a refusal outside the envelope that carries a code or a refusing
/// HTTP status (a finding records the shape; one with neither blocks the case). An
/// OFFER or RESULT (any non-ERROR envelope) fails.
///
/// Silence is a refusal (AV1-A5) only from a target that is alive: the harness then
/// sends a valid REQUEST on the same connection, and the case passes only if that is
/// answered. A target silent to both blocks the case; a late OFFER or RESULT for the
/// rejected message fails it.
pub async fn expect_rejection(
    ctx: &mut Ctx,
    r: &Received,
    codes: &[i64],
    rule: CodeRule,
    what: &str,
) -> Step<()> {
    match read_reply(ctx, r)? {
        None => silence_as_refusal(ctx, what).await,
        Some(Read::Bare(f, status, value)) => {
            let said = f.summary.clone();
            let ty = value
                .as_ref()
                .and_then(|v| v["type"].as_str())
                .map(str::to_ascii_uppercase);
            if matches!(ty.as_deref(), Some("RESULT" | "OFFER")) {
                ctx.finding(f);
                return fail(format!(
                    "{what}: the target processed it and answered {said}"
                ));
            }
            let code = value
                .as_ref()
                .and_then(|v| error_code_of(v).map(|(c, _)| c))
                .or_else(|| status.filter(|s| *s >= 400).map(i64::from));
            // Without a code or a refusing status, nothing says the message was
            // refused rather than processed.
            if code.is_none() {
                return Err(ctx.block(f));
            }
            ctx.finding(f);
            // A refusal, of whatever code, means something only beside a control.
            control(ctx).await?;
            judge_code(ctx, code, &said, codes, rule, what)?;
            ctx.refusal_counts(what)
        }
        Some(Read::Env(env)) => {
            if env.ty != "ERROR" {
                return fail(format!(
                    "{what}: the target processed it and answered {}",
                    env.said()
                ));
            }
            control(ctx).await?;
            judge_code(ctx, env.error_code(), &env.said(), codes, rule, what)?;
            ctx.refusal_counts(what)
        }
    }
}

/// After a silence: proves the target alive with a valid REQUEST on the same
/// connection, or blocks the case.
async fn silence_as_refusal(ctx: &mut Ctx, what: &str) -> Step<()> {
    ctx.note(format!(
        "{what}: no reply within the deadline; a silent drop is a refusal only from a live target: sending a valid REQUEST on the same connection"
    ));
    let probe = request_with(ctx, |p| p["params"] = json!({"probe": "alive"}));
    let probe_id = probe["id"].as_str().unwrap_or_default().to_string();
    let r = send(ctx, probe).await?;
    let mut reply = read_reply(ctx, &r)?;
    for _ in 0..2 {
        let env = match reply {
            None => {
                return Err(no_answer(
                    ctx,
                    &format!(
                        ": {what} drew no reply, and neither did a valid REQUEST sent right after on the same connection (silence is a refusal only from a live target)"
                    ),
                ))
            }
            Some(Read::Bare(f, _, _)) => {
                ctx.finding(f);
                break;
            }
            Some(Read::Env(env)) => env,
        };
        let about = env.str("request_id").unwrap_or_default();
        let late = about != probe_id && ctx.sent_ids.contains(about);
        if !late {
            // The probe is the case's control: refused, it proves nothing.
            baseline(
                ctx,
                *env,
                &["RESULT", "OFFER"],
                "a valid REQUEST sent right after on the same connection (the case's control)",
            )?;
            break;
        }
        if env.ty != "ERROR" {
            return fail(format!(
                "{what}: no reply within the deadline, then a late {} for it: the target processed it",
                env.said()
            ));
        }
        ctx.note(format!(
            "{what}: refused late with {}; waiting for the answer to the REQUEST",
            env.said()
        ));
        let limits = ctx.limits().timeout;
        reply = match ctx.listen(limits).await? {
            Some(b) => read_reply(ctx, &Received::Frame(b))?,
            None => None,
        };
    }
    ctx.checked(format!(
        "{what}: dropped silently, and the target answered a valid REQUEST right after: a silent refusal (AV1-A5)"
    ));
    ctx.refusal_counts(what)
}

pub(super) fn refused_as_unknown(r: &Received) -> bool {
    matches!(peek_error_code(r), Some(400 | 404))
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "error-unknown-resource",
        "an unknown resource draws ERROR 404 with integer code, string message and the request id",
        ["AV1-045", "AV1-046", "AV1-049"],
        Fact,
        ANY,
        false,
        |ctx| {
            control(ctx).await?;
            let unknown = ctx.profile().agora_v1.unknown_resource.clone();
            let req = request_with(ctx, |p| p["resource"] = json!(unknown));
            let req_id = req["id"].as_str().unwrap_or_default().to_string();
            let r = send(ctx, req).await?;
            // The ERROR payload's shape (AV1-045) is judged by check_reply, whose
            // finding this case owns; the code is read where the target put it.
            let env = expect_error(ctx, &r, 404)?;
            match env.str("request_id") {
                Some(id) if id == req_id => ctx.checked("ERROR.request_id names the REQUEST"),
                Some(other) => {
                    return fail(format!(
                        "ERROR.request_id {other:?} is not the REQUEST's id"
                    ))
                }
                None => ctx.warn("ERROR 404 carries no request_id (AV1-049 asks for it)"),
            }
            Ok(())
        }
    ),
    case!(
        "reject-malformed-json",
        "truncated JSON and an envelope without type draw ERROR 400",
        ["AV1-047"],
        Fact,
        ANY,
        false,
        |ctx| {
            let req = request_with(ctx, |_| {});
            let mut text = wire(&req);
            text.truncate(text.len() / 2);
            let r = ctx.send_bytes(text).await?;
            expect_rejection(ctx, &r, &[400], CodeRule::Strict, "truncated JSON").await?;
            let mut req = request_with(ctx, |_| {});
            if let Some(o) = req.as_object_mut() {
                o.remove("type");
            }
            let r = send(ctx, req).await?;
            expect_rejection(ctx, &r, &[400], CodeRule::Strict, "envelope without type").await
        }
    ),
    case!(
        "rate-limit-burst",
        "a burst of REQUESTs: throttled replies are ERROR 429 (no throttling is informational)",
        ["AV1-051"],
        Fact,
        Bindings::Only(Transport::Http),
        false,
        |ctx| {
            let n = ctx.profile().agora_v1.burst_requests;
            let mut bodies = Vec::with_capacity(n);
            for i in 0..n {
                let mut req = request_with(ctx, |p| p["params"] = json!({"i": i}));
                sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
                bodies.push(wire(&req));
            }
            // Every reply of the burst is held until the burst ends: replies to these
            // small REQUESTs are small, and a reply above 64 KiB ends the burst, so
            // that a burst against a target answering megabytes stays bounded.
            let limits = crate::drive::Limits {
                max_bytes: ctx.limits().max_bytes.min(64 * 1024),
                ..ctx.limits()
            };
            let mut tasks = tokio::task::JoinSet::new();
            let conns = 8usize;
            let per = n.div_ceil(conns);
            for chunk in bodies.chunks(per.max(1)).map(<[Vec<u8>]>::to_vec) {
                let mut d = ctx.new_connection();
                tasks.spawn(async move {
                    let mut out = Vec::new();
                    for b in chunk {
                        out.push(d.exchange(b, limits).await);
                    }
                    out
                });
            }
            let (mut ok, mut throttled) = (0usize, 0usize);
            while let Some(res) = tasks.join_next().await {
                let Ok(results) = res else {
                    return fail("a burst task panicked");
                };
                for r in results {
                    let r = match r {
                        Ok(r) => r,
                        Err(e) => {
                            return fail(format!(
                                "during the burst: {}",
                                crate::script::describe_drive_error(&e)
                            ))
                        }
                    };
                    ctx.note_if_retried(&r);
                    let env = expect_reply(ctx, &r)?;
                    match (env.ty.as_str(), env.error_code()) {
                        ("RESULT" | "OFFER", _) => ok += 1,
                        ("ERROR", Some(429)) => throttled += 1,
                        (ty, code) => {
                            return fail(format!(
                                "a burst request drew {ty} {}; throttling must use ERROR 429",
                                crate::finding::json(&code)
                            ))
                        }
                    }
                }
            }
            ctx.note(format!(
                "{n} requests: {ok} processed, {throttled} throttled with 429"
            ));
            Ok(())
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// Sends bytes that are no JSON: ERROR 400, as the reject-malformed-json case
/// holds; a 5xx or ERROR 500 to them is that case's wrong answer.
pub(super) async fn malformed(f: &mut FuzzCtx, bytes: Vec<u8>) -> FuzzStep<()> {
    let want = Expected::Reject(Codes::OneOf(vec![400]));
    let plain = (Oracle::Verdict, Oracle::Verdict);
    let judged = match server_error_as_answer(&want, exchange(f, bytes).await) {
        Ok((v, env)) => judge_reply("malformed JSON", &want, &v, env.as_ref(), plain),
        Err(e) => Err(e),
    };
    under(Some("agora-v1/reject-malformed-json"), judged)
}

/// What the target did with one message: the reply's type and ERROR code (read
/// by `replies::check_reply`), or nothing.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Verdict {
    Reply { ty: String, code: Option<i64> },
    Silence,
}

impl Verdict {
    fn of(env: Option<&Env>) -> Verdict {
        match env {
            Some(e) => Verdict::Reply {
                ty: e.ty.clone(),
                code: e.error_code(),
            },
            None => Verdict::Silence,
        }
    }

    pub(super) fn said(&self, env: Option<&Env>) -> String {
        env.map_or_else(|| "no reply".into(), Env::said)
    }
}

/// Sends `bytes` as the fuzzed message and reads the reply with the suite's
/// reply checks; a 5xx is a server-error finding.
pub(super) async fn exchange(f: &mut FuzzCtx, bytes: Vec<u8>) -> FuzzStep<(Verdict, Option<Env>)> {
    let sent = serde_json::from_slice::<Value>(&bytes).ok();
    if let Some(id) = sent.as_ref().and_then(|v| v["id"].as_str()) {
        f.ctx.sent_ids.insert(id.to_string());
    }
    let unknown = sent.as_ref().is_some_and(|v| names_unknown_resource(f, v));
    f.fuzzed(&bytes);
    let r = f.ctx.send_bytes(bytes).await?;
    match read(f, &r) {
        // A 5xx or ERROR 500 to a REQUEST for a resource the target does not offer
        // is the wrong answer to an unknown resource, as the error-unknown-resource
        // case judges it (its key), not a crash.
        Err(FuzzStop::Found(mut found)) if unknown && found.oracle == Oracle::ServerError => {
            found.oracle = Oracle::ErrorCode;
            found.key = Some("agora-v1/error-unknown-resource".into());
            Err(FuzzStop::Found(found))
        }
        other => other,
    }
}

/// Whether `v` is a REQUEST for a resource the profile does not name (the
/// unknown-resource template, or a resource re-signed to a drawn string): one the
/// target does not offer.
fn names_unknown_resource(f: &FuzzCtx, v: &Value) -> bool {
    let p = &f.ctx.profile().agora_v1;
    v["type"] == "REQUEST"
        && v["payload"]["resource"]
            .as_str()
            .is_some_and(|r| r != p.direct_resource && r != p.negotiated_resource)
}

pub(super) fn read(f: &mut FuzzCtx, r: &Received) -> FuzzStep<(Verdict, Option<Env>)> {
    if let Received::Http { status, .. } = r {
        if *status >= 500 {
            return finding(
                Oracle::ServerError,
                format!("the target answered HTTP {status}"),
            );
        }
    }
    let env = check_reply(&mut f.ctx, r)?;
    if let Some(c) = env.as_ref().and_then(Env::error_code).filter(|c| *c >= 500) {
        return finding(
            Oracle::ServerError,
            format!("the target answered ERROR {c}"),
        );
    }
    Ok((Verdict::of(env.as_ref()), env))
}

/// What a carried-out agora-v1 message must be answered with.
pub(super) type Want = Expected<&'static [&'static str], i64>;

/// Judges a reply against `want`: silence is a refusal (AV1-A5) where one is due;
/// a message carried out must draw one of the reply types `want` names.
pub(super) fn judge_reply(
    what: &str,
    want: &Want,
    v: &Verdict,
    env: Option<&Env>,
    oracles: (Oracle, Oracle),
) -> FuzzStep<()> {
    let got = match v {
        Verdict::Silence if matches!(want, Expected::Reject(_)) => return Ok(()),
        Verdict::Silence => Observed::Refused(None),
        Verdict::Reply { ty, code } if ty == "ERROR" => Observed::Refused(*code),
        Verdict::Reply { .. } => Observed::Carried,
    };
    let judged = match judge(want, &got, oracles, || v.said(env)) {
        Ok(Some(types)) if !env.is_some_and(|e| types.contains(&e.ty.as_str())) => finding(
            oracles.0,
            format!(
                "expected {}; the target said {}",
                types.join(" or "),
                v.said(env)
            ),
        ),
        other => other.map(|_| ()),
    };
    about(what, judged)
}

pub(super) const ANY_CODE: Codes<i64> = Codes::Any;

/// A 5xx or ERROR 500 to a message the spec rejects with a code is the wrong answer
/// to it, as the case whose subject the message is judges it (its key), not a
/// crash.
pub(super) fn server_error_as_answer<T>(want: &Want, r: FuzzStep<T>) -> FuzzStep<T> {
    match r {
        Err(crate::fuzzing::verdict::FuzzStop::Found(mut found))
            if found.oracle == Oracle::ServerError
                && matches!(want, Expected::Reject(Codes::OneOf(_))) =>
        {
            found.oracle = Oracle::ErrorCode;
            Err(crate::fuzzing::verdict::FuzzStop::Found(found))
        }
        other => other,
    }
}
