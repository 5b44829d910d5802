//! `agentconform serve`: serve a reference agent and print its URL.

use super::common::{runtime, tls_identity, unknown_suite};
use super::{io, CliError, Usage};
use crate::embedded;
use crate::suites;
use reference_impl::serve::TlsIdentity;
use std::io::Write;
use std::path::PathBuf;

// The flags of `serve` (`Command::Serve`).
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    #[arg(long)]
    suite: String,
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// Switch on a named deviation (repeatable); `--fault list` lists them.
    #[arg(long = "fault")]
    faults: Vec<String>,
    /// Offer ttl of the negotiated fixture, in ms (agora-v1).
    #[arg(long = "offer-ttl-ms")]
    offer_ttl_ms: Option<u64>,
    /// Replay window: how old a message may be, in seconds (agora-v1).
    #[arg(long = "replay-window-s")]
    replay_window_s: Option<u32>,
    /// Lifetime of a conversation, in seconds (agora-exchange).
    #[arg(long = "conversation-ttl-s")]
    conversation_ttl_s: Option<u64>,
    /// Expire a conversation only once the whole second of its conversationExpires
    /// has passed, not from its first instant (agora-exchange; both readings are
    /// allowed).
    #[arg(long = "expiry-whole-second")]
    expiry_whole_second: bool,
    /// Take protocol documents in protocolSources only by reference, a URL the
    /// server fetches, never as text (agora-exchange; both forms are allowed).
    #[arg(long = "sources-by-reference")]
    sources_by_reference: bool,
    /// Answer GET /wellknown 404, as a server does that leaves the optional
    /// endpoint out (agora-exchange).
    #[arg(long = "no-wellknown")]
    no_wellknown: bool,
    /// The protocol the server supports: echo (the default) or sum, a protocol of
    /// its own whose body is no {text} (agora-exchange).
    #[arg(long, value_parser = ["echo", "sum"])]
    protocol: Option<String>,
    /// How the fixture agent delivers job results: sync or callback (chorus).
    #[arg(long = "result-delivery", value_parser = ["sync", "callback"])]
    result_delivery: Option<String>,
    /// Serve the ledger on a URL of its own, printed on the second line (chorus).
    #[arg(long = "separate-ledger")]
    separate_ledger: bool,
    /// The skill the fixture agent registers (chorus; default echo_text).
    #[arg(long = "fixture-skill")]
    fixture_skill: Option<String>,
    /// Publish the registry's routes in an OpenAPI document at GET /openapi.json
    /// and take outcomes only at the route it lists, POST
    /// /reputation/{agent_id}/{outcome} (chorus).
    #[arg(long)]
    openapi: bool,
    /// Credits a fresh owner holds in the ledger; 0: nothing until POST /accounts
    /// funds it (chorus; default 100).
    #[arg(long = "initial-credits", value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    initial_credits: Option<u32>,
    /// Require this connection token (agora-spaces).
    #[arg(long)]
    token: Option<String>,
    /// Seconds of silence before a client is disconnected (agora-spaces).
    #[arg(long = "heartbeat-timeout-s")]
    heartbeat_timeout_s: Option<u64>,
    /// Bytes queued for one connection and not yet sent before it is cut off as a
    /// slow consumer, closed with code 1008 (agora-spaces; default 8388608).
    #[arg(long = "max-pending-bytes", value_parser = clap::value_parser!(u64).range(1024..=1_073_741_824))]
    max_pending_bytes: Option<u64>,
    /// Answer a frame without an id (one that is not JSON) with an error whose
    /// request_id is null, not absent (agora-spaces; both readings are allowed).
    #[arg(long = "null-request-id")]
    null_request_id: bool,
    /// Answer a join of a user space that does not exist with SPACE_NOT_FOUND
    /// instead of creating it (agora-spaces; both are allowed).
    #[arg(long = "no-space-creation")]
    no_space_creation: bool,
    /// The public space the hub serves (agora-spaces; default general).
    #[arg(long = "public-space")]
    public_space: Option<String>,
    /// Serve TLS (https://, wss://) with a self-signed certificate made at start-up
    /// for 127.0.0.1, ::1, localhost and the --listen host.
    #[arg(long)]
    tls: bool,
    /// Write that certificate (PEM) here, for a client's --ca-file.
    #[arg(long = "tls-cert-out", value_name = "FILE", requires = "tls")]
    tls_cert_out: Option<PathBuf>,
}

