//! TLS end to end, on loopback: the reference servers serve `https://` and `wss://`
//! with a certificate made at start-up (`serve --tls`, `run --tls`), and the harness
//! reaches them trusting that certificate (`--ca-file`), any certificate
//! (`--insecure`), or by default the platform's roots, which do not know it: then the
//! run ends at the preflight with exit 2 and one message naming the certificate error.

mod common;

use agentconform::case::{CaseResult, Outcome};
use agentconform::drive::{Tls, Transport};
use agentconform::embedded;
use agentconform::profile::Profile;
use agentconform::runner::{self, Endpoints, Selection};
use agentconform::script::RunShared;
use agentconform::suites;
use common::*;
use libtest_mimic::{Arguments, Failed, Trial};
use reference_impl::serve::TlsIdentity;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A `serve --tls` process (killed when dropped) and where it wrote its certificate.
struct Serve {
    _process: common::Serve,
    cert: PathBuf,
    url: String,
}

/// Starts `agentconform serve --suite SUITE --tls --tls-cert-out DIR/cert.pem` and
/// waits (under a deadline) for its first URL.
fn serve_tls(suite: &str, name: &str, args: &[&str]) -> Result<Serve, Failed> {
    let cert = tempdir(name).join("cert.pem");
    let cert_out = cert.to_string_lossy().into_owned();
    let mut all = vec!["--suite", suite, "--tls", "--tls-cert-out", &cert_out];
    all.extend_from_slice(args);
    let process = common::serve(&all)?;
    let url = process.url.clone();
    if !(url.starts_with("https://127.0.0.1:") || url.starts_with("wss://127.0.0.1:")) {
        return Err(format!("serve --tls printed {url:?}, not an https:// or wss:// URL").into());
    }
    let pem = std::fs::read_to_string(&cert).map_err(|e| e.to_string())?;
    if !pem.starts_with("-----BEGIN CERTIFICATE-----") {
        return Err(format!("--tls-cert-out wrote {pem:?}").into());
    }
    Ok(Serve {
        _process: process,
        cert,
        url,
    })
}

/// A run that could not reach its target: exit 2, nothing on standard output, and one
/// line on standard error that names the URL and a certificate error.
fn expect_certificate_refusal(args: &[&str], url: &str) -> Result<(), Failed> {
    let (c, out, err) = cli(args)?;
    let lines: Vec<&str> = err.lines().collect();
    let ok = c == 2
        && out.trim().is_empty()
        && lines.len() == 1
        && lines[0].contains(&format!("cannot reach the target {url}"))
        && lines[0].contains("invalid peer certificate")
        && lines[0].contains("--ca-file");
    if !ok {
        return Err(format!(
            "agentconform {args:?}: exit {c}; want exit 2 and one message naming the certificate error\nstdout: {out}\nstderr: {err}"
        )
        .into());
    }
    Ok(())
}

fn read_report(dir: &Path) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(dir.join("report.json")).map_err(|e| e.to_string())?;
    Ok(serde_json::from_str(&text).map_err(|e| e.to_string())?)
}

