//! The wire core shared by every suite: JSON reading, RFC 8785 canonical form,
//! Ed25519 keys and encodings, the clock, ids.

pub mod clock;
pub mod http;
pub mod jcs;
pub mod json;
pub mod keys;
pub mod pyjson;

/// The read buffer of every WebSocket connection, client or server side. The
/// WebSocket library fills its whole read buffer with zeros before every read, so
/// its default (128 KiB) costs more than the frames themselves; a longer frame still
/// arrives whole, over several reads.
pub const WS_READ_BUFFER_BYTES: usize = 8 * 1024;

/// A WebSocket client's configuration: messages and frames of at most `max_bytes`,
/// a read buffer of [`WS_READ_BUFFER_BYTES`].
pub fn ws_client_config(
    max_bytes: usize,
) -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(max_bytes))
        .max_frame_size(Some(max_bytes))
        .read_buffer_size(WS_READ_BUFFER_BYTES)
}

/// Whether `s` has the RFC 4122 syntax: 8-4-4-4-12 hex digits (any version).
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A fresh UUID v4, lower case.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The compact JSON text of `v`, written straight into a byte buffer. It is what
/// `v.to_string()` gives, without the `Display` path, which hands every run of text
/// between two escapes to a `fmt::Formatter` (a few percent of the agora-spaces
/// fuzzer's CPU on delta streams).
pub fn json_text(v: &serde_json::Value) -> String {
    // Writing a `Value` cannot fail: its keys are strings and its numbers finite.
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod json_text_tests {
    #[test]
    fn same_text_as_display() {
        let v = serde_json::json!({"t": "agents · 日本語 · 🙂 · \"q\" \\ \t\n \u{1}", "n": [1, 2.5, -0.0, null, true]});
        assert_eq!(super::json_text(&v), v.to_string());
    }
}
