//! TLS under the wire protocol (`[remote.tls]`), with rustls: the TLS
//! handshake comes first on every connection, then the preamble and the
//! volley handshake inside it.
//!
//! The accepting side keeps tokio-rustls' stream for the whole connection
//! (it only reads). The dialing side does its handshakes through
//! tokio-rustls too, then takes the stream apart: the lane's writer keeps
//! the TCP stream and the rustls session and encrypts in `Connection`
//! itself, because its bytes are written with non-blocking `try_write`
//! from whichever thread holds the lane's write token
//! (`outbound/writer/connection.rs`).
//!
//! A node's certificate serves both as its server certificate and as its
//! client certificate; `ca_file` holds the roots that peers' certificates
//! must chain to. The dialer checks that the acceptor's certificate names
//! the host it dialed (an IP address or a DNS name, from the address).
//!
//! The files are read again when they change (`refresh_interval`, as
//! Pekko's rotating-keys provider), so certificates can be rotated without
//! a restart; the check is made by the next connection after the interval,
//! and connections already made keep the session they have.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::transport::settings::{TlsError, TlsSettings};

/// The TLS configuration both ways, built at start and again when its
/// files change (`refresh_interval`).
/// The client side of a TLS session, after its handshakes: what an
/// outbound connection writes through.
pub(crate) type TlsSession = rustls::ClientConnection;

pub(crate) struct TlsContext {
    settings: TlsSettings,
    current: RwLock<Arc<Configs>>,
    refresh: Mutex<Refresh>,
}

/// One reading of the files.
struct Configs {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
}

/// When the files were last looked at, and what they looked like.
struct Refresh {
    checked: Instant,
    stamps: [Option<SystemTime>; 3],
}

impl TlsContext {
    /// The context for `settings`, or `None` when TLS is off.
    pub(crate) fn from_settings(settings: &TlsSettings) -> Result<Option<Self>, TlsError> {
        if !settings.enabled {
            return Ok(None);
        }
        let stamps = stamps(settings);
        let configs = build(settings)?;
        Ok(Some(TlsContext {
            settings: settings.clone(),
            current: RwLock::new(Arc::new(configs)),
            refresh: Mutex::new(Refresh {
                checked: Instant::now(),
                stamps,
            }),
        }))
    }

    /// What accepts a connection now.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.refresh_if_due();
        read(&self.current).acceptor.clone()
    }

    /// What dials a connection now.
    pub(crate) fn connector(&self) -> TlsConnector {
        self.refresh_if_due();
        read(&self.current).connector.clone()
    }

    /// Reads the files again if the interval has passed since they were
    /// last looked at and one of them changed since it was last read. A
    /// reading that fails keeps what is in use (and is tried again at the
    /// next look, the files being perhaps half written).
    fn refresh_if_due(&self) {
        let interval = self.settings.refresh_interval;
        if interval.is_zero() {
            return;
        }
        let mut refresh = match self.refresh.try_lock() {
            Ok(refresh) => refresh,
            // Another connection is looking right now.
            Err(_) => return,
        };
        if refresh.checked.elapsed() < interval {
            return;
        }
        refresh.checked = Instant::now();
        let now = stamps(&self.settings);
        if now == refresh.stamps {
            return;
        }
        match build(&self.settings) {
            Ok(configs) => {
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(configs);
                refresh.stamps = now;
                tracing::info!("TLS certificates read again: new connections use them");
            }
            Err(e) => tracing::warn!(
                "TLS files changed but cannot be used ({e}); the certificates in use are kept"
            ),
        }
    }
}

