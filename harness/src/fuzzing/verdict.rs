//! What every live fuzzer says and reports: what the spec fixes for a message
//! ([`Expected`]: accept; reject with these codes; open, with the reason) and how
//! the target's answer is judged against it ([`judge`]), the oracle a fuzz finding
//! broke ([`Oracle`]), the typed finding itself ([`FuzzFinding`]) and how a fuzz case
//! stops ([`FuzzStop`]).
//!
//! A fuzz case returns [`FuzzStep`]: `Ok`, a typed fuzz finding, or one of the
//! stops of the shared case machinery ([`Stop`], converted by `?`), which the
//! engine classifies by its structure (never by searching its text).

use crate::finding::Finding;
use crate::verdict::{CaseFuture, Met, Stop};
use std::future::Future;
use std::pin::Pin;

/// The oracle a fuzz finding broke. Its name (kebab-case) names crash files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Oracle {
    /// The reply is not the one the spec fixes for the message.
    Verdict,
    ServerError,
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
    Reputation,
    RequestId,
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
    /// A client under test ended abnormally (a signal, an exit code other than 0
    /// or 1).
    Crash,
    /// A client under test was still running at the deadline.
    Hang,
}

impl Oracle {
    /// Every oracle, for look-ups by name.
    pub const ALL: &'static [Oracle] = &[
        Oracle::Verdict,
        Oracle::ServerError,
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
        Oracle::Reputation,
        Oracle::RequestId,
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
        Oracle::Crash,
        Oracle::Hang,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Oracle::Verdict => "verdict",
            Oracle::ServerError => "server-error",
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
            Oracle::Reputation => "reputation",
            Oracle::RequestId => "request-id",
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
            Oracle::Crash => "crash",
            Oracle::Hang => "hang",
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
    /// The key of the suite's rule the finding broke, when a rule of the suite
    /// made it (the key `run`, `rules` and `explain` use).
    pub key: Option<String>,
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
        key: None,
    }))
}

/// The case cannot run against this target (counted, never a finding).
pub fn skip<T>(why: impl Into<String>) -> FuzzStep<T> {
    Err(FuzzStop::Case(Stop::Skip(why.into())))
}

/// Stops the case at the first failing finding of `found` (a suite rule's findings,
/// made without a context), as `run` fails it; else goes on.
pub fn first_failing(found: Vec<crate::finding::Finding>) -> FuzzStep<()> {
    match found
        .into_iter()
        .find(|f| f.outcome == crate::finding::Verdict::Fail)
    {
        Some(f) => Err(FuzzStop::Case(Stop::Finding(f))),
        None => Ok(()),
    }
}

/// Stops the case at the first failing finding the suite's rules recorded in `ctx`
/// since its `from`-th finding, as `run` fails it (its rule key); else goes on.
pub fn rules_since(ctx: &crate::script::Ctx, from: usize) -> FuzzStep<()> {
    let since = ctx.findings().get(from..).unwrap_or_default();
    first_failing(since.iter().map(|m| m.finding.clone()).collect())
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

/// Which refusals a verdict allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Codes<C> {
    /// Any refusal.
    Any,
    /// One of these (none: no refusal at all).
    OneOf(Vec<C>),
}

impl<C: PartialEq> Codes<C> {
    /// No refusal is allowed.
    pub fn none() -> Codes<C> {
        Codes::OneOf(Vec::new())
    }

    /// Whether a refusal with `code` (`None`: a refusal that carries no code) is
    /// one of these.
    pub fn allow(&self, code: Option<&C>) -> bool {
        match (self, code) {
            (Codes::Any, _) => true,
            (Codes::OneOf(list), Some(c)) => list.contains(c),
            (Codes::OneOf(_), None) => false,
        }
    }
}

impl<C: std::fmt::Debug> std::fmt::Display for Codes<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Codes::Any => f.write_str("any refusal"),
            Codes::OneOf(list) if list.is_empty() => f.write_str("no refusal"),
            Codes::OneOf(list) => {
                let shown: Vec<String> = list.iter().map(|c| format!("{c:?}")).collect();
                write!(f, "a refusal with {}", shown.join(" or "))
            }
        }
    }
}

