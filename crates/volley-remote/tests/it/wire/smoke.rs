//! Decoder smoke test: 100,000 random and mutated frames from a seeded RNG.
//! The decoder must never panic, every error must be one of the specific
//! variants (with the variant the mutation calls for, where there is one),
//! and every frame that does decode must re-encode to the same bytes (the
//! encoding is canonical).

use bytes::BytesMut;
use volley_remote::serialization::SerializerId;
use volley_remote::wire::*;

/// SplitMix64: tiny, seedable, good enough to drive mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const MAX_FRAME: u32 = 4096;

fn corpus() -> Vec<Vec<u8>> {
    let a: Address = "volley://alpha@node-a:2552".parse().unwrap();
    let b: Address = "volley://beta@[::1]:2553".parse().unwrap();
    let header = MessageHeader {
        recipient: RefId::new(7).unwrap(),
        sender: RefId::new(3),
        serializer: SerializerId::BINCODE,
        type_id: 1001,
    };
    let pdus = [
        Pdu::HandshakeRequest(Box::new(HandshakeRequest {
            version: 1,
            from: a.clone(),
            uid: 42,
            to: b.clone(),
            auth: Some(b"token"),
        })),
        Pdu::HandshakeResponse(Box::new(HandshakeResponse {
            version: 1,
            status: HandshakeStatus::Unauthorized,
            from: b,
            uid: 43,
            auth: None,
            reason: "no",
        })),
        Pdu::Heartbeat,
        Pdu::HeartbeatAck,
        Pdu::Disassociate(Disassociate {
            reason: DisassociateReason::Idle,
            text: "idle",
        }),
        Pdu::UserMessage(UserMessage {
            header,
            payload: b"0123456789abcdef",
        }),
        Pdu::UserMessage(UserMessage {
            header: MessageHeader {
                sender: None,
                ..header
            },
            payload: b"",
        }),
        Pdu::ReplyHandleDeclaration(ReplyHandleDeclaration {
            id: RefId::new(4096).unwrap(),
            correlation: 0x0102_0304_0506_0708,
        }),
        Pdu::Reply(Reply {
            correlation: 77,
            serializer: SerializerId::BINCODE,
            type_id: 1001,
            payload: b"reply",
        }),
        Pdu::RefDeclaration(RefDeclaration {
            id: RefId::new(7).unwrap(),
            uid: 9,
            path: "volley://alpha@node-a:2552/user/é",
        }),
        Pdu::SystemMessage(SystemMessage {
            seq: 1,
            ack: 0,
            header,
            payload: b"watch",
        }),
        Pdu::SystemAck(SystemAck { ack: 1 }),
        Pdu::SpawnRequest(SpawnRequest {
            request_id: 1,
            serializer: SerializerId::BINCODE,
            kind: "k",
            name: "",
            props: b"pp",
        }),
        Pdu::SpawnResponse(SpawnResponse {
            request_id: 1,
            result: SpawnResult::Spawned { path: "/p", uid: 5 },
        }),
        Pdu::SpawnResponse(SpawnResponse {
            request_id: 2,
            result: SpawnResult::Failed { error: "x" },
        }),
        Pdu::Cluster(ClusterFrame {
            channel: ClusterChannel::Swim,
            cluster: "prod",
            payload: b"swim",
        }),
    ];
    let encoder = Encoder::new(MAX_FRAME);
    pdus.iter()
        .map(|p| {
            let mut buf = BytesMut::new();
            encoder.encode(p, &mut buf).unwrap();
            buf.to_vec()
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mutation {
    Random,
    FlipBytes,
    Truncate,
    TruncateAndPatchLength,
    ExtendLength,
    HugeLength,
    Concatenate,
}

const MUTATIONS: [Mutation; 7] = [
    Mutation::Random,
    Mutation::FlipBytes,
    Mutation::Truncate,
    Mutation::TruncateAndPatchLength,
    Mutation::ExtendLength,
    Mutation::HugeLength,
    Mutation::Concatenate,
];

fn set_len(frame: &mut [u8], len: u32) {
    frame[..4].copy_from_slice(&len.to_le_bytes());
}

fn mutate(rng: &mut Rng, corpus: &[Vec<u8>], m: Mutation) -> Vec<u8> {
    let mut f = corpus[rng.below(corpus.len())].clone();
    match m {
        Mutation::Random => (0..rng.below(80)).map(|_| rng.next() as u8).collect(),
        Mutation::FlipBytes => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(f.len());
                f[i] ^= 1 << rng.below(8);
            }
            f
        }
        Mutation::Truncate => {
            f.truncate(rng.below(f.len()));
            f
        }
        Mutation::TruncateAndPatchLength => {
            let keep = 4 + rng.below(f.len() - 4);
            f.truncate(keep);
            set_len(&mut f, (keep - 4) as u32);
            f
        }
        Mutation::ExtendLength => {
            let extra = 1 + rng.below(16);
            let len = (f.len() - 4 + extra) as u32;
            set_len(&mut f, len);
            // Sometimes the extra bytes arrive, sometimes not.
            if rng.below(2) == 0 {
                f.extend((0..extra).map(|_| rng.next() as u8));
            }
            f
        }
        Mutation::HugeLength => {
            let len = MAX_FRAME + 1 + (rng.next() as u32 % (u32::MAX - MAX_FRAME));
            set_len(&mut f, len);
            f
        }
        Mutation::Concatenate => {
            let mut out = Vec::new();
            for _ in 0..2 + rng.below(6) {
                let m = MUTATIONS[rng.below(3)]; // random, flip or truncate
                let piece = if rng.below(2) == 0 {
                    corpus[rng.below(corpus.len())].clone()
                } else {
                    mutate(rng, corpus, m)
                };
                out.extend(piece);
            }
            out
        }
    }
}

/// Exhaustive on purpose: a new variant must be looked at here.
fn variant(e: &DecodeError) -> &'static str {
    match e {
        DecodeError::BadMagic { .. } => "BadMagic",
        DecodeError::UnsupportedVersion { .. } => "UnsupportedVersion",
        DecodeError::UnknownLane(_) => "UnknownLane",
        DecodeError::FrameTooLong { .. } => "FrameTooLong",
        DecodeError::EmptyFrame => "EmptyFrame",
        DecodeError::Truncated { .. } => "Truncated",
        DecodeError::TrailingBytes { .. } => "TrailingBytes",
        DecodeError::UnknownPduKind(_) => "UnknownPduKind",
        DecodeError::Malformed { .. } => "Malformed",
        DecodeError::InvalidUtf8 { .. } => "InvalidUtf8",
        DecodeError::InvalidAddress { .. } => "InvalidAddress",
    }
}

