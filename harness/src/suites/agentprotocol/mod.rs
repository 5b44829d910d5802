//! The agentprotocol suite (agentprotocol.md): the descriptor and the cases; its reply checks and counterparts are in `expect`, its fuzz specs in `fuzz`. Every case
//! runs over each binding the target offers (HTTP, WebSocket, files).
//!
//! Each case judges its own subject. What every reply is held to (envelope,
//! signature, addressee, correlationId, error payload) is read by
//! `suites::agentprotocol::expect::read_reply`, whose findings are owned by one case each
//! (hello, echo-request, unknown-action, invalid-message, ids-unique); the other
//! cases list them and go on. Silence is never a pass: where no reply is the
//! expected or an allowed answer, a liveness probe on the same binding must be
//! answered, or the case is blocked.

pub mod client;
pub mod expect;
pub mod fuzz;
pub mod in_process;
pub mod init;
pub mod load;
pub mod rules;
pub mod tamper;

use crate::case::{fail, fail_rows, Bindings, Case, Step, Stop, Suite, Untestable};
use crate::drive::Transport;
use crate::finding::Finding;
use crate::script::Ctx;
use crate::suites::agentprotocol::expect::*;
use reference_impl::wire::keys::Keypair;
use serde_json::{json, Value};
use std::time::Duration;

macro_rules! client_case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, |$ctx:ident| $body:block) => {
        crate::define_case!("agentprotocol", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| $body)
    };
}

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident,
     |$ctx:ident| $body:block) => {
        crate::define_case!("agentprotocol", $id, $title, [$($req),*], $level, Bindings::Any, false, None, |$ctx| $body)
    };
}

