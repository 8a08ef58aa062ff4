//! Helpers the transport's modules share, so each exists once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, MutexGuard};

/// Locks `m`, ignoring poisoning: no code of the transport panics while
/// holding one of its locks, and if one ever did, the data is still
/// consistent enough to go on and shut down.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Hashes keys that are already well mixed or that no peer chooses (a
/// `TypeId`, a wire id, an incarnation uid) with one rotate, xor and
/// multiply (the Fx step): SipHash would cost more than the lookup it
/// guards on the send and read paths. Not for keys a peer controls.
#[derive(Default)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// A map keyed by values no peer chooses.
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Warnings a peer can cause, per call site, at most this many a second.
pub(crate) const PEER_WARNINGS_PER_SECOND: u32 = 5;

/// `tracing::<level>!` at most [`PEER_WARNINGS_PER_SECOND`] times a second
/// from this call site: for anything a remote peer can trigger at will.
macro_rules! log_limited {
    ($level:ident, $($arg:tt)*) => {{
        static LIMIT: std::sync::LazyLock<volley::remote::LogLimiter> =
            std::sync::LazyLock::new(|| {
                volley::remote::LogLimiter::new($crate::transport::support::PEER_WARNINGS_PER_SECOND)
            });
        if LIMIT.allow() {
            tracing::$level!($($arg)*);
        }
    }};
}
pub(crate) use log_limited;

#[cfg(test)]
mod tests {
    use super::*;
    use std::any::TypeId;

    #[test]
    fn fast_maps_keep_distinct_keys_apart() {
        let mut by_type: FastMap<TypeId, u8> = FastMap::default();
        by_type.insert(TypeId::of::<u8>(), 1);
        by_type.insert(TypeId::of::<u16>(), 2);
        by_type.insert(TypeId::of::<String>(), 3);
        assert_eq!(by_type[&TypeId::of::<u16>()], 2);
        let mut by_uid: FastMap<u64, u64> = FastMap::default();
        for uid in 0..1000u64 {
            by_uid.insert(uid << 32, uid);
        }
        assert!((0..1000u64).all(|uid| by_uid[&(uid << 32)] == uid));
    }
}
