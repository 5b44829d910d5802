//! This suite's part of the verdict-model tests: faults switched on together, and
//! tests of its own: the profile keys that describe what chorus.md leaves to the
//! target (setup requests that fund owners, an outcome request that tells the
//! hirer's reputation, the fixture's output, idempotent transfers), and readings the
//! spec allows (timestamps with an offset of zero).

use crate::common::{assert_explained, rt, shared, test_profile};
use crate::describe;
use agentconform::case::{Level, Outcome};
use agentconform::embedded;
use agentconform::finding::Verdict;
use agentconform::profile::Profile;
use agentconform::runner::{self, RunOutput, Selection};
use agentconform::suites;
use libtest_mimic::{Failed, Trial};
use reference_impl::chorus::server::ChorusConfig;

/// Faults switched on together; each must still be reported.
pub const COMBINED: &[&[&str]] = &[
    // Two deviations in the same discovery entries, and one in the ledger.
    &[
        "discover-skills-list",
        "agent-ids-hex",
        "transfer-failed-200",
    ],
    // A result status, an error shape and a reputation rule at once.
    &[
        "result-status-lowercase",
        "skill-mismatch-detail-404",
        "failure-penalty-3",
    ],
    // Every agent starts elsewhere, SUCCESS gains and the ranking are off.
    &[
        "initial-reputation-40",
        "success-reward-flat",
        "ranking-ascending",
    ],
];

/// Runs the chorus suite against a reference started with `cfg`.
fn run_with(
    cfg: ChorusConfig,
    separate_ledger: bool,
    profile: impl FnOnce(Option<&str>) -> Profile,
) -> RunOutput {
    rt().block_on(async {
        let server = embedded::start_chorus(cfg, "127.0.0.1:0", separate_ledger)
            .await
            .expect("start the chorus reference");
        let profile = profile(server.ledger_url.as_deref());
        let out = runner::run(
            shared(profile),
            &[(&suites::chorus::SUITE, server.endpoints.clone())],
            &Selection::default(),
        )
        .await
        .expect("run");
        server.stop().await;
        assert_explained(&out);
        out
    })
}

fn toml_profile(text: &str) -> Profile {
    Profile::from_toml(text, "test.toml").expect("the test profile parses")
}

fn no_finding(out: &RunOutput, what: &str) -> Result<(), Failed> {
    if out.findings.is_empty() && out.results.iter().all(|r| r.outcome == Outcome::Pass) {
        Ok(())
    } else {
        Err(format!("{what}: expected a clean run:\n{}", describe(out)).into())
    }
}

/// A missing setting, not a deviation: no failing finding at all; the one setting
/// finding `key` (PROFILE, a warning) names `names`, the case `owner` met it, and
/// every case that met it is blocked by it, saying which profile key it needs.
fn one_profile_finding(out: &RunOutput, key: &str, owner: &str, names: &str) -> Result<(), Failed> {
    let failing: Vec<&str> = out
        .findings
        .iter()
        .filter(|f| f.finding.outcome == Verdict::Fail)
        .map(|f| f.finding.key.as_str())
        .collect();
    let found = out.findings.iter().find(|f| f.finding.key == key);
    let setting = found.and_then(|f| f.finding.setting()).unwrap_or_default();
    let problem = match found {
        _ if !failing.is_empty() => Some(format!("failing findings {failing:?}, want none")),
        None => Some(format!("no finding {key}")),
        Some(_) if setting.is_empty() => Some(format!("{key} names no setting")),
        Some(f) if f.finding.level != Level::Profile => {
            Some(format!("{key} is {}, not PROFILE", f.finding.level))
        }
        Some(f) if !f.finding.summary.contains(names) => {
            Some(format!("{key} does not name {names:?}"))
        }
        Some(f) if !f.cases.iter().any(|c| c.starts_with(owner)) => {
            Some(format!("{owner} did not meet {key}: {:?}", f.cases))
        }
        Some(f) => {
            let wrong: Vec<String> = out
                .results
                .iter()
                .filter(|r| f.cases.contains(&format!("{} [{}]", r.id, r.transport)))
                .filter(|r| {
                    r.outcome != Outcome::Blocked
                        || !r
                            .message
                            .starts_with(&format!("needs profile key {setting}"))
                })
                .map(|r| format!("{} {}: {}", r.outcome, r.id, r.message))
                .collect();
            (!wrong.is_empty())
                .then(|| format!("cases that met {key} and are not blocked by it: {wrong:?}"))
        }
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(format!("{p}\n{}", describe(out)).into()),
    }
}

