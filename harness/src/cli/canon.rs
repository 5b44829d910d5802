//! `agentconform canon`: the RFC 8785 canonical form of a JSON file (or stdin).

use super::common::{input_name, read_input};
use super::{input, io, CliError};
use reference_impl::wire::jcs;
use std::io::Write;
use std::path::PathBuf;

/// Prints the canonical form of `file`, then a newline.
pub fn run(file: &Option<PathBuf>, out: &mut impl Write) -> Result<i32, CliError> {
    let bytes = read_input(file)?;
    let c = jcs::canonicalize(&bytes).map_err(|e| input(input_name(file), e))?;
    out.write_all(&c).map_err(io)?;
    writeln!(out).map_err(io)?;
    Ok(0)
}
