//! Splits a read buffer into frames and decodes their PDUs in place.

use super::address::{validate_host, validate_system, Address};
use super::error::DecodeError;
use super::frame::{Lane, PduKind, SMALL_MAX_FRAME_LEN};
use super::handshake::{
    AuthProof, HandshakeRequest, HandshakeResponse, HandshakeStatus, IncarnationStamp,
};
use super::pdu::{
    ClusterChannel, ClusterFrame, Disassociate, DisassociateReason, Flush, FlushAck, MessageHeader,
    Pdu, RefDeclaration, RefId, Reply, ReplyHandleDeclaration, Request, SpawnRequest,
    SpawnResponse, SpawnResult, SystemAck, SystemMessage, TracedUserMessage, UserMessage,
    MESSAGE_HEADER_LEN,
};
use crate::serialization::SerializerId;

/// Default highest reference id a peer may declare per lane: 2^20. The
/// receiver keeps resolved references in a `Vec` indexed by id, so this
/// bounds that table (about 16 MiB at 16 bytes an entry).
pub const DEFAULT_MAX_REF_ID: u32 = 1 << 20;

/// Limits a [`Decoder`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Largest accepted frame length (kind byte + body).
    pub max_frame_len: u32,
    /// Largest accepted id in a [`RefDeclaration`].
    pub max_ref_id: u32,
}

impl Default for DecoderConfig {
    fn default() -> Self {
        DecoderConfig {
            max_frame_len: SMALL_MAX_FRAME_LEN,
            max_ref_id: DEFAULT_MAX_REF_ID,
        }
    }
}

impl DecoderConfig {
    /// The default limits of `lane`.
    pub fn for_lane(lane: Lane) -> Self {
        DecoderConfig {
            max_frame_len: lane.default_max_frame_len(),
            ..DecoderConfig::default()
        }
    }
}

/// Decodes frames from a read buffer without copying or allocating.
///
/// Typical transport loop:
///
/// ```
/// # use bytes::{Buf, BytesMut};
/// # use volley_remote::wire::{Decoder, DecoderConfig, Pdu};
/// # let decoder = Decoder::new(DecoderConfig::default());
/// # let mut read_buf = BytesMut::new();
/// let mut frames = decoder.frames(&read_buf);
/// for pdu in &mut frames {
///     match pdu {
///         Ok(Pdu::UserMessage(m)) => { /* dispatch m.header, m.payload */ }
///         Ok(_) => {}
///         Err(e) => { /* protocol violation: close the connection */ }
///     }
/// }
/// let used = frames.consumed();
/// read_buf.advance(used); // keeps the partial trailing frame
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Decoder {
    config: DecoderConfig,
}

impl Decoder {
    /// A decoder with the given limits.
    pub fn new(config: DecoderConfig) -> Self {
        Decoder { config }
    }

    /// The limits in force.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// An iterator over all complete frames at the start of `buf`.
    pub fn frames<'a>(&self, buf: &'a [u8]) -> Frames<'a> {
        Frames {
            len: buf.len(),
            rest: buf,
            config: self.config,
            failed: false,
        }
    }

    /// Decodes the first frame of `buf`: `Ok(None)` if it is not complete
    /// yet, else the PDU and the number of bytes it occupied.
    pub fn decode_frame<'a>(&self, buf: &'a [u8]) -> Result<Option<(Pdu<'a>, usize)>, DecodeError> {
        let mut frames = self.frames(buf);
        match frames.next() {
            None => Ok(None),
            Some(Ok(pdu)) => Ok(Some((pdu, frames.consumed()))),
            Some(Err(e)) => Err(e),
        }
    }
}

/// Iterator over the complete frames of one read buffer.
///
/// It stops at the first incomplete frame (see [`Frames::consumed`]) and
/// after the first error: the stream cannot be trusted past a frame that did
/// not decode.
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    /// The undecoded part of the buffer; a slice rather than an offset saves
    /// a bounds check per frame.
    rest: &'a [u8],
    /// Length of the whole buffer, for `consumed`.
    len: usize,
    config: DecoderConfig,
    failed: bool,
}

