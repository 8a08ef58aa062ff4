//! This node's own registrations in the cluster receptionist (design §5):
//! the owner set is bumped and pushed out as a custom broadcast when it is
//! small enough to ride along with SWIM packets; a larger one travels by
//! anti-entropy alone (its digest's services hash differs, and the peer
//! gets the set in a data page).

use super::{ClusterCore, RefusedBy};
use crate::member::wire::{self, Item};
use crate::receptionist::ServiceEntry;

/// The largest owner set broadcast as a custom broadcast item, in bytes:
/// an item must fit in one SWIM packet beside the membership updates.
const MAX_SERVICES_BROADCAST: usize = 1024;

impl ClusterCore {
    /// Adds or removes one of this node's services.
    pub(super) fn update_local_service(
        &mut self,
        entry: ServiceEntry,
        registered: bool,
    ) -> Result<(), RefusedBy> {
        let set = {
            let mut knowledge = self.knowledge.lock();
            let Some(set) = knowledge.services.own_set().updated(entry, registered) else {
                return Ok(());
            };
            knowledge.service_bounds.check_set(&set)?;
            knowledge.services.merge(&self.me, set.clone());
            set
        };
        let bytes = wire::encode_item(&Item::Services {
            owner: self.me.clone(),
            set,
        });
        if bytes.len() <= MAX_SERVICES_BROADCAST {
            self.foca.add_broadcast(&bytes)?;
            self.push_broadcasts = true;
        }
        Ok(())
    }
}
