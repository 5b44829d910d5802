//! Run reports: report.json, junit.xml, report.html, summary.md and the terminal lines.

pub mod attest;
pub mod baseline;
pub mod html;
pub mod markdown;
pub mod matrix;

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
    /// What `--baseline` expected, and its stale entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<baseline::Applied>,
    /// An interop run's matrix (`agentconform interop --report`): the report at the
    /// matrix's folder holds every pair's results and findings, each pair's apart
    /// (`crate::interop::write_reports`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interop: Option<matrix::Interop>,
    /// What a run against a target assumed that its profile does not set: found
    /// by discovery, as `agentconform init` finds it, and how it knows. Always
    /// written: empty when the profile sets every key discovery probes.
    pub assumptions: Vec<crate::init::Assumption>,
    /// Every distinct deviation, once, with the cases that met it.
    pub findings: Vec<ReportedFinding>,
    pub cases: Vec<CaseResult>,
    pub untestable: Vec<Untestable>,
    /// What the report keeps of the exchanges, at most.
    pub limits: Limits,
}

/// The caps on the transcripts a report keeps (entries beyond them are counted in
/// a note, not kept), so that the report and the memory that holds it stay bounded
/// whatever a target sends.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Limits {
    pub transcript_entry_bytes: usize,
    pub transcript_entries_per_case: usize,
    pub transcript_bytes_per_case: usize,
    pub transcript_bytes_per_run: usize,
}

impl Default for Limits {
    fn default() -> Self {
        use crate::script::{
            CASE_TRANSCRIPT_BYTES, ENTRY_CAP, RUN_TRANSCRIPT_BYTES, TRANSCRIPT_CAP,
        };
        Limits {
            transcript_entry_bytes: ENTRY_CAP,
            transcript_entries_per_case: TRANSCRIPT_CAP,
            transcript_bytes_per_case: CASE_TRANSCRIPT_BYTES,
            transcript_bytes_per_run: RUN_TRANSCRIPT_BYTES,
        }
    }
}

impl Limits {
    /// The caps, in words.
    pub fn describe(&self) -> String {
        format!(
            "transcripts keep at most {} entries and {} KiB per case, {} KiB per run, {} KiB per entry",
            self.transcript_entries_per_case,
            self.transcript_bytes_per_case / 1024,
            self.transcript_bytes_per_run / 1024,
            self.transcript_entry_bytes / 1024
        )
    }
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
            baseline: None,
            interop: None,
            assumptions: Vec::new(),
            findings: out.findings,
            cases: out.results,
            untestable: out.untestable,
            limits: Limits::default(),
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
        let xml = report
            .to_string()
            .map_err(|e| format!("cannot write JUnit XML: {e}"))?;
        Ok(jenkins_compatible(&xml))
    }

    /// Records on every failing, warned and blocked case the one command that reruns
    /// just that case: `agentconform run --suite S` plus `args` (target, profile, …).
    pub fn set_reproducers(&mut self, args: &[String]) {
        for c in &mut self.cases {
            if matches!(c.outcome, Outcome::Fail | Outcome::Warn | Outcome::Blocked) {
                let mut words: Vec<String> = vec![
                    "agentconform".into(),
                    "run".into(),
                    "--suite".into(),
                    c.suite.clone(),
                ];
                words.extend(args.iter().cloned());
                words.extend(["--cases".into(), c.id.clone()]);
                c.reproduce = Some(
                    words
                        .iter()
                        .map(|w| shell_quote(w))
                        .collect::<Vec<_>>()
                        .join(" "),
                );
            }
        }
    }

    /// Writes report.json, junit.xml, report.html and summary.md into `dir` (created
    /// if missing).
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let write = |name: &str, text: String| {
            let p = dir.join(name);
            std::fs::write(&p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))
        };
        // The JSON and the page hold every transcript: each is written as it is
        // serialised, never held whole in memory.
        let stream = |name: &str, f: &dyn Fn(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>| {
            let p = dir.join(name);
            let cannot = |e: std::io::Error| format!("cannot write {}: {e}", p.display());
            let mut w = std::io::BufWriter::new(std::fs::File::create(&p).map_err(cannot)?);
            f(&mut w).and_then(|()| w.flush()).map_err(cannot)
        };
        stream("report.json", &|w| {
            serde_json::to_writer_pretty(w, self).map_err(std::io::Error::other)
        })?;
        write("junit.xml", self.to_junit()?)?;
        stream("report.html", &|w| html::render_to(self, w))?;
        write("summary.md", markdown::render(self))
    }
}

