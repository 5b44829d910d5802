//! The case model: what a case is, how it ends, and what it leaves behind.

use crate::drive::Transport;
use crate::script::Ctx;
use serde::Serialize;
use std::fmt;

pub use crate::inventory::Level;
pub use crate::verdict::{fail, fail_rows, skip, CaseFuture, Entry, Met, Outcome, Step, Stop};

/// Which bindings a case runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bindings {
    /// Every binding the target offers.
    Any,
    Only(Transport),
}

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
    /// Runs after every other case of the run has ended, one at a time: a case
    /// that may leave a faulty target unable to serve the others ([`Case::alone`]).
    pub alone: bool,
    pub run: CaseFn,
}

impl Case {
    /// This case, run after all others, one at a time.
    pub const fn alone(self) -> Case {
        Case {
            alone: true,
            ..self
        }
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case").field("id", &self.id).finish()
    }
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
    /// The case whose pass on the same binding is this case's control: a refusal
    /// this case passed on proves something only if that case's valid twin was
    /// taken ([`crate::runner::apply_controls`]). The transcript names it.
    #[serde(skip)]
    pub control_case: Option<&'static str>,
    /// The claims of a case that judges several apart, each with its outcome
    /// ([`crate::script::Ctx::claim`]); empty for a case of one subject.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<crate::verdict::Claim>,
}

/// The spec text a suite follows (named by its file name, as the requirement
/// inventory names it) and where that text is published: the repository, the path
/// in it and the commit whose file the suite was written against.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SpecText {
    pub file: &'static str,
    pub repository: &'static str,
    pub path: &'static str,
    pub commit: &'static str,
    /// How the file the suite follows stands to the published one.
    pub form: &'static str,
}

/// A requirement the suite does not test, and why.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Untestable {
    pub requirement: &'static str,
    pub reason: &'static str,
}

/// A suite as the case model sees it: its cases, rules, schemas, reference and the
/// requirements it records as untestable. What only an engine above the case model
/// takes of it (its fuzzers, discovery, load plan) is in `crate::suites::Parts`.
pub struct Suite {
    pub id: &'static str,
    /// The spec text the suite follows and where it is published.
    pub spec: SpecText,
    /// Requirement id prefix (AV1, ASP, …).
    pub prefix: &'static str,
    pub cases: &'static [Case],
    pub untestable: &'static [Untestable],
    /// Bindings the suite speaks.
    pub transports: &'static [Transport],
    /// Where each binding's endpoint lies below the target URL, when not at the URL
    /// itself (the preflight probes it there).
    pub endpoint_paths: &'static [(Transport, &'static str)],
    /// The fault catalogue of the suite's reference implementation.
    pub faults: &'static [reference_impl::faults::Fault],
    /// Starts the suite's reference implementation (`run` without a target, `serve`).
    pub start: crate::embedded::StartFn,
    /// How the suite signs and verifies messages (`sign`, `verify`), when it does.
    pub signing: Option<Signing>,
    /// The suite's JSON Schemas (name, text), keyed `suite/name` once compiled.
    pub schemas: &'static [(&'static str, &'static str)],
    /// Cases of the suite's other side (`run --role client`): the harness is the
    /// counterparty and the target is a client driven by a command.
    pub client_cases: &'static [Case],
    /// The fault catalogue of the suite's reference client.
    pub client_faults: &'static [reference_impl::faults::Fault],
    /// Judges one recorded reply again with the suite's own reply checks (the
    /// offline run of an exported vector).
    pub reread: RereadFn,
    /// Every rule its cases and reply checks hold a message to (`agentconform rules`).
    pub rules: &'static [&'static crate::rules::Rule],
    /// Its reference client as a client driver.
    pub reference_client: ReferenceClient,
    /// Judges one message a real client sent (seen by `agentconform proxy`) by the
    /// rules of the client role, when the suite has them for a lone message.
    pub client_message: Option<ClientMessageFn>,
    /// Judges one reply of a real server (seen by `agentconform proxy`) with the
    /// request it answers, when the suite has rules for that request; true when it
    /// did (else the reply is read by `reread`).
    pub reply_to: Option<ReplyToFn>,
    /// The reference faults the proxy can apply in flight (tamper mode).
    pub tampers: &'static [crate::tamper::Tamper],
    /// The HTTP requests a real client may send a server through the proxy
    /// (method, path below the proxy's URL), when the spec fixes them: the proxy
    /// reports any other request as outside the spec, informational, and judges no
    /// reply to it.
    pub defined: Option<fn(&str, &str) -> bool>,
}

impl fmt::Debug for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Suite").field("id", &self.id).finish()
    }
}

/// Which side of a suite a run tests (defined in `verdict`, below both this module
/// and the fuzz engine, so that neither imports the other for it).
pub use crate::verdict::Role;

impl Suite {
    /// Whether `key` names a rule of this suite (its own or shared) or one of its
    /// cases: the keys its findings, and its fuzzers' signatures, may carry.
    pub fn names(&self, key: &str) -> bool {
        let rule = self
            .rules
            .iter()
            .chain(crate::rules::SHARED)
            .any(|r| r.matches(self.id, key));
        rule || self
            .cases
            .iter()
            .chain(self.client_cases)
            .any(|c| c.id == key)
    }

