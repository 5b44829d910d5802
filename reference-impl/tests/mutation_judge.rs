//! The mutation judge: one suite of `agentconform run` against this crate's
//! reference server, started here with its default configuration. cargo-mutants
//! runs it on each mutant of a reference server file (`.ci/mutants`), so that a
//! mutant costs a build of this crate alone; the harness is built once and named
//! by `AGENTCONFORM_BIN`. A mutant is killed when the run's exit code is not 0
//! (a finding, or a case that could not run).
//!
//! Each test is ignored in a plain `cargo test`: it needs that binary.

use reference_impl::start::{self, Started};
use std::process::Stdio;
use std::time::Duration;

/// The longest one suite's run may take before the mutant counts as a hang.
const RUN_DEADLINE: Duration = Duration::from_secs(240);

/// The most memory the judge (the mutated server runs in it) may hold: a mutant
/// that grows past it is killed at once, before it takes the machine's memory.
const MAX_RSS_BYTES: u64 = 1 << 30;

/// The longest the whole judge may take, every binding's run and the server's stop
/// with it: a mutant that spins in the server (where no run's deadline reaches) is
/// killed then, not at cargo-mutants' timeout.
const JUDGE_DEADLINE: Duration = Duration::from_secs(150);

/// Aborts the process when its resident memory passes [`MAX_RSS_BYTES`] (read from
/// /proc/self/statm on Linux; elsewhere memory is not watched) or when it has run
/// for [`JUDGE_DEADLINE`]. The abort fails the test, so the mutant counts as killed.
fn watchdog() {
    let started = std::time::Instant::now();
    std::thread::spawn(move || loop {
        let resident_pages = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok());
        if resident_pages.is_some_and(|pages| pages * 4096 > MAX_RSS_BYTES) {
            eprintln!(
                "the mutated server holds over {} MiB: killed as a runaway",
                MAX_RSS_BYTES >> 20
            );
            std::process::abort();
        }
        if started.elapsed() > JUDGE_DEADLINE {
            eprintln!("the judge ran past {JUDGE_DEADLINE:?}: killed as a hang");
            std::process::abort();
        }
        std::thread::sleep(Duration::from_millis(100));
    });
}

async fn started(suite: &str) -> Result<Started, String> {
    let listen = "127.0.0.1:0";
    match suite {
        "agora-v1" => start::agora_v1(Default::default(), listen, None).await,
        "agora-exchange" => start::agora_exchange(Default::default(), listen, None).await,
        "chorus" => start::chorus(Default::default(), listen, false, None).await,
        "agora-spaces" => start::agora_spaces(Default::default(), listen, None).await,
        "agentprotocol" => start::agentprotocol(Default::default(), listen, None).await,
        other => Err(format!("no reference server for suite {other}")),
    }
}

/// What the profile says of the reference's fixtures, as `run` says it of its
/// embedded agents (harness cli `embedded_fixtures`): a run with `--target` finds no
/// space of capacity 1 where the hub enforces no capacity, so without it a mutant
/// that drops the capacity would only skip the SPACE_FULL case.
fn fixtures_profile(suite: &str) -> Option<&'static str> {
    match suite {
        "agora-spaces" => Some("[agora-spaces]\nfull_space = \"full\"\ncancel_grace_ms = 100\n"),
        _ => None,
    }
}

/// Runs `agentconform run --suite SUITE --target URL` against each binding of the
/// started server and fails with the run's output unless every run exits 0.
fn judge(suite: &str) {
    let bin = std::env::var("AGENTCONFORM_BIN").unwrap_or_else(|_| {
        panic!("AGENTCONFORM_BIN must name a built agentconform binary (.ci/mutants sets it)")
    });
    watchdog();
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    rt.block_on(async {
        let server = started(suite).await.expect("the reference server starts");
        let mut failed = Vec::new();
        for (binding, target) in &server.urls {
            if let Err(e) = run(&bin, suite, target).await {
                failed.push(format!("{binding:?} {target}: {e}"));
            }
        }
        server.stop().await;
        assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    });
}

/// One run against `target`: `Err` with its output unless it exits 0.
async fn run(bin: &str, suite: &str, target: &str) -> Result<(), String> {
    let report = std::env::temp_dir().join(format!(
        "agentconform-mutation-{}-{suite}",
        std::process::id()
    ));
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(["run", "--suite", suite, "--target", target, "--report"])
        .arg(&report);
    let profile = std::env::temp_dir().join(format!(
        "agentconform-mutation-{}-{suite}.toml",
        std::process::id()
    ));
    if let Some(text) = fixtures_profile(suite) {
        std::fs::write(&profile, text).map_err(|e| format!("cannot write the profile: {e}"))?;
        cmd.arg("--profile").arg(&profile);
    }
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {bin}: {e}"))?;
    let out = tokio::time::timeout(RUN_DEADLINE, child.wait_with_output()).await;
    let _ = std::fs::remove_dir_all(&report);
    let _ = std::fs::remove_file(&profile);
    let out = out
        .map_err(|_| format!("the run took over {RUN_DEADLINE:?}"))?
        .map_err(|e| format!("the run's output: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "the run exited {:?}:\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

#[test]
#[ignore = "the mutation judge: needs AGENTCONFORM_BIN, run by .ci/mutants"]
fn judge_agora_v1() {
    judge("agora-v1");
}

#[test]
#[ignore = "the mutation judge: needs AGENTCONFORM_BIN, run by .ci/mutants"]
fn judge_agora_exchange() {
    judge("agora-exchange");
}

#[test]
#[ignore = "the mutation judge: needs AGENTCONFORM_BIN, run by .ci/mutants"]
fn judge_chorus() {
    judge("chorus");
}

#[test]
#[ignore = "the mutation judge: needs AGENTCONFORM_BIN, run by .ci/mutants"]
fn judge_agora_spaces() {
    judge("agora-spaces");
}

#[test]
#[ignore = "the mutation judge: needs AGENTCONFORM_BIN, run by .ci/mutants"]
fn judge_agentprotocol() {
    judge("agentprotocol");
}
