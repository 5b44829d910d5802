//! A strict RFC 8259 JSON reader that keeps what RFC 8785 needs.
//!
//! The reader borrows from its input wherever a string needs no unescaping, keeps
//! object members in document order (duplicates included, so that the canonical
//! writer can reject them), and keeps every number as the literal the sender wrote
//! (so that the canonical writer can tell `9007199254740993` from the double it
//! would round to). It accepts every `y_` file of JSONTestSuite and rejects every
//! `n_` file. Its choices on the `i_` files are:
//!
//! - invalid UTF-8 anywhere, a byte order mark, UTF-16 input: rejected;
//! - a lone or inverted surrogate escape (`"\ud800"`): rejected, with the pointer;
//! - numbers too large or too small for a double: read (the literal is kept); the
//!   canonical writer rejects the ones that overflow;
//! - nesting deeper than [`MAX_DEPTH`]: rejected.
//!
//! Errors carry the byte offset, line and column, and the JSON Pointer of the value
//! being read.

use std::borrow::Cow;
use std::fmt;

/// Deepest nesting of arrays and objects the reader accepts.
pub const MAX_DEPTH: usize = 128;

/// A JSON value that borrows from the text it was read from.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    /// The number literal exactly as written (RFC 8259 grammar).
    Number(Cow<'a, str>),
    String(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    /// Members in document order; duplicate names are kept.
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// The first member called `key`, if this is an object.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The first member called `key`, mutable, if this is an object.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value<'a>> {
        match self {
            Value::Object(members) => members.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Removes every member called `key`; returns whether one was there.
    pub fn remove(&mut self, key: &str) -> bool {
        match self {
            Value::Object(members) => {
                let before = members.len();
                members.retain(|(k, _)| k != key);
                members.len() != before
            }
            _ => false,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Copies the value into a `serde_json::Value` (the last of duplicate names wins
    /// there, as in serde_json; use the canonical writer to detect duplicates).
    pub fn to_serde(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => serde_json::from_str::<serde_json::Number>(n)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::Array(items) => items.iter().map(Value::to_serde).collect(),
            Value::Object(members) => serde_json::Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_serde()))
                    .collect(),
            ),
        }
    }

    /// Borrows a `serde_json::Value` as a tree the canonical writer can take.
    pub fn from_serde(v: &'a serde_json::Value) -> Value<'a> {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(Cow::Owned(n.to_string())),
            serde_json::Value::String(s) => Value::String(Cow::Borrowed(s)),
            serde_json::Value::Array(items) => {
                Value::Array(items.iter().map(Value::from_serde).collect())
            }
            serde_json::Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Value::from_serde(v)))
                    .collect(),
            ),
        }
    }
}

/// What went wrong while reading JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseErrorKind {
    InvalidUtf8,
    ByteOrderMark,
    UnexpectedEnd,
    UnexpectedByte(u8),
    TrailingCharacters,
    ControlCharacterInString,
    InvalidEscape,
    LoneSurrogate,
    InvalidNumber,
    TooDeep,
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::InvalidUtf8 => write!(f, "invalid UTF-8"),
            ParseErrorKind::ByteOrderMark => write!(f, "byte order mark before the JSON text"),
            ParseErrorKind::UnexpectedEnd => write!(f, "unexpected end of input"),
            ParseErrorKind::UnexpectedByte(b) if b.is_ascii_graphic() => {
                write!(f, "unexpected character '{}'", *b as char)
            }
            ParseErrorKind::UnexpectedByte(b) => write!(f, "unexpected byte 0x{b:02x}"),
            ParseErrorKind::TrailingCharacters => write!(f, "characters after the JSON value"),
            ParseErrorKind::ControlCharacterInString => {
                write!(f, "unescaped control character in a string")
            }
            ParseErrorKind::InvalidEscape => write!(f, "invalid escape sequence"),
            ParseErrorKind::LoneSurrogate => {
                write!(f, "lone surrogate escape (not a Unicode scalar value)")
            }
            ParseErrorKind::InvalidNumber => write!(f, "invalid number"),
            ParseErrorKind::TooDeep => write!(f, "nesting deeper than {MAX_DEPTH}"),
        }
    }
}

/// A reading error with its place: byte offset, line and column (1-based), and the
/// JSON Pointer of the value being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    pub offset: usize,
    pub line: usize,
    pub column: usize,
    pub pointer: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} column {} (byte {}",
            self.kind, self.line, self.column, self.offset
        )?;
        if !self.pointer.is_empty() {
            write!(f, ", pointer {}", self.pointer)?;
        }
        write!(f, ")")
    }
}

impl std::error::Error for ParseError {}

