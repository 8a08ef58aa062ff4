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
            stream: None,
        }
    }

    /// A server-streaming call's frames, as the actor sends them.
    pub(crate) fn stream(stream: StreamBody) -> Self {
        UnaryBody {
            stream: Some(Box::new(stream)),
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
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        if let Some(stream) = &self.stream {
            return stream.is_end_stream();
        }
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        if self.stream.is_some() {
            return SizeHint::default();
        }
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}
