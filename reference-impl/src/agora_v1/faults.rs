//! The agora-v1 fault catalogue, and the variants: behaviours real implementations
//! show that the spec allows or only warns about.

use crate::fault;
use crate::faults::Fault;

/// A behaviour of real implementations the spec allows or only warns about. The
/// harness must give no failing finding for it, only the warnings named here.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    pub name: &'static str,
    pub description: &'static str,
    /// The warning findings it must produce (none when the spec allows it outright).
    pub warns: &'static [&'static str],
}

pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "offset-timestamps",
        description: "stamps replies `2024-01-01T10:00:00+00:00` (Python's isoformat of an aware UTC time) instead of `…Z`; \"ISO 8601 UTC\" allows both (AV1-A8)",
        warns: &[],
    },
    Variant {
        name: "std-base64-signature",
        description: "encodes reply signatures in standard base64 with padding (`+`, `/`, `=`) instead of Base64Url: a warning (AV1-A1)",
        warns: &["agora-v1/reply:signature-encoding:standard-base64"],
    },
    Variant {
        name: "silent-refusals",
        description: "over WebSocket, drops a message it refuses before any task (bad envelope, signature, age, replay, unknown offer) without a reply; \"reject\" may be silent (AV1-A5)",
        warns: &[],
    },
    Variant {
        name: "raw-key-sender",
        description: "names its key in sender.id as a raw base64url public key, not a did:key (allowed; a DID Key is preferred, AV1-013)",
        warns: &["agora-v1/reply:sender-id-form"],
    },
];

