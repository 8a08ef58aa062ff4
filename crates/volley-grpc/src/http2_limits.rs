//! What one HTTP/2 connection may make the gateway hold or do: the
//! bounds [`crate::serve`] sets on hyper's HTTP/2 server for each
//! connection it accepts.
//!
//! They are the gateway's own settings, not hyper's defaults, because
//! hyper's may change between releases and one of them (keep-alive) is
//! off there: without it a peer that vanished without a FIN, or that
//! sent the preface and then nothing, or that stopped reading, holds its
//! connection forever. The CONTINUATION flood (2024) and PING/SETTINGS
//! floods are bounded by h2 itself: it stops reading from a peer it
//! cannot answer, and counts CONTINUATION frames against
//! `max_header_list_size`. All of these end in a frame the server must
//! write; `send_timeout` (`volley::net::WriteStall`) lets go of a peer that reads
//! nothing, which that frame cannot reach.

use std::time::Duration;

use hyper::server::conn::http2;

/// Per-connection HTTP/2 limits of the gateway's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Http2Limits {
    /// Streams (calls) a client may have open at once on one connection
    /// (`SETTINGS_MAX_CONCURRENT_STREAMS`); one past it is refused with
    /// `REFUSED_STREAM`. Default 200.
    pub max_concurrent_streams: u32,
    /// Largest request header list taken, in HPACK's reckoning (each
    /// header's name and value plus 32 bytes); a larger one ends its
    /// stream with an error before any handler sees it, and a header
    /// block continued past it (CONTINUATION frames) ends the connection.
    /// Default 16 KiB.
    pub max_header_list_size: u32,
    /// How often the server PINGs a connection; a PING not answered
    /// within `keep_alive_timeout` closes it, so dead or silent peers are
    /// let go. `None` sends none. Default 30 s.
    pub keep_alive_interval: Option<Duration>,
    /// How long a keep-alive PING may go unanswered. Default 20 s.
    pub keep_alive_timeout: Duration,
    /// How long the server's writes to a connection may stay blocked,
    /// the client taking no bytes, before the connection is dropped
    /// without more: the GOAWAY that a keep-alive timeout or a flood
    /// limit sends cannot reach a client that reads nothing. Default 20 s.
    pub send_timeout: Duration,
    /// Streams a client may open and reset before the gateway took them
    /// up (rapid reset, CVE-2023-44487), at once; one more ends the
    /// connection with GOAWAY `ENHANCE_YOUR_CALM`. Default 20.
    pub max_pending_accept_reset_streams: usize,
    /// Streams the server may reset for a client's protocol errors over
    /// the connection's life before it ends the connection with GOAWAY
    /// `ENHANCE_YOUR_CALM`. Default 1,024.
    pub max_local_error_reset_streams: usize,
}

impl Default for Http2Limits {
    fn default() -> Self {
        Http2Limits {
            max_concurrent_streams: 200,
            max_header_list_size: 16 * 1024,
            keep_alive_interval: Some(Duration::from_secs(30)),
            keep_alive_timeout: Duration::from_secs(20),
            send_timeout: Duration::from_secs(20),
            max_pending_accept_reset_streams: 20,
            max_local_error_reset_streams: 1024,
        }
    }
}

impl Http2Limits {
    /// Sets these limits on `builder`.
    pub(crate) fn apply<E>(&self, builder: &mut http2::Builder<E>) {
        builder
            .max_concurrent_streams(self.max_concurrent_streams)
            .max_header_list_size(self.max_header_list_size)
            .keep_alive_interval(self.keep_alive_interval)
            .keep_alive_timeout(self.keep_alive_timeout)
            .max_pending_accept_reset_streams(self.max_pending_accept_reset_streams)
            .max_local_error_reset_streams(self.max_local_error_reset_streams);
    }
}
