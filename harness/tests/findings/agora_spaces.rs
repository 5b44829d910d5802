//! This suite's part of the verdict-model tests: faults switched on together, and
//! tests of its own.

use crate::common::*;
use crate::describe;
use agentconform::case::Outcome;
use agentconform::drive::Transport;
use agentconform::finding::Verdict;
use agentconform::profile::Profile;
use agentconform::runner::{self, Endpoints, Selection};
use agentconform::suites;
use libtest_mimic::{Failed, Trial};

/// Faults switched on together; each must still be reported.
pub const COMBINED: &[&[&str]] = &[
    // An error without a code must not hide the member list under another name.
    &["error-message-only", "members-under-agents"],
    // Three deviations of the shapes the handshake and heartbeats share.
    &[
        "registered-agent-id",
        "connection-id-number",
        "heartbeat-pong",
    ],
    // Errors with neither code nor request_id: both are reported.
    &["error-message-only", "error-without-request-id"],
];

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "agora_spaces::silent_target_is_one_finding::ws-hang",
            || silent_is_one_finding("hang", "agora-spaces/connect:no-answer"),
        ),
        Trial::test(
            "agora_spaces::silent_target_is_one_finding::ws-silent",
            || silent_is_one_finding("ws-silent", "agora-spaces/handshake:no-registered"),
        ),
        Trial::test(
            "agora_spaces::frames_are_read_leniently",
            frames_are_read_leniently,
        ),
        Trial::test(
            "agora_spaces::hub_without_space_creation_falls_back",
            hub_without_space_creation_falls_back,
        ),
        Trial::test(
            "agora_spaces::null_request_id_for_a_frame_without_id_passes",
            null_request_id_for_a_frame_without_id_passes,
        ),
    ]
}

/// The suite against the reference hub with the test token and heartbeat, and
/// `tweak` applied to its settings.
fn run_hub(
    tweak: impl FnOnce(&mut reference_impl::agora_spaces::server::SpacesConfig),
) -> Result<agentconform::runner::RunOutput, String> {
    use reference_impl::agora_spaces::server::SpacesConfig;
    let mut cfg = SpacesConfig {
        token: Some(TEST_TOKEN.into()),
        heartbeat_timeout: std::time::Duration::from_secs(TEST_HEARTBEAT_S),
        ..SpacesConfig::default()
    };
    tweak(&mut cfg);
    rt().block_on(async {
        let server = agentconform::embedded::start_agora_spaces(cfg, "127.0.0.1:0")
            .await
            .expect("start hub");
        let out = runner::run(
            shared(test_profile()),
            &[(&suites::agora_spaces::SUITE, server.endpoints.clone())],
            &Selection::default(),
        )
        .await;
        server.stop().await;
        out
    })
}

/// A hub whose error answering a frame that is not JSON, and so has no id, carries
/// `"request_id": null` (ASP-A7 leaves it undefined): every case passes, the
/// invalid-requests case among them, with no finding, and its transcript shows the
/// null it read.
fn null_request_id_for_a_frame_without_id_passes() -> Result<(), Failed> {
    let out = run_hub(|c| c.null_request_id = true)?;
    explained(&out)?;
    let wrong: Vec<String> = out
        .results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| format!("{} {}: {}", r.outcome, r.id, r.message))
        .collect();
    let read_null = out.results.iter().any(|r| {
        r.id == "agora-spaces/invalid-requests"
            && r.transcript
                .iter()
                .any(|e| e.kind == "recv" && e.text.contains("\"request_id\":null"))
    });
    if out.findings.is_empty() && wrong.is_empty() && read_null {
        Ok(())
    } else {
        Err(format!(
            "a hub whose errors carry request_id null (read in the transcript: {read_null}): {wrong:?}\n{}",
            describe(&out)
        )
        .into())
    }
}

/// A hub that does not create spaces on join (allowed, ASP-A8): no finding, the
/// cases that tell their frames apart by their own ids and texts run in the public
/// space instead (they pass), and every case that needs a space of its own skips
/// with that reason.
fn hub_without_space_creation_falls_back() -> Result<(), Failed> {
    let out = run_hub(|c| c.create_user_spaces = false)?;
    explained(&out)?;
    let fell_back = [
        "agora-spaces/member-updates",
        "agora-spaces/disconnect-keeps-others",
        "agora-spaces/publish-fanout",
        "agora-spaces/order-per-publisher",
    ];
    let mut wrong: Vec<String> = Vec::new();
    for r in &out.results {
        let ok = match r.outcome {
            Outcome::Pass => true,
            Outcome::Skip => !fell_back.contains(&r.id.as_str()) && r.message.contains("ASP-A8"),
            _ => false,
        };
        if !ok {
            wrong.push(format!("{} {}: {}", r.outcome, r.id, r.message));
        }
    }
    if out.findings.is_empty() && wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "a hub that does not create spaces: {wrong:?}\n{}",
            describe(&out)
        )
        .into())
    }
}

