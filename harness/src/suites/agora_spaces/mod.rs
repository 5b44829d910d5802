//! The agora-spaces suite (agora-spaces.zh.md), laid out by section: `wire` (连接:
//! URL 格式, frames parsed), `replies` (every frame check), `connection` (连接: the
//! case's own agent, `Peer`, heartbeats), `errors` (错误处理, and how the fuzzer
//! judges an answer), `handshake` (握手), `agents` (agent events), `spaces` (space events and
//! Space 命名约定), `streaming` (publish, deltas, cancel), and for the client role
//! `counterpart` (the hub the harness plays) and `requester`; `events` holds the
//! fuzzer's single events (templates, mutations, what the spec fixes for each) over
//! the areas. Each area file holds its rules, its checks, its cases and its fuzz
//! generators side by side; this file holds the descriptor, the hook `proxy` reads a
//! recorded exchange with, and the fuzzer's draw over the areas. The areas import
//! each other downward only, in the order above.
//!
//! Live fuzzing (`SPEC`, and `requester::CLIENT_SPEC` for the client role):
//! WebSocket events sent on a registered connection, built from templates (join, leave, publish, list,
//! register, heartbeat, cancel, unknown types), mutated field by field, respelled,
//! or edited byte by byte; multi-step flows with two agents (join, member updates,
//! publish and fan-out, delta streams, leave, list, cancel); duplicate agent ids,
//! capacity, and connection URLs with drawn agent ids and tokens.
//!
//! Messages that draw no answer of their own are followed by a barrier: an event
//! of an unknown type with an id, which must draw INVALID_REQUEST with that id
//! (ASP-041, ASP-043). What arrives before the barrier's answer is judged, so a
//! case never sleeps to see whether something arrives; only the cancel flow waits
//! out the one-second grace of ambiguity ASP-A13.
//!
//! Oracles, beyond the checks every server frame gets (`replies::check_frame`: a JSON object with a string type, valid against its schema):
//! - an error answering a request with a string id carries it as request_id, by the
//!   rule `run` applies (`check_request_id`, ASP-041); its code is judged by
//!   the frame checks, as in `run` (a code outside the spec's six is a warning there,
//!   so it is no fuzz finding);
//! - the verdict the spec fixes for the event as sent, computed from the event
//!   itself: INVALID_REQUEST for non-JSON, a non-object, a missing or unknown type,
//!   a join without a string space, a malformed agent.register or publish (ASP-012,
//!   ASP-018, ASP-043); SPACE_NOT_FOUND for the profile's missing space (ASP-024);
//!   no join of a name with upper case or spaces (ASP-046, ambiguity ASP-A9) or of a
//!   never-created system space (ASP-051); space.joined with the echoed id, the
//!   name and the joiner for the public space (ASP-021, ASP-023), and for a fresh
//!   user name space.joined or SPACE_NOT_FOUND (ambiguity ASP-A8); agent.register
//!   answered by agent.registered with its id and the agent, or AGENT_EXISTS
//!   (ASP-008, ASP-010, ASP-011); space.list with its id, and system spaces typed
//!   system (ASP-038, ASP-039, ASP-047, ASP-049, ASP-050); no error for a
//!   heartbeat, a leave of a joined space or a member's publish (ASP-017, ASP-025,
//!   ASP-028); where the spec leaves the choice open the verdict is not judged;
//!   RATE_LIMITED is always an acceptable answer (ASP-045);
//! - a respelled event gets the verdict of its canonical twin;
//! - handshake: agent.registered names the agent, unsolicited or in answer to
//!   agent.register (ASP-007, ASP-008, ambiguity ASP-A3); two connections get
//!   different connection ids (ASP-009); a connection without agent_id, or with a
//!   wrong token where the profile sets one, is never registered (ASP-004, ASP-006);
//! - members: a join reaches the other member as space.members with joined set and
//!   the joiner listed, a leave with left set, joined null and the leaver gone
//!   (ASP-026, ASP-027);
//! - fan-out: a publish reaches the other member once, with the space, the text and
//!   data.from (ASP-029, ASP-030); after leaving, nothing more arrives (ASP-025,
//!   ASP-031); a text above the profile's delta threshold arrives as deltas with
//!   one event_id and exactly one done, reassembling the text exactly (ASP-032 to
//!   ASP-034, `judge_stream`); listed member counts cover the known members and a
//!   created space is listed (ASP-040, ambiguity ASP-A8);
//! - cancel: no delta of a cancelled event arrives more than a second after the
//!   server has seen the cancel (ASP-036, ambiguity ASP-A13);
//! - a second connection with a live agent_id is not registered: AGENT_EXISTS, a
//!   refusal or a close (ASP-013, ambiguity ASP-A21); nor is a second registration
//!   of a live id by agent.register;
//! - capacity: while one agent holds the profile's full space (capacity 1), another
//!   joining draws SPACE_FULL with its id (ASP-044);
//! - the connection stays open after an event that draws no error.
//!
//! Findings are named request-id, verdict, barrier, dropped, handshake, auth,
//! members, fanout, delta, list, cancel, duplicate and capacity, or by the key of the
//! rule they break; a failed wait of the shared peer helpers is a timeout, a closed
//! connection transport, and a frame check reply-check.

