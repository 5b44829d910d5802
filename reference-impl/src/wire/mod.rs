//! The wire core shared by every suite: JSON reading, RFC 8785 canonical form,
//! Ed25519 keys and encodings, the clock, ids.

pub mod clock;
pub mod jcs;
pub mod json;
pub mod keys;

/// A fresh UUID v4, lower case.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
