use foca::Codec;
use proptest::prelude::*;

use super::*;

/// `a:1`, uid 2, born 3, epoch 4.
const SMALL_ID: &str = "0100 61 0100 0200000000000000 0300000000000000 0400";
/// `bc:0x0a0b`, every field with distinct bytes, so a swapped or
/// big-endian field shows.
const WIDE_ID: &str = "0200 6263 0b0a 0807060504030201 1817161514131211 2221";

fn small_id() -> NodeId {
    NodeId::with_epoch("a", 1, 2, 3, 4)
}

fn wide_id() -> NodeId {
    NodeId::with_epoch(
        "bc",
        0x0a0b,
        0x0102_0304_0506_0708,
        0x1112_1314_1516_1718,
        0x2122,
    )
}

fn hex(text: &str) -> Vec<u8> {
    let digits: String = text.split_whitespace().collect();
    (0..digits.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&digits[at..at + 2], 16).expect("hex"))
        .collect()
}

fn encode_header(header: &Header<NodeId>) -> Vec<u8> {
    let mut bytes = Vec::new();
    ClusterCodec
        .encode_header(header, &mut bytes)
        .expect("encodes");
    bytes
}

fn encode_member(member: &Member<NodeId>) -> Vec<u8> {
    let mut bytes = Vec::new();
    ClusterCodec
        .encode_member(member, &mut bytes)
        .expect("encodes");
    bytes
}

fn header(message: Message<NodeId>) -> Header<NodeId> {
    Header {
        src: small_id(),
        src_incarnation: 5,
        dst: wide_id(),
        message,
    }
}

#[test]
fn a_ping_header_has_its_golden_bytes() {
    let expected = hex(&format!("{SMALL_ID} 0500 {WIDE_ID} 01 07"));
    let header = header(Message::Ping(7));
    assert_eq!(encode_header(&header), expected);
    assert_eq!(ClusterCodec.decode_header(&expected[..]), Ok(header));
}

#[test]
fn a_ping_req_header_has_its_golden_bytes() {
    let expected = hex(&format!("{SMALL_ID} 0500 {WIDE_ID} 03 {SMALL_ID} 09"));
    let header = header(Message::PingReq {
        target: small_id(),
        probe_number: 9,
    });
    assert_eq!(encode_header(&header), expected);
    assert_eq!(ClusterCodec.decode_header(&expected[..]), Ok(header));
}

#[test]
fn a_feed_header_has_its_golden_bytes() {
    let expected = hex(&format!("{SMALL_ID} 0500 {WIDE_ID} 08"));
    let header = header(Message::Feed);
    assert_eq!(encode_header(&header), expected);
}

#[test]
fn a_member_has_its_golden_bytes() {
    let expected = hex(&format!("{WIDE_ID} 0300 01"));
    let member = Member::new(wide_id(), 3, State::Suspect);
    assert_eq!(encode_member(&member), expected);
    assert_eq!(ClusterCodec.decode_member(&expected[..]), Ok(member));
}

#[test]
fn every_message_kind_round_trips() {
    let messages = [
        Message::Ping(1),
        Message::Ack(2),
        Message::PingReq {
            target: wide_id(),
            probe_number: 3,
        },
        Message::IndirectPing {
            origin: wide_id(),
            probe_number: 4,
        },
        Message::IndirectAck {
            target: wide_id(),
            probe_number: 5,
        },
        Message::ForwardedAck {
            origin: wide_id(),
            probe_number: 6,
        },
        Message::Announce,
        Message::Feed,
        Message::Gossip,
        Message::Broadcast,
        Message::TurnUndead,
    ];
    for message in messages {
        let header = header(message);
        let bytes = encode_header(&header);
        let mut rest = &bytes[..];
        assert_eq!(ClusterCodec.decode_header(&mut rest), Ok(header));
        assert!(rest.is_empty(), "the decoder consumed exactly the header");
    }
}

#[test]
fn every_state_round_trips() {
    for state in [State::Alive, State::Suspect, State::Down] {
        let member = Member::new(small_id(), 9, state);
        assert_eq!(
            ClusterCodec.decode_member(&encode_member(&member)[..]),
            Ok(member)
        );
    }
}

#[test]
fn an_unknown_message_tag_is_refused() {
    let bytes = hex(&format!("{SMALL_ID} 0500 {WIDE_ID} 0c"));
    assert_eq!(
        ClusterCodec.decode_header(&bytes[..]),
        Err(CodecError::UnknownMessage(0x0c))
    );
}