pub mod client;
pub mod in_process;
pub mod init;
pub mod load;
pub mod tamper;

use crate::case::{Case, Suite, Untestable};
use crate::drive::Transport;
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{
    finding, rules_since, under, Expected, FuzzFuture, FuzzStep, FuzzStop, Oracle,
};
use crate::script::Ctx;
use arbitrary::Arbitrary;
use serde_json::Value;

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, $slow:expr, $fast_when:expr,
     |$ctx:ident| $body:block) => {
        crate::define_case!("agora-spaces", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Ws), $slow, $fast_when, |$ctx| $body)
    };
}

pub mod agents;
pub mod connection;
pub mod counterpart;
pub mod errors;
pub mod events;
pub mod handshake;
pub mod replies;
pub mod requester;
pub mod spaces;
pub mod streaming;
pub mod wire;

use agents::*;
use connection::*;
use errors::*;
use events::*;
use handshake::*;
use replies::*;
use requester::*;
use spaces::*;
use streaming::*;
use wire::*;

pub static SUITE: Suite = Suite {
    id: "agora-spaces",
    spec: crate::case::SpecText {
        file: "agora-spaces.zh.md",
        repository: "github.com/caiuschou/workspace",
        path: "docs/agora/spec.md",
        commit: "ed82fd4b0a5954185f1218bae70ea9114c9f7063",
        form: "byte for byte",
    },
    prefix: "ASP",
    cases: CASES,
    untestable: UNTESTABLE,
    transports: &[Transport::Ws],
    endpoint_paths: &[],
    faults: reference_impl::agora_spaces::faults::FAULTS,
    start: crate::embedded::agora_spaces,
    signing: None,
    schemas: SCHEMAS,
    client_cases: CLIENT_CASES,
    client_faults: reference_impl::agora_spaces::client::CLIENT_FAULTS,
    reread,
    rules: crate::joined!(&'static crate::rules::Rule;
        replies::RULES,
        connection::RULES,
        errors::RULES,
        spaces::RULES,
        streaming::RULES,
        requester::RULES,
    ),
    reference_client: client::REFERENCE,
    tampers: crate::suites::agora_spaces::tamper::TAMPERS,
    // WebSocket only: every frame is judged.
    defined: None,
    reply_to: None,
    client_message: Some(proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &SPEC,
    client_fuzzer: Some(&CLIENT_SPEC),
    discover: Some(crate::suites::agora_spaces::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

/// Every requirement has a case: ASP-037 (a client discards a cancelled stream) is
/// judged in the client role.
pub const UNTESTABLE: &[Untestable] = &[];

/// The cases, area by area in the order they run.
pub const CASES: &[Case] = crate::joined!(Case;
    handshake::CASES,
    connection::CASES,
    agents::CASES,
    spaces::CASES,
    streaming::CASES,
    errors::CASES,
);

/// The suite's JSON Schemas (schemas/agora-spaces/), by name, built into the binary.
const SCHEMAS: &[(&str, &str)] = &[
    (
        "agent-register",
        include_str!("../../../../schemas/agora-spaces/agent-register.schema.json"),
    ),
    (
        "agent-registered",
        include_str!("../../../../schemas/agora-spaces/agent-registered.schema.json"),
    ),
    (
        "agent-heartbeat",
        include_str!("../../../../schemas/agora-spaces/agent-heartbeat.schema.json"),
    ),
    (
        "space-join",
        include_str!("../../../../schemas/agora-spaces/space-join.schema.json"),
    ),
    (
        "space-joined",
        include_str!("../../../../schemas/agora-spaces/space-joined.schema.json"),
    ),
    (
        "space-leave",
        include_str!("../../../../schemas/agora-spaces/space-leave.schema.json"),
    ),
    (
        "space-members",
        include_str!("../../../../schemas/agora-spaces/space-members.schema.json"),
    ),
    (
        "space-publish",
        include_str!("../../../../schemas/agora-spaces/space-publish.schema.json"),
    ),
    (
        "space-event",
        include_str!("../../../../schemas/agora-spaces/space-event.schema.json"),
    ),
    (
        "space-event-delta",
        include_str!("../../../../schemas/agora-spaces/space-event-delta.schema.json"),
    ),
    (
        "space-event-done",
        include_str!("../../../../schemas/agora-spaces/space-event-done.schema.json"),
    ),
    (
        "space-event-cancel",
        include_str!("../../../../schemas/agora-spaces/space-event-cancel.schema.json"),
    ),
    (
        "space-list-request",
        include_str!("../../../../schemas/agora-spaces/space-list-request.schema.json"),
    ),
    (
        "space-list-reply",
        include_str!("../../../../schemas/agora-spaces/space-list-reply.schema.json"),
    ),
    (
        "error",
        include_str!("../../../../schemas/agora-spaces/error.schema.json"),
    ),
];

// ---------------------------------------------------------------------------
// The hooks `proxy` reads a recorded exchange with

/// One frame of a client seen by `agentconform proxy`, by the rules of
/// [`client_frames`] (a frame that is no event object is a finding there).
pub fn proxy_client(ctx: &mut Ctx, x: &crate::exchange::Exchange, _: &crate::exchange::History) {
    let text = String::from_utf8_lossy(&x.received);
    match client_frame(ctx, &text) {
        Ok(Ok((v, false))) => ctx.finding(no_timestamp(v["type"].as_str().unwrap_or_default())),
        Ok(Ok(_)) => {}
        Ok(Err(why)) => ctx.finding(CLIENT_NOT_EVENT.found(why)),
        Err(stop) => ctx.note(format!("a client frame was not judged: {stop:?}")),
    }
}

// ---------------------------------------------------------------------------
// Fuzzing: one draw over the areas' generators

pub static SPEC: Spec = Spec {
    transports: &[Transport::Ws],
    case: case_fn,
    probe: probe_fn,
    resend: Some(resend_fn),
    kinds: &["agent.register", "agent.heartbeat", "space.join", "space.leave", "space.publish", "space.list", "space.event.cancel"],
    unreachable: &[
        (
            "no-heartbeat-timeout",
            "needs a silence as long as the heartbeat timeout (60 s by default); the heartbeat-timeout case waits, the fuzzer does not",
        ),
        (
            "keep-id-after-disconnect",
            "needs a new connection with the id of one that ended; each fuzz case's agents are fresh ids, and the disconnect-is-departure case reconnects",
        ),
        (
            "disconnect-unannounced",
            "needs a member that stays while another disconnects; a fuzz case's agents leave together at its end, and the disconnect-is-departure case judges the departure",
        ),
        (
            "lone-member-ghost",
            "needs a later joiner of a space whose only member's connection ended; a fuzz case's spaces are its own and nobody joins them after its end, which the disconnect-is-departure case does",
        ),
        (
            "every-end-a-cut",
            "needs a client's Close and the wait for the server's; a fuzz case's connections end by dropping, and the close-handshake case closes by the handshake",
        ),
        (
            "spaces-never-freed",
            "needs about 10,000 fresh spaces made and emptied; a campaign takes its spaces from a pool it reuses, and the space-churn case makes them",
        ),
        (
            "small-overtakes-stream",
            "needs a streamed message paced out over many deltas and a small one right behind it, judged by arrival order; the fuzzer's flows read each message on its own, and the order-stream-then-small case does this",
        ),
        (
            "disconnect-drops-all",
            "needs three members of one space, one of which disconnects while the others go on; a fuzz case's agents leave together at its end, which the disconnect-keeps-others case does not",
        ),
    ],
    connection_per_worker: false,
    // A case waits on round trips and, in the cancel flow, on the cancel grace: 16
    // in flight keep both cores busy.
    workers: 16,
};

fn case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(one_case(f))
}

fn probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let me = fresh_agent("probe");
        let (mut p, _, _) = Peer::join_as(&mut f.ctx, &me).await?;
        let public = f.ctx.profile().agora_spaces.public_space.clone();
        p.join(&mut f.ctx, &public).await?;
        p.close().await;
        Ok(())
    })
}