/// The transcript texts of one case of a report.
fn transcript_of(report: &Value, id: &str) -> Result<Vec<String>, Failed> {
    let case = report["cases"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["id"] == id))
        .ok_or_else(|| format!("no case {id} in the report"))?;
    if case["outcome"] != "pass" {
        return Err(format!("{id}: {} ({})", case["outcome"], case["message"]).into());
    }
    Ok(case["transcript"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|e| e["text"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default())
}

fn no_failing_finding(report: &Value) -> Result<(), Failed> {
    let failing: Vec<&Value> = report["findings"]
        .as_array()
        .map(|f| f.iter().filter(|f| f["outcome"] == "fail").collect())
        .unwrap_or_default();
    if !failing.is_empty() {
        return Err(format!("failing findings: {failing:?}").into());
    }
    Ok(())
}

// ---------- the command line against `serve --tls` ----------

fn agora_exchange_over_https_with_ca_file() -> Result<(), Failed> {
    let s = serve_tls(
        "agora-exchange",
        "exchange-ca",
        &["--conversation-ttl-s", "2"],
    )?;
    let dir = tempdir("exchange-ca-report");
    let cert = s.cert.to_string_lossy().into_owned();
    let report_dir = dir.to_string_lossy().into_owned();
    expect_outputs(
        &[
            "run",
            "--suite",
            "agora-exchange",
            "--target",
            &s.url,
            "--ca-file",
            &cert,
            "--report",
            &report_dir,
        ],
        0,
        "0 failed",
    )?;
    let report = read_report(&dir)?;
    no_failing_finding(&report)?;
    // The https-transport case saw the handshake and says the certificate verified.
    let t = transcript_of(&report, "agora-exchange/https-transport")?;
    let seen = t.iter().any(|l| {
        l.contains("over TLS (TLSv1_")
            && l.contains(&format!(
                "the certificate verified against the certificates of {cert}"
            ))
    });
    if !seen {
        return Err(format!("https-transport did not record a verified handshake: {t:?}").into());
    }
    Ok(())
}

fn self_signed_target_needs_trust() -> Result<(), Failed> {
    let https = serve_tls("agora-exchange", "refuse-https", &[])?;
    expect_certificate_refusal(
        &["run", "--suite", "agora-exchange", "--target", &https.url],
        &https.url,
    )?;
    let wss = serve_tls("agora-spaces", "refuse-wss", &[])?;
    expect_certificate_refusal(
        &["run", "--suite", "agora-spaces", "--target", &wss.url],
        &wss.url,
    )?;
    // Another server's certificate is no better.
    let other = wss.cert.to_string_lossy().into_owned();
    expect_certificate_refusal(
        &[
            "run",
            "--suite",
            "agora-exchange",
            "--target",
            &https.url,
            "--ca-file",
            &other,
        ],
        &https.url,
    )
}

fn insecure_accepts_self_signed() -> Result<(), Failed> {
    let s = serve_tls("agora-exchange", "insecure", &["--conversation-ttl-s", "2"])?;
    let dir = tempdir("insecure-report");
    let report_dir = dir.to_string_lossy().into_owned();
    expect_outputs(
        &[
            "run",
            "--suite",
            "agora-exchange",
            "--target",
            &s.url,
            "--insecure",
            "--report",
            &report_dir,
        ],
        0,
        "0 failed",
    )?;
    let report = read_report(&dir)?;
    no_failing_finding(&report)?;
    // Truthful: under --insecure the certificate is not called verified.
    let t = transcript_of(&report, "agora-exchange/https-transport")?;
    if !t
        .iter()
        .any(|l| l.contains("over TLS") && l.contains("not verified (--insecure)"))
        || t.iter().any(|l| l.contains("certificate verified against"))
    {
        return Err(format!("https-transport under --insecure: {t:?}").into());
    }
    Ok(())
}

fn deviations_over_tls_fail_with_reproducers() -> Result<(), Failed> {
    // A faulty server over TLS: the run judges it (exit 1), and each rerun command
    // trusts the same certificate.
    let s = serve_tls(
        "agora-exchange",
        "fault",
        &["--fault", "status-capitalized"],
    )?;
    let cert = s.cert.to_string_lossy().into_owned();
    let dir = tempdir("fault-report");
    let report_dir = dir.to_string_lossy().into_owned();
    expect_outputs(
        &[
            "run",
            "--suite",
            "agora-exchange",
            "--target",
            &s.url,
            "--ca-file",
            &cert,
            "--cases",
            "agora-exchange/single-round",
            "--report",
            &report_dir,
        ],
        1,
        "FAIL",
    )?;
    let report = read_report(&dir)?;
    let reruns: Vec<&str> = report["cases"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["reproduce"].as_str()).collect())
        .unwrap_or_default();
    if reruns.is_empty()
        || !reruns
            .iter()
            .all(|r| r.contains(&format!("--ca-file {cert}")))
    {
        return Err(format!("reproducers: {reruns:?}").into());
    }
    Ok(())
}

