//! The response body of a call. A unary call's is: one data frame, then the trailers
//! with the status. Nothing to poll, nothing to allocate per frame.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use crate::streaming::StreamBody;

/// A unary response's body: the message (absent for an error, whose
/// status travels in the headers) and the trailers.
#[derive(Default)]
pub struct UnaryBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
    stream: Option<Box<StreamBody>>,
    /// A tonic service's body; in a mutex only to keep this type `Sync`
    /// (it is reached through `&mut` when polled, without locking).
    #[cfg(feature = "reflection")]
    forwarded: Option<Box<std::sync::Mutex<tonic::body::Body>>>,
}

impl std::fmt::Debug for UnaryBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnaryBody")
            .field("streaming", &self.stream.is_some())
            .finish_non_exhaustive()
    }
}

impl UnaryBody {
    /// A message followed by trailers.
    pub(crate) fn message(data: Bytes, trailers: HeaderMap) -> Self {
        UnaryBody {
            data: Some(data),
            trailers: Some(trailers),
            ..UnaryBody::default()
        }
    }

    /// A server-streaming call's frames, as the actor sends them.
    pub(crate) fn stream(stream: StreamBody) -> Self {
        UnaryBody {
            stream: Some(Box::new(stream)),
            ..UnaryBody::default()
        }
    }

    /// A tonic service's response body.
    #[cfg(feature = "reflection")]
    pub(crate) fn forwarded(body: tonic::body::Body) -> Self {
        UnaryBody {
            forwarded: Some(Box::new(std::sync::Mutex::new(body))),
            ..UnaryBody::default()
        }
    }

    /// Nothing: a Trailers-Only response carries its status in the
    /// headers.
    pub(crate) fn empty() -> Self {
        UnaryBody::default()
    }
}

impl Body for UnaryBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(stream) = self.stream.as_mut() {
            return stream.poll_frame(cx).map(|f| f.map(Ok));
        }
        #[cfg(feature = "reflection")]
        if let Some(body) = self.forwarded.as_mut() {
            let body = body.get_mut().unwrap_or_else(|e| e.into_inner());
            return match Pin::new(body).poll_frame(cx) {
                Poll::Ready(Some(Err(status))) => {
                    // The service failed mid-response: its status ends it.
                    self.forwarded = None;
                    let mut trailers = HeaderMap::new();
                    if status.add_header(&mut trailers).is_err() {
                        trailers.insert("grpc-status", (status.code() as i32).into());
                    }
                    Poll::Ready(Some(Ok(Frame::trailers(trailers))))
                }
                Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            };
        }
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        if let Some(stream) = &self.stream {
            return stream.is_end_stream();
        }
        #[cfg(feature = "reflection")]
        if let Some(body) = &self.forwarded {
            return body
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_end_stream();
        }
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        if self.stream.is_some() {
            return SizeHint::default();
        }
        #[cfg(feature = "reflection")]
        if let Some(body) = &self.forwarded {
            return body.lock().unwrap_or_else(|e| e.into_inner()).size_hint();
        }
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

/// A request body as a tonic service takes it.
#[cfg(feature = "reflection")]
pub(crate) fn to_tonic<B>(body: B) -> tonic::body::Body
where
    B: Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    use bytes::Buf;
    use http_body_util::BodyExt;
    tonic::body::Body::new(
        body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining()))),
    )
}
