//! A serde `Deserializer` adapter that bounds how deep a payload nests and
//! how much its collections may hold, so that a hostile payload is a decode
//! error instead of a stack overflow or an allocation storm.
//!
//! Neither bincode 2 nor postcard limits nesting: a recursive type
//! (`enum Nest { Leaf, Node(Box<Nest>) }`) nested a few tens of thousands
//! deep in one frame recurses until the stack overflows, which aborts the
//! process. No maintained crate offers a depth-limiting adapter
//! (`serde_stacker` grows the stack instead, which turns the crash into
//! unbounded memory), so this one is hand-written.
//!
//! [`Limited`] wraps the format's deserializer and every visitor, seq, map
//! and enum access it hands out. Each level of nesting (a struct, tuple,
//! sequence, map, enum variant, `Some` or newtype) takes one unit of depth;
//! at zero the next level is an error, so a partially decoded value is never
//! deeper than the limit (dropping it recurses too). Each element of a
//! sequence or map is charged its in-memory size (at least one byte) against
//! a per-payload budget: elements that take no input bytes (`Vec<()>`) or
//! far more memory than input (`Vec<Option<[u64; 32]>>`, one byte per
//! `None`) cannot make a frame of bounded size cost unbounded time or memory.

use std::cell::Cell;
use std::fmt;

use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, Error, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// Default deepest nesting of a payload.
pub const DEFAULT_MAX_DEPTH: u32 = 128;
/// Default budget, in bytes, of the elements one payload's collections hold.
pub const DEFAULT_MAX_COLLECTION_BYTES: usize = 32 * 1024 * 1024;

thread_local! {
    static LIMITS: Cell<(u32, usize)> =
        const { Cell::new((DEFAULT_MAX_DEPTH, DEFAULT_MAX_COLLECTION_BYTES)) };
}

/// Runs `f` with the decode limits of this thread's serde serializers set
/// to `max_depth` and `max_collection_bytes` (the transport sets a node's
/// `[remote.limits]` around each inbound message; the defaults apply
/// elsewhere).
pub fn with_decode_limits<R>(
    max_depth: u32,
    max_collection_bytes: usize,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore((u32, usize));
    impl Drop for Restore {
        fn drop(&mut self) {
            LIMITS.with(|l| l.set(self.0));
        }
    }
    let _restore = Restore(LIMITS.with(|l| l.replace((max_depth, max_collection_bytes))));
    f()
}

/// Deserializes with `seed` from `inner` within this thread's limits.
#[inline]
pub(crate) fn deserialize_limited<'de, S, D>(seed: S, inner: D) -> Result<S::Value, D::Error>
where
    S: DeserializeSeed<'de>,
    D: Deserializer<'de>,
{
    let (left, budget) = LIMITS.with(Cell::get);
    let budget = Cell::new(budget);
    seed.deserialize(Limited {
        inner,
        left,
        budget: &budget,
    })
}

/// A deserializer that may nest `left` more levels.
pub(crate) struct Limited<'b, D> {
    inner: D,
    left: u32,
    budget: &'b Cell<usize>,
}

/// A seed whose value is decoded by a [`Limited`] deserializer.
struct Nested<'b, S> {
    seed: S,
    left: u32,
    budget: &'b Cell<usize>,
}

/// A visitor whose compound accesses are limited.
struct Wrap<'b, V> {
    visitor: V,
    left: u32,
    budget: &'b Cell<usize>,
}

/// Seq, map, enum and variant accesses one level down.
struct Access<'b, A> {
    inner: A,
    left: u32,
    budget: &'b Cell<usize>,
}

fn too_deep<E: Error>() -> E {
    let (max, _) = LIMITS.with(Cell::get);
    E::custom(format_args!(
        "the payload nests deeper than {max} levels (limits.max_decode_depth)"
    ))
}

/// One level down, or the error that there is none left.
#[inline]
fn enter<E: Error>(left: u32) -> Result<u32, E> {
    left.checked_sub(1).ok_or_else(too_deep)
}

/// Charges one element of type `T` against the payload's budget.
#[inline]
fn charge<T, E: Error>(budget: &Cell<usize>) -> Result<(), E> {
    let cost = std::mem::size_of::<T>().max(1);
    match budget.get().checked_sub(cost) {
        Some(rest) => {
            budget.set(rest);
            Ok(())
        }
        None => {
            let (_, max) = LIMITS.with(Cell::get);
            Err(E::custom(format_args!(
                "the payload's collections hold more than {max} bytes (limits.max_decode_collection_bytes)"
            )))
        }
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Nested<'_, S> {
    type Value = S::Value;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, inner: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Limited {
            inner,
            left: self.left,
            budget: self.budget,
        })
    }
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[inline]
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* Wrap { visitor, left: self.left, budget: self.budget })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Limited<'_, D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {$(
        #[inline]
        fn $method<E: Error>(self, v: $ty) -> Result<V::Value, E> {
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    #[inline]
    fn visit_none<E: Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    #[inline]
    fn visit_unit<E: Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    #[inline]
    fn visit_some<D: Deserializer<'de>>(self, inner: D) -> Result<V::Value, D::Error> {
        let left = enter(self.left)?;
        self.visitor.visit_some(Limited {
            inner,
            left,
            budget: self.budget,
        })
    }

    #[inline]
    fn visit_newtype_struct<D: Deserializer<'de>>(self, inner: D) -> Result<V::Value, D::Error> {
        let left = enter(self.left)?;
        self.visitor.visit_newtype_struct(Limited {
            inner,
            left,
            budget: self.budget,
        })
    }

    #[inline]
    fn visit_seq<A: SeqAccess<'de>>(self, inner: A) -> Result<V::Value, A::Error> {
        let left = enter(self.left)?;
        self.visitor.visit_seq(Access {
            inner,
            left,
            budget: self.budget,
        })
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, inner: A) -> Result<V::Value, A::Error> {
        let left = enter(self.left)?;
        self.visitor.visit_map(Access {
            inner,
            left,
            budget: self.budget,
        })
    }

    #[inline]
    fn visit_enum<A: EnumAccess<'de>>(self, inner: A) -> Result<V::Value, A::Error> {
        let left = enter(self.left)?;
        self.visitor.visit_enum(Access {
            inner,
            left,
            budget: self.budget,
        })
    }
}

