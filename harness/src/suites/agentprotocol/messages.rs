//! The base message (agentprotocol.md, Message Format): the ids case, and the fuzzer's
//! messages: templates, field mutations, what the spec fixes for each envelope member,
//! and the exchange of one fuzzed message.

use super::errors::{reply_oracles, Expect, Got, Shows, IM, IS, QUIET, SILENT_OK, UA};
use super::handshake::Me;
use super::replies::read_reply;
use super::wire::{case_verdict, echo, fuzz_wait, limits, new_driver, Answer, Asked};
use crate::case::{Bindings, Case, Level, Stop};
use crate::drive::{DriveError, Driver, Received, Transport};
use crate::finding::Finding;
use crate::fuzzing::mutate::Val;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, fail as fuzz_fail, finding, FuzzStep, Oracle};
use crate::rules::rules;
use crate::script::describe_drive_error;
use arbitrary::Arbitrary;
use reference_impl::agentprotocol::message::{self, TYPES};
use reference_impl::wire::clock;
use reference_impl::wire::keys::{self, Keypair};
use reference_impl::wire::{is_uuid, new_id};
use serde_json::{json, Map, Value};
use std::collections::HashSet;

rules! {
    UNKNOWN_AGENT_CARRIED_OUT {
        // .at(Level::Profile) when the profile says the target is a hub or relay
        // ([agentprotocol] unknown_agent_error, true by default), .at(Level::Info)
        // otherwise.
        key: "agentprotocol/unknown-agent:carried-out",
        requirements: &["AGP-025"],
        level: Some(Level::Profile),
        owner: "",
        summary: "a message addressed to another agent is not carried out where the profile says UNKNOWN_AGENT is sent",
        fails: "a request whose to.agentId names another agent answered with a response",
        passes: "error UNKNOWN_AGENT; informational for a single agent (unknown_agent_error = false)",
    }
    UNKNOWN_AGENT_CODE {
        // Levels as for unknown-agent:carried-out.
        key: "agentprotocol/unknown-agent:code",
        requirements: &["AGP-025"],
        level: Some(Level::Profile),
        owner: "",
        summary: "a message addressed to another agent draws error UNKNOWN_AGENT where the profile says it is sent",
        fails: "a request whose to.agentId names another agent refused with another code, or answered with no body or silence",
        passes: "error UNKNOWN_AGENT; informational for a single agent (unknown_agent_error = false)",
    }
    UNKNOWN_AGENT_RECORDED {
        key: "agentprotocol/unknown-agent:recorded:*",
        requirements: &["AGP-025"],
        level: Some(Level::Info),
        owner: "",
        summary: "what a single agent ([agentprotocol] unknown_agent_error = false) does with a request addressed to another agent, recorded",
        fails: "never fails: a request whose to.agentId names another agent carried out or refused with another code than UNKNOWN_AGENT, recorded",
        passes: "error UNKNOWN_AGENT",
    }
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "ids-unique",
        "ten replies carry ten distinct UUIDs",
        ["AGP-003"],
        Fact,
        |ctx| {
            // Each reply's id is read by read_reply, whose id findings this case owns.
            let mut me = Me::new(ctx);
            me.hello(ctx).await?;
            for i in 0..9 {
                let req = me.request(&echo(ctx), json!({"i": i}), json!({}));
                me.send(ctx, &req).await?;
            }
            Ok(())
        }
    ),
    case!(
        "unknown-agent",
        "a message addressed to another agent draws UNKNOWN_AGENT",
        ["AGP-025"],
        Profile,
        |ctx| {
            if ctx.transport == Transport::File {
                return crate::case::skip("over the file binding a message reaches only the agent its name addresses, so the target never sees one for another agent");
            }
            let mut me = Me::new(ctx);
            let mut found: Vec<Finding> = Vec::new();
            me.hello(ctx).await?;
            let mut twin = me.message(
                "request",
                json!({"action": echo(ctx), "correlationId": "ua", "params": {}, "timeout": 30000}),
            );
            me.sign(&mut twin);
            me.twin(ctx, &twin, "the same request addressed to the target")
                .await?;
            let mut m = me.message(
                "request",
                json!({"action": echo(ctx), "correlationId": "ua", "params": {}, "timeout": 30000}),
            );
            m["to"]["agentId"] = json!(reference_impl::agentprotocol::message::agent_id(
                &Keypair::generate()
            ));
            me.sign(&mut m);
            if let Err(got) = me
                .refusal(ctx, &m, "UNKNOWN_AGENT", "to.agentId of another agent")
                .await?
            {
                let rule = if got.carried_out {
                    &UNKNOWN_AGENT_CARRIED_OUT
                } else {
                    &UNKNOWN_AGENT_CODE
                };
                let summary = format!("a request addressed to another agent drew {got}, not error UNKNOWN_AGENT (AGP-025)");
                if ctx.profile().agentprotocol.unknown_agent_error {
                    return Err(Stop::Finding(rule.found(format!("{summary}; the profile says the target is a hub or relay: set [agentprotocol] unknown_agent_error = false for a single agent"))));
                }
                found.push(UNKNOWN_AGENT_RECORDED.found_as(
                    if got.carried_out {
                        "carried-out"
                    } else {
                        "code"
                    },
                    format!("{summary} (informational for a single agent)"),
                ));
            } else {
                ctx.refusal_counts("a request addressed to another agent")?;
            }
            case_verdict(ctx, found)
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// A delay that ends well within the case.
const SHORT_MS: u64 = 5;

/// A delay that outlasts [`SHORT_TIMEOUT_MS`].
const LONG_MS: u64 = 150;

const SHORT_TIMEOUT_MS: u64 = 20;

/// A generous timeout, as the timeout case gives its control, and well within the
/// fuzzer's wait: a target that waits every timeout out still answers in time.
const WITHIN_TIMEOUT_MS: u64 = 400;

#[derive(Debug, Clone, Copy, Default, Arbitrary, PartialEq, Eq)]
pub(super) enum Template {
    #[default]
    Echo,
    /// Echo with metadata and an extra payload member (AGP-043).
    EchoMeta,
    Hello,
    /// A short delay, no timeout.
    Delay,
    /// A short delay within a generous timeout.
    DelayWithin,
    /// A delay past a short timeout (AGP-027).
    DelayTimeout,
    /// An action no target offers (AGP-020).
    Unknown,
    /// An echo addressed to another agent (AGP-025).
    Misaddressed,
    Notify,
}

/// Templates whose bytes may be edited freely (no delay: an edited `ms` could sleep).
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum RawTemplate {
    #[default]
    Echo,
    EchoMeta,
    Hello,
    Unknown,
    Notify,
}

impl From<RawTemplate> for Template {
    fn from(t: RawTemplate) -> Template {
        match t {
            RawTemplate::Echo => Template::Echo,
            RawTemplate::EchoMeta => Template::EchoMeta,
            RawTemplate::Hello => Template::Hello,
            RawTemplate::Unknown => Template::Unknown,
            RawTemplate::Notify => Template::Notify,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum Top {
    #[default]
    Protocol,
    Id,
    Timestamp,
    From,
    To,
    Type,
    Payload,
    Metadata,
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum TypeVal {
    #[default]
    Bogus,
    Upper,
    Hello,
    Request,
    Response,
    Notify,
    Error,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum ProtoVal {
    #[default]
    Next,
    Upper,
    Empty,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum IdVal {
    #[default]
    Int,
    Fresh,
    Upper,
    NotUuid,
    Empty,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum TsVal {
    #[default]
    Fresh,
    ShiftMinutes(i16),
    NoZone,
    Garbage,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum AgentVal {
    #[default]
    Empty,
    Short,
    OtherKey,
    UrlSafe,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum CapsVal {
    #[default]
    Empty,
    Custom,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum ToVal {
    #[default]
    OtherKey,
    Empty,
    Target,
    TargetUrlSafe,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum ActionVal {
    #[default]
    Echo,
    Delay,
    Upper,
    Empty,
    Fz(String),
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum TimeoutVal {
    #[default]
    Negative,
    Small(u8),
    Large(u32),
    Fraction,
    Integral,
    Text,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum Mutation {
    #[default]
    Keep,
    Type(TypeVal),
    Remove(Top),
    Protocol(ProtoVal),
    Id(IdVal),
    Timestamp(TsVal),
    FromAgent(AgentVal),
    FromName(Val),
    FromCaps(CapsVal),
    ToAgent(ToVal),
    Broadcast(Val),
    Payload(Val),
    Action(ActionVal),
    Params(Val),
    Param(u8, Val),
    RemoveParams,
    Timeout(TimeoutVal),
    RemoveTimeout,
    Correlation(String),
    Metadata(Val),
    ExtraTop(u8, Val),
    ExtraPayload(u8, Val),
    HelloVersion(Val),
    HelloFeatures(Val),
    NotAnObject(Val),
}

/// One case: the identity, a second connection for input the identity cannot send
/// (unparseable bytes, a sender that is no string), and what hello told.
pub(super) struct FuzzCase {
    pub(super) me: Me,
    pub(super) raw: Option<Driver>,
    pub(super) raw_ids: HashSet<String>,
    pub(super) target: String,
    pub(super) signed_messages: bool,
    pub(super) echo: String,
    pub(super) delay: String,
    /// The profile's [agentprotocol] unknown_agent_error and timeout_error: whether
    /// UNKNOWN_AGENT and TIMEOUT are judged, as the run's cases judge them.
    pub(super) unknown_agent_error: bool,
    pub(super) timeout_error: bool,
    pub(super) n: u64,
}

/// The same key or signature bytes, spelled in another base64 flavour.
fn same_bytes(a: &str, b: &str) -> bool {
    match (keys::b64_decode_any(a), keys::b64_decode_any(b)) {
        (Some((x, _)), Some((y, _))) => x == y,
        _ => false,
    }
}

/// The members of a full message envelope (AGP-001).
const ENVELOPE_KEYS: [&str; 8] = [
    "protocol",
    "id",
    "timestamp",
    "from",
    "to",
    "type",
    "payload",
    "signature",
];

/// Judges protocol, id and timestamp (AGP-002, AGP-003, AGP-004; open by AGP-A6,
/// AGP-A12, AGP-A16).
pub(super) fn envelope_head(o: &Map<String, Value>, e: &mut Expect) {
    if o.get("protocol").and_then(Value::as_str) != Some(message::PROTOCOL) {
        e.soft(
            &[IM],
            "protocol is not agentprotocol/0.1 (AGP-002, AGP-A16)",
        );
    }
    match o.get("id") {
        Some(Value::String(s)) if is_uuid(s) => {}
        None | Some(Value::String(_)) => {
            e.soft(&[IM], "id missing or not a UUID (AGP-003, AGP-A6)")
        }
        Some(_) => e.hard(&[IM], "id is not a string (AGP-003, AGP-023)"),
    }
    let fresh = o
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(|s| clock::parse_timestamp(s).ok())
        .is_some_and(|t| (time::OffsetDateTime::now_utc() - t).whole_seconds().abs() <= 300);
    if !fresh {
        e.soft(
            &[IM],
            "timestamp missing, not ISO 8601 UTC or not current (AGP-004, AGP-A12)",
        );
    }
}

/// Judges `from`: agentId, name and capabilities (AGP-005, AGP-006, AGP-007,
/// AGP-034).
pub(super) fn from_member(o: &Map<String, Value>, e: &mut Expect) {
    let from = o.get("from");
    if !from
        .and_then(|f| f.get("agentId"))
        .is_some_and(Value::is_string)
    {
        e.hard(
            &[IM, IS],
            "from.agentId is missing: nothing to verify against (AGP-005, AGP-034)",
        );
    }
    if let Some(Value::Object(fo)) = from {
        if !fo.get("name").is_none_or(Value::is_string) {
            e.soft(&[IM], "from.name is not a string (AGP-006)");
        }
        if !fo
            .get("capabilities")
            .is_none_or(|c| c.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
        {
            e.soft(
                &[IM],
                "from.capabilities is not an array of strings (AGP-007)",
            );
        }
    }
}

/// Judges `to`: the addressee and broadcast (AGP-008, AGP-025; open by AGP-A4,
/// AGP-A13, AGP-A22).
pub(super) fn addressee(o: &Map<String, Value>, c: &FuzzCase, e: &mut Expect) {
    match o.get("to") {
        None => e.soft(&[IM], "no `to` (AGP-A22)"),
        Some(Value::Object(to)) => {
            to_agent(to, c, e);
            to_broadcast(to, e);
        }
        Some(_) => e.soft(&[IM], "`to` is not an object (AGP-008)"),
    }
}

/// Judges to.agentId: the target, another spelling of it, or another agent
/// (AGP-008, AGP-025, AGP-A4, AGP-A22).
fn to_agent(to: &Map<String, Value>, c: &FuzzCase, e: &mut Expect) {
    match to.get("agentId") {
        None => e.soft(&[IM], "no to.agentId (AGP-A22)"),
        Some(Value::String(s)) if *s == c.target => {}
        Some(Value::String(s)) if s.is_empty() => {
            e.soft(&[IM, UA], "to.agentId is empty (AGP-008)")
        }
        Some(Value::String(s)) if same_bytes(s, &c.target) => e.soft(
            &[IM, UA],
            "to.agentId names the target in another base64 flavour (AGP-A4)",
        ),
        // UNKNOWN_AGENT is judged where the profile says the target answers it (a
        // hub or relay), as the unknown-agent case judges it; for a single agent what
        // it does is informational.
        Some(Value::String(_)) if c.unknown_agent_error => {
            let subject = (&UNKNOWN_AGENT_CARRIED_OUT, Some(&UNKNOWN_AGENT_CODE));
            e.hard_as(
                subject,
                &[UA],
                "to.agentId names another agent (AGP-008, AGP-025)",
            );
            e.silence_ok = true;
        }
        Some(Value::String(_)) => {
            e.soft(
                &[UA],
                "to.agentId names another agent (AGP-025, informational)",
            );
            e.open = true;
        }
        Some(_) => e.soft(&[IM], "to.agentId is not a string (AGP-008)"),
    }
}

/// Judges to.broadcast (AGP-008, AGP-A13).
fn to_broadcast(to: &Map<String, Value>, e: &mut Expect) {
    match to.get("broadcast") {
        Some(Value::Bool(false)) => {}
        None => e.soft(&[IM], "no to.broadcast (AGP-008)"),
        Some(Value::Bool(true)) => {
            // Who answers a broadcast, if anyone, is undefined (AGP-A13).
            e.open = true;
            e.silence_ok = true;
        }
        Some(_) => e.soft(&[IM], "to.broadcast is not a boolean (AGP-008)"),
    }
}

/// The message type when it is one of the five, else a hard problem (AGP-010,
/// AGP-023).
pub(super) fn message_type<'a>(o: &'a Map<String, Value>, e: &mut Expect) -> Option<&'a str> {
    match o.get("type").and_then(Value::as_str) {
        Some(t) if TYPES.contains(&t) => Some(t),
        _ => {
            e.hard(
                &[IM],
                "type is missing or not one of the five (AGP-010, AGP-023)",
            );
            None
        }
    }
}

/// The payload when it is an object, else a hard problem (AGP-011).
pub(super) fn payload_of<'a>(
    o: &'a Map<String, Value>,
    e: &mut Expect,
) -> Option<&'a Map<String, Value>> {
    match o.get("payload") {
        Some(Value::Object(p)) => Some(p),
        _ => {
            e.hard(&[IM], "payload is not an object (AGP-011)");
            None
        }
    }
}

/// Judges metadata and unknown top-level members (AGP-043, AGP-A19).
pub(super) fn extras(o: &Map<String, Value>, e: &mut Expect) {
    if !o.get("metadata").is_none_or(Value::is_object) {
        e.soft(&[IM], "metadata is not an object (AGP-043)");
    }
    if o.keys()
        .any(|k| k != "metadata" && !ENVELOPE_KEYS.contains(&k.as_str()))
    {
        e.soft(&[IM], "an unknown top-level member (AGP-A19)");
    }
}

impl FuzzCase {
    /// A fresh template from the case's identity (unsigned).
    pub(super) fn template(&mut self, t: Template) -> Value {
        self.n += 1;
        template(t, self)
    }
}

/// A message from `c.me` (unsigned).
fn template(t: Template, c: &FuzzCase) -> Value {
    let me = &c.me;
    let corr = format!("fz-{}-{}", &new_id()[..8], c.n);
    let req = |action: &str, params: Value, extra: Value| {
        let mut p = json!({"action": action, "correlationId": corr, "params": params});
        if let (Some(o), Some(x)) = (p.as_object_mut(), extra.as_object()) {
            o.extend(x.clone());
        }
        me.message("request", p)
    };
    match t {
        Template::Echo => req(&c.echo, json!({"text": "fuzz", "n": c.n}), json!({})),
        Template::EchoMeta => {
            let mut m = req(
                &c.echo,
                json!({"text": "meta", "nested": {"ok": true, "list": [1, 2]}}),
                json!({"x-extra": 1}),
            );
            set(
                &mut m,
                &[],
                "metadata",
                json!({"priority": "high", "x-h": 1}),
            );
            m
        }
        Template::Hello => me.message(
            "hello",
            json!({"version": "0.1", "features": ["signed-messages"]}),
        ),
        Template::Delay => req(&c.delay, json!({"ms": SHORT_MS}), json!({})),
        Template::DelayWithin => req(
            &c.delay,
            json!({"ms": SHORT_MS}),
            json!({"timeout": WITHIN_TIMEOUT_MS}),
        ),
        Template::DelayTimeout => req(
            &c.delay,
            json!({"ms": LONG_MS}),
            json!({"timeout": SHORT_TIMEOUT_MS}),
        ),
        Template::Unknown => req("fz-no-such-action", json!({}), json!({})),
        Template::Misaddressed => {
            let mut m = req(&c.echo, json!({"text": "elsewhere"}), json!({}));
            set(&mut m, &["to"], "agentId", json!(other_id()));
            m
        }
        Template::Notify => me.message("notify", json!({"event": "fz-ping", "n": c.n})),
    }
}

fn obj_at<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = v;
    for k in path {
        cur = cur.as_object_mut()?.get_mut(*k)?;
    }
    cur.as_object_mut()
}

pub(super) fn set(v: &mut Value, path: &[&str], key: &str, val: Value) {
    if let Some(o) = obj_at(v, path) {
        o.insert(key.to_string(), val);
    }
}

pub(super) fn remove(v: &mut Value, path: &[&str], key: &str) {
    if let Some(o) = obj_at(v, path) {
        o.remove(key);
    }
}

fn pick<'a>(i: u8, xs: &[&'a str]) -> &'a str {
    xs[usize::from(i) % xs.len()]
}

pub(super) fn other_id() -> String {
    message::agent_id(&Keypair::generate())
}

pub(super) fn apply(m: &mut Value, mu: &Mutation, c: &FuzzCase) {
    let me = &c.me;
    let cur_type = m["type"].as_str().unwrap_or("request").to_string();
    match mu {
        Mutation::Keep => {}
        Mutation::Type(t) => set(m, &[], "type", type_value(t, &cur_type)),
        Mutation::Remove(t) => {
            let k = format!("{t:?}").to_ascii_lowercase();
            remove(m, &[], &k);
        }
        Mutation::Protocol(p) => set(m, &[], "protocol", protocol_value(p)),
        Mutation::Id(i) => set(m, &[], "id", id_value(i)),
        Mutation::Timestamp(t) => set(m, &[], "timestamp", timestamp_value(t)),
        Mutation::FromAgent(a) => set(m, &["from"], "agentId", agent_value(a, me)),
        Mutation::FromName(v) => set(m, &["from"], "name", v.json()),
        Mutation::FromCaps(cv) => set(m, &["from"], "capabilities", caps_value(cv)),
        Mutation::ToAgent(t) => set(m, &["to"], "agentId", to_value(t, c)),
        Mutation::Broadcast(v) => set(m, &["to"], "broadcast", v.json()),
        Mutation::Payload(v) => set(m, &[], "payload", v.json()),
        Mutation::Action(a) => set(m, &["payload"], "action", action_value(a, c)),
        Mutation::Params(v) => set(m, &["payload"], "params", v.json()),
        Mutation::Param(i, v) => set(
            m,
            &["payload", "params"],
            pick(*i, &["text", "n", "x-fuzz", "nested"]),
            v.json(),
        ),
        Mutation::RemoveParams => remove(m, &["payload"], "params"),
        Mutation::Timeout(t) => set(m, &["payload"], "timeout", timeout_value(t)),
        Mutation::RemoveTimeout => remove(m, &["payload"], "timeout"),
        Mutation::Correlation(s) => set(
            m,
            &["payload"],
            "correlationId",
            json!(s.chars().take(40).collect::<String>()),
        ),
        Mutation::Metadata(v) => set(m, &[], "metadata", v.json()),
        Mutation::ExtraTop(i, v) => set(m, &[], &format!("x-fuzz-{}", i % 4), v.json()),
        Mutation::ExtraPayload(i, v) => {
            set(m, &["payload"], &format!("x-fuzz-{}", i % 4), v.json())
        }
        Mutation::HelloVersion(v) => set(m, &["payload"], "version", v.json()),
        Mutation::HelloFeatures(v) => set(m, &["payload"], "features", v.json()),
        Mutation::NotAnObject(v) => *m = v.json(),
    }
}

/// The type a [`Mutation::Type`] sets (`cur_type` is the message's own).
fn type_value(t: &TypeVal, cur_type: &str) -> Value {
    match t {
        TypeVal::Bogus => json!("bogus"),
        TypeVal::Upper => json!(cur_type.to_ascii_uppercase()),
        TypeVal::Hello => json!("hello"),
        TypeVal::Request => json!("request"),
        TypeVal::Response => json!("response"),
        TypeVal::Notify => json!("notify"),
        TypeVal::Error => json!("error"),
        TypeVal::Other(v) => v.json(),
    }
}

/// The protocol a [`Mutation::Protocol`] sets.
fn protocol_value(p: &ProtoVal) -> Value {
    match p {
        ProtoVal::Next => json!("agentprotocol/0.2"),
        ProtoVal::Upper => json!(message::PROTOCOL.to_ascii_uppercase()),
        ProtoVal::Empty => json!(""),
        ProtoVal::Other(v) => v.json(),
    }
}

/// The id a [`Mutation::Id`] sets.
fn id_value(i: &IdVal) -> Value {
    match i {
        IdVal::Int => json!(123),
        IdVal::Fresh => json!(new_id()),
        IdVal::Upper => json!(new_id().to_ascii_uppercase()),
        IdVal::NotUuid => json!(format!("fz-{}", &new_id()[..8])),
        IdVal::Empty => json!(""),
        IdVal::Other(v) => v.json(),
    }
}

/// The timestamp a [`Mutation::Timestamp`] sets.
fn timestamp_value(t: &TsVal) -> Value {
    let now = time::OffsetDateTime::now_utc();
    match t {
        TsVal::Fresh => json!(clock::format_timestamp(now)),
        TsVal::ShiftMinutes(d) => json!(clock::format_timestamp(
            now + time::Duration::minutes(i64::from(*d) % 600)
        )),
        TsVal::NoZone => json!(clock::format_timestamp(now).trim_end_matches('Z')),
        TsVal::Garbage => json!("yesterday"),
        TsVal::Other(v) => v.json(),
    }
}

/// The from.agentId a [`Mutation::FromAgent`] sets.
fn agent_value(a: &AgentVal, me: &Me) -> Value {
    match a {
        AgentVal::Empty => json!(""),
        AgentVal::Short => json!("AAAA"),
        AgentVal::OtherKey => json!(other_id()),
        AgentVal::UrlSafe => json!(keys::b64url(me.key.public().as_bytes())),
        AgentVal::Other(v) => v.json(),
    }
}

/// The from.capabilities a [`Mutation::FromCaps`] sets.
fn caps_value(cv: &CapsVal) -> Value {
    match cv {
        CapsVal::Empty => json!([]),
        CapsVal::Custom => json!(["myagent:code-review", "myagent:translation/en-de"]),
        CapsVal::Other(v) => v.json(),
    }
}

/// The to.agentId a [`Mutation::ToAgent`] sets.
fn to_value(t: &ToVal, c: &FuzzCase) -> Value {
    match t {
        ToVal::OtherKey => json!(other_id()),
        ToVal::Empty => json!(""),
        ToVal::Target => json!(c.target),
        ToVal::TargetUrlSafe => match keys::b64_decode_any(&c.target) {
            Some((b, _)) => json!(keys::b64url(&b)),
            None => json!(c.target),
        },
        ToVal::Other(v) => v.json(),
    }
}

/// The payload.action a [`Mutation::Action`] sets.
fn action_value(a: &ActionVal, c: &FuzzCase) -> Value {
    match a {
        ActionVal::Echo => json!(c.echo),
        ActionVal::Delay => json!(c.delay),
        ActionVal::Upper => json!(c.echo.to_ascii_uppercase()),
        ActionVal::Empty => json!(""),
        ActionVal::Fz(s) => json!(format!("fz-{}", s.chars().take(24).collect::<String>())),
        ActionVal::Other(v) => v.json(),
    }
}

/// The payload.timeout a [`Mutation::Timeout`] sets.
fn timeout_value(t: &TimeoutVal) -> Value {
    match t {
        TimeoutVal::Negative => json!(-1),
        TimeoutVal::Small(n) => json!(n),
        TimeoutVal::Large(n) => json!(u64::from(*n) + 10_000),
        TimeoutVal::Fraction => json!(250.5),
        TimeoutVal::Integral => json!(30000.0),
        TimeoutVal::Text => json!("soon"),
        TimeoutVal::Other(v) => v.json(),
    }
}

/// Requests the mutations left without a correlationId get one: the reference
/// echoes a missing one as `null` (see the module doc), so they are not fuzzed.
pub(super) fn keep_correlation(m: &mut Value, c: &FuzzCase) {
    if m["type"] == "request" && m["payload"].get("correlationId").is_none() {
        set(
            m,
            &["payload"],
            "correlationId",
            json!(format!("fz-kept-{}", c.n)),
        );
    }
}

/// Sends `bytes` and returns what came back, after the reply checks. `sender` is
/// the agentId the message names (replies must be addressed to it); without one the
/// message goes over a second connection and replies are not held to an addressee.
pub(super) async fn exchange(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    bytes: Vec<u8>,
    sender: Option<String>,
    e: &Expect,
) -> FuzzStep<Got> {
    // Over WebSocket silence is only seen by waiting: short where no reply is
    // expected, bounded where silence is one allowed answer (HTTP answers at once).
    let ws = f.ctx.transport == Transport::Ws;
    let wait = if ws && e.want == Shows::Nothing && e.hard.is_empty() {
        QUIET
    } else if ws && e.may_be_silent() {
        SILENT_OK
    } else {
        fuzz_wait(f)
    };
    let got = match sender {
        Some(s) => {
            let saved = std::mem::replace(&mut c.me.id, s);
            let r = c.me.exchange(&mut f.ctx, bytes, wait).await;
            c.me.id = saved;
            // The HTTP status is not judged (AGP-A10): a reply message is judged by
            // its content, and an answer that is none by the shared reading.
            match r? {
                Ok(Answer::Reply(v)) => Got::Reply(v),
                Ok(Answer::Empty(_) | Answer::Silence) => Got::Silence,
                Err(DriveError::Timeout(_)) if e.may_be_silent() => Got::Silence,
                Err(DriveError::Timeout(t)) if e.refused_as.is_some() => {
                    return late(e, t);
                }
                Err(err) => return fuzz_fail(describe_drive_error(&err)),
            }
        }
        None => {
            let who = f.ctx.transport.to_string();
            f.ctx
                .log_frame("send", &who, &String::from_utf8_lossy(&bytes));
            let lim = limits(f, wait);
            let drv = c.raw.get_or_insert_with(|| new_driver(f));
            let r = drv.exchange(bytes, lim).await;
            received(f, c, r, None, e)?
        }
    };
    if let Got::Reply(v) = &got {
        reply_oracles(v, e)?;
    }
    Ok(got)
}

/// No answer within `ms` to a valid message whose refusal breaks a rule of its
/// own (a delay within its timeout): that rule's finding, not a crash.
fn late(e: &Expect, ms: u128) -> FuzzStep<Got> {
    let rule = e.refused_as.map(|(_, rule)| rule.key.to_string());
    Err(verdict::FuzzStop::Found(verdict::FuzzFinding {
        oracle: Oracle::Verdict,
        detail: format!(
            "a request the target must carry out within its timeout drew no answer within {ms} ms"
        ),
        key: rule,
    }))
}

/// Reads one reply that came over the second connection with the shared reading
/// of `Me` (minus the addressee when `sender` is unknown).
pub(super) fn received(
    f: &mut FuzzCtx,
    c: &mut FuzzCase,
    r: Result<Received, DriveError>,
    sender: Option<&str>,
    e: &Expect,
) -> FuzzStep<Got> {
    let who = f.ctx.transport.to_string();
    if let Ok(r) = &r {
        f.ctx.note_if_retried(r);
    }
    let (status, body) = match r {
        Err(DriveError::Timeout(_)) if e.may_be_silent() => return Ok(Got::Silence),
        Err(DriveError::Timeout(t)) if e.refused_as.is_some() => return late(e, t),
        Err(err) => return fuzz_fail(describe_drive_error(&err)),
        Ok(Received::Silence) => return Ok(Got::Silence),
        Ok(Received::Frame(b)) => (None, b),
        Ok(Received::Http { status, body, .. }) => {
            f.ctx.log_http_reply(status, &body);
            if body.is_empty() && status < 400 {
                return Ok(Got::Silence);
            }
            if body.is_empty() && status >= 500 {
                return finding(
                    Oracle::ServerError,
                    format!("the target answered HTTP {status} with no message"),
                );
            }
            if (400..500).contains(&status)
                && e.silence_ok
                && serde_json::from_slice::<Value>(&body).is_err()
            {
                // A bare HTTP refusal of bytes that name no sender.
                return Ok(Got::Silence);
            }
            (Some(status), body)
        }
    };
    if !matches!(f.ctx.transport, Transport::Http) {
        f.ctx
            .log_frame("recv", &who, &String::from_utf8_lossy(&body));
    }
    // The reply checks `run` applies (the correlationId echoed among them), whose
    // first failing finding stops the case.
    let asked = Asked {
        sender: sender.map(String::from),
        target: Some(c.target.clone()),
        correlation: e.correlation.clone(),
    };
    let from = f.ctx.findings().len();
    let v = read_reply(&mut f.ctx, &body, status, &asked, &mut c.raw_ids)?;
    verdict::rules_since(&f.ctx, from)?;
    Ok(Got::Reply(v))
}

/// `twin` re-signed under a fresh id (when its id is a UUID) and correlationId;
/// also whether the id is fresh.
pub(super) fn fresh_copy(twin: &Value, c: &FuzzCase) -> (Value, bool) {
    // The same content under a fresh id and correlationId, so that a target
    // that refuses repeats does not tell the two apart (AGP-A7).
    let mut copy = twin.clone();
    let fresh_id = copy["id"].as_str().is_some_and(is_uuid);
    if fresh_id {
        set(&mut copy, &[], "id", json!(new_id()));
    }
    if let Some(corr) = copy["payload"]["correlationId"].as_str().map(String::from) {
        set(
            &mut copy,
            &["payload"],
            "correlationId",
            json!(format!("{corr}-w")),
        );
    }
    c.me.sign(&mut copy);
    (copy, fresh_id)
}
