//! The interop matrix (`agentconform interop`): which clients work with which
//! servers, as data (`Cell`, `Pair`, `Interop`) and as text (Markdown for matrix.md,
//! summary.md and the terminal; an HTML table for report.html).
//!
//! The model sits here, below the interop engine (`crate::interop`, which runs the
//! pairs and re-exports these types), so that a report can carry the matrix
//! (`Report::interop`) without the report module importing the engine.

use crate::runner::RunOutput;
use serde::Serialize;

/// Longest text of one table cell.
const CELL: usize = 240;

/// Text fit for one table cell: no line breaks or pipes, shortened.
pub(super) fn md_cell(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let mut t = one_line.replace('|', "\\|").replace('`', "'");
    if t.len() > CELL {
        let mut end = CELL;
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        t.truncate(end);
        t.push('…');
    }
    t
}

/// How a pair went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cell {
    Works,
    WorksWithDeviations,
    Fails,
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cell::Works => "works",
            Cell::WorksWithDeviations => "works with deviations",
            Cell::Fails => "fails",
        })
    }
}

/// One pair's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub client: String,
    pub server: String,
    pub cell: Cell,
    /// Failing findings of each side.
    pub server_failing: usize,
    pub client_failing: usize,
    /// The scenarios that did not complete, with how the client ended.
    pub incomplete: Vec<String>,
    /// Where the pair's report is (relative to the matrix), when reports are written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    #[serde(skip)]
    pub output: Option<RunOutput>,
}

/// A whole interop run: the suite and every pair, clients in the order given, and
/// for each client the servers in the order given. The `interop` member of an
/// interop run's report.json, and matrix.json.
#[derive(Debug, Clone, Serialize)]
pub struct Interop {
    pub suite: String,
    pub pairs: Vec<Pair>,
}

/// The clients and the servers of `pairs`, each once, in the order they first come.
fn names(pairs: &[Pair]) -> (Vec<&str>, Vec<&str>) {
    let mut clients: Vec<&str> = Vec::new();
    let mut servers: Vec<&str> = Vec::new();
    for p in pairs {
        if !clients.contains(&p.client.as_str()) {
            clients.push(&p.client);
        }
        if !servers.contains(&p.server.as_str()) {
            servers.push(&p.server);
        }
    }
    (clients, servers)
}

fn find<'a>(pairs: &'a [Pair], client: &str, server: &str) -> Option<&'a Pair> {
    pairs
        .iter()
        .find(|p| p.client == client && p.server == server)
}

/// The matrix in Markdown: one row per client, one column per server.
pub fn markdown(suite: &str, pairs: &[Pair]) -> String {
    let (clients, servers) = names(pairs);
    let mut md = format!("### interop {suite}\n\n| client \\ server |");
    for s in &servers {
        md.push_str(&format!(" {} |", md_cell(s)));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(servers.len()));
    md.push('\n');
    for c in &clients {
        md.push_str(&format!("| {} |", md_cell(c)));
        for s in &servers {
            let cell = find(pairs, c, s).map(describe).unwrap_or_default();
            md.push_str(&format!(" {cell} |"));
        }
        md.push('\n');
    }
    md
}

/// A cell in words: the outcome, the failing findings per side, the report.
fn describe(p: &Pair) -> String {
    let mut s = format!(
        "{} (server {}, client {})",
        p.cell, p.server_failing, p.client_failing
    );
    if let Some(r) = &p.report {
        s.push_str(&format!(" [report]({r}/summary.md)"));
    }
    s
}

