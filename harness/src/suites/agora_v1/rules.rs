//! The rules of agora-v1: every finding key its cases and reply checks give, apart
//! from the keys that are a case's own id and the rules every suite shares
//! (`crate::rules::SHARED`). The reply checks (`expect::check_reply`) also judge the
//! messages a requester under test sends (`expect::check_client_message`), so the
//! `reply:` and `schema:envelope:` rules hold a client's messages too.
use crate::case::Level;
use crate::rules::rules;

rules! {
    // A reply that is no envelope at all (expect::read_reply); it blocks the case.
    REPLY_NOT_JSON {
        key: "agora-v1/reply:not-json",
        requirements: &["AV1-001"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a reply is JSON",
        fails: "a body or frame that does not parse as JSON, with no refusing HTTP status (a refusal of 400 and more is reply:error-not-envelope)",
        passes: "a reply that parses as JSON",
    }
    REPLY_NOT_OBJECT {
        key: "agora-v1/reply:not-object",
        requirements: &["AV1-001"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a reply is a JSON object, the envelope, never a bare value",
        fails: "a reply that is JSON but not an object (an array, a string, a number), with no refusing HTTP status",
        passes: "a reply that is a JSON object",
    }
    REPLY_NOT_ENVELOPE {
        key: "agora-v1/reply:not-envelope",
        requirements: &["AV1-001"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a reply object is an envelope: it has sender and payload",
        fails: "a JSON object with neither sender nor payload that looks like no refusal (no code, no message, no status of 400 and more)",
        passes: "an object with a sender or a payload member, read on as an envelope",
    }
    REPLY_ERROR_NOT_ENVELOPE {
        key: "agora-v1/reply:error-not-envelope",
        requirements: &["AV1-001", "AV1-045"],
        level: None,
        owner: "agora-v1/error-unknown-resource",
        summary: "a refusal is an ERROR envelope, not a body of another shape",
        fails: "a refusal outside the envelope: a web framework's error body or a bare {\"error\", \"code\"} object, or a non-envelope reply with HTTP 400 and more",
        passes: "a refusal sent as an ERROR envelope with its code and message in the payload",
    }
    REPLY_NO_TYPE {
        key: "agora-v1/reply:no-type",
        requirements: &["AV1-002", "AV1-009"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope has a string type",
        fails: "an envelope whose type is missing or not a string; the reply cannot be read on and blocks the case",
        passes: "a string type (a known type in lower case is read as upper case; schema:envelope:/type says so)",
    }
    // The envelope against schemas/agora-v1/envelope.schema.json, one finding per
    // member at fault (expect::envelope_findings); the timestamp has its own rules.
    // Two sites give /protocol: the schema, and a fallback check of the protocol
    // string after it; both with AV1-003 and the same owner.
    SCHEMA_ENVELOPE_PROTOCOL {
        key: "agora-v1/schema:envelope:/protocol",
        requirements: &["AV1-003"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope's protocol is exactly \"agora/1.0\"",
        fails: "protocol missing, or any other string (\"agora/1.1\", \"agora/2.0\", \"Agora/1.0\")",
        passes: "protocol \"agora/1.0\"",
    }
    SCHEMA_ENVELOPE_ID {
        key: "agora-v1/schema:envelope:/id",
        requirements: &["AV1-004"],
        level: None,
        owner: "agora-v1/ids-unique",
        summary: "an envelope has an id, a string that identifies the message",
        fails: "an id missing or not a string in the envelope schema's form",
        passes: "an id the envelope schema accepts",
    }
    SCHEMA_ENVELOPE_TYPE {
        key: "agora-v1/schema:envelope:/type",
        requirements: &["AV1-009"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope's type is one of the eight upper-case types of agora-v1.md",
        fails: "a type outside HELLO, WELCOME, STATUS, REQUEST, OFFER, ACCEPT, RESULT, ERROR, or one spelled in lower case (then read as upper case)",
        passes: "one of the eight types, in upper case",
    }
    SCHEMA_ENVELOPE_SENDER_ID {
        key: "agora-v1/schema:envelope:/sender/id",
        requirements: &["AV1-012"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "sender.id is a string naming the agent's public key",
        fails: "sender.id missing, not a string or outside the schema's form; the signature cannot then be judged",
        passes: "a sender.id the envelope schema accepts",
    }
    SCHEMA_ENVELOPE_SENDER_SIGNATURE {
        key: "agora-v1/schema:envelope:/sender/signature",
        requirements: &["AV1-014", "AV1-016"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "every message is signed, its signature in sender.signature",
        fails: "sender.signature missing, empty or not a string in the schema's form",
        passes: "a sender.signature the envelope schema accepts",
    }
    SCHEMA_ENVELOPE_SIGNATURE {
        key: "agora-v1/schema:envelope:/signature",
        requirements: &["AV1-014", "AV1-016"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "the signature sits in sender.signature, not at the top level",
        fails: "a top-level signature member (one finding, not also a missing sender.signature)",
        passes: "no top-level signature; the signature in sender.signature",
    }
    SCHEMA_ENVELOPE_PAYLOAD {
        key: "agora-v1/schema:envelope:/payload",
        requirements: &["AV1-015"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope's payload is a JSON object",
        fails: "payload missing, or an array, a string or another non-object",
        passes: "a payload object (its members are judged per type)",
    }
    SCHEMA_ENVELOPE {
        key: "agora-v1/schema:envelope:*",
        requirements: &["AV1-002"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "an envelope has the members protocol, id, timestamp, type, sender {id, signature} and payload",
        fails: "another envelope member at fault (sender not an object, a member the schema does not allow); the detail is the JSON pointer",
        passes: "an envelope the envelope schema validates",
    }
    // RESULT, OFFER and ERROR payloads against their schemas (expect::payload_findings).
    SCHEMA_RESULT_REQUEST_ID {
        key: "agora-v1/schema:result:/request_id",
        requirements: &["AV1-042"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a RESULT payload has request_id, a string",
        fails: "RESULT.request_id missing or not a string",
        passes: "a string request_id (that it names the REQUEST is result:request-id)",
    }
    SCHEMA_RESULT_STATUS {
        key: "agora-v1/schema:result:/status",
        requirements: &["AV1-043"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a RESULT's status is \"success\" or \"partial\", in lower case",
        fails: "status missing, in upper case (\"SUCCESS\"), or another value",
        passes: "status \"success\" or \"partial\"",
    }
    SCHEMA_RESULT {
        key: "agora-v1/schema:result:*",
        requirements: &["AV1-044"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a RESULT payload holds its output in data, an object",
        fails: "data missing (the output under result or output instead), not an object, or another member at fault; the detail is the JSON pointer",
        passes: "a RESULT payload the result schema validates",
    }
    SCHEMA_OFFER_REQUEST_ID {
        key: "agora-v1/schema:offer:/request_id",
        requirements: &["AV1-037"],
        level: None,
        owner: "agora-v1/negotiated-flow",
        summary: "an OFFER payload has request_id, a string",
        fails: "OFFER.request_id missing or not a string",
        passes: "a string request_id (that it names the REQUEST is offer:request-id)",
    }
    SCHEMA_OFFER {
        key: "agora-v1/schema:offer:*",
        requirements: &["AV1-038"],
        level: None,
        owner: "agora-v1/negotiated-flow",
        summary: "an OFFER payload carries cost (number), ttl (integer ms) and eta (integer ms)",
        fails: "cost, ttl or eta missing or of another type, or another member at fault; the detail is the JSON pointer",
        passes: "an OFFER payload the offer schema validates",
    }
    SCHEMA_ERROR_CODE {
        key: "agora-v1/schema:error:/code",
        requirements: &["AV1-045"],
        level: None,
        owner: "agora-v1/error-unknown-resource",
        summary: "an ERROR payload has code, an integer",
        fails: "no code, a string code (\"403\"), or the code elsewhere (error.code, error_code, status); one finding, which also covers a message found elsewhere",
        passes: "an integer code in payload.code",
    }
    SCHEMA_ERROR {
        key: "agora-v1/schema:error:*",
        requirements: &["AV1-045"],
        level: None,
        owner: "agora-v1/error-unknown-resource",
        summary: "an ERROR payload has message (a string) and an optional request_id (a string)",
        fails: "message missing or not a string, request_id not a string, or another member at fault; the detail is the JSON pointer",
        passes: "an ERROR payload the error schema validates",
    }
    // Ids, timestamp and signature (expect::read_reply, check_timestamp, check_signature).
    REPLY_ID_REUSED {
        key: "agora-v1/reply:id-reused",
        requirements: &["AV1-004"],
        level: None,
        owner: "agora-v1/ids-unique",
        summary: "a reply's id is its own, never the id of a message the harness sent",
        fails: "a reply whose id is one the harness gave a message of its own (the REQUEST's id reused)",
        passes: "a reply id the harness never sent",
    }
    REPLY_ID_REPEATED {
        key: "agora-v1/reply:id-repeated",
        requirements: &["AV1-004"],
        level: None,
        owner: "agora-v1/ids-unique",
        summary: "every reply has an id no earlier reply had",
        fails: "a reply whose id an earlier reply in the case already used",
        passes: "distinct ids across the case's replies",
    }
    REPLY_TIMESTAMP_FORMAT {
        key: "agora-v1/reply:timestamp-format",
        requirements: &["AV1-006"],
        level: None,
        owner: "agora-v1/reply-timestamp-fresh",
        summary: "a reply's timestamp is an ISO 8601 (RFC 3339) date-time string in UTC",
        fails: "no timestamp, a timestamp that is not a string, or one that does not parse as RFC 3339 in UTC (an offset other than Z or +00:00)",
        passes: "an RFC 3339 UTC timestamp, Z or +00:00",
    }
    REPLY_TIMESTAMP_SKEW {
        key: "agora-v1/reply:timestamp-skew",
        requirements: &["AV1-006"],
        level: None,
        owner: "agora-v1/reply-timestamp-fresh",
        summary: "a reply's timestamp is within the replay window of the harness clock",
        fails: "a timestamp further from the harness clock than the profile's replay_window_s, so a peer would refuse the reply",
        passes: "a timestamp inside the replay window",
    }
    REPLY_SIGNATURE_ENCODING_STANDARD_BASE64 {
        key: "agora-v1/reply:signature-encoding:standard-base64",
        requirements: &["AV1-021", "AV1-A1"],
        level: Some(Level::Should),
        owner: "agora-v1/reply-signature-encoding",
        summary: "a signature is in the Base64Url alphabet",
        fails: "a signature that verifies but is in standard base64 (+ and /): a warning (AV1-A1)",
        passes: "a Base64Url signature, padded or not",
    }
    REPLY_SIGNATURE_ENCODING {
        key: "agora-v1/reply:signature-encoding",
        requirements: &["AV1-021"],
        level: None,
        owner: "agora-v1/reply-signature-encoding",
        summary: "a signature is 64 bytes in Base64Url",
        fails: "a signature of 128 hex digits that verifies only once read as hex",
        passes: "a signature that verifies as Base64Url",
    }
    REPLY_SIGNATURE {
        key: "agora-v1/reply:signature",
        requirements: &["AV1-016", "AV1-017", "AV1-020"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "a signature verifies over the RFC 8785 form with sender.signature blanked or removed, by the key of sender.id",
        fails: "a signature that does not verify under either variant and any key form of sender.id: empty, by another key, over non-canonical JSON",
        passes: "a signature that verifies",
    }
    REPLY_HTTP_STATUS {
        key: "agora-v1/reply:http-status",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "agora-v1/echo-direct",
        summary: "over HTTP, a reply has status 200, or an ERROR's status is its code (profile http_status = \"code-or-200\")",
        fails: "another HTTP status, such as 201 for a RESULT or 400 for an ERROR 404; set [agora-v1] http_status = \"any\" if the binding uses other statuses",
        passes: "200, or for an ERROR its own code",
    }
    REPLY_ERROR_CODE {
        key: "agora-v1/reply:error-code:*",
        requirements: &["AV1-046", "AV1-A20"],
        level: Some(Level::Should),
        owner: "",
        summary: "an ERROR code comes from the table of agora-v1.md section 5: 400, 401, 402, 404, 408, 429, 500, 503",
        fails: "an ERROR code outside the table (the detail is the code): a warning (AV1-A20)",
        passes: "a code from the table",
    }
    // Refusals of a valid message (expect::baseline): the shared family, given
    // here with the requirement of the direct flow.
    REFUSED {
        key: "agora-v1/refused*",
        requirements: &["AV1-026"],
        level: None,
        owner: "",
        summary: "a valid REQUEST the harness built is processed with a RESULT or an OFFER",
        fails: "an ERROR to a plain valid REQUEST (a case's baseline or control); the detail is the code and message, and the cases that need it accepted are blocked",
        passes: "a RESULT or an OFFER",
    }
    // Links between the messages of a flow (expect::check_result, check_offer,
    // send_accept).
    RESULT_REQUEST_ID {
        key: "agora-v1/result:request-id",
        requirements: &["AV1-042"],
        level: None,
        owner: "agora-v1/echo-direct",
        summary: "in the direct flow, RESULT.request_id is the REQUEST's id",
        fails: "a RESULT answering a REQUEST directly whose request_id names another message",
        passes: "RESULT.request_id equal to the REQUEST's id",
    }
    RESULT_REQUEST_ID_AFTER_ACCEPT {
        key: "agora-v1/result:request-id-after-accept",
        requirements: &["AV1-042"],
        level: None,
        owner: "agora-v1/negotiated-flow",
        summary: "after an ACCEPT, RESULT.request_id is the original REQUEST's id, not the OFFER's or the ACCEPT's",
        fails: "a RESULT ending a negotiated flow whose request_id names the OFFER, the ACCEPT or another message",
        passes: "RESULT.request_id equal to the REQUEST's id",
    }
    OFFER_REQUEST_ID {
        key: "agora-v1/offer:request-id",
        requirements: &["AV1-037"],
        level: None,
        owner: "agora-v1/negotiated-flow",
        summary: "OFFER.request_id is the id of the REQUEST it answers",
        fails: "an OFFER whose request_id names another message",
        passes: "OFFER.request_id equal to the REQUEST's id",
    }
    OFFER_ID_SOURCE {
        key: "agora-v1/offer:id-source",
        requirements: &["AV1-040", "AV1-A11"],
        level: Some(Level::Profile),
        owner: "agora-v1/negotiated-flow",
        summary: "an ACCEPT naming an OFFER by the id the profile says (its envelope id, AV1-A11) is taken",
        fails: "the target refuses an ACCEPT quoting the profile's offer id and takes one quoting the other (payload.offer_id or envelope id); set [agora-v1] offer_id",
        passes: "the ACCEPT quoting the profile's offer id is taken",
    }
    // The case sender-did-key records it as its own deviation, without .owned_by.
    REPLY_SENDER_ID_FORM {
        key: "agora-v1/reply:sender-id-form",
        requirements: &["AV1-013"],
        level: None,
        owner: "",
        summary: "the target's sender.id is a did:key, the preferred form",
        fails: "a sender.id in another form, such as a raw public key (allowed, AV1-A4): a warning",
        passes: "a sender.id starting did:key:",
    }
    BUDGET_TOO_LOW_EXACT_BUDGET {
        key: "agora-v1/budget-too-low:exact-budget",
        requirements: &["AV1-055"],
        level: None,
        owner: "agora-v1/budget-too-low",
        summary: "a REQUEST whose budget.max equals the cost is answered like one that covers it (derived: only a budget below the cost is too low)",
        fails: "a REQUEST whose budget.max equals the offered cost is refused (ERROR 402 or another error)",
        passes: "an OFFER or a RESULT to the REQUEST with the exact budget",
    }
    // Client role: the payload of a requester's message against its schema
    // (expect::check_client_message), besides every rule above.
    SCHEMA_REQUEST {
        key: "agora-v1/schema:request:*",
        requirements: &["AV1-032", "AV1-033", "AV1-034", "AV1-035"],
        level: None,
        owner: "",
        summary: "a requester's REQUEST payload has resource (string), params (object), and optional budget (object) and timeout (integer ms)",
        fails: "a REQUEST payload the request schema rejects; the detail is the JSON pointer",
        passes: "a REQUEST payload the request schema validates",
    }
    SCHEMA_ACCEPT {
        key: "agora-v1/schema:accept:*",
        requirements: &["AV1-040", "AV1-041"],
        level: None,
        owner: "",
        summary: "a requester's ACCEPT payload has offer_id (string) and an optional payment_proof (string)",
        fails: "an ACCEPT payload the accept schema rejects; the detail is the JSON pointer",
        passes: "an ACCEPT payload the accept schema validates",
    }
    CLIENT_ID_REUSED {
        key: "agora-v1/client:id-reused",
        requirements: &["AV1-004"],
        level: None,
        owner: "",
        summary: "every message of a client has an id of its own",
        fails: "a client's message whose id an earlier message carried: another of its messages in the whole run (whichever case sent it), or through the proxy its own or the server's",
        passes: "a fresh id on every message",
    }
    // The proxy's reading of a real client's ACCEPT against the conversation it saw
    // (expect::accept_against_offer).
    CLIENT_ACCEPT_OFFER_ID {
        key: "agora-v1/client:accept-offer-id",
        requirements: &["AV1-040"],
        level: None,
        owner: "",
        summary: "a client's ACCEPT names the OFFER by the OFFER's envelope id",
        fails: "an ACCEPT whose offer_id is no OFFER's id the proxy saw (the REQUEST's id, say, as payload.request_id repeats it)",
        passes: "offer_id is the id of an OFFER the server sent",
    }
    CLIENT_ACCEPT_OVER_BUDGET {
        key: "agora-v1/client:accept-over-budget",
        requirements: &["AV1-029", "AV1-034"],
        level: None,
        owner: "",
        summary: "a client does not ACCEPT an OFFER over its REQUEST's budget",
        fails: "an ACCEPT of an OFFER whose cost is above the budget.max of the REQUEST it answers",
        passes: "ACCEPTs of OFFERs within the budget, or with no budget given",
    }
    CLIENT_ACCEPT_EXPIRED_OFFER {
        key: "agora-v1/client:accept-expired-offer",
        requirements: &["AV1-029", "AV1-039"],
        level: None,
        owner: "",
        summary: "a client does not ACCEPT an OFFER whose ttl has run out",
        fails: "an ACCEPT sent more than a second after the OFFER's timestamp plus its ttl (by the proxy's clock)",
        passes: "ACCEPTs within the OFFER's ttl",
    }
    // ------------------------------------------------------------------
    // A case's own subject, judged by a shared check (keyed by the case id).
    CLIENT_NEGOTIATED {
        key: "agora-v1/client-negotiated",
        requirements: &["AV1-040"],
        level: None,
        owner: "agora-v1/client-negotiated",
        summary: "a requester's ACCEPT names the OFFER it accepts by the OFFER's id",
        fails: "an ACCEPT whose offer_id is not the id of the OFFER it answers",
        passes: "the OFFER's id",
    }
    REJECT_UNKNOWN_TYPE {
        key: "agora-v1/reject-unknown-type",
        requirements: &["AV1-009"],
        level: None,
        owner: "agora-v1/reject-unknown-type",
        summary: "types PING and request (lower case) are not processed",
        fails: "one or both were processed (each named, with the answer)",
        passes: "an ERROR, a refusing status or silence from a live target for each",
    }
    REJECT_BAD_TIMEOUT {
        key: "agora-v1/reject-bad-timeout",
        requirements: &["AV1-035"],
        level: None,
        owner: "agora-v1/reject-bad-timeout",
        summary: "a REQUEST with timeout \"10s\" or 1.5 draws ERROR 400",
        fails: "one or both were processed or refused with another code (each named)",
        passes: "ERROR 400 for each",
    }
}
