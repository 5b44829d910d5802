//! Python's `json.dumps(v, sort_keys=True)`: the form some implementations sign
//! instead of RFC 8785. The reference's faults sign it, the harness's scripted
//! counterparties serve replies signed over it, and the harness names it when a
//! signature verifies over it.

use serde_json::Value;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
