//! Golden vectors: the exact bytes of every PDU kind, the preamble and a
//! handshake, pinned in `tests/vectors/*.hex` so a peer written in another
//! language can be checked against them.
//!
//! Each file is hex text: `#` starts a comment, whitespace is ignored. Lines
//! are split by field with the field's name in a comment. Run with
//! `VOLLEY_BLESS=1` to rewrite the files after a deliberate format change
//! (which also needs a protocol version bump).

use crate::golden_support;

use bytes::BytesMut;
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::*;

use golden_support::render::{
    addr, address_fields, encode, frame_fields, render, str_fields, Vector,
};
use golden_support::{parse_hex, rid, vector_dir, Ping, REPLY_CORRELATION, TRACE_CONTEXT};

/// The authentication fields of the handshake vectors: placeholders, as
/// the real ones are random (the proofs are pinned by a unit test of
/// `transport/handshake/auth.rs`).
const CHALLENGE: [u8; 32] = [0x11; 32];
const ACCEPTOR_AUTH: [u8; 64] = {
    let mut a = [0x22; 64];
    let mut i = 32;
    while i < 64 {
        a[i] = 0x33;
        i += 1;
    }
    a
};

const MESSAGE_HEADER: [(&str, usize); 4] = [
    ("recipient ref id (u32 LE)", 4),
    ("sender ref id (u32 LE, 0 = none)", 4),
    ("serializer id (u16 LE)", 2),
    ("type id (u32 LE)", 4),
];

