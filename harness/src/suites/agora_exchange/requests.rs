//! Request fields (agora-exchange.txt §6.1): the single-round cases on bodies, members
//! and headers, and the fuzzer's requests with what the spec fixes for each (and how a
//! reply is judged against it).

use super::documents::{
    random_hash, Fx, HashVal, PROTOCOL_HASH_FORM, REQUEST_PROTOCOL_HASH_OPTIONAL,
    UNSUPPORTED_PROTOCOL_REPLY,
};
use super::errors::{claim, expect_success, no_server_error, rejected_row};
use super::replies::{
    Reply, FAILURE_SHAPE_RULES, REFUSED, REPLY_BODY_TYPE, REPLY_CONTENT_TYPE,
    REPLY_CONVERSATION_ID, REPLY_DUPLICATE_MEMBER, REPLY_NOT_JSON, REPLY_NOT_OBJECT, REPLY_STATUS,
    REPLY_STATUS_CASE,
};
use super::wire::{control, post, post_bytes, request_routes, REQUEST_PROTOCOL_SOURCES_OPTIONAL};
use crate::case::{fail, skip, Bindings, Case, Level, Stop};
use crate::drive::Transport;
use crate::finding::quote;
use crate::fuzzing::mutate::Val;
use crate::fuzzing::verdict::{
    self, about, finding, Codes, Expected, FuzzFinding, FuzzStep, FuzzStop, Observed, Oracle,
};
use crate::rules::{rules, Rule};
use arbitrary::Arbitrary;
use reference_impl::agora_exchange::document::is_sha1_hex;
use serde_json::{json, Value};

rules! {
    BODY_FORMATS {
        key: "agora-exchange/body-formats",
        requirements: &["AEX-014"],
        level: Some(Level::May),
        owner: "agora-exchange/body-formats",
        summary: "without a protocol, an empty, a Unicode and a nested body draw no transport error",
        fails: "one or more of the bodies drew a status other than HTTP 200 (each named)",
        passes: "HTTP 200 for each",
    }
    MISSING_BODY {
        key: "agora-exchange/missing-body",
        requirements: &["AEX-008"],
        level: Some(Level::Must),
        owner: "agora-exchange/missing-body",
        summary: "a request without body is rejected (an HTTP 4xx or status failure), never answered with success",
        fails: "one or more requests without body were taken (each named with its route: protocolHash null and an empty object to POST /, an empty object as a follow-up)",
        passes: "an HTTP 4xx or HTTP 200 with status failure for each",
    }
}

/// The rules that are the subject of the single-round case.
pub static SHAPE_RULES: &[&Rule] = &[
    &REPLY_CONTENT_TYPE,
    &REPLY_NOT_JSON,
    &REPLY_NOT_OBJECT,
    &REPLY_DUPLICATE_MEMBER,
    &REPLY_STATUS,
    &REPLY_STATUS_CASE,
    &REPLY_BODY_TYPE,
];

