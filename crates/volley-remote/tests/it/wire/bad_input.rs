//! One test per kind of bad input: each must produce its specific error,
//! never a panic and never a silently wrong PDU.

use bytes::{Buf, BytesMut};
use volley_remote::serialization::SerializerId;
use volley_remote::wire::*;

use crate::wire_frames;
use wire_frames::{decode_one, frame, user_body};

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
    // A wrong version byte fails as soon as it arrives.
    assert_eq!(
        Preamble::decode(b"VLLY\x02"),
        Err(DecodeError::UnsupportedVersion {
            version: 2,
            supported: 1
        })
    );
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
    for kind in [0x00, 0x08, 0x17, 0x1f, 0x7f, 0xff] {
        assert_eq!(
            decode_one(&frame(kind, &[])),
            Err(DecodeError::UnknownPduKind(kind))
        );
    }
    // Exactly the kinds of `PduKind::ALL` are known; every other byte is
    // rejected by kind, before its body is looked at.
    for byte in 0..=u8::MAX {
        let known = PduKind::ALL.iter().any(|&k| k as u8 == byte);
        let err = decode_one(&frame(byte, &[])).err();
        assert_eq!(
            err == Some(DecodeError::UnknownPduKind(byte)),
            !known,
            "kind 0x{byte:02x}: {err:?}"
        );
    }
}

#[test]
fn kind_numbering() {
    // `ALL` is in wire-value order, without duplicates, and `from_u8`
    // inverts the discriminants.
    assert!(PduKind::ALL.windows(2).all(|w| (w[0] as u8) < (w[1] as u8)));
    for kind in PduKind::ALL {
        assert_eq!(PduKind::from_u8(kind as u8), Some(kind));
    }
    assert_eq!(PduKind::ReplyHandleDeclaration as u8, 0x12);
    assert_eq!(PduKind::Reply as u8, 0x13);
    assert_eq!(PduKind::Request as u8, 0x15);
}

fn handle_body(id: u32, correlation: u64) -> Vec<u8> {
    let mut b = id.to_le_bytes().to_vec();
    b.extend(correlation.to_le_bytes());
    b
}

fn reply_body(correlation: u64, payload: &[u8]) -> Vec<u8> {
    let mut b = correlation.to_le_bytes().to_vec();
    b.extend(2u16.to_le_bytes());
    b.extend(77u32.to_le_bytes());
    b.extend_from_slice(payload);
    b
}

#[test]
fn bad_reply_handle_declarations() {
    const KIND: PduKind = PduKind::ReplyHandleDeclaration;
    // The well-formed one, for reference.
    assert_eq!(
        decode_one(&frame(0x12, &handle_body(4096, 9))),
        Ok(Some(Pdu::ReplyHandleDeclaration(ReplyHandleDeclaration {
            id: RefId::new(4096).unwrap(),
            correlation: 9
        })))
    );
    let bad_id = Err(DecodeError::Malformed {
        kind: KIND,
        field: "id",
        reason: "reference id is 0 or above the limit",
    });
    assert_eq!(decode_one(&frame(0x12, &handle_body(0, 9))), bad_id);
    assert_eq!(
        decode_one(&frame(0x12, &handle_body(DEFAULT_MAX_REF_ID + 1, 9))),
        bad_id
    );
    assert!(matches!(
        decode_one(&frame(0x12, &handle_body(DEFAULT_MAX_REF_ID, 9))),
        Ok(Some(Pdu::ReplyHandleDeclaration(_)))
    ));
    assert_eq!(
        decode_one(&frame(0x12, &handle_body(1, 0))),
        Err(DecodeError::Malformed {
            kind: KIND,
            field: "correlation",
            reason: "correlation id is 0"
        })
    );
    // Complete frames whose body stops inside a field.
    let body = handle_body(1, 9);
    for cut in 0..body.len() {
        let field = if cut < 4 { "id" } else { "correlation" };
        assert_eq!(
            decode_one(&frame(0x12, &body[..cut])),
            Err(DecodeError::Truncated { kind: KIND, field }),
            "body cut at {cut}"
        );
    }
    // Still arriving: not an error.
    let full = frame(0x12, &body);
    for cut in 0..full.len() {
        assert_eq!(decode_one(&full[..cut]), Ok(None), "cut at {cut}");
    }
    // Fixed layout: a trailing byte is an error.
    let mut long = body.clone();
    long.push(0);
    assert_eq!(
        decode_one(&frame(0x12, &long)),
        Err(DecodeError::TrailingBytes {
            kind: KIND,
            extra: 1
        })
    );
}

