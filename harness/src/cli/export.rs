//! `agentconform export`: a failing case of a report, or a fuzz crash file, as an
//! offline vector (its exchanges, verdict and requirement ids) that `replay` runs
//! without the target.

use super::common::read_json;
use super::{io, unwritable, CliError, Usage};
use crate::schemas::Schemas;
use std::io::Write;
use std::path::Path;

/// Exports case `case` of the report `source` (its folder or report.json), or the
/// crash file `source`, to `to` (standard output without it).
pub fn run(
    source: &Path,
    case: Option<&str>,
    to: Option<&Path>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let file = if source.is_dir() {
        source.join("report.json")
    } else {
        source.to_path_buf()
    };
    let v = read_json(&file)?;
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let vector = match (case, v.get("cases").is_some()) {
        (Some(id), true) => crate::export::from_report(&crate::suites::all(), &v, id, schemas),
        (None, true) => {
            return Err(Usage(format!(
                "{} is a report: name the case to export with --case",
                file.display()
            )))
        }
        (Some(_), false) => {
            return Err(Usage(format!(
                "--case applies to a report; {} is not one",
                file.display()
            )))
        }
        (None, false) => crate::export::from_crash(&crate::suites::all(), &v, schemas),
    }
    .map_err(|e| CliError::NotTested(format!("{}: {e}", file.display())))?;
    let text = serde_json::to_string_pretty(&vector)
        .map_err(|e| CliError::Harness(format!("cannot write the vector: {e}")))?;
    match to {
        Some(p) => {
            std::fs::write(p, format!("{text}\n")).map_err(|e| unwritable(p.display(), e))?;
            writeln!(
                out,
                "exported {} ({} exchanges, findings {}) to {}; run it offline with: agentconform replay {}",
                vector.suite,
                vector.exchanges.len(),
                vector.expect.findings.join(", "),
                p.display(),
                p.display()
            )
            .map_err(io)?;
        }
        None => writeln!(out, "{text}").map_err(io)?,
    }
    Ok(0)
}
