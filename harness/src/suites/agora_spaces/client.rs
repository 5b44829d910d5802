//! The suite's reference client as a client driver (`agentconform client`, the
//! default driver of `run --role client`): the scenarios it plays.

use crate::case::{ClientFuture, ReferenceClient};
use crate::profile::Profile;
use serde_json::Value;
use std::time::Duration;

/// The suite's reference client (`Suite::reference_client`).
pub const REFERENCE: ReferenceClient = ReferenceClient {
    plays,
    scenarios: &["join-publish", "listen"],
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
        use reference_impl::agora_spaces::client;
        let (got, r) = client::scenario(url, scenario, input, faults, timeout).await;
        Ok((got, r.map_err(|e| e.to_string())))
    })
}

/// The scenarios `agentconform interop` plays, with their inputs: join and publish
/// as the client cases ask, then leave after half a second (a hub never closes on
/// its own), well within the heartbeat timeout.
fn plays(_: &Profile) -> Vec<(&'static str, Value)> {
    let mut input = super::requester::client_input("interop");
    input["leave_after_ms"] = 500.into();
    vec![("join-publish", input)]
}