impl<'a> Frames<'a> {
    /// Bytes taken up by the frames decoded so far; the caller drops them
    /// from the read buffer. After an error, the offset of the bad frame.
    pub fn consumed(&self) -> usize {
        self.len - self.rest.len()
    }

    /// Total length (header included) of the incomplete frame at the current
    /// position, once its length field has arrived, so the transport can
    /// reserve room for it in one go. `None` if fewer than 4 bytes remain or
    /// the frame is already complete.
    pub fn pending_frame_len(&self) -> Option<usize> {
        let rest = self.rest;
        let len = u32::from_le_bytes(*rest.first_chunk::<4>()?) as usize;
        let total = len.checked_add(4)?;
        (total > rest.len() && len <= self.config.max_frame_len as usize).then_some(total)
    }

    fn fail(&mut self, e: DecodeError) -> Option<Result<Pdu<'a>, DecodeError>> {
        self.failed = true;
        Some(Err(e))
    }
}

/// A complete frame, split off the read buffer but not decoded: what the
/// transport's read loop takes, so that the hot kinds (UserMessage,
/// Request) are decoded by their own small functions and never moved
/// around inside the much larger [`Pdu`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawFrame<'a> {
    /// The kind byte, possibly unknown.
    pub kind: u8,
    /// The body after the kind byte.
    pub body: &'a [u8],
}

impl<'a> RawFrame<'a> {
    /// The frame as a UserMessage, if that is its kind.
    #[inline]
    pub fn user_message(&self) -> Option<Result<UserMessage<'a>, DecodeError>> {
        (self.kind == PduKind::UserMessage as u8).then(|| user_message_body(self.body))
    }

    /// The frame as a Request, if that is its kind.
    #[inline]
    pub fn request(&self) -> Option<Result<Request<'a>, DecodeError>> {
        (self.kind == PduKind::Request as u8).then(|| request_body(self.body))
    }

    /// The frame as a Reply, if that is its kind.
    #[inline]
    pub fn reply(&self) -> Option<Result<Reply<'a>, DecodeError>> {
        (self.kind == PduKind::Reply as u8).then(|| {
            // A whole head with a correlation is read in place; anything
            // else goes through the field reader, which names the fault.
            if let Some((head, payload)) = self.body.split_first_chunk::<14>() {
                let correlation = u64::from_le_bytes(*head.first_chunk::<8>().expect("8 of 14"));
                if correlation != 0 {
                    let (_, rest) = head.split_at(8);
                    return Ok(Reply {
                        correlation,
                        serializer: SerializerId(u16::from_le_bytes([rest[0], rest[1]])),
                        type_id: u32::from_le_bytes([rest[2], rest[3], rest[4], rest[5]]),
                        payload,
                    });
                }
            }
            let mut r = Reader {
                kind: PduKind::Reply,
                buf: self.body,
            };
            reply_body(&mut r)
        })
    }

    /// The frame as any PDU, within the limits of `config`.
    pub fn decode(&self, config: &DecoderConfig) -> Result<Pdu<'a>, DecodeError> {
        decode_pdu(self.kind, self.body, config)
    }
}

impl<'a> Frames<'a> {
    /// The next complete frame, undecoded; `None` at an incomplete frame
    /// and after an error. The caller decodes it (the iterator does both)
    /// and stops at a frame that does not decode: `consumed` then counts
    /// that frame too.
    #[inline]
    pub fn next_raw(&mut self) -> Option<Result<RawFrame<'a>, DecodeError>> {
        if self.failed {
            return None;
        }
        let (len, rest) = self.rest.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        // Checked before waiting for the body, so an oversized frame is never
        // buffered.
        if len > self.config.max_frame_len as usize {
            self.failed = true;
            return Some(Err(DecodeError::FrameTooLong {
                len,
                max: self.config.max_frame_len as usize,
            }));
        }
        if rest.len() < len {
            return None;
        }
        let (frame, after) = rest.split_at(len);
        let Some((&kind, body)) = frame.split_first() else {
            self.failed = true;
            return Some(Err(DecodeError::EmptyFrame));
        };
        self.rest = after;
        Some(Ok(RawFrame { kind, body }))
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Pdu<'a>, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let before = self.rest;
        let frame = match self.next_raw()? {
            Ok(frame) => frame,
            Err(e) => return Some(Err(e)),
        };
        match decode_pdu(frame.kind, frame.body, &self.config) {
            Ok(pdu) => Some(Ok(pdu)),
            Err(e) => {
                // `consumed` stays at the bad frame.
                self.rest = before;
                self.fail(e)
            }
        }
    }
}

