//! What `agentconform init` finds of a chorus registry: the skill of an agent it
//! lists (GET /discover) and that skill's input shape where the listing gives its
//! schema, where its ledger takes transfers, and the route it takes job outcomes
//! at. Where the registry publishes an OpenAPI document of its routes, the ledger
//! and the outcome route are read from it; else they are probed.

use super::registration::HARNESS_SKILL;
use super::wire::{call, now_utc, Base};
use crate::init::{DiscoverFuture, Entry};
use crate::profile::OUTCOME_NAMES;
use crate::script::Ctx;
use reference_impl::wire::new_id;
use serde_json::{json, Map, Value};

const S: &str = "chorus";

/// Where a registry may serve its OpenAPI document, tried in this order.
const OPENAPI_ROUTES: [&str; 5] = [
    "/openapi.json",
    "/openapi",
    "/swagger.json",
    "/v3/api-docs",
    "/docs/openapi.json",
];

pub fn discover(ctx: &mut Ctx) -> DiscoverFuture<'_> {
    Box::pin(async move {
        let mut out = Vec::new();
        let doc = published(ctx).await;
        fixture_skill(ctx, &mut out).await;
        ledger(ctx, doc.as_ref(), &mut out).await;
        funding(ctx, doc.as_ref(), &mut out).await;
        outcome(ctx, doc.as_ref(), &mut out).await;
        out
    })
}

/// The OpenAPI document a registry publishes: the route it answered at, and the
/// document.
struct Published {
    at: &'static str,
    doc: Value,
}

async fn published(ctx: &mut Ctx) -> Option<Published> {
    for at in OPENAPI_ROUTES {
        let Ok(r) = call(ctx, Base::Registry, reqwest::Method::GET, at, None).await else {
            continue;
        };
        let doc = r
            .json
            .filter(|v| v.get("paths").is_some_and(Value::is_object));
        if let (200, Some(doc)) = (r.http, doc) {
            return Some(Published { at, doc });
        }
    }
    None
}

/// Why a route could not be read from the target's OpenAPI document.
fn unpublished(doc: Option<&Published>, what: &str) -> String {
    match doc {
        Some(p) => format!("GET {} lists no {what}", p.at),
        None => format!(
            "the target publishes no OpenAPI document (tried GET {})",
            OPENAPI_ROUTES.join(", ")
        ),
    }
}

/// One operation a document lists: method (upper case), path, the operation, and
/// the URL it is served at (the `servers` of the path, the operation or the
/// document, resolved against the target's URL).
struct Op<'a> {
    method: String,
    path: &'a str,
    op: &'a Value,
    base: String,
}

impl Published {
    fn ops(&self, target: &str) -> Vec<Op<'_>> {
        let root = server_of(&self.doc, target);
        let mut out = Vec::new();
        for (path, item) in self.doc["paths"].as_object().into_iter().flatten() {
            let at_path = server_of(item, &root);
            for (m, op) in item.as_object().into_iter().flatten() {
                if !["get", "post", "put", "patch", "delete"].contains(&m.as_str()) {
                    continue;
                }
                out.push(Op {
                    method: m.to_ascii_uppercase(),
                    path,
                    op,
                    base: server_of(op, &at_path),
                });
            }
        }
        out
    }
}

/// The first `servers` URL of an OpenAPI object, resolved against `outer`
/// (a relative URL is a path below its origin); none: `outer`.
fn server_of(v: &Value, outer: &str) -> String {
    let Some(url) = v["servers"][0]["url"].as_str() else {
        return outer.to_string();
    };
    if url.contains("://") {
        return url.trim_end_matches('/').to_string();
    }
    match reqwest::Url::parse(outer).and_then(|o| o.join(url)) {
        Ok(u) => u.as_str().trim_end_matches('/').to_string(),
        Err(_) => outer.to_string(),
    }
}

/// The skills of the agents a discovery reply lists, with the schema of each
/// skill's input where the listing gives it: a skill object names itself in
/// `skill_name` (chorus.md), or `name`; an agent lists one (`skill`) or many
/// (`skills`), and a reply lists agents as an array or under any member.
fn skills(v: &Value) -> Vec<(String, Option<Value>)> {
    let mut out = Vec::new();
    collect_skills(v, 0, &mut out);
    out
}

