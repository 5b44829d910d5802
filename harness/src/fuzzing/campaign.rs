//! The library entry points of live fuzzing, used by the CLI and the tests alike:
//! [`campaign`] runs a fuzz campaign against a target, [`replay`] runs the case of
//! a crash file again. The suite's descriptor names its fuzz spec; every spec runs
//! on the one engine.

use super::corpus::{Known, Request};
use super::engine::{self, Bounds, Progress, Summary};
use super::spec::{Spec, Target};
use super::verdict::{FuzzFinding, Outcome};
use crate::case::{Role, Suite};
use crate::drive::Tls;
use crate::drive::Transport;
use crate::profile::Profile;
use crate::schemas::Schemas;
use crate::script::RunShared;
use reference_impl::wire::keys::Keypair;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a campaign or a replay cannot start.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    #[error("suite {0:?} has no live fuzzer")]
    UnknownSuite(String),
    #[error("suite {0:?} has no client fuzzer yet")]
    NoClientFuzzer(String),
    #[error("{suite} fuzzing speaks {speaks}, not {transport}")]
    Binding {
        suite: String,
        transport: Transport,
        speaks: String,
    },
    #[error("cannot read {path}: {why}")]
    Read { path: String, why: String },
    #[error("{path}: not a crash file: {why}")]
    NotCrashFile { path: String, why: String },
}

/// What a campaign talks to and how.
pub struct Connection {
    pub url: String,
    pub transport: Transport,
    pub profile: Profile,
    /// The file `profile` was read from, which crash files record.
    pub profile_file: Option<crate::profile::ProfileFile>,
    pub schemas: Schemas,
    pub http: reqwest::Client,
    pub tls: Tls,
    /// The signing keys to use (a replay: the campaign's, as its crash file
    /// records them); fresh ones when `None`.
    pub keys: Option<super::corpus::Keys>,
    /// The faults of the embedded reference the campaign runs against, when it
    /// started one (no --target): crash files record them, and a replay without
    /// --target starts that reference again.
    pub embedded: Option<Vec<String>>,
}

/// One fuzz campaign.
pub struct Campaign {
    pub suite: &'static Suite,
    /// The live fuzzer of the side fuzzed (`role`), as the suite's parts give it.
    pub spec: &'static Spec,
    /// Which side of the suite is fuzzed (client: through the profile's client
    /// driver, the connection's URL unused).
    pub role: Role,
    pub seed: u64,
    pub bounds: Bounds,
    /// Crash files go to `out/crashes`.
    pub out: PathBuf,
    /// Cases at once; `None`: the suite's default (`Spec::workers`).
    pub workers: Option<u64>,
    pub connection: Connection,
    /// What a baseline already knows: left out of the corpus.
    pub known: Known,
    /// The signatures of the earlier campaign in `out` this one resumes.
    pub previous: Vec<serde_json::Value>,
    /// The most of each kind of thing the campaign makes on the target that stays
    /// there (registrations, ledger accounts); `None`: no cap.
    pub max_created: Option<u64>,
}

