//! The target profile: how the harness reaches a target, and the fixtures it
//! expects (see docs/profile.md, "Target profile"). Every key is optional; an
//! unknown key is an error that names the key and its line.

use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;

/// A profile file as a campaign read it: crash files record it, so that `replay`
/// reads the same settings without being told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileFile {
    /// Where it was read (absolute where it could be made so).
    pub path: String,
    /// Its TOML text.
    pub text: String,
}

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
    /// Client runs (`run --role client`): the implementer's client driver.
    pub client: ClientSection,
    /// The keys the profile file sets, as it sets them (empty without a file): what
    /// a run found by discovery never overrides them (`Profile::set`).
    #[serde(skip)]
    pub given: toml::Table,
}

/// How the harness runs a client under test (`run --role client`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientSection {
    /// The client driver: a shell command with `{url}`, `{scenario}` and `{case}`
    /// (`--client` sets it; without either, the reference driver runs).
    pub command: Option<String>,
    /// How long one driver run may take, from its first connection to the
    /// counterparty, before its process group is ended.
    pub timeout_ms: u64,
    /// How long the driver may take to start (until its first connection), so
    /// that a slow interpreter is not a failing client.
    pub startup_ms: u64,
    /// Most bytes of the driver's standard output and error kept (each).
    pub max_output_bytes: usize,
    /// The identity the client acts as in every case of the run (chorus: its
    /// orchestrator_id); default: one fresh UUID per run.
    pub identity: Option<String>,
}

impl Default for ClientSection {
    fn default() -> Self {
        ClientSection {
            command: None,
            timeout_ms: 10_000,
            startup_ms: 30_000,
            max_output_bytes: 64 * 1024,
            identity: None,
        }
    }
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
    /// The id an ACCEPT quotes: the OFFER's envelope id (AV1-A11, the default) or
    /// the `offer_id` the target puts in the OFFER's payload.
    pub offer_id: OfferIdSource,
    /// The HTTP status of replies: 200 or the ERROR's code (the default), or any
    /// status (AV1-A9: the spec maps no codes to a transport).
    pub http_status: HttpStatusRule,
}

/// agora-v1: where the id an ACCEPT quotes comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OfferIdSource {
    Envelope,
    Payload,
}

/// agora-v1: what HTTP status a reply may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum HttpStatusRule {
    #[serde(rename = "code-or-200")]
    CodeOr200,
    #[serde(rename = "any")]
    Any,
}

