//! agora-spaces (agora-spaces.zh.md): WebSocket events, spaces, streamed deltas.

pub mod client;
pub mod faults;
pub mod server;
