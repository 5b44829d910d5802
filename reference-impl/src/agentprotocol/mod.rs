//! agentprotocol (agentprotocol.md): signed messages over HTTP, WebSocket and files.

pub mod agent;
pub mod client;
pub mod faults;
pub mod file;
pub mod message;
pub mod server;
