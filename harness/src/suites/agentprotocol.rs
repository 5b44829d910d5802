//! The agentprotocol suite (agentprotocol.md): the cases, nothing else. Every case
//! runs over each binding the target offers (HTTP, WebSocket, files).

use crate::case::{fail, Bindings, Case, Suite, Untestable};
use crate::drive::Transport;
use crate::expect::agentprotocol::*;
use crate::script::Ctx;
use reference_impl::wire::keys::Keypair;
use serde_json::{json, Value};
use std::time::Duration;

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
    endpoint_paths: &[
        (Transport::Http, "agentprotocol"),
        (Transport::Ws, "agentprotocol/ws"),
    ],
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "AGP-029", reason: "needs a fault-injection action that makes the agent fail internally; the target profile defines none" },
    Untestable { requirement: "AGP-036", reason: "client role: the target profile gives the harness no way to make a target send requests" },
    Untestable { requirement: "AGP-039", reason: "AgentReputation is not defined in agentprotocol.md; its use is not observable on the wire (AGP-A20)" },
];

const SHORT: Duration = Duration::from_millis(800);

fn echo(ctx: &Ctx) -> String {
    ctx.profile().agentprotocol.echo_action.clone()
}

pub const CASES: &[Case] = &[
    case!("hello", "hello is answered by a signed hello with the full envelope, version, features and capabilities",
        ["AGP-001", "AGP-002", "AGP-003", "AGP-004", "AGP-005", "AGP-006", "AGP-007", "AGP-008", "AGP-009", "AGP-011", "AGP-012",
         "AGP-013", "AGP-014", "AGP-015", "AGP-016", "AGP-017", "AGP-030", "AGP-031", "AGP-032", "AGP-040", "AGP-041", "AGP-042", "AGP-044"],
        Fact, |ctx| {
        let mut me = Me::new(ctx);
        let r = me.hello(ctx).await?;
        for k in ["protocol", "id", "timestamp", "from", "to", "type", "payload", "signature"] {
            if r.get(k).is_none() {
                return fail(format!("the hello reply has no `{k}` (AGP-001)"));
            }
        }
        if r["payload"]["version"] != "0.1" || !r["payload"]["features"].is_array() {
            return fail(format!("hello payload should carry version \"0.1\" and a features array (AGP-014): {}", r["payload"]));
        }
        if me.target_capabilities.is_empty() {
            return fail("the target's hello lists no capability (AGP-015)");
        }
        let core = ["agentprotocol:core", "agentprotocol:tasks", "agentprotocol:proofs", "agentprotocol:reputation", "agentprotocol:directory"];
        for c in &me.target_capabilities {
            if c.starts_with("agentprotocol:") && !core.contains(&c.as_str()) {
                return fail(format!("{c} is not one of the core capabilities (AGP-016)"));
            }
            if !c.contains(':') {
                return fail(format!("capability {c:?} is not of the form prefix:name (AGP-007)"));
            }
        }
        if !me.target_capabilities.iter().any(|c| c == "agentprotocol:core") {
            ctx.warn("the target does not advertise agentprotocol:core (AGP-016)");
        }
        ctx.note(format!("over {}: capabilities {:?}, features {:?}", ctx.transport, me.target_capabilities, me.target_features));
        Ok(())
    }),
    case!("echo-request", "a request for the echo action gets a response echoing correlationId, status success and result = params",
        ["AGP-018", "AGP-019", "AGP-043"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let params = json!({"text": "hello", "n": 3, "nested": {"ok": true}});
        let mut req = me.message("request", json!({"action": echo(ctx), "correlationId": "req-123", "params": params, "timeout": 30000, "x-extra": 1}));
        req["metadata"] = json!({"priority": "high", "x-h": 1});
        me.sign(&mut req);
        let r = me.send(ctx, &req).await?;
        if r["type"] != "response" {
            return fail(format!("expected a response, got {} {}", r["type"], r["payload"]));
        }
        if let Err(e) = ctx.shared.schemas.check("agentprotocol/response-payload", &r["payload"]) {
            return fail(format!("response payload: {e}"));
        }
        if r["payload"]["correlationId"] != "req-123" {
            return fail(format!("the response carries correlationId {}, not req-123 (AGP-019)", r["payload"]["correlationId"]));
        }
        if r["payload"]["status"] != "success" || r["payload"]["result"] != params {
            return fail(format!("the echo should succeed with result = params: {}", r["payload"]));
        }
        Ok(())
    }),
    case!("unknown-action", "an action the target lacks draws CAPABILITY_NOT_SUPPORTED with details.requested and details.available",
        ["AGP-020", "AGP-022", "AGP-026"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let req = me.request("h-no-such-action", json!({}), json!({}));
        let r = me.expect_error(ctx, &req, "CAPABILITY_NOT_SUPPORTED", "unknown action").await?;
        if let Err(e) = ctx.shared.schemas.check("agentprotocol/error-payload", &r["payload"]) {
            return fail(format!("error payload: {e}"));
        }
        let d = &r["payload"]["details"];
        if d["requested"] != "h-no-such-action" || !d["available"].is_array() {
            return fail(format!("details should name the requested action and list the available ones (AGP-020): {d}"));
        }
        Ok(())
    }),
    case!("invalid-message", "no type, id 123, type \"bogus\" and params as a string each draw INVALID_MESSAGE", ["AGP-010", "AGP-018", "AGP-023"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let base = me.request(&echo(ctx), json!({"a": 1}), json!({}));
        let variants: Vec<(&str, Value)> = vec![
            ("no type", { let mut m = base.clone(); m.as_object_mut().map(|o| o.remove("type")); m }),
            ("id 123", { let mut m = base.clone(); m["id"] = json!(123); m }),
            ("type \"bogus\"", { let mut m = base.clone(); m["type"] = json!("bogus"); m }),
            ("params as a string", { let mut m = base.clone(); m["payload"]["params"] = json!("a=1"); m }),
        ];
        for (what, mut m) in variants {
            m["id"] = if what == "id 123" { json!(123) } else { json!(reference_impl::wire::new_id()) };
            me.sign(&mut m);
            me.expect_error(ctx, &m, "INVALID_MESSAGE", what).await?;
        }
        Ok(())
    }),
    case!("input-validation", "odd payloads draw INVALID_MESSAGE, never INTERNAL_ERROR or a dropped connection", ["AGP-038"], Should, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        for (what, payload) in [
            ("action 7", json!({"action": 7, "correlationId": "c1"})),
            ("timeout \"soon\"", json!({"action": echo(ctx), "correlationId": "c2", "timeout": "soon"})),
        ] {
            let mut m = me.message("request", payload);
            me.sign(&mut m);
            me.expect_error(ctx, &m, "INVALID_MESSAGE", what).await?;
        }
        Ok(())
    }),
    case!("reject-tampered", "a message changed after signing draws INVALID_SIGNATURE and is not carried out", ["AGP-024", "AGP-033", "AGP-035"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let mut m = me.request(&echo(ctx), json!({"text": "signed"}), json!({}));
        m["payload"]["params"]["text"] = json!("changed");
        me.expect_error(ctx, &m, "INVALID_SIGNATURE", "tampered payload").await?;
        let mut m = me.request(&echo(ctx), json!({"text": "signed"}), json!({}));
        m["to"]["broadcast"] = json!(true);
        me.expect_error(ctx, &m, "INVALID_SIGNATURE", "to.broadcast changed after signing").await?;
        Ok(())
    }),
    case!("reject-wrong-key", "a message signed by one key but naming another in from.agentId draws INVALID_SIGNATURE", ["AGP-034", "AGP-035"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let mut m = me.message("request", json!({"action": echo(ctx), "correlationId": "wk", "params": {}}));
        let other = Keypair::generate();
        let _ = reference_impl::agentprotocol::message::sign(&mut m, &other);
        me.expect_error(ctx, &m, "INVALID_SIGNATURE", "signature by another key").await?;
        Ok(())
    }),
    case!("unsigned-request", "an unsigned request to a target that advertises signed-messages is refused", ["AGP-030", "AGP-035"], Should, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let m = me.message("request", json!({"action": echo(ctx), "correlationId": "us", "params": {}}));
        let r = me.send(ctx, &m).await?;
        let advertises = me.target_features.iter().any(|f| f == "signed-messages");
        if r["type"] == "response" {
            if advertises {
                return fail("the target advertises signed-messages but carried out an unsigned request (AGP-A3)");
            }
            ctx.warn("an unsigned request was carried out (AGP-030, AGP-A3)");
        }
        Ok(())
    }),
    case!("unknown-agent", "a message addressed to another agent draws UNKNOWN_AGENT", ["AGP-025"], Profile, |ctx| {
        if ctx.transport == Transport::File {
            return crate::case::skip("over the file binding a message reaches only the agent its name addresses, so the target never sees one for another agent");
        }
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let mut m = me.message("request", json!({"action": echo(ctx), "correlationId": "ua", "params": {}}));
        m["to"]["agentId"] = json!(reference_impl::agentprotocol::message::agent_id(&Keypair::generate()));
        me.sign(&mut m);
        me.expect_error(ctx, &m, "UNKNOWN_AGENT", "to.agentId of another agent").await?;
        Ok(())
    }),
    case!("notify", "a notify draws no response", ["AGP-021"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let mut m = me.message("notify", json!({"event": "harness-ping"}));
        me.sign(&mut m);
        match me.send_wait(ctx, &m, SHORT).await? {
            None => Ok(()),
            Some(r) if r["type"] == "error" => {
                ctx.warn(format!("a valid notify drew an error: {} (AGP-A14)", r["payload"]));
                Ok(())
            }
            Some(r) => {
                ctx.note(format!("a notify was acknowledged with {} (informational, AGP-A14)", r["type"]));
                Ok(())
            }
        }
    }),
    case!("timeout", "a delay longer than the request's timeout draws TIMEOUT", ["AGP-027"], Profile, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let delay = ctx.profile().agentprotocol.delay_action.clone();
        let req = me.request(&delay, json!({"ms": 2000}), json!({"timeout": 100}));
        me.expect_error(ctx, &req, "TIMEOUT", "delay 2000 ms with timeout 100 ms").await?;
        Ok(())
    }),
    case!("ids-unique", "ten replies carry ten distinct UUIDs", ["AGP-003"], Fact, |ctx| {
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
        me.hello(ctx).await?;
        let req = me.request(&echo(ctx), json!({"text": "café 日本語 🙂", "big": 1e21, "ratio": 0.1, "tiny": 1e-7}), json!({}));
        let r = me.send(ctx, &req).await?;
        if r["type"] == "error" && r["payload"]["code"] == "INVALID_SIGNATURE" {
            ctx.warn("a request signed over RFC 8785 with non-ASCII text and exponent numbers was rejected: the target's canonical form differs (AGP-A1)");
        }
        Ok(())
    }),
    case!("rate-limit", "a burst from one sender: throttled replies use RATE_LIMITED", ["AGP-028", "AGP-037"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        let n = 60;
        let (mut ok, mut limited) = (0, 0);
        for i in 0..n {
            let req = me.request(&echo(ctx), json!({"i": i}), json!({}));
            let r = me.send(ctx, &req).await?;
            match (r["type"].as_str(), r["payload"]["code"].as_str()) {
                (Some("response"), _) => ok += 1,
                (Some("error"), Some("RATE_LIMITED")) => limited += 1,
                (ty, code) => return fail(format!("a burst request drew {ty:?} {code:?}; throttling must use RATE_LIMITED (AGP-028)")),
            }
        }
        ctx.note(format!("{n} requests: {ok} answered, {limited} RATE_LIMITED"));
        if limited == 0 {
            ctx.warn(format!("{n} requests in a burst drew no RATE_LIMITED (AGP-037)"));
        }
        Ok(())
    }),
];
