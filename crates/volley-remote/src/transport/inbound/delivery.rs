//! Delivery of decoded user messages, in runs.
//!
//! Frames for one actor usually arrive back to back: a sender's activation
//! tells its peer many messages, and the writer puts them in one batch. The
//! reader therefore collects consecutive messages with the same recipient
//! and type (a *run*, at most [`RUN_CAP`] long) and delivers the run with
//! one mailbox lock and one scheduling decision (`ActorRef::tell_all`),
//! instead of paying both per message. Why, and what it gained:
//! docs/design-notes.md#reader-runs.
//!
//! A run is never held across a read: it is delivered when the next frame
//! belongs to someone else, when it is full, before any other PDU (a
//! declaration may rebind an id the run uses), and at the end of each read
//! buffer. A run's first message therefore waits only for the rest of its
//! own run to be decoded, never for other actors' messages or the socket
//! (an earlier variant that staged whole read buffers per actor made
//! ping-pong slower because echoes waited for everyone's messages;
//! docs/design-notes.md#reader-runs).

use std::any::Any;
use std::sync::Arc;

use volley::remote::{RemoteRef, RemoteRoute};
use volley::ActorPath;

use crate::transport::refs::tables::ImportTable;

use crate::serialization::SerializerId;
use crate::transport::inbound::reader::Reader;
use crate::transport::inbound::InboundContext;
use crate::transport::node::{not_delivered, Undeliverable};
use crate::transport::registry::{DeliverError, InboundType, Payloads};
use crate::wire::{
    Address, Frames, MessageHeader, PduKind, Request, TracedUserMessage, UserMessage,
    MESSAGE_HEADER_LEN,
};

/// Longest run delivered at once. Long enough that the per-run costs (the
/// mailbox lock, the scheduling check, the handle lookup) vanish per
/// message; short enough that the first message of a run waits at most a
/// few microseconds for the rest to be decoded.
pub(crate) const RUN_CAP: usize = 64;

impl<C: InboundContext> Reader<'_, C> {
    /// What a run is delivered with: this connection's state.
    #[inline]
    pub(super) fn deliver(&mut self) -> Deliver<'_, C> {
        Deliver {
            core: &**self.core,
            imports: &mut self.imports,
            types: &mut self.types,
            peer: &self.peer.address,
            root: &self.peer.root,
            reply_route: &self.peer.reply_route,
        }
    }
}

// Each type's staging `Vec` is made for a whole run.
const _: () = assert!(RUN_CAP == crate::transport::registry::STAGE_CAPACITY);

/// Per-connection state for delivery: registrations and staging buffers of
/// the message types seen on the connection.
#[derive(Default)]
pub(crate) struct TypeCache {
    /// Most connections carry one or two types; a short list beats a map.
    types: Vec<CachedType>,
}

pub(super) struct CachedType {
    wire_id: u32,
    pub(super) ty: InboundType,
    /// A `Vec<M>` for the type's protocol `M`, reused for every run so that
    /// delivering a run allocates nothing in the steady state.
    stage: Option<Box<dyn Any + Send>>,
}

impl TypeCache {
    pub(super) fn find(
        &mut self,
        core: &impl InboundContext,
        wire_id: u32,
    ) -> Option<&mut CachedType> {
        let at = match self.types.iter().position(|t| t.wire_id == wire_id) {
            Some(at) => at,
            None => {
                let ty = *core.registry().by_wire_id.get(&wire_id)?;
                self.types.push(CachedType {
                    wire_id,
                    ty,
                    stage: None,
                });
                self.types.len() - 1
            }
        };
        Some(&mut self.types[at])
    }
}

/// Consecutive user messages for one recipient, of one type and serializer,
/// borrowed from the read buffer.
pub(crate) struct Run<'buf> {
    recipient: u32,
    type_id: u32,
    serializer: SerializerId,
    len: usize,
    payloads: [&'buf [u8]; RUN_CAP],
    /// The correlation id of each payload's reply handle if it came in a
    /// Request, else 0; read only if `has_requests`.
    replies: [u64; RUN_CAP],
    /// Some payload of the run came in a Request: a run without one is
    /// decoded as if Requests did not exist.
    has_requests: bool,
}

impl<'buf> Run<'buf> {
    pub(crate) fn new() -> Self {
        Run {
            recipient: 0,
            type_id: 0,
            serializer: SerializerId(0),
            len: 0,
            payloads: [&[]; RUN_CAP],
            replies: [0; RUN_CAP],
            has_requests: false,
        }
    }

