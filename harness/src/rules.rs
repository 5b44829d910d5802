//! Rules: each check a target's reply or a client's message is held to, as data.
//!
//! A rule has a stable key (the key of the findings it gives, as reports print
//! them), the requirement ids it enforces, the case that owns it, and a short text of
//! what passes and what fails. Each suite lists its rules in one place
//! (`Suite::rules`); the engines add the rules every suite shares (transport
//! failures, refusals of a valid message, schema violations, requests a client makes
//! outside the spec). `agentconform rules` lists them and `agentconform explain KEY`
//! prints one with its requirement texts, and the reference fault that shows it.
//!
//! A key is either exact (`agentprotocol/envelope:from`) or a family ending in `*`
//! (`agora-v1/refused*`: the findings add a detail after it). A key starting `*/`
//! belongs to every suite.

use crate::case::{Case, Level, Suite};
use crate::inventory;
use std::io::Write;

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
    fn specificity(&self) -> usize {
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
        summary: "the target answers within the deadline, over the binding it was reached on",
        fails: "a connection refused or reset, a reply past its deadline, a body past its size cap, a WebSocket closed before its reply; the detail names the kind, so that a silent target is one finding however many cases meet it",
        passes: "a reply, whatever it says, within the deadline",
    },
    Rule {
        key: "*/refused*",
        requirements: &[],
        level: None,
        owner: "",
        summary: "a message the harness built valid is accepted",
        fails: "the target refuses a valid message (an error reply, or a status of 400 and more); the detail is the error code and the words of its message, so one refusal is one finding, owned by the first case that met it, and the cases that need the message accepted are blocked by it",
        passes: "the valid message is taken",
    },
    Rule {
        key: "*/control:none",
        requirements: &[],
        level: Some(Level::Info),
        owner: "",
        summary: "a refusal proves something only beside an accepted valid twin (its control)",
        fails: "the target refused the case's invalid message, but accepted no valid message on the same binding, so the refusal proves nothing and the case is blocked rather than passed",
        passes: "a valid message accepted on the same binding before the refusal is judged",
    },
    Rule {
        key: "*/schema:*",
        requirements: &[],
        level: None,
        owner: "",
        summary: "a reply matches the suite's JSON Schema for its kind (schemas/<suite>/)",
        fails: "a member missing, of another type or outside its pattern; the key names the schema and the JSON pointer, array indices as `*`",
        passes: "a reply the schema validates",
    },
    Rule {
        key: "*/client:double-slash",
        requirements: &[],
        level: Some(Level::Should),
        owner: "",
        summary: "a client joins paths to the base URL it was given without doubling the slash",
        fails: "a request path with `//` (`{url}/` joined with `/path`); the harness gives `{url}` without a trailing slash and judges the request by its collapsed path, so this is a warning",
        passes: "every request path with single slashes",
    },
    Rule {
        key: "*/client:undefined-request:*",
        requirements: &[],
        level: Some(Level::Should),
        owner: "",
        summary: "a client makes only the requests the spec defines",
        fails: "a method and path the spec does not define (the detail names them, digits as `*`); the harness answers it, leaves it out of the scenario and warns once per method and path",
        passes: "only the spec's requests",
    },
];

/// What a finding key names.
#[derive(Clone, Copy)]
pub enum Named {
    /// A rule, of a suite or shared.
    Rule(&'static Suite, &'static Rule),
    /// A case's own failure (its key is the case id).
    Case(&'static Suite, &'static Case),
}

impl std::fmt::Debug for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Named::Rule(s, r) => write!(f, "rule {} of {}", r.key, s.id),
            Named::Case(_, c) => write!(f, "case {}", c.id),
        }
    }
}

/// The suite a key belongs to (the part before the first `/`).
fn suite_of(key: &str) -> Option<&'static Suite> {
    key.split_once('/')
        .and_then(|(s, _)| crate::suites::by_id(s))
}

/// The rule or case `key` names: an exact rule, else a case with that id, else the
/// closest family of rules.
pub fn lookup(key: &str) -> Option<Named> {
    let suite = suite_of(key)?;
    let rules = || suite.rules.iter().chain(SHARED);
    if let Some(r) = rules().find(|r| !r.key.ends_with('*') && r.matches(suite.id, key)) {
        return Some(Named::Rule(suite, r));
    }
    // A case's own failure has its id as key; a warning it gave in text, its id,
    // `~` and the requirement id.
    let case_id = key.split_once('~').map_or(key, |(id, _)| id);
    if let Some(c) = suite
        .cases
        .iter()
        .chain(suite.client_cases)
        .find(|c| c.id == case_id)
    {
        return Some(Named::Case(suite, c));
    }
    rules()
        .filter(|r| r.matches(suite.id, key))
        .max_by_key(|r| r.specificity())
        .map(|r| Named::Rule(suite, r))
}

/// `agentconform explain KEY` names the finding in a report.
pub fn command(key: &str) -> String {
    format!("agentconform explain '{}'", key.replace('\'', "'\\''"))
}