#[test]
fn bad_replies() {
    const KIND: PduKind = PduKind::Reply;
    // The payload is `rest`: empty is fine, and nothing is ever trailing.
    for payload in [&b""[..], b"x", &[0u8; 100]] {
        assert_eq!(
            decode_one(&frame(0x13, &reply_body(5, payload))),
            Ok(Some(Pdu::Reply(Reply {
                correlation: 5,
                serializer: SerializerId(2),
                type_id: 77,
                payload
            })))
        );
    }
    assert_eq!(
        decode_one(&frame(0x13, &reply_body(0, b"x"))),
        Err(DecodeError::Malformed {
            kind: KIND,
            field: "correlation",
            reason: "correlation id is 0"
        })
    );
    // Complete frames whose body stops inside the 14-byte head.
    let body = reply_body(5, b"");
    assert_eq!(body.len(), 14);
    for cut in 0..body.len() {
        let field = match cut {
            0..8 => "correlation",
            8..10 => "serializer",
            _ => "type_id",
        };
        assert_eq!(
            decode_one(&frame(0x13, &body[..cut])),
            Err(DecodeError::Truncated { kind: KIND, field }),
            "body cut at {cut}"
        );
    }
    // Still arriving: not an error.
    let full = frame(0x13, &reply_body(5, b"payload"));
    for cut in 0..full.len() {
        assert_eq!(decode_one(&full[..cut]), Ok(None), "cut at {cut}");
    }
}

