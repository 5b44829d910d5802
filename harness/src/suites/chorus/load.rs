//! `load --suite chorus`: each agent a `hire` of the reference client for the
//! profile's fixture skill, its marker in the input data, as an owner of its own,
//! paying at the profile's ledger.

use crate::load::{Load, LoadFuture, Plan};
use serde_json::{json, Value};

/// The suite's load (`Suite::load`).
pub const PLAN: Plan = Plan::Requests(one);

/// One request of agent `client`, carrying `marker`: the reply, as the marker's
/// check sees it.
fn one<'a>(l: &'a Load, marker: &'a str, client: usize) -> LoadFuture<'a, Result<Value, String>> {
    Box::pin(async move {
        use reference_impl::chorus::client;
        let input = json!({
            "skill": l.profile.chorus.fixture_skill,
            "input_data": {"text": marker},
            "owner_id": format!("load-owner-{client}"),
            "result_wait_ms": l.timeout.as_millis() as u64,
            // The profile's ledger, as `run` reaches it (default: the registry).
            "ledger_url": l.profile.target.ledger_url,
        });
        let (_, r) = client::scenario(&l.url, "hire", &input, &[], l.timeout).await;
        r.map(Value::Array).map_err(|e| e.to_string())
    })
}
