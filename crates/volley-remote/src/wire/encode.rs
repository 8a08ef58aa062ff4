//! Appends frames to a caller-owned buffer.

use bytes::{BufMut, BytesMut};

use super::address::Address;
use super::error::EncodeError;
use super::frame::{
    Lane, PduKind, FRAME_HEADER_LEN, HEARTBEAT_ACK_FRAME, HEARTBEAT_FRAME, MAX_STR_LEN,
    SMALL_MAX_FRAME_LEN,
};
use super::pdu::{
    Flush, FlushAck, MessageHeader, Pdu, SpawnResult, MESSAGE_HEADER_LEN, REPLY_HEADER_LEN,
    TRACE_CONTEXT_LEN,
};
use crate::serialization::{SerializeError, Serializer, SerializerId};

/// Encodes PDUs into frames appended to a `BytesMut`.
///
/// The transport keeps one buffer per connection, lets many senders append
/// to it, and writes it with one syscall. Every method either appends one
/// complete frame or leaves the buffer exactly as it was and returns an
/// error, so a failed encode never corrupts the stream.
#[derive(Debug, Clone, Copy)]
pub struct Encoder {
    max_frame_len: u32,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new(SMALL_MAX_FRAME_LEN)
    }
}

impl Encoder {
    /// An encoder that refuses frames longer than `max_frame_len` (kind byte
    /// + body); use the peer's limit for the lane.
    pub fn new(max_frame_len: u32) -> Self {
        Encoder { max_frame_len }
    }

    /// An encoder with the default limit of `lane`.
    pub fn for_lane(lane: Lane) -> Self {
        Encoder::new(lane.default_max_frame_len())
    }

    /// The configured maximum frame length.
    pub fn max_frame_len(&self) -> u32 {
        self.max_frame_len
    }

    /// Appends a heartbeat: a copy of a static 5-byte frame.
    #[inline]
    pub fn heartbeat(buf: &mut BytesMut) {
        buf.extend_from_slice(&HEARTBEAT_FRAME);
    }

    /// Appends a heartbeat ack: a copy of a static 5-byte frame.
    #[inline]
    pub fn heartbeat_ack(buf: &mut BytesMut) {
        buf.extend_from_slice(&HEARTBEAT_ACK_FRAME);
    }

    /// Appends a user message whose payload `write_payload` serializes
    /// directly into `buf`, after the header. The frame length is patched in
    /// afterwards, so there is no intermediate buffer.
    ///
    /// `write_payload` must only append to the buffer.
    #[inline(always)]
    pub fn user_message_with<F>(
        &self,
        buf: &mut BytesMut,
        header: &MessageHeader,
        write_payload: F,
    ) -> Result<(), EncodeError>
    where
        F: FnOnce(&mut BytesMut) -> Result<(), SerializeError>,
    {
        let start = buf.len();
        let mut head = [0u8; FRAME_HEADER_LEN + MESSAGE_HEADER_LEN];
        head[4] = PduKind::UserMessage as u8;
        put_message_header(&mut head[FRAME_HEADER_LEN..], header);
        buf.extend_from_slice(&head);
        if let Err(e) = write_payload(buf) {
            buf.truncate(start);
            return Err(e.into());
        }
        self.finish_frame(buf, start)
    }

    /// Appends a [`super::pdu::TracedUserMessage`]: a user message with the
    /// sender's trace context between header and payload, which
    /// `write_payload` serializes directly into `buf` as in
    /// [`Encoder::user_message_with`].
    #[inline]
    pub fn traced_user_message_with<F>(
        &self,
        buf: &mut BytesMut,
        header: &MessageHeader,
        context: &volley::TraceParent,
        write_payload: F,
    ) -> Result<(), EncodeError>
    where
        F: FnOnce(&mut BytesMut) -> Result<(), SerializeError>,
    {
        let start = buf.len();
        let mut head = [0u8; FRAME_HEADER_LEN + MESSAGE_HEADER_LEN + TRACE_CONTEXT_LEN];
        head[4] = PduKind::TracedUserMessage as u8;
        let at = FRAME_HEADER_LEN + MESSAGE_HEADER_LEN;
        put_message_header(&mut head[FRAME_HEADER_LEN..at], header);
        head[at..at + 16].copy_from_slice(&context.trace_id);
        head[at + 16..at + 24].copy_from_slice(&context.parent_id);
        head[at + 24] = context.flags;
        buf.extend_from_slice(&head);
        if let Err(e) = write_payload(buf) {
            buf.truncate(start);
            return Err(e.into());
        }
        self.finish_frame(buf, start)
    }

