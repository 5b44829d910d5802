//! Ed25519 keys, their textual forms (did:key, raw base64url, and the lenient raw
//! forms a verifier accepts), signature encodings, and the validation policy.
//!
//! # Validation policy
//! Verification is **strict**: `ed25519_dalek::VerifyingKey::verify_strict`, which
//! rejects non-canonical `S` (S ≥ L), small-order public keys and small-order `R`,
//! and uses the cofactorless equation. This is the policy a conformance tool should
//! hold targets to: a signature the strict check accepts is accepted by every
//! RFC 8032 verifier. The vector tests list each external vector the strict policy
//! treats differently from the vector's own expectation, with the reason.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::fmt;

/// Multicodec prefix of an Ed25519 public key (0xed as an unsigned varint).
pub const ED25519_MULTICODEC: [u8; 2] = [0xed, 0x01];

const URL_ANY: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
const STD_ANY: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// How a signature or raw key was spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum B64Flavor {
    /// Base64Url without padding (the canonical form of agora-v1).
    UrlNoPad,
    UrlPadded,
    /// Standard alphabet (`+`, `/`), padded or not.
    Standard,
}

impl fmt::Display for B64Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            B64Flavor::UrlNoPad => "base64url without padding",
            B64Flavor::UrlPadded => "base64url with padding",
            B64Flavor::Standard => "standard base64",
        })
    }
}

/// Base64Url without padding.
pub fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Standard base64 with padding.
pub fn b64std(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes base64 in any of the flavours, saying which one it was.
pub fn b64_decode_any(s: &str) -> Option<(Vec<u8>, B64Flavor)> {
    if let Ok(b) = URL_ANY.decode(s) {
        let flavor = if s.ends_with('=') {
            B64Flavor::UrlPadded
        } else {
            B64Flavor::UrlNoPad
        };
        return Some((b, flavor));
    }
    STD_ANY.decode(s).ok().map(|b| (b, B64Flavor::Standard))
}

/// Decodes standard base64 only (padding optional).
pub fn b64std_decode(s: &str) -> Option<Vec<u8>> {
    STD_ANY.decode(s).ok()
}

/// Decodes a 64-byte signature from any base64 flavour.
pub fn decode_signature(s: &str) -> Result<(Signature, B64Flavor), KeyError> {
    let (bytes, flavor) = b64_decode_any(s).ok_or(KeyError::NotBase64)?;
    let arr: [u8; 64] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| KeyError::WrongLength(bytes.len()))?;
    Ok((Signature::from_bytes(&arr), flavor))
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not base64 in any flavour")]
    NotBase64,
    #[error("decodes to {0} bytes, expected 32 for a key or 64 for a signature")]
    WrongLength(usize),
    #[error("did:key is not an Ed25519 key (multicodec 0xed01, prefix z6Mk)")]
    NotEd25519DidKey,
    #[error("not a valid Ed25519 public key (not a curve point)")]
    NotAPoint,
    #[error("unrecognized key identifier: expected did:key:z6Mk… or a raw 32-byte key")]
    Unrecognized,
}

/// How a public identifier spelled its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyForm {
    DidKey,
    RawBase64(B64Flavor),
    RawHex,
    RawBase58,
}

impl fmt::Display for KeyForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyForm::DidKey => f.write_str("did:key"),
            KeyForm::RawBase64(fl) => write!(f, "raw key in {fl}"),
            KeyForm::RawHex => f.write_str("raw key in hex"),
            KeyForm::RawBase58 => f.write_str("raw key in base58btc"),
        }
    }
}

/// `did:key:z…` for an Ed25519 public key.
pub fn did_key(vk: &VerifyingKey) -> String {
    let mut bytes = Vec::with_capacity(34);
    bytes.extend_from_slice(&ED25519_MULTICODEC);
    bytes.extend_from_slice(vk.as_bytes());
    format!("did:key:z{}", bs58::encode(bytes).into_string())
}

/// The key of 32 public-key bytes. Decoding (a point decompression) costs about a
/// quarter of a verification, and a verifier meets the same keys again and again,
/// so each thread keeps the keys it decoded last (at most [`KEY_CACHE`]).
pub fn key_from_bytes(bytes: &[u8]) -> Result<VerifyingKey, KeyError> {
    let arr: [u8; 32] = bytes
        .try_into()
        .map_err(|_| KeyError::WrongLength(bytes.len()))?;
    if let Some(k) = DECODED.with(|c| c.borrow().get(&arr).copied()) {
        return Ok(k);
    }
    let k = VerifyingKey::from_bytes(&arr).map_err(|_| KeyError::NotAPoint)?;
    DECODED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= KEY_CACHE {
            c.clear();
        }
        c.insert(arr, k);
    });
    Ok(k)
}

/// Keys a thread keeps decoded.
pub const KEY_CACHE: usize = 256;

