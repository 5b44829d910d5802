//! The live fuzzers judged against the reference agents: every suite has one; the
//! clean reference survives it without a finding; every fault of the catalogue is
//! either found within a bounded number of cases (seed 1) or listed as unreachable
//! with its reason, and the list names real faults only. Whole campaigns against
//! faults modelled on real servers are in `campaigns`.
//!
//! Runs are bounded by case counts, not by time, so they do not depend on the speed
//! of the machine; at the throughput the fuzzers report (thousands of cases per
//! second), `FAULT_CASES` is a fraction of the default 60 s duration.

use agentconform::fuzzing::corpus::Known;
use agentconform::fuzzing::engine;
use agentconform::profile::Profile;
use agentconform::suites;
use libtest_mimic::{Arguments, Failed, Trial};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[path = "live_fuzzing/campaigns.rs"]
mod campaigns;
mod common;

/// Cases a clean run must survive.
const CLEAN_CASES: u64 = 3000;
/// Cases within which a reachable fault must be found.
const FAULT_CASES: u64 = 3000;

use common::{fuzz_profile as profile, fuzz_reference as reference, reference_on, rt};

fn out_dir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "agentconform-live-fuzz-{}-{tag}-{}",
        std::process::id(),
        reference_impl::wire::new_id()
    ))
}

/// One campaign of seed 1 with four workers; crash files go to a folder removed
/// afterwards.
async fn campaign_of(
    suite: &str,
    role: agentconform::case::Role,
    to: (String, agentconform::drive::Transport),
    profile: Profile,
    (cases, max_findings): (u64, u64),
) -> engine::Summary {
    let out = out_dir(&format!("{role:?}_{}", suite.replace('-', "_")));
    let bounds = engine::Bounds {
        cases: Some(cases),
        duration: None,
        max_findings,
        first: 0,
    };
    let summary = campaign_in(suite, role, to, profile, bounds, &out, Known::default()).await;
    let _ = std::fs::remove_dir_all(&out);
    summary
}

/// One campaign of seed 1 with four workers within `bounds`, its crash files in
/// `out`, leaving out what `known` knows.
async fn campaign_in(
    suite: &str,
    role: agentconform::case::Role,
    to: (String, agentconform::drive::Transport),
    profile: Profile,
    bounds: engine::Bounds,
    out: &Path,
    known: Known,
) -> engine::Summary {
    common::fuzz_campaign(common::Fuzzing {
        suite,
        role,
        to,
        profile,
        bounds,
        workers: Some(4),
        out,
        known,
    })
    .await
}

/// Fuzzes the reference client of `suite` (with `faults`) through the reference
/// driver; returns the summary.
fn fuzz_client(suite: &str, faults: &[&str], cases: u64, max_findings: u64) -> engine::Summary {
    let mut driver = format!(
        "'{}' client --suite {{suite}} --scenario {{scenario}} --url {{url}}",
        common::bin().display()
    );
    for f in faults {
        driver.push_str(&format!(" --fault {f}"));
    }
    let mut p = profile();
    p.client.command = Some(driver);
    let client = (
        "client driver".to_string(),
        agentconform::drive::Transport::Http,
    );
    rt().block_on(campaign_of(
        suite,
        agentconform::case::Role::Client,
        client,
        p,
        (cases, max_findings),
    ))
}

/// Cases a clean reference client must survive, and within which a client fault
/// must be found (each case runs the client driver once).
const CLIENT_CASES: u64 = 400;

fn clean_client(suite: &'static str) -> Result<(), Failed> {
    let s = fuzz_client(suite, &[], CLIENT_CASES, 5);
    if s.findings > 0 || s.cases != CLIENT_CASES {
        return Err(format!(
            "{} findings in {} cases against the clean reference client; first: {:?}",
            s.findings, s.cases, s.first_finding
        )
        .into());
    }
    Ok(())
}

fn client_fault_found(suite: &'static str, fault: &'static str) -> Result<(), Failed> {
    let s = fuzz_client(suite, &[fault], CLIENT_CASES, 1);
    if s.findings == 0 {
        return Err(format!("client fault {fault} not found in {} cases", s.cases).into());
    }
    Ok(())
}

