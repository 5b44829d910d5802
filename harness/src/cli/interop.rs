//! `agentconform interop`: a matrix of which clients work with which servers
//! (`crate::interop`), each pair judged through the proxy.

use super::common::{peers_shared, reference_driver, runtime, unknown_suite, TlsArgs};
use super::{io, unwritable, CliError, Usage};
use crate::drive::Transport;
use crate::interop::{Cell, Pair};
use crate::profile::Profile;
use crate::suites;
use std::io::Write;
use std::path::PathBuf;

// The matrix's arguments.
#[derive(clap::Args, Debug)]
pub struct InteropArgs {
    #[arg(long)]
    suite: String,
    /// A client: NAME=COMMAND, a client driver command as `run --role client
    /// --client` takes it, or NAME=reference for the embedded reference client
    /// (repeatable).
    #[arg(long = "client", required = true)]
    clients: Vec<String>,
    /// A server: NAME=URL, or NAME=reference for the embedded reference (repeatable).
    #[arg(long = "server", required = true)]
    servers: Vec<String>,
    /// Write the run's report (report.json with the matrix as its `interop` member,
    /// junit.xml, report.html, summary.md), matrix.md, matrix.json and one report
    /// folder per pair here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// The target profile (timing, fixtures, the client driver's deadlines).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Whom https:// and wss:// servers are trusted by.
    #[command(flatten)]
    trust: TlsArgs,
    /// Tamper mode: play every scenario twice, untouched (the control) and then with
    /// this reference fault's change applied in flight, and judge whether the other
    /// side notices (`proxy --fault list` lists them).
    #[arg(long)]
    fault: Option<String>,
}

/// Runs every client against every server and prints the matrix; exit 1 when a
/// pair does not simply work.
pub fn run(a: InteropArgs, out: &mut impl Write) -> Result<i32, CliError> {
    let suite = suites::by_id(&a.suite).ok_or_else(|| unknown_suite(&a.suite))?;
    let probe = Profile::default();
    if (suite.reference_client.plays)(&probe).is_empty() {
        return Err(Usage(format!(
            "{} has no scenario interop can play between a client and a server",
            suite.id
        )));
    }
    let tamper = match &a.fault {
        Some(name) => Some(crate::proxy::tamper::find(suite, name).map_err(Usage)?),
        None => None,
    };
    let clients = named(&a.clients, "--client", |c| match c {
        "reference" => reference_driver(),
        c => Ok(c.to_string()),
    })?;
    let mut servers = named(&a.servers, "--server", |s| Ok(s.to_string()))?;
    let prof = match &a.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::default(),
    };
    let shared = peers_shared(prof, a.trust.client_tls(None)?)?;
    let rt = runtime()?;
    let started = std::time::Instant::now();
    let started_at = reference_impl::wire::clock::format_timestamp(time::OffsetDateTime::now_utc());
    let mut pairs = rt.block_on(pairs_of(suite, &shared, &clients, &mut servers, tamper))?;
    // Read before the reports take the pairs' outputs.
    let tampered = tamper_lines(&pairs);
    if let Some(dir) = &a.report {
        crate::interop::write_reports(
            dir,
            suite,
            &mut pairs,
            &servers,
            &started_at,
            started.elapsed(),
        )
        .map_err(|e| unwritable(dir.display(), e))?;
    }
    let md = crate::interop::markdown(suite.id, &pairs);
    writeln!(out, "{md}").map_err(io)?;
    for p in pairs.iter().filter(|p| !p.incomplete.is_empty()) {
        writeln!(
            out,
            "{} with {}: {}",
            p.client,
            p.server,
            p.incomplete.join("; ")
        )
        .map_err(io)?;
    }
    for line in tampered {
        writeln!(out, "{line}").map_err(io)?;
    }
    if let Some(dir) = &a.report {
        writeln!(out, "reports written to {}", dir.display()).map_err(io)?;
    }
    Ok(if pairs.iter().all(|p| p.cell == Cell::Works) {
        0
    } else {
        1
    })
}

/// Each pair's tamper verdict in a line: its outcome, and the finding's words or
/// the case's message (why it passed or was skipped).
fn tamper_lines(pairs: &[Pair]) -> Vec<String> {
    pairs
        .iter()
        .filter_map(|p| {
            let case = p
                .output
                .as_ref()?
                .results
                .iter()
                .find(|c| c.id.contains(":tamper:"))?;
            let said = case
                .met
                .first()
                .map_or(case.message.as_str(), |m| m.finding.summary.as_str());
            Some(format!(
                "{} with {}: {} {}: {}",
                p.client,
                p.server,
                case.id,
                case.outcome,
                crate::finding::clipped(&said.replace('\n', " "), 300)
            ))
        })
        .collect()
}

/// Starts the embedded reference for each server named `reference` (its URL set),
/// runs the matrix, and stops them.
async fn pairs_of(
    suite: &'static crate::case::Suite,
    shared: &crate::script::RunShared,
    clients: &[(String, String)],
    servers: &mut [(String, String)],
    tamper: Option<&'static crate::tamper::Tamper>,
) -> Result<Vec<Pair>, CliError> {
    let mut embedded = Vec::new();
    for (_, url) in servers.iter_mut().filter(|(_, u)| u == "reference") {
        let options = crate::embedded::Options::default();
        let server = suites::start(suite.id, "127.0.0.1:0", &options)
            .await
            .map_err(CliError::Harness)?;
        *url = endpoint(&server).ok_or_else(|| {
            CliError::Harness(format!(
                "the {} reference has no HTTP or WebSocket endpoint",
                suite.id
            ))
        })?;
        embedded.push(server);
    }
    let pairs = crate::interop::matrix(suite, shared, clients, servers, tamper)
        .await
        .map_err(CliError::Harness);
    for s in embedded {
        s.stop().await;
    }
    pairs
}

/// NAME=VALUE arguments, each VALUE mapped by `value`.
fn named(
    args: &[String],
    flag: &str,
    value: impl Fn(&str) -> Result<String, CliError>,
) -> Result<Vec<(String, String)>, CliError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for a in args {
        let Some((name, v)) = a
            .split_once('=')
            .filter(|(n, v)| !n.is_empty() && !v.is_empty())
        else {
            return Err(Usage(format!("{flag} {a:?} is not NAME=VALUE")));
        };
        if out.iter().any(|(n, _)| n == name) {
            return Err(Usage(format!("{flag} names {name:?} twice")));
        }
        out.push((name.to_string(), value(v)?));
    }
    Ok(out)
}

/// The reference's HTTP endpoint, else its WebSocket one (the binding the proxy
/// is reached on).
fn endpoint(server: &crate::embedded::Server) -> Option<String> {
    let of = |want: Transport| {
        server
            .endpoints
            .0
            .iter()
            .find(|(t, _)| *t == want)
            .map(|(_, u)| u.clone())
    };
    of(Transport::Http).or_else(|| of(Transport::Ws))
}
