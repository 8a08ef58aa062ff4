//! Connection preamble, lanes, frame header and PDU kinds.

use std::fmt;

use bytes::{BufMut, BytesMut};

use super::error::DecodeError;

/// The four bytes every volley connection starts with.
pub const MAGIC: [u8; 4] = *b"VLLY";

/// The wire protocol version this crate speaks.
pub const PROTOCOL_VERSION: u8 = 1;

/// Length of the connection preamble: magic, version, lane.
pub const PREAMBLE_LEN: usize = 6;

/// Length of the frame header: 4-byte little-endian length plus the kind byte.
///
/// The length field counts the kind byte and the body, not itself.
pub const FRAME_HEADER_LEN: usize = 5;

/// Default maximum frame length (kind byte + body) on the control and
/// ordinary lanes: 256 KiB.
pub const SMALL_MAX_FRAME_LEN: u32 = 256 * 1024;

/// Default maximum frame length on the large-message lane: 16 MiB.
pub const LARGE_MAX_FRAME_LEN: u32 = 16 * 1024 * 1024;

/// Longest string or byte field with a 16-bit length prefix.
pub const MAX_STR_LEN: usize = u16::MAX as usize;

/// A heartbeat frame, precomputed: length 1, kind `0x03`, no body.
///
/// The transport appends these bytes as they are; there is nothing to encode.
pub const HEARTBEAT_FRAME: [u8; FRAME_HEADER_LEN] = [1, 0, 0, 0, PduKind::Heartbeat as u8];

/// A heartbeat-ack frame, precomputed: length 1, kind `0x04`, no body.
pub const HEARTBEAT_ACK_FRAME: [u8; FRAME_HEADER_LEN] = [1, 0, 0, 0, PduKind::HeartbeatAck as u8];

/// One of the (up to) three TCP connections of an association.
///
/// Separate connections keep control traffic from queueing behind user
/// payload, and large messages from delaying small ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Lane {
    /// Handshake, heartbeats, system messages, disassociate, remote spawn.
    Control = 0,
    /// Ordinary user messages.
    Ordinary = 1,
    /// User messages to recipients configured as large-message destinations.
    Large = 2,
}

impl Lane {
    /// All lanes, in wire-value order.
    pub const ALL: [Lane; 3] = [Lane::Control, Lane::Ordinary, Lane::Large];

    /// The lane for a wire value, if it is one.
    pub fn from_u8(v: u8) -> Option<Lane> {
        match v {
            0 => Some(Lane::Control),
            1 => Some(Lane::Ordinary),
            2 => Some(Lane::Large),
            _ => None,
        }
    }

    /// The default maximum frame length for this lane.
    pub fn default_max_frame_len(self) -> u32 {
        match self {
            Lane::Control | Lane::Ordinary => SMALL_MAX_FRAME_LEN,
            Lane::Large => LARGE_MAX_FRAME_LEN,
        }
    }
}

/// The first bytes the connecting side writes: `MAGIC`, version, lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preamble {
    /// Wire protocol version of everything that follows.
    pub version: u8,
    /// Which lane this connection carries.
    pub lane: Lane,
}

impl Preamble {
    /// A preamble for this crate's protocol version.
    pub fn new(lane: Lane) -> Self {
        Preamble {
            version: PROTOCOL_VERSION,
            lane,
        }
    }

    /// The six preamble bytes.
    pub fn to_bytes(self) -> [u8; PREAMBLE_LEN] {
        let [m0, m1, m2, m3] = MAGIC;
        [m0, m1, m2, m3, self.version, self.lane as u8]
    }

    /// Appends the preamble to `buf`.
    pub fn encode(self, buf: &mut BytesMut) {
        buf.put_slice(&self.to_bytes());
    }

    /// Decodes a preamble from the start of `buf`.
    ///
    /// Returns `Ok(None)` while fewer than [`PREAMBLE_LEN`] bytes have
    /// arrived, but rejects a wrong byte (of the magic, or the version) as
    /// soon as it is visible, so a stray client (an HTTP request, say) is
    /// dropped without waiting for more input. Only [`PROTOCOL_VERSION`] is
    /// accepted.
    pub fn decode(buf: &[u8]) -> Result<Option<Preamble>, DecodeError> {
        let seen = buf.len().min(MAGIC.len());
        if buf[..seen] != MAGIC[..seen] {
            let mut found = [0u8; 4];
            found[..seen].copy_from_slice(&buf[..seen]);
            return Err(DecodeError::BadMagic { found });
        }
        if let Some(&version) = buf.get(MAGIC.len()) {
            if version != PROTOCOL_VERSION {
                return Err(DecodeError::UnsupportedVersion {
                    version,
                    supported: PROTOCOL_VERSION,
                });
            }
        }
        let Some(&[_, _, _, _, version, lane]) = buf.first_chunk::<PREAMBLE_LEN>() else {
            return Ok(None);
        };
        let lane = Lane::from_u8(lane).ok_or(DecodeError::UnknownLane(lane))?;
        Ok(Some(Preamble { version, lane }))
    }
}

