//! Every suite the harness knows.

pub mod agentprotocol;
pub mod agora_exchange;
pub mod agora_spaces;
pub mod agora_v1;
pub mod chorus;

use crate::case::{Role, Suite};
use crate::fuzzing::spec::Spec;
use crate::schemas::{Schemas, REPORT_SCHEMA};

/// What the engines above the case model take of a suite: its live fuzzers, its
/// discovery, its load plan and its in-process fuzz targets. The command line
/// resolves a suite once ([`parts`]) and hands each engine its own part, so that no
/// engine looks a suite up.
pub struct Parts {
    pub suite: &'static Suite,
    /// The live fuzzer of its server side.
    pub fuzzer: &'static Spec,
    /// The live fuzzer of its client side (`fuzz --role client`), when it has one.
    pub client_fuzzer: Option<&'static Spec>,
    /// What `agentconform init` probes the target for (`suites/<suite>/init.rs`):
    /// the profile keys it finds, and why it cannot find the others.
    pub discover: Option<crate::init::DiscoverFn>,
    /// How `agentconform load` drives it, when it does.
    pub load: Option<crate::load::Plan>,
    /// Its in-process fuzz targets (cargo-fuzz), by name.
    pub in_process: &'static [(&'static str, crate::fuzzing::checks::Check)],
}

impl Parts {
    /// The live fuzzer of `role`.
    pub fn fuzzer_of(&self, role: Role) -> Option<&'static Spec> {
        match role {
            Role::Server => Some(self.fuzzer),
            Role::Client => self.client_fuzzer,
        }
    }
}

/// The parts of every suite, in the order of [`all`].
pub fn all_parts() -> Vec<&'static Parts> {
    vec![
        &agora_v1::PARTS,
        &agora_spaces::PARTS,
        &chorus::PARTS,
        &agora_exchange::PARTS,
        &agentprotocol::PARTS,
    ]
}

/// The parts of the suite called `id`.
pub fn parts(id: &str) -> Option<&'static Parts> {
    all_parts().into_iter().find(|p| p.suite.id == id)
}

/// All suites, in the order `--suite all` runs them.
pub fn all() -> Vec<&'static Suite> {
    all_parts().into_iter().map(|p| p.suite).collect()
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
    all_parts()
        .into_iter()
        .filter(|p| p.load.is_some())
        .map(|p| p.suite.id)
        .collect()
}

/// Every in-process fuzz target: the shared ones, then each suite's
/// (`Parts::in_process`, in its `in_process.rs`).
pub fn fuzz_targets() -> Vec<(&'static str, crate::fuzzing::checks::Check)> {
    let own = all_parts()
        .into_iter()
        .flat_map(|p| p.in_process.iter().copied());
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
