//! chorus (chorus.md): registry, discovery, jobs, ledger, reputation.

pub mod client;
pub mod faults;
pub mod published;
pub mod server;
