//! Fuzzing throughput, side by side in one run (`cargo bench -p agentconform --bench
//! throughput`): live fuzz cases per second of every suite's fuzzer against its
//! embedded reference (with the suite's default worker count, as `agentconform
//! fuzz` runs, and with 32, as `--workers 32` runs), and in-process execs per
//! second of the property of every cargo-fuzz target (`suites::fuzz_targets()`, the
//! function each target calls) over its seed corpus. Prints a Markdown table;
//! harness/benches/BENCHMARKS.md holds one run's figures. A benchmark, never a test.

use agentconform::fuzzing::engine;
use agentconform::suites;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

/// The allocator of the `agentconform` binary (src/main.rs), so that the live
/// figures are what `agentconform fuzz` does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const LIVE_CASES: u64 = 20_000;
const IN_PROCESS_FOR: Duration = Duration::from_secs(3);

type Check = fn(&[u8]) -> Result<(), String>;

/// Several faults on at once, per suite: what the signatures-per-minute figure is
/// measured against.
const FAULTED: &[(&str, &[&str])] = &[
    (
        "agora-exchange",
        &[
            "crash-500-html",
            "wellknown-bad-hash",
            "accept-unknown-conversation",
            "text-content-type",
        ],
    ),
    (
        "chorus",
        &[
            "discover-skills-list",
            "ignore-max-cost",
            "allow-overdraft",
            "no-clamp",
        ],
    ),
    (
        "agora-v1",
        &[
            "skip-signature-check",
            "malformed-code-500",
            "double-accept",
            "accept-lowercase-type",
        ],
    ),
];
/// How long each faulted campaign runs.
const FAULTED_FOR: Duration = Duration::from_secs(30);

async fn live(suite: &'static str, workers: Option<u64>) -> (u64, f64) {
    let s = campaign_of(suite, &[], workers, (Some(LIVE_CASES), None)).await;
    (s.cases, s.cases as f64 / s.elapsed.as_secs_f64())
}

/// A campaign of `suite` against its reference with `faults`, bounded by cases or
/// by time.
async fn campaign_of(
    suite: &'static str,
    faults: &[&str],
    workers: Option<u64>,
    (cases, duration): (Option<u64>, Option<Duration>),
) -> engine::Summary {
    let (server, to) = common::fuzz_reference(suite, faults).await;
    let out = std::env::temp_dir().join(format!("agentconform-bench-{}", std::process::id()));
    let s = common::fuzz_campaign(common::Fuzzing {
        suite,
        role: agentconform::case::Role::Server,
        to,
        profile: common::fuzz_profile(),
        bounds: engine::Bounds {
            cases,
            duration,
            max_findings: 100,
            first: 0,
        },
        workers,
        out: &out,
        known: Default::default(),
    })
    .await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(&out);
    s
}

/// The seed corpus of `target` (fuzz/corpus, made by fuzz/seed-corpus.sh), else
/// the JSON vectors.
fn corpus(target: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("fuzz/corpus").join(target);
    let mut files = Vec::new();
    let mut stack = vec![if dir.is_dir() {
        dir
    } else {
        root.join("vectors")
    }];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                if b.len() <= 64 * 1024 {
                    files.push(b);
                }
            }
        }
    }
    files.sort();
    files
}

fn in_process(check: Check, inputs: &[Vec<u8>]) -> f64 {
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < IN_PROCESS_FOR {
        for i in inputs.iter().take(256) {
            let _ = check(i);
            n += 1;
        }
        if inputs.is_empty() {
            break;
        }
    }
    n as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing: run
    // only when benchmarking.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // `cargo bench --bench throughput -- signatures` runs one part: live,
    // signatures or in-process; all of them without a name.
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let part = |p: &str| named.is_empty() || named.iter().any(|n| n == p);
    if part("live") {
        live_table(&rt);
    }
    if part("signatures") {
        signatures_table(&rt);
    }
    if part("in-process") {
        in_process_table();
    }
}

fn live_table(rt: &tokio::runtime::Runtime) {
    println!(
        "| suite | live cases | default workers | cases/s, default workers | cases/s, 32 workers |\n|---|---|---|---|---|"
    );
    for suite in [
        "agora-v1",
        "agora-spaces",
        "chorus",
        "agora-exchange",
        "agentprotocol",
    ] {
        let default = suites::parts(suite).expect("a live fuzzer").fuzzer.workers;
        let (cases, rate) = rt.block_on(live(suite, None));
        let (_, wide) = rt.block_on(live(suite, Some(32)));
        println!("| {suite} | {cases} | {default} | {rate:.0} | {wide:.0} |");
    }
}

/// Distinct signatures a campaign files per minute against a reference with
/// several faults on.
fn signatures_table(rt: &tokio::runtime::Runtime) {
    println!(
        "\n| suite | faults on | cases | cases/s | distinct signatures | signatures/min to the last | finding cases |\n|---|---|---|---|---|---|---|"
    );
    for (suite, faults) in FAULTED {
        let s = rt.block_on(campaign_of(suite, faults, None, (None, Some(FAULTED_FOR))));
        // The rate up to the last signature filed (the campaign goes on after it).
        let last = s.signatures.iter().map(|e| e.found_after).max();
        let minutes = last.unwrap_or(s.elapsed).as_secs_f64().max(1e-3) / 60.0;
        println!(
            "| {suite} | {} | {} | {:.0} | {} | {:.1} | {} |",
            faults.join(", "),
            s.cases,
            s.cases as f64 / s.elapsed.as_secs_f64(),
            s.findings,
            s.findings as f64 / minutes,
            s.finding_cases
        );
        for e in &s.signatures {
            println!(
                "|  | {} ({} cases, the first after {:.1} s) | | | | | |",
                e.id,
                e.count,
                e.found_after.as_secs_f64()
            );
        }
    }
}

fn in_process_table() {
    println!("\n| cargo-fuzz target | corpus inputs | execs/s |\n|---|---|---|");
    for (name, check) in agentconform::suites::fuzz_targets() {
        let inputs = corpus(name);
        println!(
            "| {name} | {} | {:.0} |",
            inputs.len(),
            in_process(check, &inputs)
        );
    }
}
