//! The suite's reference client as a client driver (`agentconform client`, the
//! default driver of `run --role client`): the scenarios it plays.

use crate::case::{ClientFuture, ReferenceClient};
use crate::profile::Profile;
use serde_json::{json, Value};
use std::time::Duration;

/// The suite's reference client (`Suite::reference_client`).
pub const REFERENCE: ReferenceClient = ReferenceClient {
    plays,
    scenarios: &["hire"],
    run,
};

fn run<'a>(
    scenario: &'a str,
    url: &'a str,
    input: &'a Value,
    faults: &'a [String],
    timeout: Duration,
) -> ClientFuture<'a> {
    Box::pin(async move {
        use reference_impl::chorus::client;
        let (got, r) = client::scenario(url, scenario, input, faults, timeout).await;
        Ok((got, r.map_err(|e| e.to_string())))
    })
}

/// The scenarios `agentconform interop` plays, with their inputs.
fn plays(p: &Profile) -> Vec<(&'static str, Value)> {
    let identity = p
        .client
        .identity
        .clone()
        .unwrap_or_else(reference_impl::wire::new_id);
    let mut input = super::counterpart::hire_input(&identity);
    input["skill"] = json!(p.chorus.fixture_skill);
    input["result_wait_ms"] = json!(p.timing.case_timeout_ms);
    vec![("hire", input)]
}
