//! The client role: the checks of what a requesting agent sends and how it reads the
//! replies, its cases, and its fuzzer (the counterpart's replies edited).

use super::counterpart::{defined, server, Serve, CONVERSATION};
use crate::case::{fail, fail_rows, Bindings, Case};
use crate::drive::Transport;
use crate::finding::quote;
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{finding, FuzzFuture, FuzzStep, Oracle};
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use reference_impl::agora_exchange::document::{self, sha1_hex, ECHO_DOCUMENT};
use serde_json::{json, Value};

rules! {
    CLIENT_CONTENT_TYPE {
        key: "agora-exchange/client:content-type",
        requirements: &["AEX-005"],
        level: None,
        owner: "",
        summary: "a client sends its requests with Content-Type application/json",
        fails: "a client request with another Content-Type or none",
        passes: "Content-Type application/json",
    }
    CLIENT_FOLLOW_UP_PROTOCOL_HASH {
        key: "agora-exchange/client:follow-up-protocol-hash",
        requirements: &["AEX-030"],
        level: None,
        owner: "",
        summary: "a client's follow-up to a conversation leaves protocolHash out",
        fails: "a POST to /conversations/{id} that carries protocolHash (judged on what passes through agentconform proxy; the client cases fail client-conversation for it)",
        passes: "follow-ups without protocolHash, or with it null",
    }
    // saw (follow_up_against_conversation).
    CLIENT_FOLLOW_UP_UNOPENED {
        key: "agora-exchange/client:follow-up-unopened",
        requirements: &["AEX-025", "AEX-028", "AEX-029"],
        level: None,
        owner: "",
        summary: "a client sends follow-ups only to a conversation a reply opened",
        fails: "a POST to /conversations/{id} whose id no reply through the proxy issued, after the client's opening request went through it (a declined multi-round, an id of the client's own)",
        passes: "follow-ups to conversation ids the server issued",
    }
    CLIENT_FOLLOW_UP_EXPIRED {
        key: "agora-exchange/client:follow-up-expired",
        requirements: &["AEX-022", "AEX-034"],
        level: None,
        owner: "",
        summary: "a client sends no follow-up once its conversation has expired",
        fails: "a follow-up sent (by the proxy's clock, to the whole second) after the conversationExpires of the last reply that gave one",
        passes: "follow-ups before the conversation expires",
    }
}

/// AEX-005: a client's request says `Content-Type: application/json`. What it says
/// instead, when it does not.
pub fn client_content_type(x: &crate::counterparty::Exchange) -> Option<String> {
    let ct = x.content_type.as_deref().unwrap_or("");
    (!ct.to_ascii_lowercase().starts_with("application/json")).then(|| {
        format!(
            "the client's request says Content-Type {}, not application/json",
            quote(ct)
        )
    })
}

/// A follow-up (a POST to `/conversations/{id}`) goes to a conversation a reply
/// opened (AEX-028) and leaves protocolHash out (AEX-030). What it does instead, when
/// it does not; `None` for any other request.
pub fn client_follow_up(
    x: &crate::counterparty::Exchange,
    request: &Value,
    opened: bool,
) -> Option<String> {
    if !x.path.contains("/conversations/") {
        return None;
    }
    if !opened {
        return Some(format!(
            "the client POSTed to {} although no reply opened a conversation (AEX-028)",
            x.path
        ));
    }
    request
        .get("protocolHash")
        .filter(|h| !h.is_null())
        .map(|h| {
            format!(
                "a follow-up to {} repeats protocolHash {h} (AEX-030: follow-ups leave it out)",
                x.path
            )
        })
}

