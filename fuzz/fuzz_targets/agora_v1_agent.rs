//! In-process fuzz target `agora_v1_agent`: the property is
//! `agentconform::suites::agora_v1::in_process::agora_v1_agent`, which `cargo test` also replays on every
//! input under fuzz/regressions/agora_v1_agent/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::suites::agora_v1::in_process::agora_v1_agent(data) {
        panic!("agora_v1_agent: {e}");
    }
});
