//! Live fuzz campaigns as a user runs them, against reference faults modelled on
//! real servers: the campaign runs its whole duration however much the target
//! deviates, files one crash file per signature, shrinks a crash to its smallest
//! input, leaves out what a baseline knows, goes on with `--resume`, and ends with
//! the target's death (and the last inputs sent) when the target stops answering.
//!
//! Each campaign is bounded by a short duration; nothing here waits on luck: the
//! dying target stops after a fixed number of requests, not after a time.

use super::{campaign_in, out_dir, profile, reference, reference_on, rt};
use agentconform::fuzzing::corpus::Known;
use agentconform::fuzzing::engine::{self, Ended, Summary};
use agentconform::profile::Profile;
use libtest_mimic::{Failed, Trial};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long each campaign fuzzes.
const DURATION: Duration = Duration::from_secs(3);

/// A campaign of DURATION against `to`, its crash files in `out`.
async fn campaign_at(
    suite: &str,
    to: (String, agentconform::drive::Transport),
    out: &Path,
    known: Known,
    profile: Profile,
) -> Summary {
    let bounds = engine::Bounds {
        cases: None,
        duration: Some(DURATION),
        max_findings: 100,
        first: 0,
    };
    let server = agentconform::case::Role::Server;
    campaign_in(suite, server, to, profile, bounds, out, known).await
}

/// A campaign of DURATION against the embedded reference of `suite` with `fault`.
fn against_fault(suite: &str, fault: &str, out: &Path, known: Known) -> Summary {
    rt().block_on(async {
        let (server, to) = reference(suite, &[fault]).await;
        let s = campaign_at(suite, to, out, known, profile()).await;
        server.stop().await;
        s
    })
}

fn read(path: &Path) -> Result<Value, Failed> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// The campaign ran its whole duration, and its corpus holds exactly one crash
/// file (.json and .bin) per signature, each the input as sent (JSON or the fixed
/// request's line), never a debug form; findings.json lists each signature once.
fn whole_duration_one_file_per_signature(s: &Summary, out: &Path) -> Result<(), Failed> {
    if s.ended != Ended::Duration {
        return Err(format!(
            "the campaign ended before its duration ({:?}, {} cases in {:?}); first finding {:?}",
            s.ended, s.cases, s.elapsed, s.first_finding
        )
        .into());
    }
    if s.findings == 0 {
        return Err("the fault gave no signature".into());
    }
    let files: Vec<PathBuf> = std::fs::read_dir(out.join("crashes"))
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    if files.len() as u64 != 2 * s.findings {
        return Err(format!("{} files for {} signatures", files.len(), s.findings).into());
    }
    let listed = read(&out.join("findings.json"))?;
    let sigs = listed["signatures"]
        .as_array()
        .ok_or("no signatures list")?;
    let mut ids: Vec<&str> = sigs
        .iter()
        .filter_map(|x| x["signature"].as_str())
        .collect();
    ids.sort();
    ids.dedup();
    if ids.len() as u64 != s.findings || sigs.len() as u64 != s.findings {
        return Err(format!("findings.json: {listed}").into());
    }
    let total: u64 = sigs.iter().filter_map(|x| x["count"].as_u64()).sum();
    if total != s.finding_cases {
        return Err(format!("counts add up to {total}, not {}", s.finding_cases).into());
    }
    for f in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let rec = read(f)?;
        let detail = rec["detail"].as_str().unwrap_or_default();
        if let Some(form) = super::common::debug_form(detail) {
            return Err(format!(
                "{}: the detail shows a debug form ({form}): {detail}",
                f.display()
            )
            .into());
        }
        let input = rec["smallest"]["input"]
            .as_str()
            .ok_or("no smallest input")?;
        let request_line = input.starts_with("GET ") || input.starts_with("POST ");
        // A frame that is not JSON is sent as it stands: the .bin beside it holds
        // the same bytes.
        let bin = std::fs::read(f.with_extension("bin")).map_err(|e| e.to_string())?;
        let frame = rec["request"]["method"] == "WS" && bin == input.as_bytes();
        if serde_json::from_str::<Value>(input).is_err() && !request_line && !frame {
            return Err(format!("{}: input {input:?} is not the bytes sent", f.display()).into());
        }
    }
    Ok(())
}