/// The cases of this area, in the order they run.
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
        claim(ctx, &[&REPLY_CONVERSATION_ID]);
        match refused.as_slice() {
            [] => Ok(()),
            [(form, r)] => Err(Stop::Finding(REQUEST_PROTOCOL_HASH_OPTIONAL.found(format!(
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
        ctx.rows_wrong(&BODY_FORMATS, "bodies drew a transport error", &wrong);
        Ok(())
    }),
    case!("missing-body", "requests without body are rejected (an HTTP 4xx or status failure), never answered with success", ["AEX-008"], Must, false, |ctx| {
        control(ctx).await?;
        let mut taken = Vec::new();
        for (route, path) in request_routes(ctx).await? {
            // A follow-up's protocolHash is the conversation's: only {} there.
            let reqs = if path.is_empty() { vec![json!({"protocolHash": null}), json!({})] } else { vec![json!({})] };
            for req in reqs {
                let r = post(ctx, &path, &req).await?;
                taken.extend(rejected_row(ctx, &r, &format!("{route}: request {req}"))?);
            }
        }
        ctx.rows_wrong(&MISSING_BODY, "requests without body were not rejected", &taken);
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
];

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum Template {
    #[default]
    Plain,
    PlainMulti,
    Echo,
    EchoMulti,
    EchoInvalid,
    EchoWithSources,
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum Mutation {
    #[default]
    Keep,
    Hash(HashVal),
    RemoveHash,
    RemoveBody,
    Body(Val),
    Text(Val),
    Multiround(Val),
    Extra(u8, Val),
    Sources(Val),
    NotAnObject(Val),
}

pub(super) fn template(t: Template, fx: &Fx) -> Value {
    let valid = fx.valid_body.clone();
    match t {
        Template::Plain => json!({"protocolHash": null, "body": "ping"}),
        Template::PlainMulti => json!({"body": {"q": "start"}, "multiround": true}),
        Template::Echo => json!({"protocolHash": fx.hash, "body": valid}),
        Template::EchoMulti => json!({"protocolHash": fx.hash, "body": valid, "multiround": true}),
        Template::EchoInvalid if fx.echo => json!({"protocolHash": fx.hash, "body": {"txt": 1}}),
        Template::EchoInvalid => json!({"protocolHash": fx.hash, "body": valid}),
        Template::EchoWithSources => match &fx.text {
            Some(text) => {
                json!({"protocolHash": fx.hash, "protocolSources": [text], "body": valid})
            }
            None => json!({"protocolHash": fx.hash, "body": valid}),
        },
    }
}

pub(super) fn mutate(req: &mut Value, m: &Mutation, fx: &Fx) {
    let set = |req: &mut Value, k: &str, v: Value| {
        if let Some(o) = req.as_object_mut() {
            o.insert(k.to_string(), v);
        }
    };
    let remove = |req: &mut Value, k: &str| {
        if let Some(o) = req.as_object_mut() {
            o.remove(k);
        }
    };
    match m {
        Mutation::Keep => {}
        Mutation::Hash(h) => {
            let v = match h {
                HashVal::Unknown => json!(random_hash()),
                HashVal::Uppercase => json!(fx.hash.to_ascii_uppercase()),
                HashVal::Short => json!(fx.hash.chars().take(39).collect::<String>()),
                HashVal::NonHex => {
                    json!(format!("{}g", fx.hash.chars().take(39).collect::<String>()))
                }
                HashVal::Null => Value::Null,
                HashVal::Other(v) => v.json(),
            };
            set(req, "protocolHash", v);
        }
        Mutation::RemoveHash => remove(req, "protocolHash"),
        Mutation::RemoveBody => remove(req, "body"),
        Mutation::Body(v) => set(req, "body", v.json()),
        Mutation::Text(v) => set(req, "body", json!({"text": v.json()})),
        Mutation::Multiround(v) => set(req, "multiround", v.json()),
        Mutation::Extra(i, v) => set(req, &format!("x-fuzz-{}", i % 4), v.json()),
        Mutation::Sources(v) => set(req, "protocolSources", v.json()),
        Mutation::NotAnObject(v) => *req = v.json(),
    }
}

/// What a success must show: for the echo protocol, the protocol-level error
/// inside `body` (`protocol_error`); conversation fields only when a conversation
/// was asked for (`multiround`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Success {
    pub(super) protocol_error: bool,
    pub(super) multiround: bool,
}

/// The one refusal agora-exchange.txt gives a form: HTTP 200 with status failure,
/// an Agora-level error (AEX-040, AEX-052). Any refusal is that or a 4xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    AgoraFailure,
}

/// What the spec fixes for a request, and for an invalid one the key (a rule's or a
/// case's) of the conformance case whose subject its invalidity is: a fuzz finding
/// on it is filed under that key, as `run` files the same deviation. A valid
/// request's refusal has no such key: what the target refused it for is not known.
pub(super) struct Expect {
    pub(super) want: Expected<Success, Refusal>,
    pub(super) subject: Option<&'static str>,
    /// The request as sent, whose members name the rule a refusal of it breaks
    /// when it is valid ([`refused_key`]).
    pub(super) request: Value,
}

pub(super) fn expect_for(req: &Value, fx: &Fx, conversation_hash: Option<Option<&str>>) -> Expect {
    let (want, subject) = verdict_for(req, fx, conversation_hash);
    Expect {
        want,
        subject,
        request: req.clone(),
    }
}

/// The rule of `run` a refusal of the valid `request` breaks when it names a member
/// the request left out (protocolSources, protocolHash: both optional, AEX-015,
/// AEX-016) or carried beyond the spec's (extra members are ignored, AEX-019).
pub(super) fn named_member(request: &Value, r: &Reply) -> Option<&'static str> {
    // The reply's text without escapes, in lower case: a member is named when it
    // stands quoted whole ("protocolHash", 'x-fuzz-0'), not inside another name.
    let said = r
        .json
        .as_ref()
        .map(|j| j.to_string().to_ascii_lowercase().replace('\\', ""))
        .unwrap_or_default();
    let names = |k: &str| {
        let k = k.to_ascii_lowercase();
        said.contains(&format!("\"{k}\"")) || said.contains(&format!("'{k}'"))
    };
    let lacks = |k: &str| request.get(k).is_none();
    let extra = request
        .as_object()
        .into_iter()
        .flatten()
        .any(|(k, _)| !KNOWN_MEMBERS.contains(&k.as_str()) && names(k));
    // A member left out that the refusal names is the stronger word: a refusal
    // may quote the whole request, extra members and all.
    if lacks("protocolSources") && names("protocolSources") {
        return Some(REQUEST_PROTOCOL_SOURCES_OPTIONAL.key);
    }
    if lacks("protocolHash") && names("protocolHash") {
        return Some(REQUEST_PROTOCOL_HASH_OPTIONAL.key);
    }
    extra.then_some(EXTRA_FIELDS_IGNORED)
}

/// A refusal of a valid request keyed by the target's words, as every case files
/// a refused control (`control`).
pub(super) fn refused_key(r: &Reply) -> String {
    let status = r
        .status()
        .map(String::from)
        .unwrap_or_else(|| format!("HTTP {}", r.http));
    crate::rules::refusal(
        (&REFUSED, "agora-exchange", &[]),
        &status,
        r.error().unwrap_or_default(),
        "a valid request",
    )
    .key
    .to_string()
}

/// The members agora-exchange.txt gives a request (§6.1).
const KNOWN_MEMBERS: [&str; 4] = ["protocolHash", "protocolSources", "body", "multiround"];

/// The cases of `run` whose subject is the deviation.
const EXTRA_FIELDS_IGNORED: &str = "agora-exchange/extra-fields-ignored";

pub(super) const PROTOCOL_LEVEL_ERROR: &str = "agora-exchange/protocol-level-error";

pub(super) const SINGLE_ROUND: &str = "agora-exchange/single-round";

/// What a request draws, and the rule whose key names a refusal of it.
type FuzzVerdict = (Expected<Success, Refusal>, Option<&'static str>);

/// A refusal, of any code, that the rule `subject` asks for.
fn rejected(subject: &'static str) -> FuzzVerdict {
    (Expected::Reject(Codes::Any), Some(subject))
}

fn open(why: &str) -> FuzzVerdict {
    (Expected::Open(why.into()), None)
}

/// The members a request is judged by, as the spec types them (its body,
/// multiround and protocolHash), or the verdict of a request that breaks them.
fn members(req: &Value) -> Result<(&Value, bool, Option<&str>), FuzzVerdict> {
    let Some(o) = req.as_object() else {
        return Err(rejected("agora-exchange/malformed-json:not-object"));
    };
    let Some(body) = o.get("body") else {
        return Err(rejected("agora-exchange/missing-body"));
    };
    if !(body.is_string() || body.is_object()) {
        return Err(open(
            "the spec gives body no other type, nor a verdict for one",
        ));
    }
    let multiround = match o.get("multiround") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(open("multiround is not a boolean")),
    };
    match o.get("protocolSources") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        Some(_) => return Err(open("protocolSources is not an array of strings")),
    }
    let hash = match o.get("protocolHash") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(rejected("agora-exchange/malformed-hash")),
    };
    Ok((body, multiround, hash))
}

