//! Agent discovery (chorus.md §3.2): the query, the listing's checks, the cases, and
//! the fuzzer's queries over a pool of agents at known scores.

use super::errors::no_server_error;
use super::registration::{register, registration, unique_skill};
use super::wire::{
    call, canonical_id, need_json, note_id_encoding, post, post_bytes, same_id, shape_findings,
    short, Base, Resp, EXACT,
};
use crate::case::{fail_rows, Bindings, Case, Level, Step, Stop};
use crate::drive::Transport;
use crate::finding::Finding;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, FuzzStep};
use crate::rules::rules;
use crate::script::Ctx;
use serde_json::{json, Value};

rules! {
    DISCOVER_404_FOR_NO_MATCH {
        key: "chorus/discover:404-for-no-match",
        requirements: &["CHO-016", "CHO-A12"],
        level: Some(Level::Should),
        owner: "chorus/discover-by-skill",
        summary: "a discovery that matches no agent is answered 200 with an empty list",
        fails: "GET /discover answered HTTP 404 where 200 with an empty list is expected; read as no match",
        passes: "HTTP 200 with an empty agents list",
    }
    REGISTER_AGAIN_LISTED_TWICE {
        key: "chorus/register-again:listed-twice",
        requirements: &["CHO-002", "CHO-A11"],
        level: None,
        owner: "chorus/register-again",
        summary: "an agent registered twice is one agent: discovery lists its agent_id once per skill (derived: agent_id names the agent; taking or refusing the second registration is the target's choice, CHO-A11)",
        fails: "discovery listing one agent_id more than once under one skill after the agent registered again",
        passes: "one entry per agent_id",
    }
    REGISTER_AGAIN_STALE {
        key: "chorus/register-again:stale",
        requirements: &["CHO-A11"],
        level: Some(Level::Info),
        owner: "chorus/register-again",
        summary: "a second registration the registry took is what discovery shows (informational, CHO-A11)",
        fails: "never fails: after a second registration of the same agent_id was taken, discovery still shows the skills or costs of the first, recorded",
        passes: "the skills and costs of the latest registration",
    }
    DISCOVER_REFUSED {
        key: "chorus/discover:refused",
        requirements: &["CHO-016"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "GET /discover with a skill query is answered with a 2xx",
        fails: "GET /discover answered with a status other than 2xx and 404; the case that needs the list is blocked",
        passes: "a 2xx reply",
    }
    DISCOVER_STATUS {
        key: "chorus/discover:status",
        requirements: &["CHO-016"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "GET /discover is answered 200 OK",
        fails: "GET /discover answered with another 2xx status than 200",
        passes: "HTTP 200",
    }
    DISCOVER_LIST_SHAPE {
        key: "chorus/discover:list-shape",
        requirements: &["CHO-017"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "discovery lists the agents under \"agents\"",
        fails: "the reply is a bare list, or lists the agents under another member than \"agents\"; read past",
        passes: "{\"agents\": [...]}",
    }
    DISCOVER_ENTRY_SKILLS_LIST {
        key: "chorus/discover-entry:skills-list",
        requirements: &["CHO-017", "CHO-018"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "a discovery entry shows the one matched skill as a `skill` object",
        fails: "entries carry a `skills` list instead of the one matched `skill` object; read past",
        passes: "a `skill` object per entry",
    }
    DISCOVER_ENTRY_SKILL_NAME_ONLY {
        key: "chorus/discover-entry:skill-name-only",
        requirements: &["CHO-017", "CHO-018"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "a discovery entry's `skill` is an object {skill_name, cost_per_call}",
        fails: "an entry's `skill` is the skill name as a string, not an object; read past",
        passes: "a `skill` object with skill_name and cost_per_call",
    }
    SCHEMA_DISCOVER_RESPONSE {
        key: "chorus/schema:discover-response:*",
        requirements: &["CHO-017"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "the discovery reply matches the discover-response schema",
        fails: "a member of the list or of an entry missing, of another type or outside its pattern (judged after the shapes above are read past)",
        passes: "a discovery reply the schema validates",
    }
    DISCOVER_AGENT_MISSING {
        key: "chorus/discover:agent-missing",
        requirements: &["CHO-015"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "a registered agent is listed by discovery under its skill",
        fails: "an agent registered with a skill is not listed by GET /discover?skill=<it>; the case is blocked",
        passes: "the agent listed",
    }
    DISCOVER_NO_SCORE {
        key: "chorus/discover:no-score",
        requirements: &["CHO-017"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "a discovery entry carries a numeric reputation_score",
        fails: "an agent is listed without a numeric reputation_score; the case that reads the score is blocked",
        passes: "a numeric reputation_score",
    }
    DISCOVER_BY_SKILL {
        key: "chorus/discover-by-skill",
        requirements: &["CHO-002", "CHO-015", "CHO-016", "CHO-017", "CHO-018", "CHO-022"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "an agent listed under a skill shows that skill in its entry",
        fails: "a discovery entry listed under the queried skill showing another skill",
        passes: "the queried skill in every entry",
    }
    DISCOVER_RANKING {
        key: "chorus/discover:ranking",
        requirements: &["CHO-021"],
        level: None,
        owner: "chorus/discover-ranking",
        summary: "discovery ranks agents by reputation, highest first",
        fails: "a discovery list where a later entry has a higher reputation_score than an earlier one",
        passes: "scores in non-increasing order, on every list",
    }
    REPUTATION_CLAMP {
        key: "chorus/reputation:clamp",
        requirements: &["CHO-007", "CHO-045"],
        level: None,
        owner: "chorus/reputation-clamp",
        summary: "reputation scores stay within [0.0, 100.0], clamped after each outcome",
        fails: "discovery shows a score outside [0.0, 100.0], or a score after outcomes that differs from the formula clamped to [0.0, 100.0]",
        passes: "every score in range, and the clamped value after outcomes past a bound",
    }
}

// ---------------------------------------------------------------------------
// Discovery

/// The skill a discovery query asks for, its percent-encoding decoded.
fn query_skill(query: &str) -> Option<String> {
    let url = reqwest::Url::parse(&format!("http://query.invalid/?{query}")).ok()?;
    let skill = url
        .query_pairs()
        .find_map(|(k, v)| (k == "skill").then(|| v.into_owned()));
    skill
}

/// `GET /discover` with a query: the entries, read leniently. A 404 is read as no
/// match, with a warning (CHO-A12). The body is judged once here, each deviation a
/// finding owned by the case whose subject it is: the list's shape, each entry's
/// shape (a `skills` list instead of one `skill`, the agent id's encoding), the
/// schema, scores in [0, 100] (CHO-007, CHO-045) and the ranking (CHO-021). The
/// entries come back normalized: a `skill` object, canonical agent ids.
pub async fn discover(ctx: &mut Ctx, query: &str) -> Step<Vec<Value>> {
    let r = call(
        ctx,
        Base::Registry,
        reqwest::Method::GET,
        &format!("discover?{query}"),
        None,
    )
    .await?;
    discovery_reply(ctx, query, &r)
}

/// The registry's reply to `GET /discover?{query}`: 200 with the agents under
/// "agents" (CHO-016, CHO-017), each entry's shape and scores; the entries, read
/// past their shape.
pub fn discovery_reply(ctx: &mut Ctx, query: &str, r: &Resp) -> Step<Vec<Value>> {
    let what = format!("GET /discover?{query}");
    if r.http == 404 {
        ctx.finding(DISCOVER_404_FOR_NO_MATCH.found(format!(
            "{what} answered {} where 200 with an empty list is expected",
            r.describe()
        )));
        return Ok(Vec::new());
    }
    if !r.ok() {
        let f = DISCOVER_REFUSED.found(format!("{what} answered {}", r.describe()));
        return Err(ctx.block(f));
    }
    if r.http != 200 {
        ctx.finding(DISCOVER_STATUS.found(format!("{what} answered HTTP {}, not 200 OK", r.http)));
    }
    let body = need_json(ctx, r, &what)?;
    // Whether a list of agents was found (under "agents" or read past its shape).
    let (raw_agents, found) = agent_list(ctx, &body, &what);
    let wanted_skill = query_skill(query);
    let agents: Vec<Value> = raw_agents
        .into_iter()
        .map(|e| normalize_entry(ctx, e, wanted_skill.as_deref(), &what))
        .collect();
    // The list is judged by the schema once its shape is read past; the original
    // when no list was found, so that the schema says so.
    let judged = if found {
        json!({"agents": agents})
    } else {
        body.clone()
    };
    let out_of_range = check_scores(ctx, &agents, &what);
    shape_findings(
        ctx,
        "discover-response",
        &SCHEMA_DISCOVER_RESPONSE,
        &judged,
        |f| out_of_range && f.detail().ends_with("/reputation_score"),
    );
    Ok(agents)
}

/// The agents of a discovery reply, and whether a list was found: under "agents",
/// else under the one list member or as a bare list (a finding, CHO-017).
fn agent_list(ctx: &mut Ctx, body: &Value, what: &str) -> (Vec<Value>, bool) {
    let mut found = true;
    let raw_agents = match body {
        Value::Object(o) => match o.get("agents") {
            Some(Value::Array(a)) => a.clone(),
            Some(_) => {
                found = false;
                Vec::new()
            }
            None => {
                let lists: Vec<(&String, &Vec<Value>)> = o
                    .iter()
                    .filter_map(|(k, v)| v.as_array().map(|a| (k, a)))
                    .collect();
                match lists.as_slice() {
                    [(k, a)] => {
                        ctx.finding(DISCOVER_LIST_SHAPE.found(format!(
                            "{what} lists the agents under {k:?}, not \"agents\""
                        )));
                        (*a).clone()
                    }
                    _ => {
                        found = false;
                        Vec::new()
                    }
                }
            }
        },
        Value::Array(a) => {
            ctx.finding(DISCOVER_LIST_SHAPE.found(format!(
                "{what} answered a bare list, not {{\"agents\": [...]}}"
            )));
            a.clone()
        }
        _ => {
            found = false;
            Vec::new()
        }
    };
    (raw_agents, found)
}

/// One discovery entry, normalized: a `skill` object (from a `skills` list or a
/// skill name), the agent id in canonical form.
fn normalize_entry(ctx: &mut Ctx, mut e: Value, skill: Option<&str>, what: &str) -> Value {
    let Some(o) = e.as_object_mut() else {
        return e;
    };
    if let Some(id) = o.get("agent_id").and_then(Value::as_str).map(String::from) {
        if let Some(c) = canonical_id(&id) {
            note_id_encoding(ctx, &id, &c, &format!("{what} (an entry)"));
            o.insert("agent_id".into(), json!(c));
        }
    }
    let has_skill = o.get("skill").is_some_and(Value::is_object);
    if !has_skill {
        if let Some(Value::Array(list)) = o.get("skills").cloned() {
            let pick = list
                .iter()
                .find(|s| skill.is_some_and(|k| s["skill_name"] == k || s.as_str() == Some(k)))
                .or(list.first())
                .cloned();
            if let Some(p) = pick {
                let sk = match p {
                    Value::String(name) => {
                        json!({"skill_name": name, "cost_per_call": o.get("cost_per_call").cloned().unwrap_or(Value::Null)})
                    }
                    other => other,
                };
                ctx.finding(
                    DISCOVER_ENTRY_SKILLS_LIST.found(format!(
                            "{what}: entries carry a `skills` list ({}) instead of the one matched `skill` object",
                            short(&Value::Array(list.clone()).to_string())
                        )),
                );
                o.insert("skill".into(), sk);
            }
        } else if let Some(Value::String(name)) = o.get("skill").cloned() {
            ctx.finding(
                DISCOVER_ENTRY_SKILL_NAME_ONLY.found(format!("{what}: an entry's `skill` is the name {name:?}, not an object {{skill_name, cost_per_call}}")),
            );
            let cost = o.get("cost_per_call").cloned().unwrap_or(Value::Null);
            o.insert(
                "skill".into(),
                json!({"skill_name": name, "cost_per_call": cost}),
            );
        }
    }
    e
}

/// Scores outside [0, 100] (CHO-007, CHO-045) and the ranking (CHO-021). Returns
/// whether a score was out of range (the schema then leaves it to this check).
fn check_scores(ctx: &mut Ctx, agents: &[Value], what: &str) -> bool {
    let scores: Vec<f64> = agents
        .iter()
        .filter_map(|e| e["reputation_score"].as_f64())
        .collect();
    let mut out = false;
    for e in agents {
        if let Some(s) = e["reputation_score"].as_f64() {
            if !(0.0..=100.0).contains(&s) {
                out = true;
                ctx.finding(REPUTATION_CLAMP.found(format!(
                    "{what} shows agent {} at reputation_score {s}, outside [0.0, 100.0]",
                    e["agent_id"]
                )));
            }
        }
    }
    if scores.windows(2).any(|w| w[1] > w[0] + EXACT) {
        ctx.finding(DISCOVER_RANKING.found(format!(
            "{what} does not rank by reputation, highest first: the scores come as {}",
            crate::finding::json(&scores)
        )));
    }
    out
}

pub fn entry<'a>(entries: &'a [Value], agent_id: &str) -> Option<&'a Value> {
    entries.iter().find(|e| {
        e["agent_id"]
            .as_str()
            .is_some_and(|id| same_id(id, agent_id))
    })
}

/// Agent `id`, registered again, listed more than once under `skill` in
/// `listed` (the register-again case's rule; the fuzzer's too).
pub fn listed_twice(listed: &[Value], id: &str, skill: &str) -> Option<Finding> {
    let mine: Vec<&Value> = listed
        .iter()
        .filter(|e| e["agent_id"].as_str().is_some_and(|x| same_id(x, id)))
        .collect();
    (mine.len() > 1).then(|| {
        REGISTER_AGAIN_LISTED_TWICE.found(format!(
            "after agent {id} registered again, GET /discover?skill={skill} lists it {} times: {}",
            mine.len(),
            short(&crate::finding::json(&mine))
        ))
    })
}

/// What a discovery entry listed under `skill` breaks: it shows that skill (the
/// discover-by-skill case's rule, CHO-018).
pub fn entry_skill_finding(e: &Value, skill: &str) -> Option<Finding> {
    (e["skill"]["skill_name"] != skill).then(|| {
        DISCOVER_BY_SKILL.found(format!(
            "agent {} is listed under {skill} showing skill {} (CHO-018)",
            e["agent_id"], e["skill"]
        ))
    })
}

/// A registered agent that discovery does not list under its skill (CHO-015).
pub fn agent_missing(agent_id: &str, skill: &str, listed: usize) -> Finding {
    DISCOVER_AGENT_MISSING.found(format!(
            "agent {agent_id}, registered with skill {skill}, is not listed by GET /discover?skill={skill} ({listed} entries)"
        ))
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[case!(
    "discover-by-skill",
    "discovery lists the agents with the skill, each showing that skill, and only them",
    ["CHO-002", "CHO-015", "CHO-016", "CHO-017", "CHO-018", "CHO-022"],
    Fact,
    |ctx| {
        let (x, y) = (unique_skill(), unique_skill());
        let a = register(ctx, &[(&x, 0.1)]).await?;
        let b = register(ctx, &[(&y, 0.1)]).await?;
        let found = discover(ctx, &format!("skill={x}&min_reputation=0&max_cost=100")).await?;
        let Some(e) = entry(&found, &a.id) else {
            return Err(ctx.block(agent_missing(&a.id, &x, found.len())));
        };
        if let Some(f) = entry_skill_finding(e, &x) {
            ctx.deviation(f);
        }
        if e["status"] != "online" {
            ctx.note(format!("status {} (informational, CHO-A13)", e["status"]));
        }
        // Only the agents with the skill (CHO-018): each listing that shows another.
        let mut wrong = Vec::new();
        if entry(&found, &b.id).is_some() {
            wrong.push(format!("agent {} without skill {x} is listed", b.id));
        }
        let none = discover(ctx, &format!("skill={}", unique_skill())).await?;
        if !none.is_empty() {
            wrong.push(format!("a skill nobody has lists {} agents", none.len()));
        }
        fail_rows("discovery lists agents without the skill (CHO-018)", &wrong)
    }
),
case!(
    "register-again",
    "an agent registered twice is listed once, with what it registered last where the registry took it (CHO-A11)",
    ["CHO-002"],
    Fact,
    |ctx| {
        let (first, added) = (unique_skill(), unique_skill());
        let a = register(ctx, &[(&first, 0.10)]).await?;
        let mut again = registration(&[(&first, 0.20), (&added, 0.10)]);
        again["agent_id"] = json!(a.id);
        again["owner_id"] = json!(a.owner_id);
        let r = post(ctx, Base::Registry, "register", &again).await?;
        let taken = r.ok() && !r.refusal_in_2xx();
        ctx.note(format!("the same agent_id registered again with {first} at 0.20 and {added}: {} ({})", r.describe(), if taken { "taken" } else { "refused, which CHO-A11 allows" }));
        let listed = discover(ctx, &format!("skill={first}&min_reputation=0&max_cost=100")).await?;
        if let Some(f) = listed_twice(&listed, &a.id, &first) {
            return Err(Stop::Finding(f));
        }
        let Some(e) = entry(&listed, &a.id) else {
            return Err(ctx.block(agent_missing(&a.id, &first, listed.len())));
        };
        if !taken {
            return Ok(());
        }
        let mut stale = Vec::new();
        if e["skill"]["cost_per_call"].as_f64().is_some_and(|c| (c - 0.20).abs() > 1e-9) {
            stale.push(format!("{first} still costs {}, not 0.20", e["skill"]["cost_per_call"]));
        }
        let new = discover(ctx, &format!("skill={added}&min_reputation=0&max_cost=100")).await?;
        if entry(&new, &a.id).is_none() {
            stale.push(format!("the skill {added} it added is not listed"));
        }
        if !stale.is_empty() {
            return Err(Stop::Finding(REGISTER_AGAIN_STALE.found(format!("the registry took a second registration of agent {}, but discovery shows the first: {} (informational, CHO-A11)", a.id, stale.join("; ")))));
        }
        Ok(())
    }
)];

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Discovery

/// Sends the registration `v`, taken, once more, and reads discovery under its
/// `skill`: the agent is listed once, whether the registry took the second or
/// refused it (CHO-A11).
pub(super) async fn registered_again(f: &mut FuzzCtx, v: &Value, skill: &str) -> FuzzStep<()> {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    let r = post_bytes(f, Base::Registry, "register", bytes).await?;
    no_server_error(&r, "the same registration sent again")?;
    let id = v["agent_id"].as_str().unwrap_or_default();
    let listed = discover(&mut f.ctx, &format!("skill={skill}")).await?;
    match listed_twice(&listed, id, skill) {
        Some(found) => {
            let from = f.ctx.findings().len();
            f.ctx.finding(found);
            verdict::rules_since(&f.ctx, from)
        }
        None => Ok(()),
    }
}

pub(super) async fn get_discover(f: &mut FuzzCtx, query: &str) -> FuzzStep<Resp> {
    f.fuzzed(format!("GET /discover?{query}").as_bytes());
    call(
        &mut f.ctx,
        Base::Registry,
        reqwest::Method::GET,
        &format!("discover?{query}"),
        None,
    )
    .await
    .map_err(Into::into)
}

/// The entries of a discovery reply; `valid`: the query is well-formed, so the
/// reply must be 200 (a 404 for no match warns, CHO-A12).
pub(super) fn listing(f: &mut FuzzCtx, r: &Resp, query: &str, valid: bool) -> FuzzStep<Vec<Value>> {
    no_server_error(r, &format!("GET /discover?{query}"))?;
    if r.http != 200 && !valid {
        return Ok(Vec::new());
    }
    // Judged by the rules `run` applies to a discovery reply (its status, a 404 for
    // no match a warning, its shape, scores, ranking and schema), whose first
    // failing finding stops the case, so that a fuzz finding names the same rule; the
    // entries read past their shape.
    let from = f.ctx.findings().len();
    let entries = discovery_reply(&mut f.ctx, query, r)?;
    verdict::rules_since(&f.ctx, from)?;
    Ok(entries)
}
