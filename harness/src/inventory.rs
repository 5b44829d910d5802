//! The requirement inventory (`harness/requirements/`): each requirement's level and
//! each ambiguity's treatment, read once. Findings take their level from here, so a
//! case can never judge a requirement more strictly than the inventory does.

use serde::Deserialize;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

const REQUIREMENTS: &str = include_str!("../requirements/requirements.json");
const AMBIGUITIES: &str = include_str!("../requirements/ambiguities.json");

#[derive(Debug, Clone, Deserialize)]
pub struct Requirement {
    pub id: String,
    pub suite: String,
    pub level: String,
    pub text: String,
    #[serde(rename = "where")]
    pub place: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Ambiguity {
    pub id: String,
    pub suite: String,
    pub treatment: String,
    pub category: String,
}

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

pub struct Inventory {
    pub requirements: HashMap<String, Requirement>,
    pub ambiguities: HashMap<String, Ambiguity>,
}

/// The inventory compiled into the binary. The files are checked by the tests, so a
/// parse failure is a build defect; it yields an empty inventory rather than a panic.
pub fn get() -> &'static Inventory {
    static INV: OnceLock<Inventory> = OnceLock::new();
    INV.get_or_init(|| {
        let reqs: Vec<Requirement> = serde_json::from_str(REQUIREMENTS).unwrap_or_default();
        let ambs: Vec<Ambiguity> = serde_json::from_str(AMBIGUITIES).unwrap_or_default();
        Inventory {
            requirements: reqs.into_iter().map(|r| (r.id.clone(), r)).collect(),
            ambiguities: ambs.into_iter().map(|a| (a.id.clone(), a)).collect(),
        }
    })
}

/// Whether `id` names a requirement or an ambiguity of the inventory.
pub fn is_known(id: &str) -> bool {
    let inv = get();
    inv.requirements.contains_key(id) || inv.ambiguities.contains_key(id)
}

/// The level of one inventory id: a requirement's own level; `Info` for an ambiguity
/// the inventory treats as informational; `None` for any other ambiguity (its
/// treatment picks a reading, and the requirements it qualifies give the level).
pub fn level_of(id: &str) -> Option<Level> {
    let inv = get();
    if let Some(r) = inv.requirements.get(id) {
        return Some(match r.level.as_str() {
            "MUST" => Level::Must,
            "SHOULD" => Level::Should,
            "MAY" => Level::May,
            _ => Level::Fact,
        });
    }
    let a = inv.ambiguities.get(id)?;
    (a.category == "informational").then_some(Level::Info)
}

/// The level a deviation from `ids` carries: the strongest level among them
/// (MUST, FACT, MAY, SHOULD, then informational). Ids that give no level are passed
/// over; `fallback` applies when none does.
pub fn level_for(ids: &[String], fallback: Level) -> Level {
    strongest(ids).unwrap_or(fallback)
}

/// The strongest level `ids` give on their own, if any of them gives one.
pub fn strongest(ids: &[String]) -> Option<Level> {
    ids.iter()
        .filter_map(|id| level_of(id))
        .max_by_key(|l| l.strength())
}

/// The requirement and ambiguity ids quoted in `text` that the inventory knows, in
/// order of appearance and without repeats (e.g. "… (AEX-022, AEX-A4)").
pub fn ids_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_uppercase() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
            let start = i;
            let mut j = i;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'-') {
                j += 1;
            }
            let word = text[start..j].trim_end_matches('-');
            if word.contains('-') && is_known(word) && !out.iter().any(|o| o == word) {
                out.push(word.to_string());
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_come_from_the_inventory() {
        assert_eq!(level_of("AV1-001"), Some(Level::Must));
        assert_eq!(level_of("AV1-002"), Some(Level::Fact));
        assert_eq!(level_of("AV1-A6"), Some(Level::Info));
        assert_eq!(level_of("AV1-A1"), None);
        assert_eq!(level_of("NOPE-1"), None);
        assert!(get().requirements.len() > 200);
        assert!(get().ambiguities.len() > 100);
    }

    #[test]
    fn strongest_level_wins() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            level_for(&ids(&["AV1-A6", "AV1-002"]), Level::Should),
            Level::Fact
        );
        assert_eq!(level_for(&ids(&["AV1-A6"]), Level::Must), Level::Info);
        assert_eq!(level_for(&ids(&["AV1-A1"]), Level::Should), Level::Should);
        assert_eq!(level_for(&[], Level::May), Level::May);
    }

    #[test]
    fn ids_are_read_from_text() {
        assert_eq!(
            ids_in("conversation fields (AEX-022, AEX-025); AEX-A4. XAEX-001 AEX-999"),
            vec!["AEX-022", "AEX-025", "AEX-A4"]
        );
        assert!(ids_in("no ids here: HTTP-200").is_empty());
    }
}