/// A follow-up against the conversation the proxy saw: its id was issued by a reply
/// (AEX-025, AEX-028, AEX-029: judged once the client's opening request went
/// through the proxy), and it is sent before the conversationExpires of the last
/// reply that gave one (AEX-022, AEX-034: a second's margin for the whole-second
/// timestamp, by the proxy's clock).
pub(super) fn follow_up_against_conversation(
    ctx: &mut Ctx,
    x: &crate::exchange::Exchange,
    h: &crate::exchange::History,
) {
    let route = x.path.split('?').next().unwrap_or_default();
    let Some((_, id)) = route.split_once("/conversations/") else {
        return;
    };
    // The id as the path spells it: the issued id, percent-encoded or not.
    let names = |v: &Value| {
        v["conversationId"].as_str().is_some_and(|c| {
            c == id || reference_impl::agora_exchange::client::percent_encode(c) == id
        })
    };
    if !h.replies().any(|(_, v)| names(&v)) {
        let opening_seen = h
            .earlier
            .iter()
            .any(|(e, _)| e.method == "POST" && !e.path.contains("/conversations/"));
        if opening_seen {
            ctx.finding(CLIENT_FOLLOW_UP_UNOPENED.found(format!("the client POSTed a follow-up to {}, a conversation no reply through the proxy opened", x.path)));
        }
        return;
    }
    let latest = h
        .replies()
        .filter(|(e, v)| {
            names(v)
                || e.path
                    .split('?')
                    .next()
                    .is_some_and(|p| p.ends_with(&format!("/conversations/{id}")))
        })
        .find_map(|(_, v)| v["conversationExpires"].as_i64());
    if let Some(expires) = latest {
        let now = h.now.unix_timestamp();
        if now > expires {
            ctx.finding(CLIENT_FOLLOW_UP_EXPIRED.found(format!(
                    "the client POSTed a follow-up to {} at {now}, {} s after the conversation expired (conversationExpires {expires})",
                    x.path,
                    now - expires
                )));
        }
    }
}

macro_rules! client_case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, |$ctx:ident| $body:block) => {
        crate::define_case!("agora-exchange", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| $body)
    };
}

