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

/// What Python's `json.dumps(v, sort_keys=True)` writes: keys sorted by code point,
/// non-ASCII and control characters escaped as `\uXXXX`, floats as Python's `repr`,
/// and the separators `", "` and `": "` (or `","` and `":"` when `compact`). Some
/// implementations sign this instead of the RFC 8785 form; the reference's
/// `python-json-signing` fault does, and the harness names it when a signature
/// verifies over it.
pub fn python_sorted_json(v: &Value, compact: bool) -> String {
    let mut out = String::new();
    let sep = if compact { (",", ":") } else { (", ", ": ") };
    python_write(v, sep, &mut out);
    out
}

fn python_write(v: &Value, sep: (&str, &str), out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&python_float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => python_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep.0);
                }
                python_write(x, sep, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, x)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(sep.0);
                }
                python_string(k, out);
                out.push_str(sep.1);
                python_write(x, sep, out);
            }
            out.push('}');
        }
    }
}

fn python_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr` of a float: the shortest digits, positional for exponents from
/// -4 to 15, otherwise `d.ddde+XX`.
fn python_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let n = digits.len() as i32;
    let body = if (-4..16).contains(&exp) {
        if exp < 0 {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        } else if n <= exp + 1 {
            format!("{digits}{}.0", "0".repeat((exp + 1 - n) as usize))
        } else {
            let (a, b) = digits.split_at((exp + 1) as usize);
            format!("{a}.{b}")
        }
    } else {
        let (a, b) = digits.split_at(1);
        let frac = if b.is_empty() {
            String::new()
        } else {
            format!(".{b}")
        };
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{a}{frac}e{sign}{:02}", exp.abs())
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

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

    #[test]
    fn python_json_is_what_json_dumps_writes() {
        let v = json!({"b": [1, 2.5, 1e21, 1e-7, 0.1, 100.0, 1e16, 12345.678], "a": "caf\u{e9} \"q\" \u{1F642}\n\u{7f}"});
        assert_eq!(
            python_sorted_json(&v, false),
            r#"{"a": "caf\u00e9 \"q\" \ud83d\ude42\n\u007f", "b": [1, 2.5, 1e+21, 1e-07, 0.1, 100.0, 1e+16, 12345.678]}"#
        );
        assert_eq!(
            python_sorted_json(&json!({"x": {"z": 1, "y": null}}), true),
            r#"{"x":{"y":null,"z":1}}"#
        );
    }
}