/// What the spec fixes for one message a fuzz case sends: the one vocabulary of
/// every fuzzer. `A` is what a suite's success must show; `C` its refusal codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected<A, C> {
    /// The target carries the message out, its answer showing `A`; it may instead
    /// refuse with one of the codes (those the spec allows in its place, such as a
    /// full space).
    Accept(A, Codes<C>),
    /// The target refuses the message with one of these codes.
    Reject(Codes<C>),
    /// The spec leaves the verdict open, for this reason.
    Open(String),
}

/// What the target did with a message, for [`judge`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed<C> {
    /// It carried the message out (any answer but a refusal).
    Carried,
    /// It refused, with this code when it gave one.
    Refused(Option<C>),
}

/// Judges what the target did against what the spec fixes: `Ok(Some(shows))` when
/// the message was carried out as expected (the caller checks what the success must
/// show), `Ok(None)` when the answer is one the verdict allows otherwise, and a
/// finding when it is not: `refused` is the oracle of a valid message refused,
/// `carried` that of an invalid message carried out; a refusal with a code the
/// verdict does not allow is [`Oracle::ErrorCode`]. `said` gives the target's
/// answer in its own words (written out for a finding only).
pub fn judge<'e, A, C: PartialEq + std::fmt::Debug>(
    want: &'e Expected<A, C>,
    got: &Observed<C>,
    oracles: (Oracle, Oracle),
    said: impl FnOnce() -> String,
) -> FuzzStep<Option<&'e A>> {
    let (refused, carried) = oracles;
    match (want, got) {
        (Expected::Open(_), _) => Ok(None),
        (Expected::Accept(shows, _), Observed::Carried) => Ok(Some(shows)),
        (Expected::Accept(_, codes), Observed::Refused(c)) if codes.allow(c.as_ref()) => Ok(None),
        (Expected::Accept(..), Observed::Refused(_)) => finding(
            refused,
            format!("expected it carried out; the target said {}", said()),
        ),
        (Expected::Reject(codes), Observed::Carried) => finding(
            carried,
            format!("expected {codes}; the target carried it out: {}", said()),
        ),
        (Expected::Reject(codes), Observed::Refused(c)) if codes.allow(c.as_ref()) => Ok(None),
        (Expected::Reject(codes), Observed::Refused(_)) => finding(
            Oracle::ErrorCode,
            format!("expected {codes}; the target said {}", said()),
        ),
    }
}

/// Puts `what` (the message judged, and why) before the detail of a finding.
pub fn about<T>(what: &str, r: FuzzStep<T>) -> FuzzStep<T> {
    r.map_err(|e| match e {
        FuzzStop::Found(mut f) => {
            f.detail = format!("{what}: {}", f.detail);
            FuzzStop::Found(f)
        }
        other => other,
    })
}

/// Files a fuzz finding of `r` under `key`, the rule or case of the suite whose
/// subject the message is (the key `run` gives the same deviation), unless a rule
/// already keyed it.
pub fn under<T>(key: Option<&str>, r: FuzzStep<T>) -> FuzzStep<T> {
    r.map_err(|e| match e {
        FuzzStop::Found(mut f) if f.key.is_none() => {
            f.key = key.map(String::from);
            FuzzStop::Found(f)
        }
        other => other,
    })
}

/// Files a fuzz finding of `r` under `key`, whatever key it had: where the deviation
/// that caused it is another rule's than the check that noticed it (a balance a
/// repeated transfer made wrong, noticed by a later transfer).
pub fn refile<T>(key: &str, r: FuzzStep<T>) -> FuzzStep<T> {
    r.map_err(|e| match e {
        FuzzStop::Found(mut f) => {
            f.key = Some(key.to_string());
            FuzzStop::Found(f)
        }
        other => other,
    })
}

/// What a case ended in, for the engine.
#[derive(Debug)]
pub enum Outcome {
    Pass,
    Skip(String),
    Finding(FuzzFinding),
}

