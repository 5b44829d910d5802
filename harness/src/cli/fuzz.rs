//! `agentconform fuzz`: fuzz a live target (without --target: the embedded reference
//! agent), the server side or a client driven by --client.

use super::common::{
    embedded_identity, fuzz_profile, parse_target, runtime, set_client_driver, unknown_suite,
    TlsArgs,
};
use super::{io, CliError, Usage};
use crate::case::Role;
use crate::drive::Transport;
use crate::embedded;
use crate::fuzzing::campaign;
use crate::fuzzing::corpus::Resume;
use crate::fuzzing::engine::Summary;
use crate::profile::Profile;
use crate::schemas::Schemas;
use crate::suites;
use reference_impl::serve::TlsIdentity;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    #[arg(long)]
    suite: String,
    #[arg(long)]
    target: Option<String>,
    #[command(flatten)]
    tls_args: TlsArgs,
    /// Without --target: serve the embedded reference agent over TLS (https://,
    /// wss://) with a certificate made at start-up, and trust it.
    #[arg(long, conflicts_with_all = ["target", "ca_file"])]
    tls: bool,
    /// How long to run, e.g. 60s or 2m (default 60s unless --cases is given).
    #[arg(long)]
    duration: Option<String>,
    /// How many cases to run.
    #[arg(long)]
    cases: Option<u64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where crash files go (DIR/crashes/).
    #[arg(long, default_value = "fuzz-out")]
    out: PathBuf,
    /// Switch on a fault of the embedded agent (no --target only).
    #[arg(long = "fault")]
    faults: Vec<String>,
    #[arg(long = "timeout-ms", default_value_t = 5000)]
    timeout_ms: u64,
    /// Target profile (TOML): fixtures and the token, as for `run`.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Stop after this many findings.
    /// The most of each kind of thing the campaign makes on the target that stays
    /// there (registrations, ledger accounts); a case that would make more is
    /// skipped, and the summary says what was left behind. 0: no cap.
    #[arg(long = "max-created", default_value_t = 300)]
    max_created: u64,
    #[arg(long = "max-findings", default_value_t = 100)]
    max_findings: u64,
    /// Cases in flight at once (1 to 256); by default 8, or more for a suite whose
    /// cases wait on the target rather than on the CPU (agora-spaces, agentprotocol).
    #[arg(long)]
    workers: Option<u64>,
    /// Which side to fuzz: server (the default) or client (mutated replies served to
    /// a client driven by --client).
    #[arg(long, value_enum, default_value_t = crate::case::Role::Server)]
    role: crate::case::Role,
    /// With --role client: the client driver (see `run --client`); the reference
    /// driver without it.
    #[arg(long, conflicts_with_all = ["target", "tls", "faults"])]
    client: Option<String>,
    /// Leave out what is already known: a baseline (`baseline write`), a `run`
    /// report.json, or an earlier campaign's findings.json.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Go on with the campaign whose folder is DIR: its seed, from the case after
    /// its last, its signatures kept and not filed again, new crash files beside
    /// them.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["seed", "out"])]
    resume: Option<PathBuf>,
}

