//! What every live fuzzer reports: the oracle a fuzz finding broke ([`Oracle`]), the
//! typed finding itself ([`FuzzFinding`]) and how a fuzz case stops ([`FuzzStop`]).
//!
//! A fuzz case returns [`FuzzStep`]: `Ok`, a typed fuzz finding, or one of the
//! stops of the shared case machinery ([`Stop`], converted by `?`), which the
//! engine classifies by its structure (never by searching its text).

use crate::verdict::{CaseFuture, Met, Stop};
use std::future::Future;
use std::pin::Pin;

/// The oracle a fuzz finding broke. Its name (kebab-case) names crash files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Oracle {
    /// The reply is not the one the spec fixes for the message.
    Verdict,
    ServerError,
    ReplyShape,
    /// A respelling of a message drew another verdict than its canonical twin.
    WireForm,
    /// The target stopped answering a plain exchange.
    Liveness,
    /// The target did not answer in time.
    Timeout,
    /// The connection failed (closed, unreachable, transport error).
    Transport,
    /// A shared reply check of `expect/` failed.
    ReplyCheck,
    Auth,
    Barrier,
    Cancel,
    Capacity,
    Correlation,
    Delta,
    Details,
    Discovery,
    Dropped,
    Duplicate,
    ErrorCode,
    Fanout,
    Handshake,
    Hello,
    Id,
    Job,
    List,
    Members,
    RateLimit,
    Registration,
    Reputation,
    RequestId,
    Schema,
    Wellknown,
    Freshness,
    InvalidAccepted,
    Replay,
    ReplyNotJson,
    ReplySchema,
    ReplySignature,
    Signature,
    ValidRejected,
    Outcome,
    Delivery,
    Ledger,
}

impl Oracle {
    /// Every oracle, for look-ups by name.
    pub const ALL: &'static [Oracle] = &[
        Oracle::Verdict,
        Oracle::ServerError,
        Oracle::ReplyShape,
        Oracle::WireForm,
        Oracle::Liveness,
        Oracle::Timeout,
        Oracle::Transport,
        Oracle::ReplyCheck,
        Oracle::Auth,
        Oracle::Barrier,
        Oracle::Cancel,
        Oracle::Capacity,
        Oracle::Correlation,
        Oracle::Delta,
        Oracle::Details,
        Oracle::Discovery,
        Oracle::Dropped,
        Oracle::Duplicate,
        Oracle::ErrorCode,
        Oracle::Fanout,
        Oracle::Handshake,
        Oracle::Hello,
        Oracle::Id,
        Oracle::Job,
        Oracle::List,
        Oracle::Members,
        Oracle::RateLimit,
        Oracle::Registration,
        Oracle::Reputation,
        Oracle::RequestId,
        Oracle::Schema,
        Oracle::Wellknown,
        Oracle::Freshness,
        Oracle::InvalidAccepted,
        Oracle::Replay,
        Oracle::ReplyNotJson,
        Oracle::ReplySchema,
        Oracle::ReplySignature,
        Oracle::Signature,
        Oracle::ValidRejected,
        Oracle::Outcome,
        Oracle::Delivery,
        Oracle::Ledger,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Oracle::Verdict => "verdict",
            Oracle::ServerError => "server-error",
            Oracle::ReplyShape => "reply-shape",
            Oracle::WireForm => "wire-form",
            Oracle::Liveness => "liveness",
            Oracle::Timeout => "timeout",
            Oracle::Transport => "transport",
            Oracle::ReplyCheck => "reply-check",
            Oracle::Auth => "auth",
            Oracle::Barrier => "barrier",
            Oracle::Cancel => "cancel",
            Oracle::Capacity => "capacity",
            Oracle::Correlation => "correlation",
            Oracle::Delta => "delta",
            Oracle::Details => "details",
            Oracle::Discovery => "discovery",
            Oracle::Dropped => "dropped",
            Oracle::Duplicate => "duplicate",
            Oracle::ErrorCode => "error-code",
            Oracle::Fanout => "fanout",
            Oracle::Handshake => "handshake",
            Oracle::Hello => "hello",
            Oracle::Id => "id",
            Oracle::Job => "job",
            Oracle::List => "list",
            Oracle::Members => "members",
            Oracle::RateLimit => "rate-limit",
            Oracle::Registration => "registration",
            Oracle::Reputation => "reputation",
            Oracle::RequestId => "request-id",
            Oracle::Schema => "schema",
            Oracle::Wellknown => "wellknown",
            Oracle::Freshness => "freshness",
            Oracle::InvalidAccepted => "invalid-accepted",
            Oracle::Replay => "replay",
            Oracle::ReplyNotJson => "reply-not-json",
            Oracle::ReplySchema => "reply-schema",
            Oracle::ReplySignature => "reply-signature",
            Oracle::Signature => "signature",
            Oracle::ValidRejected => "valid-rejected",
            Oracle::Outcome => "outcome",
            Oracle::Delivery => "delivery",
            Oracle::Ledger => "ledger",
        }
    }

    /// The oracle of `name` (as written in a crash file).
    pub fn from_name(name: &str) -> Option<Oracle> {
        Oracle::ALL.iter().copied().find(|o| o.name() == name)
    }
}

