//! The sink of one pass over a read buffer: user messages are gathered
//! into runs for delivery (`delivery.rs`), replies to this node's asks
//! into runs of their own (`replies.rs`), every other frame goes to the
//! control handler (`control_frames.rs`). At most one of the two runs
//! holds anything: starting one delivers the other, so frames are
//! delivered in the order they came. Kept apart from the reader so
//! that a read goes one way, reader → frames → sorting → delivery or
//! control, and never back into a file it has left.

use crate::transport::inbound::accept::InboundError;
use crate::transport::inbound::delivery::Run;
use crate::transport::inbound::ends::Membership;
use crate::transport::inbound::frames::{Flow, FrameSink};
use crate::transport::inbound::reader::Reader;
use crate::transport::inbound::replies::ReplyRun;
use crate::transport::inbound::InboundContext;
use crate::transport::node::Undeliverable;
use crate::wire::{Frames, Pdu, Reply, Request, TracedUserMessage, UserMessage};

/// One pass's sink: the reader, and the run being gathered from the
/// buffer.
pub(super) struct Sorting<'r, 'c, 'buf, C: InboundContext> {
    reader: &'r mut Reader<'c, C>,
    run: Run<'buf>,
    replies: ReplyRun<'buf>,
    life: &'r Membership<'c>,
}

impl<'r, 'c, C: InboundContext> Sorting<'r, 'c, '_, C> {
    /// A sink for one pass of `reader`, while `life` is its incarnation's.
    #[inline]
    pub(super) fn new(reader: &'r mut Reader<'c, C>, life: &'r Membership<'c>) -> Self {
        Sorting {
            reader,
            run: Run::new(),
            replies: ReplyRun::new(),
            life,
        }
    }
}

impl<C: InboundContext> Sorting<'_, '_, '_, C> {
    /// Delivers the replies gathered so far, if any.
    #[inline]
    fn end_replies(&mut self) {
        if !self.replies.is_empty() {
            self.reader.replies(&mut self.replies);
        }
    }
}

impl<'buf, C: InboundContext> FrameSink<'buf> for Sorting<'_, '_, 'buf, C> {
    type Error = InboundError;

    #[inline]
    fn message(&mut self, m: UserMessage<'buf>) {
        self.end_replies();
        let reader = &mut *self.reader;
        self.run.push(m, || reader.deliver());
    }

    #[inline]
    fn continue_run(&mut self, frames: &mut Frames<'buf>) -> u64 {
        self.run.take_following(frames)
    }

    #[inline]
    fn request(&mut self, r: Request<'buf>) {
        self.end_replies();
        self.reader.peer.make_reply_route(self.reader.core);
        let reader = &mut *self.reader;
        self.run.push_request(r, || reader.deliver());
    }

    #[inline]
    fn reply(&mut self, r: Reply<'buf>) {
        self.run.flush(&mut self.reader.deliver());
        if !self.replies.takes(&r) {
            self.reader.replies(&mut self.replies);
        }
        self.replies.push(r);
    }

    #[inline]
    fn end_run(&mut self) {
        self.run.flush(&mut self.reader.deliver());
        self.end_replies();
    }

    fn traced(&mut self, t: TracedUserMessage<'buf>) {
        self.reader.deliver().traced(t);
    }

    fn control(&mut self, pdu: Pdu<'buf>) -> Result<Flow, InboundError> {
        self.reader.control(pdu)?;
        // It may have ended the incarnation (its peer's Disassociate):
        // what follows it is not delivered.
        Ok(match self.life.has_ended() {
            true => Flow::Stop,
            false => Flow::Go,
        })
    }

    fn oversized(&mut self, len: usize, max: usize) {
        let why = Undeliverable::TooLarge { len, max };
        self.reader
            .core
            .undeliverable(&self.reader.peer.address, why);
    }
}
