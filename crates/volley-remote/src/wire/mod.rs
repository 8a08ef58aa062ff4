//! The volley wire protocol, version 1: a connection preamble followed by
//! length-prefixed frames, each carrying one PDU.
//!
//! Encoding appends to a caller-owned `BytesMut` (the transport's coalescing
//! write buffer); decoding walks a read buffer and yields PDUs that borrow
//! from it. Neither allocates per message.

mod address;
mod decode;
mod encode;
mod error;
mod frame;
mod handshake;
mod pdu;

pub use address::{Address, AddressError, SCHEME};
pub use decode::{Decoder, DecoderConfig, Frames, RawFrame, DEFAULT_MAX_REF_ID};
pub use encode::Encoder;
pub use error::{DecodeError, EncodeError};
pub use frame::{
    Lane, PduKind, Preamble, FRAME_HEADER_LEN, HEARTBEAT_ACK_FRAME, HEARTBEAT_FRAME,
    LARGE_MAX_FRAME_LEN, MAGIC, MAX_STR_LEN, PREAMBLE_LEN, PROTOCOL_VERSION, SMALL_MAX_FRAME_LEN,
};
pub use handshake::{
    AuthProof, Features, HandshakeRequest, HandshakeResponse, HandshakeStatus, IncarnationStamp,
    AUTH_MAC_LEN, AUTH_NONCE_LEN, FEATURE_REQUESTS, HANDSHAKE_VERSION_STAMPED,
};
pub use pdu::{
    ClusterChannel, ClusterFrame, Disassociate, DisassociateReason, Flush, FlushAck, MessageHeader,
    Pdu, RefDeclaration, RefId, Reply, ReplyHandleDeclaration, Request, SpawnRequest,
    SpawnResponse, SpawnResult, SystemAck, SystemMessage, TracedUserMessage, UserMessage,
    MESSAGE_HEADER_LEN, REPLY_HEADER_LEN, REQUEST_HEADER_LEN, REQUEST_REPLY_REF, TRACE_CONTEXT_LEN,
};
