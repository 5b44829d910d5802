//! `agentconform replay`: a crash file written by `fuzz` against a target, or an
//! exported vector offline; exit 1 when the finding reproduces.

use super::common::{fuzz_profile, parse_target, read_json, runtime, TlsArgs};
use super::{input, io, CliError, Usage};
use crate::drive::Transport;
use crate::fuzzing::campaign;
use crate::fuzzing::verdict::Outcome;
use crate::profile::Profile;
use crate::schemas::Schemas;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Replays `file`: an exported vector offline (no `target`), else a crash file
/// against `target` or the target it recorded.
pub fn run(
    file: &Path,
    target: Option<String>,
    tls_args: &TlsArgs,
    profile: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    if let Some(vector) = read_json(file).ok().as_ref().and_then(crate::export::read) {
        if target.is_some() {
            return Err(Usage(format!(
                "{} is an exported vector: it runs offline, without --target",
                file.display()
            )));
        }
        return replay_vector(file, vector.map_err(|e| input(file.display(), e))?, out);
    }
    let crash = campaign::CrashFile::read(file)?;
    let Some(parts) = crate::suites::parts(&crash.suite) else {
        return Err(campaign::FuzzError::NotCrashFile {
            path: file.display().to_string(),
            why: format!("suite {:?} is not one the fuzzer writes", crash.suite),
        }
        .into());
    };
    let spec = parts
        .fuzzer_of(crash.role)
        .ok_or_else(|| campaign::FuzzError::NoClientFuzzer(crash.suite.clone()))?;
    let fuzzed = (parts.suite, spec);
    let (mut prof, profile_file) = replay_profile(file, &crash, profile.as_ref())?;
    let rt = runtime()?;
    let (target, reference) = with_reference(&rt, &crash, target, &prof)?;
    let started = reference.is_some();
    let (url, transport) = crash_target(&crash, target, &mut prof)?;
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let client_tls = tls_args.client_tls(None)?;
    let http = client_tls.http_client().map_err(Usage)?;
    if crash.role == crate::case::Role::Server {
        let wait = std::time::Duration::from_millis(prof.timing.case_timeout_ms);
        let at = (transport, parts.suite.endpoint_url(transport, &url));
        rt.block_on(reachable(at, &url, (&http, &client_tls), wait))?;
    }
    let replayed = rt.block_on(campaign::replay(
        &crash,
        fuzzed,
        campaign::Connection {
            url: url.clone(),
            transport,
            profile: prof,
            profile_file: profile_file.clone(),
            schemas,
            http,
            tls: client_tls,
            keys: crash.keys,
            embedded: None,
        },
    ));
    if let Some(server) = reference {
        rt.block_on(server.stop());
    }
    let replayed = replayed?;
    if started {
        print_reference(&crash, out)?;
    }
    writeln!(
        out,
        "replaying {} case {} of seed {} ({}) against {url}",
        crash.suite, crash.index, crash.seed, replayed.label
    )
    .map_err(io)?;
    print_recorded(
        &crash,
        profile_file.as_ref().filter(|_| profile.is_none()),
        out,
    )?;
    let alone = print_alone(&crash, replayed.alone, out)?;
    let case = print_outcome(&crash, (replayed.outcome, replayed.signature), out)?;
    Ok(exit_code(alone, case))
}

/// The exit code of a replay from its two verdicts: either the smallest input or
/// the case showing the file's own signature is a reproduction; a setting the
/// replay lacks (2) says what to set; another signature (3) outranks none (0).
fn exit_code(alone: i32, case: i32) -> i32 {
    if alone == 1 || case == 1 {
        1
    } else if case == SETUP {
        SETUP
    } else {
        alone.max(case)
    }
}

/// Whether the target at `endpoint` answers: one it cannot reach shows nothing, so
/// the replay gives no verdict (exit 2).
async fn reachable(
    (transport, endpoint): (Transport, String),
    url: &str,
    (http, tls): (&reqwest::Client, &crate::drive::Tls),
    wait: std::time::Duration,
) -> Result<(), CliError> {
    crate::drive::preflight(transport, &endpoint, http, tls, wait)
        .await
        .map_err(|why| {
            CliError::NotTested(format!(
                "cannot replay against {url}: {why} (a campaign's target may be gone: pass --target)"
            ))
        })
}