    /// Adds `m` to the run, first delivering what the run holds if `m`
    /// does not continue it or the run is full. `to` makes what the run
    /// is delivered with, only when it is: most messages continue a run.
    #[inline]
    pub(crate) fn push<'d, C: InboundContext>(
        &mut self,
        m: UserMessage<'buf>,
        to: impl FnOnce() -> Deliver<'d, C>,
    ) {
        self.push_with(m.header, m.payload, 0, to)
    }

    /// Adds a request to the run: a message that carries its reply
    /// handle's correlation id. Requests and plain messages to one actor
    /// share runs.
    #[inline]
    pub(crate) fn push_request<'d, C: InboundContext>(
        &mut self,
        r: Request<'buf>,
        to: impl FnOnce() -> Deliver<'d, C>,
    ) {
        let m = r.message;
        self.push_with(m.header, m.payload, r.correlation, to);
    }

    /// Adds a payload with the reply handle's correlation id of the
    /// Request it came in (never 0), or 0 for a plain message.
    #[inline]
    fn push_with<'d, C: InboundContext>(
        &mut self,
        h: MessageHeader,
        payload: &'buf [u8],
        reply: u64,
        to: impl FnOnce() -> Deliver<'d, C>,
    ) {
        let continues = self.len > 0
            && self.recipient == h.recipient.get()
            && self.type_id == h.type_id
            && self.serializer == h.serializer;
        if !continues || self.len == RUN_CAP {
            if self.len > 0 {
                self.flush(&mut to());
            }
            self.start(&h);
        }
        if reply != 0 && !self.has_requests {
            self.replies[..self.len].fill(0);
            self.has_requests = true;
        }
        self.append(payload, reply);
    }

    /// Takes the frames at the front of `frames` that continue the run:
    /// user messages with its recipient, serializer and type (the sender
    /// does not matter, as in [`Run::push`]), while it has room; answers
    /// how many. The first other frame (a bad one included) is left where
    /// it is, for the pass. Each header's bytes are compared with the
    /// run's rather than decoded: a recipient equal to the run's is not 0,
    /// so each header taken is one `push` would have accepted.
    #[inline]
    pub(crate) fn take_following(&mut self, frames: &mut Frames<'buf>) -> u64 {
        let start = self.len;
        if start == 0 {
            return 0;
        }
        let key = (self.recipient, self.serializer.0, self.type_id);
        let mut len = start;
        while len < RUN_CAP {
            let mut ahead = frames.clone();
            let Some(Ok(frame)) = ahead.next_raw() else {
                break;
            };
            if frame.kind != PduKind::UserMessage as u8 {
                break;
            }
            let Some((head, payload)) = frame.body.split_first_chunk::<MESSAGE_HEADER_LEN>() else {
                break;
            };
            let [r0, r1, r2, r3, _, _, _, _, z0, z1, t0, t1, t2, t3] = *head;
            let of_head = (
                u32::from_le_bytes([r0, r1, r2, r3]),
                u16::from_le_bytes([z0, z1]),
                u32::from_le_bytes([t0, t1, t2, t3]),
            );
            if of_head != key {
                break;
            }
            self.payloads[len] = payload;
            len += 1;
            *frames = ahead;
        }
        if self.has_requests {
            self.replies[start..len].fill(0);
        }
        self.len = len;
        (len - start) as u64
    }

    /// Starts a new run with `h`'s recipient and type; the run is empty.
    #[inline]
    fn start(&mut self, h: &MessageHeader) {
        self.recipient = h.recipient.get();
        self.type_id = h.type_id;
        self.serializer = h.serializer;
    }

    /// Adds a payload; the run has room. `reply` is stored only once the
    /// run holds a Request ([`Run::push_with`] zeroes the slots of the
    /// plain messages before it), so a run of plain messages stores none.
    #[inline]
    fn append(&mut self, payload: &'buf [u8], reply: u64) {
        let at = self.len;
        self.payloads[at] = payload;
        if self.has_requests {
            self.replies[at] = reply;
        }
        self.len = at + 1;
    }

    /// A run of one message, for one that is delivered alone.
    fn alone(m: UserMessage<'buf>, reply: u64) -> Self {
        let mut run = Run::new();
        run.start(&m.header);
        run.has_requests = reply != 0;
        run.append(m.payload, reply);
        run
    }

    /// Delivers what the run holds, and empties it.
    pub(crate) fn flush(&mut self, to: &mut Deliver<'_, impl InboundContext>) {
        if self.len == 0 {
            return;
        }
        let payloads = Payloads {
            bytes: &self.payloads[..self.len],
            replies: self.has_requests.then(|| &self.replies[..self.len]),
        };
        self.len = 0;
        self.has_requests = false;
        to.run(self.type_id, self.serializer, self.recipient, payloads);
    }
}