fn collect_skills(v: &Value, depth: usize, out: &mut Vec<(String, Option<Value>)>) {
    if depth > 8 {
        return;
    }
    match v {
        Value::Array(a) => a.iter().for_each(|e| collect_skills(e, depth + 1, out)),
        Value::Object(o) => {
            for key in ["skill", "skills"] {
                let listed = match o.get(key) {
                    Some(Value::Array(a)) => a.iter().collect(),
                    Some(one) => vec![one],
                    None => Vec::new(),
                };
                for s in listed {
                    let name = s.get("skill_name").or_else(|| s.get("name")).unwrap_or(s);
                    if let Some(n) = name.as_str() {
                        out.push((n.to_string(), s.get("input_schema").cloned()));
                    }
                }
            }
            o.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "skill" | "skills"))
                .for_each(|(_, e)| collect_skills(e, depth + 1, out));
        }
        _ => {}
    }
}

/// A `fixture_input` for a skill whose input schema is `schema`, in chorus.md's
/// flat form (`{"text": "string"}`) or as a JSON Schema (`properties`): the text
/// the harness sends goes in the first string member, other members get a value of
/// their type. None: no string member to carry the text, or a schema it cannot read.
fn input_template(schema: &Value) -> Option<String> {
    let members = schema
        .get("properties")
        .and_then(Value::as_object)
        .or_else(|| schema.as_object())?;
    let kind = |v: &Value| -> String {
        v.as_str()
            .or_else(|| v.get("type").and_then(Value::as_str))
            .unwrap_or("string")
            .to_ascii_lowercase()
    };
    let text_at = members.iter().position(|(_, v)| kind(v) == "string")?;
    let mut out = Map::new();
    for (i, (k, v)) in members.iter().enumerate() {
        let value = match kind(v).as_str() {
            _ if i == text_at => json!("{text}"),
            "number" | "float" | "integer" | "int" => json!(1),
            "boolean" | "bool" => json!(true),
            "array" | "list" => json!([]),
            "object" | "dict" => json!({}),
            _ => json!("x"),
        };
        out.insert(k.clone(), value);
    }
    Some(Value::Object(out).to_string())
}

async fn fixture_skill(ctx: &mut Ctx, out: &mut Vec<Entry>) {
    let default = ctx.profile().chorus.fixture_skill.clone();
    let path = format!("/discover?skill={default}");
    if let Ok(r) = call(ctx, Base::Registry, reqwest::Method::GET, &path, None).await {
        let found = r.json.as_ref().map(skills).unwrap_or_default();
        if let Some((_, schema)) = found.iter().find(|(s, _)| *s == default) {
            // The default the cases use.
            out.push(Entry::found_by_cases(
                S,
                "fixture_skill",
                default,
                format!("GET {path} lists an agent with it"),
            ));
            input_shape(schema.as_ref(), out);
            return;
        }
    }
    match call(ctx, Base::Registry, reqwest::Method::GET, "/discover", None).await {
        // The agents a run of the harness registered are left out.
        Ok(r) => match r
            .json
            .as_ref()
            .map(skills)
            .unwrap_or_default()
            .into_iter()
            .find(|(s, _)| !s.starts_with(HARNESS_SKILL))
        {
            Some((s, schema)) => {
                out.push(Entry::found(S, "fixture_skill", s.clone(), format!("GET /discover lists an agent with the skill {s:?} (the registry lists no agent for {default:?}); set fixture_output to what its output holds for that input")));
                input_shape(schema.as_ref(), out);
            }
            None => out.push(Entry::missing(S, "fixture_skill", format!("GET /discover?skill={default} and GET /discover list no agent ({}). Set it to the skill of an agent the registry serves, with fixture_input and fixture_output.", r.describe()))),
        },
        Err(_) => out.push(Entry::missing(S, "fixture_skill", "GET /discover drew no reply the harness could read. Set it to the skill of an agent the registry serves.")),
    }
}

/// `fixture_input` from the input schema the listing gives for the fixture's
/// skill, where it is not the default `{text}`.
fn input_shape(schema: Option<&Value>, out: &mut Vec<Entry>) {
    let Some(schema) = schema else {
        return;
    };
    match input_template(schema) {
        Some(t) if t == r#"{"text":"{text}"}"# => {}
        Some(t) => out.push(Entry::found(S, "fixture_input", t, format!("the skill's input_schema {schema} in the listing; the text the harness sends goes in its first string member"))),
        None => out.push(Entry::missing(S, "fixture_input", format!("the skill's input_schema {schema} has no string member to carry the text the harness sends. Set it to the input_data of a job the skill takes."))),
    }
}