fn read(current: &RwLock<Arc<Configs>>) -> Arc<Configs> {
    current.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The modification times of the certificate, key and CA files.
fn stamps(settings: &TlsSettings) -> [Option<SystemTime>; 3] {
    [&settings.cert_file, &settings.key_file, &settings.ca_file].map(|file| {
        let file = file.as_ref()?;
        std::fs::metadata(file).and_then(|m| m.modified()).ok()
    })
}

/// Reads the files of `settings` into configurations both ways.
fn build(settings: &TlsSettings) -> Result<Configs, TlsError> {
    let need = |f: &Option<PathBuf>| f.clone().unwrap_or_default();
    let (cert_file, key_file) = (need(&settings.cert_file), need(&settings.key_file));
    let chain = certificates(&cert_file)?;
    let key = private_key(&key_file)?;
    // rustls' "keys may not be consistent" names neither file.
    let mismatch = |e| match e {
        rustls::Error::InconsistentKeys(_) => TlsError::File {
            file: key_file.clone(),
            problem: format!("does not match the certificate in {}", cert_file.display()),
        },
        e => TlsError::Config(e),
    };
    let mut roots = RootCertStore::empty();
    let ca_file = need(&settings.ca_file);
    for root in certificates(&ca_file)? {
        roots.add(root).map_err(|e| TlsError::File {
            file: ca_file.clone(),
            problem: format!("not a usable trust root: {e}"),
        })?;
    }
    let roots = Arc::new(roots);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let server = if settings.require_client_cert {
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?;
        server.with_client_cert_verifier(verifier)
    } else {
        server.with_no_client_auth()
    };
    let mut server = server
        .with_single_cert(chain.clone(), key.clone_key())
        .map_err(mismatch)?;
    // The dialer never resumes a session: tickets would only be bytes
    // on a connection whose accepting side otherwise never writes.
    server.send_tls13_tickets = 0;
    let client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(mismatch)?;
    Ok(Configs {
        acceptor: TlsAcceptor::from(Arc::new(server)),
        connector: TlsConnector::from(Arc::new(client)),
    })
}

/// The name the acceptor's certificate must carry for `host`.
pub(crate) fn server_name(host: &str) -> std::io::Result<ServerName<'static>> {
    ServerName::try_from(host.to_string()).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{host} is not a name a certificate can carry: {e}"),
        )
    })
}

fn certificates(file: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |problem: String| TlsError::File {
        file: file.to_path_buf(),
        problem,
    };
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| bad(format!("cannot read certificates: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate (PEM `CERTIFICATE`)".into()));
    }
    Ok(certs)
}

fn private_key(file: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(file).map_err(|e| TlsError::File {
        file: file.to_path_buf(),
        problem: format!("no usable private key: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};
    use std::time::Duration;

    /// Writes a self-signed certificate for 127.0.0.1 (its own CA) into
    /// `dir`'s three files.
    fn write_files(dir: &Path) {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
        std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
        std::fs::write(dir.join("ca.pem"), cert.pem()).unwrap();
    }

    #[test]
    fn changed_files_are_read_again_and_unusable_ones_are_not_taken() {
        let dir = std::env::temp_dir().join(format!("volley-tls-refresh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_files(&dir);
        let settings = TlsSettings {
            enabled: true,
            cert_file: Some(dir.join("cert.pem")),
            key_file: Some(dir.join("key.pem")),
            ca_file: Some(dir.join("ca.pem")),
            refresh_interval: Duration::from_millis(1),
            ..TlsSettings::default()
        };
        let tls = TlsContext::from_settings(&settings).unwrap().unwrap();
        let in_use = || read(&tls.current);
        let first = in_use();
        std::thread::sleep(Duration::from_millis(5));
        let _ = tls.acceptor();
        assert!(Arc::ptr_eq(&first, &in_use()), "unchanged files: kept");
        std::fs::write(dir.join("cert.pem"), "not a certificate").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let _ = tls.connector();
        assert!(Arc::ptr_eq(&first, &in_use()), "an unusable file: kept");
        write_files(&dir);
        std::thread::sleep(Duration::from_millis(5));
        let _ = tls.acceptor();
        assert!(!Arc::ptr_eq(&first, &in_use()), "usable new files: taken");
        let never = TlsContext::from_settings(&TlsSettings {
            refresh_interval: Duration::ZERO,
            ..settings
        })
        .unwrap()
        .unwrap();
        let before = read(&never.current);
        write_files(&dir);
        let _ = never.acceptor();
        assert!(Arc::ptr_eq(&before, &read(&never.current)), "0: read once");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
