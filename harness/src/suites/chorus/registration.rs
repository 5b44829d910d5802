//! Agent registration (chorus.md §3.1): the registration a case sends, the reply
//! checks, the cases, and the fuzzer's registrations with what the spec fixes for each.

use super::errors::{extras, judge, rejected_row, Model, Subject};
use super::wire::{
    canonical_id, cost_class, credits_of, credits_value, encode, id_class, id_value, need_json,
    note_id_encoding, now_utc, oracle_for, post, post_bytes, remove, same_id, set, setup,
    shape_findings, timestamp_class, timestamp_value, unreadable_bodies, Base, Class, Credits,
    IdForm, Parsed, Resp, TsForm, Wire, ROUNDED,
};
use crate::case::{Bindings, Case, Step};
use crate::drive::Transport;
use crate::fuzzing::mutate::Val;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, skip as fuzz_skip, Codes, Expected, FuzzStep, Oracle};
use crate::profile::SetupEvent;
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use reference_impl::wire::{is_uuid, new_id};
use serde_json::{json, Value};

rules! {
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
    REPUTATION_INITIAL {
        key: "chorus/reputation:initial",
        requirements: &["CHO-014"],
        level: None,
        owner: "chorus/register-initial-reputation",
        summary: "a new agent starts at reputation_score 50.0",
        fails: "the registration reply or discovery shows a new agent at another reputation_score than 50.0",
        passes: "50.0 on registration and in discovery",
    }
    REGISTER_SCHEMAS_ANY_OBJECT {
        key: "chorus/register-schemas-any-object",
        requirements: &["CHO-010"],
        level: None,
        owner: "chorus/register-schemas-any-object",
        summary: "a skill's input_schema and output_schema take any JSON object, a JSON Schema among them",
        fails: "the registry refused a registration whose only difference from one it took is a schema object of another shape (each named: a JSON Schema with nested objects, arrays and booleans, an empty object)",
        passes: "each registration taken",
    }
    REGISTER_REJECTS_INVALID {
        key: "chorus/register-rejects-invalid",
        requirements: &["CHO-001", "CHO-002", "CHO-004", "CHO-009", "CHO-010"],
        level: None,
        owner: "chorus/register-rejects-invalid",
        summary: "a registration with a bad field, or without JSON, draws a 4xx",
        fails: "the registry took one or more bad registrations (each named: a bad agent_id, no api_endpoint, no skills, a skill without skill_name or with cost_per_call \"cheap\", timestamp_utc \"yesterday\", no body, a non-JSON body, a JSON array)",
        passes: "a 4xx for each",
    }
}

// ---------------------------------------------------------------------------
// Registration

/// A complete registration with fresh ids.
pub fn registration(skills: &[(&str, f64)]) -> Value {
    let skills: Vec<Value> = skills
        .iter()
        .map(|(name, cost)| {
            json!({"skill_name": name, "description": "harness test skill", "cost_per_call": cost,
                   "input_schema": {"text": "string"}, "output_schema": {"text": "string"}})
        })
        .collect();
    json!({
        "agent_id": new_id(), "agent_name": "agentconform test agent", "owner_id": format!("owner-{}", new_id()),
        // Never called: test agents exist only to be discovered and scored.
        "api_endpoint": "http://127.0.0.1:9/jobs", "skills": skills, "version": "0.1",
        "timestamp_utc": now_utc(),
    })
}

/// A test agent the harness registered.
#[derive(Debug, Clone)]
pub struct TestAgent {
    pub id: String,
    pub owner_id: String,
    /// Its first skill.
    pub skill: String,
    /// The score the registration reply gave, if it gave one.
    pub reputation: Option<f64>,
}

/// Reads what a registration reply says that other cases own: the agent id (its
/// encoding) and the initial reputation (CHO-014). Returns the reputation.
pub fn registration_reply(ctx: &mut Ctx, sent: &Value, r: &Resp) -> Option<f64> {
    let sent_id = sent["agent_id"].as_str().unwrap_or_default();
    if let Some(got) = r.get("agent_id").and_then(Value::as_str) {
        note_id_encoding(ctx, got, sent_id, "the registration reply");
    }
    let rep = r.get("reputation_score").and_then(Value::as_f64);
    if let Some(x) = rep {
        if (x - 50.0).abs() > ROUNDED {
            ctx.finding(REPUTATION_INITIAL.found(format!(
                "a new agent is registered at reputation_score {x}, not 50.0"
            )));
        }
    }
    rep
}

