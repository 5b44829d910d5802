//! The reputation algorithm (chorus.md §4): the harness's own calculator (kept apart
//! from the reference's on purpose: a bug there must not hide the same bug in a
//! target), the outcome channel (CHO-A1), the cases, and the fuzzer's outcome
//! sequences.

use super::discovery::{
    agent_missing, discover, entry, entry_skill_finding, get_discover, listing, DISCOVER_BY_SKILL,
    DISCOVER_NO_SCORE, REPUTATION_CLAMP, SCHEMA_DISCOVER_RESPONSE,
};
use super::registration::{fresh_agent, register, unique_skill, TestAgent, REPUTATION_INITIAL};
use super::wire::{block_on, call, memo_part, memo_set, now_utc, Base, Resp, EXACT, ROUNDED};
use crate::case::{fail, skip, Bindings, Case, Level, Step};
use crate::drive::Transport;
use crate::finding::Finding;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, finding, tagged, FuzzStep, Oracle};
use crate::profile::ChorusSection;
use crate::rules::rules;
use crate::script::Ctx;
use crate::template::{render, render_json};
use arbitrary::Arbitrary;
use reference_impl::wire::new_id;
use serde_json::{json, Value};

rules! {
    // check after outcomes CHO-045 alone; the union.
    PROFILE_OUTCOME_REQUEST {
        key: "chorus/profile:outcome_request",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/reputation-success",
        summary: "the profile's outcome request ([chorus] outcome_request, outcome_body) is taken by the registry",
        fails: "the outcome request is answered with a non-2xx status or a 2xx that says no: set outcome_request and outcome_body to what the registry takes (CHO-A1)",
        passes: "the outcome report taken",
        setting: Some("[chorus] outcome_request"),
    }
    REPUTATION_SUCCESS_GAIN {
        key: "chorus/reputation:success-gain",
        requirements: &["CHO-042", "CHO-043"],
        level: None,
        owner: "chorus/reputation-success",
        summary: "a SUCCESS adds 2.0 x the hirer's reputation / 100",
        fails: "after SUCCESS outcomes discovery shows a score off the formula by more than a two-decimal rounding",
        passes: "the formula's score, exact or rounded to two decimals (CHO-A10)",
    }
    REPUTATION_FAILURE_PENALTY {
        key: "chorus/reputation:failure-penalty",
        requirements: &["CHO-044"],
        level: None,
        owner: "chorus/reputation-failure",
        summary: "a FAILURE subtracts 4.5",
        fails: "after FAILURE outcomes discovery shows a score off the formula by more than a two-decimal rounding",
        passes: "the formula's score, exact or rounded to two decimals (CHO-A10)",
    }
    PROFILE_HIRER_REPUTATION {
        key: "chorus/profile:hirer_reputation",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/reputation-success",
        summary: "the outcome request tells the registry the hirer's reputation where it needs it",
        fails: "a SUCCESS gain is off and the profile's outcome request has no {hirer_reputation}: put it in [chorus] outcome_body or outcome_request if the registry takes it from the request",
        passes: "the gain matches, or the outcome request carries {hirer_reputation}",
        setting: Some("[chorus] hirer_reputation"),
    }
}

/// An agent's score as discovery shows it under `skill`. An agent missing from the
/// list, or listed without a score, blocks the case.
pub async fn score(ctx: &mut Ctx, agent_id: &str, skill: &str) -> Step<f64> {
    let entries = discover(ctx, &format!("skill={skill}")).await?;
    let Some(e) = entry(&entries, agent_id) else {
        return Err(ctx.block(agent_missing(agent_id, skill, entries.len())));
    };
    match e["reputation_score"].as_f64() {
        Some(s) => Ok(s),
        None => {
            let f = DISCOVER_NO_SCORE.found(format!(
                "agent {agent_id} is listed without a numeric reputation_score: {e}"
            ));
            Err(block_on(ctx, &SCHEMA_DISCOVER_RESPONSE, f))
        }
    }
}

// ---------------------------------------------------------------------------
// Reputation

/// The harness's calculator for chorus.md §4.
pub fn expected_after(old: f64, success: bool, hirer: f64) -> f64 {
    let new = if success {
        old + (2.0 * hirer / 100.0)
    } else {
        old - (3.0 * 1.5)
    };
    new.clamp(0.0, 100.0)
}

