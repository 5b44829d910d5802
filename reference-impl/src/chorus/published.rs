//! What a chorus registry with `ChorusConfig::openapi` publishes about itself: an
//! OpenAPI 3 document of its routes at `GET /openapi.json`. A ledger on a listener
//! of its own is named by the `servers` of its paths, as OpenAPI lets a path say
//! where it is served.

use super::server::Chorus;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

/// `GET /openapi.json`.
pub async fn get_openapi(State(c): State<Arc<Chorus>>) -> Response {
    axum::Json(document(c.ledger_at.get().map(String::as_str))).into_response()
}

fn body(required: &[&str], properties: Value) -> Value {
    json!({"required": true, "content": {"application/json": {"schema": {
        "type": "object", "required": required, "properties": properties}}}})
}

fn path_param(name: &str, schema: Value) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": schema})
}

/// The document; `ledger`: the URL of a ledger on a listener of its own.
pub fn document(ledger: Option<&str>) -> Value {
    let s = json!({"type": "string"});
    let n = json!({"type": "number"});
    let mut paths = json!({
        "/register": {"post": {"summary": "Register an agent (chorus.md 3.1)",
            "requestBody": body(&["agent_id", "api_endpoint", "skills"], json!({
                "agent_id": s, "agent_name": s, "owner_id": s, "api_endpoint": s,
                "skills": {"type": "array"}, "version": s, "timestamp_utc": s})),
            "responses": {"201": {"description": "registered"}}}},
        "/discover": {"get": {"summary": "Find agents by skill (chorus.md 3.2)",
            "parameters": [
                {"name": "skill", "in": "query", "schema": s},
                {"name": "min_reputation", "in": "query", "schema": n},
                {"name": "max_cost", "in": "query", "schema": n}],
            "responses": {"200": {"description": "the agents, best first"}}}},
        "/reputation/{agent_id}/{outcome}": {"post": {
            "summary": "Record a job's outcome for the agent that ran it",
            "parameters": [path_param("agent_id", s.clone()),
                path_param("outcome", json!({"type": "string", "enum": ["success", "failure"]}))],
            "requestBody": body(&["job_id", "orchestrator_id"],
                json!({"job_id": s, "orchestrator_id": s})),
            "responses": {"200": {"description": "the agent's new score"}}}},
        "/agents/echo/jobs": {"post": {"summary": "A job for the echo fixture (chorus.md 3.3)",
            "responses": {"200": {"description": "the job's result"}}}},
        "/transfer": {"post": {"summary": "Transfer credits (chorus.md 3.5)",
            "requestBody": body(&["transfer_id", "from_owner", "to_owner", "amount"], json!({
                "transfer_id": s, "from_owner": s, "to_owner": s, "amount": n, "job_id": s})),
            "responses": {"200": {"description": "applied"}}}},
        "/accounts": {"post": {"summary": "Credit an owner's account",
            "requestBody": body(&["owner_id", "credits"], json!({"owner_id": s, "credits": n})),
            "responses": {"200": {"description": "the new balance"}}}},
        "/balance/{owner}": {"get": {"parameters": [path_param("owner", s.clone())],
            "responses": {"200": {"description": "the owner's balance"}}}},
    });
    if let (Some(url), Some(p)) = (ledger, paths.as_object_mut()) {
        for route in ["/transfer", "/accounts", "/balance/{owner}"] {
            if let Some(Value::Object(item)) = p.get_mut(route) {
                item.insert(
                    "servers".into(),
                    json!([{"url": url.trim_end_matches('/')}]),
                );
            }
        }
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": "chorus registry (agentconform reference)", "version": "0.1"},
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_separate_ledger_is_named_by_its_paths_servers() {
        let own = document(None);
        assert!(own["paths"]["/transfer"].get("servers").is_none());
        let apart = document(Some("http://127.0.0.1:9/"));
        assert_eq!(
            apart["paths"]["/transfer"]["servers"][0]["url"],
            "http://127.0.0.1:9"
        );
        assert!(apart["paths"]["/register"].get("servers").is_none());
    }
}
