//! The `agentconform` command line. Exit codes: 0 no case failed (or the command
//! succeeded), 1 a case failed (or `verify` found the signature invalid), 2 usage or
//! harness error.

use crate::case::Outcome;
use crate::drive::Transport;
use crate::embedded;
use crate::profile::Profile;
use crate::report::Report;
use crate::runner::{self, Endpoints, Selection};
use crate::schemas::Schemas;
use crate::script::RunShared;
use crate::suites;
use clap::{Parser, Subcommand};
use reference_impl::wire::jcs;
use reference_impl::wire::keys::{self, Keypair};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "agentconform",
    version,
    about = "Conformance harness for JSON agent-to-agent protocols"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Whom `run`, `fuzz` and `replay` trust over `https://` and `wss://`: the platform's
/// roots unless one of these is given.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// Trust only the certificates of this PEM file (https:// and wss:// targets).
    #[arg(long = "ca-file", value_name = "FILE", conflicts_with = "insecure")]
    ca_file: Option<PathBuf>,
    /// Accept any certificate (self-signed, expired, for another name): testing only.
    #[arg(long)]
    insecure: bool,
}

impl TlsArgs {
    /// The run's TLS: `--insecure`, else the embedded servers' certificate when they
    /// serve TLS (`--tls`), else `--ca-file`, else the platform's roots.
    fn client_tls(
        &self,
        embedded: Option<&reference_impl::serve::TlsIdentity>,
    ) -> Result<crate::drive::Tls, CliError> {
        match embedded {
            Some(id) if !self.insecure => crate::drive::Tls::ca_pem(
                id.cert_pem().as_bytes(),
                "the embedded servers' certificate",
            ),
            _ => crate::drive::Tls::from_flags(self.ca_file.as_deref(), self.insecure),
        }
        .map_err(Usage)
    }

    /// The same choice as command-line arguments (for reproducers).
    fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(p) = &self.ca_file {
            a.extend(["--ca-file".into(), p.display().to_string()]);
        }
        if self.insecure {
            a.push("--insecure".into());
        }
        a
    }
}

/// `--tls` (no `--target`): a certificate for the embedded servers.
fn embedded_identity(tls: bool) -> Result<Option<reference_impl::serve::TlsIdentity>, CliError> {
    if tls {
        reference_impl::serve::TlsIdentity::generate()
            .map(Some)
            .map_err(Usage)
    } else {
        Ok(None)
    }
}

