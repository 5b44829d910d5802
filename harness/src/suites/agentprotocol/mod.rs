//! The agentprotocol suite (agentprotocol.md), laid out by section: `wire` (Message
//! Format and Transport Bindings: endpoints, what was asked and answered),
//! `payloads` (a response's or an error's payload), `replies` (every reply check),
//! `handshake` (Handshake Flow and Capabilities: the case's own agent, `Me`, and
//! the hello checks), `errors` (Error Codes, and how the fuzzer judges a reply),
//! `messages` (Message Format), `requests` (Request/Response), `signatures`
//! (Signature Verification), and for the client role `counterpart` (the peer the
//! harness plays) and `requester`. Each area file holds its rules, its checks, its
//! cases and its fuzz generators side by side; this file holds the descriptor, the
//! hook `proxy` reads a recorded exchange with, and the fuzzer's draw over the
//! areas. The areas import each other downward only, in the order above.
//!
//! Every case runs over each binding the target offers (HTTP, WebSocket, files) and
//! judges its own subject. What every reply is held to (envelope, signature,
//! addressee, correlationId, error payload) is read by `replies::read_reply`, whose
//! findings are owned by one case each (hello, echo-request, unknown-action,
//! invalid-message, ids-unique); the other cases list them and go on. Silence is
//! never a pass: where no reply is the expected or an allowed answer, a liveness
//! probe on the same binding must be answered, or the case is blocked.
//!
//! Live fuzzing (`SPEC`, and `requester::CLIENT_SPEC` for the client role) over
//! HTTP and WebSocket. Every case is one fresh signing identity (`handshake::Me`), so the
//! per-sender rate limit never mixes cases: it says hello, then sends messages built
//! from templates (echo, delay, an unknown action, hello, notify), mutated field by
//! field (re-signed, or changed after signing), with signature edits, raw byte edits,
//! respellings, or short multi-step flows (a sequence, a burst, a request without
//! hello, two pipelined requests).
//!
//! The verdict for each message is computed from the message as sent: its problems,
//! each with the error codes it may draw. A hard problem fixes a rejection, a soft
//! one only allows it (the spec or its ambiguity treatment leaves the choice open);
//! as the spec fixes no order of checks, a message with several problems may draw
//! the code of any of them. Signed input follows three rules: a message whose signed
//! form changed after signing (no longer verifying) must be rejected; a mutated and
//! re-signed one is judged on its content alone; a respelling (key order, white
//! space, `\u` escapes) gets the verdict of its canonical spelling.
//!
//! A deviation is filed under the key `run` gives it: a message that must be
//! refused under the rules of its first hard problem (a signature that does not
//! hold first: reject-tampered, reject-wrong-key, unsigned-request; then
//! invalid-message, unknown-agent, unknown-action, timeout), for what the target
//! did (carried out, or refused with another code or not at all); a valid message
//! refused as `refused:<code>:<words>`, or under the rule that refusal breaks (a
//! delay within its timeout answered TIMEOUT, timeout:within-timeout). Where `run`
//! judges a rule only beside a valid request of the same sender carried out (its
//! control), the fuzzer sends one after the finding (`controlled`): a refused
//! control is the finding instead, as it blocks the case in `run`.
//!
//! Oracles (each reply also gets the shared reading of `replies::read_reply`, on both connections: envelope, protocol, UUID, timestamp,
//! from.agentId, a verifying signature, `to` = the sender, `from` = the agent that
//! said hello, the correlationId echoed, the payload of its type; AGP-001…005,
//! 007…012, 019, 020, 030, 031; a failing finding it records fails the case):
//! - never a dropped connection or INTERNAL_ERROR for client input (AGP-038); the
//!   HTTP status itself is not judged (AGP-A10): a 5xx with an error message is
//!   judged by the message, one without is no message at all;
//! - a hello reply carries the full envelope, signature included, as the hello case
//!   requires (AGP-001, AGP-030, AGP-A6); other replies are judged by the shared
//!   reading, where an unsigned reply and a missing `to` are warnings (AGP-A3,
//!   AGP-A22);
//! - error codes come from the spec's table (AGP-022): the shared reading of
//!   `suites::agentprotocol::expect` judges another code a warning, so the fuzzer does
//!   not report it;
//! - hello is answered by a hello (AGP-013), judged by the hello case's rules
//!   (`hello_findings`: version "0.1", features, capabilities of the form
//!   prefix:name, agentprotocol:* among the core five; AGP-007, AGP-014…016);
//! - a valid request is carried out: echo answers a response with result = params,
//!   a delay within its timeout a response (whatever its status says, AGP-A11);
//!   extra payload members and metadata are allowed (AGP-018, AGP-019, AGP-043);
//! - a response or error to a request echoes its correlationId: the shared reading's
//!   rule (`correlationId:not-echoed`, AGP-019, AGP-020, AGP-A7);
//! - an action the target lacks draws CAPABILITY_NOT_SUPPORTED with
//!   details.requested and details.available (AGP-020, AGP-026);
//! - a message with no or another type, a non-string id, a payload or params of the
//!   wrong kind draws INVALID_MESSAGE (AGP-010, AGP-011, AGP-018, AGP-023); an action
//!   or timeout of the wrong kind is not judged, as the input-validation case only
//!   warns when it is not refused (AGP-038, a SHOULD);
//! - a signature that does not verify, or none where the target advertises
//!   signed-messages, is rejected and never carried out (AGP-024, AGP-030, AGP-033…035,
//!   AGP-A3);
//! - a message addressed to another agent is not carried out: UNKNOWN_AGENT or no
//!   reply (AGP-008, AGP-025), where the profile's unknown_agent_error says so, as the
//!   unknown-agent case holds (informational for a single agent);
//! - a delay past the request's timeout draws TIMEOUT or no reply (AGP-027, AGP-A18),
//!   where the profile's timeout_error says so, as the timeout case holds;
//! - a burst from one sender draws responses or RATE_LIMITED, nothing else (AGP-028);
//! - two requests in flight on one WebSocket are each answered once, matched by
//!   correlationId (AGP-019, AGP-041);
//! - a respelled message gets the verdict of its canonical twin (AGP-031).
//!
//! Open by the spec, so never judged: protocol other than agentprotocol/0.1
//! (AGP-A16), id or timestamp format (AGP-A6, AGP-A12), `to` missing or broadcast
//! true (AGP-A13, AGP-A22), unknown top-level members (AGP-A19), base64 flavours
//! (AGP-A4), non-ASCII text or floats under the signature (AGP-A1), refusing a
//! request before hello (AGP-A9), replies to notify and to unsolicited response or
//! error (AGP-A14).
//!
//! Not fuzzed: requests without a correlationId or with a non-string one. The
//! reference answers them with a response whose correlationId is `null` or the
//! number, which the response-payload schema types as a string, so the shared reply
//! check would fail the clean reference; mutations that drop the correlationId of a
//! re-signed request get one back.
//!
//! The file binding is not fuzzed: its messages reach the same agent as HTTP and
//! WebSocket, but only as files whose names carry the sender and the addressee, so
//! unparseable input or input for another agent never comes back as a reply, and each
//! exchange waits on a folder poll; the message-level oracles are reached faster and
//! more completely over HTTP and WebSocket.

