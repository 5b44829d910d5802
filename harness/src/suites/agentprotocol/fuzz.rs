//! Live fuzzing of agentprotocol (agentprotocol.md) over HTTP and WebSocket. Every
//! case is one fresh signing identity (`suites::agentprotocol::expect::Me`), so the
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
//! Oracles (each reply also gets the shared reading of `suites::agentprotocol::expect`,
//! `read_reply`, on both connections: envelope, protocol, UUID, timestamp,
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
//!   (`expect::hello_findings`: version "0.1", features, capabilities of the form
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

use crate::drive::{DriveError, Driver, Limits, Received, Transport};
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, Val, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{
    self, about, fail, finding, skip, Codes, Expected, FuzzFinding, FuzzFuture, FuzzStep, FuzzStop,
    Observed, Oracle,
};
use crate::rules::Rule;
use crate::script::describe_drive_error;
use crate::suites::agentprotocol::expect::{
    cns_details_finding, echo_finding, hello_findings, read_reply, refused, strings, Answer, Asked,
    Me,
};
use crate::suites::agentprotocol::rules;
use arbitrary::Arbitrary;
use reference_impl::agentprotocol::message::{self, SigProblem, PROTOCOL, TYPES};
use reference_impl::wire::json::Value as Tree;
use reference_impl::wire::keys::{self, Keypair};
use reference_impl::wire::{clock, is_uuid, jcs, new_id};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::time::Duration;

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

const IM: &str = "INVALID_MESSAGE";
const IS: &str = "INVALID_SIGNATURE";
const UA: &str = "UNKNOWN_AGENT";
const CNS: &str = "CAPABILITY_NOT_SUPPORTED";
const TIMEOUT: &str = "TIMEOUT";
const RATE_LIMITED: &str = "RATE_LIMITED";

/// How long to listen for a reply that should not come (WebSocket; HTTP answers at
/// once).
const QUIET: Duration = Duration::from_millis(150);
/// How long to wait over WebSocket where no reply is one allowed answer (well past
/// [`LONG_MS`], so a delay carried out past its timeout is still seen).
const SILENT_OK: Duration = Duration::from_millis(1000);
/// A delay that ends well within the case.
const SHORT_MS: u64 = 5;
/// A delay that outlasts [`SHORT_TIMEOUT_MS`].
const LONG_MS: u64 = 150;
const SHORT_TIMEOUT_MS: u64 = 20;
/// Requests in a burst (the rate-limit flow).
const BURST: usize = 25;

