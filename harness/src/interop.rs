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
use crate::counterparty::DriverRun;
use crate::finding::Verdict;
use crate::profile::Profile;
use crate::proxy::tamper::Observed;
use crate::proxy::{judge, Proxy, Setup};
use crate::report::matrix::Interop;
use crate::report::Report;
use crate::runner::RunOutput;
use crate::script::{Ctx, RunShared};
use crate::tamper::Tamper;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

// The matrix's model and its Markdown live in the report module, below this engine,
// so that a report can carry the matrix (`Report::interop`).
pub use crate::report::matrix::{markdown, Cell, Pair};

/// Runs every client against every server through a proxy; with `tamper`, each
/// pair's scenarios are played twice, untouched (the control) then with the
/// fault's change applied in flight.
pub async fn matrix(
    suite: &'static Suite,
    shared: &RunShared,
    clients: &[(String, String)],
    servers: &[(String, String)],
    tamper: Option<&'static Tamper>,
) -> Result<Vec<Pair>, String> {
    let mut pairs = Vec::new();
    for (cname, command) in clients {
        for (sname, url) in servers {
            let p = pair(suite, shared, (cname, command), (sname, url), tamper).await?;
            pairs.push(p);
        }
    }
    Ok(pairs)
}

/// One play of a scenario: its name, how the client driver ended (or why it did
/// not run), and whether tamper mode changed a message meanwhile.
type Play = (String, Result<DriverRun, String>, bool);

/// Every scenario of the suite, played once through the proxy at `through`.
async fn play_all(
    suite: &'static Suite,
    shared: &Arc<RunShared>,
    proxy: &Proxy,
    through: &str,
) -> Vec<Play> {
    let mut plays = Vec::new();
    for (scenario, input) in (suite.reference_client.plays)(&shared.profile) {
        let mut ctx = Ctx::new(shared.clone(), crate::drive::Transport::Http, through);
        ctx.suite_id = Some(suite.id);
        let before = proxy.changes();
        let run =
            crate::counterparty::run_command(&mut ctx, scenario, &input, through, proxy.first())
                .await
                .map_err(|stop| said(&stop));
        plays.push((scenario.to_string(), run, proxy.changes() > before));
    }
    plays
}

/// The plays that did not complete, with how each ended.
fn incomplete(plays: &[Play]) -> Vec<String> {
    plays
        .iter()
        .filter_map(|(scenario, run, _)| match run {
            Ok(run) if !run.failed() => None,
            Ok(run) => Some(format!("{scenario}: {}", run.ended())),
            Err(why) => Some(format!("{scenario}: {why}")),
        })
        .collect()
}

/// The pair's own shared state: the run's keys and trust, its client driver.
fn pair_shared(shared: &RunShared, command: &str) -> Result<Arc<RunShared>, String> {
    let mut profile: Profile = shared.profile.clone();
    profile.client.command = Some(command.to_string());
    Ok(Arc::new(RunShared {
        transcript_budget: crate::script::TranscriptBudget::default(),
        adapted: Default::default(),
        client_ids: Default::default(),
        documents: Default::default(),
        embedded: false,
        profile,
        key: reference_impl::wire::keys::Keypair::from_seed(&shared.key.seed()),
        other_key: reference_impl::wire::keys::Keypair::from_seed(&shared.other_key.seed()),
        schemas: crate::schemas::Schemas::load()?,
        http: shared.http.clone(),
        tls: shared.tls.clone(),
    }))
}

/// One client against one server: every play through one proxy (twice with a
/// tamper), then the judgement.
async fn pair(
    suite: &'static Suite,
    shared: &RunShared,
    (cname, command): (&str, &str),
    (sname, url): (&str, &str),
    tamper: Option<&'static Tamper>,
) -> Result<Pair, String> {
    let run_shared = pair_shared(shared, command)?;
    let (origin, path) = split_origin(url);
    let mut setup = Setup::of(&run_shared);
    setup.tamper = tamper.map(|t| (*t, false));
    let proxy = Proxy::start("127.0.0.1:0", origin, setup).await?;
    // The client reaches the proxy as it would the server: same binding, same path.
    let through = if url.starts_with("ws") {
        format!("{}{path}", proxy.ws_url())
    } else {
        format!("{}{path}", proxy.url)
    };
    let control = play_all(suite, &run_shared, &proxy, &through).await;
    let tampered = match tamper {
        Some(_) => {
            proxy.arm();
            play_all(suite, &run_shared, &proxy, &through).await
        }
        None => Vec::new(),
    };
    let (seen, _) = proxy.stop().await;
    let mut output = judge(suite, run_shared, url, &seen);
    let incomplete = incomplete(&control);
    if let Some(t) = tamper {
        let runs: Vec<(String, DriverRun, bool)> = tampered
            .into_iter()
            .filter_map(|(s, run, reached)| run.ok().map(|r| (s, r, reached)))
            .collect();
        let observed = Observed::Plays {
            control_ok: incomplete.is_empty(),
            tampered: &runs,
        };
        let case = crate::proxy::tamper::verdict(suite, t, &seen, observed);
        crate::proxy::tamper::add(&mut output, case);
    }
    Ok(cell_of(cname, sname, incomplete, output))
}

/// The pair's cell: fails when an untouched play did not complete, works with
/// deviations when a side has a failing finding (a tamper's among them).
fn cell_of(client: &str, server: &str, incomplete: Vec<String>, output: RunOutput) -> Pair {
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
    Pair {
        client: client.to_string(),
        server: server.to_string(),
        cell,
        server_failing,
        client_failing,
        incomplete,
        report: None,
        output: Some(output),
    }
}

/// A URL's scheme and authority, and the rest (its path and query, or "").
fn split_origin(url: &str) -> (&str, &str) {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => url.split_at(after + i),
        None => (url, ""),
    }
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

#[cfg(test)]
mod tests {
    use super::split_origin;

    #[test]
    fn origin_and_path() {
        assert_eq!(split_origin("ws://h:1/ws?x=1"), ("ws://h:1", "/ws?x=1"));
        assert_eq!(split_origin("http://h:1"), ("http://h:1", ""));
        assert_eq!(split_origin("https://h/"), ("https://h", "/"));
    }
}
