//! The WebSocket transport: `GET <base>/ws?enc=json|msgpack`.
//!
//! One task per connection reads the client's frames, sends what the
//! session's outbox holds, pings, and watches the idle and ping timeouts.
//! It sends with back-pressure: while the socket is slow, the outbox
//! fills and the slow-consumer policy applies.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use bytes::Bytes;
use futures_util::stream::SplitStream;
use futures_util::{SinkExt, StreamExt};
use http::HeaderMap;
use serde::Deserialize;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::auth::{check_origin, Refusal};
use crate::frame::{close, decode, encode, ClientFrame, Encoding, ErrorCode, ServerFrame};
use crate::gateway::{Opened, WebGateway};
use crate::outbox::Taken;
use crate::service::Failure;
use crate::session::Session;
use crate::ws_close::{send_close, unreadable, Sink};

/// The query of the upgrade request.
#[derive(Debug, Deserialize)]
pub(crate) struct WsQuery {
    enc: Option<String>,
}

/// The smallest read buffer a connection gets, whatever the settings say.
const MIN_READ_BUFFER: usize = 512;

pub(crate) async fn upgrade(
    State(gateway): State<WebGateway>,
    Query(query): Query<WsQuery>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    // tungstenite's own limit is a backstop; frames between max_frame and
    // it get a close code that names the limit.
    let backstop = gateway.inner.settings.max_frame.saturating_mul(2).max(1024);
    ws.max_message_size(backstop)
        .max_frame_size(backstop)
        .read_buffer_size(gateway.inner.settings.ws_read_buffer.max(MIN_READ_BUFFER))
        .on_upgrade(move |socket| connection(gateway, socket, headers, query.enc))
}

async fn connection(
    gateway: WebGateway,
    socket: WebSocket,
    headers: HeaderMap,
    enc: Option<String>,
) {
    let (mut sink, mut stream) = socket.split();
    let (opened, encoding) = match handshake(&gateway, &mut stream, &headers, enc).await {
        Ok(done) => done,
        Err(refusal) => {
            let within = gateway.inner.settings.send_timeout;
            return send_close(&mut sink, refusal.code, &refusal.text, within).await;
        }
    };
    let session = opened.session.clone();
    let (generation, waker) = session.outbox.attach(opened.last_seq);
    let welcome = opened.welcome(gateway.inner.settings.ping_interval);
    let mut connection = Connection {
        gateway: &gateway,
        session: &session,
        encoding,
        generation,
        sink,
    };
    let for_good = match connection.send(encode(encoding, &welcome)).await {
        Ok(()) => connection.run(waker, stream).await,
        Err(()) => false,
    };
    session.detach(generation, for_good);
}

/// Checks the origin and the encoding, reads the `hello`, and opens or
/// resumes its session.
async fn handshake(
    gateway: &WebGateway,
    stream: &mut SplitStream<WebSocket>,
    headers: &HeaderMap,
    enc: Option<String>,
) -> Result<(Opened, Encoding), Refusal> {
    check_origin(&gateway.inner.settings.origins, headers)?;
    let encoding = Encoding::from_query(enc.as_deref())
        .ok_or_else(|| Refusal::protocol(format!("unknown encoding {enc:?}")))?;
    let hello = read_hello(gateway, stream, encoding).await?;
    Ok((gateway.open(&hello, headers, encoding)?, encoding))
}

/// The first frame: a `hello`, within the idle timeout.
async fn read_hello(
    gateway: &WebGateway,
    stream: &mut SplitStream<WebSocket>,
    encoding: Encoding,
) -> Result<ClientFrame, Refusal> {
    let settings = &gateway.inner.settings;
    let first = tokio::time::timeout(settings.idle_timeout, stream.next()).await;
    let message = match first {
        Err(_) => {
            return Err(Refusal {
                code: close::TIMEOUT,
                ..Refusal::protocol("no hello within the idle timeout")
            })
        }
        Ok(Some(Ok(message))) => message,
        Ok(Some(Err(e))) => {
            return Err(match unreadable(e) {
                Some((code, why)) => Refusal {
                    code,
                    ..Refusal::protocol(why)
                },
                None => Refusal::protocol("the connection ended before hello"),
            })
        }
        Ok(None) => return Err(Refusal::protocol("the connection ended before hello")),
    };
    let Some(bytes) = payload(&message) else {
        return Err(Refusal::protocol("the first frame must be hello"));
    };
    if bytes.len() > settings.max_frame {
        return Err(Refusal {
            code: close::TOO_LARGE,
            ..Refusal::protocol(too_large(bytes.len(), settings.max_frame))
        });
    }
    match decode(encoding, bytes) {
        Ok(hello @ ClientFrame::Hello { .. }) => Ok(hello),
        Ok(_) => Err(Refusal::protocol("the first frame must be hello")),
        Err(e) => Err(Refusal::protocol(format!(
            "the first frame must be hello: {e}"
        ))),
    }
}

fn too_large(len: usize, max: usize) -> String {
    format!("a frame of {len} bytes; max_frame is {max}")
}

fn payload(message: &Message) -> Option<&[u8]> {
    match message {
        Message::Text(text) => Some(text.as_bytes()),
        Message::Binary(bytes) => Some(bytes),
        _ => None,
    }
}

/// How a connection ended.
enum End {
    /// The connection went; the session waits to be resumed.
    Dropped,
    /// The session is over.
    ForGood,
}