#[inline]
fn decode_pdu<'a>(
    kind: u8,
    body: &'a [u8],
    config: &DecoderConfig,
) -> Result<Pdu<'a>, DecodeError> {
    // The hot path first, without the generic reader.
    if kind == PduKind::UserMessage as u8 {
        return user_message(body);
    }
    let kind = PduKind::from_u8(kind).ok_or(DecodeError::UnknownPduKind(kind))?;
    let mut r = Reader { kind, buf: body };
    let pdu = match kind {
        PduKind::Heartbeat => Pdu::Heartbeat,
        PduKind::HeartbeatAck => Pdu::HeartbeatAck,
        PduKind::HandshakeRequest => Pdu::HandshakeRequest(Box::new(HandshakeRequest {
            version: r.u8("version")?,
            uid: r.u64("uid")?,
            from: r.address("from")?,
            to: r.address("to")?,
            auth: r.opt_bytes16("auth")?,
        })),
        PduKind::HandshakeResponse => {
            let version = r.u8("version")?;
            let status = HandshakeStatus::from_u8(r.u8("status")?)
                .ok_or(r.malformed("status", "unknown handshake status"))?;
            Pdu::HandshakeResponse(Box::new(HandshakeResponse {
                version,
                status,
                uid: r.u64("uid")?,
                from: r.address("from")?,
                auth: r.opt_bytes16("auth")?,
                reason: r.str16("reason")?,
            }))
        }
        PduKind::Disassociate => Pdu::Disassociate(Disassociate {
            reason: DisassociateReason::from_u8(r.u8("reason")?),
            text: r.str16("text")?,
        }),
        PduKind::RefDeclaration => {
            let id = r.u32("id")?;
            let id = RefId::new(id)
                .filter(|id| id.get() <= config.max_ref_id)
                .ok_or(r.malformed("id", "reference id is 0 or above the limit"))?;
            let uid = r.u64("uid")?;
            let path = r.str16("path")?;
            if path.is_empty() {
                return Err(r.malformed("path", "actor path is empty"));
            }
            Pdu::RefDeclaration(RefDeclaration { id, uid, path })
        }
        PduKind::ReplyHandleDeclaration => {
            let id = r.u32("id")?;
            let id = RefId::new(id)
                .filter(|id| id.get() <= config.max_ref_id)
                .ok_or(r.malformed("id", "reference id is 0 or above the limit"))?;
            let correlation = r.u64("correlation")?;
            if correlation == 0 {
                return Err(r.malformed("correlation", "correlation id is 0"));
            }
            Pdu::ReplyHandleDeclaration(ReplyHandleDeclaration { id, correlation })
        }
        PduKind::Reply => Pdu::Reply(reply_body(&mut r)?),
        PduKind::SystemMessage => {
            let seq = r.u64("seq")?;
            if seq == 0 {
                return Err(r.malformed("seq", "sequence numbers start at 1"));
            }
            let ack = r.u64("ack")?;
            let Some((head, payload)) = r.buf.split_first_chunk::<MESSAGE_HEADER_LEN>() else {
                return Err(truncated_header(kind, r.buf.len()));
            };
            let header = message_header(kind, head)?;
            r.buf = &[];
            Pdu::SystemMessage(SystemMessage {
                seq,
                ack,
                header,
                payload,
            })
        }
        PduKind::SystemAck => Pdu::SystemAck(SystemAck { ack: r.u64("ack")? }),
        PduKind::Flush | PduKind::FlushAck => {
            let id = r.u64("id")?;
            if id == 0 {
                return Err(r.malformed("id", "flush id is 0"));
            }
            match kind {
                PduKind::Flush => Pdu::Flush(Flush { id }),
                _ => Pdu::FlushAck(FlushAck { id }),
            }
        }
        PduKind::AuthProof => Pdu::AuthProof(AuthProof {
            mac: r.take("mac")?,
        }),
        PduKind::IncarnationStamp => Pdu::IncarnationStamp(IncarnationStamp {
            stamp: r.u64("stamp")?,
        }),
        PduKind::SpawnRequest => Pdu::SpawnRequest(SpawnRequest {
            request_id: r.u64("request_id")?,
            serializer: SerializerId(r.u16("serializer")?),
            kind: r.str16("kind")?,
            name: r.str16("name")?,
            props: std::mem::take(&mut r.buf),
        }),
        PduKind::SpawnResponse => {
            let request_id = r.u64("request_id")?;
            let result = match r.u8("status")? {
                0 => SpawnResult::Spawned {
                    uid: r.u64("uid")?,
                    path: r.str16("path")?,
                },
                1 => SpawnResult::Failed {
                    error: r.str16("error")?,
                },
                _ => return Err(r.malformed("status", "spawn status is neither 0 nor 1")),
            };
            Pdu::SpawnResponse(SpawnResponse { request_id, result })
        }
        PduKind::Cluster => Pdu::Cluster(cluster_frame(&mut r)?),
        PduKind::UserMessage => return user_message(body),
        PduKind::Request => return request_body(body).map(Pdu::Request),
        PduKind::TracedUserMessage => {
            let Some((head, rest)) = r.buf.split_first_chunk::<MESSAGE_HEADER_LEN>() else {
                return Err(truncated_header(kind, r.buf.len()));
            };
            let header = message_header(kind, head)?;
            r.buf = rest;
            let context = volley::TraceParent {
                trace_id: r.take("trace_id")?,
                parent_id: r.take("parent_id")?,
                flags: r.u8("trace_flags")?,
            };
            let payload = std::mem::take(&mut r.buf);
            Pdu::TracedUserMessage(TracedUserMessage {
                message: UserMessage { header, payload },
                context,
            })
        }
    };
    if !r.buf.is_empty() {
        return Err(DecodeError::TrailingBytes {
            kind,
            extra: r.buf.len(),
        });
    }
    Ok(pdu)
}

