//! summary.md: the run in a few screens, fit for a CI summary page
//! (`cat summary.md >> "$GITHUB_STEP_SUMMARY"`): totals, deviations, the cases that
//! failed, warned or were blocked with their reproducers. Lists are capped so that the
//! summary stays readable; report.html and report.json have everything.

use super::matrix::{md_cell as cell, Cell};
use super::Report;
use crate::case::Outcome;
use std::fmt::Write;

/// Most deviations listed.
pub const MAX_FINDINGS: usize = 30;
/// Most cases listed.
pub const MAX_CASES: usize = 40;
pub fn render(report: &Report) -> String {
    let mut md = String::new();
    let s = report.summary;
    let pair_fails = report
        .interop
        .as_ref()
        .is_some_and(|m| m.pairs.iter().any(|p| p.cell == Cell::Fails));
    let verdict = if report.error.is_some() {
        "could not judge the target"
    } else if pair_fails {
        "a pair fails"
    } else if s.deviations > 0 {
        "deviations found"
    } else {
        "no failing deviation"
    };
    let _ = writeln!(md, "# agentconform: {verdict}\n");
    let _ = writeln!(
        md,
        "Target `{}`, suites {}, {} ms.\n",
        cell(&report.target),
        report.suites.join(", "),
        report.duration_ms
    );
    if let Some(e) = &report.error {
        let _ = writeln!(md, "**The run could not judge the target:** {}\n", cell(e));
    }
    let _ = writeln!(md, "Limits: {}.\n", report.limits.describe());
    let _ = writeln!(
        md,
        "| deviations | warnings | passed | failed | warned | blocked | skipped |\n|---|---|---|---|---|---|---|\n| {} | {} | {} | {} | {} | {} | {} |\n",
        s.deviations, s.warnings, s.passed, s.failed, s.warned, s.blocked, s.skipped
    );
    interop(&mut md, report);
    assumptions(&mut md, report);
    deviations(&mut md, report);
    cases_to_look_at(&mut md, report);
    md
}

/// What the run found of the target that its profile does not set, and how.
fn assumptions(md: &mut String, report: &Report) {
    if report.assumptions.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## Assumed\n\nNot in the profile: found by the run as `agentconform init` finds it.\n\n| key | value | used | how |\n|---|---|---|---|"
    );
    for a in &report.assumptions {
        let used = serde_json::to_value(a.used)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "| {} | {} | {used} | {} |",
            cell(&a.key),
            cell(a.value.as_deref().unwrap_or("")),
            cell(&a.how)
        );
    }
    md.push('\n');
}

/// An interop run's matrix (`Report::interop`), each cell linking to its pair's
/// summary.md, then the scenarios that did not complete.
fn interop(md: &mut String, report: &Report) {
    let Some(m) = &report.interop else {
        return;
    };
    let _ = writeln!(md, "## Interop matrix\n");
    let _ = writeln!(md, "{}", super::matrix::markdown(&m.suite, &m.pairs));
    let incomplete: Vec<_> = m
        .pairs
        .iter()
        .filter(|p| !p.incomplete.is_empty())
        .collect();
    for p in &incomplete {
        let _ = writeln!(
            md,
            "- **{}** with **{}** did not complete: {}",
            cell(&p.client),
            cell(&p.server),
            cell(&p.incomplete.join("; "))
        );
    }
    if !incomplete.is_empty() {
        let _ = writeln!(md);
    }
}

/// The deviations table, at most [`MAX_FINDINGS`] rows, each with the command that
/// explains it.
fn deviations(md: &mut String, report: &Report) {
    if report.findings.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Deviations\n");
    let _ = writeln!(
        md,
        "| outcome | level | finding | requirements | what the target did | cases | what it means |\n|---|---|---|---|---|---|---|"
    );
    for f in report.findings.iter().take(MAX_FINDINGS) {
        let _ = writeln!(
            md,
            "| {} | {} | `{}` | {} | {} | {} | `{}` |",
            f.finding.outcome,
            f.finding.level,
            cell(&f.finding.key),
            f.finding.requirements.join(", "),
            cell(&f.finding.summary),
            f.cases.len(),
            cell(&f.explain)
        );
    }
    if report.findings.len() > MAX_FINDINGS {
        let _ = writeln!(
            md,
            "\n… and {} more deviations in report.html.",
            report.findings.len() - MAX_FINDINGS
        );
    }
    let _ = writeln!(md);
}

/// The failing, warned and blocked cases, at most [`MAX_CASES`], with their
/// reproducers.
fn cases_to_look_at(md: &mut String, report: &Report) {
    let listed: Vec<_> = report
        .cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Fail | Outcome::Warn | Outcome::Blocked))
        .collect();
    if !listed.is_empty() {
        let _ = writeln!(md, "## Cases to look at\n");
        for c in listed.iter().take(MAX_CASES) {
            let _ = writeln!(
                md,
                "- **{}** `{}` [{}]: {}",
                c.outcome,
                c.id,
                c.transport,
                cell(&c.message)
            );
            if let Some(cmd) = &c.reproduce {
                let _ = writeln!(md, "  - rerun: `{}`", cmd.replace('`', "'"));
            }
        }
        if listed.len() > MAX_CASES {
            let _ = writeln!(
                md,
                "\n… and {} more cases in report.html.",
                listed.len() - MAX_CASES
            );
        }
    }
}