pub static SUITE: Suite = Suite {
    id: "agentprotocol",
    prefix: "AGP",
    cases: CASES,
    untestable: UNTESTABLE,
    transports: &[Transport::Http, Transport::Ws, Transport::File],
    endpoint_paths: crate::suites::agentprotocol::expect::ENDPOINT_PATHS,
    faults: reference_impl::agentprotocol::faults::FAULTS,
    start: crate::embedded::agentprotocol,
    signing: Some(crate::case::Signing {
        sign: crate::suites::agentprotocol::expect::sign_message,
        verify: crate::suites::agentprotocol::expect::explain_verify,
    }),
    schemas: SCHEMAS,
    client_cases: CLIENT_CASES,
    client_faults: reference_impl::agentprotocol::client::CLIENT_FAULTS,
    reread: crate::suites::agentprotocol::expect::reread,
    rules: rules::RULES,
    reference_client: client::REFERENCE,
    tampers: crate::suites::agentprotocol::tamper::TAMPERS,
    defined: Some(crate::suites::agentprotocol::expect::proxied),
    reply_to: None,
    client_message: Some(expect::proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &crate::suites::agentprotocol::fuzz::SPEC,
    client_fuzzer: Some(&crate::suites::agentprotocol::fuzz::CLIENT_SPEC),
    discover: Some(crate::suites::agentprotocol::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "AGP-029", reason: "needs a fault-injection action that makes the agent fail internally; the target profile defines none" },
    Untestable { requirement: "AGP-039", reason: "AgentReputation is not defined in agentprotocol.md; its use is not observable on the wire (AGP-A20)" },
];

const SHORT: Duration = Duration::from_millis(800);

fn echo(ctx: &Ctx) -> String {
    ctx.profile().agentprotocol.echo_action.clone()
}

/// Ends a case with what it found of its own subject: nothing, or the strongest
/// finding as its stop (its summary becomes the case's message), the others
/// recorded beside it.
fn verdict(ctx: &mut Ctx, mut found: Vec<Finding>) -> Step<()> {
    found.sort_by_key(|f| std::cmp::Reverse(f.level.strength()));
    let mut it = found.into_iter();
    let Some(first) = it.next() else {
        return Ok(());
    };
    for f in it {
        ctx.deviation(f);
    }
    Err(Stop::Finding(first))
}

/// A request for `action` from `me`, signed by another key than its from.agentId's.
fn wrong_key(me: &Me, action: &str) -> Value {
    let mut m = me.message(
        "request",
        json!({"action": action, "correlationId": "wk", "params": {}, "timeout": 30000}),
    );
    let other = Keypair::generate();
    let _ = reference_impl::agentprotocol::message::sign(&mut m, &other);
    m
}

/// An identity of the case's own that never says hello: it addresses the target by
/// the id `me` learned from its hello. The verification duty does not depend on the
/// handshake (agentprotocol.md, Signature Verification).
fn stranger(ctx: &Ctx, me: &Me) -> Me {
    let mut s = Me::new(ctx);
    s.target = me.target.clone();
    s
}

/// From a sender that never said hello, `twin` (valid) must be carried out, then
/// `bad` refused. The finding when `bad` is carried out there: after the same fault
/// was refused after hello (`after_hello` judged), the target verifies only after
/// hello; when the sender that said hello could not be judged (its control
/// refused), the carried-out message is the case's own rule `carried_out`. A
/// target that wants hello before anything else makes the claim moot.
async fn before_hello(
    ctx: &mut Ctx,
    s: &mut Me,
    (twin, bad): (&Value, &Value),
    what: &str,
    (after_hello, carried_out): (bool, &'static crate::rules::Rule),
) -> Step<Option<Finding>> {
    let r = s.send(ctx, twin).await?;
    if r["type"] != "response" {
        ctx.moot(format!("from a sender that never said hello, a valid request drew {}: the target wants hello first", describe(&r)));
        return Ok(None);
    }
    ctx.control("a valid request from a sender that never said hello");
    match s.refusal(ctx, bad, "INVALID_SIGNATURE", &format!("{what}, from a sender that never said hello")).await? {
        Err(got) if got.carried_out && after_hello => Ok(Some(rules::VERIFY_BEFORE_HELLO.found(format!("{what} from a sender that never said hello was carried out ({got}), while after hello the same drew INVALID_SIGNATURE: the target verifies signatures only after hello (AGP-024, AGP-034)")))),
        Err(got) if got.carried_out => Ok(Some(carried_out.found(
            format!("{what}, from a sender that never said hello, was carried out ({got}) beside a valid request of the same sender, not refused with INVALID_SIGNATURE ({})", carried_out.requirements[0])))),
        Err(got) => {
            ctx.note(format!("{what} from a sender that never said hello drew {got}: refused, with another code than INVALID_SIGNATURE"));
            Ok(None)
        }
        Ok(_) => ctx.refusal_counts(&format!("{what}, from a sender that never said hello")).map(|()| None),
    }
}

pub const CASES: &[Case] = &[
    case!("hello", "hello is answered by a signed hello with the full envelope, version, features and capabilities",
        ["AGP-001", "AGP-002", "AGP-003", "AGP-004", "AGP-005", "AGP-006", "AGP-007", "AGP-008", "AGP-009", "AGP-011", "AGP-012",
         "AGP-013", "AGP-014", "AGP-015", "AGP-016", "AGP-017", "AGP-030", "AGP-031", "AGP-032", "AGP-040", "AGP-041", "AGP-042", "AGP-044"],
        Fact, |ctx| {
        // The envelope, signature, addressee and payload types of the reply are read
        // by read_reply, whose findings this case owns.
        let mut me = Me::new(ctx);
        let r = me.hello(ctx).await?;
        if r["type"] != "hello" {
            // Judged by the hello:not-hello or hello:no-reply finding this case owns.
            return Ok(());
        }
        let found = hello_findings(&r, &me.target_capabilities);
        ctx.note(format!("over {}: capabilities {:?}, features {:?} (informational, AGP-A17)", ctx.transport, me.target_capabilities, me.target_features));
        verdict(ctx, found)
    }),
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
        if let Some(f) = echo_finding(&r, Some(&params), "an echo request with metadata and an extra payload member") {
            return Err(Stop::Finding(f));
        }
        let p = &r["payload"];
        if p["status"].is_string() && p["status"] != "success" {
            found.push(rules::ECHO_REQUEST_STATUS.found(format!("the echo response has status {} (informational, AGP-A11)", p["status"])));
        }
        verdict(ctx, found)
    }),
    case!("unknown-action", "an action the target lacks draws CAPABILITY_NOT_SUPPORTED with details.requested and details.available",
        ["AGP-020", "AGP-022", "AGP-026"], Fact, |ctx| {
        // The error payload's shape, its correlationId and its code's spelling are
        // read by read_reply, whose findings on them this case owns.
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        me.control(ctx).await?;
        let req = me.request("h-no-such-action", json!({}), json!({}));
        let r = match me.refusal(ctx, &req, "CAPABILITY_NOT_SUPPORTED", "unknown action").await? {
            Ok(r) => r,
            Err(got) => return Err(own(&rules::UNKNOWN_ACTION_CODE, format!("an action the target lacks drew {got}, not error CAPABILITY_NOT_SUPPORTED (AGP-026)"))),
        };
        ctx.refusal_counts("a request for an action the target lacks")?;
        match cns_details_finding(&r["payload"], Some("h-no-such-action")) {
            Some(f) => Err(Stop::Finding(f)),
            None => Ok(()),
        }
    }),
    case!("invalid-message", "no type, id 123, type \"bogus\" and params as a string each draw INVALID_MESSAGE", ["AGP-010", "AGP-018", "AGP-023"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        // The replies' shape is read by read_reply: an error that is no message is
        // this case's error:not-a-message, whatever the control.
        ctx.claim("each malformed request is answered by an error message");
        let base = me.request(&echo(ctx), json!({"a": 1}), json!({}));
        let variants: Vec<(&str, &str, Value)> = vec![
            ("no type", "AGP-023", { let mut m = base.clone(); m.as_object_mut().map(|o| o.remove("type")); m }),
            ("id 123", "AGP-023", { let mut m = base.clone(); m["id"] = json!(123); m }),
            ("type \"bogus\"", "AGP-010", { let mut m = base.clone(); m["type"] = json!("bogus"); m }),
            ("params as a string", "AGP-018", { let mut m = base.clone(); m["payload"]["params"] = json!("a=1"); m }),
        ];
        let mut drew = Vec::new();
        for (what, req, mut m) in variants {
            m["id"] = if what == "id 123" { json!(123) } else { json!(reference_impl::wire::new_id()) };
            m["payload"]["correlationId"] = json!(format!("im-{}", &reference_impl::wire::new_id()[..8]));
            me.sign(&mut m);
            if let Err(got) = me.refusal(ctx, &m, "INVALID_MESSAGE", what).await? {
                drew.push((what, req, got));
            }
        }
        ctx.claim("the error is INVALID_MESSAGE, beside a valid request carried out");
        let row = |(what, req, got): &(&str, &str, Other)| format!("{what}: {got} ({req})");
        // A malformed request carried out needs no control: its response shows it.
        let mut wrong: Vec<String> = drew.iter().filter(|(_, _, got)| got.carried_out).map(row).collect();
        let refused_otherwise: Vec<String> = drew.iter().filter(|(_, _, got)| !got.carried_out).map(row).collect();
        if wrong.is_empty() || !refused_otherwise.is_empty() {
            let controlled = me.control(ctx).await;
            if ctx.needs(controlled)? {
                wrong.extend(refused_otherwise);
                if drew.is_empty() {
                    ctx.refusal_counts("each malformed request")?;
                }
            }
        }
        ctx.rows_wrong(&rules::INVALID_MESSAGE_ACCEPTED, "malformed requests drew another answer than error INVALID_MESSAGE", &wrong);
        Ok(())
    }),
    case!("input-validation", "odd payloads draw INVALID_MESSAGE, never INTERNAL_ERROR or a dropped connection", ["AGP-038"], Should, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        ctx.claim("each odd payload is answered by an error message");
        let mut drew = Vec::new();
        for (what, payload) in [
            ("action 7", json!({"action": 7, "correlationId": "c1"})),
            ("timeout \"soon\"", json!({"action": echo(ctx), "correlationId": "c2", "timeout": "soon"})),
        ] {
            let mut m = me.message("request", payload);
            me.sign(&mut m);
            if let Err(got) = me.refusal(ctx, &m, "INVALID_MESSAGE", what).await? {
                drew.push((what, got));
            }
        }
        ctx.claim("the error is INVALID_MESSAGE, beside a valid request carried out");
        let row = |(what, got): &(&str, Other)| format!("{what}: {got}");
        // An odd payload carried out needs no control: its response shows it.
        let mut wrong: Vec<String> = drew.iter().filter(|(_, got)| got.carried_out).map(row).collect();
        let controlled = me.control(ctx).await;
        if ctx.needs(controlled)? {
            wrong.extend(drew.iter().filter(|(_, got)| !got.carried_out).map(row));
            if drew.is_empty() {
                ctx.refusal_counts("each odd payload")?;
            }
        }
        ctx.rows_wrong(&rules::INPUT_VALIDATION_NOT_REFUSED, "odd payloads drew another answer than error INVALID_MESSAGE (AGP-038)", &wrong);
        Ok(())
    }),
    case!("reject-tampered", "a message changed after signing draws INVALID_SIGNATURE and is not carried out", ["AGP-024", "AGP-033", "AGP-035"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        ctx.claim("a message changed after signing, from a sender that said hello, draws INVALID_SIGNATURE");
        let twin = me.request(&echo(ctx), json!({"text": "signed"}), json!({}));
        let taken = me.twin(ctx, &twin, "the same echo request, unchanged after signing").await;
        // Whether the sender that said hello was judged, and kept to the rule.
        let mut after: Option<bool> = None;
        if ctx.needs(taken)? {
            let mut payload_changed = me.request(&echo(ctx), json!({"text": "signed"}), json!({}));
            payload_changed["payload"]["params"]["text"] = json!("changed");
            let mut to_changed = me.request(&echo(ctx), json!({"text": "signed"}), json!({}));
            to_changed["to"]["broadcast"] = json!(true);
            let mut kept = true;
            for (what, m, req) in [("a payload changed after signing", payload_changed, "AGP-024"), ("to.broadcast changed after signing", to_changed, "AGP-033")] {
                if let Err(got) = me.refusal(ctx, &m, "INVALID_SIGNATURE", what).await? {
                    let rule = if got.carried_out { &rules::REJECT_TAMPERED_CARRIED_OUT } else { &rules::REJECT_TAMPERED_CODE };
                    ctx.deviation(rule.found(format!("a message with {what} drew {got}, not error INVALID_SIGNATURE ({req})")));
                    kept = false;
                }
            }
            if kept {
                ctx.refusal_counts("each message changed after signing")?;
            }
            after = Some(kept);
        }
        ctx.claim("the same, from a sender that never said hello");
        if after == Some(false) {
            ctx.moot("a sender that said hello already had a message changed after signing taken: the same cause");
        } else {
            let mut s = stranger(ctx, &me);
            let twin = s.request(&echo(ctx), json!({"text": "signed"}), json!({}));
            let mut bad = s.request(&echo(ctx), json!({"text": "signed"}), json!({}));
            bad["payload"]["params"]["text"] = json!("changed");
            let judged = (after.is_some(), &rules::REJECT_TAMPERED_CARRIED_OUT);
            if let Some(f) = before_hello(ctx, &mut s, (&twin, &bad), "a payload changed after signing", judged).await? {
                ctx.deviation(f);
            }
        }
        Ok(())
    }),
    case!("reject-wrong-key", "a message signed by one key but naming another in from.agentId draws INVALID_SIGNATURE", ["AGP-034", "AGP-035"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        ctx.claim("a message signed by another key than its from.agentId's, from a sender that said hello, draws INVALID_SIGNATURE");
        let mut twin = me.message("request", json!({"action": echo(ctx), "correlationId": "wk", "params": {}, "timeout": 30000}));
        me.sign(&mut twin);
        let taken = me.twin(ctx, &twin, "the same request signed by from.agentId's own key").await;
        let mut after: Option<bool> = None;
        if ctx.needs(taken)? {
            let m = wrong_key(&me, &echo(ctx));
            if let Err(got) = me.refusal(ctx, &m, "INVALID_SIGNATURE", "signature by another key").await? {
                let rule = if got.carried_out { &rules::REJECT_WRONG_KEY_CARRIED_OUT } else { &rules::REJECT_WRONG_KEY_CODE };
                ctx.deviation(rule.found(format!("a message signed by another key than from.agentId's drew {got}, not error INVALID_SIGNATURE (AGP-034)")));
                after = Some(false);
            } else {
                ctx.refusal_counts("a message signed by another key")?;
                after = Some(true);
            }
        }
        ctx.claim("the same, from a sender that never said hello");
        if after == Some(false) {
            ctx.moot("a sender that said hello already had a message signed by another key taken: the same cause");
            return Ok(());
        }
        let mut s = stranger(ctx, &me);
        let mut twin = s.message("request", json!({"action": echo(ctx), "correlationId": "wk", "params": {}, "timeout": 30000}));
        s.sign(&mut twin);
        let bad = wrong_key(&s, &echo(ctx));
        let judged = (after.is_some(), &rules::REJECT_WRONG_KEY_CARRIED_OUT);
        match before_hello(ctx, &mut s, (&twin, &bad), "a message signed by another key", judged).await? {
            // Owned by reject-tampered: one finding for a target that verifies only after hello.
            Some(f) if after.is_some() => ctx.finding(f),
            Some(f) => ctx.deviation(f),
            None => {}
        }
        Ok(())
    }),
    case!("unsigned-request", "an unsigned request to a target that advertises signed-messages is refused", ["AGP-030", "AGP-035"], Should, |ctx| {
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        let m = me.message("request", json!({"action": echo(ctx), "correlationId": "us", "params": {}, "timeout": 30000}));
        let mut twin = m.clone();
        twin["id"] = json!(reference_impl::wire::new_id());
        me.sign(&mut twin);
        me.twin(ctx, &twin, "the same request, signed").await?;
        let advertises = me.target_features.iter().any(|f| f == "signed-messages");
        match me.send_answer(ctx, &m, Duration::from_millis(ctx.profile().timing.case_timeout_ms)).await? {
            Answer::Reply(r) if r["type"] == "response" => {
                let why = if advertises { "although the target advertises signed-messages (AGP-A3)" } else { "(a warning, AGP-A3)" };
                found.push(rules::UNSIGNED_REQUEST_CARRIED_OUT.found(format!("an unsigned request was carried out {why}: {}", describe(&r))));
            }
            Answer::Reply(_) | Answer::Empty(_) => ctx.refusal_counts("an unsigned request")?,
            Answer::Silence => {
                // A silent refusal, if the target is alive.
                if me.probe(ctx).await?.is_none() {
                    return Err(ctx.block(crate::rules::TRANSPORT.found_in("agentprotocol", "no-answer", "the target did not answer an unsigned request, nor a signed one after it")));
                }
                ctx.refusal_counts("an unsigned request (dropped silently)")?;
            }
        }
        verdict(ctx, found)
    }),
    case!("unknown-agent", "a message addressed to another agent draws UNKNOWN_AGENT", ["AGP-025"], Profile, |ctx| {
        if ctx.transport == Transport::File {
            return crate::case::skip("over the file binding a message reaches only the agent its name addresses, so the target never sees one for another agent");
        }
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        let mut twin = me.message("request", json!({"action": echo(ctx), "correlationId": "ua", "params": {}, "timeout": 30000}));
        me.sign(&mut twin);
        me.twin(ctx, &twin, "the same request addressed to the target").await?;
        let mut m = me.message("request", json!({"action": echo(ctx), "correlationId": "ua", "params": {}, "timeout": 30000}));
        m["to"]["agentId"] = json!(reference_impl::agentprotocol::message::agent_id(&Keypair::generate()));
        me.sign(&mut m);
        if let Err(got) = me.refusal(ctx, &m, "UNKNOWN_AGENT", "to.agentId of another agent").await? {
            let rule = if got.carried_out { &rules::UNKNOWN_AGENT_CARRIED_OUT } else { &rules::UNKNOWN_AGENT_CODE };
            let summary = format!("a request addressed to another agent drew {got}, not error UNKNOWN_AGENT (AGP-025)");
            if ctx.profile().agentprotocol.unknown_agent_error {
                return Err(Stop::Finding(rule.found(format!("{summary}; the profile says the target is a hub or relay: set [agentprotocol] unknown_agent_error = false for a single agent"))));
            }
            found.push(rules::UNKNOWN_AGENT_RECORDED.found_as(if got.carried_out { "carried-out" } else { "code" }, format!("{summary} (informational for a single agent)")));
        } else {
            ctx.refusal_counts("a request addressed to another agent")?;
        }
        verdict(ctx, found)
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
                found.push(rules::NOTIFY_ERROR.found(format!("a valid notify drew {} (a warning, AGP-A14)", describe(&r))));
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
        verdict(ctx, found)
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
            (Some("error"), Some(c)) if c != "TIMEOUT" => return Err(ctx.block(refused(&r, &what, &["AGP-018"]))),
            _ => return Err(own(&rules::TIMEOUT_WITHIN_TIMEOUT, format!("{what} drew {}: a delay within its timeout must be carried out (AGP-018)", describe(&r)))),
        }
        let req = me.request(&delay, json!({"ms": 2000}), json!({"timeout": 100}));
        if let Err(got) = me.refusal(ctx, &req, "TIMEOUT", "delay 2000 ms with timeout 100 ms").await? {
            let summary = format!("a {delay} of 2000 ms with timeout 100 ms drew {got}, not error TIMEOUT");
            if ctx.profile().agentprotocol.timeout_error {
                return Err(Stop::Finding(rules::TIMEOUT_NOT_TIMED_OUT.found(format!("{summary} (AGP-027); the profile says the target sends TIMEOUT: set [agentprotocol] timeout_error = false if it leaves that to the requester (AGP-A18)"))));
            }
            found.push(rules::TIMEOUT_RECORDED.found(format!("{summary} (informational, AGP-A18)")));
        } else {
            ctx.refusal_counts("a delay longer than its timeout")?;
        }
        verdict(ctx, found)
    }),
    case!("ids-unique", "ten replies carry ten distinct UUIDs", ["AGP-003"], Fact, |ctx| {
        // Each reply's id is read by read_reply, whose id findings this case owns.
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        for i in 0..9 {
            let req = me.request(&echo(ctx), json!({"i": i}), json!({}));
            me.send(ctx, &req).await?;
        }
        Ok(())
    }),
    case!("non-ascii-canonical-form", "a request with non-ASCII text and numbers like 1e21, signed over RFC 8785, is accepted (informational)",
        ["AGP-031"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        me.control(ctx).await?;
        let req = me.request(&echo(ctx), json!({"text": "café 日本語 🙂", "big": 1e21, "ratio": 0.1, "tiny": 1e-7}), json!({}));
        let r = me.send(ctx, &req).await?;
        if r["type"] == "error" && r["payload"]["code"] == "INVALID_SIGNATURE" {
            found.push(rules::NON_ASCII_CANONICAL_FORM_REJECTED.found(format!("a request signed over RFC 8785 with non-ASCII text and exponent numbers drew {}: the target's canonical form differs (informational, AGP-A1)", describe(&r))));
        }
        verdict(ctx, found)
    }),
    case!("rate-limit", "a burst from one sender: throttled replies use RATE_LIMITED", ["AGP-028", "AGP-037"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        me.control(ctx).await?;
        let n = 60;
        let (mut ok, mut limited) = (0, 0);
        for i in 0..n {
            let req = me.request(&echo(ctx), json!({"i": i}), json!({}));
            let r = me.send(ctx, &req).await?;
            match (r["type"].as_str(), r["payload"]["code"].as_str()) {
                (Some("response"), _) => ok += 1,
                (Some("error"), Some("RATE_LIMITED")) => limited += 1,
                _ => return Err(own(&rules::RATE_LIMIT_CODE, format!("request {} of a burst drew {}; throttling must use RATE_LIMITED (AGP-028)", i + 1, describe(&r)))),
            }
        }
        ctx.note(format!("{n} requests: {ok} answered, {limited} RATE_LIMITED"));
        if limited == 0 {
            found.push(rules::RATE_LIMIT_NONE.found(format!("{n} requests in a burst drew no RATE_LIMITED (AGP-037)")));
        }
        let window = ctx.profile().agentprotocol.rate_window_ms;
        if limited > 0 && window > 0 {
            // One request after the window is not too many (AGP-028).
            let wait = window + 200;
            ctx.note(format!("waiting {wait} ms, past the rate window the profile gives ([agentprotocol] rate_window_ms = {window}), before one more request"));
            tokio::time::sleep(Duration::from_millis(wait)).await;
            let req = me.request(&echo(ctx), json!({"after": "window"}), json!({}));
            let r = me.send(ctx, &req).await?;
            if r["type"] == "error" && r["payload"]["code"] == "RATE_LIMITED" {
                found.push(rules::RATE_LIMIT_NEVER_RESET.found(format!("one request {wait} ms after the burst, past the rate window of {window} ms, still drew {} (AGP-028): the sender stays throttled; if the target's window is longer, set [agentprotocol] rate_window_ms", describe(&r))));
            } else {
                ctx.checked(format!("one request after the rate window drew {}", describe(&r)));
            }
        }
        verdict(ctx, found)
    }),
];

