//! The GitHub Action's step (harness/action/run.sh) run locally with the GitHub
//! variables set, as a runner would: each mode writes its exit code, the folder to
//! upload and a job summary; an extra argument with spaces stays one argument; a
//! bad mode or a missing suite is a usage error.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "agentconform-action-{tag}-{}-{}",
        std::process::id(),
        reference_impl::wire::new_id()
    ));
    std::fs::create_dir_all(&d).expect("a temporary folder");
    d
}

/// Runs the step in `dir` with `vars`; its exit code, GITHUB_OUTPUT, the job
/// summary and what it printed.
fn step(dir: &Path, vars: &[(&str, &str)]) -> Result<(i32, String, String, String), Failed> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("action/run.sh");
    let output = dir.join("github-output");
    let summary = dir.join("step-summary");
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .current_dir(dir)
        .env("AGENTCONFORM", env!("CARGO_BIN_EXE_agentconform"))
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|e| format!("bash: {e}"))?;
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((
        out.status.code().unwrap_or(-1),
        read(&output),
        read(&summary),
        printed,
    ))
}

fn run_mode() -> Result<(), Failed> {
    let dir = tempdir("run");
    let (code, output, summary, printed) = step(
        &dir,
        &[
            ("AC_SUITE", "agora-exchange"),
            ("AC_REPORT", "reports"),
            // One argument per line: a glob stays whole.
            ("AC_EXTRA", "--cases\nagora-exchange/single-round"),
        ],
    )?;
    if code != 0 || !output.contains("exit-code=0") || !output.contains("artifact-path=reports") {
        return Err(format!("exit {code}, outputs {output:?}: {printed}").into());
    }
    if !dir.join("reports/junit.xml").is_file() || summary.trim().is_empty() {
        return Err(format!("no reports or no summary: {summary:?}").into());
    }
    if !printed.contains("1 passed") {
        return Err(format!("--cases did not reach the run as one argument: {printed}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn fuzz_mode() -> Result<(), Failed> {
    let dir = tempdir("fuzz");
    let (code, output, summary, printed) = step(
        &dir,
        &[
            ("AC_MODE", "fuzz"),
            ("AC_SUITE", "agora-exchange"),
            ("AC_DURATION", "1s"),
            ("AC_SEED", "7"),
            ("AC_FUZZ_OUT", "corpus"),
            ("AC_EXTRA", "--fault\ncrash-500-html"),
        ],
    )?;
    if code != 1 || !output.contains("exit-code=1") || !output.contains("artifact-path=corpus") {
        return Err(format!("exit {code}, outputs {output:?}: {printed}").into());
    }
    if !dir.join("corpus/findings.json").is_file() {
        return Err("no findings.json in the corpus to upload".into());
    }
    if !summary.contains("crash:server-error") || !summary.contains("seed 7") {
        return Err(format!("the job summary lacks the signatures: {summary}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A client command with spaces and quotes is one argument.
fn quoting() -> Result<(), Failed> {
    let dir = tempdir("quoting");
    let (code, _, _, printed) = step(
        &dir,
        &[
            ("AC_SUITE", "agora-v1"),
            (
                "AC_EXTRA",
                "--role\nclient\n--client\nsh -c 'exit 3' \"{url}\"",
            ),
        ],
    )?;
    // The driver runs as one command, sh with its quoted script, and exits 3; a
    // split command would be a usage error of `run` ("unexpected argument").
    if code != 1 || !printed.contains("the driver exited with 3") {
        return Err(format!("exit {code}: {printed}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn usage_errors() -> Result<(), Failed> {
    let dir = tempdir("usage");
    let (code, _, _, printed) = step(&dir, &[("AC_MODE", "proxy"), ("AC_SUITE", "chorus")])?;
    if code != 2 || !printed.contains("mode must be run or fuzz") {
        return Err(format!("a bad mode: exit {code}: {printed}").into());
    }
    let (code, _, _, printed) = step(&dir, &[("AC_MODE", "run")])?;
    if code != 2 || !printed.contains("suite input is required") {
        return Err(format!("no suite: exit {code}: {printed}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test("action::run_mode", run_mode),
        Trial::test("action::fuzz_mode", fuzz_mode),
        Trial::test("action::quoting", quoting),
        Trial::test("action::usage_errors", usage_errors),
    ];
    libtest_mimic::run(&args, trials).exit();
}