/// The 500 with an HTML page: one signature per finding `run` gives it (a missing
/// body, a JSON array), each shrunk to the smallest input that still draws it, and
/// replayed alone.
fn crash_500_html() -> Result<(), Failed> {
    let out = out_dir("crash-500");
    let s = against_fault("agora-exchange", "crash-500-html", &out, Known::default());
    whole_duration_one_file_per_signature(&s, &out)?;
    // One file per finding `run` gives the fault, under its key.
    let mut filed = ids(&s);
    filed.sort();
    if filed
        != [
            "agora-exchange/malformed-json:not-object",
            "agora-exchange/missing-body",
        ]
    {
        return Err(format!("the 500s are not run's two findings: {filed:?}").into());
    }
    let by_id = |id: &str| s.signatures.iter().find(|e| e.id == id);
    let object = by_id("agora-exchange/missing-body")
        .ok_or_else(|| format!("no 500 for an object: {:?}", ids(&s)))?;
    if object.smallest.bytes != b"{}" {
        return Err(format!(
            "the object without body shrank to {:?}, not {{}}",
            String::from_utf8_lossy(&object.smallest.bytes)
        )
        .into());
    }
    let other = by_id("agora-exchange/malformed-json:not-object")
        .ok_or_else(|| format!("no 500 for a JSON array: {:?}", ids(&s)))?;
    if other.smallest.bytes.len() > 4 {
        return Err(format!(
            "the JSON that is not an object shrank only to {:?}",
            String::from_utf8_lossy(&other.smallest.bytes)
        )
        .into());
    }
    let said = object.reply.as_ref().map(|r| r.body.as_str()).unwrap_or("");
    if !said.contains("Internal Server Error") {
        return Err(format!("the crash file lost the target's words: {said:?}").into());
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

/// A text frame of an internal error's words where agora-spaces answers JSON: one
/// signature, the rule frame:not-json that `run` gives it, carrying the target's
/// words and shrunk on a fresh connection to its smallest
/// input, and the campaign runs its duration.
fn crash_text_frame() -> Result<(), Failed> {
    let out = out_dir("crash-text-frame");
    let s = against_fault("agora-spaces", "crash-text-frame", &out, Known::default());
    whole_duration_one_file_per_signature(&s, &out)?;
    // One file, the finding `run` gives the fault, whichever frame showed it.
    let crashes: Vec<_> = s.signatures.iter().collect();
    if ids(&s) != ["agora-spaces/frame:not-json"] {
        return Err(format!("the text frames are not run's one finding: {:?}", ids(&s)).into());
    }
    for e in &crashes {
        let said = e.reply.as_ref().map(|r| r.body.as_str()).unwrap_or("");
        if !said.contains("Internal Server Error") {
            return Err(
                format!("{}: the crash file lost the target's words: {said:?}", e.id).into(),
            );
        }
        if serde_json::from_slice::<Value>(&e.smallest.bytes).is_ok_and(|v| v.is_object()) {
            return Err(format!("{}: a JSON object drew the crash: {:?}", e.id, e.smallest).into());
        }
        // Sent alone on a fresh connection, the frame shrinks to a character or two
        // (`}`, `""`).
        if e.smallest.bytes.len() > 2 || !e.shrunk.as_ref().is_some_and(|s| s.alone) {
            return Err(format!(
                "{}: shrunk only to {:?} ({:?})",
                e.id,
                String::from_utf8_lossy(&e.smallest.bytes),
                e.shrunk
            )
            .into());
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

/// A signed protocol over WebSocket: agora-v1 answering a frame that is not JSON
/// with ERROR 500 is one signature, the case `run` gives it (reject-malformed-json),
/// however the fuzzer garbled the frame; sent alone on a connection of its own, it
/// shrinks to a character or two.
fn crash_signed_frame() -> Result<(), Failed> {
    let out = out_dir("crash-signed-frame");
    let s = rt().block_on(async {
        let ws = agentconform::drive::Transport::Ws;
        let (server, to) = reference_on("agora-v1", &["malformed-code-500"], ws).await;
        let s = campaign_at("agora-v1", to, &out, Known::default(), profile()).await;
        server.stop().await;
        s
    });
    whole_duration_one_file_per_signature(&s, &out)?;
    let want = "agora-v1/reject-malformed-json";
    if ids(&s) != [want] {
        return Err(format!("signatures {:?}, not only {want:?}", ids(&s)).into());
    }
    let e = &s.signatures[0];
    if e.smallest.bytes.len() > 2 || !e.shrunk.as_ref().is_some_and(|s| s.alone) {
        return Err(format!(
            "shrunk only to {:?} ({:?})",
            String::from_utf8_lossy(&e.smallest.bytes),
            e.shrunk
        )
        .into());
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

fn ids(s: &Summary) -> Vec<String> {
    s.signatures.iter().map(|e| e.id.clone()).collect()
}

/// A second campaign with the first one's findings.json as its baseline files
/// nothing new.
fn baseline_leaves_out_what_it_knows() -> Result<(), Failed> {
    let first = out_dir("baseline-1");
    let s = against_fault("agora-exchange", "crash-500-html", &first, Known::default());
    if s.findings == 0 {
        return Err("the first campaign found nothing".into());
    }
    let known = Known::load(&first.join("findings.json")).map_err(|e| e.to_string())?;
    let second = out_dir("baseline-2");
    let again = against_fault("agora-exchange", "crash-500-html", &second, known);
    if again.findings != 0 || again.known == 0 {
        return Err(format!(
            "with the baseline: {} signatures ({:?}), {} cases left out",
            again.findings,
            ids(&again),
            again.known
        )
        .into());
    }
    let _ = std::fs::remove_dir_all(&first);
    let _ = std::fs::remove_dir_all(&second);
    Ok(())
}

/// A deviating /wellknown is one finding, on its own request, and the campaign
/// goes on.
fn wellknown_deviates() -> Result<(), Failed> {
    let out = out_dir("wellknown");
    let s = against_fault(
        "agora-exchange",
        "wellknown-bad-hash",
        &out,
        Known::default(),
    );
    whole_duration_one_file_per_signature(&s, &out)?;
    let wk: Vec<_> = s
        .signatures
        .iter()
        .filter(|e| {
            e.request
                .as_ref()
                .is_some_and(|r| r.endpoint == "GET /wellknown")
        })
        .collect();
    if wk.len() != 1 || !wk[0].fixed {
        return Err(format!("the /wellknown deviation: {:?}", ids(&s)).into());
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

/// A discovery listing in another shape is one finding, the rule `run` gives it,
/// filed against a discovery request (the fixture's or a fuzzed query), never
/// against a job that a case sent after it.
fn discovery_breaks_the_schema() -> Result<(), Failed> {
    let out = out_dir("discovery");
    let s = against_fault("chorus", "discover-skills-list", &out, Known::default());
    whole_duration_one_file_per_signature(&s, &out)?;
    let listed: Vec<_> = s
        .signatures
        .iter()
        .filter(|e| e.id.contains("discover"))
        .collect();
    match listed.as_slice() {
        [e] if e.id == "chorus/discover-entry:skills-list" => {
            let endpoint = e.request.as_ref().map_or("", |r| r.endpoint.as_str());
            if endpoint != "GET /discover" {
                return Err(format!("{} is filed against {endpoint:?}", e.id).into());
            }
        }
        _ => return Err(format!("the discovery deviation: {:?}", ids(&s)).into()),
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

/// A target that answers `k` requests and then stops listening: the campaign ends
/// with its death, after a case, with the last inputs it sent.
fn death_ends_the_campaign() -> Result<(), Failed> {
    let out = out_dir("death");
    let s = rt().block_on(async {
        let url = dying_server(400).await;
        let mut profile = profile();
        profile.timing.case_timeout_ms = 1000;
        let http = agentconform::drive::Transport::Http;
        campaign_at(
            "agora-exchange",
            (url, http),
            &out,
            Known::default(),
            profile,
        )
        .await
    });
    if s.ended != Ended::Death {
        return Err(format!("the campaign did not see the death: {:?}", ids(&s)).into());
    }
    let death = s
        .signatures
        .iter()
        .find(|e| e.id == "agora-exchange/crash:death")
        .ok_or_else(|| format!("no death signature: {:?}", ids(&s)))?;
    if !death.first.detail.contains("after case") || death.last_inputs.is_empty() {
        return Err(format!("the death says too little: {death:?}").into());
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

/// An agora-exchange server that answers `k` requests (one per connection) and
/// then stops listening; its URL.
async fn dying_server(k: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    let doc = reference_impl::agora_exchange::document::ECHO_DOCUMENT;
    let hash = reference_impl::agora_exchange::document::sha1_hex(doc.as_bytes());
    let wellknown = serde_json::json!({ hash: [doc] }).to_string();
    tokio::spawn(async move {
        for _ in 0..k {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let wellknown = wellknown.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Read the head and as much body as Content-Length says.
                loop {
                    let Ok(n) = sock.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len || buf.len() > 1 << 20 {
                            break;
                        }
                    }
                }
                let body = if buf.starts_with(b"GET /wellknown") {
                    wellknown
                } else {
                    r#"{"status":"success","body":{"text":"hi"}}"#.to_string()
                };
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
        // The listener is dropped here: every later connection is refused.
    });
    url
}

/// `fuzz --resume DIR` goes on with the campaign in DIR: its seed, from the case
/// after its last, the signatures it filed kept in findings.json and not filed again.
fn resume_goes_on() -> Result<(), Failed> {
    let dir = out_dir("resume");
    let d = dir.to_string_lossy().into_owned();
    let bin = env!("CARGO_BIN_EXE_agentconform");
    let fuzz = |extra: &[&str]| -> Result<(i32, String), Failed> {
        let mut args = vec![
            "fuzz",
            "--suite",
            "agora-exchange",
            "--fault",
            "crash-500-html",
        ];
        args.extend_from_slice(extra);
        let out = std::process::Command::new(bin)
            .args(&args)
            .output()
            .map_err(|e| e.to_string())?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok((out.status.code().unwrap_or(-1), text))
    };
    let (code, text) = fuzz(&["--cases", "1500", "--seed", "9", "--out", &d])?;
    let first = read(&dir.join("findings.json"))?;
    let filed = first["signatures"].as_array().map_or(0, Vec::len);
    if code != 1 || filed == 0 {
        return Err(format!("the first campaign: exit {code}: {text}").into());
    }
    let (code, text) = fuzz(&["--cases", "1500", "--resume", &d])?;
    let second = read(&dir.join("findings.json"))?;
    if code != 0 || !text.contains("seed 9") || !text.contains("left out") {
        return Err(format!("the resumed campaign: exit {code}: {text}").into());
    }
    if second["cases"] != 3000 || second["signatures"].as_array().map_or(0, Vec::len) != filed {
        return Err(format!("findings.json after the resume: {second}").into());
    }
    let (code, text) = fuzz(&["--cases", "10", "--resume", "/nonexistent-agentconform"])?;
    if code != 2 || !text.contains("cannot resume from") {
        return Err(format!("a folder without a campaign: exit {code}: {text}").into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("campaign::crash_500_html", crash_500_html),
        Trial::test("campaign::crash_text_frame", crash_text_frame),
        Trial::test("campaign::crash_signed_frame", crash_signed_frame),
        Trial::test(
            "campaign::baseline_leaves_out_what_it_knows",
            baseline_leaves_out_what_it_knows,
        ),
        Trial::test("campaign::wellknown_deviates", wellknown_deviates),
        Trial::test(
            "campaign::discovery_breaks_the_schema",
            discovery_breaks_the_schema,
        ),
        Trial::test("campaign::death_ends_the_campaign", death_ends_the_campaign),
        Trial::test("campaign::resume_goes_on", resume_goes_on),
    ]
}
