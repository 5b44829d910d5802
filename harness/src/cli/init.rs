//! `agentconform init`: probes a target with safe, valid requests and writes the
//! profile it found, each key with how it was found and each one it could not find
//! with why (`crate::init`).

use super::common::{parse_target, peers_shared, runtime, unknown_suite, TlsArgs};
use super::{io, unwritable, CliError, Usage};
use crate::profile::Profile;
use crate::suites;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

// The flags of `init` (`Command::Init`).
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    #[arg(long)]
    suite: String,
    /// The target's URL, as `run --target` takes it.
    #[arg(long)]
    target: String,
    /// Write the profile here (default: standard output). A profile already there is
    /// compared with the new one: what changed is printed, then it is replaced.
    #[arg(long)]
    out: Option<PathBuf>,
    /// A profile to start from (its timing, token, ledger URL): what it sets is
    /// probed with, and written back where found.
    #[arg(long)]
    profile: Option<PathBuf>,
    #[command(flatten)]
    trust: TlsArgs,
}

/// Probes the target and writes its profile; exit 0 when written, 2 when the
/// target cannot be reached.
pub fn run(a: InitArgs, out: &mut impl Write) -> Result<i32, CliError> {
    let parts = suites::parts(&a.suite).ok_or_else(|| unknown_suite(&a.suite))?;
    let suite = parts.suite;
    let Some(discover) = parts.discover else {
        return Err(Usage(format!("{} has nothing init can discover", suite.id)));
    };
    let transport = parse_target(&a.target)?;
    let prof = match &a.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::default(),
    };
    let shared = Arc::new(peers_shared(prof, a.trust.client_tls(None)?)?);
    let rt = runtime()?;
    let entries = rt
        .block_on(crate::init::probe(
            suite, discover, shared, transport, &a.target,
        ))
        .map_err(CliError::NotTested)?;
    let text = crate::init::render(suite.id, &a.target, &entries);
    // What it writes is a profile `run` takes.
    Profile::from_toml(&text, "the profile init wrote")
        .map_err(|e| CliError::Harness(format!("init wrote a profile run would refuse: {e}")))?;
    let found = entries
        .iter()
        .filter(|e| matches!(e, crate::init::Entry::Found { .. }))
        .count();
    let summary = format!(
        "{found} profile key(s) found, {} not found (each says why)",
        entries.len() - found
    );
    match &a.out {
        None => {
            write!(out, "{text}").map_err(io)?;
            eprintln!("{summary}");
        }
        Some(path) => {
            if let Ok(old) = std::fs::read_to_string(path) {
                match crate::init::changes(&old, &text) {
                    Ok(c) if c.is_empty() => {
                        writeln!(out, "unchanged since the profile in {}", path.display())
                            .map_err(io)?
                    }
                    Ok(c) => {
                        writeln!(out, "changed since the profile in {}:", path.display())
                            .map_err(io)?;
                        for line in c {
                            writeln!(out, "  {line}").map_err(io)?;
                        }
                    }
                    Err(e) => writeln!(
                        out,
                        "the profile in {} is no TOML ({e}); it is replaced",
                        path.display()
                    )
                    .map_err(io)?,
                }
            }
            std::fs::write(path, &text).map_err(|e| unwritable(path.display(), e))?;
            writeln!(out, "{summary}; written to {}", path.display()).map_err(io)?;
        }
    }
    Ok(0)
}
