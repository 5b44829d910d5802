//! The case model: what a case is, how it ends, and what it leaves behind.

use crate::drive::Transport;
use crate::finding::Finding;
use crate::script::Ctx;
use serde::Serialize;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// How binding a requirement is, which decides what a violation means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Level {
    /// RFC 2119 MUST: a violation fails.
    #[serde(rename = "MUST")]
    Must,
    /// SHOULD: a violation warns.
    #[serde(rename = "SHOULD")]
    Should,
    /// MAY: optional, but what is there must behave.
    #[serde(rename = "MAY")]
    May,
    /// A plain statement of the spec: a violation fails.
    #[serde(rename = "FACT")]
    Fact,
    /// A choice of the target profile, not of the spec: a violation fails "under
    /// the profile".
    #[serde(rename = "PROFILE")]
    Profile,
    /// What the inventory treats as informational: recorded, never fails a run.
    #[serde(rename = "INFO")]
    Info,
}

impl Level {
    /// Order used to pick the level of a deviation that breaks several requirements.
    pub fn strength(self) -> u8 {
        match self {
            Level::Must => 5,
            Level::Fact => 4,
            Level::Profile => 3,
            Level::May => 2,
            Level::Should => 1,
            Level::Info => 0,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::May => "MAY",
            Level::Fact => "FACT",
            Level::Profile => "PROFILE",
            Level::Info => "INFO",
        })
    }
}

/// Which bindings a case runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bindings {
    /// Every binding the target offers.
    Any,
    Only(Transport),
}

pub type CaseFuture<'a> = Pin<Box<dyn Future<Output = Step<()>> + Send + 'a>>;
pub type CaseFn = for<'a> fn(&'a mut Ctx) -> CaseFuture<'a>;

/// One conformance case.
#[derive(Clone, Copy)]
pub struct Case {
    /// `suite/name`, stable: reports, baselines and `--cases` globs use it.
    pub id: &'static str,
    pub suite: &'static str,
    pub title: &'static str,
    /// Requirement ids of the inventory (AV1-001, …) this case checks.
    pub requirements: &'static [&'static str],
    pub level: Level,
    pub bindings: Bindings,
    /// Slow cases run only with `--include-slow`, or when `fast_when` says the
    /// profile makes them quick.
    pub slow: bool,
    pub fast_when: Option<fn(&crate::profile::Profile) -> bool>,
    pub run: CaseFn,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case").field("id", &self.id).finish()
    }
}

/// Why a case stopped early.
#[derive(Debug, Clone)]
pub enum Stop {
    /// The target broke the rule this case judges, said in text (the requirement
    /// ids quoted in it, else the case's, make the finding).
    Fail(String),
    /// The target broke the rule this case judges, as a typed finding.
    Finding(Finding),
    /// The case cannot go on past an incidental finding (its key), which the
    /// context has recorded. Never a pass; the finding's owner fails for it.
    Blocked(String),
    /// The case could not run; the reason says why.
    Skip(String),
}

impl Stop {
    /// The text of a stop, for logs and fuzz findings.
    pub fn text(&self) -> String {
        match self {
            Stop::Fail(m) | Stop::Skip(m) => m.clone(),
            Stop::Finding(f) => f.summary.clone(),
            Stop::Blocked(key) => format!("blocked by {key}"),
        }
    }
}

pub type Step<T> = Result<T, Stop>;

pub fn fail<T>(msg: impl Into<String>) -> Step<T> {
    Err(Stop::Fail(msg.into()))
}

pub fn skip<T>(msg: impl Into<String>) -> Step<T> {
    Err(Stop::Skip(msg.into()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    Warn,
    /// Stopped by a deviation another case owns: neither passed nor failed.
    Blocked,
    Skip,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Warn => "warn",
            Outcome::Blocked => "blocked",
            Outcome::Skip => "skip",
        })
    }
}

/// One line of a case's wire transcript.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub at_ms: u64,
    /// send, recv, note or check.
    pub kind: &'static str,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

/// The result of one case over one binding.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub suite: String,
    pub title: String,
    pub requirements: Vec<String>,
    pub level: Level,
    pub transport: Transport,
    pub outcome: Outcome,
    pub message: String,
    /// Keys of the findings this case met (see the report's `findings`).
    pub findings: Vec<String>,
    /// One command that reruns just this case against the same target with the same
    /// profile (failing, warned and blocked cases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
    pub duration_ms: u64,
    pub transcript: Vec<Entry>,
    /// The findings themselves, merged by the runner into the report's list.
    #[serde(skip)]
    pub met: Vec<Met>,
}

/// A finding as one case met it.
#[derive(Debug, Clone)]
pub struct Met {
    pub finding: Finding,
    /// The case judged this rule itself (its own subject), rather than meeting it on
    /// the way to its subject.
    pub own: bool,
}

/// A requirement the suite does not test, and why.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Untestable {
    pub requirement: &'static str,
    pub reason: &'static str,
}

/// A suite: its cases and the requirements it records as untestable.
pub struct Suite {
    pub id: &'static str,
    /// Requirement id prefix (AV1, ASP, …).
    pub prefix: &'static str,
    pub cases: &'static [Case],
    pub untestable: &'static [Untestable],
    /// Bindings the suite speaks.
    pub transports: &'static [Transport],
    /// Where each binding's endpoint lies below the target URL, when not at the URL
    /// itself (the preflight probes it there).
    pub endpoint_paths: &'static [(Transport, &'static str)],
}

impl Suite {
    /// The URL of `transport`'s endpoint for a target at `url`.
    pub fn endpoint_url(&self, transport: Transport, url: &str) -> String {
        match self.endpoint_paths.iter().find(|(t, _)| *t == transport) {
            Some((_, path)) => crate::script::join_url(url, path),
            None => url.to_string(),
        }
    }
}

/// Defines one [`Case`]: the suite files wrap it in a `case!` of their own that fills
/// in the suite id, bindings and slowness they share.
#[macro_export]
macro_rules! define_case {
    ($suite:literal, $id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident,
     $bindings:expr, $slow:expr, $fast_when:expr, |$ctx:ident| $body:block) => {
        $crate::case::Case {
            id: concat!($suite, "/", $id),
            suite: $suite,
            title: $title,
            requirements: &[$($req),*],
            level: $crate::case::Level::$level,
            bindings: $bindings,
            slow: $slow,
            fast_when: $fast_when,
            run: {
                fn run<'a>($ctx: &'a mut $crate::script::Ctx) -> $crate::case::CaseFuture<'a> {
                    Box::pin(async move $body)
                }
                run
            },
        }
    };
}
