//! The agora-spaces fault catalogue.

use crate::fault;
use crate::faults::Fault;

pub const FAULTS: &[Fault] = &[
    fault!(
        "no-registered",
        "handshake",
        "never sends agent.registered, neither after connect nor in answer to agent.register",
        ["agora-spaces/handshake"],
        finding = ["agora-spaces/handshake:no-registered"]
    ),
    fault!(
        "no-member-updates",
        "member updates",
        "sends no space.members when agents join or leave",
        ["agora-spaces/member-updates"],
        finding = ["agora-spaces/member-updates"]
    ),
    fault!(
        "no-delta",
        "delta use",
        "delivers texts above the delta threshold as one space.event",
        ["agora-spaces/delta-stream"],
        finding = ["agora-spaces/delta-stream"]
    ),
    fault!(
        "delta-drops-chunk",
        "delta integrity",
        "leaves out the second chunk of every delta stream",
        ["agora-spaces/delta-stream"],
        finding = ["agora-spaces/delta-stream"]
    ),
    fault!(
        "autocreate-system-space",
        "unknown space",
        "creates a missing system space on join instead of SPACE_NOT_FOUND",
        ["agora-spaces/join-missing"],
        finding = ["agora-spaces/join-missing"]
    ),
    fault!(
        "allow-duplicate-agent",
        "duplicate agent",
        "accepts a second connection for a live agent_id",
        ["agora-spaces/duplicate-agent"],
        finding = ["agora-spaces/duplicate-agent"]
    ),
    fault!(
        "error-without-request-id",
        "error request_id",
        "error events carry no request_id",
        ["agora-spaces/join-missing"],
        finding = ["agora-spaces/error:request-id"]
    ),
    fault!(
        "no-heartbeat-timeout",
        "heartbeat timeout",
        "never disconnects a silent client",
        ["agora-spaces/heartbeat-timeout"],
        finding = ["agora-spaces/heartbeat-timeout"]
    ),
    fault!(
        "ignore-cancel",
        "cancel",
        "keeps streaming deltas after space.event.cancel",
        ["agora-spaces/delta-cancel"],
        finding = ["agora-spaces/delta-cancel"]
    ),
    fault!(
        "ignore-capacity",
        "capacity",
        "lets agents join a space beyond its capacity",
        ["agora-spaces/space-full"],
        finding = ["agora-spaces/space-full"]
    ),
    fault!(
        "error-message-only",
        "error shape",
        "error events are {type: \"error\", message} without a code, as web frameworks often send them",
        ["agora-spaces/invalid-requests"],
        finding = ["agora-spaces/error:code"]
    ),
    fault!(
        "members-under-agents",
        "member list",
        "space.members lists the members under `agents` instead of `members`",
        ["agora-spaces/member-updates"],
        finding = ["agora-spaces/members:list"]
    ),
    fault!(
        "registered-agent-id",
        "registered shape",
        "agent.registered names the agent in agent.agent_id instead of agent.id",
        ["agora-spaces/handshake"],
        finding = ["agora-spaces/registered:agent-id"]
    ),
    fault!(
        "connection-id-number",
        "connection id",
        "agent.registered carries connection_id as a number, not a string",
        ["agora-spaces/handshake"],
        finding = ["agora-spaces/registered:connection-id"]
    ),
    fault!(
        "heartbeat-pong",
        "heartbeat shape",
        "answers agent.heartbeat with {type: \"pong\"} instead of an agent.heartbeat",
        ["agora-spaces/heartbeat-keepalive"],
        finding = ["agora-spaces/heartbeat:shape"]
    ),
    fault!(
        "disconnect-drops-all",
        "membership",
        "when a member disconnects, every member of its spaces is removed with it, silently",
        ["agora-spaces/disconnect-keeps-others"],
        finding = ["agora-spaces/disconnect-keeps-others"]
    ),
    fault!(
        "register-takes-live-id",
        "agent ids",
        "agent.register for an agent id that another connection holds is answered agent.registered",
        ["agora-spaces/duplicate-agent"],
        finding = ["agora-spaces/duplicate-agent"]
    ),
];