/// The suite's JSON Schemas (schemas/agentprotocol/), by name, built into the binary.
const SCHEMAS: &[(&str, &str)] = &[
    (
        "message",
        include_str!("../../../../schemas/agentprotocol/message.schema.json"),
    ),
    (
        "hello-payload",
        include_str!("../../../../schemas/agentprotocol/hello-payload.schema.json"),
    ),
    (
        "request-payload",
        include_str!("../../../../schemas/agentprotocol/request-payload.schema.json"),
    ),
    (
        "response-payload",
        include_str!("../../../../schemas/agentprotocol/response-payload.schema.json"),
    ),
    (
        "error-payload",
        include_str!("../../../../schemas/agentprotocol/error-payload.schema.json"),
    ),
];

/// The requester's side (`run --role client`): the harness is the peer, the client
/// driver runs scenario `request` against it over the HTTP binding.
pub const CLIENT_CASES: &[Case] = &[
    client_case!("client-request", "the requester says hello first, then sends a signed request with a string correlationId to POST /agentprotocol", ["AGP-013", "AGP-018", "AGP-030", "AGP-040"], Fact, |ctx| {
        let input = client_input(ctx);
        let run = drive_peer(ctx, &input, PLAIN).await?;
        let hello = client_message(ctx, &run, 0)?;
        if hello["type"] != "hello" {
            return fail(format!("the requester's first message is {}, not hello (AGP-013)", hello["type"]));
        }
        ctx.checked("the requester says hello first");
        let req = client_message(ctx, &run, 1)?;
        if req["type"] != "request" || req["payload"]["action"] != input["action"] || req["payload"]["params"] != input["params"] {
            return fail(format!("the second message is {} {}, not a request for {} with {}", req["type"], req["payload"], input["action"], input["params"]));
        }
        if !req["payload"]["correlationId"].is_string() {
            return fail(format!("the request's correlationId is {}, not a string (AGP-018)", req["payload"]["correlationId"]));
        }
        ctx.checked("the request names the scenario's action and params with a string correlationId");
        for (what, m) in [("hello", &hello), ("request", &req)] {
            if m["to"]["agentId"] != input["peer"] {
                return fail(format!("the {what} is addressed to {}, not to the peer it was given, {} (AGP-008)", m["to"]["agentId"], input["peer"]));
            }
        }
        ctx.checked("both messages are addressed to the peer the scenario names");
        if hello["id"] == req["id"] {
            return fail(format!("the hello and the request share the id {} (AGP-003: an id is unique to each message)", req["id"]));
        }
        ctx.checked("every message of the requester has an id of its own");
        if run.failed() || !run.lines.iter().any(|l| l.get("result") == Some(&input["params"])) {
            return fail(format!("the requester did not take the response: {}; stdout: {}", run.ended(), crate::finding::clipped(run.stdout.trim(), 300)));
        }
        ctx.checked("the requester took the response's result");
        Ok(())
    }),
    client_case!("client-checks-capabilities", "the requester sends no request to a peer whose hello lacks the capability", ["AGP-036"], Should, |ctx| {
        // A requester that never sends a request passes here only if it sends one
        // to a peer that has the capability.
        ctx.controlled_by(CLIENT_REQUEST);
        let plan = PeerPlan { capabilities: &["agentprotocol:core"], ..PLAIN };
        let input = client_input(ctx);
        let run = drive_peer(ctx, &input, plan).await?;
        let hello = client_message(ctx, &run, 0)?;
        if hello["type"] != "hello" {
            return fail(format!("the requester's first message is {}, not hello: it cannot have read the peer's capabilities (AGP-013)", hello["type"]));
        }
        let sent_request = run.sent().any(|b| serde_json::from_slice::<Value>(b).is_ok_and(|v| v["type"] == "request"));
        if sent_request {
            return fail(format!("the requester sent its request to a peer whose hello does not list {} (AGP-036)", input["capability"]));
        }
        ctx.checked("no request to a peer without the capability");
        Ok(())
    }),
    client_case!("client-checks-correlation", "a response that echoes another correlationId, or spells it correlation_id, is not taken", ["AGP-019"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_REQUEST);
        let mut wrong = Vec::new();
        for (plan, what) in [
            (PeerPlan { wrong_correlation: true, ..PLAIN }, "a response echoing another correlationId"),
            (PeerPlan { spoil: PeerSpoil::SnakeCorrelation, ..PLAIN }, "a response that names the correlation id correlation_id, not correlationId"),
        ] {
            let run = drive_peer(ctx, &client_input(ctx), plan).await?;
            let judged = not_taken(ctx, &run, what);
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("responses the requester took", &wrong)
    }),
    client_case!("client-verifies-response", "a response whose signature does not verify over the RFC 8785 form (spoiled, missing, or over Python's json.dumps) is not taken", ["AGP-035"], Should, |ctx| {
        ctx.controlled_by(CLIENT_REQUEST);
        let mut wrong = Vec::new();
        for (plan, what) in [
            (PeerPlan { bad_signature: true, ..PLAIN }, "a response whose signature does not verify"),
            (PeerPlan { spoil: PeerSpoil::Unsigned, ..PLAIN }, "a response without a signature"),
            (PeerPlan { spoil: PeerSpoil::PythonSigned, ..PLAIN }, "a response signed over Python's json.dumps(sort_keys=True), not RFC 8785"),
        ] {
            let run = drive_peer(ctx, &client_input(ctx), plan).await?;
            let judged = not_taken(ctx, &run, what);
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("responses the requester took", &wrong)
    }),
    client_case!("client-reports-error-response", "an error answering the request is reported as an error, never taken as a result, whatever its code or shape", ["AGP-020", "AGP-022"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_REQUEST);
        let mut wrong = Vec::new();
        for (spoil, what) in [
            (PeerSpoil::Error("INTERNAL_ERROR"), "an INTERNAL_ERROR error"),
            (PeerSpoil::Error("INVALID_SIGNATURE"), "an INVALID_SIGNATURE error"),
            (PeerSpoil::Error("TIMEOUT"), "a TIMEOUT error"),
            (PeerSpoil::ErrorNested, "an error whose code and message sit under payload.error"),
        ] {
            let run = drive_peer(ctx, &client_input(ctx), PeerPlan { spoil, ..PLAIN }).await?;
            let judged = not_taken(ctx, &run, what);
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("errors the requester took", &wrong)
    }),
    client_case!("client-refuses-misaddressed-response", "a response addressed to another agent is not taken", ["AGP-009"], Fact, |ctx| {
        ctx.controlled_by(CLIENT_REQUEST);
        let run = drive_peer(ctx, &client_input(ctx), PeerPlan { spoil: PeerSpoil::Misaddressed, ..PLAIN }).await?;
        not_taken(ctx, &run, "a response whose to.agentId names another agent")
    }),
];

/// The client case whose pass (the requester took a valid response) is the control
/// of the cases where it must refuse one.
const CLIENT_REQUEST: &str = "agentprotocol/client-request";

const PLAIN: PeerPlan = PeerPlan {
    capabilities: &["agentprotocol:core", "agentconform:echo"],
    wrong_correlation: false,
    bad_signature: false,
    spoil: PeerSpoil::None,
};

/// The scenario input: the action, the capability it needs, its params, and the
/// harness's agentId (the peer the requester addresses).
fn client_input(ctx: &Ctx) -> Value {
    let peer = reference_impl::agentprotocol::message::agent_id(&ctx.shared.key);
    // Non-ASCII text, where RFC 8785 and sorted-key JSON part ways.
    json!({"action": "echo", "capability": "agentconform:echo", "params": {"text": "héllo from the harness, ça va"}, "peer": peer})
}

async fn drive_peer(
    ctx: &mut Ctx,
    input: &Value,
    plan: PeerPlan,
) -> Step<crate::counterparty::DriverRun> {
    let answer = peer(ctx.shared.key.clone(), plan);
    crate::counterparty::drive(
        ctx,
        "request",
        input,
        answer,
        crate::suites::agentprotocol::expect::defined,
    )
    .await
}

/// Message `i` the requester sent: POSTed to /agentprotocol as application/json
/// (AGP-040) and judged like every message.
fn client_message(ctx: &mut Ctx, run: &crate::counterparty::DriverRun, i: usize) -> Step<Value> {
    let Some(x) = run.exchanges.get(i) else {
        return fail(format!(
            "the requester sent {} messages, not {}; {}; stderr: {}",
            run.exchanges.len(),
            i + 1,
            run.ended(),
            crate::finding::clipped(run.stderr.trim(), 300)
        ));
    };
    if x.path.trim_end_matches('/') != "/agentprotocol" {
        return fail(format!(
            "message {} was POSTed to {}, not /agentprotocol (AGP-040)",
            i + 1,
            x.path
        ));
    }
    if !x
        .content_type
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        return fail(format!(
            "message {} says Content-Type {}, not application/json (AGP-040)",
            i + 1,
            crate::finding::json(&x.content_type)
        ));
    }
    check_client_message(ctx, &x.received)
}

/// The requester did not report the reply as a success.
fn not_taken(ctx: &mut Ctx, run: &crate::counterparty::DriverRun, what: &str) -> Step<()> {
    run.took_nothing("the requester", "took", what)?;
    ctx.checked(format!("the requester did not take {what}"));
    Ok(())
}
