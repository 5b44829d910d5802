//! The suite's reference client as a client driver (`agentconform client`, the
//! default driver of `run --role client`): the scenarios it plays.

use crate::case::{ClientFuture, ReferenceClient};
use crate::profile::Profile;
use serde_json::{json, Value};
use std::time::Duration;

/// The suite's reference client (`Suite::reference_client`).
pub const REFERENCE: ReferenceClient = ReferenceClient {
    plays,
    scenarios: &["request"],
    run,
};

fn run<'a>(
    _scenario: &'a str,
    url: &'a str,
    input: &'a Value,
    faults: &'a [String],
    timeout: Duration,
) -> ClientFuture<'a> {
    Box::pin(async move {
        use reference_impl::agora_v1::client;
        let ask = client::Ask::from_input(input)?;
        let key = reference_impl::wire::keys::Keypair::generate();
        let (o, r) = client::request(url, &key, &ask, faults, timeout).await;
        let data = o.data.unwrap_or(Value::Null);
        Ok((
            o.received,
            r.map(|()| vec![data]).map_err(|e| e.to_string()),
        ))
    })
}

/// The scenarios `agentconform interop` plays, with their inputs: a direct
/// request, and a negotiated one (REQUEST, OFFER, ACCEPT, RESULT).
fn plays(p: &Profile) -> Vec<(&'static str, Value)> {
    let ask =
        |resource: &str| json!({"resource": resource, "params": {"text": "interop"}, "budget": 10});
    vec![
        ("request", ask(&p.agora_v1.direct_resource)),
        ("request", ask(&p.agora_v1.negotiated_resource)),
    ]
}
