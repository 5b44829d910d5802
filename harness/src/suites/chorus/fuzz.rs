//! Live fuzzing of chorus (chorus.md): registrations, discovery queries, jobs for the
//! fixture agent, credit transfers and outcome reports drawn from the seed (valid
//! messages, field mutations, raw byte edits, respellings, short stateful sequences),
//! each judged against a model of what the spec fixes for the message as sent.
//!
//! Discovery, reputation and ranking cases share a pool of agents the run registers
//! once and sets to known scores (50.0, 45.5, 53.0, 100.0, 0.0) through the profile's
//! outcome channel (CHO-A1); the set-up itself is checked against the model.
//!
//! Oracles, beyond the reply checks of the shared helpers:
//! - server-error: never a 5xx for a client's message (a 503 to a valid registration
//!   is read as a full registry: the case is skipped);
//! - a 2xx reply is JSON (CHO-001): the rule chorus/reply:not-json, as in `run`;
//! - the rules `run` applies: registration replies by `expect::judge_registered`
//!   (201, schema register-response, the echoed id, 50.0: CHO-012 to CHO-014), job
//!   results by `expect::read_result` (schema job-result, CHO-029) and discovery
//!   replies by `expect::discovery_reply` (schema discover-response, CHO-017), each finding
//!   under its rule key;
//! - verdict: a valid registration, job or transfer is accepted; an invalid one is
//!   rejected with a 4xx or a FAILURE result: a body that is no JSON (CHO-001), an
//!   agent_id, job_id or transfer_id that is no UUID (CHO-002, CHO-003, CHO-039), a
//!   missing or mistyped essential member (CHO-009, CHO-010, CHO-024, CHO-039), a
//!   timestamp_utc that is no date (CHO-004), an amount that is not a positive number
//!   of credits (CHO-005, CHO-039); where the spec leaves the choice open (CHO-A7,
//!   CHO-A10, CHO-A11, CHO-A18, CHO-A21; members beyond the spec's, other currencies,
//!   dates in other spellings) the verdict is not judged;
//! - error-code: a rejection the spec names carries its code (SKILL_MISMATCH CHO-027,
//!   BUDGET_INSUFFICIENT CHO-028, TRANSFER_FAILED CHO-040); which other code of
//!   chorus.md §5 a refusal carries is not judged (CHO-046 asks only that codes come
//!   from the table, a warning of the reply checks);
//! - registration: an accepted agent is then found under its skill at 50.0 with its
//!   cost (CHO-015, CHO-018);
//! - discovery: for drawn min_reputation / max_cost filters (inclusive bounds, CHO-019,
//!   CHO-020, CHO-A12) over agents whose scores and costs the run knows, exactly those
//!   that pass are listed, once each, each showing the queried skill and its cost
//!   (CHO-017, CHO-018), at the score the model gives (highest first is the rule
//!   discover:ranking); a percent-encoded skill or a number spelt with trailing
//!   zeros is the same query;
//! - reputation: a drawn sequence of SUCCESS and FAILURE outcomes from hirers at known
//!   scores moves a fresh agent from 50.0 as chorus.md §4 says (CHO-014, CHO-042 to
//!   CHO-044); more outcomes for agents at 0.0 and 100.0 leave them there (CHO-045);
//!   outcome: the profile's outcome channel takes every report (CHO-A1);
//! - delivery: a job's result comes in the response or is posted to callback_url
//!   within the case timeout, as the profile's result_delivery allows (CHO-026,
//!   CHO-A4);
//! - job: a valid job for the fixture agent (its input_data from the profile's
//!   fixture_input) ends in a SUCCESS result that names the request's job_id and the
//!   fixture's agent_id (CHO-030, CHO-031; ids compared as `run` compares them) and
//!   has a two-decimal execution_cost (CHO-005, CHO-033); an output other than the
//!   profile's fixture_output is the profile's to fix, as in `run`, not a finding; a
//!   job the spec rejects never ends in SUCCESS;
//! - ledger: over a drawn sequence of transfers between two fresh owners, a transfer
//!   within the balance is accepted (CHO-038), one above it fails with
//!   TRANSFER_FAILED and moves nothing (CHO-040), a repeated transfer_id is applied
//!   once where the profile declares it (CHO-039, CHO-A14, as the transfer-idempotent
//!   case reads it), and the balance ends where the model says: draining it exactly
//!   works, one cent more fails; the owners are set up by the profile's `owner` setup
//!   requests;
//! - wire-form: a respelled message (key order, whitespace, escapes) gets the verdict
//!   of its value.

use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, Val, WireForm};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{
    self, about, finding, skip, tagged, Codes, Expected, FuzzFuture, FuzzStep, Observed, Oracle,
};

use crate::drive::Transport;
use crate::suites::chorus::expect::{
    agent_missing, call, check_score, contains, discover, entry_skill_finding, expect_code,
    expected_after, fixture_agent, fixture_input, fixture_output, funded_owner, job, judge_cost,
    judge_registered, judge_result_ids, need_json, now_utc, post, read_result, registration,
    rejected_row, report_outcome, run_job, same_id, score, transfer, two_decimals, unique_skill,
    Base, JobOutcome, Report, Resp,
};
use crate::suites::chorus::rules;
use arbitrary::Arbitrary;
use reference_impl::wire::{is_uuid, json as wire_json, new_id};
use serde_json::{json, Value};
use std::collections::HashMap;

pub static SPEC: Spec = Spec {
    transports: &[Transport::Http],
    case: case_fn,
    probe: probe_fn,
    resend: None,
    kinds: &[],
    unreachable: &[],
    connection_per_worker: false,
    workers: crate::fuzzing::spec::WORKERS,
};

fn case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(one_case(f))
}

fn probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        f.fuzzed(b"GET /discover?skill=<unknown>");
        let skill = unique_skill();
        let found = discover(&mut f.ctx, &format!("skill={skill}")).await?;
        if found.is_empty() {
            Ok(())
        } else {
            finding(
                Oracle::Liveness,
                format!("a skill nobody has lists {} agents", found.len()),
            )
        }
    })
}

// ---------------------------------------------------------------------------
// Draws

/// How the message goes on the wire.
#[derive(Debug, Clone, Default, Arbitrary)]
enum Wire {
    #[default]
    Canonical,
    Respelled(WireForm),
    Edited(Vec<ByteEdit>),
}

/// An id member's value.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum IdForm {
    #[default]
    Fresh,
    Upper,
    Version1,
    NotUuid,
    NoDashes,
    Braced,
    Short,
    Empty,
    Numeric,
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum TsForm {
    #[default]
    Now,
    Fraction,
    Offset,
    NoZone,
    Lowercase,
    DateOnly,
    Yesterday,
    Epoch,
    Empty,
}

