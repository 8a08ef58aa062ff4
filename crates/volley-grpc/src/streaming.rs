//! A server-streaming method: the actor gets the decoded request and a
//! [`ResponseStream`], pushes responses through it without blocking, and
//! ends the call with a status.
//!
//! Back-pressure: the per-call buffer is bounded (`stream_buffer`). The
//! response body takes from it only when hyper asks for the next frame,
//! which HTTP/2 flow control holds back while the client does not read,
//! so a slow client fills the buffer and `try_send` answers `Full`. The
//! actor is never blocked: it asks to be told, by a message of its
//! choosing, when there is room again (`notify_when_ready`).
//!
//! The deadline is kept on both sides. The body ends the call
//! DEADLINE_EXCEEDED when hyper polls it; but hyper does not poll a body
//! while the client's flow-control window is shut, so the actor's side
//! checks the deadline itself: past it, the stream is closed to the actor
//! (`try_send` answers `Closed`, and the watchers tell) whether or not the
//! client ever reads again.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tonic::Status;
use volley::ActorRef;

use crate::frame;

/// Why [`ResponseStream::try_send`] did not take a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamSendError {
    /// The call's buffer is full: the client has not read enough yet.
    #[error("the stream's buffer is full")]
    Full,
    /// The call is over: the client cancelled or went away, or the
    /// deadline passed.
    #[error("the stream is closed")]
    Closed,
}

/// The sending side of one server-streaming call.
///
/// Dropping it without [`ResponseStream::finish`] ends the call with
/// INTERNAL, naming the method.
pub struct ResponseStream<Resp> {
    data: mpsc::Sender<Bytes>,
    end: Option<oneshot::Sender<Status>>,
    /// Set when the actor ends the call (`finish` or drop) while it is
    /// still open: from then on the call's watchers tell it nothing, so a
    /// `closed` message always means the client or the deadline ended the
    /// call, never the actor.
    ended: Arc<AtomicBool>,
    runtime: tokio::runtime::Handle,
    method: String,
    /// The call's deadline.
    deadline: Instant,
    types: PhantomData<fn(Resp)>,
}

impl<Resp: prost::Message> ResponseStream<Resp> {
    /// Queues one response, encoded once into its own data frame.
    pub fn try_send(&self, response: &Resp) -> Result<(), StreamSendError> {
        if self.past_deadline() {
            return Err(StreamSendError::Closed);
        }
        let permit = self.data.try_reserve().map_err(|e| match e {
            mpsc::error::TrySendError::Full(()) => StreamSendError::Full,
            mpsc::error::TrySendError::Closed(()) => StreamSendError::Closed,
        })?;
        permit.send(frame::encode(response));
        Ok(())
    }

    /// Tells `actor` the message `ready` once the buffer has room, or
    /// `closed` if the call ends first (cancelled, deadline). Without
    /// blocking the caller. Nothing is told once the actor has ended the
    /// call itself (see [`ResponseStream::notify_when_closed`]).
    pub fn notify_when_ready<M: Send + 'static>(&self, actor: &ActorRef<M>, ready: M, closed: M) {
        let data = self.data.clone();
        let ended = self.ended.clone();
        let actor = actor.clone();
        let deadline = self.deadline;
        self.runtime.spawn(async move {
            // The permit is released at once: it only proves there is room.
            let room = tokio::select! {
                reserved = data.reserve() => reserved.is_ok(),
                () = tokio::time::sleep_until(deadline) => false,
            };
            let message = if room { ready } else { closed };
            if !ended.load(Ordering::Acquire) {
                actor.tell(message);
            }
        });
    }

    /// Tells `actor` the message `cancelled` when the call ends before
    /// [`ResponseStream::finish`]: the client cancelled or disconnected,
    /// or the deadline passed. Armed after the call already ended, it
    /// tells at once. A call the actor ends itself (`finish`, or dropping
    /// the stream) before the client goes away tells nothing.
    pub fn notify_when_closed<M: Send + 'static>(&self, actor: &ActorRef<M>, cancelled: M) {
        let data = self.data.clone();
        let ended = self.ended.clone();
        let actor = actor.clone();
        let deadline = self.deadline;
        self.runtime.spawn(async move {
            // Resolves at once when the receiver is already gone, so a
            // watch armed after the cancel does not miss it.
            tokio::select! {
                () = data.closed() => {}
                () = tokio::time::sleep_until(deadline) => {}
            }
            if !ended.load(Ordering::Acquire) {
                actor.tell(cancelled);
            }
        });
    }

    /// Ends the call: `Ok(())` is OK, `Err(status)` the actor's status.
    /// Responses already queued are sent first. Past the deadline the
    /// call ends DEADLINE_EXCEEDED whatever the actor says.
    pub fn finish(mut self, result: Result<(), Status>) {
        let status = match result {
            _ if self.past_deadline() => late(),
            Ok(()) => Status::ok(""),
            Err(status) => status,
        };
        if let Some(end) = self.end.take() {
            self.mark_ended();
            // A closed call has no one left to tell.
            let _ = end.send(status);
        }
    }
}