pub mod client;
pub mod in_process;
pub mod init;
pub mod load;
pub mod tamper;

use crate::case::{Case, Suite, Untestable};
use crate::drive::{DriveError, Driver, Limits, Received, Transport};
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{
    fail as fuzz_fail, finding, skip as fuzz_skip, FuzzFinding, FuzzFuture, FuzzStep, FuzzStop,
    Oracle,
};
use crate::script::{describe_drive_error, Ctx};
use arbitrary::Arbitrary;
use reference_impl::agentprotocol::message;
use reference_impl::wire::jcs;
use serde_json::{json, Value};
use std::collections::HashSet;

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident,
     |$ctx:ident| $body:block) => {
        crate::define_case!("agentprotocol", $id, $title, [$($req),*], $level, Bindings::Any, false, None, |$ctx| $body)
    };
}

macro_rules! client_case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, |$ctx:ident| $body:block) => {
        crate::define_case!("agentprotocol", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| $body)
    };
}

pub mod counterpart;
pub mod errors;
pub mod handshake;
pub mod messages;
pub mod payloads;
pub mod replies;
pub mod requester;
pub mod requests;
pub mod signatures;
pub mod wire;

use counterpart::*;
use errors::*;
use handshake::*;
use messages::*;
use payloads::{CORRELATIONID_NOT_ECHOED, CORRELATIONID_NOT_ECHOED_IN_ERRORS};
use replies::*;
use requester::*;
use requests::*;
use signatures::*;
use wire::*;

