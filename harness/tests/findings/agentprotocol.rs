//! This suite's part of the verdict-model tests: faults switched on together, and
//! tests of its own.

use crate::common::*;
use agentconform::case::{Outcome, Suite};
use agentconform::finding::Verdict;
use agentconform::profile::Profile;
use agentconform::runner::{self, RunOutput, Selection};
use agentconform::suites;
use libtest_mimic::{Failed, Trial};
use reference_impl::agentprotocol::message;
use reference_impl::wire::keys::Keypair;
use serde_json::json;

/// Faults switched on together; each must still be reported.
pub const COMBINED: &[&[&str]] = &[
    &[
        "correlation-id-snake-case",
        "capabilities-as-object",
        "reply-ids-not-uuid",
    ],
    &[
        "errors-framework-detail",
        "python-json-signing",
        "error-payload-nested",
    ],
    &[
        "agent-id-hex",
        "wrong-correlation-id",
        "no-details-available",
    ],
    // A refusal of every valid request after hello hides neither the forged
    // signatures a sender that never said hello gets carried out, nor the bare
    // body that answers a malformed message: each claim that needs no refused
    // control is still judged.
    &["refuse-greeted-take-strangers", "invalid-bare-error"],
    // Nor, as the cases go on beside a sender that never said hello once the
    // sender that did is refused, a request to another agent, a delay past its
    // timeout or a malformed request carried out.
    &[
        "refuse-greeted-take-strangers",
        "ignore-to-agent",
        "ignore-timeout",
        "accept-invalid-message",
    ],
];

fn suite() -> &'static Suite {
    &suites::agentprotocol::SUITE
}

/// Runs the suite against the reference with `faults`, under `profile`.
async fn run_with(faults: &[&str], profile: Profile) -> RunOutput {
    let server = suites::start("agentprotocol", "127.0.0.1:0", &test_options(faults))
        .await
        .expect("start agent");
    let out = runner::run(
        shared(profile),
        &[(suite(), server.endpoints.clone())],
        &Selection::default(),
    )
    .await
    .expect("run");
    server.stop().await;
    assert_explained(&out);
    out
}

fn failing(out: &RunOutput) -> Vec<String> {
    out.findings
        .iter()
        .filter(|f| f.finding.outcome == Verdict::Fail)
        .map(|f| f.finding.key.to_string())
        .collect()
}

/// One deviation met over HTTP, WebSocket and files is one finding, which lists
/// the cases of every binding that met it.
fn one_key_over_every_binding() -> Result<(), Failed> {
    let out = rt().block_on(run_with(&["capabilities-as-object"], test_profile()));
    let key = "agentprotocol/capabilities:not-a-list";
    let found: Vec<_> = out
        .findings
        .iter()
        .filter(|f| f.finding.key == key)
        .collect();
    let [f] = found.as_slice() else {
        return Err(format!("{} findings {key}\n{}", found.len(), crate::describe(&out)).into());
    };
    for binding in ["[http]", "[ws]", "[file]"] {
        if !f.cases.iter().any(|c| c.ends_with(binding)) {
            return Err(format!("no case over {binding} lists {key}: {:?}", f.cases).into());
        }
        if !f
            .owners
            .iter()
            .any(|c| c == &format!("agentprotocol/hello {binding}"))
        {
            return Err(format!("hello over {binding} does not own {key}: {:?}", f.owners).into());
        }
    }
    Ok(())
}

/// The target's agentId, asked with a hello over HTTP.
async fn target_id(base: &str) -> Result<String, String> {
    let k = Keypair::generate();
    let mut hello = json!({
        "protocol": message::PROTOCOL, "id": reference_impl::wire::new_id(),
        "timestamp": reference_impl::wire::clock::format_timestamp(time::OffsetDateTime::now_utc()),
        "from": {"agentId": message::agent_id(&k)}, "to": {"broadcast": true},
        "type": "hello", "payload": {"version": "0.1", "features": []},
    });
    message::sign(&mut hello, &k).map_err(|e| e.to_string())?;
    let client = agentconform::drive::http::client().map_err(|e| e.to_string())?;
    let r = client
        .post(format!("{}agentprotocol", base))
        .body(serde_json::to_vec(&hello).map_err(|e| e.to_string())?)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let body = r.bytes().await.map_err(|e| e.to_string())?;
    let v: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    v["from"]["agentId"]
        .as_str()
        .map(String::from)
        .ok_or_else(|| format!("no agentId in {v}"))
}

