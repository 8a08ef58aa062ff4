//! The protocol data units carried in frames.
//!
//! Decoded PDUs borrow their byte and string fields from the read buffer. A
//! transport that wants to keep a payload past the read (to hand it to
//! another thread, say) turns it into a zero-copy `Bytes` with
//! `read_buf.slice_ref(payload)` on the frozen read buffer.

use std::num::NonZeroU32;

use super::frame::PduKind;
use super::handshake::{AuthProof, HandshakeRequest, HandshakeResponse, IncarnationStamp};
use crate::serialization::SerializerId;

/// A compressed actor reference: an index into the per-lane table the
/// sending side fills with [`RefDeclaration`]s. Zero is never a valid id, so
/// `Option<RefId>` is four bytes and `0` on the wire means "no sender".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefId(NonZeroU32);

impl RefId {
    /// The id `n`, or `None` for 0.
    pub const fn new(n: u32) -> Option<RefId> {
        match NonZeroU32::new(n) {
            Some(n) => Some(RefId(n)),
            None => None,
        }
    }

    /// The wire value, usable as an index into the receiver's table.
    pub const fn get(self) -> u32 {
        self.0.get()
    }
}

/// Length of the fixed header of a user message body: recipient (4),
/// sender (4), serializer (2), type id (4).
pub const MESSAGE_HEADER_LEN: usize = 14;

/// Addressing and typing of a user or system message; everything but the
/// payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageHeader {
    /// Who receives the message (declared by the sender on this lane).
    pub recipient: RefId,
    /// Who sent it, if anyone (declared by the sender on this lane).
    pub sender: Option<RefId>,
    /// How the payload is serialized.
    pub serializer: SerializerId,
    /// Stable, user-registered id of the message type.
    pub type_id: u32,
}

/// An ordinary actor message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserMessage<'a> {
    /// Addressing and typing.
    pub header: MessageHeader,
    /// The serialized message: the rest of the frame.
    pub payload: &'a [u8],
}

/// Length of the trace context in a [`TracedUserMessage`]: trace id (16),
/// parent id (8), flags (1).
pub const TRACE_CONTEXT_LEN: usize = 25;

/// A user message with the sender's W3C trace context, so the receiver's
/// handler span can be the sender's span's child. Its own kind, so that an
/// untraced message's frame stays exactly as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedUserMessage<'a> {
    /// The message, as in a [`UserMessage`].
    pub message: UserMessage<'a>,
    /// The sender's context. Decoded as it came: ids that W3C calls
    /// invalid (all zeros) are the receiver's to ignore, not a protocol
    /// error, since the message itself is fine.
    pub context: volley::TraceParent,
}

/// Binds a reference id to an actor, for the rest of the connection (or
/// until re-declared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefDeclaration<'a> {
    /// The id later messages on this lane will use.
    pub id: RefId,
    /// Incarnation uid of the actor, so a message for a previous actor at the
    /// same path is not delivered to its successor.
    pub uid: u64,
    /// Full actor path, `volley://system@host:port/user/...`.
    pub path: &'a str,
}

/// Binds a reference id to a reply handle (an ask's temporary ref) that
/// lives on the sending node, where `correlation` identifies it. Unlike a
/// [`RefDeclaration`] it carries no path: the receiver answers with a
/// [`Reply`] that names the correlation id, so neither side formats,
/// parses or declares a path per ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyHandleDeclaration {
    /// The id later messages on this lane use for the handle.
    pub id: RefId,
    /// The handle's identity on the declaring node (never 0).
    pub correlation: u64,
}

/// A message for a reply handle that the receiving node declared with a
/// [`ReplyHandleDeclaration`]: addressed by the receiver's correlation id,
/// so the replier declares nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply<'a> {
    /// The handle's correlation id, as the receiver declared it (never 0).
    pub correlation: u64,
    /// How the payload is serialized.
    pub serializer: SerializerId,
    /// Stable, user-registered id of the message type.
    pub type_id: u32,
    /// The serialized message: the rest of the frame.
    pub payload: &'a [u8],
}

/// A user message that carries an ask's reply handle of the sending node
/// inline: the handle is named by `correlation` in the frame, and the
/// payload refers to it with ref id 0 ([`REQUEST_REPLY_REF`]). It replaces
/// a [`ReplyHandleDeclaration`] followed by a [`UserMessage`]: nothing is
/// declared, so the receiver binds no table entry per ask and requests to
/// one actor stay one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The reply handle's identity on the sending node (never 0), as in a
    /// [`ReplyHandleDeclaration`].
    pub correlation: u64,
    /// The message, as in a [`UserMessage`].
    pub message: UserMessage<'a>,
}

