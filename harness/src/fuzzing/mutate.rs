//! Mutation and respelling, shared by every live fuzzer: a JSON value written in
//! another spelling that keeps its value ([`respell`]), raw byte edits
//! ([`edit_bytes`]) and drawn field values ([`Val`]).

use arbitrary::Arbitrary;
use serde_json::json;

/// Bytes of `v` in a spelling other than its canonical one (see [`WireForm`]).
pub fn respell(v: &serde_json::Value, w: WireForm) -> Vec<u8> {
    fn write(v: &serde_json::Value, w: WireForm, out: &mut String) {
        use serde_json::Value;
        match v {
            Value::Object(o) => {
                out.push('{');
                let mut entries: Vec<(&String, &Value)> = o.iter().collect();
                if matches!(w, WireForm::ReverseKeys) {
                    entries.reverse();
                }
                for (i, (k, val)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if matches!(w, WireForm::Spaces) {
                            " ,\n "
                        } else {
                            ","
                        });
                    }
                    write(&Value::String((*k).clone()), w, out);
                    out.push_str(if matches!(w, WireForm::Spaces) {
                        " : "
                    } else {
                        ":"
                    });
                    write(val, w, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if matches!(w, WireForm::Spaces) {
                            " , "
                        } else {
                            ","
                        });
                    }
                    write(x, w, out);
                }
                out.push(']');
            }
            Value::String(s) if matches!(w, WireForm::Escapes) => {
                out.push('"');
                for c in s.chars() {
                    match c {
                        'a'..='z' | 'A'..='Z' => out.push_str(&format!("\\u{:04x}", c as u32)),
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(v, w, &mut s);
    s.into_bytes()
}

/// A change of spelling that keeps the JSON value.
#[derive(Debug, Clone, Copy, Default, Arbitrary, PartialEq, Eq)]
pub enum WireForm {
    #[default]
    ReverseKeys,
    Spaces,
    Escapes,
}

impl std::fmt::Display for WireForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WireForm::ReverseKeys => "its keys in reverse order",
            WireForm::Spaces => "spaces around its tokens",
            WireForm::Escapes => "its strings in \\u escapes",
        })
    }
}

/// A raw edit of a message's bytes.
#[derive(Debug, Clone, Default, Arbitrary)]
pub struct ByteEdit {
    pub at: u16,
    pub op: u8,
    pub val: u8,
}

/// Applies up to eight byte edits (flip, insert, delete).
pub fn edit_bytes(mut b: Vec<u8>, edits: &[ByteEdit]) -> Vec<u8> {
    for e in edits.iter().take(8) {
        if b.is_empty() {
            break;
        }
        let at = usize::from(e.at) % b.len();
        match e.op % 3 {
            0 => b[at] ^= e.val | 1,
            1 => b.insert(at, e.val),
            _ => {
                b.remove(at);
            }
        }
    }
    b
}

/// A JSON value drawn for a field.
#[derive(Debug, Clone, Default, Arbitrary)]
pub enum Val {
    #[default]
    Null,
    Bool(bool),
    Int(i32),
    Float(i16, u8),
    Str(String),
    Array(Vec<u8>),
    Object,
    Big,
}

impl Val {
    pub fn json(&self) -> serde_json::Value {
        match self {
            Val::Null => serde_json::Value::Null,
            Val::Bool(b) => json!(b),
            Val::Int(i) => json!(i),
            Val::Float(m, e) => json!(f64::from(*m) / f64::from(u32::from(*e) + 1)),
            Val::Str(s) => json!(s.chars().take(64).collect::<String>()),
            Val::Array(v) => json!(v.iter().take(8).collect::<Vec<_>>()),
            Val::Object => json!({"k": 1}),
            Val::Big => json!(1e300),
        }
    }
}
