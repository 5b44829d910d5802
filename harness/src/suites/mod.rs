//! Every suite the harness knows.

pub mod agentprotocol;
pub mod agora_exchange;
pub mod agora_spaces;
pub mod agora_v1;
pub mod chorus;

use crate::case::Suite;

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