/// A credits value, in cents where it has a number.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum Credits {
    Cents(u16),
    #[default]
    Zero,
    ThreeDecimals(u16),
    Negative(u16),
    NumericString(u16),
    Junk,
    Huge,
    Null,
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum RegField {
    #[default]
    AgentId,
    AgentName,
    OwnerId,
    ApiEndpoint,
    Skills,
    Version,
    Timestamp,
    SkillName,
    SkillDescription,
    SkillCost,
    SkillInput,
    SkillOutput,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum RegMut {
    #[default]
    Keep,
    AgentId(IdForm),
    Remove(RegField),
    Set(RegField, Val),
    EmptyEndpoint,
    Timestamp(TsForm),
    Cost(Credits),
    EmptySkillName,
    NoSkills,
    SkillNotObject(Val),
    SecondSkill(u16),
    Extra(u8, Val),
    NotAnObject(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
struct RegisterCase {
    cost: u16,
    muts: Vec<RegMut>,
    wire: Wire,
    follow_up: bool,
}

/// A discovery filter value, relative to the known agents' scores or costs.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum Filter {
    #[default]
    Absent,
    At(u8),
    Above(u8),
    Below(u8),
    Cents(u16),
    Negative(u16),
    Huge,
    Junk,
    Empty,
}

/// The spelling of a discovery query.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
struct QueryForm {
    /// Numbers with two decimals always (`50.00`), else as short as possible (`50`).
    padded: bool,
    /// Filters before the skill.
    skill_last: bool,
    /// Which characters of the skill are percent-encoded.
    encode: u32,
}

#[derive(Debug, Clone, Default, Arbitrary)]
struct PoolQuery {
    min: Filter,
    max: Filter,
    form: QueryForm,
}

#[derive(Debug, Clone, Default, Arbitrary)]
struct FreshQuery {
    /// Per agent: its cost for the queried skill, and the cost of a second skill.
    agents: Vec<(u16, Option<u16>)>,
    min: Filter,
    max: Filter,
    form: QueryForm,
}

#[derive(Debug, Clone, Default, Arbitrary)]
struct Reputation {
    /// (SUCCESS?, hirer) per outcome.
    steps: Vec<(bool, u8)>,
    check_each: bool,
}

#[derive(Debug, Clone, Default, Arbitrary)]
struct Clamp {
    top: bool,
    hirers: Vec<u8>,
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum SkillForm {
    #[default]
    Fixture,
    Other,
    Upper,
    Empty,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum InputForm {
    #[default]
    Text,
    TextNot(Val),
    NoText,
    NotObject(Val),
    Extra(Val),
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum JobField {
    #[default]
    JobId,
    Orchestrator,
    Skill,
    Input,
    Budget,
    Currency,
    Timestamp,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum JobMut {
    #[default]
    Keep,
    Skill(SkillForm),
    Budget(Credits),
    BudgetAtCost(i8),
    JobId(IdForm),
    Orchestrator(IdForm),
    Input(InputForm),
    Currency(Val),
    Timestamp(TsForm),
    Remove(JobField),
    Set(JobField, Val),
    Extra(u8, Val),
    NotAnObject(Val),
}

/// The change a job case starts from (before its mutations).
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum JobTweak {
    #[default]
    None,
    Valid,
    OtherSkill,
    BudgetBelowCost(u8),
    BudgetAroundCost(i8),
}

#[derive(Debug, Clone, Default, Arbitrary)]
struct JobCase {
    text: String,
    tweak: JobTweak,
    muts: Vec<JobMut>,
    wire: Wire,
}

/// A transfer amount, relative to the sender's balance where it says so.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum Amount {
    Part(u8),
    #[default]
    Exact,
    Over(u8),
    Credits(Credits),
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum TransferField {
    #[default]
    TransferId,
    From,
    To,
    Amount,
    JobId,
    Timestamp,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum TransferMut {
    #[default]
    Keep,
    TransferId(IdForm),
    JobId(IdForm),
    Timestamp(TsForm),
    Remove(TransferField),
    Set(TransferField, Val),
    Extra(u8, Val),
    NotAnObject(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum TransferStep {
    #[default]
    Plain,
    Send {
        amount: Amount,
        /// From the second owner to the first.
        reverse: bool,
        muts: Vec<TransferMut>,
        wire: Wire,
    },
    Repeat(Option<WireForm>),
}

#[derive(Debug, Clone, Default, Arbitrary)]
struct Ledger {
    steps: Vec<TransferStep>,
    /// Whose balance the closing check drains: the second owner's, else the first's.
    check_second: bool,
}

// ---------------------------------------------------------------------------
// The verdict model

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Ok,
    Open,
    Reject,
}

/// The message a model judges: it names the rule (or case) of `run` whose finding
/// each way of getting it wrong is, so that the fuzzer files a deviation under the
/// key `run` gives it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Subject {
    #[default]
    Registration,
    Job,
    Transfer,
}

impl Subject {
    /// A message the model rejects, carried out (the first reason to reject it
    /// names a rule of its own where it has one: [`Model::note_as`]).
    fn taken(self) -> &'static str {
        match self {
            Subject::Registration => rules::REGISTER_REJECTS_INVALID.key,
            Subject::Job => rules::JOB_REJECTS_INVALID.key,
            Subject::Transfer => rules::TRANSFER_INCOMPLETE_TAKEN.key,
        }
    }

    /// A valid message refused.
    fn refused(self) -> &'static str {
        match self {
            Subject::Registration => rules::REGISTER_REFUSED.key,
            // A valid job for the fixture refused: the fixture's input is the
            // profile's to set, as `run`'s job-echo reads it.
            Subject::Job => rules::PROFILE_FIXTURE_INPUT.key,
            Subject::Transfer => rules::TRANSFER_REFUSED.key,
        }
    }

    /// A reply neither carried out nor a refusal.
    fn odd(self) -> &'static str {
        match self {
            Subject::Registration => rules::REGISTER_STATUS.key,
            other => other.refused(),
        }
    }
}

/// The case of `run` that judges a refusal carrying `code` (chorus.md §5).
fn coded_case(code: &str) -> &'static str {
    match code {
        "SKILL_MISMATCH" => "chorus/job-skill-mismatch",
        "BUDGET_INSUFFICIENT" => "chorus/job-budget-insufficient",
        _ => "chorus/transfer-insufficient",
    }
}

/// What the spec fixes for one message.
#[derive(Debug, Default, Clone)]
struct Model {
    subject: Subject,
    /// A reason to reject that carries no code.
    reject: bool,
    /// The spec leaves part of the message open.
    open: bool,
    /// Reasons to reject that carry a code.
    coded: Vec<&'static str>,
    why: Vec<String>,
    /// The key of the first reason to reject, where it names one of its own.
    taken: Option<&'static str>,
}

/// What the spec fixes for a chorus message (no success shape beyond the
/// checks of each case; refusals by their code of chorus.md §5).
type Verdict = Expected<(), &'static str>;

impl Model {
    fn of(subject: Subject) -> Model {
        Model {
            subject,
            ..Model::default()
        }
    }

    fn rejecting(subject: Subject) -> Model {
        let mut m = Model::of(subject);
        m.note(Class::Reject, "the body is no JSON object");
        m
    }

    fn unsure(subject: Subject) -> Model {
        let mut m = Model::of(subject);
        m.note(Class::Open, "JSON readers disagree on the body");
        m
    }

    /// A reason to reject whose deviation is rule `key`'s, not the subject's.
    fn note_as(&mut self, c: Class, key: &'static str, why: impl Into<String>) {
        if c == Class::Reject && !self.reject {
            self.taken = Some(key);
        }
        self.note(c, why);
    }

    /// The key of `run` a reply that broke the verdict `want` is filed under.
    fn key_for(&self, got: &Observed<&str>) -> &'static str {
        let coded = self.coded.first().map(|c| coded_case(c));
        match got {
            Observed::Carried if self.reject => self.taken.unwrap_or(self.subject.taken()),
            Observed::Carried => coded.unwrap_or(self.subject.taken()),
            Observed::Refused(_) if self.reject || !self.coded.is_empty() => {
                coded.unwrap_or(self.subject.refused())
            }
            Observed::Refused(_) => self.subject.refused(),
        }
    }

    fn note(&mut self, c: Class, why: impl Into<String>) {
        match c {
            Class::Ok => return,
            Class::Open => self.open = true,
            Class::Reject => self.reject = true,
        }
        self.why.push(format!("{c:?}: {}", why.into()));
    }

    fn code(&mut self, code: &'static str, why: impl Into<String>) {
        self.coded.push(code);
        self.why.push(format!("{code}: {}", why.into()));
    }

    fn verdict(&self) -> Verdict {
        if self.reject || (self.open && !self.coded.is_empty()) {
            Expected::Reject(Codes::Any)
        } else if !self.coded.is_empty() {
            Expected::Reject(Codes::OneOf(self.coded.clone()))
        } else if self.open {
            Expected::Open(self.explain())
        } else {
            Expected::Accept((), Codes::none())
        }
    }

    fn explain(&self) -> String {
        if self.why.is_empty() {
            "a valid message".into()
        } else {
            self.why.join("; ")
        }
    }
}

/// Members beyond the spec's: chorus.md does not say whether they are ignored.
fn extras(m: &mut Model, o: &serde_json::Map<String, Value>, known: &[&str]) {
    if let Some(k) = o.keys().find(|k| !known.contains(&k.as_str())) {
        m.note(
            Class::Open,
            format!("a member {k:?} beyond the spec's (CHO-A11)"),
        );
    }
}

fn id_class(v: Option<&Value>) -> Class {
    match v {
        Some(Value::String(s)) if is_uuid(s) => Class::Ok,
        Some(Value::String(s)) if loose_uuid(s) => Class::Open,
        _ => Class::Reject,
    }
}

/// A UUID in a spelling other than 8-4-4-4-12 (braces, urn:, no dashes, padding).
fn loose_uuid(s: &str) -> bool {
    let t = s.trim();
    let t = t.strip_prefix("urn:uuid:").unwrap_or(t);
    let t = t.trim_start_matches('{').trim_end_matches('}');
    let hex: Vec<char> = t.chars().filter(|c| *c != '-').collect();
    hex.len() == 32 && hex.iter().all(char::is_ascii_hexdigit)
}

/// A timestamp_utc: valid as the client cases and the schemas read it (a date-time
/// in UTC, `Z` or a zero offset, CHO-004); another date spelling, or none, open
/// (CHO-A11, CHO-A16); anything else refused.
fn timestamp_class(v: Option<&Value>) -> Class {
    match v {
        None | Some(Value::Null) => Class::Open,
        Some(t @ Value::String(_)) if super::expect::is_utc_timestamp(t) => Class::Ok,
        // Some other date spelling, or nothing: the spec does not say (CHO-A11, CHO-A16).
        Some(Value::String(s)) if s.is_empty() || s.bytes().any(|c| c.is_ascii_digit()) => {
            Class::Open
        }
        Some(_) => Class::Reject,
    }
}

fn numeric_string(v: &Value) -> Option<f64> {
    v.as_str().and_then(|s| s.trim().parse::<f64>().ok())
}

/// A registration's cost_per_call.
fn cost_class(v: Option<&Value>) -> Class {
    match v {
        None | Some(Value::Null) => Class::Reject,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if (0.0..=1e9).contains(&x) && two_decimals(x) => Class::Ok,
            _ => Class::Open,
        },
        Some(s @ Value::String(_)) if numeric_string(s).is_some() => Class::Open,
        Some(_) => Class::Reject,
    }
}

fn register_model(v: &Value) -> Model {
    let Some(o) = v.as_object() else {
        return Model::rejecting(Subject::Registration);
    };
    let mut m = Model::of(Subject::Registration);
    extras(
        &mut m,
        o,
        &[
            "agent_id",
            "agent_name",
            "owner_id",
            "api_endpoint",
            "skills",
            "version",
            "timestamp_utc",
        ],
    );
    m.note(id_class(o.get("agent_id")), "agent_id (CHO-002, CHO-A7)");
    match o.get("api_endpoint") {
        Some(Value::String(s)) if s.starts_with("http://") || s.starts_with("https://") => {}
        Some(Value::String(_)) => m.note(Class::Open, "api_endpoint is no http(s) URL"),
        _ => m.note(
            Class::Reject,
            "api_endpoint missing or not a string (CHO-009)",
        ),
    }
    m.note(
        timestamp_class(o.get("timestamp_utc")),
        "timestamp_utc (CHO-004)",
    );
    note_skills(&mut m, o.get("skills"));
    for k in ["agent_name", "owner_id"] {
        if !o.get(k).is_some_and(Value::is_string) {
            m.note(Class::Open, format!("{k} missing or retyped (CHO-A11)"));
        }
    }
    if o.get("version") != Some(&json!("0.1")) {
        m.note(Class::Open, "version is not \"0.1\" (CHO-A21)");
    }
    m
}

/// Notes a registration's skills: an array (CHO-009) of objects (CHO-010), each
/// judged by `note_skill`; an empty array is left open.
fn note_skills(m: &mut Model, skills: Option<&Value>) {
    match skills {
        Some(Value::Array(skills)) => {
            if skills.is_empty() {
                m.note(Class::Open, "no skills");
            }
            for s in skills {
                let Some(s) = s.as_object() else {
                    m.note(Class::Reject, "a skill is not an object (CHO-010)");
                    continue;
                };
                note_skill(m, s);
            }
        }
        _ => m.note(Class::Reject, "skills missing or not an array (CHO-009)"),
    }
}

/// Notes one skill object of a registration: its skill_name (CHO-010), its
/// cost_per_call (CHO-005, CHO-010), and its description and schemas, whose absence
/// or retyping the spec leaves open (CHO-A11, CHO-A18).
fn note_skill(m: &mut Model, s: &serde_json::Map<String, Value>) {
    match s.get("skill_name") {
        Some(Value::String(n)) if !n.is_empty() => {}
        Some(Value::String(_)) => m.note(Class::Open, "an empty skill_name"),
        _ => m.note(
            Class::Reject,
            "skill_name missing or not a string (CHO-010)",
        ),
    }
    m.note(
        cost_class(s.get("cost_per_call")),
        "cost_per_call (CHO-005, CHO-010)",
    );
    for k in ["description", "input_schema", "output_schema"] {
        let fine = match (k, s.get(k)) {
            ("description", Some(Value::String(_))) => true,
            (_, Some(Value::Object(_))) => k != "description",
            _ => false,
        };
        if !fine {
            m.note(
                Class::Open,
                format!("skill {k} missing or retyped (CHO-A11, CHO-A18)"),
            );
        }
    }
}

/// How a transfer's amount reads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum AmountRead {
    Cents(i64),
    /// A number the spec does not settle (more decimals, a numeric string).
    Ambiguous,
    /// Far above any balance.
    Huge,
    /// Zero or below (CHO-047).
    NotPositive,
    Invalid,
}

fn amount_read(v: Option<&Value>) -> AmountRead {
    match v {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x <= 0.0 => AmountRead::NotPositive,
            Some(x) if x > 1e9 => AmountRead::Huge,
            Some(x) if two_decimals(x) => AmountRead::Cents((x * 100.0).round() as i64),
            Some(_) => AmountRead::Ambiguous,
            None => AmountRead::Invalid,
        },
        Some(s @ Value::String(_)) if numeric_string(s).is_some() => AmountRead::Ambiguous,
        _ => AmountRead::Invalid,
    }
}

/// What an accepted transfer does to the model.
#[derive(Debug, Clone)]
enum Effect {
    Move {
        from: String,
        to: String,
        cents: i64,
    },
    /// These owners' balances are no longer known.
    Unknown(Vec<String>),
}

/// Balances of the case's owners, in cents; `None`: no longer known.
struct Books {
    balance: HashMap<String, Option<i64>>,
}

impl Books {
    /// Only the case's own fresh owners have a known balance; any other owner (a
    /// mutated name) may be shared with other cases.
    fn get(&self, owner: &str) -> Option<i64> {
        self.balance.get(owner).copied().flatten()
    }

    fn apply(&mut self, e: &Effect) {
        match e {
            Effect::Move { from, to, cents } => {
                let (a, b) = (self.get(from), self.get(to));
                self.balance.insert(from.clone(), a.map(|x| x - cents));
                self.balance.insert(to.clone(), b.map(|x| x + cents));
            }
            Effect::Unknown(owners) => {
                for o in owners {
                    self.balance.insert(o.clone(), None);
                }
            }
        }
    }
}

fn transfer_model(v: &Value, books: &Books) -> (Model, Effect) {
    let Some(o) = v.as_object() else {
        return (
            Model::rejecting(Subject::Transfer),
            Effect::Unknown(Vec::new()),
        );
    };
    let mut m = Model::of(Subject::Transfer);
    let owners = note_transfer_members(&mut m, o);
    let from = o
        .get("from_owner")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let to = o
        .get("to_owner")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !from.is_empty() && from == to {
        m.note(Class::Open, "a transfer to oneself");
    }
    let balance = books.get(from);
    let read = amount_read(o.get("amount"));
    note_amount(&mut m, read, balance);
    let effect = match read {
        AmountRead::Cents(cents) if owners.len() == 2 && from != to => Effect::Move {
            from: from.to_string(),
            to: to.to_string(),
            cents,
        },
        _ => Effect::Unknown(owners),
    };
    (m, effect)
}

