//! What several commands share: the TLS flags, the async runtime, the target's
//! binding, reading inputs and keys, and the profile of runs against the embedded
//! agents or a client driver.

use super::{input, unwritable, CliError, Usage};
use crate::drive::Transport;
use crate::profile::Profile;
use crate::suites;
use reference_impl::serve::TlsIdentity;
use reference_impl::wire::keys::Keypair;
use std::io::Read;
use std::path::{Path, PathBuf};

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
    pub(super) fn client_tls(
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
    pub(super) fn args(&self) -> Vec<String> {
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
pub(super) fn embedded_identity(
    tls: bool,
) -> Result<Option<reference_impl::serve::TlsIdentity>, CliError> {
    if tls {
        reference_impl::serve::TlsIdentity::generate()
            .map(Some)
            .map_err(Usage)
    } else {
        Ok(None)
    }
}

/// A usage error naming the known suites.
pub(super) fn unknown_suite(id: &str) -> CliError {
    Usage(format!(
        "unknown suite {id:?}; known suites: {}, all",
        suites::ids().join(", ")
    ))
}

/// The runtime of every command. Blocking work (the agora-v1 reference's checks)
/// runs on at most [`BLOCKING_THREADS`] threads: under hundreds of requests at once
/// tokio's default of 512, each with its stack and allocator heap, took the process
/// past 4 GiB of address space.
pub(super) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
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

/// A file read whole, or standard input without one or with `-` (at most 64 MiB).
pub(super) fn read_input(file: &Option<PathBuf>) -> Result<Vec<u8>, CliError> {
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

/// How an error names the input of `read_input`.
pub(super) fn input_name(file: &Option<PathBuf>) -> String {
    match file {
        Some(p) if p.as_os_str() != "-" => p.display().to_string(),
        _ => "<stdin>".into(),
    }
}

/// A JSON file read whole (at most 64 MiB).
pub(super) fn read_json(path: &std::path::Path) -> Result<serde_json::Value, CliError> {
    let bytes = read_input(&Some(path.to_path_buf()))?;
    serde_json::from_slice(&bytes).map_err(|e| input(path.display(), format!("not JSON: {e}")))
}

/// The signing key of a key file (the seed on its first line, as `keygen` writes it).
pub(super) fn load_key(path: &PathBuf) -> Result<Keypair, CliError> {
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

/// The profile of a fuzz or replay run: the file's, else the defaults; against the
/// embedded agents, their fixtures.
pub(super) fn fuzz_profile(
    path: Option<&PathBuf>,
    embedded: bool,
    timeout_ms: u64,
) -> Result<(Profile, Option<crate::profile::ProfileFile>), CliError> {
    let (mut prof, file) = match path {
        Some(p) => {
            let (prof, file) = Profile::load_file(p)?;
            (prof, Some(file))
        }
        None => (Profile::default(), None),
    };
    prof.timing.case_timeout_ms = timeout_ms;
    if embedded {
        embedded_fixtures(&mut prof);
    }
    Ok((prof, file))
}

/// What the profile says of the embedded agents, where it says nothing: the
/// agora-spaces reference has a space "full" of capacity 1 and stops a cancelled
/// stream at once (a cancel grace of 100 ms).
pub(super) fn embedded_fixtures(prof: &mut Profile) {
    if prof.agora_spaces.full_space.is_none() {
        prof.agora_spaces.full_space = Some("full".into());
    }
    prof.agora_spaces.cancel_grace_ms.get_or_insert(100);
}

/// The reference client driver of this program, for `--role client` without
/// `--client`.
pub(super) fn reference_driver() -> Result<String, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Harness(format!("cannot find this program: {e}")))?;
    Ok(format!(
        "{} client --suite {{suite}} --scenario {{scenario}} --url {{url}}",
        crate::report::shell_quote(&exe.display().to_string())
    ))
}

/// The client driver of a client run: `--client`, else the profile's, else the
/// reference driver.
pub(super) fn set_client_driver(
    prof: &mut Profile,
    client: Option<&String>,
) -> Result<(), CliError> {
    let command = match (client, prof.client.command.take()) {
        (Some(c), _) => c.clone(),
        (None, Some(c)) => c,
        (None, None) => reference_driver()?,
    };
    prof.client.command = Some(command);
    Ok(())
}

/// What a command that reaches real peers shares (`proxy`, `interop`): fresh keys,
/// the built-in schemas, whom it trusts over TLS (`tls`), `profile`.
pub fn peers_shared(
    profile: crate::profile::Profile,
    tls: crate::drive::Tls,
) -> Result<crate::script::RunShared, CliError> {
    Ok(crate::script::RunShared {
        transcript_budget: crate::script::TranscriptBudget::default(),
        adapted: Default::default(),
        client_ids: Default::default(),
        documents: Default::default(),
        embedded: false,
        http: tls.http_client().map_err(CliError::Harness)?,
        tls,
        key: reference_impl::wire::keys::Keypair::generate(),
        other_key: reference_impl::wire::keys::Keypair::generate(),
        schemas: crate::schemas::Schemas::load().map_err(CliError::Harness)?,
        profile,
    })
}

/// `--tls`: a self-signed certificate made now, written to `cert_out` when given.
pub fn tls_identity(listen: &str, cert_out: Option<&Path>) -> Result<TlsIdentity, CliError> {
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
    let id = TlsIdentity::generate_for(&extra).map_err(Usage)?;
    if let Some(p) = cert_out {
        std::fs::write(p, id.cert_pem()).map_err(|e| unwritable(p.display(), e))?;
    }
    Ok(id)
}
