//! The reference faults the proxy applies in flight (`proxy --fault`,
//! `interop --fault`).

use crate::tamper::{edit_json, not_judged, Changes, InFlight, Tamper};

pub const TAMPERS: &[Tamper] = &[Tamper {
    fault: "error-without-request-id",
    changes: Changes::Reply,
    what: "an error event without its request_id",
    judged_as: "agora-spaces/client-join-refused",
    apply: no_request_id,
    refused: not_judged,
}];

/// An `error` event's `request_id` removed.
fn no_request_id(m: &mut InFlight) -> bool {
    edit_json(&mut m.body, |o| {
        o.get("type").is_some_and(|t| t == "error") && o.remove("request_id").is_some()
    })
}
