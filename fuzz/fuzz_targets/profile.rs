//! In-process fuzz target `profile`: the property is
//! `agentconform::fuzzing::checks::profile`, which `cargo test` also replays on every
//! input under fuzz/regressions/profile/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::fuzzing::checks::profile(data) {
        panic!("profile: {e}");
    }
});
