//! Runs cases concurrently against a target and collects their results.

use crate::case::{Bindings, Case, CaseResult, Met, Outcome, Role, Stop, Suite, Untestable};
use crate::drive::Transport;
use crate::finding::{Finding, Key, Verdict};
use crate::script::{Ctx, RunShared};
use crate::verdict::Claim;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which cases to run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Which side of each suite is tested.
    pub role: crate::case::Role,
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
        // A glob matches a case's whole id (`suite/name`) or its name alone.
        let hit = |g: &GlobSet, id: &str| {
            g.is_match(id) || id.split_once('/').is_some_and(|(_, name)| g.is_match(name))
        };
        Ok(move |id: &str| {
            inc.as_ref().is_none_or(|g| hit(g, id)) && !exc.as_ref().is_some_and(|g| hit(g, id))
        })
    }
}

pub use crate::drive::Endpoints;

/// One deviation as the report lists it: the finding and every case that met it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReportedFinding {
    #[serde(flatten)]
    pub finding: Finding,
    /// Ids of the cases that met it, with their binding: `id [binding]`.
    pub cases: Vec<String>,
    /// The cases that fail (or warn) for it: the case that owns the rule, else the
    /// first that met it.
    pub owners: Vec<String>,
    /// The command that says what the finding means (`agentconform explain KEY`).
    pub explain: String,
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub results: Vec<CaseResult>,
    /// Every distinct deviation, in the order the cases first met them.
    pub findings: Vec<ReportedFinding>,
    pub untestable: Vec<Untestable>,
    pub duration: Duration,
}

impl RunOutput {
    /// The output of a run that ran nothing.
    pub fn empty() -> RunOutput {
        RunOutput {
            results: Vec::new(),
            findings: Vec::new(),
            untestable: Vec::new(),
            duration: Duration::ZERO,
        }
    }
}

/// At most this many cases run at once (they wait on I/O, not on the CPU). Large
/// enough that a suite's cases all start together, so a run takes about as long as
/// its slowest case.
pub const CONCURRENCY: usize = 64;

fn skipped(case: &Case, transport: Transport, reason: String) -> CaseResult {
    result_of(
        case,
        transport,
        Outcome::Skip,
        reason,
        0,
        Vec::new(),
        Vec::new(),
    )
}