/// The smallest input sent alone, when the crash file has one: exit 1 when the
/// target's answer shows the recorded signature again, [`OTHER_SIGNATURE`] when it
/// shows another.
/// Says what the replay took from the crash file: the profile the campaign ran with
/// (`taken`, when no other was given) and its signing keys.
fn print_recorded(
    crash: &campaign::CrashFile,
    taken: Option<&crate::profile::ProfileFile>,
    out: &mut impl Write,
) -> Result<(), CliError> {
    if let Some(p) = taken {
        writeln!(
            out,
            "with the profile the campaign ran with, as the crash file records it ({})",
            p.path
        )
        .map_err(io)?;
    }
    if crash.keys.is_some() {
        writeln!(
            out,
            "signing with the keys the campaign used, as the crash file records them"
        )
        .map_err(io)?;
    }
    Ok(())
}

fn print_alone(
    crash: &campaign::CrashFile,
    alone: Option<Option<String>>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let (Some(shown), Some((req, bytes))) = (alone, &crash.alone) else {
        return Ok(0);
    };
    let want = crash.signature.as_deref().unwrap_or_default();
    let input = crate::script::clip_entry(&String::from_utf8_lossy(bytes));
    writeln!(
        out,
        "the smallest input, sent alone to {}: {input}",
        req.endpoint
    )
    .map_err(io)?;
    match shown {
        Some(sig) if sig == want => {
            writeln!(out, "REPRODUCED: signature {sig}").map_err(io)?;
            Ok(1)
        }
        Some(sig) => {
            writeln!(out, "not reproduced: it showed {sig}, not {want}").map_err(io)?;
            Ok(OTHER_SIGNATURE)
        }
        None => {
            writeln!(out, "not reproduced: signature {want} did not show").map_err(io)?;
            Ok(0)
        }
    }
}

/// The profile a replay runs with: `--profile`, else the one the crash file
/// records (the campaign's), else the defaults.
fn replay_profile(
    file: &Path,
    crash: &campaign::CrashFile,
    given: Option<&PathBuf>,
) -> Result<(Profile, Option<crate::profile::ProfileFile>), CliError> {
    match (given, &crash.profile) {
        (None, Some(recorded)) => {
            let at = format!("{} (the profile it records)", file.display());
            let mut prof = Profile::from_toml(&recorded.text, &at)?;
            prof.timing.case_timeout_ms = 5000;
            Ok((prof, Some(recorded.clone())))
        }
        _ => fuzz_profile(given, false, 5000),
    }
}

/// Exit code of a replay that met a setting the run lacks rather than the target's
/// deviation: nothing was reproduced, and the message says what to set.
pub const SETUP: i32 = 2;

/// The profile key `key`'s rule says the run lacks, when the finding is a setting
/// ([`crate::rules::Rule::setting`]).
fn setting_of(key: Option<&str>) -> Option<&'static str> {
    match crate::explain::lookup(&crate::suites::all(), key?)? {
        crate::explain::Named::Rule(_, r) => r.setting,
        crate::explain::Named::Case(..) => None,
    }
}

/// The target a replay runs against: `target`, else, for a campaign against the
/// embedded reference, that reference started anew with the faults the crash file
/// records (returned, to stop afterwards), else none here (the recorded one).
fn with_reference(
    rt: &tokio::runtime::Runtime,
    crash: &campaign::CrashFile,
    target: Option<String>,
    prof: &Profile,
) -> Result<(Option<String>, Option<crate::embedded::Server>), CliError> {
    match (&target, &crash.embedded, crash.role) {
        (None, Some(faults), crate::case::Role::Server) => {
            let (url, server) = rt.block_on(start_reference(crash, faults, prof))?;
            Ok((Some(url), Some(server)))
        }
        _ => Ok((target, None)),
    }
}

/// Says that the replay runs against the embedded reference it started, and with
/// which faults.
fn print_reference(crash: &campaign::CrashFile, out: &mut impl Write) -> Result<(), CliError> {
    let faults = match crash.embedded.as_deref() {
        Some(f) if !f.is_empty() => f.join(", "),
        _ => "none".to_string(),
    };
    writeln!(
        out,
        "against the embedded reference, started anew with the faults the crash file records: {faults}"
    )
    .map_err(io)
}

/// Starts the embedded reference of `crash`'s suite with `faults`, on the binding
/// the campaign fuzzed (its recorded URL's scheme); returns its URL there and the
/// server, to stop afterwards.
async fn start_reference(
    crash: &campaign::CrashFile,
    faults: &[String],
    prof: &Profile,
) -> Result<(String, crate::embedded::Server), CliError> {
    let opts = crate::embedded::Options {
        faults: faults.to_vec(),
        token: prof.target.token.clone(),
        heartbeat_timeout_s: Some(prof.timing.heartbeat_timeout_s),
        ..crate::embedded::Options::default()
    };
    let server = crate::suites::start(&crash.suite, "127.0.0.1:0", &opts)
        .await
        .map_err(Usage)?;
    let want = crash.target.as_deref().and_then(|t| parse_target(t).ok());
    let endpoints = &server.endpoints.0;
    let url = endpoints
        .iter()
        .find(|(t, _)| Some(*t) == want)
        .or(endpoints.first())
        .map(|(_, u)| u.clone())
        .unwrap_or_default();
    Ok((url, server))
}