/// Every vector, built from known values. The PDU is returned alongside so
/// the decode direction can be checked.
fn vectors(ping_payload: &[u8]) -> Vec<(Vector, Option<Pdu<'_>>)> {
    let mut out = Vec::new();

    let pre = Preamble::new(Lane::Ordinary);
    out.push((
        Vector {
            name: "preamble",
            description: "connection preamble, protocol version 1, lane 1 (ordinary)".into(),
            bytes: pre.to_bytes().to_vec(),
            fields: vec![
                ("magic \"VLLY\"".into(), 4),
                ("protocol version".into(), 1),
                ("lane".into(), 1),
            ],
        },
        None,
    ));

    let from = addr("volley://alpha@node-a.example:2552");
    let to = addr("volley://beta@node-b.example:2553");
    let req = Pdu::HandshakeRequest(Box::new(HandshakeRequest {
        version: PROTOCOL_VERSION,
        from: from.clone(),
        uid: 0x0123_4567_89ab_cdef,
        to: to.clone(),
        auth: Some(&CHALLENGE),
    }));
    let mut fields = vec![("version".to_string(), 1), ("uid (u64 LE)".into(), 8)];
    fields.extend(address_fields("from", &from));
    fields.extend(address_fields("to", &to));
    fields.push(("auth present = 1".into(), 1));
    fields.push(("auth length = 32 (u16 LE)".into(), 2));
    fields.push(("auth = the initiator's challenge".into(), 32));
    out.push((
        Vector {
            name: "handshake_request",
            description: format!("{req:?}"),
            bytes: encode(&req),
            fields: frame_fields(PduKind::HandshakeRequest, &[])
                .into_iter()
                .chain(fields)
                .collect(),
        },
        Some(req),
    ));

    let rsp = Pdu::HandshakeResponse(Box::new(HandshakeResponse {
        version: PROTOCOL_VERSION,
        status: HandshakeStatus::Accepted,
        from: to.clone(),
        uid: 0xfedc_ba98_7654_3210,
        auth: Some(&ACCEPTOR_AUTH),
        reason: "",
    }));
    let mut fields = vec![
        ("version".to_string(), 1),
        ("status = 0 (accepted)".into(), 1),
        ("uid (u64 LE)".into(), 8),
    ];
    fields.extend(address_fields("from", &to));
    fields.push(("auth present = 1".into(), 1));
    fields.push(("auth length = 64 (u16 LE)".into(), 2));
    fields.push(("auth = the acceptor's challenge".into(), 32));
    fields.push(("auth = the acceptor's proof".into(), 32));
    fields.extend(str_fields("reason", ""));
    out.push((
        Vector {
            name: "handshake_response",
            description: format!("{rsp:?}"),
            bytes: encode(&rsp),
            fields: frame_fields(PduKind::HandshakeResponse, &[])
                .into_iter()
                .chain(fields)
                .collect(),
        },
        Some(rsp),
    ));

    // A stamped request (handshake version 2, wire-protocol.md §5.1a),
    // without a secret: each side tells its stamp once it is answered.
    let stamped = Pdu::HandshakeRequest(Box::new(HandshakeRequest {
        version: HANDSHAKE_VERSION_STAMPED,
        from: from.clone(),
        uid: 0x0123_4567_89ab_cdef,
        to: to.clone(),
        auth: None,
    }));
    let mut fields = vec![
        ("version = 2: stamped".to_string(), 1),
        ("uid (u64 LE)".into(), 8),
    ];
    fields.extend(address_fields("from", &from));
    fields.extend(address_fields("to", &to));
    fields.push(("auth present = 0".into(), 1));
    out.push((
        Vector {
            name: "handshake_request_stamped",
            description: format!("{stamped:?}"),
            bytes: encode(&stamped),
            fields: frame_fields(PduKind::HandshakeRequest, &[])
                .into_iter()
                .chain(fields)
                .collect(),
        },
        Some(stamped),
    ));

    // An accepted response listing the acceptor's features in `reason`
    // (wire-protocol.md §5.2a), as volley answers without a secret.
    let features = Pdu::HandshakeResponse(Box::new(HandshakeResponse {
        version: PROTOCOL_VERSION,
        status: HandshakeStatus::Accepted,
        from: to.clone(),
        uid: 0xfedc_ba98_7654_3210,
        auth: None,
        reason: Features::SUPPORTED.list(),
    }));
    let mut fields = vec![
        ("version".to_string(), 1),
        ("status = 0 (accepted)".into(), 1),
        ("uid (u64 LE)".into(), 8),
    ];
    fields.extend(address_fields("from", &to));
    fields.push(("auth present = 0".into(), 1));
    fields.extend(str_fields("reason: the feature list", FEATURE_REQUESTS));
    out.push((
        Vector {
            name: "handshake_response_features",
            description: format!("{features:?}"),
            bytes: encode(&features),
            fields: frame_fields(PduKind::HandshakeResponse, &[])
                .into_iter()
                .chain(fields)
                .collect(),
        },
        Some(features),
    ));

    for (name, pdu, kind) in [
        ("heartbeat", Pdu::Heartbeat, PduKind::Heartbeat),
        ("heartbeat_ack", Pdu::HeartbeatAck, PduKind::HeartbeatAck),
    ] {
        out.push((
            Vector {
                name,
                description: format!("{pdu:?} (static bytes, no body)"),
                bytes: encode(&pdu),
                fields: frame_fields(kind, &[]),
            },
            Some(pdu),
        ));
    }

    let dis = Pdu::Disassociate(Disassociate {
        reason: DisassociateReason::Shutdown,
        text: "bye",
    });
    out.push((
        Vector {
            name: "disassociate",
            description: format!("{dis:?}"),
            bytes: encode(&dis),
            fields: frame_fields(PduKind::Disassociate, &[("reason = 0 (shutdown)", 1)])
                .into_iter()
                .chain(str_fields("text", "bye"))
                .collect(),
        },
        Some(dis),
    ));

    let user = Pdu::UserMessage(UserMessage {
        header: MessageHeader {
            recipient: rid(7),
            sender: Some(rid(3)),
            serializer: SerializerId::BINCODE,
            type_id: 1001,
        },
        payload: ping_payload,
    });
    let mut body = MESSAGE_HEADER.to_vec();
    body.push(("payload: bincode Ping { seq: 42 } = u64 LE", 8));
    out.push((
        Vector {
            name: "user_message",
            description: format!("{user:?}"),
            bytes: encode(&user),
            fields: frame_fields(PduKind::UserMessage, &body),
        },
        Some(user),
    ));

    let path = "volley://beta@node-b.example:2553/user/echo";
    let decl = Pdu::RefDeclaration(RefDeclaration {
        id: rid(7),
        uid: 0x1122_3344_5566_7788,
        path,
    });
    out.push((
        Vector {
            name: "ref_declaration",
            description: format!("{decl:?}"),
            bytes: encode(&decl),
            fields: frame_fields(
                PduKind::RefDeclaration,
                &[("ref id (u32 LE)", 4), ("actor uid (u64 LE)", 8)],
            )
            .into_iter()
            .chain(str_fields("path", path))
            .collect(),
        },
        Some(decl),
    ));

    let handle = Pdu::ReplyHandleDeclaration(ReplyHandleDeclaration {
        id: rid(42),
        correlation: REPLY_CORRELATION,
    });
    out.push((
        Vector {
            name: "reply_handle_declaration",
            description: format!("{handle:?}"),
            bytes: encode(&handle),
            fields: frame_fields(
                PduKind::ReplyHandleDeclaration,
                &[("ref id (u32 LE)", 4), ("correlation id (u64 LE)", 8)],
            ),
        },
        Some(handle),
    ));

    let reply = Pdu::Reply(Reply {
        correlation: REPLY_CORRELATION,
        serializer: SerializerId::BINCODE,
        type_id: 1001,
        payload: ping_payload,
    });
    out.push((
        Vector {
            name: "reply",
            description: format!("{reply:?}"),
            bytes: encode(&reply),
            fields: frame_fields(
                PduKind::Reply,
                &[
                    ("correlation id (u64 LE)", 8),
                    ("serializer id (u16 LE)", 2),
                    ("type id (u32 LE)", 4),
                    ("payload: bincode Ping { seq: 42 } = u64 LE", 8),
                ],
            ),
        },
        Some(reply),
    ));

    let request = Pdu::Request(Request {
        correlation: REPLY_CORRELATION,
        message: UserMessage {
            header: MessageHeader {
                recipient: rid(7),
                sender: None,
                serializer: SerializerId::BINCODE,
                type_id: 1001,
            },
            payload: ping_payload,
        },
    });
    let mut fields = vec![("correlation id of the reply handle (u64 LE)", 8)];
    fields.extend(MESSAGE_HEADER);
    fields.push(("payload: bincode Ping { seq: 42 } = u64 LE", 8));
    out.push((
        Vector {
            name: "request",
            description: format!("{request:?}"),
            bytes: encode(&request),
            fields: frame_fields(PduKind::Request, &fields),
        },
        Some(request),
    ));

    let traced = Pdu::TracedUserMessage(TracedUserMessage {
        message: UserMessage {
            header: MessageHeader {
                recipient: rid(7),
                sender: None,
                serializer: SerializerId::BINCODE,
                type_id: 1001,
            },
            payload: ping_payload,
        },
        context: TRACE_CONTEXT,
    });
    let mut fields = MESSAGE_HEADER.to_vec();
    fields.extend([
        ("trace id (W3C traceparent, 16 bytes)", 16),
        ("parent id (the sender's span, 8 bytes)", 8),
        ("trace flags (01 = sampled)", 1),
        ("payload: bincode Ping { seq: 42 } = u64 LE", 8),
    ]);
    out.push((
        Vector {
            name: "traced_user_message",
            description: format!("{traced:?} = traceparent {}", TRACE_CONTEXT),
            bytes: encode(&traced),
            fields: frame_fields(PduKind::TracedUserMessage, &fields),
        },
        Some(traced),
    ));

    let sys = Pdu::SystemMessage(SystemMessage {
        seq: 5,
        ack: 3,
        header: MessageHeader {
            recipient: rid(7),
            sender: Some(rid(3)),
            serializer: SerializerId::BINCODE,
            type_id: 9,
        },
        payload: &[0xde, 0xad],
    });
    let mut body = vec![("seq (u64 LE)", 8), ("cumulative ack (u64 LE)", 8)];
    body.extend(MESSAGE_HEADER);
    body.push(("payload", 2));
    out.push((
        Vector {
            name: "system_message",
            description: format!("{sys:?}"),
            bytes: encode(&sys),
            fields: frame_fields(PduKind::SystemMessage, &body),
        },
        Some(sys),
    ));

    let proof = Pdu::AuthProof(AuthProof { mac: [0xa5; 32] });
    out.push((
        Vector {
            name: "auth_proof",
            description: format!("{proof:?}"),
            bytes: encode(&proof),
            fields: frame_fields(
                PduKind::AuthProof,
                &[("the initiator's proof (32 bytes)", 32)],
            ),
        },
        Some(proof),
    ));

    // The stamp that follows a stamped handshake (wire-protocol.md §5.1a):
    // 2026-11-30 09:00:00 UTC in microseconds since the Unix epoch.
    let stamp = Pdu::IncarnationStamp(IncarnationStamp {
        stamp: 1_796_029_200_000_000,
    });
    out.push((
        Vector {
            name: "incarnation_stamp",
            description: format!("{stamp:?}"),
            bytes: encode(&stamp),
            fields: frame_fields(
                PduKind::IncarnationStamp,
                &[("stamp: microseconds since the Unix epoch (u64 LE)", 8)],
            ),
        },
        Some(stamp),
    ));

    let ack = Pdu::SystemAck(SystemAck { ack: 12 });
    out.push((
        Vector {
            name: "system_ack",
            description: format!("{ack:?}"),
            bytes: encode(&ack),
            fields: frame_fields(PduKind::SystemAck, &[("cumulative ack (u64 LE)", 8)]),
        },
        Some(ack),
    ));

    let flush = Pdu::Flush(Flush { id: 5 });
    out.push((
        Vector {
            name: "flush",
            description: format!("{flush:?}"),
            bytes: encode(&flush),
            fields: frame_fields(PduKind::Flush, &[("flush id (u64 LE)", 8)]),
        },
        Some(flush),
    ));

    let flush_ack = Pdu::FlushAck(FlushAck { id: 5 });
    out.push((
        Vector {
            name: "flush_ack",
            description: format!("{flush_ack:?}"),
            bytes: encode(&flush_ack),
            fields: frame_fields(PduKind::FlushAck, &[("flush id (u64 LE)", 8)]),
        },
        Some(flush_ack),
    ));

    let spawn = Pdu::SpawnRequest(SpawnRequest {
        request_id: 77,
        serializer: SerializerId::BINCODE,
        kind: "worker",
        name: "w1",
        props: &[1, 2, 3],
    });
    out.push((
        Vector {
            name: "spawn_request",
            description: format!("{spawn:?}"),
            bytes: encode(&spawn),
            fields: frame_fields(
                PduKind::SpawnRequest,
                &[("request id (u64 LE)", 8), ("serializer id (u16 LE)", 2)],
            )
            .into_iter()
            .chain(str_fields("kind", "worker"))
            .chain(str_fields("name", "w1"))
            .chain([("props payload".to_string(), 3)])
            .collect(),
        },
        Some(spawn),
    ));

    let spawned_path = "volley://beta@node-b.example:2553/remote/w1";
    let ok = Pdu::SpawnResponse(SpawnResponse {
        request_id: 77,
        result: SpawnResult::Spawned {
            path: spawned_path,
            uid: 99,
        },
    });
    out.push((
        Vector {
            name: "spawn_response_ok",
            description: format!("{ok:?}"),
            bytes: encode(&ok),
            fields: frame_fields(
                PduKind::SpawnResponse,
                &[
                    ("request id (u64 LE)", 8),
                    ("status = 0 (spawned)", 1),
                    ("actor uid (u64 LE)", 8),
                ],
            )
            .into_iter()
            .chain(str_fields("path", spawned_path))
            .collect(),
        },
        Some(ok),
    ));

    let err = Pdu::SpawnResponse(SpawnResponse {
        request_id: 78,
        result: SpawnResult::Failed {
            error: "unknown kind",
        },
    });
    out.push((
        Vector {
            name: "spawn_response_error",
            description: format!("{err:?}"),
            bytes: encode(&err),
            fields: frame_fields(
                PduKind::SpawnResponse,
                &[("request id (u64 LE)", 8), ("status = 1 (failed)", 1)],
            )
            .into_iter()
            .chain(str_fields("error", "unknown kind"))
            .collect(),
        },
        Some(err),
    ));

    // The payloads are opaque to the frame: what each channel carries is
    // pinned by volley-cluster's own codec vectors.
    for (name, channel, payload, what) in [
        (
            "cluster_swim",
            ClusterChannel::Swim,
            &[0xa1, 0xa2, 0xa3, 0xa4][..],
            "channel = 1 (SWIM)",
        ),
        (
            "cluster_sync_digest",
            ClusterChannel::SyncDigest,
            &[0xb1, 0xb2][..],
            "channel = 2 (SyncDigest)",
        ),
        (
            "cluster_sync_data",
            ClusterChannel::SyncData,
            &[0xc1, 0xc2, 0xc3][..],
            "channel = 3 (SyncData)",
        ),
    ] {
        let frame = Pdu::Cluster(ClusterFrame {
            channel,
            cluster: "prod",
            payload,
        });
        out.push((
            Vector {
                name,
                description: format!("{frame:?}"),
                bytes: encode(&frame),
                fields: frame_fields(PduKind::Cluster, &[(what, 1)])
                    .into_iter()
                    .chain(str_fields("cluster", "prod"))
                    .chain([("payload (opaque to the frame)".to_string(), payload.len())])
                    .collect(),
            },
            Some(frame),
        ));
    }

    out
}

