//! Findings: one deviation of the target, recorded once however many cases meet it.
//!
//! A case judges its own subject. What it sees on the way that breaks a rule some
//! other case owns (a failure reply spelled another way, a timestamp with an offset)
//! is an *incidental* finding: the case records it and goes on reading the reply
//! leniently. When it truly cannot go on, it is *blocked* by that finding. The runner
//! merges findings by key across cases; each is owned by one case, which alone fails
//! (or warns) for it.

use crate::inventory;
use crate::inventory::Level;
use serde::Serialize;
use std::fmt;

/// How a finding counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Fails the run (MUST, FACT, MAY and PROFILE levels).
    Fail,
    /// Reported, never fails the run (SHOULD and informational levels).
    Warn,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Fail => "fail",
            Verdict::Warn => "warn",
        })
    }
}

impl Verdict {
    /// What a deviation at `level` means for the run.
    pub fn of(level: Level) -> Verdict {
        match level {
            Level::Should | Level::Info => Verdict::Warn,
            Level::Must | Level::Fact | Level::May | Level::Profile => Verdict::Fail,
        }
    }
}

/// A finding's key, kept as its three parts: the suite, the rule's fixed part and
/// the detail its family added. It is made from them and never read back from its
/// text; the text, `<suite>/<rule><detail>` (`chorus/schema:register-response:/agent_id`),
/// is what reports, baselines and `explain` show, stable across runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    text: String,
    /// Where the rule's part begins (after `<suite>/`).
    rule_at: u32,
    /// Where the detail begins.
    detail_at: u32,
}

impl Key {
    /// The key of `rule` (its fixed part, without the suite) in `suite`, with
    /// `detail` after it.
    pub fn new(suite: &str, rule: &str, detail: &str) -> Key {
        let text = format!("{suite}/{rule}{detail}");
        Key {
            rule_at: offset(suite.len() + 1),
            detail_at: offset(suite.len() + 1 + rule.len()),
            text,
        }
    }

    /// The suite whose rule it is.
    pub fn suite(&self) -> &str {
        self.part(0, self.rule_at.saturating_sub(1))
    }

    /// The rule's fixed part (`register-rejects-invalid`, `schema:register-response:`).
    pub fn rule(&self) -> &str {
        self.part(self.rule_at, self.detail_at)
    }

    /// What the rule's family added (a JSON pointer, a transport failure's kind);
    /// empty for an exact rule.
    pub fn detail(&self) -> &str {
        self.part(self.detail_at, u32::MAX)
    }

    /// The key as reports write it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The same rule with another detail.
    pub fn with_detail(&self, detail: &str) -> Key {
        Key::new(self.suite(), self.rule(), detail)
    }

