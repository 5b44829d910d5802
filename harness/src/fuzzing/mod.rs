//! Fuzzing: the properties of the in-process targets (`checks`, run by cargo-fuzz
//! under fuzz/ and replayed by `cargo test`), and the live-target fuzzers: `live` for
//! agora-v1, `scripted` with one module per other suite.

pub mod agentprotocol;
pub mod agora_exchange;
pub mod agora_spaces;
pub mod campaign;
pub mod checks;
pub mod chorus;
pub mod live;
pub mod scripted;
pub mod verdict;

/// A suite's live fuzzer, as its descriptor (`Suite::fuzzer`) names it.
#[derive(Clone, Copy)]
pub enum Fuzzer {
    /// On the scripted engine, with this spec.
    Scripted(&'static scripted::Spec),
    /// agora-v1's own engine (`live`).
    Live,
}
