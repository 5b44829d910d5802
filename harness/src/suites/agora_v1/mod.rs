//! The agora-v1 suite (agora-v1.md): the descriptor and the cases; its reply checks and counterparts are in `expect`, its fuzz specs in `fuzz`.

pub mod client;
pub mod expect;
pub mod fuzz;
pub mod in_process;
pub mod init;
pub mod load;
pub mod rules;
pub mod tamper;

use crate::case::{fail, fail_rows, skip, Bindings, Case, Stop, Suite, Untestable};
use crate::drive::{Received, Transport};
use crate::finding::quote;
use crate::suites::agora_v1::expect::*;
use reference_impl::agora_v1::envelope::{SigVariant, STATES};
use reference_impl::wire::keys;
use serde_json::json;
use std::time::Duration;

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, $bindings:expr, $slow:expr,
     |$ctx:ident| $body:block) => {
        crate::define_case!("agora-v1", $id, $title, [$($req),*], $level, $bindings, $slow, None, |$ctx| $body)
    };
}

const ANY: Bindings = Bindings::Any;

macro_rules! client_case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, |$ctx:ident| $body:block) => {
        crate::define_case!("agora-v1", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| $body)
    };
}

pub static SUITE: Suite = Suite {
    id: "agora-v1",
    prefix: "AV1",
    cases: CASES,
    untestable: UNTESTABLE,
    transports: &[Transport::Http, Transport::Ws],
    endpoint_paths: &[],
    faults: reference_impl::agora_v1::faults::FAULTS,
    start: crate::embedded::agora_v1,
    signing: Some(crate::case::Signing {
        sign: crate::suites::agora_v1::expect::sign_message,
        verify: crate::suites::agora_v1::expect::explain_verify,
    }),
    schemas: SCHEMAS,
    client_cases: CLIENT_CASES,
    client_faults: reference_impl::agora_v1::client::CLIENT_FAULTS,
    reread: crate::suites::agora_v1::expect::reread,
    rules: rules::RULES,
    reference_client: client::REFERENCE,
    tampers: crate::suites::agora_v1::tamper::TAMPERS,
    defined: Some(crate::suites::agora_v1::expect::proxied),
    reply_to: None,
    client_message: Some(expect::proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &crate::suites::agora_v1::fuzz::SPEC,
    client_fuzzer: Some(&crate::suites::agora_v1::fuzz::CLIENT_SPEC),
    discover: Some(crate::suites::agora_v1::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "AV1-036", reason: "needs a slow resource whose run time exceeds REQUEST.timeout; the target profile defines none" },
    Untestable { requirement: "AV1-052", reason: "needs a fault-injection resource that makes the target fail; the target profile defines none (informational in the inventory)" },
    Untestable { requirement: "AV1-053", reason: "needs a busy or maintenance switch on the target; the target profile defines none (informational in the inventory)" },
];

pub const CASES: &[Case] = &[
    case!("echo-direct", "REQUEST for the direct resource completes with a well-formed, signed RESULT echoing the params",
        ["AV1-001", "AV1-002", "AV1-003", "AV1-009", "AV1-010", "AV1-012", "AV1-014", "AV1-015", "AV1-016", "AV1-017", "AV1-019", "AV1-020", "AV1-026", "AV1-042", "AV1-043", "AV1-044", "AV1-054"],
        Must, ANY, false, |ctx| {
        // The envelope, signature and RESULT payload rules are judged by check_reply,
        // whose findings this case owns; its own subject here is the echo.
        let params = json!({"text": "hello", "n": 3});
        let (_, result) = complete_request(ctx, params.clone()).await?;
        if !result.data().is_object() {
            // The RESULT schema's finding (owned here) says what the output is.
            ctx.note(format!("the RESULT output is {}, not an object: the echo is not compared", result.data()));
            return Ok(());
        }
        if *result.data() != params {
            return fail(format!("the echo fixture's RESULT output is {}, not the params {params}", result.data()));
        }
        if let Some((variant, form)) = result.verified {
            ctx.checked(format!("reply signed as {variant} with key form {form}"));
        }
        Ok(())
    }),
    case!("ids-uuid-v4", "reply ids are UUID v4", ["AV1-005"], Should, ANY, false, |ctx| {
        let (_, result) = complete_request(ctx, json!({})).await?;
        if !is_uuid_v4(&result.id) {
            return fail(format!("reply id {:?} is not a UUID v4", result.id));
        }
        Ok(())
    }),
    case!("sender-did-key", "the target's sender.id is a did:key", ["AV1-013"], Should, ANY, false, |ctx| {
        // Judged from the id itself: a raw key is allowed (AV1-A4) and used by the
        // signature check; the form is this case's one finding.
        let (_, result) = complete_request(ctx, json!({})).await?;
        let id = result.whole["sender"]["id"].as_str().unwrap_or_default().to_string();
        if id.starts_with("did:key:") {
            ctx.checked(format!("sender.id {id:?} is a did:key"));
            return Ok(());
        }
        let form = match result.verified {
            Some((_, form)) => form.to_string(),
            None => keys::candidate_keys(&id)
                .ok()
                .and_then(|c| c.first().map(|(_, f)| f.to_string()))
                .unwrap_or_else(|| "no key form the harness knows".into()),
        };
        ctx.deviation(rules::REPLY_SENDER_ID_FORM.found(format!("sender.id {} is a {form}, not a did:key (preferred by agora-v1.md §1)", quote(&id))));
        Ok(())
    }),
    case!("reply-signature-encoding", "reply signatures are 64 bytes in Base64Url", ["AV1-021"], Fact, ANY, false, |ctx| {
        // check_reply judges the encoding (hex fails, standard base64 warns per
        // AV1-A1) and this case owns those findings; without a signature that
        // verifies there is no encoding to judge.
        let (_, result) = complete_request(ctx, json!({})).await?;
        match (result.sig_flavor, &result.sig_problem) {
            (Some(f), None) => ctx.checked(format!("signature in {f}")),
            (None, None) => ctx.checked("the signature verifies once read in another encoding"),
            (_, Some(problem)) => return Err(ctx.block(problem.clone())),
        }
        Ok(())
    }),
    case!("ids-unique", "ids of 20 target messages are distinct and never reuse the harness's", ["AV1-004"], Fact, ANY, false, |ctx| {
        // check_reply rejects any reuse within the case; 20 messages over several tasks.
        for i in 0..10 {
            complete_request(ctx, json!({"i": i})).await?;
            let hello = message(ctx, "HELLO", json!({}));
            let r = send(ctx, hello).await?;
            expect_reply(ctx, &r)?;
        }
        ctx.checked(format!("{} distinct reply ids", ctx.reply_ids.len()));
        Ok(())
    }),
    case!("reply-timestamp-fresh", "reply timestamps are RFC 3339 UTC within the replay window of the harness clock", ["AV1-006"], Fact, ANY, false, |ctx| {
        let (_, result) = complete_request(ctx, json!({})).await?;
        ctx.checked(format!("timestamp {}", result.whole["timestamp"]));
        Ok(())
    }),
    case!("reject-missing-payload", "a REQUEST without payload is not processed", ["AV1-002"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        if let Some(o) = req.as_object_mut() { o.remove("payload"); }
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Lenient, "REQUEST without payload").await
    }),
    case!("reject-wrong-protocol", "a REQUEST with protocol agora/2.0 is not processed", ["AV1-003"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        req["protocol"] = json!("agora/2.0");
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Lenient, "protocol \"agora/2.0\"").await
    }),
    case!("reject-unknown-type", "types PING and request (lower case) are not processed", ["AV1-009"], Fact, ANY, false, |ctx| {
        let mut wrong = Vec::new();
        for ty in ["PING", "request"] {
            let mut req = request_with(ctx, |_| {});
            req["type"] = json!(ty);
            let r = send(ctx, req).await?;
            let judged = expect_rejection(ctx, &r, &[400], CodeRule::Lenient, &format!("type {ty:?}")).await;
            wrong.extend(ctx.row(judged)?);
        }
        ctx.rows_wrong(&rules::REJECT_UNKNOWN_TYPE, "unknown types were not refused", &wrong);
        Ok(())
    }),
    case!("hello-welcome", "HELLO is a known type and is answered with WELCOME listing the resources", ["AV1-011"], Profile, ANY, false, |ctx| {
        let hello = message(ctx, "HELLO", json!({}));
        let r = send(ctx, hello).await?;
        let env = expect_processed(ctx, &r, &["WELCOME"]).await?;
        let mut wrong = Vec::new();
        if let Err(e) = ctx.shared.schemas.check("agora-v1/welcome", &env.payload) {
            wrong.push(format!("WELCOME payload: {e}"));
        }
        let resources = env.payload["resources"].as_array().cloned().unwrap_or_default();
        let direct = ctx.profile().agora_v1.direct_resource.clone();
        if !resources.iter().any(|r| r.as_str() == Some(direct.as_str())) {
            wrong.push(format!("WELCOME.resources {} does not list the direct resource {}", json!(resources), json!(direct)));
        }
        fail_rows("the WELCOME reply is not the spec's", &wrong)
    }),
    case!("status-query", "STATUS for a completed request reports a state from the spec's list", ["AV1-011"], Profile, ANY, false, |ctx| {
        let (req_id, _) = complete_request(ctx, json!({})).await?;
        let st = message(ctx, "STATUS", json!({"request_id": req_id}));
        let r = send(ctx, st).await?;
        let env = expect_processed(ctx, &r, &["STATUS"]).await?;
        let mut wrong = Vec::new();
        if let Err(e) = ctx.shared.schemas.check("agora-v1/status", &env.payload) {
            wrong.push(format!("STATUS payload: {e}"));
        }
        let state = env.str("state").unwrap_or_default().to_string();
        if !STATES.contains(&state.as_str()) {
            wrong.push(format!("STATUS.state {state:?} is not one of {STATES:?}"));
        } else if state != "COMPLETED" {
            ctx.warn(format!("a request answered with a RESULT is reported as {state}, not COMPLETED"));
        }
        if env.str("request_id") != Some(req_id.as_str()) {
            wrong.push(format!("STATUS.request_id is {}, not the request asked about ({req_id:?})", env.payload["request_id"]));
        }
        fail_rows("the STATUS reply is not the spec's", &wrong)
    }),
    case!("reject-payload-array", "a REQUEST whose payload is an array draws ERROR 400", ["AV1-015"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        req["payload"] = json!(["agora:echo:v1"]);
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Strict, "payload as an array").await
    }),
    case!("reject-unsigned", "REQUESTs with an empty or missing signature are rejected with 401", ["AV1-016", "AV1-024"], Fact, ANY, false, |ctx| {
        let req = request_with(ctx, |_| {});
        let r = send_as_is(ctx, &req).await?; // signature ""
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "signature \"\"").await?;
        let mut req = request_with(ctx, |_| {});
        if let Some(s) = req["sender"].as_object_mut() { s.remove("signature"); }
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "signature missing").await
    }),
    case!("accept-noncanonical-spelling", "a REQUEST sent with another key order, white space, 1.0, 1e2 and \\u00e9 but signed over its RFC 8785 form is accepted", ["AV1-017", "AV1-018"], Must, ANY, false, |ctx| {
        let resource = ctx.profile().agora_v1.direct_resource.clone();
        let mut req = message(ctx, "REQUEST", json!({"resource": resource, "params": {"ratio": 1.0, "count": 100, "word": "café"}}));
        sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
        let id = req["id"].as_str().unwrap_or_default().to_string();
        ctx.sent_ids.insert(id.clone());
        let text = format!(
            "{{\n  \"type\" : \"REQUEST\",\n  \"timestamp\" : {ts},\n  \"payload\" : {{\n    \"params\" : {{ \"word\" : \"caf\\u00e9\", \"ratio\" : 1.0, \"count\" : 1e2 }},\n    \"resource\" : {res}\n  }},\n  \"sender\" : {{ \"signature\" : {sig}, \"id\" : {sid} }},\n  \"id\" : {id},\n  \"protocol\" : \"agora/1.0\"\n}}\n",
            ts = req["timestamp"], res = req["payload"]["resource"], sig = req["sender"]["signature"],
            sid = req["sender"]["id"], id = req["id"],
        );
        let r = ctx.send_bytes(text.into_bytes()).await?;
        let env = expect_processed(ctx, &r, &["RESULT", "OFFER"]).await?;
        if env.ty == "RESULT" {
            check_result(ctx, &env, &id, false);
            let data = env.data();
            if data["word"] != json!("café") || data["count"].as_f64() != Some(100.0) || data["ratio"].as_f64() != Some(1.0) {
                return fail(format!("the echo of the params differs in value: {data}"));
            }
        }
        Ok(())
    }),
    case!("reject-ecdsa-sender", "a REQUEST from a P-256 did:key draws ERROR 401", ["AV1-019", "AV1-024"], Must, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        req["sender"]["id"] = json!("did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169");
        req["sender"]["signature"] = json!(keys::b64url(&[7u8; 64]));
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "ECDSA P-256 sender").await
    }),
    case!("accept-removed-signature-variant", "a REQUEST signed with sender.signature removed (not blanked) is accepted", ["AV1-020"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        sign_with(&mut req, &ctx.shared.key, SigVariant::Removed)?;
        let r = send_as_is(ctx, &req).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty == "ERROR" {
            control(ctx).await?;
            ctx.warn(format!("the removed-signature variant was rejected (code {}); peers that sign that way cannot interoperate (AV1-A2)", env.payload["code"]));
        }
        Ok(())
    }),
    case!("accept-padded-signature", "signatures in padded base64url and standard base64 (informational)", ["AV1-021"], Fact, ANY, false, |ctx| {
        for (label, recode) in [("padded base64url", 0), ("standard base64", 1)] {
            let mut req = request_with(ctx, |_| {});
            sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
            let sig = req["sender"]["signature"].as_str().unwrap_or_default().to_string();
            let bytes = keys::b64_decode_any(&sig).map(|b| b.0).unwrap_or_default();
            req["sender"]["signature"] = json!(if recode == 0 { format!("{sig}{}", "=".repeat((4 - sig.len() % 4) % 4)) } else { keys::b64std(&bytes) });
            let r = send_as_is(ctx, &req).await?;
            let env = expect_reply(ctx, &r)?;
            ctx.note(format!("signature in {label}: answered {}", env.ty));
        }
        Ok(())
    }),
    case!("reject-tampered-payload", "a REQUEST whose payload changed after signing draws ERROR 401", ["AV1-022", "AV1-024"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
        req["payload"]["params"]["text"] = json!("hj");
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "tampered payload").await
    }),
    case!("reject-wrong-key", "a REQUEST signed by one key but naming another in sender.id draws ERROR 401", ["AV1-023", "AV1-024"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        sign_with(&mut req, &ctx.shared.other_key, SigVariant::Blank)?;
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "signature by another key").await
    }),
    case!("negotiated-flow", "REQUEST → OFFER → ACCEPT → RESULT for the negotiated resource", ["AV1-025", "AV1-037", "AV1-038", "AV1-040", "AV1-042"], Profile, ANY, false, |ctx| {
        let (req_id, mut offer) = obtain_offer(ctx).await?;
        let r = accept_offer(ctx, &mut offer, json!({})).await?;
        let result = expect_processed(ctx, &r, &["RESULT"]).await?;
        check_result(ctx, &result, &req_id, true);
        Ok(())
    }),
    case!("no-result-without-accept", "an OFFER never accepted yields no RESULT", ["AV1-027"], Fact, Bindings::Only(Transport::Ws), false, |ctx| {
        let (_, offer) = obtain_offer(ctx).await?;
        let ttl = offer.payload["ttl"].as_u64().unwrap_or(0);
        let max = ctx.profile().timing.offer_wait_max_ms;
        let wait = (ttl + 500).min(max);
        ctx.note(format!("listening {wait} ms for an unsolicited message"));
        if let Some(b) = ctx.listen(Duration::from_millis(wait)).await? {
            let r = Received::Frame(b);
            let env = expect_reply(ctx, &r)?;
            if env.ty == "RESULT" {
                return fail("a RESULT arrived for an offer that was never accepted");
            }
        }
        Ok(())
    }),
    case!("offer-expiry", "an ACCEPT after the offer's ttl draws ERROR 408 and no RESULT", ["AV1-039", "AV1-050"], Fact, ANY, false, |ctx| {
        let (_, mut offer) = obtain_offer(ctx).await?;
        let Some(ttl) = offer.payload["ttl"].as_u64() else {
            // The OFFER schema's finding says what the ttl is; without it there is
            // no expiry to wait for.
            let f = ctx.findings().iter().find(|m| m.finding.rule.is_some_and(|r| *r == rules::SCHEMA_OFFER) && m.finding.detail().starts_with("/ttl")).map(|m| m.finding.clone());
            return match f {
                Some(f) => Err(ctx.block(f)),
                None => skip(format!("the OFFER's ttl is {}, not a number of ms", offer.payload["ttl"])),
            };
        };
        let max = ctx.profile().timing.offer_wait_max_ms;
        let margin = 300;
        if ttl + margin > max {
            return skip(format!("the offer ttl is {ttl} ms; waiting it out exceeds offer_wait_max_ms = {max}"));
        }
        // A second offer, accepted late only after another quote REQUEST: a target
        // that forgets expired offers on a new REQUEST answers it 404, not 408.
        let (_, mut second) = obtain_offer(ctx).await?;
        ctx.note(format!("waiting {} ms for the offers to expire", ttl + margin));
        tokio::time::sleep(Duration::from_millis(ttl + margin)).await;
        let r = accept_offer_late(ctx, &mut offer).await?;
        expect_error(ctx, &r, 408)?;
        ctx.note("another quote REQUEST, then a late ACCEPT of the second offer");
        obtain_offer(ctx).await?;
        let r = accept_offer_late(ctx, &mut second).await?;
        expect_error(ctx, &r, 408).map(|_| ())
    }),
    case!("accept-unknown-offer", "an ACCEPT naming an unknown offer draws ERROR 400 or 404", ["AV1-040"], Fact, ANY, false, |ctx| {
        let accept = message(ctx, "ACCEPT", json!({"offer_id": reference_impl::wire::new_id()}));
        let r = send(ctx, accept).await?;
        expect_rejection(ctx, &r, &[400, 404], CodeRule::Strict, "ACCEPT of an unknown offer").await
    }),
    case!("accept-twice", "a second ACCEPT of the same offer is rejected", ["AV1-040"], Profile, ANY, false, |ctx| {
        let (_, mut offer) = obtain_offer(ctx).await?;
        let r = accept_offer(ctx, &mut offer, json!({})).await?;
        expect_processed(ctx, &r, &["RESULT"]).await?;
        let again = message(ctx, "ACCEPT", json!({"offer_id": offer_ref(ctx, &offer)}));
        let r = send(ctx, again).await?;
        expect_rejection(ctx, &r, &[400, 404], CodeRule::Strict, "second ACCEPT of one offer").await
    }),
    case!("reject-bad-payment-proof", "an ACCEPT with payment_proof 123 draws ERROR 400", ["AV1-041"], Fact, ANY, false, |ctx| {
        let (_, mut offer) = obtain_offer(ctx).await?;
        let r = accept_offer(ctx, &mut offer, json!({"payment_proof": 123})).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Strict, "payment_proof as a number").await
    }),
    case!("reject-bad-resource", "a REQUEST without resource, or with resource 42, draws ERROR 400", ["AV1-032"], Fact, ANY, false, |ctx| {
        let req = request_with(ctx, |p| { if let Some(o) = p.as_object_mut() { o.remove("resource"); } });
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Strict, "no resource").await?;
        let req = request_with(ctx, |p| p["resource"] = json!(42));
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Strict, "resource 42").await
    }),
    case!("reject-params-string", "a REQUEST whose params is a string draws ERROR 400", ["AV1-033"], Fact, ANY, false, |ctx| {
        let req = request_with(ctx, |p| p["params"] = json!("text=hi"));
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Strict, "params as a string").await
    }),
    case!("reject-budget-number", "a REQUEST with budget 5 (not an object) draws ERROR 400; no budget is fine", ["AV1-034"], Fact, ANY, false, |ctx| {
        let req = request_with(ctx, |p| p["budget"] = json!(5));
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Strict, "budget as a number").await?;
        complete_request(ctx, json!({})).await.map(|_| ())
    }),
    case!("reject-bad-timeout", "timeout \"10s\" or 1.5 draws ERROR 400; an omitted timeout is fine", ["AV1-035"], Fact, ANY, false, |ctx| {
        let mut wrong = Vec::new();
        for bad in [json!("10s"), json!(1.5)] {
            let req = request_with(ctx, |p| p["timeout"] = bad.clone());
            let r = send(ctx, req).await?;
            let judged = expect_rejection(ctx, &r, &[400], CodeRule::Strict, &format!("timeout {bad}")).await;
            wrong.extend(ctx.row(judged)?);
        }
        ctx.rows_wrong(&rules::REJECT_BAD_TIMEOUT, "bad timeouts were not refused with ERROR 400", &wrong);
        let req = request_with(ctx, |p| p["timeout"] = json!(10000));
        let r = send(ctx, req).await?;
        expect_processed(ctx, &r, &["RESULT", "OFFER"]).await.map(|_| ())
    }),
    case!("error-unknown-resource", "an unknown resource draws ERROR 404 with integer code, string message and the request id", ["AV1-045", "AV1-046", "AV1-049"], Fact, ANY, false, |ctx| {
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
            Some(other) => return fail(format!("ERROR.request_id {other:?} is not the REQUEST's id")),
            None => ctx.warn("ERROR 404 carries no request_id (AV1-049 asks for it)"),
        }
        Ok(())
    }),
    case!("reject-malformed-json", "truncated JSON and an envelope without type draw ERROR 400", ["AV1-047"], Fact, ANY, false, |ctx| {
        let req = request_with(ctx, |_| {});
        let mut text = wire(&req);
        text.truncate(text.len() / 2);
        let r = ctx.send_bytes(text).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Strict, "truncated JSON").await?;
        let mut req = request_with(ctx, |_| {});
        if let Some(o) = req.as_object_mut() { o.remove("type"); }
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[400], CodeRule::Strict, "envelope without type").await
    }),
    case!("budget-too-low", "a REQUEST whose budget.max is below the negotiated resource's cost draws ERROR 402; one equal to the cost covers it", ["AV1-048", "AV1-055"], Profile, ANY, false, |ctx| {
        let resource = ctx.profile().agora_v1.negotiated_resource.clone();
        let (_, offer) = obtain_offer(ctx).await?;
        let cost = offer.payload["cost"].as_f64().unwrap_or(0.0);
        if cost <= 0.0 {
            return skip(format!("the negotiated resource costs {cost}; no budget can be below it"));
        }
        // The valid twin: a budget that covers the cost is optional and fine (AV1-034).
        let enough = message(ctx, "REQUEST", json!({"resource": resource, "params": {}, "budget": {"max": cost * 2.0}}));
        let r = send(ctx, enough).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty != "OFFER" && env.ty != "RESULT" {
            return fail(format!("a REQUEST whose budget.max {} covers the cost {cost} drew {} (AV1-034)", cost * 2.0, env.said()));
        }
        ctx.control(format!("a REQUEST whose budget covers the cost (answered {})", env.ty));
        // A budget of exactly the cost is not below it (AV1-055, derived).
        let exact = message(ctx, "REQUEST", json!({"resource": resource, "params": {}, "budget": {"max": cost}}));
        let r = send(ctx, exact).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty != "OFFER" && env.ty != "RESULT" {
            ctx.deviation(rules::BUDGET_TOO_LOW_EXACT_BUDGET.found(format!("a REQUEST whose budget.max equals the cost {cost} drew {}, as if it were below it", env.said())));
        }
        let req = message(ctx, "REQUEST", json!({"resource": resource, "params": {}, "budget": {"max": cost / 2.0}}));
        let r = send(ctx, req).await?;
        expect_error(ctx, &r, 402).map(|_| ())
    }),
    case!("reject-stale-timestamp", "a correctly signed REQUEST stamped 120 s ago is not processed", ["AV1-007"], Must, ANY, false, |ctx| {
        let resource = ctx.profile().agora_v1.direct_resource.clone();
        let req = message_at(ctx, "REQUEST", request_payload(&resource, json!({})), now() - time::Duration::seconds(120));
        let r = send(ctx, req).await?;
        expect_rejection(ctx, &r, &[401, 400], CodeRule::Lenient, "REQUEST stamped now−120 s").await
    }),
    case!("accept-recent-timestamp", "a REQUEST stamped 30 s ago is processed normally", ["AV1-008"], Fact, ANY, false, |ctx| {
        let resource = ctx.profile().agora_v1.direct_resource.clone();
        let req = message_at(ctx, "REQUEST", request_payload(&resource, json!({})), now() - time::Duration::seconds(30));
        let r = send(ctx, req).await?;
        expect_processed(ctx, &r, &["RESULT", "OFFER"]).await.map(|_| ())
    }),
    case!("reject-replayed-id", "the same signed REQUEST sent twice inside the window is processed once", ["AV1-007"], Profile, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
        let r = send_as_is(ctx, &req).await?;
        expect_baseline(ctx, &r, &["RESULT", "OFFER"], "a valid REQUEST for the direct resource")?;
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401, 400], CodeRule::Lenient, "replayed message id").await
    }),
    case!("rate-limit-burst", "a burst of REQUESTs: throttled replies are ERROR 429 (no throttling is informational)", ["AV1-051"], Fact, Bindings::Only(Transport::Http), false, |ctx| {
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
        let limits = crate::drive::Limits { max_bytes: ctx.limits().max_bytes.min(64 * 1024), ..ctx.limits() };
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
            let Ok(results) = res else { return fail("a burst task panicked") };
            for r in results {
                let r = match r {
                    Ok(r) => r,
                    Err(e) => return fail(format!("during the burst: {}", crate::script::describe_drive_error(&e))),
                };
                ctx.note_if_retried(&r);
                let env = expect_reply(ctx, &r)?;
                match (env.ty.as_str(), env.error_code()) {
                    ("RESULT" | "OFFER", _) => ok += 1,
                    ("ERROR", Some(429)) => throttled += 1,
                    (ty, code) => return fail(format!("a burst request drew {ty} {}; throttling must use ERROR 429", crate::finding::json(&code))),
                }
            }
        }
        ctx.note(format!("{n} requests: {ok} processed, {throttled} throttled with 429"));
        Ok(())
    }),
];

