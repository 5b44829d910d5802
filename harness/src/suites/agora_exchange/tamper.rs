//! The reference faults the proxy applies in flight (`proxy --fault`,
//! `interop --fault`).

use crate::tamper::{edit_json, not_judged, Changes, InFlight, Tamper};
use serde_json::Value;

pub const TAMPERS: &[Tamper] = &[
    Tamper {
        fault: "status-capitalized",
        changes: Changes::Reply,
        what: "a reply with \"status\": \"Success\"",
        judged_as: "agora-exchange/client-status-exact",
        apply: capitalized,
        refused: not_judged,
    },
    Tamper {
        fault: "invent-conversation",
        changes: Changes::Request,
        what: "a follow-up sent to a conversation id the server never issued",
        judged_as: "agora-exchange/unknown-conversation",
        apply: invented,
        refused,
    },
];

/// `"status": "success"` spelled `"Success"`.
fn capitalized(m: &mut InFlight) -> bool {
    edit_json(&mut m.body, |o| match o.get_mut("status") {
        Some(s) if s == "success" => {
            *s = Value::from("Success");
            true
        }
        _ => false,
    })
}

/// A follow-up's conversation id replaced by one never issued.
fn invented(m: &mut InFlight) -> bool {
    if m.method != "POST" {
        return false;
    }
    let Some(at) = m.path.find("/conversations/") else {
        return false;
    };
    let id = format!("h-invented-{}", reference_impl::wire::new_id());
    m.path = format!("{}/conversations/{id}", &m.path[..at]);
    true
}

/// 404 and every error status, or `"status": "failure"` (a 200 the server case
/// warns about, AEX-A9).
fn refused(status: u16, body: &[u8]) -> bool {
    status >= 400 || serde_json::from_slice::<Value>(body).is_ok_and(|v| v["status"] == "failure")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flight(path: &str, body: &str) -> InFlight<'static> {
        InFlight {
            method: "POST",
            path: path.into(),
            request: &[],
            content_type: None,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn changes() {
        let mut m = flight("/", r#"{"status":"success","body":1}"#);
        assert!(capitalized(&mut m));
        assert_eq!(m.body, br#"{"status":"Success","body":1}"#);
        assert!(!capitalized(&mut m));
        let mut f = flight("/base/conversations/abc", "{}");
        assert!(invented(&mut f));
        assert!(f.path.starts_with("/base/conversations/h-invented-"));
        assert!(!invented(&mut flight("/", "{}")));
        assert!(refused(404, b""));
        assert!(refused(200, br#"{"status":"failure"}"#));
        assert!(!refused(200, br#"{"status":"success"}"#));
    }
}
