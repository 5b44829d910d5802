//! Live fuzzing of agora-exchange (agora-exchange.txt): requests built from the
//! target's own protocol fixture, mutated field by field, respelled, or edited byte
//! by byte; follow-ups in live conversations; `/wellknown` read back.
//!
//! Oracles, beyond the reply checks every case makes (`suites::agora_exchange::expect::read_reply`:
//! JSON object, status word, failure shape, Content-Type, conversation members; a
//! failing finding it reads past fails the fuzz case):
//! - never a 5xx;
//! - the verdict the spec fixes for the request as sent: success for a well-formed
//!   request (extra members are ignored, AEX-019), HTTP 200 with status failure for
//!   an unsupported protocol (AEX-040, AEX-052), a rejection (any 4xx or a 200
//!   failure) for a missing body or a malformed hash (AEX-008, AEX-040), HTTP 400 for
//!   malformed JSON that draws a 4xx (AEX-049), and for the echo protocol the protocol-level
//!   error inside `body` (AEX-053, AEX-054); where the spec leaves the choice open
//!   the verdict is not judged;
//! - conversation fields only on multi-round replies (AEX-022, AEX-025);
//!   `conversationExpires` beside every `conversationId` is the reply checks' rule;
//! - follow-ups: an unknown conversation is never a success (AEX-035), another
//!   `protocolHash` is rejected (AEX-031);
//! - a respelled request gets the verdict of its canonical twin;
//! - every `/wellknown` key is the SHA1 of its document and each document's metadata
//!   parses, by the wellknown case's rules (`expect::document_findings`: AEX-036 to
//!   AEX-038).

use crate::drive::Transport;
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, Val, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{
    self, about, finding, skip, Codes, Expected, FuzzFinding, FuzzFuture, FuzzStep, FuzzStop,
    Observed, Oracle,
};
use crate::suites::agora_exchange::expect::{
    conversation_path, document_findings, fixture, follow_up_finding, post_bytes, post_unreadable,
    random_hash, unknown_conversation_finding, wellknown, Reply,
};
use crate::suites::agora_exchange::rules;
use arbitrary::Arbitrary;
use reference_impl::agora_exchange::document::{is_sha1_hex, ECHO_DOCUMENT};
use serde_json::{json, Value};

pub static SPEC: Spec = Spec {
    transports: &[Transport::Http],
    case: case_fn,
    probe: probe_fn,
    resend: Some(resend_fn),
    kinds: &[],
    unreachable: &[
        (
            "ignore-expiry",
            "needs a wait past conversationExpires; the conversation-expiry case waits, the fuzzer does not",
        ),
        (
            "non-post-empty-200",
            "the fuzzer POSTs every request; other methods are the post-only case's",
        ),
    ],
    connection_per_worker: false,
    workers: crate::fuzzing::spec::WORKERS,
};

fn case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(one_case(f))
}

/// Sends an input alone (to shrink it) and judges it as a fresh request: the
/// verdict of what it says, or as a request the target cannot read. A follow-up's
/// input, sent alone, is judged as a new exchange's would be at its URL; one that
/// needs its conversation no longer shows its signature and is kept as sent.
fn resend_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let fx = fx(f).await?;
        let bytes = f.sent.clone();
        let path = f
            .resend_to
            .as_deref()
            .and_then(|u| u.strip_prefix(f.ctx.url.trim_end_matches('/')))
            .unwrap_or("")
            .trim_start_matches('/')
            .to_string();
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) if v.is_object() && path.is_empty() => {
                let r = post(f, "", bytes).await?;
                judge(&r, expect_for(&v, &fx, None), "the input sent alone")
            }
            Ok(v) if v.is_object() => {
                // A follow-up needs its conversation: only what the reply checks
                // and the crash classes see is judged.
                let r = post(f, &path, bytes).await?;
                no_server_error(&r)
            }
            _ => {
                post_unreadable_judged(f, &path, bytes, ("the input sent alone", path.is_empty()))
                    .await
            }
        }
    })
}

