//! The order of a node's incarnations, and the judgement of a handshake
//! by it.
//!
//! A uid is random, so it says nothing of which of two incarnations of
//! one address is the newer. A handshake of a node's previous incarnation
//! can arrive after its new one's: a relay or a slow network held the
//! connection. Taken as a restart, it would give the newer incarnation up.
//! So each incarnation tells when it started, its stamp (microseconds
//! since the Unix epoch, taken once when remoting starts), in its
//! handshake (docs/wire-protocol.md §5.1a), and of two incarnations of
//! one address the greater `(stamp, uid)` is the newer: the uid breaks a
//! tie, so every node orders any two incarnations the same way.
//!
//! An older incarnation is refused only while the current one is alive
//! (the association is not down). The stamps come from wall clocks: if a
//! machine's clock stepped back across a restart, the new incarnation
//! looks older, and is refused only until the old one is given up (its
//! heartbeats stop), not for good. For the same reason a refused
//! incarnation is not remembered as gone: its next handshake is judged
//! again.
//!
//! Incarnations known to be gone (replaced, quarantined, shut down) are
//! refused whether or not they carry a stamp (`gone_uids.rs`).

use crate::transport::incarnation::Incarnation;
use crate::transport::outbound::association::{Association, Control, Refusal};

/// Whether `peer` may shake hands with this node, as `control` (the
/// association's, locked) knows its node: not if it is gone, nor if it is
/// older than the current incarnation while that one is alive
/// (`association_down` false). A refusal for age is counted on the
/// association and logged once per incarnation; nothing is changed
/// otherwise.
pub(crate) fn judge(
    association: &Association,
    control: &mut Control,
    peer: Incarnation,
) -> Result<(), Refusal> {
    if control.quarantined.contains(&peer.uid) {
        return Err(Refusal::Quarantined(peer.uid));
    }
    if control.dead.contains(&peer.uid) {
        return Err(Refusal::Gone(peer.uid));
    }
    let Some(current) = control.incarnation().filter(|c| c.uid != peer.uid) else {
        return Ok(());
    };
    if association.is_down() || !peer.is_older_than(&current) {
        return Ok(());
    }
    association
        .superseded_handshakes
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let remote = &association.remote;
    if control.superseded_logged.replace(peer.uid) != Some(peer.uid) {
        tracing::warn!(%remote, uid = peer.uid, current = current.uid, "refused a handshake of incarnation {} of {remote}: it started before the current incarnation {} (a late connection of a previous run)", peer.uid, current.uid);
    } else {
        tracing::debug!(%remote, uid = peer.uid, "refused the older incarnation again");
    }
    Err(Refusal::Superseded {
        uid: peer.uid,
        current: current.uid,
    })
}

/// This node's stamp: its start in microseconds since the Unix epoch,
/// at least 1 (`0` tells no order), taken once.
pub(crate) fn start_stamp() -> u64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since_epoch.as_micros())
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_greater_stamp_is_newer_and_the_uid_breaks_a_tie() {
        let old = Incarnation::new(9, Some(100));
        let new = Incarnation::new(3, Some(200));
        assert!(old.is_older_than(&new));
        assert!(!new.is_older_than(&old));
        let tie_low = Incarnation::new(3, Some(100));
        assert!(tie_low.is_older_than(&old));
        assert!(!old.is_older_than(&tie_low));
        assert!(
            !old.is_older_than(&old),
            "no incarnation is older than itself"
        );
    }

    #[test]
    fn without_both_stamps_there_is_no_order() {
        let stamped = Incarnation::new(1, Some(100));
        let unstamped = Incarnation::new(2, None);
        let zero = Incarnation::new(3, Some(0));
        assert_eq!(zero.stamp, None, "a stamp of 0 tells no order");
        for (a, b) in [(stamped, unstamped), (unstamped, stamped), (zero, stamped)] {
            assert!(!a.is_older_than(&b) && !b.is_older_than(&a));
        }
    }

    #[test]
    fn a_start_stamp_is_never_zero() {
        assert!(
            start_stamp() > 1_600_000_000_000_000,
            "after 2020, in microseconds"
        );
    }
}
