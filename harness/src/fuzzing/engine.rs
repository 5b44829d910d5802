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

use super::corpus::{Corpus, Filed, Known, Meta, Recorded, Sample};
use super::verdict::{classify, FuzzFinding, FuzzFuture, Oracle, Outcome};
use crate::drive::{Driver, Transport};
use crate::script::{Ctx, RunShared};
use crate::verdict::Entry;
use arbitrary::{Arbitrary, Unstructured};
use rand::{Rng, RngExt, SeedableRng};
use std::path::Path;
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
    /// Sends [`FuzzCtx::sent`] again as the fuzzed frame of a fresh connection, in
    /// the state its cases set up first (a WebSocket frame needs its connection's):
    /// how a frame's input is sent alone to shrink it. `None`: frames are not shrunk.
    pub resend: Option<FuzzFn>,
    /// The message types a WebSocket frame's endpoint may name (`WS <type>`): a
    /// frame of any other type is `WS frame (unknown type)`, so that a type the
    /// fuzzer garbled is no endpoint of its own. Empty: every type is named.
    pub kinds: &'static [&'static str],
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
    run_fn(spec.case, target, seed, index, None, true, None)
        .await
        .0
}

/// Sends `bytes` alone as a fuzzed frame with the suite's `resend`; `None` when the
/// suite has none.
pub async fn resend_frame(spec: &Spec, target: &Target, bytes: &[u8]) -> Option<CaseRun> {
    let f = spec.resend?;
    Some(run_fn(f, target, 0, 0, None, false, Some(bytes)).await.0)
}

/// Runs the liveness probe once; `Err` holds the transport failure when the target
/// did not answer (a reply of any kind is `Ok`).
pub async fn probe(spec: &Spec, target: &Target) -> Result<(), String> {
    probe_on(spec, target, None).await.0
}

async fn probe_on(
    spec: &Spec,
    target: &Target,
    conn: Option<Driver>,
) -> (Result<(), String>, Option<Driver>) {
    let (run, conn) = run_fn(spec.probe, target, 0, 0, conn, false, None).await;
    // Alive means answering: any reply, conforming or not, is a live one.
    let alive = match run.outcome {
        Outcome::Finding(f) if unanswered(&f) => Err(f.detail),
        _ => Ok(()),
    };
    (alive, conn)
}

/// Runs `f` on `conn` when given (and hands it back), else on a new connection
/// that is closed afterwards; `input` presets [`FuzzCtx::sent`] (for `resend`).
async fn run_fn(
    f: FuzzFn,
    target: &Target,
    seed: u64,
    index: u64,
    conn: Option<Driver>,
    keep_label: bool,
    input: Option<&[u8]>,
) -> (CaseRun, Option<Driver>) {
    let keep = conn.is_some();
    let mut ctx = match conn {
        Some(d) => Ctx::with_driver(target.shared.clone(), target.transport, &target.url, d),
        None => Ctx::new(target.shared.clone(), target.transport, &target.url),
    };
    ctx.fuzzing = true;
    ctx.suite_id = Some(target.suite);
    let mut fc = FuzzCtx::new(ctx, seed, index, target.memo.clone());
    if let Some(bytes) = input {
        fc.sent = bytes.to_vec();
    }
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

/// Progress of a run.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub cases: u64,
    /// Distinct signatures filed (one crash file each).
    pub findings: u64,
    /// Cases that ended in a finding, known ones included.
    pub finding_cases: u64,
    /// Finding cases left out because the baseline knows their signature.
    pub known: u64,
    pub skipped: u64,
    /// Of the skipped, cases whose reply said the target was busy (HTTP 503, 429).
    pub busy: u64,
    /// The reason of the first skipped case.
    pub skip_reason: Option<String>,
    /// The first finding.
    pub first_finding: Option<FuzzFinding>,
    /// Every signature filed, with its count and how its input was shrunk.
    pub signatures: Vec<Filed>,
    /// What ended the run.
    pub ended: Ended,
    pub elapsed: Duration,
}

/// What ended a run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Its duration was reached.
    #[default]
    Duration,
    /// Its case count was reached.
    Cases,
    /// It filed `max_findings` signatures.
    MaxFindings,
    /// The target stopped answering.
    Death,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Ended::Duration => "its duration was reached",
            Ended::Cases => "its case count was reached",
            Ended::MaxFindings => "it reached --max-findings signatures",
            Ended::Death => "the target stopped answering",
        })
    }
}

