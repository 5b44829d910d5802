//! agora-v1 envelopes: building, signing and verifying (agora-v1.md §1, §2).
//!
//! Signing: RFC 8785 canonical bytes of the envelope with `sender.signature` set to
//! `""` (the default, [`SigVariant::Blank`]) or removed ([`SigVariant::Removed`]),
//! pure Ed25519, Base64Url without padding. Verification tries both variants and every
//! key the `sender.id` may name, and reports which one verified.

use crate::wire::clock::format_timestamp;
use crate::wire::jcs::{self, CanonError};
use crate::wire::json::{self, Value};
use crate::wire::keys::{self, B64Flavor, KeyForm, Keypair};
use std::borrow::Cow;
use std::fmt;
use time::OffsetDateTime;

pub const PROTOCOL: &str = "agora/1.0";
pub const TYPES: [&str; 8] = [
    "HELLO", "WELCOME", "STATUS", "REQUEST", "OFFER", "ACCEPT", "RESULT", "ERROR",
];
pub const ERROR_CODES: [i64; 8] = [400, 401, 402, 404, 408, 429, 500, 503];
pub const STATES: [&str; 5] = [
    "PENDING",
    "NEGOTIATING",
    "PROCESSING",
    "COMPLETED",
    "FAILED",
];

/// How the signer took the signature out before canonicalizing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigVariant {
    /// `sender.signature` set to `""`.
    Blank,
    /// `sender.signature` removed.
    Removed,
}

impl fmt::Display for SigVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SigVariant::Blank => "signature blanked to \"\"",
            SigVariant::Removed => "signature member removed",
        })
    }
}

/// An unsigned envelope (signature `""`) as a `serde_json::Value`.
pub fn build(
    ty: &str,
    id: &str,
    timestamp: OffsetDateTime,
    sender_id: &str,
    payload: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "protocol": PROTOCOL,
        "id": id,
        "timestamp": format_timestamp(timestamp),
        "type": ty,
        "sender": {"id": sender_id, "signature": ""},
        "payload": payload,
    })
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error("the envelope has no `sender` object")]
    NoSender,
    #[error("the envelope cannot be canonicalized: {0}")]
    Canon(#[from] CanonError),
}

/// Takes the signature out of a parsed envelope the way `variant` says.
fn strip_signature(tree: &mut Value<'_>, variant: SigVariant) -> Result<(), SignError> {
    let sender = match tree.get_mut("sender") {
        Some(s @ Value::Object(_)) => s,
        _ => return Err(SignError::NoSender),
    };
    match variant {
        SigVariant::Blank => match sender.get_mut("signature") {
            Some(sig) => *sig = Value::String(Cow::Borrowed("")),
            None => {
                if let Value::Object(m) = sender {
                    m.push((Cow::Borrowed("signature"), Value::String(Cow::Borrowed(""))));
                }
            }
        },
        SigVariant::Removed => {
            sender.remove("signature");
        }
    }
    Ok(())
}

/// The bytes a signer signs for this tree (consumed: members are sorted in place).
pub fn signing_bytes(mut tree: Value<'_>, variant: SigVariant) -> Result<Vec<u8>, SignError> {
    signing_bytes_in_place(&mut tree, variant)
}

/// [`signing_bytes`] on a tree that stays the caller's (its signature stripped and
/// its members sorted).
fn signing_bytes_in_place(tree: &mut Value<'_>, variant: SigVariant) -> Result<Vec<u8>, SignError> {
    strip_signature(tree, variant)?;
    let mut out = Vec::with_capacity(512);
    jcs::write(tree, &mut out)?;
    Ok(out)
}

/// Signs a `serde_json` envelope in place and returns the canonical bytes signed.
pub fn sign(
    env: &mut serde_json::Value,
    key: &Keypair,
    variant: SigVariant,
) -> Result<Vec<u8>, SignError> {
    let canonical = signing_bytes(Value::from_serde(env), variant)?;
    let sig = keys::b64url(&key.sign(&canonical).to_bytes());
    match env.get_mut("sender").and_then(|s| s.as_object_mut()) {
        Some(sender) => {
            sender.insert("signature".into(), serde_json::Value::String(sig));
        }
        None => return Err(SignError::NoSender),
    }
    Ok(canonical)
}

/// One verification attempt.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub variant: SigVariant,
    /// The canonical bytes that were checked, or why there are none.
    pub canonical: Result<Vec<u8>, String>,
    pub verified_with: Option<KeyForm>,
}

/// What verification found, with enough detail to explain a failure.
#[derive(Debug, Clone, Default)]
pub struct Verification {
    pub sender_id: Option<String>,
    pub key_forms: Vec<KeyForm>,
    pub signature_flavor: Option<B64Flavor>,
    pub attempts: Vec<Attempt>,
    /// The variant and key form that verified, if any.
    pub verified: Option<(SigVariant, KeyForm)>,
    /// Why verification could not even be tried, or why it failed.
    pub problem: Option<String>,
}