fn check_binding(suite: &Suite, spec: &Spec, transport: Transport) -> Result<(), FuzzError> {
    if spec.transports.contains(&transport) {
        return Ok(());
    }
    Err(FuzzError::Binding {
        suite: suite.id.to_string(),
        transport,
        speaks: spec
            .transports
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

fn shared(c: Connection) -> (Arc<RunShared>, Transport, String) {
    let (key, other_key) = match c.keys {
        Some(k) => (Keypair::from_seed(&k.key), Keypair::from_seed(&k.other_key)),
        None => (Keypair::generate(), Keypair::generate()),
    };
    let shared = Arc::new(RunShared {
        transcript_budget: crate::script::TranscriptBudget::per_case_only(),
        adapted: Default::default(),
        client_ids: Default::default(),
        documents: Default::default(),
        embedded: false,
        profile: c.profile,
        key,
        other_key,
        schemas: c.schemas,
        http: c.http,
        tls: c.tls,
    });
    (shared, c.transport, c.url)
}

/// Runs a fuzz campaign; crash files go to `out/crashes`.
pub async fn campaign(c: Campaign) -> Result<Summary, FuzzError> {
    campaign_with(c, None).await
}

/// [`campaign`], with `progress` called now and then with the numbers so far.
pub async fn campaign_with(
    c: Campaign,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
) -> Result<Summary, FuzzError> {
    let (suite, spec) = (c.suite, c.spec);
    if c.role == Role::Server {
        check_binding(suite, spec, c.connection.transport)?;
    }
    let profile_file = c.connection.profile_file.clone();
    let embedded = c.connection.embedded.clone();
    let (shared, transport, url) = shared(c.connection);
    let mut target = Target::new(suite, shared, transport, &url);
    if let Some(cap) = c.max_created {
        target.created = Arc::new(super::spec::Created::with_cap(cap));
    }
    Ok(engine::fuzz(engine::Run {
        suite,
        role: c.role,
        spec,
        target,
        seed: c.seed,
        bounds: c.bounds,
        out: &c.out,
        workers: c.workers.unwrap_or(spec.workers),
        known: c.known,
        previous: c.previous,
        profile_file,
        embedded,
        progress,
    })
    .await)
}

/// A crash file, as `agentconform fuzz` wrote it.
#[derive(Debug, Clone)]
pub struct CrashFile {
    pub suite: String,
    /// The side fuzzed.
    pub role: Role,
    pub seed: u64,
    pub index: u64,
    /// The target the finding was made against.
    pub target: Option<String>,
    /// The profile file the campaign ran with, when it ran with one.
    pub profile: Option<crate::profile::ProfileFile>,
    /// The signing keys the campaign used, when its suite signs.
    pub keys: Option<super::corpus::Keys>,
    /// The oracle the crash file records.
    pub oracle: Option<String>,
    /// The signature it records.
    pub signature: Option<String>,
    /// The faults of the embedded reference the campaign ran against, when it ran
    /// against one.
    pub embedded: Option<Vec<String>>,
    /// Its smallest input and the request that carries it, when that input shows
    /// the signature sent alone (see `shrink`).
    pub alone: Option<(Request, Vec<u8>)>,
}

impl CrashFile {
    pub fn read(path: &std::path::Path) -> Result<CrashFile, FuzzError> {
        let shown = path.display().to_string();
        let text = std::fs::read(path).map_err(|e| FuzzError::Read {
            path: shown.clone(),
            why: e.to_string(),
        })?;
        let rec: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| FuzzError::NotCrashFile {
                path: shown.clone(),
                why: e.to_string(),
            })?;
        let (Some(seed), Some(index)) = (rec["seed"].as_u64(), rec["index"].as_u64()) else {
            return Err(FuzzError::NotCrashFile {
                path: shown,
                why: "no seed or index".into(),
            });
        };
        let suite = rec["suite"].as_str().unwrap_or_default().to_string();
        let role = if rec["role"] == "client" {
            Role::Client
        } else {
            Role::Server
        };
        let request = &rec["request"];
        let alone = match (
            request["method"].as_str(),
            request["url"].as_str(),
            rec["smallest"]["input"].as_str(),
        ) {
            (Some(method), Some(url), Some(input)) if rec["shrunk"]["alone"] == true => Some((
                Request {
                    method: method.to_string(),
                    url: url.to_string(),
                    endpoint: request["endpoint"].as_str().unwrap_or_default().to_string(),
                    body: input.to_string(),
                },
                input.as_bytes().to_vec(),
            )),
            _ => None,
        };
        Ok(CrashFile {
            suite,
            role,
            seed,
            index,
            target: rec["target"].as_str().map(String::from),
            profile: match (
                rec["profile"]["path"].as_str(),
                rec["profile"]["toml"].as_str(),
            ) {
                (Some(path), Some(text)) => Some(crate::profile::ProfileFile {
                    path: path.to_string(),
                    text: text.to_string(),
                }),
                _ => None,
            },
            keys: super::corpus::Keys::from_json(&rec["keys"]),
            embedded: rec["embedded"]["faults"].as_array().map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(String::from))
                    .collect()
            }),
            oracle: rec["oracle"].as_str().map(String::from),
            signature: rec["signature"].as_str().map(String::from),
            alone,
        })
    }
}

/// What a replay did.
#[derive(Debug)]
pub struct Replayed {
    /// What the case drew.
    pub label: String,
    pub outcome: Outcome,
    /// The signature its finding is filed under, as the campaign would file it.
    pub signature: Option<String>,
    /// The smallest input sent alone: the signature the target's answer showed
    /// (`Some(None)`: none), when the crash file has such an input.
    pub alone: Option<Option<String>>,
}

impl Replayed {
    pub fn finding(&self) -> Option<&FuzzFinding> {
        match &self.outcome {
            Outcome::Finding(f) => Some(f),
            _ => None,
        }
    }
}

/// Runs the case of `crash` again against the connection's target, with the
/// suite and the live fuzzer of the side it records.
pub async fn replay(
    crash: &CrashFile,
    (suite, spec): (&'static Suite, &'static Spec),
    c: Connection,
) -> Result<Replayed, FuzzError> {
    if crash.role == Role::Server {
        check_binding(suite, spec, c.transport)?;
    }
    let (shared, transport, url) = shared(c);
    let t = Target::new(suite, shared, transport, &url);
    let run = super::spec::run_case(spec, &t, crash.seed, crash.index).await;
    let signature = match &run.outcome {
        Outcome::Finding(f) => {
            let at = (url.as_str(), transport, spec.kinds);
            Some(super::corpus::filed_signature((suite, crash.role), at, f, &run).id(suite.id))
        }
        _ => None,
    };
    let alone = match &crash.alone {
        Some((req, bytes)) => {
            // The request goes where the case's would: the replay's target.
            let mut req = req.clone();
            if let Some(recorded) = &crash.target {
                req.url = req.url.replacen(recorded.as_str(), &url, 1);
            }
            Some(super::shrink::resend(spec, &t, &req, bytes).await)
        }
        None => None,
    };
    Ok(Replayed {
        label: run.label,
        outcome: run.outcome,
        signature,
        alone,
    })
}
