//! The sink of one pass over a read buffer: user messages are gathered
//! into runs for delivery (`delivery.rs`), every other frame goes to the
//! control handler (`control_frames.rs`). Kept apart from the reader so
//! that a read goes one way, reader → frames → sorting → delivery or
//! control, and never back into a file it has left.

use crate::transport::inbound::accept::InboundError;
use crate::transport::inbound::delivery::Run;
use crate::transport::inbound::ends::Membership;
use crate::transport::inbound::frames::{Flow, FrameSink};
use crate::transport::inbound::reader::Reader;
use crate::transport::inbound::InboundContext;
use crate::transport::node::Undeliverable;
use crate::wire::{Pdu, Request, TracedUserMessage, UserMessage};

/// One pass's sink: the reader, and the run being gathered from the
/// buffer.
pub(super) struct Sorting<'r, 'c, 'buf, C: InboundContext> {
    reader: &'r mut Reader<'c, C>,
    run: Run<'buf>,
    life: &'r Membership<'c>,
}

impl<'r, 'c, C: InboundContext> Sorting<'r, 'c, '_, C> {
    /// A sink for one pass of `reader`, while `life` is its incarnation's.
    #[inline]
    pub(super) fn new(reader: &'r mut Reader<'c, C>, life: &'r Membership<'c>) -> Self {
        Sorting {
            reader,
            run: Run::new(),
            life,
        }
    }
}

impl<'buf, C: InboundContext> FrameSink<'buf> for Sorting<'_, '_, 'buf, C> {
    type Error = InboundError;

    #[inline]
    fn message(&mut self, m: UserMessage<'buf>) {
        let reader = &mut *self.reader;
        self.run.push(m, || reader.deliver());
    }

    #[inline]
    fn request(&mut self, r: Request<'buf>) {
        self.reader.peer.make_reply_route(self.reader.core);
        let reader = &mut *self.reader;
        self.run.push_request(r, || reader.deliver());
    }

    #[inline]
    fn end_run(&mut self) {
        self.run.flush(&mut self.reader.deliver());
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
