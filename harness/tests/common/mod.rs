//! What the test binaries share: the reference agents under test, with the short
//! ttls and fixtures the tests use, the profile that matches them, and runs
//! against them.
#![allow(dead_code)]

use agentconform::case::Suite;
use agentconform::embedded;
use agentconform::profile::Profile;
use agentconform::runner::{self, RunOutput, Selection};
use agentconform::schemas::Schemas;
use agentconform::script::RunShared;
use agentconform::suites;
use reference_impl::wire::keys::Keypair;
use std::sync::Arc;
use std::time::Duration;

/// Offer ttl of the agents under test: long enough that an ACCEPT sent at once is
/// never late on a loaded machine, short enough to keep the expiry case quick.
pub const TEST_TTL_MS: u64 = 2000;
/// Conversation lifetime of the agora-exchange server under test, in seconds.
pub const TEST_CONVERSATION_TTL_S: u64 = 2;
/// agora-spaces: the token and heartbeat timeout of the server under test.
pub const TEST_TOKEN: &str = "s3cret";
pub const TEST_HEARTBEAT_S: u64 = 2;

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

pub fn shared(profile: Profile) -> Arc<RunShared> {
    shared_with(profile, agentconform::drive::Tls::platform().expect("tls"))
}

/// A run's shared state with its own trust setting.
pub fn shared_with(profile: Profile, tls: agentconform::drive::Tls) -> Arc<RunShared> {
    Arc::new(RunShared {
        transcript_budget: agentconform::script::TranscriptBudget::default(),
        adapted: Default::default(),
        client_ids: Default::default(),
        documents: Default::default(),
        embedded: false,
        profile,
        key: Keypair::generate(),
        other_key: Keypair::generate(),
        schemas: Schemas::load().expect("schemas"),
        http: tls.http_client().expect("client"),
        tls,
    })
}

/// Options of the reference agents under test.
pub fn test_options(faults: &[&str]) -> embedded::Options {
    embedded::Options {
        faults: faults.iter().map(|f| f.to_string()).collect(),
        offer_ttl_ms: Some(TEST_TTL_MS),
        replay_window_s: None,
        conversation_ttl_s: Some(TEST_CONVERSATION_TTL_S),
        token: Some(TEST_TOKEN.into()),
        heartbeat_timeout_s: Some(TEST_HEARTBEAT_S),
        ..embedded::Options::default()
    }
}

/// The profile that matches the agents under test.
pub fn test_profile() -> Profile {
    let mut p = Profile::default();
    p.target.token = Some(TEST_TOKEN.into());
    p.timing.heartbeat_timeout_s = TEST_HEARTBEAT_S;
    p.agora_spaces.full_space = Some("full".into());
    p
}

pub const TEST_PROFILE_TOML: &str = "[target]\ntoken = \"s3cret\"\n[timing]\nheartbeat_timeout_s = 2\n[agora-spaces]\nfull_space = \"full\"\n";

pub async fn run_against(
    suite: &'static Suite,
    faults: &[&str],
    selection: &Selection,
) -> RunOutput {
    let server = suites::start(suite.id, "127.0.0.1:0", &test_options(faults))
        .await
        .expect("start agent");
    let out = runner::run(
        shared(test_profile()),
        &[(suite, server.endpoints.clone())],
        selection,
    )
    .await
    .expect("run");
    server.stop().await;
    assert_explained(&out);
    out
}

/// Every finding of a run is explained (`agentconform explain KEY` prints its rule
/// or case), and a finding of a rule cites no requirement the rule does not name.
pub fn explained(out: &RunOutput) -> Result<(), String> {
    use agentconform::explain::{self, Named};
    let suites = agentconform::suites::all();
    for f in &out.findings {
        let key = &f.finding.key;
        let named =
            explain::lookup(&suites, key).ok_or_else(|| format!("no rule explains {key}"))?;
        let mut text = Vec::new();
        explain::explain(&suites, key, &mut text)?;
        if text.len() < 80 {
            return Err(format!(
                "explain {key} says too little: {}",
                String::from_utf8_lossy(&text)
            ));
        }
        if let Some(made) = f.finding.rule {
            match named {
                Named::Rule(_, r) if std::ptr::eq(r, made) => {}
                other => {
                    return Err(format!(
                        "finding {key} was made by rule {} ({}), but explain names {other:?}",
                        made.name, made.key
                    ))
                }
            }
        }
        if let Named::Rule(_, r) = named {
            if f.finding.level != r.level() {
                return Err(format!(
                    "finding {key} has level {}, but its rule {} gives {} (report and explain must agree)",
                    f.finding.level,
                    r.key,
                    r.level()
                ));
            }
            let stray: Vec<&String> = f
                .finding
                .requirements
                .iter()
                .filter(|id| !r.requirements.is_empty() && !r.requirements.contains(&id.as_str()))
                .collect();
            if !stray.is_empty() {
                return Err(format!(
                    "finding {key} cites {stray:?}, which its rule {} does not name ({:?})",
                    r.key, r.requirements
                ));
            }
        }
    }
    Ok(())
}