/// Lists the suite's faults (`--fault list`), or serves its reference agent until
/// Ctrl-C.
pub fn run(a: ServeArgs, out: &mut impl Write) -> Result<i32, CliError> {
    if a.faults.iter().any(|f| f == "list") {
        return list_faults(&a.suite, out);
    }
    let identity = if a.tls {
        Some(tls_identity(&a.listen, a.tls_cert_out.as_deref())?)
    } else {
        None
    };
    let rt = runtime()?;
    rt.block_on(serve(&a, options(&a, identity), out))
}

/// `--fault list`: each fault of the suite, its family and description, and the duty
/// it puts on a client with the client cases that serve it.
fn list_faults(suite: &str, out: &mut impl Write) -> Result<i32, CliError> {
    for f in suites::faults(suite).ok_or_else(|| unknown_suite(suite))? {
        writeln!(out, "{:<28} {:<20} {}", f.name, f.family, f.description).map_err(io)?;
        let cases = f.duty.cases();
        let served = if cases.is_empty() {
            String::new()
        } else {
            format!(" (served by {})", cases.join(", "))
        };
        writeln!(out, "{:<49} client duty: {}{served}", "", f.duty.describe()).map_err(io)?;
    }
    Ok(0)
}

/// The reference agent's options from the flags.
fn options(a: &ServeArgs, identity: Option<TlsIdentity>) -> embedded::Options {
    embedded::Options {
        tls: identity,
        faults: a.faults.clone(),
        offer_ttl_ms: a.offer_ttl_ms,
        replay_window_s: a.replay_window_s,
        conversation_ttl_s: a.conversation_ttl_s,
        expiry_whole_second: a.expiry_whole_second,
        sources_by_reference: a.sources_by_reference,
        no_wellknown: a.no_wellknown,
        exchange_sum_protocol: a.protocol.as_deref() == Some("sum"),
        chorus_delivery: a.result_delivery.as_deref().map(|d| {
            if d == "callback" {
                reference_impl::chorus::server::Delivery::Callback
            } else {
                reference_impl::chorus::server::Delivery::Sync
            }
        }),
        separate_ledger: a.separate_ledger,
        chorus_fixture_skill: a.fixture_skill.clone(),
        chorus_openapi: a.openapi,
        chorus_initial_credits: a.initial_credits.map(f64::from),
        token: a.token.clone(),
        heartbeat_timeout_s: a.heartbeat_timeout_s,
        max_pending_bytes: a.max_pending_bytes.and_then(|b| usize::try_from(b).ok()),
        null_request_id: a.null_request_id,
        no_space_creation: a.no_space_creation,
        public_space: a.public_space.clone(),
    }
}

/// Starts the agent, prints its URLs (the ledger's last) and serves until Ctrl-C.
async fn serve(
    a: &ServeArgs,
    opts: embedded::Options,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let server = suites::start(&a.suite, &a.listen, &opts)
        .await
        .map_err(Usage)?;
    for (_, url) in &server.endpoints.0 {
        let _ = writeln!(out, "{url}");
    }
    if let Some(l) = &server.ledger_url {
        let _ = writeln!(out, "{l}");
    }
    // A reader that has gone away must not stop the server.
    let _ = out.flush();
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| CliError::Harness(format!("cannot wait for Ctrl-C: {e}")))?;
    Ok(0)
}
