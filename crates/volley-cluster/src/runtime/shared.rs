//! What the driver task publishes for other threads to read at once: the
//! cluster state, the members the transport asks about, and counts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use tokio::sync::watch;

use crate::core::ClusterCore;
use crate::member::{ClusterState, MemberStatus};

/// This node's own status as the driver last published it, and whether
/// the driver has stopped: what the shutdown phases wait on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SelfView {
    /// This node's status in its own table; `None` before it joined (or
    /// once its record is gone).
    pub(crate) status: Option<MemberStatus>,
    /// The driver task has stopped.
    pub(crate) stopped: bool,
}

/// Shared between the driver (the only writer) and the handles.
pub(crate) struct Shared {
    state: Mutex<ClusterState>,
    self_view: watch::Sender<SelfView>,
    /// The members the table holds (Removed ones excluded), by uid, with
    /// their address: what `MembershipAuthority::is_member` answers from.
    members: RwLock<HashMap<u64, (String, u16)>>,
    /// Frames the full inbound queue dropped.
    pub(crate) inbound_dropped: Arc<AtomicU64>,
    /// Inputs the core refused (malformed or foreign packets, ...).
    pub(crate) refused_inputs: AtomicU64,
    /// Packets the transport did not send (counted by reason there too).
    pub(crate) send_drops: AtomicU64,
    /// Bytes of the cluster packets the transport took, and of those the
    /// driver received.
    pub(crate) gossip_bytes_out: AtomicU64,
    pub(crate) gossip_bytes_in: AtomicU64,
    /// Decisions of the split-brain resolver this node carried out.
    pub(crate) sbr_decisions: AtomicU64,
    /// Exiting members this node, as leader, removed unconfirmed at
    /// `exiting_confirm_timeout`.
    pub(crate) exiting_timeouts: AtomicU64,
    pub(crate) refused_table_full: AtomicU64,
    /// This node's formation (0 before it has one), and the payloads
    /// refused for another formation or an unreadable envelope.
    pub(crate) formation: AtomicU64,
    pub(crate) refused_other_formation: AtomicU64,
    pub(crate) refused_bad_envelope: AtomicU64,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            state: Mutex::default(),
            self_view: watch::Sender::new(SelfView::default()),
            members: RwLock::default(),
            inbound_dropped: Arc::default(),
            refused_inputs: AtomicU64::default(),
            send_drops: AtomicU64::default(),
            gossip_bytes_out: AtomicU64::default(),
            gossip_bytes_in: AtomicU64::default(),
            sbr_decisions: AtomicU64::default(),
            exiting_timeouts: AtomicU64::default(),
            refused_table_full: AtomicU64::default(),
            formation: AtomicU64::default(),
            refused_other_formation: AtomicU64::default(),
            refused_bad_envelope: AtomicU64::default(),
        }
    }
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
        let status = state.self_member.as_ref().map(|m| m.status);
        self.self_view.send_if_modified(|view| {
            let changed = view.status != status;
            view.status = status;
            changed
        });
        *lock(&self.state) = state;
    }

    /// Watches this node's own status and the driver's end.
    pub(crate) fn self_view(&self) -> watch::Receiver<SelfView> {
        self.self_view.subscribe()
    }

    /// The driver has stopped.
    pub(crate) fn mark_stopped(&self) {
        self.self_view.send_modify(|view| view.stopped = true);
    }

    /// Copies the core's formation and its refusal counts.
    pub(crate) fn note_formation(&self, core: &ClusterCore) {
        let formation = core.formation().map_or(0, |f| f.get());
        self.formation.store(formation, Relaxed);
        let refusals = core.formation_refusals();
        self.refused_other_formation
            .store(refusals.other_formation, Relaxed);
        self.refused_bad_envelope
            .store(refusals.bad_envelope, Relaxed);
    }

    pub(crate) fn count(counter: &AtomicU64) {
        Self::add(counter, 1);
    }

    pub(crate) fn add(counter: &AtomicU64, amount: usize) {
        counter.fetch_add(u64::try_from(amount).unwrap_or(u64::MAX), Relaxed);
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