#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    #[arg(long)]
    suite: String,
    #[arg(long)]
    target: Option<String>,
    #[command(flatten)]
    tls_args: TlsArgs,
    /// Without --target: serve the embedded reference agent over TLS (https://,
    /// wss://) with a certificate made at start-up, and trust it.
    #[arg(long, conflicts_with_all = ["target", "ca_file"])]
    tls: bool,
    /// How long to run, e.g. 60s or 2m (default 60s unless --cases is given).
    #[arg(long)]
    duration: Option<String>,
    /// How many cases to run.
    #[arg(long)]
    cases: Option<u64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where crash files go (DIR/crashes/).
    #[arg(long, default_value = "fuzz-out")]
    out: PathBuf,
    /// Switch on a fault of the embedded agent (no --target only).
    #[arg(long = "fault")]
    faults: Vec<String>,
    #[arg(long = "timeout-ms", default_value_t = 5000)]
    timeout_ms: u64,
    /// Target profile (TOML): fixtures and the token, as for `run`.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Stop after this many findings.
    #[arg(long = "max-findings", default_value_t = 100)]
    max_findings: u64,
    /// Cases in flight at once (1 to 256); by default 8, or more for a suite whose
    /// cases wait on the target rather than on the CPU (agora-spaces, agentprotocol).
    #[arg(long)]
    workers: Option<u64>,
    /// Which side to fuzz: server (the default) or client (mutated replies served to
    /// a client driven by --client).
    #[arg(long, value_enum, default_value_t = crate::case::Role::Server)]
    role: crate::case::Role,
    /// With --role client: the client driver (see `run --client`); the reference
    /// driver without it.
    #[arg(long, conflicts_with_all = ["target", "tls", "faults"])]
    client: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum AttestCommand {
    /// Check an attestation against its report; exit 0 valid, 1 invalid (says why).
    Verify {
        #[arg(long)]
        attestation: PathBuf,
        #[arg(long)]
        report: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum BaselineCommand {
    /// Write a baseline that expects every failing finding of a report.
    Write {
        /// A report.json written by `run --report`.
        #[arg(long)]
        report: PathBuf,
        /// Where to write the baseline (TOML); standard output when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the cases with their id, level and requirement ids.
    List {
        #[arg(long)]
        suite: Option<String>,
    },
    /// Run a suite against a target (without --target: the embedded reference agent).
    Run {
        /// Suite id, or `all`.
        #[arg(long)]
        suite: String,
        /// Target URL (http://, https://, ws://, wss://).
        #[arg(long)]
        target: Option<String>,
        #[command(flatten)]
        tls_args: TlsArgs,
        /// Without --target: serve the embedded reference agents over TLS (https://,
        /// wss://) with a certificate made at start-up, and trust it.
        #[arg(long, conflicts_with_all = ["target", "ca_file"])]
        tls: bool,
        /// Target profile (TOML).
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Only cases whose id matches one of these globs.
        #[arg(long = "cases")]
        cases: Vec<String>,
        /// Leave out cases whose id matches one of these globs.
        #[arg(long)]
        exclude: Vec<String>,
        /// Write report.json and junit.xml here.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Deadline of each exchange (overrides the profile).
        #[arg(long = "timeout-ms")]
        timeout_ms: Option<u64>,
        /// Run the slow cases too.
        #[arg(long = "include-slow")]
        include_slow: bool,
        /// The harness's signing key (32-byte seed, base64url or hex); fresh by default.
        #[arg(long)]
        key: Option<PathBuf>,
        /// Expected failures (TOML or JSON): they do not fail the run; an entry that no
        /// longer fails does.
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Terminal output: text (every case), short (cases that did not pass), json
        /// (report.json).
        #[arg(long, value_enum, default_value_t = crate::report::Format::Text)]
        format: crate::report::Format,
        /// Which side to test: server (the target answers; the default) or client
        /// (the harness is the counterparty of a client driven by --client).
        #[arg(long, value_enum, default_value_t = crate::case::Role::Server)]
        role: crate::case::Role,
        /// With --role client: the client driver, a shell command with {url},
        /// {scenario}, {case} and {suite}; the reference driver without it.
        #[arg(long, requires = "role", conflicts_with_all = ["target", "tls"])]
        client: Option<String>,
    },
    /// Run the reference client of a suite as a client driver (the default driver of
    /// `run --role client`): prints what it received as JSON lines, exits 1 when its
    /// client reports an error.
    Client {
        #[arg(long)]
        suite: String,
        #[arg(long)]
        scenario: String,
        /// The counterparty's URL.
        #[arg(long)]
        url: String,
        /// The scenario's inputs (JSON); default: the file AGENTCONFORM_INPUT names.
        #[arg(long)]
        input: Option<PathBuf>,
        /// A fault of the reference client (repeatable), for testing the client cases.
        #[arg(long = "fault")]
        faults: Vec<String>,
    },
    /// Baselines of expected failures.
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// Sign a report: attestation.json binds the report, its transcripts, the tool,
    /// the inventory revision, the target and its key ids. `attest verify` checks one.
    #[command(args_conflicts_with_subcommands = true)]
    Attest {
        #[command(subcommand)]
        verify: Option<AttestCommand>,
        /// The report.json to sign.
        #[arg(long)]
        report: Option<PathBuf>,
        /// The signing key (32-byte seed, base64url or hex, as `keygen` writes it).
        #[arg(long)]
        key: Option<PathBuf>,
        /// Where to write the attestation (default: attestation.json beside the report).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Serve a reference agent and print its URL.
    Serve {
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
        /// How the fixture agent delivers job results: sync or callback (chorus).
        #[arg(long = "result-delivery", value_parser = ["sync", "callback"])]
        result_delivery: Option<String>,
        /// Serve the ledger on a URL of its own, printed on the second line (chorus).
        #[arg(long = "separate-ledger")]
        separate_ledger: bool,
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
        /// Serve TLS (https://, wss://) with a self-signed certificate made at start-up
        /// for 127.0.0.1, ::1, localhost and the --listen host.
        #[arg(long)]
        tls: bool,
        /// Write that certificate (PEM) here, for a client's --ca-file.
        #[arg(long = "tls-cert-out", value_name = "FILE", requires = "tls")]
        tls_cert_out: Option<PathBuf>,
    },
    /// Fuzz a live target (without --target: the embedded reference agent).
    Fuzz(FuzzArgs),
    /// Drive many concurrent agents (the suite's reference client) against a target
    /// (without --target: the embedded reference agent): every request must come
    /// back with its own marker; latency p50/p99 and errors by kind. Exit 1 when a
    /// request failed, was lost or came back misrouted. agora-spaces: --clients
    /// members join one space and each publishes --requests events, which must reach
    /// every other member exactly once.
    Load {
        #[arg(long)]
        suite: String,
        #[arg(long)]
        target: Option<String>,
        /// Agents at once.
        #[arg(long, default_value_t = 256)]
        clients: usize,
        /// Requests each agent makes, one after another.
        #[arg(long, default_value_t = 10)]
        requests: usize,
        /// Deadline of each request.
        #[arg(long, default_value_t = 5000)]
        timeout_ms: u64,
        /// Target profile (TOML): fixtures, as for `run`.
        #[arg(long)]
        profile: Option<PathBuf>,
        /// agora-spaces: this many more members join and never read while the others
        /// publish and read; the result says how many the hub cut off, and when.
        #[arg(long, default_value_t = 0)]
        stalled: usize,
        /// agora-spaces: the bytes of each event's text (a text above the hub's
        /// delta threshold is streamed as deltas); 0: the marker alone.
        #[arg(long = "text-bytes", default_value_t = 0)]
        text_bytes: usize,
        /// agora-spaces: only the first this many members publish (default: all);
        /// every member reads.
        #[arg(long)]
        publishers: Option<usize>,
    },
    /// Export a failing case of a report (--case) or a fuzz crash file as an offline
    /// vector: its exchanges, verdict and requirement ids. `replay` runs it without
    /// the target.
    Export {
        /// A report (its folder or report.json) with --case, or a crash file.
        source: PathBuf,
        /// The case to export, as the report names it (`suite/case` or `suite/case [transport]`).
        #[arg(long)]
        case: Option<String>,
        /// Where to write the vector (standard output without it).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Replay a crash file written by `fuzz` against a target, or an exported vector
    /// offline; exit 1 when the finding reproduces.
    Replay {
        file: PathBuf,
        #[arg(long)]
        target: Option<String>,
        #[command(flatten)]
        tls_args: TlsArgs,
        /// Target profile (TOML), as for `run`.
        #[arg(long)]
        profile: Option<PathBuf>,
    },
    /// Print the RFC 8785 canonical form of a JSON file (or stdin).
    Canon { file: Option<PathBuf> },
    /// Print a new Ed25519 key: the seed (base64url) on the first line, then its did:key.
    Keygen,
    /// Sign an envelope with a key file; prints the signed envelope.
    Sign {
        #[arg(long)]
        suite: String,
        #[arg(long)]
        key: PathBuf,
        file: Option<PathBuf>,
    },
    /// Verify an envelope's signature; exit 0 when valid, 1 otherwise.
    Verify {
        #[arg(long)]
        suite: String,
        file: Option<PathBuf>,
    },
}

/// Why a command ended without its result.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Arguments that do not make sense together or alone.
    #[error("{0}")]
    Usage(String),
    /// An input that cannot be read or is not what it must be (a file, standard
    /// input, a key, a report).
    #[error("cannot read {what}: {why}")]
    Input { what: String, why: String },
    /// An output that cannot be written.
    #[error("cannot write {what}: {why}")]
    Output { what: String, why: String },
    /// The target profile (its error names the line and column).
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    /// A fuzz campaign or a replay that cannot start.
    #[error(transparent)]
    Fuzz(#[from] crate::fuzzing::campaign::FuzzError),
    /// The run could not test the target: unreachable, nothing selected, every
    /// case skipped.
    #[error("{0}")]
    NotTested(String),
    /// The harness itself failed (the async runtime, the built-in schemas).
    #[error("{0}")]
    Harness(String),
    /// Standard output was closed under us (`agentconform list | head`): end quietly.
    #[error("standard output is closed")]
    OutputClosed,
}

/// A usage error.
#[allow(non_snake_case)]
pub fn Usage(msg: String) -> CliError {
    CliError::Usage(msg)
}

/// An input that cannot be read, and why.
fn input(what: impl std::fmt::Display, why: impl std::fmt::Display) -> CliError {
    CliError::Input {
        what: what.to_string(),
        why: why.to_string(),
    }
}

/// An output that cannot be written, and why.
fn unwritable(what: impl std::fmt::Display, why: impl std::fmt::Display) -> CliError {
    CliError::Output {
        what: what.to_string(),
        why: why.to_string(),
    }
}

/// A failed write to standard output.
fn io(e: std::io::Error) -> CliError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CliError::OutputClosed
    } else {
        unwritable("standard output", e)
    }
}

fn read_input(file: &Option<PathBuf>) -> Result<Vec<u8>, CliError> {
    const MAX: u64 = 64 * 1024 * 1024;
    match file {
        Some(p) if p.as_os_str() != "-" => {
            let meta = std::fs::metadata(p).map_err(|e| input(p.display(), e))?;
            if meta.len() > MAX {
                return Err(input(p.display(), format!("larger than {MAX} bytes")));
            }
            std::fs::read(p).map_err(|e| input(p.display(), e))
        }
        _ => {
            let mut buf = Vec::new();
            std::io::stdin()
                .take(MAX + 1)
                .read_to_end(&mut buf)
                .map_err(|e| input("standard input", e))?;
            if buf.len() as u64 > MAX {
                return Err(input("standard input", format!("larger than {MAX} bytes")));
            }
            Ok(buf)
        }
    }
}

fn input_name(file: &Option<PathBuf>) -> String {
    match file {
        Some(p) if p.as_os_str() != "-" => p.display().to_string(),
        _ => "<stdin>".into(),
    }
}

fn signing_of(suite: &str) -> Result<crate::case::Signing, CliError> {
    let s = suites::by_id(suite).ok_or_else(|| unknown_suite(suite))?;
    s.signing.ok_or_else(|| {
        let signed: Vec<&str> = suites::all()
            .iter()
            .filter(|s| s.signing.is_some())
            .map(|s| s.id)
            .collect();
        Usage(format!(
            "signing and verification support --suite {} (got {suite:?})",
            signed.join(" and ")
        ))
    })
}

fn load_key(path: &PathBuf) -> Result<Keypair, CliError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| input(format!("key {}", path.display()), e))?;
    let first = text.lines().next().unwrap_or("");
    Keypair::from_key_file_text(first).map_err(|e| {
        input(
            format!("key {}", path.display()),
            format!("{e} (expected a 32-byte seed in base64url or hex on the first line)"),
        )
    })
}

/// Runs the command; returns the exit code.
pub fn main_with(cli: Cli) -> i32 {
    let out = std::io::stdout();
    let mut out = out.lock();
    match dispatch(cli, &mut out) {
        Ok(code) => code,
        Err(CliError::OutputClosed) => 0,
        Err(e) => {
            let _ = out.flush();
            eprintln!("agentconform: error: {e}");
            2
        }
    }
}

fn dispatch(cli: Cli, out: &mut impl Write) -> Result<i32, CliError> {
    match cli.command {
        Command::List { suite } => {
            let chosen = match suite.as_deref() {
                None | Some("all") => suites::all(),
                Some(id) => vec![suites::by_id(id).ok_or_else(|| unknown_suite(id))?],
            };
            for s in chosen {
                let server = s.cases.iter().map(|c| (c, ""));
                for (c, role) in server.chain(s.client_cases.iter().map(|c| (c, " (client)"))) {
                    writeln!(
                        out,
                        "{:<48} {:<8} {}{}{role}",
                        c.id,
                        c.level.to_string(),
                        c.requirements.join(","),
                        if c.slow { " (slow)" } else { "" }
                    )
                    .map_err(io)?;
                }
                for u in s.untestable {
                    writeln!(out, "# {} untestable: {}", u.requirement, u.reason).map_err(io)?;
                }
            }
            Ok(0)
        }
        Command::Fuzz(args) => fuzz_command(args, out),
        Command::Load {
            suite,
            target,
            clients,
            requests,
            timeout_ms,
            profile,
            stalled,
            text_bytes,
            publishers,
        } => load_command(
            &suite,
            target,
            (clients, requests, timeout_ms),
            (stalled, text_bytes, publishers),
            profile,
            out,
        ),
        Command::Client {
            suite,
            scenario,
            url,
            input: input_file,
            faults,
        } => client_command(&suite, &scenario, &url, input_file, &faults, out),
        Command::Export {
            source,
            case,
            out: to,
        } => export_command(&source, case.as_deref(), to.as_deref(), out),
        Command::Replay {
            file,
            target,
            tls_args,
            profile,
        } => replay_command(&file, target, &tls_args, profile, out),
        Command::Canon { file } => {
            let bytes = read_input(&file)?;
            let c = jcs::canonicalize(&bytes).map_err(|e| input(input_name(&file), e))?;
            out.write_all(&c).map_err(io)?;
            writeln!(out).map_err(io)?;
            Ok(0)
        }
        Command::Keygen => {
            let k = Keypair::generate();
            writeln!(out, "{}\n{}", keys::b64url(&k.seed()), k.did()).map_err(io)?;
            Ok(0)
        }
        Command::Sign { suite, key, file } => {
            let signing = signing_of(&suite)?;
            let k = load_key(&key)?;
            let bytes = read_input(&file)?;
            let tree = reference_impl::wire::json::parse(&bytes)
                .map_err(|e| input(input_name(&file), e))?;
            let signed =
                (signing.sign)(tree.to_serde(), &k).map_err(|e| input(input_name(&file), e))?;
            out.write_all(&signed).map_err(io)?;
            writeln!(out).map_err(io)?;
            Ok(0)
        }
        Command::Verify { suite, file } => {
            let signing = signing_of(&suite)?;
            let bytes = read_input(&file)?;
            let valid = (signing.verify)(&bytes, out).map_err(io)?;
            Ok(if valid { 0 } else { 1 })
        }
        Command::Serve {
            suite,
            listen,
            faults,
            offer_ttl_ms,
            replay_window_s,
            conversation_ttl_s,
            expiry_whole_second,
            result_delivery,
            separate_ledger,
            token,
            heartbeat_timeout_s,
            max_pending_bytes,
            tls,
            tls_cert_out,
        } => {
            if faults.iter().any(|f| f == "list") {
                for f in suites::faults(&suite).ok_or_else(|| unknown_suite(&suite))? {
                    writeln!(out, "{:<28} {:<20} {}", f.name, f.family, f.description)
                        .map_err(io)?;
                    let cases = f.duty.cases();
                    let served = if cases.is_empty() {
                        String::new()
                    } else {
                        format!(" (served by {})", cases.join(", "))
                    };
                    writeln!(out, "{:<49} client duty: {}{served}", "", f.duty.describe())
                        .map_err(io)?;
                }
                return Ok(0);
            }
            let identity = if tls {
                // The certificate names the --listen host too, unless it is a wildcard.
                let host = listen
                    .rsplit_once(':')
                    .map_or("", |(h, _)| h)
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                let extra: Vec<&str> = match host {
                    _ if listen.contains("://") => vec![],
                    "" | "0.0.0.0" | "::" => vec![],
                    h => vec![h],
                };
                let id = reference_impl::serve::TlsIdentity::generate_for(&extra).map_err(Usage)?;
                if let Some(p) = &tls_cert_out {
                    std::fs::write(p, id.cert_pem()).map_err(|e| unwritable(p.display(), e))?;
                }
                Some(id)
            } else {
                None
            };
            let rt = runtime()?;
            rt.block_on(async {
                let opts = embedded::Options {
                    tls: identity,
                    faults,
                    offer_ttl_ms,
                    replay_window_s,
                    conversation_ttl_s,
                    expiry_whole_second,
                    chorus_delivery: result_delivery.as_deref().map(|d| {
                        if d == "callback" {
                            reference_impl::chorus::server::Delivery::Callback
                        } else {
                            reference_impl::chorus::server::Delivery::Sync
                        }
                    }),
                    separate_ledger,
                    token,
                    heartbeat_timeout_s,
                    max_pending_bytes: max_pending_bytes.and_then(|b| usize::try_from(b).ok()),
                };
                let server = suites::start(&suite, &listen, &opts).await.map_err(Usage)?;
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
            })
        }
        Command::Attest {
            verify:
                Some(AttestCommand::Verify {
                    attestation,
                    report,
                }),
            ..
        } => {
            let a: serde_json::Value = serde_json::from_slice(
                &std::fs::read(&attestation).map_err(|e| input(attestation.display(), e))?,
            )
            .map_err(|e| input(attestation.display(), format!("not JSON: {e}")))?;
            let bytes = std::fs::read(&report).map_err(|e| input(report.display(), e))?;
            match crate::report::attest::verify(&a, &bytes) {
                Ok(who) => {
                    writeln!(out, "valid: {} attested by {who}", report.display()).map_err(io)?;
                    Ok(0)
                }
                Err(why) => {
                    writeln!(out, "invalid: {why}").map_err(io)?;
                    Ok(1)
                }
            }
        }
        Command::Attest {
            verify: None,
            report,
            key,
            out: to,
        } => {
            let report = report.ok_or_else(|| Usage("attest needs --report FILE".into()))?;
            let key = key.ok_or_else(|| Usage("attest needs --key FILE".into()))?;
            let keypair = load_key(&key)?;
            let bytes = std::fs::read(&report).map_err(|e| input(report.display(), e))?;
            let a = crate::report::attest::attest(&bytes, &keypair)
                .map_err(|e| input(report.display(), e))?;
            let to = to.unwrap_or_else(|| report.with_file_name("attestation.json"));
            let text =
                serde_json::to_string_pretty(&a).map_err(|e| unwritable("the attestation", e))?;
            std::fs::write(&to, text).map_err(|e| unwritable(to.display(), e))?;
            writeln!(
                out,
                "attestation written to {} (attester {})",
                to.display(),
                keypair.did()
            )
            .map_err(io)?;
            Ok(0)
        }
        Command::Baseline(BaselineCommand::Write { report, out: to }) => {
            let text = std::fs::read_to_string(&report).map_err(|e| input(report.display(), e))?;
            let rep: crate::report::ReadReport = serde_json::from_str(&text)
                .map_err(|e| input(report.display(), format!("not a report.json: {e}")))?;
            let b = crate::report::baseline::Baseline::from_findings(&rep.findings);
            let toml = b.to_toml().map_err(Usage)?;
            match to {
                Some(p) => {
                    std::fs::write(&p, toml).map_err(|e| unwritable(p.display(), e))?;
                    writeln!(
                        out,
                        "baseline of {} expected failures written to {}",
                        b.expected.len(),
                        p.display()
                    )
                    .map_err(io)?;
                }
                None => write!(out, "{toml}").map_err(io)?,
            }
            Ok(0)
        }
        Command::Run {
            suite,
            target,
            tls_args,
            tls,
            profile,
            cases,
            exclude,
            report,
            timeout_ms,
            include_slow,
            key,
            baseline,
            format,
            role,
            client,
        } => {
            if role == crate::case::Role::Client && target.is_some() {
                return Err(Usage(
                    "--role client tests a client driven by --client; it takes no --target".into(),
                ));
            }
            if client.is_some() && role != crate::case::Role::Client {
                return Err(Usage("--client needs --role client".into()));
            }
            let baseline = match &baseline {
                Some(p) => Some((
                    crate::report::baseline::Baseline::load(p).map_err(Usage)?,
                    p.display().to_string(),
                )),
                None => None,
            };
            let chosen = if suite == "all" {
                suites::all()
            } else {
                vec![suites::by_id(&suite).ok_or_else(|| unknown_suite(&suite))?]
            };
            let mut prof = match &profile {
                Some(p) => Profile::load(p)?,
                None => Profile::default(),
            };
            if let Some(t) = timeout_ms {
                if t == 0 || t > 600_000 {
                    return Err(Usage("--timeout-ms must be between 1 and 600000".into()));
                }
                prof.timing.case_timeout_ms = t;
            }
            if role == crate::case::Role::Client {
                set_client_driver(&mut prof, client.as_ref())?;
            }
            if target.is_none() {
                embedded_fixtures(&mut prof);
            }
            let selection = Selection {
                role,
                include: cases,
                exclude,
                include_slow,
            };
            let _ = selection.matcher().map_err(Usage)?;
            let keypair = match &key {
                Some(p) => load_key(p)?,
                None => Keypair::generate(),
            };
            let schemas = Schemas::load().map_err(CliError::Harness)?;
            let identity = embedded_identity(tls)?;
            let client_tls = tls_args.client_tls(identity.as_ref())?;
            let http = client_tls.http_client().map_err(Usage)?;
            let shared = Arc::new(RunShared {
                transcript_budget: crate::script::TranscriptBudget::default(),
                adapted: Default::default(),
                embedded: target.is_none() && role == crate::case::Role::Server,
                profile: prof,
                key: keypair,
                other_key: Keypair::generate(),
                schemas,
                http,
                tls: client_tls,
            });
            let rt = runtime()?;
            let started_at =
                reference_impl::wire::clock::format_timestamp(time::OffsetDateTime::now_utc());
            let (target_label, output) = rt.block_on(async {
                let mut servers = Vec::new();
                let mut plan = Vec::new();
                let label = match &target {
                    _ if role == crate::case::Role::Client => {
                        // The client cases run on the suite's own binding; the
                        // counterparty makes its URL.
                        for s in &chosen {
                            let binding = s.transports.first().copied().unwrap_or(Transport::Http);
                            plan.push((*s, Endpoints(vec![(binding, String::new())])));
                        }
                        format!(
                            "client driver: {}",
                            shared.profile.client.command.clone().unwrap_or_default()
                        )
                    }
                    Some(url) => {
                        let transport = parse_target(url)?;
                        for s in &chosen {
                            plan.push((*s, Endpoints(vec![(transport, url.clone())])));
                        }
                        url.clone()
                    }
                    None => {
                        for s in &chosen {
                            let opts = embedded::Options {
                                token: shared.profile.target.token.clone(),
                                heartbeat_timeout_s: Some(
                                    shared.profile.timing.heartbeat_timeout_s,
                                ),
                                offer_ttl_ms: Some(EMBEDDED_OFFER_TTL_MS),
                                conversation_ttl_s: Some(EMBEDDED_CONVERSATION_TTL_S),
                                tls: identity.clone(),
                                ..embedded::Options::default()
                            };
                            let server = suites::start(s.id, "127.0.0.1:0", &opts)
                                .await
                                .map_err(Usage)?;
                            plan.push((*s, server.endpoints.clone()));
                            servers.push(server);
                        }
                        "embedded reference agent".to_string()
                    }
                };
                // A target that cannot be reached at all is one error, not a failure
                // per case.
                let wait = Duration::from_millis(shared.profile.timing.case_timeout_ms);
                let mut unreachable = None;
                let servers_to_probe = if role == crate::case::Role::Client {
                    &plan[..0]
                } else {
                    &plan[..]
                };
                'probe: for (suite, endpoints) in servers_to_probe {
                    for (transport, url) in &endpoints.0 {
                        let url = suite.endpoint_url(*transport, url);
                        if let Err(e) = crate::drive::preflight(
                            *transport,
                            &url,
                            &shared.http,
                            &shared.tls,
                            wait,
                        )
                        .await
                        {
                            unreachable = Some(e);
                            break 'probe;
                        }
                    }
                }
                let output = match unreachable {
                    Some(e) => Err(e),
                    None => {
                        // A progress bar on a terminal (stderr), nothing elsewhere.
                        let bar = indicatif::ProgressBar::with_draw_target(
                            Some(0),
                            indicatif::ProgressDrawTarget::stderr(),
                        );
                        if let Ok(st) = indicatif::ProgressStyle::with_template(
                            "{bar:30} {pos}/{len} cases {msg}",
                        ) {
                            bar.set_style(st);
                        }
                        let out =
                            runner::run_with_progress(shared, &plan, &selection, Some(bar.clone()))
                                .await
                                .map_err(Usage)?;
                        bar.finish_and_clear();
                        Ok(out)
                    }
                };
                for s in servers {
                    s.stop().await;
                }
                Ok::<_, CliError>((label, output))
            })?;
            let suites_run: Vec<String> = chosen.iter().map(|s| s.id.to_string()).collect();
            let (output, error) = match output {
                Ok(o) => {
                    let error = if o.results.is_empty() {
                        Some("no case matches the selection".to_string())
                    } else if o.results.iter().all(|r| r.outcome == Outcome::Skip) {
                        Some(format!(
                            "no case could run: every selected case was skipped (the first: {}: {})",
                            o.results[0].id, o.results[0].message
                        ))
                    } else {
                        None
                    };
                    (o, error)
                }
                Err(e) => (runner::RunOutput::empty(), Some(e)),
            };
            let mut rep = Report::new(&target_label, suites_run, started_at, output);
            rep.error = error.clone();
            let mut base: Vec<String> = Vec::new();
            if role == crate::case::Role::Client {
                base.extend(["--role".into(), "client".into()]);
                if let Some(c) = &client {
                    base.extend(["--client".into(), c.clone()]);
                }
            }
            if let Some(t) = &target {
                base.extend(["--target".into(), t.clone()]);
            }
            base.extend(tls_args.args());
            if tls {
                base.push("--tls".into());
            }
            if let Some(p) = &profile {
                base.extend(["--profile".into(), p.display().to_string()]);
            }
            if let Some(t) = timeout_ms {
                base.extend(["--timeout-ms".into(), t.to_string()]);
            }
            if let Some(k) = &key {
                base.extend(["--key".into(), k.display().to_string()]);
            }
            if include_slow {
                base.push("--include-slow".into());
            }
            rep.set_reproducers(&base);
            if let Some((b, file)) = &baseline {
                b.apply(&mut rep, file);
            }
            if error.is_none() {
                crate::report::print_terminal_as(
                    &rep,
                    format,
                    crate::report::Style::for_stdout(),
                    out,
                )
                .map_err(io)?;
            }
            if let Some(dir) = &report {
                rep.write(dir).map_err(|e| unwritable(dir.display(), e))?;
                if format == crate::report::Format::Json {
                    eprintln!("report written to {}", dir.display());
                } else {
                    writeln!(out, "report written to {}", dir.display()).map_err(io)?;
                }
            }
            if let Some(e) = error {
                return Err(CliError::NotTested(e));
            }
            if let Some(b) = &rep.baseline {
                let name = |e: &crate::report::baseline::Expected| {
                    e.finding.clone().or(e.case.clone()).unwrap_or_default()
                };
                let mut lines = Vec::new();
                for e in &b.expected {
                    lines.push(format!(
                        "expected by the baseline: {} ({})",
                        name(e),
                        e.reason
                    ));
                }
                for e in &b.stale {
                    lines.push(format!(
                        "STALE baseline entry, it no longer fails: {} ({})",
                        name(e),
                        e.reason
                    ));
                }
                for line in lines {
                    if format == crate::report::Format::Json {
                        eprintln!("{line}");
                    } else {
                        writeln!(out, "{line}").map_err(io)?;
                    }
                }
            }
            Ok(if rep.fails() { 1 } else { 0 })
        }
    }
}