/// The requester's side (`run --role client`): the harness is the provider, the
/// client driver runs scenario `request` against it.
pub const CLIENT_CASES: &[Case] = &[
    client_case!(
        "client-direct",
        "the requester sends a well-formed, signed REQUEST and takes the RESULT",
        ["AV1-001", "AV1-016", "AV1-017", "AV1-028", "AV1-030", "AV1-032", "AV1-033"],
        Must,
        |ctx| {
            let ask = client_ask(ctx, false);
            let run = drive_requester(ctx, &ask, Provide::Direct).await?;
            let request = first_request(ctx, &run)?;
            if request.payload["resource"] != ask["resource"]
                || request.payload["params"] != ask["params"]
            {
                return fail(format!(
                    "the REQUEST asks for {} with {}, not the scenario's {} with {}",
                    request.payload["resource"],
                    request.payload["params"],
                    ask["resource"],
                    ask["params"]
                ));
            }
            ctx.checked("the REQUEST names the scenario's resource and params");
            completed(ctx, &run, &ask["params"])
        }
    ),
    client_case!(
        "client-negotiated",
        "the requester ACCEPTs an OFFER within its budget by the OFFER's id and takes the RESULT",
        ["AV1-029", "AV1-030", "AV1-040"],
        Fact,
        |ctx| {
            let ask = client_ask(ctx, true);
            let plan = Provide::Offer {
                cost: 5.0,
                stale: false,
                bad_signature: false,
            };
            let run = drive_requester(ctx, &ask, plan).await?;
            first_request(ctx, &run)?;
            let offer: serde_json::Value =
                serde_json::from_slice(&run.exchanges[0].answered).unwrap_or_default();
            let Some(accept) = run.exchanges.get(1) else {
                return fail(format!(
                    "the requester sent no ACCEPT for an OFFER within its budget; {}",
                    run.ended()
                ));
            };
            let accept = check_client_message(ctx, &accept.received)?;
            if accept.ty != "ACCEPT" {
                return fail(format!(
                    "after the OFFER the requester sent {}, not ACCEPT",
                    accept.ty
                ));
            }
            if let Some(f) = accept_finding(&accept, &offer) {
                return Err(Stop::Finding(f));
            }
            ctx.checked("the ACCEPT names the OFFER by its id");
            ids_unique(ctx, &run)?;
            completed(ctx, &run, &ask["params"])
        }
    ),
    client_case!(
        "client-refuses-offer-over-budget",
        "the requester does not ACCEPT an OFFER over its budget",
        ["AV1-029", "AV1-034"],
        Fact,
        |ctx| {
            let plan = Provide::Offer {
                cost: 20.0,
                stale: false,
                bad_signature: false,
            };
            offer_refused(ctx, plan, "an OFFER costing 20 over its budget of 10").await
        }
    ),
    client_case!(
        "client-accepts-offer-at-budget",
        "the requester ACCEPTs an OFFER whose cost equals its budget",
        ["AV1-029", "AV1-055"],
        Fact,
        |ctx| {
            let ask = client_ask(ctx, true);
            let budget = ask["budget"].as_f64().unwrap_or(10.0);
            // The twin within the budget first: a requester that ACCEPTs no OFFER
            // fails client-negotiated, and nothing is told here.
            let within = Provide::Offer {
                cost: budget / 2.0,
                stale: false,
                bad_signature: false,
            };
            let twin = drive_requester(ctx, &ask, within).await?;
            if !accepted_offer(&twin) || twin.failed() || !took_result(&twin, &ask["params"]) {
                ctx.note("the requester did not complete a task with an OFFER within its budget either (client-negotiated judges that)");
                return Err(Stop::Blocked(crate::finding::case_key(
                    "agora-v1/client-negotiated",
                    "",
                )));
            }
            ctx.control(format!("an OFFER costing {}, within its budget", budget / 2.0));
            let at_budget = Provide::Offer {
                cost: budget,
                stale: false,
                bad_signature: false,
            };
            let run = drive_requester(ctx, &ask, at_budget).await?;
            first_request(ctx, &run)?;
            if !accepted_offer(&run) {
                return fail(format!(
                    "the requester sent no ACCEPT for an OFFER costing exactly its budget of {budget}, as if the cost were over it (AV1-055); {}",
                    run.ended()
                ));
            }
            ctx.checked("the requester ACCEPTed an OFFER costing exactly its budget");
            completed(ctx, &run, &ask["params"])
        }
    ),
    client_case!(
        "client-refuses-bad-offer-signature",
        "the requester does not ACCEPT an OFFER whose signature does not verify",
        ["AV1-016", "AV1-017", "AV1-023", "AV1-029"],
        Must,
        |ctx| {
            let plan = Provide::Offer {
                cost: 5.0,
                stale: false,
                bad_signature: true,
            };
            offer_refused(ctx, plan, "an OFFER whose signature does not verify").await
        }
    ),
    client_case!(
        "client-refuses-stale-offer",
        "the requester does not ACCEPT an OFFER stamped outside the replay window",
        ["AV1-007", "AV1-029"],
        Must,
        |ctx| {
            let plan = Provide::Offer {
                cost: 5.0,
                stale: true,
                bad_signature: false,
            };
            offer_refused(ctx, plan, "an OFFER stamped two minutes ago, within its own ttl of 15 min").await
        }
    ),
    client_case!(
        "client-error-fails-the-task",
        "an ERROR ends the requester's task as failed",
        ["AV1-031"],
        Fact,
        |ctx| {
            // A requester that fails every task passes here only if it completes one.
            ctx.controlled_by("agora-v1/client-direct");
            let ask = client_ask(ctx, false);
            let run = drive_requester(ctx, &ask, Provide::Error(404)).await?;
            first_request(ctx, &run)?;
            if run.exchanges.len() > 1 {
                return fail("the requester went on after an ERROR");
            }
            if run.lines.iter().any(|l| l.get("result").is_some()) || !run.failed() {
                return fail(format!(
                    "the requester reported success after an ERROR 404: {}; stdout: {}",
                    run.ended(),
                    crate::finding::clipped(run.stdout.trim(), 300)
                ));
            }
            ctx.checked("the requester reported the task as failed");
            // An ERROR to its ACCEPT (a provider that knows the offer by another
            // id) fails the task too.
            let plan = Provide::Offer { cost: 5.0, stale: false, bad_signature: false };
            let ask = client_ask(ctx, true);
            let run = drive_spoiled(ctx, &ask, plan, Spoil::AcceptRefused).await?;
            first_request(ctx, &run)?;
            reported_failure(ctx, &run, "an ERROR 404 to its ACCEPT")
        }
    ),
    client_case!(
        "client-refuses-wrong-protocol",
        "the requester does not take a RESULT whose protocol is not agora/1.0",
        ["AV1-003"],
        Fact,
        |ctx| {
            result_refused(ctx, Spoil::ResultProtocol, "a RESULT with protocol \"agora/1.1\"").await
        }
    ),
    client_case!(
        "client-refuses-reused-id",
        "the requester does not take a RESULT that reuses its REQUEST's id",
        ["AV1-004"],
        Fact,
        |ctx| {
            result_refused(ctx, Spoil::ResultReusesId, "a RESULT whose id is the REQUEST's").await
        }
    ),
    client_case!(
        "client-refuses-foreign-offer",
        "the requester does not ACCEPT an OFFER that names another request",
        ["AV1-029", "AV1-037"],
        Fact,
        |ctx| {
            ctx.controlled_by("agora-v1/client-negotiated");
            let ask = client_ask(ctx, true);
            let plan = Provide::Offer { cost: 5.0, stale: false, bad_signature: false };
            let run = drive_spoiled(ctx, &ask, plan, Spoil::OfferNamesOther).await?;
            first_request(ctx, &run)?;
            refused(ctx, &run, "an OFFER whose request_id names another request")
        }
    ),
    client_case!(
        "client-refuses-foreign-result",
        "the requester does not take a RESULT whose request_id names its OFFER rather than its REQUEST",
        ["AV1-042"],
        Fact,
        |ctx| {
            ctx.controlled_by("agora-v1/client-negotiated");
            let ask = client_ask(ctx, true);
            let plan = Provide::Offer { cost: 5.0, stale: false, bad_signature: false };
            let run = drive_spoiled(ctx, &ask, plan, Spoil::ResultNamesOffer).await?;
            first_request(ctx, &run)?;
            reported_failure(ctx, &run, "a RESULT whose request_id names the OFFER")
        }
    ),
    client_case!(
        "client-refuses-expired-offer",
        "the requester does not ACCEPT an OFFER whose ttl has run out, though it is fresh",
        ["AV1-029", "AV1-039"],
        Fact,
        |ctx| {
            ctx.controlled_by("agora-v1/client-negotiated");
            let ask = client_ask(ctx, true);
            let plan = Provide::Offer { cost: 5.0, stale: false, bad_signature: false };
            let run = drive_spoiled(ctx, &ask, plan, Spoil::OfferExpired).await?;
            first_request(ctx, &run)?;
            refused(ctx, &run, "an OFFER stamped 5 s ago with a ttl of 1000 ms")
        }
    ),
    client_case!(
        "client-refuses-stale-result",
        "the requester does not take a RESULT stamped outside the replay window",
        ["AV1-007"],
        Must,
        |ctx| {
            result_refused(ctx, Spoil::ResultStale, "a RESULT stamped ten minutes ago").await
        }
    ),
    client_case!(
        "client-refuses-bad-result-signature",
        "the requester verifies the RESULT's signature over the RFC 8785 form: an empty signature, another key's, or one over insertion-order or sorted-key JSON (compact, or as json.dumps(sort_keys=True) writes it) is refused",
        ["AV1-016", "AV1-017", "AV1-023"],
        Must,
        |ctx| {
            let mut wrong = Vec::new();
            for (spoil, what) in [
                (Spoil::ResultUnsigned, "a RESULT with an empty signature"),
                (Spoil::ResultWrongKey, "a RESULT signed with a key other than its sender.id's"),
                (Spoil::ResultInsertionOrder, "a RESULT signed over its members in insertion order, and sent so"),
                (Spoil::ResultSortedKeys, "a RESULT signed over sorted-key JSON with its non-ASCII text escaped (\\u00e9), not RFC 8785"),
                (Spoil::ResultPythonDumps, "a RESULT signed over Python's json.dumps(sort_keys=True), with its \", \" and \": \" separators, not RFC 8785"),
            ] {
                let judged = result_refused(ctx, spoil, what).await;
                wrong.extend(ctx.row(judged)?);
            }
            fail_rows("spoiled RESULTs the requester took", &wrong)
        }
    ),
    client_case!(
        "client-reports-malformed-error",
        "a refusal in another shape (a bare {error, code} body, a string code, a nested payload.error) still fails the requester's task",
        ["AV1-031"],
        Fact,
        |ctx| {
            ctx.controlled_by("agora-v1/client-direct");
            let mut wrong = Vec::new();
            for (spoil, what) in [
                (Spoil::BareError, "a bare {\"error\", \"code\"} body with HTTP 401"),
                (Spoil::ErrorCodeString, "an ERROR whose code is the string \"403\""),
                (Spoil::ErrorNested, "an ERROR with HTTP 200 and payload.error {code, message}"),
            ] {
                let ask = client_ask(ctx, false);
                let run = drive_spoiled(ctx, &ask, Provide::Error(403), spoil).await?;
                let judged = first_request(ctx, &run).and_then(|_| reported_failure(ctx, &run, what));
                wrong.extend(ctx.row(judged)?);
            }
            fail_rows("refusals the requester did not report as failures", &wrong)
        }
    ),
];