#[derive(Debug, Clone, Copy, Default, Arbitrary, PartialEq, Eq)]
enum Template {
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
enum RawTemplate {
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
enum Top {
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
enum TypeVal {
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
enum ProtoVal {
    #[default]
    Next,
    Upper,
    Empty,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum IdVal {
    #[default]
    Int,
    Fresh,
    Upper,
    NotUuid,
    Empty,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum TsVal {
    #[default]
    Fresh,
    ShiftMinutes(i16),
    NoZone,
    Garbage,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum AgentVal {
    #[default]
    Empty,
    Short,
    OtherKey,
    UrlSafe,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum CapsVal {
    #[default]
    Empty,
    Custom,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum ToVal {
    #[default]
    OtherKey,
    Empty,
    Target,
    TargetUrlSafe,
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum ActionVal {
    #[default]
    Echo,
    Delay,
    Upper,
    Empty,
    Fz(String),
    Other(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum TimeoutVal {
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
enum Mutation {
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

/// Edits of the signature or the signer.
#[derive(Debug, Clone, Default, Arbitrary)]
enum SigMut {
    #[default]
    Remove,
    Empty,
    NotString(Val),
    Truncate(u8),
    Flip(u8),
    /// The same signature in URL-safe base64 without padding (AGP-A4).
    UrlSafe,
    /// Signed by another key; from.agentId unchanged (AGP-034).
    WrongKey,
    /// from.agentId set to another key after signing (AGP-034).
    ClaimOther,
    /// from.agentId and signature of another key: a valid message of another sender.
    OtherSender,
    /// from.agentId in URL-safe base64, re-signed (AGP-A4).
    AgentUrlSafe,
    Random,
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

/// One case: the identity, a second connection for input the identity cannot send
/// (unparseable bytes, a sender that is no string), and what hello told.
struct Case {
    me: Me,
    raw: Option<Driver>,
    raw_ids: HashSet<String>,
    target: String,
    signed_messages: bool,
    echo: String,
    delay: String,
    /// The profile's [agentprotocol] unknown_agent_error and timeout_error: whether
    /// UNKNOWN_AGENT and TIMEOUT are judged, as the run's cases judge them.
    unknown_agent_error: bool,
    timeout_error: bool,
    n: u64,
}

/// What came back for one message.
enum Got {
    Silence,
    Reply(Value),
}

/// The verdict the spec fixes for one message (see the module doc).
#[derive(Debug, Default, Clone)]
struct Expect {
    /// Codes of problems that require a rejection.
    hard: Vec<&'static str>,
    /// Codes a target may answer instead of carrying the message out.
    soft: Vec<&'static str>,
    reasons: Vec<String>,
    /// A hard problem is the signature's.
    sig_bad: bool,
    /// The rules of `run` the first hard problem breaks: carried out, and refused
    /// with another code (`None`: any refusal passes, as in `run`).
    subject: Option<Subject>,
    /// Any code is an acceptable rejection.
    any_code: bool,
    /// Nothing fixed beyond the rejection a hard problem requires.
    open: bool,
    /// No reply at all is acceptable, even where a rejection is required.
    silence_ok: bool,
    /// The outcome depends on timing (a timeout close to the delay).
    timing_open: bool,
    /// RATE_LIMITED is an acceptable answer (a burst).
    rate_limit_ok: bool,
    want: Shows,
    correlation: Option<String>,
    action: Option<String>,
}

#[derive(Debug, Default, Clone, PartialEq)]
enum Shows {
    #[default]
    Nothing,
    Hello,
    Echo(Option<Value>),
    Success,
}

/// What a success shows, as a finding's detail says it.
impl std::fmt::Display for Shows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shows::Nothing => f.write_str("no reply shape judged"),
            Shows::Hello => f.write_str("a hello"),
            Shows::Echo(Some(v)) => write!(f, "an echo of {v}"),
            Shows::Echo(None) => f.write_str("an echo"),
            Shows::Success => f.write_str("a success"),
        }
    }
}

/// The rules of `run` a message that must be refused breaks: carried out, and
/// refused with another code than the one due.
type Subject = (&'static Rule, Option<&'static Rule>);

/// An invalid message answered otherwise than with INVALID_MESSAGE (the
/// invalid-message case's table: a wrong code is that rule's too).
const INVALID: Subject = (
    &rules::INVALID_MESSAGE_ACCEPTED,
    Some(&rules::INVALID_MESSAGE_ACCEPTED),
);
/// A signature that does not verify (reject-tampered).
const TAMPERED: Subject = (
    &rules::REJECT_TAMPERED_CARRIED_OUT,
    Some(&rules::REJECT_TAMPERED_CODE),
);
/// A signature by another key than the sender's (reject-wrong-key).
const WRONG_KEY: Subject = (
    &rules::REJECT_WRONG_KEY_CARRIED_OUT,
    Some(&rules::REJECT_WRONG_KEY_CODE),
);
/// An unsigned request to a target that advertises signed-messages: `run` judges
/// only that it is not carried out.
const UNSIGNED: Subject = (&rules::UNSIGNED_REQUEST_CARRIED_OUT, None);

/// Files a fuzz finding of `r` under `subject`'s rule for what the target did,
/// whatever rule the model gave it: the message's edit says which case's subject it
/// is (a wrong code where `run` takes any refusal is no finding).
fn filed_as<T: Default>(subject: Subject, r: FuzzStep<T>) -> FuzzStep<T> {
    match r {
        Err(FuzzStop::Found(f)) => match rule_of(subject, f.oracle) {
            Some(rule) => verdict::refile(rule.key, Err(FuzzStop::Found(f))),
            None => Ok(T::default()),
        },
        other => other,
    }
}

/// The rule of `subject` a finding of `oracle` breaks: a wrong code its code rule
/// (`None`: `run` takes any refusal), anything else its carried-out rule.
fn rule_of(subject: Subject, oracle: Oracle) -> Option<&'static Rule> {
    match (oracle, subject) {
        (Oracle::ErrorCode, (_, code)) => code,
        (_, (carried, _)) => Some(carried),
    }
}

impl Expect {
    /// A problem that requires a rejection: an invalid message's.
    fn hard(&mut self, codes: &[&'static str], why: impl Into<String>) {
        self.hard_as(INVALID, codes, why);
    }

    /// A problem that requires a rejection, judged by the rules `subject`.
    fn hard_as(&mut self, subject: Subject, codes: &[&'static str], why: impl Into<String>) {
        if self.hard.is_empty() {
            self.subject = Some(subject);
        }
        self.hard.extend_from_slice(codes);
        self.reasons.push(why.into());
    }

    /// The key of `run` a reply that broke the verdict is filed under: the first
    /// hard problem's rule for what the target did; a valid message refused, the
    /// refusal keyed by the target's words.
    fn key_for(&self, oracle: Oracle, reply: Option<&Value>) -> Option<String> {
        match self.subject {
            Some(subject) => rule_of(subject, oracle).map(|r| r.key.to_string()),
            None => {
                let r = reply.filter(|v| v["type"] == "error")?;
                Some(refused(r, "a valid message", &[]).key.to_string())
            }
        }
    }

    fn soft(&mut self, codes: &[&'static str], why: impl Into<String>) {
        self.soft.extend_from_slice(codes);
        self.reasons.push(format!("may: {}", why.into()));
    }

    /// Input that is not JSON at all.
    fn garbage() -> Expect {
        let mut e = Expect {
            silence_ok: true,
            ..Expect::default()
        };
        e.hard(&[IM, IS], "the bytes are not JSON (AGP-023)");
        e
    }

    /// JSON that is not I-JSON (duplicate names, inexact numbers): nothing fixed.
    fn not_ijson() -> Expect {
        Expect {
            open: true,
            silence_ok: true,
            any_code: true,
            ..Expect::default()
        }
    }

    /// The verdict in the fuzzers' one vocabulary: a hard problem requires a
    /// rejection (with one of the codes named, or any code); else an open part
    /// leaves it open; else the message is carried out, and the codes of soft
    /// problems may answer it instead.
    fn verdict(&self) -> Expected<Shows, &'static str> {
        let named = |codes: Vec<&'static str>| {
            if self.any_code {
                Codes::Any
            } else {
                Codes::OneOf(codes)
            }
        };
        if !self.hard.is_empty() {
            let mut codes = self.hard.clone();
            codes.extend(self.soft.iter().copied());
            Expected::Reject(named(codes))
        } else if self.open {
            Expected::Open(self.reasons.join("; "))
        } else {
            Expected::Accept(self.want.clone(), named(self.soft.clone()))
        }
    }

    /// Whether no reply is an acceptable answer.
    fn may_be_silent(&self) -> bool {
        self.silence_ok || (self.open && self.hard.is_empty())
    }

    fn describe(&self) -> String {
        let mut codes: Vec<&str> = self.hard.clone();
        codes.extend(self.soft.iter());
        codes.sort_unstable();
        codes.dedup();
        if self.hard.is_empty() {
            format!(
                "expected it carried out ({}; allowed codes {}): {}",
                self.want,
                crate::finding::json(&codes),
                self.reasons.join("; ")
            )
        } else {
            format!(
                "expected a rejection with one of {}{}: {}",
                crate::finding::json(&codes),
                if self.may_be_silent() {
                    " or no reply"
                } else {
                    ""
                },
                self.reasons.join("; ")
            )
        }
    }
}

/// Whether `v` holds only what every canonical form spells alike: ASCII text and
/// safe integers (AGP-A1).
fn plain(v: &Value) -> bool {
    let ascii = |s: &str| s.bytes().all(|b| (0x20..0x7f).contains(&b));
    match v {
        Value::String(s) => ascii(s),
        Value::Number(n) => {
            n.as_i64().is_some_and(|i| i.unsigned_abs() <= 1 << 53)
                || n.as_u64().is_some_and(|u| u <= 1 << 53)
        }
        Value::Array(a) => a.iter().all(plain),
        Value::Object(o) => o.iter().all(|(k, x)| ascii(k) && plain(x)),
        _ => true,
    }
}

/// Whether `s` is standard padded base64 of `len` bytes.
fn standard_b64(s: &str, len: usize) -> bool {
    keys::b64std_decode(s).is_some_and(|b| b.len() == len && keys::b64std(&b) == s)
}

/// The same key or signature bytes, spelled in another base64 flavour.
fn same_bytes(a: &str, b: &str) -> bool {
    match (keys::b64_decode_any(a), keys::b64_decode_any(b)) {
        (Some((x, _)), Some((y, _))) => x == y,
        _ => false,
    }
}

/// The members of a full message envelope (AGP-001).
const ENVELOPE: [&str; 8] = [
    "protocol",
    "id",
    "timestamp",
    "from",
    "to",
    "type",
    "payload",
    "signature",
];

fn expect_for(v: &Value, c: &Case) -> Expect {
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

/// Judges protocol, id and timestamp (AGP-002, AGP-003, AGP-004; open by AGP-A6,
/// AGP-A12, AGP-A16).
fn envelope_head(o: &Map<String, Value>, e: &mut Expect) {
    if o.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
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
fn from_member(o: &Map<String, Value>, e: &mut Expect) {
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
fn addressee(o: &Map<String, Value>, c: &Case, e: &mut Expect) {
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
fn to_agent(to: &Map<String, Value>, c: &Case, e: &mut Expect) {
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
            let subject = (
                &rules::UNKNOWN_AGENT_CARRIED_OUT,
                Some(&rules::UNKNOWN_AGENT_CODE),
            );
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
fn message_type<'a>(o: &'a Map<String, Value>, e: &mut Expect) -> Option<&'a str> {
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
fn payload_of<'a>(o: &'a Map<String, Value>, e: &mut Expect) -> Option<&'a Map<String, Value>> {
    match o.get("payload") {
        Some(Value::Object(p)) => Some(p),
        _ => {
            e.hard(&[IM], "payload is not an object (AGP-011)");
            None
        }
    }
}

/// Judges metadata and unknown top-level members (AGP-043, AGP-A19).
fn extras(o: &Map<String, Value>, e: &mut Expect) {
    if !o.get("metadata").is_none_or(Value::is_object) {
        e.soft(&[IM], "metadata is not an object (AGP-043)");
    }
    if o.keys()
        .any(|k| k != "metadata" && !ENVELOPE.contains(&k.as_str()))
    {
        e.soft(&[IM], "an unknown top-level member (AGP-A19)");
    }
}

/// What the message's type asks of the target: a hello, a request carried out, or
/// nothing fixed (AGP-014, AGP-021, AGP-A14, AGP-A16).
fn by_type(ty: Option<&str>, payload: Option<&Map<String, Value>>, c: &Case, e: &mut Expect) {
    match (ty, payload) {
        (Some("hello"), Some(p)) => {
            e.want = Shows::Hello;
            if !p.get("version").is_none_or(|v| v == "0.1") {
                e.soft(&[IM], "hello version is not \"0.1\" (AGP-014, AGP-A16)");
            }
            if !p
                .get("features")
                .is_none_or(|f| f.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
            {
                e.soft(&[IM], "hello features is not an array of strings (AGP-014)");
            }
        }
        (Some("request"), Some(p)) => request(p, c, e),
        (Some(_), _) => {
            // notify, or a response or error nobody asked for: no reply is expected;
            // an acknowledgement or an error is allowed (AGP-021, AGP-A14).
            e.want = Shows::Nothing;
            e.open = true;
            e.silence_ok = true;
        }
        (None, _) => {}
    }
}

fn signature(v: &Value, c: &Case, e: &mut Expect) {
    match v.get("signature") {
        None => unsigned(c, e),
        Some(Value::String(s)) if s.is_empty() => unsigned(c, e),
        Some(Value::String(s)) => {
            let agent = v["from"]["agentId"].as_str().unwrap_or_default();
            // A message as this case's identity signed it needs no second check.
            let own = agent == c.me.id
                && message::signing_bytes(Tree::from_serde(v)).is_ok_and(|b| c.me.signed(s, &b));
            let verdict = if own {
                Ok(())
            } else {
                message::verify_tree(Tree::from_serde(v))
            };
            match verdict {
                Ok(()) if standard_b64(s, 64) && standard_b64(agent, 32) => {}
                Ok(()) => e.soft(
                    &[IS, IM],
                    "signature or from.agentId not in standard padded base64 (AGP-A4)",
                ),
                Err(SigProblem::Mismatch) => {
                    e.sig_bad = true;
                    e.hard_as(
                        TAMPERED,
                        &[IS],
                        "the signature does not verify (AGP-024, AGP-033, AGP-034)",
                    );
                }
                Err(p) => {
                    e.sig_bad = true;
                    e.hard_as(
                        TAMPERED,
                        &[IS, IM],
                        format!("the signature cannot be verified: {p} (AGP-012, AGP-024)"),
                    );
                }
            }
        }
        Some(_) => {
            e.sig_bad = true;
            e.hard_as(TAMPERED, &[IS, IM], "signature is not a string (AGP-012)");
        }
    }
}

fn unsigned(c: &Case, e: &mut Expect) {
    if c.signed_messages {
        e.sig_bad = true;
        e.hard_as(
            UNSIGNED,
            &[IS, IM],
            "unsigned, and the target advertises signed-messages (AGP-030, AGP-A3)",
        );
    } else {
        e.soft(&[IS, IM], "unsigned (AGP-030, AGP-A3)");
    }
}

fn request(p: &Map<String, Value>, c: &Case, e: &mut Expect) {
    if !p.get("correlationId").is_none_or(Value::is_string) {
        e.soft(&[IM], "correlationId is not a string (AGP-018)");
    }
    let params = request_params(p, e);
    let timeout = request_timeout(p, e);
    let action = match p.get("action") {
        Some(Value::String(a)) => a.clone(),
        // Not refusing it is a warning (AGP-038, a SHOULD: the input-validation case).
        _ => {
            e.soft(
                &[IM],
                "action is missing or not a string (AGP-018, AGP-038)",
            );
            e.open = true;
            return;
        }
    };
    e.action = Some(action.clone());
    if action == c.echo {
        e.want = Shows::Echo(params);
        if timeout.is_some_and(|t| t < 200) {
            e.soft(&[TIMEOUT], "a timeout shorter than a round trip (AGP-027)");
        }
    } else if action == c.delay {
        delay_request(params, timeout, c.timeout_error, e);
    } else if action.starts_with("fz-") || action.is_empty() {
        let lacks = (
            &rules::UNKNOWN_ACTION_CODE,
            Some(&rules::UNKNOWN_ACTION_CODE),
        );
        e.hard_as(
            lacks,
            &[CNS],
            format!("no target offers action {action:?} (AGP-020, AGP-026)"),
        );
        if action.is_empty() {
            e.soft(&[IM], "an empty action (AGP-018)");
        }
    } else {
        // An action the target may or may not offer (AGP-A8).
        e.open = true;
    }
}

/// The request's params when they are an object, else a hard problem (AGP-018).
fn request_params(p: &Map<String, Value>, e: &mut Expect) -> Option<Value> {
    match p.get("params") {
        None => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            e.hard(&[IM], "params is not an object (AGP-018)");
            None
        }
    }
}

/// The request's timeout in milliseconds when it is a non-negative integer (or
/// one written as a float), else a problem (AGP-018, AGP-038).
fn request_timeout(p: &Map<String, Value>, e: &mut Expect) -> Option<u64> {
    match p.get("timeout") {
        None => None,
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(t), _) => Some(t),
            (None, Some(x)) if x >= 0.0 && x.fract() == 0.0 && x < 1e15 => {
                e.soft(
                    &[IM],
                    "timeout is an integral number written as a float (AGP-018)",
                );
                Some(x as u64)
            }
            // Not refusing it is a warning (AGP-038, the input-validation case).
            _ => {
                e.soft(
                    &[IM],
                    "timeout is not a non-negative integer (AGP-018, AGP-038)",
                );
                e.open = true;
                None
            }
        },
        Some(_) => {
            e.soft(&[IM], "timeout is not a number (AGP-018, AGP-038)");
            e.open = true;
            None
        }
    }
}

/// What a delay request must draw, from its `ms` and its timeout: success, TIMEOUT
/// (or no reply), or a verdict left open by timing (AGP-027, AGP-A18).
fn delay_request(params: Option<Value>, timeout: Option<u64>, timeout_error: bool, e: &mut Expect) {
    e.want = Shows::Success;
    let ms = params.as_ref().map(|p| p.get("ms").and_then(Value::as_u64));
    match (ms, timeout) {
        // TIMEOUT is judged where the profile says the target sends it, as the
        // timeout case judges it; else what it does is informational (AGP-A18).
        (Some(Some(ms)), Some(t))
            if t.saturating_mul(2).saturating_add(50) <= ms && !timeout_error =>
        {
            e.soft(
                &[TIMEOUT],
                format!("a delay of {ms} ms with a timeout of {t} ms (AGP-A18, informational)"),
            );
            e.open = true;
            e.timing_open = true;
        }
        (Some(Some(ms)), Some(t)) if t.saturating_mul(2).saturating_add(50) <= ms => {
            let late = (
                &rules::TIMEOUT_NOT_TIMED_OUT,
                Some(&rules::TIMEOUT_NOT_TIMED_OUT),
            );
            e.hard_as(
                late,
                &[TIMEOUT],
                format!("a delay of {ms} ms with a timeout of {t} ms (AGP-027, AGP-A18)"),
            );
            e.silence_ok = true;
        }
        (Some(Some(ms)), Some(t)) if t >= ms.saturating_add(200) => {}
        (Some(Some(_)), None) => {}
        (None, None) => {}
        (Some(Some(_)), Some(_)) => {
            e.open = true;
            e.timing_open = true;
            e.soft(&[TIMEOUT], "a timeout close to the delay (AGP-A18)");
        }
        _ => {
            // `ms` is the profile's fixture; without it the delay is undefined.
            e.soft(&[IM], "delay without an integer params.ms");
            if timeout.is_some() {
                e.open = true;
                e.timing_open = true;
                e.soft(&[TIMEOUT], "a timeout for an undefined delay (AGP-A18)");
            }
        }
    }
}

impl Case {
    /// A fresh template from the case's identity (unsigned).
    fn template(&mut self, t: Template) -> Value {
        self.n += 1;
        template(t, self)
    }
}

/// A message from `c.me` (unsigned).
fn template(t: Template, c: &Case) -> Value {
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
        Template::DelayWithin => req(&c.delay, json!({"ms": SHORT_MS}), json!({"timeout": 30000})),
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

fn set(v: &mut Value, path: &[&str], key: &str, val: Value) {
    if let Some(o) = obj_at(v, path) {
        o.insert(key.to_string(), val);
    }
}

fn remove(v: &mut Value, path: &[&str], key: &str) {
    if let Some(o) = obj_at(v, path) {
        o.remove(key);
    }
}

fn pick<'a>(i: u8, xs: &[&'a str]) -> &'a str {
    xs[usize::from(i) % xs.len()]
}

fn other_id() -> String {
    message::agent_id(&Keypair::generate())
}

fn apply(m: &mut Value, mu: &Mutation, c: &Case) {
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
        ProtoVal::Upper => json!(PROTOCOL.to_ascii_uppercase()),
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
fn to_value(t: &ToVal, c: &Case) -> Value {
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
fn action_value(a: &ActionVal, c: &Case) -> Value {
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
fn keep_correlation(m: &mut Value, c: &Case) {
    if m["type"] == "request" && m["payload"].get("correlationId").is_none() {
        set(
            m,
            &["payload"],
            "correlationId",
            json!(format!("fz-kept-{}", c.n)),
        );
    }
}

fn apply_sig(m: &mut Value, s: &SigMut, me: &Me) {
    let sig = m["signature"].as_str().unwrap_or_default().to_string();
    match s {
        SigMut::Remove => remove(m, &[], "signature"),
        SigMut::Empty => set(m, &[], "signature", json!("")),
        SigMut::NotString(v) => set(m, &[], "signature", v.json()),
        SigMut::Truncate(n) => {
            let keep = sig.len().saturating_sub(1 + usize::from(*n % 8));
            set(m, &[], "signature", json!(sig[..keep]));
        }
        SigMut::Flip(at) => {
            let mut b = sig.into_bytes();
            if !b.is_empty() {
                let i = usize::from(*at) % b.len();
                b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            }
            set(m, &[], "signature", json!(String::from_utf8_lossy(&b)));
        }
        SigMut::UrlSafe => {
            if let Some((b, _)) = keys::b64_decode_any(&sig) {
                set(m, &[], "signature", json!(keys::b64url(&b)));
            }
        }
        SigMut::WrongKey => {
            let _ = message::sign(m, &Keypair::generate());
        }
        SigMut::ClaimOther => set(m, &["from"], "agentId", json!(other_id())),
        SigMut::OtherSender => {
            let other = Keypair::generate();
            set(m, &["from"], "agentId", json!(message::agent_id(&other)));
            let _ = message::sign(m, &other);
        }
        SigMut::AgentUrlSafe => {
            set(
                m,
                &["from"],
                "agentId",
                json!(keys::b64url(me.key.public().as_bytes())),
            );
            me.sign(m);
        }
        SigMut::Random => {
            let junk = Keypair::generate().sign(b"fz").to_bytes();
            set(m, &[], "signature", json!(keys::b64std(&junk)));
        }
    }
}

fn new_driver(f: &FuzzCtx) -> Driver {
    crate::suites::agentprotocol::expect::endpoint_driver(&f.ctx)
}

fn limits(f: &FuzzCtx, wait: Duration) -> Limits {
    Limits {
        timeout: wait,
        max_bytes: f.ctx.profile().timing.max_response_bytes,
    }
}

fn case_wait(f: &FuzzCtx) -> Duration {
    Duration::from_millis(f.ctx.profile().timing.case_timeout_ms)
}

/// The sender a reply to `v` is addressed to, when `v` names one.
fn sender_of(v: &Value) -> Option<String> {
    v.get("from")
        .and_then(|f| f.get("agentId"))
        .and_then(Value::as_str)
        .map(String::from)
}

/// Sends `bytes` and returns what came back, after the reply checks. `sender` is
/// the agentId the message names (replies must be addressed to it); without one the
/// message goes over a second connection and replies are not held to an addressee.
async fn exchange(
    f: &mut FuzzCtx,
    c: &mut Case,
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
        case_wait(f)
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
                Err(err) => return fail(describe_drive_error(&err)),
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

/// Reads one reply that came over the second connection with the shared reading
/// of `Me` (minus the addressee when `sender` is unknown).
fn received(
    f: &mut FuzzCtx,
    c: &mut Case,
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
        Err(err) => return fail(describe_drive_error(&err)),
        Ok(Received::Silence) => return Ok(Got::Silence),
        Ok(Received::Frame(b)) => (None, b),
        Ok(Received::Http { status, body, .. }) => {
            f.ctx.log_frame(
                "recv",
                &who,
                &format!("HTTP {status}: {}", String::from_utf8_lossy(&body)),
            );
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

/// Oracles every reply gets, whatever the verdict.
fn reply_oracles(v: &Value, e: &Expect) -> FuzzStep<()> {
    let ty = v["type"].as_str().unwrap_or_default();
    // The envelope (the hello's full, signature included; AGP-001, AGP-A6; an
    // unsigned reply elsewhere and a missing `to` are warnings, AGP-A3, AGP-A22) is
    // judged by the shared reading, whose failing findings fail the case.
    let p = &v["payload"];
    if ty == "error" {
        // A code outside the table is judged by the shared reading (expect/), which
        // records it as a warning (AGP-022).
        let code = p["code"].as_str().unwrap_or_default();
        if code == "INTERNAL_ERROR" {
            // To a message `run` judges a refusal of, it is that rule's wrong code.
            if let Some((_, Some(rule))) = e.subject {
                return Err(FuzzStop::Found(FuzzFinding {
                    oracle: Oracle::ErrorCode,
                    detail: format!("client input drew INTERNAL_ERROR (AGP-038): {p}"),
                    key: Some(rule.key.to_string()),
                }));
            }
            return finding(
                Oracle::ServerError,
                format!("client input drew INTERNAL_ERROR (AGP-038): {p}"),
            );
        }
        // The details by the unknown-action case's rule (unknown-action:details).
        if code == CNS {
            let found = cns_details_finding(p, e.action.as_deref());
            verdict::first_failing(found.into_iter().collect())?;
        }
    }
    // The correlationId echoed is the reply checks' rule (correlationId:not-echoed),
    // judged when the reply was read.
    Ok(())
}

/// The hello a target answers with: a hello (AGP-013), judged by the hello case's
/// rules (`expect::hello_findings`: AGP-007, AGP-014 to AGP-016).
fn hello_oracles(r: &Value) -> FuzzStep<()> {
    if r["type"] != "hello" {
        return finding(
            Oracle::Verdict,
            format!(
                "hello was answered with {} (AGP-013): {}",
                r["type"], r["payload"]
            ),
        );
    }
    verdict::first_failing(hello_findings(r, &strings(&r["from"]["capabilities"])))
}

/// What a reply says, for comparing two spellings.
fn verdict_of(g: &Got) -> String {
    match g {
        Got::Silence => "no reply".into(),
        Got::Reply(v) if v["type"] == "error" => format!("error {}", v["payload"]["code"]),
        Got::Reply(v) => format!("{}", v["type"]),
    }
}

fn judge(g: &Got, e: &Expect, what: &str) -> FuzzStep<()> {
    let v = match g {
        Got::Silence if e.may_be_silent() => return Ok(()),
        Got::Silence => {
            return finding(
                Oracle::Verdict,
                format!("{what} drew no reply; {}", e.describe()),
            );
        }
        Got::Reply(v) => v,
    };
    let ty = v["type"].as_str().unwrap_or_default();
    let p = &v["payload"];
    let code = p["code"].as_str().unwrap_or_default();
    let (got, said) = if ty == "error" {
        if code == RATE_LIMITED {
            return if e.rate_limit_ok {
                Ok(())
            } else {
                skip("the target rate-limited a fresh sender; the case cannot judge its input")
            };
        }
        (Observed::Refused(Some(code)), format!("error {code}"))
    } else {
        (Observed::Carried, format!("{ty} {p}"))
    };
    let carried = if e.sig_bad {
        Oracle::Signature
    } else {
        Oracle::Verdict
    };
    let want = e.verdict();
    let context = format!("{what} ({})", e.describe());
    let judged = verdict::judge(&want, &got, (Oracle::Verdict, carried), || said.clone());
    let judged = match judged {
        // A wrong code where `run` takes any refusal is no finding.
        Err(FuzzStop::Found(f))
            if f.oracle == Oracle::ErrorCode && e.key_for(f.oracle, Some(v)).is_none() =>
        {
            Ok(None)
        }
        Err(FuzzStop::Found(mut f)) if f.key.is_none() => {
            f.key = e.key_for(f.oracle, Some(v));
            Err(FuzzStop::Found(f))
        }
        other => other,
    };
    let shows = about(&context, judged)?;
    shows_oracles(shows, v, &context, &said)
}

/// What a message carried out must show in its reply: a hello, an echo of the
/// params (AGP-019), or a success.
fn shows_oracles(shows: Option<&Shows>, v: &Value, context: &str, said: &str) -> FuzzStep<()> {
    let ty = v["type"].as_str().unwrap_or_default();
    match shows {
        None | Some(Shows::Nothing) => Ok(()),
        Some(Shows::Hello) => hello_oracles(v),
        // A response carries it out whatever its status says (AGP-A11: a status other
        // than success is informational, as the echo-request case records it).
        Some(Shows::Echo(params)) => {
            let found = echo_finding(v, params.as_ref(), context);
            verdict::first_failing(found.into_iter().collect())
        }
        Some(Shows::Success) => {
            if ty != "response" {
                return finding(Oracle::Verdict, format!("{context}: drew {said}"));
            }
            Ok(())
        }
    }
}

/// Sends `v` as serialized (or `bytes` when given), judged by its verdict.
async fn send_judged(f: &mut FuzzCtx, c: &mut Case, v: &Value, what: &str) -> FuzzStep<Got> {
    let e = expect_for(v, c);
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    f.fuzzed(&bytes);
    let g = exchange(f, c, bytes, sender_of(v), &e).await?;
    judge(&g, &e, what)?;
    Ok(g)
}

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let kind: Kind = f.draw();
    let mut c = open_case(f).await?;
    let c = &mut c;
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
            let judged = send_judged(f, c, &m, "the message changed after signing").await;
            filed_as(TAMPERED, judged.map(|_| ()))?;
        }
        Kind::Signature(t, s) => {
            let mut m = c.template(t);
            c.me.sign(&mut m);
            apply_sig(&mut m, &s, &c.me);
            let judged = send_judged(f, c, &m, "the message with an edited signature").await;
            match signature_subject(&s) {
                Some(subject) => filed_as(subject, judged.map(|_| ()))?,
                None => {
                    judged?;
                }
            }
        }
        Kind::Raw(t, first, edits) => raw_case(f, c, t, first, edits).await?,
        Kind::Spelling(t, mu, w) => spelling_case(f, c, t, mu, w).await?,
        Kind::Flow(flow) => run_flow(f, c, flow).await?,
    }
    Ok(())
}

/// The conformance case whose subject a signature edit is: a fuzz finding on it is
/// filed under that case's key, the key `run` gives the same deviation; `None` for
/// an edit no one case owns.
fn signature_subject(s: &SigMut) -> Option<Subject> {
    match s {
        SigMut::Remove | SigMut::Empty => Some(UNSIGNED),
        SigMut::WrongKey | SigMut::ClaimOther => Some(WRONG_KEY),
        SigMut::Truncate(_) | SigMut::Flip(_) => Some(TAMPERED),
        _ => None,
    }
}

/// Opens a case: a fresh identity says hello, the hello reply gets its oracles
/// (AGP-007, AGP-013…016), and what it told (the target, signed-messages) is kept.
async fn open_case(f: &mut FuzzCtx) -> FuzzStep<Case> {
    let mut me = Me::new(&f.ctx);
    let hello = me.hello(&mut f.ctx).await?;
    reply_oracles(&hello, &Expect::default())?;
    hello_oracles(&hello)?;
    let prof = f.ctx.profile().agentprotocol.clone();
    Ok(Case {
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
    c: &mut Case,
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
    c: &mut Case,
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

/// `twin` re-signed under a fresh id (when its id is a UUID) and correlationId;
/// also whether the id is fresh.
fn fresh_copy(twin: &Value, c: &Case) -> (Value, bool) {
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

async fn run_flow(f: &mut FuzzCtx, c: &mut Case, flow: Flow) -> FuzzStep<()> {
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
            for i in 0..BURST {
                let mut m = c.template(Template::Echo);
                c.me.sign(&mut m);
                let mut e = expect_for(&m, c);
                e.rate_limit_ok = true;
                let bytes = serde_json::to_vec(&m).unwrap_or_default();
                f.fuzzed(&bytes);
                let g = exchange(f, c, bytes, sender_of(&m), &e).await?;
                if let Got::Reply(v) = &g {
                    if v["type"] == "error" && v["payload"]["code"] != RATE_LIMITED {
                        return finding(
                            Oracle::RateLimit,
                            format!("request {} of a burst drew error {}; throttling must use RATE_LIMITED (AGP-028)", i + 1, v["payload"]["code"]),
                        );
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
async fn pipeline(f: &mut FuzzCtx, c: &mut Case) -> FuzzStep<()> {
    let mut msgs = Vec::new();
    for t in [Template::DelayWithin, Template::Echo] {
        let mut m = c.template(t);
        c.me.sign(&mut m);
        let e = expect_for(&m, c);
        msgs.push((m, e));
    }
    let lim = limits(f, case_wait(f));
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
    c: &mut Case,
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
    c: &mut Case,
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
                    return fail(describe_drive_error(&err));
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
    c: &mut Case,
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
            return finding(
                Oracle::Correlation,
                format!("a reply to pipelined requests carries correlationId {corr:?}, which neither had (AGP-019)"),
            );
        };
        if std::mem::replace(&mut answered[i], true) {
            return finding(
                Oracle::Correlation,
                format!("two replies carry correlationId {corr:?} (AGP-019)"),
            );
        }
        let e = &msgs[i].1;
        reply_oracles(&v, e)?;
        judge(&Got::Reply(v), e, "a pipelined request")?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the peer and edits its
// hello or its response to the requester under test.

/// Fuzzing a requester: each case runs the client driver once (scenario
/// `request`) against the scripted peer of `suites::agentprotocol::expect`, its hello or
/// its response edited. Oracles: hello comes first; every message passes the
/// shared message checks, is addressed to the peer given (AGP-008) and has an id
/// of its own (AGP-003); no request to a peer whose hello lacks the capability
/// (AGP-036); a response with another correlationId (or correlation_id), a
/// signature that does not verify or is missing, a value changed after signing, an
/// addressee other than the requester (AGP-009), or an error in its place is never
/// taken; replies that keep their value complete the request; no crash, no hang.
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

use crate::suites::agentprotocol::expect::{PeerPlan, PeerSpoil};

const CLIENT_PLAIN: PeerPlan = PeerPlan {
    capabilities: &["agentprotocol:core", "agentconform:echo"],
    wrong_correlation: false,
    bad_signature: false,
    spoil: PeerSpoil::None,
};

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let input = client_input(&f.ctx);
        let answer =
            crate::suites::agentprotocol::expect::peer(f.ctx.shared.key.clone(), CLIENT_PLAIN);
        let run = crate::counterparty::drive(
            &mut f.ctx,
            "request",
            &input,
            answer,
            crate::suites::agentprotocol::expect::defined,
        )
        .await?;
        crate::fuzzing::client::ended_well(&run)?;
        crate::fuzzing::client::must_complete(&run, false, "a plain request")
    })
}

fn client_input(ctx: &crate::script::Ctx) -> Value {
    let peer = message::agent_id(&ctx.shared.key);
    json!({"action": "echo", "capability": "agentconform:echo", "params": {"text": "fuzz"}, "peer": peer})
}

/// One client fuzz case.
#[derive(Debug, Clone, Default, Arbitrary)]
struct ClientCase {
    /// 0: plain, 1: the hello lacks the capability, 2: the response echoes
    /// another correlationId, 3: the response's signature does not verify.
    plan: u8,
    /// Edit the hello (else the response).
    on_hello: bool,
    edit: crate::fuzzing::client::Edit,
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    use crate::fuzzing::client::{edit_answer, ended_well, Served};
    let c: ClientCase = f.draw();
    let kind = c.plan % 8;
    let plan = client_plan(kind);
    let input = client_input(&f.ctx);
    let served = std::sync::Arc::new(std::sync::Mutex::new(Served::default()));
    let on_hello = c.on_hello;
    let mut n = 0;
    let answer = edit_answer(
        crate::suites::agentprotocol::expect::peer(f.ctx.shared.key.clone(), plan),
        move |_| {
            n += 1;
            n == if on_hello { 1 } else { 2 }
        },
        c.edit.clone(),
        served.clone(),
    );
    let run = crate::counterparty::drive(
        &mut f.ctx,
        "request",
        &input,
        answer,
        crate::suites::agentprotocol::expect::defined,
    )
    .await?;
    ended_well(&run)?;
    let served = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let types = client_messages(f, &run, &input)?;
    client_verdict(&run, &c, plan, &served, &types)
}

/// The scripted peer of a case kind: plain, a hello that lacks the capability, a
/// response with another correlationId, one whose signature does not verify, or
/// one spoiled otherwise (misaddressed, an error, correlation_id, unsigned).
fn client_plan(kind: u8) -> PeerPlan {
    let spoiled = |spoil| PeerPlan {
        spoil,
        ..CLIENT_PLAIN
    };
    match kind {
        4 => spoiled(PeerSpoil::Misaddressed),
        5 => spoiled(PeerSpoil::Error("INTERNAL_ERROR")),
        6 => spoiled(PeerSpoil::SnakeCorrelation),
        7 => spoiled(PeerSpoil::Unsigned),
        1 => PeerPlan {
            capabilities: &["agentprotocol:core"],
            ..CLIENT_PLAIN
        },
        2 => PeerPlan {
            wrong_correlation: true,
            ..CLIENT_PLAIN
        },
        3 => PeerPlan {
            bad_signature: true,
            ..CLIENT_PLAIN
        },
        _ => CLIENT_PLAIN,
    }
}

/// Checks every message the requester sent: the shared message checks, addressed
/// to the peer given (AGP-008), an id of its own (AGP-003); returns their types in
/// order.
fn client_messages(
    f: &mut FuzzCtx,
    run: &crate::counterparty::DriverRun,
    input: &Value,
) -> FuzzStep<Vec<String>> {
    let mut types = Vec::new();
    for x in &run.exchanges {
        f.fuzzed(&x.received);
        // The rules `run` holds a client's message to (an id reused across the run
        // among them), whose first failing finding stops the case.
        let from = f.ctx.findings().len();
        let m =
            crate::suites::agentprotocol::expect::check_client_message(&mut f.ctx, &x.received)?;
        verdict::rules_since(&f.ctx, from)?;
        types.push(m["type"].as_str().unwrap_or_default().to_string());
        if m["to"]["agentId"] != input["peer"] {
            return finding(
                Oracle::ReplyCheck,
                format!(
                    "the requester's {} is addressed to {}, not to the peer it was given (AGP-008)",
                    m["type"], m["to"]["agentId"]
                ),
            );
        }
    }
    Ok(types)
}

/// Judges what the requester did with the peer's answers: hello first, no request
/// to a peer whose hello lacks the capability (AGP-036), a response it must refuse
/// never taken, and a valid request completed.
fn client_verdict(
    run: &crate::counterparty::DriverRun,
    c: &ClientCase,
    plan: PeerPlan,
    served: &crate::fuzzing::client::Served,
    types: &[String],
) -> FuzzStep<()> {
    use crate::fuzzing::client::{must_complete, took};
    let kind = c.plan % 8;
    let on_hello = c.on_hello;
    if types.first().is_some_and(|t| t != "hello") {
        return finding(
            Oracle::Hello,
            format!(
                "the requester's first message is a {}, not a hello",
                types[0]
            ),
        );
    }
    let hello_kept = !(on_hello && served.applied) || served.same_value;
    if kind == 1 && hello_kept && types.iter().any(|t| t == "request") {
        return finding(
            Oracle::Hello,
            "the requester sent a request to a peer whose hello lacks the capability (AGP-036)",
        );
    }
    let response_changed = !on_hello && served.applied && !served.same_value;
    let must_refuse = plan.wrong_correlation
        || plan.bad_signature
        || plan.spoil != PeerSpoil::None
        || response_changed;
    if took(run) && must_refuse {
        let oracle = if plan.wrong_correlation || plan.spoil == PeerSpoil::SnakeCorrelation {
            Oracle::Correlation
        } else {
            Oracle::Signature
        };
        return finding(
            oracle,
            format!(
                "the requester took a response it must refuse ({plan:?}, {})",
                c.edit
            ),
        );
    }
    if kind == 0 && hello_kept && !response_changed {
        let respelled = served.applied && !matches!(c.edit, crate::fuzzing::client::Edit::None);
        return must_complete(run, respelled, &format!("a valid request ({})", c.edit));
    }
    Ok(())
}