pub static SUITE: Suite = Suite {
    id: "agentprotocol",
    spec: crate::case::SpecText {
        file: "agentprotocol.md",
        repository: "github.com/FreyaFamiliar/freya-tools",
        path: "agentprotocol/spec/PROTOCOL-SPEC.md",
        commit: "6fdaf832a1d00e69fbc512286a32e8f18109c6eb",
        form: "byte for byte",
    },
    prefix: "AGP",
    cases: CASES,
    untestable: UNTESTABLE,
    transports: &[Transport::Http, Transport::Ws, Transport::File],
    endpoint_paths: ENDPOINT_PATHS,
    faults: reference_impl::agentprotocol::faults::FAULTS,
    start: crate::embedded::agentprotocol,
    signing: Some(crate::case::Signing {
        sign: sign_message,
        verify: explain_verify,
    }),
    schemas: SCHEMAS,
    client_cases: CLIENT_CASES,
    client_faults: reference_impl::agentprotocol::client::CLIENT_FAULTS,
    reread,
    rules: crate::joined!(&'static crate::rules::Rule;
        replies::RULES,
        payloads::RULES,
        handshake::RULES,
        errors::RULES,
        messages::RULES,
        requests::RULES,
        signatures::RULES,
        requester::RULES,
    ),
    reference_client: client::REFERENCE,
    tampers: crate::suites::agentprotocol::tamper::TAMPERS,
    defined: Some(proxied),
    reply_to: None,
    client_message: Some(proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &SPEC,
    client_fuzzer: Some(&CLIENT_SPEC),
    discover: Some(crate::suites::agentprotocol::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "AGP-029", reason: "needs a fault-injection action that makes the agent fail internally; the target profile defines none" },
    Untestable { requirement: "AGP-039", reason: "AgentReputation is not defined in agentprotocol.md; its use is not observable on the wire (AGP-A20)" },
];

/// The cases, area by area in the order they run.
pub const CASES: &[Case] = crate::joined!(Case;
    handshake::CASES,
    requests::CASES,
    signatures::CASES,
    messages::CASES,
    errors::CASES,
);

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

// ---------------------------------------------------------------------------
// The hooks `proxy` reads a recorded exchange with

/// A message a real client sent through `agentconform proxy`: every rule of
/// [`check_client_message`] (HTTP requests with a body), and an id no earlier
/// message through the proxy carried (AGP-003).
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, h: &crate::exchange::History) {
    if x.received.is_empty() {
        return;
    }
    let Ok(m) = check_client_message(ctx, &x.received) else {
        return;
    };
    let Some(id) = m["id"].as_str() else { return };
    if let Some(who) = h.id_used(id) {
        ctx.finding(CLIENT_ID_REUSED.found(format!(
            "the client's {} message reuses id {id:?}, which {who}'s earlier message carried",
            m["type"]
        )));
    }
}

// ---------------------------------------------------------------------------
// Fuzzing: one draw over the areas' generators

pub static SPEC: Spec = Spec {
    transports: &[Transport::Http, Transport::Ws],
    case: case_fn,
    probe: probe_fn,
    resend: Some(resend_fn),
    kinds: &message::TYPES,
    unreachable: &[(
        "rate-window-never-resets",
        "needs a burst past the rate limit and then a wait past the rate window; a fuzz case's identity sends a few messages and is gone, and the rate-limit case waits",
    )],
    connection_per_worker: false,
    // Two exchanges or more per case, some waiting on a delay: 16 in flight keep
    // both cores busy (signing and verifying, on both sides, then bound the rate).
    workers: 16,
};

fn case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(one_case(f))
}

/// Sends the input alone after a hello of its own (for shrinking a frame), as the
/// agent it names: its reply is read by the suite's reply checks. A frame whose
/// edits break its signature draws another verdict, so only what the signature
/// does not need shrinks away.
fn resend_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let mut c = open_case(f).await?;
        let bytes = f.sent.clone();
        let sender = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| sender_of(&v));
        exchange(f, &mut c, bytes, sender, &Expect::default()).await?;
        Ok(())
    })
}

