//! `agentconform rules` and `agentconform explain KEY`: a finding key resolved to its
//! rule (`crate::rules`) or case among the suites given, and printed with its
//! requirement texts from the inventory, what passes and what fails, and the
//! reference faults that give it.

use crate::case::{Case, Level, Suite};
use crate::inventory;
use crate::rules::{Rule, SHARED};
use std::io::Write;

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
fn suite_of(suites: &[&'static Suite], key: &str) -> Option<&'static Suite> {
    let id = key.split_once('/').map(|(s, _)| s)?;
    suites.iter().copied().find(|s| s.id == id)
}

/// The rule or case `key` names: an exact rule, else a case with that id, else the
/// closest family of rules.
pub fn lookup(suites: &[&'static Suite], key: &str) -> Option<Named> {
    let suite = suite_of(suites, key)?;
    let rules = || suite.rules.iter().chain(SHARED).copied();
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

/// Every rule of `suite` (its own, then the shared ones).
pub fn of(suite: &'static Suite) -> impl Iterator<Item = &'static Rule> {
    suite.rules.iter().chain(SHARED).copied()
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
pub fn explain(suites: &[&'static Suite], key: &str, out: &mut dyn Write) -> Result<(), String> {
    if let Some(text) = fuzz_signature(suites, key) {
        return writeln!(out, "{text}").map_err(|e| format!("cannot write: {e}"));
    }
    let named = lookup(suites, key).ok_or_else(|| match suite_of(suites, key) {
        Some(s) => format!(
            "no rule or case of {} has key {key:?}; `agentconform rules --suite {}` lists them",
            s.id, s.id
        ),
        None => format!(
            "{key:?} names no suite (a finding key is `<suite>/<rule>`; suites: {})",
            suites.iter().map(|s| s.id).collect::<Vec<_>>().join(", ")
        ),
    })?;
    write_explanation(key, named, out).map_err(|e| format!("cannot write: {e}"))
}

/// What a fuzz signature that names no rule means: a crash class
/// (`<suite>/crash:<class> <endpoint> (<input>)`) or a fuzz oracle
/// (`<suite>/fuzz:<oracle> at <endpoint>`); `None` for any other key.
fn fuzz_signature(suites: &[&'static Suite], key: &str) -> Option<String> {
    use crate::fuzzing::corpus::Class;
    use crate::fuzzing::verdict::Oracle;
    let suite = suite_of(suites, key)?;
    let rest = key.split_once('/')?.1;
    let replay = "Its crash file holds the input and what the target said; `agentconform replay FILE` sends it again (docs/guides/fuzzing.md, \"Signatures, baselines and shrinking\").";
    if let Some(c) = rest.strip_prefix("crash:") {
        let (name, at) = c.split_once(' ').unwrap_or((c, ""));
        let class = Class::ALL.iter().find(|k| k.name() == name)?;
        let at = if at.is_empty() {
            String::new()
        } else {
            format!("\n  where: {at} (the endpoint, then the kind of input: an object, JSON that is not an object, not JSON, no body)")
        };
        return Some(format!(
            "{key}\n  a crash of {}: {}{at}\n  no rule of the spec names it: what a target must never do whatever it is sent\n\n{replay}",
            suite.id,
            class.describe()
        ));
    }
    let f = rest.strip_prefix("fuzz:")?;
    let (name, at) = f.split_once(" at ").unwrap_or((f, ""));
    let oracle = Oracle::from_name(name)?;
    let at = if at.is_empty() {
        String::new()
    } else {
        format!("\n  where: {at}")
    };
    Some(format!(
        "{key}\n  a finding of the fuzzer's {} check on {} that no rule of `run` names{at}\n  its crash file's detail says what the target did, and why the fuzzer took it for a deviation\n\n{replay}",
        oracle.name(),
        suite.id
    ))
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
                if r.setting.is_some() {
                    "a setting the run lacks: a finding warns and blocks the cases that need it, never fails the run"
                } else {
                    outcome(r.level())
                }
            )?;
            if r.owner.is_empty() {
                writeln!(out, "  owned by the first case that meets it")?;
            } else {
                writeln!(out, "  owned by case {}", r.owner)?;
            }
            if let Some(detail) = detail_of(key, &shown) {
                writeln!(out, "  detail: {detail}")?;
            }
            writeln!(out, "  defined as {} in {}", r.name, r.file)?;
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

    #[test]
    fn fuzz_signatures_are_explained() {
        use crate::fuzzing::corpus::Class;
        let suites = crate::suites::all();
        for class in Class::ALL {
            let key = format!("agora-v1/crash:{} POST / (object)", class.name());
            let mut out = Vec::new();
            explain(&suites, &key, &mut out).expect("a crash signature is explained");
            let text = String::from_utf8(out).expect("utf-8");
            assert!(text.contains(class.describe()) && text.contains("POST / (object)"));
        }
        let mut out = Vec::new();
        explain(&suites, "chorus/fuzz:discovery at GET /discover", &mut out)
            .expect("an oracle signature is explained");
        assert!(String::from_utf8(out)
            .expect("utf-8")
            .contains("discovery check on chorus"));
        let mut out = Vec::new();
        assert!(explain(&suites, "agora-v1/crash:bogus", &mut out).is_err());
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

    /// `explain` prints its rule for every finding key a fault of the catalogues is
    /// known to give.
    #[test]
    fn every_fault_finding_is_explained() {
        for suite in crate::suites::all() {
            for f in suite.faults.iter().chain(suite.client_faults) {
                for key in f.findings {
                    let mut out = Vec::new();
                    explain(&crate::suites::all(), key, &mut out)
                        .unwrap_or_else(|e| panic!("fault {}: {e}", f.name));
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
        match lookup(&crate::suites::all(), &key) {
            Some(Named::Rule(_, r)) => assert!(std::ptr::eq(r, &crate::rules::TRANSPORT)),
            other => panic!("{key}: {other:?}"),
        }
        let case = suite.cases[0].id;
        assert!(
            matches!(lookup(&crate::suites::all(), case), Some(Named::Case(_, c)) if c.id == case)
        );
    }

    #[test]
    fn an_unknown_key_says_where_keys_are_listed() {
        let suite = crate::suites::all()[0];
        let mut out = Vec::new();
        let e = explain(
            &crate::suites::all(),
            &format!("{}/no-such-rule", suite.id),
            &mut out,
        )
        .expect_err("unknown");
        assert!(e.contains("agentconform rules --suite"), "{e}");
        let e = explain(&crate::suites::all(), "nosuite/x", &mut out).expect_err("unknown suite");
        assert!(e.contains("names no suite"), "{e}");
        assert_eq!(
            crate::rules::command("a-b/c:it's"),
            "agentconform explain 'a-b/c:it'\\''s'"
        );
    }
}
