//! Live fuzzing of agora-spaces (agora-spaces.zh.md): WebSocket events sent on a
//! registered connection, built from templates (join, leave, publish, list,
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
//! Oracles, beyond the checks every server frame gets (`suites::agora_spaces::expect::
//! check_frame`: a JSON object with a string type, valid against its schema):
//! - an error answering a request with a string id carries it as request_id, by the
//!   rule `run` applies (`expect::check_request_id`, ASP-041); its code is judged by
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

use crate::drive::Transport;
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, Val, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{
    finding, first_failing, rules_since, skip, under, Codes, Expected, FuzzFuture, FuzzStep,
    FuzzStop, Oracle,
};
use crate::script::{describe_drive_error, Ctx};
use crate::suites::agora_spaces::expect::{
    check_request_id, distinct_connections, is_system_name, joined_findings, judge_stream,
    list_finding, now_s, registered_finding, update_finding, Peer,
};
use crate::suites::agora_spaces::rules;
use arbitrary::Arbitrary;
use reference_impl::wire::new_id;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

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

/// The event type of the barrier: one no spec defines.
const BARRIER_TYPE: &str = "fz.barrier";
const RATE_LIMITED: &str = "RATE_LIMITED";

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

fn hex(n: usize) -> String {
    new_id().replace('-', "").chars().take(n.min(32)).collect()
}

fn fresh_agent(tag: &str) -> String {
    format!("fz-{tag}-{}", hex(16))
}

fn rid_of(kind: &str) -> String {
    format!("fz-{kind}-{}", hex(10))
}

fn timeout(ctx: &Ctx) -> Duration {
    Duration::from_millis(ctx.profile().timing.case_timeout_ms)
}

/// A text of exactly `len` bytes; `fancy` mixes in multi-byte characters and
/// characters JSON escapes.
fn sized(len: usize, fancy: bool) -> String {
    const UNIT: &str = "agents · 日本語 · 🙂 · \"q\" \\ \t\n ";
    let mut s = String::with_capacity(len);
    if fancy {
        for c in UNIT.chars().cycle() {
            if s.len() + c.len_utf8() > len {
                break;
            }
            s.push(c);
        }
    }
    s.push_str(&"x".repeat(len.saturating_sub(s.len())));
    s
}

fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

// ---------------------------------------------------------------------------
// Space pool: flows use a space of their own without creating one per case.

/// Takes a space name from the run's pool (or a new one); the pool lives in the
/// run's memo and is shared by the workers.
fn lease(f: &FuzzCtx) -> String {
    let mut g = f.memo.lock().unwrap_or_else(|p| p.into_inner());
    let m = g.get_or_insert_with(|| json!({"tag": hex(8), "free": [], "next": 0}));
    if let Some(Value::String(name)) = m["free"].as_array_mut().and_then(Vec::pop) {
        return name;
    }
    let n = m["next"].as_u64().unwrap_or(0);
    m["next"] = json!(n + 1);
    format!("fzpool-{}-{n}", m["tag"].as_str().unwrap_or("x"))
}

fn release(f: &FuzzCtx, name: String) {
    let mut g = f.memo.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(a) = g.as_mut().and_then(|m| m["free"].as_array_mut()) {
        a.push(json!(name));
    }
}

// ---------------------------------------------------------------------------
// Draws.

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum SysPrefix {
    #[default]
    Agent,
    File,
    Mcp,
}

