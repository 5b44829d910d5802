//! `agentconform keygen`: a new Ed25519 key.

use super::{io, CliError};
use reference_impl::wire::keys::{self, Keypair};
use std::io::Write;

/// Prints the seed (base64url) on the first line, then its did:key.
pub fn run(out: &mut impl Write) -> Result<i32, CliError> {
    let k = Keypair::generate();
    writeln!(out, "{}\n{}", keys::b64url(&k.seed()), k.did()).map_err(io)?;
    Ok(0)
}
