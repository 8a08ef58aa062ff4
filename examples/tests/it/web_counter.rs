//! The web_counter example: two clients share the counter, one sees the
//! other's change on the topic, and the page directory is served.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;
use volley::ActorSystem;
use volley_examples::http_counter_app::settings;
use volley_examples::web_counter_app::{default_pages, gateway, routes};
use volley_web::WebSettings;

use crate::common::request;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn next(ws: &mut Ws) -> Value {
    loop {
        let message = tokio::time::timeout(std::time::Duration::from_secs(10), ws.next())
            .await
            .expect("a frame in time")
            .expect("the connection is open")
            .unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

async fn client(addr: std::net::SocketAddr) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .unwrap();
    ws.send(Message::text(json!({"t": "hello", "v": 1}).to_string()))
        .await
        .unwrap();
    assert_eq!(next(&mut ws).await["t"], "welcome");
    ws
}

async fn send(ws: &mut Ws, frame: Value) {
    ws.send(Message::text(frame.to_string())).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_share_the_counter_and_see_each_others_changes() {
    let handle = tokio::runtime::Handle::current();
    let system = ActorSystem::with_runtime("web-counter", settings(), handle).unwrap();
    let gateway = gateway(&system, WebSettings::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = routes(&gateway, default_pages());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let mut watcher = client(addr).await;
    send(&mut watcher, json!({"t": "sub", "topic": "counter"})).await;
    // The subscription is in place once a change made after it is seen:
    // keep adding until the watcher sees one.
    let mut adder = client(addr).await;
    let mut id = 0;
    let seen = loop {
        id += 1;
        send(
            &mut adder,
            json!({"t": "ask", "id": id, "service": "counter", "msg": {"add": 1}}),
        )
        .await;
        assert_eq!(next(&mut adder).await["msg"], id);
        let pushed =
            tokio::time::timeout(std::time::Duration::from_millis(200), next(&mut watcher)).await;
        if let Ok(frame) = pushed {
            break frame;
        }
    };
    assert_eq!(seen["t"], "pub");
    assert_eq!(seen["topic"], "counter");
    send(
        &mut adder,
        json!({"t": "ask", "id": 0, "service": "counter", "msg": {"push": "hi"}}),
    )
    .await;
    assert_eq!(
        next(&mut adder).await,
        json!({"t": "push", "seq": id + 1, "to": "inbox", "msg": "hi"})
    );
    let (status, body) = request(addr, "GET", "/").await;
    assert_eq!(status, 200);
    assert!(body.contains("<html"), "{body}");
    assert_eq!(request(addr, "GET", "/../Cargo.toml").await.0, 404);
    server.abort();
    system.terminate().await;
}
