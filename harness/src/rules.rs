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

pub use crate::finding::Rule;
use crate::finding::{normalised, quote, Finding, Key};
use crate::inventory::{self, Level};

/// Defines a suite's rules, each a `pub static` [`Rule`] named as written, and
/// `RULES`, all of them in the order written. Each rule gives `key`,
/// `requirements`, `level`, `owner`, `summary`, `fails` and `passes`, and a rule of
/// a setting its `setting`; its name and file come from where it is written.
macro_rules! rules {
    ($( $(#[$attr:meta])* $name:ident { $($field:ident : $value:expr),* $(,)? } )*) => {
        $(
            $(#[$attr])*
            // A setting's rule states every field: the update then adds nothing.
            #[allow(clippy::needless_update)]
            pub static $name: $crate::rules::Rule = $crate::rules::Rule {
                $($field: $value,)*
                name: stringify!($name),
                file: file!(),
                ..$crate::rules::Rule::UNSET
            };
        )*
        /// Every rule of the suite, in the order a reply is read.
        pub static RULES: &[&$crate::rules::Rule] = &[$(&$name),*];
    };
}
pub(crate) use rules;

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

    /// The rule's suite (`*` for a shared rule) and its key after `<suite>/`, as
    /// its definition writes them.
    pub fn parts(&self) -> (&'static str, &'static str) {
        self.key.split_once('/').unwrap_or(("", self.key))
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

    /// Whether the rule is a family (its findings add a detail to the key).
    pub fn is_family(&self) -> bool {
        self.key.ends_with('*')
    }

    /// Whether the rule belongs to every suite (its key starts `*/`).
    pub fn is_shared(&self) -> bool {
        self.key.starts_with("*/")
    }

    /// The finding of this exact rule, `summary` in the target's words.
    pub fn found(&'static self, summary: impl Into<String>) -> Finding {
        debug_assert!(
            !self.is_family() && !self.is_shared(),
            "{}: a family or shared rule takes a detail",
            self.key
        );
        let (suite, rule) = self.parts();
        Finding::of(self, Key::new(suite, rule, ""), summary.into())
    }

    /// The finding of this family with `detail` after its fixed part (an exact
    /// rule takes no detail: its key is kept as it is).
    pub fn found_as(
        &'static self,
        detail: impl std::fmt::Display,
        summary: impl Into<String>,
    ) -> Finding {
        debug_assert!(
            !self.is_shared(),
            "{}: a shared rule takes a suite",
            self.key
        );
        let (suite, rule) = self.parts();
        let key = match rule.strip_suffix('*') {
            Some(prefix) => Key::new(suite, prefix, &detail.to_string()),
            None => Key::new(suite, rule, ""),
        };
        Finding::of(self, key, summary.into())
    }

    /// The finding of this shared rule (`*/…`) in suite `suite`, with `detail` after
    /// its fixed part where it is a family.
    pub fn found_in(
        &'static self,
        suite: &str,
        detail: impl std::fmt::Display,
        summary: impl Into<String>,
    ) -> Finding {
        let (_, rule) = self.parts();
        let key = match rule.strip_suffix('*') {
            Some(prefix) => Key::new(suite, prefix, &detail.to_string()),
            None => Key::new(suite, rule, ""),
        };
        Finding::of(self, key, summary.into())
    }
}

/// The finding of `family` with `detail`, made by the exact rule among `rules` whose
/// key is the family's fixed part and `detail` where there is one (a member with a
/// rule of its own), else by the family.
pub fn found_among(
    rules: &[&'static Rule],
    family: &'static Rule,
    detail: &str,
    summary: impl Into<String>,
) -> Finding {
    let prefix = family.key.trim_end_matches('*');
    match rules
        .iter()
        .find(|r| !r.is_family() && r.key.strip_prefix(prefix) == Some(detail))
    {
        // The member's finding keeps the family's detail (a schema pointer).
        Some(exact) => {
            let (suite, rule) = family.parts();
            let fixed = rule.trim_end_matches('*');
            Finding::of(exact, Key::new(suite, fixed, detail), summary.into())
        }
        None => family.found_as(detail, summary),
    }
}

/// The violations of schema `schema` (`suite/name`) by a reply, one finding each
/// of `family` (a family rule whose key ends `:*`) keyed by the violation's JSON
/// pointer with array indices as `*`, or of the exact rule among `rules` for that
/// pointer where there is one. The validator's message quotes the target's value.
pub fn schema_findings(
    schemas: &crate::schemas::Schemas,
    schema: &str,
    (rules, family): (&[&'static Rule], &'static Rule),
    instance: &serde_json::Value,
) -> Vec<Finding> {
    let name = schema.split_once('/').map_or(schema, |(_, name)| name);
    match schemas.violations(schema, instance) {
        Ok(list) => {
            let mut out: Vec<Finding> = Vec::new();
            for v in list {
                let f = found_among(
                    rules,
                    family,
                    &v.shape(),
                    format!("{name} at {}: {}", v.pointer, v.message),
                );
                if !out.iter().any(|o| o.key == f.key) {
                    out.push(f);
                }
            }
            out
        }
        Err(e) => vec![family.found_as("/", e)],
    }
}

/// A refusal of a message the harness built valid, as one finding of `family`
/// keyed by what the target said: `<suite>/refused:<code>:<message>`, the message
/// [`normalised`] (ids, numbers and timestamps left out) so that every case that
/// meets the same refusal, on any binding, meets one finding. It names no owner:
/// the first case that met it fails for it, every later one is blocked by it.
/// `family` is the suite's own `refused*` rule (its ids), else the shared
/// [`REFUSED`], which takes `requirements`, the ids that make the message valid and
/// its acceptance due. `what` says what was refused.
pub fn refusal(
    (family, suite, requirements): (&'static Rule, &str, &[&str]),
    code: &str,
    message: &str,
    what: &str,
) -> Finding {
    let slug = normalised(message);
    let code_slug: String = code
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(40)
        .collect();
    let detail = match (code_slug.is_empty(), slug.is_empty()) {
        (true, true) => String::new(),
        (false, true) => format!(":{code_slug}"),
        (true, false) => format!(":{slug}"),
        (false, false) => format!(":{code_slug}:{slug}"),
    };
    let said = match (code.is_empty(), message.trim().is_empty()) {
        (false, false) => format!("{code} {}", quote(message)),
        (false, true) => code.to_string(),
        (true, _) => quote(message),
    };
    let summary = format!("{what} was refused with {said}, though the harness built it valid; every case that needs such a message accepted is blocked by this refusal");
    if family.is_shared() {
        family.found_in(suite, detail, summary).citing(requirements)
    } else {
        family.found_as(detail, summary)
    }
}

impl Finding {
    /// Whether the target did not answer at all (the shared rule [`TRANSPORT`]):
    /// nothing else about it can be judged.
    pub fn is_transport(&self) -> bool {
        self.rule.is_some_and(|r| *r == TRANSPORT)
    }
}

/// The shared rule */transport:*.
pub static TRANSPORT: Rule = Rule {
    key: "*/transport:*",
    requirements: &[],
    level: None,
    owner: "",
    summary: "the target answers within the deadline, over the binding it was reached on",
    fails: "a connection refused or reset, a reply past its deadline, a body past its size cap, a WebSocket closed before its reply; the detail names the kind, so that a silent target is one finding however many cases meet it",
    passes: "a reply, whatever it says, within the deadline",
    name: "TRANSPORT",
    file: file!(),
    setting: None,
};

/// The shared rule */refused*.
pub static REFUSED: Rule = Rule {
    key: "*/refused*",
    requirements: &[],
    level: None,
    owner: "",
    summary: "a message the harness built valid is accepted",
    fails: "the target refuses a valid message (an error reply, or a status of 400 and more); the detail is the error code and the words of its message, so one refusal is one finding, owned by the first case that met it, and the cases that need the message accepted are blocked by it unless another valid way to have it taken works (agentprotocol: the same message from a sender that never said hello), beside which they are judged",
    passes: "the valid message is taken",
    name: "REFUSED",
    file: file!(),
    setting: None,
};

/// The shared rule */control:none.
pub static CONTROL_NONE: Rule = Rule {
    key: "*/control:none",
    requirements: &[],
    level: Some(Level::Info),
    owner: "",
    summary: "a refusal proves something only beside an accepted valid twin (its control)",
    fails: "the target refused the case's invalid message, but accepted no valid message on the same binding, so the refusal proves nothing and the case is blocked rather than passed",
    passes: "a valid message accepted on the same binding before the refusal is judged",
    name: "CONTROL_NONE",
    file: file!(),
    setting: None,
};

/// The shared rule */schema:*.
pub static SCHEMA: Rule = Rule {
    key: "*/schema:*",
    requirements: &[],
    level: None,
    owner: "",
    summary: "a reply matches the suite's JSON Schema for its kind (schemas/<suite>/)",
    fails: "a member missing, of another type or outside its pattern; the key names the schema and the JSON pointer, array indices as `*`",
    passes: "a reply the schema validates",
    name: "SCHEMA",
    file: file!(),
    setting: None,
};

/// The shared rule */tamper:*.
pub static TAMPER: Rule = Rule {
    key: "*/tamper:*",
    requirements: &[],
    level: None,
    owner: "",
    summary: "a side notices a reference fault's change applied in flight by the proxy (`proxy --fault`, `interop --fault`)",
    fails: "the server takes a request changed in flight (beside the untouched one it took), or the client takes a changed reply (its tampered play ends with a result or exit 0); the detail is the fault, the requirements and level those of the case the change is judged as",
    passes: "each changed request refused, each changed reply refused and reported as a failure",
    name: "TAMPER",
    file: file!(),
    setting: None,
};

/// The shared rule */client:double-slash.
pub static CLIENT_DOUBLE_SLASH: Rule = Rule {
    key: "*/client:double-slash",
    requirements: &[],
    level: Some(Level::Should),
    owner: "",
    summary: "a client joins paths to the base URL it was given without doubling the slash",
    fails: "a request path with `//` (`{url}/` joined with `/path`); the harness gives `{url}` without a trailing slash and judges the request by its collapsed path, so this is a warning",
    passes: "every request path with single slashes",
    name: "CLIENT_DOUBLE_SLASH",
    file: file!(),
    setting: None,
};

/// The shared rule */client:outside-spec:*.
pub static CLIENT_OUTSIDE_SPEC: Rule = Rule {
    key: "*/client:outside-spec:*",
    requirements: &[],
    level: Some(Level::Info),
    owner: "",
    summary: "a request a real client sends through the proxy outside the spec's requests is said, not judged",
    fails: "never fails: the method and route the spec does not define (digits as `*`), once each, with the server's status; neither the request nor its reply is judged by the suite's rules",
    passes: "only the spec's requests",
    name: "CLIENT_OUTSIDE_SPEC",
    file: file!(),
    setting: None,
};

/// The shared rule */client:undefined-request:*.
pub static CLIENT_UNDEFINED_REQUEST: Rule = Rule {
    key: "*/client:undefined-request:*",
    requirements: &[],
    level: Some(Level::Should),
    owner: "",
    summary: "a client makes only the requests the spec defines",
    fails: "a method and path the spec does not define (the detail names them, digits as `*`); the harness answers it, leaves it out of the scenario and warns once per method and path",
    passes: "only the spec's requests",
    name: "CLIENT_UNDEFINED_REQUEST",
    file: file!(),
    setting: None,
};

/// The rules every suite shares, given by the engines.
pub static SHARED: &[&Rule] = &[
    &TRANSPORT,
    &REFUSED,
    &CONTROL_NONE,
    &SCHEMA,
    &TAMPER,
    &CLIENT_DOUBLE_SLASH,
    &CLIENT_OUTSIDE_SPEC,
    &CLIENT_UNDEFINED_REQUEST,
];

/// `agentconform explain KEY` names the finding in a report.
pub fn command(key: &str) -> String {
    format!("agentconform explain '{}'", key.replace('\'', "'\\''"))
}