/// `explained`, as a test's panic.
pub fn assert_explained(out: &RunOutput) {
    if let Err(e) = explained(out) {
        panic!("{e}");
    }
}

/// A WebSocket peer that misbehaves after the handshake: `flood` (256 KiB text frames,
/// at most 2048 of them), `tiny` (200,000 frames of two bytes), `deep` (frames nested
/// 200,000 deep, at most 64), `fragments` (one message in endless continuation
/// frames, at most 64 MiB). Each stops by itself, or when the other side leaves.
async fn ws_misbehave(sock: tokio::net::TcpStream, how: &str) {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::Message;
    let Ok(mut ws) = tokio_tungstenite::accept_async(sock).await else {
        return;
    };
    if how == "fragments" {
        // A fragment bomb: one text message that never ends, in 16 KiB
        // continuation frames without FIN (at most 64 MiB of them).
        let chunk = "x".repeat(16 << 10);
        let first = Frame::message(chunk.clone(), OpCode::Data(Data::Text), false);
        if ws.feed(Message::Frame(first)).await.is_err() {
            return;
        }
        for _ in 0..4096 {
            let more = Frame::message(chunk.clone(), OpCode::Data(Data::Continue), false);
            if ws.feed(Message::Frame(more)).await.is_err() {
                return;
            }
        }
        let _ = ws.flush().await;
        return;
    }
    let (frame, count) = match how {
        "flood" => ("x".repeat(256 << 10), 2048),
        "tiny" => ("{}".to_string(), 200_000),
        _ => (
            format!("{}{}", "[".repeat(200_000), "]".repeat(200_000)),
            64,
        ),
    };
    for _ in 0..count {
        if ws.feed(Message::text(frame.clone())).await.is_err() {
            return;
        }
    }
    let _ = ws.flush().await;
}

/// The `ws-selfish` hub of [`hostile`], on one connection (at most 30 s).
async fn selfish_hub(sock: tokio::net::TcpStream) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let Ok(mut ws) = tokio_tungstenite::accept_async(sock).await else {
        return;
    };
    let registered = r#"{"type":"agent.registered","agent":{"id":"x"},"timestamp":1}"#;
    let _ = ws.send(Message::Text(registered.into())).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(Ok(Message::Text(t)))) = tokio::time::timeout_at(deadline, ws.next()).await {
        let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap_or_default();
        let answer = match v["type"].as_str() {
            Some("space.join") => serde_json::json!({"type": "space.joined", "id": v["id"],
                "space": v["space"], "members": [], "timestamp": 1}),
            Some("space.publish") => serde_json::json!({"type": "space.event",
                "space": v["space"], "data": v["data"], "timestamp": 1}),
            _ => continue,
        };
        let copies = if v["type"] == "space.publish" { 2 } else { 1 };
        for _ in 0..copies {
            let _ = ws.send(Message::Text(answer.to_string().into())).await;
        }
    }
}

