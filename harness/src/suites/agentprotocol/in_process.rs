//! The in-process fuzz target of agentprotocol (`Suite::in_process`): the reference agent answers anything with a message its schema passes and whose signature verifies, or with nothing. The
//! targets under fuzz/ call this function, and `cargo test` replays every saved input under
//! fuzz/regressions/<target>/ through the same function.

use crate::fuzzing::checks::{check_schema, runtime, Check};
use reference_impl::wire::keys::Keypair;
use std::sync::OnceLock;

/// The target, by the name cargo-fuzz knows it under.
pub const TARGETS: &[(&str, Check)] = &[("agentprotocol_agent", agentprotocol_agent)];

fn ap_agent() -> &'static reference_impl::agentprotocol::agent::ApAgent {
    static A: OnceLock<reference_impl::agentprotocol::agent::ApAgent> = OnceLock::new();
    A.get_or_init(|| {
        let cfg = reference_impl::agentprotocol::agent::ApConfig {
            max_delay_ms: 5,
            ..Default::default()
        };
        reference_impl::agentprotocol::agent::ApAgent::new(Keypair::from_seed(&[6; 32]), cfg)
    })
}

/// The agentprotocol reference answers anything with a message that passes the
/// message schema and whose signature verifies, or with nothing.
pub fn agentprotocol_agent(data: &[u8]) -> Result<(), String> {
    let Some(reply) = runtime().block_on(ap_agent().handle(data)) else {
        return Ok(());
    };
    let v: serde_json::Value =
        serde_json::from_slice(&reply).map_err(|e| format!("the reply is not JSON ({e})"))?;
    check_schema("agentprotocol/message", &v, "the reply")?;
    reference_impl::agentprotocol::message::verify_bytes(&reply)
        .map_err(|e| format!("the reply does not verify: {e:?}: {v}"))
}
