//! The project's JSON Schemas (schemas/), compiled once per run.

use std::collections::HashMap;

/// (suite, file name, text) of every schema, built into the binary.
/// The report schema (schemas/report.schema.json); the suites' schemas are listed
/// by their descriptors (`Suite::schemas`).
pub const REPORT_SCHEMA: &str = include_str!("../../schemas/report.schema.json");

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
    /// Compiles `files` (key `suite/name`, text); an error names the file. Every
    /// suite's schemas with the report's: `Schemas::load` (suites/mod.rs).
    pub fn compile<'a>(
        files: impl IntoIterator<Item = (String, &'a str)>,
    ) -> Result<Schemas, String> {
        let mut docs = Vec::new();
        for (key, text) in files {
            let v: serde_json::Value =
                serde_json::from_str(text).map_err(|e| format!("schema {key} is not JSON: {e}"))?;
            docs.push((key, v));
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

    /// The key (`suite/name`) of every schema.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.validators.keys().map(String::as_str)
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
        // The common case, valid, without building the errors.
        if v.is_valid(instance) {
            return Ok(Vec::new());
        }
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
        if v.is_valid(instance) {
            return Ok(());
        }
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
