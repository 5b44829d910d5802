//! `agentconform proxy` between the reference client and the reference server:
//! a clean pair gives no finding; a server fault's finding is the server's, a client
//! fault's the client's; and what the client receives through the proxy is, byte
//! for byte, what the server sent.

#[path = "common/mod.rs"]
mod common;

use agentconform::drive::Transport;
use agentconform::finding::Verdict;
use agentconform::proxy::{judge, FrameWhat, Passed, Proxy, Setup};
use agentconform::runner::RunOutput;
use agentconform::suites;
use common::*;
use serde_json::json;
use std::time::Duration;

/// The agora-v1 reference server with `server_faults`, the reference client with
/// `client_faults` running one direct request through a proxy; what the proxy judged.
async fn through_proxy(server_faults: &[&str], client_faults: &[String]) -> RunOutput {
    let input =
        json!({"resource": "agora:echo:v1", "params": {"text": "through the proxy"}, "budget": 10});
    scenario_through_proxy(
        &suites::agora_v1::SUITE,
        "request",
        &input,
        server_faults,
        client_faults,
    )
    .await
}

/// `suite`'s reference server with `server_faults`, its reference client with
/// `client_faults` playing `scenario` through a proxy; what the proxy judged.
async fn scenario_through_proxy(
    suite: &'static agentconform::case::Suite,
    scenario: &str,
    input: &serde_json::Value,
    server_faults: &[&str],
    client_faults: &[String],
) -> RunOutput {
    let (out, passed) =
        scenario_with_passed(suite, scenario, input, server_faults, client_faults).await;
    assert!(
        !passed.is_empty(),
        "{} {scenario}: nothing went through the proxy",
        suite.id
    );
    out
}

/// [`scenario_through_proxy`], with what went through. A suite with an HTTP
/// endpoint is played over HTTP; agora-spaces over WebSocket, at the hub's path
/// through the proxy.
async fn scenario_with_passed(
    suite: &'static agentconform::case::Suite,
    scenario: &str,
    input: &serde_json::Value,
    server_faults: &[&str],
    client_faults: &[String],
) -> (RunOutput, Vec<Passed>) {
    let mut options = test_options(server_faults);
    if !suite.transports.contains(&Transport::Http) {
        // The reference hub client sends no token.
        options.token = None;
    }
    let server = suites::start(suite.id, "127.0.0.1:0", &options)
        .await
        .expect("start agent");
    let endpoint = |want| {
        server
            .endpoints
            .0
            .iter()
            .find(|(t, _)| *t == want)
            .map(|(_, u)| u.clone())
    };
    let (upstream, ws_path) = match endpoint(Transport::Http) {
        Some(u) => (u, None),
        None => {
            let ws = endpoint(Transport::Ws).expect("an HTTP or WebSocket endpoint");
            let at = ws[5..].find('/').map_or(ws.len(), |i| i + 5);
            (ws[..at].to_string(), Some(ws[at..].to_string()))
        }
    };
    let shared = shared(test_profile());
    let proxy = Proxy::start("127.0.0.1:0", &upstream, Setup::of(&shared))
        .await
        .expect("start proxy");
    let through = match &ws_path {
        Some(path) => format!("{}{path}", proxy.ws_url()),
        None => proxy.url.clone(),
    };
    let played = (suite.reference_client.run)(
        scenario,
        &through,
        input,
        client_faults,
        Duration::from_secs(5),
    )
    .await;
    let (passed, _) = proxy.stop().await;
    server.stop().await;
    // A faulty side may end the scenario early; a clean pair completes it.
    let clean = server_faults.is_empty() && client_faults.is_empty();
    assert!(
        !clean || played.as_ref().is_ok_and(|(_, r)| r.is_ok()),
        "{} {scenario} did not complete through the proxy: {played:?}",
        suite.id
    );
    let out = judge(suite, shared, &upstream, &passed);
    assert_explained(&out);
    (out, passed)
}

/// Whether `key` is met by the side whose result id starts with `side`.
fn met_by(s: &[(String, String)], key: &str, side: &str) -> bool {
    s.iter().any(|(k, o)| k == key && o.starts_with(side))
}

/// The sides a finding is attributed to, by key.
fn sides(out: &RunOutput) -> Vec<(String, String)> {
    out.findings
        .iter()
        .flat_map(|f| {
            f.owners
                .iter()
                .map(move |o| (f.finding.key.to_string(), o.clone()))
        })
        .collect()
}

#[test]
fn clean_pair_gives_no_finding() {
    let out = rt().block_on(through_proxy(&[], &[]));
    assert!(out.findings.is_empty(), "{:?}", sides(&out));
}

