//! The properties the in-process fuzz targets check. The targets under fuzz/ call
//! these functions, and `cargo test` replays every saved input under
//! fuzz/regressions/<target>/ through the same function, so a fixed crash stays fixed.
//! Each returns `Err` with a description when the property does not hold; none may
//! panic on any input.

use crate::profile::Profile;
use crate::schemas::Schemas;
use reference_impl::agora_v1::agent::{Agent, AgentConfig};
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::clock::ManualClock;
use reference_impl::wire::jcs;
use reference_impl::wire::keys::Keypair;
use std::sync::OnceLock;

/// A target's name and its property.
pub type Check = fn(&[u8]) -> Result<(), String>;

/// Every in-process target, by the name cargo-fuzz knows it under.
pub const TARGETS: &[(&str, Check)] = &[
    ("canonicalize", canonicalize),
    ("differential", differential),
    ("decoders", decoders),
    ("agora_v1_agent", agora_v1_agent),
    ("agora_exchange_server", agora_exchange_server),
    ("chorus_server", chorus_server),
    ("agora_spaces_server", agora_spaces_server),
    ("agentprotocol_agent", agentprotocol_agent),
    ("signature", signature),
    ("profile", profile),
];

/// The canonical form is stable and reads back as JSON.
pub fn canonicalize(data: &[u8]) -> Result<(), String> {
    let Ok(out) = jcs::canonicalize(data) else {
        return Ok(());
    };
    let again = jcs::canonicalize(&out)
        .map_err(|e| format!("canonical output does not canonicalize: {e}"))?;
    if again != out {
        return Err(format!(
            "not stable:\n first {}\nsecond {}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&again)
        ));
    }
    serde_json::from_slice::<serde_json::Value>(&out)
        .map_err(|e| format!("canonical output is not JSON: {e}"))?;
    Ok(())
}

/// Where both the project's canonicalizer and serde_jcs accept a text, they agree.
/// (They part on purpose elsewhere: the project rejects duplicate names, lone
/// surrogates and inexact integers; serde_json reads those.)
pub fn differential(data: &[u8]) -> Result<(), String> {
    let Ok(ours) = jcs::canonicalize(data) else {
        return Ok(());
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return Err(format!(
            "the project canonicalizes text serde_json rejects: {}",
            String::from_utf8_lossy(data)
        ));
    };
    let Ok(theirs) = serde_jcs::to_vec(&value) else {
        return Ok(());
    };
    if ours != theirs {
        return Err(format!(
            "canonical forms differ:\n ours {}\n serde_jcs {}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        ));
    }
    Ok(())
}

fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    // The schemas are built into the binary and compile (a test says so); a failure
    // here is a build defect, and the fuzz run should stop loudly.
    S.get_or_init(|| Schemas::load().expect("built-in schemas compile"))
}

/// Every suite's message decoder: the strict reader, then every schema of every
/// suite, on any input.
pub fn decoders(data: &[u8]) -> Result<(), String> {
    let Ok(tree) = reference_impl::wire::json::parse(data) else {
        return Ok(());
    };
    let v = tree.to_serde();
    for key in schemas().keys() {
        let _ = schemas().check(key, &v);
    }
    Ok(())
}

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

fn check_schema(name: &str, v: &serde_json::Value, what: &str) -> Result<(), String> {
    schemas()
        .check(name, v)
        .map_err(|e| format!("{what}: {e}: {v}"))
}

fn exchange() -> &'static reference_impl::agora_exchange::server::Exchange {
    static E: OnceLock<reference_impl::agora_exchange::server::Exchange> = OnceLock::new();
    E.get_or_init(|| {
        reference_impl::agora_exchange::server::Exchange::with_config(Default::default())
    })
}