/// A frame's input sent alone (to shrink it): the event of a fresh registered
/// connection, as a message case sends its event, and the first frame the target
/// answers, read through the frame checks.
fn resend_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let text = String::from_utf8_lossy(&f.sent).into_owned();
        let (mut p, _) = connect(&mut f.ctx, &fresh_agent("alone")).await?;
        p.send_text(&mut f.ctx, text).await?;
        let wait = timeout(&f.ctx);
        p.next_frame(&mut f.ctx, wait).await?;
        p.close().await;
        Ok(())
    })
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum Kind {
    #[default]
    Capacity,
    Message(Template, Vec<Mutation>),
    Raw(Template, Vec<ByteEdit>),
    Spelling(Template, WireForm),
    Flow(FlowSpec),
    Duplicate(DupKind),
    Connect(AgentIdKind, TokenKind),
    /// A cancel flow when the gate is below 16 (it waits out a one-second grace, so
    /// it is kept rare); otherwise a flow with a long text.
    Stream(u8, FlowSpec),
}

enum Shape {
    Mutated(Vec<Mutation>),
    Raw(Vec<ByteEdit>),
    Spelled(WireForm),
}

fn state(f: &FuzzCtx, me: &str, pool: &str) -> St {
    let prof = &f.ctx.profile().agora_spaces;
    St {
        me: me.to_string(),
        joined: Vec::new(),
        public: prof.public_space.clone(),
        full: prof.full_space.clone(),
        missing: prof.missing_space.clone(),
        tok: hex(12),
        pool: pool.to_string(),
    }
}