/// The other HTTP suites' reference pairs through the proxy: no finding either side.
#[test]
fn clean_pairs_of_every_http_suite() {
    let echo = reference_impl::agora_exchange::document::sha1_hex(
        reference_impl::agora_exchange::document::ECHO_DOCUMENT.as_bytes(),
    );
    let p = test_profile();
    let plays = [
        (
            &suites::agora_exchange::SUITE,
            "single",
            json!({"body": {"text": "hi"}, "protocolHash": echo}),
        ),
        (
            &suites::agora_exchange::SUITE,
            "conversation",
            json!({"body": "first", "protocolHash": echo, "followups": ["second"]}),
        ),
        (
            &suites::agentprotocol::SUITE,
            "request",
            json!({"action": p.agentprotocol.echo_action, "capability": "agentprotocol:core", "params": {"text": "hi"}}),
        ),
        (
            &suites::chorus::SUITE,
            "hire",
            json!({"skill": p.chorus.fixture_skill, "input_data": {"text": "hi"}, "owner_id": "proxy-owner", "result_wait_ms": 3000}),
        ),
    ];
    for (suite, scenario, input) in plays {
        let out = rt().block_on(scenario_through_proxy(suite, scenario, &input, &[], &[]));
        // Told no peer, the agentprotocol client says hello by broadcast: its `to`
        // names no agent (a warning, AGP-A22) and says broadcast (informational).
        let broadcast = [
            "agentprotocol/envelope:to",
            "agentprotocol/to:broadcast-true",
        ];
        let unexpected: Vec<(String, String)> = sides(&out)
            .into_iter()
            .filter(|(k, o)| !(o.contains("proxy:client") && broadcast.contains(&k.as_str())))
            .collect();
        assert!(
            unexpected.is_empty(),
            "{} {scenario}: {unexpected:?}",
            suite.id
        );
        assert!(
            out.findings
                .iter()
                .all(|f| f.finding.outcome == Verdict::Warn),
            "{} {scenario}: {:?}",
            suite.id,
            sides(&out)
        );
    }
}

#[test]
fn server_fault_is_the_servers() {
    let out = rt().block_on(through_proxy(&["unsigned-replies"], &[]));
    let s = sides(&out);
    assert!(!s.is_empty(), "the unsigned reply went unnoticed");
    assert!(
        s.iter()
            .all(|(_, o)| o.starts_with("agora-v1/proxy:server")),
        "{s:?}"
    );
}

/// Both sides break the same rule: two findings, one of each side.
#[test]
fn same_rule_broken_by_both_sides_is_two_findings() {
    let out = rt().block_on(through_proxy(
        &["unsigned-replies"],
        &["sign-insertion-order".to_string()],
    ));
    let s = sides(&out);
    let key = "agora-v1/reply:signature";
    for who in ["agora-v1/proxy:server", "agora-v1/proxy:client"] {
        assert!(
            s.iter().any(|(k, o)| k == key && o.starts_with(who)),
            "no {key} of {who}: {s:?}"
        );
    }
    assert!(out.findings.iter().all(|f| f.owners.len() == 1), "{s:?}");
}

#[test]
fn client_fault_is_the_clients() {
    let out = rt().block_on(through_proxy(&[], &["sign-insertion-order".to_string()]));
    let s = sides(&out);
    assert!(
        s.iter()
            .any(|(_, o)| o.starts_with("agora-v1/proxy:client")),
        "the client's signature over insertion order went unnoticed: {s:?}"
    );
    assert!(
        s.iter()
            .all(|(_, o)| !o.starts_with("agora-v1/proxy:server")),
        "a server finding for the client's fault: {s:?}"
    );
}

/// The agora-spaces reference client joins and publishes through the proxy over
/// WebSocket: every frame passes both ways, the clean pair gives no finding, a
/// server fault's finding is the server's, a client fault's the client's.
#[test]
fn agora_spaces_over_websocket() {
    let suite = &suites::agora_spaces::SUITE;
    let mut input = json!({"agent_id": "proxy-client", "space": "general", "text": "through the proxy",
        "heartbeat_interval_ms": 150, "heartbeat_timeout_ms": 1000, "leave_after_ms": 400});
    let (out, passed) = rt().block_on(scenario_with_passed(
        suite,
        "join-publish",
        &input,
        &[],
        &[],
    ));
    let frames = |server: bool| {
        passed
            .iter()
            .filter(|p| match p {
                Passed::Frame(f) => matches!(
                    (&f.what, server),
                    (FrameWhat::Server(_), true) | (FrameWhat::Client(_), false)
                ),
                Passed::Http(_) => false,
            })
            .count()
    };
    assert!(frames(true) >= 2, "registered and joined: {passed:?}");
    assert!(frames(false) >= 2, "join and publish: {passed:?}");
    assert!(out.findings.is_empty(), "{:?}", sides(&out));

    input["agent_id"] = "proxy-client-2".into();
    let out = rt().block_on(scenario_through_proxy(
        suite,
        "join-publish",
        &input,
        &["connection-id-number"],
        &[],
    ));
    let s = sides(&out);
    assert!(
        met_by(
            &s,
            "agora-spaces/registered:connection-id",
            "agora-spaces/proxy:server"
        ),
        "{s:?}"
    );
    assert!(
        s.iter()
            .all(|(_, o)| o.starts_with("agora-spaces/proxy:server")),
        "{s:?}"
    );

    input["agent_id"] = "proxy-client-3".into();
    let out = rt().block_on(scenario_through_proxy(
        suite,
        "join-publish",
        &input,
        &[],
        &["no-timestamp".to_string()],
    ));
    let s = sides(&out);
    assert!(
        met_by(
            &s,
            "agora-spaces/client:no-timestamp",
            "agora-spaces/proxy:client"
        ),
        "{s:?}"
    );
    assert!(
        s.iter()
            .all(|(_, o)| o.starts_with("agora-spaces/proxy:client")),
        "{s:?}"
    );
}

