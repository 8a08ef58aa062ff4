//! What a client cannot make the gateway hold: connections past the
//! gate's caps, a connection that never sends HTTP/2's preface, request
//! bytes past the shared budget, and a body that never ends.

use crate::common;
use common::wait_for;

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tonic::{Code, Status};
use volley::net::ConnectionLimits;
use volley_grpc::GatewaySettings;

use crate::echo_server::server;

fn limits(max_connections: usize, per_ip: usize, handshake: Duration) -> ConnectionLimits {
    ConnectionLimits {
        max_connections,
        max_connections_per_ip: per_ip,
        handshake_timeout: handshake,
        first_bytes: 24,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_caps_a_connection_is_closed_unread_and_counted() {
    let s = server(GatewaySettings {
        connections: limits(3, 2, Duration::from_secs(30)),
        ..GatewaySettings::default()
    })
    .await;
    let gate = s.gateway.connection_gate().clone();
    let port = s.served.port;
    let first = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let second = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    wait_for("two connections admitted", || gate.open() == 2).await;
    let mut third = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    volley_testkit::closed_by_peer(&mut third).await;
    assert_eq!(gate.refused().max_connections_per_ip, 1);
    assert_eq!(gate.open(), 2);
    drop((first, second));
    wait_for("both connections let go", || gate.open() == 0).await;
    assert_eq!(s.call("after".into()).await.unwrap(), "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_without_the_preface_is_closed_after_the_handshake_timeout() {
    let s = server(GatewaySettings {
        connections: limits(8, 8, Duration::from_millis(100)),
        ..GatewaySettings::default()
    })
    .await;
    let gate = s.gateway.connection_gate().clone();
    let mut slow = TcpStream::connect(("127.0.0.1", s.served.port))
        .await
        .unwrap();
    // Five of the preface's 24 bytes, then nothing.
    slow.write_all(b"PRI *").await.unwrap();
    volley_testkit::closed_by_peer(&mut slow).await;
    assert_eq!(gate.refused().handshake_timeout, 1);
    wait_for("the connection let go", || gate.open() == 0).await;
    assert_eq!(s.call("after".into()).await.unwrap(), "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bytes_past_the_shared_budget_are_refused_and_given_back() {
    let s = server(GatewaySettings {
        max_buffered_request_bytes: 1024,
        ..GatewaySettings::default()
    })
    .await;
    let e = s.call("x".repeat(4096)).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert!(e.message().contains("max_buffered_request_bytes"), "{e:?}");
    assert_eq!(s.gateway.request_bytes_available(), 1024);
    assert_eq!(s.call("small".into()).await.unwrap(), "small");
    assert_eq!(s.gateway.request_bytes_available(), 1024);
}

/// A body that sends a message's prefix and then holds the stream open.
struct Unfinished {
    sent: bool,
}

impl http_body::Body for Unfinished {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.sent {
            return Poll::Pending;
        }
        self.sent = true;
        // A 100-byte message announced, two bytes of it sent.
        let prefix = Bytes::from_static(&[0, 0, 0, 0, 100, 10, 98]);
        Poll::Ready(Some(Ok(Frame::data(prefix))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_unfinished_at_the_deadline_ends_the_call() {
    let s = server(GatewaySettings::default()).await;
    let mut send = common::bare_http2(s.served.port).await;
    let uri = format!("http://127.0.0.1:{}/test.Svc/Call", s.served.port);
    let request = http::Request::post(uri)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", "200m")
        .body(Unfinished { sent: false })
        .unwrap();
    let response = send.send_request(request).await.unwrap();
    let status = Status::from_header_map(response.headers()).expect("a Trailers-Only answer");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        s.gateway.request_bytes_available(),
        GatewaySettings::default().max_buffered_request_bytes
    );
}