/// The client's side (`run --role client`): the harness is the server, the client
/// driver runs scenario `single` or `conversation` against it.
pub const CLIENT_CASES: &[Case] = &[
    client_case!("client-single", "a single-round request: POSTed to the base URL as application/json, with the body and protocolHash given", ["AEX-003", "AEX-005", "AEX-007", "AEX-008", "AEX-013", "AEX-015"], Must, |ctx| {
        let input = json!({"body": {"text": "hello from the harness"}, "protocolHash": echo_hash()});
        let run = crate::counterparty::drive(ctx, "single", &input, server(Serve::Plain), defined).await?;
        let first = client_request(ctx, &run, 0, "/")?;
        if first["body"] != input["body"] || first["protocolHash"] != input["protocolHash"] {
            return fail(format!("the request carries body {} and protocolHash {}, not the scenario's {} and {}", first["body"], first["protocolHash"], input["body"], input["protocolHash"]));
        }
        ctx.checked("the request carries the scenario's body and protocolHash");
        client_completed(ctx, &run, &[json!({"echo": input["body"]})])
    }),
    client_case!("client-conversation", "a conversation: multiround true, then follow-ups POSTed to /conversations/{id} without protocolHash", ["AEX-018", "AEX-024", "AEX-029", "AEX-030"], Must, |ctx| {
        let input = json!({"body": "first", "protocolHash": echo_hash(), "followups": ["second", {"n": 3}]});
        let run = crate::counterparty::drive(ctx, "conversation", &input, server(Serve::Plain), defined).await?;
        let first = client_request(ctx, &run, 0, "/")?;
        if first["multiround"] != true {
            return fail(format!("the opening request does not ask for multi-round mode with \"multiround\": true (it has {})", first["multiround"]));
        }
        ctx.checked("the opening request asks for multi-round mode");
        let path = format!("/conversations/{CONVERSATION}");
        for (i, want) in input["followups"].as_array().into_iter().flatten().enumerate() {
            let f = client_request(ctx, &run, i + 1, &path)?;
            if let Some(why) = client_follow_up(&run.exchanges[i + 1], &f, true) {
                return fail(why);
            }
            if f["body"] != *want {
                return fail(format!("follow-up {} carries body {}, not the scenario's {want}", i + 1, f["body"]));
            }
        }
        ctx.checked("every follow-up went to the conversation without protocolHash");
        let mut results = vec![json!({"echo": "first"})];
        results.extend(input["followups"].as_array().into_iter().flatten().map(|b| json!({"echo": b})));
        client_completed(ctx, &run, &results)
    }),
    client_case!("client-declined-conversation", "when the server declines multi-round mode, the client sends no follow-up to a conversation", ["AEX-025", "AEX-028", "AEX-029"], Must, |ctx| {
        let input = json!({"body": "first", "protocolHash": echo_hash(), "followups": ["second"]});
        let run = crate::counterparty::drive(ctx, "conversation", &input, server(Serve::DeclineConversation), defined).await?;
        client_request(ctx, &run, 0, "/")?;
        if let Some(x) = run.exchanges.iter().skip(1).find(|x| x.path.contains("/conversations/")) {
            return fail(format!("the server opened no conversation, yet the client POSTed a follow-up to {}", x.path));
        }
        ctx.checked("no follow-up after a declined conversation");
        Ok(())
    }),
    client_case!("client-expired-conversation", "a conversation that has expired is reported as a failure and never used again", ["AEX-033", "AEX-034"], Must, |ctx| {
        // A client that fails every conversation passes here only if it completes one.
        ctx.controlled_by("agora-exchange/client-conversation");
        let input = json!({"body": "first", "protocolHash": echo_hash(), "followups": ["second", "third"]});
        let run = crate::counterparty::drive(ctx, "conversation", &input, server(Serve::ExpireOnFollowUp), defined).await?;
        client_request(ctx, &run, 0, "/")?;
        let follow_ups = run.exchanges.iter().filter(|x| x.path.contains("/conversations/")).count();
        if follow_ups > 1 {
            return fail(format!("the client sent {follow_ups} follow-ups to a conversation the server had answered \"Conversation expired\" (AEX-034: an expired conversationId can never be used)"));
        }
        if !run.failed() {
            return fail(format!("the client reported success after \"Conversation expired\": {}; stdout: {}", run.ended(), crate::finding::clipped(run.stdout.trim(), 300)));
        }
        ctx.checked("the client reported the expired conversation and used it no more");
        Ok(())
    }),
    client_case!("client-failure-reported", "a failure reply is reported as a failure, not a success, with or without its error member", ["AEX-009", "AEX-010"], Must, |ctx| {
        // A client that reports every exchange as failed passes here only if it takes a success.
        ctx.controlled_by("agora-exchange/client-single");
        let mut wrong = Vec::new();
        for (plan, what) in [
            (Serve::Failure, "a failure reply"),
            (Serve::FailureWithoutError, "a failure reply that describes the failure in body, without error"),
            (Serve::RequireSources, "a failure reply naming 'protocolSources'"),
        ] {
            let judged = reported_failure(ctx, plan, what).await;
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("replies the client did not report as failures", &wrong)
    }),
    client_case!("client-status-exact", "only \"status\": \"success\" is a success: \"Success\" and \"error\" are reported as errors", ["AEX-009"], Must, |ctx| {
        ctx.controlled_by("agora-exchange/client-single");
        let mut wrong = Vec::new();
        for (plan, what) in [
            (Serve::StatusCapitalized, "a reply with \"status\": \"Success\""),
            (Serve::StatusError, "a reply with \"status\": \"error\""),
        ] {
            let judged = reported_failure(ctx, plan, what).await;
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("replies the client did not report as failures", &wrong)
    }),
    client_case!("client-reads-expiry", "the client reads conversationExpires: a conversation that opens already expired gets no follow-up, though the server would answer it", ["AEX-022", "AEX-034"], Must, |ctx| {
        // A client that never sends a follow-up passes here only if it sends them
        // to a live conversation.
        ctx.controlled_by("agora-exchange/client-conversation");
        let input = json!({"body": "first", "protocolHash": echo_hash(), "followups": ["second"]});
        let run = crate::counterparty::drive(ctx, "conversation", &input, server(Serve::ExpiredOnOpen), defined).await?;
        client_request(ctx, &run, 0, "/")?;
        let expires = serde_json::from_slice::<Value>(&run.exchanges[0].answered).map(|v| v["conversationExpires"].clone()).unwrap_or_default();
        if let Some(x) = run.exchanges.iter().skip(1).find(|x| x.path.contains("/conversations/")) {
            return fail(format!("the conversation expired at {expires} (conversationExpires, before the reply was sent), yet the client POSTed a follow-up to {} (AEX-034)", x.path));
        }
        if !run.failed() {
            return fail(format!("the client reported success for a conversation that expired before its follow-ups: {}; stdout: {}", run.ended(), crate::finding::clipped(run.stdout.trim(), 300)));
        }
        ctx.checked(format!("the client read conversationExpires {expires}, sent no follow-up and reported the conversation expired"));
        Ok(())
    }),
];

/// Runs the `single` scenario against `plan`, whose reply is not a success: the
/// client must report it as an error (AEX-009, AEX-010).
async fn reported_failure(ctx: &mut Ctx, plan: Serve, what: &str) -> crate::case::Step<()> {
    let input = json!({"body": {"text": "hi"}, "protocolHash": echo_hash()});
    let run = crate::counterparty::drive(ctx, "single", &input, server(plan), defined).await?;
    client_request(ctx, &run, 0, "/")?;
    run.took_nothing("the client", "reported success after", what)?;
    ctx.checked(format!("the client reported {what} as an error"));
    Ok(())
}

/// The echo protocol's hash, for the scenarios' protocolHash.
fn echo_hash() -> String {
    sha1_hex(document::ECHO_DOCUMENT.as_bytes())
}

/// Request `i` of the run: POSTed to `path` as application/json (AEX-003, AEX-005),
/// a JSON object with a body (AEX-008, AEX-013).
fn client_request(
    ctx: &mut Ctx,
    run: &crate::counterparty::DriverRun,
    i: usize,
    path: &str,
) -> crate::case::Step<Value> {
    let Some(x) = run.exchanges.get(i) else {
        return fail(format!(
            "the client sent {} requests, not the {} the scenario asks for; {}; stderr: {}",
            run.exchanges.len(),
            i + 1,
            run.ended(),
            crate::finding::clipped(run.stderr.trim(), 300)
        ));
    };
    if x.path.trim_end_matches('/') != path.trim_end_matches('/') {
        return fail(format!(
            "request {} was POSTed to {}, not {path}",
            i + 1,
            x.path
        ));
    }
    if let Some(why) = client_content_type(x) {
        ctx.finding(CLIENT_CONTENT_TYPE.found(why));
    }
    let Ok(v) = serde_json::from_slice::<Value>(&x.received) else {
        return fail(format!(
            "request {} is not JSON: {}",
            i + 1,
            quote(&String::from_utf8_lossy(&x.received))
        ));
    };
    if !v.is_object() || !(v["body"].is_string() || v["body"].is_object()) {
        return fail(format!(
            "request {} is not an object with a string or object body: {v}",
            i + 1
        ));
    }
    Ok(v)
}

/// The driver exited 0 and printed each expected reply body as a result line.
fn client_completed(
    ctx: &mut Ctx,
    run: &crate::counterparty::DriverRun,
    bodies: &[Value],
) -> crate::case::Step<()> {
    if run.failed() {
        return fail(format!(
            "the client did not complete the scenario: {}; stdout: {}",
            run.ended(),
            crate::finding::clipped(run.stdout.trim(), 300)
        ));
    }
    let got: Vec<&Value> = run.lines.iter().filter_map(|l| l.get("result")).collect();
    if got.len() != bodies.len() || got.iter().zip(bodies).any(|(g, w)| *g != w) {
        return fail(format!(
            "the driver printed results {}, not the reply bodies {}",
            crate::finding::json(&got),
            crate::finding::json(&bodies)
        ));
    }
    ctx.checked("the client took every reply body");
    Ok(())
}

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the server and edits one
// of its replies to the client under test.

/// Fuzzing a client: each case runs the client driver once (scenario `single` or
/// `conversation`) against the scripted server of `suites::agora_exchange::expect`, one
/// reply edited. Oracles: every request is JSON sent as `application/json`; no
/// follow-up carries protocolHash (AEX-030) or goes to a conversation the server
/// did not open or that its conversationExpires says is over (AEX-034); a failure
/// reply, or a status other than "success", is never reported as success; replies
/// that keep their value complete the scenario; no crash, no hang.
pub static CLIENT_SPEC: Spec =
    crate::fuzzing::client::spec(&[Transport::Http], client_case_fn, client_probe_fn, &[]);

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let input = client_input(false);
        let run =
            crate::counterparty::drive(&mut f.ctx, "single", &input, server(Serve::Plain), defined)
                .await?;
        crate::fuzzing::client::completed(&run, "a plain single request")
    })
}

