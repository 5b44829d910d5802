//! The harness as the counterparty of a client under test (`run --role client`).
//! A client case serves its scripted side of the exchange on loopback, runs the
//! implementer's client driver against it, and judges what the client sent and
//! how it reacted.
//!
//! The driver is a shell command (`[client] command`, `--client`) with `{url}`,
//! `{scenario}` and `{case}` replaced; the same values, and `AGENTCONFORM_INPUT` (a
//! JSON file with the scenario's inputs), are in its environment. It prints what
//! its client received as JSON lines and exits non-zero when its client reports an
//! error. It has a deadline, its output is capped, and its process group is ended
//! when the case ends.

use crate::case::{skip, Step};
use crate::script::Ctx;
use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// One message the client sent, and the harness's answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The path the client POSTed to (`/` for the base URL).
    pub path: String,
    pub content_type: Option<String>,
    pub received: Vec<u8>,
    pub answered: Vec<u8>,
    pub status: u16,
}

/// The scripted side: answers each message the client sends to a path (status,
/// body).
pub type Answer = Box<dyn FnMut(&str, &[u8]) -> (u16, Vec<u8>) + Send>;

/// How the driver ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Ended by a signal it did not get from the harness.
    Signal,
    /// Still running at the deadline: the harness ended it.
    Deadline,
}

/// What one driver run did.
#[derive(Debug, Clone)]
pub struct DriverRun {
    pub exchanges: Vec<Exchange>,
    pub exit: Exit,
    /// Standard output (capped), and its lines that are JSON.
    pub stdout: String,
    pub lines: Vec<Value>,
    pub stderr: String,
}

impl DriverRun {
    /// Whether the driver said its client failed (a non-zero exit).
    pub fn failed(&self) -> bool {
        self.exit != Exit::Code(0)
    }

    /// The messages the client sent, in order.
    pub fn sent(&self) -> impl Iterator<Item = &[u8]> {
        self.exchanges.iter().map(|x| x.received.as_slice())
    }

    /// How it ended, in words.
    pub fn ended(&self) -> String {
        match &self.exit {
            Exit::Code(c) => format!("the driver exited with {c}"),
            Exit::Signal => "the driver was ended by a signal".into(),
            Exit::Deadline => "the driver was still running at the deadline and was ended".into(),
        }
    }
}

#[derive(Clone)]
struct Side {
    state: Arc<Mutex<(Answer, Vec<Exchange>)>>,
    max_bytes: usize,
}

async fn on_message(
    State(side): State<Side>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: Body,
) -> axum::response::Response {
    let Ok(bytes) = to_bytes(body, side.max_bytes).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let path = uri.path().to_string();
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let mut guard = side.state.lock().unwrap_or_else(|p| p.into_inner());
    let (answer, log) = &mut *guard;
    let (status, out) = answer(&path, &bytes);
    log.push(Exchange {
        path,
        content_type,
        received: bytes.to_vec(),
        answered: out.clone(),
        status,
    });
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    (code, [(header::CONTENT_TYPE, "application/json")], out).into_response()
}

/// Reads a pipe to its end, keeping at most `cap` bytes (the rest is read and
/// dropped, so that the child never blocks on a full pipe).
async fn capped(mut r: impl tokio::io::AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, cut),
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                cut |= n > room;
            }
        }
    }
}

/// Ends the driver's process group (the driver and whatever it started; it was
/// started with `process_group(0)`, so the group id is its pid), with the system's
/// `kill`, as the project allows no unsafe code.
async fn end_group(pid: Option<u32>) {
    if let Some(pid) = pid {
        let _ = tokio::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .await;
    }
}

