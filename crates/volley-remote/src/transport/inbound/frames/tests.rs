//! The sorting pass alone, against a sink that writes down what it got.

use bytes::{BufMut, BytesMut};

use super::*;
use crate::serialization::SerializerId;
use crate::wire::{
    Disassociate, DisassociateReason, Encoder, MessageHeader, RefDeclaration, RefId,
};

/// What the pass handed on, in order: each run as the payload bytes of
/// its messages (a request's as its correlation id plus 100).
#[derive(Default)]
struct Recorder {
    gathering: Vec<u64>,
    seen: Vec<String>,
    stop_on_disassociate: bool,
    /// The recipient of the last message gathered, if the last frame was
    /// one: a message for it takes the per-run path (`continue_run`).
    recipient: Option<u32>,
    /// Messages taken by `continue_run`.
    continued: usize,
}

impl<'buf> FrameSink<'buf> for Recorder {
    type Error = ();

    fn message(&mut self, m: UserMessage<'buf>) {
        self.recipient = Some(m.header.recipient.get());
        self.gathering.push(u64::from(m.payload[0]));
    }

    fn continue_run(&mut self, frames: &mut Frames<'buf>) -> u64 {
        let mut taken = 0;
        loop {
            let mut ahead = frames.clone();
            let Some(Ok(frame)) = ahead.next_raw() else {
                return taken;
            };
            let Some(Ok(m)) = frame.user_message() else {
                return taken;
            };
            if Some(m.header.recipient.get()) != self.recipient {
                return taken;
            }
            self.gathering.push(u64::from(m.payload[0]));
            self.continued += 1;
            taken += 1;
            *frames = ahead;
        }
    }

    fn request(&mut self, r: Request<'buf>) {
        self.recipient = None;
        self.gathering.push(r.correlation + 100);
    }

    fn reply(&mut self, r: Reply<'buf>) {
        self.recipient = None;
        self.gathering.push(r.correlation + 1000);
    }

    fn end_run(&mut self) {
        self.recipient = None;
        if !self.gathering.is_empty() {
            let run = std::mem::take(&mut self.gathering);
            self.seen.push(format!("run {run:?}"));
        }
    }

    fn traced(&mut self, t: TracedUserMessage<'buf>) {
        self.seen.push(format!("traced {}", t.message.payload[0]));
    }

    fn control(&mut self, pdu: Pdu<'buf>) -> Result<Flow, ()> {
        match pdu {
            Pdu::RefDeclaration(d) => self.seen.push(format!("declare {}", d.id.get())),
            Pdu::Disassociate(_) if self.stop_on_disassociate => {
                self.seen.push("disassociate".into());
                return Ok(Flow::Stop);
            }
            Pdu::SystemAck(_) => return Err(()),
            other => self.seen.push(format!("{:?}", other.kind())),
        }
        Ok(Flow::Go)
    }

    fn oversized(&mut self, len: usize, max: usize) {
        self.seen.push(format!("oversized {len} > {max}"));
    }
}

fn header(recipient: u32) -> MessageHeader {
    MessageHeader {
        recipient: RefId::new(recipient).unwrap(),
        sender: None,
        serializer: SerializerId::BINCODE,
        type_id: 1,
    }
}

fn message(buf: &mut BytesMut, recipient: u32, payload: u8) {
    Encoder::for_lane(Lane::Ordinary)
        .user_message_with(buf, &header(recipient), |b| {
            b.put_u8(payload);
            Ok(())
        })
        .unwrap();
}

fn request(buf: &mut BytesMut, correlation: u64) {
    Encoder::for_lane(Lane::Ordinary)
        .request_with(buf, correlation, &header(1), |b| {
            b.put_u8(0);
            Ok(())
        })
        .unwrap();
}

fn control(buf: &mut BytesMut, pdu: &Pdu<'_>) {
    Encoder::for_lane(Lane::Ordinary).encode(pdu, buf).unwrap();
}

fn declaration(id: u32) -> Pdu<'static> {
    Pdu::RefDeclaration(RefDeclaration {
        id: RefId::new(id).unwrap(),
        uid: 7,
        path: "volley://peer@127.0.0.1:2552/user/a",
    })
}

fn pass(lane: Lane, buf: &[u8], sink: &mut Recorder) -> Result<Pass, PassError<()>> {
    let decoder = Decoder::new(crate::wire::DecoderConfig::for_lane(lane));
    read_frames(&decoder, lane, buf, sink)
}

#[test]
fn a_run_is_delivered_before_any_other_frame_and_at_the_end_of_the_buffer() {
    let mut buf = BytesMut::new();
    message(&mut buf, 1, 1);
    request(&mut buf, 5);
    message(&mut buf, 1, 2);
    message(&mut buf, 1, 6);
    control(&mut buf, &declaration(9));
    message(&mut buf, 9, 3);
    buf.extend_from_slice(&crate::wire::HEARTBEAT_FRAME);
    message(&mut buf, 2, 4);
    let mut sink = Recorder::default();
    let done = pass(Lane::Ordinary, &buf, &mut sink).unwrap();
    assert_eq!(
        sink.seen,
        [
            "run [1, 105, 2, 6]",
            "declare 9",
            "run [3]",
            "Heartbeat",
            "run [4]"
        ]
    );
    assert_eq!(sink.continued, 1, "the 6 continued the run of the 2");
    assert_eq!(done.frames, 8);
    assert_eq!(done.consumed, buf.len());
    assert!(!done.stopped);
}