/// Where transfers go: the ledger the profile names, or the route the target's
/// OpenAPI document lists for `POST …/transfer`, or else a ledger route at the
/// target that answers anything but 404 or 405 to an empty transfer (which it must
/// refuse).
async fn ledger(ctx: &mut Ctx, doc: Option<&Published>, out: &mut Vec<Entry>) {
    if let Some(url) = ctx.profile().target.ledger_url.clone() {
        out.push(Entry::found(
            "target",
            "ledger_url",
            url,
            "the profile given to init names it",
        ));
        return;
    }
    let target = ctx.url.trim_end_matches('/').to_string();
    let listed = doc.and_then(|p| {
        p.ops(&target)
            .into_iter()
            .find(|o| o.method == "POST" && o.path.trim_end_matches('/').ends_with("/transfer"))
            .map(|o| {
                let prefix = o.path.trim_end_matches('/').trim_end_matches("/transfer");
                (format!("{}{prefix}", o.base), p.at, o.path.to_string())
            })
    });
    if let Some((url, at, path)) = listed {
        let how = format!("GET {at} lists POST {path} at {url}");
        out.push(match url == target {
            // Without the key the cases send transfers to the target's URL.
            true => Entry::found_by_cases("target", "ledger_url", ctx.url.clone(), how),
            false => Entry::found("target", "ledger_url", url, how),
        });
        return;
    }
    let why = unpublished(doc, "POST /transfer");
    match call(ctx, Base::Registry, reqwest::Method::POST, "/transfer", Some(&json!({}))).await {
        Ok(r) if matches!(r.http, 404 | 405) => out.push(Entry::missing("target", "ledger_url", format!("POST /transfer at the target answered {}, and {why}: the ledger takes transfers elsewhere. Set it to the ledger's base URL.", r.describe()))),
        Ok(r) => out.push(Entry::found_by_cases("target", "ledger_url", ctx.url.clone(), format!("POST /transfer at the target with an empty body answered {}: the ledger is at the target's URL", r.describe()))),
        Err(_) => out.push(Entry::missing("target", "ledger_url", format!("POST /transfer at the target drew no reply the harness could read, and {why}. Set it to the ledger's base URL."))),
    }
}

/// Whether a fresh owner can pay: one transfer of 0.01 between two fresh owners at
/// the ledger init found. Refused, fresh owners hold nothing until an account is
/// opened and funded: `setup_requests` gets the `owner` request that does so, from
/// a route of the ledger the OpenAPI document lists (a POST naming accounts,
/// deposits or funds whose body takes an owner and an amount), once a fresh owner
/// it funded could pay; else why not. Nothing when the profile has setup requests.
async fn funding(ctx: &mut Ctx, doc: Option<&Published>, out: &mut Vec<Entry>) {
    if !ctx.profile().chorus.setup_requests.is_empty() {
        return;
    }
    // Where the ledger is not known, its entry says why; nothing is told here.
    let Some(ledger) = out.iter().find_map(|e| match e {
        Entry::Found {
            key: "ledger_url",
            value,
            ..
        } => value.as_str().map(String::from),
        _ => None,
    }) else {
        return;
    };
    let first = match pay(ctx, &ledger, None).await {
        Ok(None) => return,
        Ok(Some(refused)) => refused,
        Err(why) => {
            out.push(Entry::missing(S, "setup_requests", format!("a transfer of 0.01 between two fresh owners {why}. Set [[chorus.setup_requests]] on = \"owner\" if fresh owners must be funded.")));
            return;
        }
    };
    let target = ctx.url.clone();
    let route = doc.map(|p| (p.at, funding_route(&p.ops(&target), &ledger)));
    let (at, (path, body)) = match route {
        Some((at, Ok(r))) => (at, r),
        Some((at, Err(why))) => {
            out.push(Entry::missing(S, "setup_requests", format!("a transfer of 0.01 from a fresh owner was refused ({first}): fresh owners hold nothing, and GET {at} {why}. Set [[chorus.setup_requests]] on = \"owner\" to open and fund each fresh owner with {{amount}}.")));
            return;
        }
        None => {
            out.push(Entry::missing(S, "setup_requests", format!("a transfer of 0.01 from a fresh owner was refused ({first}): fresh owners hold nothing, and {}. Set [[chorus.setup_requests]] on = \"owner\" to open and fund each fresh owner with {{amount}}.", unpublished(None, ""))));
            return;
        }
    };
    let request = (path.clone(), body.clone());
    match pay(ctx, &ledger, Some(&request)).await {
        Ok(None) => {
            let mut t = toml::Table::new();
            t.insert("on".into(), "owner".into());
            t.insert("method".into(), "POST".into());
            t.insert("base".into(), "ledger".into());
            t.insert("path".into(), path.clone().into());
            t.insert("body".into(), body.into());
            let how = format!("a transfer of 0.01 from a fresh owner was refused ({first}); GET {at} lists POST {path}, and a fresh owner funded there could pay");
            out.push(Entry::found(S, "setup_requests", toml::Value::Array(vec![t.into()]), how));
        }
        Ok(Some(again)) => out.push(Entry::missing(S, "setup_requests", format!("a transfer of 0.01 from a fresh owner was refused ({first}), and again after POST {path} funded it ({again}). Set [[chorus.setup_requests]] on = \"owner\" to open and fund each fresh owner."))),
        Err(why) => out.push(Entry::missing(S, "setup_requests", format!("a transfer of 0.01 from a fresh owner was refused ({first}); funded at POST {path}, it {why}."))),
    }
}

