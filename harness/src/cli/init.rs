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
    /// merged into: every key init did not find is kept as written, a key it found
    /// with another value is replaced under a comment that keeps the old one, and
    /// what changed is printed.
    #[arg(long)]
    out: Option<PathBuf>,
    /// With --out: rewrite the profile from what init found alone, dropping what it
    /// did not find (printed as gone).
    #[arg(long)]
    force: bool,
    /// A profile to start from (its timing, token, ledger URL): what it sets is
    /// probed with, and written back where found. Default: the profile at --out, if
    /// there is one.
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
    // The profile to probe with: --profile, else the one already at --out (its
    // token, ledger URL and timing), else the defaults.
    let prof = match (&a.profile, &a.out) {
        (Some(p), _) => Profile::load(p)?,
        (None, Some(o)) if o.exists() => Profile::load(o)?,
        _ => Profile::default(),
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
            let text = match std::fs::read_to_string(path) {
                Ok(old) if !a.force => merged(&old, &entries, path, out)?,
                Ok(old) => {
                    replaced(&old, &text, path, out)?;
                    text
                }
                Err(_) => text,
            };
            Profile::from_toml(&text, "the profile init wrote").map_err(|e| {
                CliError::Harness(format!("init wrote a profile run would refuse: {e}"))
            })?;
            std::fs::write(path, &text).map_err(|e| unwritable(path.display(), e))?;
            writeln!(out, "{summary}; written to {}", path.display()).map_err(io)?;
        }
    }
    Ok(0)
}

/// Merges what init found into the profile `old` at `path` (`crate::init::merge`)
/// and prints what changed; a profile that is no TOML is not touched.
fn merged(
    old: &str,
    entries: &[crate::init::Entry],
    path: &std::path::Path,
    out: &mut impl Write,
) -> Result<String, CliError> {
    let (text, said) = crate::init::merge(old, entries).map_err(|e| {
        Usage(format!(
            "the profile in {} is no TOML ({e}): mend it, or rewrite it with --force",
            path.display()
        ))
    })?;
    if said.is_empty() {
        writeln!(
            out,
            "nothing to change in {}: every key it sets is kept",
            path.display()
        )
        .map_err(io)?;
    } else {
        writeln!(
            out,
            "merged into {} (every other key kept as written):",
            path.display()
        )
        .map_err(io)?;
        for line in said {
            writeln!(out, "  {line}").map_err(io)?;
        }
    }
    Ok(text)
}

/// Prints what a rewrite (--force) of the profile `old` at `path` changes.
fn replaced(
    old: &str,
    new: &str,
    path: &std::path::Path,
    out: &mut impl Write,
) -> Result<(), CliError> {
    match crate::init::changes(old, new) {
        Ok(c) if c.is_empty() => {
            writeln!(out, "unchanged since the profile in {}", path.display()).map_err(io)
        }
        Ok(c) => {
            writeln!(
                out,
                "rewritten (--force); changed since the profile in {}:",
                path.display()
            )
            .map_err(io)?;
            for line in c {
                writeln!(out, "  {line}").map_err(io)?;
            }
            Ok(())
        }
        Err(e) => writeln!(
            out,
            "the profile in {} is no TOML ({e}); it is replaced (--force)",
            path.display()
        )
        .map_err(io),
    }
}