impl<'b, A> Access<'b, A> {
    #[inline]
    fn nested<S>(&self, seed: S) -> Nested<'b, S> {
        Nested {
            seed,
            left: self.left,
            budget: self.budget,
        }
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Access<'_, A> {
    type Error = A::Error;

    #[inline]
    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        charge::<S::Value, _>(self.budget)?;
        self.inner.next_element_seed(self.nested(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Access<'_, A> {
    type Error = A::Error;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        charge::<K::Value, _>(self.budget)?;
        self.inner.next_key_seed(self.nested(seed))
    }

    #[inline]
    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        charge::<S::Value, _>(self.budget)?;
        self.inner.next_value_seed(self.nested(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, 'b, A: EnumAccess<'de>> EnumAccess<'de> for Access<'b, A> {
    type Error = A::Error;
    type Variant = Access<'b, A::Variant>;

    #[inline]
    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let nested = self.nested(seed);
        let (value, inner) = self.inner.variant_seed(nested)?;
        Ok((
            value,
            Access {
                inner,
                left: self.left,
                budget: self.budget,
            },
        ))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Access<'_, A> {
    type Error = A::Error;

    #[inline]
    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    #[inline]
    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        let nested = self.nested(seed);
        self.inner.newtype_variant_seed(nested)
    }

    #[inline]
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        let wrapped = Wrap {
            visitor,
            left: self.left,
            budget: self.budget,
        };
        self.inner.tuple_variant(len, wrapped)
    }

    #[inline]
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        let wrapped = Wrap {
            visitor,
            left: self.left,
            budget: self.budget,
        };
        self.inner.struct_variant(fields, wrapped)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use crate::serialization::{
        with_decode_limits, BincodeSerializer, PostcardSerializer, SerializeError, Serializer,
    };

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Nest {
        Leaf,
        Node(Box<Nest>),
    }

    fn nest(depth: usize) -> Nest {
        (0..depth).fold(Nest::Leaf, |inner, _| Nest::Node(Box::new(inner)))
    }

    /// `Node` `depth` times, then `Leaf`, as bincode with fixed-width
    /// variant indexes writes it (built by hand: encoding a deep value
    /// recurses as well).
    fn bincode_nest(depth: usize) -> Vec<u8> {
        let mut bytes = [1u8, 0, 0, 0].repeat(depth);
        bytes.extend([0, 0, 0, 0]);
        bytes
    }

    fn decode_error(r: Result<impl std::fmt::Debug, SerializeError>) -> String {
        match r {
            Err(SerializeError::Decode { source, .. }) => source.to_string(),
            other => panic!("expected a decode error, got {other:?}"),
        }
    }

    #[test]
    fn a_hostile_depth_is_an_error_not_a_stack_overflow() {
        let deep = bincode_nest(60_000);
        let e = decode_error(Serializer::<Nest>::decode(&BincodeSerializer, &deep));
        assert!(e.contains("deeper than 128"), "{e}");
        let mut deep = vec![1u8; 60_000];
        deep.push(0);
        // postcard's errors carry no message.
        decode_error(Serializer::<Nest>::decode(&PostcardSerializer, &deep));
    }

    #[test]
    fn values_within_the_limit_decode_and_the_limit_is_per_thread_scope() {
        let value: Nest = BincodeSerializer.decode(&bincode_nest(100)).unwrap();
        drop(value);
        let mut buf = bytes::BytesMut::new();
        BincodeSerializer.encode(&nest(20), &mut buf).unwrap();
        let back: Nest = BincodeSerializer.decode(&buf).unwrap();
        assert_eq!(back, nest(20));
        let r = with_decode_limits(10, 1 << 20, || {
            Serializer::<Nest>::decode(&BincodeSerializer, &buf)
        });
        assert!(decode_error(r).contains("deeper than 10"));
        let back: Nest = BincodeSerializer.decode(&buf).unwrap();
        assert_eq!(back, nest(20), "the default is back after the scope");
    }

    #[test]
    fn collections_are_charged_their_memory_not_their_input() {
        // 2^40 unit elements: no input bytes each.
        let forged = (1u64 << 40).to_le_bytes();
        let e = decode_error(Serializer::<Vec<()>>::decode(&BincodeSerializer, &forged));
        assert!(e.contains("limits.max_decode_collection_bytes"), "{e}");
        // One input byte per element, 257 bytes of memory each.
        let mut amplified = 200_000u64.to_le_bytes().to_vec();
        amplified.extend(std::iter::repeat_n(0u8, 200_000));
        let e = decode_error(Serializer::<Vec<Option<[u64; 32]>>>::decode(
            &BincodeSerializer,
            &amplified,
        ));
        assert!(e.contains("more than"), "{e}");
        let ok: Vec<Option<u8>> = BincodeSerializer.decode(&amplified).unwrap();
        assert_eq!(ok.len(), 200_000);
    }
}