/// One transfer of 0.01 between two fresh owners at `ledger`, the payer funded
/// first with 1.00 by `fund` (path, body template) when given: none when taken,
/// the reply when refused, `Err` when it drew no reply to read.
async fn pay(
    ctx: &mut Ctx,
    ledger: &str,
    fund: Option<&(String, String)>,
) -> Result<Option<String>, String> {
    let (from, to) = (
        format!("init-owner-{}", new_id()),
        format!("init-owner-{}", new_id()),
    );
    if let Some((path, body)) = fund {
        let vars = [("owner_id", json!(from)), ("amount", json!(1.0))];
        let b = crate::template::render_json(body, &vars)
            .map_err(|e| format!("could not be funded: {e}"))?;
        call(
            ctx,
            Base::Url(ledger.to_string()),
            reqwest::Method::POST,
            path,
            Some(&b),
        )
        .await
        .map_err(|_| {
            format!("could not be funded: POST {path} drew no reply the harness could read")
        })?;
    }
    let t = json!({"transfer_id": new_id(), "from_owner": from, "to_owner": to, "amount": 0.01, "job_id": new_id(), "timestamp_utc": now_utc()});
    match call(
        ctx,
        Base::Url(ledger.to_string()),
        reqwest::Method::POST,
        "/transfer",
        Some(&t),
    )
    .await
    {
        Ok(r) if r.ok() && !r.refusal_in_2xx() => Ok(None),
        Ok(r) if matches!(r.http, 404 | 405) => Err(format!(
            "answered {}: no transfer route there",
            r.describe()
        )),
        Ok(r) => Ok(Some(r.describe())),
        Err(_) => Err("drew no reply the harness could read".into()),
    }
}

/// Path words that name a route opening or funding an account.
const FUNDING_WORDS: [&str; 5] = ["account", "deposit", "fund", "mint", "credit"];

