//! TLS for the drivers: whom the harness trusts when it reaches an `https://` or
//! `wss://` target. One [`Tls`] per run, held in `RunShared`: the HTTP client is built
//! from it ([`Tls::http_client`]) and every WebSocket connect uses it
//! ([`Tls::connector`]), so that both bindings trust the same certificates.
//!
//! - [`Trust::Platform`] (the default): the platform's roots, through
//!   rustls-platform-verifier, as reqwest does on its own.
//! - [`Trust::CaFile`]: only the certificates of a PEM file (`--ca-file`), or of the
//!   embedded servers' certificate (`run --tls`).
//! - [`Trust::Insecure`]: any certificate (`--insecure`). The handshake's signatures
//!   are still checked; the certificate's chain, names and dates are not.

use super::DriveError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Largest CA file read (a bundle of every public root is about 250 KB).
const MAX_CA_FILE: u64 = 4 * 1024 * 1024;

/// What the harness trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The platform's roots.
    Platform,
    /// Only the certificates of a PEM file or text; the string says which.
    CaFile(String),
    /// Any certificate (`--insecure`).
    Insecure,
}

impl fmt::Display for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trust::Platform => f.write_str("the platform's root certificates"),
            Trust::CaFile(what) => write!(f, "the certificates of {what}"),
            Trust::Insecure => f.write_str("any certificate (--insecure: not verified)"),
        }
    }
}

/// The TLS client side of a run: what it trusts and the rustls configurations built
/// from that, once.
#[derive(Clone)]
pub struct Tls {
    trust: Trust,
    /// HTTP: ALPN h2 and http/1.1, what reqwest offers by default.
    http: Arc<ClientConfig>,
    /// WebSocket: ALPN http/1.1 (the upgrade is an HTTP/1.1 request).
    ws: Arc<ClientConfig>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").field("trust", &self.trust).finish()
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn builder(
    provider: &Arc<CryptoProvider>,
) -> Result<rustls::ConfigBuilder<ClientConfig, rustls::WantsVerifier>, String> {
    ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))
}

impl Tls {
    fn new(trust: Trust, config: ClientConfig) -> Tls {
        let mut http = config.clone();
        http.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let mut ws = config;
        ws.alpn_protocols = vec![b"http/1.1".to_vec()];
        Tls {
            trust,
            http: Arc::new(http),
            ws: Arc::new(ws),
        }
    }

    /// Trusts the platform's roots (the default).
    pub fn platform() -> Result<Tls, String> {
        let p = provider();
        let verifier = rustls_platform_verifier::Verifier::new(p.clone())
            .map_err(|e| format!("cannot load the platform's root certificates: {e}"))?;
        let config = builder(&p)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(Tls::new(Trust::Platform, config))
    }

