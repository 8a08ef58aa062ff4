//! Property tests: every PDU kind encodes and decodes back to itself, alone
//! and in batches split at arbitrary read boundaries.

use bytes::{Buf, BytesMut};
use proptest::prelude::*;
use volley_remote::serialization::SerializerId;
use volley_remote::wire::*;

/// Owned inputs for one PDU; `pdu()` borrows them into the wire type.
#[derive(Debug, Clone)]
enum Owned {
    HandshakeRequest(u8, Address, u64, Address, Option<Vec<u8>>),
    HandshakeResponse(u8, HandshakeStatus, Address, u64, Option<Vec<u8>>, String),
    Heartbeat,
    HeartbeatAck,
    Disassociate(u8, String),
    AuthProof([u8; 32]),
    IncarnationStamp(u64),
    User(MessageHeader, Vec<u8>),
    Request(u64, MessageHeader, Vec<u8>),
    Traced(MessageHeader, volley::TraceParent, Vec<u8>),
    RefDecl(u32, u64, String),
    ReplyHandleDecl(u32, u64),
    Reply(u64, u16, u32, Vec<u8>),
    System(u64, u64, MessageHeader, Vec<u8>),
    SystemAck(u64),
    Flush(u64),
    FlushAck(u64),
    SpawnReq(u64, u16, String, String, Vec<u8>),
    SpawnOk(u64, String, u64),
    SpawnErr(u64, String),
    Cluster(ClusterChannel, String, Vec<u8>),
}

impl Owned {
    fn pdu(&self) -> Pdu<'_> {
        match self {
            Owned::HandshakeRequest(version, from, uid, to, token) => {
                Pdu::HandshakeRequest(Box::new(HandshakeRequest {
                    version: *version,
                    from: from.clone(),
                    uid: *uid,
                    to: to.clone(),
                    auth: token.as_deref(),
                }))
            }
            Owned::HandshakeResponse(version, status, from, uid, token, reason) => {
                Pdu::HandshakeResponse(Box::new(HandshakeResponse {
                    version: *version,
                    status: *status,
                    from: from.clone(),
                    uid: *uid,
                    auth: token.as_deref(),
                    reason,
                }))
            }
            Owned::Heartbeat => Pdu::Heartbeat,
            Owned::HeartbeatAck => Pdu::HeartbeatAck,
            Owned::Disassociate(reason, text) => Pdu::Disassociate(Disassociate {
                reason: DisassociateReason::from_u8(*reason),
                text,
            }),
            Owned::AuthProof(mac) => Pdu::AuthProof(AuthProof { mac: *mac }),
            Owned::IncarnationStamp(stamp) => {
                Pdu::IncarnationStamp(IncarnationStamp { stamp: *stamp })
            }
            Owned::User(header, payload) => Pdu::UserMessage(UserMessage {
                header: *header,
                payload,
            }),
            Owned::Request(correlation, header, payload) => Pdu::Request(Request {
                correlation: *correlation,
                message: UserMessage {
                    header: *header,
                    payload,
                },
            }),
            Owned::Traced(header, context, payload) => Pdu::TracedUserMessage(TracedUserMessage {
                message: UserMessage {
                    header: *header,
                    payload,
                },
                context: *context,
            }),
            Owned::RefDecl(id, uid, path) => Pdu::RefDeclaration(RefDeclaration {
                id: RefId::new(*id).unwrap(),
                uid: *uid,
                path,
            }),
            Owned::ReplyHandleDecl(id, correlation) => {
                Pdu::ReplyHandleDeclaration(ReplyHandleDeclaration {
                    id: RefId::new(*id).unwrap(),
                    correlation: *correlation,
                })
            }
            Owned::Reply(correlation, ser, type_id, payload) => Pdu::Reply(Reply {
                correlation: *correlation,
                serializer: SerializerId(*ser),
                type_id: *type_id,
                payload,
            }),
            Owned::System(seq, ack, header, payload) => Pdu::SystemMessage(SystemMessage {
                seq: *seq,
                ack: *ack,
                header: *header,
                payload,
            }),
            Owned::SystemAck(ack) => Pdu::SystemAck(SystemAck { ack: *ack }),
            Owned::Flush(id) => Pdu::Flush(Flush { id: *id }),
            Owned::FlushAck(id) => Pdu::FlushAck(FlushAck { id: *id }),
            Owned::SpawnReq(request_id, ser, kind, name, props) => {
                Pdu::SpawnRequest(SpawnRequest {
                    request_id: *request_id,
                    serializer: SerializerId(*ser),
                    kind,
                    name,
                    props,
                })
            }
            Owned::SpawnOk(request_id, path, uid) => Pdu::SpawnResponse(SpawnResponse {
                request_id: *request_id,
                result: SpawnResult::Spawned { path, uid: *uid },
            }),
            Owned::SpawnErr(request_id, error) => Pdu::SpawnResponse(SpawnResponse {
                request_id: *request_id,
                result: SpawnResult::Failed { error },
            }),
            Owned::Cluster(channel, cluster, payload) => Pdu::Cluster(ClusterFrame {
                channel: *channel,
                cluster,
                payload,
            }),
        }
    }
}

