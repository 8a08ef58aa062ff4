//! MessagePack binary frames (`?enc=msgpack`): maps with named fields.

use serde_json::json;
use volley_web::WebSettings;

use crate::common::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn msgpack_sessions_speak_binary_frames() {
    let server = Server::start(WebSettings::default()).await;
    let mut ws = server.connect("?enc=msgpack").await;
    let hello = rmp_serde::to_vec_named(&json!({"t": "hello", "v": 1})).unwrap();
    ws.send_binary(hello).await;
    let welcome = ws.next().await;
    assert_eq!(welcome["t"], "welcome");
    let ask = json!({"t": "ask", "id": 1, "service": "counter", "msg": {"add": 5}});
    ws.send_binary(rmp_serde::to_vec_named(&ask).unwrap()).await;
    let reply = ws.next().await;
    assert_eq!(reply, json!({"t": "reply", "seq": 1, "id": 1, "msg": 5}));
    ws.send_binary(vec![0xc1]).await;
    assert_eq!(ws.next().await["code"], "bad_frame");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_messages_are_refused_without_exhausting_the_stack() {
    let server = Server::start(WebSettings::default()).await;
    let mut ws = server.connect("?enc=msgpack").await;
    let hello = rmp_serde::to_vec_named(&json!({"t": "hello", "v": 1})).unwrap();
    ws.send_binary(hello).await;
    assert_eq!(ws.next().await["t"], "welcome");
    // A tell whose msg is 50 000 arrays deep: a map of three, then the
    // fixarray-of-one marker over and over.
    let mut frame = vec![0x83];
    for (key, value) in [("t", "tell"), ("service", "log")] {
        frame.extend(rmp_serde::to_vec(key).unwrap());
        frame.extend(rmp_serde::to_vec(value).unwrap());
    }
    frame.extend(rmp_serde::to_vec("msg").unwrap());
    frame.extend(std::iter::repeat_n(0x91, 50_000));
    frame.push(0xc0);
    ws.send_binary(frame).await;
    assert_eq!(ws.next().await["code"], "bad_frame");
    let ask = json!({"t": "ask", "id": 1, "service": "counter", "msg": "get"});
    ws.send_binary(rmp_serde::to_vec_named(&ask).unwrap()).await;
    assert_eq!(ws.next().await["t"], "reply");
    server.stop().await;
}