/// Fuzzes the embedded reference of `suite` with `faults`; returns the summary.
fn fuzz(suite: &str, faults: &[&str], cases: u64, max_findings: u64) -> engine::Summary {
    rt().block_on(async {
        let (server, to) = reference(suite, faults).await;
        let server_role = agentconform::case::Role::Server;
        let bounds = (cases, max_findings);
        let summary = campaign_of(suite, server_role, to, profile(), bounds).await;
        server.stop().await;
        summary
    })
}

fn unreachable(suite: &str) -> &'static [(&'static str, &'static str)] {
    suites::parts(suite).map_or(&[], |p| p.fuzzer.unreachable)
}

fn has_fuzzer(suite: &str) -> Result<(), Failed> {
    if suites::parts(suite).is_some() {
        Ok(())
    } else {
        Err(format!("suite {suite} has no live fuzzer").into())
    }
}

fn clean_reference(suite: &'static str) -> Result<(), Failed> {
    has_fuzzer(suite)?;
    let s = fuzz(suite, &[], CLEAN_CASES, 5);
    if s.findings > 0 {
        return Err(format!(
            "{} findings against the clean reference; first: {:?}",
            s.findings, s.first_finding
        )
        .into());
    }
    if s.cases != CLEAN_CASES {
        return Err(format!("{} of {CLEAN_CASES} cases ran", s.cases).into());
    }
    if s.skipped * 10 > s.cases {
        return Err(format!(
            "{} of {} cases were skipped against the reference: {:?}",
            s.skipped, s.cases, s.skip_reason
        )
        .into());
    }
    Ok(())
}

/// Suites whose live fuzzer files what it finds under the keys `run` gives: a
/// fault's campaign files each finding `run` gives that fault, and nothing else.
/// agora-spaces files so too (checked by hand, every reachable fault, with and
/// without a baseline), but a whole campaign against its faults that wait (no
/// agent.registered, a stalled stream) takes minutes: its test holds the first
/// finding of each fault to run's.
const FILED_AS_RUN: &[&str] = &["chorus", "agora-exchange", "agora-v1", "agentprotocol"];

fn fault_found(suite: &'static str, fault: &'static str) -> Result<(), Failed> {
    has_fuzzer(suite)?;
    if FILED_AS_RUN.contains(&suite) {
        return filed_as_run(suite, fault);
    }
    let s = fuzz(suite, &[fault], FAULT_CASES, 1);
    if s.findings == 0 {
        return Err(format!(
            "fault {fault} not found in {} cases (list it as unreachable with a reason, or reach it)",
            s.cases
        )
        .into());
    }
    no_debug_form(suite, fault, &s)?;
    // What the campaign filed first is one of run's findings for the fault.
    let want = run_gives(suite, fault)?;
    match s
        .signatures
        .iter()
        .find(|e| !want.is_empty() && !want.contains(&e.id) && !warns(suite, &e.id))
    {
        Some(e) => Err(format!(
            "fault {fault}: the campaign filed {}, which run does not give it (run gives {want:?})",
            e.id
        )
        .into()),
        None => Ok(()),
    }
}

/// The findings `run` gives `fault` by its catalogue entry (tests/findings holds
/// `run` to that list).
fn run_gives(suite: &str, fault: &str) -> Result<BTreeSet<String>, Failed> {
    let entry = suites::faults(suite)
        .unwrap_or(&[])
        .iter()
        .find(|f| f.name == fault)
        .ok_or("no such fault")?;
    Ok(entry.findings.iter().map(|k| k.to_string()).collect())
}

