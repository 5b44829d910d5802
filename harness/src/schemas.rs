//! The project's JSON Schemas (schemas/), compiled once per run.

use std::collections::HashMap;

/// (suite, file name, text) of every schema, built into the binary.
pub const SCHEMA_FILES: &[(&str, &str, &str)] = &[
    (
        "agora-v1",
        "envelope",
        include_str!("../../schemas/agora-v1/envelope.schema.json"),
    ),
    (
        "agora-v1",
        "request",
        include_str!("../../schemas/agora-v1/request.schema.json"),
    ),
    (
        "agora-v1",
        "offer",
        include_str!("../../schemas/agora-v1/offer.schema.json"),
    ),
    (
        "agora-v1",
        "accept",
        include_str!("../../schemas/agora-v1/accept.schema.json"),
    ),
    (
        "agora-v1",
        "result",
        include_str!("../../schemas/agora-v1/result.schema.json"),
    ),
    (
        "agora-v1",
        "error",
        include_str!("../../schemas/agora-v1/error.schema.json"),
    ),
    (
        "agora-v1",
        "hello",
        include_str!("../../schemas/agora-v1/hello.schema.json"),
    ),
    (
        "agora-v1",
        "welcome",
        include_str!("../../schemas/agora-v1/welcome.schema.json"),
    ),
    (
        "agora-v1",
        "status",
        include_str!("../../schemas/agora-v1/status.schema.json"),
    ),
    (
        "agora-exchange",
        "request",
        include_str!("../../schemas/agora-exchange/request.schema.json"),
    ),
    (
        "agora-exchange",
        "response",
        include_str!("../../schemas/agora-exchange/response.schema.json"),
    ),
    (
        "agora-exchange",
        "wellknown",
        include_str!("../../schemas/agora-exchange/wellknown.schema.json"),
    ),
    (
        "chorus",
        "register-request",
        include_str!("../../schemas/chorus/register-request.schema.json"),
    ),
    (
        "chorus",
        "register-response",
        include_str!("../../schemas/chorus/register-response.schema.json"),
    ),
    (
        "chorus",
        "discover-response",
        include_str!("../../schemas/chorus/discover-response.schema.json"),
    ),
    (
        "chorus",
        "job-request",
        include_str!("../../schemas/chorus/job-request.schema.json"),
    ),
    (
        "chorus",
        "job-result",
        include_str!("../../schemas/chorus/job-result.schema.json"),
    ),
    (
        "chorus",
        "transfer-request",
        include_str!("../../schemas/chorus/transfer-request.schema.json"),
    ),
    (
        "chorus",
        "error",
        include_str!("../../schemas/chorus/error.schema.json"),
    ),
    (
        "agora-spaces",
        "agent-register",
        include_str!("../../schemas/agora-spaces/agent-register.schema.json"),
    ),
    (
        "agora-spaces",
        "agent-registered",
        include_str!("../../schemas/agora-spaces/agent-registered.schema.json"),
    ),
    (
        "agora-spaces",
        "agent-heartbeat",
        include_str!("../../schemas/agora-spaces/agent-heartbeat.schema.json"),
    ),
    (
        "agora-spaces",
        "space-join",
        include_str!("../../schemas/agora-spaces/space-join.schema.json"),
    ),
    (
        "agora-spaces",
        "space-joined",
        include_str!("../../schemas/agora-spaces/space-joined.schema.json"),
    ),
    (
        "agora-spaces",
        "space-leave",
        include_str!("../../schemas/agora-spaces/space-leave.schema.json"),
    ),
    (
        "agora-spaces",
        "space-members",
        include_str!("../../schemas/agora-spaces/space-members.schema.json"),
    ),
    (
        "agora-spaces",
        "space-publish",
        include_str!("../../schemas/agora-spaces/space-publish.schema.json"),
    ),
    (
        "agora-spaces",
        "space-event",
        include_str!("../../schemas/agora-spaces/space-event.schema.json"),
    ),
    (
        "agora-spaces",
        "space-event-delta",
        include_str!("../../schemas/agora-spaces/space-event-delta.schema.json"),
    ),
    (
        "agora-spaces",
        "space-event-done",
        include_str!("../../schemas/agora-spaces/space-event-done.schema.json"),
    ),
    (
        "agora-spaces",
        "space-event-cancel",
        include_str!("../../schemas/agora-spaces/space-event-cancel.schema.json"),
    ),
    (
        "agora-spaces",
        "space-list-request",
        include_str!("../../schemas/agora-spaces/space-list-request.schema.json"),
    ),
    (
        "agora-spaces",
        "space-list-reply",
        include_str!("../../schemas/agora-spaces/space-list-reply.schema.json"),
    ),
    (
        "agora-spaces",
        "error",
        include_str!("../../schemas/agora-spaces/error.schema.json"),
    ),
    (
        "agentprotocol",
        "message",
        include_str!("../../schemas/agentprotocol/message.schema.json"),
    ),
    (
        "agentprotocol",
        "hello-payload",
        include_str!("../../schemas/agentprotocol/hello-payload.schema.json"),
    ),
    (
        "agentprotocol",
        "request-payload",
        include_str!("../../schemas/agentprotocol/request-payload.schema.json"),
    ),
    (
        "agentprotocol",
        "response-payload",
        include_str!("../../schemas/agentprotocol/response-payload.schema.json"),
    ),
    (
        "agentprotocol",
        "error-payload",
        include_str!("../../schemas/agentprotocol/error-payload.schema.json"),
    ),
    (
        "",
        "report",
        include_str!("../../schemas/report.schema.json"),
    ),
];