/// Escapes one reference token of a JSON Pointer (RFC 6901).
pub fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A JSON Pointer from escaped reference tokens collected innermost first, as an
/// error gathers them on its way up.
pub fn pointer_from_innermost(tokens: &[String]) -> String {
    tokens.iter().rev().fold(String::new(), |mut acc, t| {
        acc.push('/');
        acc.push_str(t);
        acc
    })
}

/// An error on its way up: the pointer tokens are collected innermost first.
struct Raw {
    kind: ParseErrorKind,
    offset: usize,
    path: Vec<String>,
}

impl Raw {
    fn new(kind: ParseErrorKind, offset: usize) -> Raw {
        Raw {
            kind,
            offset,
            path: Vec::new(),
        }
    }
}

/// Reads one JSON text.
pub fn parse(input: &[u8]) -> Result<Value<'_>, ParseError> {
    let text = match std::str::from_utf8(input) {
        Ok(t) => t,
        Err(e) => {
            return Err(finish(
                input,
                Raw::new(ParseErrorKind::InvalidUtf8, e.valid_up_to()),
            ))
        }
    };
    if text.starts_with('\u{feff}') {
        return Err(finish(input, Raw::new(ParseErrorKind::ByteOrderMark, 0)));
    }
    let mut p = Parser { text, pos: 0 };
    let result = p.skip_ws().and_then(|_| p.value(0)).and_then(|v| {
        p.skip_ws()?;
        if p.pos == p.text.len() {
            Ok(v)
        } else {
            Err(Raw::new(ParseErrorKind::TrailingCharacters, p.pos))
        }
    });
    result.map_err(|raw| finish(input, raw))
}

/// Reads one JSON text given as a string.
pub fn parse_str(input: &str) -> Result<Value<'_>, ParseError> {
    parse(input.as_bytes())
}

