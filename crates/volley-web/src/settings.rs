//! The gateway's limits and timeouts.

use std::time::Duration;

use volley::net::ConnectionLimits;

/// What a session does when its outbound queue is full (the client reads
/// more slowly than the server sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SlowConsumer {
    /// Drops the oldest frame held; a frame the client never got is
    /// counted as a dead letter. The default.
    #[default]
    DropOldest,
    /// Ends the session: a WebSocket closes with 4429, a long-poll session
    /// answers 429.
    Close,
}

/// Which origins may open a session from a browser. A request without an
/// `Origin` header (a program, not a browser page) is always let in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Origins {
    /// Only pages served by the same host (the `Origin`'s host and port
    /// equal the request's `Host` header). The default.
    #[default]
    SameHost,
    /// Pages of these origins (`scheme://host[:port]`, compared exactly),
    /// and of the same host.
    List(Vec<String>),
    /// Any origin.
    Any,
}

/// How the gateway treats sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSettings {
    /// Largest frame taken from a client (a WebSocket message, or a
    /// long-poll request body); a larger one closes the WebSocket with
    /// 1009, or answers 413. Default 64 KiB.
    pub max_frame: usize,
    /// Server frames a session holds: not yet sent, or sent and not yet
    /// acknowledged (the resend buffer). Past it, `slow_consumer`
    /// decides. Default 1024.
    pub max_queued: usize,
    /// What a full outbound queue does. Default [`SlowConsumer::DropOldest`].
    pub slow_consumer: SlowConsumer,
    /// How often the server pings a WebSocket client (and what the
    /// `welcome` frame tells the client as `heartbeat_ms`). Default 15 s.
    pub ping_interval: Duration,
    /// How long a ping may go unanswered (no `pong` nor any other
    /// frame) before the connection is closed with 4408. Default 10 s.
    pub ping_timeout: Duration,
    /// How long a client may send nothing at all (no frame, pong
    /// included) before the connection is closed with 4408. Default 60 s.
    /// Only whole frames count: WebSocket-level pings and the fragments of
    /// a message not yet complete do not.
    pub idle_timeout: Duration,
    /// How long the server waits to hand one frame (a close included) to
    /// a WebSocket client's socket; a client that reads too slowly or not
    /// at all is then dropped, without a close it would not read, and its
    /// session waits to be resumed. On the connections
    /// [`WebGateway::serve`](crate::WebGateway::serve) keeps, also how
    /// long any write may stay blocked (a long-poll answer never read).
    /// Default 10 s.
    pub send_timeout: Duration,
    /// How long a session outlives its connection, waiting for the client
    /// to resume it (a long-poll session: between two polls). Then it ends
    /// for good. Default 30 s.
    pub resume_grace: Duration,
    /// How long a long-poll `recv` is held open when nothing is to be
    /// sent; it then answers `[]`. Default 25 s.
    pub poll_timeout: Duration,
    /// How long a long-poll request's body (`open`'s hello, `send`'s
    /// frames) may take to arrive once its headers have; past it the
    /// request is answered 408 and its connection let go. Default 10 s.
    pub body_timeout: Duration,
    /// The timeout of an `ask` that names none. Default 10 s.
    pub default_ask_timeout: Duration,
    /// The longest timeout a client may ask for (`timeout_ms` is clamped
    /// to it). Default 60 s.
    pub max_ask_timeout: Duration,
    /// Asks a session may have waiting at once; one more is answered
    /// `overloaded`. Default 256.
    pub max_open_asks: usize,
    /// Sessions open at once; one more is refused (close 1013, or 503).
    /// Default 10 000.
    pub max_sessions: usize,
    /// Which browser origins may connect. Default [`Origins::SameHost`].
    pub origins: Origins,
    /// The bytes a WebSocket connection reads from its socket at a time
    /// (tungstenite's read buffer, allocated and filled once per
    /// connection, so most of what an idle session costs). A larger frame
    /// is still read, over several reads. At least 512 bytes are used.
    /// Default 2 KiB (tungstenite's own default is 128 KiB).
    pub ws_read_buffer: usize,
    /// What [`WebGateway::serve`](crate::WebGateway::serve)'s listener
    /// keeps open: connections in all and per IP (default 16,384 each:
    /// browsers behind one NAT share an address), and how long a new
    /// connection has to send its first request line (16 bytes, default
    /// 10 s). A gateway mounted in an application's own server
    /// ([`WebGateway::router`](crate::WebGateway::router)) is under that
    /// server's limits instead.
    pub connections: ConnectionLimits,
    /// How long a request's line and headers may take to arrive on a
    /// connection [`WebGateway::serve`](crate::WebGateway::serve) keeps;
    /// then the connection is closed. Default 10 s.
    pub header_timeout: Duration,
    /// The most bytes of an unfinished request line and headers such a
    /// connection buffers (hyper's read buffer, at least 8 KiB); more
    /// gets 431 or a close. Default 16 KiB.
    pub max_header_bytes: usize,
}

/// The shortest request line: `GET / HTTP/1.1` and its line end.
const SHORTEST_REQUEST_LINE: usize = 16;

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            max_frame: 64 * 1024,
            max_queued: 1024,
            slow_consumer: SlowConsumer::DropOldest,
            ping_interval: Duration::from_secs(15),
            ping_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(10),
            resume_grace: Duration::from_secs(30),
            poll_timeout: Duration::from_secs(25),
            body_timeout: Duration::from_secs(10),
            default_ask_timeout: Duration::from_secs(10),
            max_ask_timeout: Duration::from_secs(60),
            max_open_asks: 256,
            max_sessions: 10_000,
            origins: Origins::SameHost,
            ws_read_buffer: 2 * 1024,
            connections: ConnectionLimits {
                max_connections: 16_384,
                max_connections_per_ip: 16_384,
                handshake_timeout: Duration::from_secs(10),
                first_bytes: SHORTEST_REQUEST_LINE,
            },
            header_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
        }
    }
}
