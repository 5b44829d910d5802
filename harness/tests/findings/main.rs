//! One deviation, one finding: the verdict model judged against the reference agents.
//!
//! - every fault modelled on a real implementation's deviation (a catalogue entry
//!   with `finding = [...]`) is caught as exactly that failing finding, and no case
//!   fails for another reason;
//! - faults switched on together are each still reported (none hides another);
//! - the clean reference gives no finding at all;
//! - a target that accepts connections and never answers, or completes a WebSocket
//!   handshake and then says nothing, passes no case;
//! - every case's level agrees with the inventory.
//!
//! Each suite's module adds its combinations of faults and its own tests.

#[path = "../common/mod.rs"]
mod common;

mod agentprotocol;
mod agora_exchange;
mod agora_spaces;
mod agora_v1;
mod chorus;

use agentconform::case::{CaseResult, Level, Outcome, Suite};
use agentconform::drive::Transport;
use agentconform::finding::Verdict;
use agentconform::inventory;
use agentconform::profile::Profile;
use agentconform::runner::{self, Endpoints, RunOutput, Selection};
use agentconform::suites;
use common::*;
use libtest_mimic::{Arguments, Failed, Trial};
use std::collections::BTreeSet;

/// Cases that disturb the others when a fault is on (a burst of requests draws
/// rate limiting), left out unless the fault names them.
fn selection_for(faults: &[&str]) -> Selection {
    let mut selection = Selection::default();
    let named = faults.iter().any(|f| {
        suites::faults("agora-v1")
            .unwrap_or(&[])
            .iter()
            .any(|x| x.name == *f && x.caught_by.contains(&"agora-v1/rate-limit-burst"))
    });
    if !named {
        selection.exclude.push("agora-v1/rate-limit-burst".into());
    }
    selection
}

pub fn describe(out: &RunOutput) -> String {
    let mut lines: Vec<String> = out
        .results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| format!("  {} {} [{}]: {}", r.outcome, r.id, r.transport, r.message))
        .collect();
    lines.push("findings:".into());
    for f in &out.findings {
        lines.push(format!(
            "  {} {} {:?} owners {:?}: {}",
            f.finding.outcome, f.finding.key, f.finding.requirements, f.owners, f.finding.summary
        ));
    }
    lines.join("\n")
}

fn failing_keys(out: &RunOutput) -> BTreeSet<String> {
    out.findings
        .iter()
        .filter(|f| f.finding.outcome == Verdict::Fail)
        .map(|f| f.finding.key.to_string())
        .collect()
}

/// Every failing case owns one of `keys`.
fn only_owners_fail(out: &RunOutput, keys: &BTreeSet<String>) -> Result<(), String> {
    let owners: BTreeSet<String> = out
        .findings
        .iter()
        .filter(|f| keys.contains(f.finding.key.as_str()))
        .flat_map(|f| f.owners.iter().cloned())
        .collect();
    let stray: Vec<&CaseResult> = out
        .results
        .iter()
        .filter(|r| r.outcome == Outcome::Fail)
        .filter(|r| !owners.contains(&format!("{} [{}]", r.id, r.transport)))
        .collect();
    if stray.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "cases fail for another reason: {:?}",
            stray.iter().map(|r| &r.id).collect::<Vec<_>>()
        ))
    }
}

/// The cases of `caught_by` fail on every binding they ran over, or on one of them
/// and are blocked on the others by one of `keys` (a refusal is one finding, owned by
/// the first case that met it).
fn named_cases_fail(out: &RunOutput, caught_by: &[&str], keys: &[&str]) -> Result<(), String> {
    for id in caught_by {
        let runs: Vec<&CaseResult> = out
            .results
            .iter()
            .filter(|r| r.id == *id && r.outcome != Outcome::Skip)
            .collect();
        let blocked_by_it = |r: &CaseResult| {
            r.outcome == Outcome::Blocked && r.findings.iter().any(|k| keys.contains(&k.as_str()))
        };
        if !runs.iter().any(|r| r.outcome == Outcome::Fail)
            || runs
                .iter()
                .any(|r| r.outcome != Outcome::Fail && !blocked_by_it(r))
        {
            return Err(format!("{id} does not fail on every binding"));
        }
    }
    Ok(())
}