/// Server frames in shapes real implementations send: each deviation is one finding
/// with its key (none for what the spec allows), and the frame reads on canonically.
fn frames_are_read_leniently() -> Result<(), Failed> {
    use agentconform::script::Ctx;
    use agentconform::suites::agora_spaces::replies::check_frame;
    use serde_json::{json, Value};
    let shared = shared(Profile::default());
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    // (frame, the findings it gives, member to read, its canonical value)
    let cases: Vec<(Value, Vec<&str>, &str, Value)> = vec![
        (
            json!({"type": "error", "code": "SPACE_NOT_FOUND", "message": "m", "request_id": "r",
                   "timestamp": now, "jsonrpc": "2.0", "extra": true}),
            vec![],
            "/code",
            json!("SPACE_NOT_FOUND"),
        ),
        (
            json!({"type": "error", "error": "SPACE_NOT_FOUND", "message": "m", "timestamp": now}),
            vec!["agora-spaces/error:code"],
            "/code",
            json!("SPACE_NOT_FOUND"),
        ),
        (
            json!({"type": "error", "message": "Space 'x' does not exist", "timestamp": now}),
            vec!["agora-spaces/error:code"],
            "/message",
            json!("Space 'x' does not exist"),
        ),
        (
            json!({"type": "error", "code": "INVALID_REQUEST", "detail": "bad", "requestId": "r", "timestamp": now}),
            vec![
                "agora-spaces/error:message",
                "agora-spaces/error:request-id",
            ],
            "/request_id",
            json!("r"),
        ),
        (
            json!({"jsonrpc": "2.0", "id": "r", "error": {"code": "INVALID_REQUEST", "message": "m"}}),
            vec![
                "agora-spaces/frame:json-rpc",
                "agora-spaces/event:no-timestamp",
            ],
            "/request_id",
            json!("r"),
        ),
        (
            json!({"type": "agent.registered", "agent": {"agent_id": "a", "connection_id": 7}, "timestamp": now}),
            vec![
                "agora-spaces/registered:agent-id",
                "agora-spaces/registered:connection-id",
            ],
            "/agent/connection_id",
            json!("7"),
        ),
        (
            json!({"type": "space.members", "space": "g", "agents": ["a", "b"], "joined": "b", "left": null, "timestamp": now}),
            vec!["agora-spaces/members:list"],
            "/members/1",
            json!("b"),
        ),
        (
            json!({"type": "space.joined", "id": "j", "space": "g", "members": [{"id": "a"}], "timestamp": now}),
            vec!["agora-spaces/joined:members"],
            "/members/0",
            json!("a"),
        ),
        (
            json!({"type": "space.event", "space": "g", "data": {"sender": "a", "content": "hi"}, "timestamp": now}),
            vec!["agora-spaces/event:data"],
            "/data/text",
            json!("hi"),
        ),
        (
            json!({"type": "agent.heartbeat", "timestamp": "2026-02-01T15:08:00Z"}),
            vec!["agora-spaces/event:timestamp"],
            "/type",
            json!("agent.heartbeat"),
        ),
        (
            json!({"type": "pong", "timestamp": now}),
            vec!["agora-spaces/heartbeat:shape"],
            "/type",
            json!("pong"),
        ),
        (
            json!({"type": "space.members", "space": "g", "members": ["a"], "joined": "a", "timestamp": now}),
            vec!["agora-spaces/schema:space-members:/left"],
            "/joined",
            json!("a"),
        ),
    ];
    let mut problems = Vec::new();
    for (frame, want, at, value) in cases {
        let mut ctx = Ctx::new(shared.clone(), Transport::Ws, "ws://127.0.0.1:9/");
        let read = check_frame(&mut ctx, frame.clone());
        let got: Vec<String> = ctx
            .findings()
            .iter()
            .map(|m| m.finding.key.to_string())
            .collect();
        match read {
            Ok(v) if got == want && v.pointer(at) == Some(&value) => {}
            Ok(v) => problems.push(format!(
                "{frame}: findings {got:?}, want {want:?}; read as {v}"
            )),
            Err(f) => problems.push(format!("{frame}: unreadable: {}", f.key)),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}

/// A target that never completes the upgrade (`hang`), or completes it and then says
/// nothing (`ws-silent`), is one failing finding of the handshake case, `key`; every
/// other case is blocked by it, none fails or passes.
fn silent_is_one_finding(kind: &'static str, key: &str) -> Result<(), Failed> {
    let out = rt().block_on(async {
        let url = hostile(kind).await.replacen("http://", "ws://", 1);
        let mut profile = Profile::default();
        profile.timing.case_timeout_ms = 300;
        profile.timing.heartbeat_timeout_s = 1;
        profile.target.token = Some(TEST_TOKEN.into());
        profile.agora_spaces.full_space = Some("full".into());
        runner::run(
            shared(profile),
            &[(
                &suites::agora_spaces::SUITE,
                Endpoints(vec![(Transport::Ws, url)]),
            )],
            &Selection::default(),
        )
        .await
    })?;
    let failing: Vec<&str> = out
        .findings
        .iter()
        .filter(|f| f.finding.outcome == Verdict::Fail)
        .map(|f| f.finding.key.as_str())
        .collect();
    let handshake = "agora-spaces/handshake";
    let stray: Vec<String> = out
        .results
        .iter()
        .filter(|r| match r.outcome {
            Outcome::Fail => r.id != handshake,
            Outcome::Blocked | Outcome::Skip => false,
            Outcome::Pass | Outcome::Warn => true,
        })
        .map(|r| format!("{} {}", r.outcome, r.id))
        .collect();
    if failing == [key] && stray.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "a silent target ({kind}): failing findings {failing:?}, want exactly [{key}]; cases neither blocked nor the owner failing: {stray:?}\n{}",
            describe(&out)
        )
        .into())
    }
}