/// Notes a transfer's members other than its amount: members beyond the spec's
/// (CHO-A11), transfer_id and the two owners (CHO-039), timestamp_utc (CHO-004) and
/// job_id (CHO-A11, CHO-041); returns the owners named by non-empty strings.
fn note_transfer_members(m: &mut Model, o: &serde_json::Map<String, Value>) -> Vec<String> {
    extras(
        m,
        o,
        &[
            "transfer_id",
            "from_owner",
            "to_owner",
            "amount",
            "job_id",
            "timestamp_utc",
        ],
    );
    m.note(id_class(o.get("transfer_id")), "transfer_id (CHO-039)");
    let mut owners = Vec::new();
    for k in ["from_owner", "to_owner"] {
        match o.get(k) {
            Some(Value::String(s)) if !s.is_empty() => owners.push(s.clone()),
            Some(Value::String(_)) => m.note(Class::Open, format!("an empty {k}")),
            _ => m.note(
                Class::Reject,
                format!("{k} missing or not a string (CHO-039)"),
            ),
        }
    }
    m.note(
        timestamp_class(o.get("timestamp_utc")),
        "timestamp_utc (CHO-004)",
    );
    match o.get("job_id") {
        Some(Value::String(s)) if is_uuid(s) => {}
        _ => m.note(Class::Open, "job_id missing or no UUID (CHO-A11, CHO-041)"),
    }
    owners
}

/// Notes a transfer's amount against the sender's balance (`None`: unknown): not a
/// positive number (CHO-005, CHO-039), more than two decimals or a string (CHO-A10),
/// above any balance, or above the known balance, which names TRANSFER_FAILED
/// (CHO-040).
fn note_amount(m: &mut Model, read: AmountRead, balance: Option<i64>) {
    match read {
        AmountRead::NotPositive => m.note_as(
            Class::Reject,
            rules::TRANSFER_AMOUNT_POSITIVE_TAKEN.key,
            "an amount of zero or below (CHO-005, CHO-047)",
        ),
        AmountRead::Invalid => m.note(
            Class::Reject,
            "amount missing or not a number (CHO-005, CHO-039)",
        ),
        AmountRead::Ambiguous => {
            m.note(
                Class::Open,
                "amount with more than two decimals or as a string (CHO-A10)",
            );
        }
        AmountRead::Huge => m.note_as(
            Class::Reject,
            coded_case("TRANSFER_FAILED"),
            "an amount above any balance (CHO-040)",
        ),
        AmountRead::Cents(c) => match balance {
            Some(b) if c > b => m.code(
                "TRANSFER_FAILED",
                format!("{c} cents above the balance of {b} (CHO-040)"),
            ),
            Some(_) => {}
            None => {
                m.note(Class::Open, "the sender's balance is unknown");
            }
        },
    }
}

/// The fixture agent, learnt once per run.
struct Fixture {
    agent_id: String,
    url: String,
    skill: String,
    cost: f64,
}

fn job_model(v: &Value, fx: &Fixture) -> Model {
    let Some(o) = v.as_object() else {
        return Model::rejecting(Subject::Job);
    };
    let mut m = Model::of(Subject::Job);
    extras(
        &mut m,
        o,
        &[
            "job_id",
            "orchestrator_id",
            "skill_name",
            "input_data",
            "budget",
            "currency",
            "callback_url",
            "timestamp_utc",
        ],
    );
    m.note(id_class(o.get("job_id")), "job_id (CHO-003)");
    note_job_skill(&mut m, o.get("skill_name"), fx);
    note_job_input(&mut m, o.get("input_data"));
    note_budget(&mut m, o.get("budget"), fx);
    if o.get("currency") != Some(&json!("chorus_credits_v1")) {
        m.note(
            Class::Open,
            "currency other than chorus_credits_v1 (CHO-025)",
        );
    }
    match o.get("orchestrator_id") {
        Some(Value::String(s)) if is_uuid(s) => {}
        _ => m.note(Class::Open, "orchestrator_id missing or no UUID (CHO-A11)"),
    }
    if !o.get("callback_url").is_some_and(Value::is_string) {
        m.note(Class::Open, "callback_url missing or retyped");
    }
    m.note(
        timestamp_class(o.get("timestamp_utc")),
        "timestamp_utc (CHO-004)",
    );
    m
}

/// Notes a job's skill_name against the fixture's skill: missing, empty or not a
/// string (CHO-024), another skill, which names SKILL_MISMATCH (CHO-027), or the
/// fixture's skill in other letter case, left open.
fn note_job_skill(m: &mut Model, skill: Option<&Value>, fx: &Fixture) {
    match skill {
        Some(Value::String(s)) if *s == fx.skill => {}
        Some(Value::String(s)) if s.eq_ignore_ascii_case(&fx.skill) => {
            m.note(Class::Open, "the fixture's skill in other letter case");
        }
        Some(Value::String(s)) if !s.is_empty() => m.code(
            "SKILL_MISMATCH",
            format!("the fixture has no skill {s:?} (CHO-027)"),
        ),
        _ => {
            m.note(
                Class::Reject,
                "skill_name missing, empty or not a string (CHO-024)",
            );
        }
    }
}

/// Notes a job's input_data: an object (CHO-024) with a string text, the echo
/// fixture's input.
fn note_job_input(m: &mut Model, input: Option<&Value>) {
    match input {
        Some(Value::Object(i)) => {
            if !i.get("text").is_some_and(Value::is_string) {
                m.note(
                    Class::Open,
                    "input_data without a string text (the echo fixture's input)",
                );
            }
        }
        _ => m.note(
            Class::Reject,
            "input_data missing or not an object (CHO-024)",
        ),
    }
}

/// Notes a job's budget against the fixture's cost: absent (CHO-A11), negative
/// (CHO-005), below the cost, which names BUDGET_INSUFFICIENT (CHO-028), more than
/// two decimals (CHO-A10) or not a number (CHO-024); BUDGET_INSUFFICIENT may apply
/// unless the budget is a number that covers the cost.
fn note_budget(m: &mut Model, budget: Option<&Value>, fx: &Fixture) {
    match budget {
        None | Some(Value::Null) => m.note(Class::Open, "no budget (CHO-A11)"),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x < 0.0 => m.note(Class::Reject, "a negative budget (CHO-005)"),
            Some(x) if x > 1e9 => m.note(Class::Open, "a budget above 1e9"),
            Some(x) if x < fx.cost && two_decimals(x) => m.code(
                "BUDGET_INSUFFICIENT",
                format!("budget {x} below the cost {} (CHO-028)", fx.cost),
            ),
            Some(x) if x < fx.cost => m.note(
                Class::Reject,
                format!("budget {x} below the cost, more than two decimals"),
            ),
            Some(x) if !two_decimals(x) => m.note(
                Class::Open,
                "a budget with more than two decimals (CHO-A10)",
            ),
            Some(_) => {}
            None => m.note(Class::Open, "an unreadable budget"),
        },
        Some(s @ Value::String(_)) if numeric_string(s).is_some() => {
            m.note(Class::Open, "budget as a numeric string")
        }
        Some(_) => m.note(Class::Reject, "budget is not a number (CHO-024)"),
    }
}

// ---------------------------------------------------------------------------
// Mutations

fn set(v: &mut Value, k: &str, x: Value) {
    if let Some(o) = v.as_object_mut() {
        o.insert(k.to_string(), x);
    }
}

fn remove(v: &mut Value, k: &str) {
    if let Some(o) = v.as_object_mut() {
        o.remove(k);
    }
}

fn first_skill(v: &mut Value) -> Option<&mut Value> {
    v.get_mut("skills")?.as_array_mut()?.first_mut()
}

fn id_value(form: IdForm) -> Value {
    let id = new_id();
    match form {
        IdForm::Fresh => json!(id),
        IdForm::Upper => json!(id.to_ascii_uppercase()),
        IdForm::Version1 => {
            let mut s = id.into_bytes();
            s[14] = b'1';
            json!(String::from_utf8_lossy(&s))
        }
        IdForm::NotUuid => json!("not-a-uuid"),
        IdForm::NoDashes => json!(id.replace('-', "")),
        IdForm::Braced => json!(format!("{{{id}}}")),
        IdForm::Short => json!(id[..35].to_string()),
        IdForm::Empty => json!(""),
        IdForm::Numeric => json!("123"),
    }
}

fn timestamp_value(form: TsForm) -> Value {
    let now = now_utc();
    let stem = now.trim_end_matches('Z').to_string();
    match form {
        TsForm::Now => json!(now),
        TsForm::Fraction => json!(format!("{stem}.250Z")),
        TsForm::Offset => json!(format!("{stem}+00:00")),
        TsForm::NoZone => json!(stem),
        TsForm::Lowercase => json!(now.to_ascii_lowercase()),
        TsForm::DateOnly => json!(stem.chars().take(10).collect::<String>()),
        TsForm::Yesterday => json!("yesterday"),
        TsForm::Epoch => json!(1_770_819_309),
        TsForm::Empty => json!(""),
    }
}

/// `cents / 100` as the JSON number a client would send.
fn credits_of(cents: i64) -> Value {
    json!(cents as f64 / 100.0)
}

fn credits_value(c: Credits) -> Value {
    match c {
        Credits::Cents(n) => credits_of(i64::from(n % 20_000)),
        Credits::Zero => json!(0),
        Credits::ThreeDecimals(n) => json!(f64::from(u32::from(n % 20_000) * 10 + 5) / 1000.0),
        Credits::Negative(n) => credits_of(-(i64::from(n % 20_000) + 1)),
        Credits::NumericString(n) => json!(format!("{:.2}", f64::from(n % 20_000) / 100.0)),
        Credits::Junk => json!("cheap"),
        Credits::Huge => json!(1e12),
        Credits::Null => Value::Null,
    }
}

fn reg_field(v: &mut Value, field: RegField, x: Option<Value>) {
    let (in_skill, key) = match field {
        RegField::AgentId => (false, "agent_id"),
        RegField::AgentName => (false, "agent_name"),
        RegField::OwnerId => (false, "owner_id"),
        RegField::ApiEndpoint => (false, "api_endpoint"),
        RegField::Skills => (false, "skills"),
        RegField::Version => (false, "version"),
        RegField::Timestamp => (false, "timestamp_utc"),
        RegField::SkillName => (true, "skill_name"),
        RegField::SkillDescription => (true, "description"),
        RegField::SkillCost => (true, "cost_per_call"),
        RegField::SkillInput => (true, "input_schema"),
        RegField::SkillOutput => (true, "output_schema"),
    };
    let target = if in_skill { first_skill(v) } else { Some(v) };
    if let Some(t) = target {
        match x {
            Some(x) => set(t, key, x),
            None => remove(t, key),
        }
    }
}

fn reg_mutate(v: &mut Value, m: &RegMut) {
    match m {
        RegMut::Keep => {}
        RegMut::AgentId(form) => set(v, "agent_id", id_value(*form)),
        RegMut::Remove(field) => reg_field(v, *field, None),
        RegMut::Set(field, x) => reg_field(v, *field, Some(x.json())),
        RegMut::EmptyEndpoint => set(v, "api_endpoint", json!("")),
        RegMut::Timestamp(form) => set(v, "timestamp_utc", timestamp_value(*form)),
        RegMut::Cost(c) => reg_field(v, RegField::SkillCost, Some(credits_value(*c))),
        RegMut::EmptySkillName => reg_field(v, RegField::SkillName, Some(json!(""))),
        RegMut::NoSkills => set(v, "skills", json!([])),
        RegMut::SkillNotObject(x) => {
            if let Some(s) = first_skill(v) {
                *s = x.json();
            }
        }
        RegMut::SecondSkill(cost) => {
            if let Some(a) = v.get_mut("skills").and_then(Value::as_array_mut) {
                a.push(
                    json!({"skill_name": unique_skill(), "description": "second skill",
                    "cost_per_call": credits_of(i64::from(cost % 20_000)),
                    "input_schema": {}, "output_schema": {}}),
                );
            }
        }
        RegMut::Extra(i, x) => set(v, &format!("x_fuzz_{}", i % 4), x.json()),
        RegMut::NotAnObject(x) => *v = x.json(),
    }
}

fn job_key(field: JobField) -> &'static str {
    match field {
        JobField::JobId => "job_id",
        JobField::Orchestrator => "orchestrator_id",
        JobField::Skill => "skill_name",
        JobField::Input => "input_data",
        JobField::Budget => "budget",
        JobField::Currency => "currency",
        JobField::Timestamp => "timestamp_utc",
    }
}