fn probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let mut me = Me::new(&f.ctx);
        me.hello(&mut f.ctx).await?;
        let echo = f.ctx.profile().agentprotocol.echo_action.clone();
        let req = me.request(&echo, json!({"text": "probe"}), json!({}));
        let r = me.send(&mut f.ctx, &req).await?;
        if r["type"] == "response" {
            Ok(())
        } else {
            finding(
                Oracle::Liveness,
                format!("an echo request drew {} {}", r["type"], r["payload"]),
            )
        }
    })
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum Flow {
    #[default]
    Pipeline,
    Sequence(u8),
    Burst,
    NoHello(Template),
}

#[derive(Debug, Clone, Arbitrary)]
enum Kind {
    Valid(Template),
    Resigned(Template, Mutation, Vec<Mutation>),
    Tampered(Template, Mutation, Vec<Mutation>),
    Signature(Template, SigMut),
    Raw(RawTemplate, ByteEdit, Vec<ByteEdit>),
    Spelling(Template, Option<Mutation>, WireForm),
    Flow(Flow),
}

impl Default for Kind {
    fn default() -> Kind {
        Kind::Valid(Template::Echo)
    }
}

fn expect_for(v: &Value, c: &FuzzCase) -> Expect {
    let mut e = Expect::default();
    let Some(o) = v.as_object() else {
        e.hard(&[IM], "the message is not a JSON object (AGP-001, AGP-023)");
        return e;
    };
    envelope_head(o, &mut e);
    from_member(o, &mut e);
    addressee(o, c, &mut e);
    let ty = message_type(o, &mut e);
    let payload = payload_of(o, &mut e);
    extras(o, &mut e);
    signature(v, c, &mut e);
    if !plain(v) {
        e.soft(
            &[IS],
            "non-ASCII text or a non-integer number under the signature (AGP-A1)",
        );
    }
    if let Some(p) = payload {
        if let Some(Value::String(s)) = p.get("correlationId") {
            e.correlation = Some(s.clone());
        }
    }
    by_type(ty, payload, c, &mut e);
    e
}

/// Sends `v` as serialized, judged by its verdict.
async fn send_judged(f: &mut FuzzCtx, c: &mut FuzzCase, v: &Value, what: &str) -> FuzzStep<Got> {
    let e = expect_for(v, c);
    send_expecting(f, c, v, &e, what).await
}

/// Sends `v` as serialized, judged by `e`.
async fn send_expecting(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    v: &Value,
    e: &Expect,
    what: &str,
) -> FuzzStep<Got> {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    f.fuzzed(&bytes);
    let g = exchange(f, c, bytes, sender_of(v), e).await?;
    judge(&g, e, what)?;
    Ok(g)
}

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let kind: Kind = f.draw();
    let mut c = open_case(f).await?;
    let judged = fuzzed(f, &mut c, kind).await;
    controlled(f, &mut c, judged).await
}

/// Sends what `kind` draws and judges each reply.
async fn fuzzed(f: &mut FuzzCtx, c: &mut FuzzCase, kind: Kind) -> FuzzStep<()> {
    match kind {
        Kind::Valid(t) => {
            let mut m = c.template(t);
            c.me.sign(&mut m);
            send_judged(f, c, &m, "a valid message").await?;
        }
        Kind::Resigned(t, first, more) => {
            let mut m = c.template(t);
            for mu in std::iter::once(&first).chain(more.iter().take(2)) {
                apply(&mut m, mu, c);
            }
            keep_correlation(&mut m, c);
            c.me.sign(&mut m);
            send_judged(f, c, &m, "the mutated, re-signed message").await?;
        }
        Kind::Tampered(t, first, more) => {
            let mut m = c.template(t);
            c.me.sign(&mut m);
            for mu in std::iter::once(&first).chain(more.iter().take(2)) {
                apply(&mut m, mu, c);
            }
            send_judged(f, c, &m, "the message changed after signing").await?;
        }
        Kind::Signature(t, s) => {
            let mut m = c.template(t);
            c.me.sign(&mut m);
            apply_sig(&mut m, &s, &c.me);
            let mut e = expect_for(&m, c);
            if let Some(subject) = signature_subject(&s) {
                e.edited_signature(subject);
            }
            send_expecting(f, c, &m, &e, "the message with an edited signature").await?;
        }
        Kind::Raw(t, first, edits) => raw_case(f, c, t, first, edits).await?,
        Kind::Spelling(t, mu, w) => spelling_case(f, c, t, mu, w).await?,
        Kind::Flow(flow) => run_flow(f, c, flow).await?,
    }
    Ok(())
}