fn parse_duration(s: &str) -> Result<std::time::Duration, CliError> {
    let bad = || {
        Usage(format!(
            "--duration {s:?}: expected a number with s, m or h, e.g. 60s"
        ))
    };
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(bad()),
    };
    if secs == 0 || secs > 7 * 24 * 3600 {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs(secs))
}

fn check_timeout(timeout_ms: u64) -> Result<(), CliError> {
    if timeout_ms == 0 || timeout_ms > 600_000 {
        return Err(Usage("--timeout-ms must be between 1 and 600000".into()));
    }
    Ok(())
}

/// The profile of a fuzz or replay run: the file's, else the defaults; against the
/// embedded agents, their fixtures.
fn fuzz_profile(
    path: Option<&PathBuf>,
    embedded: bool,
    timeout_ms: u64,
) -> Result<Profile, CliError> {
    let mut prof = match path {
        Some(p) => Profile::load(p)?,
        None => Profile::default(),
    };
    prof.timing.case_timeout_ms = timeout_ms;
    if embedded {
        embedded_fixtures(&mut prof);
    }
    Ok(prof)
}

/// What the profile says of the embedded agents, where it says nothing: the
/// agora-spaces reference has a space "full" of capacity 1 and stops a cancelled
/// stream at once (a cancel grace of 100 ms).
fn embedded_fixtures(prof: &mut Profile) {
    if prof.agora_spaces.full_space.is_none() {
        prof.agora_spaces.full_space = Some("full".into());
    }
    prof.agora_spaces.cancel_grace_ms.get_or_insert(100);
}