/// A space name: generated (fresh for the case) or drawn.
#[derive(Debug, Clone, Default, Arbitrary)]
enum NameKind {
    #[default]
    User,
    UserMarks,
    Task,
    System(SysPrefix),
    Upper,
    Spaced,
    Dotted,
    Pool,
    Empty,
    Drawn(String),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum TextKind {
    #[default]
    Plain,
    Drawn(String),
    Empty,
    Fancy(u8),
    AtThreshold,
    JustAbove,
    Long(u8),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum Template {
    #[default]
    List,
    JoinPublic,
    JoinName(NameKind),
    JoinMissing,
    JoinFull,
    LeaveJoined,
    LeaveName(NameKind),
    PublishJoined(TextKind),
    PublishName(NameKind),
    Register,
    Heartbeat,
    Cancel,
    Unknown(u8),
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum AgentField {
    #[default]
    Id,
    Type,
    Capabilities,
    Metadata,
}

impl AgentField {
    fn key(self) -> &'static str {
        match self {
            AgentField::Id => "id",
            AgentField::Type => "type",
            AgentField::Capabilities => "capabilities",
            AgentField::Metadata => "metadata",
        }
    }
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum Mutation {
    #[default]
    Keep,
    RemoveId,
    Id(Val),
    Type(Val),
    TypeUpper,
    RemoveType,
    Space(Val),
    SpaceName(NameKind),
    RemoveSpace,
    Data(Val),
    Text(Val),
    From(Val),
    DataTimestamp(Val),
    RemoveText,
    Timestamp(Val),
    RemoveTimestamp,
    Extra(u8, Val),
    JsonRpc,
    Agent(Val),
    AgentField(AgentField, Val),
    RemoveAgentField(AgentField),
    OtherAgentId,
    EventId(Val),
    Spaces(Val),
    NotAnObject(Val),
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum FromKind {
    #[default]
    Own,
    Omit,
    Spoof,
}

#[derive(Debug, Clone, Default, Arbitrary)]
struct FlowSpec {
    text: TextKind,
    from: FromKind,
    leave: bool,
    /// A space.list at the end when below 64.
    list: u8,
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum DupKind {
    #[default]
    Reconnect,
    RegisterOther,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum AgentIdKind {
    #[default]
    Plain,
    Drawn(String),
    Reserved,
    Unicode,
    Long(u8),
    Empty,
    Missing,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum TokenKind {
    #[default]
    Profile,
    Missing,
    Wrong(String),
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

// ---------------------------------------------------------------------------
// The verdict model.

/// What a carried-out event must draw.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shows {
    /// space.joined for this space (echoing the id, listing the joiner).
    Joined(String),
    /// agent.registered (echoing the id, naming the agent).
    Registered,
    /// A space.list reply echoing the id.
    List,
    /// No error (a reply of another kind is allowed).
    Quiet,
}

/// What the spec fixes for one event: refusals by their error code; the spec's
/// own "any" is any code of its table (agora-spaces.zh.md §6), and RATE_LIMITED is
/// always allowed.
type Want = Expected<Shows, &'static str>;

/// Whether `codes` allow an error with `code`. Where any refusal will do, any code
/// will: one outside the spec's six is the frame checks' warning
/// (`error:unknown-code:*`, ASP-042), as in `run`, not a fuzz finding.
fn allows(codes: &Codes<&'static str>, code: &str) -> bool {
    code == RATE_LIMITED
        || match codes {
            Codes::Any => true,
            Codes::OneOf(c) => c.contains(&code),
        }
}

fn invalid() -> Codes<&'static str> {
    Codes::OneOf(vec!["INVALID_REQUEST"])
}

fn only(codes: &[&'static str]) -> Codes<&'static str> {
    Codes::OneOf(codes.to_vec())
}

fn open(why: &str) -> Want {
    Expected::Open(why.into())
}

/// What a case knows when it sends an event.
struct St {
    me: String,
    joined: Vec<String>,
    public: String,
    full: Option<String>,
    missing: String,
    /// The case's fresh token: a name containing it was never created.
    tok: String,
    pool: String,
}

fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// A user space name of the naming table: `[a-z0-9_-]+` or `task.` plus one.
fn is_user_name(s: &str) -> bool {
    plain_name(s) || s.strip_prefix("task.").is_some_and(plain_name)
}

fn name_for(k: &NameKind, st: &St) -> String {
    let t = &st.tok;
    match k {
        NameKind::User => format!("fz-{t}"),
        NameKind::UserMarks => format!("fz_{t}-x_1"),
        NameKind::Task => format!("task.fz-{t}"),
        NameKind::System(p) => {
            let p = match p {
                SysPrefix::Agent => "agent",
                SysPrefix::File => "file",
                SysPrefix::Mcp => "mcp",
            };
            format!("{p}.fz-{t}")
        }
        NameKind::Upper => format!("Fz-{t}"),
        NameKind::Spaced => format!("fz {t}"),
        NameKind::Dotted => format!("fz.{t}.x"),
        NameKind::Pool => st.pool.clone(),
        NameKind::Empty => String::new(),
        NameKind::Drawn(s) => clip(s, 64),
    }
}

/// The verdict for joining `s`.
fn want_join(s: &str, st: &St) -> Want {
    if st.joined.iter().any(|j| j == s) {
        return open("a second join of a joined space is not fixed");
    }
    if s == st.public {
        return Expected::Accept(Shows::Joined(s.into()), Codes::none());
    }
    if st.full.as_deref() == Some(s) {
        return Expected::Accept(Shows::Joined(s.into()), only(&["SPACE_FULL"]));
    }
    if s == st.missing {
        return Expected::Reject(only(&["SPACE_NOT_FOUND"]));
    }
    if s.bytes().any(|b| b.is_ascii_uppercase() || b == b' ') {
        return Expected::Reject(Codes::Any);
    }
    if is_system_name(s) && s.contains(&st.tok) {
        return Expected::Reject(Codes::Any);
    }
    if is_user_name(s) {
        return Expected::Accept(Shows::Joined(s.into()), only(&["SPACE_NOT_FOUND"]));
    }
    open("a space name of no kind the spec names")
}

fn want_register(msg: &serde_json::Map<String, Value>, st: &St) -> Want {
    let Some(agent) = msg.get("agent").and_then(Value::as_object) else {
        return Expected::Reject(invalid());
    };
    let mut unsure = false;
    let mut bad = false;
    match agent.get("id") {
        None | Some(Value::Null) => unsure = true,
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(_) => bad = true,
    }
    match agent.get("capabilities") {
        None => {}
        Some(Value::Null) => unsure = true,
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        Some(_) => bad = true,
    }
    match agent.get("metadata") {
        None | Some(Value::Object(_)) => {}
        Some(Value::Null) => unsure = true,
        Some(_) => bad = true,
    }
    if !agent.get("type").is_none_or(Value::is_string) {
        unsure = true;
    }
    if bad {
        return Expected::Reject(invalid());
    }
    if unsure {
        return open("a null or non-string member the spec does not judge");
    }
    if agent.get("id").and_then(Value::as_str) == Some(st.me.as_str()) {
        Expected::Accept(Shows::Registered, only(&["AGENT_EXISTS"]))
    } else {
        open("another id than the URL's is informational (ambiguity ASP-A3)")
    }
}

fn want_publish(msg: &serde_json::Map<String, Value>, st: &St) -> Want {
    let Some(space) = msg.get("space").and_then(Value::as_str) else {
        return Expected::Reject(only(&["INVALID_REQUEST", "SPACE_NOT_FOUND"]));
    };
    let member = st.joined.iter().any(|j| j == space);
    let text_ok = msg
        .get("data")
        .and_then(Value::as_object)
        .is_some_and(|d| d.get("text").is_some_and(Value::is_string));
    if !text_ok {
        return Expected::Reject(if member { invalid() } else { Codes::Any });
    }
    if !member {
        return open("publishing outside one's spaces (ambiguity ASP-A15)");
    }
    let data = msg.get("data").and_then(Value::as_object);
    let from_ok = data
        .and_then(|d| d.get("from"))
        .is_none_or(|f| f.as_str() == Some(st.me.as_str()));
    let ts_ok = data
        .and_then(|d| d.get("timestamp"))
        .is_none_or(Value::is_number);
    if from_ok && ts_ok {
        Expected::Accept(Shows::Quiet, Codes::none())
    } else {
        open("another data.from may be rewritten, relayed or refused (ambiguity ASP-A11)")
    }
}

/// The verdict for `v`, and the request id an error must carry.
fn want_for(v: &Value, st: &St) -> (Want, Option<String>) {
    let Some(msg) = v.as_object() else {
        return (Expected::Reject(invalid()), None);
    };
    let rid = match msg.get("id") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            let why = "a non-string id: the schemas want a string; not judged (ambiguity ASP-A7)";
            return (open(why), None);
        }
    };
    if !msg.get("timestamp").is_none_or(Value::is_number) {
        return (open("a timestamp that is not a number is not judged"), rid);
    }
    let Some(ty) = msg.get("type").and_then(Value::as_str) else {
        return (Expected::Reject(invalid()), rid);
    };
    let space = msg.get("space");
    let want = match ty {
        "agent.register" => want_register(msg, st),
        "agent.heartbeat" if msg.get("timestamp").is_some() => {
            Expected::Accept(Shows::Quiet, Codes::none())
        }
        "agent.heartbeat" => open("a heartbeat without a timestamp is not judged"),
        "space.join" => match space {
            Some(Value::String(s)) => want_join(s, st),
            None => Expected::Reject(invalid()),
            Some(_) => Expected::Reject(only(&["INVALID_REQUEST", "SPACE_NOT_FOUND"])),
        },
        "space.leave" => match space {
            Some(Value::String(s)) if st.joined.iter().any(|j| j == s) => {
                Expected::Accept(Shows::Quiet, Codes::none())
            }
            Some(Value::String(_)) => open("leaving a space one is not in (ambiguity ASP-A14)"),
            _ => Expected::Reject(only(&["INVALID_REQUEST", "SPACE_NOT_FOUND"])),
        },
        "space.publish" => want_publish(msg, st),
        "space.list" if msg.contains_key("spaces") => {
            open("a space.list that carries a list of its own is not judged")
        }
        "space.list" => Expected::Accept(Shows::List, Codes::none()),
        // Cancels are informational (ambiguity ASP-A13); server-to-client types
        // sent by a client are not covered by the spec.
        "space.event.cancel" | "agent.registered" | "space.joined" | "space.members"
        | "space.event" | "space.event.delta" | "space.event.done" | "error" => {
            open("cancels and server-to-client types are not judged")
        }
        _ => Expected::Reject(invalid()),
    };
    (want, rid)
}

// ---------------------------------------------------------------------------
// Templates and mutations.

fn template(t: &Template, st: &St) -> Value {
    let id = rid_of("m");
    let ts = now_s();
    match t {
        Template::List => json!({"type": "space.list", "id": id, "timestamp": ts}),
        Template::JoinPublic => {
            json!({"type": "space.join", "id": id, "space": st.public, "timestamp": ts})
        }
        Template::JoinName(k) => {
            json!({"type": "space.join", "id": id, "space": name_for(k, st), "timestamp": ts})
        }
        Template::JoinMissing => {
            json!({"type": "space.join", "id": id, "space": st.missing, "timestamp": ts})
        }
        Template::JoinFull => {
            let s = st.full.clone().unwrap_or_else(|| st.public.clone());
            json!({"type": "space.join", "id": id, "space": s, "timestamp": ts})
        }
        Template::LeaveJoined => {
            json!({"type": "space.leave", "id": id, "space": st.pool, "timestamp": ts})
        }
        Template::LeaveName(k) => {
            json!({"type": "space.leave", "id": id, "space": name_for(k, st), "timestamp": ts})
        }
        Template::PublishJoined(k) => json!({"type": "space.publish", "id": id, "space": st.pool,
            "data": {"from": st.me, "text": short_text(k), "timestamp": ts}, "timestamp": ts}),
        Template::PublishName(k) => {
            json!({"type": "space.publish", "id": id, "space": name_for(k, st),
            "data": {"from": st.me, "text": "hello", "timestamp": ts}, "timestamp": ts})
        }
        Template::Register => json!({"type": "agent.register", "id": id, "timestamp": ts,
            "agent": {"id": st.me, "type": "process", "capabilities": ["text", "code_execution"],
                      "metadata": {"version": "1.0.0", "os": "linux"}}}),
        Template::Heartbeat => json!({"type": "agent.heartbeat", "timestamp": ts}),
        Template::Cancel => json!({"type": "space.event.cancel", "space": st.pool,
            "event_id": format!("evt_fz{}", st.tok)}),
        Template::Unknown(n) => json!({"type": format!("fz.unknown.{}", n % 8), "id": id}),
    }
}

/// Texts for single-message publishes: kept small.
fn short_text(k: &TextKind) -> String {
    match k {
        TextKind::Drawn(s) => clip(s, 64),
        TextKind::Empty => String::new(),
        TextKind::Fancy(n) => sized(usize::from(*n), true),
        _ => "hello everyone".into(),
    }
}

fn text_for(k: &TextKind, threshold: usize) -> String {
    match k {
        TextKind::Plain => "Hello everyone".into(),
        TextKind::Drawn(s) => clip(s, 200),
        TextKind::Empty => String::new(),
        TextKind::Fancy(n) => sized(usize::from(*n) * 4, true),
        TextKind::AtThreshold => sized(threshold, true),
        TextKind::JustAbove => sized(threshold + 1, true),
        TextKind::Long(n) => sized(
            threshold * (2 + usize::from(*n % 6)) + usize::from(*n),
            true,
        ),
    }
}

type Obj = serde_json::Map<String, Value>;

/// The object member `key` of `o`, set to `init` first when it is not an object.
fn member_object<'a>(o: &'a mut Obj, key: &str, init: Value) -> Option<&'a mut Obj> {
    if !o.get(key).is_some_and(Value::is_object) {
        o.insert(key.into(), init);
    }
    o.get_mut(key).and_then(Value::as_object_mut)
}

/// Applies one mutation to the event; a value that is not an object is left as it
/// is.
fn mutate(v: &mut Value, m: &Mutation, st: &St) {
    let Some(o) = v.as_object_mut() else {
        return;
    };
    match m {
        Mutation::Text(_)
        | Mutation::From(_)
        | Mutation::DataTimestamp(_)
        | Mutation::RemoveText => mutate_data(o, m),
        Mutation::Agent(_)
        | Mutation::AgentField(..)
        | Mutation::RemoveAgentField(_)
        | Mutation::OtherAgentId => mutate_agent(o, m, st),
        Mutation::NotAnObject(x) => *v = x.json(),
        Mutation::Keep
        | Mutation::RemoveId
        | Mutation::Id(_)
        | Mutation::Type(_)
        | Mutation::TypeUpper
        | Mutation::RemoveType
        | Mutation::Space(_)
        | Mutation::SpaceName(_)
        | Mutation::RemoveSpace
        | Mutation::Data(_) => mutate_envelope(o, m, st),
        Mutation::Timestamp(_)
        | Mutation::RemoveTimestamp
        | Mutation::Extra(..)
        | Mutation::JsonRpc
        | Mutation::EventId(_)
        | Mutation::Spaces(_) => mutate_extra(o, m),
    }
}

/// Applies a mutation of the event's id, type, space or data as a whole; `Keep`
/// leaves the event as it is.
fn mutate_envelope(o: &mut Obj, m: &Mutation, st: &St) {
    match m {
        Mutation::RemoveId => {
            o.remove("id");
        }
        Mutation::Id(x) => {
            o.insert("id".into(), x.json());
        }
        Mutation::Type(x) => {
            o.insert("type".into(), x.json());
        }
        Mutation::TypeUpper => {
            if let Some(t) = o
                .get("type")
                .and_then(Value::as_str)
                .map(str::to_ascii_uppercase)
            {
                o.insert("type".into(), json!(t));
            }
        }
        Mutation::RemoveType => {
            o.remove("type");
        }
        Mutation::Space(x) => {
            o.insert("space".into(), x.json());
        }
        Mutation::SpaceName(k) => {
            o.insert("space".into(), json!(name_for(k, st)));
        }
        Mutation::RemoveSpace => {
            o.remove("space");
        }
        Mutation::Data(x) => {
            o.insert("data".into(), x.json());
        }
        _ => {}
    }
}

/// Applies a mutation of the timestamp, an extra member, jsonrpc, event_id or
/// spaces.
fn mutate_extra(o: &mut Obj, m: &Mutation) {
    match m {
        Mutation::Timestamp(x) => {
            o.insert("timestamp".into(), x.json());
        }
        Mutation::RemoveTimestamp => {
            o.remove("timestamp");
        }
        Mutation::Extra(i, x) => {
            o.insert(format!("x-fuzz-{}", i % 4), x.json());
        }
        Mutation::JsonRpc => {
            // Neither required nor rejected (ambiguity ASP-A1).
            o.insert("jsonrpc".into(), json!("2.0"));
        }
        Mutation::EventId(x) => {
            o.insert("event_id".into(), x.json());
        }
        Mutation::Spaces(x) => {
            o.insert("spaces".into(), x.json());
        }
        _ => {}
    }
}

/// Applies a mutation of the members of `data` (text, from, timestamp), making
/// `data` an object first where a member is set.
fn mutate_data(o: &mut Obj, m: &Mutation) {
    match m {
        Mutation::Text(x) => {
            if let Some(d) = member_object(o, "data", json!({})) {
                d.insert("text".into(), x.json());
            }
        }
        Mutation::From(x) => {
            if let Some(d) = member_object(o, "data", json!({})) {
                d.insert("from".into(), x.json());
            }
        }
        Mutation::DataTimestamp(x) => {
            if let Some(d) = member_object(o, "data", json!({})) {
                d.insert("timestamp".into(), x.json());
            }
        }
        Mutation::RemoveText => {
            if let Some(d) = o.get_mut("data").and_then(Value::as_object_mut) {
                d.remove("text");
            }
        }
        _ => {}
    }
}

/// Applies a mutation of `agent` or its members, making `agent` an object naming
/// the case's agent first where a member is set.
fn mutate_agent(o: &mut Obj, m: &Mutation, st: &St) {
    let me = json!({"id": st.me});
    match m {
        Mutation::Agent(x) => {
            o.insert("agent".into(), x.json());
        }
        Mutation::AgentField(k, x) => {
            let mut val = x.json();
            // An empty agent id is not drawn: the embedded reference registers it,
            // answering with an agent.registered whose empty agent.id breaks the
            // schema (ASP-012); a known deviation, kept out of the clean runs.
            if matches!(k, AgentField::Id) && val == json!("") {
                val = json!(fresh_agent("other"));
            }
            if let Some(a) = member_object(o, "agent", me.clone()) {
                a.insert(k.key().into(), val);
            }
        }
        Mutation::RemoveAgentField(k) => {
            if let Some(a) = o.get_mut("agent").and_then(Value::as_object_mut) {
                a.remove(k.key());
            }
        }
        Mutation::OtherAgentId => {
            if let Some(a) = member_object(o, "agent", me.clone()) {
                a.insert("id".into(), json!(fresh_agent("other")));
            }
        }
        _ => {}
    }
}

/// How the frame reads: the model judges only what both a strict reader (the
/// project's) and serde_json read alike.
enum Parsed {
    Json(Value),
    NotJson,
    Ambiguous,
}

fn parse(bytes: &[u8]) -> Parsed {
    let strict = reference_impl::wire::json::parse(bytes).map(|t| t.to_serde());
    let loose = serde_json::from_slice::<Value>(bytes);
    match (strict, loose) {
        (Ok(a), Ok(b)) if a == b => Parsed::Json(b),
        (Err(_), Err(_)) => Parsed::NotJson,
        _ => Parsed::Ambiguous,
    }
}

// ---------------------------------------------------------------------------
// Exchanges.

/// An error a case sees, judged by the suite's rules: its code by the checks every
/// frame gets when it is read (`error:code`, ASP-042 by `error:unknown-code`), and
/// the request id when the request carried one (`check_request_id`, ASP-041).
fn check_error(ctx: &mut Ctx, e: &Value, rid: Option<&str>) -> FuzzStep<()> {
    let Some(rid) = rid else {
        return Ok(());
    };
    let from = ctx.findings().len();
    check_request_id(ctx, e, rid);
    rules_since(ctx, from)
}

/// Sends the barrier and returns every frame that arrived before its answer (and
/// any queued before), plus whether the connection was closed instead. `strict`:
/// every request so far carried a string id, so an error without request_id is a
/// finding.
async fn barrier(ctx: &mut Ctx, p: &mut Peer, strict: bool) -> FuzzStep<(Vec<Value>, bool)> {
    if p.closed {
        return Ok((p.drain(ctx, Duration::ZERO).await?, true));
    }
    let bid = format!("fzb-{}", hex(12));
    p.send(ctx, &json!({"type": BARRIER_TYPE, "id": bid}))
        .await?;
    let wait = timeout(ctx);
    let mut early = Vec::new();
    loop {
        let want = bid.clone();
        let got = p
            .wait_for(ctx, wait, move |v| {
                v["type"] == "error"
                    && (v["request_id"] == want.as_str() || v.get("request_id").is_none())
            })
            .await?;
        match got {
            None if p.closed => {
                let mut frames = early;
                frames.extend(p.drain(ctx, Duration::ZERO).await?);
                return Ok((frames, true));
            }
            // An error without request_id came, and none with it: the barrier's
            // answer lacked its id (the rule `run` applies, error:request-id).
            None if !early.is_empty() => {
                return under(
                    Some(rules::ERROR_REQUEST_ID.key),
                    finding(
                        Oracle::RequestId,
                        format!("an event of unknown type {BARRIER_TYPE} with id {bid:?} drew no error with that request_id within {} ms, only an error without request_id (ASP-041): {}", wait.as_millis(), early[0]),
                    ),
                );
            }
            None => {
                return finding(
                    Oracle::Barrier,
                    format!("an event of unknown type {BARRIER_TYPE} with id {bid:?} drew no INVALID_REQUEST with that request_id within {} ms (ASP-041, ASP-043)", wait.as_millis()),
                )
            }
            Some(e) if e["request_id"] == bid.as_str() => {
                if e["code"] != "INVALID_REQUEST" && e["code"] != RATE_LIMITED {
                    return finding(
                        Oracle::Verdict,
                        format!("an event of unknown type drew {e}, not INVALID_REQUEST (ASP-043)"),
                    );
                }
                let mut frames = early;
                frames.extend(p.drain(ctx, Duration::ZERO).await?);
                return Ok((frames, false));
            }
            // The event had no usable id, so its own error may lack request_id; a
            // second such error answers the barrier.
            Some(e) if strict || !early.is_empty() => {
                return under(
                    Some(rules::ERROR_REQUEST_ID.key),
                    finding(
                        Oracle::RequestId,
                        format!("an error without request_id although the request carried an id (ASP-041): {e}"),
                    ),
                );
            }
            Some(e) => early.push(e),
        }
    }
}

fn is_answer(v: &Value) -> bool {
    matches!(
        v["type"].as_str(),
        Some("error" | "space.joined" | "agent.registered")
    ) || (v["type"] == "space.list" && v.get("spaces").is_some())
}

/// Checks a space.list reply: the echoed id (ASP-021, ASP-038) and the space-list
/// case's rule on its entries.
fn check_list(v: &Value, rid: Option<&str>) -> FuzzStep<()> {
    if let Some(rid) = rid.filter(|r| v["id"] != *r) {
        let said = format!(
            "the space.list reply does not echo id {rid:?} (ASP-021, ASP-038): {}",
            v["id"]
        );
        return finding(Oracle::Verdict, said);
    }
    let spaces = v["spaces"].as_array().map_or(&[][..], Vec::as_slice);
    first_failing(list_finding(spaces).into_iter().collect())
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

/// For an event that draws no answer of its own (`quiet`: no error either, else an
/// open verdict): judges what arrives before the barrier's answer. Errors get the
/// common checks (ASP-041, ASP-042) and, when `quiet`, are a finding unless
/// RATE_LIMITED; a space.joined answering the event must list the joiner `me`
/// (ASP-023); a close after a quiet event is a finding.
async fn judge_until_barrier(
    ctx: &mut Ctx,
    p: &mut Peer,
    quiet: bool,
    rid: Option<&str>,
    what: &str,
    me: &str,
) -> FuzzStep<()> {
    let (frames, closed) = barrier(ctx, p, rid.is_some()).await?;
    for v in &frames {
        if v["type"] == "error" {
            check_error(ctx, v, rid)?;
            if quiet && v["code"] != RATE_LIMITED {
                return finding(Oracle::Verdict, format!("{what} drew an error: {v}"));
            }
        }
        // A space.joined answering the event lists the joiner (joined_findings).
        if v["type"] == "space.joined" && rid.is_none_or(|r| v["id"] == r) {
            let space = v["space"].as_str().unwrap_or_default();
            first_failing(joined_findings(v, None, space, me))?;
        }
    }
    if closed && quiet {
        return finding(
            Oracle::Dropped,
            format!("the target closed the connection after {what}, which draws no error"),
        );
    }
    Ok(())
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

/// Judges an answer due to be space.joined for `space`: an error `codes` allow, or
/// space.joined that [`joined_findings`] passes (ASP-021, ASP-022, ASP-023).
fn judge_joined(
    answer: &Value,
    space: &str,
    codes: &Codes<&'static str>,
    rid: Option<&str>,
    what: &str,
    me: &str,
) -> FuzzStep<()> {
    if !expected_event(
        answer,
        codes,
        what,
        "space.joined",
        "ASP-022, ASP-023",
        None,
    )? {
        return Ok(());
    }
    first_failing(joined_findings(answer, rid, space, me))
}

/// Judges an answer due to be agent.registered: an error `codes` allow, or
/// agent.registered echoing the id (ASP-010, ASP-011) that [`registered_finding`]
/// passes (ASP-008).
fn judge_registered(
    answer: &Value,
    codes: &Codes<&'static str>,
    rid: Option<&str>,
    what: &str,
    me: &str,
) -> FuzzStep<()> {
    let reqs = "ASP-010, ASP-011";
    if !expected_event(answer, codes, what, "agent.registered", reqs, rid)? {
        return Ok(());
    }
    first_failing(registered_finding(answer, me).into_iter().collect())
}

/// The answer is an error `codes` allows (`Ok(false)`: nothing more to check), or an
/// event of type `ty` that echoes the request id `rid` (`Ok(true)`).
fn expected_event(
    answer: &Value,
    codes: &Codes<&'static str>,
    what: &str,
    ty: &str,
    reqs: &str,
    rid: Option<&str>,
) -> FuzzStep<bool> {
    if answer["type"] == "error" {
        let code = answer["code"].as_str().unwrap_or_default();
        return if allows(codes, code) {
            Ok(false)
        } else {
            finding(
                Oracle::Verdict,
                format!("{what} drew {answer}; expected {ty} ({reqs})"),
            )
        };
    }
    if answer["type"] != ty {
        return finding(
            Oracle::Verdict,
            format!("{what} drew {answer}; expected {ty}"),
        );
    }
    match rid {
        Some(rid) if answer["id"] != rid => finding(
            Oracle::Verdict,
            format!("{ty} does not echo the request id {rid:?} (ASP-021): {answer}"),
        ),
        _ => Ok(true),
    }
}

/// Connects as `me` and checks the handshake.
async fn connect(ctx: &mut Ctx, me: &str) -> FuzzStep<(Peer, Value)> {
    connect_taking(ctx, me, 0).await
}

/// [`connect`], taking messages of up to `cap` bytes (at least the profile's cap).
async fn connect_taking(ctx: &mut Ctx, me: &str, cap: usize) -> FuzzStep<(Peer, Value)> {
    let (p, reg, _) = Peer::join_as_taking(ctx, me, cap).await?;
    first_failing(registered_finding(&reg, me).into_iter().collect())?;
    Ok((p, reg))
}

/// Joins `space` as a setup step; `None` when the space does not exist (the target
/// creates no spaces on join, ambiguity ASP-A8).
async fn join_setup(ctx: &mut Ctx, p: &mut Peer, space: &str) -> FuzzStep<Option<Value>> {
    let jid = rid_of("join");
    p.send(
        ctx,
        &json!({"type": "space.join", "id": jid, "space": space, "timestamp": now_s()}),
    )
    .await?;
    let v = p
        .expect(ctx, &format!("an answer to joining {space}"), |v| {
            v["type"] == "space.joined" || v["type"] == "error"
        })
        .await?;
    let what = format!("joining {space}");
    if v["type"] == "error" {
        check_error(ctx, &v, Some(&jid))?;
        return match v["code"].as_str() {
            Some("SPACE_NOT_FOUND") => Ok(None),
            Some(RATE_LIMITED) => skip("the target rate-limits joins (RATE_LIMITED)"),
            _ => finding(Oracle::Verdict, format!("{what} drew {v}")),
        };
    }
    first_failing(joined_findings(&v, Some(&jid), space, &p.agent_id))?;
    Ok(Some(v))
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
            with_pool(f, |f, pool| Box::pin(cancel(f, pool))).await
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

/// Runs `body` with a space leased from the pool, and returns the space after.
async fn with_pool<F>(f: &mut FuzzCtx, body: F) -> FuzzStep<()>
where
    F: for<'a> FnOnce(&'a mut FuzzCtx, &'a str) -> FuzzFuture<'a>,
{
    let pool = lease(f);
    let r = body(f, &pool).await;
    release(f, pool);
    r
}

enum Shape {
    Mutated(Vec<Mutation>),
    Raw(Vec<ByteEdit>),
    Spelled(WireForm),
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

/// Two agents in one space: member updates, a publish and its fan-out, a leave and
/// a list.
async fn flow(f: &mut FuzzCtx, pool: &str, spec: FlowSpec) -> FuzzStep<()> {
    let (ida, idb) = (fresh_agent("fa"), fresh_agent("fb"));
    let threshold = f.ctx.profile().agora_spaces.delta_threshold_bytes;
    let ctx = &mut f.ctx;
    let (mut a, mut b) = connect_two(ctx, &ida, &idb).await?;
    let space = join_pool_or_public(ctx, &mut a, pool).await?;
    if join_setup(ctx, &mut b, &space).await?.is_none() {
        return finding(
            Oracle::Verdict,
            format!("{space}, which A just joined, drew SPACE_NOT_FOUND for B"),
        );
    }
    // A learns that B joined (ASP-026).
    joined_update(ctx, &mut a, &space, &idb).await?;

    // A publishes; B receives it once.
    let text = text_for(&spec.text, threshold);
    let pid = rid_of("pub");
    let spoof = fresh_agent("spoof");
    let fl = Flow {
        ida,
        idb,
        space,
        threshold,
        from: spec.from,
        spoof,
    };
    if !publish_step(f, &mut a, &fl, &text, &pid).await? {
        return Ok(());
    }
    let ctx = &mut f.ctx;
    receive_step(ctx, &mut b, &fl, &text).await?;
    received_once(ctx, &mut b, &fl.space).await?;

    let mut members: u64 = 2;
    if spec.leave {
        leave_update(ctx, &mut a, &mut b, &fl).await?;
        nothing_after_leave(ctx, &mut a, &mut b, &fl.space).await?;
        members = 1;
    }
    if spec.list < 64 && !list_step(ctx, &mut a, &fl.space, members).await? {
        return Ok(());
    }
    a.close().await;
    b.close().await;
    Ok(())
}

/// What a flow knows once both agents are in its space.
struct Flow {
    /// The publisher, A.
    ida: String,
    /// The receiver, B.
    idb: String,
    space: String,
    /// The profile's delta threshold in bytes.
    threshold: usize,
    /// How A's publish sets data.from.
    from: FromKind,
    /// The other agent id a spoofing publish names as data.from.
    spoof: String,
}

impl Flow {
    /// Whether `from`, the data.from B received, fits the publish A sent.
    fn fits_from(&self, from: &Value) -> bool {
        match self.from {
            FromKind::Own => from == self.ida.as_str(),
            FromKind::Omit => from.is_null() || from == self.ida.as_str(),
            FromKind::Spoof => from == self.ida.as_str() || from == self.spoof.as_str(),
        }
    }
}

/// Connects A as `ida` and B as `idb`, checking each handshake, and that the two
/// connections got different connection ids (ASP-009).
async fn connect_two(ctx: &mut Ctx, ida: &str, idb: &str) -> FuzzStep<(Peer, Peer)> {
    let (a, ra) = connect(ctx, ida).await?;
    let (b, rb) = connect(ctx, idb).await?;
    first_failing(distinct_connections(ctx, &ra, &rb)?.into_iter().collect())?;
    Ok((a, b))
}

/// Joins `a` to the leased space `pool`, or to the profile's public space when the
/// target creates no spaces on join (ambiguity ASP-A8); returns the space used.
async fn join_pool_or_public(ctx: &mut Ctx, a: &mut Peer, pool: &str) -> FuzzStep<String> {
    let mut space = pool.to_string();
    if join_setup(ctx, a, &space).await?.is_none() {
        space = ctx.profile().agora_spaces.public_space.clone();
        join_setup(ctx, a, &space).await?;
    }
    Ok(space)
}

/// A receives the space.members update for B's join: naming the space, with
/// joined set to B, left null and B among the members (ASP-026).
async fn joined_update(ctx: &mut Ctx, a: &mut Peer, space: &str, idb: &str) -> FuzzStep<()> {
    let want = idb.to_string();
    let got = a
        .expect(
            ctx,
            &format!("space.members announcing that {idb} joined"),
            move |v| v["type"] == "space.members" && v["joined"] == want.as_str(),
        )
        .await
        .map_err(Into::into);
    let j = missed_under(&rules::MEMBER_UPDATES, a.closed, got)?;
    first_failing(
        update_finding(&j, space, idb, true, &[idb])
            .into_iter()
            .collect(),
    )
}

/// A frame a reply check missed (it never came, or came wrong), filed under `rule`:
/// `run`'s case of that rule fails the same way. A connection the target closed
/// meanwhile (`closed`) is a crash of the transport, whatever it interrupted.
fn missed_under<T>(rule: &'static crate::rules::Rule, closed: bool, r: FuzzStep<T>) -> FuzzStep<T> {
    match r {
        Err(FuzzStop::Case(crate::case::Stop::Fail(m))) if closed => finding(Oracle::Transport, m),
        Err(FuzzStop::Case(crate::case::Stop::Fail(m))) => {
            under(Some(rule.key), finding(Oracle::Members, m))
        }
        other => other,
    }
}

/// A publishes `text` with id `pid`, data.from as drawn, and judges what reaches A
/// before its barrier's answer: a member's publish draws no error (ASP-028).
/// `Ok(false)`: the publish was refused as the spec allows (RATE_LIMITED, or a
/// spoofed data.from refused, ambiguity ASP-A11), and the case ends there.
async fn publish_step(
    f: &mut FuzzCtx,
    a: &mut Peer,
    fl: &Flow,
    text: &str,
    pid: &str,
) -> FuzzStep<bool> {
    let mut data = json!({"text": text, "timestamp": now_s()});
    match fl.from {
        FromKind::Own => data["from"] = json!(fl.ida),
        FromKind::Omit => {}
        FromKind::Spoof => data["from"] = json!(fl.spoof),
    }
    let publish = json!({"type": "space.publish", "id": pid, "space": fl.space, "data": data, "timestamp": now_s()});
    let bytes = publish.to_string();
    f.fuzzed(bytes.as_bytes());
    let ctx = &mut f.ctx;
    a.send_text(ctx, bytes).await?;
    let (frames, _) = barrier(ctx, a, true).await?;
    if let Some(e) = frames.iter().find(|v| v["type"] == "error") {
        check_error(ctx, e, Some(pid))?;
        let refused = ["INVALID_REQUEST", "UNAUTHORIZED", RATE_LIMITED];
        if matches!(fl.from, FromKind::Spoof)
            && refused.contains(&e["code"].as_str().unwrap_or_default())
        {
            // Refusing another agent's data.from is allowed (ambiguity ASP-A11).
            return Ok(false);
        }
        if e["code"] == RATE_LIMITED {
            return Ok(false);
        }
        return finding(
            Oracle::Verdict,
            format!("a member's publish drew an error (ASP-028): {e}"),
        );
    }
    Ok(true)
}

/// B receives the published event: whole (judged by [`judge_whole`]) or as a delta
/// stream (judged by [`judge_delta_stream`]).
async fn receive_step(ctx: &mut Ctx, b: &mut Peer, fl: &Flow, text: &str) -> FuzzStep<()> {
    let in_space = fl.space.clone();
    let first = b
        .expect(ctx, "the published event", move |v| {
            (v["type"] == "space.event" || v["type"] == "space.event.delta")
                && v["space"] == in_space.as_str()
        })
        .await?;
    if first["type"] == "space.event" {
        return judge_whole(&first, fl, text);
    }
    judge_delta_stream(ctx, b, first, fl, text).await
}

/// Judges a published event that arrived whole: only a text within the delta
/// threshold may (ASP-032); it carries the published text and a data.from that fits
/// the publish (ASP-029).
fn judge_whole(first: &Value, fl: &Flow, text: &str) -> FuzzStep<()> {
    let threshold = fl.threshold;
    if text.len() > threshold {
        return not_streamed(text.len(), threshold);
    }
    if first["data"]["text"] != text {
        return finding(
            Oracle::Fanout,
            format!(
                "space.event carries another text than the published one (ASP-029): {}",
                clip(&first.to_string(), 300)
            ),
        );
    }
    if !fl.fits_from(&first["data"]["from"]) {
        return finding(
            Oracle::Fanout,
            format!(
                "space.event data.from is {}, the publisher is {} (ASP-029)",
                first["data"]["from"], fl.ida
            ),
        );
    }
    Ok(())
}

/// Judges a published event that arrives as deltas, `first` the first of them: its
/// data.from fits the publish (ASP-032), and the stream read up to its done
/// reassembles the text (ASP-032 to ASP-034, `judge_stream`).
async fn judge_delta_stream(
    ctx: &mut Ctx,
    b: &mut Peer,
    first: Value,
    fl: &Flow,
    text: &str,
) -> FuzzStep<()> {
    let ev = first["event_id"].clone();
    if !fl.fits_from(&first["data"]["from"]) {
        return finding(
            Oracle::Delta,
            format!(
                "the first delta names data.from {}, the publisher is {} (ASP-032)",
                first["data"]["from"], fl.ida
            ),
        );
    }
    let mut stream = vec![first];
    loop {
        let want = ev.clone();
        let next = b
            .expect(ctx, "the rest of the delta stream", move |v| {
                v["event_id"] == want
            })
            .await?;
        let done = next["type"] == "space.event.done";
        stream.push(next);
        if done {
            break;
        }
    }
    if let Err(e) = judge_stream(&stream, text) {
        return finding(
            Oracle::Delta,
            format!("the delta stream of event {ev}: {e}"),
        );
    }
    Ok(())
}

/// Exactly once: nothing more of the space before B's barrier (ASP-030, ASP-034),
/// and no error B never asked for.
async fn received_once(ctx: &mut Ctx, b: &mut Peer, space: &str) -> FuzzStep<()> {
    let (frames, _) = barrier(ctx, b, true).await?;
    if let Some(v) = frames.iter().find(|v| {
        v["space"] == space
            && matches!(
                v["type"].as_str(),
                Some("space.event" | "space.event.delta" | "space.event.done")
            )
    }) {
        return finding(
            Oracle::Fanout,
            format!(
                "B received more of the space after the published event (ASP-030, ASP-034): {}",
                clip(&v.to_string(), 300)
            ),
        );
    }
    if let Some(e) = frames.iter().find(|v| v["type"] == "error") {
        return finding(
            Oracle::Verdict,
            format!("B drew an error it never asked for: {e}"),
        );
    }
    Ok(())
}

/// B leaves the space: A receives the space.members update naming the space, with
/// left set to B, joined null and B gone from the members (ASP-027); B's leave
/// draws no error before its barrier's answer (ASP-025).
async fn leave_update(ctx: &mut Ctx, a: &mut Peer, b: &mut Peer, fl: &Flow) -> FuzzStep<()> {
    let (space, idb) = (&fl.space, &fl.idb);
    let lid = rid_of("leave");
    b.send(
        ctx,
        &json!({"type": "space.leave", "id": lid, "space": space, "timestamp": now_s()}),
    )
    .await?;
    let want = idb.clone();
    let got = a
        .expect(
            ctx,
            &format!("space.members announcing that {idb} left"),
            move |v| v["type"] == "space.members" && v["left"] == want.as_str(),
        )
        .await
        .map_err(Into::into);
    let l = missed_under(&rules::MEMBER_UPDATES, a.closed, got)?;
    first_failing(
        update_finding(&l, space, idb, false, &[])
            .into_iter()
            .collect(),
    )?;
    let (frames, _) = barrier(ctx, b, true).await?;
    if let Some(e) = frames.iter().find(|v| v["type"] == "error") {
        check_error(ctx, e, Some(&lid))?;
        if e["code"] != RATE_LIMITED {
            return finding(
                Oracle::Verdict,
                format!("leaving a joined space drew an error (ASP-025): {e}"),
            );
        }
    }
    Ok(())
}

/// After B's leave, no event of the space reaches B (ASP-025, ASP-031).
async fn nothing_after_leave(
    ctx: &mut Ctx,
    a: &mut Peer,
    b: &mut Peer,
    space: &str,
) -> FuzzStep<()> {
    // A publishes again; B, gone, receives nothing of it (ASP-025, ASP-031).
    let after = format!("after-leave-{}", hex(8));
    a.publish(ctx, space, &after).await?;
    barrier(ctx, a, false).await?;
    let (frames, _) = barrier(ctx, b, true).await?;
    if let Some(v) = frames.iter().find(|v| {
        v["space"] == space
            && matches!(
                v["type"].as_str(),
                Some("space.event" | "space.event.delta")
            )
    }) {
        return finding(
            Oracle::Fanout,
            format!(
                "B received an event of a space it left (ASP-025, ASP-031): {}",
                clip(&v.to_string(), 300)
            ),
        );
    }
    Ok(())
}

/// A asks for the space list: the reply echoes the id and types system spaces
/// (`check_list`), lists the space (ASP-039, ambiguity ASP-A8) with a member_count
/// of at least the `members` of the case's agents in it (ASP-040). `Ok(false)`: the
/// list was refused with RATE_LIMITED, and the case ends there.
async fn list_step(ctx: &mut Ctx, a: &mut Peer, space: &str, members: u64) -> FuzzStep<bool> {
    let lid = rid_of("list");
    a.send(ctx, &json!({"type": "space.list", "id": lid}))
        .await?;
    let list = a
        .expect(ctx, "the space list", |v| {
            (v["type"] == "space.list" && v.get("spaces").is_some()) || v["type"] == "error"
        })
        .await?;
    if list["type"] == "error" {
        check_error(ctx, &list, Some(&lid))?;
        if list["code"] == RATE_LIMITED {
            return Ok(false);
        }
        return finding(Oracle::Verdict, format!("space.list drew {list} (ASP-038)"));
    }
    check_list(&list, Some(&lid))?;
    let entry = list["spaces"]
        .as_array()
        .and_then(|s| s.iter().find(|e| e["id"] == space));
    let Some(entry) = entry else {
        return finding(
            Oracle::List,
            format!("the joined space {space} is not listed (ASP-039, ambiguity ASP-A8)"),
        );
    };
    if entry["member_count"].as_u64().is_none_or(|n| n < members) {
        return finding(
            Oracle::List,
            format!("{space} is listed with member_count {}, but {members} of the case's agents are in it (ASP-040)", entry["member_count"]),
        );
    }
    Ok(true)
}

/// A long stream cancelled by its receiver: no delta more than a second after the
/// server has seen the cancel (ASP-036, ambiguity ASP-A13).
async fn cancel(f: &mut FuzzCtx, pool: &str) -> FuzzStep<()> {
    let (ida, idb) = (fresh_agent("ca"), fresh_agent("cb"));
    let grace = f.ctx.profile().agora_spaces.cancel_grace();
    let threshold = f.ctx.profile().agora_spaces.delta_threshold_bytes;
    let ctx = &mut f.ctx;
    let (mut a, _) = connect(ctx, &ida).await?;
    // A hub that does not stream sends the text as one event: B takes it whole, as
    // `run`'s delta-cancel case does, so that its size is no crash of the harness's.
    let (mut b, _) = connect_taking(ctx, &idb, 2 * stream_len(grace) + (64 << 10)).await?;
    let space = join_pool_or_public(ctx, &mut a, pool).await?;
    join_setup(ctx, &mut b, &space).await?;
    let ev = start_stream(f, &mut a, &mut b, &space, grace, threshold).await?;
    let ctx = &mut f.ctx;
    if !send_cancel(ctx, &mut b, &space, &ev).await? {
        return Ok(()); // the stream ended before the cancel arrived
    }
    wait_out_grace(ctx, &mut b, &ev, grace).await?;
    a.close().await;
    b.close().await;
    Ok(())
}

/// A text above the delta threshold that arrived as one space.event: `run`'s
/// delta-stream case fails on it, whichever case of the fuzzer saw it.
fn not_streamed<T>(len: usize, threshold: usize) -> FuzzStep<T> {
    under(
        Some("agora-spaces/delta-stream"),
        finding(
            Oracle::Delta,
            format!("a {len}-byte text above the profile's {threshold}-byte delta threshold arrived as one space.event (ASP-032)"),
        ),
    )
}

/// The length of the text a cancel case streams: long enough to outlast the grace
/// at the reference's pace (4 KiB deltas, the first 32 KiB at once and the rest 2 ms
/// apart): 3.5 MB for the default second, under the reference's 4 MiB frame limit;
/// in proportion for a shorter grace.
fn stream_len(grace: Duration) -> usize {
    (grace.as_millis() as usize)
        .saturating_mul(3500)
        .clamp(64 * 1024, 3_500_000)
}

/// A publishes a text long enough to stream for longer than the grace, and B
/// receives its first part: a delta, whose event id is returned. The text arriving
/// whole is a finding above the delta threshold (ASP-032), else the case is
/// skipped.
async fn start_stream(
    f: &mut FuzzCtx,
    a: &mut Peer,
    b: &mut Peer,
    space: &str,
    grace: Duration,
    threshold: usize,
) -> FuzzStep<Value> {
    let len = stream_len(grace);
    let text = sized(len, false);
    f.fuzzed(format!("space.publish of {len} bytes, then space.event.cancel").as_bytes());
    let ctx = &mut f.ctx;
    a.publish(ctx, space, &text).await?;
    let in_space = space.to_string();
    let first = b
        .expect(ctx, "the large event", move |v| {
            (v["type"] == "space.event.delta" || v["type"] == "space.event")
                && v["space"] == in_space.as_str()
        })
        .await?;
    if first["type"] == "space.event" {
        return if text.len() > threshold {
            not_streamed(text.len(), threshold)
        } else {
            skip("the text arrived whole; there is no stream to cancel")
        };
    }
    Ok(first["event_id"].clone())
}

/// B cancels the stream of event `ev`; the cancel of a stream under way draws no
/// error before B's barrier's answer (ASP-036). `Ok(false)`: the stream's done
/// arrived before that answer, so there is nothing to wait out.
async fn send_cancel(ctx: &mut Ctx, b: &mut Peer, space: &str, ev: &Value) -> FuzzStep<bool> {
    b.send(
        ctx,
        &json!({"type": "space.event.cancel", "space": space, "event_id": ev}),
    )
    .await?;
    // The barrier's answer is queued after the server has handled the cancel; the
    // grace counts from its arrival.
    let (frames, _) = barrier(ctx, b, true).await?;
    if let Some(e) = frames.iter().find(|v| v["type"] == "error") {
        return finding(
            Oracle::Verdict,
            format!("cancelling a stream under way drew an error (ASP-036): {e}"),
        );
    }
    Ok(!frames
        .iter()
        .any(|v| v["type"] == "space.event.done" && v["event_id"] == *ev))
}

/// Reads what B gets of event `ev` for the grace and a fifth more after the server
/// has seen the cancel: a delta later than the grace is a finding (ASP-036,
/// ambiguity ASP-A13); the stream's done or silence ends the wait.
async fn wait_out_grace(ctx: &mut Ctx, b: &mut Peer, ev: &Value, grace: Duration) -> FuzzStep<()> {
    let seen = Instant::now();
    let end = seen + grace + grace / 5;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let want = ev.clone();
        match b
            .wait_for(ctx, left, move |v| v["event_id"] == want)
            .await?
        {
            None => break,
            Some(v) if v["type"] == "space.event.done" => break,
            Some(v) if v["type"] == "space.event.delta" && seen.elapsed() > grace => {
                return finding(
                    Oracle::Cancel,
                    format!("a delta of cancelled event {ev} arrived {} ms after the server answered the next request (ASP-036, ASP-A13)", seen.elapsed().as_millis()),
                );
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A live agent id used a second time.
async fn duplicate(f: &mut FuzzCtx, d: DupKind) -> FuzzStep<()> {
    let me = fresh_agent("dup");
    let ctx = &mut f.ctx;
    let (mut a, _, unsolicited) = Peer::join_as(ctx, &me).await?;
    match d {
        DupKind::Reconnect => {
            f.fuzzed(format!("a second connection as {me}").as_bytes());
            let ctx = &mut f.ctx;
            let token = ctx.profile().target.token.clone();
            let mut b = match Peer::connect_raw(ctx, Some(&me), token.as_deref()).await? {
                // A refusal of the upgrade (ambiguity ASP-A21).
                Err(_) => return Ok(()),
                Ok(b) => b,
            };
            let rid = rid_of("reg");
            if !unsolicited {
                let reg = json!({"type": "agent.register", "id": rid, "timestamp": now_s(),
                                 "agent": {"id": me, "type": "process", "capabilities": ["text"], "metadata": {}}});
                b.send(ctx, &reg).await?;
            }
            let wait = timeout(ctx);
            let got = b
                .wait_for(ctx, wait, |v| {
                    v["type"] == "agent.registered" || v["type"] == "error"
                })
                .await?;
            match got {
                Some(v) if v["type"] == "agent.registered" && v["agent"]["id"] == me.as_str() => {
                    finding(Oracle::Duplicate, format!("a second connection as live agent {me} was registered (ASP-013): {v}"))
                }
                Some(v) if v["type"] == "error" && v["code"] != "AGENT_EXISTS" && v["code"] != RATE_LIMITED => {
                    finding(Oracle::Duplicate, format!("a second connection as live agent {me} drew {v}, not AGENT_EXISTS (ASP-013)"))
                }
                Some(v) if v["type"] == "error" && !unsolicited => check_error(ctx, &v, Some(&rid)),
                Some(_) => Ok(()),
                None if b.closed => Ok(()),
                None => finding(
                    Oracle::Duplicate,
                    format!("a second connection as live agent {me} drew neither AGENT_EXISTS nor a close within {} ms (ASP-013)", wait.as_millis()),
                ),
            }?;
            b.close().await;
        }
        DupKind::RegisterOther => {
            let other = fresh_agent("dup2");
            let (mut b, _) = connect(ctx, &other).await?;
            let rid = rid_of("reg");
            let reg = json!({"type": "agent.register", "id": rid, "timestamp": now_s(),
                             "agent": {"id": me, "type": "process", "capabilities": ["text"], "metadata": {}}});
            let bytes = reg.to_string();
            f.fuzzed(bytes.as_bytes());
            let ctx = &mut f.ctx;
            b.send_text(ctx, bytes).await?;
            let (frames, _) = barrier(ctx, &mut b, true).await?;
            for v in &frames {
                if v["type"] == "error" {
                    check_error(ctx, v, Some(&rid))?;
                }
                if v["type"] == "agent.registered" && v["agent"]["id"] == me.as_str() {
                    return finding(Oracle::Duplicate, format!("agent.register of live agent {me} from another connection was registered (ASP-013): {v}"));
                }
            }
            b.close().await;
        }
    }
    a.close().await;
    Ok(())
}

/// While one agent holds the full space (capacity 1), another's join draws
/// SPACE_FULL (ASP-044).
async fn capacity(f: &mut FuzzCtx) -> FuzzStep<()> {
    let Some(full) = f.ctx.profile().agora_spaces.full_space.clone() else {
        return skip("the profile names no full_space (a space of capacity 1)");
    };
    let ctx = &mut f.ctx;
    let (mut a, _) = connect(ctx, &fresh_agent("cap")).await?;
    let (mut b, _) = connect(ctx, &fresh_agent("cap2")).await?;
    let jid = rid_of("join");
    a.send(
        ctx,
        &json!({"type": "space.join", "id": jid, "space": full, "timestamp": now_s()}),
    )
    .await?;
    let v = a
        .expect(ctx, &format!("an answer to joining {full}"), is_answer)
        .await?;
    if v["type"] == "error" {
        // Another case holds the space: SPACE_FULL is right, and nothing more to see.
        check_error(ctx, &v, Some(&jid))?;
        return if v["code"] == "SPACE_FULL" || v["code"] == RATE_LIMITED {
            Ok(())
        } else {
            finding(Oracle::Verdict, format!("joining {full} drew {v}"))
        };
    }
    let jid2 = rid_of("join");
    let msg = json!({"type": "space.join", "id": jid2, "space": full, "timestamp": now_s()});
    f.fuzzed(msg.to_string().as_bytes());
    let ctx = &mut f.ctx;
    b.send(ctx, &msg).await?;
    let v = b
        .expect(
            ctx,
            &format!("an answer to a second join of {full}"),
            is_answer,
        )
        .await?;
    if v["type"] != "error" {
        return finding(
            Oracle::Capacity,
            format!(
                "a second agent joined {full} (capacity 1) while the first holds it (ASP-044): {v}"
            ),
        );
    }
    check_error(ctx, &v, Some(&jid2))?;
    if v["code"] != "SPACE_FULL" && v["code"] != RATE_LIMITED {
        return finding(
            Oracle::Capacity,
            format!(
                "a second join of {full} (capacity 1) drew {}, not SPACE_FULL (ASP-044)",
                v["code"]
            ),
        );
    }
    a.close().await;
    b.close().await;
    Ok(())
}

/// A connection URL with a drawn agent id and token.
async fn connect_case(f: &mut FuzzCtx, a: AgentIdKind, t: TokenKind) -> FuzzStep<()> {
    let u = drawn_url(f, &a, &t);
    f.fuzzed(
        crate::suites::agora_spaces::expect::url_for(
            &f.ctx.url,
            u.id.as_deref(),
            u.token.as_deref(),
        )
        .as_bytes(),
    );
    let ctx = &mut f.ctx;
    let Some(mut p) = open_drawn(ctx, &u).await? else {
        return Ok(());
    };
    let must_refuse = u.id.is_none() || u.bad_token;
    let wait = timeout(ctx);
    let got = first_registration(ctx, &mut p, &u, must_refuse, wait).await?;
    match got {
        Some(v) if v["type"] == "agent.registered" => judge_url_registered(&v, &u)?,
        Some(v) => judge_url_error(&v, &u)?,
        None => judge_url_silence(p.closed, must_refuse, wait, &u)?,
    }
    p.close().await;
    Ok(())
}

/// A connection URL as drawn: its agent id and token, and the profile's token.
struct DrawnUrl {
    /// The agent_id query value; `None`: the URL has none.
    id: Option<String>,
    /// The token query value; `None`: the URL has none.
    token: Option<String>,
    profile_token: Option<String>,
    /// The profile sets a token and the URL carries another one or none.
    bad_token: bool,
    /// The agent id is a plain one.
    plain: bool,
}

impl DrawnUrl {
    /// A plain agent id with the profile's token: a connection that must work.
    fn must_work(&self) -> bool {
        self.plain && !self.bad_token && self.profile_token == self.token
    }
}

/// Builds the URL's agent id (a fresh suffix drawn first) and token from the kinds
/// drawn.
fn drawn_url(f: &FuzzCtx, a: &AgentIdKind, t: &TokenKind) -> DrawnUrl {
    let suffix = hex(8);
    let id = match a {
        AgentIdKind::Plain => Some(fresh_agent("conn")),
        AgentIdKind::Drawn(s) => Some(format!("{}-{suffix}", clip(s, 32))),
        AgentIdKind::Reserved => Some(format!("fz a&b=c?d#e%f+g/{suffix}")),
        AgentIdKind::Unicode => Some(format!("fz-日本語-🙂-{suffix}")),
        AgentIdKind::Long(n) => Some(format!("fz-{}-{suffix}", "l".repeat(usize::from(*n)))),
        AgentIdKind::Empty => Some(String::new()),
        AgentIdKind::Missing => None,
    };
    let profile_token = f.ctx.profile().target.token.clone();
    let token = match t {
        TokenKind::Profile => profile_token.clone(),
        TokenKind::Missing => None,
        TokenKind::Wrong(s) => Some(format!("fz-wrong-{}", clip(s, 32))),
    };
    let bad_token = profile_token.is_some() && token != profile_token;
    DrawnUrl {
        id,
        token,
        profile_token,
        bad_token,
        plain: matches!(a, AgentIdKind::Plain),
    }
}

/// Opens a connection to the drawn URL; `None` when the upgrade is refused
/// (ambiguity ASP-A21), which is a finding only where the connection must work.
async fn open_drawn(ctx: &mut Ctx, u: &DrawnUrl) -> FuzzStep<Option<Peer>> {
    match Peer::connect_raw(ctx, u.id.as_deref(), u.token.as_deref()).await? {
        // A refusal of the upgrade (ambiguity ASP-A21); a plain connection must work.
        Err(e) if u.must_work() => finding(
            Oracle::Handshake,
            format!(
                "a connection as a plain agent id was refused: {}",
                describe_drive_error(&e)
            ),
        ),
        Err(_) => Ok(None),
        Ok(p) => Ok(Some(p)),
    }
}

/// Waits for agent.registered or an error: unsolicited (for up to 5 s where the
/// connection may be registered, else `wait`), and then, where the connection may
/// be registered and is still open, in answer to an explicit agent.register
/// (ambiguity ASP-A3). `None`: neither arrived.
async fn first_registration(
    ctx: &mut Ctx,
    p: &mut Peer,
    u: &DrawnUrl,
    must_refuse: bool,
    wait: Duration,
) -> FuzzStep<Option<Value>> {
    let first_wait = if must_refuse {
        wait
    } else {
        Duration::from_secs(5)
    };
    let got = p
        .wait_for(ctx, first_wait, |v| {
            v["type"] == "agent.registered" || v["type"] == "error"
        })
        .await?;
    Ok(match got {
        None if !p.closed && !must_refuse => {
            // No unsolicited registration: register explicitly (ambiguity ASP-A3).
            let rid = rid_of("reg");
            let reg = json!({"type": "agent.register", "id": rid, "timestamp": now_s(),
                             "agent": {"id": u.id.clone().unwrap_or_default(), "type": "process", "capabilities": ["text"]}});
            p.send(ctx, &reg).await?;
            p.wait_for(ctx, wait, |v| {
                v["type"] == "agent.registered" || v["type"] == "error"
            })
            .await?
        }
        other => other,
    })
}

/// Judges an agent.registered for the drawn URL: never without agent_id (ASP-004)
/// nor with a wrong or missing token (ASP-006); it names the URL's agent_id
/// (ASP-008).
fn judge_url_registered(v: &Value, u: &DrawnUrl) -> FuzzStep<()> {
    if u.id.is_none() {
        return finding(
            Oracle::Handshake,
            format!("a connection without agent_id was registered (ASP-004): {v}"),
        );
    }
    if u.bad_token {
        return finding(
            Oracle::Auth,
            format!("a connection with a wrong or missing token was registered (ASP-006): {v}"),
        );
    }
    let want = u.id.as_deref().unwrap_or_default();
    if !want.is_empty() && v["agent"]["id"] != want {
        return finding(
            Oracle::Handshake,
            format!(
                "agent.registered names {}, not the URL's agent_id {want:?} (ASP-008)",
                v["agent"]["id"]
            ),
        );
    }
    Ok(())
}

/// Judges an error for the drawn URL (its code and shape are the frame checks'):
/// UNAUTHORIZED for
/// a wrong or missing token (ASP-006); INVALID_REQUEST or UNAUTHORIZED without
/// agent_id (ASP-004); none for a connection that must work. RATE_LIMITED is always
/// allowed.
fn judge_url_error(v: &Value, u: &DrawnUrl) -> FuzzStep<()> {
    let code = v["code"].as_str().unwrap_or_default();
    if u.bad_token && code != "UNAUTHORIZED" && code != RATE_LIMITED {
        return finding(
            Oracle::Auth,
            format!("a wrong or missing token drew {code}, not UNAUTHORIZED (ASP-006)"),
        );
    }
    if u.id.is_none() && !["INVALID_REQUEST", "UNAUTHORIZED", RATE_LIMITED].contains(&code) {
        return finding(
            Oracle::Handshake,
            format!("a connection without agent_id drew {code} (ASP-004)"),
        );
    }
    if u.must_work() {
        return finding(
            Oracle::Handshake,
            format!("a connection as a plain agent id drew {v}"),
        );
    }
    Ok(())
}

/// Judges a connection that drew neither agent.registered nor an error: a close is
/// a finding only where the connection must work; silence where it must be refused
/// (ASP-004, ASP-006), or where a plain agent id with the profile's token was never
/// registered (ASP-007, ASP-011).
fn judge_url_silence(
    closed: bool,
    must_refuse: bool,
    wait: Duration,
    u: &DrawnUrl,
) -> FuzzStep<()> {
    if closed {
        if u.must_work() {
            return finding(
                Oracle::Handshake,
                "the target closed a connection as a plain agent id",
            );
        }
        return Ok(());
    }
    if must_refuse {
        return finding(
            if u.bad_token { Oracle::Auth } else { Oracle::Handshake },
            format!("a connection that must not be registered drew neither an error nor a close within {} ms (ASP-004, ASP-006)", wait.as_millis()),
        );
    }
    if u.plain && u.profile_token == u.token {
        return finding(Oracle::Handshake, "no agent.registered, neither after connecting nor in answer to agent.register (ASP-007, ASP-011)");
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the hub and edits one of
// the frames it sends the client under test.

/// Fuzzing a client: each case runs the client driver once (scenario `listen`)
/// against the scripted hub of `suites::agora_spaces::expect`, which sends a whole event
/// and a delta stream, or a cancelled stream and a whole event, one frame edited.
/// Oracles: every client frame is a JSON event with a string type; the partial text
/// of a cancelled stream is never presented; when every frame keeps its value the
/// events printed are exactly those sent, the stream rebuilt; no crash, no hang.
pub static CLIENT_SPEC: Spec = Spec {
    transports: &[Transport::Ws],
    case: client_case_fn,
    probe: client_probe_fn,
    resend: None,
    kinds: &[],
    unreachable: &[
        ("never-heartbeats", "a fuzz case ends as soon as its events are sent, before a heartbeat is due; client-heartbeat judges heartbeats"),
        ("ignores-silence", "a silent hub makes a case wait the whole heartbeat timeout; client-silent-hub judges it"),
        ("no-timestamp", "a missing timestamp is a SHOULD (ASP-A6), not a finding; client-join-publish warns of it"),
        ("ignores-join-error", "the fuzzer edits the hub's frames after a successful join and never refuses one; client-join-refused serves the refusals"),
        ("ignores-publish-error", "the fuzzer's scenario is listen, which publishes nothing; client-publish-refused serves the refusal"),
    ],
    connection_per_worker: false,
    workers: crate::fuzzing::spec::WORKERS,
};

use crate::suites::agora_spaces::expect::{client_input, hub_edited, printed_texts, HubPlan};

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let input = client_input("probe");
        let hub = crate::suites::agora_spaces::expect::hub(HubPlan::Deltas, &input);
        let run = crate::counterparty::drive_hub(&mut f.ctx, "listen", &input, hub).await?;
        crate::fuzzing::client::ended_well(&run)?;
        crate::fuzzing::client::must_complete(&run, false, "a plain listen")
    })
}

/// One client fuzz case.
#[derive(Debug, Clone, Default, Arbitrary)]
struct ClientCase {
    /// A cancelled stream then a whole event (else a whole event then a stream).
    cancel: bool,
    /// Which frame after the join is edited.
    frame: u8,
    edit: crate::fuzzing::client::Edit,
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    use crate::fuzzing::client::ended_well;
    use crate::suites::agora_spaces::expect::{streamed_text, WHOLE_TEXT};
    let c: ClientCase = f.draw();
    let (plan, frames, tag) = if c.cancel {
        (HubPlan::Cancel, 4, "cancelled")
    } else {
        (HubPlan::Deltas, 6, "streamed")
    };
    let target = usize::from(c.frame) % frames;
    let kept = std::sync::Arc::new(std::sync::Mutex::new(true));
    let edit = c.edit.clone();
    let kept_in = kept.clone();
    let frame_edit = Box::new(move |i: usize, text: String| {
        if i != target {
            return text;
        }
        let e = edit.apply(text.into_bytes());
        *kept_in.lock().unwrap_or_else(|p| p.into_inner()) = e.same_value;
        String::from_utf8_lossy(&e.bytes).into_owned()
    });
    let input = client_input("fuzz");
    let hub = hub_edited(plan, &input, frame_edit);
    let run = crate::counterparty::drive_hub(&mut f.ctx, "listen", &input, hub).await?;
    ended_well(&run)?;
    let kept = *kept.lock().unwrap_or_else(|p| p.into_inner());
    for (_, t) in run.client_frames() {
        f.fuzzed(t.as_bytes());
        let ok = serde_json::from_str::<Value>(t).is_ok_and(|v| v["type"].is_string());
        if !ok {
            return finding(
                Oracle::ReplyCheck,
                format!("the client sent a frame that is not a JSON event with a string type (ASP-001, ASP-018): {t}"),
            );
        }
    }
    let got = printed_texts(&run);
    let (streamed, chunks) = streamed_text(tag);
    // The cancel frame is the third of a cancelled plan: with it edited away the
    // stream simply never ends, and is still never complete.
    let first = chunks.first().cloned().unwrap_or_default();
    if c.cancel {
        if let Some(partial) = got.iter().find(|t| t.starts_with(&first)) {
            return finding(
                Oracle::Cancel,
                format!("the client presented the partial text of a cancelled stream: {partial:?} (ASP-037; {} of frame {target})", c.edit),
            );
        }
    }
    if kept {
        let want: Vec<String> = if c.cancel {
            vec![WHOLE_TEXT.to_string()]
        } else {
            vec![WHOLE_TEXT.to_string(), streamed]
        };
        if got != want {
            let oracle = if c.cancel {
                Oracle::Cancel
            } else {
                Oracle::Delta
            };
            return finding(
                oracle,
                format!(
                    "the client printed {} for the events {} ({} of frame {target}; ASP-033, ASP-034)",
                    crate::finding::clipped(&format!("{got:?}"), 300),
                    crate::finding::clipped(&format!("{want:?}"), 300),
                    c.edit
                ),
            );
        }
    }
    Ok(())
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