/// Every rule of `suite` (its own, then the shared ones).
pub fn of(suite: &'static Suite) -> impl Iterator<Item = &'static Rule> {
    suite.rules.iter().chain(SHARED)
}

/// Writes one line per rule of `suite`: key, level, requirement ids, summary.
pub fn list(suite: &'static Suite, out: &mut dyn Write) -> std::io::Result<()> {
    for r in of(suite) {
        let key = r.key.replace("*/", &format!("{}/", suite.id));
        let reqs = if r.requirements.is_empty() {
            "-".to_string()
        } else {
            r.requirements.join(",")
        };
        writeln!(
            out,
            "{key}\t{}\t{reqs}\t{}",
            level_name(r.level()),
            r.summary
        )?;
    }
    Ok(())
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Must => "MUST",
        Level::Should => "SHOULD",
        Level::May => "MAY",
        Level::Fact => "FACT",
        Level::Profile => "PROFILE",
        Level::Info => "INFO",
    }
}

/// Writes what `key` means: the rule or case, its requirements' texts and places,
/// what passes and what fails, and the reference faults that show it. An unknown
/// key is an error that says where the keys are listed.
pub fn explain(key: &str, out: &mut dyn Write) -> Result<(), String> {
    let named = lookup(key).ok_or_else(|| match suite_of(key) {
        Some(s) => format!(
            "no rule or case of {} has key {key:?}; `agentconform rules --suite {}` lists them",
            s.id, s.id
        ),
        None => format!(
            "{key:?} names no suite (a finding key is `<suite>/<rule>`; suites: {})",
            crate::suites::ids().join(", ")
        ),
    })?;
    write_explanation(key, named, out).map_err(|e| format!("cannot write: {e}"))
}

fn write_explanation(key: &str, named: Named, out: &mut dyn Write) -> std::io::Result<()> {
    let (suite, requirements) = match named {
        Named::Rule(suite, r) => {
            let shown = r.key.replace("*/", &format!("{}/", suite.id));
            writeln!(out, "{key}")?;
            writeln!(out, "  rule {shown}: {}", r.summary)?;
            writeln!(
                out,
                "  level {} ({})",
                level_name(r.level()),
                outcome(r.level())
            )?;
            if r.owner.is_empty() {
                writeln!(out, "  owned by the first case that meets it")?;
            } else {
                writeln!(out, "  owned by case {}", r.owner)?;
            }
            if let Some(detail) = detail_of(key, &shown) {
                writeln!(out, "  detail: {detail}")?;
            }
            writeln!(out, "\nFails: {}", r.fails)?;
            writeln!(out, "Passes: {}", r.passes)?;
            (suite, r.requirements)
        }
        Named::Case(suite, c) => {
            writeln!(out, "{key}")?;
            writeln!(out, "  case {}: {}", c.id, c.title)?;
            if let Some((_, req)) = key.split_once('~') {
                writeln!(out, "  a warning the case gave for {req}")?;
            }
            writeln!(
                out,
                "  level {} ({})",
                level_name(c.level),
                outcome(c.level)
            )?;
            writeln!(
                out,
                "\nFails: the case's own check: the finding's summary says what the target did.\nPasses: the target does what the title says, on every binding the case runs over."
            )?;
            (suite, c.requirements)
        }
    };
    write_requirements(requirements, out)?;
    write_faults(suite, named, out)?;
    writeln!(
        out,
        "\nAll rules of the suite: agentconform rules --suite {}",
        suite.id
    )
}

fn outcome(l: Level) -> &'static str {
    match crate::finding::Verdict::of(l) {
        crate::finding::Verdict::Fail => "a finding fails the run",
        crate::finding::Verdict::Warn => "a finding warns, never fails the run",
    }
}

/// The part of `key` after a family's fixed prefix.
fn detail_of<'k>(key: &'k str, pattern: &str) -> Option<&'k str> {
    let prefix = pattern.strip_suffix('*')?;
    key.strip_prefix(prefix)
        .map(|d| d.trim_start_matches(':'))
        .filter(|d| !d.is_empty())
}

fn write_requirements(ids: &[&str], out: &mut dyn Write) -> std::io::Result<()> {
    if ids.is_empty() {
        return writeln!(
            out,
            "\nRequirements: none of the inventory's; the harness's own rule (target-profile.md)."
        );
    }
    writeln!(out, "\nRequirements:")?;
    let inv = inventory::get();
    for id in ids {
        if let Some(r) = inv.requirements.get(*id) {
            writeln!(out, "  {id} [{}] {}: {}", r.level, r.place, r.text)?;
        } else if let Some(a) = inv.ambiguities.get(*id) {
            writeln!(out, "  {id} (ambiguity, {}): {}", a.category, a.treatment)?;
        } else {
            writeln!(out, "  {id} (not in the inventory)")?;
        }
    }
    Ok(())
}