#[test]
fn a_traced_message_is_delivered_alone_after_the_run_before_it() {
    let mut buf = BytesMut::new();
    message(&mut buf, 1, 1);
    let context = volley::TraceParent {
        trace_id: [1; 16],
        parent_id: [2; 8],
        flags: 1,
    };
    Encoder::for_lane(Lane::Ordinary)
        .traced_user_message_with(&mut buf, &header(1), &context, |b| {
            b.put_u8(2);
            Ok(())
        })
        .unwrap();
    message(&mut buf, 1, 3);
    let mut sink = Recorder::default();
    pass(Lane::Ordinary, &buf, &mut sink).unwrap();
    assert_eq!(sink.seen, ["run [1]", "traced 2", "run [3]"]);
}

#[test]
fn what_came_before_a_bad_frame_is_delivered_and_the_frame_ends_the_pass() {
    let mut buf = BytesMut::new();
    message(&mut buf, 1, 1);
    // A frame of an unknown kind.
    buf.extend_from_slice(&[1, 0, 0, 0, 0xEE]);
    message(&mut buf, 1, 2);
    let mut sink = Recorder::default();
    let error = pass(Lane::Ordinary, &buf, &mut sink).unwrap_err();
    assert!(matches!(error, PassError::BadFrame(_)), "{error:?}");
    assert_eq!(sink.seen, ["run [1]"]);
}

#[test]
fn the_control_handlers_error_ends_the_pass_after_the_run_is_delivered() {
    let mut buf = BytesMut::new();
    message(&mut buf, 1, 1);
    control(&mut buf, &Pdu::SystemAck(crate::wire::SystemAck { ack: 1 }));
    message(&mut buf, 1, 2);
    let mut sink = Recorder::default();
    let error = pass(Lane::Ordinary, &buf, &mut sink).unwrap_err();
    assert!(matches!(error, PassError::Control(())), "{error:?}");
    assert_eq!(sink.seen, ["run [1]"]);
}

#[test]
fn nothing_after_a_stop_is_handed_on() {
    let mut buf = BytesMut::new();
    message(&mut buf, 1, 1);
    let goodbye = Pdu::Disassociate(Disassociate {
        reason: DisassociateReason::Shutdown,
        text: "",
    });
    control(&mut buf, &goodbye);
    let up_to_the_stop = buf.len();
    message(&mut buf, 1, 2);
    let mut sink = Recorder {
        stop_on_disassociate: true,
        ..Recorder::default()
    };
    let done = pass(Lane::Ordinary, &buf, &mut sink).unwrap();
    assert_eq!(sink.seen, ["run [1]", "disassociate"]);
    assert!(done.stopped);
    assert_eq!(done.consumed, up_to_the_stop, "the rest is left to count");
}

#[test]
fn an_oversized_large_lane_frame_is_skipped_and_elsewhere_is_a_bad_frame() {
    let mut buf = BytesMut::new();
    message(&mut buf, 1, 1);
    let before = buf.len();
    let len = crate::wire::SMALL_MAX_FRAME_LEN as usize + 1;
    // A header announcing a frame over the lane's limit: its body is
    // still on its way.
    buf.extend_from_slice(&(len as u32).to_le_bytes());
    buf.put_u8(crate::wire::PduKind::UserMessage as u8);
    let config = crate::wire::DecoderConfig {
        max_frame_len: crate::wire::SMALL_MAX_FRAME_LEN,
        ..Default::default()
    };
    let mut sink = Recorder::default();
    let done = read_frames(&Decoder::new(config), Lane::Large, &buf, &mut sink).unwrap();
    let max = crate::wire::SMALL_MAX_FRAME_LEN;
    assert_eq!(
        sink.seen,
        ["run [1]".to_string(), format!("oversized {len} > {max}")]
    );
    assert_eq!(done.consumed, before);
    assert_eq!(done.skip, 4 + len);

    let mut sink = Recorder::default();
    let error = read_frames(&Decoder::new(config), Lane::Ordinary, &buf, &mut sink).unwrap_err();
    assert!(matches!(
        error,
        PassError::BadFrame(DecodeError::FrameTooLong { .. })
    ));
    assert_eq!(sink.seen, ["run [1]"]);
}

#[test]
fn a_partial_frame_at_the_end_waits_for_the_next_read() {
    let mut buf = BytesMut::new();
    message(&mut buf, 1, 1);
    let whole = buf.len();
    message(&mut buf, 1, 2);
    let frame_len = buf.len() - whole - 4;
    buf.truncate(buf.len() - 1);
    let mut sink = Recorder::default();
    let done = pass(Lane::Ordinary, &buf, &mut sink).unwrap();
    assert_eq!(sink.seen, ["run [1]"]);
    assert_eq!(done.consumed, whole);
    assert_eq!(done.pending_frame_len, Some(frame_len + 4));
}

fn reply(buf: &mut BytesMut, correlation: u64) {
    Encoder::for_lane(Lane::Ordinary)
        .reply_with(buf, correlation, SerializerId::BINCODE, 1, |b| {
            b.put_u8(0);
            Ok(())
        })
        .unwrap();
}

#[test]
fn replies_are_handed_on_in_order_and_a_bad_one_ends_the_pass() {
    let mut buf = BytesMut::new();
    reply(&mut buf, 1);
    reply(&mut buf, 2);
    message(&mut buf, 1, 3);
    control(&mut buf, &declaration(9));
    reply(&mut buf, 4);
    // A Reply naming correlation 0, which no ask ever has.
    let bad_at = buf.len();
    reply(&mut buf, 5);
    buf[bad_at + 5..bad_at + 13].fill(0);
    reply(&mut buf, 6);
    let mut sink = Recorder::default();
    let error = pass(Lane::Ordinary, &buf, &mut sink).unwrap_err();
    assert!(matches!(error, PassError::BadFrame(_)), "{error:?}");
    assert_eq!(
        sink.seen,
        ["run [1001, 1002, 3]", "declare 9", "run [1004]"]
    );
}
