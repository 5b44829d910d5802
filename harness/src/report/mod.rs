//! Run reports: report.json, junit.xml and the terminal lines.

use crate::case::{CaseResult, Outcome, Untestable};
use crate::finding::Verdict;
use crate::runner::{ReportedFinding, RunOutput};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub warned: usize,
    pub blocked: usize,
    pub skipped: usize,
    /// Distinct deviations that fail the run, and that only warn.
    pub deviations: usize,
    pub warnings: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool: Tool,
    pub target: String,
    pub suites: Vec<String>,
    pub started_at: String,
    pub duration_ms: u64,
    pub summary: Summary,
    /// Why the run ended without judging the target (unreachable, nothing selected,
    /// nothing could run); the run exits 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every distinct deviation, once, with the cases that met it.
    pub findings: Vec<ReportedFinding>,
    pub cases: Vec<CaseResult>,
    pub untestable: Vec<Untestable>,
}

pub fn summarize(results: &[CaseResult], findings: &[ReportedFinding]) -> Summary {
    let mut s = Summary::default();
    for r in results {
        match r.outcome {
            Outcome::Pass => s.passed += 1,
            Outcome::Fail => s.failed += 1,
            Outcome::Warn => s.warned += 1,
            Outcome::Blocked => s.blocked += 1,
            Outcome::Skip => s.skipped += 1,
        }
    }
    for f in findings {
        match f.finding.outcome {
            Verdict::Fail => s.deviations += 1,
            Verdict::Warn => s.warnings += 1,
        }
    }
    s
}

impl Report {
    pub fn new(target: &str, suites: Vec<String>, started_at: String, out: RunOutput) -> Report {
        Report {
            tool: Tool {
                name: "agentconform",
                version: env!("CARGO_PKG_VERSION"),
            },
            target: target.to_string(),
            suites,
            started_at,
            duration_ms: out.duration.as_millis() as u64,
            summary: summarize(&out.results, &out.findings),
            error: None,
            findings: out.findings,
            cases: out.results,
            untestable: out.untestable,
        }
    }

    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| format!("cannot serialize the report: {e}"))
    }

    /// JUnit XML: one test suite per agora suite, one test case per case and binding.
    pub fn to_junit(&self) -> Result<String, String> {
        use quick_junit::{NonSuccessKind, Report as JReport, TestCase, TestCaseStatus, TestSuite};
        let mut report = JReport::new("agentconform");
        for suite in &self.suites {
            let mut ts = TestSuite::new(suite.as_str());
            for c in self.cases.iter().filter(|c| &c.suite == suite) {
                let status = match c.outcome {
                    Outcome::Pass | Outcome::Warn => TestCaseStatus::success(),
                    Outcome::Fail => {
                        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                        s.set_message(c.message.as_str());
                        if !c.findings.is_empty() {
                            s.set_type(c.findings.join(" "));
                        }
                        s
                    }
                    Outcome::Skip => {
                        let mut s = TestCaseStatus::skipped();
                        s.set_message(c.message.as_str());
                        s
                    }
                    // Neither passed nor failed: the deviation that blocked it fails
                    // the case that owns it.
                    Outcome::Blocked => {
                        let mut s = TestCaseStatus::skipped();
                        s.set_message(c.message.as_str());
                        s.set_type("blocked");
                        s
                    }
                };
                let mut tc = TestCase::new(format!("{} [{}]", c.id, c.transport), status);
                tc.set_classname(suite.as_str());
                tc.set_time(std::time::Duration::from_millis(c.duration_ms));
                if c.outcome == Outcome::Warn {
                    tc.set_system_out(format!("warning: {}", c.message));
                }
                ts.add_test_case(tc);
            }
            report.add_test_suite(ts);
        }
        report
            .to_string()
            .map_err(|e| format!("cannot write JUnit XML: {e}"))
    }

    /// Writes report.json and junit.xml into `dir` (created if missing).
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let write = |name: &str, text: String| {
            let p = dir.join(name);
            std::fs::write(&p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))
        };
        write("report.json", self.to_json()?)?;
        write("junit.xml", self.to_junit()?)
    }
}

/// One terminal line per case.
pub fn case_line(r: &CaseResult) -> String {
    let tag = match r.outcome {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
        Outcome::Warn => "WARN",
        Outcome::Blocked => "BLCK",
        Outcome::Skip => "SKIP",
    };
    let mut line = format!(
        "{tag} {:<48} [{}] {:>5} ms",
        r.id, r.transport, r.duration_ms
    );
    if r.outcome != Outcome::Pass && !r.message.is_empty() {
        line.push_str(" — ");
        line.push_str(&r.message);
    }
    line
}

/// One terminal line per finding: outcome, level, key, requirement ids, the
/// target's words, and how many cases met it.
pub fn finding_line(f: &ReportedFinding) -> String {
    let tag = match f.finding.outcome {
        Verdict::Fail => "FAIL",
        Verdict::Warn => "WARN",
    };
    let n = f.cases.len();
    format!(
        "{tag} [{}] {} ({}) — {} ({n} case{} met it; owner {})",
        f.finding.level,
        f.finding.key,
        if f.finding.requirements.is_empty() {
            "no requirement id".to_string()
        } else {
            f.finding.requirements.join(", ")
        },
        f.finding.summary,
        if n == 1 { "" } else { "s" },
        f.owners.join(", ")
    )
}

/// Prints every case line, then the deviations, then the summary.
pub fn print_terminal(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    for r in &report.cases {
        writeln!(out, "{}", case_line(r))?;
    }
    let s = report.summary;
    if !report.findings.is_empty() {
        writeln!(out, "\nDeviations:")?;
        for f in &report.findings {
            writeln!(out, "{}", finding_line(f))?;
        }
    }
    let affected: std::collections::BTreeSet<&str> = report
        .findings
        .iter()
        .flat_map(|f| f.cases.iter().map(String::as_str))
        .collect();
    writeln!(
        out,
        "\n{} deviation{} found ({} warning{}), {} case{} affected",
        s.deviations,
        if s.deviations == 1 { "" } else { "s" },
        s.warnings,
        if s.warnings == 1 { "" } else { "s" },
        affected.len(),
        if affected.len() == 1 { "" } else { "s" },
    )?;
    writeln!(
        out,
        "{} passed, {} failed, {} warned, {} blocked, {} skipped in {} ms ({} requirements recorded as untestable)",
        s.passed,
        s.failed,
        s.warned,
        s.blocked,
        s.skipped,
        report.duration_ms,
        report.untestable.len()
    )
}
