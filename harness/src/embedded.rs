//! The embedded reference agents: started on loopback when `run` has no target,
//! and by `serve`.

use crate::drive::Endpoints;
use crate::drive::Transport;
use reference_impl::agentprotocol::agent::{ApAgent, ApConfig};
use reference_impl::agora_exchange::server::{Exchange, ExchangeConfig};
use reference_impl::agora_spaces::server::{Spaces, SpacesConfig};
use reference_impl::agora_v1::agent::{Agent, AgentConfig};
use reference_impl::chorus::server::{self as chorus_server, Chorus, ChorusConfig, Delivery};
use reference_impl::serve::{spawn, spawn_tls, Running, TlsIdentity};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub faults: Vec<String>,
    pub offer_ttl_ms: Option<u64>,
    pub replay_window_s: Option<u32>,
    pub conversation_ttl_s: Option<u64>,
    /// chorus: how the fixture agent delivers results.
    pub chorus_delivery: Option<Delivery>,
    /// chorus: serve the ledger on a listener of its own.
    pub separate_ledger: bool,
    /// chorus: the skill the fixture agent registers (default `echo_text`).
    pub chorus_fixture_skill: Option<String>,
    /// agora-spaces: the token connections must carry.
    pub token: Option<String>,
    /// agora-spaces: seconds of silence before a client is disconnected.
    pub heartbeat_timeout_s: Option<u64>,
    /// agora-spaces: unsent bytes of one connection before it is cut off as a slow
    /// consumer (`SpacesConfig::max_pending_bytes`).
    pub max_pending_bytes: Option<usize>,
    /// agora-spaces: an error answering a frame without an id carries
    /// `"request_id": null` (`SpacesConfig::null_request_id`).
    pub null_request_id: bool,
    /// agora-spaces: joining a user space that does not exist creates it (the
    /// default) or draws SPACE_NOT_FOUND (`SpacesConfig::create_user_spaces`).
    pub no_space_creation: bool,
    /// agora-spaces: the public space the hub serves (`SpacesConfig::public_space`).
    pub public_space: Option<String>,
    /// agora-exchange: a conversation expires only once the whole second of its
    /// conversationExpires has passed (`ExchangeConfig::expiry_whole_second`).
    pub expiry_whole_second: bool,
    /// agora-exchange: take protocol documents only by reference, a URL the server
    /// fetches (`ExchangeConfig::sources_by_reference`).
    pub sources_by_reference: bool,
    /// agora-exchange: answer GET /wellknown 404 (`ExchangeConfig::wellknown`).
    pub no_wellknown: bool,
    /// Serve TLS with this certificate: `https://` and `wss://` URLs (the file
    /// binding stays a folder).
    pub tls: Option<TlsIdentity>,
}

/// Serves `router` on `listen`, over TLS when `tls` is given.
async fn listen_on(
    listen: &str,
    router: axum::Router,
    tls: Option<&TlsIdentity>,
) -> std::io::Result<Running> {
    match tls {
        Some(id) => spawn_tls(listen, router, id).await,
        None => spawn(listen, router).await,
    }
}

/// `http` or `ws`, with an `s` under TLS.
fn scheme(plain: &str, tls: Option<&TlsIdentity>) -> String {
    match tls {
        Some(_) => format!("{plain}s"),
        None => plain.to_string(),
    }
}

pub struct Server {
    pub endpoints: Endpoints,
    /// A folder the server made for itself and removes when it stops.
    temp_dir: Option<std::path::PathBuf>,
    file_stop: Option<tokio::sync::watch::Sender<bool>>,
    /// A separate ledger's URL (chorus with `separate_ledger`).
    pub ledger_url: Option<String>,
    running: Running,
    extra: Option<Running>,
}

impl Server {
    pub async fn stop(self) {
        if let Some(tx) = &self.file_stop {
            let _ = tx.send(true);
        }
        if let Some(d) = &self.temp_dir {
            let _ = std::fs::remove_dir_all(d);
        }
        self.running.stop().await;
        if let Some(e) = self.extra {
            e.stop().await;
        }
    }
}

/// Starts a suite's reference agent on `listen` with `opts`: one function per suite,
/// named in its descriptor (`Suite::start`).
pub type StartFn = for<'a> fn(
    &'a str,
    &'a Options,
) -> Pin<Box<dyn Future<Output = Result<Server, String>> + Send + 'a>>;

/// Starts the agora-v1 reference agent with `cfg` on `listen`.
pub async fn start_agora_v1(cfg: AgentConfig, listen: &str) -> Result<Server, String> {
    start_agora_v1_on(cfg, listen, None).await
}

