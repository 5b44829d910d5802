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
    match already_canonical(lit) {
        Some(text) => {
            out.extend_from_slice(text.as_bytes());
            Ok(())
        }
        None => write_number_literal_by_double(lit, out),
    }
}

/// The canonical form of a number literal that needs no reading as a double: an
/// integer of at most 15 digits, or a decimal fraction of at most 15 significant
/// digits between 10^-6 and 10^15 with no trailing zero and no exponent (`-0`
/// becomes `0`). Such a literal is its own ECMAScript form: a double holds every
/// decimal of at most 15 significant digits apart from every other (DBL_DIG), so no
/// shorter digit string reads as the same double, and in this range ECMAScript
/// writes the digits without an exponent. Anything else is `None`.
fn already_canonical(lit: &str) -> Option<&str> {
    let body = lit.strip_prefix('-').unwrap_or(lit);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || (int.len() > 1 && int.starts_with('0')) {
        return None;
    }
    let Some(frac) = frac else {
        return match int {
            "0" => Some("0"),
            _ if int.len() <= 15 => Some(lit),
            _ => None,
        };
    };
    if !digits(frac) || frac.ends_with('0') {
        return None;
    }
    let significant = if int == "0" {
        let leading = frac.len() - frac.trim_start_matches('0').len();
        if leading > 5 {
            // Below 10^-6 ECMAScript writes an exponent.
            return None;
        }
        frac.len() - leading
    } else {
        int.len() + frac.len()
    };
    (significant <= 15).then_some(lit)
}

/// A number literal read as a double and written in ECMAScript form.
fn write_number_literal_by_double(lit: &str, out: &mut Vec<u8>) -> Result<(), CanonErrorKind> {
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

    /// Literals that are their own canonical form are written as they are, and
    /// give what reading them as a double gives, over many shapes: integers of 1
    /// to 18 digits, fractions with 0 to 8 leading zeros, trailing zeros, exponents,
    /// negative zero.
    #[test]
    fn literals_written_as_they_are_equal_the_double_route() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        fn digits(next: &mut dyn FnMut() -> u64, n: usize, first_nonzero: bool) -> String {
            (0..n)
                .map(|i| {
                    let d = next() % 10;
                    let d = if i == 0 && first_nonzero {
                        1 + d % 9
                    } else {
                        d
                    };
                    char::from(b'0' + d as u8)
                })
                .collect()
        }
        let mut lits: Vec<String> = [
            "0",
            "-0",
            "0.5",
            "-0.5",
            "0.000001",
            "0.0000001",
            "0.0000012",
            "1.5",
            "1.50",
            "-0.0",
            "100",
            "1e2",
            "1E-7",
            "123456789012345",
            "1234567890123456",
            "999999999999999",
            "999999999999999.5",
            "0.100000000000001",
            "12345678.9012345",
            "9007199254740992",
            "0.30000000000000004",
            "5e-324",
            "1.7976931348623157e308",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..200_000 {
            let int_len = 1 + (next() % 18) as usize;
            let int = if next() % 4 == 0 {
                "0".to_string()
            } else {
                digits(&mut next, int_len, true)
            };
            let mut lit = if next() % 3 == 0 {
                format!("-{int}")
            } else {
                int
            };
            if next() % 2 == 0 {
                let zeros = "0".repeat((next() % 9) as usize);
                let frac_len = 1 + (next() % 16) as usize;
                lit = format!("{lit}.{zeros}{}", digits(&mut next, frac_len, false));
            }
            if next() % 10 == 0 {
                lit = format!("{lit}e{}", next() % 40);
            }
            lits.push(lit);
        }
        let mut fast = 0;
        for lit in &lits {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let ra = write_number_literal(lit, &mut a);
            let rb = write_number_literal_by_double(lit, &mut b);
            assert_eq!(ra.is_ok(), rb.is_ok(), "{lit}");
            assert_eq!(
                a,
                b,
                "{lit}: {} vs {}",
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b)
            );
            fast += usize::from(already_canonical(lit).is_some());
        }
        // The fast route is taken often enough for the comparison to mean something.
        assert!(fast > lits.len() / 4, "{fast} of {}", lits.len());
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
