//! The byte layout of foca's headers and member updates (design §1.7).
//!
//! foca frames a packet itself (header, then a big-endian `u16` count of
//! member updates, then the updates, then custom broadcasts) and asks a
//! [`foca::Codec`] only for the header and for one member at a time. This
//! codec gives both a fixed little-endian layout, written by hand rather
//! than through foca's `PostcardCodec`, so that the bytes do not depend on
//! serde's derive order and a peer in another language can implement them
//! from `docs/reference/cluster.md`:
//!
//! - node id: host as `str16` (`u16` length, 1 to [`MAX_HOST_LEN`] bytes of
//!   UTF-8), port `u16`, uid `u64`, born_ms `u64`, epoch `u16`;
//! - header: src node id, src incarnation `u16`, dst node id, message tag
//!   `u8` and the message's fields (a node id, then a probe number `u8`);
//! - member: node id, incarnation `u16`, state `u8` (0 alive, 1 suspect,
//!   2 down).

use bytes::{Buf, BufMut};
use foca::{Header, Member, Message, State};

use crate::node_id::NodeId;

/// The longest host name the codec carries (a DNS name fits).
pub const MAX_HOST_LEN: usize = 255;

/// Bytes of a node id besides its host: length, port, uid, born_ms, epoch.
const NODE_ID_FIXED_LEN: usize = 2 + 2 + 8 + 8 + 2;