fn address() -> impl Strategy<Value = Address> {
    (
        "[a-zA-Z0-9][a-zA-Z0-9_-]{0,20}",
        prop_oneof!["[a-z0-9.-]{1,30}", "[0-9a-f:]{2,39}"],
        1u16..,
    )
        .prop_map(|(s, h, p)| Address::new(s, h, p).unwrap())
}

fn text() -> impl Strategy<Value = String> {
    ".{0,40}"
}

fn path() -> impl Strategy<Value = String> {
    ".{1,60}"
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn header() -> impl Strategy<Value = MessageHeader> {
    (1u32.., any::<u32>(), any::<u16>(), any::<u32>()).prop_map(|(r, s, ser, t)| MessageHeader {
        recipient: RefId::new(r).unwrap(),
        sender: RefId::new(s),
        serializer: SerializerId(ser),
        type_id: t,
    })
}

fn status() -> impl Strategy<Value = HandshakeStatus> {
    (0u8..5).prop_map(|s| HandshakeStatus::from_u8(s).unwrap())
}

fn owned() -> impl Strategy<Value = Owned> {
    prop_oneof![
        (
            any::<u8>(),
            address(),
            any::<u64>(),
            address(),
            proptest::option::of(bytes(64))
        )
            .prop_map(|(v, f, u, t, tok)| Owned::HandshakeRequest(v, f, u, t, tok)),
        (
            any::<u8>(),
            status(),
            address(),
            any::<u64>(),
            proptest::option::of(bytes(64)),
            text()
        )
            .prop_map(|(v, s, f, u, tok, r)| Owned::HandshakeResponse(v, s, f, u, tok, r)),
        Just(Owned::Heartbeat),
        Just(Owned::HeartbeatAck),
        (any::<u8>(), text()).prop_map(|(r, t)| Owned::Disassociate(r, t)),
        any::<[u8; 32]>().prop_map(Owned::AuthProof),
        any::<u64>().prop_map(Owned::IncarnationStamp),
        (header(), bytes(300)).prop_map(|(h, p)| Owned::User(h, p)),
        (1u64.., header(), bytes(300)).prop_map(|(c, h, p)| Owned::Request(c, h, p)),
        // Any ids, the all-zero ones W3C calls invalid included: the
        // codec carries them as they are, the receiver judges them.
        (header(), any::<([u8; 16], [u8; 8], u8)>(), bytes(300)).prop_map(|(h, (t, s, f), p)| {
            let context = volley::TraceParent {
                trace_id: t,
                parent_id: s,
                flags: f,
            };
            Owned::Traced(h, context, p)
        }),
        (1..=DEFAULT_MAX_REF_ID, any::<u64>(), path())
            .prop_map(|(i, u, p)| Owned::RefDecl(i, u, p)),
        (1..=DEFAULT_MAX_REF_ID, 1u64..).prop_map(|(i, c)| Owned::ReplyHandleDecl(i, c)),
        (1u64.., any::<u16>(), any::<u32>(), bytes(300))
            .prop_map(|(c, s, t, p)| Owned::Reply(c, s, t, p)),
        (1u64.., any::<u64>(), header(), bytes(300))
            .prop_map(|(s, a, h, p)| Owned::System(s, a, h, p)),
        any::<u64>().prop_map(Owned::SystemAck),
        (1u64..).prop_map(Owned::Flush),
        (1u64..).prop_map(Owned::FlushAck),
        (any::<u64>(), any::<u16>(), text(), text(), bytes(100))
            .prop_map(|(r, s, k, n, p)| Owned::SpawnReq(r, s, k, n, p)),
        (any::<u64>(), path(), any::<u64>()).prop_map(|(r, p, u)| Owned::SpawnOk(r, p, u)),
        (any::<u64>(), text()).prop_map(|(r, e)| Owned::SpawnErr(r, e)),
        (
            proptest::sample::select(ClusterChannel::ALL.to_vec()),
            "[a-z0-9-]{1,24}",
            proptest::collection::vec(any::<u8>(), 1..300)
        )
            .prop_map(|(c, n, p)| Owned::Cluster(c, n, p)),
    ]
}

proptest! {
    #[test]
    fn every_pdu_round_trips(o in owned()) {
        let pdu = o.pdu();
        let mut buf = BytesMut::new();
        Encoder::default().encode(&pdu, &mut buf).unwrap();
        let (back, used) = Decoder::default().decode_frame(&buf).unwrap().unwrap();
        prop_assert_eq!(used, buf.len());
        prop_assert_eq!(back.kind(), pdu.kind());
        prop_assert_eq!(back, pdu);
    }

    #[test]
    fn batches_round_trip_across_read_boundaries(
        items in proptest::collection::vec(owned(), 1..40),
        chunk in 1usize..700,
    ) {
        let encoder = Encoder::default();
        let mut wire = BytesMut::new();
        for o in &items {
            encoder.encode(&o.pdu(), &mut wire).unwrap();
        }
        // Feed the stream in `chunk`-sized reads, as a socket would.
        let decoder = Decoder::default();
        let mut read_buf = BytesMut::new();
        let mut next = 0;
        for piece in wire.chunks(chunk) {
            read_buf.extend_from_slice(piece);
            let mut frames = decoder.frames(&read_buf);
            for pdu in &mut frames {
                prop_assert_eq!(pdu.unwrap(), items[next].pdu());
                next += 1;
            }
            let used = frames.consumed();
            read_buf.advance(used);
        }
        prop_assert_eq!(next, items.len());
        prop_assert!(read_buf.is_empty());
    }

    #[test]
    fn hot_path_reply_encoder_matches_generic_encoding(
        correlation in 1u64..,
        ser in any::<u16>(),
        type_id in any::<u32>(),
        payload in bytes(300),
    ) {
        let encoder = Encoder::default();
        let mut generic = BytesMut::new();
        let pdu = Pdu::Reply(Reply {
            correlation,
            serializer: SerializerId(ser),
            type_id,
            payload: &payload,
        });
        encoder.encode(&pdu, &mut generic).unwrap();
        let mut hot = BytesMut::new();
        encoder
            .reply_with(&mut hot, correlation, SerializerId(ser), type_id, |b| {
                b.extend_from_slice(&payload);
                Ok(())
            })
            .unwrap();
        prop_assert_eq!(&hot[..], &generic[..]);
    }

    #[test]
    fn address_text_round_trips(a in address()) {
        prop_assert_eq!(a.to_string().parse::<Address>().unwrap(), a);
    }
}

#[test]
fn generator_covers_every_kind() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..2000 {
        let o = owned().new_tree(&mut runner).unwrap().current();
        seen.insert(o.pdu().kind());
    }
    for kind in PduKind::ALL {
        assert!(seen.contains(&kind), "{kind} never generated");
    }
}