fn verdict_for(req: &Value, fx: &Fx, conversation_hash: Option<Option<&str>>) -> FuzzVerdict {
    let (body, multiround, hash) = match members(req) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let protocol = match conversation_hash {
        // A follow-up: naming another protocol is malformed (AEX-031).
        Some(orig) => match (hash, orig) {
            (None, o) => o,
            (Some(h), Some(o)) if h.eq_ignore_ascii_case(o) => Some(o),
            (Some(_), _) => return rejected("agora-exchange/protocol-change-rejected"),
        },
        None => hash,
    };
    // A follow-up's reply names its conversation.
    let multiround = multiround || conversation_hash.is_some();
    let Some(h) = protocol else {
        let success = Success {
            protocol_error: false,
            multiround,
        };
        return (Expected::Accept(success, Codes::none()), None);
    };
    if !is_sha1_hex(h) {
        // The target's own published form (its /wellknown keys) that is no SHA1 hex
        // is the rule protocol-hash:form's deviation, not the request's.
        if fx.known.contains(&h.to_ascii_lowercase()) || fx.hash.eq_ignore_ascii_case(h) {
            return (
                Expected::Open("the target's own hash form".into()),
                Some(PROTOCOL_HASH_FORM.key),
            );
        }
        return rejected("agora-exchange/malformed-hash");
    }
    if !fx.known.contains(&h.to_ascii_lowercase()) {
        // Sent with sources, an unknown protocol may be adopted (AEX-042).
        return if req.get("protocolSources").is_some_and(Value::is_array) {
            open("an unknown protocol sent with sources may be adopted (AEX-042)")
        } else {
            (
                Expected::Reject(Codes::OneOf(vec![Refusal::AgoraFailure])),
                Some("agora-exchange/unsupported-protocol"),
            )
        };
    }
    if !h.eq_ignore_ascii_case(&fx.hash) || !fx.echo {
        return open("the outcome of a protocol other than echo is the target's");
    }
    let protocol_error = !body.get("text").is_some_and(Value::is_string);
    let success = Success {
        protocol_error,
        multiround,
    };
    (Expected::Accept(success, Codes::none()), None)
}