/// One event on a registered connection: a template, mutated, edited or respelled.
async fn message(f: &mut FuzzCtx, pool: &str, t: Template, shape: Shape) -> FuzzStep<()> {
    let me = fresh_agent("msg");
    let mut st = state(f, &me, pool);
    let (mut p, _) = connect(&mut f.ctx, &me).await?;
    if matches!(
        t,
        Template::LeaveJoined | Template::PublishJoined(_) | Template::Cancel
    ) {
        if join_setup(&mut f.ctx, &mut p, pool).await?.is_none() {
            // The target creates no spaces: use the public one.
            st.pool = st.public.clone();
            join_setup(&mut f.ctx, &mut p, &st.public.clone()).await?;
        }
        st.joined.push(st.pool.clone());
    }
    let mut v = template(&t, &st);
    let (text, want, rid, what, subject) = match shape {
        Shape::Mutated(muts) => {
            for m in muts.iter().take(3) {
                mutate(&mut v, m, &st);
            }
            let (want, rid) = want_for(&v, &st);
            let subject = value_subject(&v, &st);
            (v.to_string(), want, rid, "the mutated event", subject)
        }
        Shape::Spelled(w) => {
            let (want, rid) = want_for(&v, &st);
            let text = String::from_utf8_lossy(&respell(&v, w)).into_owned();
            (
                text,
                want,
                rid,
                "the respelled event",
                value_subject(&v, &st),
            )
        }
        Shape::Raw(edits) => {
            let bytes = edit_bytes(v.to_string().into_bytes(), &edits);
            // A text frame carries UTF-8: invalid bytes become U+FFFD.
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let (want, rid, subject) = match parse(text.as_bytes()) {
                Parsed::Json(v) => {
                    let (want, rid) = want_for(&v, &st);
                    (want, rid, value_subject(&v, &st))
                }
                Parsed::NotJson => (Expected::Reject(invalid()), None, None),
                Parsed::Ambiguous => (open("JSON readers disagree on the event"), None, None),
            };
            (text, want, rid, "the edited event", subject)
        }
    };
    f.fuzzed(text.as_bytes());
    under(
        subject,
        exchange(f, &mut p, text, &want, rid.as_deref(), what).await,
    )?;
    p.close().await;
    Ok(())
}