/// The reference faults that give this finding: for a rule, those whose catalogue
/// entry names a key of the rule; for a case, those the case catches.
fn write_faults(suite: &'static Suite, named: Named, out: &mut dyn Write) -> std::io::Result<()> {
    let catalogue = || suite.faults.iter().chain(suite.client_faults);
    let shown: Vec<&reference_impl::faults::Fault> = match named {
        Named::Rule(_, r) => catalogue()
            .filter(|f| f.findings.iter().any(|k| r.matches(suite.id, k)))
            .collect(),
        Named::Case(_, c) => catalogue()
            .filter(|f| f.caught_by.contains(&c.id))
            .collect(),
    };
    if shown.is_empty() {
        return writeln!(
            out,
            "\nShown by: no reference fault of the catalogue gives it."
        );
    }
    writeln!(out, "\nShown by (a reference with the fault on):")?;
    for f in shown.iter().take(5) {
        let client = suite.client_faults.iter().any(|c| c.name == f.name);
        let how = if client {
            format!(
                "agentconform run --suite {s} --role client --client 'agentconform client --suite {s} --scenario {{scenario}} --url {{url}} --fault {}'",
                f.name,
                s = suite.id
            )
        } else {
            format!("agentconform serve --suite {} --fault {}", suite.id, f.name)
        };
        writeln!(out, "  {how}\n    {}", f.description)?;
    }
    if shown.len() > 5 {
        writeln!(out, "  and {} more faults", shown.len() - 5)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every text of a suite's folder but its rule list, to find where a key is made.
    fn source_of(suite: &Suite) -> String {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/suites")
            .join(suite.id.replace('-', "_"));
        let mut text = String::new();
        for entry in std::fs::read_dir(&dir).expect("suite folder") {
            let path = entry.expect("entry").path();
            if path.file_name().is_some_and(|n| n != "rules.rs") {
                text.push_str(&std::fs::read_to_string(&path).expect("source"));
            }
        }
        text
    }

    #[test]
    fn every_rule_is_well_formed() {
        for suite in crate::suites::all() {
            let mut keys = std::collections::BTreeSet::new();
            let cases: Vec<&str> = suite
                .cases
                .iter()
                .chain(suite.client_cases)
                .map(|c| c.id)
                .collect();
            for r in suite.rules {
                assert!(keys.insert(r.key), "{} is listed twice", r.key);
                assert!(
                    r.key.starts_with(&format!("{}/", suite.id)),
                    "{} is not a key of {}",
                    r.key,
                    suite.id
                );
                for id in r.requirements {
                    assert!(
                        inventory::is_known(id),
                        "{}: {id} is not in the inventory",
                        r.key
                    );
                }
                assert!(
                    r.owner.is_empty() || cases.contains(&r.owner),
                    "{}: owner {} is no case of {}",
                    r.key,
                    r.owner,
                    suite.id
                );
                for text in [r.summary, r.fails, r.passes] {
                    assert!(!text.trim().is_empty(), "{}: an empty text", r.key);
                }
            }
        }
    }

    /// A rule names a key its suite's code makes: the key's first part, up to the
    /// detail, is written in the suite's folder.
    #[test]
    fn every_rule_is_made_by_its_suite() {
        for suite in crate::suites::all() {
            let source = source_of(suite);
            for r in suite.rules {
                let name = &r.key[suite.id.len() + 1..];
                let fixed = name.trim_end_matches('*').trim_end_matches(':');
                let head = fixed.split(':').next().unwrap_or(fixed);
                assert!(
                    source.contains(fixed)
                        || source.contains(&format!("{head}:"))
                        || source.contains(&format!("\"{head}\"")),
                    "{}: neither {fixed:?} nor {head:?} is written in the code of {}",
                    r.key,
                    suite.id
                );
            }
        }
    }

    /// `explain` prints its rule for every finding key a fault of the catalogues is
    /// known to give.
    #[test]
    fn every_fault_finding_is_explained() {
        for suite in crate::suites::all() {
            for f in suite.faults.iter().chain(suite.client_faults) {
                for key in f.findings {
                    let mut out = Vec::new();
                    explain(key, &mut out).unwrap_or_else(|e| panic!("fault {}: {e}", f.name));
                    let text = String::from_utf8_lossy(&out);
                    assert!(text.starts_with(key), "{key}: {text}");
                    assert!(
                        text.contains("Fails:") && text.contains("Requirements"),
                        "{key}: {text}"
                    );
                }
            }
        }
    }

    #[test]
    fn shared_families_match_every_suite() {
        let suite = crate::suites::all()[0];
        let key = format!("{}/transport:timeout", suite.id);
        match lookup(&key) {
            Some(Named::Rule(_, r)) => assert_eq!(r.key, "*/transport:*"),
            other => panic!("{key}: {other:?}"),
        }
        let case = suite.cases[0].id;
        assert!(matches!(lookup(case), Some(Named::Case(_, c)) if c.id == case));
    }

    #[test]
    fn an_unknown_key_says_where_keys_are_listed() {
        let suite = crate::suites::all()[0];
        let mut out = Vec::new();
        let e = explain(&format!("{}/no-such-rule", suite.id), &mut out).expect_err("unknown");
        assert!(e.contains("agentconform rules --suite"), "{e}");
        let e = explain("nosuite/x", &mut out).expect_err("unknown suite");
        assert!(e.contains("names no suite"), "{e}");
        assert_eq!(
            command("a-b/c:it's"),
            "agentconform explain 'a-b/c:it'\\''s'"
        );
    }
}
