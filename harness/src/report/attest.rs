//! Signed attestations of a run (`attest`, `attest verify`).
//!
//! An attestation binds a report.json to what produced it: the tool and its version,
//! the suites and the revision of the requirement inventory, the target URL, the key
//! ids the target signed with, the attester's key, the SHA-256 of the report's RFC 8785
//! bytes, and the SHA-256 of every case's transcript. The statement is signed with
//! Ed25519 over its own RFC 8785 bytes (a detached signature); `verify` recomputes
//! every hash from the report file and checks the signature against the attester's
//! did:key.

use reference_impl::wire::jcs;
use reference_impl::wire::keys::{self, Keypair};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const REQUIREMENTS: &str = include_str!("../../requirements/requirements.json");
const AMBIGUITIES: &str = include_str!("../../requirements/ambiguities.json");

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The revision of the requirement inventory compiled into this binary.
pub fn inventory_revision() -> String {
    let mut h = Sha256::new();
    h.update(REQUIREMENTS.as_bytes());
    h.update(b"\n");
    h.update(AMBIGUITIES.as_bytes());
    hex(&h.finalize())
}

/// Key ids the target signed its replies with, read from the transcripts: agora-v1's
/// `sender.id` and agentprotocol's `from.agentId`.
fn target_key_ids(report: &Value) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for c in report["cases"].as_array().into_iter().flatten() {
        for e in c["transcript"].as_array().into_iter().flatten() {
            if e["kind"] != "recv" {
                continue;
            }
            let text = e["text"].as_str().unwrap_or_default();
            let body = text.split_once('\n').map_or(text, |(first, rest)| {
                if first.starts_with("Content-Type:") {
                    rest
                } else {
                    text
                }
            });
            let Ok(v) = serde_json::from_str::<Value>(body) else {
                continue;
            };
            for id in [&v["sender"]["id"], &v["from"]["agentId"]] {
                if let Some(s) = id.as_str() {
                    if !ids.iter().any(|i| i == s) {
                        ids.push(s.to_string());
                    }
                }
            }
        }
    }
    ids.sort();
    ids
}

/// What an attestation states about `report` (report.json as written).
pub fn statement(report_bytes: &[u8], attester: &str) -> Result<Value, String> {
    let canon = jcs::canonicalize(report_bytes)
        .map_err(|e| format!("report.json has no canonical form: {e}"))?;
    let report: Value =
        serde_json::from_slice(report_bytes).map_err(|e| format!("report.json: {e}"))?;
    let mut transcripts = Vec::new();
    for c in report["cases"].as_array().into_iter().flatten() {
        let t = jcs::canonicalize_serde(&c["transcript"])
            .map_err(|e| format!("transcript of {}: {e}", c["id"]))?;
        transcripts.push(json!({
            "case": c["id"], "transport": c["transport"], "sha256": sha256_hex(&t),
        }));
    }
    Ok(json!({
        "type": "agentconform-attestation/1",
        "tool": report["tool"],
        "attester_tool_version": env!("CARGO_PKG_VERSION"),
        "suites": report["suites"],
        "inventory_revision": inventory_revision(),
        "target": report["target"],
        "target_key_ids": target_key_ids(&report),
        "attester": attester,
        "started_at": report["started_at"],
        "summary": report["summary"],
        "report_sha256": sha256_hex(&canon),
        "transcripts": transcripts,
    }))
}

/// Signs `report_bytes`: the attestation document.
pub fn attest(report_bytes: &[u8], key: &Keypair) -> Result<Value, String> {
    let st = statement(report_bytes, &key.did())?;
    let canon = jcs::canonicalize_serde(&st).map_err(|e| e.to_string())?;
    let sig = key.sign(&canon);
    Ok(json!({
        "statement": st,
        "signature": keys::b64url(&sig.to_bytes()),
        "algorithm": "Ed25519 over the RFC 8785 bytes of statement",
    }))
}

/// Checks an attestation against the report it names: every hash recomputed, the
/// signature verified with the attester's did:key. `Ok` gives the attester's key id.
pub fn verify(attestation: &Value, report_bytes: &[u8]) -> Result<String, String> {
    let st = &attestation["statement"];
    let attester = st["attester"]
        .as_str()
        .ok_or("the attestation names no attester")?;
    let sig_text = attestation["signature"]
        .as_str()
        .ok_or("the attestation has no signature")?;
    let sig_bytes = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        sig_text.trim_end_matches('='),
    )
    .map_err(|e| format!("the signature is not base64url: {e}"))?;
    let sig = ed25519_dalek::Signature::from_slice(&sig_bytes)
        .map_err(|e| format!("the signature is not 64 bytes: {e}"))?;
    let key = match keys::candidate_keys(attester) {
        Ok(list) if attester.starts_with("did:key:") => list[0].0,
        _ => {
            return Err(format!(
                "the attester {attester:?} is not an Ed25519 did:key"
            ))
        }
    };
    let canon = jcs::canonicalize_serde(st).map_err(|e| e.to_string())?;
    if !keys::verify(&key, &canon, &sig) {
        return Err(
            "the signature does not verify: the statement was changed or signed by another key"
                .into(),
        );
    }
    let fresh = statement(report_bytes, attester)?;
    for member in [
        "report_sha256",
        "transcripts",
        "target",
        "suites",
        "tool",
        "summary",
    ] {
        if fresh[member] != st[member] {
            return Err(format!(
                "the report does not match the attestation: {member} differs"
            ));
        }
    }
    if st["inventory_revision"] != fresh["inventory_revision"] {
        return Err(format!(
            "the attestation was made against inventory revision {}, this binary has {}",
            st["inventory_revision"], fresh["inventory_revision"]
        ));
    }
    Ok(attester.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"{"tool":{"name":"agentconform","version":"0.1.0"},"target":"http://127.0.0.1:1/","suites":["agora-v1"],"started_at":"2026-01-01T00:00:00Z","summary":{"passed":1},"cases":[{"id":"agora-v1/echo-direct","transport":"http","transcript":[{"at_ms":0,"kind":"recv","text":"{\"sender\":{\"id\":\"did:key:z6Mkabc\"}}"}]}]}"#;

    #[test]
    fn a_fresh_attestation_verifies() {
        let key = Keypair::generate();
        let a = attest(REPORT.as_bytes(), &key).expect("attest");
        assert_eq!(verify(&a, REPORT.as_bytes()), Ok(key.did()));
        assert_eq!(a["statement"]["target_key_ids"], json!(["did:key:z6Mkabc"]));
        // The report in another spelling (member order, white space) still matches.
        let v: Value = serde_json::from_str(REPORT).expect("json");
        let pretty = serde_json::to_vec_pretty(&v).expect("pretty");
        assert!(verify(&a, &pretty).is_ok());
    }

    #[test]
    fn tampering_is_detected() {
        let key = Keypair::generate();
        let a = attest(REPORT.as_bytes(), &key).expect("attest");
        let changed = REPORT.replace("\"passed\":1", "\"passed\":2");
        assert!(verify(&a, changed.as_bytes()).is_err());
        let mut b = a.clone();
        b["statement"]["target"] = json!("http://elsewhere/");
        assert!(verify(&b, REPORT.as_bytes()).is_err());
        let mut c = a.clone();
        c["statement"]["attester"] = json!(Keypair::generate().did());
        assert!(verify(&c, REPORT.as_bytes()).is_err());
        let mut d = a;
        d["signature"] = json!("AAAA");
        assert!(verify(&d, REPORT.as_bytes()).is_err());
    }
}
