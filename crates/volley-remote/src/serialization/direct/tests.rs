//! The direct codec writes bincode's bytes, reads them back, and refuses
//! bad input with a typed error.

use bytes::BytesMut;
use serde::{Deserialize, Serialize};

use super::*;
use crate::serialization::BincodeSerializer;

/// An enum as an application would write it: fixed fields in one
/// variant, none in another, a tuple and an `Option` in a third.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Shape {
    Add { a: i64, b: i64 },
    Stop,
    Mixed(u8, (u16, bool), Option<u32>, f64, i128),
}

impl DirectCodec for Shape {
    fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
        match self {
            Shape::Add { a, b } => {
                out.variant(0);
                out.put(a)?;
                out.put(b)
            }
            Shape::Stop => {
                out.variant(1);
                Ok(())
            }
            Shape::Mixed(a, b, c, d, e) => {
                out.variant(2);
                out.put(a)?;
                out.put(b)?;
                out.put(c)?;
                out.put(d)?;
                out.put(e)
            }
        }
    }

    fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
        Ok(match input.variant()? {
            0 => Shape::Add {
                a: input.take()?,
                b: input.take()?,
            },
            1 => Shape::Stop,
            2 => Shape::Mixed(
                input.take()?,
                input.take()?,
                input.take()?,
                input.take()?,
                input.take()?,
            ),
            index => return Err(DirectError::unknown_variant::<Self>(index)),
        })
    }
}

fn direct<T: DirectCodec>(value: &T) -> BytesMut {
    let mut buf = BytesMut::new();
    DirectSerializer.encode(value, &mut buf).unwrap();
    buf
}

fn bincode<T: Serialize + serde::de::DeserializeOwned>(value: &T) -> BytesMut {
    let mut buf = BytesMut::new();
    BincodeSerializer.encode(value, &mut buf).unwrap();
    buf
}

/// Same bytes as bincode's serde path, and each side reads the other's.
fn same_as_bincode<T>(value: T)
where
    T: DirectCodec + Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let ours = direct(&value);
    assert_eq!(&ours[..], &bincode(&value)[..], "{value:?}");
    let back: T = BincodeSerializer.decode(&ours).unwrap();
    assert_eq!(back, value);
    let back: T = DirectSerializer.decode(&ours).unwrap();
    assert_eq!(back, value);
}

#[test]
fn writes_the_bytes_bincode_writes() {
    same_as_bincode(Shape::Add { a: 1, b: -2 });
    same_as_bincode(Shape::Stop);
    same_as_bincode(Shape::Mixed(7, (65535, true), Some(9), -0.5, i128::MIN));
    same_as_bincode(Shape::Mixed(0, (1, false), None, f64::MAX, 3));
    same_as_bincode((u8::MAX, i8::MIN, u16::MAX, i16::MIN, u32::MAX, i32::MIN));
    same_as_bincode((u64::MAX, i64::MIN, u128::MAX, 1.5f32, ()));
    same_as_bincode(Some((true, 3u64)));
    same_as_bincode(0x0102_0304u32);
}

#[test]
fn golden_bytes_of_a_struct_variant() {
    // Variant index 0 as a u32, then two i64, little endian (wire-protocol.md:
    // serializer 2 is bincode with fixed-width integers).
    let bytes = direct(&Shape::Add { a: 1, b: -2 });
    assert_eq!(
        &bytes[..],
        &[
            0, 0, 0, 0, //
            1, 0, 0, 0, 0, 0, 0, 0, //
            0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ]
    );
}

#[test]
fn bad_input_is_a_typed_error() {
    let decode = |bytes: &[u8]| DirectSerializer.decode(bytes) as Result<Shape, _>;
    let source = |r: Result<Shape, SerializeError>| match r {
        Err(SerializeError::Decode { source, .. }) => source
            .downcast::<DirectError>()
            .map(|e| *e)
            .expect("a DirectError"),
        other => panic!("expected a decode error, got {other:?}"),
    };
    let good = direct(&Shape::Add { a: 1, b: 2 });
    assert_eq!(
        source(decode(&good[..10])),
        DirectError::Truncated { needed: 2 }
    );
    assert_eq!(source(decode(&[])), DirectError::Truncated { needed: 4 });
    assert_eq!(
        source(decode(&[9, 0, 0, 0])),
        DirectError::unknown_variant::<Shape>(9)
    );
    let mut bad_bool = direct(&Shape::Mixed(1, (2, true), None, 0.0, 0));
    bad_bool[4 + 1 + 2] = 2;
    assert_eq!(
        source(decode(&bad_bool)),
        DirectError::InvalidTag {
            what: "bool",
            byte: 2
        }
    );
    let mut bad_option = direct(&Shape::Mixed(1, (2, true), None, 0.0, 0));
    bad_option[4 + 1 + 2 + 1] = 7;
    assert_eq!(
        source(decode(&bad_option)),
        DirectError::InvalidTag {
            what: "Option",
            byte: 7
        }
    );
    let mut trailing = good.clone();
    trailing.extend_from_slice(&[0]);
    assert!(matches!(
        decode(&trailing),
        Err(SerializeError::TrailingBytes { extra: 1, .. })
    ));
}

#[test]
fn a_ref_outside_a_connection_is_an_error_not_a_panic() {
    let r: Result<volley::ActorRef<u32>, _> = DirectSerializer.decode(&[1, 0, 0, 0]);
    match r {
        Err(SerializeError::Decode { source, .. }) => assert_eq!(
            *source.downcast::<DirectError>().unwrap(),
            DirectError::NoConnection
        ),
        other => panic!("expected NoConnection, got {:?}", other.map(|_| ())),
    }
}
