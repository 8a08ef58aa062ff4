//! Encode and decode of user-message frames in batches of 1,000, the way the
//! transport uses the codec: append to one reused buffer, then decode a whole
//! read buffer in one pass. Throughput is reported per message.

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::*;

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
struct Pair {
    a: i64,
    b: i64,
}

const BATCH: usize = 1000;

fn header(i: usize) -> MessageHeader {
    MessageHeader {
        recipient: RefId::new(1 + (i as u32 % 64)).unwrap(),
        sender: RefId::new(100),
        serializer: SerializerId::BINCODE,
        type_id: 42,
    }
}

fn encode_batch(encoder: &Encoder, buf: &mut BytesMut) {
    for i in 0..BATCH {
        let v = Pair {
            a: i as i64,
            b: -(i as i64),
        };
        encoder
            .user_message_with(buf, &header(i), |b| {
                BincodeSerializer.encode(black_box(&v), b)
            })
            .unwrap();
    }
}

fn codec(c: &mut Criterion) {
    let encoder = Encoder::default();
    let decoder = Decoder::default();
    let mut group = c.benchmark_group("codec");
    group.throughput(Throughput::Elements(BATCH as u64));

    let mut buf = BytesMut::with_capacity(BATCH * 64);
    group.bench_function("encode_user_1000_bincode_pair", |b| {
        b.iter(|| {
            buf.clear();
            encode_batch(&encoder, &mut buf);
            black_box(buf.len())
        })
    });

    let payload = [0xabu8; 16];
    group.bench_function("encode_user_1000_raw16", |b| {
        b.iter(|| {
            buf.clear();
            for i in 0..BATCH {
                encoder
                    .user_message_with(&mut buf, &header(i), |b| {
                        b.extend_from_slice(black_box(&payload));
                        Ok(())
                    })
                    .unwrap();
            }
            black_box(buf.len())
        })
    });

    buf.clear();
    encode_batch(&encoder, &mut buf);
    let wire = buf.clone().freeze();

    group.bench_function("decode_user_1000_frames_only", |b| {
        b.iter(|| {
            let mut sum = 0usize;
            let mut frames = decoder.frames(black_box(&wire));
            for pdu in &mut frames {
                if let Ok(Pdu::UserMessage(m)) = pdu {
                    sum += m.header.recipient.get() as usize + m.payload.len();
                }
            }
            assert_eq!(frames.consumed(), wire.len());
            black_box(sum)
        })
    });

    group.bench_function("decode_user_1000_bincode_pair", |b| {
        b.iter(|| {
            let mut sum = 0i64;
            for pdu in decoder.frames(black_box(&wire)) {
                if let Ok(Pdu::UserMessage(m)) = pdu {
                    let v: Pair = BincodeSerializer.decode(m.payload).unwrap();
                    sum += v.a ^ v.b;
                }
            }
            black_box(sum)
        })
    });

    group.bench_function("decode_user_1000_zero_copy_slices", |b| {
        b.iter(|| {
            let mut total = 0usize;
            for pdu in decoder.frames(black_box(&wire)) {
                if let Ok(Pdu::UserMessage(m)) = pdu {
                    total += wire.slice_ref(m.payload).len();
                }
            }
            black_box(total)
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = codec
}
criterion_main!(benches);
