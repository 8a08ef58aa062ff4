//! The frames of the protocol (docs/web-protocol.md), and their two
//! encodings.
//!
//! Messages are carried as `serde_json::Value`s between the wire and the
//! services: a service's type is decoded from the value, and a reply or a
//! push encoded into one, whatever the session's encoding. MessagePack
//! frames are maps with named fields (`rmp_serde::to_vec_named`).

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this gateway speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// How a session's frames are encoded, picked with `?enc=` at connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// JSON text frames (`enc=json`, the default).
    #[default]
    Json,
    /// MessagePack binary frames (`enc=msgpack`).
    MsgPack,
}

impl Encoding {
    /// The encoding a query's `enc` names; `None` for an unknown one.
    pub fn from_query(enc: Option<&str>) -> Option<Encoding> {
        match enc {
            None | Some("json") => Some(Encoding::Json),
            Some("msgpack") => Some(Encoding::MsgPack),
            Some(_) => None,
        }
    }
}

/// A frame from the client.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum ClientFrame {
    /// Opens (or resumes) a session; the first frame.
    Hello {
        /// The protocol version the client speaks.
        v: u32,
        /// For the auth hook.
        #[serde(default)]
        token: Option<String>,
        /// A session to resume.
        #[serde(default)]
        resume: Option<String>,
        /// The last server frame the client has, when resuming.
        #[serde(default)]
        last_seq: Option<u64>,
    },
    /// A one-way message to a service.
    Tell {
        /// The service's name.
        service: String,
        /// The message.
        msg: Value,
    },
    /// A request to a service, answered by `reply` or `error` with its id.
    Ask {
        /// Chosen by the client, unique among its open asks.
        id: u64,
        /// The service's name.
        service: String,
        /// The message.
        msg: Value,
        /// How long the client waits.
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// Subscribes to a topic.
    Sub {
        /// The topic's name.
        topic: String,
    },
    /// Unsubscribes from a topic.
    Unsub {
        /// The topic's name.
        topic: String,
    },
    /// The client has every server frame up to `seq`.
    Ack {
        /// The last sequence number the client has.
        seq: u64,
    },
    /// Answered with a `pong` carrying the same `n`.
    Ping {
        /// Echoed.
        n: u64,
    },
    /// The answer to a server's ping.
    Pong {
        /// The ping's `n`.
        n: u64,
    },
}

/// A frame from the server.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum ServerFrame {
    /// The answer to `hello`.
    Welcome {
        /// The protocol version.
        v: u32,
        /// The session's id (what a client resumes with).
        session: String,
        /// True when an existing session was resumed.
        resumed: bool,
        /// How often the server pings.
        heartbeat_ms: u64,
        /// The largest frame the server takes.
        max_frame: usize,
    },
    /// The answer to an ask.
    Reply {
        /// The frame's sequence number.
        seq: u64,
        /// The ask's id.
        id: u64,
        /// The service's answer.
        msg: Value,
    },
    /// Something went wrong; `id` names the ask it answers, if any.
    Error {
        /// The frame's sequence number.
        seq: u64,
        /// The ask's id, or null.
        id: Option<u64>,
        /// One of the error codes of docs/web-protocol.md.
        code: String,
        /// What went wrong, for a human.
        text: String,
    },
    /// A message published on a topic the client subscribed to.
    Pub {
        /// The frame's sequence number.
        seq: u64,
        /// The topic's name.
        topic: String,
        /// The message.
        msg: Value,
    },
    /// A message to an actor of the client.
    Push {
        /// The frame's sequence number.
        seq: u64,
        /// The client actor's name.
        to: String,
        /// The message.
        msg: Value,
    },
    /// The server's ping; the client answers `pong`.
    Ping {
        /// Echoed.
        n: u64,
    },
    /// The answer to a client's ping.
    Pong {
        /// The ping's `n`.
        n: u64,
    },
}

/// Why a client frame could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadFrame(pub String);

/// How deeply a MessagePack frame may nest. rmp-serde's own limit (1024)
/// overflows a task's stack once serde buffers the internally tagged
/// frame; JSON stops at serde_json's limit of 128.
const MAX_MSGPACK_DEPTH: usize = 128;

