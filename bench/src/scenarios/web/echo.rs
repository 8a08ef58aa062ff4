//! The ceiling of `web`: a bare axum server that reads the same frames and
//! answers the same asks with the gateway's own codec
//! (`volley_web::frame`), with no actor, no session, no resend buffer.
//! WebSocket at `/ws`; long-poll at `/lp/open`, `/lp/send`, `/lp/recv`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::Notify;
use volley_web::frame::{self, ClientFrame, Encoding, ServerFrame};

use super::servers::{CounterCmd, COUNTER};

/// How long a long-poll `recv` is held, as the gateway's default.
const POLL_TIMEOUT: Duration = Duration::from_secs(25);

#[derive(Default)]
struct Echo {
    /// One counter for all clients, as the gateway's counter actor.
    value: Mutex<i64>,
    sessions: Mutex<HashMap<String, Arc<PollSession>>>,
    next_session: AtomicU64,
}

/// A long-poll client's frames not yet taken by a `recv`.
#[derive(Default)]
struct PollSession {
    seq: AtomicU64,
    ready: Mutex<Vec<Bytes>>,
    wake: Notify,
}

pub fn router() -> Router {
    Router::new()
        .route("/ws", get(upgrade))
        .route("/lp/open", post(open))
        .route("/lp/send", post(send))
        .route("/lp/recv", get(recv))
        .with_state(Arc::new(Echo::default()))
}

impl Echo {
    /// The answer to a client frame, if it has one.
    fn answer(&self, frame: ClientFrame, seq: &AtomicU64) -> Option<ServerFrame> {
        let next = || seq.fetch_add(1, Ordering::Relaxed) + 1;
        match frame {
            ClientFrame::Ask {
                id, service, msg, ..
            } if service == COUNTER => Some(match serde_json::from_value::<CounterCmd>(msg) {
                Ok(cmd) => {
                    let value = cmd.apply(&mut self.value.lock().expect("not poisoned"));
                    ServerFrame::Reply {
                        seq: next(),
                        id,
                        msg: json!(value),
                    }
                }
                Err(e) => error(next(), Some(id), "bad_message", e.to_string()),
            }),
            ClientFrame::Ask { id, .. } => {
                Some(error(next(), Some(id), "unknown_service", String::new()))
            }
            ClientFrame::Ping { n } => Some(ServerFrame::Pong { n }),
            ClientFrame::Hello { .. } => Some(welcome(String::new())),
            _ => None,
        }
    }
}

fn error(seq: u64, id: Option<u64>, code: &str, text: String) -> ServerFrame {
    ServerFrame::Error {
        seq,
        id,
        code: code.into(),
        text,
    }
}

fn welcome(session: String) -> ServerFrame {
    ServerFrame::Welcome {
        v: frame::PROTOCOL_VERSION,
        session,
        resumed: false,
        heartbeat_ms: POLL_TIMEOUT.as_millis() as u64,
        max_frame: 64 * 1024,
    }
}

async fn upgrade(State(echo): State<Arc<Echo>>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| echo_socket(echo, socket))
}

async fn echo_socket(echo: Arc<Echo>, mut socket: WebSocket) {
    let seq = AtomicU64::new(0);
    while let Some(Ok(message)) = socket.recv().await {
        let bytes = match message {
            Message::Text(text) => Bytes::from(text),
            Message::Close(_) => return,
            _ => continue,
        };
        let answer = match frame::decode(Encoding::Json, &bytes) {
            Ok(frame) => echo.answer(frame, &seq),
            Err(e) => Some(error(0, None, "bad_frame", e.0)),
        };
        if let Some(answer) = answer {
            let text = frame::encode(Encoding::Json, &answer);
            let Ok(text) = axum::extract::ws::Utf8Bytes::try_from(text) else {
                return;
            };
            if socket.send(Message::Text(text)).await.is_err() {
                return;
            }
        }
    }
}

#[derive(serde::Deserialize)]
struct SessionQuery {
    session: Option<String>,
}

async fn open(State(echo): State<Arc<Echo>>, body: Bytes) -> Response {
    if frame::decode(Encoding::Json, &body).is_err() {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let n = echo.next_session.fetch_add(1, Ordering::Relaxed);
    let id = format!("{n:032x}");
    echo.sessions
        .lock()
        .expect("not poisoned")
        .insert(id.clone(), Arc::default());
    json_response(frame::encode(Encoding::Json, &welcome(id)).to_vec())
}

fn session(echo: &Echo, query: &SessionQuery) -> Option<Arc<PollSession>> {
    let sessions = echo.sessions.lock().expect("not poisoned");
    sessions.get(query.session.as_deref()?).cloned()
}

async fn send(
    State(echo): State<Arc<Echo>>,
    Query(query): Query<SessionQuery>,
    body: Bytes,
) -> Response {
    let Some(session) = session(&echo, &query) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Ok(frames) = serde_json::from_slice::<Vec<Value>>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let answers: Vec<Bytes> = frames
        .into_iter()
        .filter_map(|f| serde_json::from_value::<ClientFrame>(f).ok())
        .filter_map(|f| echo.answer(f, &session.seq))
        .map(|answer| frame::encode(Encoding::Json, &answer))
        .collect();
    session.ready.lock().expect("not poisoned").extend(answers);
    session.wake.notify_one();
    StatusCode::NO_CONTENT.into_response()
}

async fn recv(State(echo): State<Arc<Echo>>, Query(query): Query<SessionQuery>) -> Response {
    let Some(session) = session(&echo, &query) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let deadline = tokio::time::Instant::now() + POLL_TIMEOUT;
    loop {
        let frames = std::mem::take(&mut *session.ready.lock().expect("not poisoned"));
        if !frames.is_empty() {
            return json_response(join(&frames));
        }
        if tokio::time::timeout_at(deadline, session.wake.notified())
            .await
            .is_err()
        {
            return json_response(b"[]".to_vec());
        }
    }
}

/// A JSON array of frames, each JSON.
fn join(frames: &[Bytes]) -> Vec<u8> {
    let mut body = vec![b'['];
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(frame);
    }
    body.push(b']');
    body
}

fn json_response(body: Vec<u8>) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}
