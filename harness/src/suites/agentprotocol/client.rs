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
        use reference_impl::agentprotocol::client;
        let ask = client::Ask::from_input(input)?;
        let (got, r) = client::request(url, &ask, faults, timeout).await;
        Ok((got, r.map(|v| vec![v]).map_err(|e| e.to_string())))
    })
}

/// The scenarios `agentconform interop` plays, with their inputs.
fn plays(p: &Profile) -> Vec<(&'static str, Value)> {
    vec![(
        "request",
        json!({"action": p.agentprotocol.echo_action, "capability": "agentprotocol:core", "params": {"text": "interop"}}),
    )]
}
