//! `agentconform init`: a target's profile, found by probing it with safe, valid
//! requests. The engine names no suite: each suite's `discover` (`Suite::discover`,
//! in `suites/<suite>/init.rs`) probes the target and says, key by key, what it
//! found and how, or why it could not; this module writes the commented profile and
//! what changed since an earlier one. A run against a target without those keys
//! discovers them the same way and uses them (`assume`), and its report says so.

use crate::drive::Transport;
use crate::profile::Profile;
use crate::script::{Ctx, RunShared};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// One profile key, as discovery left it.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// Found: its value, and how the harness knows. `cases_find`: the cases find
    /// it themselves the same way without the key (or it is the default they use),
    /// so a run need not set it.
    Found {
        section: &'static str,
        key: &'static str,
        value: toml::Value,
        how: String,
        cases_find: bool,
    },
    /// Not found: why, and how to find it.
    Missing {
        section: &'static str,
        key: &'static str,
        why: String,
    },
}

impl Entry {
    pub fn found(
        section: &'static str,
        key: &'static str,
        value: impl Into<toml::Value>,
        how: impl Into<String>,
    ) -> Entry {
        Entry::Found {
            section,
            key,
            value: value.into(),
            how: how.into(),
            cases_find: false,
        }
    }

    /// Found, the way the cases find it themselves without the key, or as its
    /// default: `init` writes it so that the user sees and can pin it, and a run
    /// does not set it.
    pub fn found_by_cases(
        section: &'static str,
        key: &'static str,
        value: impl Into<toml::Value>,
        how: impl Into<String>,
    ) -> Entry {
        let mut e = Entry::found(section, key, value, how);
        if let Entry::Found { cases_find, .. } = &mut e {
            *cases_find = true;
        }
        e
    }

    pub fn missing(section: &'static str, key: &'static str, why: impl Into<String>) -> Entry {
        Entry::Missing {
            section,
            key,
            why: why.into(),
        }
    }

    /// Its section and key.
    pub fn name(&self) -> (&'static str, &'static str) {
        match self {
            Entry::Found { section, key, .. } | Entry::Missing { section, key, .. } => {
                (section, key)
            }
        }
    }
}

/// What a suite's discovery yields, once it has probed the target.
pub type DiscoverFuture<'a> = Pin<Box<dyn Future<Output = Vec<Entry>> + Send + 'a>>;

/// A suite's discovery: probes the target the context reaches.
pub type DiscoverFn = for<'a> fn(&'a mut Ctx) -> DiscoverFuture<'a>;

/// Probes the target at `url` with the suite's discovery: `Err` with why when it
/// cannot be reached. The findings of the probes are not the run's: discovery
/// only learns.
pub async fn probe(
    suite: &'static crate::case::Suite,
    discover: DiscoverFn,
    shared: Arc<RunShared>,
    transport: Transport,
    url: &str,
) -> Result<Vec<Entry>, String> {
    let wait = Duration::from_millis(shared.profile.timing.case_timeout_ms);
    let endpoint = suite.endpoint_url(transport, url);
    crate::drive::preflight(transport, &endpoint, &shared.http, &shared.tls, wait).await?;
    let mut ctx = Ctx::new(shared, transport, url);
    ctx.suite_id = Some(suite.id);
    let entries = discover(&mut ctx).await;
    ctx.close().await;
    Ok(entries)
}

/// What a run assumed of its target that its profile does not set, and how it
/// knows (report.json `assumptions`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Assumption {
    pub suite: String,
    /// `[section] key`.
    pub key: String,
    /// What the run used, as the profile would spell it; none when not found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub how: String,
    pub used: Used,
}

/// What the run did with a key it discovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Used {
    /// Found and set for the run.
    Set,
    /// Found the way the cases find it themselves; the run sets nothing.
    CasesFind,
    /// Not found: a case that needs it is blocked by `<suite>/profile:<key>`.
    NotFound,
    /// Found, but the profile parser refused it (why in `how`): not set.
    Refused,
}

