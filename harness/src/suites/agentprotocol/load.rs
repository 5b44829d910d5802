//! `load --suite agentprotocol`: each agent a request of the reference client for
//! the profile's echo action, its marker in the params.

use crate::load::{Load, LoadFuture, Plan};
use serde_json::{json, Value};

/// The suite's load (`Suite::load`).
pub const PLAN: Plan = Plan::Requests(one);

/// One request of agent `client`, carrying `marker`: the reply, as the marker's
/// check sees it.
fn one<'a>(l: &'a Load, marker: &'a str, _client: usize) -> LoadFuture<'a, Result<Value, String>> {
    Box::pin(async move {
        use reference_impl::agentprotocol::client;
        let ask = client::Ask::from_input(&json!({
            "action": l.profile.agentprotocol.echo_action,
            "capability": "agentprotocol:core",
            "params": {"marker": marker},
        }))?;
        let (_, r) = client::request(&l.url, &ask, &[], l.timeout).await;
        r.map_err(|e| e.to_string())
    })
}
