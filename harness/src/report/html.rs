//! report.html: one self-contained page (no network, no external script or font).
//!
//! Every row is written into the page: the header and totals, an interop run's
//! matrix (`Report::interop`), the deviations, the cases by suite (each with its
//! transcript in a closed `<details>`), the cases by requirement and the untestable
//! requirements, so that the page reads without JavaScript. A small script only
//! filters the rows by outcome, level and text, reading what each row carries in its
//! `data-` attributes. The page is written as it goes, never held whole in memory.

use super::matrix::escape;
use super::Report;
use crate::inventory;
use serde_json::Value;
use std::io::Write;

const TEMPLATE: &str = include_str!("report.html");
/// Where the header's lines go.
const HEADER_SLOT: &str = "<!--HEADER-->\n";
/// Where an interop run's matrix goes (nothing for any other report).
const MATRIX_SLOT: &str = "<!--INTEROP-MATRIX-->\n";
/// Where the filter bar's counts go.
const COUNTS_SLOT: &str = "<!--COUNTS-->\n";
/// Where the sections go.
const BODY_SLOT: &str = "<!--BODY-->\n";

/// A requirement or ambiguity of the inventory: its level, text and place.
fn requirement(id: &str) -> Option<(String, String, String)> {
    let inv = inventory::get();
    if let Some(r) = inv.requirements.get(id) {
        return Some((r.level.to_string(), r.text.to_string(), r.place.to_string()));
    }
    inv.ambiguities.get(id).map(|a| {
        (
            a.category.to_string(),
            a.treatment.to_string(),
            "ambiguity".to_string(),
        )
    })
}

/// The ids a report cites, sorted, once each.
fn cited(report: &Report) -> Vec<&str> {
    let mut ids: Vec<&str> = report
        .cases
        .iter()
        .flat_map(|c| c.requirements.iter().map(String::as_str))
        .chain(
            report
                .findings
                .iter()
                .flat_map(|f| f.finding.requirements.iter().map(String::as_str)),
        )
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// A string member of `v`, or "".
fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_default()
}

