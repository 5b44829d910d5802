//! Discovery's filters and ranking over agents at known scores (chorus.md §3.2 read
//! with §4): min_reputation and max_cost as inclusive bounds, highest score first;
//! the cases, and the fuzzer's drawn queries over the pool of agents at known
//! scores (`reputation::pool`).

use super::discovery::{agent_missing, discover, entry, get_discover, listing};
use super::registration::{fresh_agent, register, unique_skill};
use super::reputation::{check_listing, pool, report_outcome, score, scored, Known, Report};
use super::wire::{set, two_decimals};
use crate::case::{fail_rows, skip, Bindings, Case};
use crate::drive::Transport;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::FuzzStep;
use arbitrary::Arbitrary;
use serde_json::{json, Value};

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "discover-min-reputation",
        "min_reputation is an inclusive lower bound",
        ["CHO-019"],
        Fact,
        |ctx| {
            let skill = unique_skill();
            let a = register(ctx, &[(&skill, 0.1)]).await?;
            let s = score(ctx, &a.id, &skill).await?;
            let mut wrong = Vec::new();
            let at = discover(ctx, &format!("skill={skill}&min_reputation={s}")).await?;
            if entry(&at, &a.id).is_none() {
                wrong.push(format!(
                    "an agent at {s} is left out by min_reputation={s} (inclusive bound)"
                ));
            }
            let above = s + 0.1;
            let listed = discover(ctx, &format!("skill={skill}&min_reputation={above}")).await?;
            if entry(&listed, &a.id).is_some() {
                wrong.push(format!(
                    "an agent at {s} is listed with min_reputation={above}"
                ));
            }
            fail_rows("min_reputation is not an inclusive lower bound", &wrong)
        }
    ),
    case!(
        "discover-max-cost",
        "max_cost is an inclusive upper bound on the skill's cost",
        ["CHO-005", "CHO-020"],
        Fact,
        |ctx| {
            let skill = unique_skill();
            let cheap = register(ctx, &[(&skill, 0.10)]).await?;
            let dear = register(ctx, &[(&skill, 0.20)]).await?;
            let mut wrong = Vec::new();
            let low = discover(ctx, &format!("skill={skill}&max_cost=0.15")).await?;
            if entry(&low, &cheap.id).is_none() || entry(&low, &dear.id).is_some() {
                wrong.push(format!(
                    "max_cost=0.15 should list only the 0.10 agent; got {} entries",
                    low.len()
                ));
            }
            let both = discover(ctx, &format!("skill={skill}&max_cost=0.20")).await?;
            if entry(&both, &cheap.id).is_none() || entry(&both, &dear.id).is_none() {
                wrong.push("max_cost=0.20 should list both agents (inclusive bound)".to_string());
            }
            let costs = both
                .iter()
                .filter_map(|e| e["skill"]["cost_per_call"].as_f64());
            wrong.extend(
                costs
                    .filter(|c| !two_decimals(*c))
                    .map(|c| format!("cost_per_call {c} has more than two decimals")),
            );
            fail_rows(
                "max_cost is not an inclusive upper bound on the skill's cost",
                &wrong,
            )
        }
    ),
    case!(
        "discover-ranking",
        "discovery ranks by reputation, highest first",
        ["CHO-021"],
        Profile,
        |ctx| {
            let skill = unique_skill();
            let hirer = scored(ctx, &unique_skill()).await?;
            let up = register(ctx, &[(&skill, 0.1)]).await?;
            let mid = register(ctx, &[(&skill, 0.1)]).await?;
            let down = register(ctx, &[(&skill, 0.1)]).await?;
            for (who, success) in [(&up, true), (&down, false)] {
                report_outcome(
                    ctx,
                    &Report {
                        agent_id: &who.id,
                        agent_owner: &who.owner_id,
                        reputation: who.reputation.unwrap_or(50.0),
                        hirer_id: &hirer.agent.id,
                        hirer_owner: &hirer.agent.owner_id,
                        hirer_reputation: hirer.score,
                        success,
                    },
                )
                .await?;
            }
            // The order is judged in `discover` (chorus/discover:ranking), on every list.
            let found = discover(ctx, &format!("skill={skill}")).await?;
            let mut scores = Vec::new();
            for a in [&up, &mid, &down] {
                let Some(e) = entry(&found, &a.id) else {
                    return Err(ctx.block(agent_missing(&a.id, &skill, found.len())));
                };
                scores.push(e["reputation_score"].as_f64().unwrap_or(f64::NAN));
            }
            if scores.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-9) {
                return skip(format!("the outcomes left the three agents at one score ({}): the ranking cannot be judged", crate::finding::json(&scores)));
            }
            ctx.checked(format!(
                "{} agents listed, scores {}",
                found.len(),
                crate::finding::json(&scores)
            ));
            Ok(())
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Fuzzing

/// A discovery filter value, relative to the known agents' scores or costs.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum Filter {
    #[default]
    Absent,
    At(u8),
    Above(u8),
    Below(u8),
    Cents(u16),
    Negative(u16),
    Huge,
    Junk,
    Empty,
}

