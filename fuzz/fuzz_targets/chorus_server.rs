//! In-process fuzz target `chorus_server`: the property is
//! `agentconform::suites::chorus::in_process::chorus_server`, which `cargo test` also replays on every
//! input under fuzz/regressions/chorus_server/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::suites::chorus::in_process::chorus_server(data) {
        panic!("chorus_server: {e}");
    }
});
