//! What the golden-vector tests share: the payload type, the known values
//! the vectors are built from, and reading the hex files.
#![allow(dead_code)]

pub mod render;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use volley::TraceParent;
use volley_remote::wire::RefId;

#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Ping {
    pub seq: u64,
}

pub fn rid(n: u32) -> RefId {
    RefId::new(n).unwrap()
}

/// Correlation id of the reply vectors: distinct bytes, so the little-endian
/// order is visible in the hex.
pub const REPLY_CORRELATION: u64 = 0x0102_0304_0506_0708;

/// The W3C recommendation's own example context,
/// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
pub const TRACE_CONTEXT: TraceParent = TraceParent {
    trace_id: [
        0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47,
        0x36,
    ],
    parent_id: [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7],
    flags: 1,
};

pub fn parse_hex(text: &str) -> Vec<u8> {
    text.lines()
        .map(|l| l.split('#').next().unwrap())
        .flat_map(|l| l.split_whitespace())
        .flat_map(|tok| {
            assert!(tok.len() % 2 == 0, "odd hex token {tok:?}");
            (0..tok.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&tok[i..i + 2], 16).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

pub fn vector_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}