/// The rules `run` judges only beside a valid request of the same sender carried
/// out (each case's control or twin): a message that must be refused, carried out
/// or refused otherwise. A malformed message carried out needs none (its response
/// shows it), nor a burst throttled with another code (its first request carried
/// out is its control).
const CONTROLLED: &[&crate::rules::Rule] = &[
    &INVALID_MESSAGE_ACCEPTED,
    &REJECT_TAMPERED_CARRIED_OUT,
    &REJECT_TAMPERED_CODE,
    &REJECT_WRONG_KEY_CARRIED_OUT,
    &REJECT_WRONG_KEY_CODE,
    &UNSIGNED_REQUEST_CARRIED_OUT,
    &UNKNOWN_AGENT_CARRIED_OUT,
    &UNKNOWN_AGENT_CODE,
    &UNKNOWN_ACTION_CODE,
    &TIMEOUT_NOT_TIMED_OUT,
];

/// A finding of a rule `run` judges beside a control counts only when a valid
/// echo request of the case's sender is carried out then. When that control is
/// refused, its refusal is the finding (`refused:<code>:<words>`), as a refused
/// control blocks the case in `run`; a forged message carried out is judged
/// beside a sender that never said hello instead, as the signature cases do, and
/// one from such a sender, while the same forgery from the sender that said hello
/// is refused, is verify:before-hello. A throttled or unanswered control judges
/// nothing (the case is skipped). The finding is logged before the control goes
/// out, so that its crash file keeps the fuzzed message as its input.
async fn controlled(f: &mut FuzzCtx, c: &mut FuzzCase, judged: FuzzStep<()>) -> FuzzStep<()> {
    let Err(FuzzStop::Found(found)) = judged else {
        return judged;
    };
    let Some(key) = found.key.clone().filter(|k| {
        CONTROLLED.iter().any(|r| r.key == k.as_str())
            && !(k.as_str() == INVALID_MESSAGE_ACCEPTED.key && found.oracle != Oracle::ErrorCode)
    }) else {
        return Err(FuzzStop::Found(found));
    };
    let forged = [
        REJECT_TAMPERED_CARRIED_OUT.key,
        REJECT_WRONG_KEY_CARRIED_OUT.key,
    ]
    .contains(&key.as_str());
    f.ctx.checked(format!(
        "finding {key} (fail): {}; a valid request follows as the control",
        found.detail
    ));
    let what = "a valid echo request (the control)";
    match control(f, c, None, Control::Valid).await {
        Some(Got::Reply(r)) if r["type"] == "response" => {}
        Some(Got::Reply(r)) if r["payload"]["code"] == RATE_LIMITED => {
            return fuzz_skip("the control after the finding was throttled (RATE_LIMITED); the finding cannot be judged");
        }
        Some(Got::Reply(r)) if r["type"] == "error" => {
            let judged_apart = forged
                && matches!(control(f, c, Some(Me::new(&f.ctx)), Control::Valid).await, Some(Got::Reply(s)) if s["type"] == "response");
            if judged_apart {
                return Err(FuzzStop::Found(found));
            }
            let refusal = refused(&r, what, &[]);
            return Err(FuzzStop::Found(FuzzFinding {
                oracle: Oracle::ValidRejected,
                detail: format!(
                    "{}; the fuzzed message before it: {}",
                    refusal.summary, found.detail
                ),
                key: Some(refusal.key.to_string()),
            }));
        }
        _ => {
            return fuzz_skip("the control after the finding drew neither a response nor an error; the finding cannot be judged");
        }
    }
    let stranger = serde_json::from_slice::<Value>(&f.sent)
        .ok()
        .and_then(|v| sender_of(&v))
        .is_some_and(|s| s != c.me.id);
    if forged && stranger {
        // The same forgery from the sender that said hello.
        if let Some(Got::Reply(r)) = control(f, c, None, Control::Forged).await {
            if r["type"] == "error" {
                return Err(FuzzStop::Found(FuzzFinding {
                    oracle: Oracle::Signature,
                    detail: format!("{}; from the sender that said hello, a payload changed after signing drew error {} (AGP-024, AGP-034)", found.detail, r["payload"]["code"]),
                    key: Some(VERIFY_BEFORE_HELLO.key.to_string()),
                }));
            }
        }
    }
    Err(FuzzStop::Found(found))
}

