//! TLS under the wire protocol (issue 13, item 3): nodes with certificates
//! from one CA talk; a plaintext peer, a peer without a valid client
//! certificate under mutual TLS, and an acceptor the dialer does not trust
//! get nothing through.

use crate::common;
use crate::raw_peer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::{node, remote_ref, spawn_calculator, Calc, Node, T};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use volley_remote::transport::TlsSettings;
use volley_remote::wire::{Address, Lane};
use volley_remote::RemoteSettings;

/// A CA and the files of certificates it signed, in a directory of their
/// own.
struct Pki {
    dir: PathBuf,
    ca_cert: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("volley-tls-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("volley test CA {name}"));
        let ca = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        Pki {
            dir,
            ca_cert: ca.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A node certificate for 127.0.0.1 signed by this CA: its settings.
    fn node(&self, name: &str, require_client_cert: bool) -> TlsSettings {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (cert_file, key_file) = (
            self.dir.join(format!("{name}.pem")),
            self.dir.join(format!("{name}.key")),
        );
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        TlsSettings {
            enabled: true,
            cert_file: Some(cert_file),
            key_file: Some(key_file),
            ca_file: Some(self.dir.join("ca.pem")),
            require_client_cert,
            ..TlsSettings::default()
        }
    }
}

async fn tls_node(name: &str, tls: TlsSettings) -> Node {
    node(
        name,
        RemoteSettings {
            tls,
            ..RemoteSettings::default()
        },
    )
    .await
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_nodes_talk_both_ways_on_every_lane() {
    let pki = Pki::new("talk");
    let a = tls_node("alpha", pki.node("alpha", true)).await;
    let b = tls_node("beta", pki.node("beta", true)).await;
    spawn_calculator(&a, "calc");
    spawn_calculator(&b, "calc");
    let to_b = remote_ref(&a, &b, "calc");
    assert_eq!(common::ask_sum(&to_b, T).await.unwrap(), 42);
    assert_eq!(
        common::ask_sum(&remote_ref(&b, &a, "calc"), T)
            .await
            .unwrap(),
        42
    );
    // Large enough for the large lane.
    let len = to_b
        .ask(|reply_to| Calc::Blob(vec![7; 300 * 1024], reply_to), T)
        .await
        .unwrap();
    assert_eq!(len, 300 * 1024);
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Everything a connection brings until it closes (or 5 s pass).
async fn drain(s: &mut tokio::net::TcpStream) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (got, true),
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Err(_) => return (got, false),
        }
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_peer_is_closed_at_the_preamble() {
    let pki = Pki::new("plain");
    let b = tls_node("beta", pki.node("beta", false)).await;
    spawn_calculator(&b, "calc");
    let to = b.remoting.address().clone();
    let me: Address = "volley://mallory@127.0.0.1:9".parse().unwrap();
    let mut s = raw_peer::connect(&to).await;
    let _ = s
        .write_all(&raw_peer::handshake_bytes(&to, &me, 7, Lane::Ordinary))
        .await;
    let (got, closed) = drain(&mut s).await;
    assert!(closed, "a plaintext peer was kept");
    // At most a TLS alert: no handshake response (it would name the node).
    assert!(
        !got.windows(4).any(|w| w == b"beta"),
        "the node answered in clear"
    );
    assert_eq!(b.system.dead_letter_count(), 0);
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_refuses_a_peer_without_a_valid_client_certificate() {
    let pki = Pki::new("mutual");
    let b = tls_node("beta", pki.node("beta", true)).await;
    spawn_calculator(&b, "calc");
    // A node whose certificate another CA signed, trusting b's CA.
    let other = Pki::new("mutual-other");
    let mut stranger = other.node("alpha", false);
    stranger.ca_file = Some(pki.dir.join("ca.pem"));
    let a = tls_node("alpha", stranger).await;
    let answer = common::ask_sum(&remote_ref(&a, &b, "calc"), Duration::from_millis(800)).await;
    assert!(
        matches!(answer, Err(volley::AskError::Timeout { .. })),
        "{answer:?}"
    );
    // A TLS client with no certificate at all.
    let mut roots = rustls::RootCertStore::empty();
    let ca = rustls::pki_types::CertificateDer::from_pem_slice(pki.ca_cert.as_bytes()).unwrap();
    roots.add(ca).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let to = b.remoting.address().clone();
    let tcp = raw_peer::connect(&to).await;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    if let Ok(mut sealed) = connector.connect(name, tcp).await {
        let me: Address = "volley://mallory@127.0.0.1:9".parse().unwrap();
        let _ = sealed
            .write_all(&raw_peer::handshake_bytes(&to, &me, 7, Lane::Ordinary))
            .await;
        let _ = sealed.flush().await;
        let mut got = Vec::new();
        let read = tokio::time::timeout(T, sealed.read_to_end(&mut got)).await;
        assert!(read.is_ok(), "the connection was kept");
        assert!(
            !got.windows(4).any(|w| w == b"beta"),
            "a client without a certificate got a handshake response"
        );
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

use rustls::pki_types::pem::PemObject;

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialer_sends_nothing_to_an_acceptor_it_does_not_trust() {
    let pki = Pki::new("trusted");
    let other = Pki::new("untrusted");
    let b = tls_node("beta", other.node("beta", false)).await;
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    b.system
        .spawn(
            "sink",
            volley::Props::new(move || common::Relay(tx.clone())),
        )
        .unwrap();
    let a = tls_node("alpha", pki.node("alpha", false)).await;
    let sink = a
        .remoting
        .resolve::<i64>(&format!("{}/user/sink", b.remoting.address()))
        .unwrap();
    for n in 0..10 {
        sink.tell(n);
    }
    assert!(
        tokio::time::timeout(Duration::from_secs(1), seen.recv())
            .await
            .is_err(),
        "a message reached an acceptor whose certificate the dialer does not trust"
    );
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_certificate_files_are_clear_start_errors() {
    let pki = Pki::new("files");
    let mut tls = pki.node("alpha", false);
    let missing = pki.dir.join("missing.pem");
    tls.cert_file = Some(missing.clone());
    let system = volley::ActorSystem::with_settings("alpha", volley::Settings::default()).unwrap();
    let settings = RemoteSettings {
        tls,
        ..RemoteSettings::default()
    };
    let err = volley_remote::Remoting::start_with(&system, common::registry(), settings)
        .await
        .err()
        .expect("a missing certificate file must not start");
    assert!(err.to_string().contains("missing.pem"), "{err}");
    system.terminate().await;
}