/// Status, headers and body reach each side unchanged, however they are spelled:
/// the client's own header reaches the server, the server's reach the client, and a
/// reply without Content-Type gets none.
#[test]
fn bytes_pass_unchanged() {
    rt().block_on(async {
        let body: &'static [u8] = b"{ \"b\" :1 ,\"a\":\"caf\\u00e9\", \"x\":1.50}\n";
        let router = axum::Router::new()
            .route(
                "/bare",
                axum::routing::post(move || async move {
                    axum::response::Response::new(axum::body::Body::from(body))
                }),
            )
            .fallback(move |headers: axum::http::HeaderMap| async move {
                let token = headers
                    .get("x-agent-token")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("none")
                    .to_string();
                // How the request's body came framed.
                let framing = match (
                    headers.get("content-length").and_then(|v| v.to_str().ok()),
                    headers.get("transfer-encoding"),
                ) {
                    (Some(n), _) => format!("length {n}"),
                    (None, Some(_)) => "chunked".to_string(),
                    (None, None) => "none".to_string(),
                };
                (
                    axum::http::StatusCode::CREATED,
                    [
                        (
                            axum::http::header::CONTENT_TYPE,
                            "application/json; charset=UTF-8".to_string(),
                        ),
                        (axum::http::HeaderName::from_static("x-seen-token"), token),
                        (
                            axum::http::HeaderName::from_static("x-seen-framing"),
                            framing,
                        ),
                    ],
                    body,
                )
            });
        let upstream = reference_impl::serve::spawn("127.0.0.1:0", router)
            .await
            .expect("upstream");
        let url = format!("http://{}", upstream.addr);
        let http = reference_impl::wire::http::builder()
            .build()
            .expect("an HTTP client");
        let proxy = Proxy::start("127.0.0.1:0", &url, Setup::of(&shared(test_profile())))
            .await
            .expect("proxy");
        let sent = b"{\"z\": 1, \"a\": [ ]}";
        let got = http
            .post(format!("{}/some/path?q=1", proxy.url))
            .header("content-type", "application/json")
            .header("x-agent-token", "s3cret")
            .body(sent.to_vec())
            .send()
            .await
            .expect("through the proxy");
        assert_eq!(got.status().as_u16(), 201);
        let header = |name: &str| {
            got.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(String::from)
        };
        assert_eq!(
            header("content-type").as_deref(),
            Some("application/json; charset=UTF-8")
        );
        assert_eq!(header("x-seen-token").as_deref(), Some("s3cret"));
        assert_eq!(
            header("x-seen-framing"),
            Some(format!("length {}", sent.len()))
        );
        // Streamed through, the reply keeps its framing: its length, not chunks.
        assert_eq!(header("content-length"), Some(body.len().to_string()));
        assert!(header("transfer-encoding").is_none());
        assert_eq!(got.bytes().await.expect("body").as_ref(), body);
        let bare = http
            .post(format!("{}/bare", proxy.url))
            .send()
            .await
            .expect("through the proxy");
        assert!(
            bare.headers().get("content-type").is_none(),
            "{:?}",
            bare.headers()
        );
        assert_eq!(bare.bytes().await.expect("body").as_ref(), body);
        // A request without a body reaches the server without one.
        let get = http
            .get(format!("{}/no-body", proxy.url))
            .send()
            .await
            .expect("through the proxy");
        assert_eq!(
            get.headers()
                .get("x-seen-framing")
                .and_then(|v| v.to_str().ok()),
            Some("none")
        );
        let (seen, _) = proxy.stop().await;
        upstream.stop().await;
        assert_eq!(seen.len(), 3);
        let Passed::Http(first) = &seen[0] else {
            panic!("not an HTTP exchange: {:?}", seen[0]);
        };
        assert_eq!(first.exchange.received, sent);
        assert_eq!(first.exchange.path, "/some/path?q=1");
    });
}

