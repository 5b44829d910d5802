//! Multi-round conversations (agora-exchange.txt §7): opening, follow-ups, ids and
//! expiry, and the methods a conversation URL takes (post-only); the cases, and the
//! fuzzer's follow-ups in live conversations.

use super::documents::{fixture, fixture_refused, random_hash, Fixture, Fx};
use super::errors::{
    claim, expect_rejected, expect_success, no_server_error, post_unreadable_judged,
};
use super::replies::{expires_finding, Reply, CONVERSATION_RULES};
use super::requests::{expect_for, judge_expected, template, Template};
use super::wire::{control, conversation_path, fuzz_post, post, send, unix_now, unix_now_ms};
use crate::case::{fail, fail_rows, skip, Bindings, Case, Step, Stop};
use crate::drive::Transport;
use crate::finding::Finding;
use crate::fuzzing::mutate::{edit_bytes, ByteEdit, Val};
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, skip as fuzz_skip, FuzzStep};
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use serde_json::{json, Value};
use std::collections::BTreeSet;

rules! {
    FOLLOW_UP {
        key: "agora-exchange/follow-up",
        requirements: &["AEX-021", "AEX-029"],
        level: None,
        owner: "agora-exchange/follow-up",
        summary: "a follow-up's reply names the conversation it was sent to",
        fails: "a reply to a follow-up that names another conversationId",
        passes: "the same conversationId, or none (a warning, AEX-A11)",
    }
    UNKNOWN_CONVERSATION {
        key: "agora-exchange/unknown-conversation",
        requirements: &["AEX-035"],
        level: None,
        owner: "agora-exchange/unknown-conversation",
        summary: "a follow-up to a conversation never issued draws HTTP 404 or an Agora failure",
        fails: "a follow-up to a never-issued conversation answered otherwise (a success, another status without a failure)",
        passes: "HTTP 404, or a failure (with HTTP 200 a warning, AEX-A9)",
    }
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
    Some(FOLLOW_UP.found(format!(
        "the follow-up reply names conversation {other:?}, not {id:?} (AEX-021)"
    )))
}

/// What the reply `r` to a follow-up in a conversation never issued breaks: it is
/// HTTP 404 or an Agora failure (the unknown-conversation case's rule, AEX-035; a
/// failure with HTTP 200 only warns, AEX-A9).
pub fn unknown_conversation_finding(r: &Reply) -> Option<Finding> {
    (r.http != 404 && !r.is_agora_failure()).then(|| {
        UNKNOWN_CONVERSATION.found(format!(
            "a follow-up to a never-issued conversation drew {}",
            r.describe()
        ))
    })
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

async fn open_many(ctx: &mut Ctx, n: usize) -> crate::case::Step<Vec<String>> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let (id, _, _) = open_conversation(
            ctx,
            None,
            json!({"protocolHash": null, "body": "count", "multiround": true}),
        )
        .await?;
        ids.push(id);
    }
    Ok(ids)
}