/// Text as HTML text or attribute value.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The matrix as an HTML section for report.html: a table with one row per client
/// and one column per server, each cell a badge (its outcome), the failing findings
/// per side and a link to the pair's report.html; then the scenarios that did not
/// complete.
pub fn html(m: &Interop) -> String {
    let (clients, servers) = names(&m.pairs);
    let mut h = format!(
        "<section id=\"interop\">\n<h2>Interop matrix: {}</h2>\n<table id=\"interop-matrix\">\n<tr><th>client \\ server</th>",
        escape(&m.suite)
    );
    for s in &servers {
        h.push_str(&format!("<th>{}</th>", escape(s)));
    }
    h.push_str("</tr>\n");
    for c in &clients {
        h.push_str(&format!("<tr><th>{}</th>", escape(c)));
        for s in &servers {
            h.push_str(&find(&m.pairs, c, s).map(html_cell).unwrap_or_default());
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    for p in m.pairs.iter().filter(|p| !p.incomplete.is_empty()) {
        h.push_str(&format!(
            "<p class=\"muted\">{} with {} did not complete: {}</p>\n",
            escape(&p.client),
            escape(&p.server),
            escape(&p.incomplete.join("; "))
        ));
    }
    h.push_str("</section>\n");
    h
}

/// One cell of the HTML matrix.
fn html_cell(p: &Pair) -> String {
    let badge = match p.cell {
        Cell::Works => "pass",
        Cell::WorksWithDeviations => "warn",
        Cell::Fails => "fail",
    };
    let mut td = format!(
        "<td data-cell=\"{}\"><span class=\"badge b-{badge}\">{}</span> failing: server {}, client {}",
        escape(&p.cell.to_string()),
        p.cell,
        p.server_failing,
        p.client_failing
    );
    if let Some(r) = &p.report {
        td.push_str(&format!(
            " · <a href=\"{}/report.html\">report</a>",
            escape(r)
        ));
    }
    td.push_str("</td>");
    td
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(client: &str, server: &str, cell: Cell, failing: (usize, usize)) -> Pair {
        Pair {
            client: client.into(),
            server: server.into(),
            cell,
            server_failing: failing.0,
            client_failing: failing.1,
            incomplete: if cell == Cell::Fails {
                vec!["request: exit status 1 <stderr>".into()]
            } else {
                Vec::new()
            },
            report: Some(format!("{client}--{server}")),
            output: None,
        }
    }

    fn sample() -> Interop {
        Interop {
            suite: "agora-v1".into(),
            pairs: vec![
                pair("ref", "clean", Cell::Works, (0, 0)),
                pair("ref", "odd|<b>", Cell::WorksWithDeviations, (1, 0)),
                pair("py", "clean", Cell::Works, (0, 0)),
                pair("py", "odd|<b>", Cell::Fails, (2, 1)),
            ],
        }
    }

    #[test]
    fn markdown_has_a_row_per_client_and_a_column_per_server() {
        let m = sample();
        let md = markdown(&m.suite, &m.pairs);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "### interop agora-v1");
        assert_eq!(lines[2], "| client \\ server | clean | odd\\|<b> |");
        assert_eq!(lines[3], "|---|---|---|");
        assert!(lines[4].starts_with(
            "| ref | works (server 0, client 0) [report](ref--clean/summary.md) | works with deviations (server 1, client 0)"
        ));
        assert!(lines[5].starts_with("| py | works"), "{md}");
        assert!(lines[5].contains("| fails (server 2, client 1)"), "{md}");
    }

    #[test]
    fn html_is_a_table_with_escaped_names() {
        let h = html(&sample());
        assert!(h.contains("<table id=\"interop-matrix\">"));
        assert!(h.contains("<th>odd|&lt;b&gt;</th>"), "{h}");
        assert!(!h.contains("<b>"), "{h}");
        assert!(h.contains(
            "<td data-cell=\"works\"><span class=\"badge b-pass\">works</span> failing: server 0, client 0 · <a href=\"ref--clean/report.html\">report</a></td>"
        ), "{h}");
        assert!(h.contains("b-warn\">works with deviations</span>"), "{h}");
        assert!(
            h.contains("b-fail\">fails</span> failing: server 2, client 1"),
            "{h}"
        );
        assert!(
            h.contains(
                "py with odd|&lt;b&gt; did not complete: request: exit status 1 &lt;stderr&gt;"
            ),
            "{h}"
        );
        assert_eq!(h.matches("<tr>").count(), 3);
    }
}
