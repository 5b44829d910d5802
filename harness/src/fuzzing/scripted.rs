//! Live fuzzing of the suites whose exchanges are short scripts (agora-exchange,
//! chorus, agora-spaces, agentprotocol): each fuzz case sets up what it needs (a
//! conversation, a registered agent, a joined space), then sends one message drawn
//! from the seed, and judges every reply with the suite's own expectation helpers
//! plus the oracles of the suite's fuzz module.
//!
//! A case is a pure function of (seed, index): the draws come from a generator
//! seeded with both, so `agentconform replay` regenerates the same case. What the
//! target hands out (ids, tokens) differs between runs, and the case follows it.
//!
//! A fuzz case ends in one of three ways (see [`super::verdict`]): `Ok` (every
//! oracle held), a typed finding (its [`Oracle`] and detail), or a skip (the case
//! could not run against this target, with the reason; counted, never a finding).

use super::verdict::{classify, FuzzFinding, FuzzFuture, Oracle, Outcome};
use crate::drive::Transport;
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
    /// What was drawn, for the crash file and the replay line.
    pub label: String,
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
            label: String::new(),
            sent: Vec::new(),
            memo,
        }
    }

    /// A structured value drawn from the seed; it is added to the label.
    pub fn draw<T: for<'a> Arbitrary<'a> + Default + std::fmt::Debug>(&mut self) -> T {
        let mut raw = [0u8; 512];
        self.rng.fill_bytes(&mut raw);
        let v = T::arbitrary(&mut Unstructured::new(&raw)).unwrap_or_default();
        if !self.label.is_empty() {
            self.label.push(' ');
        }
        self.label.push_str(&format!("{v:?}"));
        v
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
    pub suite: &'static str,
    /// Bindings its cases speak (the first is used for the embedded agent).
    pub transports: &'static [Transport],
    /// One fuzz case.
    pub case: FuzzFn,
    /// The liveness probe: a plain exchange the target must answer.
    pub probe: FuzzFn,
    /// Reference faults no fuzz case can reach, and why.
    pub unreachable: &'static [(&'static str, &'static str)],
}

/// What one case did.
pub struct CaseRun {
    pub label: String,
    pub sent: Vec<u8>,
    pub transcript: Vec<Entry>,
    pub outcome: Outcome,
}

/// The target of a run and what its cases share.
#[derive(Clone)]
pub struct Target {
    pub shared: Arc<RunShared>,
    pub transport: Transport,
    pub url: String,
    pub memo: Memo,
}

impl Target {
    pub fn new(shared: Arc<RunShared>, transport: Transport, url: &str) -> Target {
        Target {
            shared,
            transport,
            url: url.to_string(),
            memo: Memo::default(),
        }
    }
}

/// Runs case `index` of `seed` against the target.
pub async fn run_case(spec: &Spec, target: &Target, seed: u64, index: u64) -> CaseRun {
    run_fn(spec.case, target, seed, index).await
}

/// Runs the liveness probe; `Err` holds what the target did instead.
pub async fn probe(spec: &Spec, target: &Target) -> Result<(), String> {
    match run_fn(spec.probe, target, 0, 0).await.outcome {
        Outcome::Finding(f) => Err(f.detail),
        Outcome::Pass | Outcome::Skip(_) => Ok(()),
    }
}

async fn run_fn(f: FuzzFn, target: &Target, seed: u64, index: u64) -> CaseRun {
    let mut ctx = Ctx::new(target.shared.clone(), target.transport, &target.url);
    ctx.fuzzing = true;
    let mut fc = FuzzCtx::new(ctx, seed, index, target.memo.clone());
    let result = f(&mut fc).await;
    let outcome = classify(result, fc.ctx.findings());
    fc.ctx.close().await;
    CaseRun {
        label: fc.label,
        sent: fc.sent,
        transcript: fc.ctx.take_transcript(),
        outcome,
    }
}