/// What a run is delivered with: the connection's state.
pub(crate) struct Deliver<'a, C: InboundContext> {
    pub(crate) core: &'a C,
    /// Mutable only to rebind a uid-less ref whose actor is gone
    /// (`ImportTable::rebind`).
    pub(crate) imports: &'a mut ImportTable,
    pub(crate) types: &'a mut TypeCache,
    pub(crate) peer: &'a Address,
    /// The peer's root path, for the paths of its requests' reply handles.
    pub(crate) root: &'a ActorPath,
    /// The route its requests' reply handles answer through; made when
    /// its first Request arrives (runs without one never need it).
    pub(crate) reply_route: &'a Option<Arc<dyn RemoteRoute>>,
}

impl<C: InboundContext> Deliver<'_, C> {
    fn run(&mut self, type_id: u32, serializer: SerializerId, recipient: u32, payloads: Payloads) {
        let (core, peer) = (self.core, self.peer);
        let Some(cached) = self.types.find(core, type_id) else {
            for _ in payloads.bytes {
                core.undeliverable(peer, Undeliverable::UnknownType { type_id });
            }
            return;
        };
        let ty = cached.ty;
        let mut failed = |e: DeliverError| {
            core.undeliverable(peer, not_delivered(ty.name, type_id, e));
        };
        if serializer != ty.serializer {
            for _ in payloads.bytes {
                failed(DeliverError::WrongSerializer(serializer));
            }
            return;
        }
        let (root, route) = (self.root, self.reply_route);
        let handle_of = |correlation| {
            let route = route.as_ref()?.clone();
            Some(RemoteRef::reply_handle(root, correlation, core.system().clone(), route).to_any())
        };
        let stale = (ty.deliver_run)(
            payloads,
            self.imports,
            recipient,
            &mut cached.stage,
            &mut failed,
            &handle_of,
            true,
        );
        if stale.is_err() {
            // Whoever lives at the path now gets the run; with nobody
            // there, it goes where it went before: dead letters.
            self.imports.rebind(recipient, core.system());
            let _ = (ty.deliver_run)(
                payloads,
                self.imports,
                recipient,
                &mut cached.stage,
                &mut failed,
                &handle_of,
                false,
            );
        }
    }
}

impl<'buf, C: InboundContext> Deliver<'_, C> {
    /// Delivers one message alone (a run of one).
    pub(crate) fn one(&mut self, m: UserMessage<'buf>) {
        Run::alone(m, 0).flush(self);
    }

    /// Delivers one request alone.
    pub(crate) fn request(&mut self, r: Request<'buf>) {
        Run::alone(r.message, r.correlation).flush(self);
    }