/// No signature's detail shows a value in a Rust debug form (details are JSON
/// text), and every rule signature names a rule or case of the suite (`run`'s key,
/// which `explain` knows).
fn no_debug_form(suite: &str, fault: &str, s: &engine::Summary) -> Result<(), Failed> {
    use agentconform::fuzzing::corpus::Signature;
    let parts = suites::parts(suite).ok_or("no such suite")?;
    for e in &s.signatures {
        if let Signature::Rule(k) = &e.signature {
            if !parts.suite.names(k) {
                return Err(format!("fault {fault}: {k} names no rule or case").into());
            }
        }
    }
    match s
        .signatures
        .iter()
        .find_map(|e| common::debug_form(&e.first.detail).map(|f| (e, f)))
    {
        Some((e, form)) => Err(format!(
            "fault {fault}: {} shows a debug form ({form}): {}",
            e.id, e.first.detail
        )
        .into()),
        None => Ok(()),
    }
}

/// A campaign against `fault` files only the findings its catalogue entry says
/// `run` gives it (tests/findings holds `run` to that list), at least one; past a
/// baseline of those keys it files nothing.
fn filed_as_run(suite: &'static str, fault: &'static str) -> Result<(), Failed> {
    let want = run_gives(suite, fault)?;
    let filed = |known: Known| -> BTreeSet<String> {
        fuzz_knowing(suite, fault, known)
            .signatures
            .iter()
            .map(|e| e.id.clone())
            .collect()
    };
    let first = fuzz_knowing(suite, fault, Known::default());
    no_debug_form(suite, fault, &first)?;
    let got: BTreeSet<String> = first.signatures.iter().map(|e| e.id.clone()).collect();
    if got.is_empty() {
        return Err(format!("fault {fault} not found in {FAULT_CASES} cases").into());
    }
    // The catalogue lists the findings that fail `run`; a warning `run` may give
    // beside them (a SHOULD) is not listed there, and may be filed.
    let beyond: Vec<&String> = got.difference(&want).filter(|k| !warns(suite, k)).collect();
    if !want.is_empty() && !beyond.is_empty() {
        return Err(format!(
            "fault {fault}: the campaign filed {beyond:?}, which run does not give it (run gives {want:?})"
        )
        .into());
    }
    if want.is_empty() {
        return Ok(());
    }
    // A baseline of run's report holds its warnings too.
    let mut past = filed(Known::of(want.iter().cloned(), "run's findings"));
    past.retain(|k| !warns(suite, k));
    if past.is_empty() {
        Ok(())
    } else {
        Err(format!("fault {fault}: past a baseline of run's findings {want:?}, the campaign filed {past:?}").into())
    }
}

/// Whether a finding under `key` only warns (its rule's level is below a MUST).
fn warns(suite: &str, key: &str) -> bool {
    use agentconform::finding::Verdict;
    suites::parts(suite).is_some_and(|p| {
        p.suite
            .rules
            .iter()
            .filter(|r| r.matches(suite, key))
            .max_by_key(|r| r.specificity())
            .is_some_and(|r| Verdict::of(r.level()) == Verdict::Warn)
    })
}

/// A campaign of FAULT_CASES against the reference of `suite` with `fault`,
/// leaving out what `known` knows.
fn fuzz_knowing(suite: &str, fault: &str, known: Known) -> engine::Summary {
    rt().block_on(async {
        let (server, to) = reference(suite, &[fault]).await;
        let out = out_dir(&format!("known_{}", suite.replace('-', "_")));
        let bounds = engine::Bounds {
            cases: Some(FAULT_CASES),
            duration: None,
            max_findings: 20,
            first: 0,
        };
        let role = agentconform::case::Role::Server;
        let s = campaign_in(suite, role, to, profile(), bounds, &out, known).await;
        let _ = std::fs::remove_dir_all(&out);
        server.stop().await;
        s
    })
}

fn unreachable_names_real_faults(suite: &'static str) -> Result<(), Failed> {
    has_fuzzer(suite)?;
    let catalogue = suites::faults(suite).unwrap_or(&[]);
    for (name, reason) in unreachable(suite) {
        if !catalogue.iter().any(|f| f.name == *name) {
            return Err(format!("unreachable fault {name:?} is not in the catalogue").into());
        }
        if reason.trim().len() < 10 {
            return Err(format!("unreachable fault {name:?} has no real reason").into());
        }
    }
    Ok(())
}