fn job_mutate(v: &mut Value, m: &JobMut, fx: &Fixture) {
    match m {
        JobMut::Keep => {}
        JobMut::Skill(form) => {
            let s = match form {
                SkillForm::Fixture => fx.skill.clone(),
                SkillForm::Other => unique_skill(),
                SkillForm::Upper => fx.skill.to_ascii_uppercase(),
                SkillForm::Empty => String::new(),
            };
            set(v, "skill_name", json!(s));
        }
        JobMut::Budget(c) => set(v, "budget", credits_value(*c)),
        JobMut::BudgetAtCost(d) => {
            let cents = (fx.cost * 100.0).round() as i64 + i64::from(*d % 3);
            set(v, "budget", credits_of(cents.max(0)));
        }
        JobMut::JobId(form) => set(v, "job_id", id_value(*form)),
        JobMut::Orchestrator(form) => set(v, "orchestrator_id", id_value(*form)),
        JobMut::Input(form) => {
            let text = v["input_data"]["text"].clone();
            let input = match form {
                InputForm::Text => json!({"text": text}),
                InputForm::TextNot(x) => json!({"text": x.json()}),
                InputForm::NoText => json!({"data": text}),
                InputForm::NotObject(x) => x.json(),
                InputForm::Extra(x) => json!({"text": text, "x_fuzz": x.json()}),
            };
            set(v, "input_data", input);
        }
        JobMut::Currency(x) => set(v, "currency", x.json()),
        JobMut::Timestamp(form) => set(v, "timestamp_utc", timestamp_value(*form)),
        JobMut::Remove(field) => remove(v, job_key(*field)),
        JobMut::Set(field, x) => set(v, job_key(*field), x.json()),
        JobMut::Extra(i, x) => set(v, &format!("x_fuzz_{}", i % 4), x.json()),
        JobMut::NotAnObject(x) => *v = x.json(),
    }
}

fn transfer_key(field: TransferField) -> &'static str {
    match field {
        TransferField::TransferId => "transfer_id",
        TransferField::From => "from_owner",
        TransferField::To => "to_owner",
        TransferField::Amount => "amount",
        TransferField::JobId => "job_id",
        TransferField::Timestamp => "timestamp_utc",
    }
}

fn transfer_mutate(v: &mut Value, m: &TransferMut) {
    match m {
        TransferMut::Keep => {}
        TransferMut::TransferId(form) => set(v, "transfer_id", id_value(*form)),
        TransferMut::JobId(form) => set(v, "job_id", id_value(*form)),
        TransferMut::Timestamp(form) => set(v, "timestamp_utc", timestamp_value(*form)),
        TransferMut::Remove(field) => remove(v, transfer_key(*field)),
        TransferMut::Set(field, x) => set(v, transfer_key(*field), x.json()),
        TransferMut::Extra(i, x) => set(v, &format!("x_fuzz_{}", i % 4), x.json()),
        TransferMut::NotAnObject(x) => *v = x.json(),
    }
}

// ---------------------------------------------------------------------------
// Sending and judging

/// What the bytes on the wire read as.
enum Parsed {
    Json(Value),
    NotJson,
    /// Two strict readers disagree (duplicate names, out-of-range numbers).
    Unsure,
}

fn encode(v: &Value, w: &Wire) -> (Vec<u8>, Parsed) {
    let canonical = serde_json::to_vec(v).unwrap_or_default();
    match w {
        Wire::Canonical => (canonical, Parsed::Json(v.clone())),
        Wire::Respelled(form) => (respell(v, *form), Parsed::Json(v.clone())),
        Wire::Edited(edits) => {
            let bytes = edit_bytes(canonical, edits);
            let a = serde_json::from_slice::<Value>(&bytes).ok();
            let b = wire_json::parse(&bytes).ok().map(|t| t.to_serde());
            let parsed = match (a, b) {
                (Some(a), Some(b)) if a == b => Parsed::Json(a),
                (None, None) => Parsed::NotJson,
                _ => Parsed::Unsure,
            };
            (bytes, parsed)
        }
    }
}

fn oracle_for(w: &Wire) -> Oracle {
    match w {
        Wire::Respelled(_) => Oracle::WireForm,
        _ => Oracle::Verdict,
    }
}

fn base_url(f: &FuzzCtx, base: &Base) -> String {
    match base {
        Base::Registry => f.ctx.url.clone(),
        Base::Ledger => f
            .ctx
            .profile()
            .target
            .ledger_url
            .clone()
            .unwrap_or_else(|| f.ctx.url.clone()),
        Base::Url(u) => u.clone(),
    }
}

/// POSTs raw bytes as JSON, as `call` does with a value: a 2xx reply must be JSON.
async fn post_bytes(f: &mut FuzzCtx, base: Base, path: &str, bytes: Vec<u8>) -> FuzzStep<Resp> {
    f.fuzzed(&bytes);
    let url = base_url(f, &base);
    let r = f
        .ctx
        .http_at(
            &url,
            reqwest::Method::POST,
            path,
            &[("content-type", "application/json")],
            Some(bytes),
        )
        .await?;
    let resp = Resp {
        http: r.status,
        json: wire_json::parse(&r.body).ok().map(|t| t.to_serde()),
        raw: String::from_utf8_lossy(&r.body).into_owned(),
    };
    // A 2xx reply is JSON (CHO-001): the rule `run` applies, chorus/reply:not-json.
    if (200..300).contains(&resp.http) {
        need_json(&mut f.ctx, &resp, &format!("POST /{path}"))?;
    }
    Ok(resp)
}

/// Reports one outcome for `agent` (at `score`) hired by `hirer` (at `hirer_score`).
async fn outcome(
    f: &mut FuzzCtx,
    agent: &str,
    score: f64,
    hirer: &str,
    hirer_score: f64,
    success: bool,
) -> FuzzStep<()> {
    let report = Report {
        agent_id: agent,
        agent_owner: "",
        reputation: score,
        hirer_id: hirer,
        hirer_owner: "",
        hirer_reputation: hirer_score,
        success,
    };
    Ok(report_outcome(&mut f.ctx, &report).await?)
}

fn status_of(r: &Resp) -> Option<&str> {
    r.get("status").and_then(Value::as_str)
}

/// A refusal as `run` reads it: a 4xx, a FAILURE result, or a 2xx that says no
/// (whose status is the rule refusal-http-200's to judge).
fn is_rejection(r: &Resp) -> bool {
    (400..500).contains(&r.http) || (r.ok() && (r.is_failure_result() || r.refusal_in_2xx()))
}

fn no_server_error(r: &Resp, what: &str) -> FuzzStep<()> {
    if r.http >= 500 {
        return finding(Oracle::ServerError, format!("{what} drew {}", r.describe()));
    }
    Ok(())
}

