//! Baselines of expected failures (`run --baseline FILE`, `baseline write`).
//!
//! A baseline lists known deviations by finding key or by case id, each with the
//! reason it is accepted. A failure the baseline expects does not fail the run; an
//! entry that no longer fails (stale) does, so that a fixed deviation cannot stay
//! excused, nor a baseline rot.

use super::Report;
use crate::case::Outcome;
use crate::finding::Verdict;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One expected failure: a finding key or a case id, and why it is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub reason: String,
}

impl Expected {
    fn label(&self) -> String {
        match (&self.finding, &self.case) {
            (Some(f), _) => format!("finding {f}"),
            (None, Some(c)) => format!("case {c}"),
            (None, None) => "an entry without finding or case".into(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub expected: Vec<Expected>,
}

/// What a baseline did to a run, as report.json records it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Applied {
    pub file: String,
    /// Failing findings and cases the baseline expects, with the reason.
    pub expected: Vec<Expected>,
    /// Entries that no longer fail: each fails the run.
    pub stale: Vec<Expected>,
}

impl Baseline {
    /// Reads a TOML or JSON baseline; errors name the file and, for TOML, the line.
    pub fn load(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
        let b: Baseline = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| format!("baseline {}: {e}", path.display()))?
        } else {
            toml::from_str(&text).map_err(|e| format!("baseline {}: {e}", path.display()))?
        };
        for (i, e) in b.expected.iter().enumerate() {
            if e.finding.is_some() == e.case.is_some() {
                return Err(format!(
                    "baseline {}: entry {} must name exactly one of finding or case",
                    path.display(),
                    i + 1
                ));
            }
            if e.reason.trim().is_empty() {
                return Err(format!(
                    "baseline {}: entry {} ({}) has no reason",
                    path.display(),
                    i + 1,
                    e.label()
                ));
            }
        }
        Ok(b)
    }

    /// A baseline that expects every failing finding of a report.
    pub fn from_findings(findings: &[super::ReadFinding]) -> Baseline {
        Baseline {
            expected: findings
                .iter()
                .filter(|f| f.outcome == Verdict::Fail)
                .map(|f| Expected {
                    finding: Some(f.key.clone()),
                    case: None,
                    reason: format!("known deviation: {}", f.summary),
                })
                .collect(),
        }
    }

    pub fn to_toml(&self) -> Result<String, String> {
        toml::to_string_pretty(self).map_err(|e| format!("cannot write the baseline: {e}"))
    }

    /// Marks the failures this baseline expects and finds its stale entries.
    pub fn apply(&self, report: &mut Report, file: &str) {
        let mut applied = Applied {
            file: file.to_string(),
            ..Applied::default()
        };
        for e in &self.expected {
            let fails = match (&e.finding, &e.case) {
                (Some(key), _) => report
                    .findings
                    .iter()
                    .any(|f| &f.finding.key == key && f.finding.outcome == Verdict::Fail),
                (None, Some(id)) => report
                    .cases
                    .iter()
                    .any(|c| &c.id == id && c.outcome == Outcome::Fail),
                (None, None) => false,
            };
            // An entry is judged only when the run could have met it: its case ran,
            // or its finding's suite did.
            let judged = match (&e.finding, &e.case) {
                (Some(key), _) => report
                    .suites
                    .iter()
                    .any(|s| key.split('/').next() == Some(s.as_str())),
                (None, Some(id)) => report
                    .cases
                    .iter()
                    .any(|c| &c.id == id && c.outcome != Outcome::Skip),
                (None, None) => true,
            };
            if fails {
                applied.expected.push(e.clone());
            } else if judged {
                applied.stale.push(e.clone());
            }
        }
        report.baseline = Some(applied);
    }
}

impl Report {
    /// Whether the run fails: a failing finding the baseline does not expect, a
    /// failing case the baseline does not expect (by its id or by the keys of the
    /// failing findings it owns), or a stale baseline entry.
    pub fn fails(&self) -> bool {
        let expected = self.baseline.as_ref().map(|b| &b.expected);
        let finding_expected = |key: &str| {
            expected.is_some_and(|list| list.iter().any(|e| e.finding.as_deref() == Some(key)))
        };
        let case_expected = |id: &str| {
            expected.is_some_and(|list| list.iter().any(|e| e.case.as_deref() == Some(id)))
        };
        let stale = self.baseline.as_ref().is_some_and(|b| !b.stale.is_empty());
        let unexpected_finding = self.findings.iter().any(|f| {
            f.finding.outcome == Verdict::Fail
                && !finding_expected(&f.finding.key)
                && !f
                    .owners
                    .iter()
                    .all(|o| case_expected(o.rsplit_once(" [").map(|(id, _)| id).unwrap_or(o)))
        });
        let unexpected_case = self.cases.iter().any(|c| {
            c.outcome == Outcome::Fail
                && !case_expected(&c.id)
                && !c.findings.iter().any(|k| {
                    finding_expected(k)
                        && self.findings.iter().any(|f| {
                            &f.finding.key == k
                                && f.owners
                                    .iter()
                                    .any(|o| o.starts_with(&format!("{} [", c.id)))
                        })
                })
        });
        stale || unexpected_finding || unexpected_case
    }
}
