//! agora-exchange (agora-exchange.txt): two-party JSON exchanges, protocol documents,
//! multi-round conversations. Server and client.

pub mod client;
pub mod document;
pub mod faults;
pub mod server;