/// The control as signed, or with its payload changed after signing.
#[derive(Clone, Copy, PartialEq)]
enum Control {
    Valid,
    Forged,
}

/// Sends an echo request as the case's control (`Valid`, or `Forged`), from the
/// case's sender, or from `other` (addressed to the same target) when given; what
/// came back, or `None` when the exchange itself failed.
async fn control(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    other: Option<Me>,
    kind: Control,
) -> Option<Got> {
    let mut saved = None;
    if let Some(mut o) = other {
        o.target = c.me.target.clone();
        saved = Some(std::mem::replace(&mut c.me, o));
    }
    let mut m = c.template(Template::Echo);
    c.me.sign(&mut m);
    if kind == Control::Forged {
        m["payload"]["params"]["text"] = json!("changed after signing");
    }
    let e = expect_for(&m, c);
    let bytes = serde_json::to_vec(&m).unwrap_or_default();
    let got = exchange(f, c, bytes, sender_of(&m), &e).await.ok();
    if let Some(me) = saved {
        c.me = me;
    }
    got
}

/// Opens a case: a fresh identity says hello, the hello reply gets its oracles
/// (AGP-007, AGP-013…016), and what it told (the target, signed-messages) is kept.
async fn open_case(f: &mut FuzzCtx) -> FuzzStep<FuzzCase> {
    let mut me = Me::new(&f.ctx);
    let hello = me.hello(&mut f.ctx).await?;
    reply_oracles(&hello, &Expect::default())?;
    hello_oracles(&hello)?;
    let prof = f.ctx.profile().agentprotocol.clone();
    Ok(FuzzCase {
        target: me.target.clone().unwrap_or_default(),
        signed_messages: me.target_features.iter().any(|x| x == "signed-messages"),
        me,
        raw: None,
        raw_ids: HashSet::new(),
        echo: prof.echo_action,
        delay: prof.delay_action,
        unknown_agent_error: prof.unknown_agent_error,
        timeout_error: prof.timeout_error,
        n: 0,
    })
}

/// A signed message with raw byte edits, judged by what the bytes still are: not
/// JSON (AGP-023), JSON that is not I-JSON (nothing fixed), or a message.
async fn raw_case(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    t: RawTemplate,
    first: ByteEdit,
    mut edits: Vec<ByteEdit>,
) -> FuzzStep<()> {
    let mut m = c.template(t.into());
    c.me.sign(&mut m);
    edits.insert(0, first);
    let bytes = edit_bytes(serde_json::to_vec(&m).unwrap_or_default(), &edits);
    f.fuzzed(&bytes);
    let (e, sender) = match serde_json::from_slice::<Value>(&bytes) {
        Err(_) => (Expect::garbage(), None),
        Ok(_) if jcs::canonicalize(&bytes).is_err() => (Expect::not_ijson(), None),
        Ok(v) => (expect_for(&v, c), sender_of(&v)),
    };
    let g = exchange(f, c, bytes, sender, &e).await?;
    judge(&g, &e, "the edited message")
}

/// A message in its canonical spelling, then its twin respelled: both judged, and
/// the twin gets the verdict of the canonical one (AGP-031).
async fn spelling_case(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    t: Template,
    mu: Option<Mutation>,
    w: WireForm,
) -> FuzzStep<()> {
    let mut twin = c.template(t);
    if let Some(mu) = &mu {
        apply(&mut twin, mu, c);
    }
    keep_correlation(&mut twin, c);
    c.me.sign(&mut twin);
    let first = send_judged(f, c, &twin, "the canonical spelling").await?;
    let (copy, fresh_id) = fresh_copy(&twin, c);
    let e = expect_for(&copy, c);
    let bytes = respell(&copy, w);
    f.fuzzed(&bytes);
    let second = exchange(f, c, bytes, sender_of(&copy), &e).await?;
    judge(&second, &e, "the respelled message")?;
    let repeat = !fresh_id && copy["id"].is_string();
    if !e.timing_open && !repeat && verdict_of(&first) != verdict_of(&second) {
        return finding(
            Oracle::WireForm,
            format!(
                "the canonical spelling drew {}, {w:?} drew {} (AGP-031)",
                verdict_of(&first),
                verdict_of(&second)
            ),
        );
    }
    Ok(())
}

