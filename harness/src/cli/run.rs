//! `agentconform run`: run a suite against a target (without --target: the embedded
//! reference agents), or test a client driven by --client (`--role client`).

use super::common::{
    embedded_fixtures, embedded_identity, load_key, parse_target, runtime, set_client_driver,
    unknown_suite, TlsArgs,
};
use super::{io, unwritable, CliError, Usage};
use crate::case::{Outcome, Role, Suite};
use crate::drive::Transport;
use crate::embedded;
use crate::profile::Profile;
use crate::report::baseline::{Applied, Baseline, Expected};
use crate::report::{Format, Report};
use crate::runner::{self, Endpoints, RunOutput, Selection};
use crate::schemas::Schemas;
use crate::script::RunShared;
use crate::suites;
use reference_impl::serve::TlsIdentity;
use reference_impl::wire::keys::Keypair;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

// The flags of `run` (`Command::Run`).
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Suite id, or `all`.
    #[arg(long)]
    suite: String,
    /// Target URL (http://, https://, ws://, wss://).
    #[arg(long)]
    target: Option<String>,
    #[command(flatten)]
    tls_args: TlsArgs,
    /// Without --target: serve the embedded reference agents over TLS (https://,
    /// wss://) with a certificate made at start-up, and trust it.
    #[arg(long, conflicts_with_all = ["target", "ca_file"])]
    tls: bool,
    /// Target profile (TOML).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Only cases whose id (`suite/name`, or the name alone) matches one of these globs.
    #[arg(long = "cases")]
    cases: Vec<String>,
    /// Leave out cases whose id (`suite/name`, or the name alone) matches one of these globs.
    #[arg(long)]
    exclude: Vec<String>,
    /// Write report.json and junit.xml here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Deadline of each exchange (overrides the profile).
    #[arg(long = "timeout-ms")]
    timeout_ms: Option<u64>,
    /// Run the slow cases too.
    #[arg(long = "include-slow")]
    include_slow: bool,
    /// The harness's signing key (32-byte seed, base64url or hex); fresh by default.
    #[arg(long)]
    key: Option<PathBuf>,
    /// Expected failures (TOML or JSON): they do not fail the run; an entry that no
    /// longer fails does.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Terminal output: text (every case), short (cases that did not pass), json
    /// (report.json).
    #[arg(long, value_enum, default_value_t = crate::report::Format::Text)]
    format: crate::report::Format,
    /// Which side to test: server (the target answers; the default) or client
    /// (the harness is the counterparty of a client driven by --client).
    #[arg(long, value_enum, default_value_t = crate::case::Role::Server)]
    role: crate::case::Role,
    /// With --role client: the client driver, a shell command with {url},
    /// {scenario}, {case} and {suite}; the reference driver without it.
    #[arg(long, requires = "role", conflicts_with_all = ["target", "tls"])]
    client: Option<String>,
}

/// The embedded agents of `run` expire offers after 1 s and conversations after
/// 2 s, so that the expiry cases wait that long, not the references' defaults. A
/// conversation's expiry is in whole seconds, so 2 s leaves it at least one second
/// of life for the follow-up cases.
const EMBEDDED_OFFER_TTL_MS: u64 = 1000;
const EMBEDDED_CONVERSATION_TTL_S: u64 = 2;

