//! In-process fuzz target `decoders`: the property is
//! `agentconform::fuzzing::checks::decoders`, which `cargo test` also replays on every
//! input under fuzz/regressions/decoders/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::fuzzing::checks::decoders(data) {
        panic!("decoders: {e}");
    }
});
