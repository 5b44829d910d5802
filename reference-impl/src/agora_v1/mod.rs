//! agora-v1 (agora-v1.md): signed envelopes, the reference agent and its bindings.

pub mod agent;
pub mod client;
pub mod envelope;
pub mod faults;
pub mod server;
