//! In-process fuzz target `canonicalize`: the property is
//! `agentconform::fuzzing::checks::canonicalize`, which `cargo test` also replays on every
//! input under fuzz/regressions/canonicalize/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::fuzzing::checks::canonicalize(data) {
        panic!("canonicalize: {e}");
    }
});
