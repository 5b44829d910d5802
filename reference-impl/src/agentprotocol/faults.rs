//! The agentprotocol fault catalogue. Every fault is judged as exactly the findings it
//! names (`finding = [...]`): the harness reads replies past each of them, so no other
//! case fails.

use crate::fault;
use crate::faults::Fault;

pub const FAULTS: &[Fault] = &[
    fault!(
        "skip-signature-check",
        "signature checking",
        "never verifies signatures",
        [
            "agentprotocol/reject-tampered",
            "agentprotocol/reject-wrong-key"
        ],
        finding = [
            "agentprotocol/reject-tampered:carried-out",
            "agentprotocol/reject-wrong-key:carried-out"
        ]
    ),
    fault!(
        "unsigned-replies",
        "reply signing",
        "sends replies without a signature",
        ["agentprotocol/hello"],
        finding = ["agentprotocol/signature:missing"]
    ),
    fault!(
        "wrong-correlation-id",
        "correlation",
        "responses carry a correlationId of their own",
        ["agentprotocol/echo-request"],
        finding = ["agentprotocol/correlationId:not-echoed"]
    ),
    fault!(
        "unknown-action-internal-error",
        "unknown action code",
        "an unknown action draws INTERNAL_ERROR instead of CAPABILITY_NOT_SUPPORTED",
        ["agentprotocol/unknown-action"],
        finding = ["agentprotocol/unknown-action:code"]
    ),
    fault!(
        "no-details-available",
        "details.available",
        "CAPABILITY_NOT_SUPPORTED carries no details.available",
        ["agentprotocol/unknown-action"],
        finding = ["agentprotocol/unknown-action:details"]
    ),
    fault!(
        "ignore-to-agent",
        "to.agentId",
        "processes messages addressed to another agent",
        ["agentprotocol/unknown-agent"],
        finding = ["agentprotocol/unknown-agent:carried-out"]
    ),
    fault!(
        "hello-without-capabilities",
        "hello capabilities",
        "answers hello with an empty from.capabilities",
        ["agentprotocol/hello"],
        finding = ["agentprotocol/hello:no-capabilities"]
    ),
    fault!(
        "ignore-timeout",
        "timeout",
        "runs a delay past the request's timeout and answers success",
        ["agentprotocol/timeout"],
        finding = ["agentprotocol/timeout:not-timed-out"]
    ),
    fault!(
        "accept-invalid-message",
        "invalid message",
        "accepts unknown types and params that are not objects",
        ["agentprotocol/invalid-message"],
        finding = ["agentprotocol/invalid-message:accepted"]
    ),
    fault!(
        "errors-framework-detail",
        "error message shape",
        "refuses malformed messages the way a web framework's validation does, before the agent sees them: HTTP 422 with {\"detail\": [{\"loc\", \"msg\", \"type\"}]} instead of an error message (the same body over WebSocket and files)",
        ["agentprotocol/invalid-message"],
        finding = ["agentprotocol/error:not-a-message"]
    ),
    fault!(
        "correlation-id-snake-case",
        "correlationId spelling",
        "responses and errors spell the member correlation_id, as Python implementations often do",
        ["agentprotocol/echo-request"],
        finding = ["agentprotocol/correlationId:renamed"]
    ),
    fault!(
        "capabilities-as-object",
        "capabilities shape",
        "from.capabilities is an object {\"agentprotocol:core\": true, …} instead of a list",
        ["agentprotocol/hello"],
        finding = ["agentprotocol/capabilities:not-a-list"]
    ),
    fault!(
        "reply-ids-not-uuid",
        "message ids",
        "reply ids are prefixed hex (msg_0f3a…), not UUIDs",
        ["agentprotocol/ids-unique"],
        finding = ["agentprotocol/id:not-uuid"]
    ),
    fault!(
        "python-json-signing",
        "signing input",
        "signs json.dumps(message, sort_keys=True) with Python's default separators instead of the RFC 8785 form",
        ["agentprotocol/hello"],
        finding = ["agentprotocol/signature:mismatch"]
    ),
    fault!(
        "error-payload-nested",
        "error payload shape",
        "error payloads nest code, message and details under payload.error",
        ["agentprotocol/unknown-action"],
        finding = ["agentprotocol/error-payload:nested"]
    ),
    fault!(
        "agent-id-hex",
        "agent id encoding",
        "the agent's id (from.agentId, and the to.agentId it answers to) is its key in hex, not base64",
        ["agentprotocol/hello"],
        finding = ["agentprotocol/agent-id:encoding"]
    ),
    fault!(
        "refuse-signed-requests",
        "signature checking",
        "refuses every message but hello, validly signed or not, with one INVALID_SIGNATURE error, as a Node implementation did that handed a parsed object to its verify call",
        ["agentprotocol/echo-request"],
        finding = ["agentprotocol/refused:INVALID_SIGNATURE:verification-error-the-first-argument-must-be-of-type"]
    ),
    fault!(
        "verify-only-after-hello",
        "signature checking",
        "verifies the signatures of senders that said hello, and takes any message from a sender that never did",
        ["agentprotocol/reject-tampered"],
        finding = ["agentprotocol/verify:before-hello"]
    ),
    fault!(
        "timeout-always",
        "timeout",
        "a delay request that carries any timeout waits the timeout out and answers TIMEOUT, even when the delay is far shorter",
        ["agentprotocol/timeout"],
        finding = ["agentprotocol/timeout:within-timeout"]
    ),
    fault!(
        "rate-window-never-resets",
        "rate limiting",
        "a sender's request count never resets: once throttled, it stays RATE_LIMITED for good",
        ["agentprotocol/rate-limit"],
        finding = ["agentprotocol/rate-limit:never-reset"]
    ),
];
