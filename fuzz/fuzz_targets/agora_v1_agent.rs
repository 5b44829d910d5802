//! The agora-v1 reference agent on arbitrary bytes: never panics, always answers
//! with a signed envelope.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reference_impl::agora_v1::agent::{Agent, AgentConfig};
use reference_impl::agora_v1::envelope;
use std::sync::OnceLock;

static AGENT: OnceLock<Agent> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let agent = AGENT.get_or_init(|| Agent::with_config(AgentConfig::default()));
    let reply = agent.handle(data);
    assert!(envelope::verify_bytes(&reply.body).ok(), "unsigned or unreadable reply");
});