/// Serves `answer` on loopback, runs the client driver for `scenario` with `input`,
/// and returns what happened; the exchanges and the driver's output go to the
/// transcript. Skips (with the reason) when no driver is configured.
pub async fn drive(
    ctx: &mut Ctx,
    scenario: &str,
    input: &Value,
    answer: Answer,
) -> Step<DriverRun> {
    let client = ctx.profile().client.clone();
    let Some(template) = client.command.clone() else {
        return skip("no client driver: pass --client COMMAND or set [client] command");
    };
    let side = Side {
        state: Arc::new(Mutex::new((answer, Vec::new()))),
        max_bytes: ctx.profile().timing.max_response_bytes,
    };
    let router = Router::new()
        .route("/", post(on_message))
        .route("/{*rest}", post(on_message))
        .with_state(side.clone());
    let running = reference_impl::serve::spawn("127.0.0.1:0", router)
        .await
        .map_err(|e| crate::case::Stop::Skip(format!("cannot start the counterparty: {e}")))?;
    let url = format!("http://{}/", running.addr);
    let case = ctx.case_id.unwrap_or("client");
    let dir = std::env::temp_dir().join(format!(
        "agentconform-client-{}-{}",
        std::process::id(),
        reference_impl::wire::new_id()
    ));
    let input_path = dir.join("input.json");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&input_path, input.to_string()))
        .map_err(|e| crate::case::Stop::Skip(format!("cannot write the scenario input: {e}")))?;
    let suite = ctx.suite();
    let command = template
        .replace("{suite}", suite)
        .replace("{url}", &url)
        .replace("{scenario}", scenario)
        .replace("{case}", case);
    ctx.note(format!("client driver: {command}"));
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&command)
        .env("AGENTCONFORM_URL", &url)
        .env("AGENTCONFORM_SCENARIO", scenario)
        .env("AGENTCONFORM_CASE", case)
        .env("AGENTCONFORM_SUITE", suite)
        .env("AGENTCONFORM_INPUT", &input_path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| {
        crate::case::Stop::Skip(format!("cannot start the client driver {command:?}: {e}"))
    })?;
    let pid = child.id();
    let cap = client.max_output_bytes;
    let out = child.stdout.take().map(|o| tokio::spawn(capped(o, cap)));
    let err = child.stderr.take().map(|e| tokio::spawn(capped(e, cap)));
    let deadline = Duration::from_millis(client.timeout_ms);
    let exit = match tokio::time::timeout(deadline, child.wait()).await {
        Ok(Ok(status)) => status.code().map_or(Exit::Signal, Exit::Code),
        Ok(Err(_)) => Exit::Signal,
        Err(_) => Exit::Deadline,
    };
    end_group(pid).await;
    let _ = child.wait().await;
    let read = |h: Option<tokio::task::JoinHandle<(Vec<u8>, bool)>>| async move {
        match h {
            Some(h) => match tokio::time::timeout(Duration::from_secs(2), h).await {
                Ok(Ok((b, cut))) => (String::from_utf8_lossy(&b).into_owned(), cut),
                _ => (String::new(), false),
            },
            None => (String::new(), false),
        }
    };
    let (stdout, out_cut) = read(out).await;
    let (stderr, err_cut) = read(err).await;
    running.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    let exchanges = std::mem::take(&mut side.state.lock().unwrap_or_else(|p| p.into_inner()).1);
    for x in &exchanges {
        let said = format!("POST {}\n{}", x.path, String::from_utf8_lossy(&x.received));
        ctx.log_frame("recv", "client", &said);
        ctx.log_frame(
            "send",
            "harness",
            &format!(
                "HTTP {}: {}",
                x.status,
                String::from_utf8_lossy(&x.answered)
            ),
        );
    }
    let run = DriverRun {
        lines: stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l.trim()).ok())
            .collect(),
        exchanges,
        exit,
        stdout,
        stderr,
    };
    let cut = match (out_cut, err_cut) {
        (false, false) => String::new(),
        (true, false) => format!(" (its standard output was cut at {cap} bytes)"),
        (false, true) => format!(" (its standard error was cut at {cap} bytes)"),
        (true, true) => format!(" (its output was cut at {cap} bytes)"),
    };
    ctx.note(format!(
        "{}{cut}; stdout: {}{}",
        run.ended(),
        crate::finding::clipped(run.stdout.trim(), 600),
        if run.stderr.trim().is_empty() {
            String::new()
        } else {
            format!(
                "; stderr: {}",
                crate::finding::clipped(run.stderr.trim(), 600)
            )
        }
    ));
    Ok(run)
}