/// Exact to 1e-9 passes; within 0.005 (two-decimal rounding, CHO-A10) is noted.
/// The live fuzzer's check; the cases use [`after_outcomes`].
pub fn check_score(ctx: &mut Ctx, got: f64, want: f64, what: &str) -> Step<()> {
    let d = (got - want).abs();
    if d <= EXACT {
        ctx.checked(format!("{what}: {got}"));
        Ok(())
    } else if d <= ROUNDED {
        ctx.note(format!(
            "{what}: {got}, the formula gives {want}: rounded to two decimals, accepted (CHO-A10)"
        ));
        Ok(())
    } else if outcome_tells_hirer(&ctx.profile().chorus) {
        fail(format!(
            "{what}: discovery shows {got}; chorus.md §4 gives {want}"
        ))
    } else {
        fail(format!(
            "{what}: discovery shows {got}, not {want}; the outcome request does not tell the target the hirer's reputation: if its registry takes it from the request, put {{hirer_reputation}} in [chorus] outcome_body or outcome_request"
        ))
    }
}

/// One outcome the harness reports to the registry.
pub struct Report<'a> {
    pub agent_id: &'a str,
    /// The agent's owner; empty where the harness does not know it.
    pub agent_owner: &'a str,
    /// The agent's score before the outcome, as the harness last saw it.
    pub reputation: f64,
    pub hirer_id: &'a str,
    pub hirer_owner: &'a str,
    /// The hirer's score, which weighs a SUCCESS (chorus.md §4).
    pub hirer_reputation: f64,
    pub success: bool,
}

/// Whether the outcome request tells the target the hirer's reputation.
fn outcome_tells_hirer(c: &ChorusSection) -> bool {
    c.outcome_request.contains("{hirer_reputation}")
        || c.outcome_body.contains("{hirer_reputation}")
}

/// Reports an outcome through the profile's outcome request (CHO-A1). A refusal
/// blocks the case with a PROFILE finding: the request is the profile's.
pub async fn report_outcome(ctx: &mut Ctx, o: &Report<'_>) -> Step<()> {
    let (shown, r) = send_outcome(ctx, o).await?;
    if !r.ok() || r.refusal_in_2xx() {
        let f = PROFILE_OUTCOME_REQUEST.found(format!(
                "the outcome request {shown} answered {}: set [chorus] outcome_request and outcome_body to the request the target's registry takes for job outcomes (CHO-A1)",
                r.describe()
            ));
        return Err(ctx.block(f));
    }
    Ok(())
}

/// Sends the profile's outcome request for `o`; returns the request as shown
/// (`METHOD /path`) and the target's reply, whatever it says.
async fn send_outcome(ctx: &mut Ctx, o: &Report<'_>) -> Step<(String, Resp)> {
    let job_id = new_id();
    let (lower, upper) = if o.success {
        ("success", "SUCCESS")
    } else {
        ("failure", "FAILURE")
    };
    let vars: Vec<(&str, Value)> = vec![
        ("agent_id", json!(o.agent_id)),
        ("owner_id", json!(o.agent_owner)),
        ("reputation", json!(o.reputation)),
        ("job_id", json!(job_id)),
        ("orchestrator_id", json!(o.hirer_id)),
        ("hirer_id", json!(o.hirer_id)),
        ("hirer_owner_id", json!(o.hirer_owner)),
        ("hirer_reputation", json!(o.hirer_reputation)),
        ("outcome", json!(lower)),
        ("OUTCOME", json!(upper)),
        (
            "output_data",
            if o.success { json!({}) } else { Value::Null },
        ),
        (
            "error_message",
            if o.success {
                Value::Null
            } else {
                json!("harness-reported failure")
            },
        ),
        ("execution_cost", json!(0.0)),
        ("timestamp_utc", json!(now_utc())),
        ("uuid", json!(new_id())),
        ("case_id", json!(ctx.case_id.unwrap_or("chorus"))),
    ];
    let c = ctx.profile().chorus.clone();
    let Some((method, path)) = c.outcome_request.split_once(' ') else {
        return skip(format!(
            "outcome_request {:?} is not \"METHOD /path\"",
            c.outcome_request
        ));
    };
    let path = render(path, &vars, false).or_else(skip)?;
    let body = if c.outcome_body.trim().is_empty() {
        None
    } else {
        Some(render_json(&c.outcome_body, &vars).or_else(skip)?)
    };
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let shown = format!("{method} {path}");
    let r = call(ctx, Base::Registry, method, &path, body.as_ref()).await?;
    Ok((shown, r))
}

/// Hirer reputations outside 0–100 (chorus.md §4) told with a SUCCESS, where the
/// outcome request carries `{hirer_reputation}`: taken as they are, they would
/// move a score of 50.0 to −150.0 and 250.0.
pub const TOLD_OUT_OF_RANGE: [f64; 2] = [-10000.0, 10000.0];

