//! An established outbound connection: the bytes being written to it, and,
//! with TLS, the rustls session that encrypts them.
//!
//! The connection is written with non-blocking `try_write` by whoever holds
//! the lane's write token (a dispatcher thread at the end of its batch, or
//! the writer task), so encryption happens here, on the same thread, and
//! not in an async TLS stream: the plaintext goes into the rustls session,
//! which seals it into records and keeps what the socket did not take
//! until the next try.

use std::io::{self, Write};
use std::sync::Arc;

use bytes::BytesMut;
use tokio::net::TcpStream;

use super::{chunk_end, messages_from};
use crate::transport::outbound::lane::LaneConnection;

pub(crate) use crate::transport::handshake::tls::TlsSession;

/// An established outbound connection and the bytes being written to it.
pub(crate) struct Connection {
    /// Shared with the writer task, which watches it for the peer's close
    /// while the connection is idle.
    pub(super) stream: Arc<TcpStream>,
    /// Encrypts what is written, when the transport runs TLS.
    tls: Option<Box<TlsSession>>,
    pub(super) out: BytesMut,
    pub(super) written: usize,
    /// End of the chunk being written: chunks are whole frames, at most
    /// `max_frames` of them (one without batching).
    chunk_end: usize,
    pub(super) failed: Option<io::Error>,
}

impl Connection {
    pub(super) fn new(stream: Arc<TcpStream>, tls: Option<TlsSession>) -> Self {
        let tls = tls.map(|mut session| {
            // What this side queues is bounded by the lane; the session
            // must take all of it.
            session.set_buffer_limit(None);
            Box::new(session)
        });
        Connection {
            stream,
            tls,
            out: BytesMut::with_capacity(64 * 1024),
            written: 0,
            chunk_end: 0,
            failed: None,
        }
    }

    /// Swaps the lane's queued bytes in; the previous (fully written)
    /// buffer becomes the lane's next buffer, so nothing is reallocated.
    pub(crate) fn take_from(&mut self, queued: &mut BytesMut) {
        debug_assert!(self.written == self.out.len());
        self.out.clear();
        std::mem::swap(&mut self.out, queued);
        self.written = 0;
        self.chunk_end = 0;
    }

    /// Writes without waiting: `Ok(true)` when everything is written,
    /// `Ok(false)` when the socket is full.
    pub(super) fn try_write_all(&mut self, max_frames: usize) -> io::Result<bool> {
        if let Some(session) = &mut self.tls {
            return try_write_sealed(session, &self.stream, &self.out, &mut self.written);
        }
        while self.written < self.out.len() {
            if self.written == self.chunk_end {
                self.chunk_end = chunk_end(&self.out, self.written, max_frames);
            }
            match self
                .stream
                .try_write(&self.out[self.written..self.chunk_end])
            {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    pub(super) async fn write_all(&mut self, max_frames: usize) -> io::Result<()> {
        while !self.try_write_all(max_frames)? {
            self.stream.writable().await?;
        }
        Ok(())
    }

    /// The messages this connection took but did not completely write.
    pub(super) fn unwritten_messages(&self) -> usize {
        messages_from(&self.out, self.written)
    }
}

impl LaneConnection for Connection {
    #[inline]
    fn take_from(&mut self, queued: &mut BytesMut) {
        Connection::take_from(self, queued);
    }

    fn taken(&self) -> &[u8] {
        &self.out
    }

    #[inline]
    fn try_write_all(&mut self, max_frames: usize) -> io::Result<bool> {
        Connection::try_write_all(self, max_frames)
    }

    fn fail(&mut self, error: io::Error) {
        self.failed = Some(error);
    }
}

/// The TLS path of `try_write_all`: moves the unwritten plaintext into the
/// session, then writes sealed records until the socket is full. Plaintext
/// counts as written once the session holds it; a connection that fails
/// after that loses it uncounted.
fn try_write_sealed(
    session: &mut TlsSession,
    stream: &TcpStream,
    out: &[u8],
    written: &mut usize,
) -> io::Result<bool> {
    if *written < out.len() {
        session.writer().write_all(&out[*written..])?;
        *written = out.len();
    }
    while session.wants_write() {
        match session.write_tls(&mut NonBlocking(stream)) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// A socket as `io::Write` through `try_write`: WouldBlock when full.
struct NonBlocking<'a>(&'a TcpStream);

impl Write for NonBlocking<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
