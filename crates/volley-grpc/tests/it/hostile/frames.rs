//! A hand-written HTTP/2 client on a bare TCP socket: it sends whatever
//! frames a test writes, valid or not, and reads the server's frames back
//! one at a time. No HTTP/2 library would send what these tests send.

use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// The client's connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

/// SETTINGS_INITIAL_WINDOW_SIZE.
pub const INITIAL_WINDOW_SIZE: u16 = 0x4;

/// HTTP/2 error codes the tests look for.
pub const CANCEL: u32 = 0x8;
pub const REFUSED_STREAM: u32 = 0x7;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// One frame, as it travels.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len();
    assert!(len < 1 << 24, "a frame's length has 24 bits");
    let mut out = Vec::with_capacity(9 + len);
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A SETTINGS frame with the given (id, value) pairs.
pub fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, value) in pairs {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    frame(SETTINGS, 0, 0, &payload)
}

/// An RST_STREAM frame for `stream` with `code`.
pub fn reset(stream: u32, code: u32) -> Vec<u8> {
    frame(RST_STREAM, 0, stream, &code.to_be_bytes())
}

/// HPACK's integer with an `prefix`-bit prefix, the first byte's high
/// bits set to `first`.
fn hpack_int(out: &mut Vec<u8>, first: u8, prefix: u8, mut n: usize) {
    let max = (1usize << prefix) - 1;
    if n < max {
        out.push(first | n as u8);
        return;
    }
    out.push(first | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    out.push(n as u8);
}

/// One header as an HPACK literal without indexing (new name, no
/// Huffman): the server's table is left as it was.
pub fn literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0);
    hpack_int(out, 0, 7, name.len());
    out.extend_from_slice(name.as_bytes());
    hpack_int(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

/// The header block of a gRPC call to `path`.
pub fn grpc_request(path: &str) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "localhost"),
        (":path", path),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ] {
        literal(&mut block, name, value.as_bytes());
    }
    block
}

/// A gRPC message: the 5-byte prefix and `message`.
pub fn grpc_message(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// A frame the server sent.
#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The error code of an RST_STREAM or a GOAWAY.
    pub fn error_code(&self) -> Option<u32> {
        let at = match self.kind {
            RST_STREAM => 0,
            GOAWAY => 4,
            _ => return None,
        };
        let bytes = self.payload.get(at..at + 4)?;
        Some(u32::from_be_bytes(bytes.try_into().ok()?))
    }
}

/// A raw HTTP/2 connection to the gateway.
pub struct RawH2 {
    reader: OwnedReadHalf,
    /// Absent once a flooding task took it.
    writer: Option<OwnedWriteHalf>,
    read: BytesMut,
}

impl RawH2 {
    /// A TCP connection that has sent nothing yet.
    pub async fn tcp(port: u16) -> RawH2 {
        let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let (reader, writer) = tcp.into_split();
        RawH2 {
            reader,
            writer: Some(writer),
            read: BytesMut::new(),
        }
    }

    /// A connection that has sent the preface and `settings`.
    pub async fn connect(port: u16, settings: &[(u16, u32)]) -> RawH2 {
        let mut raw = RawH2::tcp(port).await;
        raw.send(PREFACE).await;
        raw.send(&self::settings(settings)).await;
        raw
    }

    /// A connection that has sent the preface and `settings`, and
    /// acknowledged the server's SETTINGS: from here on the server
    /// enforces its own (they take effect when acknowledged).
    pub async fn handshake(port: u16, settings: &[(u16, u32)]) -> RawH2 {
        let mut raw = RawH2::connect(port, settings).await;
        raw.until(|f| f.kind == SETTINGS && f.flags & ACK == 0)
            .await
            .expect("the server's SETTINGS");
        raw.send(&frame(SETTINGS, ACK, 0, &[])).await;
        raw
    }

    /// Writes `bytes`; a write the server refused (it closed) is ignored:
    /// the tests look at what the server sent.
    pub async fn send(&mut self, bytes: &[u8]) {
        let writer = self.writer.as_mut().expect("the writing half");
        let _ = writer.write_all(bytes).await;
    }

    /// Writes `chunk(0)`, `chunk(1)`, ... from a task of its own, at most
    /// `max` bytes, until the server stops taking them: the task ends
    /// with the bytes written, and whether a write failed (the server
    /// closed) before `max`.
    pub fn flood(
        &mut self,
        mut chunk: impl FnMut(u32) -> Vec<u8> + Send + 'static,
        max: usize,
    ) -> tokio::task::JoinHandle<(usize, bool)> {
        let mut writer = self.writer.take().expect("the writing half");
        tokio::spawn(async move {
            let mut sent = 0;
            for round in 0.. {
                if sent >= max {
                    break;
                }
                let chunk = chunk(round);
                if writer.write_all(&chunk).await.is_err() {
                    return (sent, true);
                }
                sent += chunk.len();
            }
            (sent, false)
        })
    }

    /// Waits for the server to close the connection, reading (and
    /// dropping) what it sends; fails the test after the testkit's
    /// timeout.
    pub async fn closed(&mut self) {
        let frame = self.until(|_| false).await;
        assert!(frame.is_none());
    }

    /// The server's next frame, or `None` once the connection is closed.
    pub async fn next_frame(&mut self) -> Option<Frame> {
        loop {
            if self.read.len() >= 9 {
                let len = u32::from_be_bytes([0, self.read[0], self.read[1], self.read[2]]);
                let len = len as usize;
                if self.read.len() >= 9 + len {
                    let head = self.read.split_to(9);
                    let payload = self.read.split_to(len).to_vec();
                    let mut stream = &head[5..9];
                    return Some(Frame {
                        kind: head[3],
                        flags: head[4],
                        stream: stream.get_u32() & 0x7fff_ffff,
                        payload,
                    });
                }
            }
            match self.reader.read_buf(&mut self.read).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// Reads frames until one satisfies `wanted` (returned), the
    /// connection closes (`None`), or the testkit's timeout passes (a
    /// failed test).
    #[track_caller]
    pub fn until<'a>(
        &'a mut self,
        wanted: impl FnMut(&Frame) -> bool + 'a,
    ) -> impl std::future::Future<Output = Option<Frame>> + 'a {
        let caller = std::panic::Location::caller();
        let max = volley_testkit::default_timeout();
        self.until_within(max, wanted, caller)
    }

    async fn until_within(
        &mut self,
        max: Duration,
        mut wanted: impl FnMut(&Frame) -> bool,
        caller: &'static std::panic::Location<'static>,
    ) -> Option<Frame> {
        let read = async {
            while let Some(frame) = self.next_frame().await {
                if wanted(&frame) {
                    return Some(frame);
                }
            }
            None
        };
        match tokio::time::timeout(max, read).await {
            Ok(found) => found,
            Err(_) => panic!("{caller}: no such frame, and the connection open, for {max:?}"),
        }
    }
}
