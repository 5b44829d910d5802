//! The embedded reference agents: started on loopback when `run` has no target,
//! and by `serve`, through `reference_impl::start` with the options of the flags.

use crate::drive::Endpoints;
use crate::drive::Transport;
use reference_impl::agentprotocol::agent::ApConfig;
use reference_impl::agora_exchange::server::ExchangeConfig;
use reference_impl::agora_spaces::server::SpacesConfig;
use reference_impl::agora_v1::agent::AgentConfig;
use reference_impl::chorus::server::{ChorusConfig, Delivery};
use reference_impl::serve::TlsIdentity;
use reference_impl::start::{self, Binding, Started};
use std::future::Future;
use std::pin::Pin;

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
    /// chorus: the registry publishes an OpenAPI document of its routes and takes
    /// outcomes at the route it lists (`ChorusConfig::openapi`).
    pub chorus_openapi: bool,
    /// chorus: credits a fresh owner holds in the ledger (default 100.00).
    pub chorus_initial_credits: Option<f64>,
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
    /// agora-exchange: serve the sum protocol (`SUM_DOCUMENT`) in place of the echo
    /// protocol.
    pub exchange_sum_protocol: bool,
    /// Serve TLS with this certificate: `https://` and `wss://` URLs (the file
    /// binding stays a folder).
    pub tls: Option<TlsIdentity>,
}

pub struct Server {
    pub endpoints: Endpoints,
    /// A separate ledger's URL (chorus with `separate_ledger`).
    pub ledger_url: Option<String>,
    started: Started,
}

impl Server {
    pub async fn stop(self) {
        self.started.stop().await;
    }
}

impl From<Started> for Server {
    fn from(started: Started) -> Server {
        let endpoints = started
            .urls
            .iter()
            .map(|(b, url)| {
                let t = match b {
                    Binding::Http => Transport::Http,
                    Binding::Ws => Transport::Ws,
                    Binding::File => Transport::File,
                };
                (t, url.clone())
            })
            .collect();
        Server {
            endpoints: Endpoints(endpoints),
            ledger_url: started.ledger_url.clone(),
            started,
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
    start::agora_v1(cfg, listen, None).await.map(Server::from)
}

/// Starts the agora-exchange reference server with `cfg` on `listen`.
pub async fn start_agora_exchange(cfg: ExchangeConfig, listen: &str) -> Result<Server, String> {
    start::agora_exchange(cfg, listen, None)
        .await
        .map(Server::from)
}

/// Starts the chorus reference (registry, fixture agent and, unless separate, the
/// ledger) with `cfg` on `listen`.
pub async fn start_chorus(
    cfg: ChorusConfig,
    listen: &str,
    separate_ledger: bool,
) -> Result<Server, String> {
    start::chorus(cfg, listen, separate_ledger, None)
        .await
        .map(Server::from)
}

/// Starts the agora-spaces reference server with `cfg` on `listen`.
pub async fn start_agora_spaces(cfg: SpacesConfig, listen: &str) -> Result<Server, String> {
    start::agora_spaces(cfg, listen, None)
        .await
        .map(Server::from)
}

/// Starts the agentprotocol reference agent. With `listen` = `file:///dir` it serves
/// that folder only; otherwise HTTP and WebSocket on `listen` plus the file binding in
/// a fresh temporary folder.
pub async fn start_agentprotocol(cfg: ApConfig, listen: &str) -> Result<Server, String> {
    start::agentprotocol(cfg, listen, None)
        .await
        .map(Server::from)
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
        start::agora_v1(cfg, listen, opts.tls.as_ref())
            .await
            .map(Server::from)
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
        if opts.exchange_sum_protocol {
            use reference_impl::agora_exchange::document::{ProtocolDocument, SUM_DOCUMENT};
            cfg.documents = vec![ProtocolDocument::new(SUM_DOCUMENT)];
        }
        start::agora_exchange(cfg, listen, opts.tls.as_ref())
            .await
            .map(Server::from)
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
        cfg.openapi = opts.chorus_openapi;
        if let Some(c) = opts.chorus_initial_credits {
            cfg.initial_credits_cents = (c * 100.0).round() as i64;
        }
        if let Some(d) = opts.chorus_delivery {
            cfg.delivery = d;
        }
        start::chorus(cfg, listen, opts.separate_ledger, opts.tls.as_ref())
            .await
            .map(Server::from)
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
        start::agora_spaces(cfg, listen, opts.tls.as_ref())
            .await
            .map(Server::from)
    })
}

/// Starts the agentprotocol reference agent with `opts`.
pub fn agentprotocol<'a>(
    listen: &'a str,
    opts: &'a Options,
) -> Pin<Box<dyn Future<Output = Result<Server, String>> + Send + 'a>> {
    Box::pin(async move {
        let cfg = ApConfig::default().with_faults(&opts.faults)?;
        start::agentprotocol(cfg, listen, opts.tls.as_ref())
            .await
            .map(Server::from)
    })
}
