//! Protocol documents (agora-exchange.txt §8): YAML metadata, a line `---`, free text;
//! identified by the SHA1 of the whole text.

use sha1::{Digest, Sha1};
use yaml_rust2::{Yaml, YamlLoader};

/// Lower-case hex SHA1 of `bytes`.
pub fn sha1_hex(bytes: &[u8]) -> String {
    let digest = Sha1::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `s` is 40 hex digits (either case).
pub fn is_sha1_hex(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Standard base64 (padded) of the SHA1 of `bytes`: how some implementations name a
/// protocol instead of the 40 hex digits of §8.2.
pub fn sha1_base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(Sha1::digest(bytes))
}

/// How a protocol identifier spells the SHA1 of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashForm {
    /// 40 hex digits (either case): the form of agora-exchange.txt §8.2.
    Hex,
    /// Standard base64, with or without padding.
    Base64,
    /// base64url, with or without padding.
    Base64Url,
}

impl std::fmt::Display for HashForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HashForm::Hex => "40 hex digits",
            HashForm::Base64 => "standard base64",
            HashForm::Base64Url => "base64url",
        })
    }
}

/// The form in which `key` spells the SHA1 of `text`, if it spells it at all.
pub fn hash_form(key: &str, text: &[u8]) -> Option<HashForm> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use base64::Engine;
    let digest = Sha1::digest(text);
    if is_sha1_hex(key) && sha1_hex(text).eq_ignore_ascii_case(key) {
        return Some(HashForm::Hex);
    }
    if [STANDARD, STANDARD_NO_PAD]
        .iter()
        .any(|e| e.encode(digest) == key)
    {
        return Some(HashForm::Base64);
    }
    if [URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .any(|e| e.encode(digest) == key)
    {
        return Some(HashForm::Base64Url);
    }
    None
}

/// A protocol document and its identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolDocument {
    pub text: String,
    pub hash: String,
}

impl ProtocolDocument {
    pub fn new(text: impl Into<String>) -> ProtocolDocument {
        let text = text.into();
        let hash = sha1_hex(text.as_bytes());
        ProtocolDocument { text, hash }
    }
}

/// The agentconform echo protocol, the reference server's fixture document.
pub const ECHO_DOCUMENT: &str = include_str!("../../../vectors/agora-exchange/documents/echo.txt");

/// A second protocol the reference serves with `serve --protocol sum` in place of
/// the echo protocol, as a server does whose protocol is its own: its body is no
/// `{text}`, and its one example is written in the document.
pub const SUM_DOCUMENT: &str = "name: agentconform sum\ndescription: Adds numbers. A body that is not an object with an array of numbers \"numbers\" is a protocol-level error, reported as body.error.\nmultiround: false\n---\nRequests carry a JSON object body with an array of numbers, for example\n{\"numbers\": [1, 2.5, 3]}\nwhich is answered with status \"success\" and body {\"sum\": 6.5}.\nAny other body is a protocol-level error: the reply has status \"success\" and body\n{\"error\": \"<description>\"}.\n";

/// The body of the answer to `body` under the protocol `doc` (the reference's
/// protocols: [`SUM_DOCUMENT`]; any other document is answered as the echo
/// protocol, [`ECHO_DOCUMENT`]), or why `body` breaks it (a protocol-level error).
pub fn answer(
    doc: &ProtocolDocument,
    body: &serde_json::Value,
) -> Result<serde_json::Value, &'static str> {
    use serde_json::{json, Value};
    if doc.text == SUM_DOCUMENT {
        let numbers = body.get("numbers").and_then(Value::as_array);
        let sum = numbers.and_then(|n| n.iter().map(Value::as_f64).sum::<Option<f64>>());
        return sum
            .map(|s| json!({"sum": s}))
            .ok_or("the body must be an object with an array of numbers \"numbers\"");
    }
    match body.get("text").and_then(Value::as_str) {
        Some(text) => Ok(json!({"text": text})),
        None => Err("the body must be an object with a string field \"text\""),
    }
}

