//! The agora-exchange fault catalogue.

use crate::fault;
use crate::faults::Fault;

pub const FAULTS: &[Fault] = &[
    fault!("status-capitalized", "failure shape", "replies carry status \"Success\" / \"Failure\"",
        ["agora-exchange/single-round"]),
    fault!("failure-without-error", "body/error exclusivity", "failure replies describe the failure in `body` and carry no `error`",
        ["agora-exchange/unsupported-protocol"]),
    fault!("no-conversation-expires", "conversation expiry", "multi-round replies carry conversationId but no conversationExpires",
        ["agora-exchange/multiround-start"]),
    fault!("ignore-expiry", "conversation expiry", "an expired conversation goes on answering with success",
        ["agora-exchange/conversation-expiry"]),
    fault!("allow-protocol-change", "protocol change", "a follow-up that names another protocolHash is processed under the original protocol",
        ["agora-exchange/protocol-change-rejected"]),
    fault!("accept-unknown-conversation", "unknown conversation", "a follow-up to a never-issued conversation id is answered with success",
        ["agora-exchange/unknown-conversation"]),
    fault!("unsupported-protocol-400", "unsupported protocol", "an unsupported protocolHash draws HTTP 400 instead of HTTP 200 with status failure",
        ["agora-exchange/unsupported-protocol"]),
    fault!("text-content-type", "content type", "replies are sent with Content-Type text/plain",
        ["agora-exchange/single-round"]),
    fault!("wellknown-bad-hash", "wellknown hash", "/wellknown lists each document under the SHA1 of its text with CRLF line endings",
        ["agora-exchange/wellknown"]),
    fault!("reject-extra-fields", "extra fields", "a request with a member the server does not know draws HTTP 400",
        ["agora-exchange/extra-fields-ignored"]),
    fault!("malformed-json-500", "malformed JSON", "malformed JSON draws HTTP 500 instead of 400",
        ["agora-exchange/malformed-json"]),
    fault!("protocol-error-as-failure", "protocol-level errors", "a body that breaks the protocol document draws status failure instead of success with body.error",
        ["agora-exchange/protocol-level-error"]),
];
