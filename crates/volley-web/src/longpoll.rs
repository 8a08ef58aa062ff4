//! The long-poll transport, for networks that block WebSockets: the same
//! frames and the same session actor, JSON only.
//!
//! `open` posts the `hello` and gets the `welcome`; `send` posts a JSON
//! array of frames; `recv` is held until frames are ready or the poll
//! timeout passes, and its `ack` names the last frame the client has
//! (the frames after it are sent again: a lost response loses nothing);
//! `close` ends the session. Between two `recv`s the session waits as a
//! dropped WebSocket's does, for the resume grace period.

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, Query, State};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use http::request::Parts;
use http::{header, HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::auth::{check_origin, Refusal};
use crate::frame::{close, decode, decode_text, encode, BadFrame, Encoding, ErrorCode};
use crate::gateway::WebGateway;
use crate::outbox::{Closing, Taken};
use crate::service::Failure;
use crate::session::{Session, SessionMsg};

/// The query of `open`.
#[derive(Debug, Deserialize)]
pub(crate) struct OpenQuery {
    enc: Option<String>,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.status, self.text).into_response()
    }
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

/// The body, at most `max_frame` bytes, within `body_timeout`: a client
/// that sends its headers and then trickles (or never ends) its body
/// would otherwise hold the request, and its connection, for as long as
/// it likes.
async fn read_body(gateway: &WebGateway, body: Body) -> Result<Bytes, Refusal> {
    let limit = gateway.inner.settings.body_timeout;
    tokio::time::timeout(limit, read_body_within_max(gateway, body))
        .await
        .unwrap_or_else(|_| {
            Err(Refusal {
                code: close::TIMEOUT,
                status: StatusCode::REQUEST_TIMEOUT,
                text: format!("the body did not arrive within body_timeout ({limit:?})"),
            })
        })
}

/// The body, at most `max_frame` bytes. Read chunk by chunk rather than
/// with `axum::body::to_bytes`, whose limit and collecting layers cost
/// more than the body itself: a body that comes in one chunk, as a small
/// one does, is kept as it came, and only a longer one is copied together.
async fn read_body_within_max(gateway: &WebGateway, body: Body) -> Result<Bytes, Refusal> {
    let max = gateway.inner.settings.max_frame;
    let refused = || Refusal {
        code: close::TOO_LARGE,
        status: StatusCode::PAYLOAD_TOO_LARGE,
        text: format!("the body is larger than max_frame ({max} bytes)"),
    };
    let mut chunks = body.into_data_stream();
    let mut first: Option<Bytes> = None;
    let mut joined = Vec::new();
    let mut len = 0;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|_| refused())?;
        len += chunk.len();
        if len > max {
            return Err(refused());
        }
        match first.take() {
            None if joined.is_empty() => first = Some(chunk),
            None => joined.extend_from_slice(&chunk),
            Some(one) => {
                joined.extend_from_slice(&one);
                joined.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| joined.into()))
}

/// What `send`, `recv` and `close` are about: the session the query
/// names, after the origin check, and `recv`'s `ack`. Read from the
/// request's parts as they are: no copy of its headers (the `HeaderMap`
/// extractor clones them) and no owned strings for the query.
pub(crate) struct Polled {
    session: Arc<Session>,
    ack: Option<u64>,
}

impl FromRequestParts<WebGateway> for Polled {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, gateway: &WebGateway) -> Result<Self, Refusal> {
        check_origin(&gateway.inner.settings.origins, &parts.headers)?;
        let mut id = Cow::Borrowed("");
        let mut ack = None;
        for (key, value) in query_pairs(parts.uri.query().unwrap_or("")) {
            match &*key {
                "session" => id = value,
                "ack" => {
                    let n = value.parse().map_err(|_| {
                        Refusal::protocol(format!("ack must be a frame number, not {value:?}"))
                    })?;
                    ack = Some(n);
                }
                _ => {}
            }
        }
        let session = gateway
            .inner
            .session(&id)
            .ok_or_else(|| Refusal::unknown_session(&id))?;
        Ok(Polled { session, ack })
    }
}