/// The metadata a document must carry (§8.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub name: String,
    pub description: String,
    pub multiround: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    #[error("no line consisting of `---` separates the metadata from the specification")]
    NoSeparator,
    #[error("the metadata is not YAML: {0}")]
    NotYaml(String),
    #[error("the metadata is not a YAML mapping")]
    NotAMapping,
    #[error("metadata key `{0}` is missing or not a {1}")]
    BadKey(&'static str, &'static str),
}

/// Splits a document at its first line equal to `---` (a trailing `\r` allowed).
pub fn split(text: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n').trim_end_matches('\r');
        if bare == "---" {
            return Some((&text[..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// Reads the metadata block of a document and checks its three keys.
pub fn metadata(text: &str) -> Result<Metadata, DocumentError> {
    let (meta, _) = split(text).ok_or(DocumentError::NoSeparator)?;
    let docs =
        YamlLoader::load_from_str(meta).map_err(|e| DocumentError::NotYaml(e.to_string()))?;
    let Some(doc) = docs.first() else {
        return Err(DocumentError::NotAMapping);
    };
    let Yaml::Hash(map) = doc else {
        return Err(DocumentError::NotAMapping);
    };
    let get = |k: &str| map.get(&Yaml::String(k.to_string()));
    let name = match get("name") {
        Some(Yaml::String(s)) => s.clone(),
        _ => return Err(DocumentError::BadKey("name", "string")),
    };
    let description = match get("description") {
        Some(Yaml::String(s)) => s.clone(),
        _ => return Err(DocumentError::BadKey("description", "string")),
    };
    let multiround = match get("multiround") {
        Some(Yaml::Boolean(b)) => *b,
        _ => return Err(DocumentError::BadKey("multiround", "boolean")),
    };
    Ok(Metadata {
        name,
        description,
        multiround,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_document_is_well_formed() {
        let d = ProtocolDocument::new(ECHO_DOCUMENT);
        assert!(is_sha1_hex(&d.hash));
        let m = metadata(ECHO_DOCUMENT).unwrap();
        assert!(m.multiround);
        assert_eq!(m.name, "agentconform echo");
    }

    #[test]
    fn the_sum_protocol_answers_its_example() {
        use serde_json::json;
        let d = ProtocolDocument::new(SUM_DOCUMENT);
        assert!(metadata(SUM_DOCUMENT).is_ok());
        assert_eq!(
            answer(&d, &json!({"numbers": [1, 2.5, 3]})),
            Ok(json!({"sum": 6.5}))
        );
        assert!(answer(&d, &json!({"numbers": "x"})).is_err());
        let echo = ProtocolDocument::new(ECHO_DOCUMENT);
        assert_eq!(
            answer(&echo, &json!({"text": "a"})),
            Ok(json!({"text": "a"}))
        );
        assert!(answer(&echo, &json!({"txt": 1})).is_err());
    }

    #[test]
    fn separator_and_keys() {
        assert_eq!(metadata("name: x\n"), Err(DocumentError::NoSeparator));
        assert_eq!(
            metadata("name: x\ndescription: y\nmultiround: maybe\n---\n"),
            Err(DocumentError::BadKey("multiround", "boolean"))
        );
        assert!(metadata("name: x\r\ndescription: y\r\nmultiround: false\r\n---\r\ntext").is_ok());
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }

    #[test]
    fn hash_forms() {
        assert_eq!(sha1_base64(b"abc"), "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=");
        let f = |k: &str| hash_form(k, b"abc");
        assert_eq!(
            f("A9993E364706816ABA3E25717850C26C9CD0D89D"),
            Some(HashForm::Hex)
        );
        assert_eq!(f("qZk+NkcGgWq6PiVxeFDCbJzQ2J0="), Some(HashForm::Base64));
        assert_eq!(f("qZk+NkcGgWq6PiVxeFDCbJzQ2J0"), Some(HashForm::Base64));
        assert_eq!(f("qZk-NkcGgWq6PiVxeFDCbJzQ2J0"), Some(HashForm::Base64Url));
        assert_eq!(f("qZk+NkcGgWq6PiVxeFDCbJzQ2J1="), None);
    }
}
