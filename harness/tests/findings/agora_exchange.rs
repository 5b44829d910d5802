//! This suite's part of the verdict-model tests: faults switched on together, and
//! tests of its own.

use crate::common::*;
use crate::{describe, failing_keys};
use agentconform::case::Outcome;
use agentconform::profile::Profile;
use agentconform::runner::{self, RunOutput, Selection};
use agentconform::suites;
use libtest_mimic::{Failed, Trial};
use std::collections::BTreeSet;

/// Faults switched on together; each must still be reported.
pub const COMBINED: &[&[&str]] = &[
    // The server of issue 24: a KeyError for the optional protocolSources, in the
    // {"status": "error", "message": …} shape; its own finding and the shape, and
    // every multi-round case judged past them.
    &["require-protocol-sources", "failure-status-error"],
    // The cascade of issue 11: another failure shape hid the missing
    // conversationExpires and the accepted protocol change.
    &[
        "failure-status-error",
        "no-conversation-expires",
        "allow-protocol-change",
    ],
    // A FastAPI-like server: protocols named in base64, protocolHash required,
    // validation errors as HTTP 422 {"detail": …}.
    &[
        "protocol-hash-base64",
        "require-protocol-hash",
        "malformed-request-422",
    ],
    &[
        "text-content-type",
        "status-capitalized",
        "unsupported-protocol-400",
    ],
];

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "agora_exchange::failure_shape_blocks_no_case",
            failure_shape_blocks_no_case,
        ),
        Trial::test(
            "agora_exchange::profile_hash_in_another_form_is_used",
            profile_hash_in_another_form_is_used,
        ),
        Trial::test(
            "agora_exchange::sources_by_reference_only",
            sources_by_reference_only,
        ),
    ]
}

/// A server that takes protocol documents only by reference (a URL it fetches),
/// which agora-exchange.txt §6.1 allows: with the default profile, the text it
/// refuses ("No valid protocol source provided.") is sent again by reference, the
/// run adopts that form, and no case fails and no finding is made; with
/// `protocol_sources = "url"` the references go first. The server fetched them
/// from the harness's loopback document server.
fn sources_by_reference_only() -> Result<(), Failed> {
    let run = |profile: Profile| {
        let opts = agentconform::embedded::Options {
            sources_by_reference: true,
            ..test_options(&[])
        };
        run_opts(opts, profile)
    };
    for (form, retried) in [("text", true), ("url", false)] {
        let mut profile = test_profile();
        if form == "url" {
            profile.agora_exchange.protocol_sources = agentconform::profile::SourcesForm::Url;
        }
        let out = rt().block_on(run(profile))?;
        let wrong: Vec<String> = out
            .results
            .iter()
            .filter(|r| !matches!(r.outcome, Outcome::Pass | Outcome::Skip))
            .map(|r| format!("{} {}: {}", r.outcome, r.id, r.message))
            .collect();
        let case = out
            .results
            .iter()
            .find(|r| r.id == "agora-exchange/protocol-sources")
            .ok_or("no protocol-sources case")?;
        let notes = |needle: &str| case.transcript.iter().any(|e| e.text.contains(needle));
        let by_reference = notes("protocolSources by reference");
        let retry = notes("the same request once more with the document by reference");
        if !out.findings.is_empty()
            || !wrong.is_empty()
            || case.outcome != Outcome::Pass
            || !by_reference
            || retry != retried
        {
            return Err(format!(
                "protocol_sources = {form:?}: passed {}, by reference {by_reference}, retried {retry} (want {retried}), {wrong:?}\n{}",
                case.outcome,
                describe(&out)
            )
            .into());
        }
    }
    Ok(())
}

async fn run_with(faults: &[&str], profile: Profile) -> Result<RunOutput, String> {
    run_opts(test_options(faults), profile).await
}