/// Reports a SUCCESS for a fresh agent under `skill`, hired by `hirer`, telling the
/// registry the hirer is at `told`, outside 0–100 (CHO-007). The registry may
/// refuse it; taken, the agent's score stays within [0.0, 100.0] (CHO-045), and a
/// score outside it is the clamp's finding, recorded; the case goes on.
pub async fn told_out_of_range(ctx: &mut Ctx, skill: &str, hirer: &Scored, told: f64) -> Step<()> {
    if !outcome_tells_hirer(&ctx.profile().chorus) {
        ctx.note(format!(
            "a hirer reputation of {told} (outside 0–100) is not told: the outcome request has no {{hirer_reputation}}"
        ));
        return Ok(());
    }
    let t = scored(ctx, skill).await?;
    let who = (t.agent.id.as_str(), t.agent.owner_id.as_str(), t.score);
    let by = (hirer.agent.id.as_str(), hirer.agent.owner_id.as_str());
    if let Some((shown, r)) = tell_hirer_at(ctx, who, by, told).await? {
        ctx.checked(format!(
            "a SUCCESS telling a hirer at {told} (outside 0–100) is refused: {shown} answered {}",
            r.describe()
        ));
        return Ok(());
    }
    let got = score(ctx, &t.agent.id, skill).await?;
    match told_score_finding(told, t.score, got) {
        Some(f) => ctx.finding(f),
        None => ctx.checked(format!(
            "after a SUCCESS telling a hirer at {told} (outside 0–100), discovery shows {got}, within [0.0, 100.0]"
        )),
    }
    Ok(())
}

/// Reports a SUCCESS for the agent `who` (id, owner, score) hired by `hirer` (id,
/// owner), telling the registry the hirer is at `told`: the refusal (the request as
/// shown, the reply) when the registry refuses it, none when it takes it. What was
/// taken is judged by [`told_score_finding`] on the score discovery shows after.
async fn tell_hirer_at(
    ctx: &mut Ctx,
    who: (&str, &str, f64),
    hirer: (&str, &str),
    told: f64,
) -> Step<Option<(String, Resp)>> {
    let report = Report {
        agent_id: who.0,
        agent_owner: who.1,
        reputation: who.2,
        hirer_id: hirer.0,
        hirer_owner: hirer.1,
        hirer_reputation: told,
        success: true,
    };
    let (shown, r) = send_outcome(ctx, &report).await?;
    Ok((!r.ok() || r.refusal_in_2xx()).then_some((shown, r)))
}

/// The clamp's finding for an agent at `old` that discovery shows at `got` after a
/// SUCCESS told a hirer at `told`: any score outside [0.0, 100.0].
pub fn told_score_finding(told: f64, old: f64, got: f64) -> Option<Finding> {
    (!(0.0..=100.0).contains(&got)).then(|| {
        REPUTATION_CLAMP.found(format!(
            "an agent at {old} is shown at {got} after a SUCCESS whose outcome request told a hirer at {told}, outside 0–100 (CHO-007): the score leaves [0.0, 100.0], where chorus.md §4 clamps it"
        ))
    })
}

/// Which rule of chorus.md §4 a score broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreRule {
    SuccessGain,
    FailurePenalty,
    Clamp,
    /// The gain is off and the outcome request did not tell the hirer's reputation.
    HirerUnknown,
}

/// A test agent and its score as the harness last saw it.
#[derive(Debug, Clone)]
pub struct Scored {
    pub agent: TestAgent,
    pub score: f64,
}

/// Registers a test agent and takes its starting score from the registration
/// reply, else from discovery.
pub async fn scored(ctx: &mut Ctx, skill: &str) -> Step<Scored> {
    let agent = register(ctx, &[(skill, 0.1)]).await?;
    let score = match agent.reputation {
        Some(s) => s,
        None => score(ctx, &agent.id, skill).await?,
    };
    Ok(Scored { agent, score })
}