/// The conformance case whose subject a kind is: a fuzz finding of it is filed
/// under that case's key, the key `run` gives the same deviation. A flow (of several
/// subjects), an edited or respelled event and a drawn agent id keep the key the
/// requirements their finding cites give (`fuzzing::corpus::rule_for`).
fn subject(kind: &Kind, token: bool) -> Option<&'static str> {
    match kind {
        Kind::Capacity => Some("agora-spaces/space-full"),
        Kind::Duplicate(_) => Some("agora-spaces/duplicate-agent"),
        Kind::Connect(AgentIdKind::Missing, TokenKind::Profile) => {
            Some("agora-spaces/missing-agent-id")
        }
        Kind::Connect(AgentIdKind::Plain, TokenKind::Missing | TokenKind::Wrong(_)) if token => {
            Some("agora-spaces/unauthorized")
        }
        Kind::Stream(gate, _) if *gate < 16 => Some("agora-spaces/delta-cancel"),
        // A message's subject is that of the message as sent (`message`).
        _ => None,
    }
}

/// The case whose subject a message as sent is, when one case's is: a join by the
/// space it names (the profile's public, full or missing space, a never-created
/// system space, or a drawn name), a list, a registration, a heartbeat. A mutated,
/// edited or respelled message is judged by what it became, so it is filed by it.
fn value_subject(v: &Value, st: &St) -> Option<&'static str> {
    let msg = v.as_object()?;
    match msg.get("type")?.as_str()? {
        "space.join" => {
            let s = msg.get("space")?.as_str()?;
            Some(if s == st.public {
                "agora-spaces/join-general"
            } else if st.full.as_deref() == Some(s) {
                "agora-spaces/space-full"
            } else if s == st.missing || (is_system_name(s) && s.contains(&st.tok)) {
                "agora-spaces/join-missing"
            } else {
                "agora-spaces/space-names"
            })
        }
        "space.list" => Some("agora-spaces/space-list"),
        "agent.register" => Some("agora-spaces/register-explicit"),
        "agent.heartbeat" => Some("agora-spaces/heartbeat-keepalive"),
        _ => None,
    }
}

