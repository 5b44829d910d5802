//! The live fuzz engine of every suite: the run loop, its bounds and the crash
//! files. A suite's fuzzer is a [`Spec`] (one module per suite beside this one):
//! each fuzz case sets up what it needs (a conversation, a registered agent, a
//! joined space, an OFFER), then sends messages drawn from the seed through the
//! case context (`Ctx`) and judges every reply with the suite's expectation module
//! (`expect/`) plus the oracles of the suite's fuzz module.
//!
//! A case is a pure function of (seed, index): the draws come from a generator
//! seeded with both, so `agentconform replay` regenerates the same case. What the
//! target hands out (ids, tokens) differs between runs, and the case follows it.
//!
//! A fuzz case ends in one of three ways (see [`super::verdict`]): `Ok` (every
//! oracle held), a typed finding (its [`Oracle`] and detail), or a skip (the case
//! could not run against this target, with the reason; counted, never a finding).

use super::verdict::{classify, FuzzFinding, FuzzFuture, Oracle, Outcome};
use crate::drive::{Driver, Transport};
use crate::script::{Ctx, RunShared};
use crate::verdict::Entry;
use arbitrary::{Arbitrary, Unstructured};
use rand::{Rng, RngExt, SeedableRng};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One fuzz case in progress: the case context plus the seeded draws.
pub struct FuzzCtx {
    pub ctx: Ctx,
    rng: rand::rngs::StdRng,
    /// What was drawn, for the crash file and the replay line; written out only
    /// when a case needs it ([`FuzzCtx::label`]), not on every case.
    drawn: Vec<Box<dyn std::fmt::Debug + Send>>,
    /// The fuzzed message: the exact bytes the case sent last as its input.
    pub sent: Vec<u8>,
    /// What the cases of one run learn once about the target (a fixture, a
    /// registered helper) and share.
    pub memo: Memo,
}

/// State the cases of one run share.
pub type Memo = Arc<Mutex<Option<serde_json::Value>>>;

impl FuzzCtx {
    pub fn new(ctx: Ctx, seed: u64, index: u64, memo: Memo) -> FuzzCtx {
        FuzzCtx {
            ctx,
            rng: rand::rngs::StdRng::seed_from_u64(
                seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5C21_7ED0,
            ),
            drawn: Vec::new(),
            sent: Vec::new(),
            memo,
        }
    }

    /// A structured value drawn from the seed; it is added to the label.
    pub fn draw<T>(&mut self) -> T
    where
        T: for<'a> Arbitrary<'a> + Default + std::fmt::Debug + Clone + Send + 'static,
    {
        let mut raw = [0u8; 512];
        self.rng.fill_bytes(&mut raw);
        let v = T::arbitrary(&mut Unstructured::new(&raw)).unwrap_or_default();
        self.drawn.push(Box::new(v.clone()));
        v
    }

    /// What the case drew, in words.
    pub fn label(&self) -> String {
        let parts: Vec<String> = self.drawn.iter().map(|d| format!("{d:?}")).collect();
        parts.join(" ")
    }

    /// A number in `0..n` drawn from the seed (not added to the label).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.rng.random_range(0..n)
        }
    }

    /// What the run has learnt so far (see [`Memo`]).
    pub fn recall(&self) -> Option<serde_json::Value> {
        self.memo.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn remember(&self, v: serde_json::Value) {
        *self.memo.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
    }

    /// Records `bytes` as the fuzzed message of this case.
    pub fn fuzzed(&mut self, bytes: &[u8]) {
        self.sent = bytes.to_vec();
    }
}

pub type FuzzFn = for<'a> fn(&'a mut FuzzCtx) -> FuzzFuture<'a>;

/// A suite's live fuzzer.
pub struct Spec {
    /// Bindings its cases speak (the first is used for the embedded agent).
    pub transports: &'static [Transport],
    /// One fuzz case.
    pub case: FuzzFn,
    /// The liveness probe: a plain exchange the target must answer.
    pub probe: FuzzFn,
    /// Reference faults no fuzz case can reach, and why.
    pub unreachable: &'static [(&'static str, &'static str)],
    /// Whether each worker keeps one connection for all its cases (fast, for
    /// suites whose cases are single exchanges) rather than one per case.
    pub connection_per_worker: bool,
    /// Cases in flight at once when the run does not say ([`WORKERS`] unless the
    /// suite's cases wait on the target more than they compute).
    pub workers: u64,
}