/// Where a crash replays, and over which binding: a client crash through a client
/// driver (set in `prof`), a server crash against a URL; `target` before what the
/// crash file recorded.
fn crash_target(
    crash: &campaign::CrashFile,
    target: Option<String>,
    prof: &mut Profile,
) -> Result<(String, Transport), CliError> {
    if crash.role == crate::case::Role::Client {
        // A client crash replays through a client driver: --target names one, else
        // the one the crash file recorded.
        let recorded = crash
            .target
            .as_deref()
            .and_then(|t| t.strip_prefix("client driver "))
            .map(String::from);
        let command = target
            .or(recorded)
            .ok_or_else(|| Usage("no client driver: pass --target COMMAND".into()))?;
        prof.client.command = Some(command.clone());
        Ok((format!("client driver {command}"), Transport::Http))
    } else {
        let url = target
            .or_else(|| crash.target.clone())
            .ok_or_else(|| Usage("no target: pass --target".into()))?;
        let transport = parse_target(&url)?;
        Ok((url, transport))
    }
}

/// Exit code of a replay whose case showed another signature than its file's.
pub const OTHER_SIGNATURE: i32 = 3;

/// The verdict of a replayed crash: exit 1 when the case shows the file's own
/// signature again; another signature is named and is no reproduction (exit
/// [`OTHER_SIGNATURE`]); none, exit 0.
fn print_outcome(
    crash: &campaign::CrashFile,
    (outcome, seen): (Outcome, Option<String>),
    out: &mut impl Write,
) -> Result<i32, CliError> {
    match outcome {
        Outcome::Finding(found) if setting_of(found.key.as_deref()).is_some() => {
            let setting = setting_of(found.key.as_deref()).unwrap_or_default();
            writeln!(
                out,
                "not reproduced: the replay lacks a setting: {}\nset {setting} in a profile and pass it with --profile FILE",
                found.detail
            )
            .map_err(io)?;
            Ok(SETUP)
        }
        Outcome::Finding(found) => {
            let seen = seen.unwrap_or_default();
            let want = crash.signature.as_deref();
            if want.is_some_and(|w| w != seen) {
                writeln!(
                    out,
                    "not reproduced: it showed {seen} (oracle {}: {}), not {}",
                    found.oracle,
                    found.detail,
                    want.unwrap_or_default()
                )
                .map_err(io)?;
                return Ok(OTHER_SIGNATURE);
            }
            writeln!(
                out,
                "REPRODUCED: {seen}: oracle {} fired: {}",
                found.oracle, found.detail
            )
            .map_err(io)?;
            Ok(1)
        }
        Outcome::Skip(why) => {
            writeln!(out, "the case was skipped: {why}").map_err(io)?;
            writeln!(out, "not reproduced: no oracle fired").map_err(io)?;
            Ok(0)
        }
        Outcome::Pass => {
            writeln!(out, "not reproduced: no oracle fired").map_err(io)?;
            Ok(0)
        }
    }
}

/// The offline run of an exported vector: exit 1 when every finding it records
/// reproduces, 0 when one does not.
fn replay_vector(
    file: &Path,
    vector: crate::export::Vector,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let r = crate::export::rejudge(&crate::suites::all(), &vector, schemas)
        .map_err(|e| CliError::NotTested(format!("{}: {e}", file.display())))?;
    writeln!(
        out,
        "judging {} offline: {} recorded replies of {}",
        file.display(),
        vector.exchanges.len(),
        vector.suite
    )
    .map_err(io)?;
    if r.skipped > 0 {
        writeln!(
            out,
            "{} replies were cut short in the transcript and are not judged",
            r.skipped
        )
        .map_err(io)?;
    }
    for (key, summary) in &r.found {
        writeln!(out, "  {key}: {summary}").map_err(io)?;
    }
    if r.reproduced() {
        writeln!(out, "REPRODUCED: {}", vector.expect.findings.join(", ")).map_err(io)?;
        Ok(1)
    } else {
        writeln!(out, "not reproduced: missing {}", r.missing.join(", ")).map_err(io)?;
        Ok(0)
    }
}