/// Bounds of a run.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub cases: Option<u64>,
    pub duration: Option<Duration>,
    /// Stop after this many distinct signatures.
    pub max_findings: u64,
    /// The index of the first case: a resumed campaign goes on where the last one
    /// stopped (`cases` counts from here).
    pub first: u64,
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
    /// Signatures and finding keys a baseline already knows: left out.
    pub known: Known,
    /// The signatures an earlier campaign filed in `out`, which this one resumes:
    /// kept in findings.json, and new crash files numbered after them.
    pub previous: Vec<serde_json::Value>,
    /// Called now and then with the progress so far (the command's progress line).
    pub progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
}

/// The progress line's numbers.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub cases: u64,
    pub signatures: usize,
    pub elapsed: Duration,
}

/// The index past a run's last case.
fn end_of(b: &Bounds) -> u64 {
    b.cases.map_or(u64::MAX, |n| b.first.saturating_add(n))
}

/// Probes in a row that must go unanswered before the target counts as dead.
pub const PROBES: u32 = 3;
/// The pause between two of those probes.
const PROBE_PAUSE: Duration = Duration::from_millis(200);
/// The pause of a worker after the target said it is busy (HTTP 503 or 429).
pub const BUSY_PAUSE: Duration = Duration::from_millis(50);
/// Inputs kept for a death's crash file.
const LAST_INPUTS: usize = 8;

/// Whether the target still answers: up to [`PROBES`] probes in a row; `Err` with
/// the last one's failure when none got an answer at the transport level.
async fn alive(
    spec: &Spec,
    target: &Target,
    mut conn: Option<Driver>,
) -> (Result<(), String>, Option<Driver>) {
    let mut last = String::new();
    for i in 0..PROBES {
        if i > 0 {
            tokio::time::sleep(PROBE_PAUSE).await;
        }
        let (r, kept) = probe_on(spec, target, conn.take()).await;
        conn = kept;
        match r {
            Ok(()) => return (Ok(()), conn),
            Err(why) => last = why,
        }
    }
    (Err(last), conn)
}

/// Whether a finding is a failure at the transport level (the target did not
/// answer), after which the engine checks that it is still alive.
fn unanswered(f: &FuzzFinding) -> bool {
    matches!(f.oracle, Oracle::Timeout | Oracle::Transport)
}

/// What the workers of one run share.
struct Shared {
    next: AtomicU64,
    stop: AtomicBool,
    died: AtomicBool,
    corpus: Corpus,
    tally: Mutex<Tally>,
    recent: Mutex<std::collections::VecDeque<Sample>>,
}

#[derive(Default)]
struct Tally {
    skipped: u64,
    /// Skips because the target said it was busy.
    busy: u64,
    skip_reason: Option<String>,
    first_finding: Option<FuzzFinding>,
}

/// Fuzzes with `workers` cases at once. Every finding is filed by its signature
/// (one crash file each, `super::corpus`); the run ends at its bounds, at
/// `max_findings` signatures, or when the target stops answering: after a case
/// that got no answer, and every 500 cases, the liveness probe must get a reply,
/// any reply ([`PROBES`] tries in a row). A reply that deviates is a live reply.
/// Then each signature's input is shrunk against the target (`super::shrink`) and
/// `OUT/findings.json` is written.
pub async fn fuzz(run: Run<'_>) -> Summary {
    let started = Instant::now();
    let meta = Meta {
        out: run.out.to_path_buf(),
        suite: run.suite,
        role: run.role,
        target: run.target.url.clone(),
        transport: run.target.transport,
        seed: run.seed,
        previous: run.previous,
    };
    let shared = Arc::new(Shared {
        next: AtomicU64::new(run.bounds.first),
        stop: AtomicBool::new(false),
        died: AtomicBool::new(false),
        corpus: Corpus::new(meta, run.known),
        tally: Mutex::default(),
        recent: Mutex::default(),
    });
    let first = run.bounds.first;
    let end = end_of(&run.bounds);
    let deadline = run.bounds.duration.map(|d| started + d);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..run.workers.max(1) {
        let w = Worker {
            shared: shared.clone(),
            target: run.target.clone(),
            spec: run.spec,
            seed: run.seed,
            bounds: run.bounds,
            deadline,
        };
        tasks.spawn(w.work());
    }
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    tick.tick().await;
    loop {
        tokio::select! {
            j = tasks.join_next() => if j.is_none() { break },
            _ = tick.tick() => if let Some(p) = run.progress {
                p(&Progress {
                    cases: shared.next.load(Ordering::Relaxed).min(end) - first,
                    signatures: shared.corpus.counts().0,
                    elapsed: started.elapsed(),
                });
            },
        }
    }
    let died = shared.died.load(Ordering::Relaxed);
    if !died {
        super::shrink::shrink_all(&shared.corpus, run.spec, &run.target).await;
    }
    let cases = shared.next.load(Ordering::Relaxed).min(end) - first;
    let _ = shared.corpus.write_findings(first + cases);
    let (signatures, hits, known) = shared.corpus.counts();
    let ended = if died {
        Ended::Death
    } else if signatures as u64 >= run.bounds.max_findings {
        Ended::MaxFindings
    } else if first + cases >= end {
        Ended::Cases
    } else {
        Ended::Duration
    };
    let t = shared.tally.lock().unwrap_or_else(|p| p.into_inner());
    Summary {
        cases,
        findings: signatures as u64,
        finding_cases: hits,
        known,
        skipped: t.skipped,
        busy: t.busy,
        skip_reason: t.skip_reason.clone(),
        first_finding: t.first_finding.clone(),
        signatures: shared.corpus.entries(),
        ended,
        elapsed: started.elapsed(),
    }
}

