//! The agentprotocol fault catalogue.

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
        ]
    ),
    fault!(
        "unsigned-replies",
        "reply signing",
        "sends replies without a signature",
        ["agentprotocol/hello"]
    ),
    fault!(
        "wrong-correlation-id",
        "correlation",
        "responses carry a correlationId of their own",
        ["agentprotocol/echo-request"]
    ),
    fault!(
        "unknown-action-internal-error",
        "unknown action code",
        "an unknown action draws INTERNAL_ERROR instead of CAPABILITY_NOT_SUPPORTED",
        ["agentprotocol/unknown-action"]
    ),
    fault!(
        "no-details-available",
        "details.available",
        "CAPABILITY_NOT_SUPPORTED carries no details.available",
        ["agentprotocol/unknown-action"]
    ),
    fault!(
        "ignore-to-agent",
        "to.agentId",
        "processes messages addressed to another agent",
        ["agentprotocol/unknown-agent"]
    ),
    fault!(
        "hello-without-capabilities",
        "hello capabilities",
        "answers hello with an empty from.capabilities",
        ["agentprotocol/hello"]
    ),
    fault!(
        "ignore-timeout",
        "timeout",
        "runs a delay past the request's timeout and answers success",
        ["agentprotocol/timeout"]
    ),
    fault!(
        "accept-invalid-message",
        "invalid message",
        "accepts unknown types and params that are not objects",
        ["agentprotocol/invalid-message"]
    ),
];
