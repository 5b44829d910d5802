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
use super::spec::{probe_on, run_fn, unanswered, CaseRun, Spec, Target};
use super::verdict::{FuzzFinding, Oracle, Outcome};
use crate::drive::Driver;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Of the skipped, cases that met a setting the run lacks, and the first
    /// such note (what to set): given once, never filed as a finding.
    pub setup: (u64, Option<String>),
    /// The first finding.
    pub first_finding: Option<FuzzFinding>,
    /// Every signature filed, with its count and how its input was shrunk.
    pub signatures: Vec<Filed>,
    /// What ended the run.
    pub ended: Ended,
    pub elapsed: Duration,
    /// What the run made on the target that stays there, by kind, and the cap per
    /// kind it ran with (`fuzz --max-created`).
    pub left_behind: std::collections::BTreeMap<&'static str, u64>,
    /// What it made in all, by kind (more than left where some expired).
    pub made: std::collections::BTreeMap<&'static str, u64>,
    pub cap_per_kind: Option<u64>,
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
    /// The suite fuzzed, for the crash files and the rules their signatures name.
    pub suite: &'static crate::case::Suite,
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
    /// The profile file the campaign ran with, which crash files record.
    pub profile_file: Option<crate::profile::ProfileFile>,
    /// The faults of the embedded reference it runs against, if it started one.
    pub embedded: Option<Vec<String>>,
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
    /// Cases skipped for a setting the run lacks, and the first such note.
    setup: (u64, Option<String>),
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
    let meta = meta_of(&run);
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
    let _ = shared
        .corpus
        .write_findings(first + cases, &run.target.created);
    let (signatures, hits, known) = shared.corpus.counts();
    let ended = ended_by(
        died,
        signatures as u64 >= run.bounds.max_findings,
        first + cases >= end,
    );
    let t = shared.tally.lock().unwrap_or_else(|p| p.into_inner());
    Summary {
        cases,
        findings: signatures as u64,
        finding_cases: hits,
        known,
        skipped: t.skipped,
        busy: t.busy,
        skip_reason: t.skip_reason.clone(),
        setup: t.setup.clone(),
        first_finding: t.first_finding.clone(),
        signatures: shared.corpus.entries(),
        ended,
        elapsed: started.elapsed(),
        left_behind: run.target.created.counts(),
        made: run.target.created.made(),
        cap_per_kind: run.target.created.cap(),
    }
}

/// What the run records of its campaign in every crash file.
fn meta_of(run: &Run<'_>) -> Meta {
    Meta {
        out: run.out.to_path_buf(),
        suite: run.suite,
        kinds: run.spec.kinds,
        role: run.role,
        target: run.target.url.clone(),
        transport: run.target.transport,
        seed: run.seed,
        previous: run.previous.clone(),
        profile_file: run.profile_file.clone(),
        embedded: run.embedded.clone(),
        keys: (run.suite.signing.as_ref()).map(|_| super::corpus::Keys::of(&run.target.shared)),
    }
}

/// What ended a run: the target's death, else its signatures, else its case
/// count, else its duration.
fn ended_by(died: bool, max_findings: bool, all_cases: bool) -> Ended {
    if died {
        Ended::Death
    } else if max_findings {
        Ended::MaxFindings
    } else if all_cases {
        Ended::Cases
    } else {
        Ended::Duration
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
        let (busy, setup) = match &r.outcome {
            Outcome::Finding(f) => (super::corpus::busy(r, f), self.setup(f)),
            _ => (None, None),
        };
        let skipped = match (&r.outcome, &busy, &setup) {
            (_, Some(why), _) | (_, None, Some(why)) => Some(why),
            (Outcome::Skip(why), None, None) => Some(why),
            _ => None,
        };
        if let Some(why) = skipped {
            let mut t = sh.tally.lock().unwrap_or_else(|p| p.into_inner());
            t.skipped += 1;
            t.busy += u64::from(busy.is_some());
            t.skip_reason.get_or_insert_with(|| why.clone());
            if let (None, Some(note)) = (&busy, &setup) {
                t.setup.0 += 1;
                t.setup.1.get_or_insert_with(|| note.clone());
            }
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

    /// A finding of a setting the run lacks (a fixture, a route the profile does
    /// not name) is no deviation of the target: the case is skipped, with what to
    /// set as its reason, and never filed.
    fn setup(&self, f: &FuzzFinding) -> Option<String> {
        let setting = self.target.suite.setting_of(f.key.as_deref()?)?;
        Some(format!("setup: set {setting} in the profile: {}", f.detail))
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
