//! Fuzzing throughput, side by side in one run (`cargo bench -p agentconform --bench
//! throughput`): live fuzz cases per second of every suite's fuzzer against its
//! embedded reference (with the suite's default worker count, as `agentconform
//! fuzz` runs, and with 32, as `--workers 32` runs), and in-process execs per
//! second of the property of every cargo-fuzz target (`suites::fuzz_targets()`, the
//! function each target calls) over its seed corpus. Prints a Markdown table;
//! harness/benches/BENCHMARKS.md holds one run's figures. A benchmark, never a test.

use agentconform::fuzzing::{campaign, engine};
use agentconform::profile::Profile;
use agentconform::schemas::Schemas;
use agentconform::{embedded, suites};
use std::path::Path;
use std::time::{Duration, Instant};

/// The allocator of the `agentconform` binary (src/main.rs), so that the live
/// figures are what `agentconform fuzz` does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const LIVE_CASES: u64 = 20_000;
const IN_PROCESS_FOR: Duration = Duration::from_secs(3);

type Check = fn(&[u8]) -> Result<(), String>;

async fn live(suite: &'static str, workers: Option<u64>) -> (u64, f64) {
    let server = suites::start(suite, "127.0.0.1:0", &embedded::Options::default())
        .await
        .expect("start the reference");
    let want = campaign::bindings(suite).expect("a live fuzzer")[0];
    let url = server
        .endpoints
        .0
        .iter()
        .find(|(t, _)| *t == want)
        .map(|(_, u)| u.clone())
        .expect("an endpoint");
    let mut profile = Profile::default();
    profile.agora_spaces.full_space = Some("full".into());
    profile.agora_spaces.cancel_grace_ms = Some(100);
    let out = std::env::temp_dir().join(format!("agentconform-bench-{}", std::process::id()));
    let s = campaign::campaign(campaign::Campaign {
        suite: suite.into(),
        role: agentconform::case::Role::Server,
        seed: 1,
        bounds: engine::Bounds {
            cases: Some(LIVE_CASES),
            duration: None,
            max_findings: 1,
        },
        out: out.clone(),
        workers,
        connection: campaign::Connection {
            url,
            transport: want,
            profile,
            schemas: Schemas::load().expect("schemas"),
            http: agentconform::drive::http::client().expect("client"),
            tls: agentconform::drive::Tls::platform().expect("tls"),
        },
        known: Default::default(),
    })
    .await
    .expect("a campaign");
    server.stop().await;
    let _ = std::fs::remove_dir_all(&out);
    (s.cases, s.cases as f64 / s.elapsed.as_secs_f64())
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
        let default = campaign::spec(suite).expect("a live fuzzer").workers;
        let (cases, rate) = rt.block_on(live(suite, None));
        let (_, wide) = rt.block_on(live(suite, Some(32)));
        println!("| {suite} | {cases} | {default} | {rate:.0} | {wide:.0} |");
    }
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
