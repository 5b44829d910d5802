//! agora-spaces (agora-spaces.zh.md): WebSocket events, spaces, streamed deltas.

pub mod faults;
pub mod server;
