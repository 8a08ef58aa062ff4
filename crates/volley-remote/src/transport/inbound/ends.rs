//! The end of a gone incarnation's inbound connections.
//!
//! Once an incarnation of a peer is gone (quarantined, given up, replaced
//! by a restart), nothing it sent may reach an actor here. Every inbound
//! connection joins its incarnation's [`Life`] when it starts serving
//! (`InboundEnds::join_inbound`); the verdict ends that life
//! (`InboundEnds::end_inbound`) before any event about it is published.
//! That wakes a reader blocked in its read at once, instead of at the
//! peer's next bytes, which it would otherwise have delivered.
//!
//! A reader looks at the flag once per read buffer, before it decodes any
//! of it, and after each frame that is not a user message (the peer's own
//! `Disassociate(Quarantined)` ends the life on the spot, and what follows
//! it in the buffer must not be delivered). A buffer whose delivery began
//! before the verdict is delivered to its end: it was read before.
//!
//! What an ended connection still holds is read without waiting for more,
//! up to [`DRAIN_LIMIT`] bytes, and every message in it (user message,
//! traced message, request, reply) is counted as a dead letter; then the
//! connection closes. Bytes the socket receives after that, or holds
//! beyond the limit, go with the connection uncounted: at most one socket
//! receive buffer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Notify;
use volley::DeadLetterReason;

use crate::transport::inbound::InboundContext;
use crate::transport::support::lock;
use crate::transport::support::log_limited;
use crate::wire::{Address, Decoder, PduKind};

/// Most bytes an ended connection reads to count what they carry: a peer
/// that keeps writing cannot hold its reader here.
pub(crate) const DRAIN_LIMIT: usize = 1024 * 1024;

/// One incarnation's inbound connections: ended together, once.
#[derive(Default)]
struct Life {
    ended: AtomicBool,
    wake: Notify,
}

impl Life {
    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }
}

/// An incarnation: its node's address and its uid.
type Incarnation = (Address, u64);

/// The lives of the incarnations with inbound connections open: by address
/// and uid, since a connection need not have an association (a peer this
/// node does not dial back), and one may be made for the address later.
#[derive(Default)]
pub(crate) struct InboundLives {
    /// Each life with the number of connections in it.
    lives: Mutex<HashMap<Incarnation, (Arc<Life>, usize)>>,
}

impl InboundLives {
    fn join(&self, peer: &Address, uid: u64) -> Membership<'_> {
        let mut lives = lock(&self.lives);
        let (life, members) = lives.entry((peer.clone(), uid)).or_default();
        *members += 1;
        Membership {
            lives: self,
            key: (peer.clone(), uid),
            life: life.clone(),
        }
    }

    fn end(&self, peer: &Address, uid: u64) {
        // A connection that joins later finds the incarnation gone by its
        // association's record (`join_inbound`).
        if let Some((life, _)) = lock(&self.lives).get(&(peer.clone(), uid)) {
            life.end();
        }
    }
}

/// One inbound connection's place in its incarnation's life, held while it
/// serves.
pub(crate) struct Membership<'c> {
    lives: &'c InboundLives,
    key: Incarnation,
    life: Arc<Life>,
}

