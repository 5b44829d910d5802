//! Judging what went through the proxy: each side's bytes by its role's rules.

use super::{FrameWhat, Passed};
use crate::case::{CaseResult, Entry, Level, Met, Outcome, Recorded, Suite};
use crate::drive::Transport;
use crate::exchange::{Exchange, History, HISTORY};
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
    // A frame as an exchange of one side, for the history of the messages after it.
    let frames: Vec<Option<Exchange>> = passed.iter().map(frame_as_exchange).collect();
    let mut earlier: Vec<(&Exchange, time::OffsetDateTime)> = Vec::new();
    for (p, frame) in passed.iter().zip(&frames) {
        let (x, at) = match (p, frame) {
            (Passed::Http(s), _) if outside_spec(suite, &s.exchange) => {
                // Neither side is judged by the suite's rules on a request the spec
                // does not define; the request is said, under the client.
                client.finding(outside_finding(suite, &s.exchange));
                continue;
            }
            (Passed::Http(s), _) => {
                server_http(suite, &mut server, s);
                (&s.exchange, s.sent_at)
            }
            (Passed::Frame(f), Some(x)) => {
                if let FrameWhat::Server(body) = &f.what {
                    let r = Recorded {
                        body: body.clone(),
                        http_status: None,
                        content_type: None,
                    };
                    (suite.reread)(&mut server, &r);
                }
                (x, f.sent_at)
            }
            (Passed::Frame(f), None) => {
                if let FrameWhat::ServerFailed(kind, why) = &f.what {
                    server.finding(transport(suite, kind, why));
                }
                continue;
            }
        };
        let client_sent = match p {
            // A request kept in part (past the cap, or cut off) is not judged.
            Passed::Http(s) => !s.cut.0,
            Passed::Frame(_) => !x.received.is_empty(),
        };
        if let (Some(judge_client), true) = (suite.client_message, client_sent) {
            let from = earlier.len().saturating_sub(HISTORY);
            let history = History {
                earlier: &earlier[from..],
                now: at,
            };
            judge_client(&mut client, x, &history);
        }
        earlier.push((x, at));
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

/// The server's reply of one HTTP exchange, by the rules of the request it answers
/// (`Suite::reply_to`) or else the reply rules (or the transport finding of why it
/// did not come).
fn server_http(suite: &Suite, server: &mut Ctx, s: &super::Seen) {
    let with_request = |server: &mut Ctx| {
        suite
            .reply_to
            .is_some_and(|judge| judge(server, &s.exchange, s.reply_type.as_deref()))
    };
    match &s.failed {
        Some((kind, why)) => server.finding(transport(suite, kind, why)),
        // A reply kept in part (the client left midway) is not judged.
        None if s.cut.1 => {}
        None if with_request(server) => {}
        None => (suite.reread)(
            server,
            &Recorded {
                body: s.exchange.answered.clone(),
                http_status: Some(s.exchange.status),
                content_type: s.reply_type.clone(),
            },
        ),
    }
}

/// A text or binary frame as an exchange of its side: the client's in
/// `received`, the server's in `answered`; none for the connection's events.
fn frame_as_exchange(p: &Passed) -> Option<Exchange> {
    let Passed::Frame(f) = p else { return None };
    let (received, answered) = match &f.what {
        FrameWhat::Client(b) => (b.clone(), Vec::new()),
        FrameWhat::Server(b) => (Vec::new(), b.clone()),
        _ => return None,
    };
    Some(Exchange {
        method: "WS".into(),
        path: f.path.clone(),
        content_type: None,
        received,
        answered,
        status: 0,
        written: None,
    })
}

/// Whether a client's HTTP request is one the suite's spec does not define
/// (`Suite::defined`; a suite that fixes no set defines them all).
fn outside_spec(suite: &Suite, x: &Exchange) -> bool {
    let path = x.path.split('?').next().unwrap_or_default();
    let path = if path.is_empty() { "/" } else { path };
    suite
        .defined
        .is_some_and(|defined| !defined(&x.method, path))
}

/// A request outside the spec, said once per method and route: informational,
/// with how the server answered it (a real client's closing DELETE, say).
fn outside_finding(suite: &Suite, x: &Exchange) -> Finding {
    let shape = crate::exchange::route_shape(&x.path);
    crate::rules::CLIENT_OUTSIDE_SPEC.found_in(suite.id, format!("{} {shape}", x.method),
        format!(
            "the client sent {} {}, a request {} does not define; the server answered HTTP {}, which is not judged (informational)",
            x.method, x.path, suite.id, x.status
        ),
    )
}

fn transport(suite: &Suite, kind: &str, why: &str) -> Finding {
    crate::rules::TRANSPORT.found_in(suite.id, kind, why)
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
        findings: met.iter().map(|m| m.finding.key.to_string()).collect(),
        reproduce: None,
        duration_ms: 0,
        transcript,
        met,
        control_case: None,
        claims: Vec::new(),
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
