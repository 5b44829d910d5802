//! `agentconform verify`: check an envelope's signature.

use super::common::read_input;
use super::sign::signing_of;
use super::{io, CliError};
use std::io::Write;
use std::path::PathBuf;

/// Exit 0 when the signature of the envelope of `file` is valid, 1 otherwise (the
/// suite's verifier says why on `out`).
pub fn run(suite: &str, file: &Option<PathBuf>, out: &mut impl Write) -> Result<i32, CliError> {
    let signing = signing_of(suite)?;
    let bytes = read_input(file)?;
    let valid = (signing.verify)(&bytes, out).map_err(io)?;
    Ok(if valid { 0 } else { 1 })
}