async fn run_kind(f: &mut FuzzCtx, kind: Kind) -> FuzzStep<()> {
    match kind {
        Kind::Capacity => capacity(f).await,
        Kind::Message(t, muts) => {
            with_pool(f, move |f, pool| {
                Box::pin(message(f, pool, t, Shape::Mutated(muts)))
            })
            .await
        }
        Kind::Raw(t, edits) => {
            with_pool(f, move |f, pool| {
                Box::pin(message(f, pool, t, Shape::Raw(edits)))
            })
            .await
        }
        Kind::Spelling(t, w) => {
            with_pool(f, move |f, pool| {
                Box::pin(message(f, pool, t, Shape::Spelled(w)))
            })
            .await
        }
        Kind::Flow(spec) => with_pool(f, move |f, pool| Box::pin(flow(f, pool, spec))).await,
        Kind::Stream(gate, _) if gate < 16 => {
            let leave = gate % 2 == 1;
            with_pool(f, move |f, pool| Box::pin(cancel(f, pool, leave))).await
        }
        Kind::Stream(_, mut spec) => {
            if !matches!(spec.text, TextKind::Long(_) | TextKind::JustAbove) {
                spec.text = TextKind::Long(3);
            }
            with_pool(f, move |f, pool| Box::pin(flow(f, pool, spec))).await
        }
        Kind::Duplicate(d) => duplicate(f, d).await,
        Kind::Connect(a, t) => connect_case(f, a, t).await,
    }
}

// ---------------------------------------------------------------------------
// Cases.

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let kind: Kind = f.draw();
    let token = f.ctx.profile().target.token.is_some();
    let key = subject(&kind, token);
    let connect = matches!(kind, Kind::Connect(..));
    let from = f.ctx.findings().len();
    match run_kind(f, kind).await {
        // A registration that failed on the way to another subject is the
        // handshake's finding, whatever the kind.
        Err(FuzzStop::Found(x)) if x.oracle == Oracle::Handshake && !connect => {
            Err(FuzzStop::Found(x))
        }
        // A deviation the reply checks recorded on the way (an error without a
        // code or a request_id) is the cause of a later verdict that trips over
        // it: the case files the first, as `run` does, not the cascade.
        Err(FuzzStop::Found(x)) => {
            rules_since(&f.ctx, from)?;
            under(key, Err(FuzzStop::Found(x)))
        }
        r => under(key, r),
    }
}

/// Sends one event as `text` and judges what it draws against `want`: the answer
/// when one is due, else whatever arrives before the barrier's answer.
async fn exchange(
    f: &mut FuzzCtx,
    p: &mut Peer,
    text: String,
    want: &Want,
    rid: Option<&str>,
    what: &str,
) -> FuzzStep<()> {
    let ctx = &mut f.ctx;
    let me = p.agent_id.clone();
    p.send_text(ctx, text).await?;
    let quiet = matches!(want, Expected::Accept(Shows::Quiet, _));
    let answer = match want {
        Expected::Accept(Shows::Quiet, _) | Expected::Open(_) => {
            return judge_until_barrier(ctx, p, quiet, rid, what, &me).await;
        }
        _ => {
            p.expect(ctx, &format!("an answer to {what}"), is_answer)
                .await?
        }
    };
    if answer["type"] == "error" {
        check_error(ctx, &answer, rid)?;
    }
    judge_answer(&answer, want, rid, what, &me)
}