/// Usage errors exit 2 with what is wrong: an upstream that is no HTTP or WebSocket
/// URL, a zero duration, an unknown suite.
#[test]
fn usage_errors_exit_2() {
    for (args, says) in [
        (
            vec!["--suite", "agora-v1", "--upstream", "ftp://127.0.0.1:9"],
            "not an http://, https://, ws:// or wss:// URL",
        ),
        (
            vec![
                "--suite",
                "agora-v1",
                "--upstream",
                "http://127.0.0.1:9",
                "--for-s",
                "0",
            ],
            "--for-s must be at least 1",
        ),
        (
            vec!["--suite", "nope", "--upstream", "http://127.0.0.1:9"],
            "unknown suite",
        ),
    ] {
        let mut all = vec!["proxy"];
        all.extend_from_slice(&args);
        let (code, _, err) = common::cli(&all).expect("run the proxy");
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `interop`: the reference client against the clean reference works; against a
/// server that does not sign its replies the pair fails, and the failing finding is
/// the server's.
#[test]
fn interop_matrix_blames_the_server() {
    rt().block_on(async {
        let suite = &suites::agora_v1::SUITE;
        let mut servers = Vec::new();
        let mut running = Vec::new();
        for (name, faults) in [("clean", &[][..]), ("unsigned", &["unsigned-replies"][..])] {
            let s = suites::start(suite.id, "127.0.0.1:0", &test_options(faults))
                .await
                .expect("start agent");
            let url = s
                .endpoints
                .0
                .iter()
                .find(|(t, _)| *t == Transport::Http)
                .map(|(_, u)| u.clone())
                .expect("an HTTP endpoint");
            servers.push((name.to_string(), url));
            running.push(s);
        }
        let driver = format!(
            "'{}' client --suite {{suite}} --scenario {{scenario}} --url {{url}}",
            env!("CARGO_BIN_EXE_agentconform")
        );
        let clients = vec![("reference".to_string(), driver)];
        let shared = shared(test_profile());
        let mut pairs = agentconform::interop::matrix(suite, &shared, &clients, &servers, None)
            .await
            .expect("matrix");
        for s in running {
            s.stop().await;
        }
        use agentconform::interop::Cell;
        let cell = |server: &str| {
            pairs
                .iter()
                .find(|p| p.server == server)
                .map(|p| (p.cell, p.server_failing, p.client_failing))
        };
        assert_eq!(cell("clean"), Some((Cell::Works, 0, 0)), "{pairs:?}");
        let (c, server_failing, client_failing) = cell("unsigned").expect("the unsigned pair");
        assert_eq!(c, Cell::Fails, "{pairs:?}");
        assert!(server_failing > 0 && client_failing == 0, "{pairs:?}");
        let md = agentconform::interop::markdown(suite.id, &pairs);
        assert!(
            md.contains("| reference | works (server 0, client 0) | fails (server"),
            "{md}"
        );
        interop_reports(suite, &mut pairs, &servers);
    });
}

/// An agora-exchange server behind a proxy in tamper mode (`invent-conversation`,
/// armed after the first follow-up): the reference client's conversation with two
/// follow-ups, the first passed untouched (the control), the second sent to a
/// conversation id never issued. What went through, judged with the tamper's case.
async fn invented_conversation(server_faults: &[&str]) -> agentconform::case::CaseResult {
    let suite = &suites::agora_exchange::SUITE;
    let server = suites::start(suite.id, "127.0.0.1:0", &test_options(server_faults))
        .await
        .expect("start agent");
    let upstream = server.endpoints.0[0].1.clone();
    let shared = shared(test_profile());
    let tamper = agentconform::proxy::tamper::find(suite, "invent-conversation").expect("tamper");
    let mut setup = Setup::of(&shared);
    setup.tamper = Some((*tamper, true));
    let proxy = Proxy::start("127.0.0.1:0", &upstream, setup)
        .await
        .expect("start proxy");
    let echo = reference_impl::agora_exchange::document::sha1_hex(
        reference_impl::agora_exchange::document::ECHO_DOCUMENT.as_bytes(),
    );
    let input = json!({"body": {"text": "first"}, "protocolHash": echo,
        "followups": [{"text": "second"}, {"text": "third"}]});
    let _ = (suite.reference_client.run)(
        "conversation",
        &proxy.url,
        &input,
        &[],
        Duration::from_secs(5),
    )
    .await;
    let (passed, _) = proxy.stop().await;
    server.stop().await;
    agentconform::proxy::tamper::verdict(
        suite,
        tamper,
        &passed,
        agentconform::proxy::tamper::Observed::Proxy,
    )
}

/// Tamper mode judges the server by the changed requests it takes: the reference
/// refuses the invented conversation (beside the untouched follow-up it took); a
/// server that answers it is the one finding, in its own words.
#[test]
fn tampered_request_judges_the_server() {
    use agentconform::case::Outcome;
    let clean = rt().block_on(invented_conversation(&[]));
    assert_eq!(clean.outcome, Outcome::Pass, "{clean:?}");
    assert!(clean.message.contains("HTTP 404"), "{}", clean.message);
    let lax = rt().block_on(invented_conversation(&["accept-unknown-conversation"]));
    assert_eq!(lax.outcome, Outcome::Fail, "{lax:?}");
    assert_eq!(
        lax.id,
        "agora-exchange/proxy:server:tamper:invent-conversation"
    );
    assert_eq!(lax.met.len(), 1, "{lax:?}");
    let f = &lax.met[0].finding;
    assert_eq!(f.key, "agora-exchange/tamper:invent-conversation");
    assert!(
        f.summary.contains("HTTP 200") && f.summary.contains("success"),
        "{}",
        f.summary
    );
    assert!(f.requirements.iter().any(|r| r == "AEX-035"), "{f:?}");
}

/// Tamper mode in interop judges each client by its outcome on the changed reply:
/// the reference client reports `"Success"` as an error; one that takes any
/// spelling is the client's finding; the untouched plays are the control. Alone,
/// the proxy cannot see a client's outcome and says so.
#[test]
fn tampered_reply_judges_the_client() {
    let exe = env!("CARGO_BIN_EXE_agentconform");
    let dir = std::env::temp_dir().join(format!("agentconform-tamper-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = std::process::Command::new(exe)
        .args(["interop", "--suite", "agora-exchange", "--fault", "status-capitalized"])
        .args(["--client", "reference=reference", "--server", "reference=reference"])
        .arg("--client")
        .arg(format!("lenient='{exe}' client --suite {{suite}} --scenario {{scenario}} --url {{url}} --fault status-case-insensitive"))
        .arg("--report")
        .arg(&dir)
        .output()
        .expect("run interop");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("| reference | works (server 0, client 0)"),
        "{out}"
    );
    assert!(
        out.contains("| lenient | works with deviations (server 0, client 1)"),
        "{out}"
    );
    assert!(
        out.contains(
            "lenient with reference: agora-exchange/proxy:client:tamper:status-capitalized fail: single: the client took"
        ),
        "{out}"
    );
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("lenient--reference/report.json")).expect("the pair's report"),
    )
    .expect("json");
    let finding = report["findings"]
        .as_array()
        .and_then(|f| {
            f.iter()
                .find(|f| f["key"] == "agora-exchange/tamper:status-capitalized")
        })
        .expect("the tamper's finding");
    assert!(
        finding["summary"]
            .as_str()
            .is_some_and(|s| s.contains("Success")),
        "{finding}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    let suite = &suites::agora_exchange::SUITE;
    let tamper = agentconform::proxy::tamper::find(suite, "status-capitalized").expect("tamper");
    let changed = agentconform::proxy::Seen {
        exchange: agentconform::exchange::Exchange {
            method: "POST".into(),
            path: "/".into(),
            content_type: None,
            received: b"{}".to_vec(),
            answered: br#"{"status":"success"}"#.to_vec(),
            status: 200,
            written: None,
        },
        reply_type: None,
        failed: None,
        changed: Some(agentconform::proxy::Changed {
            control: false,
            path: "/".into(),
            content_type: None,
            body: br#"{"status":"Success"}"#.to_vec(),
        }),
        cut: (false, false),
        at_ms: 0,
        sent_at: time::OffsetDateTime::now_utc(),
    };
    let alone = agentconform::proxy::tamper::verdict(
        suite,
        tamper,
        &[Passed::Http(Box::new(changed))],
        agentconform::proxy::tamper::Observed::Proxy,
    );
    assert_eq!(
        alone.outcome,
        agentconform::case::Outcome::Skip,
        "{alone:?}"
    );
    assert!(
        alone.message.contains("interop --fault"),
        "{}",
        alone.message
    );
}

/// `--fault list` lists what the proxy can apply; an unknown fault is a usage error
/// naming those.
#[test]
fn tamper_usage() {
    let exe = env!("CARGO_BIN_EXE_agentconform");
    let run = |fault: &str| {
        std::process::Command::new(exe)
            .args([
                "proxy",
                "--suite",
                "agora-exchange",
                "--upstream",
                "http://127.0.0.1:9",
                "--fault",
                fault,
            ])
            .output()
            .expect("run the proxy")
    };
    let list = run("list");
    assert_eq!(list.status.code(), Some(0));
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        text.contains("invent-conversation") && text.contains("status-capitalized"),
        "{text}"
    );
    let bad = run("nope");
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("it applies: status-capitalized, invent-conversation"),
        "{err}"
    );
}

