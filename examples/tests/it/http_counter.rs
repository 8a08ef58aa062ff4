//! The http_counter example, called over HTTP.

use crate::common;

use common::request;
use volley_examples::http_counter_app::{routes, start};

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