/// One client fuzz case.
#[derive(Debug, Clone, Default, Arbitrary)]
struct ClientCase {
    conversation: bool,
    /// 0: plain, 1: the server declines the conversation, 2: every reply fails, 3:
    /// the conversation expires before its first follow-up, 4: it opens already
    /// expired, 5: every reply says "Success", 6: every reply says "error".
    plan: u8,
    /// Which reply is edited (by its order).
    reply: u8,
    edit: crate::fuzzing::client::Edit,
}

fn client_input(conversation: bool) -> Value {
    let hash = reference_impl::agora_exchange::document::sha1_hex(ECHO_DOCUMENT.as_bytes());
    if conversation {
        json!({"body": "first", "protocolHash": hash, "followups": ["second", {"n": 3}]})
    } else {
        json!({"body": {"text": "fuzz"}, "protocolHash": hash})
    }
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    use crate::fuzzing::client::{edit_answer, ended_well, Served};
    let c: ClientCase = f.draw();
    let plan = [
        Serve::Plain,
        Serve::DeclineConversation,
        Serve::Failure,
        Serve::ExpireOnFollowUp,
        Serve::ExpiredOnOpen,
        Serve::StatusCapitalized,
        Serve::StatusError,
    ][usize::from(c.plan % 7)];
    let input = client_input(c.conversation);
    let requests = if c.conversation { 3 } else { 1 };
    let target = usize::from(c.reply) % requests;
    let served = std::sync::Arc::new(std::sync::Mutex::new(Served::default()));
    let mut n = 0;
    let which = move |_: &str| {
        n += 1;
        n == target + 1
    };
    let answer = edit_answer(server(plan), which, c.edit.clone(), served.clone());
    let scenario = if c.conversation {
        "conversation"
    } else {
        "single"
    };
    let run = crate::counterparty::drive(&mut f.ctx, scenario, &input, answer, defined).await?;
    ended_well(&run)?;
    let served = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
    check_client_requests(f, &run)?;
    let kept = !served.applied || served.same_value;
    judge_client_outcome(&run, plan, &c, (served.applied, kept), scenario)
}