/// Runs the requester's direct flow against a RESULT spoiled as `spoil` says: it
/// must not take it.
async fn result_refused(
    ctx: &mut crate::script::Ctx,
    spoil: Spoil,
    what: &str,
) -> crate::case::Step<()> {
    // A requester that takes no RESULT passes here only if it takes a sound one.
    ctx.controlled_by("agora-v1/client-direct");
    let ask = client_ask(ctx, false);
    let run = drive_spoiled(ctx, &ask, Provide::Direct, spoil).await?;
    first_request(ctx, &run)?;
    reported_failure(ctx, &run, what)
}

/// The requester's task failed at `what`: no result line, and a non-zero exit.
fn reported_failure(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
    what: &str,
) -> crate::case::Step<()> {
    run.took_nothing("the requester", "took", what)?;
    ctx.checked(format!(
        "the requester refused {what} and reported its task as failed"
    ));
    Ok(())
}

/// Every message of the requester has an id of its own, unlike every other
/// message of the conversation, the provider's among them (AV1-004, AV1-A19).
fn ids_unique(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
) -> crate::case::Step<()> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for x in &run.exchanges {
        for (bytes, who) in [(&x.received, "the requester"), (&x.answered, "the harness")] {
            let id = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|v| v["id"].as_str().map(String::from));
            let Some(id) = id else { continue };
            if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
                if who == "the requester" {
                    // The key the run-wide check gives (expect::check_client_message):
                    // one finding for one reused id.
                    ctx.deviation(rules::CLIENT_ID_REUSED.found(format!("the requester's message reuses id {id:?}, already used by {first} (AV1-004: an id is unique to its message)")));
                    return Ok(());
                }
            }
            seen.push((id, who));
        }
    }
    ctx.checked("every message of the requester has an id of its own");
    Ok(())
}

