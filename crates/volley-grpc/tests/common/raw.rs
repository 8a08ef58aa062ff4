//! A codec for request bodies no well-behaved client sends.

use std::marker::PhantomData;

use bytes::{Buf, BufMut};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

/// Raw bytes in, a `T` out: for bodies no well-behaved client sends.
pub struct RawCodec<T>(PhantomData<fn() -> T>);

impl<T> Default for RawCodec<T> {
    fn default() -> Self {
        RawCodec(PhantomData)
    }
}

impl<T: prost::Message + Default + Send + 'static> Codec for RawCodec<T> {
    type Encode = Vec<u8>;
    type Decode = T;
    type Encoder = RawEncoder;
    type Decoder = MessageDecoder<T>;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> MessageDecoder<T> {
        MessageDecoder(PhantomData)
    }
}

pub struct RawEncoder;

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

pub struct MessageDecoder<T>(PhantomData<fn() -> T>);

impl<T: prost::Message + Default> Decoder for MessageDecoder<T> {
    type Item = T;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<T>, Status> {
        let bytes = src.copy_to_bytes(src.remaining());
        T::decode(bytes)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// A message whose field 1 is a string of `len` bytes (the tests' `Ping`).
pub fn with_text(len: usize) -> Vec<u8> {
    prost::Message::encode_to_vec(&"x".repeat(len))
}
