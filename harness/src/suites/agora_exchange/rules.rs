//! The rules of agora-exchange: every finding key its cases and reply checks give,
//! other than a case's own failures (keyed by the case id) and the rules every suite
//! shares (`crate::rules::SHARED`), with the requirement ids, level and owning case
//! the code gives them.
use crate::case::Level;
use crate::rules::rules;

rules! {
    // The checks every reply gets (expect.rs, `read_reply`).
    REPLY_ERROR_CONTENT_TYPE {
        key: "agora-exchange/reply:error-content-type",
        requirements: &["AEX-004", "AEX-A15"],
        level: Some(Level::Should),
        owner: "agora-exchange/malformed-json",
        summary: "a transport-level reply (any status but 200) is application/json",
        fails: "an HTTP 4xx or 5xx reply with another Content-Type (text/html, text/plain) or none",
        passes: "every non-200 reply sent as application/json",
    }
    REPLY_CONTENT_TYPE {
        key: "agora-exchange/reply:content-type",
        requirements: &["AEX-004", "AEX-A15"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "an HTTP 200 reply, and the /wellknown document, have Content-Type application/json",
        fails: "HTTP 200 replies with another Content-Type or none; the reply is read on as JSON",
        passes: "Content-Type application/json (parameters such as charset allowed)",
    }
    REPLY_NOT_JSON {
        key: "agora-exchange/reply:not-json",
        requirements: &["AEX-058"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "an HTTP 200 reply is JSON",
        fails: "an HTTP 200 reply whose body does not parse as JSON; nothing is left to read, so the case is blocked",
        passes: "a body that parses as JSON",
    }
    REPLY_DUPLICATE_MEMBER {
        key: "agora-exchange/reply:duplicate-member",
        requirements: &["AEX-058"],
        level: Some(Level::Should),
        owner: "agora-exchange/single-round",
        summary: "a reply names each member once",
        fails: "a reply object that repeats a member name",
        passes: "every member name once per object",
    }
    REPLY_NOT_OBJECT {
        key: "agora-exchange/reply:not-object",
        requirements: &["AEX-009"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "an HTTP 200 reply is a JSON object",
        fails: "an HTTP 200 reply that is an array, a string or another JSON value; the case is blocked",
        passes: "a JSON object",
    }
    REPLY_STATUS_CASE {
        key: "agora-exchange/reply:status-case",
        requirements: &["AEX-009", "AEX-A22"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "status is exactly \"success\" or \"failure\", in lower case",
        fails: "the right word in another case (\"Success\", \"FAILURE\"); the reply is read as that status",
        passes: "\"success\" or \"failure\" exactly",
    }
    REPLY_STATUS {
        key: "agora-exchange/reply:status",
        requirements: &["AEX-009"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "a reply has a status member that says \"success\" or \"failure\"",
        fails: "status missing, not a string, or another word (\"ok\", \"done\"); blocked when no other member tells success from failure",
        passes: "status \"success\" or \"failure\"",
    }
    // Two call sites: AEX-009 for a status word other than "failure", AEX-010 for a
    // missing or non-string error; the union here.
    REPLY_FAILURE_SHAPE {
        key: "agora-exchange/reply:failure-shape",
        requirements: &["AEX-009", "AEX-010"],
        level: None,
        owner: "agora-exchange/reply-shape",
        summary: "a failure reply reads {\"status\": \"failure\", \"error\": \"...\"} (agora-exchange.txt section 5.2)",
        fails: "a failure spelled \"error\", \"fail\" and the like, or its text in message, detail or body instead of a string error",
        passes: "status \"failure\" with a string error",
    }
    REPLY_FAILURE_WITH_BODY {
        key: "agora-exchange/reply:failure-with-body",
        requirements: &["AEX-011", "AEX-A4"],
        level: Some(Level::Should),
        owner: "agora-exchange/reply-shape",
        summary: "a failure reply carries no body",
        fails: "an otherwise well-formed failure reply that also carries body",
        passes: "a failure reply with status and error only",
    }
    REPLY_SUCCESS_WITHOUT_BODY {
        key: "agora-exchange/reply:success-without-body",
        requirements: &["AEX-011", "AEX-A4"],
        level: Some(Level::Should),
        owner: "agora-exchange/reply-shape",
        summary: "a success reply carries body",
        fails: "a reply with status success and no body member",
        passes: "a success reply with body",
    }
    REPLY_SUCCESS_WITH_ERROR {
        key: "agora-exchange/reply:success-with-error",
        requirements: &["AEX-012", "AEX-A4"],
        level: Some(Level::Should),
        owner: "agora-exchange/reply-shape",
        summary: "a success reply carries no error",
        fails: "a reply with status success that also carries an error member",
        passes: "a success reply without error",
    }
    REPLY_BODY_TYPE {
        key: "agora-exchange/reply:body-type",
        requirements: &["AEX-020"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "a reply's body is a string or an object",
        fails: "body is a number, an array, a boolean or null",
        passes: "body a string or a JSON object (or absent)",
    }
    // Two call sites: AEX-021 for a conversationId that is not a non-empty string,
    // AEX-021 and AEX-022 for conversationExpires without conversationId; the union.
    REPLY_CONVERSATION_ID {
        key: "agora-exchange/reply:conversation-id",
        requirements: &["AEX-021", "AEX-022"],
        level: None,
        owner: "agora-exchange/multiround-start",
        summary: "conversationId, when present, is a non-empty string; conversationExpires comes only with it",
        fails: "conversationId empty or not a string, or conversationExpires without conversationId (a conversation field on a single-round reply)",
        passes: "no conversation members, or a non-empty string conversationId",
    }
    // Two call sites: AEX-027 for a missing conversationExpires (`expires_finding`),
    // AEX-022 and AEX-027 for one that is not an integer; the union.
    REPLY_CONVERSATION_EXPIRES {
        key: "agora-exchange/reply:conversation-expires",
        requirements: &["AEX-022", "AEX-027"],
        level: None,
        owner: "agora-exchange/multiround-start",
        summary: "a reply with conversationId carries conversationExpires as an integer Unix timestamp",
        fails: "conversationId without conversationExpires, or conversationExpires as a string or a fractional number",
        passes: "an integer conversationExpires beside every conversationId",
    }
    REPLY_CONVERSATION_EXPIRES_MS {
        key: "agora-exchange/reply:conversation-expires-ms",
        requirements: &["AEX-022", "AEX-A11"],
        level: Some(Level::Should),
        owner: "agora-exchange/multiround-start",
        summary: "conversationExpires is in Unix seconds",
        fails: "a conversationExpires of 1000000000000 or more, which looks like milliseconds",
        passes: "a conversationExpires in seconds",
    }
    // In the shared schema family, but built by the reply checks with AEX-009, for
    // members of the response schema the explicit checks above do not judge.
    SCHEMA_RESPONSE {
        key: "agora-exchange/schema:response:*",
        requirements: &["AEX-009"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "an HTTP 200 reply matches schemas/agora-exchange/response.schema.json beyond the members judged above",
        fails: "a violation of the response schema outside status, error, body, conversationId and conversationExpires; the key names the JSON pointer",
        passes: "a reply the schema validates",
    }
    // Requests (expect.rs, `post` and `control`).
    REQUEST_PROTOCOL_SOURCES_OPTIONAL {
        key: "agora-exchange/request:protocol-sources-optional",
        requirements: &["AEX-016", "AEX-017"],
        level: None,
        owner: "",
        summary: "a new exchange is taken without protocolSources (optional, agora-exchange.txt sections 6.1 and 8.3)",
        fails: "a request without protocolSources refused with words naming it, and taken with protocolSources []; the rest of the run then sends protocolSources []",
        passes: "a new exchange without protocolSources taken, or refused for another reason",
    }
    // In the shared refused family, but built by `control` (through
    // `crate::rules::refusal`), its ids AEX-013 and AEX-015.
    REFUSED {
        key: "agora-exchange/refused*",
        requirements: &["AEX-013", "AEX-015"],
        level: None,
        owner: "",
        summary: "a plain single-round request (protocolHash null, body \"ping\"), a case's control, is accepted",
        fails: "the control request drew no HTTP 200 success; the detail is the status and the words of the error, and the case is blocked",
        passes: "HTTP 200 with status success",
    }
    // Cases (mod.rs). Owner: the case that gives it as its own (`own`, or a
    // `Stop::Finding`), where the code calls no `.owned_by`.
    REQUEST_PROTOCOL_HASH_OPTIONAL {
        key: "agora-exchange/request:protocol-hash-optional",
        requirements: &["AEX-015"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "protocolHash null or absent means no formal protocol; such a request is taken",
        fails: "one of the two forms (protocolHash null, protocolHash absent) refused while the other is taken",
        passes: "both forms answered with HTTP 200 and status success",
    }
    WELLKNOWN_HTTP_STATUS {
        key: "agora-exchange/wellknown:http-status",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "GET /wellknown answers HTTP 200, or 404, 405 or 501 when there is no such endpoint",
        fails: "another status for GET /wellknown; the case is blocked",
        passes: "HTTP 200 with the document, or no endpoint",
    }
    WELLKNOWN_NOT_JSON {
        key: "agora-exchange/wellknown:not-json",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "the /wellknown document is JSON",
        fails: "a /wellknown body that does not parse as JSON; the case is blocked",
        passes: "a JSON body",
    }
    WELLKNOWN_NOT_OBJECT {
        key: "agora-exchange/wellknown:not-object",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "the /wellknown document is a JSON object of protocol hashes",
        fails: "a /wellknown document that is an array or another JSON value; the case is blocked",
        passes: "a JSON object",
    }
    WELLKNOWN_SOURCES {
        key: "agora-exchange/wellknown:sources",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "/wellknown maps each protocol hash to a non-empty list of document sources (strings)",
        fails: "a protocol mapped to an empty list, a list with a non-string, or something other than a list",
        passes: "a non-empty list of strings for every key",
    }
    PROTOCOL_HASH_FORM {
        key: "agora-exchange/protocol-hash:form",
        requirements: &["AEX-039"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "a protocol hash is the 40 hex digits of the SHA1 of its document",
        fails: "a /wellknown key, or the profile's protocol_hash, in another form (base64, a prefix, upper-case hex and the like); it is used as given and reported once",
        passes: "40 hex digits",
    }
    WELLKNOWN_DOCUMENT_HASH {
        key: "agora-exchange/wellknown:document-hash",
        requirements: &["AEX-038"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "each /wellknown key is the SHA1 of its document",
        fails: "a 40-hex key that is the SHA1 of none of its sources, alone or joined",
        passes: "a key that matches its document (sources given as URLs are not fetched)",
    }
    WELLKNOWN_METADATA {
        key: "agora-exchange/wellknown:metadata",
        requirements: &["AEX-036", "AEX-037"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "a protocol document listed in /wellknown has well-formed metadata",
        fails: "a document whose metadata block is missing or malformed",
        passes: "a document with well-formed metadata",
    }
    WELLKNOWN_LISTED_UNSUPPORTED {
        key: "agora-exchange/wellknown:listed-unsupported",
        requirements: &["AEX-046"],
        level: None,
        owner: "agora-exchange/wellknown-hashes-supported",
        summary: "every protocol listed in /wellknown is accepted without protocolSources",
        fails: "a listed protocol refused as unsupported (HTTP 200 failure or a 4xx whose error says \"unsupported\")",
        passes: "every listed protocol taken, or refused for another reason than being unsupported",
    }
    PROFILE_PROTOCOL_HASH {
        key: "agora-exchange/profile:protocol_hash",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "a protocol to run the cases under: the profile's [agora-exchange] protocol_hash, else one /wellknown lists",
        fails: "the target has no /wellknown (or lists no protocol) and the profile names none; the cases that need one are blocked by this key",
        passes: "a protocol found",
        setting: Some("[agora-exchange] protocol_hash"),
    }
    PROFILE_PROTOCOL_UNSUPPORTED {
        key: "agora-exchange/profile:protocol-unsupported",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "the profile's [agora-exchange] protocol_hash names a protocol the target supports",
        fails: "the target refuses the profile's protocol_hash as unsupported; the cases that use it are blocked",
        passes: "the profile's protocol taken",
        setting: Some("[agora-exchange] protocol_hash"),
    }
    UNSUPPORTED_PROTOCOL_REPLY {
        key: "agora-exchange/unsupported-protocol:reply",
        requirements: &["AEX-041", "AEX-052"],
        level: None,
        owner: "agora-exchange/unsupported-protocol",
        summary: "an unsupported protocolHash draws HTTP 200 with {\"status\": \"failure\", \"error\": \"Unsupported protocol\"}",
        fails: "an unsupported protocol refused otherwise: an HTTP 4xx or 5xx, or a reply that is not an Agora-level failure",
        passes: "HTTP 200 with status failure",
    }
    MALFORMED_JSON_2XX {
        key: "agora-exchange/malformed-json:2xx",
        requirements: &["AEX-048", "AEX-049"],
        level: None,
        owner: "agora-exchange/malformed-json",
        summary: "a request the server cannot read (malformed JSON, a JSON array) is not answered with a 2xx",
        fails: "malformed JSON or a JSON array drew an HTTP 2xx, whatever its body says (one finding for both)",
        passes: "an HTTP 4xx for each, 400 for malformed JSON",
    }
    MALFORMED_JSON_NOT_OBJECT {
        key: "agora-exchange/malformed-json:not-object",
        requirements: &["AEX-048"],
        level: None,
        owner: "agora-exchange/malformed-json",
        summary: "a JSON request that is not an object draws an HTTP 4xx",
        fails: "a JSON array as the request drew a 5xx or another status that is neither a 4xx nor a 2xx (a 2xx is malformed-json:2xx)",
        passes: "any HTTP 4xx",
    }
    MALFORMED_JSON_STATUS {
        key: "agora-exchange/malformed-json:status",
        requirements: &["AEX-048", "AEX-049"],
        level: None,
        owner: "agora-exchange/malformed-json",
        summary: "malformed JSON draws HTTP 400 Bad Request (agora-exchange.txt section 10.1)",
        fails: "a request body that is not JSON drew another status than 400 that is no 2xx (a 2xx is malformed-json:2xx)",
        passes: "HTTP 400",
    }
    // Client role (mod.rs, `client_request`).
    CLIENT_CONTENT_TYPE {
        key: "agora-exchange/client:content-type",
        requirements: &["AEX-005"],
        level: None,
        owner: "",
        summary: "a client sends its requests with Content-Type application/json",
        fails: "a client request with another Content-Type or none",
        passes: "Content-Type application/json",
    }
    CLIENT_FOLLOW_UP_PROTOCOL_HASH {
        key: "agora-exchange/client:follow-up-protocol-hash",
        requirements: &["AEX-030"],
        level: None,
        owner: "",
        summary: "a client's follow-up to a conversation leaves protocolHash out",
        fails: "a POST to /conversations/{id} that carries protocolHash (judged on what passes through agentconform proxy; the client cases fail client-conversation for it)",
        passes: "follow-ups without protocolHash, or with it null",
    }
    // The proxy's reading of a real client's follow-up against the conversation it
    // saw (expect::follow_up_against_conversation).
    CLIENT_FOLLOW_UP_UNOPENED {
        key: "agora-exchange/client:follow-up-unopened",
        requirements: &["AEX-025", "AEX-028", "AEX-029"],
        level: None,
        owner: "",
        summary: "a client sends follow-ups only to a conversation a reply opened",
        fails: "a POST to /conversations/{id} whose id no reply through the proxy issued, after the client's opening request went through it (a declined multi-round, an id of the client's own)",
        passes: "follow-ups to conversation ids the server issued",
    }
    CLIENT_FOLLOW_UP_EXPIRED {
        key: "agora-exchange/client:follow-up-expired",
        requirements: &["AEX-022", "AEX-034"],
        level: None,
        owner: "",
        summary: "a client sends no follow-up once its conversation has expired",
        fails: "a follow-up sent (by the proxy's clock, to the whole second) after the conversationExpires of the last reply that gave one",
        passes: "follow-ups before the conversation expires",
    }
    // ------------------------------------------------------------------
    // A case's own subject, judged by a shared check (keyed by the case id).
    FOLLOW_UP {
        key: "agora-exchange/follow-up",
        requirements: &["AEX-021", "AEX-029"],
        level: None,
        owner: "agora-exchange/follow-up",
        summary: "a follow-up's reply names the conversation it was sent to",
        fails: "a reply to a follow-up that names another conversationId",
        passes: "the same conversationId, or none (a warning, AEX-A11)",
    }
    UNKNOWN_CONVERSATION {
        key: "agora-exchange/unknown-conversation",
        requirements: &["AEX-035"],
        level: None,
        owner: "agora-exchange/unknown-conversation",
        summary: "a follow-up to a conversation never issued draws HTTP 404 or an Agora failure",
        fails: "a follow-up to a never-issued conversation answered otherwise (a success, another status without a failure)",
        passes: "HTTP 404, or a failure (with HTTP 200 a warning, AEX-A9)",
    }
    BODY_FORMATS {
        key: "agora-exchange/body-formats",
        requirements: &["AEX-014"],
        level: Some(Level::May),
        owner: "agora-exchange/body-formats",
        summary: "without a protocol, an empty, a Unicode and a nested body draw no transport error",
        fails: "one or more of the bodies drew a status other than HTTP 200 (each named)",
        passes: "HTTP 200 for each",
    }
    MISSING_BODY {
        key: "agora-exchange/missing-body",
        requirements: &["AEX-008"],
        level: Some(Level::Must),
        owner: "agora-exchange/missing-body",
        summary: "a request without body is rejected (an HTTP 4xx or status failure), never answered with success",
        fails: "one or more requests without body were taken (each named: protocolHash null, an empty object)",
        passes: "an HTTP 4xx or HTTP 200 with status failure for each",
    }
}
