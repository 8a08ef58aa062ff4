//! Bad input gets an `error` frame or a close code that says what was
//! wrong, and the session (and the server) carry on.

use serde_json::json;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use volley_web::{Origins, WebSettings};

use crate::common::{Event, Server, Ws};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_are_answered_bad_frame_and_the_session_goes_on() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    for bad in [
        "{not json",
        r#"{"t":"nope"}"#,
        r#"{"t":"ask","service":"counter"}"#,
        "[]",
    ] {
        ws.send_text(bad).await;
        let error = ws.next().await;
        assert_eq!(error["t"], "error", "{bad}");
        assert_eq!(error["code"], "bad_frame", "{bad}");
        assert_eq!(error["id"], serde_json::Value::Null);
    }
    ws.send(json!({"t": "ask", "id": 1, "service": "counter", "msg": "get"}))
        .await;
    assert_eq!(ws.next().await["t"], "reply");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_services_topics_and_wrong_shapes_are_named() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    ws.send(json!({"t": "ask", "id": 1, "service": "nobody", "msg": 1}))
        .await;
    let error = ws.next().await;
    assert_eq!(
        (error["id"].clone(), error["code"].clone()),
        (json!(1), json!("unknown_service"))
    );
    ws.send(json!({"t": "ask", "id": 2, "service": "counter", "msg": {"add": "two"}}))
        .await;
    let error = ws.next().await;
    assert_eq!(
        (error["id"].clone(), error["code"].clone()),
        (json!(2), json!("bad_message"))
    );
    ws.send(json!({"t": "tell", "service": "log", "msg": 42}))
        .await;
    assert_eq!(ws.next().await["code"], "bad_message");
    ws.send(json!({"t": "tell", "service": "counter", "msg": "get"}))
        .await;
    assert_eq!(ws.next().await["code"], "bad_message");
    ws.send(json!({"t": "sub", "topic": "nothing"})).await;
    assert_eq!(ws.next().await["code"], "unknown_topic");
    ws.send(json!({"t": "hello", "v": 1})).await;
    assert_eq!(ws.next().await["code"], "bad_frame");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_nobody_answers_times_out() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    ws.send(json!({"t": "ask", "id": 4, "service": "counter", "msg": "never", "timeout_ms": 50}))
        .await;
    let error = ws.next().await;
    assert_eq!(
        (error["id"].clone(), error["code"].clone()),
        (json!(4), json!("timeout"))
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_frame_that_is_not_hello_closes_with_4400() {
    let server = Server::start(WebSettings::default()).await;
    let mut ws = server.connect("").await;
    ws.send(json!({"t": "tell", "service": "log", "msg": "x"}))
        .await;
    assert_eq!(ws.closed().await.0, 4400);
    let mut ws = server.connect("").await;
    ws.send(json!({"t": "hello", "v": 2})).await;
    assert_eq!(ws.closed().await.0, 4400);
    let mut ws = server.connect("?enc=xml").await;
    ws.send(json!({"t": "hello", "v": 1})).await;
    assert_eq!(ws.closed().await.0, 4400);
    assert_eq!(server.gateway.session_count(), 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_frame_closes_with_1009() {
    let settings = WebSettings {
        max_frame: 1024,
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let (mut ws, _) = server.client().await;
    let big = "x".repeat(2000);
    ws.send(json!({"t": "tell", "service": "log", "msg": big}))
        .await;
    let (code, reason) = ws.closed().await;
    assert_eq!(code, 1009, "{reason}");
    assert!(reason.contains("max_frame"), "{reason}");
    // Past the WebSocket library's own bound (twice max_frame) the
    // library stops reading; the close says why, and the server goes on.
    let (mut huge, _) = server.client().await;
    let huge_text = json!({"t": "tell", "service": "log", "msg": "y".repeat(10_000)}).to_string();
    huge.send_text(&huge_text).await;
    let (code, reason) = huge.closed().await;
    assert_eq!(code, 1009, "{reason}");
    assert!(reason.contains("too long"), "{reason}");
    let (mut next, _) = server.client().await;
    next.send(json!({"t": "ask", "id": 1, "service": "counter", "msg": "get"}))
        .await;
    assert_eq!(next.next().await["t"], "reply");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auth_hook_refuses_with_4401_and_names_the_identity_to_services() {
    let mut server = Server::start_with(WebSettings::default(), |builder| {
        builder.auth(|request| {
            let cookie = request
                .headers
                .get("cookie")
                .and_then(|c| c.to_str().ok())
                .and_then(|c| c.strip_prefix("user="));
            match (request.token, cookie) {
                (Some("secret"), _) => Ok(Some("alice".to_string())),
                (None, Some(user)) => Ok(Some(user.to_string())),
                _ => Err("bad token".to_string()),
            }
        })
    })
    .await;
    let mut ws = server.connect("").await;
    ws.send(json!({"t": "hello", "v": 1, "token": "guess"}))
        .await;
    assert_eq!(ws.closed().await, (4401, "bad token".to_string()));
    let mut ws = server.connect("").await;
    ws.hello(json!({"t": "hello", "v": 1, "token": "secret"}))
        .await;
    ws.send(json!({"t": "tell", "service": "log", "msg": "hi"}))
        .await;
    let told = Event::Told {
        msg: "hi".into(),
        identity: Some("alice".into()),
    };
    assert_eq!(server.event().await, told);
    let mut request = format!("ws://{}/ws", server.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("cookie", "user=bob".parse().unwrap());
    let mut ws = Ws::open(request).await;
    ws.hello(json!({"t": "hello", "v": 1})).await;
    ws.send(json!({"t": "tell", "service": "log", "msg": "hi"}))
        .await;
    let told = Event::Told {
        msg: "hi".into(),
        identity: Some("bob".into()),
    };
    assert_eq!(server.event().await, told);
    server.stop().await;
}

async fn with_origin(server: &Server, origin: &str) -> Ws {
    let mut request = format!("ws://{}/ws", server.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("origin", origin.parse().unwrap());
    Ws::open(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_not_allowed_are_closed_with_4403() {
    let settings = WebSettings {
        origins: Origins::List(vec!["https://app.example".into()]),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let mut ws = with_origin(&server, "https://evil.example").await;
    assert_eq!(ws.closed().await.0, 4403);
    let mut ws = with_origin(&server, "https://app.example").await;
    ws.hello(json!({"t": "hello", "v": 1})).await;
    let same_host = format!("http://{}", server.addr);
    let mut ws = with_origin(&server, &same_host).await;
    ws.hello(json!({"t": "hello", "v": 1})).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_json_is_a_bad_frame() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    let deep = format!(
        r#"{{"t":"tell","service":"log","msg":{}{}}}"#,
        "[".repeat(30_000),
        "]".repeat(30_000)
    );
    ws.send_text(&deep).await;
    assert_eq!(ws.next().await["code"], "bad_frame");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_panics_answers_internal_and_the_session_goes_on() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    ws.send(json!({"t": "tell", "service": "panicky", "msg": "x"}))
        .await;
    assert_eq!(ws.next().await["code"], "internal");
    ws.send(json!({"t": "ask", "id": 1, "service": "panicky_ask", "msg": "x"}))
        .await;
    let error = ws.next().await;
    assert_eq!(
        (error["id"].clone(), error["code"].clone()),
        (json!(1), json!("internal"))
    );
    ws.send(json!({"t": "ask", "id": 2, "service": "counter", "msg": "get"}))
        .await;
    assert_eq!(ws.next().await["t"], "reply");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_hook_that_panics_refuses_with_1011() {
    let server = Server::start_with(WebSettings::default(), |builder| {
        builder.auth(|_| panic!("on purpose"))
    })
    .await;
    let mut ws = server.connect("").await;
    ws.send(json!({"t": "hello", "v": 1})).await;
    assert_eq!(ws.closed().await.0, 1011);
    server.stop().await;
}