impl Membership<'_> {
    /// The incarnation is gone: nothing more of this connection may be
    /// delivered. One load; the read loop asks once per read buffer.
    #[inline]
    pub(crate) fn has_ended(&self) -> bool {
        self.life.ended.load(Ordering::Acquire)
    }

    /// Completes once the incarnation is gone.
    pub(crate) async fn ended(&self) {
        loop {
            let notified = self.life.wake.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the flag is read, so an end in between
            // still wakes it.
            notified.as_mut().enable();
            if self.has_ended() {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Membership<'_> {
    fn drop(&mut self) {
        let mut lives = lock(&self.lives.lives);
        if let Some((_, members)) = lives.get_mut(&self.key) {
            *members -= 1;
            if *members == 0 {
                lives.remove(&self.key);
            }
        }
    }
}

/// The ends of inbound connections, for any node with an inbound
/// context.
pub(crate) trait InboundEnds: InboundContext {
    /// Joins an inbound connection from incarnation `uid` of `peer` to its
    /// incarnation's life; ended already if that incarnation is gone.
    fn join_inbound(&self, peer: &Address, uid: u64) -> Membership<'_> {
        let membership = self.inbound_lives().join(peer, uid);
        // Joined first, looked up second: a verdict in between ends the
        // life it finds, one before it is in the record read here.
        let gone = self
            .associations()
            .find(peer)
            .is_some_and(|a| lock(&a.control).dead.contains(&uid));
        if gone {
            membership.life.end();
        }
        membership
    }

    /// Incarnation `uid` of `peer` is gone: its inbound connections end
    /// at once, and deliver nothing more.
    fn end_inbound(&self, peer: &Address, uid: u64) {
        self.inbound_lives().end(peer, uid);
    }

    /// Counts the messages an ended connection from incarnation `uid` of
    /// `peer` still held as dead letters.
    fn lost_with_gone_incarnation(&self, peer: &Address, uid: u64, messages: u64) {
        for _ in 0..messages {
            self.count_dead_letter(peer, DeadLetterReason::Undeliverable);
        }
        if messages > 0 {
            log_limited!(info, %peer, uid, messages, "closed a connection from an incarnation that is gone; the messages it still held are dead letters");
        } else {
            tracing::debug!(%peer, uid, "closed a connection from an incarnation that is gone");
        }
    }
}

impl<C: InboundContext> InboundEnds for C {}

/// The messages left in `buf` (after `skip` bytes of a frame being thrown
/// away) and in what `stream` has ready now, up to [`DRAIN_LIMIT`] bytes
/// more; reads nothing that is not there yet.
pub(crate) async fn count_what_is_left(
    stream: &mut (impl AsyncRead + Unpin),
    buf: &mut BytesMut,
    decoder: &Decoder,
    mut skip: usize,
) -> u64 {
    let mut messages = 0;
    let mut drained = 0;
    loop {
        let n = skip.min(buf.len());
        buf.advance(n);
        skip -= n;
        let (found, consumed, trusted) = count_frames(decoder, buf);
        messages += found;
        buf.advance(consumed);
        if !trusted {
            // Past a frame that does not decode, nothing can be counted.
            return messages;
        }
        if drained >= DRAIN_LIMIT {
            break;
        }
        if buf.capacity() - buf.len() < DRAIN_LIMIT / 4 {
            buf.reserve(DRAIN_LIMIT / 4);
        }
        match read_ready(stream, buf).await {
            Some(read) if read > 0 => drained += read,
            _ => break,
        }
    }
    // A frame cut by the close is a message lost too, if its kind says so.
    let cut = skip == 0 && buf.get(4).is_some_and(|&kind| is_message(kind));
    messages + u64::from(cut)
}

/// The messages among the complete frames of `buf`, the bytes they take,
/// and whether every frame decoded.
fn count_frames(decoder: &Decoder, buf: &[u8]) -> (u64, usize, bool) {
    let mut frames = decoder.frames(buf);
    let mut messages = 0;
    while let Some(frame) = frames.next_raw() {
        match frame {
            Ok(frame) => messages += u64::from(is_message(frame.kind)),
            Err(_) => return (messages, frames.consumed(), false),
        }
    }
    (messages, frames.consumed(), true)
}

/// Whether a frame of `kind` carries a message for an actor or an ask.
fn is_message(kind: u8) -> bool {
    [
        PduKind::UserMessage,
        PduKind::TracedUserMessage,
        PduKind::Request,
        PduKind::Reply,
    ]
    .iter()
    .any(|k| *k as u8 == kind)
}

/// One read of what `stream` has ready; `None` if nothing is (or it
/// failed), without waiting.
async fn read_ready(stream: &mut (impl AsyncRead + Unpin), buf: &mut BytesMut) -> Option<usize> {
    let mut read = std::pin::pin!(stream.read_buf(buf));
    std::future::poll_fn(|cx| match read.as_mut().poll(cx) {
        Poll::Ready(Ok(n)) => Poll::Ready(Some(n)),
        Poll::Ready(Err(_)) | Poll::Pending => Poll::Ready(None),
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{DecoderConfig, Encoder, Lane, Pdu};

    fn decoder() -> Decoder {
        Decoder::new(DecoderConfig::for_lane(Lane::Ordinary))
    }

    /// `n` user messages then a heartbeat, encoded.
    fn frames(n: usize) -> BytesMut {
        let mut out = BytesMut::new();
        let encoder = Encoder::for_lane(Lane::Ordinary);
        for _ in 0..n {
            encoder
                .encode(&Pdu::UserMessage(user_message()), &mut out)
                .unwrap();
        }
        Encoder::heartbeat(&mut out);
        out
    }

    fn user_message() -> crate::wire::UserMessage<'static> {
        crate::wire::UserMessage {
            header: crate::wire::MessageHeader {
                recipient: crate::wire::RefId::new(1).unwrap(),
                sender: None,
                type_id: 7,
                serializer: crate::serialization::SerializerId(1),
            },
            payload: b"payload",
        }
    }

    #[tokio::test]
    async fn what_the_buffer_and_the_socket_hold_is_counted_without_waiting() {
        let (mut near, mut far) = tokio::io::duplex(1 << 20);
        let mut buf = frames(3);
        // Two more in the socket, and a third cut by the close.
        let mut more = frames(3);
        more.truncate(more.len() - 1 - 3);
        tokio::io::AsyncWriteExt::write_all(&mut far, &more)
            .await
            .unwrap();
        let counted = count_what_is_left(&mut near, &mut buf, &decoder(), 0).await;
        assert_eq!(counted, 6);
        // The far end is still open: it was not waited for.
        drop(far);
    }

    #[tokio::test]
    async fn a_frame_being_skipped_is_not_counted_again() {
        let (mut near, _far) = tokio::io::duplex(1024);
        let mut buf = BytesMut::from(&[0u8; 10][..]);
        buf.extend_from_slice(&frames(2));
        assert_eq!(
            count_what_is_left(&mut near, &mut buf, &decoder(), 10).await,
            2
        );
    }

    #[tokio::test]
    async fn an_ended_life_wakes_its_waiters_and_later_joiners_see_it() {
        let lives = InboundLives::default();
        let peer: Address = "volley://p@127.0.0.1:1".parse().unwrap();
        let first = lives.join(&peer, 9);
        let other = lives.join(&peer, 10);
        {
            let mut waiting = std::pin::pin!(first.ended());
            let polled = std::future::poll_fn(|cx| Poll::Ready(waiting.as_mut().poll(cx))).await;
            assert!(polled.is_pending(), "it waits while the incarnation lives");
            lives.end(&peer, 9);
            tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
                .await
                .expect("woken at once");
        }
        assert!(first.has_ended());
        assert!(!other.has_ended(), "another incarnation lives on");
        let second = lives.join(&peer, 9);
        assert!(second.has_ended(), "the same life while a member holds it");
        drop((first, second, other));
        assert!(lock(&lives.lives).is_empty(), "forgotten with its members");
    }
}
