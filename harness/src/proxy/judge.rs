//! Judging what went through the proxy: each side's bytes by its role's rules.

use super::{FrameWhat, Passed};
use crate::case::{CaseResult, Entry, Level, Met, Outcome, Recorded, Suite};
use crate::drive::Transport;
use crate::exchange::Exchange;
use crate::finding::Finding;
use crate::runner::{merge_findings, RunOutput};
use crate::script::{Ctx, RunShared};
use std::sync::Arc;
use std::time::Instant;

/// Judges what went through the proxy: the server's replies and frames by the
/// server role's reply rules, the client's messages and frames by the client
/// role's; one result per side, findings merged as a run merges them.
pub fn judge(
    suite: &'static Suite,
    shared: Arc<RunShared>,
    upstream: &str,
    passed: &[Passed],
) -> RunOutput {
    let started = Instant::now();
    let mut server = Ctx::new(shared.clone(), Transport::Http, upstream);
    server.suite_id = Some(suite.id);
    let mut client = Ctx::new(shared, Transport::Http, upstream);
    client.suite_id = Some(suite.id);
    for p in passed {
        match p {
            Passed::Http(s) => {
                match &s.failed {
                    Some((kind, why)) => server.finding(transport(suite, kind, why)),
                    None => (suite.reread)(
                        &mut server,
                        &Recorded {
                            body: s.exchange.answered.clone(),
                            http_status: Some(s.exchange.status),
                            content_type: s.reply_type.clone(),
                        },
                    ),
                }
                if let Some(judge_client) = suite.client_message {
                    judge_client(&mut client, &s.exchange);
                }
            }
            Passed::Frame(f) => match &f.what {
                FrameWhat::Server(body) => (suite.reread)(
                    &mut server,
                    &Recorded {
                        body: body.clone(),
                        http_status: None,
                        content_type: None,
                    },
                ),
                FrameWhat::Client(bytes) => {
                    if let Some(judge_client) = suite.client_message {
                        judge_client(&mut client, &frame_exchange(&f.path, bytes));
                    }
                }
                FrameWhat::ServerFailed(kind, why) => server.finding(transport(suite, kind, why)),
                FrameWhat::Opened
                | FrameWhat::Refused(..)
                | FrameWhat::Closed(..)
                | FrameWhat::ClientFailed(_) => {}
            },
        }
    }
    let took = started.elapsed();
    // Each side is merged on its own: a key both sides break (a signature that does
    // not verify) is two deviations, one of each side.
    let server_met = server.take_findings();
    let client_met = client.take_findings();
    let mut server = [side(suite, "server", server_met, transcript(passed, true))];
    let mut client = [side(suite, "client", client_met, transcript(passed, false))];
    let mut findings = merge_findings(&mut server);
    findings.extend(merge_findings(&mut client));
    let results: Vec<CaseResult> = server.into_iter().chain(client).collect();
    RunOutput {
        results,
        findings,
        untestable: Vec::new(),
        duration: took,
    }
}

fn transport(suite: &Suite, kind: &str, why: &str) -> Finding {
    Finding::new(
        format!("{}/transport:{kind}", suite.id),
        &[],
        why.to_string(),
    )
}

/// A client's frame as the client rules take a message (method `WS`, no reply).
fn frame_exchange(path: &str, bytes: &[u8]) -> Exchange {
    Exchange {
        method: "WS".into(),
        path: path.to_string(),
        content_type: None,
        received: bytes.to_vec(),
        answered: Vec::new(),
        status: 0,
        written: None,
    }
}

/// One side's result: its findings, its messages as the transcript.
fn side(suite: &Suite, who: &str, met: Vec<Met>, transcript: Vec<Entry>) -> CaseResult {
    let met: Vec<Met> = met
        .into_iter()
        .map(|m| Met {
            finding: m.finding,
            own: true,
        })
        .collect();
    CaseResult {
        id: format!("{}/proxy:{who}", suite.id),
        suite: suite.id.to_string(),
        title: format!("the {who}'s messages through the proxy, by the {who} role's rules"),
        requirements: Vec::new(),
        level: Level::Must,
        transport: Transport::Http,
        outcome: crate::runner::own_outcome(Outcome::Pass, &met),
        message: String::new(),
        findings: met.iter().map(|m| m.finding.key.clone()).collect(),
        reproduce: None,
        duration_ms: 0,
        transcript,
        met,
        control_case: None,
    }
}

/// The side's messages and its connections' events, at most 400, each cut at 8 KiB.
fn transcript(passed: &[Passed], server: bool) -> Vec<Entry> {
    let kind = if server { "recv" } else { "send" };
    passed
        .iter()
        .filter_map(|p| match p {
            Passed::Http(s) => {
                let x = &s.exchange;
                let bytes = if server { &x.answered } else { &x.received };
                Some(Entry {
                    at_ms: s.at_ms,
                    kind,
                    text: format!("{} {}\n{}", x.method, x.path, cut(bytes)),
                    http_status: server.then_some(x.status),
                })
            }
            Passed::Frame(f) => {
                let text = match (&f.what, server) {
                    (FrameWhat::Server(b), true) | (FrameWhat::Client(b), false) => cut(b),
                    (FrameWhat::Opened, _) => "connection opened".into(),
                    (FrameWhat::Refused(s, b), true) => format!("upgrade refused: {s} {}", cut(b)),
                    (FrameWhat::Closed(by_client, code), _) if *by_client != server => {
                        format!("closed with {code:?}")
                    }
                    (FrameWhat::ServerFailed(_, why), true) => why.clone(),
                    (FrameWhat::ClientFailed(why), false) => why.clone(),
                    _ => return None,
                };
                Some(Entry {
                    at_ms: f.at_ms,
                    kind,
                    text: format!("WS #{} {}\n{text}", f.conn, f.path),
                    http_status: None,
                })
            }
        })
        .take(400)
        .collect()
}

fn cut(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(8192)]).into_owned()
}