/// The client's requests, by the rules its cases hold them to: JSON sent as
/// application/json (AEX-005), follow-ups only to an opened conversation and without
/// protocolHash (AEX-028, AEX-030).
fn check_client_requests(f: &mut FuzzCtx, run: &crate::counterparty::DriverRun) -> FuzzStep<()> {
    let mut opened = false;
    for (i, x) in run.exchanges.iter().enumerate() {
        f.fuzzed(&x.received);
        if let Some(why) = client_content_type(x) {
            return finding(
                Oracle::ReplyCheck,
                format!("request {}: {why} (AEX-005)", i + 1),
            );
        }
        let Ok(req) = serde_json::from_slice::<Value>(&x.received) else {
            return finding(Oracle::ReplyCheck, format!("request {} is not JSON", i + 1));
        };
        if let Some(why) = client_follow_up(x, &req, opened) {
            return finding(Oracle::Verdict, why);
        }
        let answered: Value = serde_json::from_slice(&x.answered).unwrap_or(Value::Null);
        // A reply that names a conversation opens it (edited or not).
        opened |= answered["conversationId"].is_string();
    }
    Ok(())
}

/// What the client reported, against the plan's reply (when the edit kept its
/// value): a failure, a status other than "success" or an expired conversation is
/// never a success (AEX-009, AEX-033, AEX-034); a valid exchange completes.
fn judge_client_outcome(
    run: &crate::counterparty::DriverRun,
    plan: Serve,
    c: &ClientCase,
    (applied, kept): (bool, bool),
    scenario: &str,
) -> FuzzStep<()> {
    use crate::fuzzing::client::{must_complete, took};
    if plan == Serve::Failure && kept && took(run) {
        return finding(
            Oracle::Verdict,
            format!(
                "the client reported success after a failure reply ({})",
                c.edit
            ),
        );
    }
    if matches!(plan, Serve::StatusCapitalized | Serve::StatusError) && kept && took(run) {
        return finding(
            Oracle::Verdict,
            format!(
                "the client reported success after a reply whose status is not \"success\" ({plan:?}, {}; AEX-009)",
                c.edit
            ),
        );
    }
    if plan == Serve::ExpiredOnOpen && c.conversation && kept {
        if let Some(x) = run
            .exchanges
            .iter()
            .find(|x| x.path.contains("/conversations/"))
        {
            return finding(
                Oracle::Verdict,
                format!(
                    "the client POSTed to {} after the conversationExpires of the reply that opened it ({}; AEX-034)",
                    x.path, c.edit
                ),
            );
        }
    }
    if plan == Serve::ExpireOnFollowUp && c.conversation && kept && took(run) {
        return finding(
            Oracle::Verdict,
            format!(
                "the client reported success after its conversation expired ({}; AEX-033, AEX-034)",
                c.edit
            ),
        );
    }
    if plan == Serve::Plain && kept {
        let respelled = applied && !matches!(c.edit, crate::fuzzing::client::Edit::None);
        return must_complete(run, respelled, &format!("a valid {scenario} ({})", c.edit));
    }
    Ok(())
}
