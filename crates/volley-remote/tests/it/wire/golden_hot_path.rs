//! The hot-path encoders (`reply_with`, `traced_user_message_with`) write
//! exactly the golden vectors' bytes, appended after earlier frames, and a
//! traced message cut short names the field it ends in.

use crate::golden_support;

use bytes::BytesMut;
use golden_support::{parse_hex, rid, vector_dir, Ping, REPLY_CORRELATION, TRACE_CONTEXT};
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::*;

#[test]
fn hot_path_reply_encoder_writes_the_golden_bytes() {
    let file = std::fs::read_to_string(vector_dir().join("reply.hex")).unwrap();
    let golden = parse_hex(&file);
    let mut buf = BytesMut::from(&b"earlier frames"[..]);
    Encoder::default()
        .reply_with(
            &mut buf,
            REPLY_CORRELATION,
            SerializerId::BINCODE,
            1001,
            |b| BincodeSerializer.encode(&Ping { seq: 42 }, b),
        )
        .unwrap();
    assert_eq!(&buf[..14], b"earlier frames");
    assert_eq!(&buf[14..], &golden[..]);
}

#[test]
fn hot_path_traced_encoder_writes_the_golden_bytes() {
    let file = std::fs::read_to_string(vector_dir().join("traced_user_message.hex")).unwrap();
    let golden = parse_hex(&file);
    let header = MessageHeader {
        recipient: rid(7),
        sender: None,
        serializer: SerializerId::BINCODE,
        type_id: 1001,
    };
    let mut buf = BytesMut::from(&b"earlier"[..]);
    Encoder::default()
        .traced_user_message_with(&mut buf, &header, &TRACE_CONTEXT, |b| {
            BincodeSerializer.encode(&Ping { seq: 42 }, b)
        })
        .unwrap();
    assert_eq!(&buf[..7], b"earlier");
    assert_eq!(&buf[7..], &golden[..]);
    // The context is the traceparent header's fields, in order.
    assert_eq!(
        TRACE_CONTEXT.to_string(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    );
    assert_eq!(&golden[19..35], &TRACE_CONTEXT.trace_id);
}

#[test]
fn a_traced_message_cut_short_names_the_missing_field() {
    let file = std::fs::read_to_string(vector_dir().join("traced_user_message.hex")).unwrap();
    let mut bytes = parse_hex(&file);
    // Keep the head and 20 of the trace id's 16 + parent's 8 bytes: the
    // frame ends inside the parent id.
    bytes.truncate(5 + 14 + 20);
    let len = (bytes.len() - 4) as u32;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Large));
    let err = decoder.decode_frame(&bytes).unwrap_err();
    assert!(
        err.to_string().contains("parent_id"),
        "unexpected error: {err}"
    );
}
