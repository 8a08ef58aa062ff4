//! Payload serializers, keyed by the serializer id carried in every message.
//!
//! The id travels on the wire, so the receiving side picks the matching
//! serializer per message and one system can mix formats (serde types,
//! protobuf types, raw bytes). Ids below [`SerializerId::FIRST_USER`] are
//! reserved for volley.

use std::error::Error as StdError;
use std::fmt;
use std::marker::PhantomData;

use bytes::{BufMut, Bytes, BytesMut};
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer};
use serde::Serialize;

mod depth;
pub mod direct;
mod topic;

pub use depth::{with_decode_limits, DEFAULT_MAX_COLLECTION_BYTES, DEFAULT_MAX_DEPTH};
pub use direct::{DirectCodec, DirectError, DirectReader, DirectSerializer, DirectWriter};
pub use topic::TopicSerializer;

/// The seed the serde serializers decode with: `T`, within this thread's
/// decode limits (`depth.rs`).
struct Limited<T>(PhantomData<T>);

impl<'de, T: serde::Deserialize<'de>> DeserializeSeed<'de> for Limited<T> {
    type Value = T;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, inner: D) -> Result<T, D::Error> {
        depth::deserialize_limited(PhantomData::<T>, inner)
    }
}

/// Identifies a payload format on the wire (a `u16`, little endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SerializerId(pub u16);

impl SerializerId {
    /// Raw bytes, passed through untouched ([`BytesSerializer`]).
    pub const BYTES: SerializerId = SerializerId(1);
    /// bincode 2, fixed-width little-endian integers ([`BincodeSerializer`]);
    /// the default.
    pub const BINCODE: SerializerId = SerializerId(2);
    /// postcard 1.x ([`PostcardSerializer`]): smaller, slower.
    pub const POSTCARD: SerializerId = SerializerId(3);
    /// Reserved for a protobuf (prost) serializer.
    pub const PROTOBUF: SerializerId = SerializerId(4);
    /// The serializer used when none is configured for a type.
    pub const DEFAULT: SerializerId = SerializerId::BINCODE;
    /// First id available to applications; lower ids belong to volley.
    pub const FIRST_USER: SerializerId = SerializerId(1000);
}

impl fmt::Display for SerializerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A payload could not be serialized or deserialized.
#[derive(Debug, thiserror::Error)]
pub enum SerializeError {
    /// Encoding the value failed.
    #[error("serializer {serializer} failed to encode: {source}")]
    Encode {
        /// The serializer that failed.
        serializer: SerializerId,
        /// The format library's error.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The bytes are not a valid encoding of the expected type.
    #[error("serializer {serializer} failed to decode: {source}")]
    Decode {
        /// The serializer that failed.
        serializer: SerializerId,
        /// The format library's error.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The value decoded but bytes were left over, which usually means the
    /// type id and the payload disagree.
    #[error("serializer {serializer} left {extra} trailing bytes")]
    TrailingBytes {
        /// The serializer that decoded.
        serializer: SerializerId,
        /// Unconsumed payload bytes.
        extra: usize,
    },
}

/// Turns values of `T` into payload bytes and back.
///
/// `encode` appends straight into the frame being built, so a message costs
/// no intermediate buffer.
pub trait Serializer<T> {
    /// The id written into every message this serializer encodes.
    fn id(&self) -> SerializerId;
    /// Appends the encoding of `value` to `buf`.
    fn encode(&self, value: &T, buf: &mut BytesMut) -> Result<(), SerializeError>;
    /// Decodes a whole payload; trailing bytes are an error.
    fn decode(&self, bytes: &[u8]) -> Result<T, SerializeError>;
}

/// Upper bound on the bytes one bincode decode may claim. It matches the
/// large-lane frame limit; without it a forged length prefix could make a
/// `Vec` pre-allocate gigabytes.
const BINCODE_LIMIT: usize = 16 * 1024 * 1024;

type BincodeConfig = bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Fixint,
    bincode::config::Limit<BINCODE_LIMIT>,
>;

const BINCODE_CONFIG: BincodeConfig = bincode::config::standard()
    .with_fixed_int_encoding()
    .with_limit::<BINCODE_LIMIT>();

/// serde values as bincode 2 with fixed-width little-endian integers: the
/// fastest format measured (see `docs/wire-protocol.md`). Id 2, the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct BincodeSerializer;

struct BytesMutWriter<'a>(&'a mut BytesMut);

impl bincode::enc::write::Writer for BytesMutWriter<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> Result<(), bincode::error::EncodeError> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

impl<T: Serialize + DeserializeOwned> Serializer<T> for BincodeSerializer {
    fn id(&self) -> SerializerId {
        SerializerId::BINCODE
    }