/// The kind byte that follows a frame's length.
///
/// Values are grouped by purpose so that a hex dump is readable:
/// `0x0_` association management, `0x1_` user traffic, `0x2_` reliable
/// system messages, `0x3_` remote spawn, `0x4_` cluster traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PduKind {
    /// [`super::HandshakeRequest`].
    HandshakeRequest = 0x01,
    /// [`super::HandshakeResponse`].
    HandshakeResponse = 0x02,
    /// Liveness probe, no body.
    Heartbeat = 0x03,
    /// Answer to a heartbeat, no body.
    HeartbeatAck = 0x04,
    /// [`super::Disassociate`].
    Disassociate = 0x05,
    /// [`super::AuthProof`].
    AuthProof = 0x06,
    /// [`super::IncarnationStamp`].
    IncarnationStamp = 0x07,
    /// [`super::UserMessage`].
    UserMessage = 0x10,
    /// [`super::RefDeclaration`].
    RefDeclaration = 0x11,
    /// [`super::ReplyHandleDeclaration`].
    ReplyHandleDeclaration = 0x12,
    /// [`super::Reply`].
    Reply = 0x13,
    /// [`super::TracedUserMessage`].
    TracedUserMessage = 0x14,
    /// [`super::Request`].
    Request = 0x15,
    /// [`super::Flush`].
    Flush = 0x16,
    /// [`super::SystemMessage`].
    SystemMessage = 0x20,
    /// [`super::SystemAck`].
    SystemAck = 0x21,
    /// [`super::FlushAck`].
    FlushAck = 0x22,
    /// [`super::SpawnRequest`].
    SpawnRequest = 0x30,
    /// [`super::SpawnResponse`].
    SpawnResponse = 0x31,
    /// [`super::ClusterFrame`].
    Cluster = 0x40,
}

impl PduKind {
    /// Every kind, in wire-value order.
    pub const ALL: [PduKind; 20] = [
        PduKind::HandshakeRequest,
        PduKind::HandshakeResponse,
        PduKind::Heartbeat,
        PduKind::HeartbeatAck,
        PduKind::Disassociate,
        PduKind::AuthProof,
        PduKind::IncarnationStamp,
        PduKind::UserMessage,
        PduKind::RefDeclaration,
        PduKind::ReplyHandleDeclaration,
        PduKind::Reply,
        PduKind::TracedUserMessage,
        PduKind::Request,
        PduKind::Flush,
        PduKind::SystemMessage,
        PduKind::SystemAck,
        PduKind::FlushAck,
        PduKind::SpawnRequest,
        PduKind::SpawnResponse,
        PduKind::Cluster,
    ];

    /// The kind for a wire value, if it is one.
    pub fn from_u8(v: u8) -> Option<PduKind> {
        Some(match v {
            0x01 => PduKind::HandshakeRequest,
            0x02 => PduKind::HandshakeResponse,
            0x03 => PduKind::Heartbeat,
            0x04 => PduKind::HeartbeatAck,
            0x05 => PduKind::Disassociate,
            0x06 => PduKind::AuthProof,
            0x07 => PduKind::IncarnationStamp,
            0x10 => PduKind::UserMessage,
            0x11 => PduKind::RefDeclaration,
            0x12 => PduKind::ReplyHandleDeclaration,
            0x13 => PduKind::Reply,
            0x14 => PduKind::TracedUserMessage,
            0x15 => PduKind::Request,
            0x16 => PduKind::Flush,
            0x20 => PduKind::SystemMessage,
            0x21 => PduKind::SystemAck,
            0x22 => PduKind::FlushAck,
            0x30 => PduKind::SpawnRequest,
            0x31 => PduKind::SpawnResponse,
            0x40 => PduKind::Cluster,
            _ => return None,
        })
    }
}

impl fmt::Display for PduKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}(0x{:02x})", *self as u8)
    }
}
