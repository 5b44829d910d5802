//! The RFC 8785 (JSON Canonicalization Scheme) writer.
//!
//! Input is the tree of [`super::json`]. The writer sorts object members in place by
//! their UTF-16 code units (no allocation per object), writes numbers in the
//! ECMAScript `Number.prototype.toString` form (via `ryu-js`), and escapes strings
//! as RFC 8785 §3.2.2.2 says. It rejects, with the JSON Pointer of the place:
//! duplicate member names, numbers that overflow a double (and so would be NaN or
//! ±Infinity), and integer literals a double cannot hold exactly (signing
//! `9007199254740993` would sign `9007199254740992`). Lone surrogates never reach it:
//! the reader rejects them.

use super::json::{self, pointer_token, ParseError, Value};
use std::cmp::Ordering;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CanonErrorKind {
    /// The text is not JSON (or holds a lone surrogate).
    Parse(ParseError),
    DuplicateName(String),
    /// The number is outside the range of a double (it would be ±Infinity).
    NonFinite(String),
    /// An integer literal that a double cannot represent exactly.
    InexactInteger(String),
}

/// A canonicalization error with the JSON Pointer of the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonError {
    pub kind: CanonErrorKind,
    pub pointer: String,
}

impl fmt::Display for CanonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "the document root".to_string()
        } else {
            format!("pointer {}", self.pointer)
        };
        match &self.kind {
            CanonErrorKind::Parse(e) => write!(f, "not JSON: {e}"),
            CanonErrorKind::DuplicateName(n) => write!(f, "duplicate member name {n:?} at {at}"),
            CanonErrorKind::NonFinite(n) => {
                write!(f, "number {n} is outside the range of a double at {at}")
            }
            CanonErrorKind::InexactInteger(n) => write!(
                f,
                "integer {n} cannot be represented exactly as a double (I-JSON) at {at}"
            ),
        }
    }
}

impl std::error::Error for CanonError {}

impl From<ParseError> for CanonError {
    fn from(e: ParseError) -> Self {
        CanonError {
            pointer: e.pointer.clone(),
            kind: CanonErrorKind::Parse(e),
        }
    }
}

/// Error on its way up; tokens innermost first.
struct Raw {
    kind: CanonErrorKind,
    path: Vec<String>,
}

impl Raw {
    fn into_error(self) -> CanonError {
        let pointer = json::pointer_from_innermost(&self.path);
        CanonError {
            kind: self.kind,
            pointer,
        }
    }
}

/// Canonicalizes JSON text.
pub fn canonicalize(input: &[u8]) -> Result<Vec<u8>, CanonError> {
    let mut v = json::parse(input)?;
    let mut out = Vec::with_capacity(input.len());
    write(&mut v, &mut out)?;
    Ok(out)
}

/// Canonicalizes a `serde_json::Value`.
pub fn canonicalize_serde(v: &serde_json::Value) -> Result<Vec<u8>, CanonError> {
    let mut tree = Value::from_serde(v);
    let mut out = Vec::with_capacity(256);
    write(&mut tree, &mut out)?;
    Ok(out)
}

/// Appends the canonical form of `v` to `out`, sorting object members in place.
/// On error `out` holds a partial form and should be discarded.
pub fn write(v: &mut Value<'_>, out: &mut Vec<u8>) -> Result<(), CanonError> {
    write_value(v, out).map_err(Raw::into_error)
}

fn write_value(v: &mut Value<'_>, out: &mut Vec<u8>) -> Result<(), Raw> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(lit) => write_number_literal(lit, out).map_err(|kind| Raw {
            kind,
            path: Vec::new(),
        })?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter_mut().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out).map_err(|mut e| {
                    e.path.push(i.to_string());
                    e
                })?;
            }
            out.push(b']');
        }
        Value::Object(members) => {
            members.sort_unstable_by(|a, b| cmp_utf16(&a.0, &b.0));
            if let Some(w) = members.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(Raw {
                    kind: CanonErrorKind::DuplicateName(w[0].0.to_string()),
                    path: vec![pointer_token(&w[0].0)],
                });
            }
            out.push(b'{');
            for (i, (k, val)) in members.iter_mut().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(k, out);
                out.push(b':');
                write_value(val, out).map_err(|mut e| {
                    e.path.push(pointer_token(k));
                    e
                })?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// Compares two strings by their UTF-16 code units, as RFC 8785 §3.2.3 orders