    #[inline]
    fn encode(&self, value: &T, buf: &mut BytesMut) -> Result<(), SerializeError> {
        bincode::serde::encode_into_writer(value, BytesMutWriter(buf), BINCODE_CONFIG).map_err(
            |e| SerializeError::Encode {
                serializer: SerializerId::BINCODE,
                source: Box::new(e),
            },
        )
    }

    #[inline]
    fn decode(&self, bytes: &[u8]) -> Result<T, SerializeError> {
        let (value, used) =
            bincode::serde::seed_decode_from_slice(Limited(PhantomData), bytes, BINCODE_CONFIG)
                .map_err(|e| SerializeError::Decode {
                    serializer: SerializerId::BINCODE,
                    source: Box::new(e),
                })?;
        check_consumed(SerializerId::BINCODE, bytes.len(), used)?;
        Ok(value)
    }
}

/// serde values as postcard 1.x (varint integers): smaller than bincode for
/// small integers, but slower (measured in `docs/wire-protocol.md` §9).
/// Id 3.
#[derive(Debug, Clone, Copy, Default)]
pub struct PostcardSerializer;

struct PostcardFlavor<'a>(&'a mut BytesMut);

impl postcard::ser_flavors::Flavor for PostcardFlavor<'_> {
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

impl<T: Serialize + DeserializeOwned> Serializer<T> for PostcardSerializer {
    fn id(&self) -> SerializerId {
        SerializerId::POSTCARD
    }

    fn encode(&self, value: &T, buf: &mut BytesMut) -> Result<(), SerializeError> {
        postcard::serialize_with_flavor(value, PostcardFlavor(buf)).map_err(|e| {
            SerializeError::Encode {
                serializer: SerializerId::POSTCARD,
                source: Box::new(e),
            }
        })
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, SerializeError> {
        let failed = |e: postcard::Error| SerializeError::Decode {
            serializer: SerializerId::POSTCARD,
            source: Box::new(e),
        };
        let mut de = postcard::Deserializer::from_bytes(bytes);
        let value = Limited(PhantomData).deserialize(&mut de).map_err(failed)?;
        let rest = de.finalize().map_err(failed)?;
        check_consumed(
            SerializerId::POSTCARD,
            bytes.len(),
            bytes.len() - rest.len(),
        )?;
        Ok(value)
    }
}

/// Payloads that already are bytes. Id 1. Decoding copies; a transport that
/// wants zero copy slices the read buffer instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct BytesSerializer;

impl Serializer<Bytes> for BytesSerializer {
    fn id(&self) -> SerializerId {
        SerializerId::BYTES
    }

    fn encode(&self, value: &Bytes, buf: &mut BytesMut) -> Result<(), SerializeError> {
        buf.extend_from_slice(value);
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Bytes, SerializeError> {
        Ok(Bytes::copy_from_slice(bytes))
    }
}

fn check_consumed(serializer: SerializerId, len: usize, used: usize) -> Result<(), SerializeError> {
    if used == len {
        Ok(())
    } else {
        Err(SerializeError::TrailingBytes {
            serializer,
            extra: len.saturating_sub(used),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Pair {
        a: i64,
        b: i64,
    }

    #[test]
    fn bincode_is_fixed_width_little_endian() {
        let mut buf = BytesMut::new();
        BincodeSerializer
            .encode(&Pair { a: 1, b: -2 }, &mut buf)
            .unwrap();
        assert_eq!(
            &buf[..],
            &[1, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        let back: Pair = BincodeSerializer.decode(&buf).unwrap();
        assert_eq!(back, Pair { a: 1, b: -2 });
    }

    #[test]
    fn trailing_bytes_and_garbage_are_errors() {
        let mut buf = BytesMut::new();
        BincodeSerializer
            .encode(&Pair { a: 1, b: 2 }, &mut buf)
            .unwrap();
        buf.put_u8(0);
        let r: Result<Pair, _> = BincodeSerializer.decode(&buf);
        assert!(matches!(
            r,
            Err(SerializeError::TrailingBytes { extra: 1, .. })
        ));
        let r: Result<Pair, _> = BincodeSerializer.decode(&buf[..3]);
        assert!(matches!(r, Err(SerializeError::Decode { .. })));

        let mut buf = BytesMut::new();
        PostcardSerializer
            .encode(&Pair { a: 1, b: -2 }, &mut buf)
            .unwrap();
        assert_eq!(&buf[..], &[2, 3]);
        buf.put_u8(7);
        let r: Result<Pair, _> = PostcardSerializer.decode(&buf);
        assert!(matches!(
            r,
            Err(SerializeError::TrailingBytes { extra: 1, .. })
        ));
    }

    #[test]
    fn forged_length_does_not_allocate_gigabytes() {
        // A Vec<u8> claiming 2^40 elements in an 8-byte payload.
        let forged = (1u64 << 40).to_le_bytes();
        let r: Result<Vec<u8>, _> = BincodeSerializer.decode(&forged);
        assert!(matches!(r, Err(SerializeError::Decode { .. })));
    }
}
