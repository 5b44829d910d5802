//! What `agentconform init` finds of an agentprotocol agent: its agentId and
//! capabilities (hello), and whether it carries out the echo action.

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
        let params = json!({"probe": "init"});
        let req = me.request(&echo, params.clone(), json!({}));
        match me.send(ctx, &req).await {
            Ok(r) if r["type"] == "response" && r["payload"]["result"] == params => {
                out.push(Entry::found_by_cases(S, "echo_action", echo, "a request for it was answered with its params as the result"));
            }
            Ok(r) => out.push(Entry::missing(S, "echo_action", format!("a request for {echo:?} drew {}: set it to an action whose result is its params", crate::suites::agentprotocol::wire::describe(&r)))),
            Err(_) => out.push(Entry::missing(S, "echo_action", format!("a request for {echo:?} drew no reply the harness could read"))),
        }
        out
    })
}
