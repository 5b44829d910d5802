//! In-process fuzz target `agora_spaces_server`: the property is
//! `agentconform::suites::agora_spaces::in_process::agora_spaces_server`, which `cargo test` also replays on every
//! input under fuzz/regressions/agora_spaces_server/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::suites::agora_spaces::in_process::agora_spaces_server(data) {
        panic!("agora_spaces_server: {e}");
    }
});
