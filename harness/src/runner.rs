//! Runs cases concurrently against a target and collects their results.

use crate::case::{Bindings, Case, CaseResult, Level, Outcome, Stop, Suite, Untestable};
use crate::drive::Transport;
use crate::script::{Ctx, RunShared};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which cases to run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub include_slow: bool,
}

fn globset(patterns: &[String]) -> Result<Option<GlobSet>, String> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        b.add(Glob::new(p).map_err(|e| format!("bad case pattern {p:?}: {e}"))?);
    }
    b.build().map(Some).map_err(|e| e.to_string())
}

impl Selection {
    /// The matcher; an error names the bad pattern.
    pub fn matcher(&self) -> Result<impl Fn(&str) -> bool, String> {
        let inc = globset(&self.include)?;
        let exc = globset(&self.exclude)?;
        Ok(move |id: &str| {
            inc.as_ref().is_none_or(|g| g.is_match(id))
                && !exc.as_ref().is_some_and(|g| g.is_match(id))
        })
    }
}

/// Where each binding of the target is.
#[derive(Debug, Clone)]
pub struct Endpoints(pub Vec<(Transport, String)>);

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub results: Vec<CaseResult>,
    pub untestable: Vec<Untestable>,
    pub duration: Duration,
}

/// At most this many cases run at once (they wait on I/O, not on the CPU). Large
/// enough that a suite's cases all start together, so a run takes about as long as
/// its slowest case.
pub const CONCURRENCY: usize = 64;

fn skipped(case: &Case, transport: Transport, reason: String) -> CaseResult {
    result_of(case, transport, Outcome::Skip, reason, 0, Vec::new())
}

fn result_of(
    case: &Case,
    transport: Transport,
    outcome: Outcome,
    message: String,
    duration_ms: u64,
    transcript: Vec<crate::case::Entry>,
) -> CaseResult {
    CaseResult {
        id: case.id.to_string(),
        suite: case.suite.to_string(),
        title: case.title.to_string(),
        requirements: case.requirements.iter().map(|s| s.to_string()).collect(),
        level: case.level,
        transport,
        outcome,
        message,
        duration_ms,
        transcript,
    }
}

/// The longest a whole case may take, whatever its steps.
/// Three exchange deadlines plus the longest wait a case may choose (an offer's ttl,
/// a conversation's expiry). With the default timing: 15 s + 10 s = 25 s, so that a run
/// against any target, however slow or silent, ends within 30 s.
pub fn case_budget(profile: &crate::profile::Profile) -> Duration {
    let t = &profile.timing;
    let longest_wait = t
        .offer_wait_max_ms
        .max(t.conversation_wait_max_s * 1000 + 1500);
    Duration::from_millis(t.case_timeout_ms * 3 + longest_wait)
}

async fn run_one(
    shared: Arc<RunShared>,
    case: &'static Case,
    transport: Transport,
    url: String,
) -> CaseResult {
    let started = Instant::now();
    let mut ctx = Ctx::new(shared.clone(), transport, &url);
    let budget = case_budget(&shared.profile);
    let outcome = tokio::time::timeout(budget, (case.run)(&mut ctx)).await;
    ctx.close().await;
    let (mut outcome, mut message) = match outcome {
        Err(_) => (
            Outcome::Fail,
            format!(
                "the case did not finish within its overall budget of {} ms",
                budget.as_millis()
            ),
        ),
        Ok(Err(Stop::Fail(m))) => (Outcome::Fail, m),
        Ok(Err(Stop::Skip(m))) => (Outcome::Skip, m),
        Ok(Ok(())) if !ctx.warnings().is_empty() => (Outcome::Warn, ctx.warnings().join("; ")),
        Ok(Ok(())) => (
            Outcome::Pass,
            ctx.notes().last().cloned().unwrap_or_default(),
        ),
    };
    if case.level == Level::Should && outcome == Outcome::Fail {
        outcome = Outcome::Warn;
        message = format!("SHOULD not met: {message}");
    }
    let transcript = ctx.take_transcript();
    result_of(
        case,
        transport,
        outcome,
        message,
        started.elapsed().as_millis() as u64,
        transcript,
    )
}

/// Runs the selected cases of each suite against that suite's endpoints.
pub async fn run(
    shared: Arc<RunShared>,
    plan: &[(&'static Suite, Endpoints)],
    selection: &Selection,
) -> Result<RunOutput, String> {
    let selected = selection.matcher()?;
    let started = Instant::now();
    let sem = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut slots: Vec<Option<CaseResult>> = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut untestable = Vec::new();
    for (suite, endpoints) in plan {
        untestable.extend_from_slice(suite.untestable);
        for case in suite.cases.iter().filter(|c| selected(c.id)) {
            let offered: Vec<&(Transport, String)> = endpoints
                .0
                .iter()
                .filter(|(t, _)| suite.transports.contains(t))
                .collect();
            if offered.is_empty() {
                slots.push(Some(skipped(
                    case,
                    Transport::Http,
                    format!(
                        "the target offers no binding of suite {} ({:?})",
                        suite.id, suite.transports
                    ),
                )));
                continue;
            }
            let wanted: Vec<&(Transport, String)> = match case.bindings {
                Bindings::Any => offered.clone(),
                Bindings::Only(t) => offered.iter().copied().filter(|(o, _)| *o == t).collect(),
            };
            if wanted.is_empty() {
                if let Bindings::Only(t) = case.bindings {
                    slots.push(Some(skipped(
                        case,
                        offered[0].0,
                        format!(
                            "needs the {t} binding; the target is reached over {}",
                            offered[0].0
                        ),
                    )));
                }
                continue;
            }
            for (transport, url) in wanted {
                let quick = case.fast_when.is_some_and(|f| f(&shared.profile));
                if case.slow && !selection.include_slow && !quick {
                    slots.push(Some(skipped(
                        case,
                        *transport,
                        "slow case: run with --include-slow".into(),
                    )));
                    continue;
                }
                let slot = slots.len();
                slots.push(None);
                let (shared, sem, transport, url) =
                    (shared.clone(), sem.clone(), *transport, url.clone());
                tasks.spawn(async move {
                    let _permit = sem.acquire_owned().await;
                    (slot, run_one(shared, case, transport, url).await)
                });
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok((slot, result)) => slots[slot] = Some(result),
            Err(e) => return Err(format!("a case task failed: {e}")),
        }
    }
    Ok(RunOutput {
        results: slots.into_iter().flatten().collect(),
        untestable,
        duration: started.elapsed(),
    })
}
