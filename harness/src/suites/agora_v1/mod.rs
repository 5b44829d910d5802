//! The agora-v1 suite (agora-v1.md), laid out by section: `wire` (§1: the envelope
//! as built, signed and sent, and the reply as read off the wire), `replies` (every
//! reply check, applied to each reply), `errors` (§5: what a case expects of a reply,
//! refusals and their control), `messages` (§4), `structure` (§1: ids, timestamps,
//! the replay window), `signing` (§2), `lifecycle` (§3), and for the client role
//! `counterpart` (the provider the harness plays) and `requester`. Each area file
//! holds its rules, its checks, its cases and its fuzz generators side by side; this
//! file holds the descriptor, the hook `proxy` reads a recorded exchange with, and
//! the fuzzer's draw over the areas. The areas import each other downward only, in
//! the order above.
//!
//! Live fuzzing (`SPEC`, and `requester::CLIENT_SPEC` for the client role): structure-aware and raw mutation of
//! signed envelopes, on the shared engine. Each worker keeps one connection.
//!
//! Every message goes through the case context and every reply through
//! `replies::check_reply` (JSON, the envelope and payload schemas, a
//! signature that verifies, a fresh id, a timestamp within the window, the
//! profile's HTTP status rule): a failing finding it records fails the fuzz case.
//! The oracles of this module come on top:
//! - **server error**: never an HTTP 5xx or an ERROR 5xx;
//! - **signature**: a message changed after signing, whose signed form changed, or
//!   one without a signature, is never processed (OFFER, RESULT, WELCOME, STATUS);
//!   a valid message whose signature no longer verifies draws ERROR 401 (AV1-046);
//! - **invalid accepted**: a re-signed message that breaks the schemas is never
//!   processed; one that keeps them may be;
//! - **freshness**: a message stamped outside the replay window is never processed
//!   (AV1-006);
//! - **wire form**: the same content in another spelling (key order, white space,
//!   `\u` escapes) gets the same verdict as its canonical form;
//! - **valid rejected / verdict**: a valid echo REQUEST draws RESULT or OFFER, a
//!   HELLO draws WELCOME, an unknown resource ERROR 404; the negotiated flow links
//!   OFFER and RESULT to the REQUEST, refuses a second ACCEPT and a replayed
//!   REQUEST, and answers a budget below the cost with ERROR 402;
//! - **refusals as `run` files them**: a valid echo REQUEST (or the negotiated one)
//!   refused is the refusal finding `refused:<code>:<words>`, as each case's control
//!   files it; any other refusal found wrong (a wrong code, a HELLO refused) counts
//!   only beside a control the target carries out, sent then, and when the control
//!   is refused too its refusal is the finding; a 5xx to a REQUEST for a resource
//!   the profile does not name is error-unknown-resource's wrong answer;
//! - **liveness**: a HELLO after every finding and every 500 cases is answered.

pub mod client;
pub mod in_process;
pub mod init;
pub mod load;
pub mod tamper;

use crate::case::{Case, Suite, Untestable};
use crate::drive::Transport;
use crate::fuzzing::mutate::{edit_bytes, ByteEdit, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{finding, under, Expected, FuzzFuture, FuzzStep, Oracle};
use crate::script::Ctx;
use arbitrary::Arbitrary;
use serde_json::{json, Value};

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, $bindings:expr, $slow:expr,
     |$ctx:ident| $body:block) => {
        crate::define_case!("agora-v1", $id, $title, [$($req),*], $level, $bindings, $slow, None, |$ctx| $body)
    };
}

macro_rules! client_case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, |$ctx:ident| $body:block) => {
        crate::define_case!("agora-v1", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), false, None, |$ctx| $body)
    };
}

pub mod counterpart;
pub mod errors;
pub mod lifecycle;
pub mod messages;
pub mod replies;
pub mod requester;
pub mod signing;
pub mod structure;
pub mod wire;

use counterpart::*;
use errors::*;
use lifecycle::*;
use messages::*;
use replies::*;
use requester::*;
use signing::*;
use structure::*;
use wire::*;

