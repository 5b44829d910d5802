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
    let (url, transport) = crash_target(&crash, target, &mut prof)?;
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let client_tls = tls_args.client_tls(None)?;
    let http = client_tls.http_client().map_err(Usage)?;
    let rt = runtime()?;
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
        },
    ))?;
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
    // Either the smallest input or the case showing the file's own signature is a
    // reproduction; a setting the replay lacks (2) says what to set; another
    // signature (3) outranks none (0).
    Ok(if alone == 1 || case == 1 {
        1
    } else if case == SETUP {
        SETUP
    } else {
        alone.max(case)
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
