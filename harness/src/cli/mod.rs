//! The `agentconform` command line. Exit codes: 0 no case failed (or the command
//! succeeded), 1 a case failed (or `verify` found the signature invalid), 2 usage or
//! harness error.
//!
//! One module per subcommand, each with the command's `run` and the helpers only it
//! uses (and its arguments, where they are many); this module parses (`Cli`,
//! `Command`), routes (`dispatch`) and turns errors into exit codes (`CliError`,
//! `main_with`); `common` holds what several commands share.

mod attest;
mod baseline;
mod canon;
mod client;
mod common;
mod export;
mod fuzz;
mod init;
mod interop;
mod keygen;
mod list;
mod load;
mod proxy;
mod replay;
mod rules;
mod run;
mod serve;
mod sign;
mod verify;

pub use attest::AttestCommand;
pub use baseline::BaselineCommand;
pub use common::{parse_target, TlsArgs};
pub use fuzz::FuzzArgs;
pub use init::InitArgs;
pub use interop::InteropArgs;
pub use load::LoadArgs;
pub use proxy::ProxyArgs;
pub use run::RunArgs;
pub use serve::ServeArgs;

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;

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

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the cases with their id, level and requirement ids.
    List {
        #[arg(long)]
        suite: Option<String>,
    },
    /// Probe a target with safe, valid requests and write its profile: each key
    /// with how it was found, each one not found with why and how to set it; run
    /// again, it says what changed.
    Init(InitArgs),
    /// Run a suite against a target (without --target: the embedded reference agent).
    Run(RunArgs),
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
    Serve(ServeArgs),
    /// Fuzz a live target (without --target: the embedded reference agent).
    Fuzz(FuzzArgs),
    /// Drive many concurrent agents (the suite's reference client) against a target
    /// (without --target: the embedded reference agent): every request must come
    /// back with its own marker; latency p50/p99 and errors by kind. Exit 1 when a
    /// request failed, was lost or came back misrouted. agora-spaces: --clients
    /// members join one space and each publishes --requests events, which must reach
    /// every other member exactly once.
    Load(LoadArgs),
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
    /// Stand between a real client and a real server: forward every HTTP request,
    /// reply and WebSocket message unchanged, judge both sides by the suite's
    /// rules, and report each finding as the client's or the server's (prints its
    /// URL first).
    Proxy(ProxyArgs),
    /// Which clients work with which servers: every pair through the proxy, each
    /// cell its outcome and the failing findings of each side.
    Interop(InteropArgs),
    /// List every rule a reply or client message is held to: key, level,
    /// requirement ids, one line.
    Rules {
        #[arg(long)]
        suite: Option<String>,
    },
    /// Say what a finding means: its rule or case, the requirement texts and spec
    /// sections, what passes and what fails, and the reference fault that shows it.
    Explain {
        /// A finding key, as reports print it (`agora-v1/reply:signature`).
        key: String,
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

/// Hands the command to its module's `run`.
fn dispatch(cli: Cli, out: &mut impl Write) -> Result<i32, CliError> {
    match cli.command {
        Command::List { suite } => list::run(suite.as_deref(), out),
        Command::Init(args) => init::run(args, out),
        Command::Run(args) => run::run(args, out),
        Command::Client {
            suite,
            scenario,
            url,
            input: input_file,
            faults,
        } => client::run(&suite, &scenario, &url, input_file, &faults, out),
        Command::Baseline(command) => baseline::run(command, out),
        Command::Attest {
            verify,
            report,
            key,
            out: to,
        } => attest::run(verify, report, key, to, out),
        Command::Serve(args) => serve::run(args, out),
        Command::Fuzz(args) => fuzz::run(args, out),
        Command::Load(args) => load::run(args, out),
        Command::Export {
            source,
            case,
            out: to,
        } => export::run(&source, case.as_deref(), to.as_deref(), out),
        Command::Replay {
            file,
            target,
            tls_args,
            profile,
        } => replay::run(&file, target, &tls_args, profile, out),
        Command::Canon { file } => canon::run(&file, out),
        Command::Keygen => keygen::run(out),
        Command::Sign { suite, key, file } => sign::run(&suite, &key, &file, out),
        Command::Verify { suite, file } => verify::run(&suite, &file, out),
        Command::Proxy(args) => proxy::run(args, out),
        Command::Interop(args) => interop::run(args, out),
        Command::Rules { suite } => rules::list(suite.as_deref(), out),
        Command::Explain { key } => rules::explain(&key, out),
    }
}