fn finish(input: &[u8], raw: Raw) -> ParseError {
    let offset = raw.offset.min(input.len());
    let before = &input[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    // Columns count characters, not bytes; invalid UTF-8 counts a byte each.
    let column = String::from_utf8_lossy(&input[line_start..offset])
        .chars()
        .count()
        + 1;
    let pointer = pointer_from_innermost(&raw.path);
    ParseError {
        kind: raw.kind,
        offset,
        line,
        column,
        pointer,
    }
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) -> Result<(), Raw> {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
        Ok(())
    }

    fn unexpected(&self) -> Raw {
        match self.peek() {
            Some(b) => Raw::new(ParseErrorKind::UnexpectedByte(b), self.pos),
            None => Raw::new(ParseErrorKind::UnexpectedEnd, self.pos),
        }
    }

    fn expect_literal(&mut self, lit: &str, v: Value<'a>) -> Result<Value<'a>, Raw> {
        let end = self.pos + lit.len();
        if self.bytes().get(self.pos..end) == Some(lit.as_bytes()) {
            self.pos = end;
            Ok(v)
        } else {
            // Point at the first byte that differs.
            let mut i = self.pos;
            for &c in lit.as_bytes() {
                if self.bytes().get(i) != Some(&c) {
                    break;
                }
                i += 1;
            }
            self.pos = i;
            Err(self.unexpected())
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, Raw> {
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.expect_literal("true", Value::Bool(true)),
            Some(b'f') => self.expect_literal("false", Value::Bool(false)),
            Some(b'n') => self.expect_literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.unexpected()),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value<'a>, Raw> {
        if depth > MAX_DEPTH {
            return Err(Raw::new(ParseErrorKind::TooDeep, self.pos));
        }
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_ws()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws()?;
            match self.value(depth) {
                Ok(v) => items.push(v),
                Err(mut e) => {
                    e.path.push(items.len().to_string());
                    return Err(e);
                }
            }
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => {
                    let mut e = self.unexpected();
                    e.path.push(items.len().saturating_sub(1).to_string());
                    return Err(e);
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value<'a>, Raw> {
        if depth > MAX_DEPTH {
            return Err(Raw::new(ParseErrorKind::TooDeep, self.pos));
        }
        self.pos += 1; // '{'
        let mut members: Vec<(Cow<'a, str>, Value<'a>)> = Vec::new();
        self.skip_ws()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws()?;
            if self.peek() != Some(b'"') {
                return Err(self.unexpected());
            }
            let key = self.string()?;
            self.skip_ws()?;
            if self.peek() != Some(b':') {
                let mut e = self.unexpected();
                e.path.push(pointer_token(&key));
                return Err(e);
            }
            self.pos += 1;
            self.skip_ws()?;
            match self.value(depth) {
                Ok(v) => members.push((key, v)),
                Err(mut e) => {
                    e.path.push(pointer_token(&key));
                    return Err(e);
                }
            }
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn number(&mut self) -> Result<Value<'a>, Raw> {
        let start = self.pos;
        let b = self.bytes();
        let mut i = self.pos;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = b.get(i) {
                    i += 1;
                }
            }
            _ => return Err(Raw::new(ParseErrorKind::InvalidNumber, i)),
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !matches!(b.get(i), Some(b'0'..=b'9')) {
                return Err(Raw::new(ParseErrorKind::InvalidNumber, i));
            }
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if !matches!(b.get(i), Some(b'0'..=b'9')) {
                return Err(Raw::new(ParseErrorKind::InvalidNumber, i));
            }
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
        }
        self.pos = i;
        Ok(Value::Number(Cow::Borrowed(&self.text[start..i])))
    }

    fn hex4(&self, at: usize) -> Result<u16, Raw> {
        let digits = self
            .bytes()
            .get(at..at + 4)
            .ok_or_else(|| Raw::new(ParseErrorKind::InvalidEscape, at))?;
        let mut v: u16 = 0;
        for (k, &d) in digits.iter().enumerate() {
            let n = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(Raw::new(ParseErrorKind::InvalidEscape, at + k)),
            };
            v = (v << 4) | u16::from(n);
        }
        Ok(v)
    }

    /// Reads a string starting at the opening quote.
    fn string(&mut self) -> Result<Cow<'a, str>, Raw> {
        self.pos += 1; // '"'
        let start = self.pos;
        let b = self.bytes();
        // Fast path: no escapes.
        let mut i = start;
        loop {
            match b.get(i) {
                None => return Err(Raw::new(ParseErrorKind::UnexpectedEnd, i)),
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(Cow::Borrowed(&self.text[start..i]));
                }
                Some(b'\\') => break,
                Some(&c) if c < 0x20 => {
                    return Err(Raw::new(ParseErrorKind::ControlCharacterInString, i))
                }
                Some(_) => i += 1,
            }
        }
        let mut out = String::with_capacity(i - start + 16);
        out.push_str(&self.text[start..i]);
        let mut run = i; // start of the current unescaped run
        loop {
            match b.get(i) {
                None => return Err(Raw::new(ParseErrorKind::UnexpectedEnd, i)),
                Some(b'"') => {
                    out.push_str(&self.text[run..i]);
                    self.pos = i + 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => {
                    out.push_str(&self.text[run..i]);
                    let esc_at = i;
                    let c = match b.get(i + 1) {
                        None => return Err(Raw::new(ParseErrorKind::UnexpectedEnd, i + 1)),
                        Some(&c) => c,
                    };
                    i += 2;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let u = self.hex4(i)?;
                            i += 4;
                            let scalar = match u {
                                0xD800..=0xDBFF => {
                                    if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') {
                                        let low = self.hex4(i + 2)?;
                                        if (0xDC00..=0xDFFF).contains(&low) {
                                            i += 6;
                                            0x10000
                                                + ((u32::from(u) - 0xD800) << 10)
                                                + (u32::from(low) - 0xDC00)
                                        } else {
                                            return Err(Raw::new(
                                                ParseErrorKind::LoneSurrogate,
                                                esc_at,
                                            ));
                                        }
                                    } else {
                                        return Err(Raw::new(
                                            ParseErrorKind::LoneSurrogate,
                                            esc_at,
                                        ));
                                    }
                                }
                                0xDC00..=0xDFFF => {
                                    return Err(Raw::new(ParseErrorKind::LoneSurrogate, esc_at))
                                }
                                _ => u32::from(u),
                            };
                            match char::from_u32(scalar) {
                                Some(ch) => out.push(ch),
                                None => {
                                    return Err(Raw::new(ParseErrorKind::LoneSurrogate, esc_at))
                                }
                            }
                        }
                        _ => return Err(Raw::new(ParseErrorKind::InvalidEscape, esc_at)),
                    }
                    run = i;
                }
                Some(&c) if c < 0x20 => {
                    return Err(Raw::new(ParseErrorKind::ControlCharacterInString, i))
                }
                Some(_) => i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_pointer_and_place() {
        let e = parse(br#"{"a":[1,{"b":"\ud800"}]}"#).unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::LoneSurrogate);
        assert_eq!(e.pointer, "/a/1/b");
        assert_eq!((e.line, e.column), (1, 15));
        let e = parse(b"{\n \"x\": tru }").unwrap_err();
        assert_eq!(e.pointer, "/x");
        assert_eq!(e.line, 2);
    }

    #[test]
    fn borrows_plain_strings_and_keeps_duplicates() {
        let v = parse(br#"{"a":"x","a":"y\n"}"#).unwrap();
        let Value::Object(m) = v else { panic!() };
        assert_eq!(m.len(), 2);
        assert!(matches!(m[0].1, Value::String(Cow::Borrowed("x"))));
        assert!(matches!(m[1].1, Value::String(Cow::Owned(_))));
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(
            parse(deep.as_bytes()).unwrap_err().kind,
            ParseErrorKind::TooDeep
        );
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(ok.as_bytes()).is_ok());
    }
}
