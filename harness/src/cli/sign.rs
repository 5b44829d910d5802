//! `agentconform sign`: sign an envelope of a suite with a key file.

use super::common::{input_name, load_key, read_input, unknown_suite};
use super::{input, io, CliError, Usage};
use crate::suites;
use std::io::Write;
use std::path::PathBuf;

/// Prints the envelope of `file` signed with the key of `key`.
pub fn run(
    suite: &str,
    key: &PathBuf,
    file: &Option<PathBuf>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let signing = signing_of(suite)?;
    let k = load_key(key)?;
    let bytes = read_input(file)?;
    let tree = reference_impl::wire::json::parse(&bytes).map_err(|e| input(input_name(file), e))?;
    let signed = (signing.sign)(tree.to_serde(), &k).map_err(|e| input(input_name(file), e))?;
    out.write_all(&signed).map_err(io)?;
    writeln!(out).map_err(io)?;
    Ok(0)
}

/// How `suite` signs and verifies envelopes (`sign`, `verify`); a usage error for a
/// suite without signatures.
pub(super) fn signing_of(suite: &str) -> Result<crate::case::Signing, CliError> {
    let s = suites::by_id(suite).ok_or_else(|| unknown_suite(suite))?;
    s.signing.ok_or_else(|| {
        let signed: Vec<&str> = suites::all()
            .iter()
            .filter(|s| s.signing.is_some())
            .map(|s| s.id)
            .collect();
        Usage(format!(
            "signing and verification support --suite {} (got {suite:?})",
            signed.join(" and ")
        ))
    })
}
