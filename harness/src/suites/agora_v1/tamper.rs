//! The reference faults the proxy applies in flight (`proxy --fault`,
//! `interop --fault`): only changes that need no key (a change under the signature
//! would break it, and be refused for that).

use crate::tamper::{edit_json, not_judged, Changes, InFlight, Tamper};
use serde_json::Value;

pub const TAMPERS: &[Tamper] = &[Tamper {
    fault: "unsigned-replies",
    changes: Changes::Reply,
    what: "a reply with an empty signature",
    judged_as: "agora-v1/client-refuses-bad-result-signature",
    apply: unsigned,
    refused: not_judged,
}];

/// An envelope's `sender.signature` emptied (as the reference server's fault and
/// the client case's first spoil have it).
fn unsigned(m: &mut InFlight) -> bool {
    edit_json(&mut m.body, |o| {
        match o.get_mut("sender").and_then(|s| s.get_mut("signature")) {
            Some(sig) if sig != "" => {
                *sig = Value::from("");
                true
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empties_the_signature() {
        let mut m = InFlight {
            method: "POST",
            path: "/".into(),
            request: &[],
            content_type: None,
            body: br#"{"sender":{"id":"a","signature":"xyz"},"type":"RESULT"}"#.to_vec(),
        };
        assert!(unsigned(&mut m));
        assert_eq!(
            m.body,
            br#"{"sender":{"id":"a","signature":""},"type":"RESULT"}"#
        );
        assert!(!unsigned(&mut m));
    }
}