/// The client fuzzer's unreachable list names faults of the client catalogue, each
/// with a reason.
fn client_unreachable_names_real_faults(parts: &'static suites::Parts) -> Result<(), Failed> {
    let suite = parts.suite;
    let spec = parts.client_fuzzer.ok_or("no client fuzzer")?;
    for (name, reason) in spec.unreachable {
        if !suite.client_faults.iter().any(|f| f.name == *name) {
            return Err(
                format!("unreachable client fault {name:?} is not in the catalogue").into(),
            );
        }
        if reason.trim().len() < 10 {
            return Err(format!("unreachable client fault {name:?} has no real reason").into());
        }
    }
    Ok(())
}

/// The table of the faults each fuzzer reaches (docs/guides/fuzzing.md), and each
/// suite page's sentence of it, match the catalogues and the unreachable lists.
fn readme_fuzz_table() -> Result<(), Failed> {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/guides/fuzzing.md"),
    )
    .map_err(|e| e.to_string())?;
    let mut missing = Vec::new();
    for suite in suites::all() {
        let all = suites::faults(suite.id).unwrap_or(&[]).len();
        let out: Vec<&str> = unreachable(suite.id).iter().map(|(n, _)| *n).collect();
        let row = format!(
            "| {} | {} of {all} | {} |",
            suite.id,
            all - out.len(),
            out.join(", ")
        );
        let row = row.replace("|  |", "| |");
        if !readme.lines().any(|l| l.trim() == row) {
            missing.push(row);
        }
        // The suite's page says the same count in words.
        let found = all - out.len();
        let said = if out.is_empty() {
            format!("the live fuzzer finds all {all} reference faults")
        } else {
            format!("the live fuzzer finds {found} of the {all} reference faults")
        };
        let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../docs/suites/{}.md", suite.id));
        let text = std::fs::read_to_string(&page).map_err(|e| e.to_string())?;
        if !text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains(&said)
        {
            missing.push(format!("docs/suites/{}.md: \"{said}\"", suite.id));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "docs/guides/fuzzing.md and the suite pages lack\n{}",
            missing.join("\n")
        )
        .into())
    }
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = vec![Trial::test(
        "live_fuzz::readme_fuzz_table",
        readme_fuzz_table,
    )];
    trials.extend(campaigns::trials());
    for suite in suites::all() {
        let id = suite.id;
        let tag = id.replace('-', "_");
        trials.push(Trial::test(
            format!("live_fuzz::{tag}::clean_reference_has_no_finding"),
            move || clean_reference(id),
        ));
        trials.push(Trial::test(
            format!("live_fuzz::{tag}::unreachable_list_names_real_faults"),
            move || unreachable_names_real_faults(id),
        ));
        for f in suites::faults(id).unwrap_or(&[]) {
            let name = f.name;
            if unreachable(id).iter().any(|(n, _)| *n == name) {
                continue;
            }
            trials.push(Trial::test(
                format!("live_fuzz::{tag}::finds::{name}"),
                move || fault_found(id, name),
            ));
        }
    }
    for parts in suites::all_parts()
        .into_iter()
        .filter(|p| p.client_fuzzer.is_some())
    {
        let suite = parts.suite;
        let id = suite.id;
        let tag = id.replace('-', "_");
        trials.push(Trial::test(
            format!("client_fuzz::{tag}::clean_reference_client_has_no_finding"),
            move || clean_client(id),
        ));
        trials.push(Trial::test(
            format!("client_fuzz::{tag}::unreachable_list_names_real_faults"),
            move || client_unreachable_names_real_faults(parts),
        ));
        let unreachable = parts.client_fuzzer.map_or(&[][..], |s| s.unreachable);
        for f in suite.client_faults {
            let name = f.name;
            if unreachable.iter().any(|(n, _)| *n == name) {
                continue;
            }
            trials.push(Trial::test(
                format!("client_fuzz::{tag}::finds::{name}"),
                move || client_fault_found(id, name),
            ));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