fn common_prefix(ids: &[String]) -> usize {
    let Some(first) = ids.first() else { return 0 };
    ids.iter().skip(1).fold(first.len(), |n, s| {
        first
            .bytes()
            .zip(s.bytes())
            .take(n)
            .take_while(|(a, b)| a == b)
            .count()
    })
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("post-only", "GET and PUT to the base URL and GET to a conversation each draw an HTTP 4xx (the code informational), never an exchange; a 200 would be application/json",
        ["AEX-003", "AEX-004", "AEX-048"], Must, false, |ctx| {
        control(ctx).await?;
        let conversation = match open_conversation(ctx, None, json!({"protocolHash": null, "body": "start", "multiround": true})).await {
            Ok((id, _, _)) => conversation_path(&id),
            Err(Stop::Skip(why)) => {
                ctx.note(format!("no conversation to GET ({why}); a never-issued id instead"));
                conversation_path(&format!("h-never-issued-{}", reference_impl::wire::new_id()))
            }
            Err(e) => return Err(e),
        };
        let put_body = serde_json::to_vec(&json!({"protocolHash": null, "body": "ping"})).unwrap_or_default();
        let tries = [
            (reqwest::Method::GET, String::new(), None),
            (reqwest::Method::PUT, String::new(), Some(put_body)),
            (reqwest::Method::GET, conversation, None),
        ];
        let mut wrong: Vec<String> = Vec::new();
        for (method, path, body) in tries {
            let shown = format!("{method} /{path}");
            let headers: &[(&str, &str)] = if body.is_some() { &[("content-type", "application/json")] } else { &[] };
            let r = ctx.http(method, &path, headers, body).await?;
            if (400..500).contains(&r.status) {
                ctx.checked(format!("{shown}: HTTP {} (any 4xx; the exact code is informational, AEX-003)", r.status));
                continue;
            }
            let ct = r.content_type.as_deref().unwrap_or("(none)");
            let mut said = format!("{shown} drew HTTP {} with Content-Type {ct} and {}", r.status, crate::finding::quote(&String::from_utf8_lossy(&r.body)));
            if r.status == 200 && !ct.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")) {
                said.push_str(" (a 200 must be application/json, AEX-004)");
            }
            wrong.push(said);
        }
        if !wrong.is_empty() {
            return fail(format!("{}: a request of another method than POST must draw an HTTP 4xx (AEX-003, AEX-048)", wrong.join("; ")));
        }
        ctx.refusal_counts("requests of other methods than POST")
    }),
    case!("multiround-start", "multiround true opens a conversation: a string conversationId and an integer conversationExpires in the future",
        ["AEX-018", "AEX-021", "AEX-022", "AEX-026", "AEX-027", "AEX-028", "AEX-032"], Must, false, |ctx| {
        let (id, expires, r) = open_conversation(ctx, None, json!({"protocolHash": null, "body": "start", "multiround": true})).await?;
        if let Some(expires) = expires {
            if expires < unix_now() - 5 {
                return fail(format!("conversationExpires {expires} is in the past (AEX-027, AEX-032)"));
            }
            ctx.checked(format!("conversation {id} expires at {expires}"));
        } else {
            // The reply checks met it already; this is the case that owns it.
            ctx.deviation(expires_finding(&format!("a reply carries conversationId but no conversationExpires: {}", r.describe())));
        }
        let r = post(ctx, "", &json!({"protocolHash": null, "body": "start", "multiround": "yes"})).await?;
        if r.is_success() {
            ctx.note("multiround \"yes\" (not a boolean) was accepted (informational, AEX-018)");
        }
        claim(ctx, CONVERSATION_RULES);
        Ok(())
    }),
    case!("conversation-ids-unique", "50 conversations get 50 different ids", ["AEX-026"], Must, false, |ctx| {
        let ids = open_many(ctx, 50).await?;
        let distinct: BTreeSet<&String> = ids.iter().collect();
        if distinct.len() != ids.len() {
            return fail(format!("{} conversations got only {} distinct ids", ids.len(), distinct.len()));
        }
        Ok(())
    }),
    case!("conversation-ids-random", "conversation ids look random: at least 64 bits, no shared prefix, not sequential", ["AEX-055"], Should, false, |ctx| {
        let ids = open_many(ctx, 50).await?;
        let min_len = ids.iter().map(|s| s.chars().count()).min().unwrap_or(0);
        let alphabet: BTreeSet<char> = ids.iter().flat_map(|s| s.chars()).collect();
        let bits = min_len as f64 * (alphabet.len().max(1) as f64).log2();
        let mut wrong = Vec::new();
        if bits < 64.0 {
            wrong.push(format!("ids carry at most {bits:.0} bits ({min_len} characters over {} symbols)", alphabet.len()));
        }
        let prefix = common_prefix(&ids);
        if prefix * 2 > min_len {
            wrong.push(format!("all ids share a {prefix}-character prefix: predictable (timestamp or counter)"));
        }
        let numbers: Vec<u128> = ids.iter().filter_map(|s| s.parse().ok()).collect();
        if numbers.len() == ids.len() && numbers.windows(2).all(|w| w[1] > w[0] && w[1] - w[0] < 1000) {
            wrong.push("ids are sequential numbers".to_string());
        }
        fail_rows("conversation ids are predictable", &wrong)
    }),
    case!("follow-up", "a follow-up POSTed to /conversations/{id} succeeds and names the conversation", ["AEX-021", "AEX-029"], Must, false, |ctx| {
        // The conversation runs under the target's protocol when there is one; the
        // follow-up itself needs none, so a fixture that cannot be had is no stop.
        let fx = match fixture(ctx).await {
            Ok(f) => Some(f),
            Err(Stop::Blocked(k)) if ctx.is_transport_failure(&k) => return Err(Stop::Blocked(k)),
            Err(Stop::Skip(_) | Stop::Blocked(_)) => None,
            Err(e) => return Err(e),
        };
        let first = match &fx {
            Some(f) => json!({"protocolHash": f.hash, "body": f.valid_body, "multiround": true}),
            None => json!({"protocolHash": null, "body": "start", "multiround": true}),
        };
        let (id, _, _) = open_conversation(ctx, fx.as_ref(), first).await?;
        let body = fx.map(|f| f.valid_body).unwrap_or(json!("next"));
        for _ in 0..2 {
            let r = post(ctx, &conversation_path(&id), &json!({"body": body})).await?;
            expect_success(&r, "follow-up")?;
            if let Some(f) = follow_up_finding(&r, &id) {
                return Err(Stop::Finding(f));
            }
            if r.conversation_id().is_none() {
                ctx.warn("the follow-up reply does not repeat conversationId (AEX-021, AEX-A11)");
            }
        }
        Ok(())
    }),
    case!("protocol-change-rejected", "a follow-up that changes protocolHash is rejected as malformed (an HTTP 4xx or status failure)", ["AEX-031"], Must, false, |ctx| {
        let fx = fixture(ctx).await?;
        let (id, _, _) = open_conversation(ctx, Some(&fx), json!({"protocolHash": fx.hash, "body": fx.valid_body, "multiround": true})).await?;
        let r = post(ctx, &conversation_path(&id), &json!({"protocolHash": random_hash(), "body": fx.valid_body})).await?;
        expect_rejected(ctx, &r, "follow-up with another protocolHash")?;
        let (plain, _, _) = open_conversation(ctx, None, json!({"protocolHash": null, "body": "start", "multiround": true})).await?;
        let r = post(ctx, &conversation_path(&plain), &json!({"protocolHash": fx.hash, "body": fx.valid_body})).await?;
        if r.is_success() {
            ctx.warn("a follow-up that adds a protocolHash to a conversation without one was accepted (AEX-A2)");
        }
        Ok(())
    }),
    case!("conversation-expiry", "after conversationExpires a follow-up draws status failure \"Conversation expired\", never success",
        ["AEX-033", "AEX-034", "AEX-052"], Must, false, |ctx| {
        let (id, expires, r) = open_conversation(ctx, None, json!({"protocolHash": null, "body": "start", "multiround": true})).await?;
        let Some(expires) = expires else {
            // Nothing to wait for: the multiround-start case owns the missing member.
            return Err(ctx.block(expires_finding(&format!("a reply carries conversationId but no conversationExpires: {}", r.describe()))));
        };
        let max = ctx.profile().timing.conversation_wait_max_s as i64;
        let wait = expires - unix_now();
        if wait > max {
            return skip(format!("the conversation expires in {wait} s, beyond conversation_wait_max_s = {max}"));
        }
        // conversationExpires is in whole Unix seconds, which a target may read as the
        // first instant of that second (expired from then on) or as the whole second
        // (expired after it). The first follow-up goes just past the instant; if the
        // target still takes it, the second goes past the whole second, or past a
        // later conversationExpires the taken follow-up carries (extending expiry on
        // a follow-up is allowed, AEX-A11). Only a success after that fails.
        let mut r = post_after(ctx, &id, expires * 1000).await?;
        if r.is_success() {
            let later = r.expires().filter(|e| *e > expires).unwrap_or(expires);
            let wait = later - unix_now();
            if wait > max {
                return skip(format!("a follow-up moved conversationExpires to {later} (allowed, AEX-A11), {wait} s away, beyond conversation_wait_max_s = {max}"));
            }
            ctx.note(format!("a follow-up within the second of conversationExpires {expires} was taken; the next goes after conversationExpires {later} has passed whole"));
            r = post_after(ctx, &id, (later + 1) * 1000).await?;
        }
        if r.is_success() {
            return fail(format!("an expired conversation was used successfully (AEX-034): {}", r.describe()));
        }
        if r.http == 404 {
            ctx.warn("an expired conversation drew 404; HTTP 200 with status failure is expected (AEX-033, AEX-A9)");
        } else if !r.is_agora_failure() {
            return fail(format!("expected HTTP 200 with status failure, got {} (AEX-052)", r.describe()));
        } else if !r.error().is_some_and(|e| e.to_ascii_lowercase().contains("expir")) {
            ctx.warn(format!("error {} does not say the conversation expired (AEX-033, AEX-A10)", crate::finding::json(&r.error())));
        }
        Ok(())
    }),
    case!("unknown-conversation", "a follow-up to a never-issued conversation id draws HTTP 404", ["AEX-035"], Fact, false, |ctx| {
        let path = conversation_path(&format!("h-never-issued-{}", reference_impl::wire::new_id()));
        let r = post(ctx, &path, &json!({"body": "hello?"})).await?;
        if let Some(f) = unknown_conversation_finding(&r) {
            return Err(Stop::Finding(f));
        }
        if r.http != 404 {
            ctx.warn(format!("an unknown conversation drew HTTP {} with status failure; 404 is expected (AEX-A9)", r.http));
        }
        Ok(())
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum FollowUp {
    #[default]
    Valid,
    UnknownId,
    OtherHash,
    SameHashUppercase,
    Extra(Val),
    Body(Val),
    Raw(Vec<ByteEdit>),
}

pub(super) async fn follow_up(f: &mut FuzzCtx, fx: &Fx, echo: bool, m: FollowUp) -> FuzzStep<()> {
    let t = if echo {
        Template::EchoMulti
    } else {
        Template::PlainMulti
    };
    let start = template(t, fx);
    let conv_hash = start["protocolHash"].as_str().map(String::from);
    let r = send(f, "", start.clone()).await?;
    judge_expected(&r, expect_for(&start, fx, None), "the opening request")?;
    let Some(id) = r
        .get("conversationId")
        .and_then(Value::as_str)
        .map(String::from)
    else {
        return fuzz_skip(
            "the target declined multi-round mode (no conversationId; allowed, AEX-028)",
        );
    };
    let valid = if echo {
        fx.valid_body.clone()
    } else {
        json!("next")
    };
    let path = conversation_path(&id);
    let mut req = json!({"body": valid});
    match m {
        FollowUp::UnknownId => return unknown_conversation(f, req).await,
        FollowUp::Raw(edits) => return raw_follow_up(f, fx, &path, &req, &edits, &conv_hash).await,
        FollowUp::Valid => {}
        FollowUp::OtherHash => req["protocolHash"] = json!(random_hash()),
        FollowUp::SameHashUppercase => {
            if let Some(h) = &conv_hash {
                req["protocolHash"] = json!(h.to_ascii_uppercase());
            }
        }
        FollowUp::Extra(v) => req["x-fuzz-extra"] = v.json(),
        FollowUp::Body(v) => req["body"] = v.json(),
    }
    let want = expect_for(&req, fx, Some(conv_hash.as_deref()));
    let r = send(f, &path, req).await?;
    judge_expected(&r, want, "the follow-up")?;
    let named = r.is_success().then(|| follow_up_finding(&r, &id));
    verdict::first_failing(named.flatten().into_iter().collect())
}

/// A follow-up to a conversation never issued: 404 or an Agora failure (AEX-035).
async fn unknown_conversation(f: &mut FuzzCtx, req: Value) -> FuzzStep<()> {
    let path = conversation_path(&format!("fz-never-issued-{}", random_hash()));
    let r = send(f, &path, req).await?;
    no_server_error(&r)?;
    verdict::first_failing(unknown_conversation_finding(&r).into_iter().collect())
}

/// A follow-up with its bytes edited: judged as the JSON it still is, and never a
/// success when it is no JSON (AEX-048).
async fn raw_follow_up(
    f: &mut FuzzCtx,
    fx: &Fx,
    path: &str,
    req: &Value,
    edits: &[ByteEdit],
    conv_hash: &Option<String>,
) -> FuzzStep<()> {
    let bytes = edit_bytes(serde_json::to_vec(req).unwrap_or_default(), edits);
    f.fuzzed(&bytes);
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if v.is_object() => {
            let r = fuzz_post(f, path, bytes).await?;
            let want = expect_for(&v, fx, Some(conv_hash.as_deref()));
            judge_expected(&r, want, "the edited follow-up")
        }
        _ => post_unreadable_judged(f, path, bytes, ("a malformed follow-up", false)).await,
    }
}