    /// Delivers a message that came with its sender's trace context. Never
    /// part of a run: traced messages are delivered one by one, each with
    /// its own parent. A context W3C calls invalid is ignored, as the
    /// recommendation says, and the message delivered without it.
    pub(crate) fn traced(&mut self, t: TracedUserMessage<'buf>) {
        if !t.context.is_valid() {
            tracing::debug!(peer = %self.peer, "invalid trace context (all-zero id) ignored");
            return self.one(t.message);
        }
        let (core, peer) = (self.core, self.peer);
        let h = &t.message.header;
        let type_id = h.type_id;
        let Some(cached) = self.types.find(core, type_id) else {
            return core.undeliverable(peer, Undeliverable::UnknownType { type_id });
        };
        let ty = cached.ty;
        if self.imports.is_stale(h.recipient.get()) {
            self.imports.rebind(h.recipient.get(), core.system());
        }
        let outcome = if h.serializer != ty.serializer {
            Err(DeliverError::WrongSerializer(h.serializer))
        } else {
            (ty.deliver_traced)(
                t.message.payload,
                self.imports,
                h.recipient.get(),
                t.context,
            )
        };
        if let Err(e) = outcome {
            core.undeliverable(peer, not_delivered(ty.name, type_id, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, BytesMut};

    use super::*;
    use crate::transport::core::RemotingCore;
    use crate::wire::{Decoder, DecoderConfig, Encoder, Lane, RefId};

    fn header(recipient: u32, serializer: u16, type_id: u32) -> MessageHeader {
        MessageHeader {
            recipient: RefId::new(recipient).unwrap(),
            sender: None,
            serializer: SerializerId(serializer),
            type_id,
        }
    }

    fn message(buf: &mut BytesMut, h: &MessageHeader, payload: u8) {
        Encoder::for_lane(Lane::Ordinary)
            .user_message_with(buf, h, |b| {
                b.put_u8(payload);
                Ok(())
            })
            .unwrap();
    }

    fn never<'d>() -> Deliver<'d, RemotingCore> {
        unreachable!("the run is not delivered in these tests")
    }

    fn payloads(run: &Run<'_>) -> Vec<u8> {
        run.payloads[..run.len].iter().map(|p| p[0]).collect()
    }

    #[test]
    fn a_run_takes_the_following_frames_with_its_recipient_serializer_and_type() {
        let h = header(7, 2, 9);
        let mut buf = BytesMut::new();
        message(&mut buf, &h, 2);
        let other_sender = MessageHeader {
            sender: RefId::new(5),
            ..h
        };
        message(&mut buf, &other_sender, 3);
        let stop = buf.len();
        message(&mut buf, &header(7, 3, 9), 4);
        message(&mut buf, &h, 5);
        let others = [header(8, 2, 9), header(7, 2, 10)].map(|other| {
            let mut buf = BytesMut::new();
            message(&mut buf, &other, 6);
            buf
        });
        // A bad frame is left for the pass, which reports it.
        let mut bad = BytesMut::new();
        bad.put_u32_le(3);
        bad.put_slice(&[PduKind::UserMessage as u8, 7, 0]);
        let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Ordinary));
        let mut frames = decoder.frames(&buf);
        let mut run = Run::new();
        assert_eq!(run.take_following(&mut frames), 0, "push starts a run");
        run.push(
            UserMessage {
                header: h,
                payload: &[1],
            },
            never,
        );
        assert_eq!(run.take_following(&mut frames), 2, "any sender");
        assert_eq!(payloads(&run), [1, 2, 3]);
        assert_eq!(frames.consumed(), stop, "another serializer is left");
        for other in &others {
            assert_eq!(run.take_following(&mut decoder.frames(other)), 0);
        }
        let mut frames = decoder.frames(&bad);
        assert_eq!(run.take_following(&mut frames), 0);
        assert_eq!(frames.consumed(), 0);
        assert!(!run.has_requests);
    }

    #[test]
    fn a_run_takes_no_more_than_its_cap() {
        let h = header(7, 2, 9);
        let mut buf = BytesMut::new();
        for n in 0..RUN_CAP as u8 + 1 {
            message(&mut buf, &h, n);
        }
        let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Ordinary));
        let mut frames = decoder.frames(&buf);
        let mut run = Run::new();
        run.push(
            UserMessage {
                header: h,
                payload: &[99],
            },
            never,
        );
        assert_eq!(run.take_following(&mut frames), RUN_CAP as u64 - 1);
        assert_eq!(run.len, RUN_CAP);
        assert!(frames.next_raw().is_some(), "the last one is left");
    }

    #[test]
    fn a_request_gives_the_plain_messages_around_it_in_its_run_no_reply_handle() {
        let h = header(7, 2, 9);
        let mut buf = BytesMut::new();
        message(&mut buf, &h, 2);
        let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Ordinary));
        let mut run = Run::new();
        run.push(
            UserMessage {
                header: h,
                payload: &[1],
            },
            never,
        );
        assert_eq!(run.take_following(&mut decoder.frames(&buf)), 1);
        let message = UserMessage {
            header: h,
            payload: &[3],
        };
        let request = Request {
            correlation: 41,
            message,
        };
        run.push_request(request, never);
        run.push(
            UserMessage {
                header: h,
                payload: &[4],
            },
            never,
        );
        assert_eq!(run.take_following(&mut decoder.frames(&buf)), 1);
        assert!(run.has_requests);
        assert_eq!(payloads(&run), [1, 2, 3, 4, 2]);
        assert_eq!(run.replies[..run.len], [0, 0, 41, 0, 0]);
    }
}