/// The Jenkins xUnit schema (junit-10.xsd) allows no `skipped` attribute on the root
/// `testsuites` element, which quick-junit writes; each `testsuite` keeps its own.
fn jenkins_compatible(xml: &str) -> String {
    let Some(start) = xml.find("<testsuites") else {
        return xml.to_string();
    };
    let end = xml[start..].find('>').map_or(xml.len(), |e| start + e);
    let tag = &xml[start..end];
    let Some(at) = tag.find(" skipped=\"") else {
        return xml.to_string();
    };
    let value_end = tag[at + 10..]
        .find('"')
        .map_or(tag.len(), |e| at + 10 + e + 1);
    format!("{}{}{}", &xml[..start + at], &tag[value_end..], &xml[end..])
}

/// The part of a report.json that later commands read back.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ReadReport {
    pub findings: Vec<ReadFinding>,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct ReadFinding {
    pub key: String,
    pub outcome: Verdict,
    pub summary: String,
}

/// A word as a POSIX shell reads it back unchanged.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=@%+,".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// How the terminal output looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    /// ANSI colours on the outcome tags.
    pub colour: bool,
}

impl Style {
    /// Colour only on a terminal, and never when `NO_COLOR` is set (no-color.org).
    pub fn for_stdout() -> Style {
        use std::io::IsTerminal;
        Style {
            colour: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal(),
        }
    }

    fn tag(&self, tag: &str) -> String {
        use anstyle::{AnsiColor, Style as S};
        if !self.colour {
            return tag.to_string();
        }
        let colour = match tag {
            "FAIL" => AnsiColor::Red,
            "WARN" => AnsiColor::Yellow,
            "PASS" => AnsiColor::Green,
            "BLCK" => AnsiColor::Magenta,
            _ => AnsiColor::BrightBlack,
        };
        let st = S::new().fg_color(Some(colour.into())).bold();
        format!("{}{tag}{}", st.render(), st.render_reset())
    }
}

/// One terminal line per case.
pub fn case_line(r: &CaseResult) -> String {
    case_line_styled(r, Style::default())
}

/// [`case_line`] with the outcome tag in colour when `style` says so.
pub fn case_line_styled(r: &CaseResult, style: Style) -> String {
    let tag = style.tag(match r.outcome {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
        Outcome::Warn => "WARN",
        Outcome::Blocked => "BLCK",
        Outcome::Skip => "SKIP",
    });
    let mut line = format!(
        "{tag} {:<48} [{}] {:>5} ms",
        r.id, r.transport, r.duration_ms
    );
    if r.outcome != Outcome::Pass && !r.message.is_empty() {
        line.push_str(" — ");
        line.push_str(&r.message);
    }
    if let Some(cmd) = &r.reproduce {
        line.push_str("\n     rerun: ");
        line.push_str(cmd);
    }
    line
}

/// One terminal line per finding: outcome, level, key, requirement ids, the
/// target's words, and how many cases met it.
pub fn finding_line(f: &ReportedFinding) -> String {
    finding_line_styled(f, Style::default())
}

fn finding_line_styled(f: &ReportedFinding, style: Style) -> String {
    let tag = style.tag(match f.finding.outcome {
        Verdict::Fail => "FAIL",
        Verdict::Warn => "WARN",
    });
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

/// What the terminal shows of a run (`run --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// One line per case, then the deviations, then the counts.
    #[default]
    Text,
    /// The cases that did not pass, then the deviations and the counts.
    Short,
    /// report.json on standard output.
    Json,
}

/// Prints every case line, then the deviations, then the summary.
pub fn print_terminal(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    print_terminal_as(report, Format::Text, Style::default(), out)
}

