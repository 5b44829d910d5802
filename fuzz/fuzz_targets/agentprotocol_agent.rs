//! In-process fuzz target `agentprotocol_agent`: the property is
//! `agentconform::suites::agentprotocol::in_process::agentprotocol_agent`, which `cargo test` also replays on every
//! input under fuzz/regressions/agentprotocol_agent/.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = agentconform::suites::agentprotocol::in_process::agentprotocol_agent(data) {
        panic!("agentprotocol_agent: {e}");
    }
});