    /// Trusts only the certificates of a PEM file (`--ca-file`).
    pub fn ca_file(path: &Path) -> Result<Tls, String> {
        let name = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| format!("--ca-file {name}: {e}"))?;
        if meta.len() > MAX_CA_FILE {
            return Err(format!("--ca-file {name}: larger than {MAX_CA_FILE} bytes"));
        }
        let pem = std::fs::read(path).map_err(|e| format!("--ca-file {name}: {e}"))?;
        Tls::ca_pem(&pem, &name).map_err(|e| format!("--ca-file {e}"))
    }

    /// Trusts only the certificates of `pem`; `what` names it in messages.
    pub fn ca_pem(pem: &[u8], what: &str) -> Result<Tls, String> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("{what}: not PEM: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("{what}: unusable certificate: {e}"))?;
        }
        if roots.is_empty() {
            return Err(format!("{what}: no PEM certificate in it"));
        }
        let config = builder(&provider())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Tls::new(Trust::CaFile(what.to_string()), config))
    }

    /// Accepts any certificate (`--insecure`).
    pub fn insecure() -> Result<Tls, String> {
        let p = provider();
        let config = builder(&p)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(p.clone())))
            .with_no_client_auth();
        Ok(Tls::new(Trust::Insecure, config))
    }

    /// The choice of the command line: `--ca-file`, `--insecure`, else the platform.
    pub fn from_flags(ca_file: Option<&Path>, insecure: bool) -> Result<Tls, String> {
        match (ca_file, insecure) {
            (Some(_), true) => Err("--ca-file and --insecure exclude each other".into()),
            (Some(p), false) => Tls::ca_file(p),
            (None, true) => Tls::insecure(),
            (None, false) => Tls::platform(),
        }
    }

    pub fn trust(&self) -> &Trust {
        &self.trust
    }

    /// Whether a certificate is verified at all (not `--insecure`).
    pub fn verifies(&self) -> bool {
        self.trust != Trust::Insecure
    }

    /// The run's HTTP client: one per run (connection reuse), no proxies (targets are
    /// addressed directly), no redirects, this TLS configuration.
    pub fn http_client(&self) -> Result<reqwest::Client, String> {
        reference_impl::wire::http::builder()
            .no_proxy()
            // A kept-alive connection idle for a second is not used again: servers
            // close idle connections after as little as 2 s (5 s is common), and a
            // request sent as the close arrives finds no reply (drive::http::request
            // sends such a request once more).
            .pool_idle_timeout(Duration::from_secs(1))
            .redirect(reqwest::redirect::Policy::none())
            .tls_backend_preconfigured((*self.http).clone())
            .build()
            .map_err(|e| {
                format!(
                    "cannot build the HTTP client: {}",
                    super::http::error_chain(&e)
                )
            })
    }

    /// What a WebSocket connect uses for `wss://` (a `ws://` URL stays plain).
    pub fn connector(&self) -> tokio_tungstenite::Connector {
        tokio_tungstenite::Connector::Rustls(self.ws.clone())
    }

    /// One TLS handshake with the host of an `https://` or `wss://` URL, under
    /// `timeout`: what was negotiated. It sends nothing past the handshake.
    pub async fn handshake(&self, url: &str, timeout: Duration) -> Result<Handshake, DriveError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| DriveError::Connect(format!("{url}: not a URL: {e}")))?;
        let host = parsed
            .host_str()
            .ok_or_else(|| DriveError::Connect(format!("{url}: no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        // A name or an IP address literal.
        let name = ServerName::try_from(host.clone())
            .map_err(|e| DriveError::Connect(format!("{url}: {e}")))?;
        let port = parsed
            .port_or_known_default()
            .ok_or_else(|| DriveError::Connect(format!("{url}: no port")))?;
        let connector = tokio_rustls::TlsConnector::from(self.http.clone());
        let work = async {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|e| DriveError::Connect(e.to_string()))?;
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|e| DriveError::Connect(super::http::error_chain(&e)))?;
            let (_, conn) = tls.get_ref();
            let seen = Handshake {
                version: conn
                    .protocol_version()
                    .map_or_else(|| "?".into(), |v| format!("{v:?}")),
                cipher_suite: conn
                    .negotiated_cipher_suite()
                    .map_or_else(|| "?".into(), |s| format!("{:?}", s.suite())),
                alpn: conn
                    .alpn_protocol()
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
                peer_certificates: conn.peer_certificates().map_or(0, |c| c.len()),
                verified: self.verifies(),
            };
            Ok::<_, DriveError>((seen, tls))
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(Ok((seen, mut tls))) => {
                use tokio::io::AsyncWriteExt;
                let _ = tokio::time::timeout(Duration::from_millis(200), tls.shutdown()).await;
                Ok(seen)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(DriveError::Timeout(timeout.as_millis())),
        }
    }
}

/// What a TLS handshake negotiated.
#[derive(Debug, Clone)]
pub struct Handshake {
    /// "TLSv1_3", "TLSv1_2".
    pub version: String,
    pub cipher_suite: String,
    pub alpn: Option<String>,
    /// How many certificates the server presented.
    pub peer_certificates: usize,
    /// Whether the certificate was verified (it was, unless `--insecure`).
    pub verified: bool,
}

/// `--insecure`: any certificate, but the handshake signatures must still verify
/// against the key the certificate carries.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_pick_the_trust() {
        assert_eq!(Tls::insecure().expect("insecure").trust(), &Trust::Insecure);
        assert!(Tls::from_flags(Some(Path::new("x.pem")), true).is_err());
        let e = Tls::ca_pem(b"not pem at all", "x.pem").expect_err("no certificate");
        assert!(e.contains("no PEM certificate"), "{e}");
        let e = Tls::ca_file(Path::new("/nonexistent/ca.pem")).expect_err("missing");
        assert!(e.starts_with("--ca-file /nonexistent/ca.pem"), "{e}");
    }
}
