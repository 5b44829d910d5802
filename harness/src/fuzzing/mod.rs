//! Fuzzing: the properties of the in-process targets (`checks`, run by cargo-fuzz
//! under fuzz/ and replayed by `cargo test`), and the live-target fuzzers: one
//! engine (`engine`: run loop, bounds, crash files), its mutations (`mutate`) and
//! verdicts (`verdict`), one fuzz spec per suite, and the library entry points
//! (`campaign`) the CLI and the tests call.

pub mod agentprotocol;
pub mod agora_exchange;
pub mod agora_spaces;
pub mod agora_v1;
pub mod campaign;
pub mod checks;
pub mod chorus;
pub mod client;
pub mod engine;
pub mod mutate;
pub mod verdict;