/// The suite against the reference started with `opts`, every finding explained.
async fn run_opts(
    opts: agentconform::embedded::Options,
    profile: Profile,
) -> Result<RunOutput, String> {
    let suite = &suites::agora_exchange::SUITE;
    let server = suites::start(suite.id, "127.0.0.1:0", &opts).await?;
    let out = runner::run(
        shared(profile),
        &[(suite, server.endpoints.clone())],
        &Selection::default(),
    )
    .await;
    server.stop().await;
    let out = out?;
    explained(&out)?;
    Ok(out)
}

/// Failure replies spelled `{"status": "error", "message": …}`: one finding, owned by
/// reply-shape, quoting the target's words; every other case reads past it and
/// judges its own subject (none is blocked, none fails).
fn failure_shape_blocks_no_case() -> Result<(), Failed> {
    let out = rt().block_on(run_with(&["failure-status-error"], test_profile()))?;
    let key = "agora-exchange/reply:failure-shape";
    let f = out
        .findings
        .iter()
        .find(|f| f.finding.key == key)
        .ok_or_else(|| format!("no finding {key}\n{}", describe(&out)))?;
    let mut problems = Vec::new();
    if f.owners != ["agora-exchange/reply-shape [http]"] {
        problems.push(format!("owners {:?}", f.owners));
    }
    if f.cases.len() < 3 {
        problems.push(format!("met by only {:?}", f.cases));
    }
    if !f.finding.summary.contains("message") || !f.finding.summary.contains("instead of") {
        problems.push(format!(
            "the summary does not quote the target: {}",
            f.finding.summary
        ));
    }
    let stuck: Vec<String> = out
        .results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Blocked | Outcome::Fail))
        .filter(|r| r.id != "agora-exchange/reply-shape")
        .map(|r| format!("{} {}", r.outcome, r.id))
        .collect();
    if !stuck.is_empty() {
        problems.push(format!(
            "other cases did not judge their subject: {stuck:?}"
        ));
    }
    let want: BTreeSet<String> = [key.to_string()].into();
    if failing_keys(&out) != want {
        problems.push(format!("failing findings {:?}", failing_keys(&out)));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n{}", problems.join("\n"), describe(&out)).into())
    }
}

/// A profile that names the protocol as the target does (base64, not 40 hex) loads,
/// is used by the cases, and the form is one finding of the wellknown case.
fn profile_hash_in_another_form_is_used() -> Result<(), Failed> {
    let hash = reference_impl::agora_exchange::document::sha1_base64(
        reference_impl::agora_exchange::document::ECHO_DOCUMENT.as_bytes(),
    );
    let text = format!("{TEST_PROFILE_TOML}[agora-exchange]\nprotocol_hash = \"{hash}\"\n");
    let profile = Profile::from_toml(&text, "base64.toml").map_err(|e| e.to_string())?;
    if profile.agora_exchange.protocol_hash.as_deref() != Some(hash.as_str()) {
        return Err("the profile lost protocol_hash".into());
    }
    let out = rt().block_on(run_with(&["protocol-hash-base64"], profile))?;
    let want: BTreeSet<String> = ["agora-exchange/protocol-hash:form".to_string()].into();
    let mut problems = Vec::new();
    if failing_keys(&out) != want {
        problems.push(format!("failing findings {:?}", failing_keys(&out)));
    }
    for id in [
        "agora-exchange/protocol-level-error",
        "agora-exchange/protocol-sources",
        "agora-exchange/follow-up",
        "agora-exchange/protocol-change-rejected",
    ] {
        match out.results.iter().find(|r| r.id == id) {
            Some(r) if r.outcome == Outcome::Pass => {}
            Some(r) => problems.push(format!("{id} is {}: {}", r.outcome, r.message)),
            None => problems.push(format!("{id} did not run")),
        }
    }
    match out
        .results
        .iter()
        .find(|r| r.id == "agora-exchange/wellknown")
    {
        Some(r) if r.outcome == Outcome::Fail => {}
        other => problems.push(format!(
            "wellknown does not fail: {:?}",
            other.map(|r| (r.outcome, &r.message))
        )),
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n{}", problems.join("\n"), describe(&out)).into())
    }
}
