//! The embedded reference agents: started on loopback when `run` has no target,
//! and by `serve`.

use crate::drive::Transport;
use crate::runner::Endpoints;
use reference_impl::agora_exchange::server::{Exchange, ExchangeConfig};
use reference_impl::agora_v1::agent::{Agent, AgentConfig};
use reference_impl::faults::Fault;
use reference_impl::serve::{spawn, Running};
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub faults: Vec<String>,
    pub offer_ttl_ms: Option<u64>,
    pub replay_window_s: Option<u32>,
    pub conversation_ttl_s: Option<u64>,
}

pub struct Server {
    pub endpoints: Endpoints,
    running: Running,
}

impl Server {
    pub async fn stop(self) {
        self.running.stop().await;
    }
}

/// The fault catalogue of a suite's reference agent.
pub fn faults(suite: &str) -> Option<&'static [Fault]> {
    match suite {
        "agora-v1" => Some(reference_impl::agora_v1::faults::FAULTS),
        "agora-exchange" => Some(reference_impl::agora_exchange::faults::FAULTS),
        _ => None,
    }
}

/// Starts the agora-v1 reference agent with `cfg` on `listen`.
pub async fn start_agora_v1(cfg: AgentConfig, listen: &str) -> Result<Server, String> {
    let agent = Arc::new(Agent::with_config(cfg));
    let running = spawn(listen, reference_impl::agora_v1::server::router(agent))
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let a = running.addr;
    Ok(Server {
        endpoints: Endpoints(vec![
            (Transport::Http, format!("http://{a}/")),
            (Transport::Ws, format!("ws://{a}/")),
        ]),
        running,
    })
}

/// Starts the agora-exchange reference server with `cfg` on `listen`.
pub async fn start_agora_exchange(cfg: ExchangeConfig, listen: &str) -> Result<Server, String> {
    let ex = Arc::new(Exchange::with_config(cfg));
    let running = spawn(listen, reference_impl::agora_exchange::server::router(ex))
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let a = running.addr;
    Ok(Server {
        endpoints: Endpoints(vec![(Transport::Http, format!("http://{a}/"))]),
        running,
    })
}

/// Starts the reference agent of `suite`.
pub async fn start(suite: &str, listen: &str, opts: &Options) -> Result<Server, String> {
    match suite {
        "agora-v1" => {
            let mut cfg = AgentConfig::default().with_faults(&opts.faults)?;
            if let Some(ttl) = opts.offer_ttl_ms {
                cfg.offer_ttl_ms = ttl;
            }
            if let Some(w) = opts.replay_window_s {
                cfg.replay_window = time::Duration::seconds(i64::from(w));
            }
            start_agora_v1(cfg, listen).await
        }
        "agora-exchange" => {
            let mut cfg = ExchangeConfig::default().with_faults(&opts.faults)?;
            if let Some(ttl) = opts.conversation_ttl_s {
                cfg.conversation_ttl_s = ttl;
            }
            start_agora_exchange(cfg, listen).await
        }
        other => Err(format!(
            "unknown suite {other:?}; known suites: {}",
            crate::suites::ids().join(", ")
        )),
    }
}
