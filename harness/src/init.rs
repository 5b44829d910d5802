//! `agentconform init`: a target's profile, found by probing it with safe, valid
//! requests. The engine names no suite: each suite's `discover` (`Suite::discover`,
//! in `suites/<suite>/init.rs`) probes the target and says, key by key, what it
//! found and how, or why it could not; this module writes the commented profile and
//! what changed since an earlier one.

use crate::script::Ctx;
use std::future::Future;
use std::pin::Pin;

/// One profile key, as discovery left it.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// Found: its value, and how the harness knows.
    Found {
        section: &'static str,
        key: &'static str,
        value: toml::Value,
        how: String,
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
        }
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

/// The profile, commented: a header, then each section with its keys in the order
/// found, each found key under the line that says how it was found, each missing
/// one commented out under why.
pub fn render(suite: &str, target: &str, entries: &[Entry]) -> String {
    let mut out = format!(
        "# The target profile of {target} for {suite}, written by `agentconform init`.\n\
         # Each key says how it was found; a key commented out was not, and says why.\n\
         # Every key is optional: the README's \"Target profile\" section documents them.\n"
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