/// Judges the reply to an accepted registration as the register case does: 201
/// Created (CHO-012), the register-response schema (CHO-013: status "registered",
/// the agent_id, a reputation_score), the agent_id echoed (an id in another encoding
/// is a finding of its own, CHO-002) and the initial score (CHO-014). `sent` is the
/// registration as sent, when it was JSON. An agent_id sent that is no UUID (a
/// fuzzed one) is not judged in the reply: the harness sent it.
pub fn judge_registered(ctx: &mut Ctx, sent: Option<&Value>, r: &Resp) -> Step<()> {
    if r.http != 201 {
        ctx.deviation(REGISTER_STATUS.found(format!(
            "a registration is answered {}, not 201 Created",
            r.describe()
        )));
    }
    let mut reply = need_json(ctx, r, "POST /register")?;
    let sent = sent.unwrap_or(&Value::Null);
    registration_reply(ctx, sent, r);
    let sent_id = sent["agent_id"].as_str().filter(|s| is_uuid(s));
    // An id in another encoding is one finding (above); the schema judges the rest.
    let echoed = reply["agent_id"].as_str().map(String::from);
    if let Some(c) = echoed.as_deref().and_then(canonical_id) {
        reply["agent_id"] = json!(c);
    }
    shape_findings(
        ctx,
        "register-response",
        &SCHEMA_REGISTER_RESPONSE,
        &reply,
        |f| sent_id.is_none() && f.detail().starts_with("/agent_id"),
    );
    if let Some(sent_id) = sent_id {
        if !echoed.as_deref().is_some_and(|id| same_id(id, sent_id)) {
            ctx.deviation(REGISTER_AGENT_ID.found(format!(
                "the reply names agent {}, not the registered {sent_id:?}",
                r.get("agent_id").cloned().unwrap_or(Value::Null)
            )));
        }
    }
    Ok(())
}

/// Registers a test agent. A refusal of a complete registration blocks the case
/// (the registration case owns it).
pub async fn register(ctx: &mut Ctx, skills: &[(&str, f64)]) -> Step<TestAgent> {
    let body = registration(skills);
    let r = post(ctx, Base::Registry, "register", &body).await?;
    if !r.ok() || r.refusal_in_2xx() {
        let f = REGISTER_REFUSED.found(format!(
            "a complete registration was refused: {}",
            r.describe()
        ));
        return Err(ctx.block(f));
    }
    let reputation = registration_reply(ctx, &body, &r);
    let agent = TestAgent {
        id: body["agent_id"].as_str().unwrap_or_default().to_string(),
        owner_id: body["owner_id"].as_str().unwrap_or_default().to_string(),
        skill: skills.first().map(|s| s.0.to_string()).unwrap_or_default(),
        reputation,
    };
    let cost = skills.first().map_or(0.0, |s| s.1);
    setup(
        ctx,
        SetupEvent::Agent,
        &[
            ("agent_id", json!(agent.id)),
            ("owner_id", json!(agent.owner_id)),
            ("skill_name", json!(agent.skill)),
            ("cost_per_call", json!(cost)),
            ("reputation", json!(reputation.unwrap_or(50.0))),
        ],
    )
    .await?;
    Ok(agent)
}

