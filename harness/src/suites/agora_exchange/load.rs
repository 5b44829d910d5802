//! `load --suite agora-exchange`: each agent a `single` exchange of the reference
//! client under the echo protocol, which answers {"text"} with the same text.

use crate::load::{Load, LoadFuture, Plan};
use serde_json::{json, Value};

/// The suite's load (`Suite::load`).
pub const PLAN: Plan = Plan::Requests(one);

/// One request of agent `client`, carrying `marker`: the reply, as the marker's
/// check sees it.
fn one<'a>(l: &'a Load, marker: &'a str, _client: usize) -> LoadFuture<'a, Result<Value, String>> {
    Box::pin(async move {
        use reference_impl::agora_exchange::{client, document};
        let hash = l
            .profile
            .agora_exchange
            .protocol_hash
            .clone()
            .unwrap_or_else(|| document::sha1_hex(document::ECHO_DOCUMENT.as_bytes()));
        let input = json!({"body": {"text": marker}, "protocolHash": hash});
        let (_, r) = client::scenario(&l.url, "single", &input, &[]).await;
        r.map(Value::Array).map_err(|e| e.to_string())
    })
}