/// Sets in `prof` what discovery found of the keys the profile file does not set,
/// and says what the run assumed: every entry but those the file sets.
pub fn assume(suite: &str, prof: &mut Profile, entries: Vec<Entry>) -> Vec<Assumption> {
    let mut out = Vec::new();
    for e in entries {
        let (section, key) = e.name();
        if prof.sets(section, key) {
            continue;
        }
        let name = format!("[{section}] {key}");
        let a = match e {
            Entry::Found {
                value,
                how,
                cases_find,
                ..
            } => {
                let shown = Some(value.to_string());
                if cases_find {
                    (shown, how, Used::CasesFind)
                } else {
                    match prof.set(section, key, value) {
                        Ok(()) => (shown, how, Used::Set),
                        Err(e) => (shown, format!("{how}; not set: {e}"), Used::Refused),
                    }
                }
            }
            Entry::Missing { why, .. } => (None, why, Used::NotFound),
        };
        out.push(Assumption {
            suite: suite.to_string(),
            key: name,
            value: a.0,
            how: a.1,
            used: a.2,
        });
    }
    out
}

/// The profile, commented: a header, then each section with its keys in the order
/// found, each found key under the line that says how it was found, each missing
/// one commented out under why.
pub fn render(suite: &str, target: &str, entries: &[Entry]) -> String {
    let mut out = format!(
        "# The target profile of {target} for {suite}, written by `agentconform init`.\n\
         # Each key says how it was found; a key commented out was not, and says why.\n\
         # Every key is optional: docs/profile.md documents them.\n"
    );
    let mut sections: Vec<&str> = Vec::new();
    for e in entries {
        let (s, _) = e.name();
        if !sections.contains(&s) {
            sections.push(s);
        }
    }
    for s in sections {
        out.push_str(&format!("\n[{s}]\n"));
        for e in entries.iter().filter(|e| e.name().0 == s) {
            match e {
                Entry::Found {
                    key, value, how, ..
                } => {
                    out.push_str(&comment(how));
                    out.push_str(&format!("{key} = {value}\n"));
                }
                Entry::Missing { key, why, .. } => {
                    out.push_str(&comment(&format!("{key}: not found. {why}")));
                    out.push_str(&format!("# {key} = …\n"));
                }
            }
        }
    }
    out
}

