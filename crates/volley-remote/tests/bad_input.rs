//! One test per kind of bad input: each must produce its specific error,
//! never a panic and never a silently wrong PDU.

use bytes::{Buf, BytesMut};
use volley_remote::serialization::SerializerId;
use volley_remote::wire::*;

fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut f = ((body.len() + 1) as u32).to_le_bytes().to_vec();
    f.push(kind);
    f.extend_from_slice(body);
    f
}

fn decode_one(bytes: &[u8]) -> Result<Option<Pdu<'_>>, DecodeError> {
    Decoder::default()
        .decode_frame(bytes)
        .map(|o| o.map(|(p, _)| p))
}

fn user_body(recipient: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = recipient.to_le_bytes().to_vec();
    b.extend(0u32.to_le_bytes());
    b.extend(2u16.to_le_bytes());
    b.extend(77u32.to_le_bytes());
    b.extend_from_slice(payload);
    b
}

#[test]
fn garbage_bytes_are_rejected_at_the_preamble() {
    let err = Preamble::decode(b"GET / HTTP/1.1\r\n").unwrap_err();
    assert_eq!(err, DecodeError::BadMagic { found: *b"GET " });
    // Rejected as soon as the first wrong byte is visible.
    assert_eq!(
        Preamble::decode(b"X").unwrap_err(),
        DecodeError::BadMagic {
            found: [b'X', 0, 0, 0]
        }
    );
    // Garbage after a valid preamble fails as frames.
    let garbage = [0xffu8; 64];
    assert!(matches!(
        decode_one(&garbage),
        Err(DecodeError::FrameTooLong {
            len: 0xffff_ffff,
            ..
        })
    ));
}

#[test]
fn wrong_magic() {
    assert_eq!(
        Preamble::decode(b"VLLX\x01\x01").unwrap_err(),
        DecodeError::BadMagic { found: *b"VLLX" }
    );
    // A correct prefix is not an error yet, just incomplete.
    assert_eq!(Preamble::decode(b"VLL"), Ok(None));
    assert_eq!(Preamble::decode(b"VLLY\x01"), Ok(None));
}

#[test]
fn wrong_version_and_lane() {
    assert_eq!(
        Preamble::decode(b"VLLY\x02\x01").unwrap_err(),
        DecodeError::UnsupportedVersion {
            version: 2,
            supported: 1
        }
    );
    assert_eq!(
        Preamble::decode(b"VLLY\x01\x03").unwrap_err(),
        DecodeError::UnknownLane(3)
    );
    for lane in Lane::ALL {
        let bytes = Preamble::new(lane).to_bytes();
        assert_eq!(Preamble::decode(&bytes), Ok(Some(Preamble::new(lane))));
    }
}