/// Writes a finding as `DIR/crashes/<index>-<oracle>.bin` (the fuzzed message) and
/// `.json` (oracle, detail, transcript, seed, and the replay command).
#[allow(clippy::too_many_arguments)]
pub fn write_finding(
    out: &Path,
    suite: &str,
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
    let record = json!({
        "suite": suite, "target": target, "oracle": found.oracle.name(), "detail": found.detail,
        "input": run.label, "reply": reply, "seed": seed, "index": index,
        "transcript": run.transcript,
    });
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
        let (spec, seed, bounds, out) = (run.spec, run.seed, run.bounds, run.out.to_path_buf());
        tasks.spawn(async move {
            loop {
                if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                    return;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= max_cases {
                    return;
                }
                let r = run_case(spec, &target, seed, index).await;
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
                    if let Err(detail) = probe(spec, &target).await {
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
                    let _ = write_finding(&out, spec.suite, &target.url, seed, index, &r, &found);
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

/// Bytes of `v` in a spelling other than its canonical one (see [`WireForm`]).
pub fn respell(v: &serde_json::Value, w: WireForm) -> Vec<u8> {
    fn write(v: &serde_json::Value, w: WireForm, out: &mut String) {
        use serde_json::Value;
        match v {
            Value::Object(o) => {
                out.push('{');
                let mut entries: Vec<(&String, &Value)> = o.iter().collect();
                if matches!(w, WireForm::ReverseKeys) {
                    entries.reverse();
                }
                for (i, (k, val)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if matches!(w, WireForm::Spaces) {
                            " ,\n "
                        } else {
                            ","
                        });
                    }
                    write(&Value::String((*k).clone()), w, out);
                    out.push_str(if matches!(w, WireForm::Spaces) {
                        " : "
                    } else {
                        ":"
                    });
                    write(val, w, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if matches!(w, WireForm::Spaces) {
                            " , "
                        } else {
                            ","
                        });
                    }
                    write(x, w, out);
                }
                out.push(']');
            }
            Value::String(s) if matches!(w, WireForm::Escapes) => {
                out.push('"');
                for c in s.chars() {
                    match c {
                        'a'..='z' | 'A'..='Z' => out.push_str(&format!("\\u{:04x}", c as u32)),
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(v, w, &mut s);
    s.into_bytes()
}

/// A change of spelling that keeps the JSON value.
#[derive(Debug, Clone, Copy, Default, Arbitrary, PartialEq, Eq)]
pub enum WireForm {
    #[default]
    ReverseKeys,
    Spaces,
    Escapes,
}

/// A raw edit of a message's bytes.
#[derive(Debug, Clone, Default, Arbitrary)]
pub struct ByteEdit {
    pub at: u16,
    pub op: u8,
    pub val: u8,
}

/// Applies up to eight byte edits (flip, insert, delete).
pub fn edit_bytes(mut b: Vec<u8>, edits: &[ByteEdit]) -> Vec<u8> {
    for e in edits.iter().take(8) {
        if b.is_empty() {
            break;
        }
        let at = usize::from(e.at) % b.len();
        match e.op % 3 {
            0 => b[at] ^= e.val | 1,
            1 => b.insert(at, e.val),
            _ => {
                b.remove(at);
            }
        }
    }
    b
}

/// A JSON value drawn for a field.
#[derive(Debug, Clone, Default, Arbitrary)]
pub enum Val {
    #[default]
    Null,
    Bool(bool),
    Int(i32),
    Float(i16, u8),
    Str(String),
    Array(Vec<u8>),
    Object,
    Big,
}

impl Val {
    pub fn json(&self) -> serde_json::Value {
        match self {
            Val::Null => serde_json::Value::Null,
            Val::Bool(b) => json!(b),
            Val::Int(i) => json!(i),
            Val::Float(m, e) => json!(f64::from(*m) / f64::from(u32::from(*e) + 1)),
            Val::Str(s) => json!(s.chars().take(64).collect::<String>()),
            Val::Array(v) => json!(v.iter().take(8).collect::<Vec<_>>()),
            Val::Object => json!({"k": 1}),
            Val::Big => json!(1e300),
        }
    }
}
