//! The http_counter example, called over HTTP.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use volley_examples::http_counter_app::{routes, start};

/// Sends one HTTP/1.1 request and returns the status code and the body.
async fn request(addr: std::net::SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        stream.read_to_string(&mut response),
    )
    .await
    .expect("the server answers")
    .unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_handlers_ask_the_counter_actor() {
    let (system, counter) = start().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, routes(counter)).await });
    assert_eq!(request(addr, "GET", "/count").await, (200, "0".into()));
    assert_eq!(request(addr, "POST", "/add/5").await, (200, "5".into()));
    assert_eq!(request(addr, "POST", "/add/37").await, (200, "42".into()));
    assert_eq!(request(addr, "GET", "/count").await, (200, "42".into()));
    // A path parameter that is not a number is the client's error.
    assert_eq!(request(addr, "POST", "/add/many").await.0, 400);
    // Once the system is gone, the handlers answer 503 with the reason.
    system.terminate().await;
    let (status, body) = request(addr, "GET", "/count").await;
    assert_eq!(status, 503);
    assert!(body.contains("terminated"), "{body}");
    server.abort();
}