/// Merges what discovery found into the profile text `old`, which the user may
/// have completed by hand: every line of it is kept, but for a key init found with
/// another value, whose line is replaced under a comment that keeps the old value;
/// a found key `old` lacks is added to its section (with how it was found), and a
/// key not found that `old` neither sets nor names commented out is added
/// commented out under why. Returns the text and what changed, a line per key.
/// `Err` when `old` is no TOML.
pub fn merge(old: &str, entries: &[Entry]) -> Result<(String, Vec<String>), String> {
    let table: toml::Table = old
        .parse()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    let set = |s: &str, k: &str| table.get(s).and_then(|t| t.get(k));
    let mut lines: Vec<String> = old.lines().map(String::from).collect();
    let mut said = Vec::new();
    for e in entries {
        let (section, key) = e.name();
        match (e, set(section, key)) {
            (Entry::Found { value, .. }, Some(was)) if was == value => {}
            (Entry::Found { value, how, .. }, Some(was)) => {
                match key_line(&lines, section, key) {
                    // A one-line value is replaced; the old one stays in a comment.
                    Some(at) if lines[at].trim_end().ends_with(&was.to_string()) => {
                        lines[at] = format!("{key} = {value}");
                        let note = format!("changed by init, was {was}: {how}");
                        lines.splice(at..at, comment(&note).lines().map(String::from));
                        said.push(format!("changed [{section}] {key}: {was} → {value}"));
                    }
                    _ => said.push(format!(
                        "kept [{section}] {key} = {was} as written; init found {value}"
                    )),
                }
            }
            (Entry::Found { value, how, .. }, None) => {
                let add = format!("{}{key} = {value}", comment(how));
                insert_in_section(&mut lines, section, &add);
                said.push(format!("new [{section}] {key} = {value}"));
            }
            (Entry::Missing { .. }, Some(_)) => {}
            (Entry::Missing { why, .. }, None) => {
                let placeholder = format!("# {key} = …");
                if !lines.iter().any(|l| l.trim() == placeholder) {
                    let add = format!(
                        "{}{placeholder}",
                        comment(&format!("{key}: not found. {why}"))
                    );
                    insert_in_section(&mut lines, section, &add);
                }
            }
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    Ok((text, said))
}

/// The section a header line opens (`[s]` or `[[s]]`), if it is one.
fn header(line: &str) -> Option<&str> {
    let t = line.trim();
    let inner = t.strip_prefix('[')?.split(']').next()?;
    Some(inner.trim_start_matches('[').trim().trim_matches('"'))
}

/// The index of the line that sets `key` in `section` (a line `key = …`).
fn key_line(lines: &[String], section: &str, key: &str) -> Option<usize> {
    let mut current = "";
    for (i, l) in lines.iter().enumerate() {
        if let Some(s) = header(l) {
            current = s;
            continue;
        }
        let named = l.split_once('=').map(|(k, _)| k.trim().trim_matches('"'));
        if current == section && named == Some(key) && !l.trim_start().starts_with('#') {
            return Some(i);
        }
    }
    None
}

/// Adds `text` (lines) at the end of `section`'s lines, or in a new section at the
/// end.
fn insert_in_section(lines: &mut Vec<String>, section: &str, text: &str) {
    let start = lines
        .iter()
        .position(|l| header(l) == Some(section) && !l.trim().starts_with("[["));
    let new: Vec<String> = text.lines().map(String::from).collect();
    match start {
        Some(at) => {
            let end = lines[at + 1..]
                .iter()
                .position(|l| header(l).is_some())
                .map_or(lines.len(), |n| at + 1 + n);
            // Before the blank lines that end the section.
            let mut end = end;
            while end > at + 1 && lines[end - 1].trim().is_empty() {
                end -= 1;
            }
            lines.splice(end..end, new);
        }
        None => {
            lines.push(String::new());
            lines.push(format!("[{section}]"));
            lines.extend(new);
        }
    }
}

/// `text` as comment lines.
fn comment(text: &str) -> String {
    text.lines().map(|l| format!("# {l}\n")).collect()
}

/// What changed from the profile `old` to `new`, a line per key: changed, new or
/// gone. `Err` when `old` is no TOML.
pub fn changes(old: &str, new: &str) -> Result<Vec<String>, String> {
    let parse = |t: &str| {
        t.parse::<toml::Table>()
            .map_err(|e| e.message().to_string())
    };
    let (old, new) = (parse(old)?, parse(new)?);
    let flat = |t: &toml::Table| -> Vec<(String, String)> {
        let mut v = Vec::new();
        for (s, keys) in t {
            match keys.as_table() {
                Some(keys) => {
                    for (k, x) in keys {
                        v.push((format!("[{s}] {k}"), x.to_string()));
                    }
                }
                None => v.push((s.clone(), keys.to_string())),
            }
        }
        v
    };
    let (old, new) = (flat(&old), flat(&new));
    let mut out = Vec::new();
    for (k, v) in &new {
        match old.iter().find(|(o, _)| o == k) {
            Some((_, was)) if was != v => out.push(format!("changed {k}: {was} → {v}")),
            Some(_) => {}
            None => out.push(format!("new {k} = {v}")),
        }
    }
    for (k, was) in &old {
        if !new.iter().any(|(n, _)| n == k) {
            out.push(format!("gone {k} (was {was})"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_found_and_missing_keys() {
        let text = render(
            "chorus",
            "http://127.0.0.1:1/",
            &[
                Entry::found(
                    "chorus",
                    "fixture_skill",
                    "echo_text",
                    "GET /discover lists it",
                ),
                Entry::missing("target", "ledger_url", "POST /transfer answered 404"),
            ],
        );
        assert!(
            text.contains("[chorus]\n# GET /discover lists it\nfixture_skill = \"echo_text\"\n")
        );
        assert!(text.contains("# ledger_url = …"));
        let t: toml::Table = text.parse().expect("TOML");
        assert_eq!(t["chorus"]["fixture_skill"].as_str(), Some("echo_text"));
    }

    #[test]
    fn a_run_sets_what_it_found_unless_the_profile_sets_it() {
        let mut prof =
            Profile::from_toml("[chorus]\noutcome_request = \"POST /o\"\n", "p").expect("profile");
        let entries = vec![
            Entry::found("chorus", "fixture_skill", "translate", "GET /discover"),
            Entry::found("chorus", "outcome_request", "POST /results", "probe"),
            Entry::found_by_cases("agora-exchange", "protocol_hash", "ab", "wellknown"),
            Entry::missing("target", "ledger_url", "404"),
            Entry::found("timing", "case_timeout_ms", 0, "nonsense"),
        ];
        let a = assume("chorus", &mut prof, entries);
        assert_eq!(prof.chorus.fixture_skill, "translate");
        assert_eq!(prof.chorus.outcome_request, "POST /o");
        assert_eq!(prof.agora_exchange.protocol_hash, None);
        let used: Vec<(&str, Used)> = a.iter().map(|a| (a.key.as_str(), a.used)).collect();
        assert_eq!(
            used,
            vec![
                ("[chorus] fixture_skill", Used::Set),
                ("[agora-exchange] protocol_hash", Used::CasesFind),
                ("[target] ledger_url", Used::NotFound),
                ("[timing] case_timeout_ms", Used::Refused),
            ]
        );
        assert_eq!(a[0].value.as_deref(), Some("\"translate\""));
        assert!(prof.sets("chorus", "fixture_skill"));
    }

    #[test]
    fn merging_keeps_what_the_user_wrote() {
        let old = "# mine\n[target]\ntoken = \"t\"\n\n[chorus]\n# my skill\nfixture_skill = \"translate\"\ninitial_credits = 5.0\n\n[[chorus.setup_requests]]\non = \"owner\"\npath = \"/accounts\"\n";
        let entries = vec![
            Entry::found(
                "chorus",
                "fixture_skill",
                "echo_text",
                "GET /discover lists it",
            ),
            Entry::found("chorus", "outcome_request", "POST /results", "probe"),
            Entry::missing("target", "ledger_url", "POST /transfer answered 404"),
            Entry::missing("chorus", "initial_credits", "no balance route"),
            Entry::found("timing", "case_timeout_ms", 900, "measured"),
        ];
        let (text, said) = merge(old, &entries).expect("TOML");
        let t: toml::Table = text.parse().expect("the merge is TOML");
        assert_eq!(t["target"]["token"].as_str(), Some("t"));
        assert_eq!(t["chorus"]["fixture_skill"].as_str(), Some("echo_text"));
        assert_eq!(t["chorus"]["initial_credits"].as_float(), Some(5.0));
        assert_eq!(
            t["chorus"]["outcome_request"].as_str(),
            Some("POST /results")
        );
        assert_eq!(
            t["chorus"]["setup_requests"][0]["path"].as_str(),
            Some("/accounts")
        );
        assert_eq!(t["timing"]["case_timeout_ms"].as_integer(), Some(900));
        assert!(text.contains("# mine\n") && text.contains("# my skill\n"));
        assert!(text.contains("# changed by init, was \"translate\": GET /discover lists it\n"));
        assert!(text.contains("# ledger_url = …"));
        assert_eq!(
            said,
            vec![
                "changed [chorus] fixture_skill: \"translate\" → \"echo_text\"",
                "new [chorus] outcome_request = \"POST /results\"",
                "new [timing] case_timeout_ms = 900",
            ]
        );
        // The outcome request goes into [chorus], not into the array of tables.
        let chorus_end = text.find("[[chorus.setup_requests]]").expect("kept");
        assert!(text.find("outcome_request").expect("added") < chorus_end);
        // Merging again changes nothing.
        let (again, said) = merge(&text, &entries).expect("TOML");
        assert_eq!(again, text);
        assert!(said.is_empty());
    }

    #[test]
    fn says_what_changed() {
        let old = "[a]\nx = 1\ny = \"b\"\n";
        let new = "[a]\nx = 2\nz = true\n";
        let c = changes(old, new).expect("both TOML");
        assert_eq!(
            c,
            vec![
                "changed [a] x: 1 → 2",
                "new [a] z = true",
                "gone [a] y (was \"b\")"
            ]
        );
        assert!(changes("not = [toml", new).is_err());
    }
}