/// The suites and the endpoints each runs against.
type Plan = Vec<(&'static Suite, Endpoints)>;

/// Runs the selected cases and reports them; exit 1 when a case failed or a
/// baseline entry no longer fails.
pub fn run(mut a: RunArgs, out: &mut impl Write) -> Result<i32, CliError> {
    if a.role == Role::Client && a.target.is_some() {
        return Err(Usage(
            "--role client tests a client driven by --client; it takes no --target".into(),
        ));
    }
    if a.client.is_some() && a.role != Role::Client {
        return Err(Usage("--client needs --role client".into()));
    }
    let baseline = match &a.baseline {
        Some(p) => Some((Baseline::load(p).map_err(Usage)?, p.display().to_string())),
        None => None,
    };
    let chosen = if a.suite == "all" {
        suites::all()
    } else {
        vec![suites::by_id(&a.suite).ok_or_else(|| unknown_suite(&a.suite))?]
    };
    let mut prof = run_profile(&a)?;
    let selection = Selection {
        role: a.role,
        include: std::mem::take(&mut a.cases),
        exclude: std::mem::take(&mut a.exclude),
        include_slow: a.include_slow,
    };
    let _ = selection.matcher().map_err(Usage)?;
    let rt = runtime()?;
    let assumptions = rt.block_on(discover_unset(&a, &chosen, &mut prof))?;
    let (shared, identity) = run_shared(&a, prof)?;
    let started_at = reference_impl::wire::clock::format_timestamp(time::OffsetDateTime::now_utc());
    let (target_label, output) = rt.block_on(execute(&a, &chosen, shared, identity, &selection))?;
    let suites_run: Vec<String> = chosen.iter().map(|s| s.id.to_string()).collect();
    let (output, error) = judge(output);
    let mut rep = Report::new(&target_label, suites_run, started_at, output);
    rep.assumptions = assumptions;
    rep.error = error.clone();
    rep.set_reproducers(&reproducer_args(&a));
    if let Some((b, file)) = &baseline {
        b.apply(&mut rep, file);
    }
    print_report(&a, &rep, error, out)
}

/// The profile of the run: the file's (else the defaults), `--timeout-ms`, the
/// client driver of a client run, and the embedded agents' fixtures without
/// `--target`.
fn run_profile(a: &RunArgs) -> Result<Profile, CliError> {
    let mut prof = match &a.profile {
        Some(p) => Profile::load(p)?,
        None => Profile::default(),
    };
    if let Some(t) = a.timeout_ms {
        if t == 0 || t > 600_000 {
            return Err(Usage("--timeout-ms must be between 1 and 600000".into()));
        }
        prof.timing.case_timeout_ms = t;
    }
    if a.role == Role::Client {
        set_client_driver(&mut prof, a.client.as_ref())?;
    }
    if a.target.is_none() {
        embedded_fixtures(&mut prof);
    }
    Ok(prof)
}

/// A server run against a target finds what its profile does not set, as `init`
/// would (each suite's discovery), and sets it: what it assumed, and how it knows.
/// A target that cannot be reached is left to the run to report.
async fn discover_unset(
    a: &RunArgs,
    chosen: &[&'static Suite],
    prof: &mut Profile,
) -> Result<Vec<crate::init::Assumption>, CliError> {
    let Some(url) = a.target.as_deref().filter(|_| a.role == Role::Server) else {
        return Ok(Vec::new());
    };
    let transport = parse_target(url)?;
    // One set of probes' state for every suite: a suite's discovery sets keys of
    // its own section only, which the others' probes do not read.
    let shared = Arc::new(super::common::peers_shared(
        prof.clone(),
        a.tls_args.client_tls(None)?,
    )?);
    let mut out = Vec::new();
    for s in chosen {
        let Some(discover) = crate::suites::parts(s.id).and_then(|p| p.discover) else {
            continue;
        };
        match crate::init::probe(s, discover, shared.clone(), transport, url).await {
            Ok(entries) => out.extend(crate::init::assume(s.id, prof, entries)),
            Err(_) => break,
        }
    }
    Ok(out)
}

/// What every case of the run shares (the key of `--key`, else a fresh one; the
/// schemas; whom it trusts and its HTTP client), and with `--tls` the embedded
/// servers' certificate.
fn run_shared(
    a: &RunArgs,
    prof: Profile,
) -> Result<(Arc<RunShared>, Option<TlsIdentity>), CliError> {
    let keypair = match &a.key {
        Some(p) => load_key(p)?,
        None => Keypair::generate(),
    };
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let identity = embedded_identity(a.tls)?;
    let client_tls = a.tls_args.client_tls(identity.as_ref())?;
    let http = client_tls.http_client().map_err(Usage)?;
    let shared = Arc::new(RunShared {
        transcript_budget: crate::script::TranscriptBudget::default(),
        adapted: Default::default(),
        client_ids: Default::default(),
        documents: Default::default(),
        embedded: a.target.is_none() && a.role == Role::Server,
        profile: prof,
        key: keypair,
        other_key: Keypair::generate(),
        schemas,
        http,
        tls: client_tls,
    });
    Ok((shared, identity))
}

/// Starts what the run needs, checks that the target answers, runs the cases and
/// stops the embedded agents: the target's label, and the cases' output or why the
/// target cannot be reached.
async fn execute(
    a: &RunArgs,
    chosen: &[&'static Suite],
    shared: Arc<RunShared>,
    identity: Option<TlsIdentity>,
    selection: &Selection,
) -> Result<(String, Result<RunOutput, String>), CliError> {
    let (label, plan, servers) = start_plan(a, chosen, &shared, identity.as_ref()).await?;
    // A target that cannot be reached at all is one error, not a failure per case.
    let output = match unreachable(a.role, &plan, &shared).await {
        Some(e) => Err(e),
        None => Ok(run_cases(shared, &plan, selection).await?),
    };
    for s in servers {
        s.stop().await;
    }
    Ok((label, output))
}

/// What each suite runs against, with the target's label: for the client cases the
/// suite's own binding (the counterparty makes its URL), else `--target`, else an
/// embedded agent per suite, started here (the servers, to stop afterwards).
async fn start_plan(
    a: &RunArgs,
    chosen: &[&'static Suite],
    shared: &RunShared,
    identity: Option<&TlsIdentity>,
) -> Result<(String, Plan, Vec<embedded::Server>), CliError> {
    let mut servers = Vec::new();
    let mut plan = Vec::new();
    let label = match &a.target {
        _ if a.role == Role::Client => {
            // The client cases run on the suite's own binding; the
            // counterparty makes its URL.
            for s in chosen {
                let binding = s.transports.first().copied().unwrap_or(Transport::Http);
                plan.push((*s, Endpoints(vec![(binding, String::new())])));
            }
            format!(
                "client driver: {}",
                shared.profile.client.command.clone().unwrap_or_default()
            )
        }
        Some(url) => {
            let transport = parse_target(url)?;
            for s in chosen {
                plan.push((*s, Endpoints(vec![(transport, url.clone())])));
            }
            url.clone()
        }
        None => {
            for s in chosen {
                let opts = embedded::Options {
                    token: shared.profile.target.token.clone(),
                    heartbeat_timeout_s: Some(shared.profile.timing.heartbeat_timeout_s),
                    offer_ttl_ms: Some(EMBEDDED_OFFER_TTL_MS),
                    conversation_ttl_s: Some(EMBEDDED_CONVERSATION_TTL_S),
                    tls: identity.cloned(),
                    ..embedded::Options::default()
                };
                let server = suites::start(s.id, "127.0.0.1:0", &opts)
                    .await
                    .map_err(Usage)?;
                plan.push((*s, server.endpoints.clone()));
                servers.push(server);
            }
            "embedded reference agent".to_string()
        }
    };
    Ok((label, plan, servers))
}

/// Why the first endpoint of the plan that does not answer cannot be reached (none
/// probed for a client run).
async fn unreachable(role: Role, plan: &Plan, shared: &RunShared) -> Option<String> {
    let wait = Duration::from_millis(shared.profile.timing.case_timeout_ms);
    let servers_to_probe = if role == Role::Client {
        &plan[..0]
    } else {
        &plan[..]
    };
    for (suite, endpoints) in servers_to_probe {
        for (transport, url) in &endpoints.0 {
            let url = suite.endpoint_url(*transport, url);
            if let Err(e) =
                crate::drive::preflight(*transport, &url, &shared.http, &shared.tls, wait).await
            {
                return Some(e);
            }
        }
    }
    None
}

/// Runs the selected cases of the plan.
async fn run_cases(
    shared: Arc<RunShared>,
    plan: &Plan,
    selection: &Selection,
) -> Result<RunOutput, CliError> {
    // A progress bar on a terminal (stderr), nothing elsewhere.
    let bar =
        indicatif::ProgressBar::with_draw_target(Some(0), indicatif::ProgressDrawTarget::stderr());
    if let Ok(st) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} cases {msg}") {
        bar.set_style(st);
    }
    let out = runner::run_with_progress(shared, plan, selection, Some(bar.clone()))
        .await
        .map_err(Usage)?;
    bar.finish_and_clear();
    Ok(out)
}

/// The cases' output, and why the run did not test the target: unreachable, no case
/// matches the selection, every selected case was skipped, or nothing was judged
/// for want of a setting.
fn judge(output: Result<RunOutput, String>) -> (RunOutput, Option<String>) {
    match output {
        Ok(o) => {
            let error = if o.results.is_empty() {
                Some("no case matches the selection".to_string())
            } else if o.results.iter().all(|r| r.outcome == Outcome::Skip) {
                Some(format!(
                    "no case could run: every selected case was skipped (the first: {}: {})",
                    o.results[0].id, o.results[0].message
                ))
            } else {
                nothing_judged(&o)
            };
            (o, error)
        }
        Err(e) => (RunOutput::empty(), Some(e)),
    }
}

/// The arguments that rerun a case as this run did (for the reproducers).
fn reproducer_args(a: &RunArgs) -> Vec<String> {
    let mut base: Vec<String> = Vec::new();
    if a.role == Role::Client {
        base.extend(["--role".into(), "client".into()]);
        if let Some(c) = &a.client {
            base.extend(["--client".into(), c.clone()]);
        }
    }
    if let Some(t) = &a.target {
        base.extend(["--target".into(), t.clone()]);
    }
    base.extend(a.tls_args.args());
    if a.tls {
        base.push("--tls".into());
    }
    if let Some(p) = &a.profile {
        base.extend(["--profile".into(), p.display().to_string()]);
    }
    if let Some(t) = a.timeout_ms {
        base.extend(["--timeout-ms".into(), t.to_string()]);
    }
    if let Some(k) = &a.key {
        base.extend(["--key".into(), k.display().to_string()]);
    }
    if a.include_slow {
        base.push("--include-slow".into());
    }
    base
}

/// The report on the terminal (unless the run did not test the target) and in
/// `--report`, then what the baseline expected; the exit code, or why the run did
/// not test the target.
fn print_report(
    a: &RunArgs,
    rep: &Report,
    error: Option<String>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    if error.is_none() {
        crate::report::print_terminal_as(rep, a.format, crate::report::Style::for_stdout(), out)
            .map_err(io)?;
    }
    if let Some(dir) = &a.report {
        rep.write(dir).map_err(|e| unwritable(dir.display(), e))?;
        if a.format == Format::Json {
            eprintln!("report written to {}", dir.display());
        } else {
            writeln!(out, "report written to {}", dir.display()).map_err(io)?;
        }
    }
    if let Some(e) = error {
        return Err(CliError::NotTested(e));
    }
    if let Some(b) = &rep.baseline {
        print_baseline(b, a.format, out)?;
    }
    Ok(if rep.fails() { 1 } else { 0 })
}

/// Why nothing of the target could be judged, when no case passed, warned or
/// failed, no finding fails, and a setting the run lacks blocked cases: a run that
/// judged nothing must not exit 0, nor 1 for a target it never judged. The keys to
/// set.
fn nothing_judged(o: &RunOutput) -> Option<String> {
    let judged = o
        .results
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Pass | Outcome::Warn | Outcome::Fail));
    let failing = o
        .findings
        .iter()
        .any(|f| f.finding.outcome == crate::finding::Verdict::Fail);
    if o.results.is_empty() || judged || failing {
        return None;
    }
    let mut keys: Vec<&str> = o
        .findings
        .iter()
        .filter_map(|f| f.finding.setting())
        .collect();
    keys.sort();
    keys.dedup();
    if keys.is_empty() {
        return None;
    }
    Some(format!(
        "nothing could be judged: every case was blocked or skipped, the blocked ones for want of a setting: needs profile key{} {} (agentconform explain <suite>/profile:<key> says what each is and how to find it)",
        if keys.len() == 1 { "" } else { "s" },
        keys.join(", ")
    ))
}

/// The entries the baseline expected, then the stale ones; on standard error when
/// standard output carries the JSON report.
fn print_baseline(b: &Applied, format: Format, out: &mut impl Write) -> Result<(), CliError> {
    let name = |e: &Expected| e.finding.clone().or(e.case.clone()).unwrap_or_default();
    let mut lines = Vec::new();
    for e in &b.expected {
        lines.push(format!(
            "expected by the baseline: {} ({})",
            name(e),
            e.reason
        ));
    }
    for e in &b.stale {
        lines.push(format!(
            "STALE baseline entry, it no longer fails: {} ({})",
            name(e),
            e.reason
        ));
    }
    for line in lines {
        if format == Format::Json {
            eprintln!("{line}");
        } else {
            writeln!(out, "{line}").map_err(io)?;
        }
    }
    Ok(())
}
