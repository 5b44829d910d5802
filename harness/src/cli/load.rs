//! `agentconform load`: many concurrent agents (the suite's reference client)
//! against a target (without --target: the embedded reference agent).

use super::common::{runtime, unknown_suite};
use super::{io, CliError, Usage};
use crate::embedded;
use crate::load::Tally;
use crate::profile::Profile;
use crate::suites;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

// The flags of `load` (`Command::Load`).
#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    #[arg(long)]
    suite: String,
    #[arg(long)]
    target: Option<String>,
    /// Agents at once.
    #[arg(long, default_value_t = 256)]
    clients: usize,
    /// Requests each agent makes, one after another.
    #[arg(long, default_value_t = 10)]
    requests: usize,
    /// Deadline of each request.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Target profile (TOML): fixtures, as for `run`.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// agora-spaces: this many more members join and never read while the others
    /// publish and read; the result says how many the hub cut off, and when.
    #[arg(long, default_value_t = 0)]
    stalled: usize,
    /// agora-spaces: the bytes of each event's text (a text above the hub's
    /// delta threshold is streamed as deltas); 0: the marker alone.
    #[arg(long = "text-bytes", default_value_t = 0)]
    text_bytes: usize,
    /// agora-spaces: only the first this many members publish (default: all);
    /// every member reads.
    #[arg(long)]
    publishers: Option<usize>,
}

/// Drives the load and prints its tally; exit 1 when a request failed, was lost or
/// came back misrouted.
pub fn run(a: LoadArgs, out: &mut impl Write) -> Result<i32, CliError> {
    check_flags(&a)?;
    let prof = match &a.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::default(),
    };
    let rt = runtime()?;
    let (label, tally, embedded) = rt.block_on(drive(&a, prof))?;
    writeln!(
        out,
        "{}",
        crate::load::describe(&a.suite, plan_of(&a.suite)?, &label, a.clients, &tally)
    )
    .map_err(io)?;
    if embedded {
        if let Some(kib) = crate::load::peak_rss_kib() {
            writeln!(
                out,
                "  peak RSS of this process (the embedded reference and the load's agents): {:.1} MiB",
                kib as f64 / 1024.0
            )
            .map_err(io)?;
        }
    }
    Ok(if tally.failed() == 0 && tally.ok == tally.sent {
        0
    } else {
        1
    })
}

/// The suite and the bounds of the flags, in the order they are checked.
/// The load plan of `--suite`, or the usage error that says which suites load drives.
fn plan_of(suite: &str) -> Result<crate::load::Plan, CliError> {
    let parts = suites::parts(suite).ok_or_else(|| unknown_suite(suite))?;
    parts.load.ok_or_else(|| {
        Usage(format!(
            "load drives {}, not {suite}",
            suites::loaded().join(", ")
        ))
    })
}

fn check_flags(a: &LoadArgs) -> Result<(), CliError> {
    let suite = a.suite.as_str();
    let (clients, requests) = (a.clients, a.requests);
    let plan = plan_of(suite)?;
    if clients == 0 || requests == 0 || clients > 10_000 || requests > 100_000 {
        return Err(Usage(
            "--clients must be 1 to 10000 and --requests 1 to 100000".into(),
        ));
    }
    crate::load::fits(plan, clients, requests).map_err(Usage)?;
    let member_suites: Vec<&str> = suites::all_parts()
        .into_iter()
        .filter(|p| matches!(p.load, Some(crate::load::Plan::Members { .. })))
        .map(|p| p.suite.id)
        .collect();
    if (a.stalled > 0 || a.text_bytes > 0 || a.publishers.is_some())
        && !member_suites.contains(&suite)
    {
        return Err(Usage(format!(
            "--stalled, --text-bytes and --publishers are for --suite {}",
            member_suites.join(", ")
        )));
    }
    if a.publishers == Some(0) {
        return Err(Usage("--publishers must be at least 1".into()));
    }
    if a.stalled > 1000 || a.text_bytes > 1024 * 1024 {
        return Err(Usage(
            "--stalled must be at most 1000 and --text-bytes at most 1048576".into(),
        ));
    }
    if a.timeout_ms == 0 || a.timeout_ms > 600_000 {
        return Err(Usage("--timeout-ms must be 1 to 600000".into()));
    }
    Ok(())
}

/// Runs the load against `--target` or an embedded reference started (and stopped)
/// here, with progress on standard error: the target's label, the tally, and
/// whether the target was the embedded one.
async fn drive(a: &LoadArgs, prof: Profile) -> Result<(String, Tally, bool), CliError> {
    let suite = a.suite.as_str();
    let (url, server) = match &a.target {
        Some(u) => (u.clone(), None),
        None => {
            let (url, server) = start_embedded(suite).await?;
            (url, Some(server))
        }
    };
    let label = if server.is_some() {
        format!("the embedded reference ({url})")
    } else {
        url.clone()
    };
    let plan = plan_of(suite)?;
    let l = crate::load::Load {
        suite: suite.to_string(),
        plan,
        url,
        clients: a.clients,
        requests: a.requests,
        timeout: Duration::from_millis(a.timeout_ms),
        profile: prof,
        stalled: a.stalled,
        text_bytes: a.text_bytes,
        publishers: a.publishers,
    };
    let tag = suite.to_string();
    let tally = crate::load::run(l, move |t, total| {
        eprintln!(
            "load {tag}: {}/{total} {}, {} ok, {} failed",
            t.sent,
            crate::load::unit(plan),
            t.ok,
            t.failed()
        );
    })
    .await;
    let embedded = server.is_some();
    if let Some(s) = server {
        s.stop().await;
    }
    Ok((label, tally, embedded))
}

/// The suite's reference on loopback with default options, and its URL of the
/// binding the load speaks.
async fn start_embedded(suite: &str) -> Result<(String, embedded::Server), CliError> {
    let server = suites::start(suite, "127.0.0.1:0", &embedded::Options::default())
        .await
        .map_err(Usage)?;
    let want = crate::load::transport(plan_of(suite)?);
    let url = server
        .endpoints
        .0
        .iter()
        .find(|(t, _)| *t == want)
        .map(|(_, u)| u.clone())
        .ok_or_else(|| {
            CliError::Harness(format!("the {suite} reference has no {want} endpoint"))
        })?;
    Ok((url, server))
}
