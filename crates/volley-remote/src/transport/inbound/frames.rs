//! One pass over a read buffer: which frame goes where, and in what order.
//!
//! The reader decodes whole read buffers. This pass only sorts their
//! frames. User messages and asks' requests join the current run, and
//! replies to this node's asks a run of their own; any other frame first
//! ends the run (a declaration may rebind an id the run
//! uses, a Disassociate may end the incarnation) and then goes to the
//! control handler; a message with a trace context is delivered alone,
//! after the run. A bad frame ends the pass once what came before it is
//! delivered: the stream cannot be trusted past it.
//!
//! The pass knows nothing of mailboxes, refs or the node: it hands frames
//! to a [`FrameSink`], so it is tested alone against a fake sink (below),
//! as Artery tests a stage against its `TestContext`.

use crate::wire::{
    DecodeError, Decoder, Frames, Lane, Pdu, Reply, Request, TracedUserMessage, UserMessage,
    LARGE_MAX_FRAME_LEN,
};

/// Where the frames of a read buffer go, in the order they came.
pub(crate) trait FrameSink<'buf> {
    /// Why the control handler may end the connection.
    type Error;

    /// A user message: joins the run.
    fn message(&mut self, m: UserMessage<'buf>);

    /// Right after [`FrameSink::message`]: takes the frames at the front
    /// of `frames` that continue the run that message joined (user
    /// messages with its recipient, serializer and type, while the run has
    /// room) and answers how many; the first other frame, a bad one
    /// included, is left for the pass. A check of each header's bytes
    /// against the run's, in a loop of its own, instead of the pass's
    /// decode and sorting per message.
    fn continue_run(&mut self, frames: &mut Frames<'buf>) -> u64;

    /// An ask's request: joins the run, with its reply handle.
    fn request(&mut self, r: Request<'buf>);

    /// A reply to one of this node's asks: joins the run of replies (a
    /// run holds either kind, never both).
    fn reply(&mut self, r: Reply<'buf>);

    /// Delivers the run gathered so far, if any.
    fn end_run(&mut self);

    /// A message with its sender's trace context: delivered alone.
    fn traced(&mut self, t: TracedUserMessage<'buf>);

    /// Any other frame, once the run before it is delivered.
    fn control(&mut self, pdu: Pdu<'buf>) -> Result<Flow, Self::Error>;

    /// A large-lane frame of `len` bytes over this node's `max`: that
    /// message is lost, not the connection and what follows it.
    fn oversized(&mut self, len: usize, max: usize);
}

/// Whether the pass goes on after a control frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Handle the next frame.
    Go,
    /// Nothing more of this connection is delivered (its incarnation
    /// ended): the pass stops right after the frame.
    Stop,
}

/// Where a pass ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Pass {
    /// Bytes of whole frames handled.
    pub(crate) consumed: usize,
    /// The length of the partial frame at the end of the buffer, if known.
    pub(crate) pending_frame_len: Option<usize>,
    /// Frames decoded, the bad or oversized one included.
    pub(crate) frames: u64,
    /// Bytes still to throw away past `consumed`: an oversized frame.
    pub(crate) skip: usize,
    /// A control frame said [`Flow::Stop`].
    pub(crate) stopped: bool,
}

/// Why a pass ended the connection.
#[derive(Debug)]
pub(crate) enum PassError<E> {
    /// A frame that breaks the protocol.
    BadFrame(DecodeError),
    /// The control handler's error.
    Control(E),
}

/// Sorts the whole frames of `buf` into `sink`. The run is delivered
/// before every other frame, before a bad frame ends the pass, before an
/// oversized frame is skipped and at the end of the buffer; never after a
/// [`Flow::Stop`] (nothing is gathered then).
#[inline]
pub(crate) fn read_frames<'buf, S: FrameSink<'buf>>(
    decoder: &Decoder,
    lane: Lane,
    buf: &'buf [u8],
    sink: &mut S,
) -> Result<Pass, PassError<S::Error>> {
    let mut frames = decoder.frames(buf);
    let mut pass = Pass::default();
    // The hot kinds are decoded by their own functions, never moved
    // around inside a `Pdu` (that move alone cost instructions per
    // message).
    while let Some(frame) = frames.next_raw() {
        pass.frames += 1;
        let frame = match frame {
            Ok(frame) => frame,
            Err(DecodeError::FrameTooLong { len, max })
                if lane == Lane::Large && len <= LARGE_MAX_FRAME_LEN as usize =>
            {
                sink.end_run();
                sink.oversized(len, max);
                pass.skip = 4 + len;
                break;
            }
            Err(e) => return Err(bad_frame(sink, e)),
        };
        if let Some(m) = frame.user_message() {
            match m {
                Ok(m) => {
                    sink.message(m);
                    pass.frames += sink.continue_run(&mut frames);
                }
                Err(e) => return Err(bad_frame(sink, e)),
            }
            continue;
        }
        if let Some(r) = frame.request() {
            match r {
                Ok(r) => sink.request(r),
                Err(e) => return Err(bad_frame(sink, e)),
            }
            continue;
        }
        if let Some(r) = frame.reply() {
            match r {
                Ok(r) => sink.reply(r),
                Err(e) => return Err(bad_frame(sink, e)),
            }
            continue;
        }
        let pdu = match frame.decode(decoder.config()) {
            Ok(pdu) => pdu,
            Err(e) => return Err(bad_frame(sink, e)),
        };
        sink.end_run();
        if let Pdu::TracedUserMessage(t) = pdu {
            sink.traced(t);
            continue;
        }
        if sink.control(pdu).map_err(PassError::Control)? == Flow::Stop {
            pass.stopped = true;
            break;
        }
    }
    if !pass.stopped {
        sink.end_run();
    }
    pass.consumed = frames.consumed();
    pass.pending_frame_len = frames.pending_frame_len();
    Ok(pass)
}

/// What came before a bad frame is delivered; the frame ends the pass.
#[cold]
fn bad_frame<'buf, S: FrameSink<'buf>>(sink: &mut S, e: DecodeError) -> PassError<S::Error> {
    sink.end_run();
    PassError::BadFrame(e)
}

#[cfg(test)]
mod tests;
