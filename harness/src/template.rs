//! Templates of the target profile: JSON text with `{name}` placeholders. Inside a
//! JSON string a placeholder becomes the value's text, elsewhere its JSON.

use serde_json::Value;

/// Fills the placeholders `{name}` of a template. In a JSON template (`json_text`)
/// a placeholder inside a string literal becomes the value's text, JSON-escaped;
/// elsewhere it becomes the value's JSON. In a path it becomes the value's text.
/// A `{word}` that names no value is an error.
pub fn render(template: &str, vars: &[(&str, Value)], json_text: bool) -> Result<String, String> {
    let mut out = String::with_capacity(template.len() + 32);
    let mut in_string = false;
    let mut chars = template.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if json_text && in_string => {
                out.push(c);
                if let Some((_, n)) = chars.next() {
                    out.push(n);
                }
            }
            '"' if json_text => {
                in_string = !in_string;
                out.push(c);
            }
            '{' => {
                let rest = &template[i + 1..];
                let name_len = rest
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    .count();
                let name = &rest[..name_len];
                let closed = rest.as_bytes().get(name_len) == Some(&b'}');
                let word = closed && !name.is_empty() && name.as_bytes()[0].is_ascii_alphabetic();
                if !word {
                    out.push(c);
                    continue;
                }
                let Some((_, v)) = vars.iter().find(|(k, _)| *k == name) else {
                    let known: Vec<String> = vars.iter().map(|(k, _)| format!("{{{k}}}")).collect();
                    return Err(format!(
                        "unknown placeholder {{{name}}}; known here: {}",
                        known.join(", ")
                    ));
                };
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if json_text && in_string {
                    let quoted = serde_json::to_string(&text).unwrap_or_default();
                    out.push_str(&quoted[1..quoted.len().saturating_sub(1)]);
                } else if json_text {
                    out.push_str(&v.to_string());
                } else {
                    out.push_str(&text);
                }
                for _ in 0..=name_len {
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// A JSON template filled in and parsed.
pub fn render_json(template: &str, vars: &[(&str, Value)]) -> Result<Value, String> {
    let text = render(template, vars, true)?;
    serde_json::from_str(&text).map_err(|e| format!("{text:?} is not JSON once filled in: {e}"))
}