#[test]
fn hundred_thousand_mutated_frames() {
    let corpus = corpus();
    let decoder = Decoder::new(DecoderConfig {
        max_frame_len: MAX_FRAME,
        ..Default::default()
    });
    let encoder = Encoder::new(MAX_FRAME);
    let mut rng = Rng(0x5eed_f00d);
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    let mut reencoded = BytesMut::new();

    for i in 0..100_000 {
        let m = MUTATIONS[i % MUTATIONS.len()];
        let input = mutate(&mut rng, &corpus, m);

        let mut frames = decoder.frames(&input);
        let mut start = 0;
        let mut errors = Vec::new();
        for r in &mut frames {
            match r {
                Ok(pdu) => {
                    reencoded.clear();
                    encoder.encode(&pdu, &mut reencoded).unwrap();
                    let end = start + reencoded.len();
                    assert_eq!(
                        &reencoded[..],
                        &input[start..end],
                        "{m:?}: not canonical: {pdu:?}"
                    );
                    start = end;
                    *counts.entry("ok").or_default() += 1;
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    *counts.entry(variant(&e)).or_default() += 1;
                    errors.push(e);
                }
            }
        }
        assert!(frames.consumed() <= input.len());
        assert_eq!(frames.consumed(), start);
        assert!(
            errors.len() <= 1,
            "iterator must stop after the first error"
        );

        match m {
            Mutation::HugeLength => assert!(
                matches!(
                    errors.as_slice(),
                    [DecodeError::FrameTooLong { max: 4096, .. }]
                ),
                "{errors:?}"
            ),
            Mutation::Truncate => assert!(errors.is_empty() && frames.consumed() == 0),
            Mutation::TruncateAndPatchLength | Mutation::ExtendLength => assert!(matches!(
                errors.as_slice(),
                [] | [DecodeError::Truncated { .. }
                    | DecodeError::TrailingBytes { .. }
                    | DecodeError::EmptyFrame
                    | DecodeError::Malformed { .. }
                    | DecodeError::InvalidUtf8 { .. }
                    | DecodeError::InvalidAddress { .. }]
            )),
            _ => {}
        }

        if m == Mutation::Random {
            match Preamble::decode(&input) {
                Ok(_) => {}
                Err(e) => assert!(matches!(
                    variant(&e),
                    "BadMagic" | "UnsupportedVersion" | "UnknownLane"
                )),
            }
        }
    }
    // The mutations must reach deep into the decoder, not stop at framing.
    for v in [
        "ok",
        "FrameTooLong",
        "Truncated",
        "TrailingBytes",
        "UnknownPduKind",
        "Malformed",
        "InvalidUtf8",
    ] {
        assert!(
            counts.get(v).copied().unwrap_or(0) > 0,
            "{v} never hit: {counts:?}"
        );
    }
}
