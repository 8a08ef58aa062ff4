//! The WebSocket transport with JSON frames: tell, ask, sub, push, watch.

use serde_json::json;
use volley::TopicCommand;
use volley_web::WebSettings;

use crate::common::{Event, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_are_answered_in_order_with_sequence_numbers() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, welcome) = server.client().await;
    assert_eq!(welcome["v"], 1);
    assert_eq!(welcome["resumed"], false);
    assert_eq!(welcome["heartbeat_ms"], 15000);
    assert_eq!(welcome["max_frame"], 65536);
    ws.send(json!({"t": "ask", "id": 1, "service": "counter", "msg": {"add": 2}}))
        .await;
    ws.send(json!({"t": "ask", "id": 2, "service": "counter", "msg": "get"}))
        .await;
    assert_eq!(
        ws.next().await,
        json!({"t": "reply", "seq": 1, "id": 1, "msg": 2})
    );
    assert_eq!(
        ws.next().await,
        json!({"t": "reply", "seq": 2, "id": 2, "msg": 2})
    );
    ws.send(json!({"t": "ask", "id": 3, "service": "counter", "msg": "fail"}))
        .await;
    let error = ws.next().await;
    assert_eq!(error["id"], 3);
    assert_eq!(error["code"], "nope");
    assert_eq!(server.gateway.session_count(), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tell_reaches_its_service() {
    let mut server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    ws.send(json!({"t": "tell", "service": "log", "msg": "hello"}))
        .await;
    let told = Event::Told {
        msg: "hello".into(),
        identity: None,
    };
    assert_eq!(server.event().await, told);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_gets_what_the_topic_publishes_until_it_unsubscribes() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    ws.send(json!({"t": "sub", "topic": "news"})).await;
    server.subscribers(1).await;
    server.news.tell(TopicCommand::Publish("extra".to_string()));
    assert_eq!(
        ws.next().await,
        json!({"t": "pub", "seq": 1, "topic": "news", "msg": "extra"})
    );
    ws.send(json!({"t": "unsub", "topic": "news"})).await;
    server.subscribers(0).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_pushes_to_the_client_and_hears_when_its_session_ends() {
    let mut server = Server::start(WebSettings::default()).await;
    let (mut ws, welcome) = server.client().await;
    ws.send(json!({"t": "ask", "id": 1, "service": "counter", "msg": {"push": {"hi": 1}}}))
        .await;
    assert_eq!(
        ws.next().await,
        json!({"t": "push", "seq": 1, "to": "inbox", "msg": {"hi": 1}})
    );
    assert_eq!(ws.next().await["t"], "reply");
    ws.send(json!({"t": "tell", "service": "watch", "msg": null}))
        .await;
    let session = welcome["session"].as_str().unwrap().to_string();
    assert_eq!(server.event().await, Event::Watching(session));
    ws.close(1000).await;
    assert_eq!(server.event().await, Event::Terminated);
    volley_testkit::eventually("the session is forgotten", || {
        server.gateway.session_count() == 0
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_are_answered_and_the_server_pings() {
    let settings = WebSettings {
        ping_interval: std::time::Duration::from_millis(20),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let (mut ws, welcome) = server.client().await;
    assert_eq!(welcome["heartbeat_ms"], 20);
    ws.send(json!({"t": "ping", "n": 5})).await;
    // The server's own pings may come first.
    loop {
        let frame = ws.next().await;
        if frame["t"] == "pong" {
            assert_eq!(frame, json!({"t": "pong", "n": 5}));
            break;
        }
        assert_eq!(frame["t"], "ping", "{frame}");
    }
    let ping = loop {
        let frame = ws.next().await;
        if frame["t"] == "ping" {
            break frame;
        }
    };
    ws.send(json!({"t": "pong", "n": ping["n"]})).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_mounts_in_an_application_router() {
    let server = Server::start(WebSettings::default()).await;
    let app = axum::Router::new().nest("/volley", server.gateway.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("ws://{addr}/volley/ws");
    let request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url)
            .unwrap();
    let mut ws = crate::common::Ws::open(request).await;
    ws.hello(json!({"t": "hello", "v": 1})).await;
    ws.send(json!({"t": "ask", "id": 9, "service": "counter", "msg": "get"}))
        .await;
    assert_eq!(ws.next().await["id"], 9);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_gateway_closes_sessions_with_1001() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    server.gateway.close_all();
    assert_eq!(ws.closed().await.0, 1001);
    volley_testkit::eventually("the session ends", || server.gateway.session_count() == 0).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_reach_their_service_in_the_order_of_the_frames() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, _) = server.client().await;
    for id in 1..=20 {
        ws.send(json!({"t": "ask", "id": id, "service": "counter", "msg": {"add": 1}}))
            .await;
    }
    let mut values = vec![0; 21];
    for _ in 1..=20 {
        let reply = ws.next().await;
        values[reply["id"].as_u64().unwrap() as usize] = reply["msg"].as_i64().unwrap();
    }
    assert_eq!(values, (0..=20).collect::<Vec<i64>>());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_serves_through_its_actor_ref() {
    struct Echo;
    impl volley::Actor for Echo {
        type Msg = (
            volley_web::Call<String>,
            volley::ReplyTo<volley_web::Reply<String>>,
        );
        fn handle(
            &mut self,
            _: &mut volley::Context<Self>,
            (call, reply_to): Self::Msg,
        ) -> volley::HandleResult {
            reply_to.tell(Ok(call.msg));
            Ok(())
        }
    }
    let server = Server::start(WebSettings::default()).await;
    let pool = volley::Router::pool(3, volley::Props::new(|| Echo))
        .spawn(&server.system, "echoes")
        .unwrap();
    let gateway = volley_web::WebGateway::builder(&server.system, WebSettings::default())
        .ask_service("echo", pool.to_actor_ref(), |call, reply_to| {
            (call, reply_to)
        })
        .unwrap()
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(gateway.serve(listener, std::future::pending()));
    let url = format!("ws://{addr}/ws");
    let request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url)
            .unwrap();
    let mut ws = crate::common::Ws::open(request).await;
    ws.hello(json!({"t": "hello", "v": 1})).await;
    for id in 0..3 {
        ws.send(json!({"t": "ask", "id": id, "service": "echo", "msg": format!("m{id}")}))
            .await;
        assert_eq!(ws.next().await["msg"], format!("m{id}"));
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_larger_than_the_read_buffer_arrives_whole() {
    let mut server = Server::start(WebSettings {
        ws_read_buffer: 512,
        ..WebSettings::default()
    })
    .await;
    let (mut ws, _) = server.client().await;
    let long = "y".repeat(20_000);
    ws.send(json!({"t": "tell", "service": "log", "msg": long}))
        .await;
    let told = Event::Told {
        msg: long,
        identity: None,
    };
    assert_eq!(server.event().await, told);
    server.stop().await;
}