/// The transport's own Reply decode (`RawFrame::reply`, which reads a
/// whole head in place) agrees with the generic one on every cut of a
/// reply, on a zero correlation, and on whole replies.
#[test]
fn the_raw_reply_decode_agrees_with_the_generic_one() {
    let mut bodies = Vec::new();
    for body in [reply_body(5, b""), reply_body(u64::MAX, b"payload")] {
        for cut in 0..=body.len() {
            bodies.push(body[..cut].to_vec());
        }
    }
    bodies.push(reply_body(0, b"x"));
    bodies.push(reply_body(0, b""));
    for body in bodies {
        let raw = RawFrame {
            kind: 0x13,
            body: &body,
        };
        let framed = frame(0x13, &body);
        let generic = decode_one(&framed).map(|pdu| match pdu {
            Some(Pdu::Reply(r)) => r,
            other => panic!("not a reply: {other:?}"),
        });
        assert_eq!(raw.reply(), Some(generic), "body {body:?}");
    }
    assert_eq!(
        RawFrame {
            kind: 0x12,
            body: &[]
        }
        .reply(),
        None
    );
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

#[test]
fn encoder_rejects_correlation_zero() {
    let encoder = Encoder::default();
    let mut buf = BytesMut::from(&b"previous frames"[..]);
    let handle = Pdu::ReplyHandleDeclaration(ReplyHandleDeclaration {
        id: RefId::new(1).unwrap(),
        correlation: 0,
    });
    let reply = Pdu::Reply(Reply {
        correlation: 0,
        serializer: SerializerId::BYTES,
        type_id: 1,
        payload: b"x",
    });
    for pdu in [handle, reply] {
        let err = encoder.encode(&pdu, &mut buf).unwrap_err();
        assert!(
            matches!(
                err,
                EncodeError::InvalidField {
                    field: "correlation",
                    ..
                }
            ),
            "{pdu:?}: {err:?}"
        );
        assert_eq!(&buf[..], b"previous frames");
    }
    let err = encoder
        .reply_with(&mut buf, 0, SerializerId::BYTES, 1, |b| {
            b.extend_from_slice(b"x");
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(
        err,
        EncodeError::InvalidField {
            field: "correlation",
            ..
        }
    ));
    assert_eq!(&buf[..], b"previous frames");
}

#[test]
fn reply_encoder_leaves_the_buffer_as_it_was_on_failure() {
    let encoder = Encoder::new(1024);
    let mut buf = BytesMut::from(&b"previous frames"[..]);
    // Too large for the lane.
    let err = encoder
        .reply_with(&mut buf, 7, SerializerId::BYTES, 1, |b| {
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
    // The payload serializer fails half way.
    let err = encoder
        .reply_with(&mut buf, 7, SerializerId::BYTES, 1, |b| {
            b.extend_from_slice(b"half");
            Err(
                volley_remote::serialization::SerializeError::TrailingBytes {
                    serializer: SerializerId::BYTES,
                    extra: 1,
                },
            )
        })
        .unwrap_err();
    assert!(matches!(err, EncodeError::Serialize(_)));
    assert_eq!(&buf[..], b"previous frames");
    // Exactly the maximum fits: 1 + 14 + 1009 bytes.
    encoder
        .reply_with(&mut buf, 7, SerializerId::BYTES, 1, |b| {
            b.extend_from_slice(&[0u8; 1009]);
            Ok(())
        })
        .unwrap();
    assert_eq!(buf.len(), 15 + 4 + 1024);
}

#[test]
fn bad_flushes() {
    for (kind, byte) in [(PduKind::Flush, 0x16u8), (PduKind::FlushAck, 0x22)] {
        let body = 9u64.to_le_bytes();
        let expected = match kind {
            PduKind::Flush => Pdu::Flush(Flush { id: 9 }),
            _ => Pdu::FlushAck(FlushAck { id: 9 }),
        };
        assert_eq!(decode_one(&frame(byte, &body)), Ok(Some(expected)));
        assert_eq!(
            decode_one(&frame(byte, &0u64.to_le_bytes())),
            Err(DecodeError::Malformed {
                kind,
                field: "id",
                reason: "flush id is 0"
            })
        );
        for cut in 0..body.len() {
            assert_eq!(
                decode_one(&frame(byte, &body[..cut])),
                Err(DecodeError::Truncated { kind, field: "id" }),
                "body cut at {cut}"
            );
        }
        let mut long = body.to_vec();
        long.push(0);
        assert_eq!(
            decode_one(&frame(byte, &long)),
            Err(DecodeError::TrailingBytes { kind, extra: 1 })
        );
    }
    let mut buf = bytes::BytesMut::new();
    assert!(
        Encoder::for_lane(Lane::Ordinary)
            .encode(&Pdu::Flush(Flush { id: 0 }), &mut buf)
            .is_err(),
        "the encoder refuses id 0"
    );
}

/// A cluster frame's body: channel, cluster name, payload.
fn cluster_body(channel: u8, cluster: &str, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![channel];
    b.extend((cluster.len() as u16).to_le_bytes());
    b.extend(cluster.as_bytes());
    b.extend_from_slice(payload);
    b
}

#[test]
fn bad_cluster_frames() {
    let kind = PduKind::Cluster;
    assert_eq!(
        decode_one(&frame(0x40, &cluster_body(1, "prod", b"p"))),
        Ok(Some(Pdu::Cluster(ClusterFrame {
            channel: ClusterChannel::Swim,
            cluster: "prod",
            payload: b"p",
        })))
    );
    // The channels are a closed set.
    for channel in [0u8, 4, 0x7f, 0xff] {
        assert_eq!(
            decode_one(&frame(0x40, &cluster_body(channel, "prod", b"p"))),
            Err(DecodeError::Malformed {
                kind,
                field: "channel",
                reason: "unknown cluster channel"
            }),
            "channel {channel}"
        );
    }
    assert_eq!(
        decode_one(&frame(0x40, &cluster_body(1, "", b"p"))),
        Err(DecodeError::Malformed {
            kind,
            field: "cluster",
            reason: "cluster name is empty"
        })
    );
    assert_eq!(
        decode_one(&frame(0x40, &cluster_body(2, "prod", b""))),
        Err(DecodeError::Malformed {
            kind,
            field: "payload",
            reason: "cluster payload is empty"
        })
    );
    assert_eq!(
        decode_one(&frame(0x40, &[])),
        Err(DecodeError::Truncated {
            kind,
            field: "channel"
        })
    );
    // A head cut anywhere inside the name.
    let whole = cluster_body(3, "prod", b"");
    for cut in 1..whole.len() {
        assert_eq!(
            decode_one(&frame(0x40, &whole[..cut])),
            Err(DecodeError::Truncated {
                kind,
                field: "cluster"
            }),
            "head cut at {cut}"
        );
    }
    assert_eq!(
        decode_one(&frame(0x40, &[1, 2, 0, 0xff, 0xfe, b'x'])),
        Err(DecodeError::InvalidUtf8 {
            kind,
            field: "cluster"
        })
    );
}

#[test]
fn cluster_frames_are_bounded_like_other_control_frames() {
    let encoder = Encoder::for_lane(Lane::Control);
    let max = SMALL_MAX_FRAME_LEN as usize;
    let fits = vec![7u8; max - 1 - 1 - 2 - 4];
    let mut buf = BytesMut::new();
    let pdu = |payload| {
        Pdu::Cluster(ClusterFrame {
            channel: ClusterChannel::SyncData,
            cluster: "prod",
            payload,
        })
    };
    encoder.encode(&pdu(&fits), &mut buf).unwrap();
    assert_eq!(buf.len(), 4 + max);
    let over = vec![7u8; fits.len() + 1];
    buf.clear();
    assert!(matches!(
        encoder.encode(&pdu(&over), &mut buf),
        Err(EncodeError::FrameTooLong { .. })
    ));
    assert!(buf.is_empty(), "a refused frame leaves nothing behind");
    // The receiver refuses it from its length alone.
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
    let head = ((max + 1) as u32).to_le_bytes();
    assert_eq!(
        decoder.decode_frame(&[&head[..], &[0x40]].concat()),
        Err(DecodeError::FrameTooLong { len: max + 1, max })
    );
    // The encoder refuses what the decoder would.
    for bad in [
        ClusterFrame {
            channel: ClusterChannel::Swim,
            cluster: "",
            payload: b"p",
        },
        ClusterFrame {
            channel: ClusterChannel::Swim,
            cluster: "prod",
            payload: b"",
        },
    ] {
        buf.clear();
        assert!(matches!(
            encoder.encode(&Pdu::Cluster(bad), &mut buf),
            Err(EncodeError::InvalidField { .. })
        ));
        assert!(buf.is_empty());
    }
}