/// Runs the campaign; exit 1 when it found something (crash files under
/// `--out`/crashes).
pub fn run(mut a: FuzzArgs, out: &mut impl Write) -> Result<i32, CliError> {
    let fuzzed = check_flags(&a)?;
    let speaks = fuzzed.0.fuzzer.transports;
    let resume = resumed(&mut a)?;
    let duration = match (&a.duration, a.cases) {
        (Some(d), _) => Some(parse_duration(d)?),
        (None, Some(_)) => None,
        (None, None) => Some(std::time::Duration::from_secs(60)),
    };
    check_timeout(a.timeout_ms)?;
    let (mut prof, profile_file) =
        fuzz_profile(a.profile.as_ref(), a.target.is_none(), a.timeout_ms)?;
    let transport = target_binding(&a, speaks)?;
    if a.role == Role::Client {
        set_client_driver(&mut prof, a.client.as_ref())?;
    }
    let mut known = match &a.baseline {
        Some(p) => crate::fuzzing::corpus::Known::load(p).map_err(Usage)?,
        None => Default::default(),
    };
    if let Some(r) = &resume {
        known.extend(r.known(&a.out));
    }
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let identity = embedded_identity(a.tls)?;
    let client_tls = a.tls_args.client_tls(identity.as_ref())?;
    let http = client_tls.http_client().map_err(Usage)?;
    let rt = runtime()?;
    let (label, summary) = rt.block_on(async {
        let (url, transport, server) = start_target(&a, speaks, transport, &prof, identity).await?;
        let connection = campaign::Connection {
            url: url.clone(),
            transport,
            profile: prof,
            profile_file,
            schemas,
            http,
            tls: client_tls,
            keys: None,
            embedded: server.as_ref().map(|_| a.faults.clone()),
        };
        let progress = |p: &crate::fuzzing::engine::Progress| {
            let secs = p.elapsed.as_secs_f64().max(1e-9);
            eprintln!(
                "… {} cases in {:.0} s ({:.0} cases/s), {} signatures",
                p.cases,
                secs,
                p.cases as f64 / secs,
                p.signatures
            );
        };
        let summary = campaign::campaign_with(
            campaign_of(&a, fuzzed, duration, connection, (known, resume)),
            Some(&progress),
        )
        .await
        .map_err(CliError::from);
        if let Some(s) = server {
            s.stop().await;
        }
        Ok::<_, CliError>((url, summary?))
    })?;
    print_summary(&a, &label, summary, out)
}

/// The flags that do not go together, in the order they are checked; the suite's
/// parts and the live fuzzer of the side fuzzed.
fn check_flags(a: &FuzzArgs) -> Result<Fuzzed, CliError> {
    let Some(parts) = crate::suites::parts(&a.suite) else {
        return Err(unknown_suite(&a.suite));
    };
    if a.client.is_some() && a.role != Role::Client {
        return Err(Usage("--client needs --role client".into()));
    }
    if a.role == Role::Client && a.target.is_some() {
        return Err(Usage(
            "--role client fuzzes a client driven by --client; it takes no --target".into(),
        ));
    }
    let Some(spec) = parts.fuzzer_of(a.role) else {
        return Err(Usage(format!("suite {} has no client fuzzer yet", a.suite)));
    };
    if a.target.is_some() && !a.faults.is_empty() {
        return Err(Usage(
            "--fault applies to the embedded agent; it cannot be combined with --target".into(),
        ));
    }
    if a.workers.is_some_and(|w| w == 0 || w > 256) {
        return Err(Usage("--workers must be 1 to 256".into()));
    }
    if a.max_findings == 0 {
        return Err(Usage("--max-findings must be at least 1".into()));
    }
    Ok((parts, spec))
}

