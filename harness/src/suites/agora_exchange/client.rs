//! The suite's reference client as a client driver (`agentconform client`, the
//! default driver of `run --role client`): the scenarios it plays.

use crate::case::{ClientFuture, ReferenceClient};
use crate::profile::Profile;
use serde_json::{json, Value};
use std::time::Duration;

/// The suite's reference client (`Suite::reference_client`).
pub const REFERENCE: ReferenceClient = ReferenceClient {
    plays,
    scenarios: &["single", "conversation"],
    run,
};

fn run<'a>(
    scenario: &'a str,
    url: &'a str,
    input: &'a Value,
    faults: &'a [String],
    _timeout: Duration,
) -> ClientFuture<'a> {
    Box::pin(async move {
        use reference_impl::agora_exchange::client;
        let (got, r) = client::scenario(url, scenario, input, faults).await;
        Ok((got, r.map_err(|e| e.to_string())))
    })
}

/// The scenarios `agentconform interop` plays, with their inputs.
fn plays(p: &Profile) -> Vec<(&'static str, Value)> {
    let hash = p.agora_exchange.protocol_hash.clone().unwrap_or_else(|| {
        reference_impl::agora_exchange::document::sha1_hex(
            reference_impl::agora_exchange::document::ECHO_DOCUMENT.as_bytes(),
        )
    });
    vec![
        (
            "single",
            json!({"body": {"text": "interop"}, "protocolHash": hash}),
        ),
        (
            "conversation",
            json!({"body": "first", "protocolHash": hash, "followups": ["second", {"n": 3}]}),
        ),
    ]
}