/// Every finding is explained by its rule, and no finding and no case message shows
/// a value in a Rust debug form.
fn no_debug_forms(out: &RunOutput) -> Result<(), String> {
    explained(out)?;
    let texts = out
        .findings
        .iter()
        .map(|f| (f.finding.key.as_str(), f.finding.summary.as_str()))
        .chain(
            out.results
                .iter()
                .map(|r| (r.id.as_str(), r.message.as_str())),
        );
    for (at, text) in texts {
        if let Some(form) = debug_form(text) {
            return Err(format!("{at} shows a debug form ({form}): {text}"));
        }
    }
    Ok(())
}

fn one_finding(suite: &'static Suite, fault: &'static str) -> Result<(), Failed> {
    let f = suites::faults(suite.id)
        .unwrap_or(&[])
        .iter()
        .find(|f| f.name == fault)
        .ok_or("no such fault")?;
    let out = rt().block_on(run_against(suite, &[fault], &selection_for(&[fault])));
    let want: BTreeSet<String> = f.findings.iter().map(|k| k.to_string()).collect();
    let got = failing_keys(&out);
    let verdict = if got != want {
        Err(format!("failing findings {got:?}, want exactly {want:?}"))
    } else {
        only_owners_fail(&out, &want)
            .and_then(|()| named_cases_fail(&out, f.caught_by, f.findings))
            .and_then(|()| no_debug_forms(&out))
    };
    verdict.map_err(|e| format!("fault {fault}: {e}\n{}", describe(&out)).into())
}

fn combined(suite: &'static Suite, faults: &'static [&'static str]) -> Result<(), Failed> {
    let out = rt().block_on(run_against(suite, faults, &selection_for(faults)));
    let got = failing_keys(&out);
    let mut want = BTreeSet::new();
    let mut problems = Vec::new();
    for name in faults {
        let Some(f) = suites::faults(suite.id)
            .unwrap_or(&[])
            .iter()
            .find(|f| f.name == *name)
        else {
            return Err(format!("no fault {name}").into());
        };
        if f.findings.is_empty() {
            if let Err(e) = named_cases_fail(&out, f.caught_by, f.findings) {
                problems.push(format!("{name}: {e}"));
            }
        }
        for k in f.findings {
            want.insert(k.to_string());
            if !got.contains(*k) {
                problems.push(format!("{name}: finding {k} is not reported"));
            }
        }
    }
    if problems.is_empty()
        && suites::faults(suite.id)
            .unwrap_or(&[])
            .iter()
            .all(|f| !faults.contains(&f.name) || !f.findings.is_empty())
    {
        if got != want {
            problems.push(format!("failing findings {got:?}, want exactly {want:?}"));
        } else if let Err(e) = only_owners_fail(&out, &want) {
            problems.push(e);
        }
    }
    if let Err(e) = no_debug_forms(&out) {
        problems.push(e);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "faults {faults:?}:\n{}\n{}",
            problems.join("\n"),
            describe(&out)
        )
        .into())
    }
}

fn clean_reference_has_no_finding(suite: &'static Suite) -> Result<(), Failed> {
    let out = rt().block_on(run_against(suite, &[], &Selection::default()));
    if out.findings.is_empty() {
        Ok(())
    } else {
        Err(format!("the clean reference has findings:\n{}", describe(&out)).into())
    }
}

/// No case passes against a target that never answers over `transport`.
fn silent_target_passes_nothing(suite: &'static Suite, kind: &'static str) -> Result<(), Failed> {
    rt().block_on(async {
        let (transport, url, _dir) = match kind {
            "file" => {
                let dir = std::env::temp_dir().join(format!(
                    "agentconform-silent-{}-{}",
                    suite.prefix,
                    std::process::id()
                ));
                let _ = std::fs::create_dir_all(&dir);
                let url = format!("file://{}", dir.display());
                (Transport::File, url, Some(dir))
            }
            "ws-silent" | "ws-hang" => {
                let url = hostile(if kind == "ws-silent" {
                    "ws-silent"
                } else {
                    "hang"
                })
                .await;
                (Transport::Ws, url.replacen("http://", "ws://", 1), None)
            }
            _ => (Transport::Http, hostile("hang").await, None),
        };
        let mut profile = Profile::default();
        profile.timing.case_timeout_ms = 300;
        profile.timing.offer_wait_max_ms = 500;
        profile.timing.conversation_wait_max_s = 1;
        profile.timing.heartbeat_timeout_s = 1;
        profile.target.token = Some(TEST_TOKEN.into());
        profile.agora_spaces.full_space = Some("full".into());
        let out = runner::run(
            shared(profile),
            &[(suite, Endpoints(vec![(transport, url)]))],
            &Selection::default(),
        )
        .await
        .map_err(|e| e.to_string())?;
        if let Some(dir) = _dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        explained(&out)?;
        let passed: Vec<&CaseResult> = out
            .results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Pass))
            .collect();
        if passed.is_empty() && out.results.iter().any(|r| r.outcome != Outcome::Skip) {
            Ok(())
        } else {
            Err(format!(
                "against a silent target ({kind}) these cases passed: {:?}\n{}",
                passed.iter().map(|r| &r.id).collect::<Vec<_>>(),
                describe(&out)
            )
            .into())
        }
    })
}

