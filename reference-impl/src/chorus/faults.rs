//! The chorus fault catalogue.

use crate::fault;
use crate::faults::Fault;

pub const FAULTS: &[Fault] = &[
    fault!(
        "initial-reputation-40",
        "initial reputation",
        "new agents start at 40.0 instead of 50.0",
        ["chorus/register-initial-reputation"]
    ),
    fault!(
        "ranking-ascending",
        "ranking",
        "discover lists the lowest reputation first",
        ["chorus/discover-ranking"]
    ),
    fault!(
        "ignore-min-reputation",
        "filters",
        "discover ignores min_reputation",
        ["chorus/discover-min-reputation"]
    ),
    fault!(
        "ignore-max-cost",
        "filters",
        "discover ignores max_cost",
        ["chorus/discover-max-cost"]
    ),
    fault!(
        "no-clamp",
        "clamping",
        "scores are not clamped to [0, 100]",
        ["chorus/reputation-clamp"]
    ),
    fault!(
        "success-reward-flat",
        "success reward",
        "a SUCCESS adds 2.0 whatever the hirer's reputation",
        ["chorus/reputation-success"]
    ),
    fault!(
        "failure-penalty-3",
        "failure penalty",
        "a FAILURE subtracts 3.0 instead of 4.5",
        ["chorus/reputation-failure"]
    ),
    fault!(
        "ignore-budget",
        "budget check",
        "the fixture agent takes jobs whose budget is below its cost",
        ["chorus/job-budget-insufficient"]
    ),
    fault!(
        "ignore-skill",
        "skill check",
        "the fixture agent takes jobs for skills it does not have",
        ["chorus/job-skill-mismatch"]
    ),
    fault!(
        "allow-overdraft",
        "overdraft",
        "the ledger lets a balance go below zero",
        ["chorus/transfer-insufficient"]
    ),
    fault!(
        "register-200",
        "register status",
        "a registration is answered 200 instead of 201",
        ["chorus/register"]
    ),
    fault!(
        "duplicate-transfer-applied-twice",
        "duplicate transfer",
        "a repeated transfer_id is applied again",
        ["chorus/transfer-idempotent"]
    ),
    fault!(
        "callback-never-sent",
        "callback",
        "the fixture agent answers 202 PENDING and never POSTs the result to callback_url",
        ["chorus/job-echo"]
    ),
];
