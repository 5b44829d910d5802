//! Tamper mode's model (`agentconform proxy --fault NAME`, `interop --fault NAME`):
//! one reference fault's change to the bytes of a message, applied in flight by the
//! proxy, to see whether the other real side notices. A suite lists the changes it
//! can make without keys or state of its own (`Suite::tampers`, in its folder's
//! `tamper.rs`); the proxy applies them ([`crate::proxy`]) and judges the outcome
//! (`proxy::tamper`).
//!
//! A server fault changes the server's replies: the client is judged, by the fault's
//! duty (refuse the reply, or report an error). A client fault changes the client's
//! requests: the server is judged, and must refuse them. Either way the first
//! messages the change applies to pass untouched, as the control: a refusal proves
//! something only beside the untouched twin taken.

/// Whose messages a tamper changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changes {
    /// The server's replies (a server fault): the client is judged.
    Reply,
    /// The client's requests (a client fault): the server is judged.
    Request,
}

/// One message in flight, as a tamper sees it.
#[derive(Debug, Clone)]
pub struct InFlight<'a> {
    /// The HTTP method, or `WS` for a WebSocket message.
    pub method: &'a str,
    /// The path and query (a request change may rewrite it).
    pub path: String,
    /// The client's request body (for a reply: the request it answers; for a
    /// WebSocket message: empty).
    pub request: &'a [u8],
    /// The message's Content-Type (a tamper may drop or change it).
    pub content_type: Option<String>,
    /// The message's body, changed in place.
    pub body: Vec<u8>,
}

/// One fault's change, applied in flight.
#[derive(Debug, Clone, Copy)]
pub struct Tamper {
    /// The fault of the suite's catalogue whose change this is (the server's
    /// catalogue for a reply change, the client's for a request change).
    pub fault: &'static str,
    pub changes: Changes,
    /// What it changes, in words.
    pub what: &'static str,
    /// The case whose requirements and level the other side is held to: a client
    /// case that serves the fault's duty (a reply change), or the server case that
    /// refuses such a request (a request change).
    pub judged_as: &'static str,
    /// Changes the message; false when the change does not apply to it (it passes
    /// as it came).
    pub apply: fn(&mut InFlight) -> bool,
    /// For a request change: whether the server's reply (status, body; status 0 for
    /// a WebSocket message) refuses the request.
    pub refused: fn(u16, &[u8]) -> bool,
}

/// The JSON object of a body, changed by `edit` and written back compact; false
/// when the body is no JSON object or `edit` changed nothing.
pub fn edit_json(
    body: &mut Vec<u8>,
    edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) -> bool,
) -> bool {
    let Ok(serde_json::Value::Object(mut m)) = serde_json::from_slice(body) else {
        return false;
    };
    if !edit(&mut m) {
        return false;
    }
    match serde_json::to_vec(&serde_json::Value::Object(m)) {
        Ok(b) => {
            *body = b;
            true
        }
        Err(_) => false,
    }
}

/// Removes the `signature` member of a JSON object (a server's `unsigned-replies`).
pub fn without_signature(m: &mut InFlight) -> bool {
    edit_json(&mut m.body, |o| o.remove("signature").is_some())
}

/// A reply is a refusal by its HTTP status alone (400 and above).
pub fn refused_by_status(status: u16, _: &[u8]) -> bool {
    status >= 400
}

/// For a reply change: the server's refusals are not judged.
pub fn not_judged(_: u16, _: &[u8]) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_objects_only() {
        let mut b = br#"{"a":1,"signature":"x"}"#.to_vec();
        assert!(edit_json(&mut b, |m| m.remove("signature").is_some()));
        assert_eq!(b, br#"{"a":1}"#);
        assert!(!edit_json(&mut b, |m| m.remove("signature").is_some()));
        let mut arr = b"[1]".to_vec();
        assert!(!edit_json(&mut arr, |_| true));
    }
}