/// Judges the answer to an event against `want`: for a refusal an error with a
/// code the verdict allows, else space.joined for the space (ASP-022, ASP-023),
/// agent.registered for the agent (ASP-008, ASP-010, ASP-011) or the space list
/// (ASP-038, ASP-039).
fn judge_answer(
    answer: &Value,
    want: &Want,
    rid: Option<&str>,
    what: &str,
    me: &str,
) -> FuzzStep<()> {
    let code = answer["code"].as_str().unwrap_or_default();
    match want {
        Expected::Accept(Shows::Quiet, _) | Expected::Open(_) => Ok(()),
        Expected::Reject(codes) => {
            if answer["type"] != "error" {
                return finding(
                    Oracle::Verdict,
                    format!("expected an error for {what}; got {answer}"),
                );
            }
            if !allows(codes, code) {
                return finding(
                    Oracle::Verdict,
                    format!("{what} drew {code}, expected {codes}: {answer}"),
                );
            }
            Ok(())
        }
        Expected::Accept(Shows::Joined(space), codes) => {
            judge_joined(answer, space, codes, rid, what, me)
        }
        Expected::Accept(Shows::Registered, codes) => {
            judge_registered(answer, codes, rid, what, me)
        }
        Expected::Accept(Shows::List, _) => {
            if answer["type"] == "error" {
                return if code == RATE_LIMITED {
                    Ok(())
                } else {
                    finding(
                        Oracle::Verdict,
                        format!("{what} drew {answer}; expected the space list (ASP-038, ASP-039)"),
                    )
                };
            }
            check_list(answer, rid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind drawn with a subject, and its key.
    fn subjects() -> Vec<(Kind, bool, &'static str)> {
        vec![
            (Kind::Capacity, false, "agora-spaces/space-full"),
            (
                Kind::Duplicate(DupKind::Reconnect),
                false,
                "agora-spaces/duplicate-agent",
            ),
            (
                Kind::Connect(AgentIdKind::Missing, TokenKind::Profile),
                false,
                "agora-spaces/missing-agent-id",
            ),
            (
                Kind::Connect(AgentIdKind::Plain, TokenKind::Missing),
                true,
                "agora-spaces/unauthorized",
            ),
            (
                Kind::Stream(0, FlowSpec::default()),
                false,
                "agora-spaces/delta-cancel",
            ),
        ]
    }

    /// Every template whose message as sent is one case's subject, and its key.
    fn message_subjects() -> Vec<(Template, &'static str)> {
        vec![
            (Template::JoinPublic, "agora-spaces/join-general"),
            (Template::JoinMissing, "agora-spaces/join-missing"),
            (
                Template::JoinName(NameKind::Upper),
                "agora-spaces/space-names",
            ),
            (Template::List, "agora-spaces/space-list"),
            (Template::Register, "agora-spaces/register-explicit"),
            (Template::Heartbeat, "agora-spaces/heartbeat-keepalive"),
            (Template::JoinFull, "agora-spaces/space-full"),
        ]
    }

    /// A case's state as a fuzz case sees it, from the default profile.
    fn st() -> St {
        let prof = crate::profile::Profile::default().agora_spaces;
        St {
            me: "fz-me".into(),
            joined: Vec::new(),
            public: prof.public_space,
            full: Some("user.full".into()),
            missing: prof.missing_space,
            tok: "0123abcd".into(),
            pool: "user.pool".into(),
        }
    }

    #[test]
    fn each_subject_is_a_case_of_the_suite() {
        let ids: Vec<&str> = crate::suites::agora_spaces::CASES
            .iter()
            .map(|c| c.id)
            .collect();
        for (kind, token, key) in subjects() {
            assert_eq!(subject(&kind, token), Some(key), "{kind:?}");
            assert!(ids.contains(&key), "{key} is no agora-spaces case");
        }
        // A message is filed by what it sends (a respelling sends the same value).
        let st = st();
        for (t, key) in message_subjects() {
            let v = template(&t, &st);
            assert_eq!(value_subject(&v, &st), Some(key), "{t:?}: {v}");
            assert!(ids.contains(&key), "{key} is no agora-spaces case");
        }
    }

    #[test]
    fn edited_events_flows_and_tokens_nobody_set_keep_their_cited_keys() {
        let st = st();
        let mut edited = template(&Template::JoinPublic, &st);
        mutate(&mut edited, &Mutation::RemoveType, &st);
        assert_eq!(value_subject(&edited, &st), None, "{edited}");
        let message = Kind::Message(Template::JoinPublic, vec![Mutation::Keep]);
        assert_eq!(subject(&message, false), None);
        assert_eq!(subject(&Kind::Flow(FlowSpec::default()), false), None);
        let no_token = Kind::Connect(AgentIdKind::Plain, TokenKind::Missing);
        assert_eq!(subject(&no_token, false), None);
    }
}
