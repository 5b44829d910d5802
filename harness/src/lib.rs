//! agentconform: the conformance harness for JSON agent-to-agent protocols.
//!
//! See ARCHITECTURE.md at the workspace root for the map of this crate.

pub mod case;
pub mod cli;
pub mod counterparty;
pub mod drive;
pub mod embedded;
pub mod exchange;
pub mod explain;
pub mod export;
pub mod finding;
pub mod fuzzing;
pub mod init;
pub mod interop;
pub mod inventory;
pub mod load;
pub mod profile;
pub mod proxy;
pub mod report;
pub mod rules;
pub mod runner;
pub mod schemas;
pub mod script;
pub mod suites;
pub mod tamper;
pub mod template;
pub mod verdict;
