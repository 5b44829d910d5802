//! In-process fuzz target `signature`: the property is
//! `agentconform::suites::agora_v1::in_process::signature`, which `cargo test` also replays on every
//! input under fuzz/regressions/signature/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::suites::agora_v1::in_process::signature(data) {
        panic!("signature: {e}");
    }
});
