//! Bounds and timeouts: slow consumers, idle and silent clients, too many
//! asks or sessions. Nothing grows without bound.

use std::time::Duration;

use serde_json::json;
use volley_web::{SlowConsumer, WebSettings};

use crate::common::{Server, Ws};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_acknowledges_is_closed_with_4429_under_policy_close() {
    let settings = WebSettings {
        max_queued: 4,
        slow_consumer: SlowConsumer::Close,
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let (mut ws, _) = server.client().await;
    for id in 0..5 {
        ws.send(json!({"t": "ask", "id": id, "service": "counter", "msg": "get"}))
            .await;
    }
    let (code, reason) = ws.closed().await;
    assert_eq!(code, 4429, "{reason}");
    volley_testkit::eventually("the session ends", || server.gateway.session_count() == 0).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_frames_free_the_queue() {
    let settings = WebSettings {
        max_queued: 2,
        slow_consumer: SlowConsumer::Close,
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let (mut ws, _) = server.client().await;
    for id in 1..=10 {
        ws.send(json!({"t": "ask", "id": id, "service": "counter", "msg": "get"}))
            .await;
        let reply = ws.next().await;
        assert_eq!(reply["seq"], id);
        ws.send(json!({"t": "ack", "seq": id})).await;
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_oldest_counts_every_frame_it_drops() {
    let settings = WebSettings {
        max_queued: 4,
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let dead_before = server.system.dead_letter_count();
    let (mut ws, _) = server.client().await;
    ws.send(json!({"t": "sub", "topic": "news"})).await;
    server.subscribers(1).await;
    for n in 0..10 {
        server
            .news
            .tell(volley::TopicCommand::Publish(n.to_string()));
    }
    // Published in order, the last is never dropped; every other one
    // arrives, or is counted (a dead letter if it was dropped unsent).
    let mut received = 0;
    loop {
        let frame = ws.next().await;
        received += 1;
        if frame["msg"] == "9" {
            break;
        }
    }
    let gateway = server.gateway.clone();
    let system = server.system.clone();
    volley_testkit::eventually("every frame is accounted for", || {
        let dead = system.dead_letter_count() - dead_before;
        gateway.dropped_sent_frames() + dead == 6 && received + dead == 10
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_client_is_closed_with_4408() {
    let settings = WebSettings {
        idle_timeout: Duration::from_millis(100),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let (mut ws, _) = server.client().await;
    let (code, reason) = ws.closed().await;
    assert_eq!(code, 4408);
    assert!(reason.contains("idle"), "{reason}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_ping_closes_with_4408() {
    let settings = WebSettings {
        ping_interval: Duration::from_millis(20),
        ping_timeout: Duration::from_millis(100),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let (mut ws, _) = server.client().await;
    assert_eq!(ws.next().await["t"], "ping");
    let (code, reason) = ws.closed().await;
    assert_eq!(code, 4408);
    assert!(reason.contains("pong"), "{reason}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_open_asks_are_overloaded() {
    let settings = WebSettings {
        max_open_asks: 2,
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let (mut ws, _) = server.client().await;
    for id in 0..3 {
        ws.send(json!({"t": "ask", "id": id, "service": "counter", "msg": "never"}))
            .await;
    }
    let error = ws.next().await;
    assert_eq!(
        (error["id"].clone(), error["code"].clone()),
        (json!(2), json!("overloaded"))
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_past_max_sessions_are_refused_with_1013() {
    let settings = WebSettings {
        max_sessions: 1,
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let (_first, _) = server.client().await;
    let mut second = server.connect("").await;
    second.send(json!({"t": "hello", "v": 1})).await;
    assert_eq!(second.closed().await.0, 1013);
    server.stop().await;
}

/// Asks the counter over `ws` and checks the answer comes: the gateway
/// still serves a client after what a test made it refuse or cut off.
async fn the_counter_answers(ws: &mut Ws) {
    ws.send(json!({"t": "ask", "id": 1, "service": "counter", "msg": "get"}))
        .await;
    assert_eq!(ws.next().await["id"], 1);
}

fn connection_limits(per_ip: usize, handshake: Duration) -> volley::net::ConnectionLimits {
    volley::net::ConnectionLimits {
        max_connections: per_ip + 1,
        max_connections_per_ip: per_ip,
        handshake_timeout: handshake,
        first_bytes: 16,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_per_ip_cap_are_closed_unread_and_counted() {
    let settings = WebSettings {
        connections: connection_limits(2, Duration::from_secs(30)),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let gate = server.gateway.connection_gate().clone();
    let (ws, _) = server.client().await;
    let idle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    volley_testkit::eventually("two connections admitted", || gate.open() == 2).await;
    let mut third = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    volley_testkit::closed_by_peer(&mut third).await;
    assert_eq!(gate.refused().max_connections_per_ip, 1);
    drop(idle);
    ws.close(1000).await;
    volley_testkit::eventually("both let go", || gate.open() == 0).await;
    let (mut ws, _) = server.client().await;
    the_counter_answers(&mut ws).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_no_request_line_in_time_is_closed() {
    use tokio::io::AsyncWriteExt;
    let settings = WebSettings {
        connections: connection_limits(8, Duration::from_millis(100)),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let gate = server.gateway.connection_gate().clone();
    let mut slow = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(b"GET /").await.unwrap();
    volley_testkit::closed_by_peer(&mut slow).await;
    assert_eq!(gate.refused().handshake_timeout, 1);
    volley_testkit::eventually("the connection let go", || gate.open() == 0).await;
    // A client that starts in time is served past the timeout.
    let (mut ws, _) = server.client().await;
    let quiet = tokio::time::timeout(Duration::from_millis(300), ws.next()).await;
    assert!(quiet.is_err(), "a frame came unasked: {quiet:?}");
    the_counter_answers(&mut ws).await;
    server.stop().await;
}

/// A client past the request line that never finishes its headers is
/// closed after `header_timeout`; one that sends more header bytes than
/// `max_header_bytes` is answered 431 or closed, without the gateway
/// buffering them; a well-behaved client is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_or_oversized_request_headers_are_cut_off() {
    use tokio::io::AsyncWriteExt;
    let settings = WebSettings {
        header_timeout: Duration::from_millis(300),
        max_header_bytes: 16 * 1024,
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let gate = server.gateway.connection_gate().clone();
    let mut trickle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    trickle
        .write_all(b"GET /lp/recv HTTP/1.1\r\nHost: x\r\nX-One: 1\r\n")
        .await
        .unwrap();
    let mut flood = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    flood
        .write_all(b"GET /lp/recv HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let header = format!("X-Filler: {}\r\n", "a".repeat(1000));
    for _ in 0..64 {
        // Past the bound the server stops reading, and may close.
        if flood.write_all(header.as_bytes()).await.is_err() {
            break;
        }
    }
    assert!(
        volley_testkit::closed_by_peer_within(Duration::from_secs(10), &mut flood).await,
        "64 KiB of unfinished headers were kept"
    );
    assert!(
        volley_testkit::closed_by_peer_within(Duration::from_secs(10), &mut trickle).await,
        "unfinished headers were waited for past header_timeout"
    );
    volley_testkit::eventually("both let go", || gate.open() == 0).await;
    let (mut ws, _) = server.client().await;
    the_counter_answers(&mut ws).await;
    server.stop().await;
}
