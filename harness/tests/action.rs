//! The GitHub Action's steps run locally with the GitHub variables set, as a
//! runner would. harness/action/run.sh: each mode (run, client, fuzz, interop)
//! writes its exit code, the folder to upload and a job summary; a client command
//! or an extra argument with spaces and quotes stays one argument; a bad mode or a
//! missing input is a usage error. harness/action/install.sh, against a loopback
//! release server: the cached binary first, else the release binary of the ref
//! checked against its SHA-256 (a mismatch is refused), else a build.

mod common;

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
    script("run.sh", dir, vars)
}

/// Runs harness/action/`name` in `dir` with `vars`, as [`step`] does.
fn script(
    name: &str,
    dir: &Path,
    vars: &[(&str, &str)],
) -> Result<(i32, String, String, String), Failed> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("action")
        .join(name);
    let output = dir.join("github-output");
    let _ = std::fs::write(&output, "");
    let summary = dir.join("step-summary");
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .current_dir(dir)
        .env("AGENTCONFORM", common::bin())
        .env("GITHUB_OUTPUT", &output)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_PATH", &output);
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
    if !summary.contains("agora-exchange/missing-body") || !summary.contains("seed 7") {
        return Err(format!("the job summary lacks the signatures: {summary}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// docs/guides/ci.md's fuzz step: given the baseline of the deviations a run
/// already found, a campaign against the same target stays green; without it, the
/// same deviation fails the step.
fn fuzz_with_known_deviations() -> Result<(), Failed> {
    let dir = tempdir("fuzz-known");
    let server = common::serve(&["--suite", "agora-v1", "--fault", "reuse-request-id"])?;
    let target = ("AC_TARGET", server.url.as_str());
    let (code, _, _, printed) = step(
        &dir,
        &[("AC_SUITE", "agora-v1"), ("AC_REPORT", "reports"), target],
    )?;
    if code != 1 {
        return Err(format!("the run step: exit {code}: {printed}").into());
    }
    let written = Command::new(common::bin())
        .args([
            "baseline",
            "write",
            "--report",
            "reports/report.json",
            "--out",
            "baseline.toml",
        ])
        .current_dir(&dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !written.status.success() {
        return Err(format!("baseline write: {written:?}").into());
    }
    let fuzz = |baseline: &'static str| {
        let mut vars = vec![
            ("AC_MODE", "fuzz"),
            ("AC_SUITE", "agora-v1"),
            ("AC_DURATION", "1s"),
            ("AC_SEED", "42"),
            target,
        ];
        if !baseline.is_empty() {
            vars.push(("AC_BASELINE", baseline));
        }
        step(&dir, &vars)
    };
    let (known, _, _, printed) = fuzz("baseline.toml")?;
    if known != 0 || !printed.contains("already known") {
        return Err(format!("fuzz with the baseline: exit {known}: {printed}").into());
    }
    let (again, _, _, printed) = fuzz("")?;
    if again != 1 || !printed.contains("agora-v1/reply:id-reused") {
        return Err(format!("fuzz without the baseline: exit {again}: {printed}").into());
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

/// Mode client: the client command input is one argument, whatever its spaces
/// and quotes; without it, the reference driver passes.
fn client_mode() -> Result<(), Failed> {
    let dir = tempdir("client");
    let (code, output, summary, printed) = step(
        &dir,
        &[
            ("AC_MODE", "client"),
            ("AC_SUITE", "agora-exchange"),
            ("AC_CLIENT", "sh -c 'exit 3' \"{url}\""),
            ("AC_EXTRA", "--cases\nagora-exchange/client-single"),
        ],
    )?;
    if code != 1 || !printed.contains("the driver exited with 3") || !output.contains("exit-code=1")
    {
        return Err(format!("a quoted client command: exit {code}: {printed}").into());
    }
    if !summary.contains("agentconform") {
        return Err(format!("no job summary: {summary:?}").into());
    }
    let (code, _, _, printed) = step(
        &dir,
        &[
            ("AC_MODE", "client"),
            ("AC_SUITE", "agora-exchange"),
            ("AC_REPORT", "reference"),
            ("AC_EXTRA", "--cases\nagora-exchange/client-single"),
        ],
    )?;
    if code != 0 || !dir.join("reference/junit.xml").is_file() || !printed.contains("1 passed") {
        return Err(format!("the reference driver: exit {code}: {printed}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Mode interop: one client and one server per line, the matrix in the reports.
fn interop_mode() -> Result<(), Failed> {
    let dir = tempdir("interop");
    let (code, output, summary, printed) = step(
        &dir,
        &[
            ("AC_MODE", "interop"),
            ("AC_SUITE", "agora-exchange"),
            ("AC_CLIENTS", "ref=reference\n"),
            ("AC_SERVERS", "one=reference\nother=reference"),
        ],
    )?;
    let matrix =
        std::fs::read_to_string(dir.join("agentconform-report/matrix.md")).unwrap_or_default();
    if code != 0
        || !output.contains("artifact-path=agentconform-report")
        || !matrix.contains("other")
        || !summary.contains("Interop matrix")
    {
        return Err(
            format!("exit {code}, outputs {output:?}, matrix {matrix:?}: {printed}").into(),
        );
    }
    let (code, _, _, printed) = step(&dir, &[("AC_MODE", "interop"), ("AC_SUITE", "chorus")])?;
    if code != 2 || !printed.contains("needs the clients and servers") {
        return Err(format!("interop without servers: exit {code}: {printed}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A loopback release server holding `files` under /v9.9.9/.
async fn release_server(files: Vec<(String, Vec<u8>)>) -> wiremock::MockServer {
    use wiremock::matchers::path;
    use wiremock::{Mock, ResponseTemplate};
    let server = wiremock::MockServer::start().await;
    for (name, body) in files {
        Mock::given(path(format!("/v9.9.9/{name}")))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(body))
            .mount(&server)
            .await;
    }
    server
}

/// A release tarball holding a stand-in binary that prints `version`, and its
/// SHA-256 file.
fn release_asset(dir: &Path, version: &str) -> Result<(Vec<u8>, Vec<u8>), Failed> {
    use sha2::Digest;
    let stage = dir.join("stage");
    std::fs::create_dir_all(&stage).map_err(|e| e.to_string())?;
    let bin = stage.join("agentconform");
    std::fs::write(&bin, format!("#!/bin/sh\necho 'agentconform {version}'\n"))
        .map_err(|e| e.to_string())?;
    let tarball = dir.join("asset.tar.gz");
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&stage)
        .arg("agentconform")
        .status()
        .map_err(|e| format!("tar: {e}"))?
        .success();
    if !ok {
        return Err("tar failed".into());
    }
    let bytes = std::fs::read(&tarball).map_err(|e| e.to_string())?;
    let sum = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    let line = format!("{sum}  agentconform-x86_64-unknown-linux-gnu.tar.gz\n");
    Ok((bytes, line.into_bytes()))
}

/// The install step: the release binary of the ref when its checksum holds, a
/// refusal when it does not, a build when the ref has none, and the cached binary
/// before any of them.
fn install() -> Result<(), Failed> {
    let dir = tempdir("install");
    let (asset, sum) = release_asset(&dir, "9.9.9")?;
    let name = "agentconform-x86_64-unknown-linux-gnu.tar.gz";
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let good = rt.block_on(release_server(vec![
        (name.to_string(), asset.clone()),
        (format!("{name}.sha256"), sum),
    ]));
    let bad = rt.block_on(release_server(vec![
        (name.to_string(), asset),
        (
            format!("{name}.sha256"),
            format!("{}  {name}\n", "0".repeat(64)).into_bytes(),
        ),
    ]));
    let none = rt.block_on(release_server(vec![]));
    let build = "mkdir -p \"$AC_INSTALL_DIR\" && printf '#!/bin/sh\\necho built\\n' > \"$AC_INSTALL_DIR/agentconform\" && chmod +x \"$AC_INSTALL_DIR/agentconform\"";
    let case = |tag: &str, url: &str| -> Result<(i32, String, String), Failed> {
        let home = dir.join(tag);
        let install_dir = home.join("bin");
        let install_dir = install_dir.to_string_lossy().into_owned();
        let (code, path, _, printed) = script(
            "install.sh",
            &dir,
            &[
                ("AC_REF", "v9.9.9"),
                ("AC_RELEASE_URL", url),
                ("AC_INSTALL_DIR", &install_dir),
                ("AC_BUILD", build),
                ("RUNNER_OS", "Linux"),
                ("RUNNER_ARCH", "X64"),
            ],
        )?;
        Ok((code, path, printed))
    };
    let (code, path, printed) = case("release", &good.uri())?;
    if code != 0
        || !printed.contains("agentconform 9.9.9")
        || !printed.contains("SHA-256")
        || !path.contains("release/bin")
    {
        return Err(
            format!("the release binary: exit {code}, GITHUB_PATH {path:?}: {printed}").into(),
        );
    }
    // Run again: the binary there (the cache step's) is used, nothing fetched.
    let (code, _, printed) = case("release", &none.uri())?;
    if code != 0 || !printed.contains("the cached binary") {
        return Err(format!("the cached binary: exit {code}: {printed}").into());
    }
    let (code, _, printed) = case("mismatch", &bad.uri())?;
    if code != 1
        || !printed.contains("does not match its checksum")
        || dir.join("mismatch/bin/agentconform").exists()
    {
        return Err(format!("a checksum mismatch: exit {code}: {printed}").into());
    }
    let (code, _, printed) = case("build", &none.uri())?;
    if code != 0 || !printed.contains("building from source") || !printed.contains("built") {
        return Err(format!("no release binary: exit {code}: {printed}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn usage_errors() -> Result<(), Failed> {
    let dir = tempdir("usage");
    let (code, _, _, printed) = step(&dir, &[("AC_MODE", "proxy"), ("AC_SUITE", "chorus")])?;
    if code != 2 || !printed.contains("mode must be run, client, fuzz or interop") {
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
        Trial::test(
            "action::fuzz_with_known_deviations",
            fuzz_with_known_deviations,
        ),
        Trial::test("action::quoting", quoting),
        Trial::test("action::client_mode", client_mode),
        Trial::test("action::interop_mode", interop_mode),
        Trial::test("action::install", install).with_ignored_flag(common::skip_without(
            "action::install",
            "curl",
            common::runs("curl"),
            "Debian: apt-get install curl",
        )),
        Trial::test("action::usage_errors", usage_errors),
    ];
    libtest_mimic::run(&args, trials).exit();
}
