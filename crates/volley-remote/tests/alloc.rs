//! Proves the codec allocates nothing per message: a counting global
//! allocator watches 10,000 user messages being encoded into, and decoded
//! from, pre-reserved buffers.
//!
//! This file has its own test binary because it installs a
//! `#[global_allocator]`. Counting is per thread, so the test harness's own
//! threads cannot disturb the numbers. The `unsafe` below is the one the
//! `GlobalAlloc` trait requires; it only forwards to the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::{Bytes, BytesMut};
use serde::{Deserialize, Serialize};
use volley_remote::serialization::{BincodeSerializer, Serializer};
use volley_remote::wire::*;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: the allocator may run during thread teardown.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
struct Pair {
    a: i64,
    b: i64,
}

const N: usize = 10_000;

fn encode_all(encoder: &Encoder, buf: &mut BytesMut) {
    let recipient = RefId::new(7).unwrap();
    let sender = RefId::new(3);
    for i in 0..N as i64 {
        let value = Pair { a: i, b: -i };
        encoder
            .user_message(buf, recipient, sender, 42, &BincodeSerializer, &value)
            .unwrap();
    }
}

fn decode_all(decoder: &Decoder, buf: &[u8]) -> (usize, i64) {
    let mut frames = decoder.frames(buf);
    let (mut n, mut sum) = (0, 0);
    for pdu in &mut frames {
        let Ok(Pdu::UserMessage(m)) = pdu else {
            panic!("unexpected {pdu:?}")
        };
        let v: Pair = BincodeSerializer.decode(m.payload).unwrap();
        sum += v.a - v.b;
        n += 1;
    }
    assert_eq!(frames.consumed(), buf.len());
    (n, sum)
}

#[test]
fn encode_and_decode_allocate_nothing_per_message() {
    let encoder = Encoder::default();
    let decoder = Decoder::default();
    let mut buf = BytesMut::with_capacity(N * 64);

    // Encode into a buffer that is already big enough.
    let encode_allocs = allocations_during(|| encode_all(&encoder, &mut buf));
    assert_eq!(encode_allocs, 0, "encoding {N} messages allocated");

    // Decode every frame, payload included, straight from the read buffer.
    let mut result = (0, 0);
    let decode_allocs = allocations_during(|| result = decode_all(&decoder, &buf));
    assert_eq!(decode_allocs, 0, "decoding {N} messages allocated");
    let expected: i64 = (0..N as i64).map(|i| 2 * i).sum();
    assert_eq!(result, (N, expected));

    // Steady state of a transport's coalescing buffer: write out, clear,
    // encode the next batch into the same memory.
    buf.clear();
    assert_eq!(allocations_during(|| encode_all(&encoder, &mut buf)), 0);

    // Sanity check that the counter works at all.
    assert!(allocations_during(|| drop(vec![0u8; 16])) > 0);
}

#[test]
fn zero_copy_payloads_allocate_nothing_per_message() {
    // A transport that keeps payloads beyond the read freezes the read
    // buffer once per read and slices it per message.
    let encoder = Encoder::default();
    let decoder = Decoder::default();
    let mut read_buf = BytesMut::with_capacity(N * 64);
    encode_all(&encoder, &mut read_buf);
    let mut kept: Vec<Bytes> = Vec::with_capacity(N);

    let mut chunk = Bytes::new();
    // Freezing a `BytesMut` may allocate its shared header once per read
    // buffer, not per message.
    let per_read = allocations_during(|| chunk = read_buf.split().freeze());
    assert!(per_read <= 1, "{per_read}");

    let allocs = allocations_during(|| {
        for pdu in decoder.frames(&chunk) {
            if let Ok(Pdu::UserMessage(m)) = pdu {
                kept.push(chunk.slice_ref(m.payload));
            }
        }
    });
    assert_eq!(allocs, 0, "slicing {N} payloads allocated");
    assert_eq!(kept.len(), N);
    let first: Pair = BincodeSerializer.decode(&kept[0]).unwrap();
    assert_eq!(first, Pair { a: 0, b: 0 });
}