/// The embedded agents of `run` expire offers after 1 s and conversations after
/// 2 s, so that the expiry cases wait that long, not the references' defaults. A
/// conversation's expiry is in whole seconds, so 2 s leaves it at least one second
/// of life for the follow-up cases.
const EMBEDDED_OFFER_TTL_MS: u64 = 1000;
const EMBEDDED_CONVERSATION_TTL_S: u64 = 2;

/// The reference client driver of this program, for `--role client` without
/// `--client`.
fn reference_driver() -> Result<String, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Harness(format!("cannot find this program: {e}")))?;
    Ok(format!(
        "{} client --suite {{suite}} --scenario {{scenario}} --url {{url}}",
        crate::report::shell_quote(&exe.display().to_string())
    ))
}

/// The client driver of a client run: `--client`, else the profile's, else the
/// reference driver.
fn set_client_driver(prof: &mut Profile, client: Option<&String>) -> Result<(), CliError> {
    let command = match (client, prof.client.command.take()) {
        (Some(c), _) => c.clone(),
        (None, Some(c)) => c,
        (None, None) => reference_driver()?,
    };
    prof.client.command = Some(command);
    Ok(())
}

fn fuzz_command(a: FuzzArgs, out: &mut impl Write) -> Result<i32, CliError> {
    use crate::fuzzing::campaign;
    let Some(speaks) = campaign::bindings(&a.suite) else {
        return Err(unknown_suite(&a.suite));
    };
    if a.client.is_some() && a.role != crate::case::Role::Client {
        return Err(Usage("--client needs --role client".into()));
    }
    if a.role == crate::case::Role::Client {
        if a.target.is_some() {
            return Err(Usage(
                "--role client fuzzes a client driven by --client; it takes no --target".into(),
            ));
        }
        if campaign::spec_of(&a.suite, a.role).is_none() {
            return Err(Usage(format!("suite {} has no client fuzzer yet", a.suite)));
        }
    }
    if a.target.is_some() && !a.faults.is_empty() {
        return Err(Usage(
            "--fault applies to the embedded agent; it cannot be combined with --target".into(),
        ));
    }
    if a.workers.is_some_and(|w| w == 0 || w > 256) {
        return Err(Usage("--workers must be 1 to 256".into()));
    }
    if a.max_findings == 0 {
        return Err(Usage("--max-findings must be at least 1".into()));
    }
    let duration = match (&a.duration, a.cases) {
        (Some(d), _) => Some(parse_duration(d)?),
        (None, Some(_)) => None,
        (None, None) => Some(std::time::Duration::from_secs(60)),
    };
    check_timeout(a.timeout_ms)?;
    let prof = fuzz_profile(a.profile.as_ref(), a.target.is_none(), a.timeout_ms)?;
    let transport = match &a.target {
        Some(u) => Some(parse_target(u)?),
        None => None,
    };
    if let Some(t) = transport {
        if !speaks.contains(&t) {
            return Err(Usage(format!(
                "--target {:?}: {} fuzzing speaks {}",
                a.target.as_deref().unwrap_or_default(),
                a.suite,
                speaks
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let mut prof = prof;
    if a.role == crate::case::Role::Client {
        set_client_driver(&mut prof, a.client.as_ref())?;
    }
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let identity = embedded_identity(a.tls)?;
    let client_tls = a.tls_args.client_tls(identity.as_ref())?;
    let http = client_tls.http_client().map_err(Usage)?;
    let rt = runtime()?;
    let (label, summary) = rt.block_on(async {
        let (url, transport, server) = match (&a.target, transport) {
            _ if a.role == crate::case::Role::Client => (
                format!(
                    "client driver {}",
                    prof.client.command.clone().unwrap_or_default()
                ),
                Transport::Http,
                None,
            ),
            (Some(u), Some(t)) => (u.clone(), t, None),
            _ => {
                let opts = embedded::Options {
                    faults: a.faults.clone(),
                    token: prof.target.token.clone(),
                    heartbeat_timeout_s: Some(prof.timing.heartbeat_timeout_s),
                    tls: identity.clone(),
                    ..embedded::Options::default()
                };
                let s = suites::start(&a.suite, "127.0.0.1:0", &opts)
                    .await
                    .map_err(Usage)?;
                let want = speaks[0];
                let url = s
                    .endpoints
                    .0
                    .iter()
                    .find(|(t, _)| *t == want)
                    .map(|(_, u)| u.clone())
                    .unwrap_or_default();
                (url, want, Some(s))
            }
        };
        let summary = campaign::campaign(campaign::Campaign {
            suite: a.suite.clone(),
            role: a.role,
            seed: a.seed,
            bounds: crate::fuzzing::engine::Bounds {
                cases: a.cases,
                duration,
                max_findings: a.max_findings,
            },
            out: a.out.clone(),
            workers: a.workers,
            connection: campaign::Connection {
                url: url.clone(),
                transport,
                profile: prof.clone(),
                schemas,
                http: http.clone(),
                tls: client_tls.clone(),
            },
        })
        .await
        .map_err(CliError::from);
        if let Some(s) = server {
            s.stop().await;
        }
        Ok::<_, CliError>((url, summary?))
    })?;
    let rate = summary.cases as f64 / summary.elapsed.as_secs_f64().max(1e-9);
    writeln!(
        out,
        "fuzzed {} at {label}: {} cases in {:.1} s ({rate:.0} cases/s), seed {}, {} findings, {} skipped",
        a.suite,
        summary.cases,
        summary.elapsed.as_secs_f64(),
        a.seed,
        summary.findings,
        summary.skipped,
    )
    .map_err(io)?;
    if let Some(why) = &summary.skip_reason {
        writeln!(out, "first skip: {why}").map_err(io)?;
    }
    if let Some(found) = &summary.first_finding {
        writeln!(out, "first finding: {found}").map_err(io)?;
    }
    if summary.findings > 0 {
        writeln!(out, "crash files in {}", a.out.join("crashes").display()).map_err(io)?;
        return Ok(1);
    }
    if summary.cases > 0 && summary.skipped == summary.cases {
        return Err(CliError::NotTested(format!(
            "every case was skipped, so nothing was fuzzed: {}",
            summary.skip_reason.unwrap_or_default()
        )));
    }
    Ok(0)
}

/// `agentconform load`.
fn load_command(
    suite: &str,
    target: Option<String>,
    (clients, requests, timeout_ms): (usize, usize, u64),
    (stalled, text_bytes, publishers): (usize, usize, Option<usize>),
    profile: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    if suites::by_id(suite).is_none() {
        return Err(unknown_suite(suite));
    }
    if !crate::load::SUITES.contains(&suite) {
        return Err(Usage(format!(
            "load drives {}, not {suite}",
            crate::load::SUITES.join(", ")
        )));
    }
    if clients == 0 || requests == 0 || clients > 10_000 || requests > 100_000 {
        return Err(Usage(
            "--clients must be 1 to 10000 and --requests 1 to 100000".into(),
        ));
    }
    crate::load::fits(suite, clients, requests).map_err(Usage)?;
    if (stalled > 0 || text_bytes > 0 || publishers.is_some()) && suite != "agora-spaces" {
        return Err(Usage(
            "--stalled, --text-bytes and --publishers are for --suite agora-spaces".into(),
        ));
    }
    if publishers == Some(0) {
        return Err(Usage("--publishers must be at least 1".into()));
    }
    if stalled > 1000 || text_bytes > 1024 * 1024 {
        return Err(Usage(
            "--stalled must be at most 1000 and --text-bytes at most 1048576".into(),
        ));
    }
    if timeout_ms == 0 || timeout_ms > 600_000 {
        return Err(Usage("--timeout-ms must be 1 to 600000".into()));
    }
    let prof = match &profile {
        Some(p) => Profile::load(p)?,
        None => Profile::default(),
    };
    let rt = runtime()?;
    let (label, tally, embedded) = rt.block_on(async {
        let (url, server) = match &target {
            Some(u) => (u.clone(), None),
            None => {
                let server = suites::start(suite, "127.0.0.1:0", &embedded::Options::default())
                    .await
                    .map_err(Usage)?;
                let want = crate::load::transport(suite);
                let url = server
                    .endpoints
                    .0
                    .iter()
                    .find(|(t, _)| *t == want)
                    .map(|(_, u)| u.clone())
                    .ok_or_else(|| {
                        CliError::Harness(format!("the {suite} reference has no {want} endpoint"))
                    })?;
                (url, Some(server))
            }
        };
        let label = if server.is_some() {
            format!("the embedded reference ({url})")
        } else {
            url.clone()
        };
        let l = crate::load::Load {
            suite: suite.to_string(),
            url,
            clients,
            requests,
            timeout: Duration::from_millis(timeout_ms),
            profile: prof,
            stalled,
            text_bytes,
            publishers,
        };
        let tag = suite.to_string();
        let tally = crate::load::run(l, move |t, total| {
            eprintln!(
                "load {tag}: {}/{total} {}, {} ok, {} failed",
                t.sent,
                crate::load::unit(&tag),
                t.ok,
                t.failed()
            );
        })
        .await;
        let embedded = server.is_some();
        if let Some(s) = server {
            s.stop().await;
        }
        Ok::<_, CliError>((label, tally, embedded))
    })?;
    writeln!(
        out,
        "{}",
        crate::load::describe(suite, &label, clients, &tally)
    )
    .map_err(io)?;
    if embedded {
        if let Some(kib) = crate::load::peak_rss_kib() {
            writeln!(
                out,
                "  peak RSS of this process (the embedded reference and the load's agents): {:.1} MiB",
                kib as f64 / 1024.0
            )
            .map_err(io)?;
        }
    }
    Ok(if tally.failed() == 0 && tally.ok == tally.sent {
        0
    } else {
        1
    })
}

/// `agentconform client`: the reference client of a suite as a client driver.
fn client_command(
    suite: &str,
    scenario: &str,
    url: &str,
    input_file: Option<PathBuf>,
    faults: &[String],
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let path = match input_file {
        Some(p) => p,
        None => std::env::var_os("AGENTCONFORM_INPUT")
            .map(PathBuf::from)
            .ok_or_else(|| Usage("no input: pass --input FILE or set AGENTCONFORM_INPUT".into()))?,
    };
    let descriptor = suites::by_id(suite).ok_or_else(|| unknown_suite(suite))?;
    for f in faults {
        if !descriptor.client_faults.iter().any(|k| k.name == f) {
            return Err(Usage(format!("unknown {suite} client fault {f:?}")));
        }
    }
    let input_value = read_json(&path)?;
    let bad_input = |e: String| input(path.display(), e);
    let rt = runtime()?;
    let timeout = Duration::from_secs(10);
    // Every reply received, and the results or why the client gave up.
    let (received, result): (Vec<serde_json::Value>, Result<Vec<serde_json::Value>, String>) =
        match (suite, scenario) {
            ("agora-v1", "request") => {
                use reference_impl::agora_v1::client;
                let ask = client::Ask::from_input(&input_value).map_err(bad_input)?;
                let key = Keypair::generate();
                let (o, r) = rt.block_on(client::request(url, &key, &ask, faults, timeout));
                let data = o.data.unwrap_or(serde_json::Value::Null);
                (o.received, r.map(|()| vec![data]).map_err(|e| e.to_string()))
            }
            ("agora-exchange", "single" | "conversation") => {
                use reference_impl::agora_exchange::client;
                let (got, r) = rt.block_on(client::scenario(url, scenario, &input_value, faults));
                (got, r.map_err(|e| e.to_string()))
            }
            ("agora-spaces", "join-publish" | "listen") => {
                use reference_impl::agora_spaces::client;
                let (got, r) =
                    rt.block_on(client::scenario(url, scenario, &input_value, faults, timeout));
                (got, r.map_err(|e| e.to_string()))
            }
            ("chorus", "hire") => {
                use reference_impl::chorus::client;
                let (got, r) =
                    rt.block_on(client::scenario(url, scenario, &input_value, faults, timeout));
                (got, r.map_err(|e| e.to_string()))
            }
            ("agentprotocol", "request") => {
                use reference_impl::agentprotocol::client;
                let ask = client::Ask::from_input(&input_value).map_err(bad_input)?;
                let (got, r) = rt.block_on(client::request(url, &ask, faults, timeout));
                (got, r.map(|v| vec![v]).map_err(|e| e.to_string()))
            }
            _ => {
                return Err(Usage(format!(
                    "the reference clients cover agora-v1 request, agora-exchange single and conversation, agora-spaces join-publish and listen, chorus hire, and agentprotocol request; not {suite} {scenario}"
                )))
            }
        };
    for v in &received {
        writeln!(out, "{}", serde_json::json!({ "received": v })).map_err(io)?;
    }
    match result {
        Ok(results) => {
            for r in results {
                writeln!(out, "{}", serde_json::json!({ "result": r })).map_err(io)?;
            }
            Ok(0)
        }
        Err(e) => {
            writeln!(out, "{}", serde_json::json!({ "error": e })).map_err(io)?;
            Ok(1)
        }
    }
}

/// A JSON file read whole (at most 64 MiB).
fn read_json(path: &std::path::Path) -> Result<serde_json::Value, CliError> {
    let bytes = read_input(&Some(path.to_path_buf()))?;
    serde_json::from_slice(&bytes).map_err(|e| input(path.display(), format!("not JSON: {e}")))
}

fn export_command(
    source: &std::path::Path,
    case: Option<&str>,
    to: Option<&std::path::Path>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let file = if source.is_dir() {
        source.join("report.json")
    } else {
        source.to_path_buf()
    };
    let v = read_json(&file)?;
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let vector = match (case, v.get("cases").is_some()) {
        (Some(id), true) => crate::export::from_report(&v, id, schemas),
        (None, true) => {
            return Err(Usage(format!(
                "{} is a report: name the case to export with --case",
                file.display()
            )))
        }
        (Some(_), false) => {
            return Err(Usage(format!(
                "--case applies to a report; {} is not one",
                file.display()
            )))
        }
        (None, false) => crate::export::from_crash(&v, schemas),
    }
    .map_err(|e| CliError::NotTested(format!("{}: {e}", file.display())))?;
    let text = serde_json::to_string_pretty(&vector)
        .map_err(|e| CliError::Harness(format!("cannot write the vector: {e}")))?;
    match to {
        Some(p) => {
            std::fs::write(p, format!("{text}\n")).map_err(|e| unwritable(p.display(), e))?;
            writeln!(
                out,
                "exported {} ({} exchanges, findings {}) to {}; run it offline with: agentconform replay {}",
                vector.suite,
                vector.exchanges.len(),
                vector.expect.findings.join(", "),
                p.display(),
                p.display()
            )
            .map_err(io)?;
        }
        None => writeln!(out, "{text}").map_err(io)?,
    }
    Ok(0)
}

/// The offline run of an exported vector: exit 1 when every finding it records
/// reproduces, 0 when one does not.
fn replay_vector(
    file: &std::path::Path,
    vector: crate::export::Vector,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let r = crate::export::rejudge(&vector, schemas)
        .map_err(|e| CliError::NotTested(format!("{}: {e}", file.display())))?;
    writeln!(
        out,
        "judging {} offline: {} recorded replies of {}",
        file.display(),
        vector.exchanges.len(),
        vector.suite
    )
    .map_err(io)?;
    if r.skipped > 0 {
        writeln!(
            out,
            "{} replies were cut short in the transcript and are not judged",
            r.skipped
        )
        .map_err(io)?;
    }
    for (key, summary) in &r.found {
        writeln!(out, "  {key}: {summary}").map_err(io)?;
    }
    if r.reproduced() {
        writeln!(out, "REPRODUCED: {}", vector.expect.findings.join(", ")).map_err(io)?;
        Ok(1)
    } else {
        writeln!(out, "not reproduced: missing {}", r.missing.join(", ")).map_err(io)?;
        Ok(0)
    }
}

fn replay_command(
    file: &std::path::Path,
    target: Option<String>,
    tls_args: &TlsArgs,
    profile: Option<PathBuf>,
    out: &mut impl Write,
) -> Result<i32, CliError> {
    use crate::fuzzing::campaign;
    use crate::fuzzing::verdict::Outcome;
    if let Some(vector) = read_json(file).ok().as_ref().and_then(crate::export::read) {
        if target.is_some() {
            return Err(Usage(format!(
                "{} is an exported vector: it runs offline, without --target",
                file.display()
            )));
        }
        return replay_vector(file, vector.map_err(|e| input(file.display(), e))?, out);
    }
    let crash = campaign::CrashFile::read(file)?;
    let mut prof = fuzz_profile(profile.as_ref(), false, 5000)?;
    let (url, transport) = if crash.role == crate::case::Role::Client {
        // A client crash replays through a client driver: --target names one, else
        // the one the crash file recorded.
        let recorded = crash
            .target
            .as_deref()
            .and_then(|t| t.strip_prefix("client driver "))
            .map(String::from);
        let command = target
            .or(recorded)
            .ok_or_else(|| Usage("no client driver: pass --target COMMAND".into()))?;
        prof.client.command = Some(command.clone());
        (format!("client driver {command}"), Transport::Http)
    } else {
        let url = target
            .or_else(|| crash.target.clone())
            .ok_or_else(|| Usage("no target: pass --target".into()))?;
        let transport = parse_target(&url)?;
        (url, transport)
    };
    let schemas = Schemas::load().map_err(CliError::Harness)?;
    let client_tls = tls_args.client_tls(None)?;
    let http = client_tls.http_client().map_err(Usage)?;
    let rt = runtime()?;
    let replayed = rt.block_on(campaign::replay(
        &crash,
        campaign::Connection {
            url: url.clone(),
            transport,
            profile: prof,
            schemas,
            http,
            tls: client_tls,
        },
    ))?;
    writeln!(
        out,
        "replaying {} case {} of seed {} ({}) against {url}",
        crash.suite, crash.index, crash.seed, replayed.label
    )
    .map_err(io)?;
    match replayed.outcome {
        Outcome::Finding(found) => {
            writeln!(
                out,
                "REPRODUCED: oracle {} fired: {}",
                found.oracle, found.detail
            )
            .map_err(io)?;
            if crash.oracle.as_deref() != Some(found.oracle.name()) {
                writeln!(
                    out,
                    "(the crash file recorded oracle {})",
                    crash.oracle.as_deref().unwrap_or("none")
                )
                .map_err(io)?;
            }
            Ok(1)
        }
        Outcome::Skip(why) => {
            writeln!(out, "the case was skipped: {why}").map_err(io)?;
            writeln!(out, "not reproduced: no oracle fired").map_err(io)?;
            Ok(0)
        }
        Outcome::Pass => {
            writeln!(out, "not reproduced: no oracle fired").map_err(io)?;
            Ok(0)
        }
    }
}

fn unknown_suite(id: &str) -> CliError {
    Usage(format!(
        "unknown suite {id:?}; known suites: {}, all",
        suites::ids().join(", ")
    ))
}

/// The runtime of every command. Blocking work (the agora-v1 reference's checks)
/// runs on at most [`BLOCKING_THREADS`] threads: under hundreds of requests at once
/// tokio's default of 512, each with its stack and allocator heap, took the process
/// past 4 GiB of address space.
fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build()
        .map_err(|e| CliError::Harness(format!("cannot start the async runtime: {e}")))
}

/// Threads for blocking work, at most.
const BLOCKING_THREADS: usize = 16;

/// The binding a target URL names.
pub fn parse_target(url: &str) -> Result<Transport, CliError> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        Ok(Transport::Http)
    } else if lower.starts_with("ws://") || lower.starts_with("wss://") {
        Ok(Transport::Ws)
    } else if crate::drive::file::dir_of(url).is_some() {
        // Whether the folder is there is the preflight's to say.
        Ok(Transport::File)
    } else {
        Err(Usage(format!(
            "--target {url:?}: expected an http://, https://, ws://, wss:// or file:///folder URL"
        )))
    }
}