pub static SUITE: Suite = Suite {
    id: "agora-v1",
    spec: crate::case::SpecText {
        file: "agora-v1.md",
        repository: "github.com/james-lebron2000/agora",
        path: "docs/PROTOCOL.md",
        commit: "daa5d3571c8aee8aa977b3ca62b30c13de9695a9",
        form: "byte for byte",
    },
    prefix: "AV1",
    cases: CASES,
    untestable: UNTESTABLE,
    transports: &[Transport::Http, Transport::Ws],
    endpoint_paths: &[],
    faults: reference_impl::agora_v1::faults::FAULTS,
    start: crate::embedded::agora_v1,
    signing: Some(crate::case::Signing {
        sign: sign_message,
        verify: explain_verify,
    }),
    schemas: SCHEMAS,
    client_cases: CLIENT_CASES,
    client_faults: reference_impl::agora_v1::client::CLIENT_FAULTS,
    reread,
    rules: crate::joined!(&'static crate::rules::Rule;
        replies::RULES,
        errors::RULES,
        messages::RULES,
        structure::RULES,
        signing::RULES,
        lifecycle::RULES,
        requester::RULES,
    ),
    reference_client: client::REFERENCE,
    tampers: crate::suites::agora_v1::tamper::TAMPERS,
    defined: Some(proxied),
    reply_to: None,
    client_message: Some(proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &SPEC,
    client_fuzzer: Some(&CLIENT_SPEC),
    discover: Some(crate::suites::agora_v1::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

pub const UNTESTABLE: &[Untestable] = &[
    Untestable { requirement: "AV1-036", reason: "needs a slow resource whose run time exceeds REQUEST.timeout; the target profile defines none" },
    Untestable { requirement: "AV1-052", reason: "needs a fault-injection resource that makes the target fail; the target profile defines none (informational in the inventory)" },
    Untestable { requirement: "AV1-053", reason: "needs a busy or maintenance switch on the target; the target profile defines none (informational in the inventory)" },
];

/// The cases, area by area in the order they run.
pub const CASES: &[Case] = crate::joined!(Case;
    lifecycle::CASES,
    structure::CASES,
    signing::CASES,
    messages::CASES,
    errors::CASES,
);

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

// ---------------------------------------------------------------------------
// The hooks `proxy` reads a recorded exchange with

/// A message a real client sent through `agentconform proxy`: every rule of
/// [`check_client_message`], an id no earlier message through the proxy carried
/// (AV1-004), and an ACCEPT against the OFFER it names ([`accept_against_offer`]).
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, h: &crate::exchange::History) {
    if let Ok(env) = check_client_message(ctx, &x.received) {
        if let Some(who) = h.id_used(&env.id) {
            ctx.finding(CLIENT_ID_REUSED.found(format!(
                "the client's {} reuses id {:?}, which {who}'s earlier message carried",
                env.ty, env.id
            )));
        }
        if env.ty == "ACCEPT" {
            accept_against_offer(ctx, &env, h);
        }
    }
}

// ---------------------------------------------------------------------------
// Fuzzing: one draw over the areas' generators

pub static SPEC: Spec = Spec {
    transports: &[Transport::Http, Transport::Ws],
    case: case_fn,
    probe: probe_fn,
    resend: Some(resend_fn),
    kinds: &reference_impl::agora_v1::envelope::TYPES,
    unreachable: &[
        (
            "refuse-any-budget",
            "its ERROR 402 answers a quote with a budget of 10, which the fuzzer leaves open (the cost of a quote is the target's); the budget-too-low case sends a budget that covers the offered cost",
        ),
        (
            "refuse-exact-budget",
            "its ERROR 402 answers only a budget equal to the offered cost to the cent, which the fuzzer's drawn budgets do not hit; the budget-too-low case sends it",
        ),
        (
            "forget-expired-offers",
            "needs a wait past an offer's ttl; the offer-expiry cases wait, the fuzzer does not",
        ),
        (
            "expired-offer-code-400",
            "needs a wait past an offer's ttl; the offer-expiry cases wait, the fuzzer does not",
        ),
        (
            "accept-expired-offer",
            "needs a wait past an offer's ttl; the offer-expiry cases wait, the fuzzer does not",
        ),
        (
            "offer-id-in-payload",
            "its only symptom is an ACCEPT that draws no RESULT, which the negotiated fuzz cases leave unjudged (the offer may have lapsed while the fuzzer was busy)",
        ),
    ],
    connection_per_worker: true,
    workers: crate::fuzzing::spec::WORKERS,
};

fn case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(one_case(f))
}

/// Sends the input alone as the fuzzed message of a connection of its own (for
/// shrinking a frame): its reply is read by the suite's reply checks. A frame whose
/// edits break its signature draws another verdict, so only what the signature
/// does not need shrinks away.
fn resend_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let bytes = f.sent.clone();
        if serde_json::from_slice::<Value>(&bytes).is_err() {
            return malformed(f, bytes).await;
        }
        exchange(f, bytes).await.map(|_| ())
    })
}

/// A HELLO must be answered.
fn probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let hello = message_at(&f.ctx, "HELLO", json!({}), now());
        let r = send(&mut f.ctx, hello).await?;
        match check_reply(&mut f.ctx, &r)? {
            Some(_) => Ok(()),
            None => finding(Oracle::Liveness, "no answer to a HELLO"),
        }
    })
}

#[derive(Debug, Clone, Arbitrary)]
enum Kind {
    Valid(Template),
    Resigned(Template, FieldMut),
    Unsigned(Template, FieldMut),
    WireForm(Template, WireForm),
    /// A valid message with its timestamp moved by this many seconds beyond the
    /// replay window (into the future when `true`), re-signed.
    Stale(Template, u16, bool),
    /// A valid message whose signature is removed (`true`) or emptied.
    Strip(Template, bool),
    /// The negotiated flow, then one step of it bent.
    Negotiate(Negotiation),
    Raw(Template, Vec<ByteEdit>),
}

impl Default for Kind {
    fn default() -> Kind {
        Kind::Valid(Template::Echo)
    }
}