impl Default for AgoraV1 {
    fn default() -> Self {
        AgoraV1 {
            direct_resource: "agora:echo:v1".into(),
            negotiated_resource: "agora:quote:v1".into(),
            unknown_resource: "agora:harness-nonexistent:v1".into(),
            burst_requests: 200,
            offer_id: OfferIdSource::Envelope,
            http_status: HttpStatusRule::CodeOr200,
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
    /// The target's agentId, when known: the first hello is addressed to it instead
    /// of being a broadcast (AGP-A22). Used as written; a value that is not base64 of
    /// a 32-byte key is reported once as a finding.
    pub agent_id: Option<String>,
    /// The target answers a request whose `timeout` passes before the delay action
    /// ends with error TIMEOUT (AGP-027). False: what it does is recorded, not judged
    /// (AGP-A18 leaves TIMEOUT to the requester's side).
    pub timeout_error: bool,
    /// The target answers a message addressed to another agent with UNKNOWN_AGENT
    /// (AGP-025: a hub or relay). False: a single agent, where it is informational.
    pub unknown_agent_error: bool,
    /// The longest a sender throttled with RATE_LIMITED waits before one request of
    /// its is served again (the target's rate window). The rate-limit case waits
    /// this long after its burst; 0: not judged.
    pub rate_window_ms: u64,
}

impl Default for AgentProtocol {
    fn default() -> Self {
        AgentProtocol {
            echo_action: "echo".into(),
            delay_action: "delay".into(),
            agent_id: None,
            timeout_error: true,
            unknown_agent_error: true,
            rate_window_ms: 1000,
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
    /// How long deltas of a cancelled event may still arrive after the target has
    /// seen the cancel (ambiguity ASP-A13); unset: 1000 ms, or 100 ms against the
    /// embedded reference, which stops at once.
    pub cancel_grace_ms: Option<u64>,
}

impl AgoraSpaces {
    /// The cancel grace ([`AgoraSpaces::cancel_grace_ms`]).
    pub fn cancel_grace(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.cancel_grace_ms.unwrap_or(1000))
    }
}

impl Default for AgoraSpaces {
    fn default() -> Self {
        AgoraSpaces {
            public_space: "general".into(),
            missing_space: "agent.no-such-space".into(),
            full_space: None,
            delta_threshold_bytes: 4096,
            cancel_grace_ms: None,
        }
    }
}

/// chorus. Templates (`fixture_*`, `outcome_*`, `setup_requests` bodies) are JSON
/// text with placeholders `{name}`: inside a JSON string a placeholder becomes the
/// value's text, elsewhere its JSON (`"owner": "{owner_id}", "credits": {amount}`).
/// An unknown placeholder, or a template that is not JSON once filled in, is a
/// profile error.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChorusSection {
    /// The skill of the fixture agent the target registers at start-up.
    pub fixture_skill: String,
    /// The `input_data` of a job for the fixture skill; `{text}` is the text the
    /// harness sends. Default `{"text": "{text}"}`.
    pub fixture_input: String,
    /// What the fixture returns for that input: the result's `output_data` must
    /// hold every member of this template with its value (members beyond them are
    /// allowed); `{text}` is the text sent. Default `{"text": "{text}"}` (an echo).
    pub fixture_output: String,
    /// An `input_data` the fixture cannot process, which it answers with a FAILURE
    /// result (or refuses). Default `{"text": 42}`.
    pub fixture_failing_input: String,
    /// How job results come back: sync, callback or either.
    pub result_delivery: ResultDelivery,
    /// How outcomes reach the registry (chorus.md names no way, CHO-A1):
    /// `METHOD /path` below the registry URL, with the placeholders of `outcome_body`.
    pub outcome_request: String,
    /// The body of the outcome request. Placeholders: `{agent_id}`, `{owner_id}` (the
    /// agent's owner, empty where unknown), `{reputation}` (the agent's score before
    /// the outcome), `{job_id}`, `{orchestrator_id}` and `{hirer_id}` (the hirer),
    /// `{hirer_owner_id}`, `{hirer_reputation}` (the hirer's score, which chorus.md §4
    /// weighs a SUCCESS with), `{outcome}` (success|failure), `{OUTCOME}`
    /// (SUCCESS|FAILURE), `{output_data}` (`{}` or null), `{error_message}` (null or a
    /// text), `{execution_cost}`, `{timestamp_utc}`, `{uuid}` (a fresh UUID). Default:
    /// the Job Result plus `orchestrator_id` and `hirer_reputation`.
    pub outcome_body: String,
    /// Credits a fresh owner holds in the ledger: from the start, or once the
    /// `owner` setup requests have run (they get it as `{amount}`).
    pub initial_credits: f64,
    /// The ledger applies a repeated `transfer_id` once. chorus.md leaves it open
    /// (CHO-A14): with `false` the idempotency case only records what it sees.
    pub idempotent_transfers: bool,
    /// Requests the harness sends to set the target up for a case: `[[chorus.setup_requests]]`
    /// with `on`, `method`, `path`, `base` and `body`.
    pub setup_requests: Vec<SetupRequest>,
}

/// The default `outcome_body`.
pub const CHORUS_OUTCOME_BODY: &str = r#"{"job_id": "{job_id}", "agent_id": "{agent_id}", "status": "{OUTCOME}", "output_data": {output_data}, "execution_cost": {execution_cost}, "execution_time_ms": 1, "error_message": {error_message}, "timestamp_utc": "{timestamp_utc}", "orchestrator_id": "{orchestrator_id}", "hirer_reputation": {hirer_reputation}}"#;

impl Default for ChorusSection {
    fn default() -> Self {
        ChorusSection {
            fixture_skill: "echo_text".into(),
            fixture_input: r#"{"text": "{text}"}"#.into(),
            fixture_output: r#"{"text": "{text}"}"#.into(),
            fixture_failing_input: r#"{"text": 42}"#.into(),
            result_delivery: ResultDelivery::Either,
            outcome_request: "POST /results".into(),
            outcome_body: CHORUS_OUTCOME_BODY.into(),
            initial_credits: 100.0,
            idempotent_transfers: true,
            setup_requests: Vec::new(),
        }
    }
}

/// One request the harness sends to set a chorus target up, e.g. to open and fund
/// a ledger account for each fresh owner.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupRequest {
    /// When it is sent, and so which placeholders it has (besides `{uuid}`,
    /// `{timestamp_utc}` and `{case_id}`): `case` (once, before a case's first request);
    /// `owner` (for each fresh owner, before its first transfer: `{owner_id}`,
    /// `{amount}` = `initial_credits`); `agent` (after each test agent registers:
    /// `{agent_id}`, `{owner_id}`, `{skill_name}`, `{cost_per_call}`,
    /// `{reputation}`); `job` (before each job for the fixture: `{job_id}`,
    /// `{orchestrator_id}`, `{skill_name}`, `{budget}`, `{callback_url}`); `transfer` (before each transfer: `{transfer_id}`,
    /// `{from_owner}`, `{to_owner}`, `{amount}`, `{job_id}`).
    pub on: SetupEvent,
    /// HTTP method; default POST.
    #[serde(default = "default_setup_method")]
    pub method: String,
    /// Path below the base URL; placeholders are filled in.
    pub path: String,
    /// `registry` (the target URL, default) or `ledger` (`[target] ledger_url`).
    #[serde(default)]
    pub base: SetupBase,
    /// JSON body template; unset: no body.
    pub body: Option<String>,
}

fn default_setup_method() -> String {
    "POST".into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SetupEvent {
    Case,
    Owner,
    Agent,
    Job,
    Transfer,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SetupBase {
    #[default]
    Registry,
    Ledger,
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
    /// A protocol the target supports (unset: taken from /wellknown), spelled as the
    /// target spells it; a form other than 40 hex digits is reported, not refused.
    pub protocol_hash: Option<String>,
    /// That protocol's document text.
    pub protocol_document: Option<String>,
    /// A request body that follows the protocol (JSON text).
    pub valid_body: Option<String>,
    /// A request body that breaks the protocol (JSON text), for protocol-level errors.
    pub invalid_body: Option<String>,
    /// The deployment is production: plain http:// fails instead of informing.
    pub production: bool,
    /// How a protocol document goes in `protocolSources`: its text, or a URL at
    /// which the harness serves it on loopback (agora-exchange.txt §6.1 allows
    /// both). A target that refuses text naming the sources is sent the URL.
    pub protocol_sources: SourcesForm,
}

/// The form of a document in `protocolSources`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourcesForm {
    #[default]
    Text,
    Url,
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
        let mut p = p;
        // It parsed as a profile, so it parses as a table.
        p.given = text.parse().unwrap_or_default();
        Ok(p)
    }

    /// Whether the profile file sets `[section] key`.
    pub fn sets(&self, section: &str, key: &str) -> bool {
        self.given
            .get(section)
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.contains_key(key))
    }