/// Classifies how a case stopped. A transport failure the context recorded (the
/// shared rule `*/transport:*`, its kind the detail) is a timeout or a transport
/// finding; any other stop of the shared machinery is a failed reply check.
pub fn classify(result: FuzzStep<()>, met: &[Met]) -> Outcome {
    let found = |f: Option<&Finding>, detail: String| {
        let oracle = match f {
            Some(f) if f.is_transport() && f.detail() == "no-answer" => Oracle::Timeout,
            Some(f) if f.is_transport() => Oracle::Transport,
            _ => Oracle::ReplyCheck,
        };
        Outcome::Finding(FuzzFinding {
            oracle,
            detail,
            key: f.map(|f| f.key.to_string()),
        })
    };
    match result {
        Ok(()) => match met
            .iter()
            .find(|m| m.finding.outcome == crate::finding::Verdict::Fail)
        {
            // A failing finding the script read past is a failure of the case, as
            // if the check had stopped it there.
            Some(m) => found(Some(&m.finding), m.finding.summary.clone()),
            None => Outcome::Pass,
        },
        Err(FuzzStop::Found(f)) => Outcome::Finding(f),
        Err(FuzzStop::Case(Stop::Skip(why))) => Outcome::Skip(why),
        // A check that stopped the case in words: the rule it recorded, if any.
        Err(FuzzStop::Case(Stop::Fail(m))) => {
            let f = met
                .iter()
                .find(|x| x.finding.summary == m)
                .map(|x| &x.finding);
            found(f, m)
        }
        Err(FuzzStop::Case(Stop::Finding(f))) => found(Some(&f), f.summary.clone()),
        Err(FuzzStop::Case(Stop::Blocked(key))) => {
            match met.iter().find(|m| m.finding.key == key) {
                Some(m) => found(Some(&m.finding), m.finding.summary.clone()),
                None => Outcome::Finding(FuzzFinding {
                    oracle: Oracle::ReplyCheck,
                    detail: format!("blocked by {key}"),
                    key: Some(key.to_string()),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle<T: std::fmt::Debug>(r: FuzzStep<T>) -> Option<Oracle> {
        match r {
            Err(FuzzStop::Found(f)) => Some(f.oracle),
            _ => None,
        }
    }

    const O: (Oracle, Oracle) = (Oracle::ValidRejected, Oracle::InvalidAccepted);

    #[test]
    fn accept_passes_a_success_and_the_refusals_it_allows() {
        let want: Expected<&str, &str> = Expected::Accept("joined", Codes::OneOf(vec!["FULL"]));
        assert!(matches!(
            judge(&want, &Observed::Carried, O, || "ok".into()),
            Ok(Some(&"joined"))
        ));
        assert!(matches!(
            judge(&want, &Observed::Refused(Some("FULL")), O, || "full".into()),
            Ok(None)
        ));
        assert_eq!(
            oracle(judge(&want, &Observed::Refused(Some("OTHER")), O, || {
                "other".into()
            })),
            Some(Oracle::ValidRejected)
        );
        assert_eq!(
            oracle(judge(&want, &Observed::Refused(None), O, || "silence".into())),
            Some(Oracle::ValidRejected)
        );
    }

    #[test]
    fn reject_fails_a_success_and_a_code_it_does_not_name() {
        let want: Expected<(), u16> = Expected::Reject(Codes::OneOf(vec![404]));
        assert!(matches!(
            judge(&want, &Observed::Refused(Some(404)), O, || "404".into()),
            Ok(None)
        ));
        assert_eq!(
            oracle(judge(&want, &Observed::Refused(Some(400)), O, || "400".into())),
            Some(Oracle::ErrorCode)
        );
        assert_eq!(
            oracle(judge(&want, &Observed::Carried, O, || "ok".into())),
            Some(Oracle::InvalidAccepted)
        );
        let any: Expected<(), u16> = Expected::Reject(Codes::Any);
        assert!(matches!(
            judge(&any, &Observed::Refused(None), O, || "no code".into()),
            Ok(None)
        ));
    }

    #[test]
    fn open_judges_nothing() {
        let want: Expected<(), u16> = Expected::Open("the spec says nothing".into());
        assert!(matches!(
            judge(&want, &Observed::Carried, O, || "ok".into()),
            Ok(None)
        ));
        assert!(matches!(
            judge(&want, &Observed::Refused(Some(1)), O, || "1".into()),
            Ok(None)
        ));
    }

    #[test]
    fn codes_read_as_text() {
        assert_eq!(Codes::<u16>::Any.to_string(), "any refusal");
        assert_eq!(Codes::<u16>::none().to_string(), "no refusal");
        assert_eq!(
            Codes::OneOf(vec![401, 403]).to_string(),
            "a refusal with 401 or 403"
        );
    }
}
