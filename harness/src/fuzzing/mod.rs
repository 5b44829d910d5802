//! Fuzzing: the properties of the in-process targets (`checks`, run by cargo-fuzz
//! under fuzz/ and replayed by `cargo test`), and the live-target fuzzers: one
//! engine (`engine`: run loop, bounds, liveness) over the suites' fuzz specs and
//! the run of one case (`spec`), its crash corpus (`corpus`: one
//! crash file per signature) and shrinker (`shrink`), its mutations (`mutate`) and
//! verdicts (`verdict`), one fuzz spec per suite, and the library entry points
//! (`campaign`) the CLI and the tests call.

pub mod campaign;
pub mod checks;
pub mod client;
pub mod corpus;
pub mod engine;
pub mod mutate;
pub mod shrink;
pub mod spec;
pub mod verdict;
