//! Every suite the harness knows.

pub mod agentprotocol;
pub mod agora_exchange;
pub mod agora_spaces;
pub mod agora_v1;
pub mod chorus;

use crate::case::Suite;
use crate::schemas::{Schemas, REPORT_SCHEMA};

/// All suites, in the order `--suite all` runs them.
pub fn all() -> Vec<&'static Suite> {
    vec![
        &agora_v1::SUITE,
        &agora_spaces::SUITE,
        &chorus::SUITE,
        &agora_exchange::SUITE,
        &agentprotocol::SUITE,
    ]
}

/// The suite called `id`.
pub fn by_id(id: &str) -> Option<&'static Suite> {
    all().into_iter().find(|s| s.id == id)
}

/// Suite ids for error messages.
pub fn ids() -> Vec<&'static str> {
    all().iter().map(|s| s.id).collect()
}

/// The suites `agentconform load` drives (those with a load plan).
pub fn loaded() -> Vec<&'static str> {
    all()
        .into_iter()
        .filter(|s| s.load.is_some())
        .map(|s| s.id)
        .collect()
}

/// Every in-process fuzz target: the shared ones, then each suite's
/// (`Suite::in_process`, in its `in_process.rs`).
pub fn fuzz_targets() -> Vec<(&'static str, crate::fuzzing::checks::Check)> {
    let own = all().into_iter().flat_map(|s| s.in_process.iter().copied());
    crate::fuzzing::checks::SHARED
        .iter()
        .copied()
        .chain(own)
        .collect()
}

/// The fault catalogue of the suite called `id`.
pub fn faults(id: &str) -> Option<&'static [reference_impl::faults::Fault]> {
    by_id(id).map(|s| s.faults)
}

/// Starts the reference implementation of the suite called `id`.
pub async fn start(
    id: &str,
    listen: &str,
    opts: &crate::embedded::Options,
) -> Result<crate::embedded::Server, String> {
    match by_id(id) {
        Some(s) => (s.start)(listen, opts).await,
        None => Err(format!(
            "unknown suite {id:?}; known suites: {}",
            ids().join(", ")
        )),
    }
}

impl Schemas {
    /// Compiles every suite's schemas (`Suite::schemas`, keyed `suite/name`) and the
    /// report's (`/report`); an error names the file.
    pub fn load() -> Result<Schemas, String> {
        let suites = all().into_iter().flat_map(|s| {
            s.schemas
                .iter()
                .map(move |(name, text)| (format!("{}/{name}", s.id), *text))
        });
        Schemas::compile(suites.chain([("/report".to_string(), REPORT_SCHEMA)]))
    }
}