#[test]
fn an_unknown_state_is_refused() {
    let bytes = hex(&format!("{SMALL_ID} 0000 03"));
    assert_eq!(
        ClusterCodec.decode_member(&bytes[..]),
        Err(CodecError::UnknownState(3))
    );
}

#[test]
fn every_truncation_of_a_header_is_refused() {
    let bytes = encode_header(&header(Message::IndirectPing {
        origin: wide_id(),
        probe_number: 1,
    }));
    for len in 0..bytes.len() {
        let result = ClusterCodec.decode_header(&bytes[..len]);
        assert!(
            matches!(result, Err(CodecError::Truncated { .. })),
            "{len} bytes: {result:?}"
        );
    }
}

#[test]
fn a_bad_host_is_refused() {
    let empty = hex("0000 0100 0200000000000000 0300000000000000 0400 0000 00");
    assert_eq!(
        ClusterCodec.decode_member(&empty[..]),
        Err(CodecError::EmptyHost)
    );
    let not_utf8 = hex("0100 ff 0100 0200000000000000 0300000000000000 0400 0000 00");
    assert_eq!(
        ClusterCodec.decode_member(&not_utf8[..]),
        Err(CodecError::HostNotUtf8)
    );
    let oversized = hex("0001");
    assert_eq!(
        ClusterCodec.decode_member(&oversized[..]),
        Err(CodecError::HostTooLong { len: 256 })
    );
}

#[test]
fn an_oversized_host_is_not_encoded() {
    let long = NodeId::new("h".repeat(MAX_HOST_LEN + 1), 1, 1, 1);
    let mut bytes = Vec::new();
    let result = ClusterCodec.encode_member(&Member::alive(long), &mut bytes);
    assert_eq!(result, Err(CodecError::HostTooLong { len: 256 }));
    assert!(bytes.is_empty());
}

#[test]
fn a_full_buffer_gets_no_partial_item() {
    let member = Member::alive(wide_id());
    let needed = encode_member(&member).len();
    let mut storage = [0u8; 64];
    let mut buf = &mut storage[..needed - 1];
    let result = ClusterCodec.encode_member(&member, &mut buf);
    assert_eq!(
        result,
        Err(CodecError::BufferFull {
            needed,
            remaining: needed - 1
        })
    );
    assert_eq!(buf.len(), needed - 1, "nothing was written");
}

fn any_node_id() -> impl Strategy<Value = NodeId> {
    (
        "[a-z0-9.-]{1,40}",
        any::<u16>(),
        any::<u64>(),
        any::<u64>(),
        any::<u16>(),
    )
        .prop_map(|(host, port, uid, born_ms, epoch)| {
            NodeId::with_epoch(host, port, uid, born_ms, epoch)
        })
}

fn any_message() -> impl Strategy<Value = Message<NodeId>> {
    prop_oneof![
        any::<u8>().prop_map(Message::Ping),
        any::<u8>().prop_map(Message::Ack),
        (any_node_id(), any::<u8>()).prop_map(|(target, probe_number)| Message::PingReq {
            target,
            probe_number
        }),
        (any_node_id(), any::<u8>()).prop_map(|(origin, probe_number)| Message::ForwardedAck {
            origin,
            probe_number
        }),
        Just(Message::Announce),
        Just(Message::TurnUndead),
    ]
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = ClusterCodec.decode_header(&bytes[..]);
        let _ = ClusterCodec.decode_member(&bytes[..]);
    }

    #[test]
    fn arbitrary_headers_round_trip(
        src in any_node_id(),
        dst in any_node_id(),
        incarnation in any::<u16>(),
        message in any_message(),
    ) {
        let header = Header { src, src_incarnation: incarnation, dst, message };
        prop_assert_eq!(ClusterCodec.decode_header(&encode_header(&header)[..]), Ok(header));
    }

    #[test]
    fn arbitrary_members_round_trip(id in any_node_id(), incarnation in any::<u16>(), state in 0u8..3) {
        let state = [State::Alive, State::Suspect, State::Down][usize::from(state)];
        let member = Member::new(id, incarnation, state);
        prop_assert_eq!(ClusterCodec.decode_member(&encode_member(&member)[..]), Ok(member));
    }
}
