//! Message types that write and read their bincode bytes themselves,
//! without serde ([`DirectCodec`], registered with
//! [`Registry::register_direct`](crate::Registry::register_direct)).
//!
//! Why: for a small message (a few integers) the serde path costs far more
//! than its bytes. serde has no context parameter, so an `ActorRef` inside
//! a serde payload finds the connection's ref tables through scoped
//! thread-locals that the lane and the reader set around every payload;
//! bincode's visitors and the decode limits' adapter wrap every field. A
//! `DirectCodec` is handed the connection's tables ([`DirectWriter`],
//! [`DirectReader`]), so none of that runs, and a message of integers is a
//! few stores and loads.
//!
//! The bytes are bincode's (fixed-width little-endian integers, the
//! default serializer's configuration), under serializer id 2: the wire
//! does not change, and a peer that registers the same type with
//! [`Registry::register`](crate::Registry::register) reads and writes the
//! same messages. The impls volley provides keep to that; an application's
//! impl must too (check it against [`BincodeSerializer`](super::BincodeSerializer)
//! with [`DirectSerializer`], as volley's own tests do).
//!
//! Only fixed shapes are provided (integers, floats, `bool`, `()`,
//! `Option`, tuples, `ActorRef`): nothing that allocates by a
//! length the peer chooses, so the decode limits that guard serde payloads
//! (`depth.rs`) have nothing to guard here.

use std::cell::RefCell;

use bytes::BytesMut;
use volley::remote::codec::ImportedRef;
use volley::ActorRef;

use super::{SerializeError, Serializer, SerializerId};
use crate::transport::refs::tables::{ExportTable, ImportTable};
use crate::wire::REQUEST_REPLY_REF;

/// A message type that encodes itself as the bytes bincode (with volley's
/// configuration: fixed-width little-endian integers) writes for its serde
/// form, without going through serde. Register it with
/// [`Registry::register_direct`](crate::Registry::register_direct).
///
/// For an enum, write the variant's index ([`DirectWriter::variant`], a
/// `u32`) and then its fields in order; for a struct or tuple, its fields
/// in order. Decoding reads them back the same way, and an unknown variant
/// is [`DirectError::UnknownVariant`].
pub trait DirectCodec: Sized {
    /// Appends this value's bytes.
    fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError>;
    /// Reads one value from the front of `input`.
    fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError>;
}

/// Why a direct payload could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectError {
    /// The payload ended before the value did.
    #[error("payload ends early: {needed} more bytes needed")]
    Truncated {
        /// Bytes missing for the field being read.
        needed: usize,
    },
    /// A byte that is not a valid `bool` (0 or 1) or `Option` tag.
    #[error("invalid {what} byte {byte}")]
    InvalidTag {
        /// `"bool"` or `"Option"`.
        what: &'static str,
        /// The byte read.
        byte: u8,
    },
    /// An enum variant index the type does not have.
    #[error("{ty} has no variant {index}")]
    UnknownVariant {
        /// The enum.
        ty: &'static str,
        /// The index read.
        index: u32,
    },
    /// A ref id not declared on the connection, or declared for an actor
    /// of another protocol.
    #[error("actor ref id {id} is not declared, or not an actor of {protocol}")]
    UnknownRef {
        /// The id read.
        id: u32,
        /// The protocol expected.
        protocol: &'static str,
    },
    /// An `ActorRef` outside a connection (no ref table to name it by).
    #[error("an ActorRef can only be written or read by a volley transport")]
    NoConnection,
}

impl DirectError {
    /// The error of a variant index `ty` does not have.
    pub fn unknown_variant<T>(index: u32) -> Self {
        DirectError::UnknownVariant {
            ty: std::any::type_name::<T>(),
            index,
        }
    }
}

/// Where a [`DirectCodec`] writes: the frame being built, and the
/// connection's export table for the refs in the message.
pub struct DirectWriter<'a> {
    buf: &'a mut BytesMut,
    exports: Option<&'a RefCell<ExportTable>>,
}

impl<'a> DirectWriter<'a> {
    #[inline]
    pub(crate) fn new(buf: &'a mut BytesMut, exports: Option<&'a RefCell<ExportTable>>) -> Self {
        DirectWriter { buf, exports }
    }

    /// Writes `value`.
    #[inline(always)]
    pub fn put<T: DirectCodec>(&mut self, value: &T) -> Result<(), DirectError> {
        value.encode(self)
    }

    /// Writes an enum's variant index.
    #[inline(always)]
    pub fn variant(&mut self, index: u32) {
        // Not `put_u32_le`: `BufMut`'s provided writers go through an
        // out-of-line `put_slice` and a `memcpy` call per field.
        self.buf.extend_from_slice(&index.to_le_bytes());
    }

    /// Writes raw bytes (what a field's own encoding produced).
    #[inline(always)]
    pub fn put_slice(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
}

/// What a [`DirectCodec`] reads: one payload, and the connection's import
/// table for the refs in it.
pub struct DirectReader<'a> {
    bytes: &'a [u8],
    imports: Option<&'a ImportTable>,
    /// The reply handle of the Request frame being read: what ref id 0
    /// means in its payload.
    request: Option<&'a ImportedRef>,
}

impl<'a> DirectReader<'a> {
    #[inline]
    pub(crate) fn new(
        bytes: &'a [u8],
        imports: Option<&'a ImportTable>,
        request: Option<&'a ImportedRef>,
    ) -> Self {
        DirectReader {
            bytes,
            imports,
            request,
        }
    }

    /// Reads a `T`.
    #[inline(always)]
    pub fn take<T: DirectCodec>(&mut self) -> Result<T, DirectError> {
        T::decode(self)
    }