fn fuzz_and_replay_over_tls() -> Result<(), Failed> {
    let v1 = serve_tls("agora-v1", "fuzz-v1", &[])?;
    let cert = v1.cert.to_string_lossy().into_owned();
    let out = tempdir("fuzz-out");
    let out_dir = out.to_string_lossy().into_owned();
    expect_outputs(
        &[
            "fuzz",
            "--suite",
            "agora-v1",
            "--target",
            &v1.url,
            "--ca-file",
            &cert,
            "--cases",
            "100",
            "--out",
            &out_dir,
        ],
        0,
        "0 findings",
    )?;
    // A crash file names its target; the replay trusts the same certificate.
    let crash = out.join("case.json");
    let rec = serde_json::json!({
        "suite": "agora-v1", "seed": 1, "index": 0, "target": v1.url, "oracle": "none",
    });
    std::fs::write(&crash, rec.to_string()).map_err(|e| e.to_string())?;
    let crash = crash.to_string_lossy().into_owned();
    expect_outputs(&["replay", &crash, "--ca-file", &cert], 0, "not reproduced")?;
    expect_outputs(&["replay", &crash, "--insecure"], 0, "not reproduced")?;

    let spaces = serve_tls("agora-spaces", "fuzz-spaces", &[])?;
    let cert = spaces.cert.to_string_lossy().into_owned();
    expect_outputs(
        &[
            "fuzz",
            "--suite",
            "agora-spaces",
            "--target",
            &spaces.url,
            "--ca-file",
            &cert,
            "--cases",
            "60",
            "--out",
            &out_dir,
        ],
        0,
        "0 findings",
    )?;
    Ok(())
}

fn run_tls_embedded() -> Result<(), Failed> {
    // Every suite against the embedded reference serving TLS, which the run trusts.
    let (out, _) = expect_outputs(
        &["run", "--suite", "all", "--tls", "--format", "short"],
        0,
        "0 failed",
    )?;
    if !out.contains(" 0 blocked") {
        return Err(format!("run --tls: {out}").into());
    }
    Ok(())
}

fn flags_are_checked() -> Result<(), Failed> {
    expect_outputs(
        &[
            "run",
            "--suite",
            "agora-v1",
            "--target",
            "https://127.0.0.1:1/",
            "--ca-file",
            "x.pem",
            "--insecure",
        ],
        2,
        "cannot be used with",
    )?;
    expect_outputs(
        &[
            "run",
            "--suite",
            "agora-v1",
            "--tls",
            "--target",
            "https://127.0.0.1:1/",
        ],
        2,
        "cannot be used with",
    )?;
    expect_outputs(
        &["serve", "--suite", "agora-v1", "--tls-cert-out", "x.pem"],
        2,
        "--tls",
    )?;
    let missing = tempdir("flags").join("missing.pem");
    let missing = missing.to_string_lossy().into_owned();
    expect_outputs(
        &[
            "run",
            "--suite",
            "agora-v1",
            "--target",
            "https://127.0.0.1:1/",
            "--ca-file",
            &missing,
        ],
        2,
        &format!("--ca-file {missing}"),
    )?;
    Ok(())
}

// ---------- in process: the embedded servers over wss:// ----------

/// A run's shared state that trusts `identity`'s certificate.
fn shared_trusting(profile: Profile, identity: &TlsIdentity) -> Arc<RunShared> {
    let tls = Tls::ca_pem(identity.cert_pem().as_bytes(), "the test certificate").expect("tls");
    shared_with(profile, tls)
}