/// One of a run's workers: it takes the next case until the run ends.
struct Worker {
    shared: Arc<Shared>,
    target: Target,
    spec: &'static Spec,
    seed: u64,
    bounds: Bounds,
    deadline: Option<Instant>,
}

impl Worker {
    async fn work(self) {
        let sh = &self.shared;
        let end = end_of(&self.bounds);
        // The worker's connection, when the spec keeps one per worker.
        let mut conn = self
            .spec
            .connection_per_worker
            .then(|| self.target.driver());
        loop {
            if sh.stop.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                return;
            }
            let index = sh.next.fetch_add(1, Ordering::Relaxed);
            if index >= end {
                return;
            }
            let (r, kept) = run_fn(
                self.spec.case,
                &self.target,
                self.seed,
                index,
                conn.take(),
                false,
                None,
            )
            .await;
            conn = kept;
            if self.file(index, &r) {
                // The target said it is busy: give it a moment.
                tokio::time::sleep(BUSY_PAUSE).await;
            }
            let no_answer = matches!(&r.outcome, Outcome::Finding(f) if unanswered(f));
            if no_answer || index % 500 == 499 {
                let (a, kept) = alive(self.spec, &self.target, conn.take()).await;
                conn = kept;
                if let Err(why) = a {
                    self.died(index, why);
                    return;
                }
            }
        }
    }

    /// Files what case `index` did: a skip is counted, a finding goes to the corpus
    /// (unless the reply it was made on said the target is busy: a skip); true for
    /// that busy answer.
    fn file(&self, index: u64, r: &CaseRun) -> bool {
        let sh = &self.shared;
        if !r.sent.is_empty() {
            let mut recent = sh.recent.lock().unwrap_or_else(|p| p.into_inner());
            if recent.len() == LAST_INPUTS {
                recent.pop_front();
            }
            recent.push_back(Sample {
                index,
                bytes: r.sent.clone(),
            });
        }
        let busy = match &r.outcome {
            Outcome::Finding(f) => super::corpus::busy(r, f),
            _ => None,
        };
        let skipped = match (&r.outcome, &busy) {
            (_, Some(why)) => Some(why),
            (Outcome::Skip(why), None) => Some(why),
            _ => None,
        };
        if let Some(why) = skipped {
            let mut t = sh.tally.lock().unwrap_or_else(|p| p.into_inner());
            t.skipped += 1;
            t.busy += u64::from(busy.is_some());
            t.skip_reason.get_or_insert_with(|| why.clone());
        } else if let Outcome::Finding(f) = &r.outcome {
            if let Recorded::New(_) = sh.corpus.record(index, r, f) {
                let mut t = sh.tally.lock().unwrap_or_else(|p| p.into_inner());
                t.first_finding.get_or_insert_with(|| f.clone());
                // This run's signatures: a resumed campaign's earlier ones do not count.
                if sh.corpus.counts().0 as u64 >= self.bounds.max_findings {
                    sh.stop.store(true, Ordering::Relaxed);
                }
            }
        }
        busy.is_some()
    }

    /// The target stopped answering after case `index`: the death is filed with the
    /// last inputs sent, and the run ends.
    fn died(&self, index: u64, why: String) {
        let sh = &self.shared;
        if sh.died.swap(true, Ordering::Relaxed) {
            return;
        }
        sh.stop.store(true, Ordering::Relaxed);
        let last: Vec<Sample> = sh
            .recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        let detail = format!(
            "the target stopped answering after case {index}: {PROBES} liveness probes in a row got no answer ({why})"
        );
        {
            let mut t = sh.tally.lock().unwrap_or_else(|p| p.into_inner());
            t.first_finding.get_or_insert_with(|| FuzzFinding {
                oracle: Oracle::Liveness,
                detail: detail.clone(),
                key: Some(super::corpus::DEATH.into()),
            });
        }
        sh.corpus.record_death(index, detail, last);
    }
}
