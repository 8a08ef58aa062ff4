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