fn describe(results: &[CaseResult]) -> String {
    results
        .iter()
        .map(|r| format!("{} {} [{}]: {}", r.outcome, r.id, r.transport, r.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `suite` over its WebSocket binding only, against the embedded reference
/// serving TLS: every case passes.
fn passes_over_wss(suite: &'static agentconform::case::Suite) -> Result<(), Failed> {
    let out = rt().block_on(async {
        let identity = TlsIdentity::generate().map_err(|e| e.to_string())?;
        let opts = embedded::Options {
            tls: Some(identity.clone()),
            ..test_options(&[])
        };
        let server = suites::start(suite.id, "127.0.0.1:0", &opts).await?;
        let ws: Vec<(Transport, String)> = server
            .endpoints
            .0
            .iter()
            .filter(|(t, _)| *t == Transport::Ws)
            .cloned()
            .collect();
        if ws.len() != 1 || !ws[0].1.starts_with("wss://127.0.0.1:") {
            server.stop().await;
            return Err(format!("the TLS server's WebSocket endpoint: {ws:?}"));
        }
        let out = runner::run(
            shared_trusting(test_profile(), &identity),
            &[(suite, Endpoints(ws))],
            &Selection::default(),
        )
        .await;
        server.stop().await;
        out
    })?;
    if out.results.is_empty() {
        return Err("no case ran".into());
    }
    // A case bound to the HTTP binding skips, and says so; every other case passes.
    let http_only = |r: &CaseResult| {
        suite.cases.iter().any(|c| {
            c.id == r.id
                && matches!(c.bindings, agentconform::case::Bindings::Only(t) if t != Transport::Ws)
        })
    };
    let bad: Vec<CaseResult> = out
        .results
        .iter()
        .filter(|r| {
            r.transport != Transport::Ws
                || !(r.outcome == Outcome::Pass || (r.outcome == Outcome::Skip && http_only(r)))
        })
        .cloned()
        .collect();
    if !out.results.iter().any(|r| r.outcome == Outcome::Pass) {
        return Err("no case passed".into());
    }
    if !bad.is_empty() {
        return Err(format!("over wss://:\n{}", describe(&bad)).into());
    }
    Ok(())
}

/// `spawn_tls` serves while a client sits in its handshake, and `stop` closes the port.
fn tls_server_stops_and_is_not_held_by_a_silent_client() -> Result<(), Failed> {
    rt().block_on(async {
        let identity = TlsIdentity::generate().map_err(|e| e.to_string())?;
        let router = reference_impl::agora_exchange::server::router(Arc::new(
            reference_impl::agora_exchange::server::Exchange::with_config(Default::default()),
        ));
        let running = reference_impl::serve::spawn_tls("127.0.0.1:0", router, &identity)
            .await
            .map_err(|e| e.to_string())?;
        let addr = running.addr;
        // A client that connects and never says a word.
        let _silent = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let tls = Tls::ca_pem(identity.cert_pem().as_bytes(), "the test certificate")?;
        let client = tls.http_client()?;
        let reply = tokio::time::timeout(
            Duration::from_secs(20),
            client
                .get(format!("https://localhost:{}/wellknown", addr.port()))
                .send(),
        )
        .await
        .map_err(|_| "no reply within 20 s while a client sat in its handshake".to_string())?
        .map_err(|e| agentconform::drive::http::error_chain(&e))?;
        if reply.status().as_u16() != 200 {
            return Err(format!("GET /wellknown over TLS: HTTP {}", reply.status()));
        }
        drop(client);
        running.stop().await;
        match tokio::net::TcpStream::connect(addr).await {
            Err(_) => Ok(()),
            Ok(_) => Err(format!("{addr} still accepts connections after stop")),
        }
    })?;
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test(
            "cli::agora_exchange_over_https_with_ca_file",
            agora_exchange_over_https_with_ca_file,
        ),
        Trial::test(
            "cli::self_signed_target_needs_trust",
            self_signed_target_needs_trust,
        ),
        Trial::test(
            "cli::insecure_accepts_self_signed",
            insecure_accepts_self_signed,
        ),
        Trial::test("cli::fuzz_and_replay_over_tls", fuzz_and_replay_over_tls),
        Trial::test(
            "cli::deviations_over_tls_fail_with_reproducers",
            deviations_over_tls_fail_with_reproducers,
        ),
        Trial::test("cli::run_tls_embedded", run_tls_embedded),
        Trial::test("cli::flags_are_checked", flags_are_checked),
        Trial::test("wss::agora_v1", || {
            passes_over_wss(&suites::agora_v1::SUITE)
        }),
        Trial::test("wss::agora_spaces", || {
            passes_over_wss(&suites::agora_spaces::SUITE)
        }),
        Trial::test(
            "serve::tls_server_stops_and_is_not_held_by_a_silent_client",
            tls_server_stops_and_is_not_held_by_a_silent_client,
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}
