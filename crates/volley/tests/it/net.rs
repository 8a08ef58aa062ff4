//! The gateways' connection gate: caps on open connections, in all and per
//! IP, and the deadline for a new connection's first bytes; and the bound
//! on a write the peer does not take (`WriteStall`).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use volley::net::{
    ConnectionGate, ConnectionLimits, GatedStream, Refusal, RefusedCounts, WriteStall,
};

const HANDSHAKE_TIMEOUT: Duration = Duration::from_millis(50);

fn limits(max_connections: usize, max_connections_per_ip: usize) -> ConnectionLimits {
    ConnectionLimits {
        max_connections,
        max_connections_per_ip,
        handshake_timeout: HANDSHAKE_TIMEOUT,
        first_bytes: 4,
    }
}

fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
}

#[test]
fn past_its_caps_the_gate_refuses_and_a_closed_connection_frees_its_place() {
    let gate = ConnectionGate::new("test", limits(3, 2));
    let a1 = gate.admit(ip(1)).unwrap();
    let _a2 = gate.admit(ip(1)).unwrap();
    assert_eq!(
        gate.admit(ip(1)).unwrap_err(),
        Refusal::MaxConnectionsPerIp(2)
    );
    let _b1 = gate.admit(ip(2)).unwrap();
    assert_eq!(gate.admit(ip(3)).unwrap_err(), Refusal::MaxConnections(3));
    assert_eq!(gate.open(), 3);
    drop(a1);
    assert_eq!(gate.open(), 2);
    let _a3 = gate.admit(ip(1)).unwrap();
    let refused = RefusedCounts {
        max_connections: 1,
        max_connections_per_ip: 1,
        handshake_timeout: 0,
    };
    assert_eq!(gate.refused(), refused);
}

#[tokio::test]
async fn a_connection_silent_past_the_handshake_timeout_is_closed_and_counted() {
    let gate = ConnectionGate::new("test", limits(8, 8));
    let (mut client, server) = tokio::io::duplex(64);
    let mut gated = GatedStream::new(server, gate.admit(ip(1)).unwrap());
    // Three bytes of the four that count as started: still silent.
    client.write_all(b"abc").await.unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(gated.read(&mut buf).await.unwrap(), 3);
    let err = gated.read(&mut buf).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    assert_eq!(gate.refused().handshake_timeout, 1);
    drop(gated);
    assert_eq!(gate.open(), 0);
}

#[tokio::test]
async fn a_connection_that_started_in_time_has_no_deadline_after() {
    let gate = ConnectionGate::new("test", limits(8, 8));
    let (mut client, server) = tokio::io::duplex(64);
    let mut gated = GatedStream::new(server, gate.admit(ip(1)).unwrap());
    client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(gated.read(&mut buf).await.unwrap(), 16);
    // Four handshake timeouts with nothing to read: no error.
    let quiet = tokio::time::timeout(HANDSHAKE_TIMEOUT * 4, gated.read(&mut buf)).await;
    assert!(quiet.is_err(), "the read ended: {quiet:?}");
    client.write_all(b"more").await.unwrap();
    assert_eq!(gated.read(&mut buf).await.unwrap(), 4);
    assert_eq!(gate.refused(), RefusedCounts::default());
    assert_eq!(gate.open(), 1);
}

/// A write blocked on a full pipe goes on once the peer reads; a write the
/// peer never takes fails with `TimedOut`, not before the limit.
#[tokio::test]
async fn a_write_the_peer_does_not_take_fails_after_the_limit() {
    let limit = Duration::from_millis(100);
    let (ours, mut theirs) = tokio::io::duplex(64);
    let mut stream = WriteStall::new(ours, limit);
    let chunk = [7u8; 64];
    stream
        .write_all(&chunk)
        .await
        .expect("the pipe takes one chunk");
    // One task: the second write blocks first, then the read frees it.
    let mut got = [0u8; 64];
    let (wrote, read) = tokio::join!(stream.write_all(&chunk), theirs.read_exact(&mut got));
    wrote.expect("the peer read");
    read.expect("a chunk");
    let started = std::time::Instant::now();
    let error = stream
        .write_all(&[1u8; 65])
        .await
        .expect_err("nobody reads");
    assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
    assert!(started.elapsed() >= limit, "not before the limit");
}
