//! The long-poll transport, through the gateway's router: the same
//! session actor, frames as JSON arrays.

use std::time::Duration;

use axum::body::Body;
use futures_util::StreamExt;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use volley_web::WebSettings;

use crate::common::{Event, Server};

async fn call(
    router: &axum::Router,
    method: Method,
    uri: &str,
    body: Value,
) -> (StatusCode, Vec<u8>) {
    call_with(router, method, uri, body, &[]).await
}

async fn call_with(
    router: &axum::Router,
    method: Method,
    uri: &str,
    body: Value,
    headers: &[(&str, &str)],
) -> (StatusCode, Vec<u8>) {
    let mut request = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Body::from(body.to_string())).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, bytes.to_vec())
}

async fn open(router: &axum::Router) -> String {
    let (status, body) = call(
        router,
        Method::POST,
        "/lp/open",
        json!({"t": "hello", "v": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let welcome: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(welcome["t"], "welcome");
    welcome["session"].as_str().unwrap().to_string()
}

async fn recv(router: &axum::Router, session: &str, ack: u64) -> Vec<Value> {
    let uri = format!("/lp/recv?session={session}&ack={ack}");
    let (status, body) = call(router, Method::GET, &uri, Value::Null).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_over_long_poll_are_answered_and_resent_until_acknowledged() {
    let server = Server::start(WebSettings::default()).await;
    let router = server.gateway.router();
    let session = open(&router).await;
    let send = format!("/lp/send?session={session}");
    let frames = json!([
        {"t": "ask", "id": 1, "service": "counter", "msg": {"add": 3}},
        {"t": "ask", "id": 2, "service": "counter", "msg": {"push": "hey"}},
    ]);
    assert_eq!(
        call(&router, Method::POST, &send, frames).await.0,
        StatusCode::NO_CONTENT
    );
    let mut got = Vec::new();
    let mut acked = 0;
    while got.len() < 3 {
        acked = got.len() as u64;
        got.extend(recv(&router, &session, acked).await);
    }
    let seqs: Vec<_> = got.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert!(
        got.iter().any(|f| f["t"] == "push" && f["msg"] == "hey"),
        "{got:?}"
    );
    // The last response lost on the way: polling again with the same ack
    // sends its frames again.
    let again = recv(&router, &session, acked).await;
    assert_eq!(again, got[acked as usize..].to_vec());
    server.stop().await;
}

/// A server whose `max_frame` is 256 bytes, and its router.
async fn small_frames() -> (Server, axum::Router) {
    let settings = WebSettings {
        max_frame: 256,
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let router = server.gateway.router();
    (server, router)
}

/// `send` with its body in `chunks`, as a chunked request's arrives.
async fn send_in_chunks(router: &axum::Router, session: &str, chunks: Vec<String>) -> StatusCode {
    let chunks = chunks
        .into_iter()
        .map(|chunk| Ok::<_, std::io::Error>(axum::body::Bytes::from(chunk)));
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("/lp/send?session={session}"))
        .body(Body::from_stream(futures_util::stream::iter(chunks)))
        .unwrap();
    router.clone().oneshot(request).await.unwrap().status()
}

/// A body that starts and never ends (a client trickling it, or gone
/// quiet) is answered 408 after `body_timeout`, for `open` and `send`
/// alike, and the session it named still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_ends_is_answered_408_after_body_timeout() {
    let settings = WebSettings {
        body_timeout: Duration::from_millis(200),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let router = server.gateway.router();
    let session = open(&router).await;
    let endless = |uri: String, start: &'static str| {
        let first = futures_util::stream::once(async move {
            Ok::<_, std::io::Error>(axum::body::Bytes::from(start))
        });
        let body = Body::from_stream(first.chain(futures_util::stream::pending()));
        let request = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .body(body)
            .unwrap();
        router.clone().oneshot(request)
    };
    let answered = |r: Result<axum::response::Response, _>| r.unwrap().status();
    let held = endless("/lp/open".into(), r#"{"t":"hel"#);
    let held = tokio::time::timeout(Duration::from_secs(10), held).await;
    assert_eq!(
        answered(held.expect("answered")),
        StatusCode::REQUEST_TIMEOUT
    );
    let held = endless(format!("/lp/send?session={session}"), "[");
    let held = tokio::time::timeout(Duration::from_secs(10), held).await;
    assert_eq!(
        answered(held.expect("answered")),
        StatusCode::REQUEST_TIMEOUT
    );
    let ask = r#"[{"t":"ask","id":1,"service":"counter","msg":{"add":5}}]"#;
    assert_eq!(
        send_in_chunks(&router, &session, vec![ask.into()]).await,
        StatusCode::NO_CONTENT
    );
    let replies = recv(&router, &session, 0).await;
    assert_eq!(replies[0]["id"], 1, "{replies:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_in_chunks_is_read_whole_up_to_max_frame() {
    let (server, router) = small_frames().await;
    let session = open(&router).await;
    let ask = r#"[{"t":"ask","id":1,"service":"counter","msg":{"add":5}}]"#;
    let (a, b) = ask.split_at(20);
    let (b, c) = b.split_at(20);
    let chunks = vec![String::new(), a.into(), b.into(), String::new(), c.into()];
    assert_eq!(
        send_in_chunks(&router, &session, chunks).await,
        StatusCode::NO_CONTENT
    );
    let mut got = Vec::new();
    while got.is_empty() {
        got = recv(&router, &session, 0).await;
    }
    assert_eq!((&got[0]["t"], &got[0]["id"]), (&json!("reply"), &json!(1)));
    // Past max_frame only in the sum of its chunks.
    let chunks = vec![
        "[".to_string(),
        " ".repeat(200),
        " ".repeat(100),
        "]".into(),
    ];
    assert_eq!(
        send_in_chunks(&router, &session, chunks).await,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_poll_answers_an_empty_array_after_the_poll_timeout() {
    let settings = WebSettings {
        poll_timeout: Duration::from_millis(50),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let router = server.gateway.router();
    let session = open(&router).await;
    assert_eq!(recv(&router, &session, 0).await, Vec::<Value>::new());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_http_statuses() {
    let (server, router) = small_frames().await;
    let (status, _) = call(&router, Method::GET, "/lp/recv?session=nope", Value::Null).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&router, Method::POST, "/lp/open", json!({"t": "tell"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let big = json!({"t": "hello", "v": 1, "token": "x".repeat(1000)});
    let (status, _) = call(&router, Method::POST, "/lp/open", big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let session = open(&router).await;
    let send = format!("/lp/send?session={session}");
    let (status, _) = call(&router, Method::POST, &send, json!({"not": "an array"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let frames = json!([{"t": "bogus"}, {"t": "tell", "service": "nobody", "msg": 1}]);
    assert_eq!(
        call(&router, Method::POST, &send, frames).await.0,
        StatusCode::NO_CONTENT
    );
    let mut got = Vec::new();
    while got.len() < 3 {
        let acked = got.len() as u64;
        got.extend(recv(&router, &session, acked).await);
    }
    let codes: Vec<_> = got.iter().map(|f| f["code"].clone()).collect();
    assert_eq!(
        codes,
        [
            json!("bad_frame"),
            json!("bad_frame"),
            json!("unknown_service")
        ]
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_long_poll_session_ends_it_for_its_watchers() {
    let mut server = Server::start(WebSettings::default()).await;
    let router = server.gateway.router();
    let session = open(&router).await;
    let send = format!("/lp/send?session={session}");
    let frames = json!([{"t": "tell", "service": "watch", "msg": null}]);
    call(&router, Method::POST, &send, frames).await;
    assert_eq!(server.event().await, Event::Watching(session.clone()));
    let close = format!("/lp/close?session={session}");
    assert_eq!(
        call(&router, Method::POST, &close, Value::Null).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(server.event().await, Event::Terminated);
    let (status, _) = call(
        &router,
        Method::GET,
        &format!("/lp/recv?session={session}"),
        Value::Null,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_session_without_polls_ends_after_the_grace_period() {
    let settings = WebSettings {
        resume_grace: Duration::from_millis(100),
        ..WebSettings::default()
    };
    let server = Server::start(settings).await;
    let router = server.gateway.router();
    open(&router).await;
    assert_eq!(server.gateway.session_count(), 1);
    volley_testkit::eventually("the session ends", || server.gateway.session_count() == 0).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_checks_the_auth_hook_and_the_origin() {
    let server = Server::start_with(WebSettings::default(), |builder| {
        builder.auth(|request| match request.headers.get("authorization") {
            Some(value) if value == "Bearer good" => Ok(Some("carol".into())),
            _ => Err("no".into()),
        })
    })
    .await;
    let router = server.gateway.router();
    let hello = json!({"t": "hello", "v": 1});
    let refused = call(&router, Method::POST, "/lp/open", hello.clone()).await;
    assert_eq!(refused.0, StatusCode::UNAUTHORIZED);
    let good = [("authorization", "Bearer good")];
    let opened = call_with(&router, Method::POST, "/lp/open", hello.clone(), &good).await;
    assert_eq!(opened.0, StatusCode::OK);
    let elsewhere = [
        ("authorization", "Bearer good"),
        ("origin", "https://evil.example"),
        ("host", "app.example"),
    ];
    let forbidden = call_with(&router, Method::POST, "/lp/open", hello, &elsewhere).await;
    assert_eq!(forbidden.0, StatusCode::FORBIDDEN);
    server.stop().await;
}

/// Polls until the frame answering ask `id` has come; the frames so far.
async fn recv_until_reply(router: &axum::Router, session: &str, id: u64) -> Vec<Value> {
    let mut got: Vec<Value> = Vec::new();
    while !got.iter().any(|f| f["t"] == "reply" && f["id"] == id) {
        let ack = got.last().map_or(0, |f| f["seq"].as_u64().unwrap());
        got.extend(recv(router, session, ack).await);
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_service_pushes_before_it_replies_comes_before_the_reply() {
    let server = Server::start(WebSettings::default()).await;
    let router = server.gateway.router();
    let session = open(&router).await;
    let send = format!("/lp/send?session={session}");
    let mut acked = 0;
    for id in 1..=30u64 {
        let ask = json!([{"t": "ask", "id": id, "service": "counter", "msg": {"push": id}}]);
        call(&router, Method::POST, &send, ask).await;
        let got: Vec<Value> = recv_until_reply(&router, &session, id)
            .await
            .into_iter()
            .filter(|f| f["seq"].as_u64().unwrap() > acked)
            .collect();
        let kinds: Vec<_> = got.iter().map(|f| f["t"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["push", "reply"], "ask {id}: {got:?}");
        assert_eq!(got[0]["msg"], id);
        acked = got[1]["seq"].as_u64().unwrap();
    }
    // Plain asks, answered without the actor: each answered, numbered on.
    let asks: Vec<Value> = (31..=40u64)
        .map(|id| json!({"t": "ask", "id": id, "service": "counter", "msg": "get"}))
        .collect();
    call(&router, Method::POST, &send, Value::Array(asks)).await;
    let mut seqs = Vec::new();
    while seqs.len() < 10 {
        let frames = recv(&router, &session, acked).await;
        seqs.extend(frames.iter().map(|f| f["seq"].as_u64().unwrap()));
        acked = seqs.last().copied().unwrap_or(acked);
    }
    let expected: Vec<u64> = (61..=70).collect();
    assert_eq!(seqs, expected);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polling_session_outlives_many_grace_periods_and_ends_one_after_its_last_poll() {
    let grace = Duration::from_millis(150);
    let settings = WebSettings {
        resume_grace: grace,
        poll_timeout: Duration::from_millis(20),
        ..WebSettings::default()
    };
    let mut server = Server::start(settings).await;
    let router = server.gateway.router();
    let session = open(&router).await;
    let send = format!("/lp/send?session={session}");
    let watch = json!([{"t": "tell", "service": "watch", "msg": null}]);
    call(&router, Method::POST, &send, watch).await;
    assert_eq!(server.event().await, Event::Watching(session.clone()));
    // Time passing is what is tested: polls, each held for the poll
    // timeout, for several grace periods.
    let polling = std::time::Instant::now();
    while polling.elapsed() < grace * 5 {
        recv(&router, &session, 0).await;
        assert_eq!(server.gateway.session_count(), 1);
    }
    let stopped = std::time::Instant::now();
    assert_eq!(server.event().await, Event::Terminated);
    assert!(stopped.elapsed() >= grace, "{:?}", stopped.elapsed());
    assert_eq!(server.gateway.session_count(), 0);
    server.stop().await;
}

/// The query is read in place: a percent-escaped session id is still the
/// session's, and an `ack` that is not a number is a bad request, as
/// before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_query_is_decoded_and_a_bad_ack_refused() {
    let server = Server::start(WebSettings::default()).await;
    let router = server.gateway.router();
    let session = open(&router).await;
    let escaped: String = session
        .chars()
        .map(|c| format!("%{:02X}", c as u32))
        .collect();
    let send = format!("/lp/send?other=1&session={escaped}");
    let frames = json!([{"t": "ask", "id": 1, "service": "counter", "msg": {"add": 2}}]);
    assert_eq!(
        call(&router, Method::POST, &send, frames).await.0,
        StatusCode::NO_CONTENT
    );
    let got = recv(&router, &session, 0).await;
    assert_eq!((&got[0]["t"], &got[0]["id"]), (&json!("reply"), &json!(1)));
    let bad = format!("/lp/recv?session={session}&ack=first");
    let (status, _) = call(&router, Method::GET, &bad, Value::Null).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(&router, Method::POST, "/lp/send", json!([])).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

/// Each frame of a batch is read on its own: one nested deeper than the
/// JSON limit is a `bad_frame` of its own, and the frame after it is
/// still handled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_nested_too_deep_in_a_batch_fails_alone() {
    let server = Server::start(WebSettings::default()).await;
    let router = server.gateway.router();
    let session = open(&router).await;
    let deep = format!(
        r#"{{"t":"tell","service":"counter","msg":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let body = format!(r#"[{deep},{{"t":"ask","id":5,"service":"counter","msg":{{"add":1}}}}]"#);
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("/lp/send?session={session}"))
        .body(Body::from(body))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let mut got = Vec::new();
    while got.len() < 2 {
        let acked = got.len() as u64;
        got.extend(recv(&router, &session, acked).await);
    }
    assert_eq!(got[0]["code"], "bad_frame", "{got:?}");
    assert_eq!((&got[1]["t"], &got[1]["id"]), (&json!("reply"), &json!(5)));
    server.stop().await;
}
