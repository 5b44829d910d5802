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
fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for ch in json.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The page for `report`.
pub fn render(report: &Report) -> Result<String, String> {
    let data = json!({
        "report": report,
        "requirements": cited_requirements(report),
    });
    let text =
        serde_json::to_string(&data).map_err(|e| format!("cannot serialize the report: {e}"))?;
    // The data first: script-safe JSON cannot hold the slot's `<`, so the slot
    // replaced next is the template's.
    let matrix = report.interop.as_ref().map(super::matrix::html);
    Ok(TEMPLATE
        .replacen("/*REPORT-DATA*/{}", &script_safe(&text), 1)
        .replacen(MATRIX_SLOT, matrix.as_deref().unwrap_or_default(), 1))
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
    fn template_has_its_data_slot() {
        assert!(TEMPLATE.contains("/*REPORT-DATA*/{}"));
        assert_eq!(TEMPLATE.matches(MATRIX_SLOT).count(), 1);
        assert!(!TEMPLATE.contains("http://") && !TEMPLATE.contains("https://"));
    }
}