    /// Sets `[section] key` as a profile file would (what a run found by discovery):
    /// `Err` with why when the profile parser refuses it. Only that section changes.
    pub fn set(&mut self, section: &str, key: &str, value: toml::Value) -> Result<(), String> {
        let mut table = self.given.clone();
        let sec = table
            .entry(section)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(sec) = sec.as_table_mut() else {
            return Err(format!("[{section}] is not a table"));
        };
        sec.insert(key.to_string(), value);
        let text = toml::to_string(&table).map_err(|e| e.to_string())?;
        let p = Profile::from_toml(&text, "the profile with what the run found")
            .map_err(|e| e.to_string())?;
        match section {
            "target" => self.target = p.target,
            "agora-v1" => self.agora_v1 = p.agora_v1,
            "agora-spaces" => self.agora_spaces = p.agora_spaces,
            "chorus" => self.chorus = p.chorus,
            "agora-exchange" => self.agora_exchange = p.agora_exchange,
            "agentprotocol" => self.agentprotocol = p.agentprotocol,
            _ => return Err(format!("[{section}] is not a section a run discovers")),
        }
        self.given = table;
        Ok(())
    }

    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        Profile::load_file(path).map(|(p, _)| p)
    }

    /// The profile at `path`, and the file as read (which a crash file records).
    pub fn load_file(path: &Path) -> Result<(Profile, ProfileFile), ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let shown = std::fs::canonicalize(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
            .to_string();
        let profile = Profile::from_toml(&text, &path.display().to_string())?;
        Ok((profile, ProfileFile { path: shown, text }))
    }

    fn validate(&self) -> Result<(), String> {
        let t = &self.timing;
        if t.case_timeout_ms == 0 || t.case_timeout_ms > 600_000 {
            return Err("[timing] case_timeout_ms must be between 1 and 600000".into());
        }
        let c = &self.client;
        if c.identity
            .as_deref()
            .is_some_and(|i| i.trim().is_empty() || i.len() > 200)
        {
            return Err("[client] identity must be a non-empty string of at most 200 bytes".into());
        }
        for (key, v) in [("timeout_ms", c.timeout_ms), ("startup_ms", c.startup_ms)] {
            if v == 0 || v > 600_000 {
                return Err(format!("[client] {key} must be between 1 and 600000"));
            }
        }
        if t.max_response_bytes < 1024 {
            return Err("[timing] max_response_bytes must be at least 1024".into());
        }
        if let Some(g) = self.agora_spaces.cancel_grace_ms {
            if !(10..=60_000).contains(&g) {
                return Err("[agora-spaces] cancel_grace_ms must be between 10 and 60000".into());
            }
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
        // [agora-exchange] protocol_hash is used as the target spells it: a hash that
        // is not 40 hex digits is a finding of the run (AEX-039), not a profile error.
        check_profile(&self.chorus).map_err(|e| format!("[chorus] {e}"))?;
        if self.agora_v1.burst_requests > 10_000 {
            return Err("[agora-v1] burst_requests must be at most 10000".into());
        }
        Ok(())
    }
}

