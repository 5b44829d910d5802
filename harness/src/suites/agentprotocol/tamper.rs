//! The reference faults the proxy applies in flight (`proxy --fault`,
//! `interop --fault`): only changes that need no key (a change under the signature
//! would break it, and be refused for that).

use crate::tamper::{not_judged, without_signature, Changes, InFlight, Tamper};

pub const TAMPERS: &[Tamper] = &[Tamper {
    fault: "unsigned-replies",
    changes: Changes::Reply,
    what: "a response without its signature",
    judged_as: "agentprotocol/client-verifies-response",
    apply: unsigned_response,
    refused: not_judged,
}];

/// A response's signature removed (the hello's is left: the client case spoils
/// the response alone).
fn unsigned_response(m: &mut InFlight) -> bool {
    let is_response =
        serde_json::from_slice::<serde_json::Value>(&m.body).is_ok_and(|v| v["type"] == "response");
    is_response && without_signature(m)
}