/// The level a case may carry for its requirements: the strongest level the
/// inventory gives them; PROFILE where that is MUST or FACT and the case leans on a
/// profile fixture (target-profile: such cases are never MUST); INFO where the
/// inventory treats all of them as informational.
fn levels_agree(suite: &'static Suite) -> Result<(), Failed> {
    let mut bad = Vec::new();
    for c in suite.cases.iter().chain(suite.client_cases) {
        let ids: Vec<String> = c.requirements.iter().map(|s| s.to_string()).collect();
        let derived = inventory::level_for(&ids, Level::Profile);
        let ok = c.level == derived
            || (c.level == Level::Profile && matches!(derived, Level::Must | Level::Fact));
        if !ok {
            bad.push(format!(
                "{} is {} but its requirements make it {derived}",
                c.id, c.level
            ));
        }
        for id in c.requirements {
            if !inventory::is_known(id) {
                bad.push(format!(
                    "{} cites {id}, which the inventory does not know",
                    c.id
                ));
            }
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad.join("\n").into())
    }
}

/// Tests that fail today and are being worked on, run as ignored so that they stay
/// in sight (`cargo test --test findings -- --include-ignored` runs them).
const KNOWN_GAPS: &[&str] = &[];

type SuiteParts = (
    &'static Suite,
    &'static [&'static [&'static str]],
    fn() -> Vec<Trial>,
);

fn main() {
    let mut args = Arguments::from_args();
    // Most of these tests wait on loopback exchanges and configured deadlines, not on
    // the CPU: at least four at a time, unless --test-threads says otherwise.
    if args.test_threads.is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        args.test_threads = Some(cores.max(4));
    }
    let parts: [SuiteParts; 5] = [
        (
            &suites::agora_v1::SUITE,
            agora_v1::COMBINED,
            agora_v1::trials,
        ),
        (
            &suites::agora_spaces::SUITE,
            agora_spaces::COMBINED,
            agora_spaces::trials,
        ),
        (&suites::chorus::SUITE, chorus::COMBINED, chorus::trials),
        (
            &suites::agora_exchange::SUITE,
            agora_exchange::COMBINED,
            agora_exchange::trials,
        ),
        (
            &suites::agentprotocol::SUITE,
            agentprotocol::COMBINED,
            agentprotocol::trials,
        ),
    ];
    let mut trials = Vec::new();
    for (suite, combos, extra) in parts {
        let id = suite.id.replace('-', "_");
        trials.push(Trial::test(
            format!("{id}::clean_reference_has_no_finding"),
            move || clean_reference_has_no_finding(suite),
        ));
        trials.push(Trial::test(
            format!("{id}::levels_agree_with_the_inventory"),
            move || levels_agree(suite),
        ));
        for f in suites::faults(suite.id).unwrap_or(&[]) {
            if f.findings.is_empty() {
                continue;
            }
            let name = f.name;
            trials.push(Trial::test(
                format!("{id}::one_finding::{name}"),
                move || one_finding(suite, name),
            ));
        }
        for (i, combo) in combos.iter().enumerate() {
            let combo: &'static [&'static str] = combo;
            trials.push(Trial::test(format!("{id}::combined::{i}"), move || {
                combined(suite, combo)
            }));
        }
        let mut kinds: Vec<&'static str> = Vec::new();
        for t in suite.transports {
            match t {
                Transport::Http => kinds.push("http-hang"),
                Transport::Ws => kinds.extend(["ws-hang", "ws-silent"]),
                Transport::File => kinds.push("file"),
            }
        }
        for kind in kinds {
            trials.push(Trial::test(
                format!("{id}::silent_target_passes_nothing::{kind}"),
                move || silent_target_passes_nothing(suite, kind),
            ));
        }
        trials.extend(extra());
    }
    let trials = trials
        .into_iter()
        .map(|t| {
            let gap = KNOWN_GAPS.contains(&t.name());
            t.with_ignored_flag(gap)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
