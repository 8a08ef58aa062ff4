//! Feeds arbitrary bytes to the preamble and frame decoders.
//!
//! Run with `cargo +nightly fuzz run decode_frames` from
//! `crates/volley-remote`. Besides "no panic", it checks that decoding stops
//! after the first error, never consumes more than it was given, and that
//! every frame that decodes re-encodes to exactly the same bytes.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use volley_remote::wire::{Decoder, DecoderConfig, Encoder, Preamble};

fuzz_target!(|data: &[u8]| {
    let _ = Preamble::decode(data);

    // A small limit so the fuzzer also reaches the frame-too-long path.
    let config = DecoderConfig {
        max_frame_len: 4096,
        ..DecoderConfig::default()
    };
    let decoder = Decoder::new(config);
    let encoder = Encoder::new(config.max_frame_len);
    let mut frames = decoder.frames(data);
    let mut offset = 0;
    let mut out = BytesMut::new();
    let mut failed = false;
    for result in &mut frames {
        assert!(!failed, "decoder yielded an item after an error");
        match result {
            Ok(pdu) => {
                out.clear();
                encoder.encode(&pdu, &mut out).expect("decoded PDU re-encodes");
                let end = offset + out.len();
                assert_eq!(&out[..], &data[offset..end], "encoding is not canonical");
                offset = end;
            }
            Err(_) => failed = true,
        }
    }
    assert_eq!(frames.consumed(), offset);
    assert!(frames.consumed() <= data.len());
});
