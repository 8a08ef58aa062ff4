//! The Request frame (`0x15`, docs/wire-protocol.md §5.5b) on bad input:
//! each malformed field its own error, a user message frame turned into a
//! Request in place, and the read loop's raw frame split.

use bytes::BytesMut;
use volley_remote::serialization::SerializerId;
use volley_remote::wire::*;

use crate::wire_frames;
use wire_frames::{decode_one, frame, user_body};

fn request_body(correlation: u64, recipient: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = correlation.to_le_bytes().to_vec();
    b.extend(user_body(recipient, payload));
    b
}

#[test]
fn bad_requests() {
    const KIND: PduKind = PduKind::Request;
    for payload in [&b""[..], b"x", &[0u8; 100]] {
        assert_eq!(
            decode_one(&frame(0x15, &request_body(9, 3, payload))),
            Ok(Some(Pdu::Request(Request {
                correlation: 9,
                message: UserMessage {
                    header: MessageHeader {
                        recipient: RefId::new(3).unwrap(),
                        sender: None,
                        serializer: SerializerId(2),
                        type_id: 77,
                    },
                    payload,
                },
            })))
        );
    }
    assert_eq!(
        decode_one(&frame(0x15, &request_body(0, 3, b"x"))),
        Err(DecodeError::Malformed {
            kind: KIND,
            field: "correlation",
            reason: "correlation id is 0"
        })
    );
    assert_eq!(
        decode_one(&frame(0x15, &request_body(9, 0, b"x"))),
        Err(DecodeError::Malformed {
            kind: KIND,
            field: "recipient",
            reason: "recipient id 0"
        })
    );
    // Complete frames whose body stops inside the 22-byte head.
    let body = request_body(9, 3, b"");
    assert_eq!(body.len(), REQUEST_HEADER_LEN);
    for cut in 0..body.len() {
        let field = match cut {
            0..8 => "correlation",
            8..12 => "recipient",
            12..16 => "sender",
            16..18 => "serializer",
            _ => "type_id",
        };
        assert_eq!(
            decode_one(&frame(0x15, &body[..cut])),
            Err(DecodeError::Truncated { kind: KIND, field }),
            "body cut at {cut}"
        );
    }
    let full = frame(0x15, &request_body(9, 3, b"payload"));
    for cut in 0..full.len() {
        assert_eq!(decode_one(&full[..cut]), Ok(None), "cut at {cut}");
    }
}

/// A user message frame becomes a Request in place, and only a whole user
/// message frame with a non-zero correlation id does.
#[test]
fn a_user_message_frame_becomes_a_request() {
    let encoder = Encoder::default();
    let header = MessageHeader {
        recipient: RefId::new(3).unwrap(),
        sender: None,
        serializer: SerializerId(2),
        type_id: 77,
    };
    let mut buf = BytesMut::new();
    Encoder::heartbeat(&mut buf);
    let start = buf.len();
    encoder
        .user_message_with(&mut buf, &header, |b| {
            b.extend_from_slice(b"abc");
            Ok(())
        })
        .unwrap();
    encoder.into_request(&mut buf, start, 9).unwrap();
    assert_eq!(
        &buf[start..],
        &frame(0x15, &request_body(9, 3, b"abc"))[..],
        "the same bytes as a Request encoded directly"
    );
    // Refused: a correlation of 0, and a frame that is not a user message;
    // either way the frame is removed and what came before stays.
    let mut bad = buf.clone();
    assert!(encoder.into_request(&mut bad, start, 9).is_err());
    assert_eq!(bad.len(), start);
    let mut zero = BytesMut::new();
    encoder
        .user_message_with(&mut zero, &header, |_| Ok(()))
        .unwrap();
    assert!(encoder.into_request(&mut zero, 0, 0).is_err());
    assert!(zero.is_empty());
    // Too long for the encoder's limit once the correlation is in.
    let small = Encoder::new((1 + MESSAGE_HEADER_LEN + 4) as u32);
    let mut tight = BytesMut::new();
    small
        .user_message_with(&mut tight, &header, |b| {
            b.extend_from_slice(b"abcd");
            Ok(())
        })
        .unwrap();
    assert!(matches!(
        small.into_request(&mut tight, 0, 9),
        Err(EncodeError::FrameTooLong { .. })
    ));
    assert!(tight.is_empty());
}

/// The transport's read loop splits frames with `next_raw` and decodes the
/// hot kinds itself: the same frames, the same errors, and nothing past a
/// bad frame.
#[test]
fn raw_frames_split_like_the_iterator() {
    let mut bytes = frame(0x10, &user_body(3, b"ab"));
    bytes.extend(frame(0x15, &request_body(9, 3, b"cd")));
    bytes.extend(frame(0x03, &[]));
    bytes.extend(frame(0x15, &request_body(0, 3, b"x")));
    bytes.extend(frame(0x03, &[]));
    let decoder = Decoder::default();
    let mut frames = decoder.frames(&bytes);
    let user = frames.next_raw().unwrap().unwrap();
    assert_eq!(user.user_message().unwrap().unwrap().payload, b"ab");
    assert!(user.request().is_none());
    let request = frames.next_raw().unwrap().unwrap();
    assert!(request.user_message().is_none());
    let r = request.request().unwrap().unwrap();
    assert_eq!((r.correlation, r.message.payload), (9, &b"cd"[..]));
    assert_eq!(
        request.decode(decoder.config()),
        Ok(Pdu::Request(r)),
        "the generic decode agrees"
    );
    let heartbeat = frames.next_raw().unwrap().unwrap();
    assert_eq!(heartbeat.decode(decoder.config()), Ok(Pdu::Heartbeat));
    let bad = frames.next_raw().unwrap().unwrap();
    assert_eq!(
        bad.request().unwrap(),
        Err(DecodeError::Malformed {
            kind: PduKind::Request,
            field: "correlation",
            reason: "correlation id is 0"
        })
    );
    // An oversized frame is an error at once, and ends the iteration.
    let mut long = (SMALL_MAX_FRAME_LEN + 1).to_le_bytes().to_vec();
    long.push(0x10);
    let mut frames = decoder.frames(&long);
    assert!(matches!(
        frames.next_raw(),
        Some(Err(DecodeError::FrameTooLong { .. }))
    ));
    assert!(frames.next_raw().is_none());
    // An incomplete frame waits.
    let partial = &frame(0x10, &user_body(3, b"ab"))[..10];
    assert!(decoder.frames(partial).next_raw().is_none());
}