    fn part(&self, from: u32, to: u32) -> &str {
        let to = (to as usize).min(self.text.len());
        self.text.get(from as usize..to).unwrap_or_default()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::ops::Deref for Key {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl std::borrow::Borrow<str> for Key {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl PartialEq<String> for Key {
    fn eq(&self, other: &String) -> bool {
        &self.text == other
    }
}

impl PartialEq<Key> for String {
    fn eq(&self, other: &Key) -> bool {
        *self == other.text
    }
}

impl PartialEq<Key> for &str {
    fn eq(&self, other: &Key) -> bool {
        *self == other.text
    }
}

impl Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// One deviation of the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable across runs ([`Key`]). Baselines and reports refer to it.
    pub key: Key,
    /// The requirement and ambiguity ids the deviation breaks.
    pub requirements: Vec<String>,
    /// The level of those requirements in the inventory, not of the case that met it.
    pub level: Level,
    pub outcome: Verdict,
    /// What the target did, in its own words (status, member, error text).
    pub summary: String,
    /// The case that owns this rule; `None` when any case that meets it may own it.
    #[serde(skip)]
    pub owner: Option<&'static str>,
    /// The rule it breaks, where it was made from one ([`Rule::found`]): its key
    /// is the rule's, with a family's detail after its fixed part.
    #[serde(skip)]
    pub rule: Option<&'static Rule>,
}

impl Finding {
    /// The finding of `rule` keyed `key`: its ids, level and owner the rule's.
    pub(crate) fn of(rule: &'static Rule, key: Key, summary: String) -> Finding {
        let level = rule.level();
        Finding {
            key,
            requirements: rule.requirements.iter().map(|s| s.to_string()).collect(),
            level,
            outcome: Verdict::of(level),
            summary,
            owner: (!rule.owner.is_empty()).then_some(rule.owner),
            rule: Some(rule),
        }
    }

    /// What its family added to the rule's fixed part: a schema finding's JSON
    /// pointer (`/agent_id`), a transport failure's kind (`no-answer`). Empty for a
    /// rule's exact finding, and for a case's own failure.
    pub fn detail(&self) -> &str {
        self.key.detail()
    }

    /// The finding of a rule that judges a change as a case does (a tamper of the
    /// proxy, [`crate::rules::TAMPER`]): it takes that case's requirement ids and
    /// level.
    pub fn judged_as(mut self, requirements: &[&str], level: Level) -> Self {
        self.requirements = requirements.iter().map(|s| s.to_string()).collect();
        self.level = level;
        self.outcome = Verdict::of(level);
        self
    }

    /// The profile key this finding says the run lacks or got wrong, when it is a
    /// setting rather than a deviation ([`Rule::setting`]).
    pub fn setting(&self) -> Option<&'static str> {
        self.rule.and_then(|r| r.setting)
    }

    /// The finding of a shared rule that takes its ids from the message it judges
    /// (a refusal of a valid message, [`crate::rules::REFUSED`]): the ids that
    /// make the message valid, its level theirs in the inventory (FACT when none
    /// gives one).
    pub fn citing(self, requirements: &[&str]) -> Self {
        let ids: Vec<String> = requirements.iter().map(|s| s.to_string()).collect();
        let level = inventory::level_for(&ids, Level::Fact);
        self.judged_as(requirements, level)
    }

    /// A finding made without a rule, for the tests of what handles findings: the
    /// harness itself makes every finding from its rule ([`Rule::found`]). Its level
    /// is the strongest of `requirements` in the inventory (FACT when none gives one).
    #[cfg(test)]
    pub fn new(key: impl Into<String>, requirements: &[&str], summary: impl Into<String>) -> Self {
        let requirements: Vec<String> = requirements.iter().map(|s| s.to_string()).collect();
        let level = inventory::level_for(&requirements, Level::Fact);
        let key: String = key.into();
        let (suite, rule) = key.split_once('/').unwrap_or(("", &key));
        Finding {
            key: Key::new(suite, rule, ""),
            requirements,
            level,
            outcome: Verdict::of(level),
            summary: summary.into(),
            owner: None,
            rule: None,
        }
    }

    /// The case that owns the rule this finding breaks.
    pub fn owned_by(mut self, case: &'static str) -> Self {
        self.owner = Some(case);
        self
    }

    /// Sets the level (and so the outcome) where the requirement ids do not decide it.
    /// What the inventory treats as informational stays informational.
    pub fn at(mut self, level: Level) -> Self {
        if inventory::strongest(&self.requirements) == Some(Level::Info) {
            return self;
        }
        self.level = level;
        self.outcome = Verdict::of(level);
        self
    }

    /// A case's own failure, given as text: the requirement ids quoted in the text,
    /// else the case's own; the level from the inventory, else the case's level.
    pub fn from_case_failure(
        case_id: &str,
        case_requirements: &[&str],
        case_level: Level,
        message: &str,
    ) -> Finding {
        let quoted = inventory::ids_in(message);
        let requirements: Vec<String> = if quoted.is_empty() {
            case_requirements.iter().map(|s| s.to_string()).collect()
        } else {
            quoted
        };
        let level = inventory::level_for(&requirements, case_level);
        Finding {
            key: case_key(case_id, ""),
            requirements,
            level,
            outcome: Verdict::of(level),
            summary: message.to_string(),
            owner: None,
            rule: None,
        }
    }
}

/// The key of case `case_id` (`<suite>/<case>`, as a case names itself), with
/// `detail` after it.
pub fn case_key(case_id: &str, detail: &str) -> Key {
    let (suite, case) = case_id.split_once('/').unwrap_or(("", case_id));
    Key::new(suite, case, detail)
}

/// A byte offset into a key, kept small in `Finding` (a key past 4 GiB has no
/// detail).
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// `text` reduced to what stays the same from one refusal to the next: lower case,
/// words of letters only (a word with a digit in it, an id, number or timestamp, is
/// left out, and so is one of 20 letters or more, a key), joined by `-`, at most 60
/// bytes.
pub fn normalised(text: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut len = 0;
    for w in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if w.is_empty() || w.chars().any(|c| c.is_ascii_digit()) || w.chars().count() >= 20 {
            continue;
        }
        if len + w.len() + 1 > 60 {
            break;
        }
        len += w.len() + 1;
        words.push(w.to_lowercase());
    }
    words.join("-")
}

/// `v` as compact JSON, the form findings show values in (never a debug form:
/// `null` for a missing value, `["a"]` for a list).
pub fn json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// Quotes what the target said, shortened to fit one report line.
pub fn quote(text: &str) -> String {
    let t = text.trim();
    match shorten(t, 200) {
        Some(head) => format!("{head:?}…"),
        None => format!("{t:?}"),
    }
}

/// The first `max` bytes of `text` (cut at a character boundary), or `None` when it
/// is no longer than that.
pub fn shorten(text: &str, max: usize) -> Option<&str> {
    if text.len() <= max {
        return None;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(&text[..end])
}

/// `text` shortened to `max` bytes, with `…` where it was cut.
pub fn clipped(text: &str, max: usize) -> String {
    match shorten(text, max) {
        Some(head) => format!("{head}…"),
        None => text.to_string(),
    }
}

/// `v` as compact JSON (as its `Display` writes it), [`clipped`] to `max` bytes. The
/// writing stops a few bytes past `max`, so a large value costs no more than a small one.
pub fn clipped_json(v: &serde_json::Value, max: usize) -> String {
    /// Keeps the first `cap` bytes written, then refuses more.
    struct Capped {
        buf: Vec<u8>,
        cap: usize,
    }
    impl std::io::Write for Capped {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            let room = self.cap - self.buf.len();
            self.buf.extend_from_slice(&b[..b.len().min(room)]);
            if b.len() > room {
                Err(std::io::Error::other("past the cap"))
            } else {
                Ok(b.len())
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Past `max` by a whole character at least, whatever the cut splits.
    let mut w = Capped {
        buf: Vec::with_capacity(max.min(4096) + 4),
        cap: max + 4,
    };
    // An error means only that the cap was reached.
    let _ = serde_json::to_writer(&mut w, v);
    let text = match std::str::from_utf8(&w.buf) {
        Ok(s) => s,
        // The cap split a character: the valid prefix is still longer than `max`.
        Err(e) => std::str::from_utf8(&w.buf[..e.valid_up_to()]).unwrap_or_default(),
    };
    clipped(text, max)
}

/// One rule: a static value written once, in its suite's `rules!` (or in
/// [`SHARED`]); findings are made from it ([`Rule::found`], [`Rule::found_as`],
/// [`Rule::found_in`]) and never restate its ids, level or owner.
#[derive(Debug)]
pub struct Rule {
    /// The finding key, or a family of them ending in `*`.
    pub key: &'static str,
    /// The requirement and ambiguity ids it enforces.
    pub requirements: &'static [&'static str],
    /// The level where the requirement ids do not decide it; `None`: the strongest
    /// level of the ids in the inventory.
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
    /// The rule's name in the code (the static that holds it).
    pub name: &'static str,
    /// The file that defines it.
    pub file: &'static str,
    /// The profile key a finding of this rule says the run lacks or got wrong, as a
    /// user writes it (`[chorus] fixture_skill`): such a finding is a setting, not a
    /// deviation of the target. `None` for every rule a target breaks.
    pub setting: Option<&'static str>,
}

impl Rule {
    /// What a rule states unless it says otherwise (the `rules!` macro fills the
    /// rest from it).
    pub const UNSET: Rule = Rule {
        key: "",
        requirements: &[],
        level: None,
        owner: "",
        summary: "",
        fails: "",
        passes: "",
        name: "",
        file: "",
        setting: None,
    };
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.key == other.key
    }
}

impl Eq for Rule {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipped_json_is_clipped_display() {
        let long = serde_json::json!({"text": "ünïcödé ".repeat(200), "n": [1, 2.5, null]});
        let short = serde_json::json!({"a": "é", "b": [true]});
        for v in [&long, &short] {
            for max in [0, 1, 5, 17, 18, 19, 20, 240, 5000] {
                assert_eq!(clipped_json(v, max), clipped(&v.to_string(), max), "{max}");
            }
        }
    }

    #[test]
    fn level_and_outcome_follow_the_requirements() {
        let f = Finding::new("x/y", &["AEX-044"], "no /wellknown");
        assert_eq!(f.level, Level::Should);
        assert_eq!(f.outcome, Verdict::Warn);
        let f = Finding::new("x/y", &["AEX-010"], "no error member");
        assert_eq!(f.outcome, Verdict::Fail);
        let f = Finding::new("x/y", &["AV1-A6"], "informational");
        assert_eq!((f.level, f.outcome), (Level::Info, Verdict::Warn));
        // Informational stays so; a finding whose ids give no level can be made so.
        assert_eq!(f.clone().at(Level::Must).level, Level::Info);
        let g = Finding::new("x/z", &["AV1-A1"], "picked").at(Level::Info);
        assert_eq!((g.level, g.outcome), (Level::Info, Verdict::Warn));
    }

    #[test]
    fn case_failures_take_the_quoted_ids() {
        let f = Finding::from_case_failure(
            "agora-exchange/single-round",
            &["AEX-004", "AEX-022"],
            Level::Must,
            "conversation fields (AEX-022)",
        );
        assert_eq!(f.requirements, vec!["AEX-022"]);
        assert_eq!(f.key, "agora-exchange/single-round");
        let f = Finding::from_case_failure("s/c", &["AEX-044"], Level::Must, "no ids");
        assert_eq!(f.level, Level::Should);
    }

    #[test]
    fn refusals_are_keyed_by_their_words_without_ids() {
        use crate::rules::{refusal, REFUSED};
        let a = refusal(
            (&REFUSED, "s", &["AGP-018"]),
            "INVALID_SIGNATURE",
            "Verification error: The first argument must be of type string. Received 3f2a9c11",
            "an echo request",
        );
        let b = refusal(
            (&REFUSED, "s", &["AGP-018"]),
            "INVALID_SIGNATURE",
            "Verification error: The first argument must be of type string. Received 77",
            "a notify",
        );
        assert_eq!(a.key, b.key);
        assert_eq!(
            a.key,
            "s/refused:INVALID_SIGNATURE:verification-error-the-first-argument-must-be-of-type"
        );
        assert!(a.summary.contains("Verification error"), "{}", a.summary);
        assert_eq!(
            normalised(
                "no conversation 0b1c-22 at 2026-11-26T17:00:00Z for MCowBQYDK2VwAyEAabcdefghij"
            ),
            "no-conversation-at-for"
        );
        assert_eq!(normalised("'protocolSources'"), "protocolsources");
        assert!(normalised(&"word ".repeat(40)).len() <= 60);
        assert_eq!(refusal((&REFUSED, "s", &[]), "", "", "x").key, "s/refused");
        assert_ne!(
            refusal((&REFUSED, "s", &[]), "E1", "bad key", "x").key,
            refusal((&REFUSED, "s", &[]), "E2", "bad key", "x").key
        );
    }

    #[test]
    fn keys_keep_their_parts() {
        use crate::rules::{found_among, TRANSPORT};
        let f = TRANSPORT.found_in("chorus", "no-answer", "silent");
        assert_eq!(f.key, "chorus/transport:no-answer");
        assert_eq!(
            (f.key.suite(), f.key.rule(), f.key.detail()),
            ("chorus", "transport:", "no-answer")
        );
        assert_eq!(f.detail(), "no-answer");
        // A suite or detail that holds the separators is still read back as made.
        let k = Key::new("a/b", "c:", "/d:e");
        assert_eq!((k.suite(), k.rule(), k.detail()), ("a/b", "c:", "/d:e"));
        assert_eq!(k.with_detail("x").as_str(), "a/b/c:x");
        // An exact member of a family keeps the family's detail.
        static FAMILY: Rule = Rule {
            key: "s/schema:reply:*",
            ..Rule::UNSET
        };
        static MEMBER: Rule = Rule {
            key: "s/schema:reply:/id",
            ..Rule::UNSET
        };
        let m = found_among(&[&MEMBER], &FAMILY, "/id", "no id");
        assert_eq!((m.key.rule(), m.detail()), ("schema:reply:", "/id"));
        assert_eq!(m.rule, Some(&MEMBER));
        let o = found_among(&[&MEMBER], &FAMILY, "/name", "no name");
        assert_eq!(
            (o.key.as_str(), o.rule),
            ("s/schema:reply:/name", Some(&FAMILY))
        );
        assert_eq!(
            serde_json::to_string(&o.key).ok().as_deref(),
            Some("\"s/schema:reply:/name\"")
        );
    }

    #[test]
    fn quotes_are_short() {
        assert_eq!(quote(" hi "), "\"hi\"");
        assert!(quote(&"é".repeat(500)).ends_with('…'));
    }
}