/// The spelling of a discovery query.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
struct QueryForm {
    /// Numbers with two decimals always (`50.00`), else as short as possible (`50`).
    padded: bool,
    /// Filters before the skill.
    skill_last: bool,
    /// Which characters of the skill are percent-encoded.
    encode: u32,
}

enum FilterVal {
    Absent,
    Cents(i64),
    Junk(&'static str),
}

fn resolve(fl: Filter, points: &[i64]) -> FilterVal {
    let at = |i: u8| {
        points
            .get(usize::from(i) % points.len().max(1))
            .copied()
            .unwrap_or(0)
    };
    match fl {
        Filter::Absent => FilterVal::Absent,
        Filter::At(i) => FilterVal::Cents(at(i)),
        Filter::Above(i) => FilterVal::Cents(at(i) + 1),
        Filter::Below(i) => FilterVal::Cents(at(i) - 1),
        Filter::Cents(c) => FilterVal::Cents(i64::from(c % 12_000)),
        Filter::Negative(c) => FilterVal::Cents(-(i64::from(c % 1000) + 1)),
        Filter::Huge => FilterVal::Cents(100_000_000),
        Filter::Junk => FilterVal::Junk("abc"),
        Filter::Empty => FilterVal::Junk(""),
    }
}

fn fmt_cents(c: i64, padded: bool) -> String {
    let sign = if c < 0 { "-" } else { "" };
    let (whole, frac) = (c.abs() / 100, c.abs() % 100);
    if padded {
        format!("{sign}{whole}.{frac:02}")
    } else if frac == 0 {
        format!("{sign}{whole}")
    } else if frac % 10 == 0 {
        format!("{sign}{whole}.{}", frac / 10)
    } else {
        format!("{sign}{whole}.{frac:02}")
    }
}

fn percent_encode(s: &str, mask: u32) -> String {
    s.bytes()
        .enumerate()
        .map(|(i, b)| {
            let unreserved = b.is_ascii_alphanumeric() || b"-_.~".contains(&b);
            if unreserved && mask & (1 << (i % 32)) == 0 {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Builds the query; returns it, the bounds in cents and whether it is well-formed.
fn build_query(
    skill: &str,
    min: &FilterVal,
    max: &FilterVal,
    form: QueryForm,
) -> (String, Option<i64>, Option<i64>, bool) {
    let mut parts = Vec::new();
    let mut valid = true;
    let mut bound = |name: &str, v: &FilterVal, parts: &mut Vec<String>| match v {
        FilterVal::Absent => None,
        FilterVal::Cents(c) => {
            parts.push(format!("{name}={}", fmt_cents(*c, form.padded)));
            // A score outside [0, 100] or a negative cost may be refused as malformed.
            let in_range = if name == "max_cost" {
                *c >= 0
            } else {
                (0..=10_000).contains(c)
            };
            if !in_range {
                valid = false;
            }
            Some(*c)
        }
        FilterVal::Junk(s) => {
            valid = false;
            parts.push(format!("{name}={s}"));
            None
        }
    };
    let lo = bound("min_reputation", min, &mut parts);
    let hi = bound("max_cost", max, &mut parts);
    let s = format!("skill={}", percent_encode(skill, form.encode));
    if form.skill_last {
        parts.push(s);
    } else {
        parts.insert(0, s);
    }
    (parts.join("&"), lo, hi, valid)
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) struct PoolQuery {
    min: Filter,
    max: Filter,
    form: QueryForm,
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) struct FreshQuery {
    /// Per agent: its cost for the queried skill, and the cost of a second skill.
    agents: Vec<(u16, Option<u16>)>,
    min: Filter,
    max: Filter,
    form: QueryForm,
}

pub(super) async fn pool_query(f: &mut FuzzCtx, c: PoolQuery) -> FuzzStep<()> {
    let p = pool(f).await?;
    let scores: Vec<i64> = p.agents.iter().map(|a| a.score_cents).collect();
    let costs: Vec<i64> = p.agents.iter().map(|a| a.cost_cents).collect();
    let (min, max) = (resolve(c.min, &scores), resolve(c.max, &costs));
    let (q, lo, hi, valid) = build_query(&p.skill, &min, &max, c.form);
    let r = get_discover(f, &q).await?;
    let entries = listing(f, &r, &q, valid)?;
    check_listing(
        &entries,
        &p.skill,
        &p.agents,
        lo,
        hi,
        valid,
        &format!("GET /discover?{q}"),
    )
}

pub(super) async fn fresh_query(f: &mut FuzzCtx, c: FreshQuery) -> FuzzStep<()> {
    let skill = unique_skill();
    let mut known = Vec::new();
    let agents: Vec<(u16, Option<u16>)> = if c.agents.is_empty() {
        vec![(10, None)]
    } else {
        c.agents.iter().take(3).copied().collect()
    };
    for (cost, second) in agents {
        let cost = i64::from(cost % 5000);
        let other = unique_skill();
        let mut skills: Vec<(&str, f64)> = vec![(skill.as_str(), cost as f64 / 100.0)];
        if let Some(s) = second {
            skills.insert(
                usize::from(s % 2),
                (other.as_str(), f64::from(s % 5000) / 100.0),
            );
        }
        let id = fresh_agent(f, &skills).await?;
        known.push(Known {
            id,
            score_cents: 5000,
            cost_cents: cost,
        });
    }
    let scores: Vec<i64> = known.iter().map(|a| a.score_cents).collect();
    let costs: Vec<i64> = known.iter().map(|a| a.cost_cents).collect();
    let (min, max) = (resolve(c.min, &scores), resolve(c.max, &costs));
    let (q, lo, hi, valid) = build_query(&skill, &min, &max, c.form);
    let r = get_discover(f, &q).await?;
    let entries = listing(f, &r, &q, valid)?;
    check_listing(
        &entries,
        &skill,
        &known,
        lo,
        hi,
        valid,
        &format!("GET /discover?{q}"),
    )
}

/// Checks that the agent registered as `v` is found under `skill` at 50.0, with the
/// cost it registered (CHO-015, CHO-018).
pub(super) async fn check_found(f: &mut FuzzCtx, v: &Value, skill: &str) -> FuzzStep<()> {
    let first = &v["skills"][0];
    let id = v["agent_id"].as_str().unwrap_or_default().to_string();
    let found = discover(&mut f.ctx, &format!("skill={skill}")).await?;
    let known = [Known {
        id: id.clone(),
        score_cents: 5000,
        cost_cents: (first["cost_per_call"].as_f64().unwrap_or(0.0) * 100.0).round() as i64,
    }];
    // The registry may spell the id in other letter case.
    let found: Vec<Value> = found
        .into_iter()
        .map(|mut e| {
            if e["agent_id"]
                .as_str()
                .is_some_and(|s| s.eq_ignore_ascii_case(&id))
            {
                set(&mut e, "agent_id", json!(id));
            }
            e
        })
        .collect();
    check_listing(
        &found,
        skill,
        &known,
        None,
        None,
        true,
        "discovery of the new agent",
    )
}
