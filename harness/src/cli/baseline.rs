//! `agentconform baseline`: baselines of expected failures.

use super::{input, io, unwritable, CliError, Usage};
use clap::Subcommand;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub enum BaselineCommand {
    /// Write a baseline that expects every failing finding of a report.
    Write {
        /// A report.json written by `run --report`.
        #[arg(long)]
        report: PathBuf,
        /// Where to write the baseline (TOML); standard output when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Runs the baseline subcommand.
pub fn run(command: BaselineCommand, out: &mut impl Write) -> Result<i32, CliError> {
    match command {
        BaselineCommand::Write { report, out: to } => write_baseline(&report, to.as_deref(), out),
    }
}

/// `baseline write`: the baseline of `report` to `to`, or to `out` without it.
fn write_baseline(report: &Path, to: Option<&Path>, out: &mut impl Write) -> Result<i32, CliError> {
    let text = std::fs::read_to_string(report).map_err(|e| input(report.display(), e))?;
    let rep: crate::report::ReadReport = serde_json::from_str(&text)
        .map_err(|e| input(report.display(), format!("not a report.json: {e}")))?;
    let b = crate::report::baseline::Baseline::from_findings(&rep.findings);
    let toml = b.to_toml().map_err(Usage)?;
    match to {
        Some(p) => {
            std::fs::write(p, toml).map_err(|e| unwritable(p.display(), e))?;
            writeln!(
                out,
                "baseline of {} expected failures written to {}",
                b.expected.len(),
                p.display()
            )
            .map_err(io)?;
        }
        None => write!(out, "{toml}").map_err(io)?,
    }
    Ok(0)
}