/// Reads one client frame.
pub fn decode(encoding: Encoding, bytes: &[u8]) -> Result<ClientFrame, BadFrame> {
    match encoding {
        // The common frames in one pass; the rest, and the errors, the
        // derived way.
        Encoding::Json => match crate::tag_first::decode(bytes) {
            Some(frame) => Ok(frame),
            None => serde_json::from_slice(bytes).map_err(|e| BadFrame(e.to_string())),
        },
        Encoding::MsgPack => {
            let mut deserializer = rmp_serde::Deserializer::from_read_ref(bytes);
            deserializer.set_max_depth(MAX_MSGPACK_DEPTH);
            ClientFrame::deserialize(&mut deserializer).map_err(|e| BadFrame(e.to_string()))
        }
    }
}

/// Reads one JSON client frame from a text known to be UTF-8.
pub(crate) fn decode_text(json: &str) -> Result<ClientFrame, BadFrame> {
    match crate::tag_first::decode_text(json) {
        Some(frame) => Ok(frame),
        None => serde_json::from_str(json).map_err(|e| BadFrame(e.to_string())),
    }
}

/// Writes one server frame. Cannot fail for these types: a `Value`
/// always encodes.
pub fn encode(encoding: Encoding, frame: &ServerFrame) -> Bytes {
    let bytes = match encoding {
        Encoding::Json => serde_json::to_vec(frame).ok(),
        Encoding::MsgPack => rmp_serde::to_vec_named(frame).ok(),
    };
    Bytes::from(bytes.unwrap_or_default())
}

/// The error codes of `error` frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The frame could not be read (malformed, unknown `t`, missing field).
    BadFrame,
    /// No service of that name.
    UnknownService,
    /// No topic of that name.
    UnknownTopic,
    /// The message does not decode as the service's type.
    BadMessage,
    /// The ask was not answered in time.
    Timeout,
    /// The auth hook refused.
    Unauthorized,
    /// The service's mailbox, or the session's asks, are full.
    Overloaded,
    /// The frame is larger than `max_frame`.
    TooLarge,
    /// The service failed, or is gone.
    Internal,
    /// The service answered an error of its own.
    Service,
}

impl ErrorCode {
    /// The code as the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::UnknownService => "unknown_service",
            ErrorCode::UnknownTopic => "unknown_topic",
            ErrorCode::BadMessage => "bad_message",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Overloaded => "overloaded",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::Internal => "internal",
            ErrorCode::Service => "service",
        }
    }
}

/// WebSocket close codes the gateway uses.
pub mod close {
    /// The server is shutting down.
    pub const GOING_AWAY: u16 = 1001;
    /// A frame the WebSocket protocol does not allow: an unknown opcode,
    /// reserved bits set, a continuation with nothing to continue.
    pub const WS_PROTOCOL: u16 = 1002;
    /// A text message that is not UTF-8.
    pub const INVALID_TEXT: u16 = 1007;
    /// A frame over `max_frame`, or a message (whole or still in
    /// fragments) past the WebSocket library's bound, twice `max_frame`.
    pub const TOO_LARGE: u16 = 1009;
    /// The server dropped the connection (`ClientRef::drop_connection`);
    /// the session can be resumed.
    pub const SERVICE_RESTART: u16 = 1012;
    /// Too many sessions (`max_sessions`); try again later.
    pub const TRY_AGAIN_LATER: u16 = 1013;
    /// Protocol violation: no `hello` first, a bad `hello`, an unknown
    /// encoding, a session that cannot be resumed.
    pub const PROTOCOL: u16 = 4400;
    /// The auth hook refused.
    pub const UNAUTHORIZED: u16 = 4401;
    /// The page's origin is not allowed.
    pub const FORBIDDEN_ORIGIN: u16 = 4403;
    /// The idle or ping timeout passed.
    pub const TIMEOUT: u16 = 4408;
    /// Another connection resumed the session.
    pub const REPLACED: u16 = 4409;
    /// The session's outbound queue was full with policy `close`.
    pub const SLOW_CONSUMER: u16 = 4429;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_decode_in_both_encodings() {
        let json = br#"{"t":"ask","id":7,"service":"counter","msg":{"add":2}}"#;
        let frame = decode(Encoding::Json, json).unwrap();
        let packed = rmp_serde::to_vec_named(&frame).unwrap();
        assert_eq!(decode(Encoding::MsgPack, &packed).unwrap(), frame);
        assert!(decode(Encoding::Json, br#"{"t":"nope"}"#).is_err());
    }
}