impl std::fmt::Display for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One fuzz finding: the oracle it broke and what the target did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzFinding {
    pub oracle: Oracle,
    pub detail: String,
}

impl std::fmt::Display for FuzzFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.oracle, self.detail)
    }
}

/// How a fuzz case stops short of `Ok`.
#[derive(Debug)]
pub enum FuzzStop {
    /// An oracle of the fuzzer did not hold.
    Found(FuzzFinding),
    /// A stop of the shared case machinery (a reply check, a transport failure,
    /// a skip).
    Case(Stop),
}

impl From<Stop> for FuzzStop {
    fn from(s: Stop) -> Self {
        FuzzStop::Case(s)
    }
}

pub type FuzzStep<T> = Result<T, FuzzStop>;

pub type FuzzFuture<'a> = Pin<Box<dyn Future<Output = FuzzStep<()>> + Send + 'a>>;

/// A finding of `oracle`: the case fails with it.
pub fn finding<T>(oracle: Oracle, detail: impl Into<String>) -> FuzzStep<T> {
    Err(FuzzStop::Found(FuzzFinding {
        oracle,
        detail: detail.into(),
    }))
}

/// The case cannot run against this target (counted, never a finding).
pub fn skip<T>(why: impl Into<String>) -> FuzzStep<T> {
    Err(FuzzStop::Case(Stop::Skip(why.into())))
}

/// A reply check failed, said in text (the oracle is [`Oracle::ReplyCheck`]).
pub fn fail<T>(msg: impl Into<String>) -> FuzzStep<T> {
    Err(FuzzStop::Case(Stop::Fail(msg.into())))
}

/// Re-tags a failed shared reply check as a finding of `oracle`; every other
/// outcome passes unchanged.
pub fn tagged<T, E: Into<FuzzStop>>(oracle: Oracle, s: Result<T, E>) -> FuzzStep<T> {
    match s.map_err(Into::into) {
        Err(FuzzStop::Case(Stop::Fail(m))) => finding(oracle, m),
        other => other,
    }
}

/// Runs a case future of the shared machinery as a fuzz step.
pub async fn case_step(f: CaseFuture<'_>) -> FuzzStep<()> {
    Ok(f.await?)
}

/// What a case ended in, for the engine.
#[derive(Debug)]
pub enum Outcome {
    Pass,
    Skip(String),
    Finding(FuzzFinding),
}

/// Classifies how a case stopped. A transport failure the context recorded (its
/// key `<suite>/transport:<kind>`) is a timeout or a transport finding; any other
/// stop of the shared machinery is a failed reply check.
pub fn classify(result: FuzzStep<()>, met: &[Met]) -> Outcome {
    let transport = |key: &str| -> Option<Oracle> {
        let kind = key.split_once("/transport:")?.1;
        Some(if kind == "no-answer" {
            Oracle::Timeout
        } else {
            Oracle::Transport
        })
    };
    let found = |oracle, detail: String| Outcome::Finding(FuzzFinding { oracle, detail });
    match result {
        Ok(()) => match met
            .iter()
            .find(|m| m.finding.outcome == crate::finding::Verdict::Fail)
        {
            // A failing finding the script read past is a failure of the case, as
            // if the check had stopped it there.
            Some(m) => found(
                transport(&m.finding.key).unwrap_or(Oracle::ReplyCheck),
                m.finding.summary.clone(),
            ),
            None => Outcome::Pass,
        },
        Err(FuzzStop::Found(f)) => Outcome::Finding(f),
        Err(FuzzStop::Case(Stop::Skip(why))) => Outcome::Skip(why),
        Err(FuzzStop::Case(Stop::Fail(m))) => found(Oracle::ReplyCheck, m),
        Err(FuzzStop::Case(Stop::Finding(f))) => {
            found(transport(&f.key).unwrap_or(Oracle::ReplyCheck), f.summary)
        }
        Err(FuzzStop::Case(Stop::Blocked(key))) => {
            let summary = met.iter().find(|m| m.finding.key == key).map_or_else(
                || format!("blocked by {key}"),
                |m| m.finding.summary.clone(),
            );
            found(transport(&key).unwrap_or(Oracle::ReplyCheck), summary)
        }
    }
}
