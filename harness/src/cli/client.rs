//! `agentconform client`: the reference client of a suite as a client driver (the
//! default driver of `run --role client`).

use super::common::{read_json, runtime, unknown_suite};
use super::{input, io, CliError, Usage};
use crate::suites;
use reference_impl::wire::keys::Keypair;
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
    let bad_input = |e: String| input(path.display(), e);
    let rt = runtime()?;
    let timeout = Duration::from_secs(10);
    let outcome: Received = match (suite, scenario) {
        ("agora-v1", "request") => {
            use reference_impl::agora_v1::client;
            let ask = client::Ask::from_input(input_value).map_err(bad_input)?;
            let key = Keypair::generate();
            let (o, r) = rt.block_on(client::request(url, &key, &ask, faults, timeout));
            let data = o.data.unwrap_or(serde_json::Value::Null);
            (o.received, r.map(|()| vec![data]).map_err(|e| e.to_string()))
        }
        ("agora-exchange", "single" | "conversation") => {
            use reference_impl::agora_exchange::client;
            let (got, r) = rt.block_on(client::scenario(url, scenario, input_value, faults));
            (got, r.map_err(|e| e.to_string()))
        }
        ("agora-spaces", "join-publish" | "listen") => {
            use reference_impl::agora_spaces::client;
            let (got, r) =
                rt.block_on(client::scenario(url, scenario, input_value, faults, timeout));
            (got, r.map_err(|e| e.to_string()))
        }
        ("chorus", "hire") => {
            use reference_impl::chorus::client;
            let (got, r) =
                rt.block_on(client::scenario(url, scenario, input_value, faults, timeout));
            (got, r.map_err(|e| e.to_string()))
        }
        ("agentprotocol", "request") => {
            use reference_impl::agentprotocol::client;
            let ask = client::Ask::from_input(input_value).map_err(bad_input)?;
            let (got, r) = rt.block_on(client::request(url, &ask, faults, timeout));
            (got, r.map(|v| vec![v]).map_err(|e| e.to_string()))
        }
        _ => {
            return Err(Usage(format!(
                "the reference clients cover agora-v1 request, agora-exchange single and conversation, agora-spaces join-publish and listen, chorus hire, and agentprotocol request; not {suite} {scenario}"
            )))
        }
    };
    Ok(outcome)
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