/// Judges a reply against what the spec fixes for its request; a finding is filed
/// under the request's subject.
pub(super) fn judge_expected(r: &Reply, e: Expect, what: &str) -> FuzzStep<()> {
    if let (true, Some(subject), Expected::Reject(_)) = (r.http >= 500, e.subject, &e.want) {
        let found = finding(
            Oracle::Verdict,
            format!(
                "{what}, which the spec rejects, drew {}: an HTTP 4xx or an Agora failure is due",
                r.describe()
            ),
        );
        return verdict::under(Some(subject), found);
    }
    no_server_error(r)?;
    let valid = match &e.want {
        Expected::Accept(s, _) => Some(s.protocol_error),
        _ => None,
    };
    let judged = judge_verdict(r, e.want, what);
    if let (Some(protocol_error), false) = (valid, r.is_success()) {
        // A valid request refused: a protocol-level error answered as a failure is
        // the protocol-level-error case's (AEX-053); else the rule of what the
        // refusal names.
        let key = match named_member(&e.request, r) {
            Some(rule) => rule.to_string(),
            None if protocol_error => PROTOCOL_LEVEL_ERROR.to_string(),
            None => refused_key(r),
        };
        return verdict::under(Some(&key), judged);
    }
    verdict::under(e.subject, judged)
}

fn judge_verdict(r: &Reply, want: Expected<Success, Refusal>, what: &str) -> FuzzStep<()> {
    let got = if r.is_success() {
        Observed::Carried
    } else if r.is_agora_failure() {
        Observed::Refused(Some(Refusal::AgoraFailure))
    } else if r.is_client_error() {
        Observed::Refused(None)
    } else {
        // Neither a success nor a refusal the spec knows (a 3xx, a 2xx other than 200).
        if matches!(want, Expected::Open(_)) {
            return Ok(());
        }
        return finding(
            Oracle::Verdict,
            format!("{what}: neither a success nor a refusal: {}", r.describe()),
        );
    };
    let oracles = (Oracle::Verdict, Oracle::Verdict);
    let judged = verdict::judge(&want, &got, oracles, || r.describe());
    // A refusal without the form the spec names is a verdict finding here
    // (AEX-040, AEX-052), not an error code.
    let judged = match judged {
        Err(FuzzStop::Found(f)) if f.oracle == Oracle::ErrorCode => {
            Err(FuzzStop::Found(FuzzFinding {
                oracle: Oracle::Verdict,
                detail: format!(
                    "{} (HTTP 200 with status failure, AEX-040, AEX-052)",
                    f.detail
                ),
                // The one coded refusal is of an unsupported protocol: its reply's
                // form is that rule's (AEX-041, AEX-052).
                key: Some(UNSUPPORTED_PROTOCOL_REPLY.key.into()),
            }))
        }
        other => other,
    };
    let Some(&Success {
        protocol_error,
        multiround,
    }) = about(what, judged)?
    else {
        return Ok(());
    };
    let verdict = || format!("{what}: {}", r.describe());
    let body = r.get("body").cloned().unwrap_or(Value::Null);
    if protocol_error && !body["error"].is_string() {
        let found = finding(
            Oracle::Verdict,
            format!("the echo protocol puts a protocol-level error in body.error (AEX-053, AEX-054); {}", verdict()),
        );
        return verdict::under(Some(PROTOCOL_LEVEL_ERROR), found);
    }
    // conversationExpires beside a conversationId is the reply checks' rule
    // (`reply:conversation-expires`, judged in `post`).
    let conv = r.get("conversationId").is_some();
    if !multiround && (conv || r.get("conversationExpires").is_some()) {
        let found = finding(
            Oracle::Verdict,
            format!(
                "a single-round reply carries conversation fields (AEX-022, AEX-025); {}",
                verdict()
            ),
        );
        return verdict::under(Some(SINGLE_ROUND), found);
    }
    Ok(())
}
