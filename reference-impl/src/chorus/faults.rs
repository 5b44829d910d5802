//! The chorus fault catalogue.

use crate::fault;
use crate::faults::Fault;

pub const FAULTS: &[Fault] = &[
    fault!(
        "initial-reputation-40",
        "initial reputation",
        "new agents start at 40.0 instead of 50.0",
        ["chorus/register-initial-reputation"],
        finding = ["chorus/reputation:initial"]
    ),
    fault!(
        "ranking-ascending",
        "ranking",
        "discover lists the lowest reputation first",
        ["chorus/discover-ranking"],
        finding = ["chorus/discover:ranking"]
    ),
    fault!(
        "ignore-min-reputation",
        "filters",
        "discover ignores min_reputation",
        ["chorus/discover-min-reputation"],
        finding = ["chorus/discover-min-reputation"]
    ),
    fault!(
        "ignore-max-cost",
        "filters",
        "discover ignores max_cost",
        ["chorus/discover-max-cost"],
        finding = ["chorus/discover-max-cost"]
    ),
    fault!(
        "no-clamp",
        "clamping",
        "scores are not clamped to [0, 100]",
        ["chorus/reputation-clamp"],
        finding = ["chorus/reputation:clamp"]
    ),
    fault!(
        "success-reward-flat",
        "success reward",
        "a SUCCESS adds 2.0 whatever the hirer's reputation",
        ["chorus/reputation-success"],
        finding = ["chorus/reputation:success-gain"]
    ),
    fault!(
        "failure-penalty-3",
        "failure penalty",
        "a FAILURE subtracts 3.0 instead of 4.5",
        ["chorus/reputation-failure"],
        finding = ["chorus/reputation:failure-penalty"]
    ),
    fault!(
        "ignore-budget",
        "budget check",
        "the fixture agent takes jobs whose budget is below its cost",
        ["chorus/job-budget-insufficient"],
        finding = ["chorus/job-budget-insufficient"]
    ),
    fault!(
        "ignore-skill",
        "skill check",
        "the fixture agent takes jobs for skills it does not have",
        ["chorus/job-skill-mismatch"],
        finding = ["chorus/job-skill-mismatch"]
    ),
    fault!(
        "allow-overdraft",
        "overdraft",
        "the ledger lets a balance go below zero",
        ["chorus/transfer-insufficient"],
        finding = ["chorus/transfer-insufficient"]
    ),
    fault!(
        "register-200",
        "register status",
        "a registration is answered 200 instead of 201",
        ["chorus/register"],
        finding = ["chorus/register:status"]
    ),
    fault!(
        "duplicate-transfer-applied-twice",
        "duplicate transfer",
        "a repeated transfer_id is applied again",
        ["chorus/transfer-idempotent"],
        finding = ["chorus/transfer-idempotent"]
    ),
    fault!(
        "callback-never-sent",
        "callback",
        "the fixture agent answers 202 PENDING and never POSTs the result to callback_url",
        ["chorus/job-echo"],
        finding = ["chorus/job:no-callback"]
    ),
    // Modelled on deviations of real implementations: each is one finding.
    fault!(
        "discover-skills-list",
        "discovery shape",
        "discovery entries carry the agent's whole `skills` list instead of one `skill` object",
        ["chorus/discover-by-skill"],
        finding = ["chorus/discover-entry:skills-list"]
    ),
    fault!(
        "skill-mismatch-detail-404",
        "error shape",
        "a job for a skill the agent lacks is answered in a web framework's default shape, HTTP 404 {\"detail\": …}, without SKILL_MISMATCH",
        ["chorus/job-skill-mismatch"],
        finding = ["chorus/job-skill-mismatch"]
    ),
    fault!(
        "transfer-failed-200",
        "error status",
        "TRANSFER_FAILED comes with HTTP 200 and status \"failed\" instead of an error status",
        ["chorus/transfer-insufficient"],
        finding = ["chorus/refusal-http-200:TRANSFER_FAILED"]
    ),
    fault!(
        "agent-ids-hex",
        "id encoding",
        "the registry answers agent ids as 32 hex digits without hyphens (registration reply and discovery)",
        ["chorus/register"],
        finding = ["chorus/agent-id:encoding"]
    ),
    fault!(
        "result-status-lowercase",
        "result status",
        "the fixture agent's results spell the status in lower case (\"success\", \"failure\")",
        ["chorus/job-echo"],
        finding = ["chorus/schema:job-result:/status"]
    ),
    fault!(
        "accept-any-job-id",
        "job validation",
        "the fixture agent takes a job whose job_id is not a UUID (\"123\") and echoes that id in its result",
        ["chorus/job-rejects-invalid"],
        finding = ["chorus/job-rejects-invalid"]
    ),
    fault!(
        "transfer-recipient-not-credited",
        "transfer",
        "a transfer debits from_owner and answers completed, but never credits to_owner",
        ["chorus/transfer-credits-recipient"],
        finding = ["chorus/transfer-credits-recipient"]
    ),
];
