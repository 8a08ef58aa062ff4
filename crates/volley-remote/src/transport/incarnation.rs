//! An incarnation as a handshake tells it, and the order of two
//! incarnations of one address (the rules: `liveness/order.rs`). A leaf:
//! the handshake, the sending side and liveness all name it.

/// An incarnation as a handshake tells it: its uid, and its stamp if the
/// handshake carried one (a node of handshake version 1 tells none, nor
/// does a stamp of `0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Incarnation {
    pub(crate) uid: u64,
    pub(crate) stamp: Option<u64>,
}

impl Incarnation {
    /// Incarnation `uid` with the stamp its handshake carried, if any.
    pub(crate) fn new(uid: u64, stamp: Option<u64>) -> Self {
        Incarnation {
            uid,
            stamp: stamp.filter(|&s| s != 0),
        }
    }

    /// True if both tell their stamps and this one is the older: a
    /// smaller stamp, or the same stamp and a smaller uid. Without both
    /// stamps nothing is known of the order.
    pub(crate) fn is_older_than(&self, other: &Incarnation) -> bool {
        match (self.stamp, other.stamp) {
            (Some(mine), Some(theirs)) => (mine, self.uid) < (theirs, other.uid),
            _ => false,
        }
    }
}
