//! The rules of chorus: every finding key its cases and reply checks give, with the
//! requirement ids, the level where the ids do not decide it, the case that owns
//! it, and what passes and what fails. The keys that are a case's own id (its own
//! failure) and the shared families (`rules::SHARED`) are not repeated here.
use crate::case::Level;
use crate::rules::rules;

rules! {
    // ------------------------------------------------------------------
    // Any reply
    REPLY_NOT_JSON {
        key: "chorus/reply:not-json",
        requirements: &["CHO-001"],
        level: None,
        owner: "chorus/register",
        summary: "a reply the spec defines as JSON has a JSON body",
        fails: "a reply (registration, discovery, or a recorded one read again) whose body is not JSON, or is empty; the case that needs it is blocked",
        passes: "a JSON body",
    }
    ERROR_CODE {
        key: "chorus/error-code:*",
        requirements: &["CHO-046"],
        level: Some(Level::Should),
        owner: "chorus/job-skill-mismatch",
        summary: "a refusal carries only the error codes of chorus.md section 5",
        fails: "a refusal carries an upper-case code that is not SKILL_MISMATCH, BUDGET_INSUFFICIENT, AGENT_OFFLINE, EXECUTION_ERROR or TRANSFER_FAILED; the detail names the code",
        passes: "a refusal with no code, or with one of chorus.md section 5",
    }
    PROFILE_SETUP_REQUESTS {
        key: "chorus/profile:setup_requests:*",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "the profile's setup requests ([[chorus.setup_requests]]) are taken by the target",
        fails: "a setup request of the profile answered with a non-2xx status or a 2xx that says no; the detail is its event (case, agent, job, owner, transfer): fix it in the profile",
        passes: "every setup request for the event taken",
        setting: Some("[chorus] setup_requests"),
    }
    // ------------------------------------------------------------------
    // Registration
    REGISTER_REFUSED {
        key: "chorus/register:refused",
        requirements: &["CHO-008", "CHO-012"],
        level: None,
        owner: "chorus/register",
        summary: "a complete registration is accepted",
        fails: "POST /register with a complete registration is answered with a non-2xx status or a 2xx that says no; the case that registers is blocked",
        passes: "the registration taken with a 2xx that does not refuse it",
    }
    REGISTER_STATUS {
        key: "chorus/register:status",
        requirements: &["CHO-012"],
        level: None,
        owner: "",
        summary: "a registration is answered 201 Created",
        fails: "a registration is answered with another 2xx status than 201",
        passes: "HTTP 201",
    }
    SCHEMA_REGISTER_RESPONSE {
        key: "chorus/schema:register-response:*",
        requirements: &["CHO-013"],
        level: None,
        owner: "chorus/register",
        summary: "the registration reply matches the register-response schema",
        fails: "a member of the registration reply missing, of another type or outside its pattern; the key names the JSON pointer",
        passes: "a registration reply the schema validates",
    }
    REGISTER_AGENT_ID {
        key: "chorus/register:agent-id",
        requirements: &["CHO-013"],
        level: None,
        owner: "",
        summary: "the registration reply names the agent that was registered",
        fails: "the reply's agent_id is missing or names another agent than the registered one (however the UUID is written)",
        passes: "the registered agent_id echoed",
    }
    AGENT_ID_ENCODING {
        key: "chorus/agent-id:encoding",
        requirements: &["CHO-002"],
        level: None,
        owner: "chorus/register",
        summary: "an agent id is written as a UUID string",
        fails: "a registration reply or a discovery entry writes the agent id as the same UUID in another encoding (upper case, no hyphens, braces, urn:uuid:)",
        passes: "the agent id in canonical UUID form",
    }
    REPUTATION_INITIAL {
        key: "chorus/reputation:initial",
        requirements: &["CHO-014"],
        level: None,
        owner: "chorus/register-initial-reputation",
        summary: "a new agent starts at reputation_score 50.0",
        fails: "the registration reply or discovery shows a new agent at another reputation_score than 50.0",
        passes: "50.0 on registration and in discovery",
    }
    // ------------------------------------------------------------------
    // Discovery
    DISCOVER_404_FOR_NO_MATCH {
        key: "chorus/discover:404-for-no-match",
        requirements: &["CHO-016", "CHO-A12"],
        level: Some(Level::Should),
        owner: "chorus/discover-by-skill",
        summary: "a discovery that matches no agent is answered 200 with an empty list",
        fails: "GET /discover answered HTTP 404 where 200 with an empty list is expected; read as no match",
        passes: "HTTP 200 with an empty agents list",
    }
    DISCOVER_REFUSED {
        key: "chorus/discover:refused",
        requirements: &["CHO-016"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "GET /discover with a skill query is answered with a 2xx",
        fails: "GET /discover answered with a status other than 2xx and 404; the case that needs the list is blocked",
        passes: "a 2xx reply",
    }
    DISCOVER_STATUS {
        key: "chorus/discover:status",
        requirements: &["CHO-016"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "GET /discover is answered 200 OK",
        fails: "GET /discover answered with another 2xx status than 200",
        passes: "HTTP 200",
    }
    DISCOVER_LIST_SHAPE {
        key: "chorus/discover:list-shape",
        requirements: &["CHO-017"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "discovery lists the agents under \"agents\"",
        fails: "the reply is a bare list, or lists the agents under another member than \"agents\"; read past",
        passes: "{\"agents\": [...]}",
    }
    DISCOVER_ENTRY_SKILLS_LIST {
        key: "chorus/discover-entry:skills-list",
        requirements: &["CHO-017", "CHO-018"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "a discovery entry shows the one matched skill as a `skill` object",
        fails: "entries carry a `skills` list instead of the one matched `skill` object; read past",
        passes: "a `skill` object per entry",
    }
    DISCOVER_ENTRY_SKILL_NAME_ONLY {
        key: "chorus/discover-entry:skill-name-only",
        requirements: &["CHO-017", "CHO-018"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "a discovery entry's `skill` is an object {skill_name, cost_per_call}",
        fails: "an entry's `skill` is the skill name as a string, not an object; read past",
        passes: "a `skill` object with skill_name and cost_per_call",
    }
    // Two sites: the discovery check gives CHO-007 and CHO-045, the reputation
    // check after outcomes CHO-045 alone; the union.
    REPUTATION_CLAMP {
        key: "chorus/reputation:clamp",
        requirements: &["CHO-007", "CHO-045"],
        level: None,
        owner: "chorus/reputation-clamp",
        summary: "reputation scores stay within [0.0, 100.0], clamped after each outcome",
        fails: "discovery shows a score outside [0.0, 100.0], or a score after outcomes that differs from the formula clamped to [0.0, 100.0]",
        passes: "every score in range, and the clamped value after outcomes past a bound",
    }
    DISCOVER_RANKING {
        key: "chorus/discover:ranking",
        requirements: &["CHO-021"],
        level: None,
        owner: "chorus/discover-ranking",
        summary: "discovery ranks agents by reputation, highest first",
        fails: "a discovery list where a later entry has a higher reputation_score than an earlier one",
        passes: "scores in non-increasing order, on every list",
    }
    SCHEMA_DISCOVER_RESPONSE {
        key: "chorus/schema:discover-response:*",
        requirements: &["CHO-017"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "the discovery reply matches the discover-response schema",
        fails: "a member of the list or of an entry missing, of another type or outside its pattern (judged after the shapes above are read past)",
        passes: "a discovery reply the schema validates",
    }
    DISCOVER_AGENT_MISSING {
        key: "chorus/discover:agent-missing",
        requirements: &["CHO-015"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "a registered agent is listed by discovery under its skill",
        fails: "an agent registered with a skill is not listed by GET /discover?skill=<it>; the case is blocked",
        passes: "the agent listed",
    }
    DISCOVER_NO_SCORE {
        key: "chorus/discover:no-score",
        requirements: &["CHO-017"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "a discovery entry carries a numeric reputation_score",
        fails: "an agent is listed without a numeric reputation_score; the case that reads the score is blocked",
        passes: "a numeric reputation_score",
    }
    // ------------------------------------------------------------------
    // Reputation
    PROFILE_OUTCOME_REQUEST {
        key: "chorus/profile:outcome_request",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/reputation-success",
        summary: "the profile's outcome request ([chorus] outcome_request, outcome_body) is taken by the registry",
        fails: "the outcome request is answered with a non-2xx status or a 2xx that says no: set outcome_request and outcome_body to what the registry takes (CHO-A1)",
        passes: "the outcome report taken",
        setting: Some("[chorus] outcome_request"),
    }
    REPUTATION_SUCCESS_GAIN {
        key: "chorus/reputation:success-gain",
        requirements: &["CHO-042", "CHO-043"],
        level: None,
        owner: "chorus/reputation-success",
        summary: "a SUCCESS adds 2.0 x the hirer's reputation / 100",
        fails: "after SUCCESS outcomes discovery shows a score off the formula by more than a two-decimal rounding",
        passes: "the formula's score, exact or rounded to two decimals (CHO-A10)",
    }
    REPUTATION_FAILURE_PENALTY {
        key: "chorus/reputation:failure-penalty",
        requirements: &["CHO-044"],
        level: None,
        owner: "chorus/reputation-failure",
        summary: "a FAILURE subtracts 4.5",
        fails: "after FAILURE outcomes discovery shows a score off the formula by more than a two-decimal rounding",
        passes: "the formula's score, exact or rounded to two decimals (CHO-A10)",
    }
    PROFILE_HIRER_REPUTATION {
        key: "chorus/profile:hirer_reputation",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/reputation-success",
        summary: "the outcome request tells the registry the hirer's reputation where it needs it",
        fails: "a SUCCESS gain is off and the profile's outcome request has no {hirer_reputation}: put it in [chorus] outcome_body or outcome_request if the registry takes it from the request",
        passes: "the gain matches, or the outcome request carries {hirer_reputation}",
        setting: Some("[chorus] hirer_reputation"),
    }
    // ------------------------------------------------------------------
    // Jobs
    PROFILE_FIXTURE_SKILL {
        key: "chorus/profile:fixture_skill",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/job-echo",
        summary: "an agent is listed under the profile's fixture skill ([chorus] fixture_skill)",
        fails: "discovery lists no agent under the fixture skill: set fixture_skill to the skill of the agent the target registers at start-up",
        passes: "the fixture agent listed",
        setting: Some("[chorus] fixture_skill"),
    }
    PROFILE_RESULT_DELIVERY {
        key: "chorus/profile:result_delivery",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/job-echo",
        summary: "job results come as the profile's [chorus] result_delivery says (sync, callback or either)",
        fails: "a result in the /jobs response where the profile says callback, or none there where it says sync",
        passes: "the result delivered the way the profile declares",
        setting: Some("[chorus] result_delivery"),
    }
    JOB_NO_CALLBACK {
        key: "chorus/job:no-callback",
        requirements: &["CHO-026"],
        level: None,
        owner: "chorus/job-echo",
        summary: "a job answered without a final result gets its result POSTed to callback_url",
        fails: "/jobs answered without a final result and no result was POSTed to callback_url within the case timeout",
        passes: "a final result at callback_url in time",
    }
    JOB_CALLBACK_NOT_JSON {
        key: "chorus/job:callback-not-json",
        requirements: &["CHO-001", "CHO-026"],
        level: None,
        owner: "chorus/job-echo",
        summary: "the result POSTed to callback_url is JSON",
        fails: "the body POSTed to callback_url is not JSON",
        passes: "a JSON result body",
    }
    SCHEMA_JOB_RESULT {
        key: "chorus/schema:job-result:*",
        requirements: &["CHO-029"],
        level: None,
        owner: "chorus/job-echo",
        summary: "a final job result matches the job-result schema",
        fails: "a member of the result (timestamp, status, ids, cost, error_message) missing, of another type or outside its pattern; values the job sent invalid on purpose are not judged",
        passes: "a result the schema validates",
    }
    PROFILE_FIXTURE_INPUT {
        key: "chorus/profile:fixture_input",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/job-echo",
        summary: "the fixture agent completes a valid job with the profile's [chorus] fixture_input",
        fails: "the fixture refuses a valid job or answers it with FAILURE: set fixture_input to an input the fixture takes",
        passes: "a SUCCESS result",
        setting: Some("[chorus] fixture_input"),
    }
    JOB_RESULT_JOB_ID {
        key: "chorus/job-result:job-id",
        requirements: &["CHO-030"],
        level: None,
        owner: "",
        summary: "a job result names the job it answers",
        fails: "the result's job_id is not the request's (however the UUID is written)",
        passes: "the request's job_id",
    }
    JOB_RESULT_AGENT_ID {
        key: "chorus/job-result:agent-id",
        requirements: &["CHO-030"],
        level: None,
        owner: "",
        summary: "a job result names the agent that ran it",
        fails: "the result's agent_id is not the registered agent's",
        passes: "the registered agent_id",
    }
    PROFILE_FIXTURE_OUTPUT {
        key: "chorus/profile:fixture_output",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "the fixture's output_data holds what the profile's [chorus] fixture_output describes",
        fails: "the output_data does not hold the members of fixture_output: set it to what the fixture returns",
        passes: "output_data holding fixture_output",
        setting: Some("[chorus] fixture_output"),
    }
    JOB_RESULT_COST_DECIMALS {
        key: "chorus/job-result:cost-decimals",
        requirements: &["CHO-005", "CHO-033"],
        level: None,
        owner: "",
        summary: "execution_cost has at most two decimals",
        fails: "an execution_cost with more than two decimals",
        passes: "credits to the cent",
    }
    JOB_RESULT_TIME {
        key: "chorus/job-result:time",
        requirements: &["CHO-034"],
        level: None,
        owner: "",
        summary: "execution_time_ms is no longer than the job took",
        fails: "execution_time_ms exceeds the observed round trip by more than a second",
        passes: "a time within the round trip",
    }
    PROFILE_FIXTURE_FAILING_INPUT {
        key: "chorus/profile:fixture_failing_input",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "the profile's [chorus] fixture_failing_input is an input the fixture fails on",
        fails: "the fixture processed that input with a result other than FAILURE: set it to an input the fixture fails on",
        passes: "a FAILURE result, or a refusal (a warning)",
        setting: Some("[chorus] fixture_failing_input"),
    }
    // ------------------------------------------------------------------
    // Refusals in a 2xx (CHO-A5): the code's rule owns it.
    REFUSAL_HTTP_200 {
        key: "chorus/refusal-http-200",
        requirements: &["CHO-A5"],
        level: None,
        owner: "chorus/register-rejects-invalid",
        summary: "a refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "an invalid message refused in a 2xx reply that says no (a failure status word), without a chorus.md section 5 code",
        passes: "a 4xx/5xx, or a FAILURE result",
    }
    REFUSAL_HTTP_200_SKILL_MISMATCH {
        key: "chorus/refusal-http-200:SKILL_MISMATCH",
        requirements: &["CHO-027", "CHO-A5"],
        level: None,
        owner: "chorus/job-skill-mismatch",
        summary: "a SKILL_MISMATCH refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "the refusal with SKILL_MISMATCH came in a 2xx reply",
        passes: "SKILL_MISMATCH with a 4xx/5xx, or in a FAILURE result",
    }
    REFUSAL_HTTP_200_BUDGET_INSUFFICIENT {
        key: "chorus/refusal-http-200:BUDGET_INSUFFICIENT",
        requirements: &["CHO-028", "CHO-A5"],
        level: None,
        owner: "chorus/job-budget-insufficient",
        summary: "a BUDGET_INSUFFICIENT refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "the refusal with BUDGET_INSUFFICIENT came in a 2xx reply",
        passes: "BUDGET_INSUFFICIENT with a 4xx/5xx, or in a FAILURE result",
    }
    REFUSAL_HTTP_200_AGENT_OFFLINE {
        key: "chorus/refusal-http-200:AGENT_OFFLINE",
        requirements: &["CHO-037", "CHO-A5"],
        level: None,
        owner: "chorus/job-skill-mismatch",
        summary: "an AGENT_OFFLINE refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "the refusal with AGENT_OFFLINE came in a 2xx reply",
        passes: "AGENT_OFFLINE with a 4xx/5xx, or in a FAILURE result",
    }
    REFUSAL_HTTP_200_EXECUTION_ERROR {
        key: "chorus/refusal-http-200:EXECUTION_ERROR",
        requirements: &["CHO-036", "CHO-A5"],
        level: None,
        owner: "chorus/job-skill-mismatch",
        summary: "an EXECUTION_ERROR refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "the refusal with EXECUTION_ERROR came in a 2xx reply",
        passes: "EXECUTION_ERROR with a 4xx/5xx, or in a FAILURE result",
    }
    REFUSAL_HTTP_200_TRANSFER_FAILED {
        key: "chorus/refusal-http-200:TRANSFER_FAILED",
        requirements: &["CHO-040", "CHO-A5"],
        level: None,
        owner: "chorus/transfer-insufficient",
        summary: "a TRANSFER_FAILED refusal comes as a 4xx/5xx status",
        fails: "the refusal with TRANSFER_FAILED came in a 2xx reply",
        passes: "TRANSFER_FAILED with a 4xx/5xx",
    }
    TRANSFER_AMOUNT_POSITIVE_TAKEN {
        key: "chorus/transfer-amount-positive:taken",
        requirements: &["CHO-047"],
        level: None,
        owner: "chorus/transfer-amount-positive",
        summary: "a transfer of 0 or of a negative amount is refused (derived: a transfer moves credits from from_owner to to_owner)",
        fails: "a transfer of 0 or -10 credits taken; one finding for both",
        passes: "each refused, with a 4xx or TRANSFER_FAILED",
    }
    REFUSAL_WITHOUT_CODE_SKILL_MISMATCH {
        key: "chorus/refusal-without-code:SKILL_MISMATCH",
        requirements: &["CHO-027"],
        level: None,
        owner: "chorus/job-skill-mismatch",
        summary: "a refusal where chorus.md names SKILL_MISMATCH carries SKILL_MISMATCH",
        fails: "the refusal carries no SKILL_MISMATCH (in any top-level member, or a FAILURE result's error_message); one finding however many cases meet it",
        passes: "SKILL_MISMATCH in the refusal",
    }
    REFUSAL_WITHOUT_CODE_BUDGET_INSUFFICIENT {
        key: "chorus/refusal-without-code:BUDGET_INSUFFICIENT",
        requirements: &["CHO-028"],
        level: None,
        owner: "chorus/job-budget-insufficient",
        summary: "a refusal where chorus.md names BUDGET_INSUFFICIENT carries BUDGET_INSUFFICIENT",
        fails: "the refusal carries no BUDGET_INSUFFICIENT (in any top-level member, or a FAILURE result's error_message); one finding however many cases meet it",
        passes: "BUDGET_INSUFFICIENT in the refusal",
    }
    REFUSAL_WITHOUT_CODE_TRANSFER_FAILED {
        key: "chorus/refusal-without-code:TRANSFER_FAILED",
        requirements: &["CHO-040"],
        level: None,
        owner: "chorus/transfer-insufficient",
        summary: "a refusal where chorus.md names TRANSFER_FAILED carries TRANSFER_FAILED",
        fails: "the refusal carries no TRANSFER_FAILED (in any top-level member, or a FAILURE result's error_message); one finding however many cases meet it",
        passes: "TRANSFER_FAILED in the refusal",
    }
    // ------------------------------------------------------------------
    // Ledger
    TRANSFER_REFUSED {
        key: "chorus/transfer:refused",
        requirements: &["CHO-038", "CHO-039"],
        level: None,
        owner: "chorus/transfer",
        summary: "a complete transfer within a fresh owner's credits is taken",
        fails: "POST /transfer with a complete transfer is refused otherwise than with TRANSFER_FAILED; the case is blocked",
        passes: "a 2xx that does not refuse it",
    }
    PROFILE_LEDGER_URL {
        key: "chorus/profile:ledger_url",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/transfer",
        summary: "transfers go to the ledger's base URL ([target] ledger_url, else the target's)",
        fails: "never fails: POST /transfer answered HTTP 404 or 405 there, so no ledger is at that URL; the transfer cases are blocked until [target] ledger_url is set",
        passes: "the transfer taken",
        setting: Some("[target] ledger_url"),
    }
    PROFILE_INITIAL_CREDITS {
        key: "chorus/profile:initial_credits",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/transfer",
        summary: "fresh owners hold the profile's [chorus] initial_credits",
        fails: "a transfer within initial_credits from a fresh owner is refused with TRANSFER_FAILED: add owner setup requests that fund accounts, or set initial_credits",
        passes: "the transfer taken",
        setting: Some("[chorus] initial_credits"),
    }
    // ------------------------------------------------------------------
    // The client's messages (`run --role client`)
    CLIENT_JOBS {
        key: "chorus/client:jobs",
        requirements: &["CHO-023"],
        level: None,
        owner: "",
        summary: "a client sends one job for one hire",
        fails: "the client sent more than one job request for one hire",
        passes: "one job",
    }
    CLIENT_SCHEMA_JOB_REQUEST {
        key: "chorus/client:schema:job-request:*",
        requirements: &["CHO-024"],
        level: None,
        owner: "",
        summary: "the client's job request matches the job-request schema",
        fails: "a member of the client's job missing, of another type or outside its pattern (job_id, timestamp_utc and currency are judged apart)",
        passes: "a job request the schema validates",
    }
    CLIENT_JOB_ID {
        key: "chorus/client:job-id",
        requirements: &["CHO-003"],
        level: None,
        owner: "",
        summary: "the client's job_id is a UUID",
        fails: "a job_id that is not a UUID string",
        passes: "a UUID job_id",
    }
    CLIENT_JOB_ID_REUSED {
        key: "chorus/client:job-id-reused",
        requirements: &["CHO-003"],
        level: None,
        owner: "chorus/client-hire",
        summary: "every job of a client has a job_id of its own, across the client's whole run",
        fails: "a job whose job_id another job of the client carried in the run (whichever case sent it)",
        passes: "a fresh job_id on every job",
    }
    CLIENT_JOB_ID_VERSION {
        key: "chorus/client:job-id-version",
        requirements: &["CHO-003", "CHO-A7"],
        level: Some(Level::Should),
        owner: "",
        summary: "the client's job_id is a version 4 UUID",
        fails: "a job_id that is a UUID of another version than 4",
        passes: "a version 4 UUID",
    }
    CLIENT_TIMESTAMP {
        key: "chorus/client:timestamp",
        requirements: &["CHO-004"],
        level: None,
        owner: "",
        summary: "the client's job timestamp_utc is ISO 8601 UTC",
        fails: "a timestamp_utc that is not a date-time with Z or a zero offset",
        passes: "an ISO 8601 UTC timestamp",
    }
    CLIENT_CURRENCY {
        key: "chorus/client:currency",
        requirements: &["CHO-025"],
        level: None,
        owner: "",
        summary: "the client's job names the currency chorus_credits_v1",
        fails: "a job with another currency than \"chorus_credits_v1\"",
        passes: "\"chorus_credits_v1\"",
    }
    CLIENT_OUTCOME_CONTENT {
        key: "chorus/client:outcome-content",
        requirements: &["CHO-A1"],
        level: Some(Level::Profile),
        owner: "",
        summary: "the client's outcome report carries the result it received",
        fails: "a POST /results for the job whose status, or for a SUCCESS output_data or execution_cost, is not the result's",
        passes: "a report with the received result",
    }
    CLIENT_OUTCOME {
        key: "chorus/client:outcome",
        requirements: &["CHO-A1"],
        level: Some(Level::Profile),
        owner: "",
        summary: "the client reports the job's outcome with POST /results (the profile's outcome channel)",
        fails: "no POST /results for the job",
        passes: "an outcome report for the job",
    }
    CLIENT_PAID_TWICE {
        key: "chorus/client:paid-twice",
        requirements: &["CHO-038"],
        level: None,
        owner: "",
        summary: "the client pays once for one job",
        fails: "more than one POST /transfer for one successful job",
        passes: "one transfer",
    }
    CLIENT_SCHEMA_TRANSFER_REQUEST {
        key: "chorus/client:schema:transfer-request:*",
        requirements: &["CHO-039"],
        level: None,
        owner: "",
        summary: "the client's transfer matches the transfer-request schema",
        fails: "a member of the client's transfer missing, of another type or outside its pattern (transfer_id, job_id and amount are judged apart)",
        passes: "a transfer the schema validates",
    }
    CLIENT_TRANSFER_ID {
        key: "chorus/client:transfer-id",
        requirements: &["CHO-039"],
        level: None,
        owner: "",
        summary: "the client's transfer_id is a UUID",
        fails: "a transfer_id that is not a UUID string",
        passes: "a UUID transfer_id",
    }
    CLIENT_FROM_OWNER {
        key: "chorus/client:from-owner",
        requirements: &["CHO-039"],
        level: None,
        owner: "",
        summary: "the client pays from the owner it was given",
        fails: "a transfer whose from_owner is not the scenario's owner",
        passes: "the scenario's owner",
    }
    CLIENT_AMOUNT_MISSING {
        key: "chorus/client:amount-missing",
        requirements: &["CHO-039"],
        level: None,
        owner: "",
        summary: "the client's transfer has a numeric amount",
        fails: "a transfer whose amount is missing or not a number",
        passes: "a number of credits",
    }
    CLIENT_AMOUNT_OVER_BUDGET {
        key: "chorus/client:amount-over-budget",
        requirements: &["CHO-033", "CHO-038"],
        level: None,
        owner: "",
        summary: "the client never pays more than the job's budget",
        fails: "a transfer of more than the job's budget",
        passes: "an amount within the budget",
    }
    CLIENT_AMOUNT {
        key: "chorus/client:amount",
        requirements: &["CHO-033", "CHO-038"],
        level: Some(Level::Should),
        owner: "",
        summary: "the client pays the execution_cost the result charged",
        fails: "a transfer within the budget of another amount than the execution_cost",
        passes: "the execution_cost",
    }
    REFUSAL_WITHOUT_CODE {
        key: "chorus/refusal-without-code:*",
        requirements: &["CHO-A5"],
        level: None,
        owner: "",
        summary: "a refusal where chorus.md names a code carries that code",
        fails: "a refusal without the code chorus.md names for it, for a code without a rule of its own; the detail names the code",
        passes: "the code in the refusal",
    }
    // ------------------------------------------------------------------
    // A case's own subject, judged by a shared check (keyed by the case id).
    DISCOVER_BY_SKILL {
        key: "chorus/discover-by-skill",
        requirements: &["CHO-002", "CHO-015", "CHO-016", "CHO-017", "CHO-018", "CHO-022"],
        level: None,
        owner: "chorus/discover-by-skill",
        summary: "an agent listed under a skill shows that skill in its entry",
        fails: "a discovery entry listed under the queried skill showing another skill",
        passes: "the queried skill in every entry",
    }
    TRANSFER_IDEMPOTENT {
        key: "chorus/transfer-idempotent",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/transfer-idempotent",
        summary: "a repeated transfer_id moves credits once, where the profile declares idempotent transfers ([chorus] idempotent_transfers, CHO-A14)",
        fails: "a transfer repeated with its transfer_id applied twice while the profile says the ledger is idempotent: set idempotent_transfers = false if it does not promise it",
        passes: "the repeat moves nothing",
    }
    TRANSFER_IDEMPOTENT_RECORDED {
        key: "chorus/transfer-idempotent:recorded",
        requirements: &["CHO-A14"],
        level: Some(Level::Info),
        owner: "chorus/transfer-idempotent",
        summary: "what a ledger the profile does not call idempotent does with a repeated transfer_id, recorded",
        fails: "never fails: a repeated transfer_id applied twice, recorded ([chorus] idempotent_transfers = false)",
        passes: "the repeat moves nothing",
    }
    REGISTER_REJECTS_INVALID {
        key: "chorus/register-rejects-invalid",
        requirements: &["CHO-001", "CHO-002", "CHO-004", "CHO-009", "CHO-010"],
        level: None,
        owner: "chorus/register-rejects-invalid",
        summary: "a registration with a bad field, or without JSON, draws a 4xx",
        fails: "the registry took one or more bad registrations (each named: a bad agent_id, no api_endpoint, no skills, a skill without skill_name or with cost_per_call \"cheap\", timestamp_utc \"yesterday\", a non-JSON body)",
        passes: "a 4xx for each",
    }
    JOB_REJECTS_INVALID {
        key: "chorus/job-rejects-invalid",
        requirements: &["CHO-003", "CHO-024"],
        level: None,
        owner: "chorus/job-rejects-invalid",
        summary: "a job with job_id \"123\", or without skill_name or input_data, is rejected",
        fails: "the agent processed one or more bad jobs (each named)",
        passes: "a 4xx or a FAILURE result for each",
    }
    JOB_CURRENCY_TAKEN {
        key: "chorus/job-rejects-invalid:currency",
        requirements: &["CHO-025"],
        level: Some(Level::Info),
        owner: "chorus/job-rejects-invalid",
        summary: "a job in a currency other than chorus_credits_v1 should be rejected (informational)",
        fails: "the agent processed a job with currency \"usd\"",
        passes: "a 4xx or a FAILURE result",
    }
    TRANSFER_INCOMPLETE_TAKEN {
        key: "chorus/transfer:incomplete-taken",
        requirements: &["CHO-039"],
        level: None,
        owner: "chorus/transfer",
        summary: "a transfer without amount or to_owner draws a 4xx",
        fails: "the ledger took one or more incomplete transfers (each named)",
        passes: "a 4xx for each",
    }
    JOB_FAILURE_RESULT_REFUSED {
        key: "chorus/job-failure-result:refused",
        requirements: &["CHO-032"],
        level: Some(Level::Should),
        owner: "chorus/job-failure-result",
        summary: "a job whose input the fixture cannot process ends in a FAILURE result rather than a refusal",
        fails: "the job with the profile's fixture_failing_input refused (a 4xx, or a reply with an error code other than EXECUTION_ERROR) instead of answered with a FAILURE result; a warning",
        passes: "a FAILURE result with an error_message, with or without error_code EXECUTION_ERROR",
    }
}
