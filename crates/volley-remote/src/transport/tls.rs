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
//! (`writer/connection.rs`).
//!
//! A node's certificate serves both as its server certificate and as its
//! client certificate; `ca_file` holds the roots that peers' certificates
//! must chain to. The dialer checks that the acceptor's certificate names
//! the host it dialed (an IP address or a DNS name, from the address).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use serde::{Deserialize, Serialize};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::settings::RemoteSettingsError;

/// `[remote.tls]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSettings {
    /// TLS on every connection, both ways. Default false (loopback
    /// development); nodes must all have it on or all off.
    pub enabled: bool,
    /// This node's certificate chain (PEM), leaf first.
    pub cert_file: Option<PathBuf>,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
    /// The certificates (PEM) that peers' certificates must chain to.
    pub ca_file: Option<PathBuf>,
    /// Mutual TLS: a dialing node must present a certificate that chains to
    /// `ca_file`, or its connection is refused. Default false (only the
    /// accepting node proves itself).
    pub require_client_cert: bool,
}

impl TlsSettings {
    pub(crate) fn validate(&self) -> Result<(), RemoteSettingsError> {
        if !self.enabled {
            return Ok(());
        }
        for (key, file) in [
            ("tls.cert_file", &self.cert_file),
            ("tls.key_file", &self.key_file),
            ("tls.ca_file", &self.ca_file),
        ] {
            if file.is_none() {
                return Err(RemoteSettingsError::OutOfRange {
                    key,
                    reason: "must be set when tls.enabled is true",
                });
            }
        }
        Ok(())
    }
}

/// A certificate, key or trust root that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or holds no usable PEM item.
    #[error("{file}: {problem}")]
    File {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// rustls refused the configuration (a key that does not match the
    /// certificate, say).
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The TLS configuration both ways, built once at start.
pub(crate) struct TlsContext {
    pub(crate) acceptor: TlsAcceptor,
    pub(crate) connector: TlsConnector,
}

impl TlsContext {
    /// The context for `settings`, or `None` when TLS is off.
    pub(crate) fn from_settings(settings: &TlsSettings) -> Result<Option<Self>, TlsError> {
        if !settings.enabled {
            return Ok(None);
        }
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
            let verifier =
                WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
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
        Ok(Some(TlsContext {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
        }))
    }
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