/// Schema objects of other shapes than the harness's own flat ones, each a JSON
/// object as chorus.md §3.1 types them (CHO-010): (what, input_schema, output_schema).
fn schema_rows() -> Vec<(&'static str, Value, Value)> {
    let json_schema = json!({"type": "object", "properties": {"text": {"type": "string", "maxLength": 1000},
        "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["text"], "additionalProperties": false});
    vec![
        (
            "a JSON Schema as input_schema",
            json_schema.clone(),
            json!({"text": "string"}),
        ),
        (
            "a JSON Schema as output_schema",
            json!({"text": "string"}),
            json_schema,
        ),
        ("empty objects as both schemas", json!({}), json!({})),
    ]
}

/// Whether a registration's skill carries a schema object with a member that is
/// not a string: a shape other than the harness's own, which the
/// register-schemas-any-object case judges.
fn deep_schema(s: &serde_json::Map<String, Value>) -> bool {
    ["input_schema", "output_schema"].iter().any(|k| {
        s.get(*k)
            .and_then(Value::as_object)
            .is_some_and(|o| o.values().any(|v| !v.is_string()))
    })
}

/// The prefix of the skills the harness registers itself.
pub const HARNESS_SKILL: &str = "h_skill_";

/// A unique skill name, so that concurrent cases never see each other's agents.
pub fn unique_skill() -> String {
    format!("{HARNESS_SKILL}{}", new_id().replace('-', ""))
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("register", "a complete registration is answered 201 with status registered, the agent_id and a reputation",
        ["CHO-001", "CHO-008", "CHO-009", "CHO-011", "CHO-012", "CHO-013"], Fact, |ctx| {
        let body = registration(&[("h_skill_register", 0.1)]);
        let r = post(ctx, Base::Registry, "register", &body).await?;
        if !r.ok() || r.refusal_in_2xx() {
            let f = REGISTER_REFUSED.found(format!("a complete registration was refused: {}", r.describe()));
            return Err(ctx.block(f));
        }
        judge_registered(ctx, Some(&body), &r)
    }),
    case!("register-schemas-any-object", "a skill's input_schema and output_schema may be any JSON object: a JSON Schema, an empty object",
        ["CHO-010"], Fact, |ctx| {
        // The control: a registration with the harness's own flat schemas is taken.
        register(ctx, &[(&unique_skill(), 0.1)]).await?;
        ctx.control("a complete registration with flat schemas");
        let mut refused = Vec::new();
        for (what, input, output) in schema_rows() {
            let mut body = registration(&[(&unique_skill(), 0.1)]);
            body["skills"][0]["input_schema"] = input;
            body["skills"][0]["output_schema"] = output;
            let r = post(ctx, Base::Registry, "register", &body).await?;
            if r.ok() && !r.refusal_in_2xx() {
                ctx.checked(format!("{what}: taken ({})", r.http));
            } else {
                refused.push(format!("{what}: {}", r.describe()));
            }
        }
        ctx.rows_wrong(&REGISTER_SCHEMAS_ANY_OBJECT, "the registry refused schema objects chorus.md §3.1 allows (CHO-010)", &refused);
        Ok(())
    }),
    case!("register-rejects-invalid", "registrations with a bad agent_id, no api_endpoint, no skills, a bad skill or timestamp, or no JSON draw a 4xx",
        ["CHO-001", "CHO-002", "CHO-004", "CHO-009", "CHO-010"], Fact, |ctx| {
        // The control: a complete registration is taken.
        register(ctx, &[(&unique_skill(), 0.1)]).await?;
        ctx.control("a complete registration");
        let good = registration(&[("h_skill_invalid", 0.1)]);
        let mut cases: Vec<(&str, Value)> = Vec::new();
        let mut v = good.clone(); v["agent_id"] = json!("not-a-uuid"); cases.push(("agent_id \"not-a-uuid\"", v));
        let mut v = good.clone(); v.as_object_mut().map(|o| o.remove("api_endpoint")); cases.push(("no api_endpoint", v));
        let mut v = good.clone(); v.as_object_mut().map(|o| o.remove("skills")); cases.push(("no skills", v));
        let mut v = good.clone(); v["skills"][0]["cost_per_call"] = json!("cheap"); cases.push(("cost_per_call \"cheap\"", v));
        let mut v = good.clone(); v["skills"][0].as_object_mut().map(|o| o.remove("skill_name")); cases.push(("skill without skill_name", v));
        let mut v = good.clone(); v["timestamp_utc"] = json!("yesterday"); cases.push(("timestamp_utc \"yesterday\"", v));
        let mut taken = Vec::new();
        for (what, body) in cases {
            let r = post(ctx, Base::Registry, "register", &body).await?;
            taken.extend(rejected_row(ctx, &r, what));
        }
        for (what, r) in unreadable_bodies(ctx, Base::Registry, "register").await? {
            taken.extend(rejected_row(ctx, &r, what));
        }
        ctx.rows_wrong(&REGISTER_REJECTS_INVALID, "the registry took bad registrations", &taken);
        Ok(())
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

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
pub(super) struct RegisterCase {
    cost: u16,
    muts: Vec<RegMut>,
    wire: Wire,
    follow_up: bool,
    /// The registration taken is sent again, as it was: the agent must be
    /// listed once (the register-again case's rule).
    again: bool,
}

fn register_model(v: &Value) -> Model {
    let Some(o) = v.as_object() else {
        return Model::rejecting(REGISTRATION_SUBJECT);
    };
    // A refusal of a skill's schema object of another shape is its case's rule.
    let deep = o
        .get("skills")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().filter_map(Value::as_object).any(deep_schema));
    let mut m = Model::of(if deep {
        SCHEMAS_SUBJECT
    } else {
        REGISTRATION_SUBJECT
    });
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

fn first_skill(v: &mut Value) -> Option<&mut Value> {
    v.get_mut("skills")?.as_array_mut()?.first_mut()
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

/// Judges an accepted registration's reply by the rules the register case applies
/// (`judge_registered`: 201, schema, echoed id, 50.0).
fn check_registered(f: &mut FuzzCtx, r: &Resp, sent: Option<&Value>) -> FuzzStep<()> {
    let from = f.ctx.findings().len();
    judge_registered(&mut f.ctx, sent, r)?;
    verdict::rules_since(&f.ctx, from)
}

/// Registers a fresh agent with a valid body; returns its id.
pub(super) async fn fresh_agent(f: &mut FuzzCtx, skills: &[(&str, f64)]) -> FuzzStep<String> {
    f.create(REGISTRATIONS)?;
    let body = registration(skills);
    let id = body["agent_id"].as_str().unwrap_or_default().to_string();
    let r = post(&mut f.ctx, Base::Registry, "register", &body).await?;
    if r.http == 503 {
        return fuzz_skip("the registry is full (HTTP 503 to a valid registration)");
    }
    judge(
        f,
        &r,
        &Model::of(REGISTRATION_SUBJECT),
        "a valid registration",
        Oracle::Verdict,
    )?;
    check_registered(f, &r, Some(&body))?;
    Ok(id)
}

// ---------------------------------------------------------------------------
// Registration

/// A drawn registration, judged; the registration and its skill when the spec has it
/// accepted and the draw asks for the follow-up, which the caller checks
/// (`ranking::check_found`: the agent is then found at 50.0).
pub(super) async fn register_case(
    f: &mut FuzzCtx,
    c: RegisterCase,
) -> FuzzStep<Option<(Value, String, bool)>> {
    let skill = unique_skill();
    let cost = f64::from(c.cost % 5000) / 100.0;
    let mut body = registration(&[(&skill, cost)]);
    // A fresh agent id, which the registry may keep; past the campaign's cap, one
    // of its own registered before (registering an agent again is the target's to
    // take or refuse, CHO-A11; these agents never get an outcome, so stay at 50.0).
    let reused = agent_id_for(f, &mut body)?;
    for m in c.muts.iter().take(3) {
        reg_mutate(&mut body, m);
    }
    let (bytes, parsed) = encode(&body, &c.wire);
    let (model, sent) = match parsed {
        Parsed::Json(v) => (register_model(&v), Some(v)),
        Parsed::NotJson => (Model::rejecting(REGISTRATION_SUBJECT), None),
        Parsed::Unsure => (Model::unsure(REGISTRATION_SUBJECT), None),
    };
    let r = post_bytes(f, Base::Registry, "register", bytes).await?;
    if r.http == 503 && model.verdict() != Expected::Reject(Codes::Any) {
        return fuzz_skip("the registry is full (HTTP 503 to a registration)");
    }
    judge(f, &r, &model, "the registration", oracle_for(&c.wire))?;
    if !r.ok() {
        return Ok(None);
    }
    check_registered(f, &r, sent.as_ref())?;
    // Found under its skill at 50.0, with its cost (CHO-015, CHO-018).
    let Some(v) = sent else {
        return Ok(None);
    };
    let first = &v["skills"][0];
    // A reused agent id may be registered again by another case at once: its
    // listing is not this case's to check.
    if reused
        || !(c.follow_up
            && matches!(model.verdict(), Expected::Accept(..))
            && first["skill_name"] == skill.as_str())
    {
        return Ok(None);
    }
    Ok(Some((v, skill, c.again)))
}

/// A valid registration with a schema object of another shape, refused, is the
/// register-schemas-any-object case's finding.
const SCHEMAS_SUBJECT: Subject = Subject {
    taken: &REGISTER_REJECTS_INVALID,
    refused: &REGISTER_SCHEMAS_ANY_OBJECT,
    odd: &REGISTER_STATUS,
};

/// Gives `body` a fresh agent id while the campaign's cap allows one (remembered
/// for reuse), else one the register draws made before (true); skips when there
/// is none.
fn agent_id_for(f: &mut FuzzCtx, body: &mut Value) -> FuzzStep<bool> {
    let made = super::wire::memo_part(f, "registered").unwrap_or_else(|| json!([]));
    let made = made.as_array().cloned().unwrap_or_default();
    if f.created.take(REGISTRATIONS) {
        let mut made = made;
        made.push(body["agent_id"].clone());
        super::wire::memo_set(f, "registered", Value::Array(made));
        return Ok(false);
    }
    if made.is_empty() {
        return f.create(REGISTRATIONS).map(|()| false);
    }
    body["agent_id"] = made[f.below(made.len())].clone();
    Ok(true)
}

/// What a campaign counts of the agents it registers (`FuzzCtx::create`).
pub(super) const REGISTRATIONS: &str = "registrations";

/// What a registration gets wrong is filed under registration's rules.
pub(super) const REGISTRATION_SUBJECT: Subject = Subject {
    taken: &REGISTER_REJECTS_INVALID,
    refused: &REGISTER_REFUSED,
    odd: &REGISTER_STATUS,
};