/// The placeholders of the outcome request and body.
pub const OUTCOME_NAMES: [&str; 16] = [
    "agent_id",
    "owner_id",
    "reputation",
    "job_id",
    "orchestrator_id",
    "hirer_id",
    "hirer_owner_id",
    "hirer_reputation",
    "outcome",
    "OUTCOME",
    "output_data",
    "error_message",
    "execution_cost",
    "timestamp_utc",
    "uuid",
    "case_id",
];

/// The placeholders of a setup request sent on `event`.
pub fn setup_names(event: SetupEvent) -> &'static [&'static str] {
    match event {
        SetupEvent::Case => &["case_id", "uuid", "timestamp_utc"],
        SetupEvent::Owner => &["owner_id", "amount", "uuid", "timestamp_utc", "case_id"],
        SetupEvent::Agent => &[
            "agent_id",
            "owner_id",
            "skill_name",
            "cost_per_call",
            "reputation",
            "uuid",
            "timestamp_utc",
            "case_id",
        ],
        SetupEvent::Job => &[
            "job_id",
            "orchestrator_id",
            "skill_name",
            "budget",
            "callback_url",
            "uuid",
            "timestamp_utc",
            "case_id",
        ],
        SetupEvent::Transfer => &[
            "transfer_id",
            "from_owner",
            "to_owner",
            "amount",
            "job_id",
            "uuid",
            "timestamp_utc",
            "case_id",
        ],
    }
}

/// Stand-in values of the right kind, to check templates when the profile loads.
pub fn sample_vars(names: &[&'static str]) -> Vec<(&'static str, Value)> {
    names
        .iter()
        .map(|n| {
            let v = match *n {
                "amount" | "cost_per_call" | "reputation" | "budget" | "hirer_reputation"
                | "execution_cost" => json!(1.5),
                "output_data" => json!({}),
                "error_message" => Value::Null,
                _ => json!("x"),
            };
            (*n, v)
        })
        .collect()
}

/// Checks the chorus section of a profile: every template fills in and parses.
pub fn check_profile(c: &ChorusSection) -> Result<(), String> {
    let method_ok = |m: &str| reqwest::Method::from_bytes(m.as_bytes()).is_ok();
    let o = &c.outcome_request;
    let outcome = sample_vars(&OUTCOME_NAMES);
    match o.split_once(' ') {
        Some((m, path)) if method_ok(m) && path.starts_with('/') => {
            crate::template::render(path, &outcome, false)
                .map_err(|e| format!("outcome_request: {e}"))?;
        }
        _ => return Err(format!("outcome_request {o:?} must read \"METHOD /path\"")),
    }
    if !c.outcome_body.trim().is_empty() {
        crate::template::render_json(&c.outcome_body, &outcome)
            .map_err(|e| format!("outcome_body: {e}"))?;
    }
    let text = [("text", json!("x"))];
    for (key, t) in [
        ("fixture_input", &c.fixture_input),
        ("fixture_output", &c.fixture_output),
    ] {
        crate::template::render_json(t, &text).map_err(|e| format!("{key}: {e}"))?;
    }
    serde_json::from_str::<Value>(&c.fixture_failing_input)
        .map_err(|e| format!("fixture_failing_input is not JSON: {e}"))?;
    if !(c.initial_credits.is_finite() && c.initial_credits >= 0.0) {
        return Err("initial_credits must be a non-negative number".into());
    }
    for (i, s) in c.setup_requests.iter().enumerate() {
        let at = format!("setup_requests[{i}]");
        if !method_ok(&s.method) {
            return Err(format!("{at}: method {:?} is not an HTTP method", s.method));
        }
        let vars = sample_vars(setup_names(s.on));
        crate::template::render(&s.path, &vars, false).map_err(|e| format!("{at} path: {e}"))?;
        if let Some(b) = &s.body {
            crate::template::render_json(b, &vars).map_err(|e| format!("{at} body: {e}"))?;
        }
    }
    Ok(())
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