/// A loopback server that misbehaves in one way; stops when the runtime ends.
/// HTTP: `hang`, `garbage`, `deep` (a reply nested 200,000 deep), `endless` (a
/// chunked body of up to 64 MiB). WebSocket: `ws-silent`, `ws-flood`, `ws-tiny`,
/// `ws-deep`, `ws-fragments` (see [`ws_misbehave`]), `ws-selfish` (an agora-spaces hub that
/// registers and joins everyone, but sends each published event back to its
/// publisher, twice, and to no one else).
pub async fn hostile(kind: &'static str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        // Bounded: serves at most 500 connections, then stops by itself.
        for _ in 0..500 {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                if kind == "ws-selfish" {
                    selfish_hub(sock).await;
                    return;
                }
                if let Some(flood) = kind.strip_prefix("ws-") {
                    if flood != "silent" {
                        ws_misbehave(sock, flood).await;
                        return;
                    }
                }
                if kind == "ws-silent" {
                    // Completes the WebSocket handshake, then never sends a frame.
                    if let Ok(mut ws) = tokio_tungstenite::accept_async(sock).await {
                        use futures_util::StreamExt;
                        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                        while let Ok(Some(Ok(_))) =
                            tokio::time::timeout_at(deadline, ws.next()).await
                        {
                        }
                    }
                    return;
                }
                // One request per connection, each reply saying so (`connection:
                // close`): a client must not reuse a connection the server is about
                // to drop, and what these targets test is the reply, not that race.
                let mut buf = vec![0u8; 65536];
                let _ = sock.read(&mut buf).await;
                match kind {
                    "hang" => tokio::time::sleep(Duration::from_secs(30)).await,
                    "garbage" => {
                        let _ = sock
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot json!")
                            .await;
                    }
                    "deep" => {
                        // A reply nested 200,000 deep.
                        let body = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = sock.write_all(head.as_bytes()).await;
                        let _ = sock.write_all(body.as_bytes()).await;
                    }
                    "huge-length" => {
                        // Announces a gigabyte, then sends at most 64 MiB of it.
                        let _ = sock
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1073741824\r\n\r\n")
                            .await;
                        let block = vec![b'x'; 65536];
                        for _ in 0..1024 {
                            if sock.write_all(&block).await.is_err() {
                                break;
                            }
                        }
                    }
                    "endless" => {
                        let _ = sock
                            .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                            .await;
                        let chunk = format!("{:x}\r\n{}\r\n", 4096, "x".repeat(4096));
                        // At most 64 MiB, then the connection ends.
                        for _ in 0..16384 {
                            if sock.write_all(chunk.as_bytes()).await.is_err() {
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            });
        }
    });
    if kind.starts_with("ws-") {
        format!("ws://{addr}/")
    } else {
        format!("http://{addr}/")
    }
}

// ---------- the command line ----------

/// The `agentconform` binary cargo built for these tests.
pub fn bin() -> std::path::PathBuf {
    // Cargo names it to tests and benches; an example that includes this file
    // never starts the binary.
    let built = option_env!("CARGO_BIN_EXE_agentconform");
    std::path::PathBuf::from(built.expect("cargo names the binary to tests and benches"))
}

/// Runs `agentconform ARGS` with no input: its exit code, standard output and
/// standard error.
pub fn cli(args: &[&str]) -> Result<(i32, String, String), String> {
    let out = std::process::Command::new(bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Runs `agentconform ARGS`, which must exit `code` and say `needle` on either
/// output: its standard output and standard error.
pub fn expect_outputs(args: &[&str], code: i32, needle: &str) -> Result<(String, String), String> {
    let (c, out, err) = cli(args)?;
    if c != code || !(out.contains(needle) || err.contains(needle)) {
        return Err(format!(
            "agentconform {args:?}: exit {c} (want {code}), looking for {needle:?}\nstdout: {out}\nstderr: {err}"
        ));
    }
    Ok((out, err))
}

/// [`expect_outputs`], its standard output alone.
pub fn expect_code(args: &[&str], code: i32, needle: &str) -> Result<String, String> {
    expect_outputs(args, code, needle).map(|(out, _)| out)
}

/// A fresh folder of the caller's own: trials run in parallel, and two of them
/// may take the same `name`.
pub fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "agentconform-test-{name}-{}-{}",
        std::process::id(),
        reference_impl::wire::new_id()
    ));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// How long `serve` may take to print its URL.
pub const SERVE_DEADLINE: Duration = Duration::from_secs(60);

/// An `agentconform serve` process, killed when dropped; a thread keeps its
/// standard output open while it lives.
pub struct Serve {
    child: std::process::Child,
    /// The first URL it printed.
    pub url: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `agentconform serve --listen 127.0.0.1:0 ARGS` and waits, under
/// [`SERVE_DEADLINE`], for the first URL it prints.
pub fn serve(args: &[&str]) -> Result<Serve, String> {
    let mut all = vec!["--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    serve_lines(&all, 1).map(|(s, _)| s)
}

/// Starts `agentconform serve ARGS` and waits, under [`SERVE_DEADLINE`], for the
/// first `n` lines it prints (its URLs); the first is the server's `url`.
pub fn serve_lines(args: &[&str], n: usize) -> Result<(Serve, Vec<String>), String> {
    use std::io::BufRead;
    let mut child = std::process::Command::new(bin())
        .arg("serve")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut guard = Serve {
        child,
        url: String::new(),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let _ = tx.send(line);
        }
    });
    let deadline = std::time::Instant::now() + SERVE_DEADLINE;
    let mut lines = Vec::new();
    while lines.len() < n {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx.recv_timeout(left).map_err(|_| {
            format!(
                "serve {args:?} printed {} of {n} lines: {lines:?}",
                lines.len()
            )
        })?;
        lines.push(line.trim().to_string());
    }
    guard.url = lines.first().cloned().unwrap_or_default();
    Ok((guard, lines))
}

// ---------- live fuzzing ----------

