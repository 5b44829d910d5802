//! `agentconform list`: the cases with their id, level and requirement ids.

use super::common::unknown_suite;
use super::{io, CliError};
use crate::suites;
use std::io::Write;

/// Lists the cases of `suite` (of every suite without it or with `all`), server
/// cases first, then its untestable requirements.
pub fn run(suite: Option<&str>, out: &mut impl Write) -> Result<i32, CliError> {
    let chosen = match suite {
        None | Some("all") => suites::all(),
        Some(id) => vec![suites::by_id(id).ok_or_else(|| unknown_suite(id))?],
    };
    for s in chosen {
        let server = s.cases.iter().map(|c| (c, ""));
        for (c, role) in server.chain(s.client_cases.iter().map(|c| (c, " (client)"))) {
            writeln!(
                out,
                "{:<48} {:<8} {}{}{role}",
                c.id,
                c.level.to_string(),
                c.requirements.join(","),
                if c.slow { " (slow)" } else { "" }
            )
            .map_err(io)?;
        }
        for u in s.untestable {
            writeln!(out, "# {} untestable: {}", u.requirement, u.reason).map_err(io)?;
        }
    }
    Ok(0)
}
