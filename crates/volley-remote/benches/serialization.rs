//! Compares serde binary formats on two small messages, each encoded into a
//! reused buffer (as the codec does) and decoded from a byte slice.
//!
//! The numbers drive the choice of the default serializer; see
//! `docs/wire-protocol.md`, section "Serialization".

use bytes::{BufMut, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::time::Duration;

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
struct Ping {
    seq: u64,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
struct Pair {
    a: i64,
    b: i64,
}

/// Writes postcard output straight into a `BytesMut`, no scratch buffer.
struct BytesMutFlavor<'a>(&'a mut BytesMut);

impl postcard::ser_flavors::Flavor for BytesMutFlavor<'_> {
    type Output = ();
    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.put_u8(data);
        Ok(())
    }
    #[inline]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(data);
        Ok(())
    }
    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// Lets bincode 2 write into a `BytesMut` without going through `io::Write`.
struct BytesMutWriter<'a>(&'a mut BytesMut);

impl bincode::enc::write::Writer for BytesMutWriter<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> Result<(), bincode::error::EncodeError> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

type EncodeFn<T> = fn(&T, &mut BytesMut);
type DecodeFn<T> = fn(&[u8]) -> T;

struct Format<T> {
    name: &'static str,
    encode: EncodeFn<T>,
    decode: DecodeFn<T>,
}

fn formats<T: Serialize + DeserializeOwned>() -> Vec<Format<T>> {
    vec![
        Format {
            name: "bincode1",
            encode: |v, buf| bincode1::serialize_into(buf.writer(), v).unwrap(),
            decode: |b| bincode1::deserialize(b).unwrap(),
        },
        Format {
            name: "bincode2-varint",
            encode: |v, buf| {
                bincode::serde::encode_into_writer(
                    v,
                    BytesMutWriter(buf),
                    bincode::config::standard(),
                )
                .unwrap()
            },
            decode: |b| {
                bincode::serde::decode_from_slice(b, bincode::config::standard())
                    .unwrap()
                    .0
            },
        },
        Format {
            name: "bincode2-fixint",
            encode: |v, buf| {
                bincode::serde::encode_into_writer(
                    v,
                    BytesMutWriter(buf),
                    bincode::config::standard().with_fixed_int_encoding(),
                )
                .unwrap()
            },
            decode: |b| {
                bincode::serde::decode_from_slice(
                    b,
                    bincode::config::standard().with_fixed_int_encoding(),
                )
                .unwrap()
                .0
            },
        },
        Format {
            name: "postcard",
            encode: |v, buf| postcard::serialize_with_flavor(v, BytesMutFlavor(buf)).unwrap(),
            decode: |b| postcard::from_bytes(b).unwrap(),
        },
        Format {
            name: "rmp-serde",
            encode: |v, buf| rmp_serde::encode::write(&mut buf.writer(), v).unwrap(),
            decode: |b| rmp_serde::from_slice(b).unwrap(),
        },
        Format {
            // bitcode's serde entry point returns a fresh Vec per call; the
            // copy into the buffer is part of what the codec would pay.
            name: "bitcode-serde",
            encode: |v, buf| buf.extend_from_slice(&bitcode::serialize(v).unwrap()),
            decode: |b| bitcode::deserialize(b).unwrap(),
        },
    ]
}

fn bench_message<T>(c: &mut Criterion, label: &str, value: T)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let mut group = c.benchmark_group(format!("serde/{label}"));
    for f in formats::<T>() {
        let mut buf = BytesMut::with_capacity(256);
        (f.encode)(&value, &mut buf);
        let encoded = buf.clone().freeze();
        assert_eq!((f.decode)(&encoded), value, "{} round trip", f.name);
        println!("{label} {}: {} bytes", f.name, encoded.len());

        group.bench_with_input(BenchmarkId::new("encode", f.name), &value, |b, v| {
            b.iter(|| {
                buf.clear();
                (f.encode)(black_box(v), &mut buf);
                black_box(buf.len())
            })
        });
        group.bench_with_input(BenchmarkId::new("decode", f.name), &encoded, |b, e| {
            b.iter(|| black_box((f.decode)(black_box(&e[..]))))
        });
    }
    group.finish();
}

fn serde_formats(c: &mut Criterion) {
    bench_message(c, "ping", Ping { seq: 1_234_567 });
    bench_message(c, "pair", Pair { a: 12_345, b: -678 });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = serde_formats
}
criterion_main!(benches);
