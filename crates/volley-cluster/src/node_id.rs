//! A member's identity: the node's address, its incarnation, and the SWIM
//! generation within that incarnation (design §1.3).

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use foca::Identity;

/// Where a member listens: `(host, port)`. foca keeps at most one identity
/// per address, so a restarted node replaces its previous incarnation.
pub type Addr = (Arc<str>, u16);

/// One incarnation of one node, as foca sees it.
///
/// The host is shared (`Arc<str>`) because foca clones identities on every
/// packet it handles.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    host: Arc<str>,
    port: u16,
    uid: u64,
    born_ms: u64,
    epoch: u16,
}

impl NodeId {
    /// A node's first identity in its incarnation (epoch 0).
    ///
    /// `uid` is the incarnation uid volley-remote's handshake carries;
    /// `born_ms` is the wall-clock time the actor system started, which
    /// orders incarnations since uids are random.
    pub fn new(host: impl Into<Arc<str>>, port: u16, uid: u64, born_ms: u64) -> Self {
        Self::with_epoch(host, port, uid, born_ms, 0)
    }

    /// An identity with an explicit SWIM epoch (as decoded from the wire).
    pub fn with_epoch(
        host: impl Into<Arc<str>>,
        port: u16,
        uid: u64,
        born_ms: u64,
        epoch: u16,
    ) -> Self {
        Self {
            host: host.into(),
            port,
            uid,
            born_ms,
            epoch,
        }
    }

    /// The host part of the address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The host part of the address, shared: cloning it does not copy
    /// the string.
    pub(crate) fn shared_host(&self) -> &Arc<str> {
        &self.host
    }

    /// The port part of the address.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The incarnation uid.
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// When the incarnation started, in wall-clock milliseconds.
    pub fn born_ms(&self) -> u64 {
        self.born_ms
    }

    /// The SWIM generation within the incarnation, bumped by [`Identity::renew`].
    pub fn epoch(&self) -> u16 {
        self.epoch
    }

    /// Whether both identities are the same incarnation of the same node,
    /// whatever their epochs: what volley calls one member.
    pub fn same_incarnation(&self, other: &NodeId) -> bool {
        self.host == other.host && self.port == other.port && self.uid == other.uid
    }

    /// The order in which identities at one address supersede each other:
    /// a later start wins, then the uid breaks a tie between two starts in
    /// the same millisecond, then a renewed epoch beats its predecessor.
    fn precedence(&self) -> (u64, u64, u16) {
        (self.born_ms, self.uid, self.epoch)
    }
}

impl Identity for NodeId {
    type Addr = Addr;

    /// The same incarnation one epoch later, so that a node falsely
    /// declared down rejoins at once (foca's auto-rejoin). `None` once the
    /// epoch is exhausted: foca then goes defunct instead of wrapping to an
    /// identity that would lose the conflict.
    fn renew(&self) -> Option<Self> {
        let epoch = self.epoch.checked_add(1)?;
        Some(Self {
            epoch,
            ..self.clone()
        })
    }

    fn addr(&self) -> Addr {
        (Arc::clone(&self.host), self.port)
    }

    fn win_addr_conflict(&self, adversary: &Self) -> bool {
        self.precedence().cmp(&adversary.precedence()) == Ordering::Greater
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}#{:x}@{}.{}",
            self.host, self.port, self.uid, self.born_ms, self.epoch
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(uid: u64, born_ms: u64, epoch: u16) -> NodeId {
        NodeId::with_epoch("10.0.0.1", 2552, uid, born_ms, epoch)
    }

    #[test]
    fn the_address_is_host_and_port_only() {
        let a = node(1, 100, 0);
        let b = NodeId::with_epoch("10.0.0.1", 2552, 9, 900, 3);
        assert_eq!(a.addr(), b.addr());
        assert_ne!(a.addr(), NodeId::new("10.0.0.1", 2553, 1, 100).addr());
        assert_ne!(a.addr(), NodeId::new("10.0.0.2", 2552, 1, 100).addr());
    }

    #[test]
    fn renew_bumps_only_the_epoch_and_wins_over_its_predecessor() {
        let first = node(7, 100, 0);
        let renewed = first.renew().expect("epoch 0 renews");
        assert_eq!(renewed.epoch(), 1);
        assert_eq!(
            (
                renewed.host(),
                renewed.port(),
                renewed.uid(),
                renewed.born_ms()
            ),
            ("10.0.0.1", 2552, 7, 100)
        );
        assert!(renewed.same_incarnation(&first));
        assert!(renewed.win_addr_conflict(&first));
        assert!(!first.win_addr_conflict(&renewed));
    }

    #[test]
    fn an_exhausted_epoch_does_not_renew() {
        assert_eq!(node(7, 100, u16::MAX).renew(), None);
    }

    #[test]
    fn a_later_incarnation_wins_whatever_its_uid_and_epoch() {
        let old = node(u64::MAX, 100, 40);
        let restarted = node(1, 101, 0);
        assert!(restarted.win_addr_conflict(&old));
        assert!(!old.win_addr_conflict(&restarted));
        assert!(!restarted.same_incarnation(&old));
    }

    #[test]
    fn the_uid_breaks_a_tie_between_starts_in_one_millisecond() {
        let low = node(1, 100, 9);
        let high = node(2, 100, 0);
        assert!(high.win_addr_conflict(&low));
        assert!(!low.win_addr_conflict(&high));
    }

    #[test]
    fn an_identity_does_not_win_against_itself() {
        let a = node(1, 100, 0);
        assert!(!a.win_addr_conflict(&a.clone()));
    }

    #[test]
    fn it_prints_address_uid_birth_and_epoch() {
        assert_eq!(node(0xab, 100, 2).to_string(), "10.0.0.1:2552#ab@100.2");
    }
}
