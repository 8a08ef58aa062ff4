//! Closing a WebSocket connection: with a close frame that says why, and
//! without waiting for ever on a client that does not read.
//!
//! The WebSocket library ends reading with an error when a client breaks
//! the protocol (an unknown opcode, reserved bits, text that is not
//! UTF-8) or sends a message past its bound; it sends nothing itself. A
//! client told only by a reset cannot know what it did wrong, so each
//! such error is mapped here to its close code and a reason naming it.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::stream::SplitSink;
use futures_util::SinkExt;

use crate::frame::close;

/// The sending half of a WebSocket connection.
pub(crate) type Sink = SplitSink<WebSocket, Message>;

/// The longest close reason the protocol allows, in bytes.
const MAX_REASON: usize = 123;

/// Sends a close frame with `code` and `reason` (cut to what a close frame
/// holds), then closes the socket; gives up after `within`, when the
/// client does not read.
pub(crate) async fn send_close(sink: &mut Sink, code: u16, reason: &str, within: Duration) {
    let mut end = reason.len().min(MAX_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(&reason[..end]),
    };
    let closing = async {
        let _ = sink.send(Message::Close(Some(frame))).await;
        let _ = sink.close().await;
    };
    let _ = tokio::time::timeout(within, closing).await;
}

/// The close code and reason for a read that failed on what the client
/// sent; `None` when the connection just went (reset, end of stream),
/// with no one left to tell.
pub(crate) fn unreadable(error: axum::Error) -> Option<(u16, String)> {
    let error = error.into_inner().downcast::<tungstenite::Error>().ok()?;
    match *error {
        tungstenite::Error::Capacity(e) => Some((close::TOO_LARGE, e.to_string())),
        tungstenite::Error::Utf8(e) => Some((
            close::INVALID_TEXT,
            format!("a text message that is not UTF-8: {e}"),
        )),
        tungstenite::Error::Protocol(e) => Some((close::WS_PROTOCOL, e.to_string())),
        _ => None,
    }
}
