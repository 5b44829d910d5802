//! `load --suite agora-v1`: each agent a REQUEST of the reference client on the
//! profile's direct (echo) resource, its marker in the params, answered by a RESULT
//! whose data carries it back.

use crate::load::{Load, LoadFuture, Plan};
use serde_json::{json, Value};

/// The suite's load (`Suite::load`).
pub const PLAN: Plan = Plan::Requests(one);

/// One request of agent `client`, carrying `marker`: the reply, as the marker's
/// check sees it.
fn one<'a>(l: &'a Load, marker: &'a str, _client: usize) -> LoadFuture<'a, Result<Value, String>> {
    Box::pin(async move {
        use reference_impl::agora_v1::client;
        let ask = client::Ask::from_input(&json!({
            "resource": l.profile.agora_v1.direct_resource,
            "params": {"marker": marker}, "budget": 10,
        }))?;
        let key = reference_impl::wire::keys::Keypair::generate();
        let (o, r) = client::request(&l.url, &key, &ask, &[], l.timeout).await;
        r.map_err(|e| e.to_string())?;
        Ok(o.data.unwrap_or(Value::Null))
    })
}
