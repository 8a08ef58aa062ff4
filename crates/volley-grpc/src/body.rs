//! The response body of a unary call: one data frame, then the trailers
//! with the status. Nothing to poll, nothing to allocate per frame.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

/// A unary response's body: the message (absent for an error, whose
/// status travels in the headers) and the trailers.
#[derive(Debug, Default)]
pub struct UnaryBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl UnaryBody {
    /// A message followed by trailers.
    pub(crate) fn message(data: Bytes, trailers: HeaderMap) -> Self {
        UnaryBody {
            data: Some(data),
            trailers: Some(trailers),
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
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}
