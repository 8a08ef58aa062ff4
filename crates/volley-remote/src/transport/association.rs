//! Associations: this node's outbound side towards each remote node.
//!
//! One association per remote node, with one outbound connection per
//! [`Lane`], as in Artery: control (heartbeats, spawn requests, later
//! system messages), ordinary, and large messages, so neither control
//! traffic nor small messages queue behind a big one. Each side opens its
//! own outbound connections; an inbound connection only reads.
//!
//! Associations live in slots that are never reused, so the slot a route
//! cached stays right, and a send finds its association with two loads and
//! no lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use volley::remote::RemoteSendError;

use super::lane::OutboundLane;
use super::settings::RemoteSettings;
use super::support::lock;
use crate::wire::{Address, Lane};

/// Most remote nodes one system can talk to (slots for lock-free lookup).
pub(crate) const MAX_ASSOCIATIONS: usize = 4096;

/// The outbound lanes towards one remote node.
pub(crate) struct Association {
    lanes: [Arc<OutboundLane>; 3],
}

impl Association {
    fn new(remote: &Address, settings: &RemoteSettings) -> Self {
        let make = |lane: Lane| {
            let max_frame = match lane {
                Lane::Large => settings.max_frame_size,
                Lane::Control | Lane::Ordinary => settings.large_message_threshold,
            };
            Arc::new(OutboundLane::new(
                lane,
                remote.clone(),
                max_frame,
                &settings.batching,
            ))
        };
        Association {
            lanes: Lane::ALL.map(make),
        }
    }

    /// The outbound lane of kind `lane`.
    #[inline]
    pub(crate) fn lane(&self, lane: Lane) -> &Arc<OutboundLane> {
        &self.lanes[lane as usize]
    }

    /// All three lanes.
    pub(crate) fn lanes(&self) -> &[Arc<OutboundLane>] {
        &self.lanes
    }
}

/// Every association this node has, by remote address and by slot.
pub(crate) struct Associations {
    by_address: Mutex<HashMap<Address, usize>>,
    slots: Box<[OnceLock<Arc<Association>>]>,
    next_slot: AtomicUsize,
}

impl Associations {
    pub(crate) fn new() -> Self {
        Associations {
            by_address: Mutex::new(HashMap::new()),
            slots: (0..MAX_ASSOCIATIONS).map(|_| OnceLock::new()).collect(),
            next_slot: AtomicUsize::new(0),
        }
    }

    /// The association in `slot`, if the slot is filled.
    #[inline]
    pub(crate) fn get(&self, slot: usize) -> Option<&Association> {
        self.slots.get(slot)?.get().map(|a| &**a)
    }

    /// The slot of the association to `remote`, created on first use
    /// (`started` then runs once with it, e.g. to start its writers).
    /// Fails once [`MAX_ASSOCIATIONS`] nodes have been talked to.
    pub(crate) fn slot_for(
        &self,
        remote: &Address,
        settings: &RemoteSettings,
        started: impl FnOnce(&Arc<Association>),
    ) -> Result<usize, RemoteSendError> {
        let mut by_address = lock(&self.by_address);
        if let Some(slot) = by_address.get(remote) {
            return Ok(*slot);
        }
        let slot = self.next_slot.load(Ordering::Relaxed);
        if slot >= MAX_ASSOCIATIONS {
            return Err(RemoteSendError::Unavailable(format!(
                "cannot associate with {remote}: this node already talks to {MAX_ASSOCIATIONS} nodes"
            )));
        }
        self.next_slot.store(slot + 1, Ordering::Relaxed);
        let association = Arc::new(Association::new(remote, settings));
        started(&association);
        let _ = self.slots[slot].set(association);
        by_address.insert(remote.clone(), slot);
        Ok(slot)
    }

    /// Every association, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Association> {
        self.slots.iter().map_while(|slot| slot.get().map(|a| &**a))
    }
}
