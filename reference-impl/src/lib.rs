//! The agentconform reference implementation: the wire core and the protocols,
//! both sides.

pub mod agentprotocol;
pub mod agora_exchange;
pub mod agora_spaces;
pub mod agora_v1;
pub mod chorus;
pub mod faults;
pub mod serve;
pub mod start;
pub mod wire;
