//! `agentconform interop`: which clients work with which servers, against the spec.
//!
//! For every pair of a client (a client driver command) and a server (a URL), one
//! proxy ([`crate::proxy`]) stands between them while the client plays each of the
//! suite's interop scenarios (`ReferenceClient::plays`, the inputs the client cases
//! give); then the proxy judges what went through, and the pair's cell says how it
//! went: `works` (every scenario completed, no failing finding), `works with
//! deviations` (every scenario completed, but a side broke a rule) or `fails` (a
//! scenario did not complete), with the failing findings counted per side.
//! `write_reports` writes a report per pair and the report of the whole run, whose
//! `interop` member is the matrix.

use crate::case::Suite;
use crate::finding::Verdict;
use crate::profile::Profile;
use crate::proxy::{judge, Proxy};
use crate::report::matrix::Interop;
use crate::report::Report;
use crate::runner::RunOutput;
use crate::script::{Ctx, RunShared};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

// The matrix's model and its Markdown live in the report module, below this engine,
// so that a report can carry the matrix (`Report::interop`).
pub use crate::report::matrix::{markdown, Cell, Pair};

/// Runs every client against every server through a proxy.
pub async fn matrix(
    suite: &'static Suite,
    shared: &RunShared,
    clients: &[(String, String)],
    servers: &[(String, String)],
) -> Result<Vec<Pair>, String> {
    let mut pairs = Vec::new();
    for (cname, command) in clients {
        for (sname, url) in servers {
            pairs.push(pair(suite, shared, (cname, command), (sname, url)).await?);
        }
    }
    Ok(pairs)
}

/// One client against one server: every play through one proxy, then the judgement.
async fn pair(
    suite: &'static Suite,
    shared: &RunShared,
    (cname, command): (&str, &str),
    (sname, url): (&str, &str),
) -> Result<Pair, String> {
    let mut profile: Profile = shared.profile.clone();
    profile.client.command = Some(command.to_string());
    let run_shared = Arc::new(RunShared {
        transcript_budget: crate::script::TranscriptBudget::default(),
        adapted: Default::default(),
        embedded: false,
        profile,
        key: reference_impl::wire::keys::Keypair::from_seed(&shared.key.seed()),
        other_key: reference_impl::wire::keys::Keypair::from_seed(&shared.other_key.seed()),
        schemas: crate::schemas::Schemas::load()?,
        http: shared.http.clone(),
        tls: shared.tls.clone(),
    });
    let timing = &run_shared.profile.timing;
    let proxy = Proxy::start(
        "127.0.0.1:0",
        url,
        run_shared.http.clone(),
        timing.max_response_bytes,
        Duration::from_millis(timing.case_timeout_ms),
    )
    .await?;
    let mut incomplete = Vec::new();
    for (scenario, input) in (suite.reference_client.plays)(&run_shared.profile) {
        let mut ctx = Ctx::new(run_shared.clone(), crate::drive::Transport::Http, url);
        ctx.suite_id = Some(suite.id);
        match crate::counterparty::run_command(
            &mut ctx,
            scenario,
            &input,
            &proxy.url,
            proxy.first(),
        )
        .await
        {
            Ok(run) if !run.failed() => {}
            Ok(run) => incomplete.push(format!("{scenario}: {}", run.ended())),
            Err(stop) => incomplete.push(format!("{scenario}: {}", said(&stop))),
        }
    }
    let (seen, _) = proxy.stop().await;
    let output = judge(suite, run_shared, url, &seen);
    let failing = |side: &str| {
        output
            .findings
            .iter()
            .filter(|f| f.finding.outcome == Verdict::Fail)
            .filter(|f| {
                f.owners
                    .iter()
                    .any(|o| o.contains(&format!("proxy:{side}")))
            })
            .count()
    };
    let (server_failing, client_failing) = (failing("server"), failing("client"));
    let cell = if !incomplete.is_empty() {
        Cell::Fails
    } else if server_failing + client_failing > 0 {
        Cell::WorksWithDeviations
    } else {
        Cell::Works
    };
    Ok(Pair {
        client: cname.to_string(),
        server: sname.to_string(),
        cell,
        server_failing,
        client_failing,
        incomplete,
        report: None,
        output: Some(output),
    })
}

