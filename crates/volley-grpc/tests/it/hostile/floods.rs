//! Connections that stop taking part: a peer silent after the preface,
//! whose keep-alive PING goes unanswered (closed after
//! `keep_alive_timeout`), and peers that flood PINGs or SETTINGS without
//! reading the answers: h2 stops reading them once its answers back up,
//! and the writes that stay blocked end the connection after
//! `send_timeout`. The floods run with keep-alive off: its GOAWAY would
//! itself wait on the blocked writes.

use std::time::Duration;

use volley_grpc::{GatewaySettings, Http2Limits};

use super::frames::*;
use crate::echo_server::server;

/// Keep-alive at a pace a test can wait for.
fn quick_keep_alive() -> GatewaySettings {
    GatewaySettings {
        http2: Http2Limits {
            keep_alive_interval: Some(Duration::from_millis(100)),
            keep_alive_timeout: Duration::from_millis(500),
            ..Http2Limits::default()
        },
        ..GatewaySettings::default()
    }
}

/// No keep-alive; writes blocked for 300 ms end a connection.
fn quick_send_timeout() -> GatewaySettings {
    GatewaySettings {
        http2: Http2Limits {
            keep_alive_interval: None,
            send_timeout: Duration::from_millis(300),
            ..Http2Limits::default()
        },
        ..GatewaySettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_silent_after_the_preface_is_pinged_then_closed() {
    let s = server(quick_keep_alive()).await;
    let gate = s.gateway.connection_gate().clone();
    let mut raw = RawH2::tcp(s.served.port).await;
    raw.send(PREFACE).await;
    // No SETTINGS, no PING ACK: nothing more at all.
    let ping = raw.until(|f| f.kind == PING && f.flags & ACK == 0).await;
    assert!(ping.is_some(), "a keep-alive PING before the close");
    raw.closed().await;
    crate::common::wait_for("the connection let go", || gate.open() == 0).await;
    s.still_answers().await;
}

/// Floods `chunk`s without reading: the server, which answers each, stops
/// reading once its answers back up, and its blocked writes end the
/// connection.
async fn flood_unread(chunk: Vec<u8>) {
    let s = server(quick_send_timeout()).await;
    let gate = s.gateway.connection_gate().clone();
    let mut raw = RawH2::connect(s.served.port, &[]).await;
    let flood = raw.flood(move |_| chunk.clone(), 1 << 30);
    let max = volley_testkit::default_timeout();
    let Ok(ended) = tokio::time::timeout(max, flood).await else {
        panic!(
            "the server neither read on nor closed for {max:?}; open {}",
            gate.open()
        );
    };
    let (sent, cut_off) = ended.unwrap();
    assert!(cut_off, "the server read all {sent} bytes");
    crate::common::wait_for("the connection let go", || gate.open() == 0).await;
    s.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_flood_unread_is_cut_off() {
    let pings: Vec<u8> = (0..1000u64)
        .flat_map(|i| frame(PING, 0, 0, &i.to_be_bytes()))
        .collect();
    flood_unread(pings).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "about 2 s in a debug build (h2 acknowledges some 400,000 SETTINGS before its \
            writes block); the same path as the PING flood, which runs by default"]
async fn a_settings_flood_unread_is_cut_off() {
    let one = settings(&[(INITIAL_WINDOW_SIZE, 65_535)]);
    flood_unread(one.repeat(1000)).await;
}
