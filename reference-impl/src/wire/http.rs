//! The HTTP clients of the reference clients, one per setting in a process.
//!
//! Building a `reqwest::Client` loads its TLS configuration (the root certificates)
//! and starts a connection pool; a client built per request costs hundreds of
//! kilobytes, which `agentconform load` multiplies by every concurrent agent. The
//! reference clients therefore share one client per setting, cloned from here (a
//! clone shares the pool and the TLS configuration).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The settings a reference client asks of its HTTP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Setting {
    /// The deadline of every request, when the client sets one.
    pub timeout: Option<Duration>,
    /// Whether proxies named by the environment are ignored.
    pub no_proxy: bool,
    /// Whether redirects are followed (reqwest's default policy) or returned.
    pub follow_redirects: bool,
}

impl Default for Setting {
    fn default() -> Setting {
        Setting {
            timeout: None,
            no_proxy: false,
            follow_redirects: true,
        }
    }
}

static CLIENTS: OnceLock<Mutex<HashMap<Setting, reqwest::Client>>> = OnceLock::new();

fn clients() -> std::sync::MutexGuard<'static, HashMap<Setting, reqwest::Client>> {
    let clients = CLIENTS.get_or_init(Mutex::default);
    clients.lock().unwrap_or_else(|p| p.into_inner())
}

/// A reqwest client builder, with the process's TLS provider installed first:
/// reqwest is built without one of its own (feature `rustls-no-provider`) and
/// panics when none is installed. Every HTTP client of the project starts here
/// (clippy.toml disallows the others).
#[allow(clippy::disallowed_methods)] // the one place that calls it
pub fn builder() -> reqwest::ClientBuilder {
    install_provider();
    reqwest::Client::builder()
}

/// Installs rustls's ring provider as the process default, once; a provider
/// installed before stays.
pub fn install_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The shared client for `setting`, built on first use.
pub fn client(setting: Setting) -> Result<reqwest::Client, String> {
    let mut clients = clients();
    if let Some(c) = clients.get(&setting) {
        return Ok(c.clone());
    }
    let mut b = builder();
    if let Some(t) = setting.timeout {
        b = b.timeout(t);
    }
    if setting.no_proxy {
        b = b.no_proxy();
    }
    if !setting.follow_redirects {
        b = b.redirect(reqwest::redirect::Policy::none());
    }
    let c = b.build().map_err(|e| format!("no HTTP client: {e}"))?;
    // Settings come from a few constants and the caller's deadlines; past this many
    // the client is used once and not kept, so the cache stays bounded.
    if clients.len() < 64 {
        clients.insert(setting, c.clone());
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_client_per_setting() {
        let a = Setting {
            timeout: Some(Duration::from_millis(1234)),
            ..Setting::default()
        };
        let b = Setting {
            no_proxy: true,
            ..a
        };
        client(a).unwrap();
        client(a).unwrap();
        client(b).unwrap();
        let built = clients();
        assert!(built.contains_key(&a) && built.contains_key(&b));
        // Other tests may build clients of their own settings, never another of these.
        let mine = built.keys().filter(|s| s.timeout == a.timeout).count();
        assert_eq!(mine, 2);
    }
}