    /// The profile key a finding keyed `key` says the run lacks, when its rule (of
    /// this suite, or shared) is a setting ([`crate::rules::Rule::setting`]).
    pub fn setting_of(&self, key: &str) -> Option<&'static str> {
        self.rules
            .iter()
            .chain(crate::rules::SHARED)
            .filter(|r| r.matches(self.id, key))
            .max_by_key(|r| r.specificity())
            .and_then(|r| r.setting)
    }

    /// The cases of `role`.
    pub fn cases_of(&self, role: Role) -> &'static [Case] {
        match role {
            Role::Server => self.cases,
            Role::Client => self.client_cases,
        }
    }
}

/// A reply as a transcript recorded it, to be judged again offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub body: Vec<u8>,
    /// The HTTP status, when HTTP carried it.
    pub http_status: Option<u16>,
    pub content_type: Option<String>,
}

/// Judges one recorded reply with a suite's reply checks: what it breaks goes to
/// the context as findings.
pub type RereadFn = fn(&mut Ctx, &Recorded);

/// What a reference client received, and its results or why it gave up.
pub type ClientOutcome = (
    Vec<serde_json::Value>,
    Result<Vec<serde_json::Value>, String>,
);

/// A scenario of a suite's reference client, run against a URL with its inputs, the
/// client faults to switch on and a deadline per exchange; `Err` when the inputs are
/// not what the scenario takes.
pub type ClientRun = for<'a> fn(
    &'a str,
    &'a str,
    &'a serde_json::Value,
    &'a [String],
    std::time::Duration,
) -> ClientFuture<'a>;

/// What a reference client's scenario gives, once it has run ([`ClientRun`]).
pub type ClientFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<ClientOutcome, String>> + 'a>>;

/// Judges one reply of a server with the request it answers (`Suite::reply_to`):
/// the exchange and the reply's Content-Type; true when it judged it.
pub type ReplyToFn = fn(&mut Ctx, &crate::exchange::Exchange, Option<&str>) -> bool;

/// Judges one message of a client, outside any scenario (`Suite::client_message`),
/// with what went through before it.
pub type ClientMessageFn = fn(&mut Ctx, &crate::exchange::Exchange, &crate::exchange::History);

/// A suite's reference client as a client driver (`agentconform client`, the
/// default driver of `run --role client`).
#[derive(Clone, Copy)]
pub struct ReferenceClient {
    pub scenarios: &'static [&'static str],
    pub run: ClientRun,
    /// The scenarios `agentconform interop` plays between a client and a server,
    /// with the inputs the client cases give (none for a suite the proxy does not
    /// forward).
    pub plays: fn(&crate::profile::Profile) -> Vec<(&'static str, serde_json::Value)>,
}

/// A suite's signing scheme as the command line offers it.
#[derive(Clone, Copy)]
pub struct Signing {
    /// Signs a message with `key` (setting the sender's id to the key's); returns the
    /// canonical signed bytes.
    pub sign:
        fn(serde_json::Value, &reference_impl::wire::keys::Keypair) -> Result<Vec<u8>, String>,
    /// Explains the verification of `bytes` on `out`; `Ok(true)` when it verifies.
    pub verify: fn(&[u8], &mut dyn std::io::Write) -> std::io::Result<bool>,
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

/// The items of several slices as one, made at compile time: a suite's cases or
/// rules gathered from its area files, in the order given.
#[macro_export]
macro_rules! joined {
    ($t:ty; $($part:expr),+ $(,)?) => {{
        const PARTS: &[&[$t]] = &[$($part),+];
        const ALL: [$t; $crate::case::total(PARTS)] = $crate::case::join(PARTS);
        &ALL
    }};
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
            alone: false,
            run: {
                fn run<'a>($ctx: &'a mut $crate::script::Ctx) -> $crate::case::CaseFuture<'a> {
                    Box::pin(async move $body)
                }
                run
            },
        }
    };
}

/// How many items `parts` hold together (for [`joined!`]).
pub const fn total<T>(parts: &[&[T]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// The items of `parts` in order, as one array of `N` (for [`joined!`]; a part list
/// with no item at all is a compile error, as a suite with no case is).
pub const fn join<T: Copy, const N: usize>(parts: &[&[T]]) -> [T; N] {
    let mut first = 0;
    while parts[first].is_empty() {
        first += 1;
    }
    let mut all = [parts[first][0]; N];
    let (mut at, mut i) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            all[at] = parts[i][j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    all
}

#[cfg(test)]
mod tests {
    const A: &[u8] = &[1, 2];
    const NONE: &[u8] = &[];
    const B: &[u8] = &[3];

    #[test]
    fn joined_keeps_every_item_in_order_past_empty_parts() {
        let all: &[u8] = crate::joined!(u8; NONE, A, NONE, B);
        assert_eq!(all, &[1, 2, 3]);
        assert_eq!(super::total(&[A, NONE, B]), 3);
    }

    #[test]
    fn a_suite_lists_each_area_case_once() {
        let chorus = &crate::suites::chorus::SUITE;
        let mut ids: Vec<&str> = chorus.cases.iter().map(|c| c.id).collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "a case id twice");
        assert!(ids.contains(&"chorus/register") && ids.contains(&"chorus/reputation-sequence"));
    }
}
