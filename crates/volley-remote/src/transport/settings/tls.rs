//! `[remote.tls]`: whether connections use TLS, and the files they use
//! (`handshake/tls.rs` builds rustls' configuration from them).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::transport::settings::RemoteSettingsError;

/// `[remote.tls]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// How often the three files are looked at again: the first connection
    /// made (either way) after this long checks their modification times,
    /// and if one changed, reads all three and uses them for new
    /// connections from then on. Files that cannot be used are logged and
    /// the certificates in use are kept. 0 reads them only at start.
    /// Default 10 min (Pekko's `ssl-context-refresh-interval`).
    #[serde(with = "humantime_serde")]
    pub refresh_interval: Duration,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            enabled: false,
            cert_file: None,
            key_file: None,
            ca_file: None,
            require_client_cert: false,
            refresh_interval: Duration::from_secs(10 * 60),
        }
    }
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