/// A query's pairs, decoded as a form's are; borrowed from the URI as
/// they are when nothing in them is escaped (session ids are hex, `ack`
/// a number), which skips the decoder's copy and UTF-8 check.
fn query_pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            if pair.bytes().any(|b| b == b'%' || b == b'+') {
                form_urlencoded::parse(pair.as_bytes())
                    .next()
                    .unwrap_or_default()
            } else {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (Cow::Borrowed(key), Cow::Borrowed(value))
            }
        })
}

/// `POST /lp/open?enc=json`, body the `hello`.
pub(crate) async fn open(
    State(gateway): State<WebGateway>,
    Query(query): Query<OpenQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    check_origin(&gateway.inner.settings.origins, &headers)?;
    if Encoding::from_query(query.enc.as_deref()) != Some(Encoding::Json) {
        return Err(Refusal::protocol("long-poll speaks enc=json only"));
    }
    let body = read_body(&gateway, body).await?;
    let hello = decode(Encoding::Json, &body)
        .map_err(|e| Refusal::protocol(format!("the body must be hello: {e}")))?;
    let opened = gateway.open(&hello, &headers, Encoding::Json)?;
    // Attached and let go at once: the grace period runs until a recv.
    let (generation, _) = opened.session.outbox.attach(opened.last_seq);
    opened.session.detach(generation, false);
    let welcome = opened.welcome(gateway.inner.settings.poll_timeout);
    Ok(json(
        StatusCode::OK,
        encode(Encoding::Json, &welcome).to_vec(),
    ))
}

/// `POST /lp/send?session=<id>`, body a JSON array of frames.
pub(crate) async fn send(
    State(gateway): State<WebGateway>,
    Polled { session, .. }: Polled,
    body: Body,
) -> Result<Response, Refusal> {
    let body = read_body(&gateway, body).await?;
    // The array is checked whole, each frame kept as its text; then each
    // is read once into its `ClientFrame`, so that a bad frame gets an
    // `error` of its own and the others go on.
    let frames: Vec<&RawValue> = serde_json::from_slice(&body).map_err(|e| {
        let text = format!("the body must be a JSON array of frames: {e}");
        session.fail(None, Failure::new(ErrorCode::BadFrame, text.clone()));
        Refusal::protocol(text)
    })?;
    for frame in frames {
        match decode_text(frame.get()) {
            Ok(frame) => crate::inbound::handle(&session, frame),
            Err(BadFrame(text)) => session.fail(None, Failure::new(ErrorCode::BadFrame, text)),
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /lp/recv?session=<id>&ack=<n>`: the frames after `ack`, held
/// until there are some or the poll timeout passes.
pub(crate) async fn recv(
    State(gateway): State<WebGateway>,
    Polled { session, ack }: Polled,
) -> Result<Response, Refusal> {
    let (generation, waker) = session.outbox.attach(ack);
    let poll_timeout = gateway.inner.settings.poll_timeout;
    // Set on the first wait only: most polls find their frames at once.
    let mut deadline = None;
    let response = loop {
        match session.outbox.take(generation) {
            Taken::Frames(frames) if !frames.is_empty() => {
                break json(StatusCode::OK, join(&frames))
            }
            Taken::Frames(_) => {}
            Taken::Replaced | Taken::Dropped => break json(StatusCode::OK, b"[]".to_vec()),
            Taken::Closed(closing) => break closed(&closing),
        }
        let deadline = *deadline.get_or_insert_with(|| tokio::time::Instant::now() + poll_timeout);
        if tokio::time::timeout_at(deadline, waker.notified())
            .await
            .is_err()
        {
            break json(StatusCode::OK, b"[]".to_vec());
        }
    };
    session.detach(generation, false);
    Ok(response)
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
pub(crate) async fn close(Polled { session, .. }: Polled) -> Result<Response, Refusal> {
    if let Some(actor) = session.actor.get() {
        actor.tell(SessionMsg::Close(Closing {
            code: 1000,
            reason: "closed by the client".into(),
        }));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
