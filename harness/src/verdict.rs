//! How a case ends and what it leaves behind: its stop, its outcome, the findings it
//! met and its transcript entries. Below the case model and the context (`Ctx`), so
//! that both can use it without depending on each other.

use crate::finding::Finding;
use serde::Serialize;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// Which side of a suite a run tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The target answers: the harness is its client (the suite's `cases`).
    #[default]
    Server,
    /// The target asks: the harness is its counterparty (`client_cases`).
    Client,
}

/// What running a case yields.
pub type CaseFuture<'a> = Pin<Box<dyn Future<Output = Step<()>> + Send + 'a>>;

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
    Blocked(crate::finding::Key),
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

/// The end of a table-driven case whose rows the target got wrong (each named, as
/// [`crate::script::Ctx::row`] gives them): one failure of the case's own subject
/// naming every row, or none when the list is empty.
pub fn fail_rows(lead: &str, wrong: &[String]) -> Step<()> {
    rows_said(lead, wrong).map_or(Ok(()), fail)
}

/// `lead`, then every wrong row of a table ("… (2 of them): a; b"); `None` when
/// no row was wrong.
pub fn rows_said(lead: &str, wrong: &[String]) -> Option<String> {
    (!wrong.is_empty()).then(|| format!("{lead} ({} of them): {}", wrong.len(), wrong.join("; ")))
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

/// A finding as one case met it.
#[derive(Debug, Clone)]
pub struct Met {
    pub finding: Finding,
    /// The case judged this rule itself (its own subject), rather than meeting it on
    /// the way to its subject.
    pub own: bool,
}

/// One claim of a case: a named check, with the probes and the control it needs.
/// A case that makes claims judges each apart, so that a refused control blocks
/// only the claims that need it ([`crate::script::Ctx::claim`]); the case's outcome
/// is the strongest of its claims' (fail, blocked, warn, pass).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    pub name: String,
    pub outcome: Outcome,
    /// The finding that blocked it: its control refused, or a reply it could not
    /// read past.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// Keys of the findings met while it was judged.
    pub findings: Vec<String>,
    /// Why a claim was not judged (skip): the target's answer made it moot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A claim as the context records it while the case runs: its name, the first of
/// the case's findings met under it, and what blocked it.
#[derive(Debug, Clone, Default)]
pub struct ClaimMark {
    pub name: String,
    pub from: usize,
    pub blocked_by: Option<String>,
    pub moot: Option<String>,
}

impl ClaimMark {
    /// The claim's outcome, once the case `case` has ended with the findings `met`
    /// (this claim's are `met[self.from..until]`): fail for a failing finding the
    /// case owns, else blocked when a finding blocked it, else warn for a warning
    /// it owns, else pass.
    pub fn settle(&self, case: &str, met: &[Met], until: usize) -> Claim {
        let mine = &met[self.from.min(met.len())..until.min(met.len())];
        let owned = |m: &&Met| m.own || m.finding.owner == Some(case);
        let worst = mine
            .iter()
            .filter(owned)
            .map(|m| m.finding.outcome)
            .max_by_key(|v| *v == crate::finding::Verdict::Fail);
        let outcome = match (worst, &self.blocked_by) {
            (Some(crate::finding::Verdict::Fail), _) => Outcome::Fail,
            (_, Some(_)) => Outcome::Blocked,
            (Some(_), None) => Outcome::Warn,
            (None, None) if self.moot.is_some() => Outcome::Skip,
            (None, None) => Outcome::Pass,
        };
        Claim {
            name: self.name.clone(),
            outcome,
            blocked_by: self.blocked_by.clone(),
            findings: mine.iter().map(|m| m.finding.key.to_string()).collect(),
            reason: self.moot.clone(),
        }
    }
}
