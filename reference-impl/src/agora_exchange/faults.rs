//! The agora-exchange fault catalogue.
//!
//! Faults declared with `finding = [...]` must be caught as exactly those failing
//! findings (one for each deviation; only wellknown-bad-hash has two: its keys are
//! not the SHA1 of the documents it serves, and the keys it lists are refused), and
//! no case but their owners may fail.

use crate::fault;
use crate::faults::Fault;

pub const FAULTS: &[Fault] = &[
    fault!("status-capitalized", "failure shape", "replies carry status \"Success\" / \"Failure\"",
        ["agora-exchange/single-round"], finding = ["agora-exchange/reply:status-case"], duty = report_error["agora-exchange/client-status-exact"]),
    fault!("failure-without-error", "body/error exclusivity", "failure replies describe the failure in `body` and carry no `error`",
        ["agora-exchange/reply-shape"], finding = ["agora-exchange/reply:failure-shape"], duty = report_error["agora-exchange/client-failure-reported"]),
    fault!("failure-status-error", "failure shape", "failure replies read {\"status\": \"error\", \"message\": …} instead of {\"status\": \"failure\", \"error\": …}, as some servers spell them",
        ["agora-exchange/reply-shape"], finding = ["agora-exchange/reply:failure-shape"], duty = report_error["agora-exchange/client-status-exact"]),
    fault!("no-conversation-expires", "conversation expiry", "multi-round replies carry conversationId but no conversationExpires",
        ["agora-exchange/multiround-start"], finding = ["agora-exchange/reply:conversation-expires"], duty = may_take),
    fault!("ignore-expiry", "conversation expiry", "an expired conversation goes on answering with success",
        ["agora-exchange/conversation-expiry"], finding = ["agora-exchange/conversation-expiry"], duty = refuse["agora-exchange/client-reads-expiry"]),
    fault!("allow-protocol-change", "protocol change", "a follow-up that names another protocolHash is processed under the original protocol",
        ["agora-exchange/protocol-change-rejected"], finding = ["agora-exchange/protocol-change-rejected"], duty = none),
    fault!("accept-unknown-conversation", "unknown conversation", "a follow-up to a never-issued conversation id is answered with success",
        ["agora-exchange/unknown-conversation"], finding = ["agora-exchange/unknown-conversation"], duty = none),
    fault!("unsupported-protocol-400", "unsupported protocol", "an unsupported protocolHash draws HTTP 400 instead of HTTP 200 with status failure",
        ["agora-exchange/unsupported-protocol"], finding = ["agora-exchange/unsupported-protocol:reply"], duty = none),
    fault!("text-content-type", "content type", "replies are sent with Content-Type text/plain",
        ["agora-exchange/single-round"], finding = ["agora-exchange/reply:content-type"], duty = may_take),
    fault!("wellknown-bad-hash", "wellknown hash", "/wellknown lists each document under the SHA1 of its text with CRLF line endings",
        ["agora-exchange/wellknown", "agora-exchange/wellknown-hashes-supported"],
        finding = ["agora-exchange/wellknown:document-hash", "agora-exchange/wellknown:listed-unsupported"], duty = none),
    fault!("protocol-hash-base64", "hash form", "protocols are listed in /wellknown and accepted in protocolHash under the standard base64 of their SHA1, not its 40 hex digits",
        ["agora-exchange/wellknown"], finding = ["agora-exchange/protocol-hash:form"], duty = none),
    fault!("reject-extra-fields", "extra fields", "a request with a member the server does not know draws HTTP 400",
        ["agora-exchange/extra-fields-ignored"], finding = ["agora-exchange/extra-fields-ignored"], duty = none),
    fault!("require-protocol-hash", "request members", "a new exchange without a protocolHash member draws a web framework's HTTP 422 {\"detail\": [{\"loc\": [\"body\", \"protocolHash\"], \"msg\": \"Field required\"}]} (null is accepted)",
        ["agora-exchange/single-round"], finding = ["agora-exchange/request:protocol-hash-optional"], duty = none),
    fault!("malformed-json-500", "malformed JSON", "malformed JSON draws HTTP 500 instead of 400",
        ["agora-exchange/malformed-json"], finding = ["agora-exchange/malformed-json:status"], duty = none),
    fault!("malformed-request-422", "malformed JSON", "malformed JSON and invalid requests draw a web framework's default HTTP 422 {\"detail\": [...]} instead of HTTP 400",
        ["agora-exchange/malformed-json"], finding = ["agora-exchange/malformed-json:status"], duty = none),
    fault!("protocol-error-as-failure", "protocol-level errors", "a body that breaks the protocol document draws status failure instead of success with body.error",
        ["agora-exchange/protocol-level-error"], finding = ["agora-exchange/protocol-level-error"], duty = none),
    fault!("require-protocol-sources", "request members", "a new exchange without protocolSources is refused with {\"status\": \"failure\", \"error\": \"'protocolSources'\"}, a Python server's KeyError (§6.1 makes the member optional)",
        ["agora-exchange/single-round"], finding = ["agora-exchange/request:protocol-sources-optional"], duty = report_error["agora-exchange/client-failure-reported"]),
    fault!("non-post-empty-200", "POST only", "GET and PUT to the base URL and GET to a conversation are answered HTTP 200 with an empty body and no Content-Type",
        ["agora-exchange/post-only"], finding = ["agora-exchange/post-only"], duty = none),
    fault!("crash-500-html", "unhandled errors", "a JSON array, or an object without `body`, draws HTTP 500 with the framework's HTML error page (an unhandled exception)",
        ["agora-exchange/malformed-json", "agora-exchange/missing-body"], finding = ["agora-exchange/malformed-json:not-object", "agora-exchange/missing-body"], duty = none),
    fault!("wellknown-wrapped", "/wellknown", "GET /wellknown answers {\"status\": \"success\", \"protocols\": {…}}, the map wrapped as a web framework's reply often is",
        ["agora-exchange/wellknown"], finding = ["agora-exchange/wellknown:wrapped"], duty = none),
    fault!("follow-up-crashes-without-body", "unhandled errors", "a follow-up without `body` draws HTTP 500, as a conversation handler that reads request[\"body\"] unchecked; POST / refuses it",
        ["agora-exchange/missing-body"], finding = ["agora-exchange/missing-body"], duty = none),
    fault!("transport-error-200", "error status", "malformed JSON and a JSON array are answered HTTP 200 with {\"status\": \"error\", \"message\": …}, as read requests: one finding for both",
        ["agora-exchange/malformed-json"], finding = ["agora-exchange/malformed-json:2xx"], duty = none),
];