/// A cluster frame's body: a known channel, a cluster name and a packet,
/// neither empty.
fn cluster_frame<'a>(r: &mut Reader<'a>) -> Result<ClusterFrame<'a>, DecodeError> {
    let channel = ClusterChannel::from_u8(r.u8("channel")?)
        .ok_or(r.malformed("channel", "unknown cluster channel"))?;
    let cluster = r.str16("cluster")?;
    if cluster.is_empty() {
        return Err(r.malformed("cluster", "cluster name is empty"));
    }
    let payload = std::mem::take(&mut r.buf);
    if payload.is_empty() {
        return Err(r.malformed("payload", "cluster payload is empty"));
    }
    Ok(ClusterFrame {
        channel,
        cluster,
        payload,
    })
}

#[inline]
fn user_message(body: &[u8]) -> Result<Pdu<'_>, DecodeError> {
    user_message_body(body).map(Pdu::UserMessage)
}

#[inline]
fn user_message_body(body: &[u8]) -> Result<UserMessage<'_>, DecodeError> {
    let Some((head, payload)) = body.split_first_chunk::<MESSAGE_HEADER_LEN>() else {
        return Err(truncated_header(PduKind::UserMessage, body.len()));
    };
    let header = message_header(PduKind::UserMessage, head)?;
    Ok(UserMessage { header, payload })
}

#[inline]
fn reply_body<'a>(r: &mut Reader<'a>) -> Result<Reply<'a>, DecodeError> {
    let correlation = r.u64("correlation")?;
    if correlation == 0 {
        return Err(r.malformed("correlation", "correlation id is 0"));
    }
    Ok(Reply {
        correlation,
        serializer: SerializerId(r.u16("serializer")?),
        type_id: r.u32("type_id")?,
        payload: std::mem::take(&mut r.buf),
    })
}