#[test]
fn frame_longer_than_maximum_is_rejected_before_buffering() {
    let decoder = Decoder::new(DecoderConfig {
        max_frame_len: 1024,
        ..Default::default()
    });
    // Only the 4-byte header has arrived: the error comes now, not after
    // 1025 bytes were buffered.
    let header = 1025u32.to_le_bytes();
    let mut frames = decoder.frames(&header);
    assert_eq!(
        frames.next(),
        Some(Err(DecodeError::FrameTooLong {
            len: 1025,
            max: 1024
        }))
    );
    assert_eq!(frames.next(), None, "iterator stops after an error");
    assert_eq!(frames.consumed(), 0);

    // Exactly the maximum is fine.
    let body = user_body(1, &[0u8; 1024 - 1 - 14]);
    let f = frame(0x10, &body);
    assert_eq!(f.len(), 4 + 1024);
    assert!(matches!(
        decoder.decode_frame(&f),
        Ok(Some((Pdu::UserMessage(_), 1028)))
    ));

    // The encoder refuses to build what the peer would reject, and leaves
    // the buffer untouched.
    let encoder = Encoder::new(1024);
    let mut buf = BytesMut::from(&b"previous frames"[..]);
    let header = MessageHeader {
        recipient: RefId::new(1).unwrap(),
        sender: None,
        serializer: SerializerId::BYTES,
        type_id: 1,
    };
    let err = encoder
        .user_message_with(&mut buf, &header, |b| {
            b.extend_from_slice(&[0u8; 1024]);
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(
        err,
        EncodeError::FrameTooLong {
            len: 1039,
            max: 1024
        }
    ));
    assert_eq!(&buf[..], b"previous frames");
}

#[test]
fn empty_frame() {
    assert_eq!(decode_one(&[0, 0, 0, 0]), Err(DecodeError::EmptyFrame));
}

#[test]
fn truncated_frames() {
    // Incomplete in the buffer: not an error, wait for more bytes.
    let full = frame(0x10, &user_body(1, b"payload"));
    for cut in 0..full.len() {
        assert_eq!(decode_one(&full[..cut]), Ok(None), "cut at {cut}");
    }
    // Complete frame whose body is shorter than the PDU needs.
    let short = frame(0x10, &user_body(1, b"")[..9]);
    assert_eq!(
        decode_one(&short),
        Err(DecodeError::Truncated {
            kind: PduKind::UserMessage,
            field: "serializer"
        })
    );
    assert_eq!(
        decode_one(&frame(0x21, &[1, 2, 3])),
        Err(DecodeError::Truncated {
            kind: PduKind::SystemAck,
            field: "ack"
        })
    );
    // A string whose length prefix runs past the frame.
    let mut body = 1u32.to_le_bytes().to_vec();
    body.extend(5u64.to_le_bytes());
    body.extend(200u16.to_le_bytes());
    body.extend(b"/user/a");
    assert_eq!(
        decode_one(&frame(0x11, &body)),
        Err(DecodeError::Truncated {
            kind: PduKind::RefDeclaration,
            field: "path"
        })
    );
    // Extra bytes after a fixed-layout PDU.
    assert_eq!(
        decode_one(&frame(0x03, &[0])),
        Err(DecodeError::TrailingBytes {
            kind: PduKind::Heartbeat,
            extra: 1
        })
    );
}

#[test]
fn unknown_pdu_kind() {
    for kind in [0x00, 0x06, 0x12, 0x7f, 0xff] {
        assert_eq!(
            decode_one(&frame(kind, &[])),
            Err(DecodeError::UnknownPduKind(kind))
        );
    }
}

#[test]
fn malformed_utf8_path() {
    let mut body = 1u32.to_le_bytes().to_vec();
    body.extend(5u64.to_le_bytes());
    let path = b"/user/\xff\xfe";
    body.extend((path.len() as u16).to_le_bytes());
    body.extend(path);
    assert_eq!(
        decode_one(&frame(0x11, &body)),
        Err(DecodeError::InvalidUtf8 {
            kind: PduKind::RefDeclaration,
            field: "path"
        })
    );
}

#[test]
fn malformed_fields() {
    assert_eq!(
        decode_one(&frame(0x10, &user_body(0, b"x"))),
        Err(DecodeError::Malformed {
            kind: PduKind::UserMessage,
            field: "recipient",
            reason: "recipient id 0"
        })
    );
    let mut decl = 0u32.to_le_bytes().to_vec();
    decl.extend(5u64.to_le_bytes());
    decl.extend(2u16.to_le_bytes());
    decl.extend(b"/a");
    assert!(matches!(
        decode_one(&frame(0x11, &decl)),
        Err(DecodeError::Malformed { field: "id", .. })
    ));
    decl[..4].copy_from_slice(&(DEFAULT_MAX_REF_ID + 1).to_le_bytes());
    assert!(matches!(
        decode_one(&frame(0x11, &decl)),
        Err(DecodeError::Malformed { field: "id", .. })
    ));
    // Handshake with an invalid system name.
    let mut hs = vec![1u8];
    hs.extend(1u64.to_le_bytes());
    for (sys, host) in [("bad name", "h"), ("ok", "h")] {
        hs.extend((sys.len() as u16).to_le_bytes());
        hs.extend(sys.as_bytes());
        hs.extend((host.len() as u16).to_le_bytes());
        hs.extend(host.as_bytes());
        hs.extend(1u16.to_le_bytes());
    }
    hs.push(0);
    assert_eq!(
        decode_one(&frame(0x01, &hs)),
        Err(DecodeError::InvalidAddress {
            kind: PduKind::HandshakeRequest,
            field: "from",
            source: AddressError::InvalidSystem
        })
    );
    // System message with sequence number 0.
    let mut sys = 0u64.to_le_bytes().to_vec();
    sys.extend(0u64.to_le_bytes());
    sys.extend(user_body(1, b""));
    assert!(matches!(
        decode_one(&frame(0x20, &sys)),
        Err(DecodeError::Malformed { field: "seq", .. })
    ));
}

#[test]
fn all_complete_frames_in_one_pass_and_partial_tail_kept() {
    let encoder = Encoder::default();
    let mut read_buf = BytesMut::new();
    let header = MessageHeader {
        recipient: RefId::new(9).unwrap(),
        sender: None,
        serializer: SerializerId::BYTES,
        type_id: 3,
    };
    for i in 0..10u8 {
        encoder
            .user_message_with(&mut read_buf, &header, |b| {
                b.extend_from_slice(&[i; 5]);
                Ok(())
            })
            .unwrap();
    }
    Encoder::heartbeat(&mut read_buf);
    let full_len = read_buf.len();
    read_buf.truncate(full_len - 1); // heartbeat only partly arrived

    let decoder = Decoder::default();
    let mut frames = decoder.frames(&read_buf);
    let mut n = 0;
    for pdu in &mut frames {
        let Ok(Pdu::UserMessage(m)) = pdu else {
            panic!("{pdu:?}")
        };
        assert_eq!(m.payload, &[n; 5]);
        n += 1;
    }
    assert_eq!(n, 10);
    let used = frames.consumed();
    assert_eq!(frames.pending_frame_len(), Some(5));
    read_buf.advance(used);
    assert_eq!(&read_buf[..], &HEARTBEAT_FRAME[..4]);
    read_buf.extend_from_slice(&HEARTBEAT_FRAME[4..]);
    assert_eq!(
        decoder.decode_frame(&read_buf),
        Ok(Some((Pdu::Heartbeat, 5)))
    );
}

#[test]
fn encoder_rejects_unencodable_fields() {
    let encoder = Encoder::for_lane(Lane::Large);
    let mut buf = BytesMut::new();
    let long = "x".repeat(70_000);
    let err = encoder
        .encode(
            &Pdu::Disassociate(Disassociate {
                reason: DisassociateReason::Idle,
                text: &long,
            }),
            &mut buf,
        )
        .unwrap_err();
    assert!(matches!(
        err,
        EncodeError::FieldTooLong {
            field: "text",
            len: 70_000,
            ..
        }
    ));
    assert!(buf.is_empty());
}