fn probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let r = send(f, "", json!({"body": "ping"})).await?;
        if r.is_success() {
            Ok(())
        } else {
            finding(
                Oracle::Liveness,
                format!("a plain request drew {}", r.describe()),
            )
        }
    })
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum Template {
    #[default]
    Plain,
    PlainMulti,
    Echo,
    EchoMulti,
    EchoInvalid,
    EchoWithSources,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum HashVal {
    #[default]
    Unknown,
    Uppercase,
    Short,
    NonHex,
    Null,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum Mutation {
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

#[derive(Debug, Clone, Default, Arbitrary)]
enum FollowUp {
    #[default]
    Valid,
    UnknownId,
    OtherHash,
    SameHashUppercase,
    Extra(Val),
    Body(Val),
    Raw(Vec<ByteEdit>),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum Kind {
    #[default]
    Wellknown,
    Request(Template, Vec<Mutation>),
    Raw(Template, Vec<ByteEdit>),
    Spelling(Template, WireForm),
    FollowUp(bool, FollowUp),
}

/// The protocol fixture, learnt once per run.
struct Fx {
    hash: String,
    /// Every hash /wellknown lists (lowercase).
    known: Vec<String>,
    text: Option<String>,
    /// Whether the fixture is the agentconform echo protocol, whose rules are known.
    echo: bool,
    valid_body: Value,
}

async fn fx(f: &mut FuzzCtx) -> FuzzStep<Fx> {
    let memo = match f.recall() {
        Some(m) => m,
        None => {
            let fixture = fixture(&mut f.ctx).await?;
            let known: Vec<String> = match wellknown(&mut f.ctx).await? {
                Some(m) => m.keys().map(|k| k.to_ascii_lowercase()).collect(),
                None => vec![fixture.hash.to_ascii_lowercase()],
            };
            let m = json!({"hash": fixture.hash, "known": known, "text": fixture.text,
                           "valid_body": fixture.valid_body});
            f.remember(m.clone());
            m
        }
    };
    let echo = reference_impl::agora_exchange::document::ProtocolDocument::new(ECHO_DOCUMENT);
    let hash = memo["hash"].as_str().unwrap_or_default().to_string();
    Ok(Fx {
        echo: hash.eq_ignore_ascii_case(&echo.hash),
        known: memo["known"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        text: memo["text"].as_str().map(String::from),
        valid_body: memo["valid_body"].clone(),
        hash,
    })
}

fn template(t: Template, fx: &Fx) -> Value {
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

fn mutate(req: &mut Value, m: &Mutation, fx: &Fx) {
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
struct Success {
    protocol_error: bool,
    multiround: bool,
}

/// The one refusal agora-exchange.txt gives a form: HTTP 200 with status failure,
/// an Agora-level error (AEX-040, AEX-052). Any refusal is that or a 4xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    AgoraFailure,
}

/// What the spec fixes for a request, and for an invalid one the key (a rule's or a
/// case's) of the conformance case whose subject its invalidity is: a fuzz finding
/// on it is filed under that key, as `run` files the same deviation. A valid
/// request's refusal has no such key: what the target refused it for is not known.
struct Expect {
    want: Expected<Success, Refusal>,
    subject: Option<&'static str>,
    /// The request as sent, whose members name the rule a refusal of it breaks
    /// when it is valid ([`refused_key`]).
    request: Value,
}

fn expect_for(req: &Value, fx: &Fx, conversation_hash: Option<Option<&str>>) -> Expect {
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
fn named_member(request: &Value, r: &Reply) -> Option<&'static str> {
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
        return Some(rules::REQUEST_PROTOCOL_SOURCES_OPTIONAL.key);
    }
    if lacks("protocolHash") && names("protocolHash") {
        return Some(rules::REQUEST_PROTOCOL_HASH_OPTIONAL.key);
    }
    extra.then_some(EXTRA_FIELDS_IGNORED)
}

/// A refusal of a valid request keyed by the target's words, as every case files
/// a refused control (`expect::control`).
fn refused_key(r: &Reply) -> String {
    let status = r
        .status()
        .map(String::from)
        .unwrap_or_else(|| format!("HTTP {}", r.http));
    crate::rules::refusal(
        (&rules::REFUSED, "agora-exchange", &[]),
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
const PROTOCOL_LEVEL_ERROR: &str = "agora-exchange/protocol-level-error";
const SINGLE_ROUND: &str = "agora-exchange/single-round";

/// What a request draws, and the rule whose key names a refusal of it.
type Verdict = (Expected<Success, Refusal>, Option<&'static str>);

/// A refusal, of any code, that the rule `subject` asks for.
fn rejected(subject: &'static str) -> Verdict {
    (Expected::Reject(Codes::Any), Some(subject))
}

fn open(why: &str) -> Verdict {
    (Expected::Open(why.into()), None)
}

/// The members a request is judged by, as the spec types them (its body,
/// multiround and protocolHash), or the verdict of a request that breaks them.
fn members(req: &Value) -> Result<(&Value, bool, Option<&str>), Verdict> {
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

fn verdict_for(req: &Value, fx: &Fx, conversation_hash: Option<Option<&str>>) -> Verdict {
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
                Some(rules::PROTOCOL_HASH_FORM.key),
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

/// POSTs `bytes` and applies the reply checks `run` applies (`expect::check_reply`:
/// its shape, a failure's string error, its Content-Type), whose first failing
/// finding stops the case. A 5xx is judged by the caller ([`judge`],
/// [`no_server_error`]): to a request the spec rejects it is the rule of that
/// request's subject, as in `run`; else a crash.
async fn post(f: &mut FuzzCtx, path: &str, bytes: Vec<u8>) -> FuzzStep<Reply> {
    let from = f.ctx.findings().len();
    let r = post_bytes(&mut f.ctx, path, bytes, &[]).await?;
    if r.http < 500 {
        verdict::rules_since(&f.ctx, from)?;
    }
    Ok(r)
}

/// Never a 5xx.
fn no_server_error(r: &Reply) -> FuzzStep<()> {
    if r.http >= 500 {
        return finding(
            Oracle::ServerError,
            format!("the target answered {}", r.describe()),
        );
    }
    Ok(())
}

async fn send(f: &mut FuzzCtx, path: &str, req: Value) -> FuzzStep<Reply> {
    let bytes = serde_json::to_vec(&req).unwrap_or_default();
    f.fuzzed(&bytes);
    post(f, path, bytes).await
}

/// Judges a reply against what the spec fixes for its request; a finding is filed
/// under the request's subject.
fn judge(r: &Reply, e: Expect, what: &str) -> FuzzStep<()> {
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
                key: Some(rules::UNSUPPORTED_PROTOCOL_REPLY.key.into()),
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

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let kind: Kind = f.draw();
    if let Kind::Wellknown = kind {
        return check_wellknown(f).await;
    }
    let fx = fx(f).await?;
    match kind {
        Kind::Wellknown => Ok(()),
        Kind::Request(t, muts) => {
            let mut req = template(t, &fx);
            for m in muts.iter().take(3) {
                mutate(&mut req, m, &fx);
            }
            if !req.is_object() {
                let bytes = serde_json::to_vec(&req).unwrap_or_default();
                f.fuzzed(&bytes);
                let what = ("a JSON request that is not an object", true);
                return post_unreadable_judged(f, "", bytes, what).await;
            }
            let want = expect_for(&req, &fx, None);
            let r = send(f, "", req).await?;
            judge(&r, want, "the mutated request")
        }
        Kind::Raw(t, edits) => {
            let bytes = serde_json::to_vec(&template(t, &fx)).unwrap_or_default();
            let bytes = edit_bytes(bytes, &edits);
            f.fuzzed(&bytes);
            match serde_json::from_slice::<Value>(&bytes) {
                // Still a JSON object: the verdict of what it now says.
                Ok(v) if v.is_object() => {
                    let r = post(f, "", bytes).await?;
                    judge(&r, expect_for(&v, &fx, None), "the edited request")
                }
                _ => post_unreadable_judged(f, "", bytes, ("malformed JSON", true)).await,
            }
        }
        Kind::Spelling(t, w) => {
            let req = template(t, &fx);
            let first = send(f, "", req.clone()).await?;
            no_server_error(&first)?;
            let bytes = respell(&req, w);
            f.fuzzed(&bytes);
            let second = post(f, "", bytes).await?;
            if (first.http, first.status()) != (second.http, second.status()) {
                return finding(
                    Oracle::WireForm,
                    format!(
                        "the canonical spelling drew {}, {w:?} drew {}",
                        first.describe(),
                        second.describe()
                    ),
                );
            }
            judge(
                &second,
                expect_for(&req, &fx, None),
                "the respelled request",
            )
        }
        Kind::FollowUp(echo, m) => follow_up(f, &fx, echo, m).await,
    }
}

async fn follow_up(f: &mut FuzzCtx, fx: &Fx, echo: bool, m: FollowUp) -> FuzzStep<()> {
    let t = if echo {
        Template::EchoMulti
    } else {
        Template::PlainMulti
    };
    let start = template(t, fx);
    let conv_hash = start["protocolHash"].as_str().map(String::from);
    let r = send(f, "", start.clone()).await?;
    judge(&r, expect_for(&start, fx, None), "the opening request")?;
    let Some(id) = r
        .get("conversationId")
        .and_then(Value::as_str)
        .map(String::from)
    else {
        return skip("the target declined multi-round mode (no conversationId; allowed, AEX-028)");
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
    judge(&r, want, "the follow-up")?;
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
            let r = post(f, path, bytes).await?;
            let want = expect_for(&v, fx, Some(conv_hash.as_deref()));
            judge(&r, want, "the edited follow-up")
        }
        _ => post_unreadable_judged(f, path, bytes, ("a malformed follow-up", false)).await,
    }
}

/// POSTs bytes the target cannot read as a request (no JSON, or JSON that is not an
/// object) as `run`'s malformed-json case does (`expect::post_unreadable`: the reply
/// judged by its status alone) and judges it as that case does ([`malformed_json`]).
async fn post_unreadable_judged(
    f: &mut FuzzCtx,
    path: &str,
    bytes: Vec<u8>,
    (what, status_too): (&str, bool),
) -> FuzzStep<()> {
    let from = f.ctx.findings().len();
    let syntax = serde_json::from_slice::<Value>(&bytes).is_err();
    let r = post_unreadable(&mut f.ctx, path, bytes).await?;
    malformed_json(&r, what, (syntax, status_too))?;
    verdict::rules_since(&f.ctx, from)
}

/// The reply to `what`, a request the target cannot read: never a 2xx (AEX-048,
/// the rule `malformed-json:2xx`); malformed JSON (`syntax`) draws HTTP 400
/// (§10.1, AEX-049; judged where `status_too`, and a 5xx always:
/// `malformed-json:status`); JSON that is not an object draws a 4xx
/// (`malformed-json:not-object`).
fn malformed_json(r: &Reply, what: &str, (syntax, status_too): (bool, bool)) -> FuzzStep<()> {
    if !syntax {
        if (200..300).contains(&r.http) || r.is_client_error() {
            return malformed_2xx(r, what);
        }
        let found = finding(
            Oracle::Verdict,
            format!("{what} drew {}, not an HTTP 4xx", r.describe()),
        );
        return verdict::under(Some(rules::MALFORMED_JSON_NOT_OBJECT.key), found);
    }
    if (200..300).contains(&r.http) {
        return malformed_2xx(r, what);
    }
    let found = if r.http >= 500 || (status_too && r.is_client_error() && r.http != 400) {
        finding(
            Oracle::Verdict,
            format!("{what} drew {}, not HTTP 400 (AEX-049)", r.describe()),
        )
    } else {
        Ok(())
    };
    verdict::under(Some(rules::MALFORMED_JSON_STATUS.key), found)
}

/// A request the target cannot read, answered with a 2xx (`malformed-json:2xx`);
/// a 4xx passes.
fn malformed_2xx(r: &Reply, what: &str) -> FuzzStep<()> {
    if !(200..300).contains(&r.http) {
        return Ok(());
    }
    let found = finding(
        Oracle::Verdict,
        format!(
            "{what} was answered with a 2xx, not an HTTP 4xx (AEX-048): {}",
            r.describe()
        ),
    );
    verdict::under(Some(rules::MALFORMED_JSON_2XX.key), found)
}

async fn check_wellknown(f: &mut FuzzCtx) -> FuzzStep<()> {
    // A fixed request, not a fuzzed input: its deviation is filed against it.
    let Some(map) = wellknown(&mut f.ctx).await? else {
        return Ok(());
    };
    // Judged by the rules of the wellknown case (`expect::document_findings`).
    let found = document_findings(&mut f.ctx, &map);
    verdict::first_failing(found)
}

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
pub static CLIENT_SPEC: Spec = Spec {
    transports: &[Transport::Http],
    case: client_case_fn,
    probe: client_probe_fn,
    resend: None,
    kinds: &[],
    unreachable: &[],
    connection_per_worker: false,
    workers: crate::fuzzing::spec::WORKERS,
};

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let input = client_input(false);
        let run = crate::counterparty::drive(
            &mut f.ctx,
            "single",
            &input,
            crate::suites::agora_exchange::expect::server(Serve::Plain),
            crate::suites::agora_exchange::expect::defined,
        )
        .await?;
        crate::fuzzing::client::ended_well(&run)?;
        crate::fuzzing::client::must_complete(&run, false, "a plain single request")
    })
}

use crate::suites::agora_exchange::expect::{client_content_type, client_follow_up, Serve};

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
    let answer = edit_answer(
        crate::suites::agora_exchange::expect::server(plan),
        which,
        c.edit.clone(),
        served.clone(),
    );
    let scenario = if c.conversation {
        "conversation"
    } else {
        "single"
    };
    let run = crate::counterparty::drive(
        &mut f.ctx,
        scenario,
        &input,
        answer,
        crate::suites::agora_exchange::expect::defined,
    )
    .await?;
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