struct Connection<'a> {
    gateway: &'a WebGateway,
    session: &'a Arc<Session>,
    encoding: Encoding,
    generation: u64,
    sink: Sink,
}

impl Connection<'_> {
    async fn send(&mut self, bytes: Bytes) -> Result<(), ()> {
        let message = match self.encoding {
            Encoding::Json => match Utf8Bytes::try_from(bytes) {
                Ok(text) => Message::Text(text),
                Err(_) => return Ok(()),
            },
            Encoding::MsgPack => Message::Binary(bytes),
        };
        // A client that does not read would hold this task, and with it
        // the heartbeat, for ever.
        let within = self.gateway.inner.settings.send_timeout;
        match tokio::time::timeout(within, self.sink.send(message)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(()),
        }
    }

    async fn close(&mut self, code: u16, reason: &str) {
        let within = self.gateway.inner.settings.send_timeout;
        send_close(&mut self.sink, code, reason, within).await;
    }

    /// Runs until the connection or the session ends; true for the latter.
    async fn run(&mut self, waker: Arc<Notify>, mut stream: SplitStream<WebSocket>) -> bool {
        let settings = &self.gateway.inner.settings;
        let tick = settings
            .ping_interval
            .min(settings.ping_timeout)
            .min(settings.idle_timeout)
            / 4;
        let mut ticker = tokio::time::interval(tick.max(Duration::from_millis(5)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut heartbeat = Heartbeat::new();
        loop {
            let end = tokio::select! {
                () = waker.notified() => self.flush().await,
                message = stream.next() => match message {
                    Some(Ok(message)) => {
                        // WebSocket pings, which the library answers on its
                        // own, would keep alive a client that sends nothing
                        // else (a message it never finishes, say).
                        if matches!(message, Message::Text(_) | Message::Binary(_)) {
                            heartbeat.heard();
                        }
                        self.receive(message).await
                    }
                    Some(Err(e)) => {
                        if let Some((code, why)) = unreadable(e) {
                            self.close(code, &why).await;
                        }
                        Some(End::Dropped)
                    }
                    None => Some(End::Dropped),
                },
                _ = ticker.tick() => match heartbeat.check(settings) {
                    Ok(Some(n)) => {
                        self.session.outbox.push_control(&ServerFrame::Ping { n });
                        None
                    }
                    Ok(None) => None,
                    Err(why) => {
                        self.close(close::TIMEOUT, &why).await;
                        Some(End::Dropped)
                    }
                },
            };
            match end {
                None => continue,
                Some(End::Dropped) => return false,
                Some(End::ForGood) => return true,
            }
        }
    }

    /// Sends what the outbox holds.
    async fn flush(&mut self) -> Option<End> {
        match self.session.outbox.take(self.generation) {
            Taken::Frames(frames) => {
                for frame in frames {
                    if self.send(frame).await.is_err() {
                        return Some(End::Dropped);
                    }
                }
                None
            }
            Taken::Replaced => {
                self.close(
                    close::REPLACED,
                    "the session was resumed by another connection",
                )
                .await;
                Some(End::Dropped)
            }
            Taken::Dropped => {
                self.close(
                    close::SERVICE_RESTART,
                    "dropped by the server; resume the session",
                )
                .await;
                Some(End::Dropped)
            }
            Taken::Closed(closing) => {
                self.close(closing.code, &closing.reason).await;
                Some(End::ForGood)
            }
        }
    }

    /// Handles one message from the client.
    async fn receive(&mut self, message: Message) -> Option<End> {
        if let Message::Close(frame) = &message {
            let code = frame.as_ref().map(|f| f.code);
            return Some(match code {
                Some(1000 | 1001) => End::ForGood,
                _ => End::Dropped,
            });
        }
        let max_frame = self.gateway.inner.settings.max_frame;
        let bytes = payload(&message)?;
        if bytes.len() > max_frame {
            let why = too_large(bytes.len(), max_frame);
            self.close(close::TOO_LARGE, &why).await;
            return Some(End::Dropped);
        }
        match decode(self.encoding, bytes) {
            Ok(frame) => crate::inbound::handle(self.session, frame),
            Err(e) => self
                .session
                .fail(None, Failure::new(ErrorCode::BadFrame, e.0)),
        }
        None
    }
}

/// The server's pings and the timeouts of one connection.
struct Heartbeat {
    last_heard: Instant,
    last_ping: Instant,
    unanswered: Option<Instant>,
    n: u64,
}

impl Heartbeat {
    fn new() -> Self {
        let now = Instant::now();
        Heartbeat {
            last_heard: now,
            last_ping: now,
            unanswered: None,
            n: 0,
        }
    }

    /// Anything from the client answers a ping and keeps it from idling.
    fn heard(&mut self) {
        self.last_heard = Instant::now();
        self.unanswered = None;
    }

    /// A ping to send, or why the connection must close.
    fn check(&mut self, settings: &crate::settings::WebSettings) -> Result<Option<u64>, String> {
        let now = Instant::now();
        if now - self.last_heard >= settings.idle_timeout {
            return Err(format!(
                "idle: nothing heard for {:?}",
                settings.idle_timeout
            ));
        }
        if let Some(sent) = self.unanswered {
            if now - sent >= settings.ping_timeout {
                return Err(format!("no pong within {:?}", settings.ping_timeout));
            }
            return Ok(None);
        }
        if now - self.last_ping >= settings.ping_interval {
            self.n += 1;
            self.last_ping = now;
            self.unanswered = Some(now);
            return Ok(Some(self.n));
        }
        Ok(None)
    }
}