/// The scenario input of a client case: the profile's direct (or negotiated)
/// resource, params, and a budget of 10.
fn client_ask(ctx: &crate::script::Ctx, negotiated: bool) -> serde_json::Value {
    let p = &ctx.profile().agora_v1;
    let resource = if negotiated {
        &p.negotiated_resource
    } else {
        &p.direct_resource
    };
    // Non-ASCII text, where RFC 8785 and sorted-key JSON part ways (AV1-017).
    json!({"resource": resource, "params": {"text": "héllo from the harness, ça va"}, "budget": 10})
}

async fn drive_requester(
    ctx: &mut crate::script::Ctx,
    ask: &serde_json::Value,
    plan: Provide,
) -> crate::case::Step<crate::counterparty::DriverRun> {
    drive_spoiled(ctx, ask, plan, Spoil::None).await
}

async fn drive_spoiled(
    ctx: &mut crate::script::Ctx,
    ask: &serde_json::Value,
    plan: Provide,
    spoil: Spoil,
) -> crate::case::Step<crate::counterparty::DriverRun> {
    let answer = spoiled_provider(ctx.shared.key.clone(), plan, spoil);
    crate::counterparty::drive(
        ctx,
        "request",
        ask,
        answer,
        crate::suites::agora_v1::expect::defined,
    )
    .await
}

