//! Codec errors.
//!
//! Every [`DecodeError`] means the peer does not speak the protocol (or the
//! stream is corrupt), so the connection is closed; errors that only drop one
//! message (unknown recipient id, unknown serializer, undecodable payload)
//! happen above the codec.

use super::address::AddressError;
use super::frame::PduKind;
use crate::serialization::SerializeError;

/// Why bytes read from a connection could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The connection did not start with `VLLY`. `found` holds the bytes
    /// seen so far (zero padded when fewer than four arrived).
    #[error("bad magic: expected \"VLLY\", got {found:02x?}")]
    BadMagic {
        /// The first (up to four) bytes received.
        found: [u8; 4],
    },
    /// The preamble announced a protocol version this build cannot speak.
    #[error("unsupported protocol version {version} (this node speaks {supported})")]
    UnsupportedVersion {
        /// Version announced by the peer.
        version: u8,
        /// Version this build speaks.
        supported: u8,
    },
    /// The preamble named a lane other than 0, 1 or 2.
    #[error("unknown lane {0}")]
    UnknownLane(u8),
    /// A frame header announced more bytes than the configured maximum. This
    /// is reported from the 4-byte length alone, before any of the frame is
    /// buffered.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    FrameTooLong {
        /// Announced frame length (kind byte + body).
        len: usize,
        /// Configured maximum.
        max: usize,
    },
    /// A frame length of zero: there is not even a kind byte.
    #[error("empty frame (length 0)")]
    EmptyFrame,
    /// The frame ended before a field of its PDU was complete.
    #[error("truncated {kind} frame: missing {field}")]
    Truncated {
        /// PDU kind being decoded.
        kind: PduKind,
        /// The first field that did not fit.
        field: &'static str,
    },
    /// A fixed-layout PDU was followed by extra bytes inside its frame.
    #[error("{extra} unexpected trailing bytes in {kind} frame")]
    TrailingBytes {
        /// PDU kind being decoded.
        kind: PduKind,
        /// How many bytes were left over.
        extra: usize,
    },
    /// The kind byte is not one of [`PduKind`].
    #[error("unknown PDU kind 0x{0:02x}")]
    UnknownPduKind(u8),
    /// A field has a value the protocol forbids (e.g. reference id 0).
    #[error("malformed {field} in {kind} frame: {reason}")]
    Malformed {
        /// PDU kind being decoded.
        kind: PduKind,
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A string field (actor path, system name, reason text, ...) is not
    /// valid UTF-8.
    #[error("invalid UTF-8 in {field} of {kind} frame")]
    InvalidUtf8 {
        /// PDU kind being decoded.
        kind: PduKind,
        /// The offending field.
        field: &'static str,
    },
    /// A handshake carried an address that does not satisfy [`super::Address`]'s
    /// rules.
    #[error("invalid {field} in {kind} frame: {source}")]
    InvalidAddress {
        /// PDU kind being decoded.
        kind: PduKind,
        /// The offending field.
        field: &'static str,
        /// Why the address was rejected.
        source: AddressError,
    },
}

/// Why a PDU could not be encoded. The output buffer is left exactly as it
/// was before the call, so a failed encode never leaves a partial frame.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The frame would exceed the encoder's maximum frame length. The
    /// transport may retry on the large lane.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    FrameTooLong {
        /// Length the frame would have had (kind byte + body).
        len: usize,
        /// Configured maximum.
        max: usize,
    },
    /// A string or byte field is longer than its 16-bit length prefix allows.
    #[error("{field} is {len} bytes, more than the {max} its length prefix allows")]
    FieldTooLong {
        /// The offending field.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A field has a value the protocol forbids.
    #[error("invalid {field}: {reason}")]
    InvalidField {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The payload serializer failed.
    #[error(transparent)]
    Serialize(#[from] SerializeError),
}
