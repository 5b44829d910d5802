//! In-process fuzz target `differential`: the property is
//! `agentconform::fuzzing::checks::differential`, which `cargo test` also replays on every
//! input under fuzz/regressions/differential/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::fuzzing::checks::differential(data) {
        panic!("differential: {e}");
    }
});
