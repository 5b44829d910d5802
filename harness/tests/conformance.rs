//! The harness judged against the reference agents: the clean agent passes every
//! case, every fault of the catalogue is caught by the cases that name it, every
//! requirement is covered or recorded as untestable, hostile targets cannot hang the
//! harness, and the command line keeps its exit codes.

use agentconform::case::{CaseResult, Outcome, Suite};
use agentconform::drive::Transport;
use agentconform::embedded;
use agentconform::profile::Profile;
use agentconform::runner::{self, Endpoints, Selection};
use agentconform::schemas::Schemas;
use agentconform::suites;
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::*;

/// Skips that follow from a binding, not from the agent: (case, binding).
const EXPECTED_SKIPS: &[(&str, Transport)] = &[
    // A file addressed to another agent never reaches the target.
    ("agentprotocol/unknown-agent", Transport::File),
];

fn expected_skip(r: &CaseResult) -> bool {
    r.outcome == Outcome::Skip
        && EXPECTED_SKIPS
            .iter()
            .any(|(id, t)| r.id == *id && r.transport == *t)
}

fn describe(results: &[CaseResult]) -> String {
    results
        .iter()
        .map(|r| format!("{} {} [{}]: {}", r.outcome, r.id, r.transport, r.message))
        .collect::<Vec<_>>()
        .join("\n")
}

fn clean_reference_passes(suite: &'static Suite) -> Result<(), Failed> {
    let out = rt().block_on(run_against(suite, &[], &Selection::default()));
    let bad: Vec<CaseResult> = out
        .results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass && !expected_skip(r))
        .cloned()
        .collect();
    if !bad.is_empty() {
        return Err(format!(
            "the clean reference agent does not pass:\n{}",
            describe(&bad)
        )
        .into());
    }
    // Every case ran over every binding it asks for.
    let ran: BTreeSet<(&str, Transport)> = out
        .results
        .iter()
        .map(|r| (r.id.as_str(), r.transport))
        .collect();
    for c in suite.cases {
        let want: Vec<Transport> = match c.bindings {
            agentconform::case::Bindings::Any => suite.transports.to_vec(),
            agentconform::case::Bindings::Only(t) => vec![t],
        };
        for t in want {
            if !ran.contains(&(c.id, t)) {
                return Err(format!("{} did not run over {t}", c.id).into());
            }
        }
    }
    Ok(())
}

/// The cases a fault names fail on every binding they ran over; a case may instead
/// be blocked by one of the fault's own findings where another binding's run of it
/// failed for that finding (a refusal is one finding, owned by the first case that
/// met it).
fn fault_is_caught(
    suite: &'static Suite,
    name: &'static str,
    caught_by: &'static [&'static str],
    keys: &'static [&'static str],
) -> Result<(), Failed> {
    let mut selection = Selection::default();
    if !caught_by.contains(&"agora-v1/rate-limit-burst") {
        selection.exclude.push("agora-v1/rate-limit-burst".into());
    }
    let out = rt().block_on(run_against(suite, &[name], &selection));
    let mut missed = Vec::new();
    for id in caught_by {
        let runs: Vec<&CaseResult> = out
            .results
            .iter()
            .filter(|r| r.id == *id && r.outcome != Outcome::Skip)
            .collect();
        if runs.is_empty() {
            missed.push(format!("{id} did not run"));
        }
        let one_failed = runs.iter().any(|r| r.outcome == Outcome::Fail);
        for r in runs {
            let blocked_by_it = one_failed
                && r.outcome == Outcome::Blocked
                && r.findings.iter().any(|k| keys.contains(&k.as_str()));
            if r.outcome != Outcome::Fail && !blocked_by_it {
                missed.push(format!(
                    "{id} [{}] was {}: {}",
                    r.transport, r.outcome, r.message
                ));
            }
        }
    }
    if missed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fault {name} is not caught as its catalogue says:\n{}",
            missed.join("\n")
        )
        .into())
    }
}

fn requirement_ids(prefix: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("requirements/requirements.json");
    let v: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("requirements.json")).expect("json");
    v.as_array()
        .expect("array")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|id| id.starts_with(&format!("{prefix}-")))
        .map(String::from)
        .collect()
}