/// The first message must be a well-formed REQUEST.
fn first_request(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
) -> crate::case::Step<Env> {
    let Some(first) = run.exchanges.first() else {
        return fail(format!(
            "the requester sent nothing; {}; stderr: {}",
            run.ended(),
            crate::finding::clipped(run.stderr.trim(), 300)
        ));
    };
    let env = check_client_message(ctx, &first.received)?;
    if env.ty != "REQUEST" {
        return fail(format!(
            "the requester's first message is {}, not REQUEST",
            env.ty
        ));
    }
    ctx.checked("the requester's first message is a REQUEST");
    Ok(env)
}

/// The task completed: the driver exited 0 and printed the RESULT's data.
fn completed(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
    data: &serde_json::Value,
) -> crate::case::Step<()> {
    if run.failed() {
        return fail(format!(
            "the requester did not complete the task: {}; stdout: {}",
            run.ended(),
            crate::finding::clipped(run.stdout.trim(), 300)
        ));
    }
    if !took_result(run, data) {
        return fail(format!(
            "the driver printed no result line with the RESULT's data {data}: {}",
            crate::finding::clipped(run.stdout.trim(), 300)
        ));
    }
    ctx.checked("the requester completed the task with the RESULT's data");
    Ok(())
}

/// Runs the requester against `plan` (an OFFER it must refuse): a REQUEST, and no
/// ACCEPT.
async fn offer_refused(
    ctx: &mut crate::script::Ctx,
    plan: Provide,
    what: &str,
) -> crate::case::Step<()> {
    // A requester that never ACCEPTs passes here only if it ACCEPTs a sound OFFER.
    ctx.controlled_by("agora-v1/client-negotiated");
    let ask = client_ask(ctx, true);
    let run = drive_requester(ctx, &ask, plan).await?;
    first_request(ctx, &run)?;
    refused(ctx, &run, what)
}

