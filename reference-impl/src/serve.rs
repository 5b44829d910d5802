//! Starting a reference server on a listener, plain ([`spawn`]) or over TLS with a
//! certificate made at start-up ([`spawn_tls`], [`TlsIdentity`]).

use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio_rustls::server::TlsStream;

/// A running server; dropping it (or calling `stop`) shuts it down.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// Binds `addr` (use port 0 for any free port) and serves `router` in the background.
pub async fn spawn(addr: &str, router: Router) -> std::io::Result<Running> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        // Small request/response exchanges: no Nagle delay on either side.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
    });
    Ok(Running {
        addr: local,
        stop: Some(tx),
        task: Some(task),
    })
}

/// How long a client may take over its TLS handshake before the server drops it.
const HANDSHAKE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// A certificate made at start-up, with its key, and the server configuration that
/// presents it. The certificate is self-signed: a client trusts it by its PEM
/// ([`TlsIdentity::cert_pem`]).
#[derive(Clone)]
pub struct TlsIdentity {
    cert_pem: String,
    names: Vec<String>,
    config: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl TlsIdentity {
    /// A fresh key and a certificate for 127.0.0.1, ::1 and localhost.
    pub fn generate() -> Result<TlsIdentity, String> {
        TlsIdentity::generate_for(&[])
    }

    /// As [`TlsIdentity::generate`], for these host names or IP addresses as well.
    pub fn generate_for(extra_names: &[&str]) -> Result<TlsIdentity, String> {
        let mut names: Vec<String> = Vec::new();
        for n in ["127.0.0.1", "::1", "localhost"].iter().chain(extra_names) {
            if !names.iter().any(|m| m == n) {
                names.push(n.to_string());
            }
        }
        let bad = |e: rcgen::Error| format!("cannot make a TLS certificate: {e}");
        let mut params = rcgen::CertificateParams::new(names.clone()).map_err(bad)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(
            rcgen::DnType::CommonName,
            "agentconform reference server (made at start-up)",
        );
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::hours(1);
        params.not_after = now + time::Duration::days(365);
        let key = rcgen::KeyPair::generate().map_err(bad)?;
        let cert = params.self_signed(&key).map_err(bad)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(
            rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()),
        );
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("cannot set up TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key_der)
            .map_err(|e| format!("cannot set up TLS: {e}"))?;
        // The routers speak HTTP/1.1 (WebSocket upgrades included).
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsIdentity {
            cert_pem: cert.pem(),
            names,
            config: Arc::new(config),
        })
    }

    /// The certificate, PEM: what a client must trust.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The names and addresses the certificate is valid for.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// Accepted TLS connections, handed to `axum::serve`. A task of its own accepts TCP
/// connections and runs each handshake in a task under [`HANDSHAKE_DEADLINE`], so
/// that a slow or silent client delays nobody; it stops when this listener is
/// dropped.
struct TlsListener {
    rx: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(conn) => conn,
            // The acceptor has ended: nothing more comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

async fn accept_tls(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    tx: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let accepted = tokio::select! {
            _ = tx.closed() => return,
            r = listener.accept() => r,
        };
        let (tcp, peer) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // A connection that went away before it was accepted is no reason to
                // wait; anything else (out of file descriptors) is, as axum does.
                let transient = matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                );
                if !transient {
                    tokio::select! {
                        _ = tx.closed() => return,
                        _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                    }
                }
                continue;
            }
        };
        // Small request/response exchanges: no Nagle delay on either side.
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            // A handshake still under way when the server stops is dropped with it.
            let handshake = tokio::time::timeout(HANDSHAKE_DEADLINE, acceptor.accept(tcp));
            tokio::select! {
                _ = tx.closed() => {}
                done = handshake => {
                    if let Ok(Ok(tls)) = done {
                        let _ = tx.send((tls, peer)).await;
                    }
                }
            }
        });
    }
}

/// As [`spawn`], over TLS with `identity`'s certificate: `https://` and `wss://`.
/// Stops the same way; the port is closed when `stop` returns.
pub async fn spawn_tls(
    addr: &str,
    router: Router,
    identity: &TlsIdentity,
) -> std::io::Result<Running> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let acceptor = tokio_rustls::TlsAcceptor::from(identity.config.clone());
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let (conn_tx, conn_rx) = mpsc::channel(64);
        let accepting = tokio::spawn(accept_tls(listener, acceptor, conn_tx));
        let listener = TlsListener { rx: conn_rx, local };
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
        // The TLS listener is gone with the server, so the acceptor ends too.
        let _ = accepting.await;
    });
    Ok(Running {
        addr: local,
        stop: Some(tx),
        task: Some(task),
    })
}