/// A ledger where fresh owners hold nothing: without setup requests the transfer
/// cases are blocked by the profile key to set (not a FACT of chorus.md); with a setup
/// request that opens and funds each owner's account, the run is clean.
fn owners_funded_by_setup_requests() -> Result<(), Failed> {
    let cfg = || ChorusConfig {
        initial_credits_cents: 0,
        ..ChorusConfig::default()
    };
    let plain = run_with(cfg(), true, |ledger| {
        let mut p = test_profile();
        p.target.ledger_url = ledger.map(String::from);
        p
    });
    one_profile_finding(
        &plain,
        "chorus/profile:initial_credits",
        "chorus/transfer",
        "[[chorus.setup_requests]]",
    )?;
    let funded = run_with(cfg(), true, |ledger| {
        toml_profile(&format!(
            r#"[target]
ledger_url = "{}"
[[chorus.setup_requests]]
on = "owner"
base = "ledger"
path = "/accounts"
body = '{{"owner_id": "{{owner_id}}", "credits": {{amount}}}}'
"#,
            ledger.unwrap_or_default()
        ))
    });
    no_finding(&funded, "owners funded by a setup request")
}

/// A registry that must be told the hirer's reputation, under a member of its
/// own: the default outcome body is refused (the cases blocked by a setting
/// finding naming the keys);
/// an outcome body with `{hirer_reputation}` under that member passes, path
/// placeholders included.
fn hirer_reputation_in_the_outcome_request() -> Result<(), Failed> {
    let cfg = || ChorusConfig {
        hirer_reputation_member: Some("contractor_reputation".into()),
        ..ChorusConfig::default()
    };
    let plain = run_with(cfg(), false, |_| test_profile());
    one_profile_finding(
        &plain,
        "chorus/profile:outcome_request",
        "chorus/reputation-success",
        "outcome_body",
    )?;
    let told = run_with(cfg(), false, |_| {
        toml_profile(
            r#"[chorus]
outcome_request = "POST /reputation/{agent_id}/{outcome}?job_id={job_id}&hirer={hirer_reputation}"
outcome_body = '{"job_id": "{job_id}", "orchestrator_id": "{hirer_id}", "contractor_reputation": {hirer_reputation}, "note": "{OUTCOME} for {agent_id} at {reputation}"}'
"#,
        )
    });
    no_finding(&told, "the hirer's reputation in the outcome body")
}

/// A fixture whose output has a shape of its own: the default profile blocks the
/// cases by one setting finding that names fixture_output; the profile that describes the
/// shape passes.
fn fixture_output_described_by_the_profile() -> Result<(), Failed> {
    let cfg = || ChorusConfig {
        fixture_output_member: Some("echoed".into()),
        ..ChorusConfig::default()
    };
    let plain = run_with(cfg(), false, |_| test_profile());
    one_profile_finding(
        &plain,
        "chorus/profile:fixture_output",
        "chorus/job-echo",
        "fixture_output",
    )?;
    let described = run_with(cfg(), false, |_| {
        toml_profile("[chorus]\nfixture_output = '{\"echoed\": \"{text}\"}'\n")
    });
    no_finding(&described, "fixture_output describing the fixture")
}

/// Timestamps written `+00:00` are UTC, which is all chorus.md §2 asks.
fn zero_offset_timestamps_are_utc() -> Result<(), Failed> {
    let cfg = ChorusConfig {
        utc_offset_form: true,
        ..ChorusConfig::default()
    };
    let out = run_with(cfg, false, |_| test_profile());
    no_finding(&out, "timestamps with +00:00")
}

/// A 2xx outcome reply whose `success` member is false (it states the FAILURE that
/// was reported) is no refusal: every case, the reputation cases among them, passes.
fn outcome_reply_success_false_is_no_refusal() -> Result<(), Failed> {
    let cfg = ChorusConfig {
        outcome_success_flag: true,
        ..ChorusConfig::default()
    };
    let out = run_with(cfg, false, |_| test_profile());
    no_finding(&out, "outcome replies with \"success\": false")
}

/// A FAILURE result that also carries error_code EXECUTION_ERROR is a FAILURE
/// result, not a refusal: job-failure-result passes and nothing is found.
fn failure_result_with_execution_error_is_a_result() -> Result<(), Failed> {
    let cfg = ChorusConfig {
        failure_error_code: true,
        ..ChorusConfig::default()
    };
    let out = run_with(cfg, false, |_| test_profile());
    no_finding(&out, "FAILURE results with error_code EXECUTION_ERROR")?;
    let case = out
        .results
        .iter()
        .find(|r| r.id == "chorus/job-failure-result")
        .ok_or("no job-failure-result case")?;
    if case.outcome != Outcome::Pass {
        return Err(format!(
            "job-failure-result is {:?}: {}\n{}",
            case.outcome,
            case.message,
            crate::describe(&out)
        )
        .into());
    }
    Ok(())
}

