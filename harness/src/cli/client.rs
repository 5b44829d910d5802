//! `agentconform client`: the reference client of a suite as a client driver (the
//! default driver of `run --role client`).

use super::common::{read_json, runtime, unknown_suite};
use super::{input, io, CliError, Usage};
use crate::suites;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Runs `scenario` of `suite`'s reference client against `url` with the inputs of
/// `input_file` (default: the file AGENTCONFORM_INPUT names); prints what it received
/// as JSON lines, exits 1 when the client reports an error.
pub fn run(
    suite: &str,
    scenario: &str,
    url: &str,
    input_file: Option<PathBuf>,
    faults: &[String],
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let path = match input_file {
        Some(p) => p,
        None => std::env::var_os("AGENTCONFORM_INPUT")
            .map(PathBuf::from)
            .ok_or_else(|| Usage("no input: pass --input FILE or set AGENTCONFORM_INPUT".into()))?,
    };
    let descriptor = suites::by_id(suite).ok_or_else(|| unknown_suite(suite))?;
    for f in faults {
        if !descriptor.client_faults.iter().any(|k| k.name == f) {
            return Err(Usage(format!("unknown {suite} client fault {f:?}")));
        }
    }
    let input_value = read_json(&path)?;
    let (received, result) = scenario_run(suite, scenario, url, &input_value, faults, &path)?;
    print_lines(&received, result, out)
}

/// Every reply received, and the results or why the client gave up.
type Received = (Vec<Value>, Result<Vec<Value>, String>);

/// Runs the scenario on the reference client of `suite`; `path` names the inputs in
/// errors.
fn scenario_run(
    suite: &str,
    scenario: &str,
    url: &str,
    input_value: &Value,
    faults: &[String],
    path: &Path,
) -> Result<Received, CliError> {
    let rt = runtime()?;
    let timeout = Duration::from_secs(10);
    let client = suites::by_id(suite)
        .map(|s| s.reference_client)
        .filter(|c| c.scenarios.contains(&scenario));
    let Some(client) = client else {
        let covered: Vec<String> = suites::all()
            .iter()
            .map(|s| format!("{} {}", s.id, s.reference_client.scenarios.join(" and ")))
            .collect();
        return Err(Usage(format!(
            "the reference clients cover {}; not {suite} {scenario}",
            covered.join(", ")
        )));
    };
    rt.block_on((client.run)(scenario, url, input_value, faults, timeout))
        .map_err(|e| input(path.display(), e))
}

/// The `{"received": …}` lines, then a `{"result": …}` line per result (exit 0) or
/// one `{"error": …}` line (exit 1).
fn print_lines(
    received: &[Value],
    result: Result<Vec<Value>, String>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    for v in received {
        writeln!(out, "{}", serde_json::json!({ "received": v })).map_err(io)?;
    }
    match result {
        Ok(results) => {
            for r in results {
                writeln!(out, "{}", serde_json::json!({ "result": r })).map_err(io)?;
            }
            Ok(0)
        }
        Err(e) => {
            writeln!(out, "{}", serde_json::json!({ "error": e })).map_err(io)?;
            Ok(1)
        }
    }
}