/// A profile `agent_id` that is not base64 of a 32-byte key (here the target's key
/// in hex, which is what the target answers to) is used, not refused: the first
/// hello is addressed to it, and the deviation is one finding, said once.
fn deviant_profile_agent_id_is_used() -> Result<(), Failed> {
    let out = rt().block_on(async {
        let server = suites::start(
            "agentprotocol",
            "127.0.0.1:0",
            &test_options(&["agent-id-hex"]),
        )
        .await
        .expect("start agent");
        let http = server
            .endpoints
            .0
            .iter()
            .find(|(t, _)| *t == agentconform::drive::Transport::Http)
            .map(|(_, u)| u.clone())
            .unwrap_or_default();
        let id = target_id(&http).await;
        let out = match &id {
            Ok(id) => {
                let mut profile = test_profile();
                profile.agentprotocol.agent_id = Some(id.clone());
                runner::run(
                    shared(profile),
                    &[(suite(), server.endpoints.clone())],
                    &Selection::default(),
                )
                .await
                .map_err(|e| e.to_string())
            }
            Err(e) => Err(e.clone()),
        };
        server.stop().await;
        out
    })?;
    explained(&out)?;
    let want = vec!["agentprotocol/agent-id:encoding".to_string()];
    if failing(&out) != want {
        return Err(format!(
            "failing findings {:?}, want {want:?}\n{}",
            failing(&out),
            crate::describe(&out)
        )
        .into());
    }
    let f = &out
        .findings
        .iter()
        .find(|f| f.finding.key == want[0])
        .ok_or("no finding")?
        .finding;
    if !f
        .summary
        .starts_with("the profile's [agentprotocol] agent_id")
    {
        return Err(format!(
            "the finding does not name the profile's value: {}",
            f.summary
        )
        .into());
    }
    let bad: Vec<_> = out
        .results
        .iter()
        .filter(|r| r.outcome == Outcome::Fail && r.id != "agentprotocol/hello")
        .map(|r| format!("{} [{}]: {}", r.id, r.transport, r.message))
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("cases fail besides hello: {bad:?}").into())
    }
}

/// What the inventory treats as informational never fails a run: TIMEOUT left to
/// the requester (AGP-A18) and UNKNOWN_AGENT for a single agent (AGP-025), once the
/// profile says so.
fn informational_outcomes_never_fail() -> Result<(), Failed> {
    let mut profile = test_profile();
    profile.agentprotocol.timeout_error = false;
    profile.agentprotocol.unknown_agent_error = false;
    let out = rt().block_on(run_with(&["ignore-timeout", "ignore-to-agent"], profile));
    if !failing(&out).is_empty() || out.results.iter().any(|r| r.outcome == Outcome::Fail) {
        return Err(format!(
            "a run fails on informational outcomes\n{}",
            crate::describe(&out)
        )
        .into());
    }
    for key in [
        "agentprotocol/timeout:recorded",
        "agentprotocol/unknown-agent:recorded:carried-out",
    ] {
        if !out.findings.iter().any(|f| f.finding.key == key) {
            return Err(format!("{key} is not recorded\n{}", crate::describe(&out)).into());
        }
    }
    Ok(())
}

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "agentprotocol::one_key_over_every_binding",
            one_key_over_every_binding,
        ),
        Trial::test(
            "agentprotocol::deviant_profile_agent_id_is_used",
            deviant_profile_agent_id_is_used,
        ),
        Trial::test(
            "agentprotocol::informational_outcomes_never_fail",
            informational_outcomes_never_fail,
        ),
    ]
}