/// Whether the requester printed a result line with the RESULT's `data`.
fn took_result(run: &crate::counterparty::DriverRun, data: &serde_json::Value) -> bool {
    run.lines.iter().any(|l| l.get("result") == Some(data))
}

/// Whether the requester sent an ACCEPT after its REQUEST.
fn accepted_offer(run: &crate::counterparty::DriverRun) -> bool {
    run.sent().skip(1).any(|b| {
        serde_json::from_slice::<serde_json::Value>(b).is_ok_and(|v| v["type"] == "ACCEPT")
    })
}

/// The requester must not ACCEPT what it was offered.
fn refused(
    ctx: &mut crate::script::Ctx,
    run: &crate::counterparty::DriverRun,
    what: &str,
) -> crate::case::Step<()> {
    if accepted_offer(run) {
        return fail(format!("the requester ACCEPTed {what}"));
    }
    ctx.checked(format!("the requester did not ACCEPT {what}"));
    if !run.failed() {
        ctx.note("the driver exited 0 although its client refused the offer");
    }
    Ok(())
}

fn is_uuid_v4(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            14 => *c == b'4',
            19 => matches!(c, b'8' | b'9' | b'a' | b'b' | b'A' | b'B'),
            _ => c.is_ascii_hexdigit(),
        })
}

/// The suite's JSON Schemas (schemas/agora-v1/), by name, built into the binary.
const SCHEMAS: &[(&str, &str)] = &[
    (
        "envelope",
        include_str!("../../../../schemas/agora-v1/envelope.schema.json"),
    ),
    (
        "request",
        include_str!("../../../../schemas/agora-v1/request.schema.json"),
    ),
    (
        "offer",
        include_str!("../../../../schemas/agora-v1/offer.schema.json"),
    ),
    (
        "accept",
        include_str!("../../../../schemas/agora-v1/accept.schema.json"),
    ),
    (
        "result",
        include_str!("../../../../schemas/agora-v1/result.schema.json"),
    ),
    (
        "error",
        include_str!("../../../../schemas/agora-v1/error.schema.json"),
    ),
    (
        "hello",
        include_str!("../../../../schemas/agora-v1/hello.schema.json"),
    ),
    (
        "welcome",
        include_str!("../../../../schemas/agora-v1/welcome.schema.json"),
    ),
    (
        "status",
        include_str!("../../../../schemas/agora-v1/status.schema.json"),
    ),
];