async fn run_flow(f: &mut FuzzCtx, c: &mut FuzzCase, flow: Flow) -> FuzzStep<()> {
    match flow {
        Flow::Sequence(n) => {
            for i in 0..2 + usize::from(n % 3) {
                let t = [
                    Template::Echo,
                    Template::EchoMeta,
                    Template::Unknown,
                    Template::Delay,
                ][i % 4];
                let mut m = c.template(t);
                c.me.sign(&mut m);
                send_judged(f, c, &m, &format!("request {} of a sequence", i + 1)).await?;
            }
            Ok(())
        }
        Flow::Burst => {
            // The burst's first request carried out is its control, as the
            // rate-limit case sends one before its burst: a burst refused from its
            // first request on is a valid request refused.
            let mut carried = false;
            for i in 0..BURST {
                let mut m = c.template(Template::Echo);
                c.me.sign(&mut m);
                let mut e = expect_for(&m, c);
                e.rate_limit_ok = true;
                let bytes = serde_json::to_vec(&m).unwrap_or_default();
                f.fuzzed(&bytes);
                let g = exchange(f, c, bytes, sender_of(&m), &e).await?;
                if let Got::Reply(v) = &g {
                    carried |= v["type"] == "response";
                    if carried && v["type"] == "error" && v["payload"]["code"] != RATE_LIMITED {
                        return Err(FuzzStop::Found(FuzzFinding {
                            oracle: Oracle::RateLimit,
                            detail: format!("request {} of a burst drew error {}; throttling must use RATE_LIMITED (AGP-028)", i + 1, v["payload"]["code"]),
                            key: Some(RATE_LIMIT_CODE.key.to_string()),
                        }));
                    }
                }
                judge(&g, &e, &format!("request {} of a burst", i + 1))?;
            }
            Ok(())
        }
        Flow::NoHello(t) => {
            // A second identity that never said hello (AGP-A9: it may be served or
            // refused; if served, correctly).
            let mut other = Me::new(&f.ctx);
            other.target = c.me.target.clone();
            std::mem::swap(&mut c.me, &mut other);
            let mut m = c.template(t);
            c.me.sign(&mut m);
            let mut e = expect_for(&m, c);
            e.any_code = true;
            e.silence_ok = true;
            let bytes = serde_json::to_vec(&m).unwrap_or_default();
            f.fuzzed(&bytes);
            let r = exchange(f, c, bytes, sender_of(&m), &e).await;
            std::mem::swap(&mut c.me, &mut other);
            judge(&r?, &e, "a message before hello")
        }
        Flow::Pipeline => pipeline(f, c).await,
    }
}

/// A delay and an echo in flight together; each answered once, by correlationId.
async fn pipeline(f: &mut FuzzCtx, c: &mut FuzzCase) -> FuzzStep<()> {
    let mut msgs = Vec::new();
    for t in [Template::DelayWithin, Template::Echo] {
        let mut m = c.template(t);
        c.me.sign(&mut m);
        let e = expect_for(&m, c);
        msgs.push((m, e));
    }
    let lim = limits(f, fuzz_wait(f));
    let who = f.ctx.transport.to_string();
    let me_id = c.me.id.clone();
    if f.ctx.transport == Transport::Ws {
        second_hello(f, c, lim, &who, &me_id).await?;
    }
    for (m, _) in &msgs {
        f.ctx
            .log_frame("send", &who, &serde_json::to_string(m).unwrap_or_default());
    }
    let bytes: Vec<Vec<u8>> = msgs
        .iter()
        .map(|(m, _)| serde_json::to_vec(m).unwrap_or_default())
        .collect();
    f.fuzzed(&bytes[1]);
    let Some(results) = send_pipelined(f, c, &bytes, lim).await? else {
        return Ok(());
    };
    pipelined_replies(f, c, results, &msgs, &me_id)
}