impl Verification {
    pub fn ok(&self) -> bool {
        self.verified.is_some()
    }
}

/// Verifies the signature of an envelope given as JSON text.
pub fn verify_bytes(bytes: &[u8]) -> Verification {
    match json::parse(bytes) {
        Ok(tree) => verify_tree(tree),
        Err(e) => Verification {
            problem: Some(format!("not JSON: {e}")),
            ..Verification::default()
        },
    }
}

/// Verifies the signature of a parsed envelope. The blank variant is tried first;
/// the removed variant only when the blank one does not verify.
pub fn verify_tree(tree: Value<'_>) -> Verification {
    let mut v = Verification::default();
    let sender = match tree.get("sender") {
        Some(s @ Value::Object(_)) => s,
        _ => {
            v.problem = Some("no `sender` object".into());
            return v;
        }
    };
    let Some(id) = sender.get("id").and_then(Value::as_str) else {
        v.problem = Some("`sender.id` is missing or not a string".into());
        return v;
    };
    v.sender_id = Some(id.to_string());
    let sig_text = match sender.get("signature") {
        Some(Value::String(s)) if s.is_empty() => {
            v.problem = Some("`sender.signature` is empty: the message is unsigned".into());
            return v;
        }
        Some(Value::String(s)) => s,
        Some(_) => {
            v.problem = Some("`sender.signature` is not a string".into());
            return v;
        }
        None => {
            v.problem = Some("`sender.signature` is missing: the message is unsigned".into());
            return v;
        }
    };
    let (sig, flavor) = match keys::decode_signature(sig_text) {
        Ok(s) => s,
        Err(e) => {
            v.problem = Some(format!("`sender.signature` is not a signature: {e}"));
            return v;
        }
    };
    v.signature_flavor = Some(flavor);
    let candidates = match keys::candidate_keys(id) {
        Ok(c) => c,
        Err(e) => {
            v.problem = Some(format!("`sender.id` names no Ed25519 key: {e}"));
            return v;
        }
    };
    v.key_forms = candidates.iter().map(|(_, f)| *f).collect();
    // One tree serves both variants: the blank variant blanks the signature, the
    // removed one then takes the member out. Canonicalizing only sorts members in
    // place, so the second variant sees the same content as a fresh parse.
    let mut tree = tree;
    for variant in [SigVariant::Blank, SigVariant::Removed] {
        let canonical = signing_bytes_in_place(&mut tree, variant).map_err(|e| e.to_string());
        let verified_with = canonical.as_ref().ok().and_then(|c| {
            candidates
                .iter()
                .find(|(k, _)| keys::verify(k, c, &sig))
                .map(|(_, f)| *f)
        });
        v.attempts.push(Attempt {
            variant,
            canonical,
            verified_with,
        });
        if let Some(form) = verified_with {
            v.verified = Some((variant, form));
            return v;
        }
    }
    v.problem = Some(match v.attempts.first().map(|a| &a.canonical) {
        Some(Err(e)) => format!("cannot canonicalize: {e}"),
        _ => "the signature does not verify over the canonical bytes (either variant) with the key of `sender.id`".into(),
    });
    v
}

/// Whether `env`'s signature verifies over `signed` (bytes some signer wrote in
/// place of the canonical form) with the key its `sender.id` names.
pub fn verifies_over(env: &serde_json::Value, signed: &[u8]) -> bool {
    let Some(id) = env["sender"]["id"].as_str() else {
        return false;
    };
    let Some(Ok((sig, _))) = env["sender"]["signature"]
        .as_str()
        .map(keys::decode_signature)
    else {
        return false;
    };
    keys::candidate_keys(id)
        .map(|c| c.iter().any(|(k, _)| keys::verify(k, signed, &sig)))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn sign_then_verify_both_variants() {
        let k = Keypair::from_seed(&[3; 32]);
        for variant in [SigVariant::Blank, SigVariant::Removed] {
            let mut env = build(
                "REQUEST",
                "r1",
                datetime!(2024-01-01 0:00 UTC),
                &k.did(),
                serde_json::json!({"resource": "agora:echo:v1", "params": {"é": 1.5}}),
            );
            sign(&mut env, &k, variant).unwrap();
            let bytes = serde_json::to_vec(&env).unwrap();
            let v = verify_bytes(&bytes);
            assert_eq!(v.verified, Some((variant, KeyForm::DidKey)), "{v:?}");
            // Tamper with the payload: no longer verifies.
            env["payload"]["params"]["é"] = serde_json::json!(2.5);
            let v = verify_bytes(&serde_json::to_vec(&env).unwrap());
            assert!(!v.ok());
            assert!(v.problem.is_some());
        }
    }
}