/// Why bytes could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The input ended inside a field.
    #[error("truncated cluster packet: {what} needs {needed} bytes, {remaining} left")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A node id with an empty host.
    #[error("a node id's host is empty")]
    EmptyHost,
    /// A host longer than [`MAX_HOST_LEN`].
    #[error("a node id's host is {len} bytes, more than {MAX_HOST_LEN}")]
    HostTooLong {
        /// The host's length in bytes.
        len: usize,
    },
    /// A host that is not UTF-8.
    #[error("a node id's host is not UTF-8")]
    HostNotUtf8,
    /// A string field that is not UTF-8.
    #[error("cluster packet: {0} is not UTF-8")]
    NotUtf8(&'static str),
    /// A member status outside the closed set.
    #[error("unknown member status {0:#04x}")]
    UnknownStatus(u8),
    /// A membership item or sync message tag outside the closed set.
    #[error("unknown membership item tag {0:#04x}")]
    UnknownItem(u8),
    /// A string longer than a `str16` carries.
    #[error("cluster packet: {0} is longer than 65,535 bytes")]
    TooLong(&'static str),
    /// Bytes left over after a whole membership item or sync message.
    #[error("cluster packet: {0} bytes left over")]
    TrailingBytes(usize),
    /// A message tag outside the closed set.
    #[error("unknown cluster message tag {0:#04x}")]
    UnknownMessage(u8),
    /// A member state outside the closed set.
    #[error("unknown member state {0:#04x}")]
    UnknownState(u8),
    /// A member's set of services beyond the cluster receptionist's bounds.
    #[error(transparent)]
    ServiceBounds(#[from] crate::receptionist::ServiceRefused),
    /// The output buffer cannot take the whole item; nothing was written.
    #[error("cluster packet buffer full: {needed} bytes needed, {remaining} left")]
    BufferFull {
        /// Bytes the item needs.
        needed: usize,
        /// Bytes the buffer had left.
        remaining: usize,
    },
}

/// The message tags, one byte each, in foca's `Message` order.
mod tag {
    pub const PING: u8 = 0x01;
    pub const ACK: u8 = 0x02;
    pub const PING_REQ: u8 = 0x03;
    pub const INDIRECT_PING: u8 = 0x04;
    pub const INDIRECT_ACK: u8 = 0x05;
    pub const FORWARDED_ACK: u8 = 0x06;
    pub const ANNOUNCE: u8 = 0x07;
    pub const FEED: u8 = 0x08;
    pub const GOSSIP: u8 = 0x09;
    pub const BROADCAST: u8 = 0x0a;
    pub const TURN_UNDEAD: u8 = 0x0b;
}

/// foca's [`foca::Codec`] for [`NodeId`], in the layout of the module doc.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClusterCodec;

impl foca::Codec<NodeId> for ClusterCodec {
    type Error = CodecError;

    fn encode_header(
        &mut self,
        header: &Header<NodeId>,
        buf: impl BufMut,
    ) -> Result<(), CodecError> {
        let (target, probe) = message_fields(&header.message);
        let len = node_id_len(&header.src)?
            + 2
            + node_id_len(&header.dst)?
            + 1
            + target.map_or(Ok(0), node_id_len)?
            + probe.map_or(0, |_| 1);
        let mut out = Writer::reserve(buf, len)?;
        out.node_id(&header.src);
        out.0.put_u16_le(header.src_incarnation);
        out.node_id(&header.dst);
        out.0.put_u8(message_tag(&header.message));
        if let Some(target) = target {
            out.node_id(target);
        }
        if let Some(probe) = probe {
            out.0.put_u8(probe);
        }
        Ok(())
    }

    fn decode_header(&mut self, buf: impl Buf) -> Result<Header<NodeId>, CodecError> {
        let mut input = Reader(buf);
        let src = input.node_id()?;
        let src_incarnation = input.u16("src incarnation")?;
        let dst = input.node_id()?;
        let message = input.message()?;
        Ok(Header {
            src,
            src_incarnation,
            dst,
            message,
        })
    }

    fn encode_member(
        &mut self,
        member: &Member<NodeId>,
        buf: impl BufMut,
    ) -> Result<(), CodecError> {
        let len = node_id_len(member.id())? + 2 + 1;
        let mut out = Writer::reserve(buf, len)?;
        out.node_id(member.id());
        out.0.put_u16_le(member.incarnation());
        out.0.put_u8(match member.state() {
            State::Alive => 0,
            State::Suspect => 1,
            State::Down => 2,
        });
        Ok(())
    }

    fn decode_member(&mut self, buf: impl Buf) -> Result<Member<NodeId>, CodecError> {
        let mut input = Reader(buf);
        let id = input.node_id()?;
        let incarnation = input.u16("member incarnation")?;
        let state = match input.u8("member state")? {
            0 => State::Alive,
            1 => State::Suspect,
            2 => State::Down,
            other => return Err(CodecError::UnknownState(other)),
        };
        Ok(Member::new(id, incarnation, state))
    }
}

/// The node id and probe number a message carries, if any.
fn message_fields(message: &Message<NodeId>) -> (Option<&NodeId>, Option<u8>) {
    match message {
        Message::Ping(probe) | Message::Ack(probe) => (None, Some(*probe)),
        Message::PingReq {
            target,
            probe_number,
        }
        | Message::IndirectAck {
            target,
            probe_number,
        } => (Some(target), Some(*probe_number)),
        Message::IndirectPing {
            origin,
            probe_number,
        }
        | Message::ForwardedAck {
            origin,
            probe_number,
        } => (Some(origin), Some(*probe_number)),
        Message::Announce
        | Message::Feed
        | Message::Gossip
        | Message::Broadcast
        | Message::TurnUndead => (None, None),
    }
}

fn message_tag(message: &Message<NodeId>) -> u8 {
    match message {
        Message::Ping(_) => tag::PING,
        Message::Ack(_) => tag::ACK,
        Message::PingReq { .. } => tag::PING_REQ,
        Message::IndirectPing { .. } => tag::INDIRECT_PING,
        Message::IndirectAck { .. } => tag::INDIRECT_ACK,
        Message::ForwardedAck { .. } => tag::FORWARDED_ACK,
        Message::Announce => tag::ANNOUNCE,
        Message::Feed => tag::FEED,
        Message::Gossip => tag::GOSSIP,
        Message::Broadcast => tag::BROADCAST,
        Message::TurnUndead => tag::TURN_UNDEAD,
    }
}

/// The encoded length of a node id, or why it cannot be encoded.
fn node_id_len(id: &NodeId) -> Result<usize, CodecError> {
    check_host_len(id.host().len())?;
    Ok(NODE_ID_FIXED_LEN + id.host().len())
}

fn check_host_len(len: usize) -> Result<(), CodecError> {
    match len {
        0 => Err(CodecError::EmptyHost),
        len if len > MAX_HOST_LEN => Err(CodecError::HostTooLong { len }),
        _ => Ok(()),
    }
}

/// A buffer known to have room for everything about to be written, so an
/// item is written whole or not at all (foca's rule for a full packet).
pub(crate) struct Writer<B>(pub(crate) B);

impl<B: BufMut> Writer<B> {
    fn reserve(buf: B, needed: usize) -> Result<Self, CodecError> {
        let remaining = buf.remaining_mut();
        if remaining < needed {
            return Err(CodecError::BufferFull { needed, remaining });
        }
        Ok(Self(buf))
    }

    pub(crate) fn node_id(&mut self, id: &NodeId) {
        let host = id.host().as_bytes();
        // `node_id_len` checked the length against MAX_HOST_LEN.
        self.0.put_u16_le(host.len() as u16);
        self.0.put_slice(host);
        self.0.put_u16_le(id.port());
        self.0.put_u64_le(id.uid());
        self.0.put_u64_le(id.born_ms());
        self.0.put_u16_le(id.epoch());
    }
}

/// Checked reads: every read first compares what it needs with what is
/// left, since `Buf`'s own getters panic on short input.
pub(crate) struct Reader<B>(pub(crate) B);

impl<B: Buf> Reader<B> {
    fn need(&self, what: &'static str, needed: usize) -> Result<(), CodecError> {
        let remaining = self.0.remaining();
        if remaining < needed {
            return Err(CodecError::Truncated {
                what,
                needed,
                remaining,
            });
        }
        Ok(())
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, CodecError> {
        self.need(what, 1)?;
        Ok(self.0.get_u8())
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, CodecError> {
        self.need(what, 2)?;
        Ok(self.0.get_u16_le())
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, CodecError> {
        self.need(what, 8)?;
        Ok(self.0.get_u64_le())
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, CodecError> {
        self.need(what, 4)?;
        Ok(self.0.get_u32_le())
    }

    /// A `str16`: a `u16` length and that many bytes of UTF-8.
    pub(crate) fn str16(&mut self, what: &'static str) -> Result<String, CodecError> {
        let len = usize::from(self.u16(what)?);
        self.need(what, len)?;
        let mut bytes = vec![0; len];
        self.0.copy_to_slice(&mut bytes);
        String::from_utf8(bytes).map_err(|_| CodecError::NotUtf8(what))
    }

    pub(crate) fn node_id(&mut self) -> Result<NodeId, CodecError> {
        let len = usize::from(self.u16("host length")?);
        check_host_len(len)?;
        self.need("host", len)?;
        let mut host = vec![0; len];
        self.0.copy_to_slice(&mut host);
        let host = String::from_utf8(host).map_err(|_| CodecError::HostNotUtf8)?;
        let port = self.u16("port")?;
        let uid = self.u64("uid")?;
        let born_ms = self.u64("born_ms")?;
        let epoch = self.u16("epoch")?;
        Ok(NodeId::with_epoch(host, port, uid, born_ms, epoch))
    }

    fn message(&mut self) -> Result<Message<NodeId>, CodecError> {
        let message = match self.u8("message tag")? {
            tag::PING => Message::Ping(self.u8("probe number")?),
            tag::ACK => Message::Ack(self.u8("probe number")?),
            tag::PING_REQ => {
                let (target, probe_number) = self.id_and_probe()?;
                Message::PingReq {
                    target,
                    probe_number,
                }
            }
            tag::INDIRECT_PING => {
                let (origin, probe_number) = self.id_and_probe()?;
                Message::IndirectPing {
                    origin,
                    probe_number,
                }
            }
            tag::INDIRECT_ACK => {
                let (target, probe_number) = self.id_and_probe()?;
                Message::IndirectAck {
                    target,
                    probe_number,
                }
            }
            tag::FORWARDED_ACK => {
                let (origin, probe_number) = self.id_and_probe()?;
                Message::ForwardedAck {
                    origin,
                    probe_number,
                }
            }
            tag::ANNOUNCE => Message::Announce,
            tag::FEED => Message::Feed,
            tag::GOSSIP => Message::Gossip,
            tag::BROADCAST => Message::Broadcast,
            tag::TURN_UNDEAD => Message::TurnUndead,
            other => return Err(CodecError::UnknownMessage(other)),
        };
        Ok(message)
    }

    fn id_and_probe(&mut self) -> Result<(NodeId, u8), CodecError> {
        let id = self.node_id()?;
        let probe = self.u8("probe number")?;
        Ok((id, probe))
    }
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
