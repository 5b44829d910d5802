//! The agora-v1 fault catalogue.

use crate::faults::Fault;

macro_rules! fault {
    ($name:literal, $family:literal, $desc:literal, [$($case:literal),+ $(,)?]) => {
        Fault { name: $name, family: $family, description: $desc, caught_by: &[$($case),+] }
    };
}

pub const FAULTS: &[Fault] = &[
    fault!("accept-stale", "freshness", "does not check message age: a REQUEST stamped 120 s ago is processed",
        ["agora-v1/reject-stale-timestamp"]),
    fault!("skip-signature-check", "signature checking", "never verifies signatures",
        ["agora-v1/reject-tampered-payload", "agora-v1/reject-wrong-key", "agora-v1/reject-unsigned"]),
    fault!("accept-unsigned", "signature checking", "verifies signatures that are present but processes messages whose signature is empty or missing",
        ["agora-v1/reject-unsigned"]),
    fault!("verify-as-sent", "canonical form", "verifies over the received member order (serde_json text with the signature blanked) instead of RFC 8785 bytes",
        ["agora-v1/accept-noncanonical-spelling"]),
    fault!("unsigned-replies", "reply signing", "sends replies with an empty signature",
        ["agora-v1/echo-direct"]),
    fault!("reply-wrong-key", "reply signing", "signs replies with a key other than the one its sender.id names",
        ["agora-v1/echo-direct"]),
    fault!("sign-non-canonical", "canonical form", "signs replies over their plain serialization in member insertion order, not RFC 8785",
        ["agora-v1/echo-direct"]),
    fault!("accept-replayed-id", "replay", "does not remember message ids: the same signed REQUEST is processed twice",
        ["agora-v1/reject-replayed-id"]),
    fault!("malformed-code-500", "error code 400", "answers malformed JSON with ERROR 500",
        ["agora-v1/reject-malformed-json"]),
    fault!("bad-signature-code-400", "error code 401", "answers bad signatures with ERROR 400",
        ["agora-v1/reject-tampered-payload", "agora-v1/reject-wrong-key"]),
    fault!("budget-code-400", "error code 402", "answers a budget below the cost with ERROR 400",
        ["agora-v1/budget-too-low"]),
    fault!("unknown-resource-code-500", "error code 404", "answers an unknown resource with ERROR 500",
        ["agora-v1/error-unknown-resource"]),
    fault!("expired-offer-code-400", "error code 408", "answers an ACCEPT of an expired offer with ERROR 400",
        ["agora-v1/offer-expiry"]),
    fault!("accept-expired-offer", "offer expiry", "ignores the offer ttl: an ACCEPT after the ttl gets a RESULT",
        ["agora-v1/offer-expiry"]),
    fault!("ignore-budget", "budget", "makes an OFFER even when the budget is below the cost",
        ["agora-v1/budget-too-low"]),
    fault!("result-links-offer", "request linking", "in the negotiated flow, RESULT.request_id names the OFFER instead of the REQUEST",
        ["agora-v1/negotiated-flow"]),
    fault!("wrong-protocol-tag", "protocol tag", "replies carry protocol \"agora/1.1\"",
        ["agora-v1/echo-direct"]),
    fault!("accept-any-protocol", "protocol tag", "processes messages whose protocol is not \"agora/1.0\"",
        ["agora-v1/reject-wrong-protocol"]),
    fault!("reuse-request-id", "message ids", "a reply reuses the id of the message it answers",
        ["agora-v1/echo-direct", "agora-v1/ids-unique"]),
    fault!("stale-reply-timestamp", "freshness", "stamps replies ten minutes in the past",
        ["agora-v1/echo-direct", "agora-v1/reply-timestamp-fresh"]),
    fault!("accept-lowercase-type", "message types", "processes type \"request\" like \"REQUEST\"",
        ["agora-v1/reject-unknown-type"]),
    fault!("lenient-payload", "error code 400", "does not check payload member types (params, budget, timeout, resource, payment_proof)",
        ["agora-v1/reject-params-string", "agora-v1/reject-budget-number", "agora-v1/reject-bad-timeout", "agora-v1/reject-bad-resource"]),
    fault!("double-accept", "offer lifecycle", "lets an offer be accepted twice, producing two RESULTs",
        ["agora-v1/accept-twice"]),
    fault!("error-code-string", "error shape", "ERROR replies carry the code as a string (\"404\")",
        ["agora-v1/error-unknown-resource"]),
    fault!("result-status-uppercase", "result shape", "RESULT status is \"SUCCESS\"",
        ["agora-v1/echo-direct"]),
    fault!("no-welcome", "fixtures", "answers HELLO with ERROR 400 (unknown type)",
        ["agora-v1/hello-welcome"]),
];