thread_local! {
    static DECODED: std::cell::RefCell<std::collections::HashMap<[u8; 32], VerifyingKey>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

thread_local! {
    /// The did:key this thread decoded last, and its key. A verifier meets the same
    /// sender again and again, and decoding a key (a point decompression) costs a
    /// good part of a verification.
    static LAST_DID_KEY: std::cell::RefCell<Option<(String, VerifyingKey)>> =
        const { std::cell::RefCell::new(None) };
}

/// The key of an Ed25519 did:key, decoded once per run of the same id on a thread.
fn did_key_cached(id: &str) -> Result<VerifyingKey, KeyError> {
    let hit = LAST_DID_KEY.with(|c| {
        c.borrow()
            .as_ref()
            .filter(|(last, _)| last == id)
            .map(|(_, k)| *k)
    });
    if let Some(k) = hit {
        return Ok(k);
    }
    let rest = id
        .strip_prefix("did:key:")
        .ok_or(KeyError::NotEd25519DidKey)?;
    let mb = rest.strip_prefix('z').ok_or(KeyError::NotEd25519DidKey)?;
    let bytes = bs58::decode(mb)
        .into_vec()
        .map_err(|_| KeyError::NotEd25519DidKey)?;
    if bytes.len() != 34 || bytes[..2] != ED25519_MULTICODEC {
        return Err(KeyError::NotEd25519DidKey);
    }
    let k = key_from_bytes(&bytes[2..])?;
    LAST_DID_KEY.with(|c| *c.borrow_mut() = Some((id.to_string(), k)));
    Ok(k)
}

/// Every key a public identifier could mean. A raw key string can be read more than
/// one way (43 characters may be base64url or base58); a verifier tries each and
/// reports which one verified.
pub fn candidate_keys(id: &str) -> Result<Vec<(VerifyingKey, KeyForm)>, KeyError> {
    if id.starts_with("did:key:") {
        return Ok(vec![(did_key_cached(id)?, KeyForm::DidKey)]);
    }
    let mut out = Vec::new();
    if let Some((bytes, flavor)) = b64_decode_any(id) {
        if let Ok(k) = key_from_bytes(&bytes) {
            out.push((k, KeyForm::RawBase64(flavor)));
        }
    }
    if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        let bytes: Option<Vec<u8>> = (0..32)
            .map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).ok())
            .collect();
        if let Some(Ok(k)) = bytes.map(|b| key_from_bytes(&b)) {
            out.push((k, KeyForm::RawHex));
        }
    }
    let b58 = id.strip_prefix('z').unwrap_or(id);
    for s in [id, b58] {
        if let Ok(bytes) = bs58::decode(s).into_vec() {
            if let Ok(k) = key_from_bytes(&bytes) {
                if !out.iter().any(|(o, _)| o == &k) {
                    out.push((k, KeyForm::RawBase58));
                }
            }
        }
    }
    if out.is_empty() {
        Err(KeyError::Unrecognized)
    } else {
        Ok(out)
    }
}

/// The project's verification policy (see the module documentation).
pub fn verify(vk: &VerifyingKey, msg: &[u8], sig: &Signature) -> bool {
    vk.verify_strict(msg, sig).is_ok()
}

/// An Ed25519 key pair.
pub struct Keypair {
    sk: SigningKey,
}

impl Keypair {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Keypair {
        let seed: [u8; 32] = rand::random();
        Keypair::from_seed(&seed)
    }

    pub fn from_seed(seed: &[u8; 32]) -> Keypair {
        Keypair {
            sk: SigningKey::from_bytes(seed),
        }
    }

    pub fn seed(&self) -> [u8; 32] {
        self.sk.to_bytes()
    }

    pub fn public(&self) -> VerifyingKey {
        self.sk.verifying_key()
    }

    pub fn did(&self) -> String {
        did_key(&self.public())
    }

    pub fn sign(&self, msg: &[u8]) -> Signature {
        self.sk.sign(msg)
    }

    /// Reads a key file: the 32-byte seed as base64url, standard base64 or hex (64
    /// hex digits), surrounding white space ignored.
    pub fn from_key_file_text(text: &str) -> Result<Keypair, KeyError> {
        let t = text.trim();
        let bytes = if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| {
                    u8::from_str_radix(&t[2 * i..2 * i + 2], 16).map_err(|_| KeyError::NotBase64)
                })
                .collect::<Result<Vec<u8>, _>>()?
        } else {
            b64_decode_any(t).ok_or(KeyError::NotBase64)?.0
        };
        let seed: [u8; 32] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| KeyError::WrongLength(bytes.len()))?;
        Ok(Keypair::from_seed(&seed))
    }
}

impl Clone for Keypair {
    fn clone(&self) -> Self {
        Keypair::from_seed(&self.seed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_did_key_cache_gives_each_id_its_own_key() {
        let a = Keypair::from_seed(&[1; 32]);
        let b = Keypair::from_seed(&[2; 32]);
        for _ in 0..2 {
            for k in [&a, &b, &a] {
                let got = candidate_keys(&k.did()).expect("a did:key");
                assert_eq!(got, vec![(k.public(), KeyForm::DidKey)]);
            }
        }
        // A bad id after a good one is still refused.
        let mut bad = a.did();
        bad.pop();
        assert!(candidate_keys(&a.did()).is_ok());
        assert!(candidate_keys(&bad).is_err());
    }

    #[test]
    fn did_key_round_trip() {
        let k = Keypair::from_seed(&[7; 32]);
        let did = k.did();
        assert!(did.starts_with("did:key:z6Mk"), "{did}");
        let c = candidate_keys(&did).unwrap();
        assert_eq!(c, vec![(k.public(), KeyForm::DidKey)]);
        let raw = b64url(k.public().as_bytes());
        assert!(candidate_keys(&raw)
            .unwrap()
            .contains(&(k.public(), KeyForm::RawBase64(B64Flavor::UrlNoPad))));
        assert!(
            candidate_keys("did:key:zDnaeUm3QkcyZWZTPttxB711jgqRDhkwvhF485SFw1bDZ9AQw").is_err()
        );
    }

    #[test]
    fn signature_flavours() {
        let k = Keypair::from_seed(&[9; 32]);
        let sig = k.sign(b"m").to_bytes();
        for (s, fl) in [
            (b64url(&sig), B64Flavor::UrlNoPad),
            (b64url(&sig) + "==", B64Flavor::UrlPadded),
            (b64std(&sig), B64Flavor::Standard),
        ] {
            assert_eq!(decode_signature(&s).unwrap().1, fl, "{s}");
        }
    }
}