/// Reports `n` outcomes for `who`, hired by `hirer`, then reads `who`'s score back
/// and judges it by chorus.md §4 from the score last seen. A deviation is recorded
/// as the finding of the rule it breaks (owned by that rule's case) and returned;
/// `who.score` becomes what discovery shows, so that the case reads on from there.
pub async fn after_outcomes(
    ctx: &mut Ctx,
    who: &mut Scored,
    hirer: &Scored,
    success: bool,
    n: usize,
    what: &str,
) -> Step<Option<ScoreRule>> {
    for _ in 0..n {
        report_outcome(
            ctx,
            &Report {
                agent_id: &who.agent.id,
                agent_owner: &who.agent.owner_id,
                reputation: who.score,
                hirer_id: &hirer.agent.id,
                hirer_owner: &hirer.agent.owner_id,
                hirer_reputation: hirer.score,
                success,
            },
        )
        .await?;
    }
    let got = score(ctx, &who.agent.id, &who.agent.skill).await?;
    let old = who.score;
    who.score = got;
    let h = hirer.score;
    let (mut want, mut raw) = (old, old);
    for _ in 0..n {
        want = expected_after(want, success, h);
        raw += if success { 2.0 * h / 100.0 } else { -4.5 };
    }
    let d = (got - want).abs();
    if d <= EXACT {
        ctx.checked(format!("{what}: {got}"));
        return Ok(None);
    }
    if d <= ROUNDED {
        ctx.note(format!(
            "{what}: {got}, chorus.md §4 gives {want}: rounded to two decimals, accepted (CHO-A10)"
        ));
        return Ok(None);
    }
    let kind = if success { "SUCCESS" } else { "FAILURE" };
    let steps = format!("from {old}, {n} {kind} from a hirer at {h}");
    let clamped = (raw - want).abs() > EXACT || !(0.0..=100.0).contains(&got);
    let tells_hirer = outcome_tells_hirer(&ctx.profile().chorus);
    let (rule, f) = reputation_finding(
        clamped,
        success,
        tells_hirer,
        format!("{what}: discovery shows {got}"),
        (want, h, &steps),
    );
    ctx.finding(f);
    Ok(Some(rule))
}