/// The agora-exchange reference server answers any request, on the base URL or on a
/// conversation, with HTTP 200, 400 or 404 and a body that passes the response
/// schema. The first byte picks the endpoint.
pub fn agora_exchange_server(data: &[u8]) -> Result<(), String> {
    let Some((sel, body)) = data.split_first() else {
        return Ok(());
    };
    let ex = exchange();
    let conversation = match sel % 3 {
        0 => None,
        1 => Some("0123456789abcdef0123456789abcdef".to_string()),
        _ => ex
            .handle(None, br#"{"body":"open","multiround":true}"#)
            .body["conversationId"]
            .as_str()
            .map(String::from),
    };
    let r = ex.handle(conversation.as_deref(), body);
    if ![200, 400, 404].contains(&r.status) {
        return Err(format!(
            "HTTP {} for {}",
            r.status,
            String::from_utf8_lossy(body)
        ));
    }
    check_schema("agora-exchange/response", &r.body, "the reply")
}

fn chorus() -> &'static reference_impl::chorus::server::Chorus {
    static C: OnceLock<reference_impl::chorus::server::Chorus> = OnceLock::new();
    C.get_or_init(|| {
        let c = reference_impl::chorus::server::Chorus::with_config(Default::default());
        c.register_fixture("http://127.0.0.1:9");
        c
    })
}

/// The chorus reference answers any registration, transfer, job or discovery query
/// without a 5xx; errors pass the error schema, and successes their own.
pub fn chorus_server(data: &[u8]) -> Result<(), String> {
    let Some((sel, body)) = data.split_first() else {
        return Ok(());
    };
    let c = chorus();
    let (r, ok_schema) = match sel % 4 {
        0 => (c.register(body), Some("chorus/register-response")),
        1 => (c.transfer(body), None),
        2 => (c.job(body).0, None),
        _ => {
            let q: std::collections::HashMap<String, String> = String::from_utf8_lossy(body)
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (c.discover(&q), Some("chorus/discover-response"))
        }
    };
    if r.status >= 500 {
        return Err(format!(
            "HTTP {} for {}",
            r.status,
            String::from_utf8_lossy(body)
        ));
    }
    if r.status >= 400 {
        return check_schema("chorus/error", &r.body, "the error reply");
    }
    match ok_schema {
        Some(s) => check_schema(s, &r.body, "the reply"),
        None => Ok(()),
    }
}

fn spaces() -> &'static std::sync::Arc<reference_impl::agora_spaces::server::Spaces> {
    static S: OnceLock<std::sync::Arc<reference_impl::agora_spaces::server::Spaces>> =
        OnceLock::new();
    S.get_or_init(|| reference_impl::agora_spaces::server::Spaces::new(Default::default()))
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static R: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    // Building a current-thread runtime only fails when the OS refuses a timer or
    // an I/O driver; the fuzz run cannot go on without one.
    R.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

/// The agora-spaces reference answers any frames (split at newlines) on a connection
/// of its own with server frames that each pass their schema.
pub fn agora_spaces_server(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let frames: Vec<&str> = text.split('\n').take(8).collect();
    let _in_runtime = runtime().enter();
    let agent = format!("fz-{}", reference_impl::wire::new_id());
    for out in spaces().handle_detached(&agent, &frames) {
        let v: serde_json::Value = serde_json::from_str(&out)
            .map_err(|e| format!("a server frame is not JSON ({e}): {out}"))?;
        let Some(schema) = crate::suites::agora_spaces::expect::schema_for(&v) else {
            return Err(format!("a server frame of no known type: {out}"));
        };
        check_schema(&format!("agora-spaces/{schema}"), &v, "a server frame")?;
    }
    Ok(())
}

fn ap_agent() -> &'static reference_impl::agentprotocol::agent::ApAgent {
    static A: OnceLock<reference_impl::agentprotocol::agent::ApAgent> = OnceLock::new();
    A.get_or_init(|| {
        let cfg = reference_impl::agentprotocol::agent::ApConfig {
            max_delay_ms: 5,
            ..Default::default()
        };
        reference_impl::agentprotocol::agent::ApAgent::new(Keypair::from_seed(&[6; 32]), cfg)
    })
}

/// The agentprotocol reference answers anything with a message that passes the
/// message schema and whose signature verifies, or with nothing.
pub fn agentprotocol_agent(data: &[u8]) -> Result<(), String> {
    let Some(reply) = runtime().block_on(ap_agent().handle(data)) else {
        return Ok(());
    };
    let v: serde_json::Value =
        serde_json::from_slice(&reply).map_err(|e| format!("the reply is not JSON ({e})"))?;
    check_schema("agentprotocol/message", &v, "the reply")?;
    reference_impl::agentprotocol::message::verify_bytes(&reply)
        .map_err(|e| format!("the reply does not verify: {e:?}: {v}"))
}

/// The profile reader never panics.
pub fn profile(data: &[u8]) -> Result<(), String> {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Profile::from_toml(text, "fuzz.toml");
    }
    Ok(())
}