/// member names, without transcoding. UTF-8 byte order equals code point order,
/// which differs from UTF-16 order only between a character in U+E000..U+FFFF
/// (lead byte 0xEE or 0xEF) and one above U+FFFF (lead byte 0xF0..0xF4, a
/// surrogate pair in UTF-16, which sorts first).
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let Some(i) = x.iter().zip(y).position(|(p, q)| p != q) else {
        return x.len().cmp(&y.len());
    };
    // Both strings agree up to i, so the character holding byte i starts at the same
    // place in both.
    let mut start = i;
    while start > 0 && (x[start] & 0xC0) == 0x80 {
        start -= 1;
    }
    let (lx, ly) = (x[start], y[start]);
    let high = |l: u8| l >= 0xF0;
    let upper_bmp = |l: u8| l == 0xEE || l == 0xEF;
    if high(lx) && upper_bmp(ly) {
        Ordering::Less
    } else if upper_bmp(lx) && high(ly) {
        Ordering::Greater
    } else {
        x[i].cmp(&y[i])
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes a JSON string as RFC 8785 §3.2.2.2 says.
pub fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0A => b"\\n",
            0x0C => b"\\f",
            0x0D => b"\\r",
            0x00..=0x1F => {
                out.extend_from_slice(&bytes[run..i]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xF)]);
                run = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(esc);
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// Writes a double in the ECMAScript form RFC 8785 §3.2.2.3 requires; NaN and
/// ±Infinity are rejected.
pub fn write_f64(f: f64, out: &mut Vec<u8>) -> Result<(), CanonErrorKind> {
    if !f.is_finite() {
        return Err(CanonErrorKind::NonFinite(format!("{f}")));
    }
    if f == 0.0 {
        // -0 is written as 0.
        out.push(b'0');
        return Ok(());
    }
    let mut buf = ryu_js::Buffer::new();
    out.extend_from_slice(buf.format_finite(f).as_bytes());
    Ok(())
}

fn write_number_literal(lit: &str, out: &mut Vec<u8>) -> Result<(), CanonErrorKind> {
    let f: f64 = lit
        .parse()
        .map_err(|_| CanonErrorKind::NonFinite(lit.to_string()))?;
    if !f.is_finite() {
        return Err(CanonErrorKind::NonFinite(lit.to_string()));
    }
    if !integer_literal_is_exact(lit, f) {
        return Err(CanonErrorKind::InexactInteger(lit.to_string()));
    }
    write_f64(f, out)
}

/// For an integer literal (no fraction, no exponent): whether `f`, the double it
/// reads as, has exactly its value. Other literals are decimal approximations by
/// nature and always pass.
fn integer_literal_is_exact(lit: &str, f: f64) -> bool {
    if lit.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return true;
    }
    let digits = lit.strip_prefix('-').unwrap_or(lit);
    // Every integer below 10^15 < 2^53 is exact.
    if digits.len() <= 15 {
        return true;
    }
    // `f` is integral here (it rounds a long integer). The literal is fine when the
    // double holds its value exactly, or when the canonical form of the double spells
    // the literal again (23123121212312310: the shortest form of its double, so the
    // signed text is what the sender wrote, and canonical output reads back stable).
    let exact = format!("{:.0}", f.abs());
    if exact == digits {
        return true;
    }
    let mut buf = ryu_js::Buffer::new();
    buf.format_finite(f.abs()) == digits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> Result<String, CanonError> {
        canonicalize(s.as_bytes()).map(|b| String::from_utf8(b).expect("canonical is UTF-8"))
    }

    #[test]
    fn rejects_with_pointer() {
        let e = canon(r#"{"a":{"b":1,"b":2}}"#).unwrap_err();
        assert_eq!(e.pointer, "/a/b");
        assert!(matches!(e.kind, CanonErrorKind::DuplicateName(_)));
        let e = canon(r#"{"n":[0,9007199254740993]}"#).unwrap_err();
        assert_eq!(e.pointer, "/n/1");
        assert!(matches!(e.kind, CanonErrorKind::InexactInteger(_)));
        let e = canon(r#"{"x":1e400}"#).unwrap_err();
        assert_eq!(e.pointer, "/x");
        assert!(matches!(e.kind, CanonErrorKind::NonFinite(_)));
        let e = canon(r#"{"s":"\udc00"}"#).unwrap_err();
        assert_eq!(e.pointer, "/s");
    }

    #[test]
    fn exact_integers_and_fractions_pass() {
        assert_eq!(canon("9007199254740992").unwrap(), "9007199254740992");
        assert_eq!(canon("-9007199254740992").unwrap(), "-9007199254740992");
        assert_eq!(canon("1000000000000000000000").unwrap(), "1e+21");
        assert_eq!(canon("0.1").unwrap(), "0.1");
        assert_eq!(canon("-0").unwrap(), "0");
        assert_eq!(canon("1.0").unwrap(), "1");
        assert_eq!(canon("1e2").unwrap(), "100");
        assert!(canon("12345678901234567890").is_err());
        // The shortest form of its double: the canonical form spells it again.
        assert_eq!(canon("23123121212312310").unwrap(), "23123121212312310");
        assert!(canon("23123121212312311").is_err());
    }

    #[test]
    fn utf16_order_matches_transcoding() {
        let samples = [
            "",
            "a",
            "ab",
            "b",
            "\u{e000}",
            "\u{ffff}",
            "\u{10000}",
            "\u{1f600}",
            "é",
            "\u{7f}",
            "a\u{10000}",
            "a\u{fffd}",
            "\u{20ac}",
            "\u{d7ff}",
        ];
        for a in samples {
            for b in samples {
                assert_eq!(
                    cmp_utf16(a, b),
                    a.encode_utf16().cmp(b.encode_utf16()),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn strings_escape_as_rfc8785() {
        assert_eq!(
            canon("\"\\u0000\\u001f\\b\\t\\n\\f\\r\\\"\\\\/\\u007f\\u2028\"").unwrap(),
            "\"\\u0000\\u001f\\b\\t\\n\\f\\r\\\"\\\\/\u{7f}\u{2028}\""
        );
    }
}