#[test]
fn golden_vectors_match_encoding_and_decode_back() {
    let mut ping = BytesMut::new();
    BincodeSerializer
        .encode(&Ping { seq: 42 }, &mut ping)
        .unwrap();
    let bless = std::env::var_os("VOLLEY_BLESS").is_some();
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Large));

    for (v, pdu) in vectors(&ping) {
        let total: usize = v.fields.iter().map(|(_, l)| l).sum();
        assert_eq!(
            total,
            v.bytes.len(),
            "{}: field layout does not cover the bytes",
            v.name
        );
        let path = vector_dir().join(format!("{}.hex", v.name));
        if bless {
            std::fs::write(&path, render(&v)).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with VOLLEY_BLESS=1 to create)",
                path.display()
            )
        });
        let file_bytes = parse_hex(&text);
        assert_eq!(
            file_bytes, v.bytes,
            "{}: encoding differs from the golden vector",
            v.name
        );

        match pdu {
            None => {
                let pre = Preamble::decode(&file_bytes).unwrap().unwrap();
                assert_eq!(pre, Preamble::new(Lane::Ordinary));
            }
            Some(expected) => {
                let (decoded, used) = decoder.decode_frame(&file_bytes).unwrap().unwrap();
                assert_eq!(used, file_bytes.len(), "{}", v.name);
                assert_eq!(decoded, expected, "{}", v.name);
            }
        }
    }

    // The user message's payload is the default serializer's encoding.
    let file = std::fs::read_to_string(vector_dir().join("user_message.hex")).unwrap();
    let bytes = parse_hex(&file);
    let Some((Pdu::UserMessage(m), _)) = decoder.decode_frame(&bytes).unwrap() else {
        panic!("not a user message");
    };
    let back: Ping = BincodeSerializer.decode(m.payload).unwrap();
    assert_eq!(back, Ping { seq: 42 });

    // So is the reply's.
    let file = std::fs::read_to_string(vector_dir().join("reply.hex")).unwrap();
    let bytes = parse_hex(&file);
    let Some((Pdu::Reply(r), _)) = decoder.decode_frame(&bytes).unwrap() else {
        panic!("not a reply");
    };
    let back: Ping = BincodeSerializer.decode(r.payload).unwrap();
    assert_eq!(back, Ping { seq: 42 });
}

#[test]
fn every_pdu_kind_has_a_vector() {
    let kinds: Vec<PduKind> = vectors(&[])
        .iter()
        .filter_map(|(_, pdu)| pdu.as_ref().map(Pdu::kind))
        .collect();
    for kind in PduKind::ALL {
        assert!(kinds.contains(&kind), "no golden vector for {kind}");
    }
}

#[test]
fn heartbeat_constants_are_the_encoded_frames() {
    assert_eq!(encode(&Pdu::Heartbeat), HEARTBEAT_FRAME);
    assert_eq!(encode(&Pdu::HeartbeatAck), HEARTBEAT_ACK_FRAME);
}

#[test]
fn message_pdus_stay_small() {
    // PDUs are returned by value once per frame; the handshakes are boxed so
    // the common variants stay cheap to move.
    assert!(std::mem::size_of::<Pdu<'_>>() <= 72);
}
