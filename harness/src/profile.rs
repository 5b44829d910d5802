//! The target profile: how the harness reaches a target, and the fixtures it
//! expects (see the README's "Target profile" section). Every key is optional; an
//! unknown key is an error that names the key and its line.

use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Profile {
    pub target: TargetSection,
    pub timing: Timing,
    #[serde(rename = "agora-v1")]
    pub agora_v1: AgoraV1,
    #[serde(rename = "agora-spaces")]
    pub agora_spaces: AgoraSpaces,
    pub chorus: ChorusSection,
    #[serde(rename = "agora-exchange")]
    pub agora_exchange: AgoraExchange,
    pub agentprotocol: AgentProtocol,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TargetSection {
    pub token: Option<String>,
    pub ledger_url: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timing {
    pub case_timeout_ms: u64,
    pub replay_window_s: u64,
    pub offer_wait_max_ms: u64,
    pub conversation_wait_max_s: u64,
    pub heartbeat_timeout_s: u64,
    /// Largest reply body the harness reads.
    pub max_response_bytes: usize,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            case_timeout_ms: 5000,
            replay_window_s: 60,
            offer_wait_max_ms: 5000,
            conversation_wait_max_s: 10,
            heartbeat_timeout_s: 60,
            max_response_bytes: 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgoraV1 {
    pub direct_resource: String,
    pub negotiated_resource: String,
    /// A resource the target does not support.
    pub unknown_resource: String,
    /// Requests sent by the rate-limit burst case.
    pub burst_requests: usize,
}

impl Default for AgoraV1 {
    fn default() -> Self {
        AgoraV1 {
            direct_resource: "agora:echo:v1".into(),
            negotiated_resource: "agora:quote:v1".into(),
            unknown_resource: "agora:harness-nonexistent:v1".into(),
            burst_requests: 200,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentProtocol {
    /// The action that answers with its params.
    pub echo_action: String,
    /// The action `{ms}` that takes that long.
    pub delay_action: String,
}

impl Default for AgentProtocol {
    fn default() -> Self {
        AgentProtocol {
            echo_action: "echo".into(),
            delay_action: "delay".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgoraSpaces {
    /// A joinable public space.
    pub public_space: String,
    /// A space name that does not exist.
    pub missing_space: String,
    /// A space with capacity 1; unset: the SPACE_FULL case is skipped.
    pub full_space: Option<String>,
    /// Texts above this size arrive as deltas.
    pub delta_threshold_bytes: usize,
}

impl Default for AgoraSpaces {
    fn default() -> Self {
        AgoraSpaces {
            public_space: "general".into(),
            missing_space: "agent.no-such-space".into(),
            full_space: None,
            delta_threshold_bytes: 4096,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChorusSection {
    /// The skill of the fixture agent the target registers at start-up.
    pub fixture_skill: String,
    /// How job results come back: sync, callback or either.
    pub result_delivery: ResultDelivery,
    /// How outcomes reach the registry: `METHOD /path`, with `{agent_id}`,
    /// `{outcome}` (success|failure), `{OUTCOME}` and `{job_id}` filled in. The body is
    /// the Job Result plus `orchestrator_id`.
    pub outcome_request: String,
    /// Credits every owner starts with in the ledger.
    pub initial_credits: f64,
}

impl Default for ChorusSection {
    fn default() -> Self {
        ChorusSection {
            fixture_skill: "echo_text".into(),
            result_delivery: ResultDelivery::Either,
            outcome_request: "POST /results".into(),
            initial_credits: 100.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultDelivery {
    Sync,
    Callback,
    Either,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgoraExchange {
    /// A protocol the target supports (unset: taken from /wellknown).
    pub protocol_hash: Option<String>,
    /// That protocol's document text.
    pub protocol_document: Option<String>,
    /// A request body that follows the protocol (JSON text).
    pub valid_body: Option<String>,
    /// A request body that breaks the protocol (JSON text), for protocol-level errors.
    pub invalid_body: Option<String>,
    /// The deployment is production: plain http:// fails instead of informing.
    pub production: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("profile {path}: {message}")]
    Invalid { path: String, message: String },
}

impl Profile {
    pub fn from_toml(text: &str, path: &str) -> Result<Profile, ProfileError> {
        let p: Profile = toml::from_str(text).map_err(|e| {
            let mut message = e.message().to_string();
            if let Some(span) = e.span() {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                message = format!("line {line}, column {col}: {message}");
            }
            ProfileError::Invalid {
                path: path.to_string(),
                message,
            }
        })?;
        p.validate().map_err(|message| ProfileError::Invalid {
            path: path.to_string(),
            message,
        })?;
        Ok(p)
    }

    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Profile::from_toml(&text, &path.display().to_string())
    }

    fn validate(&self) -> Result<(), String> {
        let t = &self.timing;
        if t.case_timeout_ms == 0 || t.case_timeout_ms > 600_000 {
            return Err("[timing] case_timeout_ms must be between 1 and 600000".into());
        }
        if t.max_response_bytes < 1024 {
            return Err("[timing] max_response_bytes must be at least 1024".into());
        }
        for (key, v) in [
            ("valid_body", &self.agora_exchange.valid_body),
            ("invalid_body", &self.agora_exchange.invalid_body),
        ] {
            if let Some(text) = v {
                serde_json::from_str::<serde_json::Value>(text)
                    .map_err(|e| format!("[agora-exchange] {key} is not JSON: {e}"))?;
            }
        }
        if let Some(h) = &self.agora_exchange.protocol_hash {
            if !reference_impl::agora_exchange::document::is_sha1_hex(h) {
                return Err(format!(
                    "[agora-exchange] protocol_hash {h:?} is not 40 hex digits"
                ));
            }
        }
        let o = &self.chorus.outcome_request;
        match o.split_once(' ') {
            Some((m, path))
                if reqwest::Method::from_bytes(m.as_bytes()).is_ok() && path.starts_with('/') => {}
            _ => {
                return Err(format!(
                    "[chorus] outcome_request {o:?} must read \"METHOD /path\""
                ))
            }
        }
        if !(self.chorus.initial_credits.is_finite() && self.chorus.initial_credits >= 0.0) {
            return Err("[chorus] initial_credits must be a non-negative number".into());
        }
        if self.agora_v1.burst_requests > 10_000 {
            return Err("[agora-v1] burst_requests must be at most 10000".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_names_key_and_line() {
        let e = Profile::from_toml("[timing]\ncase_timeout_ms = 10\nbogus = 1\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus") && e.contains("line 3"), "{e}");
    }

    #[test]
    fn defaults_and_overrides() {
        let p = Profile::from_toml("[agora-v1]\ndirect_resource = \"x:y\"\n", "p").unwrap();
        assert_eq!(p.agora_v1.direct_resource, "x:y");
        assert_eq!(p.timing.case_timeout_ms, 5000);
        let e = Profile::from_toml("[timing]\ncase_timeout_ms = \"fast\"\n", "p").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
