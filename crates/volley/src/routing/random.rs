//! Random routing, from a per-thread xorshift generator: no shared state, so
//! senders on different threads never contend.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::SelectError;
use super::logic::{Routees, RoutingLogic, Selection};

/// Sends each message to a routee chosen uniformly at random.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomRouting;

impl RandomRouting {
    /// The logic.
    pub fn new() -> Self {
        RandomRouting
    }
}

/// Distinct seeds per thread; the generator's quality matters little here.
static SEED: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

thread_local! {
    static STATE: Cell<u64> = Cell::new(
        SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) | 1,
    );
}

pub(crate) fn next_random() -> u64 {
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

impl<M: Send + 'static> RoutingLogic<M> for RandomRouting {
    fn select(&self, _msg: &M, routees: &Routees<M>) -> Result<Selection<M>, SelectError> {
        match routees.len() {
            0 => Err(SelectError::NoRoutees),
            n => Ok(Selection::One((next_random() % n as u64) as usize)),
        }
    }
}