async fn start_agora_v1_on(
    cfg: AgentConfig,
    listen: &str,
    tls: Option<&TlsIdentity>,
) -> Result<Server, String> {
    let agent = Arc::new(Agent::with_config(cfg));
    let running = listen_on(listen, reference_impl::agora_v1::server::router(agent), tls)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let a = running.addr;
    let (http, ws) = (scheme("http", tls), scheme("ws", tls));
    Ok(Server {
        endpoints: Endpoints(vec![
            (Transport::Http, format!("{http}://{a}/")),
            (Transport::Ws, format!("{ws}://{a}/")),
        ]),
        ledger_url: None,
        running,
        extra: None,
        temp_dir: None,
        file_stop: None,
    })
}

/// Starts the agora-exchange reference server with `cfg` on `listen`.
pub async fn start_agora_exchange(cfg: ExchangeConfig, listen: &str) -> Result<Server, String> {
    start_agora_exchange_on(cfg, listen, None).await
}

async fn start_agora_exchange_on(
    cfg: ExchangeConfig,
    listen: &str,
    tls: Option<&TlsIdentity>,
) -> Result<Server, String> {
    let ex = Arc::new(Exchange::with_config(cfg));
    let running = listen_on(
        listen,
        reference_impl::agora_exchange::server::router(ex),
        tls,
    )
    .await
    .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let a = running.addr;
    let http = scheme("http", tls);
    Ok(Server {
        endpoints: Endpoints(vec![(Transport::Http, format!("{http}://{a}/"))]),
        ledger_url: None,
        running,
        extra: None,
        temp_dir: None,
        file_stop: None,
    })
}

/// Starts the chorus reference (registry, fixture agent and, unless separate, the
/// ledger) with `cfg` on `listen`.
pub async fn start_chorus(
    cfg: ChorusConfig,
    listen: &str,
    separate_ledger: bool,
) -> Result<Server, String> {
    start_chorus_on(cfg, listen, separate_ledger, None).await
}

async fn start_chorus_on(
    cfg: ChorusConfig,
    listen: &str,
    separate_ledger: bool,
    tls: Option<&TlsIdentity>,
) -> Result<Server, String> {
    let c = Arc::new(Chorus::with_config(cfg));
    let running = listen_on(
        listen,
        chorus_server::router(c.clone(), !separate_ledger),
        tls,
    )
    .await
    .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let a = running.addr;
    let http = scheme("http", tls);
    c.register_fixture(&format!("{http}://{a}"));
    let (extra, ledger_url) = if separate_ledger {
        let host = listen.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h);
        let l = listen_on(&format!("{host}:0"), chorus_server::ledger_router(c), tls)
            .await
            .map_err(|e| format!("cannot listen for the ledger: {e}"))?;
        let url = format!("{http}://{}/", l.addr);
        (Some(l), Some(url))
    } else {
        (None, None)
    };
    Ok(Server {
        endpoints: Endpoints(vec![(Transport::Http, format!("{http}://{a}/"))]),
        ledger_url,
        running,
        extra,
        temp_dir: None,
        file_stop: None,
    })
}

/// Starts the agora-spaces reference server with `cfg` on `listen`.
pub async fn start_agora_spaces(cfg: SpacesConfig, listen: &str) -> Result<Server, String> {
    start_agora_spaces_on(cfg, listen, None).await
}

async fn start_agora_spaces_on(
    cfg: SpacesConfig,
    listen: &str,
    tls: Option<&TlsIdentity>,
) -> Result<Server, String> {
    let spaces = Spaces::new(cfg);
    let running = listen_on(
        listen,
        reference_impl::agora_spaces::server::router(spaces),
        tls,
    )
    .await
    .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let a = running.addr;
    let ws = scheme("ws", tls);
    Ok(Server {
        endpoints: Endpoints(vec![(Transport::Ws, format!("{ws}://{a}/ws"))]),
        ledger_url: None,
        running,
        extra: None,
        temp_dir: None,
        file_stop: None,
    })
}

/// Starts the agentprotocol reference agent. With `listen` = `file:///dir` it serves
/// that folder only; otherwise HTTP and WebSocket on `listen` plus the file binding in
/// a fresh temporary folder.
pub async fn start_agentprotocol(cfg: ApConfig, listen: &str) -> Result<Server, String> {
    start_agentprotocol_on(cfg, listen, None).await
}

