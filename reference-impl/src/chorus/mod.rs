//! chorus (chorus.md): registry, discovery, jobs, ledger, reputation.

pub mod faults;
pub mod server;