    /// Appends a user message serialized with `serializer`; the header's
    /// serializer field is taken from `serializer.id()`.
    #[inline]
    pub fn user_message<T, S: Serializer<T>>(
        &self,
        buf: &mut BytesMut,
        recipient: super::pdu::RefId,
        sender: Option<super::pdu::RefId>,
        type_id: u32,
        serializer: &S,
        value: &T,
    ) -> Result<(), EncodeError> {
        let header = MessageHeader {
            recipient,
            sender,
            serializer: serializer.id(),
            type_id,
        };
        self.user_message_with(buf, &header, |b| serializer.encode(value, b))
    }

    /// Appends a [`super::pdu::Reply`] whose payload `write_payload`
    /// serializes directly into `buf`.
    #[inline]
    pub fn reply_with<F>(
        &self,
        buf: &mut BytesMut,
        correlation: u64,
        serializer: SerializerId,
        type_id: u32,
        write_payload: F,
    ) -> Result<(), EncodeError>
    where
        F: FnOnce(&mut BytesMut) -> Result<(), SerializeError>,
    {
        if correlation == 0 {
            return Err(EncodeError::InvalidField {
                field: "correlation",
                reason: "a reply handle's correlation id is never 0",
            });
        }
        let start = buf.len();
        let mut head = [0u8; FRAME_HEADER_LEN + REPLY_HEADER_LEN];
        head[4] = PduKind::Reply as u8;
        head[5..13].copy_from_slice(&correlation.to_le_bytes());
        head[13..15].copy_from_slice(&serializer.0.to_le_bytes());
        head[15..19].copy_from_slice(&type_id.to_le_bytes());
        buf.extend_from_slice(&head);
        if let Err(e) = write_payload(buf) {
            buf.truncate(start);
            return Err(e.into());
        }
        self.finish_frame(buf, start)
    }

    /// Appends a [`super::pdu::Request`]: a user message whose payload
    /// `write_payload` serializes directly into `buf`, naming the request's
    /// reply handle `correlation` (never 0).
    pub fn request_with<F>(
        &self,
        buf: &mut BytesMut,
        correlation: u64,
        header: &MessageHeader,
        write_payload: F,
    ) -> Result<(), EncodeError>
    where
        F: FnOnce(&mut BytesMut) -> Result<(), SerializeError>,
    {
        let start = buf.len();
        self.user_message_with(buf, header, write_payload)?;
        self.into_request(buf, start, correlation)
    }

    /// Turns the user message frame at `start`, the last in `buf`, into a
    /// [`super::pdu::Request`] naming the reply handle `correlation`. The
    /// transport learns that a message carries its ask's handle only while
    /// serializing it, after the head is written: the correlation is
    /// inserted between kind and head, moving the (usually short) head and
    /// payload by 8 bytes. On an error the frame is removed.
    pub fn into_request(
        &self,
        buf: &mut BytesMut,
        start: usize,
        correlation: u64,
    ) -> Result<(), EncodeError> {
        let end = buf.len();
        let is_user_message = end >= start + FRAME_HEADER_LEN + MESSAGE_HEADER_LEN
            && buf[start + 4] == PduKind::UserMessage as u8;
        let invalid = if !is_user_message {
            Some("a request is made from a whole user message frame")
        } else if correlation == 0 {
            Some("a reply handle's correlation id is never 0")
        } else {
            None
        };
        if let Some(reason) = invalid {
            buf.truncate(start);
            return Err(EncodeError::InvalidField {
                field: "correlation",
                reason,
            });
        }
        buf.put_u64_le(0);
        buf.copy_within(start + FRAME_HEADER_LEN..end, start + FRAME_HEADER_LEN + 8);
        buf[start + 4] = PduKind::Request as u8;
        buf[start + FRAME_HEADER_LEN..start + FRAME_HEADER_LEN + 8]
            .copy_from_slice(&correlation.to_le_bytes());
        self.finish_frame(buf, start)
    }