async fn start_agentprotocol_on(
    cfg: ApConfig,
    listen: &str,
    tls: Option<&TlsIdentity>,
) -> Result<Server, String> {
    let agent = Arc::new(ApAgent::new(
        reference_impl::wire::keys::Keypair::generate(),
        cfg,
    ));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let poll = std::time::Duration::from_millis(10);
    if let Some(dir) = crate::drive::file::dir_of(listen) {
        if !dir.is_dir() {
            return Err(format!("{} is not a folder", dir.display()));
        }
        tokio::spawn(reference_impl::agentprotocol::file::serve_folder(
            agent, dir, poll, rx,
        ));
        // A listener nobody uses keeps the Server shape; it is closed on stop.
        let running = spawn("127.0.0.1:0", axum::Router::new())
            .await
            .map_err(|e| format!("cannot start: {e}"))?;
        return Ok(Server {
            endpoints: Endpoints(vec![(Transport::File, listen.to_string())]),
            ledger_url: None,
            running,
            extra: None,
            temp_dir: None,
            file_stop: Some(tx),
        });
    }
    let running = listen_on(
        listen,
        reference_impl::agentprotocol::server::router(agent.clone()),
        tls,
    )
    .await
    .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let dir = std::env::temp_dir().join(format!(
        "agentconform-files-{}-{}",
        std::process::id(),
        reference_impl::wire::new_id()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    tokio::spawn(reference_impl::agentprotocol::file::serve_folder(
        agent,
        dir.clone(),
        poll,
        rx,
    ));
    let a = running.addr;
    let (http, ws) = (scheme("http", tls), scheme("ws", tls));
    Ok(Server {
        endpoints: Endpoints(vec![
            (Transport::Http, format!("{http}://{a}/")),
            (Transport::Ws, format!("{ws}://{a}/")),
            (Transport::File, format!("file://{}", dir.display())),
        ]),
        ledger_url: None,
        running,
        extra: None,
        temp_dir: Some(dir),
        file_stop: Some(tx),
    })
}

/// Starts the agora-v1 reference agent with `opts`.
pub fn agora_v1<'a>(
    listen: &'a str,
    opts: &'a Options,
) -> Pin<Box<dyn Future<Output = Result<Server, String>> + Send + 'a>> {
    Box::pin(async move {
        let mut cfg = AgentConfig::default().with_faults(&opts.faults)?;
        if let Some(ttl) = opts.offer_ttl_ms {
            cfg.offer_ttl_ms = ttl;
        }
        if let Some(w) = opts.replay_window_s {
            cfg.replay_window = time::Duration::seconds(i64::from(w));
        }
        start_agora_v1_on(cfg, listen, opts.tls.as_ref()).await
    })
}

/// Starts the agora-exchange reference server with `opts`.
pub fn agora_exchange<'a>(
    listen: &'a str,
    opts: &'a Options,
) -> Pin<Box<dyn Future<Output = Result<Server, String>> + Send + 'a>> {
    Box::pin(async move {
        let mut cfg = ExchangeConfig::default().with_faults(&opts.faults)?;
        if let Some(ttl) = opts.conversation_ttl_s {
            cfg.conversation_ttl_s = ttl;
        }
        cfg.expiry_whole_second = opts.expiry_whole_second;
        cfg.sources_by_reference = opts.sources_by_reference;
        cfg.wellknown = !opts.no_wellknown;
        start_agora_exchange_on(cfg, listen, opts.tls.as_ref()).await
    })
}

/// Starts the chorus registry, ledger and fixture agent with `opts`.
pub fn chorus<'a>(
    listen: &'a str,
    opts: &'a Options,
) -> Pin<Box<dyn Future<Output = Result<Server, String>> + Send + 'a>> {
    Box::pin(async move {
        let mut cfg = ChorusConfig::default().with_faults(&opts.faults)?;
        if let Some(skill) = &opts.chorus_fixture_skill {
            cfg.fixture_skill = skill.clone();
        }
        if let Some(d) = opts.chorus_delivery {
            cfg.delivery = d;
        }
        start_chorus_on(cfg, listen, opts.separate_ledger, opts.tls.as_ref()).await
    })
}

/// Starts the agora-spaces reference server with `opts`.
pub fn agora_spaces<'a>(
    listen: &'a str,
    opts: &'a Options,
) -> Pin<Box<dyn Future<Output = Result<Server, String>> + Send + 'a>> {
    Box::pin(async move {
        let mut cfg = SpacesConfig::default().with_faults(&opts.faults)?;
        cfg.token = opts.token.clone();
        if let Some(t) = opts.heartbeat_timeout_s {
            cfg.heartbeat_timeout = std::time::Duration::from_secs(t);
        }
        if let Some(b) = opts.max_pending_bytes {
            cfg.max_pending_bytes = b;
        }
        cfg.null_request_id = opts.null_request_id;
        cfg.create_user_spaces = !opts.no_space_creation;
        if let Some(s) = &opts.public_space {
            cfg.public_space = s.clone();
        }
        start_agora_spaces_on(cfg, listen, opts.tls.as_ref()).await
    })
}

/// Starts the agentprotocol reference agent with `opts`.
pub fn agentprotocol<'a>(
    listen: &'a str,
    opts: &'a Options,
) -> Pin<Box<dyn Future<Output = Result<Server, String>> + Send + 'a>> {
    Box::pin(async move {
        let cfg = ApConfig::default().with_faults(&opts.faults)?;
        start_agentprotocol_on(cfg, listen, opts.tls.as_ref()).await
    })
}
