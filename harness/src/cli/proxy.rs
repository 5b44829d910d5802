//! `agentconform proxy`: a judging proxy between a real client and a real server
//! (`crate::proxy`).

use super::common::{peers_shared, runtime, tls_identity, unknown_suite, TlsArgs};
use super::{io, unwritable, CliError, Usage};
use crate::drive::Transport;
use crate::profile::Profile;
use crate::report::Report;
use crate::script::RunShared;
use crate::suites;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

// The proxy's arguments.
#[derive(clap::Args, Debug)]
pub struct ProxyArgs {
    #[arg(long)]
    suite: String,
    /// The real server's base URL (http://, https://, ws:// or wss://): requests and
    /// upgrades go to it with their own path appended, over HTTP and WebSocket alike.
    #[arg(long)]
    upstream: String,
    /// Where the proxy listens (loopback).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// Write report.json, junit.xml, report.html and summary.md here when it ends.
    #[arg(long)]
    report: Option<PathBuf>,
    /// End after this many seconds, or at SIGINT or SIGTERM before (default: at
    /// SIGINT or SIGTERM); either way the report is written.
    #[arg(long = "for-s")]
    for_s: Option<u64>,
    /// The target profile (its timing: the deadline and the size cap of each body).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Whom an https:// or wss:// upstream is trusted by.
    #[command(flatten)]
    trust: TlsArgs,
    /// Listen over TLS (https://, wss://) with a self-signed certificate made at
    /// start-up for 127.0.0.1, ::1, localhost and the --listen host.
    #[arg(long)]
    tls: bool,
    /// Write that certificate (PEM) here, for the client to trust.
    #[arg(long = "tls-cert-out", value_name = "FILE", requires = "tls")]
    tls_cert_out: Option<PathBuf>,
    /// Tamper mode: apply this reference fault's change in flight (the first
    /// message it applies to passes untouched, as the control); `list` lists them.
    #[arg(long)]
    fault: Option<String>,
}

/// Runs the proxy until `--for-s` or a signal; prints its URL first, then the
/// judgement; exit 1 when a failing finding was seen.
pub fn run(a: ProxyArgs, out: &mut impl Write) -> Result<i32, CliError> {
    let suite = suites::by_id(&a.suite).ok_or_else(|| unknown_suite(&a.suite))?;
    if a.fault.as_deref() == Some("list") {
        crate::proxy::tamper::list(suite, out).map_err(io)?;
        return Ok(0);
    }
    let tamper = match &a.fault {
        Some(name) => Some(crate::proxy::tamper::find(suite, name).map_err(Usage)?),
        None => None,
    };
    if !suite
        .transports
        .iter()
        .any(|t| matches!(t, Transport::Http | Transport::Ws))
    {
        return Err(Usage(format!(
            "proxy forwards HTTP and WebSocket; {} speaks neither",
            suite.id
        )));
    }
    if !["http://", "https://", "ws://", "wss://"]
        .iter()
        .any(|s| a.upstream.starts_with(s))
    {
        return Err(Usage(format!(
            "--upstream {:?} is not an http://, https://, ws:// or wss:// URL",
            a.upstream
        )));
    }
    if a.for_s == Some(0) {
        return Err(Usage("--for-s must be at least 1".into()));
    }
    let prof = match &a.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::default(),
    };
    let shared = Arc::new(peers_shared(prof, a.trust.client_tls(None)?)?);
    let rt = runtime()?;
    let started_at = reference_impl::wire::clock::format_timestamp(time::OffsetDateTime::now_utc());
    let (seen, extra) = rt.block_on(serve(&a, &shared, tamper, out))?;
    let mut output = crate::proxy::judge(suite, shared, &a.upstream, &seen);
    if let Some(t) = tamper {
        let case =
            crate::proxy::tamper::verdict(suite, t, &seen, crate::proxy::tamper::Observed::Proxy);
        crate::proxy::tamper::add(&mut output, case);
    }
    let seen = seen.len();
    let rep = Report::new(&a.upstream, vec![suite.id.to_string()], started_at, output);
    writeln!(
        out,
        "{seen} messages judged{}",
        if extra > 0 {
            format!(
                " ({extra} more forwarded, past the {} kept)",
                crate::proxy::MAX_KEPT
            )
        } else {
            String::new()
        }
    )
    .map_err(io)?;
    crate::report::print_terminal(&rep, out).map_err(io)?;
    if let Some(dir) = &a.report {
        rep.write(dir).map_err(|e| unwritable(dir.display(), e))?;
        writeln!(out, "report written to {}", dir.display()).map_err(io)?;
    }
    Ok(if rep.fails() { 1 } else { 0 })
}

/// Listens, prints the URL, forwards until the end, and hands back what it saw.
async fn serve(
    a: &ProxyArgs,
    shared: &RunShared,
    tamper: Option<&'static crate::tamper::Tamper>,
    out: &mut impl Write,
) -> Result<(Vec<crate::proxy::Passed>, u64), CliError> {
    let mut setup = crate::proxy::Setup::of(shared);
    setup.tamper = tamper.map(|t| (*t, true));
    if a.tls {
        setup.identity = Some(tls_identity(&a.listen, a.tls_cert_out.as_deref())?);
    }
    let proxy = crate::proxy::Proxy::start(&a.listen, &a.upstream, setup)
        .await
        .map_err(Usage)?;
    writeln!(out, "{}", proxy.url).map_err(io)?;
    if shared_speaks_ws(a) {
        writeln!(out, "{}", proxy.ws_url()).map_err(io)?;
    }
    out.flush().map_err(io)?;
    // A signal ends it with its report, with or without --for-s: `kill` and
    // every CI runner stop a process with SIGTERM.
    match a.for_s {
        Some(s) => {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(s)) => {}
                _ = until_signal() => {}
            }
        }
        None => until_signal().await,
    }
    Ok(proxy.stop().await)
}

/// The suite speaks WebSocket: the proxy's `ws://` URL is printed second.
fn shared_speaks_ws(a: &ProxyArgs) -> bool {
    suites::by_id(&a.suite).is_some_and(|s| s.transports.contains(&Transport::Ws))
}

/// SIGINT or SIGTERM.
async fn until_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
