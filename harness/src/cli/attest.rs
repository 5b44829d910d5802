//! `agentconform attest`: sign a report (attestation.json binds the report, its
//! transcripts, the tool, the inventory revision, the target and its key ids), and
//! `attest verify`: check one.

use super::common::load_key;
use super::{input, io, unwritable, CliError, Usage};
use clap::Subcommand;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Subcommand, Debug)]
pub enum AttestCommand {
    /// Check an attestation against its report; exit 0 valid, 1 invalid (says why).
    Verify {
        #[arg(long)]
        attestation: PathBuf,
        #[arg(long)]
        report: PathBuf,
    },
}

/// `attest verify` when given, else signs `report` with the key of `key`.
pub fn run(
    verify: Option<AttestCommand>,
    report: Option<PathBuf>,
    key: Option<PathBuf>,
    to: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    match verify {
        Some(AttestCommand::Verify {
            attestation,
            report,
        }) => check(&attestation, &report, out),
        None => sign(report, key, to, out),
    }
}

/// `attest verify`: exit 0 valid, 1 invalid (says why).
fn check(attestation: &Path, report: &Path, out: &mut impl Write) -> Result<i32, CliError> {
    let a: serde_json::Value = serde_json::from_slice(
        &std::fs::read(attestation).map_err(|e| input(attestation.display(), e))?,
    )
    .map_err(|e| input(attestation.display(), format!("not JSON: {e}")))?;
    let bytes = std::fs::read(report).map_err(|e| input(report.display(), e))?;
    match crate::report::attest::verify(&a, &bytes) {
        Ok(who) => {
            writeln!(out, "valid: {} attested by {who}", report.display()).map_err(io)?;
            Ok(0)
        }
        Err(why) => {
            writeln!(out, "invalid: {why}").map_err(io)?;
            Ok(1)
        }
    }
}

/// `attest`: writes the attestation of `report` to `to` (default: attestation.json
/// beside the report).
fn sign(
    report: Option<PathBuf>,
    key: Option<PathBuf>,
    to: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let report = report.ok_or_else(|| Usage("attest needs --report FILE".into()))?;
    let key = key.ok_or_else(|| Usage("attest needs --key FILE".into()))?;
    let keypair = load_key(&key)?;
    let bytes = std::fs::read(&report).map_err(|e| input(report.display(), e))?;
    let a =
        crate::report::attest::attest(&bytes, &keypair).map_err(|e| input(report.display(), e))?;
    let to = to.unwrap_or_else(|| report.with_file_name("attestation.json"));
    let text = serde_json::to_string_pretty(&a).map_err(|e| unwritable("the attestation", e))?;
    std::fs::write(&to, text).map_err(|e| unwritable(to.display(), e))?;
    writeln!(
        out,
        "attestation written to {} (attester {})",
        to.display(),
        keypair.did()
    )
    .map_err(io)?;
    Ok(0)
}