impl<Resp> ResponseStream<Resp> {
    /// The actor ends the call. If the client or the deadline ended it
    /// first, the watchers still tell: an actor that lets the stream go
    /// after one watcher's `closed` must not silence the other's.
    fn mark_ended(&self) {
        if !self.is_closed() {
            self.ended.store(true, Ordering::Release);
        }
    }
}

impl<Resp> ResponseStream<Resp> {
    fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Whether the call is over on the client's side: it went, or the
    /// deadline passed.
    pub fn is_closed(&self) -> bool {
        self.data.is_closed() || self.past_deadline()
    }
}

/// `timeout` from now; a year from now for a timeout past what an
/// `Instant` holds (a `default_timeout` of `Duration::MAX`).
fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

/// The status of a call whose deadline passed first.
fn late() -> Status {
    Status::deadline_exceeded("the stream did not end before its deadline")
}

impl<Resp> Drop for ResponseStream<Resp> {
    fn drop(&mut self) {
        if let Some(end) = self.end.take() {
            self.mark_ended();
            let _ = end.send(Status::internal(format!(
                "the actor answering {} dropped the response stream without ending the call",
                self.method
            )));
        }
    }
}

/// The response body of a streaming call: queued data frames, then the
/// trailers with the status.
pub(crate) struct StreamBody {
    data: mpsc::Receiver<Bytes>,
    end: oneshot::Receiver<Status>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    done: bool,
    /// The gateway's count of streaming calls in progress, which this
    /// body is one of until hyper drops it.
    open: Arc<AtomicUsize>,
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl StreamBody {
    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<http_body::Frame<Bytes>>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Poll::Ready(Some(bytes)) = self.data.poll_recv(cx) {
            return Poll::Ready(Some(http_body::Frame::data(bytes)));
        }
        let status = if let Poll::Ready(end) = Pin::new(&mut self.end).poll(cx) {
            // Frames queued before the end was sent are taken first.
            if let Ok(bytes) = self.data.try_recv() {
                return Poll::Ready(Some(http_body::Frame::data(bytes)));
            }
            end.unwrap_or_else(|_| Status::internal("the response stream vanished"))
        } else if self.deadline.as_mut().poll(cx).is_ready() {
            late()
        } else {
            return Poll::Pending;
        };
        self.done = true;
        self.data.close();
        Poll::Ready(Some(http_body::Frame::trailers(trailers(&status))))
    }

    pub(crate) fn is_end_stream(&self) -> bool {
        self.done
    }
}

fn trailers(status: &Status) -> HeaderMap {
    let mut map = HeaderMap::with_capacity(2);
    if status.add_header(&mut map).is_err() {
        map.insert("grpc-status", (status.code() as i32).into());
    }
    map
}

/// A streaming method, with its types erased.
pub(crate) trait StreamingMethod: Send + Sync {
    /// Decodes `message`, hands the actor its stream, and returns the body.
    /// `headers`: the request's, for a method that hands its metadata on.
    fn start(
        &self,
        message: &[u8],
        headers: &HeaderMap,
        timeout: Duration,
    ) -> Result<StreamBody, Status>;
}

/// A server-streaming method: `input` makes what `make` takes from the
/// decoded request and the request's headers (the request alone, or a
/// `Call` with its metadata).
pub(crate) struct TypedStream<Req, In, Resp, M: Send + 'static, F> {
    pub(crate) path: String,
    pub(crate) target: ActorRef<M>,
    pub(crate) input: fn(Req, &HeaderMap) -> In,
    pub(crate) make: F,
    pub(crate) buffer: usize,
    pub(crate) open: Arc<AtomicUsize>,
    pub(crate) types: PhantomData<fn(Req) -> Resp>,
}

/// The request alone, for a method without metadata.
pub(crate) fn request_only<Req>(request: Req, _headers: &HeaderMap) -> Req {
    request
}

impl<Req, In, Resp, M, F> StreamingMethod for TypedStream<Req, In, Resp, M, F>
where
    Req: prost::Message + Default + Send + 'static,
    In: Send + 'static,
    Resp: prost::Message + Send + 'static,
    M: Send + 'static,
    F: Fn(In, ResponseStream<Resp>) -> M + Send + Sync + 'static,
{
    fn start(
        &self,
        message: &[u8],
        headers: &HeaderMap,
        timeout: Duration,
    ) -> Result<StreamBody, Status> {
        let request = (self.input)(crate::unary::decode_request::<Req>(message)?, headers);
        let (data_tx, data_rx) = mpsc::channel(self.buffer.max(1));
        let (end_tx, end_rx) = oneshot::channel();
        let deadline = deadline_after(timeout);
        let stream = ResponseStream {
            data: data_tx,
            end: Some(end_tx),
            ended: Arc::new(AtomicBool::new(false)),
            runtime: tokio::runtime::Handle::current(),
            method: self.path.clone(),
            deadline,
            types: PhantomData,
        };
        self.target
            .try_tell((self.make)(request, stream))
            .map_err(|_| {
                Status::unavailable(format!(
                    "{} is terminated or its mailbox is full",
                    self.target.path()
                ))
            })?;
        self.open.fetch_add(1, Ordering::Relaxed);
        Ok(StreamBody {
            data: data_rx,
            end: end_rx,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            done: false,
            open: self.open.clone(),
        })
    }
}