    /// Appends a system message whose payload `write_payload` serializes
    /// directly into `buf`.
    pub fn system_message_with<F>(
        &self,
        buf: &mut BytesMut,
        seq: u64,
        ack: u64,
        header: &MessageHeader,
        write_payload: F,
    ) -> Result<(), EncodeError>
    where
        F: FnOnce(&mut BytesMut) -> Result<(), SerializeError>,
    {
        if seq == 0 {
            return Err(EncodeError::InvalidField {
                field: "seq",
                reason: "system message sequence numbers start at 1",
            });
        }
        let start = buf.len();
        let mut head = [0u8; FRAME_HEADER_LEN + 16 + MESSAGE_HEADER_LEN];
        head[4] = PduKind::SystemMessage as u8;
        head[5..13].copy_from_slice(&seq.to_le_bytes());
        head[13..21].copy_from_slice(&ack.to_le_bytes());
        put_message_header(&mut head[21..], header);
        buf.extend_from_slice(&head);
        if let Err(e) = write_payload(buf) {
            buf.truncate(start);
            return Err(e.into());
        }
        self.finish_frame(buf, start)
    }

    /// Appends any PDU; byte fields (payloads, props) are copied in as they
    /// are. Prefer [`Encoder::user_message_with`] on the hot path.
    pub fn encode(&self, pdu: &Pdu<'_>, buf: &mut BytesMut) -> Result<(), EncodeError> {
        match pdu {
            Pdu::Heartbeat => {
                Encoder::heartbeat(buf);
                return Ok(());
            }
            Pdu::HeartbeatAck => {
                Encoder::heartbeat_ack(buf);
                return Ok(());
            }
            Pdu::UserMessage(m) => {
                return self.user_message_with(buf, &m.header, |b| {
                    b.extend_from_slice(m.payload);
                    Ok(())
                })
            }
            Pdu::TracedUserMessage(t) => {
                return self.traced_user_message_with(buf, &t.message.header, &t.context, |b| {
                    b.extend_from_slice(t.message.payload);
                    Ok(())
                })
            }
            Pdu::Request(r) => {
                return self.request_with(buf, r.correlation, &r.message.header, |b| {
                    b.extend_from_slice(r.message.payload);
                    Ok(())
                })
            }
            Pdu::Reply(r) => {
                return self.reply_with(buf, r.correlation, r.serializer, r.type_id, |b| {
                    b.extend_from_slice(r.payload);
                    Ok(())
                })
            }
            Pdu::SystemMessage(m) => {
                return self.system_message_with(buf, m.seq, m.ack, &m.header, |b| {
                    b.extend_from_slice(m.payload);
                    Ok(())
                })
            }
            _ => {}
        }
        let start = buf.len();
        buf.put_u32_le(0);
        buf.put_u8(pdu.kind() as u8);
        if let Err(e) = encode_body(pdu, buf) {
            buf.truncate(start);
            return Err(e);
        }
        self.finish_frame(buf, start)
    }

