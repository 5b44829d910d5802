//! agentprotocol messages (agentprotocol.md): signing and verification.
//!
//! The signed bytes are the RFC 8785 form of the message without `signature`
//! (object keys sorted recursively, arrays in their order: "JSON.stringify with sorted
//! keys" for I-JSON data). Signatures and `from.agentId` are standard base64; a
//! verifier accepts the URL-safe and unpadded flavours too.

use crate::wire::jcs;
use crate::wire::json::{self, Value as Tree};
use crate::wire::keys::{self, Keypair};
use ed25519_dalek::VerifyingKey;
use serde_json::Value;

pub const PROTOCOL: &str = "agentprotocol/0.1";
pub const TYPES: [&str; 5] = ["hello", "request", "response", "notify", "error"];
pub const CODES: [&str; 7] = [
    "INVALID_MESSAGE",
    "INVALID_SIGNATURE",
    "UNKNOWN_AGENT",
    "CAPABILITY_NOT_SUPPORTED",
    "TIMEOUT",
    "RATE_LIMITED",
    "INTERNAL_ERROR",
];

/// `from.agentId` of a key: its 32 bytes in standard base64.
pub fn agent_id(k: &Keypair) -> String {
    keys::b64std(k.public().as_bytes())
}

/// The bytes a signer signs: the canonical form without `signature`.
pub fn signing_bytes(mut tree: Tree<'_>) -> Result<Vec<u8>, jcs::CanonError> {
    tree.remove("signature");
    let mut out = Vec::with_capacity(512);
    jcs::write(&mut tree, &mut out)?;
    Ok(out)
}

/// Signs `msg` in place (standard base64); returns the bytes signed.
pub fn sign(msg: &mut Value, key: &Keypair) -> Result<Vec<u8>, jcs::CanonError> {
    if let Some(o) = msg.as_object_mut() {
        o.remove("signature");
    }
    let canonical = jcs::canonicalize_serde(msg)?;
    let sig = keys::b64std(&key.sign(&canonical).to_bytes());
    if let Some(o) = msg.as_object_mut() {
        o.insert("signature".into(), Value::String(sig));
    }
    Ok(canonical)
}

/// The key a `from.agentId` names: base64 in any flavour, base58 as a last resort.
pub fn key_of(agent_id: &str) -> Option<VerifyingKey> {
    let bytes = keys::b64_decode_any(agent_id)
        .map(|(b, _)| b)
        .filter(|b| b.len() == 32)
        .or_else(|| bs58::decode(agent_id).into_vec().ok())?;
    keys::key_from_bytes(&bytes).ok()
}

/// Why a signature did not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SigProblem {
    Unsigned,
    NotASignature(String),
    NoKey(String),
    Mismatch,
    NotCanonicalizable(String),
}

impl std::fmt::Display for SigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SigProblem::Unsigned => f.write_str("the message carries no signature"),
            SigProblem::NotASignature(e) => {
                write!(f, "`signature` is not a base64 Ed25519 signature: {e}")
            }
            SigProblem::NoKey(id) => {
                write!(f, "from.agentId {id:?} is not a base64 Ed25519 public key")
            }
            SigProblem::Mismatch => f.write_str(
                "the signature does not verify over the canonical message with from.agentId's key",
            ),
            SigProblem::NotCanonicalizable(e) => {
                write!(f, "the message has no canonical form: {e}")
            }
        }
    }
}

/// Verifies a parsed message.
pub fn verify_tree(tree: Tree<'_>) -> Result<(), SigProblem> {
    let sig_text = match tree.get("signature") {
        Some(Tree::String(s)) if !s.is_empty() => s.to_string(),
        Some(Tree::String(_)) | None => return Err(SigProblem::Unsigned),
        Some(_) => return Err(SigProblem::NotASignature("not a string".into())),
    };
    let (sig, _) =
        keys::decode_signature(&sig_text).map_err(|e| SigProblem::NotASignature(e.to_string()))?;
    let id = tree
        .get("from")
        .and_then(|f| f.get("agentId"))
        .and_then(Tree::as_str)
        .unwrap_or_default()
        .to_string();
    let key = key_of(&id).ok_or(SigProblem::NoKey(id))?;
    let canonical =
        signing_bytes(tree).map_err(|e| SigProblem::NotCanonicalizable(e.to_string()))?;
    if keys::verify(&key, &canonical, &sig) {
        Ok(())
    } else {
        Err(SigProblem::Mismatch)
    }
}

/// Verifies a message given as JSON text.
pub fn verify_bytes(bytes: &[u8]) -> Result<(), SigProblem> {
    let tree = json::parse(bytes).map_err(|e| SigProblem::NotCanonicalizable(e.to_string()))?;
    verify_tree(tree)
}

/// Whether `msg`'s signature verifies over `signed` (bytes some signer wrote in
/// place of the canonical form) with the key its `from.agentId` names.
pub fn verifies_over(msg: &serde_json::Value, signed: &[u8]) -> bool {
    let sig = msg["signature"]
        .as_str()
        .and_then(|s| keys::decode_signature(s).ok());
    let key = msg["from"]["agentId"].as_str().and_then(key_of);
    match (sig, key) {
        (Some((sig, _)), Some(key)) => keys::verify(&key, signed, &sig),
        _ => false,
    }
}

pub use crate::wire::pyjson::python_sorted_json;

/// A name-safe form of an agent id for file names (URL-safe alphabet, no padding).
pub fn fs_id(agent_id: &str) -> String {
    agent_id
        .replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sign_verify_and_tamper() {
        let k = Keypair::from_seed(&[0x11; 32]);
        let mut m = json!({"protocol": PROTOCOL, "id": "x", "from": {"agentId": agent_id(&k)}, "type": "hello", "payload": {"é": 1.0}});
        sign(&mut m, &k).unwrap();
        assert_eq!(verify_bytes(m.to_string().as_bytes()), Ok(()));
        m["payload"]["é"] = json!(2);
        assert_eq!(
            verify_bytes(m.to_string().as_bytes()),
            Err(SigProblem::Mismatch)
        );
        assert_eq!(fs_id("ab+/c="), "ab-_c");
    }
}
