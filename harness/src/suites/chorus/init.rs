//! What `agentconform init` finds of a chorus registry: the skill of an agent it
//! lists (GET /discover), where its ledger takes transfers, and whether it takes
//! job outcomes at POST /results.

use super::registration::HARNESS_SKILL;
use super::wire::{call, Base};
use crate::init::{DiscoverFuture, Entry};
use crate::script::Ctx;
use serde_json::{json, Value};

const S: &str = "chorus";

pub fn discover(ctx: &mut Ctx) -> DiscoverFuture<'_> {
    Box::pin(async move {
        let mut out = Vec::new();
        fixture_skill(ctx, &mut out).await;
        ledger(ctx, &mut out).await;
        outcome(ctx, &mut out).await;
        out
    })
}

/// The skills of the agents a discovery reply lists.
fn skills(v: &Value) -> Vec<String> {
    let entries = v
        .as_array()
        .or_else(|| v.get("agents").and_then(Value::as_array))
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for e in entries {
        let one = e.get("skill");
        let many = e
            .get("skills")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for s in one.into_iter().chain(many.iter()) {
            // A skill object names itself in skill_name (chorus.md), or name.
            let name = s.get("skill_name").or_else(|| s.get("name")).unwrap_or(s);
            if let Some(n) = name.as_str() {
                out.push(n.to_string());
            }
        }
    }
    out
}

async fn fixture_skill(ctx: &mut Ctx, out: &mut Vec<Entry>) {
    let default = ctx.profile().chorus.fixture_skill.clone();
    let path = format!("/discover?skill={default}");
    if let Ok(r) = call(ctx, Base::Registry, reqwest::Method::GET, &path, None).await {
        let found = r.json.as_ref().map(skills).unwrap_or_default();
        if found.contains(&default) {
            // The default the cases use.
            out.push(Entry::found_by_cases(
                S,
                "fixture_skill",
                default,
                format!("GET {path} lists an agent with it"),
            ));
            return;
        }
    }
    match call(ctx, Base::Registry, reqwest::Method::GET, "/discover", None).await {
        // The agents a run of the harness registered are left out.
        Ok(r) => match r
            .json
            .as_ref()
            .map(skills)
            .unwrap_or_default()
            .iter()
            .find(|s| !s.starts_with(HARNESS_SKILL))
        {
            Some(s) => out.push(Entry::found(S, "fixture_skill", s.clone(), format!("GET /discover lists an agent with the skill {s:?} (the registry lists no agent for {default:?}); set fixture_input and fixture_output if its jobs take another shape"))),
            None => out.push(Entry::missing(S, "fixture_skill", format!("GET /discover?skill={default} and GET /discover list no agent ({}). Set it to the skill of an agent the registry serves, with fixture_input and fixture_output.", r.describe()))),
        },
        Err(_) => out.push(Entry::missing(S, "fixture_skill", "GET /discover drew no reply the harness could read. Set it to the skill of an agent the registry serves.")),
    }
}

/// Where transfers go: a ledger route at the target answers anything but 404 or
/// 405 to an empty transfer, which it must refuse; else the ledger is elsewhere.
async fn ledger(ctx: &mut Ctx, out: &mut Vec<Entry>) {
    if let Some(url) = ctx.profile().target.ledger_url.clone() {
        out.push(Entry::found(
            "target",
            "ledger_url",
            url,
            "the profile given to init names it",
        ));
        return;
    }
    match call(ctx, Base::Registry, reqwest::Method::POST, "/transfer", Some(&json!({}))).await {
        Ok(r) if matches!(r.http, 404 | 405) => out.push(Entry::missing("target", "ledger_url", format!("POST /transfer at the target answered {}: the ledger takes transfers elsewhere. Set it to the ledger's base URL.", r.describe()))),
        // Without the key the cases send transfers to the target's URL.
        Ok(r) => out.push(Entry::found_by_cases("target", "ledger_url", ctx.url.clone(), format!("POST /transfer at the target with an empty body answered {}: the ledger is at the target's URL", r.describe()))),
        Err(_) => out.push(Entry::missing("target", "ledger_url", "POST /transfer at the target drew no reply the harness could read. Set it to the ledger's base URL.")),
    }
}

/// Whether the registry takes job outcomes at the default route: an empty outcome
/// is refused there with anything but 404 or 405.
async fn outcome(ctx: &mut Ctx, out: &mut Vec<Entry>) {
    let route = ctx.profile().chorus.outcome_request.clone();
    let Some((method, path)) = route.split_once(' ') else {
        return;
    };
    if path.contains('{') {
        out.push(Entry::found(
            S,
            "outcome_request",
            route.clone(),
            "the profile given to init names it",
        ));
        return;
    }
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
    match call(ctx, Base::Registry, m, path, Some(&json!({}))).await {
        Ok(r) if matches!(r.http, 404 | 405) => out.push(Entry::missing(S, "outcome_request", format!("{route} answered {}: the registry takes job outcomes at another route. Set it (and outcome_body) to the request it takes.", r.describe()))),
        // The default route the cases use.
        Ok(r) => out.push(Entry::found_by_cases(S, "outcome_request", route.clone(), format!("{route} with an empty outcome answered {}: the route exists", r.describe()))),
        Err(_) => out.push(Entry::missing(S, "outcome_request", format!("{route} drew no reply the harness could read."))),
    }
}
