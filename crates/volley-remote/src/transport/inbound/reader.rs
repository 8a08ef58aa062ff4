//! Reading an inbound connection: whole read buffers decoded in one pass,
//! each message delivered straight into its recipient's mailbox (no actor
//! hop per message: Akka.NET's reader went through one, and its latency
//! showed it).
//!
//! A [`Reader`] is one connection's state past its handshake. Each of its
//! steps does one thing: [`Reader::run`] reads until the connection ends;
//! a pass over one buffer (`frames.rs`) hands its frames to a sink
//! (`sorting.rs`), which gathers user messages into runs
//! (`delivery.rs`) and hands every other frame to its control handler
//! (`control_frames.rs`); after each buffer the reader acknowledges system
//! messages and notes traffic for idleness. A read goes down that chain
//! and never back into a file it has left.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::AsyncRead;

use volley::{ActorPath, AnyRef};

use crate::transport::control::reply_handles::NotTaken;
use crate::transport::control::system_messages::SystemMessages;
use crate::transport::inbound::accept::InboundError;
use crate::transport::inbound::delivery::TypeCache;
use crate::transport::inbound::ends::InboundEnds;
use crate::transport::inbound::ends::{count_what_is_left, Membership};
use crate::transport::inbound::frames::{read_frames, Pass, PassError};
use crate::transport::inbound::guard::IdleWatch;
use crate::transport::inbound::peer::{Peer, ReaderGuard};
use crate::transport::inbound::sorting::Sorting;
use crate::transport::inbound::InboundContext;
use crate::transport::refs::tables::ImportTable;
use crate::wire::{Address, Decoder, DecoderConfig, Lane};

/// Read buffer size: large enough that one read usually carries hundreds of
/// small frames.
pub(crate) const READ_CHUNK: usize = 256 * 1024;

/// One inbound connection's state, from its handshake to its end.
pub(crate) struct Reader<'c, C: InboundContext> {
    pub(super) core: &'c Arc<C>,
    lane: Lane,
    /// Refs the peer declared on this connection.
    pub(super) imports: ImportTable,
    pub(super) types: TypeCache,
    pub(super) peer: Peer,
    /// Counts the connection among its incarnation's while it lives.
    _counted: Option<ReaderGuard<'c, C>>,
    metered: bool,
    /// The handles a run of replies took, kept between runs (empty) so
    /// that a run allocates nothing.
    pub(super) taken: Vec<Result<AnyRef, NotTaken>>,
}

impl<'c, C: InboundContext> Reader<'c, C> {
    /// Reads the connection from `peer` (incarnation `uid`) on `lane`
    /// until it ends; `buf` holds what was read past the handshake.
    pub(crate) async fn run(
        core: &'c Arc<C>,
        lane: Lane,
        peer: Address,
        uid: u64,
        mut stream: impl AsyncRead + Unpin,
        mut buf: BytesMut,
    ) -> Result<(), InboundError> {
        let (mut reader, decoder) = Reader::new(core, lane, peer, uid)?;
        // Ended, with a read that waits woken, once the incarnation is
        // gone (`ends.rs`).
        let life = core.join_inbound(&reader.peer.address, uid);
        let mut ended = std::pin::pin!(life.ended());
        let mut idle = IdleWatch::new(&reader.peer.address, uid);
        // Bytes still to throw away of a large-lane frame over this node's
        // `max_frame_size` (the peer's may be larger).
        let mut skip = 0usize;
        loop {
            // Before anything of this read is decoded: a gone
            // incarnation's bytes are counted, never delivered.
            if life.has_ended() {
                let lost = count_what_is_left(&mut stream, &mut buf, &decoder, skip).await;
                core.lost_with_gone_incarnation(&reader.peer.address, uid, lost);
                return Ok(());
            }
            if reader.peer.association.is_none() {
                reader.adopt_association();
            }
            let n = skip.min(buf.len());
            buf.advance(n);
            skip -= n;
            let pass = reader.read_buffer(&decoder, &buf, &life)?;
            buf.advance(pass.consumed);
            // What is left of an earlier skip was the whole buffer: a
            // pass that skips starts one.
            skip += pass.skip;
            if pass.stopped || life.has_ended() {
                // The rest is counted at the top of the loop.
                continue;
            }
            reader.after_buffer();
            make_room(&mut buf, &pass);
            let read = tokio::select! {
                biased;
                read = idle.read_buf(&mut stream, &mut buf) => read?,
                // Polled only while the read waits: the top of the loop
                // ends the connection.
                () = &mut ended => continue,
            };
            reader.count_read(read, pass.frames);
            if read == 0 {
                return match buf.is_empty() {
                    true => Ok(()),
                    false => Err(InboundError::ClosedInFrame(reader.peer.address)),
                };
            }
        }
    }