/// `interop --report DIR`: a folder per pair, and at DIR the report of the whole
/// run, its `interop` member the matrix (valid by the report schema), every pair's
/// findings apart, and the matrix in summary.md and report.html.
fn interop_reports(
    suite: &'static agentconform::case::Suite,
    pairs: &mut [agentconform::interop::Pair],
    servers: &[(String, String)],
) {
    let dir = std::env::temp_dir().join(format!("agentconform-interop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    agentconform::interop::write_reports(
        &dir,
        suite,
        pairs,
        servers,
        "2026-01-01T00:00:00Z",
        Duration::from_millis(5),
    )
    .expect("write the reports");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).expect(name);
    let json: serde_json::Value = serde_json::from_str(&read("report.json")).expect("JSON");
    agentconform::schemas::Schemas::load()
        .expect("schemas")
        .check("/report", &json)
        .expect("report.json valid by the report schema");
    assert_eq!(json["interop"]["suite"], suite.id);
    let cells: Vec<(&str, &str, &str)> = json["interop"]["pairs"]
        .as_array()
        .expect("interop.pairs")
        .iter()
        .map(|p| {
            (
                p["server"].as_str().unwrap_or_default(),
                p["cell"].as_str().unwrap_or_default(),
                p["report"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        cells,
        [
            ("clean", "works", "reference--clean"),
            ("unsigned", "fails", "reference--unsigned")
        ],
        "{json}"
    );
    // Every pair's sides are cases of their own, and the unsigned server's findings
    // are owned by its pair's server side.
    let ids: Vec<&str> = json["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "agora-v1/proxy:server[reference--clean]",
            "agora-v1/proxy:client[reference--clean]",
            "agora-v1/proxy:server[reference--unsigned]",
            "agora-v1/proxy:client[reference--unsigned]"
        ]
    );
    let findings = json["findings"].as_array().expect("findings");
    assert!(!findings.is_empty(), "{json}");
    for f in findings {
        assert_eq!(
            f["owners"],
            json!(["agora-v1/proxy:server[reference--unsigned] [http]"]),
            "{f}"
        );
    }
    for folder in ["reference--clean", "reference--unsigned"] {
        for name in ["report.json", "junit.xml", "report.html", "summary.md"] {
            assert!(dir.join(folder).join(name).is_file(), "{folder}/{name}");
        }
    }
    let summary = read("summary.md");
    assert!(
        summary.starts_with("# agentconform: a pair fails"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "| reference | works (server 0, client 0) [report](reference--clean/summary.md) | fails (server"
        ),
        "{summary}"
    );
    assert!(summary.contains("- **reference** with **unsigned** did not complete: "));
    let html = read("report.html");
    assert!(html.contains("<table id=\"interop-matrix\">"), "{html}");
    assert!(html.contains(
        "<td data-cell=\"works\"><span class=\"badge b-pass\">works</span> failing: server 0, client 0 · <a href=\"reference--clean/report.html\">report</a></td>"
    ));
    assert!(html.contains("<a href=\"reference--unsigned/report.html\">report</a>"));
    assert_eq!(
        read("matrix.md"),
        agentconform::interop::markdown(suite.id, pairs)
    );
    let matrix: serde_json::Value = serde_json::from_str(&read("matrix.json")).expect("JSON");
    assert_eq!(matrix, json["interop"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The proxy judges a client's message against the conversation it saw: an ACCEPT
/// that names its OFFER by the REQUEST's id, a request under its hello's id, are
/// the client's findings (and a clean negotiation none); a chorus discovery
/// listing in another shape is the server's.
#[test]
fn conversation_state_and_request_context() {
    let suite = &suites::agora_v1::SUITE;
    let p = test_profile();
    let input = json!({"resource": p.agora_v1.negotiated_resource, "params": {"text": "negotiated"}, "budget": 10});
    let clean = rt().block_on(scenario_through_proxy(suite, "request", &input, &[], &[]));
    assert!(clean.findings.is_empty(), "{:?}", sides(&clean));
    let bad = rt().block_on(scenario_through_proxy(
        suite,
        "request",
        &input,
        &[],
        &["offer-id-from-payload".to_string()],
    ));
    let s = sides(&bad);
    assert!(
        met_by(
            &s,
            "agora-v1/client:accept-offer-id",
            "agora-v1/proxy:client"
        ),
        "{s:?}"
    );

    let ap = &suites::agentprotocol::SUITE;
    let ask = json!({"action": p.agentprotocol.echo_action, "capability": "agentprotocol:core", "params": {"text": "hi"}});
    let reused = rt().block_on(scenario_through_proxy(
        ap,
        "request",
        &ask,
        &[],
        &["reuse-message-id".to_string()],
    ));
    let s = sides(&reused);
    assert!(
        met_by(
            &s,
            "agentprotocol/client:id-reused",
            "agentprotocol/proxy:client"
        ),
        "{s:?}"
    );

    let chorus = &suites::chorus::SUITE;
    let hire = json!({"skill": p.chorus.fixture_skill, "input_data": {"text": "hi"}, "owner_id": "proxy-owner", "result_wait_ms": 3000});
    let listed = rt().block_on(scenario_through_proxy(
        chorus,
        "hire",
        &hire,
        &["discover-skills-list"],
        &[],
    ));
    let s = sides(&listed);
    assert!(
        met_by(
            &s,
            "chorus/discover-entry:skills-list",
            "chorus/proxy:server"
        ),
        "{s:?}"
    );
}

/// An exchange through the proxy, as a test writes one.
fn seen(method: &str, path: &str, sent: &str, answered: &str, at: time::OffsetDateTime) -> Passed {
    Passed::Http(Box::new(agentconform::proxy::Seen {
        exchange: agentconform::exchange::Exchange {
            method: method.into(),
            path: path.into(),
            content_type: Some("application/json".into()),
            received: sent.as_bytes().to_vec(),
            answered: answered.as_bytes().to_vec(),
            status: 200,
            written: None,
        },
        reply_type: Some("application/json".into()),
        failed: None,
        changed: None,
        cut: (false, false),
        at_ms: 0,
        sent_at: at,
    }))
}

/// A follow-up after its conversation's expiry, and one to a conversation no reply
/// opened, are the client's findings; a follow-up in time is none.
#[test]
fn follow_ups_against_their_conversation() {
    let suite = &suites::agora_exchange::SUITE;
    let now = time::OffsetDateTime::now_utc();
    let expires = now.unix_timestamp() + 5;
    let opened = format!(
        r#"{{"status":"success","body":"hi","conversationId":"c1","conversationExpires":{expires}}}"#
    );
    let later = now + time::Duration::seconds(7);
    let passed = vec![
        seen(
            "POST",
            "/",
            r#"{"protocolHash":"x","body":"hi","multiround":true}"#,
            &opened,
            now,
        ),
        seen(
            "POST",
            "/conversations/c1",
            r#"{"body":"in time"}"#,
            r#"{"status":"success","body":"ok"}"#,
            now + time::Duration::seconds(1),
        ),
        seen(
            "POST",
            "/conversations/c1",
            r#"{"body":"late"}"#,
            r#"{"status":"failure","error":"expired"}"#,
            later,
        ),
        seen(
            "POST",
            "/conversations/c9",
            r#"{"body":"mine"}"#,
            r#"{"status":"failure","error":"unknown"}"#,
            now,
        ),
    ];
    let out = judge(suite, shared(test_profile()), "http://127.0.0.1:9", &passed);
    assert_explained(&out);
    let s = sides(&out);
    let client = |key: &str| {
        s.iter()
            .filter(|(k, o)| k == key && o.starts_with("agora-exchange/proxy:client"))
            .count()
    };
    assert_eq!(
        client("agora-exchange/client:follow-up-expired"),
        1,
        "{s:?}"
    );
    assert_eq!(
        client("agora-exchange/client:follow-up-unopened"),
        1,
        "{s:?}"
    );
    let expired = out
        .findings
        .iter()
        .find(|f| f.finding.key == "agora-exchange/client:follow-up-expired")
        .expect("the expired follow-up");
    assert!(
        expired.finding.summary.contains("2 s after"),
        "{}",
        expired.finding.summary
    );
}

/// TLS on both sides: the proxy listens over https with a certificate of its own
/// and reaches an https server it trusts by that server's certificate; what the
/// client receives is what the server sent.
#[test]
fn tls_on_both_sides() {
    use agentconform::drive::Tls;
    use reference_impl::serve::TlsIdentity;
    rt().block_on(async {
        let server_id = TlsIdentity::generate().expect("server certificate");
        let mut options = test_options(&[]);
        options.tls = Some(server_id.clone());
        let server = suites::start("agora-v1", "127.0.0.1:0", &options)
            .await
            .expect("start agent");
        let upstream = server.endpoints.0[0].1.clone();
        assert!(upstream.starts_with("https://"), "{upstream}");
        let shared = shared(test_profile());
        let mut setup = Setup::of(&shared);
        setup.tls = Tls::ca_pem(server_id.cert_pem().as_bytes(), "server").expect("trust");
        setup.http = setup.tls.http_client().expect("client");
        let proxy_id = TlsIdentity::generate().expect("proxy certificate");
        let proxy_pem = proxy_id.cert_pem().to_string();
        setup.identity = Some(proxy_id);
        let proxy = Proxy::start("127.0.0.1:0", &upstream, setup)
            .await
            .expect("start proxy");
        assert!(proxy.url.starts_with("https://"), "{}", proxy.url);
        let client = Tls::ca_pem(proxy_pem.as_bytes(), "proxy")
            .and_then(|t| t.http_client())
            .expect("client");
        let got = client
            .post(&proxy.url)
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .expect("through the proxy over TLS");
        let status = got.status().as_u16();
        let body = got.bytes().await.expect("body").to_vec();
        let (passed, _) = proxy.stop().await;
        server.stop().await;
        let Some(Passed::Http(seen)) = passed.first() else {
            panic!("nothing went through: {passed:?}");
        };
        assert!(seen.failed.is_none(), "{seen:?}");
        assert_eq!(seen.exchange.status, status);
        assert_eq!(seen.exchange.answered, body);
        assert!(!body.is_empty());
    });
}

/// `proxy --for-s 600` ends at SIGTERM, as `kill` and every CI runner stop a
/// process, and at SIGINT, long before its 600 s: each time with its exit code of
/// a judgement (0 or 1, never 143) and its report written.
#[test]
fn a_signal_ends_the_proxy_with_its_report() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let rt = rt();
    let server = rt
        .block_on(suites::start("agora-v1", "127.0.0.1:0", &test_options(&[])))
        .expect("start agent");
    let upstream = server.endpoints.0[0].1.clone();
    for signal in ["TERM", "INT"] {
        let dir = std::env::temp_dir().join(format!(
            "agentconform-proxy-signal-{signal}-{}-{}",
            std::process::id(),
            reference_impl::wire::new_id()
        ));
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentconform"))
            .args(["proxy", "--suite", "agora-v1", "--upstream", &upstream])
            .args(["--for-s", "600", "--report"])
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the proxy");
        let stdout = child.stdout.take().expect("its stdout");
        let mut lines = BufReader::new(stdout).lines();
        let url = lines
            .next()
            .and_then(Result::ok)
            .expect("the proxy prints its URL first");
        // One exchange through it, so that the report has something to say.
        let status = rt.block_on(async {
            reference_impl::wire::http::builder()
                .build()
                .expect("an HTTP client")
                .post(&url)
                .header("content-type", "application/json")
                .body("{}")
                .timeout(Duration::from_secs(5))
                .send()
                .await
                .map(|r| r.status().as_u16())
        });
        assert!(status.is_ok(), "no answer through the proxy: {status:?}");
        let killed = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        // Bounded: 20 s at most, where --for-s would have taken 600.
        let mut code = None;
        for _ in 0..400 {
            if let Some(s) = child.try_wait().expect("wait") {
                code = Some(s.code());
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let Some(code) = code else {
            let _ = child.kill();
            panic!("SIG{signal} did not end the proxy within 20 s");
        };
        assert!(
            matches!(code, Some(0 | 1)),
            "SIG{signal}: exit {code:?}, not a judgement's 0 or 1"
        );
        let report = std::fs::read_to_string(dir.join("report.json"))
            .unwrap_or_else(|e| panic!("SIG{signal}: no report.json ({e})"));
        assert!(report.contains("proxy:server"), "SIG{signal}: {report}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    rt.block_on(server.stop());
}

/// A request the spec does not define (a real client's closing DELETE of its
/// agora-exchange conversation) is said once under the client, informational, and
/// the server's reply to it, an HTML page with HTTP 200, is not judged by the
/// suite's rules: no failing finding on either side.
#[test]
fn a_request_outside_the_spec_is_said_not_judged() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let (out, upstream) = rt().block_on(async {
        let suite = &suites::agora_exchange::SUITE;
        let server = MockServer::start().await;
        Mock::given(method("DELETE"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw("<html><body>deleted</body></html>", "text/html"),
            )
            .mount(&server)
            .await;
        let upstream = server.uri();
        let shared = shared(test_profile());
        let proxy = Proxy::start("127.0.0.1:0", &upstream, Setup::of(&shared))
            .await
            .expect("start proxy");
        let http = reference_impl::wire::http::builder()
            .build()
            .expect("an HTTP client");
        for id in ["3f2a", "77b1"] {
            let url = format!("{}/conversations/{id}", proxy.url.trim_end_matches('/'));
            let sent = http
                .delete(&url)
                .timeout(Duration::from_secs(5))
                .send()
                .await;
            assert!(sent.is_ok(), "{sent:?}");
        }
        let (passed, _) = proxy.stop().await;
        (judge(suite, shared, &upstream, &passed), upstream)
    });
    let keys: Vec<(&str, Verdict)> = out
        .findings
        .iter()
        .map(|f| (f.finding.key.as_str(), f.finding.outcome))
        .collect();
    assert_eq!(
        keys,
        vec![(
            "agora-exchange/client:outside-spec:DELETE /conversations/*",
            Verdict::Warn
        )],
        "through a proxy to {upstream}"
    );
    let f = &out.findings[0];
    assert_eq!(f.finding.level, agentconform::case::Level::Info);
    assert!(
        f.cases.iter().all(|c| c.contains("proxy:client")),
        "{:?}",
        f.cases
    );
    // In the client's words: one of the two requests it sent (the proxy records
    // an exchange once its reply has gone out, so either may be recorded first).
    assert!(
        ["3f2a", "77b1"].iter().any(|id| f
            .finding
            .summary
            .contains(&format!("DELETE /conversations/{id}"))),
        "{}",
        f.finding.summary
    );
}