/// The profile `agentconform fuzz` uses against the embedded agents.
pub fn fuzz_profile() -> Profile {
    let mut p = Profile::default();
    p.agora_spaces.full_space = Some("full".into());
    // The embedded reference stops a cancelled stream at once.
    p.agora_spaces.cancel_grace_ms = Some(100);
    p
}

/// The embedded reference of `suite` with `faults` on, and its URL over the
/// binding its fuzzer speaks first.
pub async fn fuzz_reference(
    suite: &str,
    faults: &[&str],
) -> (embedded::Server, (String, agentconform::drive::Transport)) {
    let parts = suites::parts(suite).expect("a suite");
    reference_on(suite, faults, parts.fuzzer.transports[0]).await
}

/// The embedded reference of `suite` with `faults`, and its endpoint of binding `want`.
pub async fn reference_on(
    suite: &str,
    faults: &[&str],
    want: agentconform::drive::Transport,
) -> (embedded::Server, (String, agentconform::drive::Transport)) {
    let opts = embedded::Options {
        faults: faults.iter().map(|f| f.to_string()).collect(),
        ..embedded::Options::default()
    };
    let server = suites::start(suite, "127.0.0.1:0", &opts)
        .await
        .expect("start the reference");
    let url = server
        .endpoints
        .0
        .iter()
        .find(|(t, _)| *t == want)
        .map(|(_, u)| u.clone())
        .expect("an endpoint of the fuzzer's binding");
    (server, (url, want))
}

/// What a campaign of the kit runs: which side of which suite, against what,
/// within which bounds, with how many workers (the suite's default when `None`),
/// filing into `out` and leaving out what `known` knows.
pub struct Fuzzing<'a> {
    pub suite: &'a str,
    pub role: agentconform::case::Role,
    pub to: (String, agentconform::drive::Transport),
    pub profile: Profile,
    pub bounds: agentconform::fuzzing::engine::Bounds,
    pub workers: Option<u64>,
    pub out: &'a std::path::Path,
    pub known: agentconform::fuzzing::corpus::Known,
}

/// One campaign of seed 1, as `agentconform fuzz` runs it.
pub async fn fuzz_campaign(f: Fuzzing<'_>) -> agentconform::fuzzing::engine::Summary {
    use agentconform::fuzzing::campaign;
    let parts = suites::parts(f.suite).expect("a suite");
    let (url, transport) = f.to;
    campaign::campaign(campaign::Campaign {
        suite: parts.suite,
        spec: parts.fuzzer_of(f.role).expect("a live fuzzer of the role"),
        role: f.role,
        seed: 1,
        bounds: f.bounds,
        out: f.out.to_path_buf(),
        workers: f.workers,
        connection: campaign::Connection {
            url,
            transport,
            profile: f.profile,
            profile_file: None,
            schemas: Schemas::load().expect("schemas"),
            http: agentconform::drive::http::client().expect("client"),
            tls: agentconform::drive::Tls::platform().expect("tls"),
            keys: None,
            embedded: None,
        },
        known: f.known,
        previous: Vec::new(),
        // The tests ask whether the fuzzer reaches each fault, not how much it
        // leaves behind: no cap.
        max_created: None,
    })
    .await
    .expect("a campaign")
}

/// Rust debug forms that must never reach a report or a crash file: values are
/// shown as JSON.
pub const DEBUG_FORMS: [&str; 7] = [
    "Some(", "None", "Number(", "String(", "Object {", "Array [", "Bool(",
];

/// The debug form `text` shows, if any.
pub fn debug_form(text: &str) -> Option<&'static str> {
    DEBUG_FORMS.iter().copied().find(|d| text.contains(d))
}

/// The variable under which a test whose outside tool is missing fails instead of
/// being skipped (`.ci/run` sets it, so that CI proves every such test).
pub const REQUIRE_TOOLS: &str = "AGENTCONFORM_REQUIRE_TOOLS";

/// Whether [`REQUIRE_TOOLS`] is set to something other than empty or `0`.
pub fn tools_required() -> bool {
    std::env::var_os(REQUIRE_TOOLS).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether a test that needs `tool` is to be skipped: the tool is missing (`present`
/// is false) and [`REQUIRE_TOOLS`] is not set (empty or `0` counts as unset). A skip prints one line naming the
/// test, the tool and where it comes from (`install`); libtest lists the test as
/// ignored and counts it in its summary.
pub fn skip_without(test: &str, tool: &str, present: bool, install: &str) -> bool {
    if present || tools_required() {
        return false;
    }
    eprintln!("skipped: {test}: needs {tool}, not installed here ({install})");
    true
}

/// Whether `program --version` runs.
pub fn runs(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// Whether python3 imports `module`.
pub fn python_has(module: &str) -> bool {
    std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}