/// The route among `ops` at `ledger` that funds an owner: a POST whose path names
/// accounts or funds, without path parameters, whose body requires an owner and an
/// amount and nothing else the harness cannot fill; its path and body template.
fn funding_route(ops: &[Op<'_>], ledger: &str) -> Result<(String, String), String> {
    for o in ops
        .iter()
        .filter(|o| o.method == "POST" && !o.path.contains('{'))
    {
        let p = o.path.to_ascii_lowercase();
        if !FUNDING_WORDS.iter().any(|w| p.contains(w)) {
            continue;
        }
        // The path below the ledger URL the cases send to.
        let full = format!("{}{}", o.base, o.path);
        let Some(path) = full.strip_prefix(ledger.trim_end_matches('/')) else {
            continue;
        };
        let schema = &o.op["requestBody"]["content"]["application/json"]["schema"];
        let members: Vec<&str> = schema["properties"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let owner = members
            .iter()
            .find(|m| m.contains("owner") || **m == "account_id");
        let amount = members
            .iter()
            .find(|m| ["amount", "credits", "balance"].contains(m));
        let (Some(owner), Some(amount)) = (owner, amount) else {
            continue;
        };
        let unfilled: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|m| m != owner && m != amount)
            .collect();
        if unfilled.is_empty() {
            let body = format!("{{\"{owner}\": \"{{owner_id}}\", \"{amount}\": {{amount}}}}");
            return Ok((path.to_string(), body));
        }
    }
    Err(format!("lists no POST route at the ledger ({ledger}) that names accounts or funds and takes an owner and an amount"))
}

/// The route the registry takes job outcomes at: the profile's when it has
/// placeholders; the default route where it exists (an empty outcome is refused
/// there with anything but 404 or 405); else an outcome route the target's OpenAPI
/// document lists.
async fn outcome(ctx: &mut Ctx, doc: Option<&Published>, out: &mut Vec<Entry>) {
    let route = ctx.profile().chorus.outcome_request.clone();
    let Some((method, path)) = route.split_once(' ') else {
        return;
    };
    if path.contains('{') {
        out.push(Entry::found(
            S,
            "outcome_request",
            route.clone(),
            "the profile given to init names it",
        ));
        return;
    }
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let answer = match call(ctx, Base::Registry, m, path, Some(&json!({}))).await {
        Ok(r) if matches!(r.http, 404 | 405) => format!("answered {}", r.describe()),
        // The default route the cases use.
        Ok(r) => {
            let how = format!(
                "{route} with an empty outcome answered {}: the route exists",
                r.describe()
            );
            out.push(Entry::found_by_cases(S, "outcome_request", route, how));
            return;
        }
        Err(_) => "drew no reply the harness could read".to_string(),
    };
    let target = ctx.url.clone();
    let body = ctx.profile().chorus.outcome_body.clone();
    match doc.map(|p| (p.at, outcome_route(&p.ops(&target), &body))) {
        Some((at, Ok((found, lacking)))) => {
            let how = format!("{route} {answer}; GET {at} lists {found}");
            out.push(Entry::found(S, "outcome_request", found, how));
            if !lacking.is_empty() {
                out.push(Entry::missing(S, "outcome_body", format!("the route's body requires {} (GET {at}), which the outcome body lacks. Set it with those members.", lacking.join(", "))));
            }
        }
        Some((at, Err(why))) => out.push(Entry::missing(S, "outcome_request", format!("{route} {answer}, and GET {at} {why}. Set it (and outcome_body) to the request the registry takes outcomes with."))),
        None => out.push(Entry::missing(S, "outcome_request", format!("{route} {answer}, and {}. Set it (and outcome_body) to the request the registry takes outcomes with.", unpublished(None, "")))),
    }
}

/// Path words that name an outcome route.
const OUTCOME_WORDS: [&str; 6] = [
    "result",
    "outcome",
    "reputation",
    "feedback",
    "rating",
    "review",
];

/// The outcome route among `ops`: a POST whose path names outcomes (not a job, a
/// registration or a transfer) and whose path parameters are all placeholders the
/// harness fills; with the members its body requires that `body` lacks.
fn outcome_route(ops: &[Op<'_>], body: &str) -> Result<(String, Vec<String>), String> {
    let mut refused = Vec::new();
    for o in ops.iter().filter(|o| o.method == "POST") {
        let p = o.path.to_ascii_lowercase();
        let own = ["/jobs", "/register", "/transfer", "/discover", "/accounts"];
        if !OUTCOME_WORDS.iter().any(|w| p.contains(w)) || own.iter().any(|w| p.ends_with(w)) {
            continue;
        }
        match fill_path(o.path, o.op) {
            Ok(route) => return Ok((format!("POST {route}"), lacking(o.op, body))),
            Err(why) => refused.push(format!("POST {} ({why})", o.path)),
        }
    }
    match refused.is_empty() {
        true => Err(
            "lists no POST route for outcomes (a path naming results, outcomes or reputation)"
                .into(),
        ),
        false => Err(format!(
            "lists {}, which the harness cannot fill",
            refused.join(", ")
        )),
    }
}

/// `path` with each parameter spelled as the placeholder the harness fills.
fn fill_path(path: &str, op: &Value) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').ok_or("an unclosed parameter")? + open;
        let name = &rest[open + 1..close];
        out.push_str(&rest[..open]);
        out.push('{');
        out.push_str(placeholder(name, op).ok_or(format!("no placeholder for {{{name}}}"))?);
        out.push('}');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The placeholder a path parameter named `name` takes: its own name where it is
/// one; an outcome where its name says so or its schema's values are success and
/// failure, in the case they are written in.
fn placeholder(name: &str, op: &Value) -> Option<&'static str> {
    if let Some(n) = OUTCOME_NAMES.iter().find(|n| **n == name) {
        return Some(n);
    }
    let values: Vec<String> = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["name"] == name)
        .flat_map(|p| p["schema"]["enum"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    let l = name.to_ascii_lowercase();
    let says = ["outcome", "status", "result"]
        .iter()
        .any(|w| l.contains(w));
    if says || values.iter().any(|v| v.eq_ignore_ascii_case("success")) {
        let upper = values.iter().any(|v| *v == v.to_ascii_uppercase());
        return Some(if upper { "OUTCOME" } else { "outcome" });
    }
    [
        ("agent", "agent_id"),
        ("job", "job_id"),
        ("orchestrator", "orchestrator_id"),
        ("hirer", "hirer_id"),
    ]
    .into_iter()
    .find(|(w, _)| l.contains(w))
    .map(|(_, p)| p)
}

/// The members an operation's JSON body requires that the outcome body lacks.
fn lacking(op: &Value, body: &str) -> Vec<String> {
    let vars: Vec<(&str, Value)> = OUTCOME_NAMES.iter().map(|n| (*n, json!(0))).collect();
    let has = crate::template::render_json(body, &vars).unwrap_or_default();
    op["requestBody"]["content"]["application/json"]["schema"]["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|m| has.get(m).is_none())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_skills_in_any_listing_shape() {
        let spec = json!({"agents": [{"skill": {"skill_name": "a", "cost_per_call": 1}}]});
        let many = json!({"data": {"results": [{"skills": [{"name": "b", "input_schema": {"q": "string"}}, "c"]}]}});
        assert_eq!(skills(&spec), vec![("a".to_string(), None)]);
        assert_eq!(
            skills(&many),
            vec![
                ("b".to_string(), Some(json!({"q": "string"}))),
                ("c".to_string(), None)
            ]
        );
    }

    #[test]
    fn an_input_schema_gives_the_fixture_input() {
        let flat = json!({"n": "int", "q": "string"});
        assert_eq!(
            input_template(&flat).as_deref(),
            Some(r#"{"n":1,"q":"{text}"}"#)
        );
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        assert_eq!(
            input_template(&schema).as_deref(),
            Some(r#"{"text":"{text}"}"#)
        );
        assert_eq!(input_template(&json!({"n": "number"})), None);
    }

    #[test]
    fn finds_the_outcome_route_a_document_lists() {
        let doc = Published {
            at: "/openapi.json",
            doc: json!({"paths": {
                "/jobs/{job_id}/result": {"get": {}},
                "/agents/{agentId}/reputation/{verdict}": {"post": {
                    "parameters": [{"name": "verdict", "in": "path",
                        "schema": {"enum": ["SUCCESS", "FAILURE"]}}],
                    "requestBody": {"content": {"application/json": {"schema": {
                        "required": ["job_id", "rater"]}}}}}},
                "/transfer": {"servers": [{"url": "/ledger"}], "post": {}},
            }}),
        };
        let ops = doc.ops("http://127.0.0.1:9");
        let body = crate::profile::CHORUS_OUTCOME_BODY;
        assert_eq!(
            outcome_route(&ops, body),
            Ok((
                "POST /agents/{agent_id}/reputation/{OUTCOME}".to_string(),
                vec!["rater".to_string()]
            ))
        );
        let transfer = ops.iter().find(|o| o.path == "/transfer").map(|o| &o.base);
        assert_eq!(
            transfer.map(String::as_str),
            Some("http://127.0.0.1:9/ledger")
        );
        let none = Published {
            at: "/openapi.json",
            doc: json!({"paths": {"/x/{weird}/results": {"post": {}}}}),
        };
        assert!(outcome_route(&none.ops("http://127.0.0.1:9"), body)
            .is_err_and(|e| e.contains("{weird}")));
    }
}