/// The binding of `--target`, which the suite's fuzzer must speak.
fn target_binding(a: &FuzzArgs, speaks: &[Transport]) -> Result<Option<Transport>, CliError> {
    let transport = match &a.target {
        Some(u) => Some(parse_target(u)?),
        None => None,
    };
    if let Some(t) = transport {
        if !speaks.contains(&t) {
            return Err(Usage(format!(
                "--target {:?}: {} fuzzing speaks {}",
                a.target.as_deref().unwrap_or_default(),
                a.suite,
                speaks
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    Ok(transport)
}

/// What the campaign runs against: the client driver (role client), `--target`, or
/// the embedded reference agent started here on the fuzzer's first binding (the
/// server, to stop afterwards).
async fn start_target(
    a: &FuzzArgs,
    speaks: &[Transport],
    transport: Option<Transport>,
    prof: &Profile,
    identity: Option<TlsIdentity>,
) -> Result<(String, Transport, Option<embedded::Server>), CliError> {
    Ok(match (&a.target, transport) {
        _ if a.role == Role::Client => (
            format!(
                "client driver {}",
                prof.client.command.clone().unwrap_or_default()
            ),
            Transport::Http,
            None,
        ),
        (Some(u), Some(t)) => (u.clone(), t, None),
        _ => {
            let opts = embedded::Options {
                faults: a.faults.clone(),
                token: prof.target.token.clone(),
                heartbeat_timeout_s: Some(prof.timing.heartbeat_timeout_s),
                tls: identity,
                ..embedded::Options::default()
            };
            let s = suites::start(&a.suite, "127.0.0.1:0", &opts)
                .await
                .map_err(Usage)?;
            let want = speaks[0];
            let url = s
                .endpoints
                .0
                .iter()
                .find(|(t, _)| *t == want)
                .map(|(_, u)| u.clone())
                .unwrap_or_default();
            (url, want, Some(s))
        }
    })
}

/// A suite's parts and the live fuzzer of the side a campaign fuzzes.
type Fuzzed = (
    &'static crate::suites::Parts,
    &'static crate::fuzzing::spec::Spec,
);

/// The campaign the flags describe, over `connection`.
fn campaign_of(
    a: &FuzzArgs,
    (parts, spec): Fuzzed,
    duration: Option<Duration>,
    connection: campaign::Connection,
    (known, resume): (crate::fuzzing::corpus::Known, Option<Resume>),
) -> campaign::Campaign {
    let (first, previous) = resume.map_or((0, Vec::new()), |r| (r.next, r.signatures));
    campaign::Campaign {
        suite: parts.suite,
        spec,
        role: a.role,
        seed: a.seed,
        bounds: crate::fuzzing::engine::Bounds {
            cases: a.cases,
            duration,
            max_findings: a.max_findings,
            first,
        },
        out: a.out.clone(),
        workers: a.workers,
        connection,
        known,
        previous,
        max_created: (a.max_created > 0).then_some(a.max_created),
    }
}

/// `--resume DIR`: the earlier campaign, whose seed and folder this one takes.
fn resumed(a: &mut FuzzArgs) -> Result<Option<Resume>, CliError> {
    let Some(dir) = a.resume.clone() else {
        return Ok(None);
    };
    let r = Resume::read(&dir).map_err(Usage)?;
    if r.suite != a.suite {
        return Err(Usage(format!(
            "--resume {}: that campaign fuzzed {}, not {}",
            dir.display(),
            r.suite,
            a.suite
        )));
    }
    a.seed = r.seed;
    a.out = dir;
    Ok(Some(r))
}

/// The summary's line on what the campaign made on the target that stays there.
fn print_left(
    summary: &crate::fuzzing::engine::Summary,
    out: &mut impl Write,
) -> Result<(), CliError> {
    if summary.left_behind.is_empty() {
        return Ok(());
    }
    let left: Vec<String> = summary
        .left_behind
        .iter()
        .map(|(kind, n)| match summary.made.get(kind) {
            Some(m) if m > n => format!("{n} {kind} (of {m} made; the others expired)"),
            _ => format!("{n} {kind}"),
        })
        .collect();
    let cap = summary.cap_per_kind.map_or("no cap".to_string(), |c| {
        format!("at most {c} of each, --max-created")
    });
    writeln!(out, "left on the target: {} ({cap})", left.join(", ")).map_err(io)
}

/// The campaign's one-line summary, its signatures (each with its count and crash
/// file), its first skip; exit 1 with findings, a not-tested error when every case
/// was skipped.
fn print_summary(
    a: &FuzzArgs,
    label: &str,
    summary: Summary,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let rate = summary.cases as f64 / summary.elapsed.as_secs_f64().max(1e-9);
    writeln!(
        out,
        "fuzzed {} at {label}: {} cases in {:.1} s ({rate:.0} cases/s), seed {}, {} findings, {} skipped",
        a.suite,
        summary.cases,
        summary.elapsed.as_secs_f64(),
        a.seed,
        summary.findings,
        summary.skipped,
    )
    .map_err(io)?;
    if summary.known > 0 {
        writeln!(
            out,
            "{} finding cases left out: their signatures are already known (the baseline, or the campaign resumed)",
            summary.known
        )
        .map_err(io)?;
    }
    if summary.busy > 0 {
        writeln!(
            out,
            "{} cases skipped: the target answered HTTP 503 or 429 (busy or limiting the rate); each such answer paused its worker {} ms",
            summary.busy,
            crate::fuzzing::engine::BUSY_PAUSE.as_millis()
        )
        .map_err(io)?;
    }
    if let (n @ 1.., Some(note)) = &summary.setup {
        writeln!(
            out,
            "{n} cases skipped for a setting the run lacks (no finding of the target's): {note}"
        )
        .map_err(io)?;
    }
    if let Some(why) = summary
        .skip_reason
        .as_ref()
        .filter(|w| **w != summary.setup.1.as_deref().unwrap_or_default())
    {
        writeln!(out, "first skip: {why}").map_err(io)?;
    }
    for e in &summary.signatures {
        print_signature(e, out)?;
    }
    writeln!(out, "the campaign ended: {}", summary.ended).map_err(io)?;
    print_left(&summary, out)?;
    if summary.findings > 0 {
        writeln!(
            out,
            "crash files in {} (one per signature), listed in {}",
            a.out.join("crashes").display(),
            a.out.join("findings.json").display()
        )
        .map_err(io)?;
        return Ok(1);
    }
    if summary.cases > 0 && summary.skipped == summary.cases {
        return Err(CliError::NotTested(format!(
            "every case was skipped, so nothing was fuzzed: {}",
            summary.skip_reason.unwrap_or_default()
        )));
    }
    Ok(0)
}

/// One signature: its count, what the target did, and its smallest input.
fn print_signature(
    e: &crate::fuzzing::corpus::Filed,
    out: &mut impl Write,
) -> Result<(), CliError> {
    use crate::fuzzing::corpus::{shown, stem};
    let cases = if e.count == 1 { "case" } else { "cases" };
    writeln!(
        out,
        "  [{}] {} ({} {cases}, the first after {:.1} s)",
        stem(e),
        e.id,
        e.count,
        e.found_after.as_secs_f64()
    )
    .map_err(io)?;
    writeln!(out, "      {}", crate::script::clip_entry(&e.first.detail)).map_err(io)?;
    // The target's words, where the detail does not quote them already.
    if let Some(r) = &e.reply {
        let said: String = r.body.chars().take(160).collect();
        let head: String = said.trim().chars().take(40).collect();
        if !head.is_empty() && !e.first.detail.contains(&head) {
            writeln!(out, "      the target said: {}", said.replace('\n', " ")).map_err(io)?;
        }
    }
    let input = crate::script::clip_entry(&shown(&e.smallest.bytes));
    match &e.shrunk {
        Some(s) if s.kept > 0 => writeln!(
            out,
            "      smallest input ({} bytes, shrunk from {}): {input}",
            e.smallest.bytes.len(),
            e.first_input.bytes.len()
        ),
        Some(s) => match &s.not_shrunk {
            Some(why) => writeln!(out, "      input (not shrunk: {why}): {input}"),
            None => writeln!(out, "      input (already the smallest): {input}"),
        },
        None => writeln!(out, "      input: {input}"),
    }
    .map_err(io)
}

/// `--duration`: a number of seconds, minutes (m) or hours (h), at most a week.
fn parse_duration(s: &str) -> Result<std::time::Duration, CliError> {
    let bad = || {
        Usage(format!(
            "--duration {s:?}: expected a number with s, m or h, e.g. 60s"
        ))
    };
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(bad()),
    };
    if secs == 0 || secs > 7 * 24 * 3600 {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs(secs))
}

/// `--timeout-ms`: 1 to 600000.
fn check_timeout(timeout_ms: u64) -> Result<(), CliError> {
    if timeout_ms == 0 || timeout_ms > 600_000 {
        return Err(Usage("--timeout-ms must be between 1 and 600000".into()));
    }
    Ok(())
}
