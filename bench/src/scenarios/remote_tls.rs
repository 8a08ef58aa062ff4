//! The TLS rows of the remote scenarios: throwaway certificates.

use volley_remote::transport::TlsSettings;

/// Throwaway certificates for the TLS rows: a CA and one certificate for
/// 127.0.0.1 (ECDSA P-256) that both nodes use, in a temporary directory;
/// mutual TLS, as a production cluster would run.
pub fn bench_tls() -> crate::Result<TlsSettings> {
    use rcgen::{
        BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };
    let dir = std::env::temp_dir().join(format!("volley-bench-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let mut node = CertificateParams::new(vec!["127.0.0.1".to_string()])?;
    node.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = node.signed_by(&key, &issuer)?;
    let (ca_file, cert_file, key_file) = (
        dir.join("ca.pem"),
        dir.join("node.pem"),
        dir.join("node.key"),
    );
    std::fs::write(&ca_file, ca_cert.pem())?;
    std::fs::write(&cert_file, cert.pem())?;
    std::fs::write(&key_file, key.serialize_pem())?;
    Ok(TlsSettings {
        enabled: true,
        cert_file: Some(cert_file),
        key_file: Some(key_file),
        ca_file: Some(ca_file),
        require_client_cert: true,
        ..TlsSettings::default()
    })
}
