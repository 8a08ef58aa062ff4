//! The long-poll transport, for networks that block WebSockets: the same
//! frames and the same session actor, JSON only.
//!
//! `open` posts the `hello` and gets the `welcome`; `send` posts a JSON
//! array of frames; `recv` is held until frames are ready or the poll
//! timeout passes, and its `ack` names the last frame the client has
//! (the frames after it are sent again: a lost response loses nothing);
//! `close` ends the session. Between two `recv`s the session waits as a
//! dropped WebSocket's does, for the resume grace period.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::{header, HeaderMap, StatusCode};
use serde::Deserialize;

use crate::auth::{check_origin, Refusal};
use crate::frame::{close, encode, ClientFrame, Encoding, ErrorCode, ServerFrame};
use crate::gateway::WebGateway;
use crate::outbox::{Closing, Taken};
use crate::service::Failure;
use crate::session::{Session, SessionMsg};

/// The query of the long-poll routes.
#[derive(Debug, Deserialize)]
pub(crate) struct PollQuery {
    enc: Option<String>,
    session: Option<String>,
    ack: Option<u64>,
}

fn refused(refusal: Refusal) -> Response {
    (refusal.status, refusal.text).into_response()
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The body, at most `max_frame` bytes.
async fn read_body(gateway: &WebGateway, body: Body) -> Result<Bytes, Response> {
    let max = gateway.inner.settings.max_frame;
    axum::body::to_bytes(body, max).await.map_err(|_| {
        let text = format!("the body is larger than max_frame ({max} bytes)");
        (StatusCode::PAYLOAD_TOO_LARGE, text).into_response()
    })
}

fn session_of(
    gateway: &WebGateway,
    headers: &HeaderMap,
    query: &PollQuery,
) -> Result<Arc<Session>, Response> {
    check_origin(&gateway.inner.settings.origins, headers).map_err(refused)?;
    let id = query.session.as_deref().unwrap_or("");
    gateway
        .inner
        .session(id)
        .ok_or_else(|| refused(Refusal::unknown_session(id)))
}

/// `POST /lp/open?enc=json`, body the `hello`.
pub(crate) async fn open(
    State(gateway): State<WebGateway>,
    Query(query): Query<PollQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(refusal) = check_origin(&gateway.inner.settings.origins, &headers) {
        return refused(refusal);
    }
    if Encoding::from_query(query.enc.as_deref()) != Some(Encoding::Json) {
        return refused(Refusal::protocol("long-poll speaks enc=json only"));
    }
    let body = match read_body(&gateway, body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let hello = match crate::frame::decode(Encoding::Json, &body) {
        Ok(hello) => hello,
        Err(e) => return refused(Refusal::protocol(format!("the body must be hello: {e}"))),
    };
    let (session, resumed) = match gateway.open(&hello, &headers, Encoding::Json) {
        Ok(opened) => opened,
        Err(refusal) => return refused(refusal),
    };
    let last_seq = match hello {
        ClientFrame::Hello { last_seq, .. } if resumed => Some(last_seq.unwrap_or(0)),
        _ => None,
    };
    // Attached and let go at once: the grace period runs until a recv.
    let (generation, _) = session.outbox.attach(last_seq);
    detach(&session, generation);
    let settings = &gateway.inner.settings;
    let welcome = ServerFrame::Welcome {
        v: crate::frame::PROTOCOL_VERSION,
        session: session.id.to_string(),
        resumed,
        heartbeat_ms: settings.poll_timeout.as_millis() as u64,
        max_frame: settings.max_frame,
    };
    json(StatusCode::OK, encode(Encoding::Json, &welcome).to_vec())
}

fn detach(session: &Session, generation: u64) {
    if session.outbox.detach(generation) {
        if let Some(actor) = session.actor.get() {
            actor.tell(SessionMsg::Detached {
                generation,
                for_good: false,
            });
        }
    }
}

/// `POST /lp/send?session=<id>`, body a JSON array of frames.
pub(crate) async fn send(
    State(gateway): State<WebGateway>,
    Query(query): Query<PollQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let session = match session_of(&gateway, &headers, &query) {
        Ok(session) => session,
        Err(response) => return response,
    };
    let body = match read_body(&gateway, body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let frames: Vec<serde_json::Value> = match serde_json::from_slice(&body) {
        Ok(frames) => frames,
        Err(e) => {
            let text = format!("the body must be a JSON array of frames: {e}");
            session.fail(None, Failure::new(ErrorCode::BadFrame, text.clone()));
            return (StatusCode::BAD_REQUEST, text).into_response();
        }
    };
    for frame in frames {
        match serde_json::from_value::<ClientFrame>(frame) {
            Ok(frame) => crate::inbound::handle(&session, frame),
            Err(e) => session.fail(None, Failure::new(ErrorCode::BadFrame, e.to_string())),
        }
    }
    StatusCode::NO_CONTENT.into_response()
}

/// `GET /lp/recv?session=<id>&ack=<n>`: the frames after `ack`, held
/// until there are some or the poll timeout passes.
pub(crate) async fn recv(
    State(gateway): State<WebGateway>,
    Query(query): Query<PollQuery>,
    headers: HeaderMap,
) -> Response {
    let session = match session_of(&gateway, &headers, &query) {
        Ok(session) => session,
        Err(response) => return response,
    };
    let (generation, waker) = session.outbox.attach(query.ack);
    let deadline = tokio::time::Instant::now() + gateway.inner.settings.poll_timeout;
    let response = loop {
        match session.outbox.take(generation) {
            Taken::Frames(frames) if !frames.is_empty() => {
                break json(StatusCode::OK, join(&frames))
            }
            Taken::Frames(_) => {}
            Taken::Replaced | Taken::Dropped => break json(StatusCode::OK, b"[]".to_vec()),
            Taken::Closed(closing) => break closed(&closing),
        }
        if tokio::time::timeout_at(deadline, waker.notified())
            .await
            .is_err()
        {
            break json(StatusCode::OK, b"[]".to_vec());
        }
    };
    detach(&session, generation);
    response
}

/// A JSON array of the frames, which are JSON each.
fn join(frames: &[Bytes]) -> Vec<u8> {
    let mut body = Vec::with_capacity(frames.iter().map(|f| f.len() + 1).sum::<usize>() + 2);
    body.push(b'[');
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(frame);
    }
    body.push(b']');
    body
}

fn closed(closing: &Closing) -> Response {
    let status = match closing.code {
        close::SLOW_CONSUMER => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::GONE,
    };
    (status, closing.reason.clone()).into_response()
}

/// `POST /lp/close?session=<id>`: ends the session for good.
pub(crate) async fn close(
    State(gateway): State<WebGateway>,
    Query(query): Query<PollQuery>,
    headers: HeaderMap,
) -> Response {
    let session = match session_of(&gateway, &headers, &query) {
        Ok(session) => session,
        Err(response) => return response,
    };
    if let Some(actor) = session.actor.get() {
        actor.tell(SessionMsg::Close(Closing {
            code: 1000,
            reason: "closed by the client".into(),
        }));
    }
    StatusCode::NO_CONTENT.into_response()
}
