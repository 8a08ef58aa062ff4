//! Hostile clients: WebSocket frames the protocol does not allow,
//! fragments past the message bound, a message never finished, a ping
//! flood, a WebSocket or long-poll client that never reads. Each gets a
//! close that names what it did, or, when it does not read, is dropped
//! after `send_timeout`; the gateway holds no more for it than its
//! bounds.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;
use volley_web::WebSettings;

use crate::common::{patience, Server, Ws};

/// A data frame with `opcode` and `payload`, sent as it is.
fn raw(opcode: Data, payload: &[u8], last: bool) -> Message {
    Message::Frame(Frame::message(payload.to_vec(), OpCode::Data(opcode), last))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_message_that_is_not_utf8_closes_with_1007() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    ws.send_message(raw(Data::Text, &[b'{', 0xff, 0xfe, b'}'], true))
        .await;
    let (code, reason) = ws.closed().await;
    assert_eq!(code, 1007, "{reason}");
    assert!(reason.contains("UTF-8"), "{reason}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_opcode_closes_with_1002() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    ws.send_message(raw(Data::Reserved(3), b"?", true)).await;
    let (code, reason) = ws.closed().await;
    assert_eq!(code, 1002, "{reason}");
    assert!(reason.contains("opcode"), "{reason}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_first_frame_closes_with_its_code_before_hello() {
    let server = Server::start(WebSettings::default()).await;
    let mut ws = server.connect("").await;
    ws.send_message(raw(Data::Text, &[0xc3, 0x28], true)).await;
    let (code, reason) = ws.closed().await;
    assert_eq!(code, 1007, "{reason}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fragments_past_the_message_bound_close_with_1009() {
    let server = Server::start(WebSettings {
        max_frame: 1024,
        ..WebSettings::default()
    })
    .await;
    let (mut ws, _) = server.client().await;
    // Five fragments of 500 bytes, none the last: the fifth takes the
    // message past twice max_frame (2,048 bytes), where the library stops
    // gathering them. (No more are sent: the server may have closed.)
    ws.send_message(raw(Data::Text, &[b'a'; 500], false)).await;
    for _ in 0..4 {
        let continued = Frame::message(vec![b'a'; 500], OpCode::Data(Data::Continue), false);
        ws.send_message(Message::Frame(continued)).await;
    }
    let (code, reason) = ws.closed().await;
    assert_eq!(code, 1009, "{reason}");
    assert!(reason.contains("too long"), "{reason}");
    server.stop().await;
}

/// Pings at a pace a test can wait for.
fn quick_pings() -> WebSettings {
    WebSettings {
        ping_interval: Duration::from_millis(50),
        ping_timeout: Duration::from_millis(150),
        ..WebSettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_never_finished_closes_with_4408_though_the_client_pings() {
    let server = Server::start(quick_pings()).await;
    let (mut ws, _) = server.client().await;
    // The first fragment of a frame, then only WebSocket pings: one for
    // each of the server's pings, which it does not answer with a pong.
    ws.send_message(raw(Data::Text, br#"{"t":"#, false)).await;
    let until_closed = async {
        loop {
            match ws.message().await {
                Message::Close(frame) => return frame.expect("a close code"),
                _ => ws.send_message(Message::Ping("alive".into())).await,
            }
        }
    };
    let frame = tokio::time::timeout(patience(), until_closed)
        .await
        .expect("closed in time");
    assert_eq!(u16::from(frame.code), 4408, "{frame:?}");
    server.stop().await;
}

/// A client that said hello, whose socket buffers 64 KiB it has not read.
async fn unread_client(server: &Server) -> Ws {
    let mut ws = Ws::open_unread(server.addr, 64 * 1024).await;
    ws.hello(json!({"t": "hello", "v": 1})).await;
    ws
}

/// Waits for the session of a dropped connection to end (its
/// `resume_grace` is short in these tests).
async fn session_ended(server: &Server) {
    let gateway = server.gateway.clone();
    volley_testkit::eventually("the session ends", || gateway.session_count() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_flood_that_never_reads_is_dropped() {
    let server = Server::start(WebSettings {
        send_timeout: Duration::from_millis(200),
        resume_grace: Duration::from_millis(50),
        ..quick_pings()
    })
    .await;
    let ws = unread_client(&server).await;
    let (mut sink, _unread) = ws.into_stream().split();
    let flood = tokio::spawn(async move {
        for _ in 0..1_000_000 {
            if sink
                .send(Message::Ping("x".repeat(100).into()))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    session_ended(&server).await;
    flood.abort();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_dropped_after_the_send_timeout() {
    let server = Server::start(WebSettings {
        send_timeout: Duration::from_millis(200),
        resume_grace: Duration::from_millis(50),
        ..WebSettings::default()
    })
    .await;
    let mut ws = unread_client(&server).await;
    ws.send(json!({"t": "sub", "topic": "news"})).await;
    server.subscribers(1).await;
    let _unread = ws.into_stream();
    // More than the sockets' buffers hold: 8 MB in 80 frames.
    let big = "n".repeat(100_000);
    for _ in 0..80 {
        server.news.tell(volley::TopicCommand::Publish(big.clone()));
    }
    session_ended(&server).await;
    server.stop().await;
}

/// One long-poll call through the gateway's router (no socket); the body.
async fn lp_call(server: &Server, method: http::Method, uri: &str, body: &str) -> bytes::Bytes {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let response = server.gateway.router().oneshot(request).await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response.into_body().collect().await.unwrap().to_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_answer_never_read_lets_its_connection_go() {
    let server = Server::start(WebSettings {
        send_timeout: Duration::from_millis(200),
        ..WebSettings::default()
    })
    .await;
    let gate = server.gateway.connection_gate().clone();
    let welcome = lp_call(
        &server,
        http::Method::POST,
        "/lp/open",
        r#"{"t":"hello","v":1}"#,
    )
    .await;
    let welcome: serde_json::Value = serde_json::from_slice(&welcome).unwrap();
    let session = welcome["session"].as_str().unwrap().to_string();
    let send = format!("/lp/send?session={session}");
    lp_call(
        &server,
        http::Method::POST,
        &send,
        r#"[{"t":"sub","topic":"news"}]"#,
    )
    .await;
    server.subscribers(1).await;
    // A client whose socket takes 64 KiB unread, admitted first.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(64 * 1024).unwrap();
    let mut unread = socket.connect(server.addr).await.unwrap();
    volley_testkit::eventually("the connection admitted", || gate.open() == 1).await;
    // Then an answer of 8 MB waiting for it: all 80 frames queued (a
    // `recv` that acknowledges nothing takes them all, and leaves them).
    let big = "n".repeat(100_000);
    for _ in 0..80 {
        server.news.tell(volley::TopicCommand::Publish(big.clone()));
    }
    let recv = format!("/lp/recv?session={session}&ack=0");
    volley_testkit::eventually_async("all 80 frames queued", async || {
        let held = lp_call(&server, http::Method::GET, &recv, "").await;
        let held: Vec<serde_json::Value> = serde_json::from_slice(&held).unwrap();
        (held.len() == 80).then_some(())
    })
    .await;
    let request = format!("GET /lp/recv?session={session}&ack=0 HTTP/1.1\r\nhost: x\r\n\r\n");
    tokio::io::AsyncWriteExt::write_all(&mut unread, request.as_bytes())
        .await
        .unwrap();
    volley_testkit::eventually("the connection let go", || gate.open() == 0).await;
    server.stop().await;
}
