//! `agentconform rules` and `agentconform explain KEY`: the rule registry
//! (`crate::rules`, `crate::explain`) on the command line.

use super::common::unknown_suite;
use super::{io, CliError, Usage};
use crate::suites;
use std::io::Write;

/// Lists the rules of `suite` (of every suite without it or with `all`): key, level,
/// requirement ids, one line, separated by tabs.
pub fn list(suite: Option<&str>, out: &mut impl Write) -> Result<i32, CliError> {
    let chosen = match suite {
        None | Some("all") => suites::all(),
        Some(id) => vec![suites::by_id(id).ok_or_else(|| unknown_suite(id))?],
    };
    for s in chosen {
        crate::explain::list(s, out).map_err(io)?;
    }
    Ok(0)
}

/// Explains the finding key `key`; an unknown key is a usage error that says where
/// the keys are listed.
pub fn explain(key: &str, out: &mut impl Write) -> Result<i32, CliError> {
    let mut text = Vec::new();
    crate::explain::explain(&suites::all(), key, &mut text).map_err(Usage)?;
    out.write_all(&text).map_err(io)?;
    Ok(0)
}