/// A registry and agent that take every bad registration and every bad job: one
/// finding per rule, whose summary names each bad field the target took, and no
/// other finding (the rows of a table never end the case at the first).
fn every_bad_row_is_named() -> Result<(), Failed> {
    let cfg = ChorusConfig::default()
        .with_faults(&["validates-nothing"])
        .map_err(|e| e.to_string())?;
    let out = run_with(cfg, false, |_| test_profile());
    let want: [(&str, Verdict, &[&str]); 3] = [
        (
            "chorus/register-rejects-invalid",
            Verdict::Fail,
            &[
                "agent_id \"not-a-uuid\"",
                "no api_endpoint",
                "no skills",
                "cost_per_call \"cheap\"",
                "skill without skill_name",
                "timestamp_utc \"yesterday\"",
                "a non-JSON body",
            ],
        ),
        (
            "chorus/job-rejects-invalid",
            Verdict::Fail,
            &["job_id \"123\"", "no skill_name", "no input_data"],
        ),
        (
            "chorus/job-rejects-invalid:currency",
            Verdict::Warn,
            &["currency \"usd\""],
        ),
    ];
    let mut problems = Vec::new();
    for (key, verdict, rows) in want {
        match out.findings.iter().find(|f| f.finding.key == key) {
            None => problems.push(format!("no finding {key}")),
            Some(f) if f.finding.outcome != verdict => {
                problems.push(format!("{key} is {}, not {verdict}", f.finding.outcome))
            }
            Some(f) => problems.extend(
                rows.iter()
                    .filter(|row| !f.finding.summary.contains(*row))
                    .map(|row| format!("{key} does not name {row}")),
            ),
        }
    }
    let others: Vec<&str> = out
        .findings
        .iter()
        .map(|f| f.finding.key.as_str())
        .filter(|k| !want.iter().any(|(key, _, _)| key == k))
        .collect();
    if !others.is_empty() {
        problems.push(format!("other findings: {others:?}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n{}", problems.join("\n"), describe(&out)).into())
    }
}

/// Idempotency is informational in the inventory (CHO-A14) unless the profile
/// declares it: with `idempotent_transfers = false` a ledger that applies a repeat
/// twice warns and never fails the run.
fn informational_idempotency_never_fails() -> Result<(), Failed> {
    let cfg = ChorusConfig::default()
        .with_faults(&["duplicate-transfer-applied-twice"])
        .map_err(|e| e.to_string())?;
    let out = run_with(cfg, false, |_| {
        toml_profile("[chorus]\nidempotent_transfers = false\n")
    });
    let failing = out
        .findings
        .iter()
        .any(|f| f.finding.outcome == Verdict::Fail);
    let warned = out.findings.iter().any(|f| {
        f.finding.key == "chorus/transfer-idempotent:recorded" && f.finding.level == Level::Info
    });
    let case = out
        .results
        .iter()
        .find(|r| r.id == "chorus/transfer-idempotent");
    if !failing && warned && case.is_some_and(|r| r.outcome == Outcome::Warn) {
        Ok(())
    } else {
        Err(format!("expected one informational warning:\n{}", describe(&out)).into())
    }
}

/// Profile templates are checked when the profile loads.
fn profile_templates_are_checked() -> Result<(), Failed> {
    let bad = [
        ("[chorus]\noutcome_body = '{\"x\": \"{nope}\"}'\n", "{nope}"),
        ("[chorus]\noutcome_request = \"POST /r/{owner}\"\n", "{owner}"),
        ("[chorus]\nfixture_output = '{\"text\": {text}'\n", "fixture_output"),
        (
            "[[chorus.setup_requests]]\non = \"owner\"\npath = \"/a\"\nbody = '{\"t\": \"{transfer_id}\"}'\n",
            "{transfer_id}",
        ),
        ("[[chorus.setup_requests]]\non = \"later\"\npath = \"/a\"\n", "later"),
    ];
    for (text, names) in bad {
        match Profile::from_toml(text, "p.toml") {
            Ok(_) => return Err(format!("accepted: {text}").into()),
            Err(e) if !e.to_string().contains(names) => {
                return Err(format!("the error for {text:?} does not name {names}: {e}").into())
            }
            Err(_) => {}
        }
    }
    let good = "[chorus]\noutcome_request = \"PUT /agents/{agent_id}/score?h={hirer_reputation}\"\noutcome_body = ''\n[[chorus.setup_requests]]\non = \"agent\"\nmethod = \"PUT\"\npath = \"/wallets/{owner_id}\"\n";
    Profile::from_toml(good, "p.toml").map_err(|e| e.to_string())?;
    Ok(())
}

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "chorus::profile::owners_funded_by_setup_requests",
            owners_funded_by_setup_requests,
        ),
        Trial::test(
            "chorus::profile::hirer_reputation_in_the_outcome_request",
            hirer_reputation_in_the_outcome_request,
        ),
        Trial::test(
            "chorus::profile::fixture_output_described_by_the_profile",
            fixture_output_described_by_the_profile,
        ),
        Trial::test(
            "chorus::profile::idempotency_informational_never_fails",
            informational_idempotency_never_fails,
        ),
        Trial::test(
            "chorus::profile::templates_are_checked",
            profile_templates_are_checked,
        ),
        Trial::test(
            "chorus::zero_offset_timestamps_are_utc",
            zero_offset_timestamps_are_utc,
        ),
        Trial::test(
            "chorus::outcome_reply_success_false_is_no_refusal",
            outcome_reply_success_false_is_no_refusal,
        ),
        Trial::test("chorus::every_bad_row_is_named", every_bad_row_is_named),
        Trial::test(
            "chorus::failure_result_with_execution_error_is_a_result",
            failure_result_with_execution_error_is_a_result,
        ),
    ]
}
