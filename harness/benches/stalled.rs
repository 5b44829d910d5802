//! The stalled-members scenario of the agora-spaces reference hub (`cargo bench -p
//! agentconform --bench stalled`): the hub runs as its own process (`agentconform
//! serve --suite agora-spaces`, the release build), 20 members read, 10 more join
//! and never read, and 5 of the readers publish 1,200 events of 16 kB each (delta
//! streams). Prints the deliveries to the readers (every event exactly once), how
//! many stalled members the hub cut off and when, and the hub's peak RSS (VmHWM);
//! harness/benches/BENCHMARKS.md holds one run's figures. A benchmark, never a test.

use agentconform::load::{self, Load};
use agentconform::profile::Profile;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The allocator of the `agentconform` binary (src/main.rs), so that the load's
/// figures are what `agentconform load` does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const READERS: usize = 20;
const PUBLISHERS: usize = 5;
const EVENTS: usize = 1200;
const STALLED: usize = 10;
const TEXT_BYTES: usize = 16 * 1024;

/// A process's peak resident memory (VmHWM), in KiB.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn main() {
    let mut hub = Command::new(env!("CARGO_BIN_EXE_agentconform"))
        .args(["serve", "--suite", "agora-spaces"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the hub");
    let pid = hub.id();
    let mut url = String::new();
    BufReader::new(hub.stdout.take().expect("its output"))
        .read_line(&mut url)
        .expect("its URL");
    let url = url.trim().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let tally = rt.block_on(load::run(
        Load {
            suite: "agora-spaces".into(),
            plan: agentconform::suites::agora_spaces::load::PLAN,
            url: url.clone(),
            clients: READERS,
            requests: EVENTS,
            timeout: Duration::from_secs(10),
            profile: Profile::default(),
            stalled: STALLED,
            text_bytes: TEXT_BYTES,
            publishers: Some(PUBLISHERS),
        },
        |_, _| {},
    ));
    let peak = peak_kib(pid);
    let _ = hub.kill();
    let _ = hub.wait();
    let stalled = tally.stalled.clone().unwrap_or_default();
    println!("| readers | stalled | events | deliveries to the readers | lost or duplicated | stalled cut off | last announced gone | hub peak RSS |");
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| {READERS} | {STALLED} | {PUBLISHERS} × {EVENTS} of {} kB | {} of {} in {:.1} s | {} | {} of {} | {} | {} |",
        TEXT_BYTES / 1024,
        tally.ok,
        tally.sent,
        tally.elapsed.as_secs_f64(),
        tally.failed(),
        stalled.cut_off,
        stalled.members,
        stalled
            .announced_after
            .map_or("-".into(), |d| format!("{:.1} s after the first publish", d.as_secs_f64())),
        peak.map_or("-".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
    );
    for (kind, n) in &tally.errors {
        println!("  {n} × {kind}");
    }
}