    /// The reader of a connection just accepted, and its decoder.
    fn new(
        core: &'c Arc<C>,
        lane: Lane,
        address: Address,
        uid: u64,
    ) -> Result<(Self, Decoder), InboundError> {
        let mut config = DecoderConfig::for_lane(lane);
        if lane == Lane::Large {
            config.max_frame_len = core.settings().max_frame_size;
        }
        let association = core.associations().find(&address);
        let root = ActorPath::parse(&format!("{address}/"))
            .map_err(|_| InboundError::BadPeerAddress(address.clone()))?;
        // Only a node this node dials back is judged: a claim it does not
        // dial back must not take one of the detectors' slots.
        let detector = association
            .as_ref()
            .and_then(|_| core.reachability().peer(&address));
        let counted = association
            .clone()
            .map(|a| ReaderGuard::new(&**core, a, uid));
        let reader = Reader {
            core,
            lane,
            imports: ImportTable::new(&core.settings().limits, core.import_meter()),
            types: TypeCache::default(),
            peer: Peer::new(address, uid, lane, association, root, detector),
            _counted: counted,
            metered: core.associations().is_metered(),
            taken: Vec::new(),
        };
        Ok((reader, Decoder::new(config)))
    }

    /// Takes up an association made for the peer after this connection
    /// started (its address answered a later check,
    /// `admission/recheck.rs`): from then on the peer is judged, acked
    /// and answered as any node this one dials back.
    fn adopt_association(&mut self) {
        let Some(association) = self.core.associations().find(&self.peer.address) else {
            return;
        };
        self.peer.detector = self.core.reachability().peer(&self.peer.address);
        self._counted = Some(ReaderGuard::new(
            &**self.core,
            association.clone(),
            self.peer.uid,
        ));
        self.peer.association = Some(association);
        // Made to refuse while there was no way back.
        self.peer.reply_route = None;
    }

    /// One pass over the whole frames of `buf`.
    #[inline]
    fn read_buffer(
        &mut self,
        decoder: &Decoder,
        buf: &[u8],
        life: &Membership<'c>,
    ) -> Result<Pass, InboundError> {
        let lane = self.lane;
        let mut sorting = Sorting::new(self, life);
        read_frames(decoder, lane, buf, &mut sorting).map_err(|e| match e {
            PassError::BadFrame(error) => InboundError::Protocol {
                peer: self.peer.address.clone(),
                error,
            },
            PassError::Control(e) => e,
        })
    }

    /// After a whole buffer: the system-message ack it earned, and traffic
    /// for idleness (`idle/`): anything on the user lanes, on the
    /// control lane anything but heartbeats.
    fn after_buffer(&mut self) {
        let Some(association) = self.peer.association.as_deref() else {
            return;
        };
        if let Some(ack) = self.peer.ack_due.take() {
            self.core.send_system_ack(association, self.peer.uid, ack);
        }
        if self.lane != Lane::Control || std::mem::take(&mut self.peer.active) {
            association.heard(&**self.core);
        }
    }

    /// Counts a read, and the frames decoded from the buffer before it,
    /// in the association's metrics (per read, not per frame).
    fn count_read(&self, read: usize, frames: u64) {
        if !self.metered {
            return;
        }
        if let Some(association) = self.peer.association() {
            association
                .bytes_in
                .fetch_add(read as u64, Ordering::Relaxed);
            association.frames_in.fetch_add(frames, Ordering::Relaxed);
        }
    }
}

/// Room for the rest of a frame that is partly read, and at least a
/// quarter of a chunk, so that the next read is not a short one.
fn make_room(buf: &mut BytesMut, pass: &Pass) {
    let room = pass.pending_frame_len.unwrap_or(0).max(READ_CHUNK / 4);
    if buf.capacity() - buf.len() < room {
        buf.reserve(room.max(READ_CHUNK));
    }
}