/// The strings of an array member of `v`.
fn list(v: &Value, k: &str) -> Vec<String> {
    v[k].as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn badge(outcome: &str) -> String {
    let o = escape(outcome);
    format!("<span class=\"badge b-{o}\">{o}</span>")
}

/// One requirement line under a deviation.
fn req_line(id: &str) -> String {
    let said = requirement(id)
        .map(|(level, text, place)| {
            format!(
                " {} — {} ({})",
                escape(&level),
                escape(&text),
                escape(&place)
            )
        })
        .unwrap_or_default();
    format!(
        "<div class=\"req\"><code>{}</code>{said}</div>\n",
        escape(id)
    )
}

/// The header's lines: what was run, the totals, the run's error.
fn header(report: &Report) -> String {
    let meta = format!(
        "target {} · suites {} · started {} · {} ms · {} {}",
        report.target,
        report.suites.join(", "),
        report.started_at,
        report.duration_ms,
        report.tool.name,
        report.tool.version
    );
    let m = &report.summary;
    let mut out = format!(
        "  <div id=\"meta\" class=\"muted\">{}</div>\n  <div id=\"totals\" class=\"totals\">",
        escape(&meta)
    );
    for (id, n) in [
        ("deviations", m.deviations),
        ("warnings", m.warnings),
        ("passed", m.passed),
        ("failed", m.failed),
        ("warned", m.warned),
        ("blocked", m.blocked),
        ("skipped", m.skipped),
    ] {
        out.push_str(&format!("<span id=\"total-{id}\"><b>{n}</b> {id}</span>"));
    }
    out.push_str("</div>\n  <div id=\"run-error\">");
    if let Some(e) = &report.error {
        out.push_str(&format!(
            "<div class=\"error\">The run could not judge the target: {}</div>",
            escape(e)
        ));
    }
    out.push_str("</div>\n");
    out
}

/// A deviation, as the page shows it.
fn finding_html(f: &Value) -> String {
    let (outcome, level, key) = (s(f, "outcome"), s(f, "level"), s(f, "key"));
    let reqs = list(f, "requirements");
    let cases = list(f, "cases");
    let text = [key, s(f, "summary"), &reqs.join(" "), &cases.join(" ")].join(" ");
    let mut out = format!(
        "<div class=\"finding {o}\" data-outcome=\"{o}\" data-level=\"{l}\" data-text=\"{t}\">\n<div>{b} <b>{l}</b> <code>{k}</code></div>\n<div>{sum}</div>\n",
        o = escape(outcome),
        l = escape(level),
        t = escape(&text),
        b = badge(outcome),
        k = escape(key),
        sum = escape(s(f, "summary")),
    );
    for r in &reqs {
        out.push_str(&req_line(r));
    }
    out.push_str(&format!(
        "<div class=\"muted\">met by {} case(s): {} · owner: {}</div>\n",
        cases.len(),
        escape(&cases.join(", ")),
        escape(&list(f, "owners").join(", "))
    ));
    if !s(f, "explain").is_empty() {
        out.push_str(&format!(
            "<div class=\"muted\">what it means: <code>{}</code></div>\n",
            escape(s(f, "explain"))
        ));
    }
    out.push_str("</div>\n");
    out
}

/// A case's row: its outcome, its label with the transcript folded under it, its
/// level, requirements and message.
fn case_row(c: &Value, out: &mut impl Write) -> std::io::Result<()> {
    let (outcome, level) = (s(c, "outcome"), s(c, "level"));
    let reqs = list(c, "requirements").join(" ");
    let found = list(c, "findings");
    let text = [
        s(c, "id"),
        s(c, "title"),
        s(c, "message"),
        &reqs,
        &found.join(" "),
    ]
    .join(" ");
    writeln!(
        out,
        "<tr class=\"case-row\" data-outcome=\"{o}\" data-level=\"{l}\" data-text=\"{t}\"><td>{b}</td><td><details><summary>{id} [{tr}] — {title}</summary>",
        o = escape(outcome),
        l = escape(level),
        t = escape(&text),
        b = badge(outcome),
        id = escape(s(c, "id")),
        tr = escape(s(c, "transport")),
        title = escape(s(c, "title")),
    )?;
    if !s(c, "reproduce").is_empty() {
        writeln!(
            out,
            "<div>rerun: <code>{}</code></div>",
            escape(s(c, "reproduce"))
        )?;
    }
    if !found.is_empty() {
        writeln!(out, "<div>findings: {}</div>", escape(&found.join(", ")))?;
    }
    writeln!(out, "<div class=\"muted\">{} ms</div>", c["duration_ms"])?;
    for e in c["transcript"].as_array().into_iter().flatten() {
        let status = e["http_status"]
            .as_u64()
            .map(|h| format!(" HTTP {h}"))
            .unwrap_or_default();
        write!(
            out,
            "<pre class=\"entry-{k}\">+{at} ms {k}{status}\n{text}</pre>\n",
            k = escape(s(e, "kind")),
            at = e["at_ms"],
            text = escape(s(e, "text")),
        )?;
    }
    writeln!(
        out,
        "</details></td><td>{}</td><td class=\"mono\">{}</td><td>{}</td></tr>",
        escape(level),
        escape(&reqs),
        escape(s(c, "message"))
    )
}

/// The sections below the filters: deviations, cases by suite, by requirement,
/// untestable requirements.
fn body(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    write!(out, "  <h2>Deviations</h2>\n  <div id=\"findings\">\n")?;
    if report.findings.is_empty() {
        writeln!(out, "<p class=\"muted\">No deviation found.</p>")?;
    }
    for f in &report.findings {
        let v = serde_json::to_value(f).map_err(std::io::Error::other)?;
        out.write_all(finding_html(&v).as_bytes())?;
    }
    write!(
        out,
        "  </div>\n  <h2>Cases by suite</h2>\n  <div id=\"suites\">\n"
    )?;
    let mut rows = Vec::new();
    for suite in &report.suites {
        write!(out, "<h3>{}</h3>\n<table>\n<tr><th>outcome</th><th>case</th><th>level</th><th>requirements</th><th>message</th></tr>\n", escape(suite))?;
        for c in report.cases.iter().filter(|c| &c.suite == suite) {
            let v = serde_json::to_value(c).map_err(std::io::Error::other)?;
            case_row(&v, out)?;
            rows.push((
                c.requirements.clone(),
                s(&v, "outcome").to_string(),
                format!("{} [{}]", c.id, s(&v, "transport")),
            ));
        }
        writeln!(out, "</table>")?;
    }
    write!(out, "  </div>\n  <h2>By requirement</h2>\n  <div id=\"requirements\">\n<table>\n<tr><th>requirement</th><th>level</th><th>text</th><th>cases</th></tr>\n")?;
    for id in cited(report) {
        let Some((level, text, place)) = requirement(id) else {
            continue;
        };
        let cases: String = rows
            .iter()
            .filter(|(reqs, _, _)| reqs.iter().any(|r| r == id))
            .map(|(_, o, label)| format!("<div>{} {}</div>", badge(o), escape(label)))
            .collect();
        writeln!(
            out,
            "<tr><td class=\"mono\">{}</td><td>{}</td><td>{} ({})</td><td>{cases}</td></tr>",
            escape(id),
            escape(&level),
            escape(&text),
            escape(&place)
        )?;
    }
    write!(out, "</table>\n  </div>\n  <h2>Untestable requirements</h2>\n  <div id=\"untestable\">\n<table>\n")?;
    for u in &report.untestable {
        writeln!(
            out,
            "<tr><td class=\"mono\">{}</td><td>{}</td></tr>",
            escape(u.requirement),
            escape(u.reason)
        )?;
    }
    write!(out, "</table>\n  </div>\n")
}

/// The page for `report`.
pub fn render(report: &Report) -> Result<String, String> {
    let mut out = Vec::new();
    render_to(report, &mut out).map_err(|e| format!("cannot render the report: {e}"))?;
    String::from_utf8(out).map_err(|e| format!("cannot render the report: {e}"))
}

/// Writes the page for `report` to `out` as it goes, row by row.
pub fn render_to(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let slot = |t: &'static str, at: &str| {
        t.split_once(at)
            .ok_or_else(|| std::io::Error::other(format!("the page template has no {at} slot")))
    };
    let (top, rest) = slot(TEMPLATE, HEADER_SLOT)?;
    let (mid, rest) = slot(rest, MATRIX_SLOT)?;
    let (filters, rest) = slot(rest, COUNTS_SLOT)?;
    let (bar_end, tail) = slot(rest, BODY_SLOT)?;
    out.write_all(top.as_bytes())?;
    out.write_all(header(report).as_bytes())?;
    out.write_all(mid.as_bytes())?;
    if let Some(m) = &report.interop {
        out.write_all(super::matrix::html(m).as_bytes())?;
    }
    out.write_all(filters.as_bytes())?;
    let (n, f) = (report.cases.len(), report.findings.len());
    write!(
        out,
        "    &nbsp; <span class=\"muted\">showing <span id=\"shown-cases\">{n}</span> of <span id=\"total-cases\">{n}</span> cases,\n    <span id=\"shown-findings\">{f}</span> of <span id=\"total-findings\">{f}</span> deviations</span>\n"
    )?;
    out.write_all(bar_end.as_bytes())?;
    body(report, out)?;
    out.write_all(tail.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_has_its_slots() {
        for slot in [HEADER_SLOT, MATRIX_SLOT, COUNTS_SLOT, BODY_SLOT] {
            assert_eq!(TEMPLATE.matches(slot).count(), 1, "{slot}");
        }
        assert!(!TEMPLATE.contains("http://") && !TEMPLATE.contains("https://"));
    }

    #[test]
    fn a_deviation_is_written_escaped_with_what_the_filters_read() {
        let f = serde_json::json!({"key": "s/k", "outcome": "fail", "level": "FACT",
            "summary": "the target said </script><b>&", "requirements": ["AV1-001"],
            "cases": ["s/c [http]"], "owners": ["s/c [http]"], "explain": "agentconform explain s/k"});
        let h = finding_html(&f);
        assert!(h.contains("the target said &lt;/script&gt;&lt;b&gt;&amp;"));
        assert!(!h.contains("</script>"));
        assert!(h.contains("data-outcome=\"fail\" data-level=\"FACT\""));
        assert!(h.contains("<code>AV1-001</code>"));
    }
}
