//! `agentconform interop`: which clients work with which servers, against the spec.
//!
//! For every pair of a client (a client driver command) and a server (a URL), one
//! proxy ([`crate::proxy`]) stands between them while the client plays each of the
//! suite's interop scenarios (`ReferenceClient::plays`, the inputs the client cases
//! give); then the proxy judges what went through, and the pair's cell says how it
//! went: `works` (every scenario completed, no failing finding), `works with
//! deviations` (every scenario completed, but a side broke a rule) or `fails` (a
//! scenario did not complete), with the failing findings counted per side.

use crate::case::Suite;
use crate::counterparty::DriverRun;
use crate::finding::Verdict;
use crate::profile::Profile;
use crate::proxy::tamper::Observed;
use crate::proxy::{judge, Proxy, Setup};
use crate::runner::RunOutput;
use crate::script::{Ctx, RunShared};
use crate::tamper::Tamper;
use serde::Serialize;
use std::sync::Arc;

/// How a pair went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cell {
    Works,
    WorksWithDeviations,
    Fails,
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cell::Works => "works",
            Cell::WorksWithDeviations => "works with deviations",
            Cell::Fails => "fails",
        })
    }
}

/// One pair's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub client: String,
    pub server: String,
    pub cell: Cell,
    /// Failing findings of each side.
    pub server_failing: usize,
    pub client_failing: usize,
    /// The scenarios that did not complete, with how the client ended.
    pub incomplete: Vec<String>,
    /// Where the pair's report is (relative to the matrix), when reports are written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    #[serde(skip)]
    pub output: Option<RunOutput>,
}

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

/// The matrix in Markdown: one row per client, one column per server.
pub fn markdown(suite: &str, pairs: &[Pair]) -> String {
    let mut clients: Vec<&str> = Vec::new();
    let mut servers: Vec<&str> = Vec::new();
    for p in pairs {
        if !clients.contains(&p.client.as_str()) {
            clients.push(&p.client);
        }
        if !servers.contains(&p.server.as_str()) {
            servers.push(&p.server);
        }
    }
    let mut md = format!("### interop {suite}\n\n| client \\ server |");
    for s in &servers {
        md.push_str(&format!(" {s} |"));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(servers.len()));
    md.push('\n');
    for c in &clients {
        md.push_str(&format!("| {c} |"));
        for s in &servers {
            let cell = pairs
                .iter()
                .find(|p| p.client == *c && p.server == *s)
                .map(describe)
                .unwrap_or_default();
            md.push_str(&format!(" {cell} |"));
        }
        md.push('\n');
    }
    md
}

/// A cell in words: the outcome, the failing findings per side, the report.
fn describe(p: &Pair) -> String {
    let mut s = format!(
        "{} (server {}, client {})",
        p.cell, p.server_failing, p.client_failing
    );
    if let Some(r) = &p.report {
        s.push_str(&format!(" [report]({r}/summary.md)"));
    }
    s
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
