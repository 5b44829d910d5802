//! Starting each protocol's reference server on a listener, with its fixtures: the
//! one place that wires a configuration to a router. The harness embeds these
//! (`agentconform run` without a target, `serve`), and the mutation judge
//! (`tests/mutation_judge.rs`) starts a mutated reference through them without
//! building the harness.

use crate::agentprotocol::agent::{ApAgent, ApConfig};
use crate::agora_exchange::server::{Exchange, ExchangeConfig};
use crate::agora_spaces::server::{Spaces, SpacesConfig};
use crate::agora_v1::agent::{Agent, AgentConfig};
use crate::chorus::server::{self as chorus_server, Chorus, ChorusConfig};
use crate::serve::{spawn, spawn_tls, Running, TlsIdentity};
use std::path::PathBuf;
use std::sync::Arc;

/// How a started server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    Http,
    Ws,
    File,
}

/// A started reference server: its URLs, and what stops it.
pub struct Started {
    /// Each binding's URL, in the order the harness tries them.
    pub urls: Vec<(Binding, String)>,
    /// A separate ledger's URL (chorus with `separate_ledger`).
    pub ledger_url: Option<String>,
    running: Running,
    extra: Option<Running>,
    /// A folder the server made for itself and removes when it stops.
    temp_dir: Option<PathBuf>,
    file_stop: Option<tokio::sync::watch::Sender<bool>>,
}

impl Started {
    fn plain(urls: Vec<(Binding, String)>, running: Running) -> Started {
        Started {
            urls,
            ledger_url: None,
            running,
            extra: None,
            temp_dir: None,
            file_stop: None,
        }
    }

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

/// Serves `router` on `listen`, over TLS when `tls` is given.
async fn listen_on(
    listen: &str,
    router: axum::Router,
    tls: Option<&TlsIdentity>,
) -> Result<Running, String> {
    match tls {
        Some(id) => spawn_tls(listen, router, id).await,
        None => spawn(listen, router).await,
    }
    .map_err(|e| format!("cannot listen on {listen}: {e}"))
}

/// `http` or `ws`, with an `s` under TLS.
fn scheme(plain: &str, tls: Option<&TlsIdentity>) -> String {
    match tls {
        Some(_) => format!("{plain}s"),
        None => plain.to_string(),
    }
}

/// The folder of a `file:///dir` URL.
pub fn dir_of(url: &str) -> Option<PathBuf> {
    url.strip_prefix("file://")
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
}

/// The agora-v1 agent: HTTP and WebSocket on one listener.
pub async fn agora_v1(
    cfg: AgentConfig,
    listen: &str,
    tls: Option<&TlsIdentity>,
) -> Result<Started, String> {
    let agent = Arc::new(Agent::with_config(cfg));
    let running = listen_on(listen, crate::agora_v1::server::router(agent), tls).await?;
    let a = running.addr;
    let (http, ws) = (scheme("http", tls), scheme("ws", tls));
    Ok(Started::plain(
        vec![
            (Binding::Http, format!("{http}://{a}/")),
            (Binding::Ws, format!("{ws}://{a}/")),
        ],
        running,
    ))
}

/// The agora-exchange server.
pub async fn agora_exchange(
    cfg: ExchangeConfig,
    listen: &str,
    tls: Option<&TlsIdentity>,
) -> Result<Started, String> {
    let ex = Arc::new(Exchange::with_config(cfg));
    let running = listen_on(listen, crate::agora_exchange::server::router(ex), tls).await?;
    let http = scheme("http", tls);
    Ok(Started::plain(
        vec![(Binding::Http, format!("{http}://{}/", running.addr))],
        running,
    ))
}

/// The chorus registry with its fixture agent and, unless `separate_ledger`, the
/// ledger on the same listener.
pub async fn chorus(
    cfg: ChorusConfig,
    listen: &str,
    separate_ledger: bool,
    tls: Option<&TlsIdentity>,
) -> Result<Started, String> {
    let c = Arc::new(Chorus::with_config(cfg));
    let running = listen_on(
        listen,
        chorus_server::router(c.clone(), !separate_ledger),
        tls,
    )
    .await?;
    let a = running.addr;
    let http = scheme("http", tls);
    c.register_fixture(&format!("{http}://{a}"));
    let mut started = Started::plain(vec![(Binding::Http, format!("{http}://{a}/"))], running);
    if separate_ledger {
        let host = listen.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h);
        let l = listen_on(
            &format!("{host}:0"),
            chorus_server::ledger_router(c.clone()),
            tls,
        )
        .await
        .map_err(|e| format!("cannot listen for the ledger: {e}"))?;
        let url = format!("{http}://{}/", l.addr);
        // Set once, here, before any request can read it: a second set cannot happen.
        let _ = c.ledger_at.set(url.clone());
        started.ledger_url = Some(url);
        started.extra = Some(l);
    }
    Ok(started)
}

/// The agora-spaces hub, its WebSocket at `/ws`.
pub async fn agora_spaces(
    cfg: SpacesConfig,
    listen: &str,
    tls: Option<&TlsIdentity>,
) -> Result<Started, String> {
    let spaces = Spaces::new(cfg);
    let running = listen_on(listen, crate::agora_spaces::server::router(spaces), tls).await?;
    let ws = scheme("ws", tls);
    Ok(Started::plain(
        vec![(Binding::Ws, format!("{ws}://{}/ws", running.addr))],
        running,
    ))
}

/// The agentprotocol agent. With `listen` = `file:///dir` it serves that folder
/// only; otherwise HTTP and WebSocket on `listen` plus the file binding in a fresh
/// temporary folder.
pub async fn agentprotocol(
    cfg: ApConfig,
    listen: &str,
    tls: Option<&TlsIdentity>,
) -> Result<Started, String> {
    let agent = Arc::new(ApAgent::new(crate::wire::keys::Keypair::generate(), cfg));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let poll = std::time::Duration::from_millis(10);
    if let Some(dir) = dir_of(listen) {
        if !dir.is_dir() {
            return Err(format!("{} is not a folder", dir.display()));
        }
        tokio::spawn(crate::agentprotocol::file::serve_folder(
            agent, dir, poll, rx,
        ));
        // A listener nobody uses keeps the shape; it is closed on stop.
        let running = spawn("127.0.0.1:0", axum::Router::new())
            .await
            .map_err(|e| format!("cannot start: {e}"))?;
        let mut started = Started::plain(vec![(Binding::File, listen.to_string())], running);
        started.file_stop = Some(tx);
        return Ok(started);
    }
    let running = listen_on(
        listen,
        crate::agentprotocol::server::router(agent.clone()),
        tls,
    )
    .await?;
    let dir = std::env::temp_dir().join(format!(
        "agentconform-files-{}-{}",
        std::process::id(),
        crate::wire::new_id()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    tokio::spawn(crate::agentprotocol::file::serve_folder(
        agent,
        dir.clone(),
        poll,
        rx,
    ));
    let a = running.addr;
    let (http, ws) = (scheme("http", tls), scheme("ws", tls));
    let mut started = Started::plain(
        vec![
            (Binding::Http, format!("{http}://{a}/")),
            (Binding::Ws, format!("{ws}://{a}/")),
            (Binding::File, format!("file://{}", dir.display())),
        ],
        running,
    );
    started.temp_dir = Some(dir);
    started.file_stop = Some(tx);
    Ok(started)
}