    /// Reads an enum's variant index.
    #[inline(always)]
    pub fn variant(&mut self) -> Result<u32, DirectError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// Reads the next `N` bytes.
    #[inline(always)]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DirectError> {
        match self.bytes.split_first_chunk::<N>() {
            Some((head, rest)) => {
                self.bytes = rest;
                Ok(*head)
            }
            None => Err(DirectError::Truncated {
                needed: N - self.bytes.len(),
            }),
        }
    }

    /// Bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.bytes.len()
    }

    fn actor_ref<M: Send + 'static>(&mut self) -> Result<ActorRef<M>, DirectError> {
        let id = u32::from_le_bytes(self.array()?);
        let imports = self.imports.ok_or(DirectError::NoConnection)?;
        // Only a Request's payload may name its reply handle as 0; anywhere
        // else 0 is an undeclared id.
        let entry = match id {
            REQUEST_REPLY_REF => self.request,
            id => imports.get(id),
        };
        entry
            .and_then(ImportedRef::typed::<M>)
            .ok_or(DirectError::UnknownRef {
                id,
                protocol: std::any::type_name::<M>(),
            })
    }
}

/// Encodes `value` into `buf` with the connection's export table.
#[inline]
pub(crate) fn encode_with<M: DirectCodec>(
    value: &M,
    buf: &mut BytesMut,
    exports: Option<&RefCell<ExportTable>>,
) -> Result<(), SerializeError> {
    let start = buf.len();
    value
        .encode(&mut DirectWriter::new(buf, exports))
        .map_err(|e| {
            buf.truncate(start);
            encode_error(e)
        })
}

/// Decodes a whole payload with the connection's import table; bytes left
/// over are an error, as for the serde serializers.
#[inline]
pub(crate) fn decode_with<M: DirectCodec>(
    bytes: &[u8],
    imports: Option<&ImportTable>,
    request: Option<&ImportedRef>,
) -> Result<M, SerializeError> {
    let mut reader = DirectReader::new(bytes, imports, request);
    let value = M::decode(&mut reader).map_err(decode_error)?;
    match reader.remaining() {
        0 => Ok(value),
        extra => Err(SerializeError::TrailingBytes {
            serializer: SerializerId::BINCODE,
            extra,
        }),
    }
}

#[cold]
fn encode_error(e: DirectError) -> SerializeError {
    SerializeError::Encode {
        serializer: SerializerId::BINCODE,
        source: Box::new(e),
    }
}

#[cold]
fn decode_error(e: DirectError) -> SerializeError {
    SerializeError::Decode {
        serializer: SerializerId::BINCODE,
        source: Box::new(e),
    }
}

/// A [`DirectCodec`] type as a [`Serializer`] outside any connection (an
/// `ActorRef` in it is [`DirectError::NoConnection`]): for checking an
/// impl's bytes against [`BincodeSerializer`](super::BincodeSerializer).
/// Id 2, as bincode.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirectSerializer;

impl<T: DirectCodec> Serializer<T> for DirectSerializer {
    fn id(&self) -> SerializerId {
        SerializerId::BINCODE
    }

    fn encode(&self, value: &T, buf: &mut BytesMut) -> Result<(), SerializeError> {
        encode_with(value, buf, None)
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, SerializeError> {
        decode_with(bytes, None, None)
    }
}

macro_rules! fixed_width {
    ($($t:ty),*) => {$(
        impl DirectCodec for $t {
            #[inline(always)]
            fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
                out.put_slice(&self.to_le_bytes());
                Ok(())
            }

            #[inline(always)]
            fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
                Ok(<$t>::from_le_bytes(input.array()?))
            }
        }
    )*};
}

fixed_width!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

impl DirectCodec for bool {
    #[inline(always)]
    fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
        out.put_slice(&[u8::from(*self)]);
        Ok(())
    }

    #[inline(always)]
    fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
        match input.array::<1>()?[0] {
            0 => Ok(false),
            1 => Ok(true),
            byte => Err(DirectError::InvalidTag { what: "bool", byte }),
        }
    }
}

impl DirectCodec for () {
    #[inline(always)]
    fn encode(&self, _out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
        Ok(())
    }

    #[inline(always)]
    fn decode(_input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
        Ok(())
    }
}

impl<T: DirectCodec> DirectCodec for Option<T> {
    #[inline]
    fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
        match self {
            None => {
                out.put_slice(&[0]);
                Ok(())
            }
            Some(value) => {
                out.put_slice(&[1]);
                value.encode(out)
            }
        }
    }

    #[inline]
    fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
        match input.array::<1>()?[0] {
            0 => Ok(None),
            1 => Ok(Some(T::decode(input)?)),
            byte => Err(DirectError::InvalidTag {
                what: "Option",
                byte,
            }),
        }
    }
}

macro_rules! tuple {
    ($($name:ident)+) => {
        impl<$($name: DirectCodec),+> DirectCodec for ($($name,)+) {
            #[inline(always)]
            #[allow(non_snake_case)]
            fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
                let ($($name,)+) = self;
                $($name.encode(out)?;)+
                Ok(())
            }

            #[inline(always)]
            fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
                Ok(($($name::decode(input)?,)+))
            }
        }
    };
}

tuple!(A);
tuple!(A B);
tuple!(A B C);
tuple!(A B C D);
tuple!(A B C D E);
tuple!(A B C D E F);

/// A ref is its id on the connection, a `u32`, as through serde.
impl<M: Send + 'static> DirectCodec for ActorRef<M> {
    #[inline]
    fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
        let exports = out.exports.ok_or(DirectError::NoConnection)?;
        let id = exports
            .borrow_mut()
            .export_at(self.target_key(), || self.to_any());
        out.put_slice(&id.to_le_bytes());
        Ok(())
    }

    #[inline]
    fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
        input.actor_ref()
    }
}

#[cfg(test)]
mod tests;