/// The conformance case whose subject a kind's message is: a fuzz finding of it is
/// filed under that case's key, the key `run` gives the same deviation.
fn subject(kind: &Kind) -> Option<&'static str> {
    match kind {
        Kind::Resigned(_, mu) => field_subject(mu),
        Kind::Strip(..) => Some("agora-v1/reject-unsigned"),
        Kind::Unsigned(..) => Some("agora-v1/reject-tampered-payload"),
        Kind::Stale(..) => Some("agora-v1/reject-stale-timestamp"),
        Kind::Valid(Template::Hello) => Some("agora-v1/hello-welcome"),
        Kind::Valid(Template::Echo) => Some("agora-v1/echo-direct"),
        Kind::Valid(Template::UnknownResource) => Some("agora-v1/error-unknown-resource"),
        _ => None,
    }
}

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let kind: Kind = f.draw();
    let key = subject(&kind);
    let judged = under(key, planned_case(f, kind).await);
    controlled(f, judged).await
}

async fn planned_case(f: &mut FuzzCtx, kind: Kind) -> FuzzStep<()> {
    // A refused valid echo is the control's refusal; a refused HELLO is hello-welcome's.
    let control_kind = matches!(kind, Kind::Valid(Template::Echo));
    // Each kind: the bytes, what the spec fixes for them, and the oracles of a
    // valid message refused and of an invalid one carried out.
    let (bytes, want, oracles) = match kind {
        Kind::Valid(t) => valid(f, t)?,
        Kind::Resigned(t, mu) => resigned(f, t, &mu)?,
        Kind::Unsigned(t, mu) => unsigned(f, t, &mu)?,
        Kind::WireForm(t, w) => return wire_form(f, t, w).await,
        Kind::Stale(t, extra, future) => stale(f, t, extra, future)?,
        Kind::Strip(t, remove) => {
            // No signature: never processed (AV1-016).
            let mut m = signed(f, t)?;
            if let Some(o) = m["sender"].as_object_mut() {
                if remove {
                    o.remove("signature");
                } else {
                    o.insert("signature".into(), json!(""));
                }
            }
            (
                wire(&m),
                Expected::Reject(ANY_CODE),
                (Oracle::Verdict, Oracle::Signature),
            )
        }
        Kind::Negotiate(n) => return negotiate(f, n).await,
        Kind::Raw(t, edits) => {
            let m = signed(f, t)?;
            let bytes = edit_bytes(wire(&m), &edits);
            if serde_json::from_slice::<Value>(&bytes).is_err() {
                return malformed(f, bytes).await;
            }
            let want = Expected::Open("byte edits leave the verdict open".into());
            (bytes, want, (Oracle::Verdict, Oracle::Verdict))
        }
    };
    let (v, env) = server_error_as_answer(&want, exchange(f, bytes).await)?;
    let judged = judge_reply("the fuzzed message", &want, &v, env.as_ref(), oracles);
    if control_kind {
        refused_valid(
            judged,
            env.as_ref(),
            "a valid REQUEST for the direct resource",
        )
    } else {
        judged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::verdict::Codes;

    #[test]
    fn the_default_kind_is_a_valid_echo() {
        assert!(matches!(Kind::default(), Kind::Valid(Template::Echo)));
    }

    fn reply(ty: &str, code: Option<i64>) -> Verdict {
        Verdict::Reply {
            ty: ty.into(),
            code,
        }
    }

    fn found(r: FuzzStep<()>) -> Option<Oracle> {
        match r {
            Err(crate::fuzzing::verdict::FuzzStop::Found(f)) => Some(f.oracle),
            _ => None,
        }
    }

    #[test]
    fn a_refusal_due_passes_silence_and_the_named_code_only() {
        let want: Want = Expected::Reject(Codes::OneOf(vec![401]));
        let o = (Oracle::Verdict, Oracle::Signature);
        assert_eq!(
            found(judge_reply("m", &want, &Verdict::Silence, None, o)),
            None
        );
        let err401 = reply("ERROR", Some(401));
        assert_eq!(found(judge_reply("m", &want, &err401, None, o)), None);
        let err400 = reply("ERROR", Some(400));
        assert_eq!(
            found(judge_reply("m", &want, &err400, None, o)),
            Some(Oracle::ErrorCode)
        );
        let carried = reply("RESULT", None);
        assert_eq!(
            found(judge_reply("m", &want, &carried, None, o)),
            Some(Oracle::Signature)
        );
    }

    #[test]
    fn a_valid_message_must_be_carried_out() {
        let want: Want = Expected::Accept(&["WELCOME"][..], Codes::none());
        let o = (Oracle::ValidRejected, Oracle::Verdict);
        assert_eq!(
            found(judge_reply("m", &want, &Verdict::Silence, None, o)),
            Some(Oracle::ValidRejected)
        );
        assert_eq!(
            found(judge_reply("m", &want, &reply("ERROR", Some(400)), None, o)),
            Some(Oracle::ValidRejected)
        );
        // Carried out, but without the reply read: not the type it must be.
        assert_eq!(
            found(judge_reply("m", &want, &reply("WELCOME", None), None, o)),
            Some(Oracle::ValidRejected)
        );
    }
}
