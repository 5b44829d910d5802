//! Side-by-side benchmarks (criterion; `cargo bench -p agentconform`): each group
//! measures the project's code beside its baseline on the same input in one run.
//!
//! - `canonicalize/*`: the project's RFC 8785 canonicalizer (bytes to bytes) beside
//!   serde_jcs (parse with serde_json, then serde_jcs) and beside a plain serde_json
//!   parse and write (the floor: what any JSON round trip costs), on realistic signed
//!   agora-v1 envelopes and on random documents.
//! - `verify/*`: the whole envelope verification (parse, take the signature out,
//!   canonicalize, decode the did:key, verify) beside a bare `verify_strict` over the
//!   same canonical bytes with the key already decoded.
//!
//! harness/benches/BENCHMARKS.md records one run's figures and ratios.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ed25519_dalek::Signature;
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::jcs;
use reference_impl::wire::keys::Keypair;
use serde_json::{json, Value};

/// The allocator of the `agentconform` binary (src/main.rs), for every side alike.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A signed agora-v1 envelope as a target sends it (keys in insertion order).
fn envelope_bytes(i: u64) -> Vec<u8> {
    let key = Keypair::from_seed(&[7; 32]);
    let at = time::OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("a time");
    let payload = json!({
        "resource": "agora:echo:v1",
        "params": {"text": format!("hello number {i}, with ünïcödé and \"quotes\""), "n": i, "ratio": 0.25, "tags": ["a", "b", "c"]},
        "budget": {"max": 10.5, "currency": "credits"},
        "timeout": 30000
    });
    let mut env = envelope::build("REQUEST", &format!("id-{i}"), at, &key.did(), payload);
    envelope::sign(&mut env, &key, SigVariant::Blank).expect("signs");
    serde_json::to_vec(&env).expect("writes")
}

/// A random JSON document from a fixed seed: nested objects and arrays, keys and
/// strings with escapes and non-ASCII text, integers and fractions.
fn random_document(seed: u64, size: usize) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    fn value(next: &mut dyn FnMut() -> u64, depth: u32) -> Value {
        match next() % if depth > 3 { 4 } else { 6 } {
            0 => json!(next() % 1_000_000),
            1 => json!((next() % 100_000) as f64 / 7.0),
            2 => json!(["plain", "tab\tand \"quote\"", "ünï ✓ 𝄞", "\u{1}ctl"][next() as usize % 4]),
            3 => json!(next().is_multiple_of(2)),
            4 => Value::Array((0..next() % 6).map(|_| value(next, depth + 1)).collect()),
            _ => {
                let mut m = serde_json::Map::new();
                for k in 0..next() % 8 {
                    let key =
                        ["id", "é", "zeta", "Alpha", "b10", "b9", "€uro"][next() as usize % 7];
                    m.insert(format!("{key}{k}"), value(next, depth + 1));
                }
                Value::Object(m)
            }
        }
    }
    let mut items = Vec::new();
    let mut len = 0;
    while len < size {
        let v = value(&mut next, 0);
        len += v.to_string().len();
        items.push(v);
    }
    serde_json::to_vec(&Value::Array(items)).expect("writes")
}

fn ours(b: &[u8]) -> Vec<u8> {
    jcs::canonicalize(b).expect("canonical")
}

fn serde_jcs_of(b: &[u8]) -> Vec<u8> {
    let v: Value = serde_json::from_slice(b).expect("JSON");
    serde_jcs::to_vec(&v).expect("canonical")
}

fn floor(b: &[u8]) -> Vec<u8> {
    let v: Value = serde_json::from_slice(b).expect("JSON");
    serde_json::to_vec(&v).expect("writes")
}

fn canonicalize(c: &mut Criterion) {
    let inputs = [
        ("envelope", envelope_bytes(1)),
        ("random-4KiB", random_document(1, 4 * 1024)),
        ("random-256KiB", random_document(2, 256 * 1024)),
    ];
    for (name, bytes) in &inputs {
        // The three agree on what they canonicalize (serde_jcs and ours).
        assert_eq!(
            ours(bytes),
            serde_jcs_of(bytes),
            "{name}: the canonicalizers disagree"
        );
        let mut g = c.benchmark_group(format!("canonicalize/{name}"));
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter("agentconform"),
            bytes,
            |b, i| b.iter(|| ours(i)),
        );
        g.bench_with_input(BenchmarkId::from_parameter("serde_jcs"), bytes, |b, i| {
            b.iter(|| serde_jcs_of(i))
        });
        g.bench_with_input(
            BenchmarkId::from_parameter("serde_json-floor"),
            bytes,
            |b, i| b.iter(|| floor(i)),
        );
        g.finish();
    }
}

fn verify(c: &mut Criterion) {
    let bytes = envelope_bytes(2);
    let v: Value = serde_json::from_slice(&bytes).expect("JSON");
    let sig_text = v["sender"]["signature"].as_str().expect("signed");
    let (sig, _): (Signature, _) =
        reference_impl::wire::keys::decode_signature(sig_text).expect("a signature");
    let mut blank = v.clone();
    blank["sender"]["signature"] = json!("");
    let canonical = jcs::canonicalize_serde(&blank).expect("canonical");
    let key = Keypair::from_seed(&[7; 32]).public();
    assert!(envelope::verify_bytes(&bytes).ok());
    assert!(key.verify_strict(&canonical, &sig).is_ok());
    let mut g = c.benchmark_group("verify/envelope");
    g.bench_function("envelope-pipeline", |b| {
        b.iter(|| envelope::verify_bytes(&bytes).ok())
    });
    g.bench_function("bare-verify_strict", |b| {
        b.iter(|| key.verify_strict(&canonical, &sig).is_ok())
    });
    g.finish();
}

criterion_group!(benches, canonicalize, verify);
criterion_main!(benches);
