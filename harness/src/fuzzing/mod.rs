//! Fuzzing: the properties of the in-process targets (`checks`, run by cargo-fuzz
//! under fuzz/ and replayed by `cargo test`), and the live-target fuzzer (`live`).

pub mod checks;
pub mod live;
