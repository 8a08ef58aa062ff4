//! Frames written by hand for the wire's bad-input tests.

use volley_remote::wire::{DecodeError, Decoder, Pdu};

/// A frame of `kind` around `body`, length field included.
pub fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut f = ((body.len() + 1) as u32).to_le_bytes().to_vec();
    f.push(kind);
    f.extend_from_slice(body);
    f
}

/// The first frame of `bytes`, decoded with the default limits.
pub fn decode_one(bytes: &[u8]) -> Result<Option<Pdu<'_>>, DecodeError> {
    Decoder::default()
        .decode_frame(bytes)
        .map(|o| o.map(|(p, _)| p))
}

/// A UserMessage body to `recipient`: no sender, serializer 2, type 77.
pub fn user_body(recipient: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = recipient.to_le_bytes().to_vec();
    b.extend(0u32.to_le_bytes());
    b.extend(2u16.to_le_bytes());
    b.extend(77u32.to_le_bytes());
    b.extend_from_slice(payload);
    b
}
