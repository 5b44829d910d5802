//! In-process fuzz target `agora_exchange_server`: the property is
//! `agentconform::suites::agora_exchange::in_process::agora_exchange_server`, which `cargo test` also replays on every
//! input under fuzz/regressions/agora_exchange_server/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::suites::agora_exchange::in_process::agora_exchange_server(data) {
        panic!("agora_exchange_server: {e}");
    }
});
