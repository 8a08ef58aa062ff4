//! A session outlives its connection for the grace period: a client
//! resumes it and gets what it had not acknowledged, in order; after the
//! grace period it ends, and its watchers hear of it.

use std::time::Duration;

use serde_json::{json, Value};
use volley::TopicCommand;
use volley_web::WebSettings;

use crate::common::{Event, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_resumed_with_the_frames_it_missed() {
    let server = Server::start(WebSettings::default()).await;
    let (mut ws, welcome) = server.client().await;
    let session = welcome["session"].clone();
    ws.send(json!({"t": "sub", "topic": "news"})).await;
    server.subscribers(1).await;
    server.news.tell(TopicCommand::Publish("one".into()));
    assert_eq!(ws.next().await["seq"], 1);
    ws.send(json!({"t": "ask", "id": 1, "service": "counter", "msg": "drop"}))
        .await;
    let (code, _) = ws.closed().await;
    assert_eq!(code, 1012);
    // Published while no connection is there: held for the client.
    server.news.tell(TopicCommand::Publish("two".into()));
    let mut again = server.connect("").await;
    let hello = json!({"t": "hello", "v": 1, "resume": session, "last_seq": 1});
    let welcome = again.hello(hello).await;
    assert_eq!(welcome["resumed"], true);
    assert_eq!(welcome["session"], session);
    // The reply to the ask that dropped the connection, and what came after.
    let mut rest: Vec<Value> = Vec::new();
    while rest.len() < 2 {
        rest.push(again.next().await);
    }
    let seqs: Vec<_> = rest.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [2, 3]);
    assert!(rest.iter().any(|f| f["msg"] == "two"), "{rest:?}");
    assert_eq!(server.gateway.session_count(), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_not_resumed_within_the_grace_period_ends_and_is_dead_lettered() {
    let settings = WebSettings {
        resume_grace: Duration::from_millis(100),
        ..WebSettings::default()
    };
    let mut server = Server::start(settings).await;
    let (mut ws, welcome) = server.client().await;
    ws.send(json!({"t": "tell", "service": "watch", "msg": null}))
        .await;
    let session = welcome["session"].as_str().unwrap().to_string();
    assert_eq!(server.event().await, Event::Watching(session.clone()));
    ws.send(json!({"t": "sub", "topic": "news"})).await;
    server.subscribers(1).await;
    let dead_before = server.system.dead_letter_count();
    ws.send(json!({"t": "ask", "id": 1, "service": "counter", "msg": "drop"}))
        .await;
    assert_eq!(ws.closed().await.0, 1012);
    server.news.tell(TopicCommand::Publish("unread".into()));
    assert_eq!(server.event().await, Event::Terminated);
    assert_eq!(server.gateway.session_count(), 0);
    // The reply and the publication were never sent: both counted.
    let system = server.system.clone();
    volley_testkit::eventually("both are counted", || {
        system.dead_letter_count() >= dead_before + 2
    })
    .await;
    let mut late = server.connect("").await;
    late.send(json!({"t": "hello", "v": 1, "resume": session}))
        .await;
    assert_eq!(late.closed().await.0, 4400);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resuming_connection_replaces_the_one_before() {
    let server = Server::start(WebSettings::default()).await;
    let (mut first, welcome) = server.client().await;
    let mut second = server.connect("").await;
    let hello = json!({"t": "hello", "v": 1, "resume": welcome["session"], "last_seq": 0});
    second.hello(hello).await;
    assert_eq!(first.closed().await.0, 4409);
    second
        .send(json!({"t": "ask", "id": 1, "service": "counter", "msg": "get"}))
        .await;
    assert_eq!(second.next().await["t"], "reply");
    server.stop().await;
}