/// Cases in flight at once, for a suite whose cases keep the CPU busy.
pub const WORKERS: u64 = 8;

/// What one case did.
pub struct CaseRun {
    /// What the case drew, in words (written out for a finding or a replay only).
    pub label: String,
    pub sent: Vec<u8>,
    pub transcript: Vec<Entry>,
    pub outcome: Outcome,
}

/// The target of a run and what its cases share.
#[derive(Clone)]
pub struct Target {
    /// The suite fuzzed.
    pub suite: &'static str,
    pub shared: Arc<RunShared>,
    pub transport: Transport,
    pub url: String,
    pub memo: Memo,
}

impl Target {
    /// A new connection to the target.
    pub fn driver(&self) -> Driver {
        crate::script::new_driver(&self.shared, self.transport, &self.url)
    }

    pub fn new(
        suite: &'static str,
        shared: Arc<RunShared>,
        transport: Transport,
        url: &str,
    ) -> Target {
        Target {
            suite,
            shared,
            transport,
            url: url.to_string(),
            memo: Memo::default(),
        }
    }
}

/// Runs case `index` of `seed` against the target, on a connection of its own.
pub async fn run_case(spec: &Spec, target: &Target, seed: u64, index: u64) -> CaseRun {
    run_fn(spec.case, target, seed, index, None, true).await.0
}

/// Runs the liveness probe; `Err` holds what the target did instead.
pub async fn probe(spec: &Spec, target: &Target) -> Result<(), String> {
    probe_on(spec, target, None).await.0
}

async fn probe_on(
    spec: &Spec,
    target: &Target,
    conn: Option<Driver>,
) -> (Result<(), String>, Option<Driver>) {
    let (run, conn) = run_fn(spec.probe, target, 0, 0, conn, false).await;
    let alive = match run.outcome {
        Outcome::Finding(f) => Err(f.detail),
        Outcome::Pass | Outcome::Skip(_) => Ok(()),
    };
    (alive, conn)
}

/// Runs `f` on `conn` when given (and hands it back), else on a new connection
/// that is closed afterwards.
async fn run_fn(
    f: FuzzFn,
    target: &Target,
    seed: u64,
    index: u64,
    conn: Option<Driver>,
    keep_label: bool,
) -> (CaseRun, Option<Driver>) {
    let keep = conn.is_some();
    let mut ctx = match conn {
        Some(d) => Ctx::with_driver(target.shared.clone(), target.transport, &target.url, d),
        None => Ctx::new(target.shared.clone(), target.transport, &target.url),
    };
    ctx.fuzzing = true;
    ctx.suite_id = Some(target.suite);
    let mut fc = FuzzCtx::new(ctx, seed, index, target.memo.clone());
    let result = f(&mut fc).await;
    let outcome = classify(result, fc.ctx.findings());
    let transcript = fc.ctx.take_transcript();
    let label = match outcome {
        Outcome::Pass | Outcome::Skip(_) if !keep_label => String::new(),
        _ => fc.label(),
    };

    let conn = if keep {
        Some(fc.ctx.into_driver())
    } else {
        fc.ctx.close().await;
        None
    };
    let run = CaseRun {
        label,
        sent: fc.sent,
        transcript,
        outcome,
    };
    (run, conn)
}

/// Writes a finding as `DIR/crashes/<index>-<oracle>.bin` (the fuzzed message) and
/// `.json` (oracle, detail, transcript, seed, and the replay command).
#[allow(clippy::too_many_arguments)]
pub fn write_finding(
    out: &Path,
    (suite, role): (&str, crate::verdict::Role),
    target: &str,
    seed: u64,
    index: u64,
    run: &CaseRun,
    found: &FuzzFinding,
) -> std::io::Result<PathBuf> {
    let reply = run
        .transcript
        .iter()
        .rev()
        .find(|e| e.kind == "recv")
        .map(|e| e.text.clone())
        .unwrap_or_default();
    let mut record = json!({
        "suite": suite, "target": target, "oracle": found.oracle.name(), "detail": found.detail,
        "input": run.label, "reply": reply, "seed": seed, "index": index,
        "transcript": run.transcript,
        "written_at": reference_impl::wire::clock::format_timestamp(time::OffsetDateTime::now_utc()),
    });
    if role == crate::verdict::Role::Client {
        record["role"] = json!("client");
    }
    write_crash(out, index, found.oracle, &run.sent, record)
}