/// The ref id by which a [`Request`]'s payload names the request's own
/// reply handle. Never a declared id (those start at 1), so it means
/// nothing, and fails to decode, in any other frame.
pub const REQUEST_REPLY_REF: u32 = 0;

/// Length of the fixed part of a [`Request`] body: correlation (8) and a
/// message header.
pub const REQUEST_HEADER_LEN: usize = 8 + MESSAGE_HEADER_LEN;

/// Length of the fixed part of a [`Reply`] body: correlation (8),
/// serializer (2), type id (4).
pub const REPLY_HEADER_LEN: usize = 14;

/// A system message (watch, unwatch, terminated, ...) with the sequence
/// number and cumulative ack of the reliable-delivery layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemMessage<'a> {
    /// Sequence number of this message, starting at 1, per association.
    pub seq: u64,
    /// Highest sequence number received contiguously from the peer (0 if
    /// none), piggy-backed.
    pub ack: u64,
    /// Addressing and typing.
    pub header: MessageHeader,
    /// The serialized system message: the rest of the frame.
    pub payload: &'a [u8],
}

/// Sent on a user lane (ordinary or large) before a death notice to the
/// receiving node: the receiver answers with a [`FlushAck`] naming `id` on
/// its own control lane once it has delivered every frame that came before
/// this one on the connection. So the sender learns that the messages an
/// actor sent before it stopped are in their recipients' mailboxes, and its
/// death notice, sent after that, cannot overtake them (Akka Artery's
/// flush before a death watch notification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flush {
    /// The sender's identity for this flush (never 0).
    pub id: u64,
}

/// The answer to a [`Flush`], on the control lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushAck {
    /// The `id` of the flush answered (never 0).
    pub id: u64,
}

/// A standalone cumulative ack for system messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemAck {
    /// Highest sequence number received contiguously.
    pub ack: u64,
}

/// Why an association is being torn down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisassociateReason {
    /// The sending system is shutting down normally.
    Shutdown,
    /// The receiver's incarnation has been quarantined by the sender.
    Quarantined,
    /// The handshake failed or timed out.
    HandshakeFailed,
    /// The peer violated the protocol (a decode error, say).
    ProtocolError,
    /// The association was idle too long.
    Idle,
    /// A code this build does not know; kept so a newer peer's reason is
    /// still logged rather than rejected.
    Other(u8),
}

impl DisassociateReason {
    /// The wire value.
    pub fn to_u8(self) -> u8 {
        match self {
            DisassociateReason::Shutdown => 0,
            DisassociateReason::Quarantined => 1,
            DisassociateReason::HandshakeFailed => 2,
            DisassociateReason::ProtocolError => 3,
            DisassociateReason::Idle => 4,
            DisassociateReason::Other(v) => v,
        }
    }

    /// The reason for a wire value; unknown values become `Other`.
    pub fn from_u8(v: u8) -> DisassociateReason {
        match v {
            0 => DisassociateReason::Shutdown,
            1 => DisassociateReason::Quarantined,
            2 => DisassociateReason::HandshakeFailed,
            3 => DisassociateReason::ProtocolError,
            4 => DisassociateReason::Idle,
            v => DisassociateReason::Other(v),
        }
    }
}

/// Last words before closing a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disassociate<'a> {
    /// Machine-readable reason.
    pub reason: DisassociateReason,
    /// Optional human-readable detail (may be empty).
    pub text: &'a str,
}

/// Asks the peer to spawn an actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpawnRequest<'a> {
    /// Correlates the response; chosen by the requester.
    pub request_id: u64,
    /// Serializer of `props`.
    pub serializer: SerializerId,
    /// Name under which the behaviour was registered on the peer.
    pub kind: &'a str,
    /// Requested child name; empty lets the peer choose one.
    pub name: &'a str,
    /// Serialized constructor arguments: the rest of the frame.
    pub props: &'a [u8],
}

/// Outcome of a [`SpawnRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnResult<'a> {
    /// The actor was started.
    Spawned {
        /// Its full path.
        path: &'a str,
        /// Its incarnation uid.
        uid: u64,
    },
    /// The spawn failed.
    Failed {
        /// Why.
        error: &'a str,
    },
}

/// Answer to a [`SpawnRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpawnResponse<'a> {
    /// The request's id.
    pub request_id: u64,
    /// What happened.
    pub result: SpawnResult<'a>,
}

/// What a [`ClusterFrame`] carries: a closed set, so that a value this
/// build does not know is a decode error rather than a packet handed to
/// the wrong decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ClusterChannel {
    /// A SWIM packet of the membership protocol (foca's own encoding).
    Swim = 1,
    /// The digest that starts an anti-entropy exchange.
    SyncDigest = 2,
    /// A page of the records an anti-entropy exchange sends.
    SyncData = 3,
}

