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
//! no lock. An idle association is stopped, not removed (`idle.rs`): its
//! connections and tasks end, and it keeps its slot and what it knows of
//! the node.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use volley::remote::RemoteSendError;

use super::lane::OutboundLane;
use super::settings::RemoteSettings;
use super::support::lock;
use super::system_messages::{Inbox, Outbox};
use crate::wire::{Address, Lane};

/// Most remote nodes one system can talk to (slots for lock-free lookup).
pub(crate) const MAX_ASSOCIATIONS: usize = 4096;

/// The outbound lanes towards one remote node, and what this node knows of
/// the node's incarnations.
pub(crate) struct Association {
    lanes: [Arc<OutboundLane>; 3],
    pub(crate) remote: Address,
    /// The node's current incarnation is known to be gone (unreachable,
    /// quarantined, shut down) and no new one has shaken hands yet: sends
    /// fail at once instead of queueing for nobody. One relaxed load on
    /// the send path.
    down: AtomicBool,
    /// Bumped whenever an incarnation of the node is declared gone, so an
    /// inbound reader notices with one load per read that it may be
    /// reading from a dead incarnation.
    pub(crate) deaths: AtomicU64,
    /// Incarnations and the reliable system-message channel. Lock order:
    /// `inbox`, then `control`, then a lane's lock.
    pub(crate) control: Mutex<Control>,
    /// What has been received from the current incarnation's system
    /// messages; held while delivering them, so they are delivered in order
    /// even while an old and a new connection overlap.
    pub(crate) inbox: Mutex<Inbox>,
    /// Open inbound connections per incarnation of the node, and whether
    /// one of them brought its goodbye: a leaving node's end is taken once
    /// all of them have ended, so that what its other lanes still carry is
    /// delivered before its watchers hear of it.
    pub(crate) readers: Mutex<HashMap<u64, Readers>>,
    /// The current incarnation said goodbye: its connections closing is
    /// its leaving, not a loss worth an event.
    pub(crate) leaving: AtomicBool,
    /// Which of its tasks run, and whether it is stopped for idleness
    /// (`idle.rs`). Taken after `control`, never before it.
    pub(crate) tasks: Mutex<super::idle::Tasks>,
    /// Something but heartbeats arrived from the node since the idleness
    /// check last looked.
    pub(crate) heard: AtomicBool,
}

/// The inbound connections of one incarnation.
#[derive(Default)]
pub(crate) struct Readers {
    pub(crate) open: usize,
    pub(crate) said_goodbye: bool,
}

/// The association's view of the remote node's incarnations, and its
/// outgoing system messages.
pub(crate) struct Control {
    /// The incarnation last seen in a handshake.
    pub(crate) uid: Option<u64>,
    /// Incarnations known to be gone: never associated with again.
    pub(crate) dead: HashSet<u64>,
    /// Among `dead`, those this node quarantined (or that quarantined it).
    pub(crate) quarantined: HashSet<u64>,
    /// The incarnation an `Associated` event was published for.
    pub(crate) announced: Option<u64>,
    /// System messages to the current incarnation not yet acknowledged.
    pub(crate) outbox: Outbox,
}

impl Association {
    fn new(remote: &Address, settings: &RemoteSettings, slot: usize) -> Self {
        let make = |lane: Lane| {
            let max_frame = match lane {
                Lane::Large => settings.max_frame_size,
                Lane::Control | Lane::Ordinary => settings.large_message_threshold,
            };
            Arc::new(
                OutboundLane::new(
                    lane,
                    remote.clone(),
                    max_frame,
                    &settings.batching,
                    Some(slot),
                )
                .with_limits(&settings.limits),
            )
        };
        Association {
            lanes: Lane::ALL.map(make),
            remote: remote.clone(),
            down: AtomicBool::new(false),
            deaths: AtomicU64::new(0),
            control: Mutex::new(Control {
                uid: None,
                dead: HashSet::new(),
                quarantined: HashSet::new(),
                announced: None,
                outbox: Outbox::default(),
            }),
            inbox: Mutex::new(Inbox::default()),
            readers: Mutex::new(HashMap::new()),
            leaving: AtomicBool::new(false),
            tasks: Mutex::new(super::idle::Tasks::default()),
            heard: AtomicBool::new(false),
        }
    }

    /// True while the node's last incarnation is gone and no new one has
    /// shaken hands.
    #[inline]
    pub(crate) fn is_down(&self) -> bool {
        self.down.load(Ordering::Relaxed)
    }

    pub(crate) fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::Relaxed);
        for lane in self.lanes() {
            lane.set_gone(down);
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
        let association = Arc::new(Association::new(remote, settings, slot));
        started(&association);
        let _ = self.slots[slot].set(association);
        by_address.insert(remote.clone(), slot);
        Ok(slot)
    }

    /// The slot of the association to `remote`, if there is one.
    pub(crate) fn find_slot(&self, remote: &Address) -> Option<usize> {
        lock(&self.by_address).get(remote).copied()
    }

    /// The association to `remote`, if there is one.
    pub(crate) fn find(&self, remote: &Address) -> Option<&Association> {
        let slot = *lock(&self.by_address).get(remote)?;
        self.get(slot)
    }

    /// Every association, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Association> {
        self.slots.iter().map_while(|slot| slot.get().map(|a| &**a))
    }
}