fn result_of(
    case: &Case,
    transport: Transport,
    outcome: Outcome,
    message: String,
    duration_ms: u64,
    transcript: Vec<crate::case::Entry>,
    met: Vec<Met>,
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
        findings: met.iter().map(|m| m.finding.key.to_string()).collect(),
        reproduce: None,
        duration_ms,
        transcript,
        met,
        control_case: None,
        claims: Vec::new(),
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

/// What a client case may take beyond its driver's deadlines: its own exchanges
/// before and after the driver (a callback, the judging).
fn client_margin(profile: &crate::profile::Profile) -> u64 {
    profile.timing.case_timeout_ms * 2
}

async fn run_one(
    shared: Arc<RunShared>,
    (case, rules): (&'static Case, &'static [&'static crate::rules::Rule]),
    (transport, url): (Transport, String),
    role: Role,
) -> CaseResult {
    let started = Instant::now();
    let mut ctx = Ctx::new(shared.clone(), transport, &url);
    ctx.case_id = Some(case.id);
    ctx.suite_id = Some(case.suite);
    let budget = overall_budget(&shared, role);
    let ended = tokio::time::timeout(budget, (case.run)(&mut ctx)).await;
    ctx.close().await;
    let mut met = ctx.take_findings();
    let mut marks = ctx.take_claims();
    if let (Ok(Err(Stop::Blocked(key))), Some(last)) = (&ended, marks.last_mut()) {
        last.blocked_by.get_or_insert_with(|| key.to_string());
    }
    let (outcome, message) = match ended {
        Err(_) => {
            let m = format!(
                "the case did not finish within its overall budget of {} ms",
                budget.as_millis()
            );
            let f = crate::rules::TRANSPORT.found_in(case.suite, "case-budget", m.clone());
            met.push(Met {
                finding: f,
                own: false,
            });
            (Outcome::Blocked, m)
        }
        Ok(ended) => settle(&shared, (case, rules), ended, &mut met),
    };
    add_warnings(case, ctx.warnings(), &mut met);
    let (outcome, message) = needs_setting(outcome, message, &mut met);
    // Own findings decide the outcome here; incidental ones once the runner knows
    // which case owns each (see `merge_findings`).
    let before = outcome;
    let outcome = own_outcome(outcome, &met);
    let message = if before == Outcome::Pass && outcome != Outcome::Pass {
        // The case ended normally but owns deviations it recorded on the way: they
        // are its message, failures first.
        let mut own: Vec<&Met> = met.iter().filter(|m| m.own).collect();
        own.sort_by_key(|m| m.finding.outcome != Verdict::Fail);
        own.iter()
            .map(|m| m.finding.summary.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    } else if message.is_empty() {
        ctx.notes().last().cloned().unwrap_or_default()
    } else {
        message
    };
    let claims = settle_claims(case.id, &marks, &met);
    let (outcome, message) = claimed_outcome(outcome, message, &claims, &met);
    let transcript = ctx.take_transcript();
    let mut r = result_of(
        case,
        transport,
        outcome,
        message,
        started.elapsed().as_millis() as u64,
        transcript,
        met,
    );
    r.control_case = ctx.control_case;
    r.claims = claims;
    r
}

/// A missing setting is not a deviation: a setting finding the case met never
/// fails it, nor anything else (it only warns, and is no case's own), and the case
/// is blocked by it, "needs profile key K", unless it failed on its own.
fn needs_setting(outcome: Outcome, message: String, met: &mut [Met]) -> (Outcome, String) {
    let mut needs: Option<(&'static str, String)> = None;
    for m in met.iter_mut() {
        let Some(setting) = m.finding.setting() else {
            continue;
        };
        m.finding.outcome = Verdict::Warn;
        m.own = false;
        needs.get_or_insert_with(|| (setting, m.finding.summary.clone()));
    }
    let failed_on_its_own = met
        .iter()
        .any(|m| m.own && m.finding.outcome == Verdict::Fail);
    match needs {
        Some((setting, summary))
            if !failed_on_its_own
                && matches!(outcome, Outcome::Pass | Outcome::Warn | Outcome::Blocked) =>
        {
            (
                Outcome::Blocked,
                format!("needs profile key {setting}: {summary}"),
            )
        }
        _ => (outcome, message),
    }
}

/// Each claim the case made, settled with the findings met under it.
fn settle_claims(case: &str, marks: &[crate::verdict::ClaimMark], met: &[Met]) -> Vec<Claim> {
    marks
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let until = marks.get(i + 1).map_or(met.len(), |n| n.from);
            m.settle(case, met, until)
        })
        .collect()
}

/// A case of claims is as strong as its strongest claim: one that passed or warned
/// while a claim of it was blocked is blocked, and its message names the finding
/// that blocked the claim and what was judged beside it.
fn claimed_outcome(
    outcome: Outcome,
    message: String,
    claims: &[Claim],
    met: &[Met],
) -> (Outcome, String) {
    if !matches!(outcome, Outcome::Pass | Outcome::Warn) {
        return (outcome, message);
    }
    let blocked: Vec<&Claim> = claims
        .iter()
        .filter(|c| c.outcome == Outcome::Blocked)
        .collect();
    if blocked.is_empty() {
        return (outcome, message);
    }
    let why: Vec<String> = blocked
        .iter()
        .map(|c| {
            let key = c.blocked_by.as_deref().unwrap_or_default();
            let summary = met
                .iter()
                .find(|m| m.finding.key == key)
                .map(|m| m.finding.summary.as_str())
                .unwrap_or_default();
            format!("claim \"{}\" blocked by {key}: {summary}", c.name)
        })
        .collect();
    let beside: Vec<String> = claims
        .iter()
        .filter(|c| c.outcome != Outcome::Blocked)
        .map(|c| format!("\"{}\" {}", c.name, c.outcome))
        .collect();
    let mut m = why.join("; ");
    if !beside.is_empty() {
        m.push_str(&format!("; judged beside it: {}", beside.join(", ")));
    }
    (Outcome::Blocked, m)
}

/// A case's overall budget: the profile's, or for a client case the driver's
/// start-up allowance, then its own deadline from its first connection, then the
/// judging.
fn overall_budget(shared: &RunShared, role: Role) -> Duration {
    let budget = case_budget(&shared.profile);
    if role != Role::Client {
        return budget;
    }
    let c = &shared.profile.client;
    budget.max(Duration::from_millis(
        c.startup_ms + c.timeout_ms + client_margin(&shared.profile),
    ))
}

/// The outcome and message of a case that ended within its budget; its own failure
/// becomes a finding it owns.
fn settle(
    shared: &RunShared,
    (case, rules): (&'static Case, &'static [&'static crate::rules::Rule]),
    ended: Result<(), Stop>,
    met: &mut Vec<Met>,
) -> (Outcome, String) {
    let own = |f: Finding| Met {
        finding: f,
        own: true,
    };
    // A case whose subject a shared check also judges has a rule keyed by its id:
    // its own failure is that rule's finding, at the rule's level.
    let case_rule = rules.iter().copied().find(|r| r.key == case.id);
    let from_text = |m: &str| match case_rule {
        Some(rule) => rule.found(m),
        None => Finding::from_case_failure(case.id, case.requirements, case.level, m),
    };
    match ended {
        Err(Stop::Fail(m)) => {
            met.push(own(from_text(&m)));
            (Outcome::Pass, m)
        }
        Err(Stop::Finding(f)) => {
            let m = f.summary.clone();
            met.push(own(f));
            (Outcome::Pass, m)
        }
        Err(Stop::Blocked(key)) => {
            let summary = met
                .iter()
                .find(|m| m.finding.key == key)
                .map(|m| m.finding.summary.clone())
                .unwrap_or_default();
            let message = if summary.is_empty() {
                format!("blocked by {key}")
            } else {
                format!("blocked by {key}: {summary}")
            };
            (Outcome::Blocked, message)
        }
        Err(Stop::Skip(m)) => match skip_is_failure(shared.embedded, case.level, &m) {
            Some(m) => {
                met.push(own(from_text(&m)));
                (Outcome::Pass, m)
            }
            None => (Outcome::Skip, m),
        },
        Ok(()) => (Outcome::Pass, String::new()),
    }
}

/// Warnings the case gave in text are findings of its own subject, keyed
/// `<case>~<requirement>` (several for one requirement joined into one).
fn add_warnings(case: &'static Case, warnings: &[String], met: &mut Vec<Met>) {
    for w in warnings {
        let mut f = Finding::from_case_failure(case.id, case.requirements, case.level, w);
        if f.outcome == Verdict::Fail {
            f = f.at(crate::case::Level::Should);
        }
        let requirement = f.requirements.first().map_or("warning", String::as_str);
        f.key = crate::finding::case_key(case.id, &format!("~{requirement}"));
        if let Some(m) = met.iter_mut().find(|m| m.finding.key == f.key) {
            m.finding.summary = format!("{}; {}", m.finding.summary, f.summary);
        } else {
            met.push(Met {
                finding: f,
                own: true,
            });
        }
    }
}

/// A case that passed on a refusal counts only when its control passed too: a case
/// that names another as its control ([`crate::script::Ctx::controlled_by`]) is
/// blocked when that case, on the same binding, did not pass (or did not run). Run
/// after [`merge_findings`], which settles every outcome.
pub fn apply_controls(results: &mut [CaseResult]) {
    let passed = |rs: &[CaseResult], id: &str, t: Transport| -> Option<Outcome> {
        rs.iter()
            .find(|r| r.id == id && r.transport == t)
            .map(|r| r.outcome)
    };
    for i in 0..results.len() {
        let Some(control) = results[i].control_case else {
            continue;
        };
        if !matches!(results[i].outcome, Outcome::Pass | Outcome::Warn) {
            continue;
        }
        let t = results[i].transport;
        let got = passed(results, control, t);
        if matches!(got, Some(Outcome::Pass | Outcome::Warn)) {
            continue;
        }
        let r = &mut results[i];
        r.outcome = Outcome::Blocked;
        r.message = match got {
            Some(o) => format!("its control {control} did not pass ({o}): the valid twin was not taken, so a refusal here proves nothing"),
            None => format!("its control {control} did not run: a refusal here proves nothing without it"),
        };
    }
}

/// A MUST case that skips against the embedded reference, whose every setting (ttls,
/// expiries, spaces) the harness chose, fails instead: the failure's text, or `None`
/// where the skip stands.
fn skip_is_failure(embedded: bool, level: crate::case::Level, why: &str) -> Option<String> {
    (embedded && level == crate::case::Level::Must).then(|| {
        format!("skipped against the embedded reference, whose settings the harness chose, so it cannot skip: {why}")
    })
}

/// The outcome a case earns from its own findings, starting from `base`.
pub(crate) fn own_outcome(base: Outcome, met: &[Met]) -> Outcome {
    let mut o = base;
    for m in met.iter().filter(|m| m.own) {
        o = escalate(o, m.finding.outcome);
    }
    o
}

/// A case's outcome once it owns a finding with `verdict`.
fn escalate(o: Outcome, verdict: Verdict) -> Outcome {
    match (o, verdict) {
        (Outcome::Skip, _) | (Outcome::Fail, _) => o,
        (_, Verdict::Fail) => Outcome::Fail,
        (Outcome::Pass, Verdict::Warn) => Outcome::Warn,
        (o, Verdict::Warn) => o,
    }
}

/// Merges the findings of every case by key, in result order, and settles who owns
/// each: the cases that judged it as their own subject, else the case the finding
/// names as owner if it met it, else the first case that met it. Only owners fail or
/// warn for a finding; every other case that met it lists it and is judged on its
/// own subject (or is blocked).
pub fn merge_findings(results: &mut [CaseResult]) -> Vec<ReportedFinding> {
    let mut order: Vec<Key> = Vec::new();
    let mut by_key: std::collections::HashMap<Key, Vec<(usize, bool)>> =
        std::collections::HashMap::new();
    let mut first: std::collections::HashMap<Key, Finding> = std::collections::HashMap::new();
    for (i, r) in results.iter().enumerate() {
        for m in &r.met {
            let k = &m.finding.key;
            if !by_key.contains_key(k) {
                order.push(k.clone());
                first.insert(k.clone(), m.finding.clone());
            }
            by_key.entry(k.clone()).or_default().push((i, m.own));
        }
    }
    let mut out = Vec::new();
    for key in order {
        let (Some(finding), Some(met)) = (first.remove(&key), by_key.remove(&key)) else {
            continue;
        };
        let mut owners: Vec<usize> = met
            .iter()
            .filter(|(_, own)| *own)
            .map(|(i, _)| *i)
            .collect();
        if owners.is_empty() {
            if let Some(owner) = finding.owner {
                owners.extend(
                    met.iter()
                        .map(|(i, _)| *i)
                        .filter(|i| results[*i].id == owner),
                );
            }
        }
        if owners.is_empty() {
            owners.extend(met.first().map(|(i, _)| *i));
        }
        owners.dedup();
        let label = |r: &CaseResult| format!("{} [{}]", r.id, r.transport);
        for &i in &owners {
            let r = &mut results[i];
            let before = r.outcome;
            // A blocked owner fails for a failing finding; one that only warns stays
            // blocked, since its own subject was not judged.
            r.outcome = escalate(before, finding.outcome);
            if before != r.outcome && !finding.summary.is_empty() {
                r.message = finding.summary.clone();
            }
        }
        let mut cases: Vec<String> = met.iter().map(|(i, _)| label(&results[*i])).collect();
        cases.dedup();
        out.push(ReportedFinding {
            cases,
            owners: owners.iter().map(|i| label(&results[*i])).collect(),
            explain: crate::rules::command(&finding.key),
            finding,
        });
    }
    out
}

/// Runs the selected cases of each suite against that suite's endpoints.
pub async fn run(
    shared: Arc<RunShared>,
    plan: &[(&'static Suite, Endpoints)],
    selection: &Selection,
) -> Result<RunOutput, String> {
    run_with_progress(shared, plan, selection, None).await
}

/// A case that runs alone ([`Case::alone`]): its slot and result, once awaited.
type Later = std::pin::Pin<Box<dyn std::future::Future<Output = (usize, CaseResult)> + Send>>;

/// Waits for the cases under way, then runs those that run alone, one at a time;
/// returns every result in its slot's order.
async fn collect(
    mut tasks: tokio::task::JoinSet<(usize, CaseResult)>,
    later: Vec<Later>,
    mut slots: Vec<Option<CaseResult>>,
) -> Result<Vec<CaseResult>, String> {
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok((slot, result)) => slots[slot] = Some(result),
            Err(e) => return Err(format!("a case task failed: {e}")),
        }
    }
    for one in later {
        let (slot, result) = one.await;
        slots[slot] = Some(result);
    }
    Ok(slots.into_iter().flatten().collect())
}

/// [`run`], advancing `progress` by one as each case ends.
pub async fn run_with_progress(
    shared: Arc<RunShared>,
    plan: &[(&'static Suite, Endpoints)],
    selection: &Selection,
    progress: Option<indicatif::ProgressBar>,
) -> Result<RunOutput, String> {
    let selected = selection.matcher()?;
    let started = Instant::now();
    let sem = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut slots: Vec<Option<CaseResult>> = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut later: Vec<Later> = Vec::new();
    let mut untestable = Vec::new();
    for (suite, endpoints) in plan {
        untestable.extend_from_slice(suite.untestable);
        for case in suite
            .cases_of(selection.role)
            .iter()
            .filter(|c| selected(c.id))
        {
            let wanted = match bindings_for(suite, case, endpoints) {
                Ok(wanted) => wanted,
                Err(skip) => {
                    slots.extend(skip.map(|r| Some(*r)));
                    continue;
                }
            };
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
                let (role, rules) = (selection.role, suite.rules);
                let bar = progress.clone();
                if let Some(b) = &bar {
                    b.inc_length(1);
                }
                let one = async move {
                    let _permit = sem.acquire_owned().await;
                    let result = run_one(shared, (case, rules), (transport, url), role).await;
                    if let Some(b) = bar {
                        b.inc(1);
                        b.set_message(case.id);
                    }
                    (slot, result)
                };
                if case.alone {
                    later.push(Box::pin(one));
                } else {
                    tasks.spawn(one);
                }
            }
        }
    }
    let mut results = collect(tasks, later, slots).await?;
    let findings = merge_findings(&mut results);
    apply_controls(&mut results);
    Ok(RunOutput {
        results,
        findings,
        untestable,
        duration: started.elapsed(),
    })
}

/// The endpoints a case runs over: those of the target's bindings the suite and the
/// case speak; else the skip that says why none is (none when the case only speaks a
/// binding of the suite that the target does not offer).
fn bindings_for<'e>(
    suite: &Suite,
    case: &'static Case,
    endpoints: &'e Endpoints,
) -> Result<Vec<&'e (Transport, String)>, Option<Box<CaseResult>>> {
    let offered: Vec<&(Transport, String)> = endpoints
        .0
        .iter()
        .filter(|(t, _)| suite.transports.contains(t))
        .collect();
    if offered.is_empty() {
        return Err(Some(Box::new(skipped(
            case,
            Transport::Http,
            format!(
                "the target offers no binding of suite {} ({:?})",
                suite.id, suite.transports
            ),
        ))));
    }
    let wanted: Vec<&(Transport, String)> = match case.bindings {
        Bindings::Any => offered.clone(),
        Bindings::Only(t) => offered.iter().copied().filter(|(o, _)| *o == t).collect(),
    };
    if !wanted.is_empty() {
        return Ok(wanted);
    }
    Err(match case.bindings {
        Bindings::Only(t) => Some(Box::new(skipped(
            case,
            offered[0].0,
            format!(
                "needs the {t} binding; the target is reached over {}",
                offered[0].0
            ),
        ))),
        Bindings::Any => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Level;

    fn result(id: &str, outcome: Outcome, met: Vec<Met>) -> CaseResult {
        CaseResult {
            id: id.into(),
            suite: "s".into(),
            title: String::new(),
            requirements: Vec::new(),
            level: Level::Must,
            transport: Transport::Http,
            outcome,
            message: String::new(),
            findings: met.iter().map(|m| m.finding.key.to_string()).collect(),
            reproduce: None,
            duration_ms: 0,
            transcript: Vec::new(),
            met,
            control_case: None,
            claims: Vec::new(),
        }
    }

    fn met(f: &Finding, own: bool) -> Met {
        Met {
            finding: f.clone(),
            own,
        }
    }

    #[test]
    fn a_glob_matches_the_whole_id_or_the_name() {
        let sel = |inc: &[&str], exc: &[&str]| Selection {
            include: inc.iter().map(|s| s.to_string()).collect(),
            exclude: exc.iter().map(|s| s.to_string()).collect(),
            ..Selection::default()
        };
        let m = sel(&["close-handshake"], &[]).matcher().expect("globs");
        assert!(m("agora-spaces/close-handshake"));
        assert!(!m("agora-spaces/handshake"));
        let m = sel(&["agora-spaces/*"], &["order-*"])
            .matcher()
            .expect("globs");
        assert!(m("agora-spaces/handshake"));
        assert!(!m("agora-spaces/order-per-publisher"));
        assert!(!m("chorus/register"));
    }

    #[test]
    fn a_refused_control_blocks_only_its_claim() {
        use crate::verdict::ClaimMark;
        let refused = Finding::new("s/refused:X", &[], "a valid twin was refused");
        let forged = Finding::new("s/forged", &["AGP-024"], "a forged message was carried out");
        let mark = |name: &str, from: usize, blocked: bool| ClaimMark {
            name: name.into(),
            from,
            blocked_by: blocked.then(|| refused.key.to_string()),
            moot: None,
        };
        // The first claim is blocked by the refusal; the second judged its own.
        let marks = [mark("after hello", 0, true), mark("before hello", 1, false)];
        let met_all = vec![met(&refused, false), met(&forged, true)];
        let claims = settle_claims("s/c", &marks, &met_all);
        let outcomes: Vec<Outcome> = claims.iter().map(|c| c.outcome).collect();
        assert_eq!(outcomes, vec![Outcome::Blocked, Outcome::Fail]);
        assert_eq!(claims[1].findings, vec!["s/forged".to_string()]);
        // A case that fails on one claim fails, whatever blocked the other.
        let (o, _) = claimed_outcome(Outcome::Fail, "forged".into(), &claims, &met_all);
        assert_eq!(o, Outcome::Fail);
        // A case whose other claims passed is blocked, and says what was judged.
        let passing = [mark("after hello", 0, true), mark("before hello", 1, false)];
        let met_one = vec![met(&refused, false)];
        let claims = settle_claims("s/c", &passing, &met_one);
        let (o, m) = claimed_outcome(Outcome::Pass, String::new(), &claims, &met_one);
        assert_eq!(o, Outcome::Blocked);
        assert!(
            m.contains("blocked by s/refused:X: a valid twin was refused"),
            "{m}"
        );
        assert!(m.contains("judged beside it: \"before hello\" pass"), "{m}");
        // A moot claim is a skip, never a pass.
        let moot = [ClaimMark {
            moot: Some("the target wants hello first".into()),
            ..mark("before hello", 0, false)
        }];
        assert_eq!(settle_claims("s/c", &moot, &[])[0].outcome, Outcome::Skip);
    }

    #[test]
    fn only_the_named_owner_fails_for_an_incidental_finding() {
        let f = Finding::new("s/shape", &["AEX-010"], "status \"error\"").owned_by("s/shape-case");
        let mut rs = vec![
            result("s/a", Outcome::Pass, vec![met(&f, false)]),
            result("s/shape-case", Outcome::Pass, vec![met(&f, false)]),
            result("s/b", Outcome::Blocked, vec![met(&f, false)]),
        ];
        let found = merge_findings(&mut rs);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].owners, vec!["s/shape-case [http]"]);
        assert_eq!(found[0].cases.len(), 3);
        let outcomes: Vec<Outcome> = rs.iter().map(|r| r.outcome).collect();
        assert_eq!(
            outcomes,
            vec![Outcome::Pass, Outcome::Fail, Outcome::Blocked]
        );
        assert_eq!(rs[1].message, "status \"error\"");
    }

    #[test]
    fn the_first_case_owns_a_finding_whose_owner_did_not_meet_it() {
        let f = Finding::new("s/x", &[], "silent").owned_by("s/elsewhere");
        let mut rs = vec![
            result("s/a", Outcome::Blocked, vec![met(&f, false)]),
            result("s/b", Outcome::Blocked, vec![met(&f, false)]),
        ];
        merge_findings(&mut rs);
        assert_eq!(rs[0].outcome, Outcome::Fail);
        assert_eq!(rs[1].outcome, Outcome::Blocked);
    }

    #[test]
    fn own_findings_stay_with_their_cases_and_warnings_do_not_fail() {
        let own = Finding::new("s/a", &["AEX-010"], "mine");
        let warn = Finding::new("s/w", &["AEX-044"], "no /wellknown");
        let mut rs = vec![
            result(
                "s/a",
                Outcome::Fail,
                vec![met(&own, true), met(&warn, false)],
            ),
            result("s/b", Outcome::Pass, vec![met(&warn, false)]),
        ];
        let found = merge_findings(&mut rs);
        assert_eq!(found.len(), 2);
        assert_eq!(rs[0].outcome, Outcome::Fail);
        assert_eq!(rs[1].outcome, Outcome::Pass);
        assert_eq!(found[1].finding.outcome, Verdict::Warn);
        // A warning's owner that passed its subject warns.
        let mut rs = vec![result("s/b", Outcome::Pass, vec![met(&warn, false)])];
        merge_findings(&mut rs);
        assert_eq!(rs[0].outcome, Outcome::Warn);
    }

    #[test]
    fn a_refusal_without_its_passing_control_is_blocked() {
        let mut rs = vec![
            result("s/valid", Outcome::Fail, vec![]),
            result("s/refuse", Outcome::Pass, vec![]),
            result("s/orphan", Outcome::Pass, vec![]),
        ];
        rs[1].control_case = Some("s/valid");
        rs[2].control_case = Some("s/missing");
        apply_controls(&mut rs);
        assert_eq!(rs[1].outcome, Outcome::Blocked);
        assert!(rs[1].message.contains("s/valid"), "{}", rs[1].message);
        assert_eq!(rs[2].outcome, Outcome::Blocked);
        rs[0].outcome = Outcome::Pass;
        rs[1].outcome = Outcome::Pass;
        apply_controls(&mut rs);
        assert_eq!(rs[1].outcome, Outcome::Pass);
    }

    #[test]
    fn must_cases_cannot_skip_against_the_embedded_reference() {
        let why = "the conversation expires in 3000000000 s, beyond conversation_wait_max_s = 10";
        let m = skip_is_failure(true, Level::Must, why).expect("a failure");
        assert!(m.contains(why) && m.contains("embedded reference"), "{m}");
        assert_eq!(skip_is_failure(false, Level::Must, why), None);
        assert_eq!(skip_is_failure(true, Level::Fact, why), None);
    }

    #[test]
    fn informational_findings_never_fail() {
        let f = Finding::new("s/i", &["AEX-A20"], "recorded").at(Level::Must);
        assert_eq!(f.outcome, Verdict::Warn);
        let mut rs = vec![result("s/a", Outcome::Pass, vec![met(&f, true)])];
        merge_findings(&mut rs);
        assert_eq!(rs[0].outcome, Outcome::Warn);
    }
}
