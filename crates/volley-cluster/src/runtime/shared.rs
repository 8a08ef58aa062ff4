//! What the driver task publishes for other threads to read at once: the
//! cluster state, the members the transport asks about, and counts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use crate::member::{ClusterState, MemberStatus};

/// Shared between the driver (the only writer) and the handles.
#[derive(Default)]
pub(crate) struct Shared {
    state: Mutex<ClusterState>,
    /// The members the table holds (Removed ones excluded), by uid, with
    /// their address: what `MembershipAuthority::is_member` answers from.
    members: RwLock<HashMap<u64, (String, u16)>>,
    /// Frames the full inbound queue dropped.
    pub(crate) inbound_dropped: Arc<AtomicU64>,
    /// Inputs the core refused (malformed or foreign packets, ...).
    pub(crate) refused_inputs: AtomicU64,
    /// Packets the transport did not send (counted by reason there too).
    pub(crate) send_drops: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// The state the driver last published.
    pub(crate) fn state(&self) -> ClusterState {
        lock(&self.state).clone()
    }

    /// Whether incarnation `uid` of the node at `host:port` is a member.
    pub(crate) fn is_member(&self, host: &str, port: u16, uid: u64) -> bool {
        let members = self.members.read().unwrap_or_else(PoisonError::into_inner);
        members
            .get(&uid)
            .is_some_and(|(h, p)| h == host && *p == port)
    }

    /// Publishes `state`, and the members it holds.
    pub(crate) fn publish(&self, state: ClusterState) {
        let members = state
            .members
            .iter()
            .filter(|m| m.status != MemberStatus::Removed)
            .map(|m| (m.node.uid(), (m.node.host().to_owned(), m.node.port())))
            .collect();
        *self.members.write().unwrap_or_else(PoisonError::into_inner) = members;
        *lock(&self.state) = state;
    }

    pub(crate) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::Shared;
    use crate::member::{ClusterState, MemberRecord, MemberStatus};
    use crate::node_id::NodeId;

    #[test]
    fn a_member_is_its_address_and_incarnation_while_not_removed() {
        let shared = Shared::default();
        let record = |port, status| MemberRecord {
            status,
            ..MemberRecord::joining(
                NodeId::new("h", port, port.into(), 0),
                "0".into(),
                Default::default(),
            )
        };
        shared.publish(ClusterState {
            members: vec![
                record(1, MemberStatus::Up),
                record(2, MemberStatus::Removed),
            ],
            ..ClusterState::default()
        });
        assert!(shared.is_member("h", 1, 1));
        assert!(!shared.is_member("h", 1, 9), "another incarnation");
        assert!(!shared.is_member("other", 1, 1), "another host");
        assert!(!shared.is_member("h", 2, 2), "removed");
        assert_eq!(shared.state().members.len(), 2);
    }
}
