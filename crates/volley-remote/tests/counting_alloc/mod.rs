//! A global allocator that counts the bytes allocated and not yet freed
//! in the whole process, for the suites that measure what the node gives
//! back: resident memory (`/proc/self/statm`) also holds what the
//! allocator keeps for reuse, the live bytes do not. A test binary that
//! includes this module installs it. The `unsafe` below is the one the
//! `GlobalAlloc` trait requires; it only forwards to the system
//! allocator.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

fn grew(by: usize) {
    LIVE.fetch_add(by as isize, Ordering::Relaxed);
}

fn shrank(by: usize) {
    LIVE.fetch_sub(by as isize, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        shrank(layout.size());
        grew(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrank(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated and not freed, in this whole process.
pub fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}
