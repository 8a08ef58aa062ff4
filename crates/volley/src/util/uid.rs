//! Ids that must differ between processes and between runs of one process.

use std::sync::atomic::{AtomicU64, Ordering};

/// Eight random bytes, from the standard library's randomly seeded hasher
/// mixed with the time and the process id: for incarnation uids and the
/// start of uid counters, which must differ between processes and runs but
/// need no cryptographic strength (no dependency for that).
pub fn random_uid() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// Incarnation ids, unique in the process (so refs of two systems in one
/// process never compare equal), counted from a random start: a restarted
/// node must not hand out the uids (and ask correlation ids) its previous
/// incarnation used, or a message or reply meant for an old actor or ask
/// could reach a new one. Akka draws actor uids at random for the same
/// reason.
static NEXT_UID: AtomicU64 = AtomicU64::new(0);

pub(crate) fn next_uid() -> u64 {
    if NEXT_UID.load(Ordering::Relaxed) == 0 {
        // First use in the process: whoever wins sets the random start.
        let _ = NEXT_UID.compare_exchange(
            0,
            (random_uid() >> 2).max(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
    NEXT_UID.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_differ_between_calls() {
        assert_ne!(random_uid(), random_uid());
    }
}