fn coverage(suite: &'static Suite) -> Result<(), Failed> {
    let ids = requirement_ids(suite.prefix);
    if ids.is_empty() {
        return Err(format!("no {} requirements in the inventory", suite.prefix).into());
    }
    let mut problems = Vec::new();
    let cited: BTreeSet<&str> = suite
        .cases
        .iter()
        .chain(suite.client_cases)
        .flat_map(|c| c.requirements.iter().copied())
        .collect();
    let untestable: BTreeSet<&str> = suite.untestable.iter().map(|u| u.requirement).collect();
    for id in &ids {
        let (c, u) = (
            cited.contains(id.as_str()),
            untestable.contains(id.as_str()),
        );
        if !c && !u {
            problems.push(format!("{id}: no case and no recorded reason"));
        }
        if c && u {
            problems.push(format!("{id}: both tested and recorded as untestable"));
        }
    }
    for id in cited.iter().chain(untestable.iter()) {
        if !ids.iter().any(|i| i == id) {
            problems.push(format!("{id}: not in the inventory"));
        }
    }
    for u in suite.untestable {
        if u.reason.trim().len() < 20 {
            problems.push(format!("{}: reason too thin", u.requirement));
        }
    }
    let mut seen = BTreeSet::new();
    for c in suite.cases.iter().chain(suite.client_cases) {
        if !seen.insert(c.id) {
            problems.push(format!("duplicate case id {}", c.id));
        }
        if c.requirements.is_empty() {
            problems.push(format!("{} cites no requirement", c.id));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}

/// Each suite page's row of requirement counts (docs/suites/<suite>.md) matches the
/// descriptors and the inventory.
fn readme_requirement_counts() -> Result<(), Failed> {
    for suite in suites::all() {
        let page =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../docs/suites/{}.md", suite.id));
        let readme =
            std::fs::read_to_string(&page).map_err(|e| format!("{}: {e}", page.display()))?;
        let ids = requirement_ids(suite.prefix);
        let of = |cases: &[agentconform::case::Case]| -> BTreeSet<String> {
            cases
                .iter()
                .flat_map(|c| c.requirements.iter().map(|r| r.to_string()))
                .filter(|r| ids.contains(r))
                .collect()
        };
        let mut tested = of(suite.cases);
        let by_client = of(suite.client_cases);
        tested.extend(by_client.iter().cloned());
        let row = format!(
            "| `{}` | {} | {} | {} | {} |",
            suite.id,
            ids.len(),
            tested.len(),
            by_client.len(),
            suite.untestable.len()
        );
        if !readme.contains(&row) {
            return Err(format!("docs/suites/{}.md lacks the row {row}", suite.id).into());
        }
    }
    Ok(())
}

fn faults_name_real_cases(suite: &'static Suite, required_families: &[&str]) -> Result<(), Failed> {
    let catalogue = suites::faults(suite.id).ok_or("no fault catalogue")?;
    let ids: BTreeSet<&str> = suite.cases.iter().map(|c| c.id).collect();
    let mut names = BTreeSet::new();
    for f in catalogue {
        if !names.insert(f.name) {
            return Err(format!("duplicate fault {}", f.name).into());
        }
        for c in f.caught_by {
            if !ids.contains(c) {
                return Err(format!("fault {} names unknown case {c}", f.name).into());
            }
        }
    }
    let families: BTreeSet<&str> = catalogue.iter().map(|f| f.family).collect();
    for family in required_families {
        if !families.contains(family) {
            return Err(format!("no fault in family {family}").into());
        }
    }
    Ok(())
}

// ---------- hostile targets ----------

/// A silent target: every agora-exchange case fails within its budget, and the whole
/// run ends within one budget (cases run together).
fn hostile_exchange_run_is_bounded() -> Result<(), Failed> {
    rt().block_on(async {
        let url = hostile("hang").await;
        let mut profile = Profile::default();
        profile.timing.case_timeout_ms = 400;
        profile.timing.conversation_wait_max_s = 1;
        profile.timing.offer_wait_max_ms = 500;
        let budget = runner::case_budget(&profile);
        let started = std::time::Instant::now();
        let out = runner::run(
            shared(profile),
            &[(
                &suites::agora_exchange::SUITE,
                Endpoints(vec![(Transport::Http, url)]),
            )],
            &Selection::default(),
        )
        .await
        .map_err(|e| e.to_string())?;
        let took = started.elapsed();
        if took > budget + Duration::from_secs(2) {
            return Err(
                format!("the run took {took:?}, more than one case budget ({budget:?})").into(),
            );
        }
        if out.results.iter().any(|r| r.outcome == Outcome::Pass) {
            return Err(format!(
                "a case passed against a silent target:\n{}",
                describe(&out.results)
            )
            .into());
        }
        Ok(())
    })
}

fn hostile_target(kind: &'static str, expect_in_message: &'static str) -> Result<(), Failed> {
    rt().block_on(async {
        let url = hostile(kind).await;
        let mut profile = Profile::default();
        profile.timing.case_timeout_ms = 300;
        profile.timing.max_response_bytes = 64 * 1024;
        let selection = Selection {
            include: vec![
                "agora-v1/echo-direct".into(),
                "agora-v1/reject-unsigned".into(),
            ],
            ..Selection::default()
        };
        let started = std::time::Instant::now();
        let out = runner::run(
            shared(profile),
            &[(
                &suites::agora_v1::SUITE,
                Endpoints(vec![(Transport::Http, url)]),
            )],
            &selection,
        )
        .await
        .map_err(|e| e.to_string())?;
        if started.elapsed() > Duration::from_secs(10) {
            return Err(format!("the run took {:?}", started.elapsed()).into());
        }
        // One deviation, owned by one case; the other is blocked by it; none passes.
        let failed = out.results.iter().filter(|r| r.outcome == Outcome::Fail).count();
        if out.results.len() != 2
            || failed != 1
            || out.results.iter().any(|r| r.outcome == Outcome::Pass)
            || out.findings.len() != 1
            || !out.findings[0].finding.summary.contains(expect_in_message)
            || out.findings[0].cases.len() != 2
        {
            return Err(format!(
                "expected one finding mentioning {expect_in_message:?}, owned by one failing case:\n{}\n{:?}",
                describe(&out.results),
                out.findings
            )
            .into());
        }
        Ok(())
    })
}

// ---------- the command line ----------

/// Starts `agentconform serve --suite SUITE ARGS` on loopback and returns it with
/// its first URL.
fn serve(suite: &str, args: &[&str]) -> Result<(Serve, String), Failed> {
    let mut all = vec!["--suite", suite];
    all.extend_from_slice(args);
    let guard = common::serve(&all)?;
    let url = guard.url.clone();
    if !(url.starts_with("http://127.0.0.1:") || url.starts_with("ws://127.0.0.1:")) {
        return Err(format!("serve printed {url:?}").into());
    }
    Ok((guard, url))
}

fn cli_run_embedded_writes_reports() -> Result<(), Failed> {
    // The README's main command: exit 0; whatever is skipped says why.
    let plain = expect_code(&["run", "--suite", "all"], 0, "0 failed")?;
    for line in plain.lines().filter(|l| l.starts_with("SKIP")) {
        if !line.contains(" — ") {
            return Err(format!("a skip without a reason: {line}").into());
        }
    }
    // With a profile that matches the embedded agents, every case runs and passes.
    let root = tempdir("report");
    let report = root.join("out").to_string_lossy().into_owned();
    let profile = root.join("profile.toml");
    std::fs::write(&profile, TEST_PROFILE_TOML).map_err(|e| e.to_string())?;
    expect_code(
        &[
            "run",
            "--suite",
            "all",
            "--profile",
            &profile.to_string_lossy(),
            "--report",
            &report,
        ],
        0,
        "0 failed",
    )?;
    let dir = root.join("out");
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    Schemas::load()?.check("/report", &json)?;
    let cases = json["cases"].as_array().ok_or("no cases")?;
    let unexpected: Vec<&Value> = cases
        .iter()
        .filter(|c| {
            c["outcome"] != "pass"
                && !(c["outcome"] == "skip"
                    && EXPECTED_SKIPS
                        .iter()
                        .any(|(id, t)| c["id"] == *id && c["transport"] == t.to_string().as_str()))
        })
        .collect();
    if cases.is_empty() || json["summary"]["failed"] != 0 || !unexpected.is_empty() {
        return Err(format!("unexpected summary {}", json["summary"]).into());
    }
    if cases
        .iter()
        .any(|c| c["outcome"] != "skip" && c["transcript"].as_array().is_none_or(|t| t.is_empty()))
    {
        return Err("a case has an empty transcript".into());
    }
    let junit = std::fs::read_to_string(dir.join("junit.xml")).map_err(|e| e.to_string())?;
    if !junit.contains("<testsuite") || !junit.contains("agora-v1/echo-direct") {
        return Err("junit.xml lacks the suite or its cases".into());
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}

fn cli_run_against_fault(suite: &'static str, name: &'static str) -> Result<(), Failed> {
    let ttl = TEST_TTL_MS.to_string();
    let conv = TEST_CONVERSATION_TTL_S.to_string();
    let hb = TEST_HEARTBEAT_S.to_string();
    let (_serve, url) = serve(
        suite,
        &[
            "--fault",
            name,
            "--offer-ttl-ms",
            &ttl,
            "--conversation-ttl-s",
            &conv,
            "--token",
            TEST_TOKEN,
            "--heartbeat-timeout-s",
            &hb,
        ],
    )?;
    let dir = tempdir(&format!("fault-{suite}-{name}"));
    let profile = dir.join("profile.toml");
    std::fs::write(&profile, TEST_PROFILE_TOML).map_err(|e| e.to_string())?;
    let profile = profile.to_string_lossy().into_owned();
    let out = dir.join("out").to_string_lossy().into_owned();
    let args = [
        "run",
        "--suite",
        suite,
        "--target",
        &url,
        "--profile",
        &profile,
        "--exclude",
        "agora-v1/rate-limit-burst",
        "--report",
        &out,
    ];
    let result = expect_code(&args, 1, "FAIL")
        .map_err(Failed::from)
        .and_then(|stdout| report_lists_findings(&dir.join("out"), &stdout));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A failing run's report: valid against its schema, at least one failing finding,
/// every key a case lists is in `findings`, every finding's owners met it, and the
/// terminal names each deviation.
fn report_lists_findings(dir: &Path, stdout: &str) -> Result<(), Failed> {
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    Schemas::load()?.check("/report", &json)?;
    let findings = json["findings"].as_array().ok_or("no findings array")?;
    let keys: BTreeSet<&str> = findings.iter().filter_map(|f| f["key"].as_str()).collect();
    if !findings.iter().any(|f| f["outcome"] == "fail") {
        return Err(format!("no failing finding in {}", json["findings"]).into());
    }
    for c in json["cases"].as_array().ok_or("no cases")? {
        for k in c["findings"].as_array().ok_or("a case without findings")? {
            if !keys.contains(k.as_str().unwrap_or_default()) {
                return Err(format!("{} lists {k}, which findings lacks", c["id"]).into());
            }
        }
    }
    for f in findings {
        let cases: Vec<&Value> = f["cases"].as_array().ok_or("cases")?.iter().collect();
        for o in f["owners"].as_array().ok_or("owners")? {
            if !cases.contains(&o) {
                return Err(format!("{} is owned by {o}, which did not meet it", f["key"]).into());
            }
        }
        if !stdout.contains(f["key"].as_str().unwrap_or("?")) {
            return Err(format!("the terminal does not name {}", f["key"]).into());
        }
    }
    if !stdout.contains("deviation") {
        return Err("the terminal has no deviation count".into());
    }
    Ok(())
}

fn cli_usage_errors() -> Result<(), Failed> {
    expect_code(&["run", "--suite", "nope"], 2, "unknown suite \"nope\"")?;
    expect_code(
        &["run", "--suite", "agora-v1", "--target", "ftp://127.0.0.1/"],
        2,
        "expected an http://",
    )?;
    expect_code(
        &["run", "--suite", "agora-v1", "--cases", "[bad"],
        2,
        "bad case pattern",
    )?;
    expect_code(
        &["serve", "--suite", "agora-v1", "--fault", "no-such-fault"],
        2,
        "unknown fault",
    )?;
    expect_code(&["run"], 2, "--suite")?;
    let dir = tempdir("profile");
    let p = dir.join("p.toml");
    std::fs::write(&p, "[timing]\ncase_timeout_ms = 100\nspeed = 3\n")
        .map_err(|e| e.to_string())?;
    expect_code(
        &[
            "run",
            "--suite",
            "agora-v1",
            "--profile",
            &p.to_string_lossy(),
        ],
        2,
        "line 3",
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn cli_unreachable_target_fails() -> Result<(), Failed> {
    // Port 9 (discard) on loopback has no listener here: connection refused. The run
    // ends at once with one message and exit 2, and its report says why.
    let dir = tempdir("unreachable");
    for (suite, url) in [
        ("agora-v1", "http://127.0.0.1:9/"),
        ("agora-spaces", "ws://127.0.0.1:9/"),
        ("agentprotocol", "file:///nonexistent-agentconform-folder"),
    ] {
        let (code, stdout, stderr) = cli(&[
            "run",
            "--suite",
            suite,
            "--target",
            url,
            "--timeout-ms",
            "500",
            "--report",
            dir.to_str().unwrap_or_default(),
        ])?;
        if code != 2 || !stderr.contains("cannot reach the target") || !stderr.contains(url) {
            return Err(
                format!("{suite} {url}: exit {code}\nstdout: {stdout}\nstderr: {stderr}").into(),
            );
        }
        if stderr.lines().count() != 1 || stdout.contains("FAIL") {
            return Err(format!("{suite}: more than one message:\n{stdout}\n{stderr}").into());
        }
        let report: Value = serde_json::from_slice(
            &std::fs::read(dir.join("report.json")).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        if !report["error"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot reach")
        {
            return Err(format!("{suite}: report.json has no error: {report}").into());
        }
    }
    // A selection that matches nothing, and a run in which every case skips: exit 2.
    expect_code(
        &["run", "--suite", "agora-v1", "--cases", "nothing/*"],
        2,
        "no case matches the selection",
    )?;
    let (server, url) = serve("agora-exchange", &[])?;
    let r = expect_code(
        &["run", "--suite", "agora-spaces", "--target", &url],
        2,
        "no case could run",
    );
    drop(server);
    r?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `agentconform canon big.json | head -c 100`: a closed pipe ends the command
/// quietly. The output (4 MB) is far larger than a pipe's buffer, so the write fails.
fn cli_closed_pipe_is_quiet() -> Result<(), Failed> {
    let dir = tempdir("pipe");
    let big = dir.join("big.json");
    let items: Vec<String> = (0..400_000).map(|i| format!("\"item-{i}\"")).collect();
    std::fs::write(&big, format!("[{}]", items.join(","))).map_err(|e| e.to_string())?;
    let mut child = Command::new(bin())
        .arg("canon")
        .arg(&big)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut reader = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut first = [0u8; 100];
    std::io::Read::read_exact(&mut reader, &mut first).map_err(|e| e.to_string())?;
    drop(reader);
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    let first = String::from_utf8_lossy(&first);
    if !first.starts_with("[\"item-0\"") || out.status.code() != Some(0) || !err.is_empty() {
        return Err(format!(
            "exit {:?}, stderr {err:?}, first line {first:?}",
            out.status.code()
        )
        .into());
    }
    Ok(())
}

/// A baseline written from a failing run makes the same run pass; against a target
/// that no longer has the deviation its entries are stale and fail the run.
fn cli_baseline_expected_and_stale() -> Result<(), Failed> {
    let dir = tempdir("baseline");
    let out = dir.join("out");
    let base = dir.join("baseline.toml");
    let (faulty, url) = serve("agora-v1", &["--fault", "wrong-protocol-tag"])?;
    let run = |url: &str, extra: &[&str]| -> Result<(i32, String, String), Failed> {
        let mut args = vec![
            "run",
            "--suite",
            "agora-v1",
            "--target",
            url,
            "--cases",
            "agora-v1/echo-*",
        ];
        args.extend_from_slice(extra);
        Ok(cli(&args)?)
    };
    let (code, stdout, _) = run(&url, &["--report", &out.to_string_lossy()])?;
    if code != 1 {
        return Err(format!("the faulty run exited {code}:\n{stdout}").into());
    }
    expect_code(
        &[
            "baseline",
            "write",
            "--report",
            &out.join("report.json").to_string_lossy(),
            "--out",
            &base.to_string_lossy(),
        ],
        0,
        "expected failures written",
    )?;
    let text = std::fs::read_to_string(&base).map_err(|e| e.to_string())?;
    if !text.contains("agora-v1/schema:envelope:/protocol") || !text.contains("reason") {
        return Err(format!("baseline lacks the finding:\n{text}").into());
    }
    let b = base.to_string_lossy().into_owned();
    let (code, stdout, stderr) = run(&url, &["--baseline", &b])?;
    if code != 0 || !stdout.contains("expected by the baseline") {
        return Err(format!("with the baseline: exit {code}\n{stdout}{stderr}").into());
    }
    drop(faulty);
    let (_clean, clean_url) = serve("agora-v1", &[])?;
    let (code, stdout, stderr) = run(&clean_url, &["--baseline", &b])?;
    if code != 1 || !stdout.contains("STALE baseline entry") {
        return Err(
            format!("a stale entry did not fail the run: exit {code}\n{stdout}{stderr}").into(),
        );
    }
    // A baseline entry without a reason is refused with the file named.
    std::fs::write(
        &base,
        "[[expected]]\ncase = \"agora-v1/echo-direct\"\nreason = \"\"\n",
    )
    .map_err(|e| e.to_string())?;
    expect_code(
        &["run", "--suite", "agora-v1", "--baseline", &b],
        2,
        "has no reason",
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn cli_canon_sign_verify() -> Result<(), Failed> {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors");
    let input = vectors.join("jcs/cyberphone/testdata/input/weird.json");
    let want = std::fs::read_to_string(vectors.join("jcs/cyberphone/testdata/output/weird.json"))
        .map_err(|e| e.to_string())?;
    let out = expect_code(&["canon", &input.to_string_lossy()], 0, "")?;
    if out.trim_end_matches('\n') != want.trim_end_matches('\n') {
        return Err(format!("canon output differs:\n{out}").into());
    }
    let origin = vectors.join("agora-v1/origin/tests/vectors/request-basic/input.json");
    expect_code(
        &["verify", "--suite", "agora-v1", &origin.to_string_lossy()],
        0,
        "VALID",
    )?;
    let dir = tempdir("sign");
    let keygen = expect_code(&["keygen"], 0, "did:key:z6Mk")?;
    let key = dir.join("key");
    std::fs::write(&key, keygen.lines().next().unwrap_or("")).map_err(|e| e.to_string())?;
    let msg = dir.join("msg.json");
    std::fs::write(&msg, r#"{"protocol":"agora/1.0","id":"x","timestamp":"2024-01-01T00:00:00Z","type":"HELLO","sender":{"id":"","signature":""},"payload":{}}"#).map_err(|e| e.to_string())?;
    let signed = expect_code(
        &[
            "sign",
            "--suite",
            "agora-v1",
            "--key",
            &key.to_string_lossy(),
            &msg.to_string_lossy(),
        ],
        0,
        "signature",
    )?;
    let signed_path = dir.join("signed.json");
    std::fs::write(&signed_path, &signed).map_err(|e| e.to_string())?;
    expect_code(
        &[
            "verify",
            "--suite",
            "agora-v1",
            &signed_path.to_string_lossy(),
        ],
        0,
        "canonical bytes",
    )?;
    let tampered = dir.join("tampered.json");
    std::fs::write(&tampered, signed.replace("HELLO", "STATUS")).map_err(|e| e.to_string())?;
    expect_code(
        &["verify", "--suite", "agora-v1", &tampered.to_string_lossy()],
        1,
        "INVALID",
    )?;
    // agentprotocol: sign a hello, verify it, tamper with it.
    let hello = dir.join("hello.json");
    let text = r#"{"protocol":"agentprotocol/0.1","id":"550e8400-e29b-41d4-a716-446655440000","timestamp":"2026-02-01T15:08:00Z","type":"hello","payload":{"version":"0.1"}}"#;
    std::fs::write(&hello, text).map_err(|e| e.to_string())?;
    let (k, h) = (
        key.to_string_lossy().into_owned(),
        hello.to_string_lossy().into_owned(),
    );
    let signed = expect_code(
        &["sign", "--suite", "agentprotocol", "--key", &k, &h],
        0,
        "agentId",
    )?;
    let ap = dir.join("ap.json");
    std::fs::write(&ap, &signed).map_err(|e| e.to_string())?;
    let ap_s = ap.to_string_lossy().into_owned();
    expect_code(&["verify", "--suite", "agentprotocol", &ap_s], 0, "VALID")?;
    std::fs::write(&ap, signed.replace("\"0.1\"}", "\"0.2\"}")).map_err(|e| e.to_string())?;
    expect_code(&["verify", "--suite", "agentprotocol", &ap_s], 1, "INVALID")?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn cli_list() -> Result<(), Failed> {
    let out = expect_code(&["list", "--suite", "agora-v1"], 0, "agora-v1/echo-direct")?;
    if !out.contains("AV1-001") || !out.contains("FACT") || !out.contains("untestable") {
        return Err(
            format!("list output lacks levels, requirements or untestable rows:\n{out}").into(),
        );
    }
    Ok(())
}

/// `rules` lists the rules of every suite with their level and requirement ids;
/// `explain` prints a rule's requirement texts and the fault that shows it, and
/// refuses an unknown key with where the keys are listed.
fn cli_rules_and_explain() -> Result<(), Failed> {
    let all = expect_code(&["rules"], 0, "agora-v1/reply:signature\tMUST")?;
    for s in suites::all() {
        let n = all
            .lines()
            .filter(|l| l.starts_with(&format!("{}/", s.id)))
            .count();
        if n < s.rules.len() {
            return Err(format!(
                "rules lists {n} lines of {}, which has {} rules",
                s.id,
                s.rules.len()
            )
            .into());
        }
    }
    let one = expect_code(&["rules", "--suite", "chorus"], 0, "chorus/client:job-id")?;
    if one.lines().any(|l| !l.starts_with("chorus/")) {
        return Err(format!("rules --suite chorus lists another suite's rules:\n{one}").into());
    }
    expect_code(&["rules", "--suite", "nope"], 2, "unknown suite")?;
    let text = expect_code(
        &["explain", "agentprotocol/capabilities:not-a-list"],
        0,
        "--fault capabilities-as-object",
    )?;
    for want in [
        "AGP-007 [",
        "Fails:",
        "Passes:",
        "owned by case agentprotocol/hello",
        "defined as CAPABILITIES_NOT_A_LIST in harness/src/suites/agentprotocol/replies.rs",
    ] {
        if !text.contains(want) {
            return Err(format!("explain lacks {want:?}:\n{text}").into());
        }
    }
    expect_code(
        &["explain", "agora-v1/transport:timeout"],
        0,
        "detail: timeout",
    )?;
    expect_code(
        &["explain", "agora-v1/no-such-rule"],
        2,
        "agentconform rules --suite agora-v1",
    )?;
    Ok(())
}

const AGORA_V1_FAMILIES: &[&str] = &[
    "freshness",
    "signature checking",
    "reply signing",
    "canonical form",
    "replay",
    "error code 400",
    "error code 401",
    "error code 402",
    "error code 404",
    "error code 408",
    "offer expiry",
    "budget",
    "request linking",
    "protocol tag",
];

const AGORA_EXCHANGE_FAMILIES: &[&str] = &[
    "failure shape",
    "body/error exclusivity",
    "conversation expiry",
    "protocol change",
    "unknown conversation",
    "unsupported protocol",
    "content type",
    "wellknown hash",
    "extra fields",
    "malformed JSON",
];

const AGORA_SPACES_FAMILIES: &[&str] = &[
    "handshake",
    "member updates",
    "delta use",
    "delta integrity",
    "unknown space",
    "duplicate agent",
    "error request_id",
    "heartbeat timeout",
    "cancel",
    "capacity",
];

const AGENTPROTOCOL_FAMILIES: &[&str] = &[
    "signature checking",
    "reply signing",
    "correlation",
    "unknown action code",
    "details.available",
    "to.agentId",
    "hello capabilities",
    "timeout",
    "invalid message",
];

/// The file binding end to end: `run --target file:///dir` against
/// `serve --listen file:///dir`.
fn cli_agentprotocol_file_binding() -> Result<(), Failed> {
    let dir = tempdir("ap-files");
    let url = format!("file://{}", dir.display());
    let (_guard, lines) = serve_lines(&["--suite", "agentprotocol", "--listen", &url], 1)?;
    let line = lines.join("\n");
    if line.trim() != url {
        return Err(format!("serve printed {line:?}, not {url}").into());
    }
    let out = expect_code(
        &["run", "--suite", "agentprotocol", "--target", &url],
        0,
        "0 failed",
    )?;
    if !out.contains("[file]") {
        return Err("no case ran over the file binding".into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `fuzz` and `replay` of `suite`, through the one engine: no finding against the
/// clean agent, with its throughput; `fault` is found, its crash file (of `oracle`)
/// carries a transcript and a replay line, and it replays against `serve --fault`
/// and not against a clean server.
fn cli_fuzz_and_replay(suite: &str, fault: &str, oracle: &str) -> Result<(), Failed> {
    let dir = tempdir("fuzz");
    let d = dir.to_string_lossy().into_owned();
    let clean = [
        "fuzz", "--suite", suite, "--cases", "2000", "--seed", "7", "--out", &d,
    ];
    let out = expect_code(&clean, 0, "0 findings")?;
    if !out.contains("cases/s") {
        return Err(format!("no throughput in {out}").into());
    }
    let faulty = [
        "fuzz", "--suite", suite, "--cases", "3000", "--seed", "7", "--fault", fault, "--out", &d,
    ];
    expect_code(&faulty, 1, "crash files")?;
    let crash = std::fs::read_dir(dir.join("crashes"))
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with(&format!("-{oracle}.json")))
        .ok_or_else(|| format!("no crash file of the {oracle} oracle"))?;
    let rec: Value = serde_json::from_slice(&std::fs::read(&crash).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    if rec["transcript"].as_array().is_none_or(|t| t.is_empty()) || !rec["replay"].is_string() {
        return Err(format!("the crash file lacks a transcript or a replay line: {rec}").into());
    }
    // A suite that signs records the campaign's signing keys, for the replay.
    let signs = agentconform::suites::parts(suite).is_some_and(|p| p.suite.signing.is_some());
    if rec["keys"]["key"].is_string() != signs || rec["keys"]["other_key"].is_string() != signs {
        return Err(format!("the crash file of {suite} records keys {}", rec["keys"]).into());
    }
    replays_only_against_fault(&crash, suite, fault)?;
    // Without --target, against the embedded reference started anew with the
    // campaign's fault, as the crash file records it.
    if rec["embedded"]["faults"] != serde_json::json!([fault]) {
        return Err(format!(
            "the crash file records the embedded faults {}",
            rec["embedded"]
        )
        .into());
    }
    expect_code(
        &["replay", &crash.to_string_lossy()],
        1,
        "started anew with the faults the crash file records",
    )?;
    // This oracle judges the whole exchange: no offline vector can show it.
    expect_code(
        &["export", &crash.to_string_lossy()],
        2,
        "no offline vector",
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A chorus campaign makes at most `--max-created` registrations and ledger
/// accounts, says so in its summary and findings.json, and stays clean: past the
/// cap, registration draws register its own agents again, and the cases that need
/// a fresh one are skipped. An agora-exchange campaign holds at most that many
/// conversations at once, an expired one no longer counting.
fn cli_fuzz_caps_what_it_leaves() -> Result<(), Failed> {
    let dir = tempdir("fuzz-cap");
    let d = dir.to_string_lossy().into_owned();
    let out = expect_code(
        &[
            "fuzz", "--suite", "chorus", "--cases", "3000", "--max-created", "40", "--out", &d,
        ],
        0,
        "left on the target: 40 ledger accounts, 40 registrations (at most 40 of each, --max-created)",
    )?;
    let f: Value = serde_json::from_slice(
        &std::fs::read(dir.join("findings.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let left = &f["left_behind"];
    if left["by_kind"]["registrations"] != 40 || left["cap_per_kind"] != 40 {
        return Err(format!("findings.json: left_behind {left}\n{out}").into());
    }
    // agora-exchange conversations count until they expire: at most 10 held at
    // once, and never more made than asked for.
    let ex = dir.join("exchange");
    let e = ex.to_string_lossy().into_owned();
    let out = expect_code(
        &[
            "fuzz",
            "--suite",
            "agora-exchange",
            "--cases",
            "2000",
            "--max-created",
            "10",
            "--out",
            &e,
        ],
        0,
        "the campaign's cap of 10 conversations on the target is reached",
    )?;
    let f: Value = serde_json::from_slice(
        &std::fs::read(ex.join("findings.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let left = &f["left_behind"];
    let held = left["by_kind"]["conversations"]
        .as_u64()
        .unwrap_or(u64::MAX);
    let made = left["made_by_kind"]["conversations"].as_u64().unwrap_or(0);
    if held > 10 || made < held || made == 0 || !out.contains("left on the target: ") {
        return Err(format!("findings.json: left_behind {left}\n{out}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `export` turns a failing case of a live run into an offline vector that
/// `replay` judges without the target: reproduced as recorded, not reproduced once
/// the recorded reply is a conforming one; a deviation no reply alone shows, and a
/// case that did not fail, are refused with their reason.
fn cli_export_and_replay_offline() -> Result<(), Failed> {
    let dir = tempdir("export");
    let d = dir.to_string_lossy().into_owned();
    let (_srv, url) = serve("agora-v1", &["--fault", "signature-hex"])?;
    let case = "agora-v1/reply-signature-encoding";
    expect_code(
        &[
            "run", "--suite", "agora-v1", "--target", &url, "--cases", case, "--report", &d,
        ],
        1,
        "FAIL",
    )?;
    let vector = dir.join("vector.json");
    let v = vector.to_string_lossy().into_owned();
    expect_code(
        &["export", &d, "--case", case, "--out", &v],
        0,
        "reply:signature-encoding",
    )?;
    drop(_srv);
    // The target is gone: the vector runs offline.
    expect_code(
        &["replay", &v],
        1,
        "REPRODUCED: agora-v1/reply:signature-encoding",
    )?;
    expect_code(&["replay", &v, "--target", &url], 2, "runs offline")?;
    // The same exchange with the reply the clean reference gives is not reproduced.
    let (_clean, clean_url) = serve("agora-v1", &[])?;
    let clean_dir = dir.join("clean");
    let cd = clean_dir.to_string_lossy().into_owned();
    expect_code(
        &[
            "run", "--suite", "agora-v1", "--target", &clean_url, "--cases", case, "--report", &cd,
        ],
        0,
        "0 failed",
    )?;
    let clean: Value = serde_json::from_slice(
        &std::fs::read(clean_dir.join("report.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let good = clean["cases"][0]["transcript"]
        .as_array()
        .and_then(|t| t.iter().find(|e| e["kind"] == "recv"))
        .and_then(|e| e["text"].as_str())
        .ok_or("no reply in the clean transcript")?
        .to_string();
    let mut rec: Value =
        serde_json::from_slice(&std::fs::read(&vector).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    for x in rec["exchanges"].as_array_mut().ok_or("no exchanges")? {
        x["received"] = Value::String(good.clone());
    }
    std::fs::write(&vector, rec.to_string()).map_err(|e| e.to_string())?;
    expect_code(&["replay", &v], 0, "not reproduced")?;
    // A passing case has nothing to export.
    expect_code(&["export", &cd, "--case", case], 2, "no failing")?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The client role: the reference client passes every client case of its suite,
/// and each of its faults fails exactly the cases the catalogue names.
fn cli_client_role(suite: &'static Suite) -> Result<(), Failed> {
    expect_code(
        &["run", "--suite", suite.id, "--role", "client"],
        0,
        &format!("{} passed, 0 failed", suite.client_cases.len()),
    )?;
    let exe = bin().to_string_lossy().into_owned();
    for f in suite.client_faults {
        let driver = format!(
            "'{exe}' client --suite {{suite}} --scenario {{scenario}} --url {{url}} --fault {}",
            f.name
        );
        let (code, out, err) = cli(&[
            "run", "--suite", suite.id, "--role", "client", "--client", &driver, "--format",
            "short",
        ])?;
        // A case at a SHOULD level warns where a MUST case fails.
        let failed: BTreeSet<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("FAIL ").or_else(|| l.strip_prefix("WARN ")))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|id| !id.starts_with('['))
            .collect();
        let want: BTreeSet<&str> = f.caught_by.iter().copied().collect();
        if code == 2 || failed != want {
            return Err(format!(
                "client fault {}: exit {code}, failed {failed:?}, want {want:?}\n{out}\n{err}",
                f.name
            )
            .into());
        }
    }
    Ok(())
}

/// `load`: every suite it drives, against its embedded reference, completes every
/// request with its marker (agora-spaces: 8 members publishing 3 events each, every
/// event delivered once to the 7 others); against a target that answers garbage
/// every request fails, by kind, and the exit is 1; against a hub that sends each
/// event back to its publisher only, twice, every delivery is lost and the
/// duplicate is named.
fn cli_load() -> Result<(), Failed> {
    for suite in agentconform::suites::loaded() {
        let (ok, unit) = if suite == "agora-spaces" {
            ("168 ok, 0 failed", "168 deliveries")
        } else {
            ("24 ok, 0 failed", "24 requests")
        };
        let out = expect_code(
            &[
                "load",
                "--suite",
                suite,
                "--clients",
                "8",
                "--requests",
                "3",
            ],
            0,
            ok,
        )?;
        if !out.contains(unit) {
            return Err(format!("load {suite}: not {unit}\n{out}").into());
        }
    }
    // A chorus target whose ledger is elsewhere: load pays where the profile says,
    // and without the profile each failure says why.
    let (_ledgered, lines) = common::serve_lines(
        &[
            "--listen",
            "127.0.0.1:0",
            "--suite",
            "chorus",
            "--separate-ledger",
        ],
        2,
    )?;
    let dir = tempdir("load-ledger");
    let profile = dir.join("chorus.toml");
    std::fs::write(
        &profile,
        format!("[target]\nledger_url = \"{}\"\n", lines[1]),
    )
    .map_err(|e| e.to_string())?;
    let p = profile.to_string_lossy().into_owned();
    let load = |extra: &[&str]| {
        let mut args = vec!["load", "--suite", "chorus", "--target", &lines[0]];
        args.extend_from_slice(&["--clients", "4", "--requests", "2"]);
        args.extend_from_slice(extra);
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let with: Vec<String> = load(&["--profile", &p]);
    expect_code(
        &with.iter().map(String::as_str).collect::<Vec<_>>(),
        0,
        "8 ok, 0 failed",
    )?;
    let without = load(&[]);
    expect_code(
        &without.iter().map(String::as_str).collect::<Vec<_>>(),
        1,
        "8 × refused (the first: refused: HTTP 404",
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    let rt = rt();
    let url = rt.block_on(hostile("garbage"));
    let _guard = rt.enter();
    expect_code(
        &[
            "load",
            "--suite",
            "agora-exchange",
            "--target",
            &url,
            "--clients",
            "4",
            "--requests",
            "2",
            "--timeout-ms",
            "500",
        ],
        1,
        "0 ok, 8 failed",
    )?;
    let hub = rt.block_on(hostile("ws-selfish"));
    let out = expect_code(
        &[
            "load",
            "--suite",
            "agora-spaces",
            "--target",
            &hub,
            "--clients",
            "3",
            "--requests",
            "2",
            "--timeout-ms",
            "300",
        ],
        1,
        "12 deliveries",
    )?;
    let needles = [
        "0 ok",
        "12 × lost",
        "duplicated: a member's own event came back twice",
    ];
    for needle in needles {
        if !out.contains(needle) {
            return Err(format!("load against the selfish hub: no {needle:?}\n{out}").into());
        }
    }
    expect_code(
        &["load", "--suite", "agora-spaces", "--clients", "1"],
        2,
        "at least 2",
    )?;
    expect_code(
        &["load", "--suite", "chorus", "--clients", "0"],
        2,
        "--clients",
    )?;
    Ok(())
}

/// A client driver that hangs, or floods its output, is ended at the profile's
/// deadline and capped: every case fails with what the driver did, none passes.
fn cli_client_driver_misbehaves() -> Result<(), Failed> {
    let dir = tempdir("client-driver");
    let profile = dir.join("p.toml");
    std::fs::write(
        &profile,
        "[client]\ntimeout_ms = 300\nstartup_ms = 300\nmax_output_bytes = 1024\n",
    )
    .map_err(|e| e.to_string())?;
    let p = profile.to_string_lossy().into_owned();
    for (driver, says) in [
        ("sleep 30", "still running at the deadline"),
        ("yes flood", "cut at 1024 bytes"),
        ("exit 3", "exited with 3"),
    ] {
        let report = dir.join("r");
        let r = report.to_string_lossy().into_owned();
        let (code, out, err) = cli(&[
            "run",
            "--suite",
            "agora-v1",
            "--role",
            "client",
            "--client",
            driver,
            "--profile",
            &p,
            "--report",
            &r,
        ])?;
        if code != 1 || out.contains("PASS ") {
            return Err(format!("driver {driver:?}: exit {code}\n{out}\n{err}").into());
        }
        let json =
            std::fs::read_to_string(report.join("report.json")).map_err(|e| e.to_string())?;
        if !json.contains(says) {
            return Err(format!("driver {driver:?}: the report does not say {says:?}").into());
        }
    }
    // What the driver started is ended with it: its whole process group.
    let pid_file = dir.join("pid");
    let driver = format!("sleep 1000 & echo $! > '{}'; wait", pid_file.display());
    cli(&[
        "run",
        "--suite",
        "agora-v1",
        "--role",
        "client",
        "--client",
        &driver,
        "--profile",
        &p,
    ])?;
    let pid = std::fs::read_to_string(&pid_file).map_err(|e| e.to_string())?;
    let proc_dir = std::path::Path::new("/proc").join(pid.trim());
    let gone = (0..40).any(|_| {
        let alive =
            std::fs::read_to_string(proc_dir.join("stat")).is_ok_and(|s| !s.contains(") Z "));
        if alive {
            std::thread::sleep(Duration::from_millis(50));
        }
        !alive
    });
    if !gone {
        return Err(format!("the driver's child {} outlived the run", pid.trim()).into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `fuzz --role client`: nothing against the reference client; a faulty client is
/// found, and its crash file replays through the driver it recorded and not
/// through a clean one.
fn cli_client_fuzz_and_replay() -> Result<(), Failed> {
    let dir = tempdir("client-fuzz");
    let d = dir.to_string_lossy().into_owned();
    let clean = [
        "fuzz", "--suite", "agora-v1", "--role", "client", "--cases", "60", "--out", &d,
    ];
    expect_code(&clean, 0, "0 findings")?;
    let exe = bin().to_string_lossy().into_owned();
    let driver = format!("'{exe}' client --suite {{suite}} --scenario {{scenario}} --url {{url}}");
    let faulty = format!("{driver} --fault accept-bad-offer-signature");
    expect_code(
        &[
            "fuzz",
            "--suite",
            "agora-v1",
            "--role",
            "client",
            "--client",
            &faulty,
            "--cases",
            "300",
            "--max-findings",
            "1",
            "--out",
            &d,
        ],
        1,
        "crash files",
    )?;
    let crash = std::fs::read_dir(dir.join("crashes"))
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with("-signature.json"))
        .ok_or("no crash file of the signature oracle")?;
    let c = crash.to_string_lossy().into_owned();
    expect_code(&["replay", &c], 1, "REPRODUCED")?;
    expect_code(&["replay", &c, "--target", &driver], 0, "not reproduced")?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The example client drivers in Python (`harness/client-drivers/`, one per suite:
/// the standard library, and `websockets` for agora-spaces) pass every client case
/// of their suite.
fn cli_client_example_driver(suite: &'static Suite, file: &'static str) -> Result<(), Failed> {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        return Err("python3 is not installed (Debian: python3)".into());
    }
    if suite.id == "agora-spaces" {
        let has = std::process::Command::new("python3")
            .args(["-c", "import websockets"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !has {
            return Err("the agora-spaces example driver needs the Python package websockets (Debian: python3-websockets; pip install websockets)".into());
        }
    }
    let driver = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("client-drivers")
        .join(file);
    let cmd = format!("python3 '{}'", driver.display());
    expect_code(
        &[
            "run", "--suite", suite.id, "--role", "client", "--client", &cmd,
        ],
        0,
        &format!("{} passed, 0 failed", suite.client_cases.len()),
    )?;
    Ok(())
}

/// The example driver of each suite, in `harness/client-drivers/`.
const EXAMPLE_DRIVERS: &[(&str, &str)] = &[
    ("agora-v1", "agora_v1_request.py"),
    ("agora-exchange", "agora_exchange_client.py"),
    ("agora-spaces", "agora_spaces_client.py"),
    ("chorus", "chorus_hire.py"),
    ("agentprotocol", "agentprotocol_request.py"),
];

/// One catalogue, two roles: every server fault states the duty it puts on a
/// client, every fault whose duty is to refuse or report its reply names client
/// cases of the suite that serve it (the reference client passes each, in
/// `cli::client_role`), and no client fault states a duty.
fn duties_are_served(suite: &'static Suite) -> Result<(), Failed> {
    use reference_impl::faults::Duty;
    let client: BTreeSet<&str> = suite.client_cases.iter().map(|c| c.id).collect();
    let mut served = 0;
    for f in suite.faults {
        match f.duty {
            Duty::NotStated => {
                return Err(format!("server fault {} states no client duty", f.name).into())
            }
            Duty::Refuse(cases) | Duty::ReportError(cases) => {
                for c in cases {
                    if !client.contains(*c) {
                        return Err(format!(
                            "server fault {}: its duty names {c}, which is no client case of {}",
                            f.name, suite.id
                        )
                        .into());
                    }
                }
                served += 1;
            }
            Duty::None | Duty::MayTake => {}
        }
    }
    if served == 0 {
        return Err(format!("no server fault of {} puts a duty on a client", suite.id).into());
    }
    if let Some(f) = suite
        .client_faults
        .iter()
        .find(|f| f.duty != Duty::NotStated)
    {
        return Err(format!("client fault {} states a client duty", f.name).into());
    }
    Ok(())
}

/// The driver interface, fair to real clients: `{url}` has no trailing slash, so a
/// client joining `{url}/conversations/{id}` passes; one that writes `//` draws a
/// warning, not a failure; a DELETE no spec part defines is reported as such and
/// not counted as a follow-up; a hirer that registers first is answered 201; a
/// driver that takes 12 s to start is not cut at the 10 s deadline.
fn cli_client_interface() -> Result<(), Failed> {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        return Err("python3 is not installed (Debian: python3)".into());
    }
    let dir = tempdir("client-interface");
    // A conversation driver that joins paths naively, as a client library does:
    // `{url}{sep}conversations/{id}`, then optionally closes with DELETE.
    let driver = dir.join("conversation.py");
    std::fs::write(
        &driver,
        r#"import json, os, sys, urllib.request
url, sep, close = os.environ["AGENTCONFORM_URL"], sys.argv[1], sys.argv[2] == "delete"
ask = json.load(open(os.environ["AGENTCONFORM_INPUT"]))
def call(method, to, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(to, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read(1 << 20))
    except urllib.error.HTTPError as e:
        return json.loads(e.read(1 << 20) or b"null")
first = call("POST", url, {"body": ask["body"], "protocolHash": ask["protocolHash"], "multiround": True})
print(json.dumps({"result": first["body"]}))
conv = url + sep + "conversations/" + first["conversationId"]
for b in ask["followups"]:
    print(json.dumps({"result": call("POST", conv, {"body": b})["body"]}))
if close:
    call("DELETE", conv)
"#,
    )
    .map_err(|e| e.to_string())?;
    let report = dir.join("report");
    let r = report.to_string_lossy().into_owned();
    for (sep, close, warning) in [
        ("/", "keep", None),
        ("//", "keep", Some("agora-exchange/client:double-slash")),
        (
            "/",
            "delete",
            Some("agora-exchange/client:undefined-request:DELETE /conversations/*"),
        ),
    ] {
        let cmd = format!("python3 '{}' '{sep}' {close}", driver.display());
        let args = [
            "run",
            "--suite",
            "agora-exchange",
            "--role",
            "client",
            "--cases",
            "agora-exchange/client-conversation",
            "--client",
            &cmd,
            "--report",
            &r,
        ];
        let outcome = if warning.is_some() {
            "0 passed, 0 failed, 1 warned"
        } else {
            "1 passed, 0 failed"
        };
        expect_code(&args, 0, outcome)?;
        let json =
            std::fs::read_to_string(report.join("report.json")).map_err(|e| e.to_string())?;
        let v: serde_json::Value = serde_json::from_str(&json).map_err(|e| e.to_string())?;
        let keys: Vec<(String, String)> = v["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                (
                    f["key"].as_str().unwrap_or("").to_string(),
                    f["outcome"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = warning
            .iter()
            .map(|k| (k.to_string(), "warn".to_string()))
            .collect();
        if keys != want {
            return Err(
                format!("joined with {sep:?}, {close}: findings {keys:?}, want {want:?}").into(),
            );
        }
    }
    let exe = bin().to_string_lossy().into_owned();
    let reference =
        format!("'{exe}' client --suite {{suite}} --scenario {{scenario}} --url {{url}}");
    // A hirer that registers itself first, as chorus.md's agents do.
    let register = format!(
        "python3 -c 'import os, urllib.request as u; u.urlopen(u.Request(os.environ[\"AGENTCONFORM_URL\"] + \"/register\", data=b\"{{}}\", headers={{\"content-type\": \"application/json\"}}), timeout=5)' && {reference}"
    );
    expect_code(
        &[
            "run",
            "--suite",
            "chorus",
            "--role",
            "client",
            "--cases",
            "chorus/client-hire",
            "--client",
            &register,
        ],
        0,
        "1 passed, 0 failed",
    )?;
    // A driver whose interpreter takes 12 s to start: the 10 s deadline counts from
    // its first connection, within the 30 s start-up allowance.
    let slow = format!("sleep 12 && {reference}");
    expect_code(
        &[
            "run",
            "--suite",
            "agora-v1",
            "--role",
            "client",
            "--cases",
            "agora-v1/client-direct",
            "--client",
            &slow,
        ],
        0,
        "1 passed, 0 failed",
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `replay` of `crash` reproduces against `serve --fault` and not against a clean server.
fn replays_only_against_fault(crash: &Path, suite: &str, fault: &str) -> Result<(), Failed> {
    let (_serve, url) = serve(suite, &["--fault", fault])?;
    let replayed = expect_code(
        &["replay", &crash.to_string_lossy(), "--target", &url],
        1,
        "REPRODUCED",
    )?;
    let recorded: Value = serde_json::from_slice(&std::fs::read(crash).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    if recorded["keys"].is_object() && !replayed.contains("signing with the keys the campaign used")
    {
        return Err(format!("the replay does not sign with the recorded keys:\n{replayed}").into());
    }
    // The same case against the same fault, in a file that records another
    // signature: replay names what it saw and does not call it a reproduction.
    let mut other: Value =
        serde_json::from_slice(&std::fs::read(crash).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    other["signature"] = Value::from(format!("{suite}/another:signature"));
    other["shrunk"]["alone"] = Value::from(false);
    let moved = crash.with_extension("other.json");
    std::fs::write(&moved, other.to_string()).map_err(|e| e.to_string())?;
    expect_code(
        &["replay", &moved.to_string_lossy(), "--target", &url],
        3,
        &format!("not reproduced: it showed {suite}/"),
    )?;
    let (_clean, clean_url) = serve(suite, &[])?;
    expect_code(
        &["replay", &crash.to_string_lossy(), "--target", &clean_url],
        0,
        "not reproduced",
    )?;
    Ok(())
}

/// A crash file records the profile its campaign ran with, and a replay without
/// `--profile` runs with it and reproduces; a replay whose profile names a fixture
/// the target lacks reproduces nothing, names the setting and exits 2.
fn cli_replay_takes_the_campaigns_profile() -> Result<(), Failed> {
    let dir = tempdir("replay-profile");
    let (_serve, url) = serve("chorus", &["--fault", "validates-nothing"])?;
    let write = |name: &str, text: &str| -> Result<String, Failed> {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| e.to_string())?;
        Ok(p.to_string_lossy().into_owned())
    };
    let prof = write("profile.toml", "[chorus]\nfixture_skill = \"echo_text\"\n")?;
    let out = dir.join("out").to_string_lossy().into_owned();
    let fuzz = [
        "fuzz",
        "--suite",
        "chorus",
        "--target",
        &url,
        "--profile",
        &prof,
        "--cases",
        "2000",
        "--seed",
        "7",
        "--out",
        &out,
    ];
    expect_code(&fuzz, 1, "chorus/job-rejects-invalid")?;
    let mut crash = None;
    for e in std::fs::read_dir(dir.join("out/crashes")).map_err(|e| e.to_string())? {
        let path = e.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|x| x == "json") {
            let rec: Value =
                serde_json::from_slice(&std::fs::read(&path).map_err(|e| e.to_string())?)
                    .map_err(|e| e.to_string())?;
            if rec["signature"] == "chorus/job-rejects-invalid" {
                crash = Some((path, rec));
            }
        }
    }
    let (crash, rec) = crash.ok_or("no crash file of chorus/job-rejects-invalid")?;
    let recorded = &rec["profile"];
    if !recorded["toml"]
        .as_str()
        .is_some_and(|t| t.contains("echo_text"))
        || !recorded["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("profile.toml"))
    {
        return Err(format!("the crash file does not record its profile: {recorded}").into());
    }
    let crash = crash.to_string_lossy().into_owned();
    let replayed = expect_code(
        &["replay", &crash],
        1,
        "REPRODUCED: chorus/job-rejects-invalid",
    )?;
    if !replayed.contains("with the profile the campaign ran with") {
        return Err(
            format!("the replay does not say it took the recorded profile:\n{replayed}").into(),
        );
    }
    let wrong = write(
        "wrong.toml",
        "[chorus]\nfixture_skill = \"no_such_skill\"\n",
    )?;
    expect_code(
        &["replay", &crash, "--profile", &wrong],
        2,
        "set [chorus] fixture_skill",
    )?;
    // A campaign with that profile files nothing for the setting: a setup note,
    // given once.
    let (_clean, clean_url) = serve("chorus", &[])?;
    let out = dir.join("setup").to_string_lossy().into_owned();
    let setup = [
        "fuzz",
        "--suite",
        "chorus",
        "--target",
        &clean_url,
        "--profile",
        &wrong,
        "--cases",
        "600",
        "--out",
        &out,
    ];
    let said = expect_code(&setup, 0, "skipped for a setting the run lacks")?;
    if !said.contains("set [chorus] fixture_skill") || said.matches("fixture_skill").count() > 2 {
        return Err(
            format!("the setup note is not given once, naming the setting:\n{said}").into(),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

const CHORUS_FAMILIES: &[&str] = &[
    "initial reputation",
    "ranking",
    "filters",
    "clamping",
    "success reward",
    "failure penalty",
    "budget check",
    "skill check",
    "overdraft",
    "register status",
    "duplicate transfer",
    "callback",
];

/// The chorus reference with callback delivery passes every case too.
fn chorus_callback_delivery_passes() -> Result<(), Failed> {
    let out = rt().block_on(async {
        let opts = embedded::Options {
            chorus_delivery: Some(reference_impl::chorus::server::Delivery::Callback),
            ..embedded::Options::default()
        };
        let server = suites::start("chorus", "127.0.0.1:0", &opts)
            .await
            .expect("start");
        let out = runner::run(
            shared(Profile::default()),
            &[(&suites::chorus::SUITE, server.endpoints.clone())],
            &Selection::default(),
        )
        .await
        .expect("run");
        server.stop().await;
        out
    });
    let bad: Vec<CaseResult> = out
        .results
        .into_iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("with callback delivery:\n{}", describe(&bad)).into())
    }
}

/// conversation-expiry against a reference that reads conversationExpires as the
/// whole second (the other reading the spec allows, AEX-A11): the follow-up just past
/// the instant is taken, the case notes it and waits the second out, then passes;
/// with ignore-expiry on as well, the follow-up after the second fails it.
fn expiry_whole_second_reading(fault: Option<&'static str>) -> Result<(), Failed> {
    let faults: Vec<&str> = fault.into_iter().collect();
    let out = rt().block_on(async {
        let opts = embedded::Options {
            expiry_whole_second: true,
            ..common::test_options(&faults)
        };
        let server = suites::start("agora-exchange", "127.0.0.1:0", &opts)
            .await
            .expect("start");
        let selection = Selection {
            include: vec!["agora-exchange/conversation-expiry".into()],
            ..Selection::default()
        };
        let out = runner::run(
            shared(common::test_profile()),
            &[(&suites::agora_exchange::SUITE, server.endpoints.clone())],
            &selection,
        )
        .await
        .expect("run");
        server.stop().await;
        out
    });
    let [r] = out.results.as_slice() else {
        return Err(format!("expected one result:\n{}", describe(&out.results)).into());
    };
    let taken = r
        .transcript
        .iter()
        .any(|e| e.kind == "note" && e.text.contains("within the second of conversationExpires"));
    let want = if fault.is_some() {
        Outcome::Fail
    } else {
        Outcome::Pass
    };
    if r.outcome != want || !taken {
        return Err(format!(
            "want {want} after a follow-up taken within the second (noted: {taken}):\n{}",
            describe(&out.results)
        )
        .into());
    }
    Ok(())
}

/// A profile's ledger_url and outcome_request are honoured: against a registry
/// without a ledger, the run passes only through the profile's ledger URL, and an
/// outcome request the target does not serve makes the reputation cases fail.
fn cli_profile_ledger_and_outcome_request() -> Result<(), Failed> {
    let (_guard, urls) = serve_lines(
        &[
            "--suite",
            "chorus",
            "--listen",
            "127.0.0.1:0",
            "--separate-ledger",
        ],
        2,
    )?;
    let (registry, ledger) = (urls[0].clone(), urls[1].clone());
    let dir = tempdir("chorus-profile");
    let good = dir.join("good.toml");
    std::fs::write(&good, format!(
        "[target]\nledger_url = \"{ledger}\"\n[chorus]\noutcome_request = \"POST /reputation/{{agent_id}}/{{outcome}}?job_id={{job_id}}\"\n"
    )).map_err(|e| e.to_string())?;
    expect_code(
        &[
            "run",
            "--suite",
            "chorus",
            "--target",
            &registry,
            "--profile",
            &good.to_string_lossy(),
        ],
        0,
        "0 failed",
    )?;
    // Without the profile the transfers go to the registry, which has no ledger:
    // a setting the run lacks, never the target's failure; nothing judged, exit 2.
    expect_code(
        &[
            "run",
            "--suite",
            "chorus",
            "--target",
            &registry,
            "--cases",
            "chorus/transfer*",
        ],
        2,
        "needs profile key [target] ledger_url",
    )?;
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, format!(
        "[target]\nledger_url = \"{ledger}\"\n[chorus]\noutcome_request = \"POST /nowhere/{{agent_id}}\"\n"
    )).map_err(|e| e.to_string())?;
    expect_code(
        &[
            "run",
            "--suite",
            "chorus",
            "--target",
            &registry,
            "--profile",
            &bad.to_string_lossy(),
            "--cases",
            "chorus/reputation-*",
        ],
        2,
        "needs profile key [chorus] outcome_request",
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `init` against reference variants that need a profile today (documents only by
/// reference, a ledger on a URL of its own, a fixture skill of another name, no
/// /wellknown, a hub that creates no space and serves another public one): it
/// writes a profile whose every key docs/profile.md documents; `run`
/// with it fails nothing; a key it cannot find says why, and `run` with that
/// profile blocks the cases that need it and fails none; run again, `init` says
/// nothing changed. Without a profile, `run` finds the same keys, says it set
/// them, and gives the same verdicts.
fn cli_init() -> Result<(), Failed> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/profile.md"))
            .map_err(|e| e.to_string())?;
    let reference = readme
        .split("## Target profile")
        .nth(1)
        .ok_or("docs/profile.md has no Target profile section")?;
    let dir = tempdir("init");
    for (suite, flags, found, missing) in [
        (
            "agora-exchange",
            &["--sources-by-reference"][..],
            &[
                "protocol_hash",
                "protocol_document",
                "protocol_sources = \"url\"",
            ][..],
            &[][..],
        ),
        (
            "chorus",
            &["--separate-ledger"][..],
            &["fixture_skill", "outcome_request"][..],
            &["ledger_url"][..],
        ),
        (
            "chorus",
            &["--openapi"][..],
            &["outcome_request = \"POST /reputation/{agent_id}/{outcome}\""][..],
            &[][..],
        ),
        (
            "chorus",
            &["--openapi", "--separate-ledger"][..],
            &[
                "ledger_url = \"http://127.0.0.1:",
                "outcome_request = \"POST /reputation/{agent_id}/{outcome}\"",
            ][..],
            &[][..],
        ),
        (
            "chorus",
            &["--openapi", "--separate-ledger", "--initial-credits", "0"][..],
            &[
                "ledger_url = \"http://127.0.0.1:",
                "setup_requests = [{ base = \"ledger\", body = '{\"owner_id\": \"{owner_id}\", \"credits\": {amount}}', method = \"POST\", on = \"owner\", path = \"/accounts\" }]",
            ][..],
            &[][..],
        ),
        (
            "chorus",
            &["--initial-credits", "0"][..],
            &["fixture_skill"][..],
            &["setup_requests"][..],
        ),
        (
            "chorus",
            &["--fixture-skill", "summarize_text"][..],
            &["fixture_skill = \"summarize_text\"", "ledger_url"][..],
            &[][..],
        ),
        (
            "agora-exchange",
            &["--fault", "protocol-hash-base64"][..],
            &[
                "protocol_hash",
                "protocol_document",
                "protocol_sources = \"text\"",
            ][..],
            &[][..],
        ),
        (
            "agora-exchange",
            &["--fault", "wellknown-wrapped"][..],
            &[
                "protocol_hash = \"",
                "protocol_document",
                "protocol_sources = \"text\"",
            ][..],
            &[][..],
        ),
        (
            "agentprotocol",
            &[][..],
            &["agent_id", "echo_action", "delay_action"][..],
            &[][..],
        ),
        (
            "agentprotocol",
            &["--fault", "no-details-available"][..],
            &["agent_id", "echo_action", "delay_action"][..],
            &[][..],
        ),
        (
            "agora-v1",
            &[][..],
            &[
                "direct_resource = \"agora:echo:v1\"",
                "negotiated_resource = \"agora:quote:v1\"",
            ][..],
            &[][..],
        ),
        (
            "agora-exchange",
            &["--protocol", "sum"][..],
            &[
                "valid_body = '{\"numbers\"",
                "invalid_body = '{\"numbers\":42}'",
            ][..],
            &[][..],
        ),
        (
            "agora-exchange",
            &["--no-wellknown"][..],
            &[][..],
            &["protocol_hash"][..],
        ),
        (
            "agora-spaces",
            &["--no-space-creation", "--public-space", "lobby"][..],
            &["public_space = \"lobby\"", "full_space = \"full\""][..],
            &[][..],
        ),
    ] {
        let (_srv, url) = serve(suite, flags)?;
        let file = dir.join(format!("{suite}{}.toml", flags.join("")));
        let f = file.to_string_lossy().into_owned();
        let out = expect_code(
            &["init", "--suite", suite, "--target", &url, "--out", &f],
            0,
            "written to",
        )?;
        let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
        for k in found {
            if !text.lines().any(|l| l.starts_with(k)) {
                return Err(format!("{suite}: init did not find {k}:\n{text}\n{out}").into());
            }
        }
        for k in missing {
            if !text.contains(&format!("# {k}: not found.")) {
                return Err(
                    format!("{suite}: init does not say why {k} is not found:\n{text}").into(),
                );
            }
        }
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(" = "))
        {
            let key = line.split(" = ").next().unwrap_or_default();
            // An array of tables (`[[chorus.setup_requests]]`) is written inline.
            if !reference.contains(&format!("\n{key} = "))
                && !reference.contains(&format!("[[chorus.{key}]]"))
            {
                return Err(format!(
                    "{suite}: init wrote {key}, which docs/profile.md does not document"
                )
                .into());
            }
        }
        let run = cli(&["run", "--suite", suite, "--target", &url, "--profile", &f])?;
        // A fault's own finding, and no other; a clean variant: nothing fails.
        let fault_finding = match flags {
            ["--fault", "protocol-hash-base64"] => Some("agora-exchange/protocol-hash:form"),
            // The wrapper is its own finding; the protocol init finds inside it is
            // taken, so no case fails on a key that is no protocol.
            ["--fault", "wellknown-wrapped"] => Some("agora-exchange/wellknown:wrapped"),
            // The actions are read from the hello's capabilities instead.
            ["--fault", "no-details-available"] => Some("agentprotocol/unknown-action:details"),
            _ => None,
        };
        let failing: Vec<&str> = run.1.lines().filter(|l| l.starts_with("FAIL [")).collect();
        let as_expected = match fault_finding {
            None => run.0 == 0 && !run.1.contains("FAIL "),
            Some(key) => run.0 == 1 && failing.len() == 1 && failing[0].contains(key),
        };
        // No setting is lacking but the keys init could not find.
        if !as_expected || (missing.is_empty() && run.1.contains("/profile:")) {
            return Err(format!(
                "{suite} {flags:?}: run with the profile init wrote: exit {}\n{}",
                run.0, run.1
            )
            .into());
        }
        if !missing.is_empty() && !run.1.contains("needs profile key") {
            return Err(format!("{suite}: no case says which key it needs:\n{}", run.1).into());
        }
        expect_code(
            &["init", "--suite", suite, "--target", &url, "--out", &f],
            0,
            "nothing to change in",
        )?;
        // A hand-completed profile: init merges into it and keeps what it did not
        // find; --force rewrites it from what it found and says what is gone.
        let hand = format!("{text}\n# mine\n[timing]\ncase_timeout_ms = 4321\n");
        std::fs::write(&file, &hand).map_err(|e| e.to_string())?;
        expect_code(
            &["init", "--suite", suite, "--target", &url, "--out", &f],
            0,
            "nothing to change in",
        )?;
        let kept = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
        if kept != hand {
            return Err(
                format!("{suite}: init did not keep the hand-completed profile:\n{kept}").into(),
            );
        }
        expect_code(
            &[
                "init", "--suite", suite, "--target", &url, "--out", &f, "--force",
            ],
            0,
            "gone [timing] case_timeout_ms (was 4321)",
        )?;
        // Without a profile, the run finds the same and gives the same verdicts,
        // saying what it assumed.
        let plain = cli(&["run", "--suite", suite, "--target", &url])?;
        let fails = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.starts_with("FAIL ["))
                .map(|l| l.split(" (").next().unwrap_or(l).to_string())
                .collect()
        };
        let assumed = text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(" = "))
            // The keys whose value is not what the cases find themselves.
            .filter(|l| {
                [
                    "fixture_skill = \"summarize",
                    "public_space = \"lobby",
                    "full_space",
                    "outcome_request = \"POST /reputation",
                    "setup_requests",
                ]
                .iter()
                .any(|k| l.starts_with(k))
                    || (l.starts_with("ledger_url") && !l.contains(url.trim_end_matches('/')))
            })
            .all(|l| plain.1.contains(&l.replacen(" = ", " set to ", 1)));
        if plain.0 != run.0
            || fails(&plain.1) != fails(&run.1)
            || !assumed
            || (missing.is_empty() && plain.1.contains("needs profile key"))
        {
            return Err(format!(
                "{suite} {flags:?} without a profile: exit {} (with init's: {})\n{}",
                plain.0, run.0, plain.1
            )
            .into());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `init` reads what a target publishes of itself, and the run with its profile
/// sees what the run with a hand-written profile sees: a chorus registry that
/// serves an OpenAPI document, takes outcomes at a route of its own and keeps its
/// ledger at another URL (named by the document); an agora-exchange server whose
/// protocol is its own, its body written as an example in its document. Each
/// variant has deviations that only a case needing those keys sees.
fn cli_init_sees_what_a_hand_written_profile_sees() -> Result<(), Failed> {
    type Hand = fn(&[String]) -> String;
    // Suite, serve flags, the hand-written profile (from the URLs serve printed),
    // what init's profile must say it read, and findings both runs must show.
    type Variant = (
        &'static str,
        &'static [&'static str],
        Hand,
        &'static str,
        &'static [&'static str],
    );
    let variants: [Variant; 2] = [
        (
            "chorus",
            &[
                "--openapi",
                "--separate-ledger",
                "--initial-credits",
                "0",
                "--fault",
                "no-clamp",
                "--fault",
                "allow-overdraft",
            ],
            |urls| {
                format!(
                "[target]\nledger_url = \"{}\"\n[chorus]\noutcome_request = \"POST /reputation/{{agent_id}}/{{outcome}}\"\n[[chorus.setup_requests]]\non = \"owner\"\nbase = \"ledger\"\npath = \"/accounts\"\nbody = '{{\"owner_id\": \"{{owner_id}}\", \"credits\": {{amount}}}}'\n",
                urls[1]
            )
            },
            "GET /openapi.json lists POST /transfer at ",
            &["reputation:clamp", "transfer-insufficient"],
        ),
        (
            "agora-exchange",
            &["--protocol", "sum", "--fault", "protocol-error-as-failure"],
            |_| {
                "[agora-exchange]\nvalid_body = '{\"numbers\": [4, 5]}'\ninvalid_body = '{\"numbers\": \"x\"}'\n".to_string()
            },
            "the document's example, which the server took",
            &["protocol-level-error"],
        ),
    ];
    for (suite, flags, hand_text, how, both) in variants {
        let mut args = vec!["--suite", suite];
        args.extend_from_slice(flags);
        let lines = if flags.contains(&"--separate-ledger") {
            2
        } else {
            1
        };
        let (_srv, urls) = common::serve_lines(&args, lines)?;
        let url = &urls[0];
        let dir = tempdir("init-hand");
        let found = dir.join("init.toml").to_string_lossy().into_owned();
        let out = expect_code(
            &["init", "--suite", suite, "--target", url, "--out", &found],
            0,
            "0 not found",
        )?;
        let written = std::fs::read_to_string(&found).map_err(|e| e.to_string())?;
        if !written.contains(how) {
            return Err(format!(
                "{suite}: init did not read what the target publishes ({how}):\n{written}"
            )
            .into());
        }
        let hand = dir.join("hand.toml");
        std::fs::write(&hand, hand_text(&urls)).map_err(|e| e.to_string())?;
        let fails = |profile: &str| -> Result<(i32, Vec<String>), Failed> {
            let (code, text, _) = cli(&[
                "run",
                "--suite",
                suite,
                "--target",
                url,
                "--profile",
                profile,
            ])?;
            let mut f: Vec<String> = text
                .lines()
                .filter(|l| l.starts_with("FAIL [") || l.contains("needs profile key"))
                .map(|l| l.split(" (").next().unwrap_or(l).to_string())
                .collect();
            f.sort();
            Ok((code, f))
        };
        let by_init = fails(&found)?;
        let by_hand = fails(&hand.to_string_lossy())?;
        if by_init != by_hand
            || by_init.0 != 1
            || !both.iter().all(|k| by_init.1.iter().any(|l| l.contains(k)))
            || by_init.1.iter().any(|l| l.contains("needs profile key"))
        {
            return Err(format!(
                "{suite}: init's profile: {by_init:?}\nhand-written: {by_hand:?}\ninit said:\n{out}\n{written}"
            )
            .into());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

fn main() {
    let mut args = Arguments::from_args();
    // Most of these tests wait on loopback exchanges and configured deadlines, not on
    // the CPU: at least four at a time, unless --test-threads says otherwise.
    if args.test_threads.is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        args.test_threads = Some(cores.max(4));
    }
    let mut trials = vec![
        Trial::test("hostile::hanging_target_times_out", || {
            hostile_target("hang", "did not answer within 300 ms")
        }),
        Trial::test("hostile::garbage_reply_fails", || {
            hostile_target("garbage", "not JSON")
        }),
        Trial::test("hostile::endless_body_is_capped", || {
            hostile_target("endless", "exceeds the 65536-byte cap")
        }),
        Trial::test(
            "hostile::silent_exchange_target_run_is_bounded",
            hostile_exchange_run_is_bounded,
        ),
        Trial::test(
            "cli::run_embedded_writes_reports",
            cli_run_embedded_writes_reports,
        ),
        Trial::test("cli::usage_errors_exit_2", cli_usage_errors),
        Trial::test(
            "cli::unreachable_target_fails",
            cli_unreachable_target_fails,
        ),
        Trial::test("cli::canon_sign_verify", cli_canon_sign_verify),
        Trial::test(
            "cli::baseline_expected_and_stale",
            cli_baseline_expected_and_stale,
        ),
        Trial::test("cli::closed_pipe_is_quiet", cli_closed_pipe_is_quiet),
        Trial::test("cli::list", cli_list),
        Trial::test("cli::rules_and_explain", cli_rules_and_explain),
    ];
    trials.push(Trial::test(
        "reference::chorus::callback_delivery_passes_every_case",
        chorus_callback_delivery_passes,
    ));
    trials.push(Trial::test(
        "reference::agora_exchange::expiry_whole_second_passes",
        || expiry_whole_second_reading(None),
    ));
    trials.push(Trial::test(
        "reference::agora_exchange::expiry_whole_second_ignore_expiry_fails",
        || expiry_whole_second_reading(Some("ignore-expiry")),
    ));
    trials.push(Trial::test(
        "cli::chorus_profile_ledger_and_outcome_request",
        cli_profile_ledger_and_outcome_request,
    ));
    trials.push(Trial::test(
        "cli::agentprotocol_file_binding",
        cli_agentprotocol_file_binding,
    ));
    for suite in suites::all()
        .into_iter()
        .filter(|s| !s.client_cases.is_empty())
    {
        trials.push(Trial::test(
            format!("cli::client_role::{}", suite.id),
            move || cli_client_role(suite),
        ));
    }
    trials.push(Trial::test(
        "cli::client_fuzz_and_replay",
        cli_client_fuzz_and_replay,
    ));
    trials.push(Trial::test("cli::load", cli_load));
    trials.push(Trial::test(
        "readme_requirement_counts",
        readme_requirement_counts,
    ));
    trials.push(Trial::test(
        "cli::client_driver_misbehaves",
        cli_client_driver_misbehaves,
    ));
    let python = common::runs("python3");
    for (id, file) in EXAMPLE_DRIVERS {
        let Some(suite) = suites::by_id(id) else {
            continue;
        };
        let name = format!("cli::client_example_driver::{id}");
        let skip = if *id == "agora-spaces" {
            common::skip_without(
                &name,
                "python3 with the package websockets",
                python && common::python_has("websockets"),
                "Debian: apt-get install python3-websockets; or pip install websockets",
            )
        } else {
            common::skip_without(&name, "python3", python, "Debian: apt-get install python3")
        };
        trials.push(
            Trial::test(name, move || cli_client_example_driver(suite, file))
                .with_ignored_flag(skip),
        );
    }
    let skip = common::skip_without(
        "cli::client_interface",
        "python3",
        python,
        "Debian: apt-get install python3",
    );
    trials.push(Trial::test("cli::client_interface", cli_client_interface).with_ignored_flag(skip));
    trials.push(Trial::test("cli::init", cli_init));
    trials.push(Trial::test(
        "cli::init_sees_what_a_hand_written_profile_sees",
        cli_init_sees_what_a_hand_written_profile_sees,
    ));
    trials.push(Trial::test(
        "cli::export_and_replay_offline",
        cli_export_and_replay_offline,
    ));
    for (suite, fault, oracle) in [
        ("agora-v1", "skip-signature-check", "signature"),
        // Judged by the unknown-conversation case's rule, so filed under its key.
        (
            "agora-exchange",
            "accept-unknown-conversation",
            "reply-check",
        ),
    ] {
        trials.push(Trial::test(
            format!("cli::fuzz_and_replay::{suite}"),
            move || cli_fuzz_and_replay(suite, fault, oracle),
        ));
    }
    trials.push(Trial::test(
        "cli::fuzz_caps_what_it_leaves",
        cli_fuzz_caps_what_it_leaves,
    ));
    trials.push(Trial::test(
        "cli::replay_takes_the_campaigns_profile",
        cli_replay_takes_the_campaigns_profile,
    ));
    let suites: [(&'static Suite, &'static [&'static str]); 5] = [
        (&suites::agentprotocol::SUITE, AGENTPROTOCOL_FAMILIES),
        (&suites::agora_v1::SUITE, AGORA_V1_FAMILIES),
        (&suites::agora_spaces::SUITE, AGORA_SPACES_FAMILIES),
        (&suites::chorus::SUITE, CHORUS_FAMILIES),
        (&suites::agora_exchange::SUITE, AGORA_EXCHANGE_FAMILIES),
    ];
    for (suite, families) in suites {
        let id = suite.id.replace('-', "_");
        trials.push(Trial::test(
            format!("reference::{id}::clean_agent_passes_every_case"),
            move || clean_reference_passes(suite),
        ));
        trials.push(Trial::test(format!("coverage::{id}"), move || {
            coverage(suite)
        }));
        trials.push(Trial::test(
            format!("faults::{id}::catalogue_names_real_cases_and_every_family"),
            move || faults_name_real_cases(suite, families),
        ));
        trials.push(Trial::test(
            format!("faults::{id}::every_client_duty_is_served_by_a_client_case"),
            move || duties_are_served(suite),
        ));
        for f in suites::faults(suite.id).unwrap_or(&[]) {
            let (name, caught_by, keys) = (f.name, f.caught_by, f.findings);
            trials.push(Trial::test(format!("faults::{id}::{name}"), move || {
                fault_is_caught(suite, name, caught_by, keys)
            }));
            trials.push(Trial::test(
                format!("cli::run_exits_1_against_fault::{id}::{name}"),
                move || cli_run_against_fault(suite.id, name),
            ));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