impl ClusterChannel {
    /// Every channel, in wire-value order.
    pub const ALL: [ClusterChannel; 3] = [
        ClusterChannel::Swim,
        ClusterChannel::SyncDigest,
        ClusterChannel::SyncData,
    ];

    /// The channel for a wire value, if it is one.
    pub fn from_u8(v: u8) -> Option<ClusterChannel> {
        match v {
            1 => Some(ClusterChannel::Swim),
            2 => Some(ClusterChannel::SyncDigest),
            3 => Some(ClusterChannel::SyncData),
            _ => None,
        }
    }
}

/// Cluster traffic between two nodes (membership, anti-entropy): opaque
/// to the transport, which hands the payload to the cluster that this
/// node belongs to, if it is the one named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterFrame<'a> {
    /// What the payload is.
    pub channel: ClusterChannel,
    /// The name of the cluster the sender belongs to (never empty).
    pub cluster: &'a str,
    /// The packet (never empty): the rest of the frame.
    pub payload: &'a [u8],
}

/// One decoded (or to-be-encoded) frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pdu<'a> {
    /// See [`HandshakeRequest`]. Boxed: handshakes are rare and large, and
    /// keeping them inline would make every message PDU twice as big to move.
    HandshakeRequest(Box<HandshakeRequest<'a>>),
    /// See [`HandshakeResponse`]. Boxed like the request.
    HandshakeResponse(Box<HandshakeResponse<'a>>),
    /// Liveness probe.
    Heartbeat,
    /// Answer to a heartbeat.
    HeartbeatAck,
    /// See [`Disassociate`].
    Disassociate(Disassociate<'a>),
    /// See [`AuthProof`].
    AuthProof(AuthProof),
    /// See [`IncarnationStamp`].
    IncarnationStamp(IncarnationStamp),
    /// See [`UserMessage`].
    UserMessage(UserMessage<'a>),
    /// See [`RefDeclaration`].
    RefDeclaration(RefDeclaration<'a>),
    /// See [`ReplyHandleDeclaration`].
    ReplyHandleDeclaration(ReplyHandleDeclaration),
    /// See [`Reply`].
    Reply(Reply<'a>),
    /// See [`TracedUserMessage`].
    TracedUserMessage(TracedUserMessage<'a>),
    /// See [`Request`].
    Request(Request<'a>),
    /// See [`SystemMessage`].
    SystemMessage(SystemMessage<'a>),
    /// See [`SystemAck`].
    SystemAck(SystemAck),
    /// See [`Flush`].
    Flush(Flush),
    /// See [`FlushAck`].
    FlushAck(FlushAck),
    /// See [`SpawnRequest`].
    SpawnRequest(SpawnRequest<'a>),
    /// See [`SpawnResponse`].
    SpawnResponse(SpawnResponse<'a>),
    /// See [`ClusterFrame`].
    Cluster(ClusterFrame<'a>),
}

impl Pdu<'_> {
    /// The kind byte this PDU is framed with.
    pub fn kind(&self) -> PduKind {
        match self {
            Pdu::HandshakeRequest(_) => PduKind::HandshakeRequest,
            Pdu::HandshakeResponse(_) => PduKind::HandshakeResponse,
            Pdu::Heartbeat => PduKind::Heartbeat,
            Pdu::HeartbeatAck => PduKind::HeartbeatAck,
            Pdu::Disassociate(_) => PduKind::Disassociate,
            Pdu::AuthProof(_) => PduKind::AuthProof,
            Pdu::IncarnationStamp(_) => PduKind::IncarnationStamp,
            Pdu::UserMessage(_) => PduKind::UserMessage,
            Pdu::RefDeclaration(_) => PduKind::RefDeclaration,
            Pdu::ReplyHandleDeclaration(_) => PduKind::ReplyHandleDeclaration,
            Pdu::Reply(_) => PduKind::Reply,
            Pdu::TracedUserMessage(_) => PduKind::TracedUserMessage,
            Pdu::Request(_) => PduKind::Request,
            Pdu::SystemMessage(_) => PduKind::SystemMessage,
            Pdu::SystemAck(_) => PduKind::SystemAck,
            Pdu::Flush(_) => PduKind::Flush,
            Pdu::FlushAck(_) => PduKind::FlushAck,
            Pdu::SpawnRequest(_) => PduKind::SpawnRequest,
            Pdu::SpawnResponse(_) => PduKind::SpawnResponse,
            Pdu::Cluster(_) => PduKind::Cluster,
        }
    }
}
