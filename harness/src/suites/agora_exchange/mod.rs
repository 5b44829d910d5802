//! The agora-exchange suite (agora-exchange.txt): the descriptor and the cases; its reply checks and counterparts are in `expect`, its fuzz specs in `fuzz`.

pub mod client;
pub mod expect;
pub mod fuzz;
pub mod in_process;
pub mod init;
pub mod load;
pub mod rules;
pub mod tamper;

use crate::case::{fail, fail_rows, skip, Bindings, Case, Stop, Suite, Untestable};
use crate::drive::Transport;
use crate::finding::quote;
use crate::script::Ctx;
use crate::suites::agora_exchange::expect::*;
use reference_impl::agora_exchange::document::{self, sha1_hex};
use serde_json::{json, Value};
use std::collections::BTreeSet;

macro_rules! client_case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, |$ctx:ident| $body:block) => {
        crate::define_case!("agora-exchange", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| $body)
    };
}

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, $slow:expr,
     |$ctx:ident| $body:block) => {
        crate::define_case!("agora-exchange", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), $slow, None, |$ctx| $body)
    };
}

pub static SUITE: Suite = Suite {
    id: "agora-exchange",
    prefix: "AEX",
    cases: CASES,
    untestable: UNTESTABLE,
    transports: &[Transport::Http],
    endpoint_paths: &[],
    faults: reference_impl::agora_exchange::faults::FAULTS,
    start: crate::embedded::agora_exchange,
    signing: None,
    schemas: SCHEMAS,
    client_cases: CLIENT_CASES,
    client_faults: reference_impl::agora_exchange::client::CLIENT_FAULTS,
    reread: crate::suites::agora_exchange::expect::reread,
    rules: rules::RULES,
    reference_client: client::REFERENCE,
    tampers: crate::suites::agora_exchange::tamper::TAMPERS,
    defined: Some(crate::suites::agora_exchange::expect::defined),
    reply_to: None,
    client_message: Some(expect::proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &crate::suites::agora_exchange::fuzz::SPEC,
    client_fuzzer: Some(&crate::suites::agora_exchange::fuzz::CLIENT_SPEC),
    discover: Some(crate::suites::agora_exchange::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "AEX-047", reason: "whether a listed protocol is only partly supported is not observable on the wire; AEX-046 checks that every listed hash is accepted" },
    Untestable { requirement: "AEX-051", reason: "needs a fault-injection fixture that makes the target fail; the target profile defines none" },
    Untestable { requirement: "AEX-056", reason: "how a target logs or stores data is not observable on the wire" },
    Untestable { requirement: "AEX-057", reason: "authentication is outside the protocol; there is no behaviour to observe" },
    Untestable { requirement: "AEX-059", reason: "umbrella row: the run fails whenever a MUST case on status fields, conversations or errors fails; it has no observation of its own" },
];

pub const CASES: &[Case] = &[
    case!("single-round", "single-round requests (protocolHash null or absent) get HTTP 200, application/json, status success, and no conversation",
        ["AEX-004", "AEX-007", "AEX-009", "AEX-013", "AEX-015", "AEX-020", "AEX-022", "AEX-025", "AEX-058"], Must, false, |ctx| {
        let mut refused: Vec<(&str, Reply)> = Vec::new();
        for (form, req) in [("null", json!({"protocolHash": null, "body": "ping"})), ("absent", json!({"body": {"question": "ping"}}))] {
            let r = post(ctx, "", &req).await?;
            if !r.is_success() {
                refused.push((form, r));
                continue;
            }
            if r.get("conversationId").is_some() {
                return fail(format!("a single-round reply carries conversation fields (AEX-022, AEX-025): {}", r.describe()));
            }
        }
        // The reply shape every reply shares is this case's subject; a
        // conversationExpires without conversationId here is a conversation field on
        // a single-round reply.
        claim(ctx, SHAPE_RULES);
        claim(ctx, &[&rules::REPLY_CONVERSATION_ID]);
        match refused.as_slice() {
            [] => Ok(()),
            [(form, r)] => Err(Stop::Finding(rules::REQUEST_PROTOCOL_HASH_OPTIONAL.found(format!(
                    "a request with protocolHash {form} drew {} ({}); absent or null, protocolHash means no formal protocol",
                    r.describe(),
                    quote(r.error().unwrap_or("no error text"))
                )))),
            [(_, r), ..] => fail(format!("single-round requests are refused: expected HTTP 200 with status success, got {}", r.describe())),
        }
    }),
    case!("body-formats", "without a protocol, empty, Unicode and nested bodies draw no transport error", ["AEX-014"], May, false, |ctx| {
        let mut wrong = Vec::new();
        for body in [json!(""), json!("héllo 日本語 🙂"), json!({"a": {"b": [1, 2, {"c": null}]}})] {
            let r = post(ctx, "", &json!({"protocolHash": null, "body": body})).await?;
            if r.http != 200 {
                wrong.push(format!("body {body}: {}", r.describe()));
            }
        }
        ctx.rows_wrong(&rules::BODY_FORMATS, "bodies drew a transport error", &wrong);
        Ok(())
    }),
    case!("missing-body", "requests without body are rejected (an HTTP 4xx or status failure), never answered with success", ["AEX-008"], Must, false, |ctx| {
        control(ctx).await?;
        let mut taken = Vec::new();
        for req in [json!({"protocolHash": null}), json!({})] {
            let r = post(ctx, "", &req).await?;
            taken.extend(rejected_row(ctx, &r, &format!("request {req}"))?);
        }
        ctx.rows_wrong(&rules::MISSING_BODY, "requests without body were not rejected", &taken);
        Ok(())
    }),
    case!("reply-shape", "success replies carry body and no error; failure replies read {\"status\": \"failure\", \"error\": \"…\"} without body",
        ["AEX-009", "AEX-010", "AEX-011", "AEX-012"], Must, false, |ctx| {
        let ok = post(ctx, "", &json!({"protocolHash": null, "body": "ping"})).await?;
        expect_success(&ok, "a plain request")?;
        let mut inspected = None;
        for req in [json!({"protocolHash": random_hash(), "body": "ping"}), json!({"protocolHash": null})] {
            let r = post(ctx, "", &req).await?;
            if r.is_agora_failure() {
                inspected = Some(r);
                break;
            }
            ctx.note(format!("{req} drew {}: not an Agora-level failure", r.describe()));
        }
        let met_any = ctx.findings().iter().any(|m| FAILURE_SHAPE_RULES.iter().any(|r| r.key == m.finding.key));
        if inspected.is_none() && !met_any {
            return skip("no Agora-level failure to inspect: neither an unsupported protocol nor a missing body drew HTTP 200 with a failure");
        }
        claim(ctx, FAILURE_SHAPE_RULES);
        if let Some(r) = inspected {
            ctx.checked(format!("failure reply inspected: {}", r.describe()));
        }
        Ok(())
    }),
    case!("extra-fields-ignored", "an unknown request member leaves the reply unchanged", ["AEX-019", "AEX-023"], Must, false, |ctx| {
        let base = post(ctx, "", &json!({"protocolHash": null, "body": "ping"})).await?;
        let extra = post(ctx, "", &json!({"protocolHash": null, "body": "ping", "x-harness-extra": {"a": 1}})).await?;
        if (base.http, base.said) != (extra.http, extra.said) {
            return fail(format!("with an extra member the reply changed from {} to {} (AEX-019)", base.describe(), extra.describe()));
        }
        Ok(())
    }),
    case!("optional-headers", "Accept, Accept-Charset and an unknown header do not change the outcome", ["AEX-006"], May, false, |ctx| {
        let req = serde_json::to_vec(&json!({"protocolHash": null, "body": "ping"})).unwrap_or_default();
        let base = post_bytes(ctx, "", req.clone(), &[]).await?;
        let with = post_bytes(ctx, "", req, &[("accept", "application/json"), ("accept-charset", "utf-8"), ("x-harness", "1")]).await?;
        if (base.http, base.said) != (with.http, with.said) {
            return fail(format!("optional headers changed the reply from {} to {}", base.describe(), with.describe()));
        }
        Ok(())
    }),
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
    case!("wellknown", "/wellknown maps 40-hex SHA1 keys of whole documents to their sources, with well-formed metadata",
        ["AEX-036", "AEX-037", "AEX-038", "AEX-039", "AEX-043", "AEX-044", "AEX-045"], Must, false, |ctx| {
        check_profile_hash(ctx);
        let mine = [&rules::PROTOCOL_HASH_FORM, &rules::WELLKNOWN_SOURCES];
        let Some(map) = wellknown(ctx).await? else {
            claim(ctx, &mine);
            ctx.warn("no /wellknown endpoint (RECOMMENDED, AEX-044)");
            return Ok(());
        };
        for f in document_findings(ctx, &map) {
            own(ctx, f);
        }
        if map.is_empty() {
            ctx.note("/wellknown lists no protocol");
        }
        claim(ctx, &mine);
        Ok(())
    }),
    case!("wellknown-hashes-supported", "every protocol listed in /wellknown is accepted without protocolSources", ["AEX-016", "AEX-046"], Fact, false, |ctx| {
        let Some(map) = wellknown(ctx).await? else {
            return skip("the target has no /wellknown");
        };
        let fx = fixture(ctx).await?;
        for key in map.keys() {
            let body = if *key == fx.hash { fx.valid_body.clone() } else { json!("hello") };
            let r = post(ctx, "", &json!({"protocolHash": key, "body": body})).await?;
            if refuses_as_unsupported(&r) {
                own(ctx, listed_unsupported(key, &r));
            } else if r.http != 200 {
                // Not a refusal of the protocol: the body may break that protocol,
                // whose rules the harness does not know (AEX-A18).
                ctx.note(format!("{key} drew {}; not judged here", r.describe()));
            }
        }
        Ok(())
    }),
    case!("protocol-sources", "a supported protocol sent with its full text in protocolSources is processed", ["AEX-017"], Fact, false, |ctx| {
        let fx = fixture(ctx).await?;
        let Some(text) = fx.text.clone() else {
            return skip("the protocol's full text is not known (not in /wellknown as text, not in the profile)");
        };
        let r = post(ctx, "", &json!({"protocolHash": fx.hash, "protocolSources": [text], "body": fx.valid_body})).await?;
        if r.is_success() {
            return Ok(());
        }
        if refuses_as_unsupported(&r) {
            // Refused without sources too: the protocol is not supported at all.
            let plain = post(ctx, "", &json!({"protocolHash": fx.hash, "body": fx.valid_body})).await?;
            fixture_refused(ctx, &fx, &plain)?;
        }
        expect_success(&r, "request with protocolSources")
    }),
    case!("unsupported-protocol", "an unsupported protocolHash draws HTTP 200, status failure, error \"Unsupported protocol\"", ["AEX-040", "AEX-041", "AEX-052"], Must, false, |ctx| {
        let r = post(ctx, "", &json!({"protocolHash": random_hash(), "body": "ping"})).await?;
        if r.is_success() {
            return fail(format!("an unsupported protocol was answered with success; the server must check protocolHash (AEX-040): {}", r.describe()));
        }
        if !r.is_agora_failure() {
            return Err(Stop::Finding(unsupported_reply_finding(&r)));
        }
        match r.error() {
            Some(e) if e.eq_ignore_ascii_case("unsupported protocol") => Ok(()),
            other => {
                ctx.warn(format!("error is {}, not \"Unsupported protocol\" (AEX-041, AEX-A10)", crate::finding::json(&other)));
                Ok(())
            }
        }
    }),
    case!("unknown-hash-with-sources", "an unknown protocol sent with its text is adopted or refused as unsupported", ["AEX-042"], May, false, |ctx| {
        let text = format!("name: harness probe\ndescription: probe {}\nmultiround: false\n---\nAnything goes.\n", reference_impl::wire::new_id());
        let r = post(ctx, "", &json!({"protocolHash": sha1_hex(text.as_bytes()), "protocolSources": [text], "body": "ping"})).await?;
        if r.is_success() || r.is_agora_failure() {
            ctx.note(format!("unknown protocol with sources: {}", r.describe()));
            Ok(())
        } else if r.is_client_error() && refuses_as_unsupported(&r) {
            // Refused as unsupported, in the form the unsupported-protocol case judges.
            ctx.finding(unsupported_reply_finding(&r));
            Ok(())
        } else {
            fail(format!("expected success or \"Unsupported protocol\", got {}", r.describe()))
        }
    }),
    case!("malformed-hash", "a protocolHash that is not 40 hex digits is rejected (an HTTP 4xx or status failure)", ["AEX-040"], Must, false, |ctx| {
        control(ctx).await?;
        let r = post(ctx, "", &json!({"protocolHash": "xyz", "body": "ping"})).await?;
        expect_rejected(ctx, &r, "protocolHash \"xyz\"")
    }),
    case!("protocol-level-error", "a body that breaks the protocol document draws status success with the error inside body", ["AEX-053", "AEX-054"], Must, false, |ctx| {
        let fx = fixture(ctx).await?;
        let Some(bad) = fx.invalid_body.clone() else {
            return skip("no body known to break the target's protocol (set [agora-exchange] invalid_body)");
        };
        let r = post(ctx, "", &json!({"protocolHash": fx.hash, "body": bad})).await?;
        fixture_refused(ctx, &fx, &r)?;
        expect_success(&r, "protocol-level error")?;
        let body = r.get("body").cloned().unwrap_or(Value::Null);
        if body.is_null() {
            return fail("the protocol-level error is not described in body (AEX-054)");
        }
        if fx.echo && !body["error"].is_string() {
            return fail(format!("the echo protocol prescribes body.error; got body {body} (AEX-054)"));
        }
        Ok(())
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
    case!("malformed-json", "malformed JSON draws HTTP 400; a JSON request that is not an object draws an HTTP 4xx", ["AEX-048", "AEX-049"], Must, false, |ctx| {
        let array = post_unreadable(ctx, "", b"[]".to_vec()).await?;
        let syntax = post_unreadable(ctx, "", b"{not json".to_vec()).await?;
        let is_2xx = |r: &Reply| (200..300).contains(&r.http);
        // One finding per thing the target did: both answered with a 2xx is one
        // deviation (a request it cannot read taken as read), not two.
        let mut in_2xx = Vec::new();
        if !array.is_client_error() && is_2xx(&array) {
            in_2xx.push(format!("a JSON array as the request drew {}", array.describe()));
        }
        if syntax.http != 400 && is_2xx(&syntax) {
            in_2xx.push(format!("malformed JSON drew {}", syntax.describe()));
        }
        if !in_2xx.is_empty() {
            own(ctx, rules::MALFORMED_JSON_2XX.found(format!("{}: a request the server cannot read was answered with a 2xx, not an HTTP 4xx (400 for malformed JSON, agora-exchange.txt §10.1)", in_2xx.join("; ")),
            ));
        }
        if !array.is_client_error() && !is_2xx(&array) {
            own(ctx, rules::MALFORMED_JSON_NOT_OBJECT.found(format!("a JSON array as the request drew {}, not an HTTP 4xx", array.describe())));
        } else if array.is_client_error() && array.http != 400 {
            ctx.note(format!("a JSON array as the request drew HTTP {} (any 4xx is accepted: the spec names no code for it)", array.http));
        }
        if syntax.http != 400 && !is_2xx(&syntax) {
            own(ctx, rules::MALFORMED_JSON_STATUS.found(format!("malformed JSON drew {}; agora-exchange.txt §10.1 names 400 Bad Request for it", syntax.describe())));
        }
        claim(ctx, &[&rules::REPLY_ERROR_CONTENT_TYPE]);
        Ok(())
    }),
    case!("unknown-endpoint", "a POST to an unknown endpoint draws HTTP 404", ["AEX-050"], Fact, false, |ctx| {
        let r = post(ctx, "h-no-such-endpoint", &json!({"protocolHash": null, "body": "ping"})).await?;
        if r.http != 404 {
            return fail(format!("an unknown endpoint drew {}", r.describe()));
        }
        Ok(())
    }),
    case!("https-transport", "exchanges run over HTTPS (plain http:// is informational outside production)", ["AEX-001", "AEX-002"], Must, false, |ctx| {
        let r = post(ctx, "", &json!({"protocolHash": null, "body": "ping"})).await?;
        if ctx.url.to_ascii_lowercase().starts_with("https://") {
            // The exchange went over TLS: an https:// request never falls back to plain
            // text, and the harness checked the certificate as the run trusts (none
            // under --insecure). One more handshake says what was negotiated.
            let tls = ctx.shared.tls.clone();
            let verified = if tls.verifies() {
                format!("the certificate verified against {}", tls.trust())
            } else {
                "the certificate was not verified (--insecure)".to_string()
            };
            match tls.handshake(&ctx.url, ctx.limits().timeout).await {
                Ok(h) => ctx.checked(format!(
                    "{} over TLS ({}, {}, ALPN {}); {verified}",
                    r.describe(),
                    h.version,
                    h.cipher_suite,
                    h.alpn.as_deref().unwrap_or("none")
                )),
                Err(e) => {
                    ctx.checked(format!("{} over TLS; {verified}", r.describe()));
                    ctx.note(format!("a second handshake, to read what TLS negotiated, failed: {e}"));
                }
            }
            if !tls.verifies() {
                ctx.note("informational: under --insecure the certificate is not judged; --ca-file or the platform's roots judge it");
            }
            return Ok(());
        }
        if ctx.profile().agora_exchange.production {
            return fail("the target is reached over plain http:// in a production profile (AEX-002)");
        }
        ctx.note("informational: the target is reached over plain http://; agora-exchange.txt requires HTTPS in production (AEX-A16)");
        Ok(())
    }),
];

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

/// The suite's JSON Schemas (schemas/agora-exchange/), by name, built into the binary.
const SCHEMAS: &[(&str, &str)] = &[
    (
        "request",
        include_str!("../../../../schemas/agora-exchange/request.schema.json"),
    ),
    (
        "response",
        include_str!("../../../../schemas/agora-exchange/response.schema.json"),
    ),
    (
        "wellknown",
        include_str!("../../../../schemas/agora-exchange/wellknown.schema.json"),
    ),
];

/// The client's side (`run --role client`): the harness is the server, the client
/// driver runs scenario `single` or `conversation` against it.
pub const CLIENT_CASES: &[Case] = &[
    client_case!("client-single", "a single-round request: POSTed to the base URL as application/json, with the body and protocolHash given", ["AEX-003", "AEX-005", "AEX-007", "AEX-008", "AEX-013", "AEX-015"], Must, |ctx| {
        let input = json!({"body": {"text": "hello from the harness"}, "protocolHash": echo_hash()});
        let run = crate::counterparty::drive(ctx, "single", &input, server(Serve::Plain), crate::suites::agora_exchange::expect::defined).await?;
        let first = client_request(ctx, &run, 0, "/")?;
        if first["body"] != input["body"] || first["protocolHash"] != input["protocolHash"] {
            return fail(format!("the request carries body {} and protocolHash {}, not the scenario's {} and {}", first["body"], first["protocolHash"], input["body"], input["protocolHash"]));
        }
        ctx.checked("the request carries the scenario's body and protocolHash");
        client_completed(ctx, &run, &[json!({"echo": input["body"]})])
    }),
    client_case!("client-conversation", "a conversation: multiround true, then follow-ups POSTed to /conversations/{id} without protocolHash", ["AEX-018", "AEX-024", "AEX-029", "AEX-030"], Must, |ctx| {
        let input = json!({"body": "first", "protocolHash": echo_hash(), "followups": ["second", {"n": 3}]});
        let run = crate::counterparty::drive(ctx, "conversation", &input, server(Serve::Plain), crate::suites::agora_exchange::expect::defined).await?;
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
        let run = crate::counterparty::drive(ctx, "conversation", &input, server(Serve::DeclineConversation), crate::suites::agora_exchange::expect::defined).await?;
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
        let run = crate::counterparty::drive(ctx, "conversation", &input, server(Serve::ExpireOnFollowUp), crate::suites::agora_exchange::expect::defined).await?;
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
        let run = crate::counterparty::drive(ctx, "conversation", &input, server(Serve::ExpiredOnOpen), crate::suites::agora_exchange::expect::defined).await?;
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
    let run = crate::counterparty::drive(
        ctx,
        "single",
        &input,
        server(plan),
        crate::suites::agora_exchange::expect::defined,
    )
    .await?;
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
        ctx.finding(rules::CLIENT_CONTENT_TYPE.found(why));
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