/// Which rule a score off chorus.md §4's formula breaks, and its finding: the clamp
/// to [0.0, 100.0] (CHO-045), the hirer's reputation the outcome request does not
/// carry (a profile finding), the success gain (CHO-042, CHO-043) or the failure
/// penalty (CHO-044). `shows` says what discovery showed, `steps` what led there.
fn reputation_finding(
    clamped: bool,
    success: bool,
    tells_hirer: bool,
    shows: String,
    (want, h, steps): (f64, f64, &str),
) -> (ScoreRule, Finding) {
    let (rule, found, summary): (ScoreRule, &'static crate::rules::Rule, String) = if clamped {
        (
            ScoreRule::Clamp,
            &REPUTATION_CLAMP,
            format!("{shows}; {steps} give {want}, clamped to [0.0, 100.0] (chorus.md §4)"),
        )
    } else if success && !tells_hirer {
        (
            ScoreRule::HirerUnknown,
            &PROFILE_HIRER_REPUTATION,
            format!(
                "{shows}, not the {want} that {steps} give; the outcome request does not tell the target the hirer's reputation: if its registry takes it from the request, put {{hirer_reputation}} in [chorus] outcome_body or outcome_request"
            ),
        )
    } else if success {
        (
            ScoreRule::SuccessGain,
            &REPUTATION_SUCCESS_GAIN,
            format!("{shows}; {steps} give {want} (+2.0 × {h} / 100 each, chorus.md §4)"),
        )
    } else {
        (
            ScoreRule::FailurePenalty,
            &REPUTATION_FAILURE_PENALTY,
            format!("{shows}; {steps} give {want} (−4.5 each, chorus.md §4)"),
        )
    };
    let f = found.found(summary);
    (rule, f)
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "register-initial-reputation",
        "a new agent starts at 50.0, on registration and in discovery",
        ["CHO-007", "CHO-014"],
        Fact,
        |ctx| {
            let skill = unique_skill();
            // The registration reply's score is judged by `register` (chorus/reputation:initial).
            let a = register(ctx, &[(&skill, 0.1)]).await?;
            if a.reputation.is_none() {
                ctx.note("the registration reply has no numeric reputation_score (judged by chorus/register)");
            }
            let s = score(ctx, &a.id, &skill).await?;
            if (s - 50.0).abs() > 0.005 {
                ctx.finding(REPUTATION_INITIAL.found(format!(
                    "discovery shows a new agent at reputation_score {s}, not 50.0"
                )));
            } else {
                ctx.checked(format!("discovered reputation of a new agent: {s}"));
            }
            Ok(())
        }
    ),
    case!(
        "reputation-success",
        "a SUCCESS adds 2.0 × the hirer's reputation / 100",
        ["CHO-042", "CHO-043"],
        Profile,
        |ctx| {
            let skill = unique_skill();
            let hirer = scored(ctx, &skill).await?;
            let mut t = scored(ctx, &skill).await?;
            let what = format!("after a SUCCESS from a hirer at {}", hirer.score);
            after_outcomes(ctx, &mut t, &hirer, true, 1, &what).await?;
            // t hires u: the gain follows the hirer's own score.
            let mut u = scored(ctx, &skill).await?;
            let what = format!("after a SUCCESS from a hirer at {}", t.score);
            after_outcomes(ctx, &mut u, &t, true, 1, &what).await?;
            Ok(())
        }
    ),
    case!(
        "reputation-failure",
        "a FAILURE subtracts 4.5",
        ["CHO-044"],
        Profile,
        |ctx| {
            let skill = unique_skill();
            let hirer = scored(ctx, &skill).await?;
            let mut t = scored(ctx, &skill).await?;
            for i in 1..=3 {
                after_outcomes(ctx, &mut t, &hirer, false, 1, &format!("after FAILURE {i}"))
                    .await?;
            }
            Ok(())
        }
    ),
    case!(
        "reputation-clamp",
        "scores clamp at 100.0 and 0.0, also after a told hirer reputation outside 0–100; a hirer at 100 gives 2.0",
        ["CHO-007", "CHO-043", "CHO-045"],
        Profile,
        |ctx| {
            let skill = unique_skill();
            let hirer = scored(ctx, &skill).await?;
            let gain = 2.0 * hirer.score / 100.0;
            if gain < 0.5 {
                return skip(format!(
                    "a new hirer is at {}: too low to lift an agent to 100 in a few outcomes",
                    hirer.score
                ));
            }
            let mut top = scored(ctx, &skill).await?;
            after_outcomes(ctx, &mut top, &hirer, true, 1, "after a first SUCCESS").await?;
            // That SUCCESS, taken, is the control of the told values outside 0–100.
            for told in TOLD_OUT_OF_RANGE {
                told_out_of_range(ctx, &skill, &hirer, told).await?;
            }
            let below = ((100.0 - top.score) / gain + 1e-9).floor().max(0.0) as usize;
            if below > 150 {
                return skip(format!("the agent is at {}: too far from 100", top.score));
            }
            if below > 0 {
                after_outcomes(ctx, &mut top, &hirer, true, below, "up to 100").await?;
            }
            after_outcomes(
                ctx,
                &mut top,
                &hirer,
                true,
                1,
                "after a SUCCESS across 100 (clamped)",
            )
            .await?;
            after_outcomes(
                ctx,
                &mut top,
                &hirer,
                true,
                1,
                "after a SUCCESS at 100 (clamped)",
            )
            .await?;
            let mut fresh = scored(ctx, &skill).await?;
            let what = format!("after a SUCCESS from a hirer at {}", top.score);
            after_outcomes(ctx, &mut fresh, &top, true, 1, &what).await?;
            let mut bottom = scored(ctx, &skill).await?;
            let above = (bottom.score / 4.5 + 1e-9).floor().max(0.0) as usize;
            if above > 0 && above <= 150 {
                after_outcomes(ctx, &mut bottom, &hirer, false, above, "down to 0").await?;
            }
            after_outcomes(
                ctx,
                &mut bottom,
                &hirer,
                false,
                1,
                "after a FAILURE across 0 (clamped)",
            )
            .await?;
            after_outcomes(
                ctx,
                &mut bottom,
                &hirer,
                false,
                1,
                "after a FAILURE at 0 (clamped)",
            )
            .await?;
            Ok(())
        }
    ),
    case!(
        "reputation-sequence",
        "a scripted sequence of successes and failures from hirers at different scores",
        ["CHO-042", "CHO-044", "CHO-045"],
        Profile,
        |ctx| {
            let skill = unique_skill();
            let low = scored(ctx, &skill).await?;
            let mut high = scored(ctx, &skill).await?;
            // Lift one hirer first, so that two different hirer scores are in play.
            after_outcomes(ctx, &mut high, &low, true, 3, "hirer after three successes").await?;
            let mut t = scored(ctx, &skill).await?;
            let steps = [
                (true, true),
                (false, false),
                (true, false),
                (true, true),
                (false, true),
                (true, true),
            ];
            for (i, (success, from_high)) in steps.into_iter().enumerate() {
                let hirer = if from_high { &high } else { &low };
                let what = format!(
                    "step {}: {} from a hirer at {}",
                    i + 1,
                    if success { "SUCCESS" } else { "FAILURE" },
                    hirer.score
                );
                after_outcomes(ctx, &mut t, hirer, success, 1, &what).await?;
            }
            Ok(())
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) struct Reputation {
    /// (SUCCESS?, hirer) per outcome.
    steps: Vec<(bool, u8)>,
    check_each: bool,
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) struct Clamp {
    top: bool,
    hirers: Vec<u8>,
    /// A SUCCESS for a fresh agent telling a hirer outside 0–100 instead, above
    /// (true) or below.
    told: Option<bool>,
}

/// Reports one outcome for `agent` (at `score`) hired by `hirer` (at `hirer_score`).
async fn outcome(
    f: &mut FuzzCtx,
    agent: &str,
    score: f64,
    hirer: &str,
    hirer_score: f64,
    success: bool,
) -> FuzzStep<()> {
    let report = Report {
        agent_id: agent,
        agent_owner: "",
        reputation: score,
        hirer_id: hirer,
        hirer_owner: "",
        hirer_reputation: hirer_score,
        success,
    };
    Ok(report_outcome(&mut f.ctx, &report).await?)
}

// ---------------------------------------------------------------------------
// Reputation

pub(super) async fn reputation_case(f: &mut FuzzCtx, c: Reputation) -> FuzzStep<()> {
    let p = pool(f).await?;
    let skill = unique_skill();
    let t = fresh_agent(f, &[(skill.as_str(), 0.1)]).await?;
    let steps: Vec<(bool, u8)> = if c.steps.is_empty() {
        vec![(true, 0)]
    } else {
        c.steps.iter().take(4).copied().collect()
    };
    let mut want = 50.0;
    let n = steps.len();
    let steps_alike = steps.iter().all(|(s, _)| *s == steps[0].0);
    for (i, (success, h)) in steps.into_iter().enumerate() {
        let hirer = &p.agents[usize::from(h) % p.agents.len()];
        let hirer_score = hirer.score_cents as f64 / 100.0;
        let hid = hirer.id.clone();
        tagged(
            Oracle::Outcome,
            outcome(f, &t, want, &hid, hirer_score, success).await,
        )?;
        want = expected_after(want, success, hirer_score);
        // A mixed sequence is checked after each outcome, so that a wrong score is
        // the finding of the rule for the outcome that made it.
        let mixed = !steps_alike;
        if c.check_each || mixed || i + 1 == n {
            let got = tagged(Oracle::Discovery, score(&mut f.ctx, &t, &skill).await)?;
            let what = format!(
                "after outcome {} ({}, hirer at {hirer_score}) (CHO-042 to CHO-045)",
                i + 1,
                if success { "SUCCESS" } else { "FAILURE" }
            );
            let rule = if success {
                &REPUTATION_SUCCESS_GAIN
            } else {
                &REPUTATION_FAILURE_PENALTY
            };
            let judged = tagged(
                Oracle::Reputation,
                check_score(&mut f.ctx, got, want, &what),
            );
            verdict::under(Some(rule.key), judged)?;
        }
    }
    Ok(())
}

pub(super) async fn clamp_case(f: &mut FuzzCtx, c: Clamp) -> FuzzStep<()> {
    let p = pool(f).await?;
    if let Some(high) = c.told {
        return told_case(f, &p, TOLD_OUT_OF_RANGE[usize::from(high)]).await;
    }
    let (who, success, want) = if c.top {
        (TOP, true, 100.0)
    } else {
        (BOTTOM, false, 0.0)
    };
    let id = p.agents[who].id.clone();
    let hirers: Vec<u8> = if c.hirers.is_empty() {
        vec![0]
    } else {
        c.hirers.iter().take(2).copied().collect()
    };
    for h in hirers {
        let i = usize::from(h) % p.agents.len();
        let hirer = if i == who {
            &p.agents[H50]
        } else {
            &p.agents[i]
        };
        let (hid, hs) = (hirer.id.clone(), hirer.score_cents as f64 / 100.0);
        tagged(
            Oracle::Outcome,
            outcome(f, &id, want, &hid, hs, success).await,
        )?;
    }
    let got = tagged(Oracle::Discovery, score(&mut f.ctx, &id, &p.skill).await)?;
    let what = format!(
        "an agent at {want} after more {} (clamped to [0, 100], CHO-045)",
        if success { "successes" } else { "failures" }
    );
    tagged(
        Oracle::Reputation,
        check_score(&mut f.ctx, got, want, &what),
    )
}

/// The fuzzer's draw of [`told_out_of_range`]: a SUCCESS for a fresh agent whose
/// outcome request tells a hirer at `told`; refused, nothing is judged.
async fn told_case(f: &mut FuzzCtx, p: &Pool, told: f64) -> FuzzStep<()> {
    if !outcome_tells_hirer(&f.ctx.profile().chorus) {
        return verdict::skip("the outcome request has no {hirer_reputation} to tell");
    }
    let skill = unique_skill();
    let t = fresh_agent(f, &[(skill.as_str(), 0.1)]).await?;
    let hirer = p.agents[H50].id.clone();
    let told_it = tell_hirer_at(&mut f.ctx, (&t, "", 50.0), (&hirer, ""), told).await;
    if tagged(Oracle::Outcome, told_it)?.is_some() {
        return Ok(());
    }
    let got = tagged(Oracle::Discovery, score(&mut f.ctx, &t, &skill).await)?;
    verdict::first_failing(told_score_finding(told, 50.0, got).into_iter().collect())
}

// A pool of agents at known scores, and the listing read against it

/// An agent whose score and cost under the pool skill the run knows.
#[derive(Debug, Clone)]
pub(super) struct Known {
    pub(super) id: String,
    pub(super) score_cents: i64,
    pub(super) cost_cents: i64,
}

/// Agents registered once per run under a skill of their own, at scores set by
/// outcomes: H50 and a twin at 50.0, LOW at 45.5, MID at 53.0, TOP at 100.0 and
/// BOTTOM at 0.0. Their scores never change: they only hire, except TOP, which only
/// gets more successes, and BOTTOM, which only gets more failures.
pub(super) struct Pool {
    pub(super) skill: String,
    pub(super) agents: Vec<Known>,
}

/// The pool agents' costs for the pool skill, in cents, by index.
const POOL_COSTS: [i64; 6] = [10, 10, 5, 25, 0, 250];

const H50: usize = 0;

const LOW: usize = 2;

const MID: usize = 3;

const TOP: usize = 4;

const BOTTOM: usize = 5;

pub(super) async fn pool(f: &mut FuzzCtx) -> FuzzStep<Pool> {
    if let Some(p) = remembered_pool(f) {
        return Ok(p);
    }
    let skill = format!("fz_pool_{}", new_id().replace('-', ""));
    let mut ids = Vec::new();
    for c in POOL_COSTS {
        ids.push(fresh_agent(f, &[(skill.as_str(), c as f64 / 100.0)]).await?);
    }
    let scores = set_pool_scores(f, &ids).await?;
    let agents: Vec<Known> = ids
        .iter()
        .zip(scores)
        .zip(POOL_COSTS)
        .map(|((id, s), c)| Known {
            id: id.clone(),
            score_cents: (s * 100.0).round() as i64,
            cost_cents: c,
        })
        .collect();
    let p = Pool { skill, agents };
    // The pool as discovery shows it must be what the model says.
    let q = format!("skill={}", p.skill);
    let r = get_discover(f, &q).await?;
    let entries = listing(f, &r, &q, true)?;
    check_listing(
        &entries,
        &p.skill,
        &p.agents,
        None,
        None,
        true,
        "the pool of known agents",
    )?;
    let memo: Vec<Value> = p
        .agents
        .iter()
        .map(|a| json!({"id": a.id, "score": a.score_cents, "cost": a.cost_cents}))
        .collect();
    memo_set(f, "pool", json!({"skill": p.skill, "agents": memo}));
    Ok(p)
}

/// The pool the run remembers, if it holds every pool agent.
fn remembered_pool(f: &FuzzCtx) -> Option<Pool> {
    let m = memo_part(f, "pool")?;
    let agents = m["agents"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| Known {
                    id: x["id"].as_str().unwrap_or_default().to_string(),
                    score_cents: x["score"].as_i64().unwrap_or(0),
                    cost_cents: x["cost"].as_i64().unwrap_or(0),
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if agents.len() == POOL_COSTS.len() {
        return Some(Pool {
            skill: m["skill"].as_str().unwrap_or_default().to_string(),
            agents,
        });
    }
    None
}

/// Sets the fresh pool agents `ids` (all at 50.0) to their known scores through the
/// outcome channel (CHO-A1); returns the scores the model gives them.
async fn set_pool_scores(f: &mut FuzzCtx, ids: &[String]) -> FuzzStep<[f64; 6]> {
    let mut scores = [50.0_f64; 6];
    // (agent, hirer, SUCCESS?, how many): MID to 53.0, LOW to 45.5, BOTTOM to 0.0, TOP to 100.0.
    let plan = [
        (MID, H50, true, 3),
        (LOW, H50, false, 1),
        (BOTTOM, H50, false, 12),
        (TOP, MID, true, 48),
    ];
    for (who, hirer, success, times) in plan {
        for _ in 0..times {
            let (a, h) = (ids[who].clone(), ids[hirer].clone());
            let (s, hs) = (scores[who], scores[hirer]);
            tagged(Oracle::Outcome, outcome(f, &a, s, &h, hs, success).await)?;
            scores[who] = expected_after(scores[who], success, scores[hirer]);
        }
    }
    Ok(scores)
}

/// Checks a listing under `skill` against the agents that have it.
pub(super) fn check_listing(
    entries: &[Value],
    skill: &str,
    known: &[Known],
    min: Option<i64>,
    max: Option<i64>,
    exact: bool,
    what: &str,
) -> FuzzStep<()> {
    let passes =
        |k: &Known| min.is_none_or(|m| k.score_cents >= m) && max.is_none_or(|m| k.cost_cents <= m);
    let mut seen: Vec<&str> = Vec::new();
    for e in entries {
        let id = e["agent_id"].as_str().unwrap_or_default();
        let by_skill = Some(DISCOVER_BY_SKILL.key);
        let Some(k) = known.iter().find(|k| k.id == id) else {
            let stray = finding(
                Oracle::Discovery,
                format!("{what}: agent {id} is listed under skill {skill}, which it does not have (CHO-018)"),
            );
            return verdict::under(by_skill, stray);
        };
        if seen.contains(&id) {
            let twice = finding(
                Oracle::Discovery,
                format!("{what}: agent {id} is listed twice"),
            );
            return verdict::under(by_skill, twice);
        }
        seen.push(id);
        // Highest first (CHO-021) is the rule discover:ranking, judged in `listing`.
        check_entry(e, k, id, skill, what)?;
        let want = k.score_cents as f64 / 100.0;
        if exact && !passes(k) {
            // The filter that leaves it out is the one the target did not apply.
            let ignored = if min.is_some_and(|m| k.score_cents < m) {
                MIN_REPUTATION
            } else {
                MAX_COST
            };
            let listed = finding(
                Oracle::Discovery,
                format!("{what}: agent {id} (reputation {want}, cost {}) is listed though the filters leave it out (CHO-019, CHO-020)", k.cost_cents as f64 / 100.0),
            );
            return verdict::under(Some(ignored), listed);
        }
    }
    if exact {
        if let Some(k) = known
            .iter()
            .find(|k| passes(k) && !seen.contains(&k.id.as_str()))
        {
            // Without filters, the discover-by-skill case's finding (agent-missing).
            if min.is_none() && max.is_none() {
                return verdict::first_failing(vec![agent_missing(&k.id, skill, entries.len())]);
            }
            // The filter that left it out: the one at its bound (inclusive,
            // CHO-A12), else the one given.
            let at_min = min == Some(k.score_cents);
            let at_max = max == Some(k.cost_cents);
            let filter = if at_min || (!at_max && max.is_none()) {
                MIN_REPUTATION
            } else {
                MAX_COST
            };
            let missing = finding(
                Oracle::Discovery,
                format!("{what}: agent {} (reputation {}, cost {}) passes the filters but is not listed (CHO-015, CHO-019, CHO-020)",
                    k.id, k.score_cents as f64 / 100.0, k.cost_cents as f64 / 100.0),
            );
            return verdict::under(Some(filter), missing);
        }
    }
    Ok(())
}

/// The cases of `run` that judge discovery's filters (CHO-019, CHO-020).
const MIN_REPUTATION: &str = "chorus/discover-min-reputation";

const MAX_COST: &str = "chorus/discover-max-cost";

/// Checks one listed entry of agent `id` (known as `k`): it shows the queried skill
/// (CHO-018), the cost it was registered with (CHO-017) and the score the formula of
/// chorus.md §4 gives; returns the score it shows.
fn check_entry(e: &Value, k: &Known, id: &str, skill: &str, what: &str) -> FuzzStep<f64> {
    verdict::first_failing(entry_skill_finding(e, skill).into_iter().collect())?;
    let cost = e["skill"]["cost_per_call"].as_f64().unwrap_or(-1.0);
    if (cost - k.cost_cents as f64 / 100.0).abs() > 1e-9 {
        let other = finding(
            Oracle::Discovery,
            format!(
                "{what}: agent {id} shows cost {cost}, registered with {} (CHO-017)",
                k.cost_cents as f64 / 100.0
            ),
        );
        return verdict::under(Some(DISCOVER_BY_SKILL.key), other);
    }
    let s = e["reputation_score"].as_f64().unwrap_or(-1.0);
    let want = k.score_cents as f64 / 100.0;
    if (s - want).abs() > 0.005 + 1e-9 {
        let wrong = finding(
            Oracle::Reputation,
            format!(
                "{what}: agent {id} shows reputation {s}, the formula of chorus.md §4 gives {want}"
            ),
        );
        return verdict::under(Some(score_rule(want, s)), wrong);
    }
    Ok(s)
}

/// The rule of `run` a score `shown` where the formula gives `want` breaks: a pool
/// agent's score says which outcomes made it (above 50.0 successes, below it
/// failures, 50.0 none); a score past [0, 100] is the clamp's.
fn score_rule(want: f64, shown: f64) -> &'static str {
    if !(0.0..=100.0).contains(&shown) {
        REPUTATION_CLAMP.key
    } else if want > 50.0 {
        REPUTATION_SUCCESS_GAIN.key
    } else if want < 50.0 {
        REPUTATION_FAILURE_PENALTY.key
    } else {
        REPUTATION_INITIAL.key
    }
}