fn request_body(body: &[u8]) -> Result<Request<'_>, DecodeError> {
    const KIND: PduKind = PduKind::Request;
    let Some((correlation, message)) = body.split_first_chunk::<8>() else {
        return Err(DecodeError::Truncated {
            kind: KIND,
            field: "correlation",
        });
    };
    let correlation = u64::from_le_bytes(*correlation);
    if correlation == 0 {
        return Err(DecodeError::Malformed {
            kind: KIND,
            field: "correlation",
            reason: "correlation id is 0",
        });
    }
    let Some((head, payload)) = message.split_first_chunk::<MESSAGE_HEADER_LEN>() else {
        return Err(truncated_header(KIND, message.len()));
    };
    let header = message_header(KIND, head)?;
    Ok(Request {
        correlation,
        message: UserMessage { header, payload },
    })
}

#[cold]
fn truncated_header(kind: PduKind, have: usize) -> DecodeError {
    const FIELDS: [(usize, &str); 4] = [
        (4, "recipient"),
        (8, "sender"),
        (10, "serializer"),
        (14, "type_id"),
    ];
    let field = FIELDS
        .iter()
        .find(|(end, _)| have < *end)
        .map_or("type_id", |(_, f)| f);
    DecodeError::Truncated { kind, field }
}

#[inline]
fn message_header(
    kind: PduKind,
    h: &[u8; MESSAGE_HEADER_LEN],
) -> Result<MessageHeader, DecodeError> {
    let [r0, r1, r2, r3, s0, s1, s2, s3, z0, z1, t0, t1, t2, t3] = *h;
    let recipient =
        RefId::new(u32::from_le_bytes([r0, r1, r2, r3])).ok_or(DecodeError::Malformed {
            kind,
            field: "recipient",
            reason: "recipient id 0",
        })?;
    Ok(MessageHeader {
        recipient,
        sender: RefId::new(u32::from_le_bytes([s0, s1, s2, s3])),
        serializer: SerializerId(u16::from_le_bytes([z0, z1])),
        type_id: u32::from_le_bytes([t0, t1, t2, t3]),
    })
}

/// Reads fields from a frame body front to back; every read is bounds
/// checked and names the field it was after.
struct Reader<'a> {
    kind: PduKind,
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let (head, rest) = self
            .buf
            .split_first_chunk::<N>()
            .ok_or(DecodeError::Truncated {
                kind: self.kind,
                field,
            })?;
        self.buf = rest;
        Ok(*head)
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        self.take::<1>(field).map(|[b]| b)
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.take(field).map(u16::from_le_bytes)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        self.take(field).map(u32::from_le_bytes)
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        self.take(field).map(u64::from_le_bytes)
    }

    fn bytes16(&mut self, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.u16(field)? as usize;
        if self.buf.len() < len {
            return Err(DecodeError::Truncated {
                kind: self.kind,
                field,
            });
        }
        let (b, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(b)
    }

    fn str16(&mut self, field: &'static str) -> Result<&'a str, DecodeError> {
        let b = self.bytes16(field)?;
        std::str::from_utf8(b).map_err(|_| DecodeError::InvalidUtf8 {
            kind: self.kind,
            field,
        })
    }

    fn opt_bytes16(&mut self, field: &'static str) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.u8(field)? {
            0 => Ok(None),
            1 => self.bytes16(field).map(Some),
            _ => Err(self.malformed(field, "presence flag is neither 0 nor 1")),
        }
    }

    fn address(&mut self, field: &'static str) -> Result<Address, DecodeError> {
        let system = self.str16(field)?;
        let host = self.str16(field)?;
        let port = self.u16(field)?;
        let invalid = |source| DecodeError::InvalidAddress {
            kind: self.kind,
            field,
            source,
        };
        // Validate before allocating, so garbage costs no allocation.
        validate_system(system).map_err(invalid)?;
        validate_host(host).map_err(invalid)?;
        Address::new(system, host, port).map_err(invalid)
    }

    fn malformed(&self, field: &'static str, reason: &'static str) -> DecodeError {
        DecodeError::Malformed {
            kind: self.kind,
            field,
            reason,
        }
    }
}