pub const FAULTS: &[Fault] = &[
    fault!("accept-stale", "freshness", "does not check message age: a REQUEST stamped 120 s ago is processed",
        ["agora-v1/reject-stale-timestamp"], finding = ["agora-v1/reject-stale-timestamp"], duty = none),
    fault!("skip-signature-check", "signature checking", "never verifies signatures",
        ["agora-v1/reject-tampered-payload", "agora-v1/reject-wrong-key", "agora-v1/reject-unsigned"], duty = none),
    fault!("accept-unsigned", "signature checking", "verifies signatures that are present but processes messages whose signature is empty or missing",
        ["agora-v1/reject-unsigned"], finding = ["agora-v1/reject-unsigned"], duty = none),
    fault!("verify-as-sent", "canonical form", "verifies over the received member order (serde_json text with the signature blanked) instead of RFC 8785 bytes",
        ["agora-v1/accept-noncanonical-spelling"], finding = ["agora-v1/accept-noncanonical-spelling"], duty = none),
    fault!("unsigned-replies", "reply signing", "sends replies with an empty signature",
        ["agora-v1/echo-direct"], finding = ["agora-v1/reply:signature"], duty = refuse["agora-v1/client-refuses-bad-result-signature"]),
    fault!("reply-wrong-key", "reply signing", "signs replies with a key other than the one its sender.id names",
        ["agora-v1/echo-direct"], finding = ["agora-v1/reply:signature"], duty = refuse["agora-v1/client-refuses-bad-result-signature"]),
    fault!("sign-non-canonical", "canonical form", "signs replies over their plain serialization in member insertion order, not RFC 8785",
        ["agora-v1/echo-direct"], finding = ["agora-v1/reply:signature"], duty = refuse["agora-v1/client-refuses-bad-result-signature"]),
    fault!("accept-replayed-id", "replay", "does not remember message ids: the same signed REQUEST is processed twice",
        ["agora-v1/reject-replayed-id"], finding = ["agora-v1/reject-replayed-id"], duty = none),
    fault!("malformed-code-500", "error code 400", "answers malformed JSON with ERROR 500",
        ["agora-v1/reject-malformed-json"], finding = ["agora-v1/reject-malformed-json"], duty = none),
    fault!("bad-signature-code-400", "error code 401", "answers bad signatures with ERROR 400",
        ["agora-v1/reject-tampered-payload", "agora-v1/reject-wrong-key"], duty = none),
    fault!("budget-code-400", "error code 402", "answers a budget below the cost with ERROR 400",
        ["agora-v1/budget-too-low"], finding = ["agora-v1/budget-too-low"], duty = none),
    fault!("unknown-resource-code-500", "error code 404", "answers an unknown resource with ERROR 500",
        ["agora-v1/error-unknown-resource"], finding = ["agora-v1/error-unknown-resource"], duty = none),
    fault!("expired-offer-code-400", "error code 408", "answers an ACCEPT of an expired offer with ERROR 400",
        ["agora-v1/offer-expiry"], finding = ["agora-v1/offer-expiry"], duty = none),
    fault!("accept-expired-offer", "offer expiry", "ignores the offer ttl: an ACCEPT after the ttl gets a RESULT",
        ["agora-v1/offer-expiry"], finding = ["agora-v1/offer-expiry"], duty = none),
    fault!("ignore-budget", "budget", "makes an OFFER even when the budget is below the cost",
        ["agora-v1/budget-too-low"], finding = ["agora-v1/budget-too-low"], duty = refuse["agora-v1/client-refuses-offer-over-budget"]),
    fault!("result-links-offer", "request linking", "in the negotiated flow, RESULT.request_id names the OFFER instead of the REQUEST",
        ["agora-v1/negotiated-flow"], finding = ["agora-v1/result:request-id-after-accept"], duty = refuse["agora-v1/client-refuses-foreign-result"]),
    fault!("wrong-protocol-tag", "protocol tag", "replies carry protocol \"agora/1.1\"",
        ["agora-v1/echo-direct"], finding = ["agora-v1/schema:envelope:/protocol"], duty = refuse["agora-v1/client-refuses-wrong-protocol"]),
    fault!("accept-any-protocol", "protocol tag", "processes messages whose protocol is not \"agora/1.0\"",
        ["agora-v1/reject-wrong-protocol"], finding = ["agora-v1/reject-wrong-protocol"], duty = none),
    fault!("reuse-request-id", "message ids", "a reply reuses the id of the message it answers (an OFFER is then known by the REQUEST's id, which is what its ACCEPT names)",
        ["agora-v1/ids-unique"], finding = ["agora-v1/reply:id-reused"], duty = refuse["agora-v1/client-refuses-reused-id"]),
    fault!("stale-reply-timestamp", "freshness", "stamps replies ten minutes in the past",
        ["agora-v1/reply-timestamp-fresh"], finding = ["agora-v1/reply:timestamp-skew"], duty = refuse["agora-v1/client-refuses-stale-result"]),
    fault!("accept-lowercase-type", "message types", "processes type \"request\" like \"REQUEST\"",
        ["agora-v1/reject-unknown-type"], finding = ["agora-v1/reject-unknown-type"], duty = none),
    fault!("lenient-payload", "error code 400", "does not check payload member types (params, budget, timeout, resource, payment_proof)",
        ["agora-v1/reject-params-string", "agora-v1/reject-budget-number", "agora-v1/reject-bad-timeout", "agora-v1/reject-bad-resource"], duty = none),
    fault!("double-accept", "offer lifecycle", "lets an offer be accepted twice, producing two RESULTs",
        ["agora-v1/accept-twice"], finding = ["agora-v1/accept-twice"], duty = none),
    fault!("accept-from-anyone", "offer lifecycle", "carries out an ACCEPT of an offer from any sender, not only the requester, and sends it the RESULT with the requester's params",
        ["agora-v1/accept-only-requester"], finding = ["agora-v1/accept-only-requester"], duty = none),
    fault!("ids-across-senders", "replay protection", "files message and request ids by the id alone, whoever sent them: a REQUEST whose id another sender used first is refused as a replay, and STATUS answers any sender about any request",
        ["agora-v1/ids-per-sender"], finding = ["agora-v1/ids-per-sender"], duty = none),
    fault!("error-code-string", "error shape", "ERROR replies carry the code as a string (\"404\")",
        ["agora-v1/error-unknown-resource"], finding = ["agora-v1/schema:error:/code"], duty = report_error["agora-v1/client-reports-malformed-error"]),
    fault!("result-status-uppercase", "result shape", "RESULT status is \"SUCCESS\"",
        ["agora-v1/echo-direct"], finding = ["agora-v1/schema:result:/status"], duty = may_take),
    fault!("no-welcome", "fixtures", "answers HELLO with ERROR 400 (unknown type)",
        ["agora-v1/hello-welcome"], finding = ["agora-v1/hello-welcome"], duty = none),
    fault!("error-code-nested", "error shape", "ERROR replies go out with HTTP 200 and the code and message nested as payload.error {code, message} (the JSON-RPC / Google API error shape)",
        ["agora-v1/error-unknown-resource"], finding = ["agora-v1/schema:error:/code"], duty = report_error["agora-v1/client-reports-malformed-error"]),
    fault!("result-data-renamed", "result shape", "RESULT carries its output as `result` instead of `data`",
        ["agora-v1/echo-direct"], finding = ["agora-v1/schema:result:/data"], duty = may_take),
    fault!("naive-timestamps", "timestamp form", "stamps replies without a UTC designator, `2024-01-01T10:00:00.123456` (Python's datetime.utcnow().isoformat())",
        ["agora-v1/reply-timestamp-fresh"], finding = ["agora-v1/reply:timestamp-format"], duty = may_take),
    fault!("signature-hex", "signature encoding", "encodes reply signatures in lower-case hex (128 digits) instead of Base64Url",
        ["agora-v1/reply-signature-encoding"], finding = ["agora-v1/reply:signature-encoding"], duty = may_take),
    fault!("offer-id-in-payload", "offer lifecycle", "gives an OFFER an envelope id of its own and knows the offer only by the offer_id in its payload, so an ACCEPT quoting the envelope id (AV1-A11) draws ERROR 404",
        ["agora-v1/negotiated-flow"], finding = ["agora-v1/offer:id-source"], duty = report_error["agora-v1/client-error-fails-the-task"]),
    fault!("refuse-everything", "trust", "answers every message with ERROR 401 \"untrusted sender\", as a provider whose allow-list does not name the requester: a refusal proves nothing there",
        ["agora-v1/echo-direct"], finding = ["agora-v1/refused:401:untrusted-sender-not-on-this-agent-s-allow-list"], duty = report_error["agora-v1/client-error-fails-the-task"]),
    fault!("refuse-exact-budget", "budget", "answers ERROR 402 to a REQUEST whose budget.max equals the cost, as if it were below it",
        ["agora-v1/budget-too-low"], finding = ["agora-v1/budget-too-low:exact-budget"], duty = none),
    fault!("refuse-any-budget", "budget", "answers ERROR 402 to every REQUEST for the negotiated resource that carries a budget object, sufficient or not",
        ["agora-v1/budget-too-low"], finding = ["agora-v1/budget-too-low"], duty = report_error["agora-v1/client-error-fails-the-task"]),
    fault!("forget-expired-offers", "offer expiry", "forgets expired offers whenever a new quote REQUEST comes, so a late ACCEPT after another quote draws ERROR 404, not 408",
        ["agora-v1/offer-expiry"], finding = ["agora-v1/offer-expiry"], duty = none),
    fault!("bare-error-replies", "error shape", "refuses with a bare, unsigned `{\"error\": message, \"code\": n}` and HTTP status n (a web framework's error body) instead of a signed ERROR envelope",
        ["agora-v1/error-unknown-resource"], finding = ["agora-v1/reply:error-not-envelope"], duty = report_error["agora-v1/client-reports-malformed-error"]),
];

/// The variant named `name`, if there is one.
pub fn variant(name: &str) -> Option<&'static Variant> {
    VARIANTS.iter().find(|v| v.name == name)
}
