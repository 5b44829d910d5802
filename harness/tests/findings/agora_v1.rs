//! This suite's part of the verdict-model tests: faults switched on together, and
//! tests of its own: the variants (behaviours real implementations show that the
//! spec allows or only warns about) give no failure, only the warnings they name.

use crate::common::*;
use crate::describe;
use agentconform::case::Outcome;
use agentconform::embedded;
use agentconform::finding::Verdict;
use agentconform::runner::{self, Selection};
use agentconform::suites;
use libtest_mimic::{Failed, Trial};
use reference_impl::agora_v1::agent::AgentConfig;
use reference_impl::agora_v1::faults::VARIANTS;
use std::collections::BTreeSet;

/// Faults switched on together; each must still be reported.
pub const COMBINED: &[&[&str]] = &[
    // An ERROR shape and a RESULT shape: every rejection case reads the nested
    // code, every completion reads `result` as the output.
    &["error-code-nested", "result-data-renamed"],
    // Three envelope rules at once: none hides another.
    &["naive-timestamps", "unsigned-replies", "wrong-protocol-tag"],
    // Ids, encoding and RESULT status: the negotiated flow still works under
    // reused ids, and the hex signature still verifies.
    &[
        "reuse-request-id",
        "signature-hex",
        "result-status-uppercase",
    ],
];

/// Runs the suite (without the burst case) against the reference agent with
/// `variant` switched on.
fn variant_passes(variant: &'static str) -> Result<(), Failed> {
    let v = VARIANTS
        .iter()
        .find(|v| v.name == variant)
        .ok_or("no such variant")?;
    let out = rt().block_on(async {
        let mut cfg = AgentConfig::default().with_variants(&[variant])?;
        cfg.offer_ttl_ms = TEST_TTL_MS;
        let server = embedded::start_agora_v1(cfg, "127.0.0.1:0").await?;
        let selection = Selection {
            exclude: vec!["agora-v1/rate-limit-burst".into()],
            ..Selection::default()
        };
        let out = runner::run(
            shared(test_profile()),
            &[(&suites::agora_v1::SUITE, server.endpoints.clone())],
            &selection,
        )
        .await;
        server.stop().await;
        out
    })?;
    explained(&out)?;
    let failing: Vec<&str> = out
        .findings
        .iter()
        .filter(|f| f.finding.outcome == Verdict::Fail)
        .map(|f| f.finding.key.as_str())
        .collect();
    let warns: BTreeSet<&str> = out
        .findings
        .iter()
        .filter(|f| f.finding.outcome == Verdict::Warn)
        .map(|f| f.finding.key.as_str())
        .collect();
    let want: BTreeSet<&str> = v.warns.iter().copied().collect();
    let bad_cases: Vec<&str> = out
        .results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail | Outcome::Blocked))
        .map(|r| r.id.as_str())
        .collect();
    // The silent variant must have been met as silence, and judged alive.
    let silent_judged = out.results.iter().any(|r| {
        r.transcript
            .iter()
            .any(|e| e.text.contains("a silent refusal (AV1-A5)"))
    });
    if variant == "silent-refusals" && !silent_judged {
        return Err(format!(
            "variant {variant}: no case met a silent refusal\n{}",
            describe(&out)
        )
        .into());
    }
    if failing.is_empty() && bad_cases.is_empty() && warns == want {
        Ok(())
    } else {
        Err(format!(
            "variant {variant}: failing findings {failing:?}, cases failed or blocked {bad_cases:?}, warnings {warns:?} (want {want:?})\n{}",
            describe(&out)
        )
        .into())
    }
}

pub fn trials() -> Vec<Trial> {
    VARIANTS
        .iter()
        .map(|v| {
            let name = v.name;
            Trial::test(format!("agora_v1::variant::{name}"), move || {
                variant_passes(name)
            })
        })
        .collect()
}
