//! An admitted connection's stream: it holds its [`Admission`] for as long
//! as the connection lives, and fails its reads once `handshake_timeout`
//! passed before the peer sent `first_bytes` bytes.
//!
//! The deadline is the only defence against a peer that opens a
//! connection and sends nothing, or a byte now and then: HTTP servers wait
//! for a request's first line, and HTTP/2 for its preface, for as long as
//! the connection stays open. Once the peer has started, the protocol's
//! own timeouts take over.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::gate::{Admission, Refusal};

/// A stream that counts as one of its gate's open connections.
#[derive(Debug)]
pub struct GatedStream<S> {
    inner: S,
    admission: Admission,
    start: Option<Start>,
}

/// A connection that has not sent its first bytes yet.
#[derive(Debug)]
struct Start {
    deadline: Pin<Box<Sleep>>,
    missing: usize,
}

impl<S> GatedStream<S> {
    /// Wraps `inner`, admitted by `admission`; the handshake deadline
    /// starts now.
    pub fn new(inner: S, admission: Admission) -> Self {
        let limits = admission.gate().limits();
        let start = (limits.first_bytes > 0).then(|| Start {
            deadline: Box::pin(tokio::time::sleep(limits.handshake_timeout)),
            missing: limits.first_bytes,
        });
        GatedStream {
            inner,
            admission,
            start,
        }
    }

    /// The stream inside.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for GatedStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(start) = this.start.as_mut() {
            if start.deadline.as_mut().poll(cx).is_ready() {
                let first_bytes = this.admission.gate().limits().first_bytes;
                let refusal = Refusal::HandshakeTimeout(first_bytes);
                let gate = this.admission.gate().clone();
                gate.refuse(this.admission.ip(), refusal);
                this.start = None;
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, refusal)));
            }
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some(start)) = (&read, this.start.as_mut()) {
            let got = buf.filled().len() - before;
            start.missing = start.missing.saturating_sub(got);
            if start.missing == 0 || got == 0 {
                // Started, or closed by the peer: the deadline is over.
                this.start = None;
            }
        }
        read
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for GatedStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