/// Why a client driver did not run, in words.
fn said(stop: &crate::case::Stop) -> String {
    use crate::case::Stop;
    match stop {
        Stop::Fail(m) | Stop::Skip(m) => m.clone(),
        Stop::Finding(f) => f.summary.clone(),
        Stop::Blocked(key) => format!("blocked by {key}"),
    }
}

/// Writes an interop run's reports into `dir`: a folder per pair
/// (`<client>--<server>/`, that pair's report, named in its cell), the report of the
/// whole run at `dir` itself (the matrix as its `interop` member, every pair's
/// results and findings kept apart by pair, see `apart`), and matrix.md and
/// matrix.json. The pairs' outputs are moved into the reports.
pub fn write_reports(
    dir: &Path,
    suite: &Suite,
    pairs: &mut [Pair],
    servers: &[(String, String)],
    started_at: &str,
    duration: Duration,
) -> Result<(), String> {
    let mut whole = RunOutput::empty();
    whole.duration = duration;
    for p in pairs.iter_mut() {
        let folder = format!("{}--{}", safe(&p.client), safe(&p.server));
        let url = servers
            .iter()
            .find(|(n, _)| *n == p.server)
            .map_or(String::new(), |(_, u)| u.clone());
        if let Some(output) = p.output.take() {
            let rep = Report::new(&url, vec![suite.id.to_string()], started_at.into(), output);
            rep.write(&dir.join(&folder))?;
            apart(&mut whole, &folder, rep);
        }
        p.report = Some(folder);
    }
    let targets: Vec<String> = servers.iter().map(|(n, u)| format!("{n}={u}")).collect();
    let mut top = Report::new(
        &targets.join(", "),
        vec![suite.id.to_string()],
        started_at.into(),
        whole,
    );
    let matrix = Interop {
        suite: suite.id.to_string(),
        pairs: pairs.to_vec(),
    };
    let md = markdown(&matrix.suite, &matrix.pairs);
    let json = serde_json::to_string_pretty(&matrix).map_err(|e| e.to_string())?;
    top.interop = Some(matrix);
    top.write(dir)?;
    for (name, text) in [("matrix.md", md), ("matrix.json", json)] {
        let at = dir.join(name);
        std::fs::write(&at, text).map_err(|e| format!("cannot write {}: {e}", at.display()))?;
    }
    Ok(())
}

/// Moves one pair's results and findings into the whole run's. Each result's id
/// gets the pair's folder (`<suite>/proxy:server[<client>--<server>]`), and so do
/// the cases and owners of its findings. The findings are appended, not merged
/// again with `runner::merge_findings`: that merges by key, so a rule broken in two
/// pairs (or by both sides of one pair, which `proxy::judge` keeps apart) would
/// become one finding with the owners of several pairs. Appended, each pair's side
/// keeps its own finding, and one key can be listed once per pair and side.
fn apart(whole: &mut RunOutput, folder: &str, rep: Report) {
    let mut renamed: Vec<(String, String)> = Vec::new();
    for mut c in rep.cases {
        let before = format!("{} [{}]", c.id, c.transport);
        c.id = format!("{}[{folder}]", c.id);
        renamed.push((before, format!("{} [{}]", c.id, c.transport)));
        whole.results.push(c);
    }
    let label = |l: &String| {
        renamed
            .iter()
            .find(|(before, _)| before == l)
            .map_or_else(|| l.clone(), |(_, after)| after.clone())
    };
    for mut f in rep.findings {
        f.cases = f.cases.iter().map(label).collect();
        f.owners = f.owners.iter().map(label).collect();
        whole.findings.push(f);
    }
}

/// A name as a folder name: letters, digits, `-` and `_`, the rest as `_`.
fn safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