/// One schema violation: where, and what the validator says of the value there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub pointer: String,
    pub message: String,
}

impl Violation {
    /// The pointer with array indices as `*`, so that the same deviation in every
    /// element of a list is one finding.
    pub fn shape(&self) -> String {
        self.pointer
            .split('/')
            .map(|seg| {
                if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
                    "*"
                } else {
                    seg
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }
}

pub struct Schemas {
    validators: HashMap<String, jsonschema::Validator>,
}

impl Schemas {
    /// Compiles every schema; an error names the file.
    pub fn load() -> Result<Schemas, String> {
        let mut docs = Vec::new();
        for (suite, name, text) in SCHEMA_FILES {
            let v: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format!("schema {suite}/{name} is not JSON: {e}"))?;
            docs.push((format!("{suite}/{name}"), v));
        }
        let mut registry = jsonschema::Registry::new();
        for (key, doc) in &docs {
            let Some(id) = doc.get("$id").and_then(|i| i.as_str()) else {
                return Err(format!("schema {key} has no $id"));
            };
            registry = registry
                .add(id, doc.clone())
                .map_err(|e| format!("schema {key}: {e}"))?;
        }
        let registry = registry
            .prepare()
            .map_err(|e| format!("schema registry: {e}"))?;
        let mut validators = HashMap::new();
        for (key, doc) in &docs {
            let v = jsonschema::options()
                .with_registry(&registry)
                .build(doc)
                .map_err(|e| format!("schema {key} does not compile: {e}"))?;
            validators.insert(key.clone(), v);
        }
        Ok(Schemas { validators })
    }

    /// Every violation of `suite/name` by `instance`, at most 16, each with the
    /// JSON Pointer of the member at fault.
    pub fn violations(
        &self,
        key: &str,
        instance: &serde_json::Value,
    ) -> Result<Vec<Violation>, String> {
        let Some(v) = self.validators.get(key) else {
            return Err(format!("no schema {key}"));
        };
        Ok(v.iter_errors(instance)
            .take(16)
            .map(|e| {
                let mut at = e.instance_path().to_string();
                // A missing member is a deviation of that member: its own pointer, so
                // that two missing members are two findings.
                if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind() {
                    let name = property
                        .as_str()
                        .map(String::from)
                        .unwrap_or_else(|| property.to_string());
                    at = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                }
                Violation {
                    pointer: if at.is_empty() { "/".to_string() } else { at },
                    message: e.to_string(),
                }
            })
            .collect())
    }

    /// Validates `instance` against `suite/name`; the error lists every violation
    /// with its JSON Pointer.
    pub fn check(&self, key: &str, instance: &serde_json::Value) -> Result<(), String> {
        let Some(v) = self.validators.get(key) else {
            return Err(format!("no schema {key}"));
        };
        let errors: Vec<String> = v
            .iter_errors(instance)
            .take(8)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                format!("at {at}: {e}")
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("schema {key}: {}", errors.join("; ")))
        }
    }
}