/// [`print_terminal`] in `format` and `style`.
pub fn print_terminal_as(
    report: &Report,
    format: Format,
    style: Style,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if format == Format::Json {
        let text = report.to_json().map_err(std::io::Error::other)?;
        return writeln!(out, "{text}");
    }
    for r in &report.cases {
        if format == Format::Short && matches!(r.outcome, Outcome::Pass | Outcome::Skip) {
            continue;
        }
        writeln!(out, "{}", case_line_styled(r, style))?;
    }
    let s = report.summary;
    print_assumptions(report, out)?;
    if !report.findings.is_empty() {
        writeln!(out, "\nDeviations:")?;
        for f in &report.findings {
            writeln!(out, "{}", finding_line_styled(f, style))?;
        }
        writeln!(out, "(agentconform explain KEY says what a finding means)")?;
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

/// What the run set that the profile does not, and how it knows; the other keys
/// it discovered are counted (report.json lists them).
fn print_assumptions(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    use crate::init::Used;
    let (set, rest): (Vec<_>, Vec<_>) = report
        .assumptions
        .iter()
        .partition(|a| matches!(a.used, Used::Set | Used::Refused));
    if !set.is_empty() {
        writeln!(
            out,
            "\nAssumed (not in the profile; agentconform init writes it):"
        )?;
        for a in &set {
            let verb = if a.used == Used::Set { "" } else { "not " };
            writeln!(
                out,
                "  {} {verb}set to {}: {}",
                a.key,
                a.value.as_deref().unwrap_or("?"),
                a.how
            )?;
        }
    }
    let found = rest.iter().filter(|a| a.used == Used::CasesFind).count();
    let missing = rest.len() - found;
    let mut said = Vec::new();
    if found > 0 {
        said.push(format!(
            "{found} other key(s) found the way the cases find them themselves"
        ));
    }
    if missing > 0 {
        said.push(format!(
            "{missing} key(s) not found (a case that needs one says which)"
        ));
    }
    if !said.is_empty() {
        writeln!(out, "{} (report.json \"assumptions\")", said.join("; "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_skipped_attribute_is_dropped() {
        let xml = "<?xml version=\"1.0\"?>\n<testsuites name=\"a\" tests=\"2\" skipped=\"1\" failures=\"0\">\n<testsuite name=\"s\" skipped=\"1\">";
        let out = jenkins_compatible(xml);
        assert!(out.contains("<testsuites name=\"a\" tests=\"2\" failures=\"0\">"));
        assert!(out.contains("<testsuite name=\"s\" skipped=\"1\">"));
        assert_eq!(jenkins_compatible("<x/>"), "<x/>");
    }

    /// A case of the fixed report: one exchange, 7 ms.
    fn fixed_case(
        id: &str,
        outcome: Outcome,
        met: Vec<crate::case::Met>,
        message: &str,
    ) -> CaseResult {
        use crate::case::{Entry, Level};
        use crate::drive::Transport;
        CaseResult {
            id: id.into(),
            suite: id.split('/').next().unwrap_or_default().into(),
            title: format!("the title of {id}"),
            requirements: vec!["AEX-009".into()],
            level: Level::Must,
            transport: Transport::Http,
            outcome,
            message: message.into(),
            findings: met.iter().map(|m| m.finding.key.to_string()).collect(),
            reproduce: None,
            duration_ms: 7,
            transcript: vec![
                Entry {
                    at_ms: 0,
                    kind: "send",
                    text: "POST http://127.0.0.1:1/\n{\"body\":\"ping\"}".into(),
                    http_status: None,
                },
                Entry {
                    at_ms: 3,
                    kind: "recv",
                    text: "{\"status\":\"error\"}".into(),
                    http_status: Some(200),
                },
            ],
            met,
            control_case: None,
            claims: Vec::new(),
        }
    }

    /// A fixed report: two suites, every outcome, a failing and a warning finding,
    /// a reproducer, a baseline; nothing that changes from run to run.
    fn fixed_report() -> Report {
        use crate::case::Met;
        use crate::finding::Finding;
        use crate::runner::{merge_findings, RunOutput};
        let shape = Finding::new(
            "agora-exchange/reply:failure-shape",
            &["AEX-009", "AEX-010"],
            "failure replies read {\"status\":\"error\",\"message\":\"Missing field 'body'\"}",
        )
        .owned_by("agora-exchange/reply-shape");
        let warn = Finding::new(
            "agora-exchange/wellknown~AEX-044",
            &["AEX-044"],
            "no /wellknown endpoint (HTTP 404)",
        );
        let case = fixed_case;
        let incidental = |f: &Finding| Met {
            finding: f.clone(),
            own: false,
        };
        let mut results = vec![
            case("agora-exchange/single-round", Outcome::Pass, vec![], ""),
            case(
                "agora-exchange/reply-shape",
                Outcome::Pass,
                vec![incidental(&shape)],
                "",
            ),
            case(
                "agora-exchange/missing-body",
                Outcome::Pass,
                vec![incidental(&shape)],
                "",
            ),
            case(
                "agora-exchange/wellknown",
                Outcome::Pass,
                vec![incidental(&warn)],
                "",
            ),
            case(
                "agora-exchange/conversation-expiry",
                Outcome::Blocked,
                vec![incidental(&shape)],
                "blocked by agora-exchange/reply:failure-shape",
            ),
            case(
                "agora-exchange/https-transport",
                Outcome::Skip,
                vec![],
                "slow case: run with --include-slow",
            ),
        ];
        let findings = merge_findings(&mut results);
        let out = RunOutput {
            results,
            findings,
            untestable: Vec::new(),
            duration: std::time::Duration::from_millis(42),
        };
        let mut r = Report::new(
            "http://127.0.0.1:1/",
            vec!["agora-exchange".into()],
            "2026-01-01T00:00:00Z".into(),
            out,
        );
        r.set_reproducers(&["--target".into(), "http://127.0.0.1:1/".into()]);
        r
    }

    #[test]
    fn renderers_snapshots() {
        let r = fixed_report();
        insta::assert_snapshot!("summary_md", markdown::render(&r));
        insta::assert_snapshot!("junit_xml", r.to_junit().expect("junit"));
        let mut text = Vec::new();
        print_terminal(&r, &mut text).expect("terminal");
        insta::assert_snapshot!("terminal", String::from_utf8_lossy(&text));
        let mut short = Vec::new();
        print_terminal_as(&r, Format::Short, Style::default(), &mut short).expect("terminal");
        insta::assert_snapshot!("terminal_short", String::from_utf8_lossy(&short));
        insta::assert_snapshot!("report_json", r.to_json().expect("json"));
        insta::assert_snapshot!("report_html", html::render(&r).expect("html"));
    }

    /// A report with an interop matrix shows it in summary.md and report.html and
    /// carries it in report.json; without one, none of the three names it.
    #[test]
    fn interop_matrix_in_every_rendering() {
        use matrix::{Cell, Interop, Pair};
        let plain = fixed_report();
        assert!(!plain.to_json().expect("json").contains("\"interop\""));
        assert!(!markdown::render(&plain).contains("Interop matrix"));
        assert!(!html::render(&plain)
            .expect("html")
            .contains("interop-matrix"));
        let mut r = fixed_report();
        let pair = |server: &str, cell: Cell, incomplete: Vec<String>| Pair {
            client: "ref".into(),
            server: server.into(),
            cell,
            server_failing: usize::from(cell == Cell::Fails),
            client_failing: 0,
            incomplete,
            report: Some(format!("ref--{server}")),
            output: None,
        };
        r.interop = Some(Interop {
            suite: "agora-exchange".into(),
            pairs: vec![
                pair("clean", Cell::Works, vec![]),
                pair("odd", Cell::Fails, vec!["single: exit status 1".into()]),
            ],
        });
        let json: serde_json::Value =
            serde_json::from_str(&r.to_json().expect("json")).expect("JSON");
        assert_eq!(json["interop"]["pairs"][1]["cell"], "fails");
        assert_eq!(json["interop"]["pairs"][0]["report"], "ref--clean");
        let md = markdown::render(&r);
        assert!(md.starts_with("# agentconform: a pair fails"), "{md}");
        assert!(md.contains("## Interop matrix\n\n### interop agora-exchange\n\n| client \\ server | clean | odd |\n"), "{md}");
        assert!(md.contains("| ref | works (server 0, client 0) [report](ref--clean/summary.md) | fails (server 1, client 0) [report](ref--odd/summary.md) |"), "{md}");
        assert!(
            md.contains("- **ref** with **odd** did not complete: single: exit status 1"),
            "{md}"
        );
        let page = html::render(&r).expect("html");
        let table = page
            .find("<table id=\"interop-matrix\">")
            .expect("the matrix");
        assert!(table < page.find("<h2>Deviations</h2>").expect("deviations"));
        assert!(page.contains("<a href=\"ref--odd/report.html\">report</a>"));
        assert!(!page.contains("INTEROP-MATRIX"));
    }

    #[test]
    fn colour_only_when_asked() {
        let plain = Style { colour: false }.tag("FAIL");
        assert_eq!(plain, "FAIL");
        let coloured = Style { colour: true }.tag("FAIL");
        assert!(coloured.contains("\u{1b}[") && coloured.contains("FAIL"));
    }

    #[test]
    fn shell_words_round_trip() {
        assert_eq!(shell_quote("agora-v1/echo-*"), "'agora-v1/echo-*'");
        assert_eq!(shell_quote("http://127.0.0.1:80/"), "http://127.0.0.1:80/");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
