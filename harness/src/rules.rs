//! Rules: each check a target's reply or a client's message is held to, as data.
//!
//! A rule has a stable key (the key of the findings it gives, as reports print
//! them), the requirement ids it enforces, the case that owns it, and a short text of
//! what passes and what fails. Each suite lists its rules in one place
//! (`Suite::rules`); the engines add the rules every suite shares (transport
//! failures, refusals of a valid message, schema violations, requests a client makes
//! outside the spec). `agentconform rules` lists them and `agentconform explain KEY`
//! prints one with its requirement texts, and the reference fault that shows it
//! (`crate::explain`).
//!
//! A key is either exact (`agentprotocol/envelope:from`) or a family ending in `*`
//! (`agora-v1/refused*`: the findings add a detail after it). A key starting `*/`
//! belongs to every suite.

use crate::inventory::{self, Level};

/// One rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The finding key, or a family of them ending in `*`.
    pub key: &'static str,
    /// The requirement and ambiguity ids it enforces.
    pub requirements: &'static [&'static str],
    /// The level where the requirement ids do not decide it (the finding is made
    /// `.at(level)`); `None`: the strongest level of the ids in the inventory.
    pub level: Option<Level>,
    /// The case that owns it (alone fails or warns for it); empty where any case
    /// that meets it may own it.
    pub owner: &'static str,
    /// Where the finding is made: `<module>::<fn>`, the function of the suite's
    /// folder (of `harness/src/` for the shared rules) that builds it, or
    /// `case:<case id>` for a finding made in a case's own body.
    pub check: &'static str,
    /// One line: what the rule holds a message to.
    pub summary: &'static str,
    /// What a target does that draws the finding.
    pub fails: &'static str,
    /// What passes.
    pub passes: &'static str,
}

impl Rule {
    /// Whether `key` (a finding's key, of suite `suite`) is one of this rule's.
    pub fn matches(&self, suite: &str, key: &str) -> bool {
        let pattern = match self.key.strip_prefix("*/") {
            Some(rest) => format!("{suite}/{rest}"),
            None => self.key.to_string(),
        };
        match pattern.strip_suffix('*') {
            Some(prefix) => key.starts_with(prefix),
            None => key == pattern,
        }
    }

    /// The level a finding of this rule has.
    pub fn level(&self) -> Level {
        let ids: Vec<String> = self.requirements.iter().map(|s| s.to_string()).collect();
        match (inventory::strongest(&ids), self.level) {
            (Some(Level::Info), _) => Level::Info,
            (_, Some(l)) => l,
            (Some(l), None) => l,
            (None, None) => Level::Fact,
        }
    }

    /// Length of the fixed part of the key: the more of it, the closer the match.
    pub fn specificity(&self) -> usize {
        self.key.trim_end_matches('*').len()
    }
}

/// The rules every suite shares, given by the engines.
pub const SHARED: &[Rule] = &[
    Rule {
        key: "*/transport:*",
        requirements: &[],
        level: None,
        owner: "",
        check: "script::transport_stop",
        summary: "the target answers within the deadline, over the binding it was reached on",
        fails: "a connection refused or reset, a reply past its deadline, a body past its size cap, a WebSocket closed before its reply; the detail names the kind, so that a silent target is one finding however many cases meet it",
        passes: "a reply, whatever it says, within the deadline",
    },
    Rule {
        key: "*/refused*",
        requirements: &[],
        level: None,
        owner: "",
        check: "finding::refusal",
        summary: "a message the harness built valid is accepted",
        fails: "the target refuses a valid message (an error reply, or a status of 400 and more); the detail is the error code and the words of its message, so one refusal is one finding, owned by the first case that met it, and the cases that need the message accepted are blocked by it",
        passes: "the valid message is taken",
    },
    Rule {
        key: "*/control:none",
        requirements: &[],
        level: Some(Level::Info),
        owner: "",
        check: "script::refusal_counts",
        summary: "a refusal proves something only beside an accepted valid twin (its control)",
        fails: "the target refused the case's invalid message, but accepted no valid message on the same binding, so the refusal proves nothing and the case is blocked rather than passed",
        passes: "a valid message accepted on the same binding before the refusal is judged",
    },
    Rule {
        key: "*/schema:*",
        requirements: &[],
        level: None,
        owner: "",
        check: "finding::schema_findings",
        summary: "a reply matches the suite's JSON Schema for its kind (schemas/<suite>/)",
        fails: "a member missing, of another type or outside its pattern; the key names the schema and the JSON pointer, array indices as `*`",
        passes: "a reply the schema validates",
    },
    Rule {
        key: "*/tamper:*",
        requirements: &[],
        level: None,
        owner: "",
        check: "proxy::tamper::verdict",
        summary: "a side notices a reference fault's change applied in flight by the proxy (`proxy --fault`, `interop --fault`)",
        fails: "the server takes a request changed in flight (beside the untouched one it took), or the client takes a changed reply (its tampered play ends with a result or exit 0); the detail is the fault, the requirements and level those of the case the change is judged as",
        passes: "each changed request refused, each changed reply refused and reported as a failure",
    },
    Rule {
        key: "*/client:double-slash",
        requirements: &[],
        level: Some(Level::Should),
        owner: "",
        check: "counterparty::report_slashes",
        summary: "a client joins paths to the base URL it was given without doubling the slash",
        fails: "a request path with `//` (`{url}/` joined with `/path`); the harness gives `{url}` without a trailing slash and judges the request by its collapsed path, so this is a warning",
        passes: "every request path with single slashes",
    },
    Rule {
        key: "*/client:outside-spec:*",
        requirements: &[],
        level: Some(Level::Info),
        owner: "",
        check: "proxy::judge::outside_finding",
        summary: "a request a real client sends through the proxy outside the spec's requests is said, not judged",
        fails: "never fails: the method and route the spec does not define (digits as `*`), once each, with the server's status; neither the request nor its reply is judged by the suite's rules",
        passes: "only the spec's requests",
    },
    Rule {
        key: "*/client:undefined-request:*",
        requirements: &[],
        level: Some(Level::Should),
        owner: "",
        check: "counterparty::report_outside",
        summary: "a client makes only the requests the spec defines",
        fails: "a method and path the spec does not define (the detail names them, digits as `*`); the harness answers it, leaves it out of the scenario and warns once per method and path",
        passes: "only the spec's requests",
    },
];

/// `agentconform explain KEY` names the finding in a report.
pub fn command(key: &str) -> String {
    format!("agentconform explain '{}'", key.replace('\'', "'\\''"))
}