/// Over WebSocket: says hello on the second connection and judges the reply (the
/// reply oracles, then the verdict of a hello).
async fn second_hello(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    lim: Limits,
    who: &str,
    me_id: &str,
) -> FuzzStep<()> {
    // A hello on this second connection first, for a target that keeps hello
    // per session (AGP-A9).
    let mut h = c.template(Template::Hello);
    c.me.sign(&mut h);
    let e = expect_for(&h, c);
    let hb = serde_json::to_vec(&h).unwrap_or_default();
    f.ctx.log_frame("send", who, &String::from_utf8_lossy(&hb));
    let drv = c.raw.get_or_insert_with(|| new_driver(f));
    let r = drv.exchange(hb, lim).await;
    let g = received(f, c, r, Some(me_id), &e)?;
    if let Got::Reply(v) = &g {
        reply_oracles(v, &e)?;
    }
    judge(&g, &e, "a hello on a second connection")
}

/// Sends both messages at once (over one WebSocket, or two HTTP connections) and
/// collects the two answers; `None` when the second connection is no WebSocket.
async fn send_pipelined(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    bytes: &[Vec<u8>],
    lim: Limits,
) -> FuzzStep<Option<Vec<Result<Received, DriveError>>>> {
    let mut results = Vec::new();
    match f.ctx.transport {
        Transport::Ws => {
            let drv = c.raw.get_or_insert_with(|| new_driver(f));
            let Driver::Ws(ws) = drv else {
                return Ok(None);
            };
            for b in bytes {
                let text = String::from_utf8_lossy(b).into_owned();
                if let Err(err) = ws.send_text(text, lim).await {
                    return fuzz_fail(describe_drive_error(&err));
                }
            }
            for _ in 0..2 {
                let r = match ws.recv(lim).await {
                    Ok(Some(b)) => Ok(Received::Frame(b)),
                    Ok(None) => Ok(Received::Silence),
                    Err(err) => Err(err),
                };
                results.push(r);
            }
        }
        _ => {
            let mut d1 = new_driver(f);
            let mut d2 = new_driver(f);
            let (a, b) = tokio::join!(
                d1.exchange(bytes[0].clone(), lim),
                d2.exchange(bytes[1].clone(), lim)
            );
            results.push(a);
            results.push(b);
        }
    }
    Ok(Some(results))
}

/// Reads the answers to two pipelined requests: each request answered once,
/// matched by correlationId (AGP-019, AGP-041), and judged by its verdict.
fn pipelined_replies(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    results: Vec<Result<Received, DriveError>>,
    msgs: &[(Value, Expect)],
    me_id: &str,
) -> FuzzStep<()> {
    let mut answered: Vec<bool> = vec![false; msgs.len()];
    for r in results {
        let got = received(f, c, r, Some(me_id), &Expect::default())?;
        let Got::Reply(v) = got else {
            return finding(
                Oracle::Verdict,
                "one of two pipelined requests drew no reply (AGP-019, AGP-041)",
            );
        };
        let corr = v["payload"]["correlationId"].as_str().unwrap_or_default();
        let Some(i) = msgs
            .iter()
            .position(|(_, e)| e.correlation.as_deref() == Some(corr))
        else {
            return not_echoed(&v, format!("a reply to pipelined requests carries correlationId {corr:?}, which neither had (AGP-019)"));
        };
        if std::mem::replace(&mut answered[i], true) {
            return not_echoed(
                &v,
                format!("two replies carry correlationId {corr:?} (AGP-019)"),
            );
        }
        let e = &msgs[i].1;
        reply_oracles(&v, e)?;
        judge(&Got::Reply(v), e, "a pipelined request")?;
    }
    Ok(())
}

/// A reply to one of two pipelined requests that echoes neither one's
/// correlationId: the reply checks' rule for its type (AGP-019, AGP-020).
fn not_echoed(v: &Value, detail: String) -> FuzzStep<()> {
    let rule = if v["type"] == "error" {
        &CORRELATIONID_NOT_ECHOED_IN_ERRORS
    } else {
        &CORRELATIONID_NOT_ECHOED
    };
    Err(FuzzStop::Found(FuzzFinding {
        oracle: Oracle::Correlation,
        detail,
        key: Some(rule.key.to_string()),
    }))
}

/// Requests in a burst (the rate-limit flow).
const BURST: usize = 25;
