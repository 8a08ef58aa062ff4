//! A connection's socket whose writes may not stay blocked for longer
//! than a bound: past it, the write fails, and the server (hyper) ends the
//! connection.
//!
//! A server's defences against a client mostly end in something it has to
//! write (HTTP/2's GOAWAY after a keep-alive timeout or a flood limit, an
//! HTTP/1 response), and a client that reads nothing, its socket buffers
//! full, never lets that out: the connection then waits on the write for
//! ever. A write that makes no progress for the limit is taken as a dead
//! peer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// A stream whose writes (and flushes, and shutdown) fail with
/// `TimedOut` once blocked for the limit without a byte taken; reads pass
/// through.
pub struct WriteStall<S> {
    inner: S,
    limit: Duration,
    /// Set while writes are blocked: when they stop waiting.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteStall<S> {
    /// `inner`, its writes failing after `limit` blocked.
    pub fn new(inner: S, limit: Duration) -> Self {
        WriteStall {
            inner,
            limit,
            stalled: None,
        }
    }

    /// What a blocked write (or flush, or shutdown) returns: still
    /// pending, or an error once blocked for `limit`.
    fn blocked<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the peer took no bytes for {limit:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The outcome of a write-side call: progress clears the stall.
    fn track<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => self.blocked(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteStall<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteStall<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.track(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.track(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.track(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.track(cx, polled)
    }
}
