//! The in-process fuzz targets of agora-v1 (`Suite::in_process`): the reference agent answers anything with an envelope that verifies, and a mutated signed envelope never verifies unless its signed form is unchanged. The
//! targets under fuzz/ call these functions, and `cargo test` replays every saved input under
//! fuzz/regressions/<target>/ through the same function.

use crate::fuzzing::checks::Check;
use reference_impl::agora_v1::agent::{Agent, AgentConfig};
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::clock::ManualClock;
use reference_impl::wire::keys::Keypair;
use std::sync::OnceLock;

/// The targets, by the name cargo-fuzz knows them under.
pub const TARGETS: &[(&str, Check)] =
    &[("agora_v1_agent", agora_v1_agent), ("signature", signature)];

fn agora_agent() -> &'static Agent {
    static A: OnceLock<Agent> = OnceLock::new();
    A.get_or_init(|| {
        let clock = ManualClock::new(time::macros::datetime!(2024-01-01 0:00 UTC));
        Agent::new(Keypair::from_seed(&[5; 32]), clock, AgentConfig::default())
    })
}

/// The agora-v1 reference agent answers anything with an envelope that verifies.
pub fn agora_v1_agent(data: &[u8]) -> Result<(), String> {
    let reply = agora_agent().handle(data);
    let v = envelope::verify_bytes(&reply.body);
    if v.ok() {
        Ok(())
    } else {
        Err(format!(
            "the reply does not verify: {:?}: {}",
            v.problem,
            String::from_utf8_lossy(&reply.body)
        ))
    }
}

fn signed_envelope() -> &'static (Vec<u8>, Vec<u8>) {
    static E: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    E.get_or_init(|| {
        let k = Keypair::from_seed(&[9; 32]);
        let mut env = envelope::build(
            "REQUEST",
            "11111111-1111-4111-8111-111111111111",
            time::macros::datetime!(2024-01-01 0:00 UTC),
            &k.did(),
            serde_json::json!({"resource": "agora:echo:v1", "params": {"text": "héllo", "n": 1.5, "list": [1, 2, 3]}}),
        );
        // A fixed, valid envelope: signing it cannot fail.
        let canonical = envelope::sign(&mut env, &k, SigVariant::Blank).expect("fixed envelope signs");
        (serde_json::to_vec(&env).unwrap_or_default(), canonical)
    })
}

/// A signed envelope changed by the input (bytes XORed in at input-chosen places)
/// never verifies unless its canonical signed form is unchanged.
pub fn signature(data: &[u8]) -> Result<(), String> {
    let (original, canonical) = signed_envelope();
    let mut m = original.clone();
    for pair in data.chunks(3) {
        if pair.len() < 3 || m.is_empty() {
            break;
        }
        let at = (usize::from(pair[0]) << 8 | usize::from(pair[1])) % m.len();
        m[at] ^= pair[2];
    }
    let v = envelope::verify_bytes(&m);
    if !v.ok() {
        return Ok(());
    }
    // It verified: that is right only if what was signed is what it says.
    let signed_now = v
        .attempts
        .iter()
        .find(|a| a.verified_with.is_some())
        .and_then(|a| a.canonical.as_ref().ok());
    if signed_now == Some(canonical) {
        Ok(())
    } else {
        Err(format!(
            "a mutated envelope verifies: {}",
            String::from_utf8_lossy(&m)
        ))
    }
}