    /// Checks the frame that starts at `start` against the limit and patches
    /// its length field, or removes it.
    #[inline]
    fn finish_frame(&self, buf: &mut BytesMut, start: usize) -> Result<(), EncodeError> {
        let Some(len) = buf.len().checked_sub(start + 4).filter(|&l| l >= 1) else {
            // A payload closure truncated the buffer instead of appending.
            buf.truncate(start);
            return Err(EncodeError::InvalidField {
                field: "payload",
                reason: "payload writer removed bytes from the buffer",
            });
        };
        if len > self.max_frame_len as usize {
            buf.truncate(start);
            return Err(EncodeError::FrameTooLong {
                len,
                max: self.max_frame_len as usize,
            });
        }
        // `len <= max_frame_len: u32`, so the cast is lossless.
        buf[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
        Ok(())
    }
}

#[inline]
fn put_message_header(out: &mut [u8], h: &MessageHeader) {
    out[0..4].copy_from_slice(&h.recipient.get().to_le_bytes());
    out[4..8].copy_from_slice(&h.sender.map_or(0, |s| s.get()).to_le_bytes());
    out[8..10].copy_from_slice(&h.serializer.0.to_le_bytes());
    out[10..14].copy_from_slice(&h.type_id.to_le_bytes());
}

fn put_bytes16(buf: &mut BytesMut, field: &'static str, b: &[u8]) -> Result<(), EncodeError> {
    let len = u16::try_from(b.len()).map_err(|_| EncodeError::FieldTooLong {
        field,
        len: b.len(),
        max: MAX_STR_LEN,
    })?;
    buf.put_u16_le(len);
    buf.put_slice(b);
    Ok(())
}

fn put_str16(buf: &mut BytesMut, field: &'static str, s: &str) -> Result<(), EncodeError> {
    put_bytes16(buf, field, s.as_bytes())
}

fn put_opt_bytes16(
    buf: &mut BytesMut,
    field: &'static str,
    b: Option<&[u8]>,
) -> Result<(), EncodeError> {
    match b {
        None => buf.put_u8(0),
        Some(b) => {
            buf.put_u8(1);
            put_bytes16(buf, field, b)?;
        }
    }
    Ok(())
}

fn put_address(buf: &mut BytesMut, a: &Address) -> Result<(), EncodeError> {
    // Address validation caps both strings at 255 bytes.
    put_str16(buf, "system", a.system())?;
    put_str16(buf, "host", a.host())?;
    buf.put_u16_le(a.port());
    Ok(())
}

/// Bodies of the PDUs that are not on the hot path.
fn encode_body(pdu: &Pdu<'_>, buf: &mut BytesMut) -> Result<(), EncodeError> {
    match pdu {
        Pdu::HandshakeRequest(h) => {
            buf.put_u8(h.version);
            buf.put_u64_le(h.uid);
            put_address(buf, &h.from)?;
            put_address(buf, &h.to)?;
            put_opt_bytes16(buf, "auth", h.auth)?;
        }
        Pdu::HandshakeResponse(h) => {
            buf.put_u8(h.version);
            buf.put_u8(h.status as u8);
            buf.put_u64_le(h.uid);
            put_address(buf, &h.from)?;
            put_opt_bytes16(buf, "auth", h.auth)?;
            put_str16(buf, "reason", h.reason)?;
        }
        Pdu::AuthProof(p) => buf.put_slice(&p.mac),
        Pdu::IncarnationStamp(s) => buf.put_u64_le(s.stamp),
        Pdu::Disassociate(d) => {
            buf.put_u8(d.reason.to_u8());
            put_str16(buf, "text", d.text)?;
        }
        Pdu::RefDeclaration(r) => {
            if r.path.is_empty() {
                return Err(EncodeError::InvalidField {
                    field: "path",
                    reason: "actor path is empty",
                });
            }
            buf.put_u32_le(r.id.get());
            buf.put_u64_le(r.uid);
            put_str16(buf, "path", r.path)?;
        }
        Pdu::ReplyHandleDeclaration(r) => {
            if r.correlation == 0 {
                return Err(EncodeError::InvalidField {
                    field: "correlation",
                    reason: "a reply handle's correlation id is never 0",
                });
            }
            buf.put_u32_le(r.id.get());
            buf.put_u64_le(r.correlation);
        }
        Pdu::SystemAck(a) => buf.put_u64_le(a.ack),
        Pdu::Flush(Flush { id }) | Pdu::FlushAck(FlushAck { id }) => {
            if *id == 0 {
                return Err(EncodeError::InvalidField {
                    field: "id",
                    reason: "a flush id is never 0",
                });
            }
            buf.put_u64_le(*id);
        }
        Pdu::SpawnRequest(s) => {
            buf.put_u64_le(s.request_id);
            buf.put_u16_le(s.serializer.0);
            put_str16(buf, "kind", s.kind)?;
            put_str16(buf, "name", s.name)?;
            buf.put_slice(s.props);
        }
        Pdu::SpawnResponse(s) => {
            buf.put_u64_le(s.request_id);
            match s.result {
                SpawnResult::Spawned { path, uid } => {
                    buf.put_u8(0);
                    buf.put_u64_le(uid);
                    put_str16(buf, "path", path)?;
                }
                SpawnResult::Failed { error } => {
                    buf.put_u8(1);
                    put_str16(buf, "error", error)?;
                }
            }
        }
        Pdu::Cluster(c) => {
            if c.cluster.is_empty() {
                return Err(EncodeError::InvalidField {
                    field: "cluster",
                    reason: "a cluster name is never empty",
                });
            }
            if c.payload.is_empty() {
                return Err(EncodeError::InvalidField {
                    field: "payload",
                    reason: "a cluster payload is never empty",
                });
            }
            buf.put_u8(c.channel as u8);
            put_str16(buf, "cluster", c.cluster)?;
            buf.put_slice(c.payload);
        }
        // Handled by the caller without a generic body.
        Pdu::Heartbeat
        | Pdu::HeartbeatAck
        | Pdu::UserMessage(_)
        | Pdu::TracedUserMessage(_)
        | Pdu::Request(_)
        | Pdu::Reply(_)
        | Pdu::SystemMessage(_) => {}
    }
    Ok(())
}