/// Writes `DIR/crashes/<index>-<oracle>.bin` (`bytes`) and `.json` (`record` plus the
/// name of the .bin file and the replay command); returns the .json path.
pub fn write_crash(
    out: &Path,
    index: u64,
    oracle: Oracle,
    bytes: &[u8],
    mut record: serde_json::Value,
) -> std::io::Result<PathBuf> {
    let dir = out.join("crashes");
    std::fs::create_dir_all(&dir)?;
    let stem = format!("{index:08}-{oracle}");
    let bin = dir.join(format!("{stem}.bin"));
    std::fs::write(&bin, bytes)?;
    let meta = dir.join(format!("{stem}.json"));
    let target = record["target"].as_str().unwrap_or_default().to_string();
    record["bytes"] = json!(bin.file_name().map(|n| n.to_string_lossy().into_owned()));
    record["replay"] = json!(format!(
        "agentconform replay {} --target {target}",
        meta.display()
    ));
    std::fs::write(
        &meta,
        serde_json::to_vec_pretty(&record).unwrap_or_default(),
    )?;
    Ok(meta)
}

/// Progress of a run.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub cases: u64,
    pub findings: u64,
    pub skipped: u64,
    /// The reason of the first skipped case.
    pub skip_reason: Option<String>,
    /// The first finding.
    pub first_finding: Option<FuzzFinding>,
    pub elapsed: Duration,
}

/// Bounds of a run.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub cases: Option<u64>,
    pub duration: Option<Duration>,
    /// Stop after this many findings.
    pub max_findings: u64,
}

/// Where and what to fuzz.
pub struct Run<'a> {
    /// The suite's id, for the crash files.
    pub suite: &'static str,
    /// The side fuzzed, for the crash files.
    pub role: crate::verdict::Role,
    pub spec: &'static Spec,
    pub target: Target,
    pub seed: u64,
    pub bounds: Bounds,
    pub out: &'a Path,
    pub workers: u64,
}

/// Fuzzes with `workers` cases at once. A finding is followed by a liveness probe,
/// as is every 500th case; a failed probe ends the run.
pub async fn fuzz(run: Run<'_>) -> Summary {
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let summary = Arc::new(Mutex::new(Summary::default()));
    let max_cases = run.bounds.cases.unwrap_or(u64::MAX);
    let deadline = run.bounds.duration.map(|d| started + d);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..run.workers.max(1) {
        let (next, stop, summary) = (next.clone(), stop.clone(), summary.clone());
        let target = run.target.clone();
        let (spec, suite, seed, bounds) = (run.spec, run.suite, run.seed, run.bounds);
        let role = run.role;
        let out = run.out.to_path_buf();
        tasks.spawn(async move {
            // The worker's connection, when the spec keeps one per worker.
            let mut conn = spec.connection_per_worker.then(|| target.driver());
            loop {
                if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                    return;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= max_cases {
                    return;
                }
                let (r, kept) = run_fn(spec.case, &target, seed, index, conn.take(), false).await;
                conn = kept;
                let mut failed = match &r.outcome {
                    Outcome::Pass => None,
                    Outcome::Finding(f) => Some(f.clone()),
                    Outcome::Skip(why) => {
                        let mut s = summary.lock().unwrap_or_else(|p| p.into_inner());
                        s.skipped += 1;
                        s.skip_reason.get_or_insert_with(|| why.clone());
                        None
                    }
                };
                if failed.is_some() || index % 500 == 499 {
                    let (alive, kept) = probe_on(spec, &target, conn.take()).await;
                    conn = kept;
                    if let Err(detail) = alive {
                        stop.store(true, Ordering::Relaxed);
                        if failed.is_none() {
                            failed = Some(FuzzFinding {
                                oracle: Oracle::Liveness,
                                detail,
                            });
                        }
                    }
                }
                if let Some(found) = failed {
                    let mut s = summary.lock().unwrap_or_else(|p| p.into_inner());
                    s.findings += 1;
                    s.first_finding.get_or_insert_with(|| found.clone());
                    if s.findings >= bounds.max_findings {
                        stop.store(true, Ordering::Relaxed);
                    }
                    drop(s);
                    let _ =
                        write_finding(&out, (suite, role), &target.url, seed, index, &r, &found);
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let mut s = summary.lock().unwrap_or_else(|p| p.into_inner()).clone();
    s.cases = next.load(Ordering::Relaxed).min(max_cases);
    s.elapsed = started.elapsed();
    s
}
