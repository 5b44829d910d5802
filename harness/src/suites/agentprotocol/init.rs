//! What `agentconform init` finds of an agentprotocol agent: its agentId and
//! capabilities (hello), the actions it lists as available (the details of the
//! error to an action it lacks), and among them the echo action (its result is its
//! params) and the delay action.

use crate::init::{DiscoverFuture, Entry};
use crate::script::Ctx;
use crate::suites::agentprotocol::handshake::Me;
use serde_json::json;

const S: &str = "agentprotocol";

pub fn discover(ctx: &mut Ctx) -> DiscoverFuture<'_> {
    Box::pin(async move {
        let mut out = Vec::new();
        let mut me = Me::new(ctx);
        let hello = me.hello(ctx).await;
        let Ok(r) = hello else {
            out.push(Entry::missing(S, "agent_id", "a signed hello drew no hello the harness could read. Set it to the agent's agentId."));
            return out;
        };
        match r["from"]["agentId"].as_str() {
            // The cases learn it from their own hello.
            Some(id) => out.push(Entry::found_by_cases(
                S,
                "agent_id",
                id.to_string(),
                format!(
                    "the hello reply's from.agentId; capabilities {}",
                    crate::finding::json(&me.target_capabilities)
                ),
            )),
            None => out.push(Entry::missing(
                S,
                "agent_id",
                "the hello reply has no from.agentId. Set it to the agent's agentId.",
            )),
        }
        let echo = ctx.profile().agentprotocol.echo_action.clone();
        let drew = match echoes(ctx, &mut me, &echo).await {
            Ok(()) => {
                out.push(Entry::found_by_cases(
                    S,
                    "echo_action",
                    echo.clone(),
                    "a request for it was answered with its params as the result",
                ));
                None
            }
            Err(drew) => Some(drew),
        };
        let available = available(ctx, &mut me)
            .await
            .or_else(|why| from_capabilities(&me.target_capabilities, why));
        if let Some(drew) = drew {
            out.push(echo_from(ctx, &mut me, &available, &echo, &drew).await);
        }
        out.push(delay_from(
            &available,
            &ctx.profile().agentprotocol.delay_action,
        ));
        out
    })
}

/// Whether `action` answers a request with its params as the result; else what it
/// drew.
async fn echoes(ctx: &mut Ctx, me: &mut Me, action: &str) -> Result<(), String> {
    let params = json!({"probe": "init"});
    let req = me.request(action, params.clone(), json!({}));
    match me.send(ctx, &req).await {
        Ok(r) if r["type"] == "response" && r["payload"]["result"] == params => Ok(()),
        Ok(r) => Err(crate::suites::agentprotocol::wire::describe(&r)),
        Err(_) => Err("no reply the harness could read".into()),
    }
}

/// The actions the agent lists as available in the CAPABILITY_NOT_SUPPORTED error
/// to an action it lacks (details.available), or why none are known.
async fn available(ctx: &mut Ctx, me: &mut Me) -> Result<Vec<String>, String> {
    let req = me.request("agentconform.init.no-such-action", json!({}), json!({}));
    let r = me.send(ctx, &req).await.map_err(|_| {
        "a request for an action it lacks drew no reply the harness could read".to_string()
    })?;
    match r["payload"]["details"]["available"].as_array() {
        Some(a) => Ok(a
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect()),
        None => Err(format!(
            "a request for an action it lacks drew {}, with no details.available",
            crate::suites::agentprotocol::wire::describe(&r)
        )),
    }
}

/// The actions the hello's capabilities name (the part after the last `:`, the
/// core capability left out), where the error to an action it lacks lists none.
fn from_capabilities(caps: &[String], why: String) -> Result<Vec<String>, String> {
    let named: Vec<String> = caps
        .iter()
        .filter(|c| *c != "agentprotocol:core")
        .filter_map(|c| c.rsplit(':').next().map(String::from))
        .collect();
    match named.is_empty() {
        true => Err(format!(
            "{why}, and the hello's capabilities {} name no action",
            json!(caps)
        )),
        false => Ok(named),
    }
}

/// The most actions init tries for the echo action.
const MOST_TRIED: usize = 8;

/// `echo_action` when the default does not echo: the first action the agent lists
/// (details.available, else its hello's capabilities) that answers with its
/// params; else why not.
async fn echo_from(
    ctx: &mut Ctx,
    me: &mut Me,
    available: &Result<Vec<String>, String>,
    default: &str,
    drew: &str,
) -> Entry {
    let listed = match available {
        Ok(l) => l,
        Err(why) => {
            return Entry::missing(S, "echo_action", format!("a request for {default:?} drew {drew}, and {why}: set it to an action whose result is its params"));
        }
    };
    let mut seen = Vec::new();
    for a in listed.iter().filter(|a| *a != default).take(MOST_TRIED) {
        match echoes(ctx, me, a).await {
            Ok(()) => {
                return Entry::found(S, "echo_action", a.clone(), format!("the agent lists {}; a request for it was answered with its params as the result (the default {default:?} drew {drew})", json!(listed)));
            }
            Err(d) => seen.push(format!("{a:?}: {d}")),
        }
    }
    Entry::missing(S, "echo_action", format!("a request for {default:?} drew {drew}, and no action the agent lists answered with its params ({}): set it to an action whose result is its params", seen.join("; ")))
}

/// `delay_action`: the default where the agent lists it, else a listed action
/// whose name says it waits; else why not.
fn delay_from(available: &Result<Vec<String>, String>, default: &str) -> Entry {
    let listed = match available {
        Ok(l) => l,
        Err(why) => {
            return Entry::missing(S, "delay_action", format!("{why}: the default {default:?} is used; set it to an action that answers after `ms` milliseconds"));
        }
    };
    if listed.iter().any(|a| a == default) {
        return Entry::found_by_cases(
            S,
            "delay_action",
            default.to_string(),
            format!("the agent lists it among {}", json!(listed)),
        );
    }
    match listed.iter().find(|a| ["delay", "sleep", "wait"].iter().any(|w| a.to_ascii_lowercase().contains(w))) {
        Some(a) => Entry::found(S, "delay_action", a.clone(), format!("the agent lists {}, not {default:?}; its name says it waits", json!(listed))),
        None => Entry::missing(S, "delay_action", format!("the agent lists {}, with no {default:?} and no action whose name says it waits: set it to an action that answers after `ms` milliseconds", json!(listed))),
    }
}