/// The verdict checks every reply gets. A reply that breaks the verdict is filed
/// under the key `run` gives the same deviation ([`Model::key_for`]).
fn judge(f: &mut FuzzCtx, r: &Resp, m: &Model, what: &str, oracle: Oracle) -> FuzzStep<()> {
    no_server_error(r, what)?;
    let want = m.verdict();
    if is_rejection(r) && !matches!(want, Expected::Accept(..)) {
        // A refusal due: its code and its status judged by `run`'s own checks
        // (refusal-without-code, refusal-http-200), their findings under their keys.
        let from = f.ctx.findings().len();
        match (&want, m.reject) {
            (Expected::Reject(Codes::OneOf(codes)), false) if !codes.is_empty() => {
                // The code the reply carries, else the first the model names.
                let carried = r.codes();
                let code = codes
                    .iter()
                    .find(|c| carried.iter().any(|x| x == *c))
                    .unwrap_or(&codes[0]);
                expect_code(&mut f.ctx, r, code, what)?;
            }
            _ => {
                rejected_row(&mut f.ctx, r, what);
            }
        }
        verdict::rules_since(&f.ctx, from)?;
    }
    let context = format!("{what} ({})", m.explain());
    let codes = r.codes();
    let got = if !is_rejection(r) && r.ok() {
        Observed::Carried
    } else if !is_rejection(r) {
        if matches!(want, Expected::Open(_)) {
            return Ok(());
        }
        let odd = finding(
            oracle,
            format!(
                "{context}: neither carried out nor refused: {}",
                r.describe()
            ),
        );
        return verdict::under(Some(m.subject.odd()), odd);
    } else {
        // Of the codes the reply carries, the one the verdict names, if any.
        let code = match &want {
            Expected::Reject(Codes::OneOf(named)) | Expected::Accept(_, Codes::OneOf(named)) => {
                codes
                    .iter()
                    .find(|c| named.contains(&c.as_str()))
                    .or(codes.first())
            }
            _ => codes.first(),
        };
        Observed::Refused(code.map(String::as_str))
    };
    // Which of chorus.md §5's codes a refusal carries is judged where the verdict
    // names one; beyond that, CHO-046 asks only that codes come from the table (a
    // warning of the reply checks).
    let judged = verdict::judge(&want, &got, (oracle, oracle), || r.describe());
    verdict::under(Some(m.key_for(&got)), about(&context, judged))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Run-wide memo: the fixture agent and a pool of agents at known scores

fn memo_part(f: &FuzzCtx, key: &str) -> Option<Value> {
    f.recall().and_then(|m| m.get(key).cloned())
}

fn memo_set(f: &FuzzCtx, key: &str, v: Value) {
    let mut m = f
        .recall()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    set(&mut m, key, v);
    f.remember(m);
}

async fn fixture(f: &mut FuzzCtx) -> FuzzStep<Fixture> {
    let m = match memo_part(f, "fixture") {
        Some(m) => m,
        None => {
            let (e, url) = fixture_agent(&mut f.ctx).await?;
            let m = json!({"agent_id": e["agent_id"], "url": url,
                           "cost": e["skill"]["cost_per_call"].as_f64().unwrap_or(0.1)});
            memo_set(f, "fixture", m.clone());
            m
        }
    };
    Ok(Fixture {
        agent_id: m["agent_id"].as_str().unwrap_or_default().to_string(),
        url: m["url"].as_str().unwrap_or_default().to_string(),
        skill: f.ctx.profile().chorus.fixture_skill.clone(),
        cost: m["cost"].as_f64().unwrap_or(0.1),
    })
}

/// An agent whose score and cost under the pool skill the run knows.
#[derive(Debug, Clone)]
struct Known {
    id: String,
    score_cents: i64,
    cost_cents: i64,
}

/// Agents registered once per run under a skill of their own, at scores set by
/// outcomes: H50 and a twin at 50.0, LOW at 45.5, MID at 53.0, TOP at 100.0 and
/// BOTTOM at 0.0. Their scores never change: they only hire, except TOP, which only
/// gets more successes, and BOTTOM, which only gets more failures.
struct Pool {
    skill: String,
    agents: Vec<Known>,
}

/// Judges an accepted registration's reply by the rules the register case applies
/// (`expect::judge_registered`: 201, schema, echoed id, 50.0).
fn check_registered(f: &mut FuzzCtx, r: &Resp, sent: Option<&Value>) -> FuzzStep<()> {
    let from = f.ctx.findings().len();
    judge_registered(&mut f.ctx, sent, r)?;
    verdict::rules_since(&f.ctx, from)
}

/// Registers a fresh agent with a valid body; returns its id.
async fn fresh_agent(f: &mut FuzzCtx, skills: &[(&str, f64)]) -> FuzzStep<String> {
    let body = registration(skills);
    let id = body["agent_id"].as_str().unwrap_or_default().to_string();
    let r = post(&mut f.ctx, Base::Registry, "register", &body).await?;
    if r.http == 503 {
        return skip("the registry is full (HTTP 503 to a valid registration)");
    }
    judge(
        f,
        &r,
        &Model::of(Subject::Registration),
        "a valid registration",
        Oracle::Verdict,
    )?;
    check_registered(f, &r, Some(&body))?;
    Ok(id)
}

/// The pool agents' costs for the pool skill, in cents, by index.
const POOL_COSTS: [i64; 6] = [10, 10, 5, 25, 0, 250];
const H50: usize = 0;
const LOW: usize = 2;
const MID: usize = 3;
const TOP: usize = 4;
const BOTTOM: usize = 5;

async fn pool(f: &mut FuzzCtx) -> FuzzStep<Pool> {
    if let Some(p) = remembered_pool(f) {
        return Ok(p);
    }
    let skill = format!("fz_pool_{}", new_id().replace('-', ""));
    let mut ids = Vec::new();
    for c in POOL_COSTS {
        ids.push(fresh_agent(f, &[(skill.as_str(), c as f64 / 100.0)]).await?);
    }
    let scores = set_pool_scores(f, &ids).await?;
    let agents: Vec<Known> = ids
        .iter()
        .zip(scores)
        .zip(POOL_COSTS)
        .map(|((id, s), c)| Known {
            id: id.clone(),
            score_cents: (s * 100.0).round() as i64,
            cost_cents: c,
        })
        .collect();
    let p = Pool { skill, agents };
    // The pool as discovery shows it must be what the model says.
    let q = format!("skill={}", p.skill);
    let r = get_discover(f, &q).await?;
    let entries = listing(f, &r, &q, true)?;
    check_listing(
        &entries,
        &p.skill,
        &p.agents,
        None,
        None,
        true,
        "the pool of known agents",
    )?;
    let memo: Vec<Value> = p
        .agents
        .iter()
        .map(|a| json!({"id": a.id, "score": a.score_cents, "cost": a.cost_cents}))
        .collect();
    memo_set(f, "pool", json!({"skill": p.skill, "agents": memo}));
    Ok(p)
}

/// The pool the run remembers, if it holds every pool agent.
fn remembered_pool(f: &FuzzCtx) -> Option<Pool> {
    let m = memo_part(f, "pool")?;
    let agents = m["agents"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| Known {
                    id: x["id"].as_str().unwrap_or_default().to_string(),
                    score_cents: x["score"].as_i64().unwrap_or(0),
                    cost_cents: x["cost"].as_i64().unwrap_or(0),
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if agents.len() == POOL_COSTS.len() {
        return Some(Pool {
            skill: m["skill"].as_str().unwrap_or_default().to_string(),
            agents,
        });
    }
    None
}

/// Sets the fresh pool agents `ids` (all at 50.0) to their known scores through the
/// outcome channel (CHO-A1); returns the scores the model gives them.
async fn set_pool_scores(f: &mut FuzzCtx, ids: &[String]) -> FuzzStep<[f64; 6]> {
    let mut scores = [50.0_f64; 6];
    // (agent, hirer, SUCCESS?, how many): MID to 53.0, LOW to 45.5, BOTTOM to 0.0, TOP to 100.0.
    let plan = [
        (MID, H50, true, 3),
        (LOW, H50, false, 1),
        (BOTTOM, H50, false, 12),
        (TOP, MID, true, 48),
    ];
    for (who, hirer, success, times) in plan {
        for _ in 0..times {
            let (a, h) = (ids[who].clone(), ids[hirer].clone());
            let (s, hs) = (scores[who], scores[hirer]);
            tagged(Oracle::Outcome, outcome(f, &a, s, &h, hs, success).await)?;
            scores[who] = expected_after(scores[who], success, scores[hirer]);
        }
    }
    Ok(scores)
}

// ---------------------------------------------------------------------------
// Discovery

async fn get_discover(f: &mut FuzzCtx, query: &str) -> FuzzStep<Resp> {
    f.fuzzed(format!("GET /discover?{query}").as_bytes());
    call(
        &mut f.ctx,
        Base::Registry,
        reqwest::Method::GET,
        &format!("discover?{query}"),
        None,
    )
    .await
    .map_err(Into::into)
}

/// The entries of a discovery reply; `valid`: the query is well-formed, so the
/// reply must be 200 (a 404 for no match warns, CHO-A12).
fn listing(f: &mut FuzzCtx, r: &Resp, query: &str, valid: bool) -> FuzzStep<Vec<Value>> {
    no_server_error(r, &format!("GET /discover?{query}"))?;
    if r.http != 200 && !valid {
        return Ok(Vec::new());
    }
    // Judged by the rules `run` applies to a discovery reply (its status, a 404 for
    // no match a warning, its shape, scores, ranking and schema), whose first
    // failing finding stops the case, so that a fuzz finding names the same rule; the
    // entries read past their shape.
    let from = f.ctx.findings().len();
    let entries = crate::suites::chorus::expect::discovery_reply(&mut f.ctx, query, r)?;
    verdict::rules_since(&f.ctx, from)?;
    Ok(entries)
}

/// Checks a listing under `skill` against the agents that have it.
fn check_listing(
    entries: &[Value],
    skill: &str,
    known: &[Known],
    min: Option<i64>,
    max: Option<i64>,
    exact: bool,
    what: &str,
) -> FuzzStep<()> {
    let passes =
        |k: &Known| min.is_none_or(|m| k.score_cents >= m) && max.is_none_or(|m| k.cost_cents <= m);
    let mut seen: Vec<&str> = Vec::new();
    for e in entries {
        let id = e["agent_id"].as_str().unwrap_or_default();
        let by_skill = Some(rules::DISCOVER_BY_SKILL.key);
        let Some(k) = known.iter().find(|k| k.id == id) else {
            let stray = finding(
                Oracle::Discovery,
                format!("{what}: agent {id} is listed under skill {skill}, which it does not have (CHO-018)"),
            );
            return verdict::under(by_skill, stray);
        };
        if seen.contains(&id) {
            let twice = finding(
                Oracle::Discovery,
                format!("{what}: agent {id} is listed twice"),
            );
            return verdict::under(by_skill, twice);
        }
        seen.push(id);
        // Highest first (CHO-021) is the rule discover:ranking, judged in `listing`.
        check_entry(e, k, id, skill, what)?;
        let want = k.score_cents as f64 / 100.0;
        if exact && !passes(k) {
            // The filter that leaves it out is the one the target did not apply.
            let ignored = if min.is_some_and(|m| k.score_cents < m) {
                MIN_REPUTATION
            } else {
                MAX_COST
            };
            let listed = finding(
                Oracle::Discovery,
                format!("{what}: agent {id} (reputation {want}, cost {}) is listed though the filters leave it out (CHO-019, CHO-020)", k.cost_cents as f64 / 100.0),
            );
            return verdict::under(Some(ignored), listed);
        }
    }
    if exact {
        if let Some(k) = known
            .iter()
            .find(|k| passes(k) && !seen.contains(&k.id.as_str()))
        {
            // Without filters, the discover-by-skill case's finding (agent-missing).
            if min.is_none() && max.is_none() {
                return verdict::first_failing(vec![agent_missing(&k.id, skill, entries.len())]);
            }
            // The filter that left it out: the one at its bound (inclusive,
            // CHO-A12), else the one given.
            let at_min = min == Some(k.score_cents);
            let at_max = max == Some(k.cost_cents);
            let filter = if at_min || (!at_max && max.is_none()) {
                MIN_REPUTATION
            } else {
                MAX_COST
            };
            let missing = finding(
                Oracle::Discovery,
                format!("{what}: agent {} (reputation {}, cost {}) passes the filters but is not listed (CHO-015, CHO-019, CHO-020)",
                    k.id, k.score_cents as f64 / 100.0, k.cost_cents as f64 / 100.0),
            );
            return verdict::under(Some(filter), missing);
        }
    }
    Ok(())
}

/// The cases of `run` that judge discovery's filters (CHO-019, CHO-020).
const MIN_REPUTATION: &str = "chorus/discover-min-reputation";
const MAX_COST: &str = "chorus/discover-max-cost";

/// Checks one listed entry of agent `id` (known as `k`): it shows the queried skill
/// (CHO-018), the cost it was registered with (CHO-017) and the score the formula of
/// chorus.md §4 gives; returns the score it shows.
fn check_entry(e: &Value, k: &Known, id: &str, skill: &str, what: &str) -> FuzzStep<f64> {
    verdict::first_failing(entry_skill_finding(e, skill).into_iter().collect())?;
    let cost = e["skill"]["cost_per_call"].as_f64().unwrap_or(-1.0);
    if (cost - k.cost_cents as f64 / 100.0).abs() > 1e-9 {
        let other = finding(
            Oracle::Discovery,
            format!(
                "{what}: agent {id} shows cost {cost}, registered with {} (CHO-017)",
                k.cost_cents as f64 / 100.0
            ),
        );
        return verdict::under(Some(rules::DISCOVER_BY_SKILL.key), other);
    }
    let s = e["reputation_score"].as_f64().unwrap_or(-1.0);
    let want = k.score_cents as f64 / 100.0;
    if (s - want).abs() > 0.005 + 1e-9 {
        let wrong = finding(
            Oracle::Reputation,
            format!(
                "{what}: agent {id} shows reputation {s}, the formula of chorus.md §4 gives {want}"
            ),
        );
        return verdict::under(Some(score_rule(want, s)), wrong);
    }
    Ok(s)
}

/// The rule of `run` a score `shown` where the formula gives `want` breaks: a pool
/// agent's score says which outcomes made it (above 50.0 successes, below it
/// failures, 50.0 none); a score past [0, 100] is the clamp's.
fn score_rule(want: f64, shown: f64) -> &'static str {
    if !(0.0..=100.0).contains(&shown) {
        rules::REPUTATION_CLAMP.key
    } else if want > 50.0 {
        rules::REPUTATION_SUCCESS_GAIN.key
    } else if want < 50.0 {
        rules::REPUTATION_FAILURE_PENALTY.key
    } else {
        rules::REPUTATION_INITIAL.key
    }
}

enum FilterVal {
    Absent,
    Cents(i64),
    Junk(&'static str),
}

fn resolve(fl: Filter, points: &[i64]) -> FilterVal {
    let at = |i: u8| {
        points
            .get(usize::from(i) % points.len().max(1))
            .copied()
            .unwrap_or(0)
    };
    match fl {
        Filter::Absent => FilterVal::Absent,
        Filter::At(i) => FilterVal::Cents(at(i)),
        Filter::Above(i) => FilterVal::Cents(at(i) + 1),
        Filter::Below(i) => FilterVal::Cents(at(i) - 1),
        Filter::Cents(c) => FilterVal::Cents(i64::from(c % 12_000)),
        Filter::Negative(c) => FilterVal::Cents(-(i64::from(c % 1000) + 1)),
        Filter::Huge => FilterVal::Cents(100_000_000),
        Filter::Junk => FilterVal::Junk("abc"),
        Filter::Empty => FilterVal::Junk(""),
    }
}

fn fmt_cents(c: i64, padded: bool) -> String {
    let sign = if c < 0 { "-" } else { "" };
    let (whole, frac) = (c.abs() / 100, c.abs() % 100);
    if padded {
        format!("{sign}{whole}.{frac:02}")
    } else if frac == 0 {
        format!("{sign}{whole}")
    } else if frac % 10 == 0 {
        format!("{sign}{whole}.{}", frac / 10)
    } else {
        format!("{sign}{whole}.{frac:02}")
    }
}

fn percent_encode(s: &str, mask: u32) -> String {
    s.bytes()
        .enumerate()
        .map(|(i, b)| {
            let unreserved = b.is_ascii_alphanumeric() || b"-_.~".contains(&b);
            if unreserved && mask & (1 << (i % 32)) == 0 {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Builds the query; returns it, the bounds in cents and whether it is well-formed.
fn build_query(
    skill: &str,
    min: &FilterVal,
    max: &FilterVal,
    form: QueryForm,
) -> (String, Option<i64>, Option<i64>, bool) {
    let mut parts = Vec::new();
    let mut valid = true;
    let mut bound = |name: &str, v: &FilterVal, parts: &mut Vec<String>| match v {
        FilterVal::Absent => None,
        FilterVal::Cents(c) => {
            parts.push(format!("{name}={}", fmt_cents(*c, form.padded)));
            // A score outside [0, 100] or a negative cost may be refused as malformed.
            let in_range = if name == "max_cost" {
                *c >= 0
            } else {
                (0..=10_000).contains(c)
            };
            if !in_range {
                valid = false;
            }
            Some(*c)
        }
        FilterVal::Junk(s) => {
            valid = false;
            parts.push(format!("{name}={s}"));
            None
        }
    };
    let lo = bound("min_reputation", min, &mut parts);
    let hi = bound("max_cost", max, &mut parts);
    let s = format!("skill={}", percent_encode(skill, form.encode));
    if form.skill_last {
        parts.push(s);
    } else {
        parts.insert(0, s);
    }
    (parts.join("&"), lo, hi, valid)
}

async fn pool_query(f: &mut FuzzCtx, c: PoolQuery) -> FuzzStep<()> {
    let p = pool(f).await?;
    let scores: Vec<i64> = p.agents.iter().map(|a| a.score_cents).collect();
    let costs: Vec<i64> = p.agents.iter().map(|a| a.cost_cents).collect();
    let (min, max) = (resolve(c.min, &scores), resolve(c.max, &costs));
    let (q, lo, hi, valid) = build_query(&p.skill, &min, &max, c.form);
    let r = get_discover(f, &q).await?;
    let entries = listing(f, &r, &q, valid)?;
    check_listing(
        &entries,
        &p.skill,
        &p.agents,
        lo,
        hi,
        valid,
        &format!("GET /discover?{q}"),
    )
}

async fn fresh_query(f: &mut FuzzCtx, c: FreshQuery) -> FuzzStep<()> {
    let skill = unique_skill();
    let mut known = Vec::new();
    let agents: Vec<(u16, Option<u16>)> = if c.agents.is_empty() {
        vec![(10, None)]
    } else {
        c.agents.iter().take(3).copied().collect()
    };
    for (cost, second) in agents {
        let cost = i64::from(cost % 5000);
        let other = unique_skill();
        let mut skills: Vec<(&str, f64)> = vec![(skill.as_str(), cost as f64 / 100.0)];
        if let Some(s) = second {
            skills.insert(
                usize::from(s % 2),
                (other.as_str(), f64::from(s % 5000) / 100.0),
            );
        }
        let id = fresh_agent(f, &skills).await?;
        known.push(Known {
            id,
            score_cents: 5000,
            cost_cents: cost,
        });
    }
    let scores: Vec<i64> = known.iter().map(|a| a.score_cents).collect();
    let costs: Vec<i64> = known.iter().map(|a| a.cost_cents).collect();
    let (min, max) = (resolve(c.min, &scores), resolve(c.max, &costs));
    let (q, lo, hi, valid) = build_query(&skill, &min, &max, c.form);
    let r = get_discover(f, &q).await?;
    let entries = listing(f, &r, &q, valid)?;
    check_listing(
        &entries,
        &skill,
        &known,
        lo,
        hi,
        valid,
        &format!("GET /discover?{q}"),
    )
}

// ---------------------------------------------------------------------------
// Registration

async fn register_case(f: &mut FuzzCtx, c: RegisterCase) -> FuzzStep<()> {
    let skill = unique_skill();
    let cost = f64::from(c.cost % 5000) / 100.0;
    let mut body = registration(&[(&skill, cost)]);
    for m in c.muts.iter().take(3) {
        reg_mutate(&mut body, m);
    }
    let (bytes, parsed) = encode(&body, &c.wire);
    let (model, sent) = match parsed {
        Parsed::Json(v) => (register_model(&v), Some(v)),
        Parsed::NotJson => (Model::rejecting(Subject::Registration), None),
        Parsed::Unsure => (Model::unsure(Subject::Registration), None),
    };
    let r = post_bytes(f, Base::Registry, "register", bytes).await?;
    if r.http == 503 && model.verdict() != Expected::Reject(Codes::Any) {
        return skip("the registry is full (HTTP 503 to a registration)");
    }
    judge(f, &r, &model, "the registration", oracle_for(&c.wire))?;
    if !r.ok() {
        return Ok(());
    }
    check_registered(f, &r, sent.as_ref())?;
    // Found under its skill at 50.0, with its cost (CHO-015, CHO-018).
    let Some(v) = sent else {
        return Ok(());
    };
    let first = &v["skills"][0];
    if !(c.follow_up
        && matches!(model.verdict(), Expected::Accept(..))
        && first["skill_name"] == skill.as_str())
    {
        return Ok(());
    }
    check_found(f, &v, &skill).await
}

/// Checks that the agent registered as `v` is found under `skill` at 50.0, with the
/// cost it registered (CHO-015, CHO-018).
async fn check_found(f: &mut FuzzCtx, v: &Value, skill: &str) -> FuzzStep<()> {
    let first = &v["skills"][0];
    let id = v["agent_id"].as_str().unwrap_or_default().to_string();
    let found = discover(&mut f.ctx, &format!("skill={skill}")).await?;
    let known = [Known {
        id: id.clone(),
        score_cents: 5000,
        cost_cents: (first["cost_per_call"].as_f64().unwrap_or(0.0) * 100.0).round() as i64,
    }];
    // The registry may spell the id in other letter case.
    let found: Vec<Value> = found
        .into_iter()
        .map(|mut e| {
            if e["agent_id"]
                .as_str()
                .is_some_and(|s| s.eq_ignore_ascii_case(&id))
            {
                set(&mut e, "agent_id", json!(id));
            }
            e
        })
        .collect();
    check_listing(
        &found,
        skill,
        &known,
        None,
        None,
        true,
        "discovery of the new agent",
    )
}

// ---------------------------------------------------------------------------
// Reputation

async fn reputation_case(f: &mut FuzzCtx, c: Reputation) -> FuzzStep<()> {
    let p = pool(f).await?;
    let skill = unique_skill();
    let t = fresh_agent(f, &[(skill.as_str(), 0.1)]).await?;
    let steps: Vec<(bool, u8)> = if c.steps.is_empty() {
        vec![(true, 0)]
    } else {
        c.steps.iter().take(4).copied().collect()
    };
    let mut want = 50.0;
    let n = steps.len();
    let steps_alike = steps.iter().all(|(s, _)| *s == steps[0].0);
    for (i, (success, h)) in steps.into_iter().enumerate() {
        let hirer = &p.agents[usize::from(h) % p.agents.len()];
        let hirer_score = hirer.score_cents as f64 / 100.0;
        let hid = hirer.id.clone();
        tagged(
            Oracle::Outcome,
            outcome(f, &t, want, &hid, hirer_score, success).await,
        )?;
        want = expected_after(want, success, hirer_score);
        // A mixed sequence is checked after each outcome, so that a wrong score is
        // the finding of the rule for the outcome that made it.
        let mixed = !steps_alike;
        if c.check_each || mixed || i + 1 == n {
            let got = tagged(Oracle::Discovery, score(&mut f.ctx, &t, &skill).await)?;
            let what = format!(
                "after outcome {} ({}, hirer at {hirer_score}) (CHO-042 to CHO-045)",
                i + 1,
                if success { "SUCCESS" } else { "FAILURE" }
            );
            let rule = if success {
                &rules::REPUTATION_SUCCESS_GAIN
            } else {
                &rules::REPUTATION_FAILURE_PENALTY
            };
            let judged = tagged(
                Oracle::Reputation,
                check_score(&mut f.ctx, got, want, &what),
            );
            verdict::under(Some(rule.key), judged)?;
        }
    }
    Ok(())
}

async fn clamp_case(f: &mut FuzzCtx, c: Clamp) -> FuzzStep<()> {
    let p = pool(f).await?;
    let (who, success, want) = if c.top {
        (TOP, true, 100.0)
    } else {
        (BOTTOM, false, 0.0)
    };
    let id = p.agents[who].id.clone();
    let hirers: Vec<u8> = if c.hirers.is_empty() {
        vec![0]
    } else {
        c.hirers.iter().take(2).copied().collect()
    };
    for h in hirers {
        let i = usize::from(h) % p.agents.len();
        let hirer = if i == who {
            &p.agents[H50]
        } else {
            &p.agents[i]
        };
        let (hid, hs) = (hirer.id.clone(), hirer.score_cents as f64 / 100.0);
        tagged(
            Oracle::Outcome,
            outcome(f, &id, want, &hid, hs, success).await,
        )?;
    }
    let got = tagged(Oracle::Discovery, score(&mut f.ctx, &id, &p.skill).await)?;
    let what = format!(
        "an agent at {want} after more {} (clamped to [0, 100], CHO-045)",
        if success { "successes" } else { "failures" }
    );
    tagged(
        Oracle::Reputation,
        check_score(&mut f.ctx, got, want, &what),
    )
}

// ---------------------------------------------------------------------------
// Jobs

/// Judges a job result (from the response or the callback).
fn judge_result(
    f: &mut FuzzCtx,
    result: &Value,
    (sent, text): (&Value, &str),
    m: &Model,
    fx: &Fixture,
    oracle: Oracle,
) -> FuzzStep<()> {
    let r = Resp {
        http: 200,
        json: Some(result.clone()),
        raw: String::new(),
    };
    // The schema judged the result when it was read (`expect::read_result`).
    verdict::rules_since(&f.ctx, 0)?;
    let sent_id = sent["job_id"].as_str().filter(|s| is_uuid(s));
    if let Some(jid) = sent_id {
        if !result["job_id"]
            .as_str()
            .is_some_and(|got| same_id(got, jid))
        {
            let other = finding(
                Oracle::Job,
                format!(
                    "the result names job {}, not the request's {jid} (CHO-030)",
                    result["job_id"]
                ),
            );
            return verdict::under(Some(rules::JOB_RESULT_JOB_ID.key), other);
        }
    }
    let judged = match (result["status"].as_str(), m.verdict()) {
        (Some("SUCCESS"), Expected::Reject(_)) => finding(
            oracle,
            format!(
                "the job should be rejected ({}), yet ended in SUCCESS: {result}",
                m.explain()
            ),
        ),
        (Some("SUCCESS"), Expected::Accept(..)) => {
            return check_success(f, result, (sent, text), fx)
        }
        (Some("FAILURE"), Expected::Accept(..)) => {
            finding(oracle, format!("a valid job ended in FAILURE: {result}"))
        }
        (Some("FAILURE"), Expected::Reject(Codes::OneOf(codes))) if !codes.is_empty() => {
            if r.codes().iter().any(|c| codes.contains(&c.as_str())) {
                Ok(())
            } else {
                finding(
                    Oracle::ErrorCode,
                    format!(
                        "the job ended in FAILURE without {} ({}): {result}",
                        codes.join(" or "),
                        m.explain()
                    ),
                )
            }
        }
        _ => Ok(()),
    };
    let got = if result["status"] == "SUCCESS" {
        Observed::Carried
    } else {
        Observed::Refused(None)
    };
    verdict::under(Some(m.key_for(&got)), judged)
}

/// Checks the SUCCESS result of a valid job: its ids by the job-echo case's rule
/// (CHO-030), and an execution_cost in credits with two decimals (CHO-005,
/// CHO-033); a cost above the budget warns (CHO-A20). The output is what the
/// profile's fixture_output says the fixture returns for `text`; another output is
/// the profile's to fix, as `run` reports it (`chorus/profile:fixture_output`), not a
/// finding.
fn check_success(
    f: &mut FuzzCtx,
    result: &Value,
    (sent, text): (&Value, &str),
    fx: &Fixture,
) -> FuzzStep<()> {
    let from = f.ctx.findings().len();
    judge_result_ids(&mut f.ctx, result, sent, &fx.agent_id);
    verdict::rules_since(&f.ctx, from)?;
    let want = fixture_output(&f.ctx, text);
    if !contains(&result["output_data"], &want) {
        f.ctx.note(format!(
            "the fixture's output_data {} does not hold {want}, as [chorus] fixture_output describes (a profile matter, not judged)",
            result["output_data"]
        ));
    }
    // The cost by the job-echo case's rule (its type and sign by the schema, judged
    // when the result was read).
    let from = f.ctx.findings().len();
    judge_cost(&mut f.ctx, result, sent);
    verdict::rules_since(&f.ctx, from)
}

async fn job_case(f: &mut FuzzCtx, c: JobCase) -> FuzzStep<()> {
    let fx = fixture(f).await?;
    let text: String = c.text.chars().take(100).collect();
    let mut muts: Vec<JobMut> = match c.tweak {
        JobTweak::None | JobTweak::Valid => Vec::new(),
        JobTweak::OtherSkill => vec![JobMut::Skill(SkillForm::Other)],
        JobTweak::BudgetBelowCost(n) => vec![JobMut::Budget(Credits::Cents(u16::from(n) % 10))],
        JobTweak::BudgetAroundCost(d) => vec![JobMut::BudgetAtCost(d)],
    };
    muts.extend(c.muts.iter().take(3).cloned());
    let oracle = oracle_for(&c.wire);
    if let Wire::Canonical = c.wire {
        return canonical_job(f, &fx, &text, &muts, oracle).await;
    }
    raw_job(f, &fx, &text, &muts, &c.wire, oracle).await
}

/// Runs the job as the shared helpers send it (the result in the response or at the
/// callback_url, CHO-026, CHO-A4) and judges the rejection or the result.
async fn canonical_job(
    f: &mut FuzzCtx,
    fx: &Fixture,
    text: &str,
    muts: &[JobMut],
    oracle: Oracle,
) -> FuzzStep<()> {
    let input = fixture_input(&f.ctx, text);
    let ran = run_job(&mut f.ctx, &fx.url, |j| {
        set(j, "input_data", input);
        for m in muts {
            job_mutate(j, m, fx);
        }
    })
    .await;
    let (sent, outcome) = tagged(Oracle::Delivery, ran)?;
    f.fuzzed(&serde_json::to_vec(&sent).unwrap_or_default());
    let m = job_model(&sent, fx);
    match outcome {
        JobOutcome::Rejected(r) => judge(f, &r, &m, "the job", oracle),
        JobOutcome::Result { result, .. } => {
            judge_result(f, &result, (&sent, text), &m, fx, oracle)
        }
    }
}

/// Sends the job as bytes in the drawn wire form and judges the immediate reply.
async fn raw_job(
    f: &mut FuzzCtx,
    fx: &Fixture,
    text: &str,
    muts: &[JobMut],
    wire: &Wire,
    oracle: Oracle,
) -> FuzzStep<()> {
    // Raw bytes: the immediate reply is judged; a callback is not waited for.
    let mut body = job(
        &f.ctx,
        fixture_input(&f.ctx, text),
        0.15,
        "http://127.0.0.1:9/results",
    );
    for m in muts {
        job_mutate(&mut body, m, fx);
    }
    let (bytes, parsed) = encode(&body, wire);
    let (m, sent) = match parsed {
        Parsed::Json(v) => (job_model(&v, fx), v),
        Parsed::NotJson => (Model::rejecting(Subject::Job), Value::Null),
        Parsed::Unsure => (Model::unsure(Subject::Job), Value::Null),
    };
    let r = post_bytes(f, Base::Url(fx.url.clone()), "", bytes).await?;
    let fin = r.ok() && matches!(status_of(&r), Some("SUCCESS" | "FAILURE"));
    if fin && !is_rejection(&r) {
        no_server_error(&r, "the job")?;
        let result = read_result(&mut f.ctx, &r.json.clone().unwrap_or_default(), &sent);
        return judge_result(f, &result, (&sent, text), &m, fx, oracle);
    }
    if r.ok() && !fin {
        // Taken for later delivery: the callback is not waited for, so only the codes
        // are judged.
        no_server_error(&r, "the job")?;
        return Ok(());
    }
    judge(f, &r, &m, "the job", oracle)?;
    if fin {
        let result = read_result(&mut f.ctx, &r.json.clone().unwrap_or_default(), &sent);
        judge_result(f, &result, (&sent, text), &m, fx, oracle)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Ledger

struct Sent {
    value: Value,
    bytes: Vec<u8>,
    accepted: bool,
}

/// A ledger case's state: its two fresh owners, the credits each starts with, whether
/// the profile declares transfers idempotent, the model's balances and the transfers
/// sent so far.
struct LedgerState {
    a: String,
    b: String,
    initial: i64,
    idempotent: bool,
    books: Books,
    history: Vec<Sent>,
    /// Owners an accepted transfer of this case credited: a shortfall of theirs
    /// may be a credit never made (the rule of transfer-credits-recipient).
    received: std::collections::HashSet<String>,
}

impl LedgerState {
    /// Applies an accepted transfer's effect to the model.
    fn apply(&mut self, e: &Effect) {
        if let Effect::Move { to, .. } = e {
            self.received.insert(to.clone());
        }
        self.books.apply(e);
    }

    /// Files a refusal for want of funds of `owner`, whose balance the model knows,
    /// under transfer-credits-recipient when a transfer of this case credited it.
    fn short(&self, owner: &str, r: &Resp, judged: FuzzStep<()>) -> FuzzStep<()> {
        let funds = r.codes().iter().any(|c| c == "TRANSFER_FAILED");
        if funds && self.received.contains(owner) {
            verdict::refile(CREDITS_RECIPIENT, judged)
        } else {
            judged
        }
    }
}

/// The case of `run` that judges that a transfer credits its recipient (CHO-038).
const CREDITS_RECIPIENT: &str = "chorus/transfer-credits-recipient";

async fn ledger_case(f: &mut FuzzCtx, c: Ledger) -> FuzzStep<()> {
    let mut st = ledger_setup(f).await?;
    let steps: Vec<TransferStep> = if c.steps.is_empty() {
        vec![TransferStep::Plain]
    } else {
        c.steps.iter().take(4).cloned().collect()
    };
    for (i, step) in steps.into_iter().enumerate() {
        let what = format!("transfer {}", i + 1);
        match step {
            TransferStep::Repeat(form) => {
                if let Some(sender) = repeat_transfer(f, &mut st, form, &what).await? {
                    // A balance other than the model's is the repeat applied again
                    // (CHO-039, as the transfer-idempotent case reads it).
                    let idempotent = Some(rules::TRANSFER_IDEMPOTENT.key);
                    return drain_and_overdraw(f, &st, sender == st.b, idempotent).await;
                }
            }
            TransferStep::Plain | TransferStep::Send { .. } => {
                let (amount, reverse, muts, wire) = match step {
                    TransferStep::Send {
                        amount,
                        reverse,
                        muts,
                        wire,
                    } => (amount, reverse, muts, wire),
                    _ => (Amount::Part(1), false, Vec::new(), Wire::Canonical),
                };
                send_transfer(f, &mut st, amount, reverse, &muts, &wire, &what).await?;
            }
        }
    }
    drain_and_overdraw(f, &st, c.check_second, None).await
}

/// Sets up two fresh owners through the profile's `owner` setup requests, each at
/// the profile's initial credits.
async fn ledger_setup(f: &mut FuzzCtx) -> FuzzStep<LedgerState> {
    let initial = (f.ctx.profile().chorus.initial_credits * 100.0).round() as i64;
    let idempotent = f.ctx.profile().chorus.idempotent_transfers;
    let a = funded_owner(&mut f.ctx).await?;
    let b = funded_owner(&mut f.ctx).await?;
    let books = Books {
        balance: HashMap::from([(a.clone(), Some(initial)), (b.clone(), Some(initial))]),
    };
    Ok(LedgerState {
        a,
        b,
        initial,
        idempotent,
        books,
        history: Vec::new(),
        received: Default::default(),
    })
}

/// Sends again the last accepted transfer (else the last one sent), as sent or
/// respelled, and judges the reply: applied once where the profile declares
/// idempotency (CHO-039), else open (CHO-A14).
async fn repeat_transfer(
    f: &mut FuzzCtx,
    st: &mut LedgerState,
    form: Option<WireForm>,
    what: &str,
) -> FuzzStep<Option<String>> {
    let Some(prev) = st
        .history
        .iter()
        .rev()
        .find(|s| s.accepted)
        .or(st.history.last())
    else {
        return Ok(None);
    };
    let (value, was_accepted) = (prev.value.clone(), prev.accepted);
    let bytes = match form {
        Some(w) => respell(&value, w),
        None => prev.bytes.clone(),
    };
    let (m, effect) = repeat_model(st, &value, was_accepted);
    let r = post_bytes(f, Base::Ledger, "transfer", bytes.clone()).await?;
    let judged = judge(
        f,
        &r,
        &m,
        &format!("{what}, a repeat of an earlier transfer_id"),
        Oracle::Ledger,
    );
    if was_accepted && st.idempotent {
        // A repeat of an applied transfer that is not taken as applied once is the
        // rule transfer-idempotent's (CHO-039), whatever the reply.
        verdict::refile(rules::TRANSFER_IDEMPOTENT.key, judged)?;
    } else {
        judged?;
    }
    let ok = r.ok() && !is_rejection(&r);
    if ok && (!was_accepted || !st.idempotent) {
        st.apply(&effect);
    }
    let owner = |k: &str| value[k].as_str().unwrap_or_default().to_string();
    let (sender, recipient) = (owner("from_owner"), owner("to_owner"));
    st.history.push(Sent {
        value,
        bytes,
        accepted: ok || was_accepted,
    });
    // A repeat the ledger took of a transfer it applied: whether it was applied
    // once is the sender's balance, checked now, where nothing else of the case
    // could have made it wrong (no credit to it); else its balance is no longer
    // known.
    if !(ok && was_accepted && st.idempotent) {
        return Ok(None);
    }
    let ours = sender == st.a || sender == st.b;
    if ours && !st.received.contains(&sender) {
        return Ok(Some(sender));
    }
    st.books.apply(&Effect::Unknown(vec![sender, recipient]));
    Ok(None)
}

/// The model of a repeated transfer and what it does: nothing moves for a repeat of
/// an accepted transfer where the profile declares idempotency (CHO-039); without it
/// the balances are no longer known (CHO-A14); a retry of a refused transfer is
/// judged afresh, an acceptance left open.
fn repeat_model(st: &LedgerState, value: &Value, was_accepted: bool) -> (Model, Effect) {
    let (mut m, mut effect) = transfer_model(value, &st.books);
    if was_accepted && !st.idempotent {
        // The profile does not declare idempotency (CHO-A14): whatever
        // the repeat does, the balances are no longer known.
        m.note(
            Class::Open,
            "a repeated transfer_id ([chorus] idempotent_transfers = false)",
        );
        effect = Effect::Unknown(vec![st.a.clone(), st.b.clone()]);
    } else if was_accepted {
        // Applied once: accepted again, nothing moves (CHO-039).
        m = Model::of(Subject::Transfer);
    } else if matches!(m.verdict(), Expected::Accept(..)) {
        m.note(Class::Open, "a retry of a transfer that was refused before");
    }
    (m, effect)
}

/// Sends a drawn transfer between the two owners and judges the reply against the
/// model: within the balance it is accepted (CHO-038), above it TRANSFER_FAILED
/// (CHO-040); an accepted transfer moves the model's balances.
async fn send_transfer(
    f: &mut FuzzCtx,
    st: &mut LedgerState,
    amount: Amount,
    reverse: bool,
    muts: &[TransferMut],
    wire: &Wire,
    what: &str,
) -> FuzzStep<()> {
    let body = transfer_body(st, amount, reverse, muts);
    let (bytes, parsed) = encode(&body, wire);
    let (m, effect, value) = match parsed {
        Parsed::Json(v) => {
            let (m, e) = transfer_model(&v, &st.books);
            (m, e, v)
        }
        Parsed::NotJson => (
            Model::rejecting(Subject::Transfer),
            Effect::Unknown(vec![st.a.clone(), st.b.clone()]),
            Value::Null,
        ),
        Parsed::Unsure => (
            Model::unsure(Subject::Transfer),
            Effect::Unknown(vec![st.a.clone(), st.b.clone()]),
            Value::Null,
        ),
    };
    let r = post_bytes(f, Base::Ledger, "transfer", bytes.clone()).await?;
    let judged = judge(f, &r, &m, what, oracle_for(wire));
    let sender = value["from_owner"].as_str().unwrap_or_default();
    st.short(sender, &r, judged)?;
    let ok = r.ok() && !is_rejection(&r);
    if ok {
        st.apply(&effect);
    }
    if value.is_object() {
        st.history.push(Sent {
            value,
            bytes,
            accepted: ok,
        });
    }
    Ok(())
}

/// The body of a drawn transfer: from the first owner to the second (or back when
/// `reverse`), the amount relative to the sender's balance as the model knows it,
/// then up to three mutations.
fn transfer_body(st: &LedgerState, amount: Amount, reverse: bool, muts: &[TransferMut]) -> Value {
    let (from, to) = if reverse {
        (&st.b, &st.a)
    } else {
        (&st.a, &st.b)
    };
    let bal = st.books.get(from).unwrap_or(st.initial).max(0);
    let amount = match amount {
        Amount::Part(p) => credits_of((bal * i64::from(p % 4 + 1) / 4).max(1)),
        Amount::Exact => credits_of(bal.max(1)),
        Amount::Over(n) => credits_of(bal + 1 + i64::from(n % 50)),
        Amount::Credits(c) => credits_value(c),
    };
    let mut body = transfer(from, to, 0.0);
    set(&mut body, "amount", amount);
    for m in muts.iter().take(3) {
        transfer_mutate(&mut body, m);
    }
    body
}

/// The closing check of a ledger case on the first owner, or the second where
/// `check_second` (CHO-039, CHO-040).
/// `drained_as`: the rule a failed drain is filed under, where a step before it
/// (a repeat) is what made the model's balance wrong.
async fn drain_and_overdraw(
    f: &mut FuzzCtx,
    st: &LedgerState,
    check_second: bool,
    drained_as: Option<&'static str>,
) -> FuzzStep<()> {
    // The balance is where the model says: drained exactly, then one cent more fails.
    let (owner, other) = if check_second {
        (&st.b, &st.a)
    } else {
        (&st.a, &st.b)
    };
    let Some(bal) = st.books.get(owner) else {
        return Ok(());
    };
    if bal > 0 {
        let body = transfer(owner, other, bal as f64 / 100.0);
        let r = post_bytes(
            f,
            Base::Ledger,
            "transfer",
            serde_json::to_vec(&body).unwrap_or_default(),
        )
        .await?;
        let drained = judge(
            f,
            &r,
            &Model::of(Subject::Transfer),
            &format!(
                "draining the {} credits the model says {owner} holds (CHO-039, CHO-040)",
                bal as f64 / 100.0
            ),
            Oracle::Ledger,
        );
        match drained_as {
            Some(key) => verdict::refile(key, drained)?,
            None => st.short(owner, &r, drained)?,
        }
    }
    let body = transfer(owner, other, 0.01);
    let r = post_bytes(
        f,
        Base::Ledger,
        "transfer",
        serde_json::to_vec(&body).unwrap_or_default(),
    )
    .await?;
    let mut m = Model::of(Subject::Transfer);
    m.code(
        "TRANSFER_FAILED",
        "one cent from an empty balance (CHO-040)",
    );
    judge(
        f,
        &r,
        &m,
        &format!("one cent from {owner}, whose balance the model says is 0"),
        Oracle::Ledger,
    )
}

// ---------------------------------------------------------------------------

async fn one_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    match f.below(100) {
        0..=17 => {
            let c: RegisterCase = f.draw();
            register_case(f, c).await
        }
        18..=35 => {
            let c: PoolQuery = f.draw();
            pool_query(f, c).await
        }
        36..=42 => {
            let c: FreshQuery = f.draw();
            fresh_query(f, c).await
        }
        43..=55 => {
            let c: Reputation = f.draw();
            reputation_case(f, c).await
        }
        56..=59 => {
            let c: Clamp = f.draw();
            clamp_case(f, c).await
        }
        60..=79 => {
            let c: JobCase = f.draw();
            job_case(f, c).await
        }
        _ => {
            let c: Ledger = f.draw();
            ledger_case(f, c).await
        }
    }
}

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the registry, the agents
// and the ledger, and edits its discovery or job reply to the orchestrator under
// test.

/// Fuzzing an orchestrator: each case runs the client driver once (scenario
/// `hire`) against the scripted registry of `suites::chorus::expect`, the discovery or the
/// job reply edited. Oracles: every job is complete (a UUID job_id, an ISO 8601 UTC
/// timestamp, the currency); nothing is paid for a job refused or failed, whose
/// result does not say SUCCESS or names another job, or whose result never came;
/// nothing above the job's budget; a failed transfer is not a success; when every
/// reply keeps its value a successful job is paid once, judged as `run` judges it
/// (`suites::chorus::expect::judge_payment`), and its output taken; no crash, no hang.
pub static CLIENT_SPEC: Spec = Spec {
    transports: &[Transport::Http],
    case: client_case_fn,
    probe: client_probe_fn,
    resend: None,
    kinds: &[],
    unreachable: &[
        (
            "pays-the-budget",
            "paying another amount than the execution_cost within the budget is a warning in run (judge_payment), and the fuzzer reports only what fails; client-hire warns",
        ),
        (
            "job-id-uuid-v1",
            "a UUID of another version is a warning (CHO-A7), and the fuzzer reports only what fails; client-hire warns",
        ),
    ],
    connection_per_worker: false,
    workers: crate::fuzzing::spec::WORKERS,
};

use crate::suites::chorus::expect::{hire_input, hired_by_job_path, hired_ids, registry, Hire};

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let input = hire_input();
        let outbox = crate::counterparty::Outbox::default();
        let answer = registry(Hire::Success, &input, hired_ids(), outbox.clone());
        let run = crate::counterparty::drive_http(
            &mut f.ctx,
            "hire",
            &input,
            answer,
            crate::suites::chorus::expect::defined,
            outbox,
        )
        .await?;
        crate::fuzzing::client::ended_well(&run)?;
        crate::fuzzing::client::must_complete(&run, false, "a plain hire")
    })
}

/// One client fuzz case.
#[derive(Debug, Clone, Default, Arbitrary)]
struct ClientCase {
    /// Success, callback, failure, skill mismatch, budget insufficient, a result
    /// naming another job, a charge over the budget, a callback that never comes,
    /// a failed transfer.
    plan: u8,
    /// Edit the job reply (else the discovery reply).
    on_job: bool,
    edit: crate::fuzzing::client::Edit,
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    let c: ClientCase = f.draw();
    let plan = [
        Hire::Success,
        Hire::Callback,
        Hire::Failure,
        Hire::SkillMismatch,
        Hire::BudgetInsufficient,
        Hire::ForeignResult,
        Hire::CostOverBudget,
        Hire::CallbackNever,
        Hire::TransferFailed,
    ][usize::from(c.plan % 9)];
    let (run, served) = drive_client(f, &c, plan).await?;
    let kept = !served.applied || served.same_value;
    let jobs = crate::suites::chorus::expect::jobs_sent(&run);
    check_jobs_complete(f, &jobs)?;
    let transfers = crate::suites::chorus::expect::transfers_sent(&run);
    let pays = matches!(plan, Hire::Success | Hire::Callback | Hire::TransferFailed);
    let job_budget = jobs
        .first()
        .and_then(|(_, j)| j["budget"].as_f64())
        .unwrap_or(f64::MAX);
    if kept {
        check_kept_plan(&run, plan, &transfers, job_budget)?;
    }
    check_paid_for_success(&run, plan, &transfers)?;
    if pays && kept {
        check_payment(&run, plan, &c, &served, &transfers, job_budget)?;
    }
    Ok(())
}

/// Runs the client driver once (scenario `hire`) against the scripted registry
/// answering `plan`, the discovery or the job reply edited as the case says; the run
/// must end well (no crash, no hang). Returns the run and what the edit did.
async fn drive_client(
    f: &mut FuzzCtx,
    c: &ClientCase,
    plan: Hire,
) -> FuzzStep<(
    crate::counterparty::DriverRun,
    crate::fuzzing::client::Served,
)> {
    use crate::fuzzing::client::{edit_answer, ended_well, Served};
    let input = hire_input();
    let outbox = crate::counterparty::Outbox::default();
    let served = std::sync::Arc::new(std::sync::Mutex::new(Served::default()));
    let on_job = c.on_job;
    let answer = edit_answer(
        registry(plan, &input, hired_ids(), outbox.clone()),
        move |path| {
            let route = path.split('?').next().unwrap_or_default();
            if on_job {
                hired_by_job_path(route).is_some()
            } else {
                route == "/discover"
            }
        },
        c.edit.clone(),
        served.clone(),
    );
    let run = crate::counterparty::drive_http(
        &mut f.ctx,
        "hire",
        &input,
        answer,
        crate::suites::chorus::expect::defined,
        outbox,
    )
    .await?;
    ended_well(&run)?;
    let served = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok((run, served))
}

/// Checks that every job the orchestrator sent is complete: a UUID job_id (CHO-003),
/// an ISO 8601 UTC timestamp_utc (CHO-004) and the currency (CHO-025).
fn check_jobs_complete(f: &mut FuzzCtx, jobs: &[(usize, Value)]) -> FuzzStep<()> {
    for (_, job) in jobs {
        f.fuzzed(job.to_string().as_bytes());
        // The rules `run` holds a client's job to, with their keys (a failing one
        // is this case's finding): its schema, a UUID job_id no earlier job of the
        // campaign carried, the currency, an ISO 8601 UTC timestamp_utc.
        crate::suites::chorus::expect::check_job_members(&mut f.ctx, job);
    }
    Ok(())
}

/// Where every reply keeps its value: nothing is paid for a job whose result is
/// another job's or never came (CHO-030, CHO-038), nothing above the job's budget
/// (CHO-033), and a transfer answered TRANSFER_FAILED is no success (CHO-040).
fn check_kept_plan(
    run: &crate::counterparty::DriverRun,
    plan: Hire,
    transfers: &[Value],
    job_budget: f64,
) -> FuzzStep<()> {
    match plan {
        Hire::ForeignResult | Hire::CallbackNever if !transfers.is_empty() => {
            return finding(
                Oracle::Verdict,
                format!(
                    "the orchestrator paid for a job answered {plan:?}, which has no result of its own: {} (CHO-030, CHO-038)",
                    crate::finding::json(transfers)
                ),
            );
        }
        Hire::CostOverBudget => {
            if let Some(t) = transfers
                .iter()
                .find(|t| t["amount"].as_f64().is_some_and(|a| a > job_budget + 1e-9))
            {
                return finding(
                    Oracle::Verdict,
                    format!("the orchestrator paid {} for a job whose budget was {job_budget} (CHO-033)", t["amount"]),
                );
            }
        }
        Hire::TransferFailed if !transfers.is_empty() && crate::fuzzing::client::took(run) => {
            return finding(
                Oracle::Verdict,
                "the orchestrator reported success although its transfer was answered TRANSFER_FAILED (CHO-040)",
            );
        }
        _ => {}
    }
    Ok(())
}

/// Checks that nothing is paid for a job whose reply does not say SUCCESS (CHO-038,
/// CHO-041); a callback plan, whose result comes to the callback_url, is left out.
fn check_paid_for_success(
    run: &crate::counterparty::DriverRun,
    plan: Hire,
    transfers: &[Value],
) -> FuzzStep<()> {
    // A payment needs a result that says SUCCESS: the job reply, or (after a 202)
    // the result the harness POSTed to the callback_url.
    if let (Some(t), true) = (transfers.first(), plan != Hire::Callback) {
        let job_reply = run
            .exchanges
            .iter()
            .find(|x| hired_by_job_path(x.path.split('?').next().unwrap_or_default()).is_some());
        let said: Value = job_reply
            .and_then(|x| serde_json::from_slice(&x.answered).ok())
            .unwrap_or(Value::Null);
        if said["status"] != "SUCCESS" {
            return finding(
                Oracle::Verdict,
                format!(
                    "the orchestrator paid for a job answered {plan:?}, whose reply says status {}: {t} (CHO-038, CHO-041)",
                    said["status"]
                ),
            );
        }
    }
    Ok(())
}

/// A hire that pays, every reply keeping its value: the job is complete and its
/// output taken, and the payment gets the verdict `run` gives it (`judge_payment`,
/// CHO-033, CHO-038).
fn check_payment(
    run: &crate::counterparty::DriverRun,
    plan: Hire,
    c: &ClientCase,
    served: &crate::fuzzing::client::Served,
    transfers: &[Value],
    job_budget: f64,
) -> FuzzStep<()> {
    use crate::fuzzing::client::must_complete;
    if plan != Hire::TransferFailed {
        let respelled = served.applied && !matches!(c.edit, crate::fuzzing::client::Edit::None);
        must_complete(
            run,
            respelled,
            &format!("a hire answered {plan:?} ({})", c.edit),
        )?;
    }
    // The payment's verdict is the one `run` gives (`judge_payment`): another
    // amount within the budget is a warning there, so no finding here.
    use crate::suites::chorus::expect::{judge_payment, Payment, HIRE_COST};
    match judge_payment(transfers, HIRE_COST, job_budget) {
        Payment::Exact | Payment::OtherAmount(_) => {}
        other => {
            return finding(
                Oracle::Verdict,
                format!(
                    "the orchestrator paid {} for one job whose execution_cost is {HIRE_COST:.2} within a budget of {job_budget}: {other:?} (CHO-033, CHO-038)",
                    crate::finding::json(&transfers.iter().map(|t| &t["amount"]).collect::<Vec<_>>())
                ),
            );
        }
    }
    Ok(())
}
