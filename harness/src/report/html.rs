//! report.html: one self-contained page (no network, no external script or font).
//!
//! The report and the text of every requirement it cites are embedded as JSON; a
//! small script renders the deviations first, then the cases by suite and by
//! requirement, with filters by outcome and level. Transcripts are rendered only when
//! a case is opened, so that a page with thousands of cases stays quick. An interop
//! run's matrix (`Report::interop`) is written into the page as a plain table, above
//! the deviations, so that it reads without the script too.

use super::Report;
use crate::inventory;
use serde_json::{json, Map, Value};
use std::io::Write;

const TEMPLATE: &str = include_str!("report.html");
/// Where the interop matrix goes; the line is dropped when there is none, so that
/// the page of any other report is the template as it was before.
const MATRIX_SLOT: &str = "<!--INTEROP-MATRIX-->\n";

/// The inventory entries (requirements and ambiguities) a report cites.
fn cited_requirements(report: &Report) -> Value {
    let inv = inventory::get();
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
    let mut out = Map::new();
    for id in ids {
        if let Some(r) = inv.requirements.get(id) {
            out.insert(
                id.to_string(),
                json!({"text": r.text, "where": r.place, "level": r.level}),
            );
        } else if let Some(a) = inv.ambiguities.get(id) {
            out.insert(
                id.to_string(),
                json!({"text": a.treatment, "where": "ambiguity", "level": a.category}),
            );
        }
    }
    Value::Object(out)
}

/// JSON that can sit inside a `<script>` element: `<`, `>` and `&` as `\u` escapes,
/// so that no text of the target can close the element or open a comment.
#[cfg(test)]
fn script_safe(json: &str) -> String {
    let mut out = Vec::new();
    let mut w = ScriptSafe::new(&mut out);
    let _ = w.write_all(json.as_bytes()).and_then(|()| w.finish());
    String::from_utf8(out).unwrap_or_default()
}

/// A writer that passes JSON on script-safe (see [`script_safe`]) as it comes, so
/// that the page is written without a copy of the report in memory: a report holds
/// up to 4 MiB of transcripts, and each copy of it counted against a run's memory.
struct ScriptSafe<'a, W: Write> {
    inner: &'a mut W,
    /// The first bytes of a three-byte character that a write cut (U+2028 and
    /// U+2029 are told apart by their third).
    pending: Vec<u8>,
}

impl<'a, W: Write> ScriptSafe<'a, W> {
    fn new(inner: &'a mut W) -> Self {
        ScriptSafe {
            inner,
            pending: Vec::new(),
        }
    }

    /// Passes on what a last write left pending.
    fn finish(&mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.pending);
        self.inner.write_all(&rest)
    }
}

impl<W: Write> Write for ScriptSafe<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(buf);
        let mut out = Vec::with_capacity(bytes.len() + 16);
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'<' => out.extend_from_slice(b"\\u003c"),
                b'>' => out.extend_from_slice(b"\\u003e"),
                b'&' => out.extend_from_slice(b"\\u0026"),
                0xE2 if bytes.len() - i < 3 => {
                    self.pending = bytes[i..].to_vec();
                    break;
                }
                0xE2 if bytes[i + 1] == 0x80 && matches!(bytes[i + 2], 0xA8 | 0xA9) => {
                    let esc: &[u8] = if bytes[i + 2] == 0xA8 {
                        b"\\u2028"
                    } else {
                        b"\\u2029"
                    };
                    out.extend_from_slice(esc);
                    i += 3;
                    continue;
                }
                b => out.push(b),
            }
            i += 1;
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The page for `report`.
pub fn render(report: &Report) -> Result<String, String> {
    let mut out = Vec::new();
    render_to(report, &mut out).map_err(|e| format!("cannot render the report: {e}"))?;
    String::from_utf8(out).map_err(|e| format!("cannot render the report: {e}"))
}

/// Writes the page for `report` to `out` as it goes: the report and the cited
/// requirements are serialised straight into the page, never held as a copy.
pub fn render_to(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let Some((head, rest)) = TEMPLATE.split_once("/*REPORT-DATA*/{}") else {
        return Err(std::io::Error::other("the page template has no data slot"));
    };
    let matrix = report.interop.as_ref().map(super::matrix::html);
    let matrix = matrix.as_deref().unwrap_or_default();
    // The template's one matrix slot, wherever it is.
    let (head, rest) = if head.contains(MATRIX_SLOT) {
        (head.replacen(MATRIX_SLOT, matrix, 1), rest.to_string())
    } else {
        (head.to_string(), rest.replacen(MATRIX_SLOT, matrix, 1))
    };
    out.write_all(head.as_bytes())?;
    let mut safe = ScriptSafe::new(out);
    safe.write_all(b"{\"report\":")?;
    serde_json::to_writer(&mut safe, report)?;
    safe.write_all(b",\"requirements\":")?;
    serde_json::to_writer(&mut safe, &cited_requirements(report))?;
    safe.write_all(b"}")?;
    safe.finish()?;
    out.write_all(rest.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_text_cannot_close_the_script() {
        let s = script_safe(r#"{"a":"</script><!-- & \u2028"}"#);
        assert!(!s.contains("</script>") && !s.contains("<!--") && !s.contains('&'));
        let back: Value = serde_json::from_str(&s).expect("still JSON");
        assert_eq!(back["a"], "</script><!-- & \u{2028}");
    }

    #[test]
    fn line_separators_cut_between_writes_are_escaped() {
        let text = "a\u{2028}b\u{2029}<";
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            let mut out = Vec::new();
            let mut w = ScriptSafe::new(&mut out);
            w.write_all(&bytes[..cut]).expect("write");
            w.write_all(&bytes[cut..]).expect("write");
            w.finish().expect("finish");
            assert_eq!(
                String::from_utf8(out).expect("utf-8"),
                "a\\u2028b\\u2029\\u003c"
            );
        }
    }

    #[test]
    fn template_has_its_data_slot() {
        assert!(TEMPLATE.contains("/*REPORT-DATA*/{}"));
        assert_eq!(TEMPLATE.matches(MATRIX_SLOT).count(), 1);
        assert!(!TEMPLATE.contains("http://") && !TEMPLATE.contains("https://"));
    }
}
