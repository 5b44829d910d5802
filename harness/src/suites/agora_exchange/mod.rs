//! The agora-exchange suite (agora-exchange.txt), laid out by section: `replies`
//! (§6.2: the reply type and how every reply is read), `wire` (§5: the calls),
//! `errors` (§10), `documents` (§8, and the /wellknown reader), `requests` (§6.1),
//! `wellknown` (§9), `conversations` (§7), and for the client role
//! `counterpart` (the server the harness plays) and `requester`. Each area file
//! holds its rules, its checks, its cases and its fuzz generators side by side; this
//! file holds the descriptor, the hooks `proxy` reads a recorded exchange with, and
//! the fuzzer's draw over the areas. The areas import each other downward only, in
//! the order above.
//!
//! Live fuzzing (`SPEC`, and `requester::CLIENT_SPEC` for the client role): requests built from the
//! target's own protocol fixture, mutated field by field, respelled, or edited byte
//! by byte; follow-ups in live conversations; `/wellknown` read back.
//!
//! Oracles, beyond the reply checks every case makes (`replies::read_reply`:
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
//!   parses, by the wellknown case's rules (`document_findings`: AEX-036 to
//!   AEX-038).

pub mod client;
pub mod in_process;
pub mod init;
pub mod load;
pub mod tamper;

use crate::case::{Case, Suite, Untestable};
use crate::drive::Transport;
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{finding, FuzzFuture, FuzzStep, Oracle};
use crate::script::Ctx;
use arbitrary::Arbitrary;
use serde_json::{json, Value};

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, $slow:expr,
     |$ctx:ident| $body:block) => {
        crate::define_case!("agora-exchange", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Http), $slow, None, |$ctx| $body)
    };
}

pub mod conversations;
pub mod counterpart;
pub mod documents;
pub mod errors;
pub mod replies;
pub mod requester;
pub mod requests;
pub mod wellknown;
pub mod wire;

use conversations::*;
use counterpart::*;
use documents::*;
use errors::*;
use replies::*;
use requester::*;
use requests::*;
use wellknown::*;
use wire::*;

pub static SUITE: Suite = Suite {
    id: "agora-exchange",
    spec: crate::case::SpecText {
        file: "agora-exchange.txt",
        repository: "github.com/agora-protocol/website-v2",
        path: "website/versioned_docs/version-0.2/protocol/specification.md",
        commit: "c54fefe75fad12460c77085da86c65a8d4239001",
        form: "the same words as the text of its page https://agoraprotocol.org/docs/protocol/specification, without the Markdown",
    },
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
    reread,
    rules: crate::joined!(&'static crate::rules::Rule;
        replies::RULES,
        wire::RULES,
        errors::RULES,
        requests::RULES,
        conversations::RULES,
        documents::RULES,
        requester::RULES,
    ),
    reference_client: client::REFERENCE,
    tampers: crate::suites::agora_exchange::tamper::TAMPERS,
    defined: Some(defined),
    reply_to: None,
    client_message: Some(proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &SPEC,
    client_fuzzer: Some(&CLIENT_SPEC),
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

/// The cases, area by area in the order they run.
pub const CASES: &[Case] = crate::joined!(Case;
    requests::CASES,
    wellknown::CASES,
    documents::CASES,
    conversations::CASES,
    errors::CASES,
    wire::CASES,
);

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

// ---------------------------------------------------------------------------
// The hooks `proxy` reads a recorded exchange with

/// A request a real client sent through `agentconform proxy`: sent as
/// application/json (AEX-005); a follow-up leaves protocolHash out (AEX-030) and
/// goes to a conversation that is open ([`follow_up_against_conversation`]).
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, h: &crate::exchange::History) {
    if x.method != "POST" {
        return;
    }
    follow_up_against_conversation(ctx, x, h);
    if let Some(why) = client_content_type(x) {
        ctx.finding(CLIENT_CONTENT_TYPE.found(why));
    }
    let request: Value = serde_json::from_slice(&x.received).unwrap_or(Value::Null);
    if let Some(why) = client_follow_up(x, &request, true) {
        ctx.finding(CLIENT_FOLLOW_UP_PROTOCOL_HASH.found(why));
    }
}

// ---------------------------------------------------------------------------
// Fuzzing: one draw over the areas' generators

#[derive(Debug, Clone, Default, Arbitrary)]
enum Kind {
    #[default]
    Wellknown,
    Request(Template, Vec<Mutation>),
    Raw(Template, Vec<ByteEdit>),
    Spelling(Template, WireForm),
    FollowUp(bool, FollowUp),
}

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
                let r = fuzz_post(f, "", bytes).await?;
                judge_expected(&r, expect_for(&v, &fx, None), "the input sent alone")
            }
            Ok(v) if v.is_object() => {
                // A follow-up needs its conversation: only what the reply checks
                // and the crash classes see is judged.
                let r = fuzz_post(f, &path, bytes).await?;
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
            judge_expected(&r, want, "the mutated request")
        }
        Kind::Raw(t, edits) => {
            let bytes = serde_json::to_vec(&template(t, &fx)).unwrap_or_default();
            let bytes = edit_bytes(bytes, &edits);
            f.fuzzed(&bytes);
            match serde_json::from_slice::<Value>(&bytes) {
                // Still a JSON object: the verdict of what it now says.
                Ok(v) if v.is_object() => {
                    let r = fuzz_post(f, "", bytes).await?;
                    judge_expected(&r, expect_for(&v, &fx, None), "the edited request")
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
            let second = fuzz_post(f, "", bytes).await?;
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
            judge_expected(
                &second,
                expect_for(&req, &fx, None),
                "the respelled request",
            )
        }
        Kind::FollowUp(echo, m) => follow_up(f, &fx, echo, m).await,
    }
}
