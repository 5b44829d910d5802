//! The wire core shared by every suite: JSON reading, RFC 8785 canonical form,
//! Ed25519 keys and encodings, the clock, ids.

pub mod clock;
pub mod http;
pub mod jcs;
pub mod json;
pub mod keys;

/// The read buffer of every WebSocket connection, client or server side. The
/// WebSocket library fills its whole read buffer with zeros before every read, so
/// its default (128 KiB) costs more than the frames themselves; a longer frame still
/// arrives whole, over several reads.
pub const WS_READ_BUFFER_BYTES: usize = 8 * 1024;

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
