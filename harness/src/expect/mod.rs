//! Per-suite expectations: message builders and reply checks the cases share.

pub mod agentprotocol;
pub mod agora_exchange;
pub mod agora_spaces;
pub mod agora_v1;
pub mod chorus;
