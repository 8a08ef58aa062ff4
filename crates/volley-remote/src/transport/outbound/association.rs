//! Associations: this node's outbound side towards each remote node.
//!
//! One association per remote node, with one outbound connection per
//! [`Lane`], as in Artery: control (heartbeats, spawn requests, later
//! system messages), ordinary, and large messages, so neither control
//! traffic nor small messages queue behind a big one. Each side opens its
//! own outbound connections; an inbound connection only reads.
//!
//! A route holds its association, so a send finds it with one load and no
//! lock. An idle association is stopped (`idle/`): its connections and
//! tasks end, and the table lets go of it, so it is removed once no ref
//! points at it any more (see [`Associations`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use volley::remote::RemoteSendError;

use crate::transport::gone_uids::RecentUids;
use crate::transport::incarnation::Incarnation;
use crate::transport::outbound::lane::OutboundLane;
use crate::transport::settings::RemoteSettings;
use crate::transport::support::lock;

mod rtt;
pub(crate) mod system_buffers;
mod tasks;

use crate::wire::{Address, Lane};
pub(crate) use rtt::HeartbeatRtt;
use system_buffers::{Inbox, Outbox};
pub(crate) use tasks::Tasks;

/// Why a handshake with an incarnation is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Quarantined by this node (or it quarantined this node).
    Quarantined(u64),
    /// It shut down or was replaced; it cannot be back.
    Gone(u64),
    /// It started before the node's current incarnation, which is alive
    /// (`liveness/order.rs`): a late connection of a previous run.
    Superseded { uid: u64, current: u64 },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Quarantined(uid) => write!(f, "incarnation {uid} is quarantined"),
            Refusal::Gone(uid) => write!(f, "incarnation {uid} has left"),
            Refusal::Superseded { uid, current } => write!(
                f,
                "incarnation {uid} started before the current incarnation {current}"
            ),
        }
    }
}

/// Who vouches for the address an association is started to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// This node: its code named the address, the address is configured,
    /// or the node there answered the address check.
    Vouched,
    /// Only a peer's word: its handshake's claim (with the shared secret)
    /// or its declaration of a ref on a third node.
    PeersWord,
}

/// Most remote nodes one system knows at once (associations alive).
pub(crate) const MAX_ASSOCIATIONS: usize = 4096;

/// Names one association for its life; never reused.
pub(crate) type AssociationId = u64;

/// The outbound lanes towards one remote node, and what this node knows of
/// the node's incarnations.
pub(crate) struct Association {
    /// Never reused: the association a request went to, for the reply.
    pub(crate) id: AssociationId,
    lanes: [Arc<OutboundLane>; 3],
    pub(crate) remote: Address,
    /// The node's current incarnation is known to be gone (unreachable,
    /// quarantined, shut down) and no new one has shaken hands yet: sends
    /// fail at once instead of queueing for nobody. One relaxed load on
    /// the send path.
    down: AtomicBool,
    /// Bumped whenever an incarnation of the node is declared gone, so a
    /// send through a ref bound to an incarnation checks it with one load
    /// while none ever was (`outbound/route.rs`).
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
    /// (`idle/`). Taken after `control`, never before it.
    pub(crate) tasks: Mutex<Tasks>,
    /// Something but heartbeats arrived from the node since the idleness
    /// check last looked.
    pub(crate) heard: AtomicBool,
    /// Bytes and frames read from the node's connections (one add each
    /// per read, while the system's metrics are on).
    pub(crate) bytes_in: AtomicU64,
    pub(crate) frames_in: AtomicU64,
    /// Handshakes refused because their incarnation started before the
    /// current one (`liveness/order.rs`).
    pub(crate) superseded_handshakes: AtomicU64,
    /// Round trips of this node's heartbeats to the peer (`liveness/rtt.rs`).
    pub(crate) heartbeat_rtt: Mutex<HeartbeatRtt>,
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
    /// Its stamp, once a handshake of it told one (`liveness/order.rs`).
    pub(crate) stamp: Option<u64>,
    /// Incarnations known to be gone: never associated with again (the
    /// most recent [`REMEMBERED_GONE`](crate::transport::gone_uids::REMEMBERED_GONE)).
    pub(crate) dead: RecentUids,
    /// Those this node quarantined (or that quarantined it), likewise
    /// bounded.
    pub(crate) quarantined: RecentUids,
    /// The older incarnation last refused, so it is warned of once.
    pub(crate) superseded_logged: Option<u64>,
    /// The incarnation an `Associated` event was published for.
    pub(crate) announced: Option<u64>,
    /// System messages to the current incarnation not yet acknowledged.
    pub(crate) outbox: Outbox,
    /// What was reported of the current incarnation to the membership
    /// authority, once each (`liveness/authority.rs`).
    pub(crate) reported_to_authority: u8,
}

impl Control {
    /// The current incarnation, if a handshake told it.
    pub(crate) fn incarnation(&self) -> Option<Incarnation> {
        self.uid.map(|uid| Incarnation::new(uid, self.stamp))
    }
}

impl Association {
    fn new(
        remote: &Address,
        settings: &RemoteSettings,
        id: AssociationId,
        me: Weak<Association>,
        metered_for: Option<&str>,
    ) -> Self {
        let meter =
            metered_for.map(|system| crate::transport::metrics::LaneMeter::new(system, remote));
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
                    Some((id, me.clone())),
                )
                .with_limits(&settings.limits)
                .with_meter(meter.clone()),
            )
        };
        Association {
            id,
            lanes: Lane::ALL.map(make),
            remote: remote.clone(),
            down: AtomicBool::new(false),
            deaths: AtomicU64::new(0),
            control: Mutex::new(Control {
                uid: None,
                stamp: None,
                dead: RecentUids::default(),
                quarantined: RecentUids::default(),
                superseded_logged: None,
                announced: None,
                outbox: Outbox::default(),
                reported_to_authority: 0,
            }),
            inbox: Mutex::new(Inbox::default()),
            readers: Mutex::new(HashMap::new()),
            leaving: AtomicBool::new(false),
            tasks: Mutex::new(crate::transport::outbound::association::Tasks::default()),
            heard: AtomicBool::new(false),
            bytes_in: AtomicU64::new(0),
            frames_in: AtomicU64::new(0),
            superseded_handshakes: AtomicU64::new(0),
            heartbeat_rtt: Mutex::new(
                crate::transport::outbound::association::HeartbeatRtt::default(),
            ),
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

/// Every association this node has, by remote address.
///
/// The table holds an active association strongly, and a stopped one
/// (`idle/`) only weakly: a stopped association stays alive exactly as
/// long as something still points at it (a route of a ref the application
/// keeps, an inbound reader), and is found again through the weak entry,
/// so a node never has two associations to one address. Once nothing
/// holds it, it is gone with its lanes, tables and detector; the entry is
/// swept. This is how idle associations are removed, as Artery removes
/// them, without the send path paying for it: a route keeps its
/// association in a `OnceLock` and never needs to swap it.
pub(crate) struct Associations {
    entries: Mutex<HashMap<Address, Entry>>,
    next_id: AtomicU64,
    /// The system's name while its metrics are on: new associations
    /// count their batches (`metrics.rs`).
    metered_for: Option<String>,
}

struct Entry {
    weak: Weak<Association>,
    /// The table's own hold: `None` while the association is stopped, so
    /// that it can go once nobody else holds it.
    kept: Option<Arc<Association>>,
}

impl Associations {
    pub(crate) fn new() -> Self {
        Associations {
            entries: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            metered_for: None,
        }
    }

    /// Associations that count their traffic for the metrics of the
    /// system named `system`.
    pub(crate) fn metered(mut self, system: Option<&str>) -> Self {
        self.metered_for = system.map(str::to_string);
        self
    }

    /// True while the system's metrics are on.
    #[inline]
    pub(crate) fn is_metered(&self) -> bool {
        self.metered_for.is_some()
    }

    /// The association to `remote`, created on first use (`started` then
    /// runs once with it, e.g. to start its writers). Fails while
    /// [`MAX_ASSOCIATIONS`] nodes have one.
    pub(crate) fn get_or_create(
        &self,
        remote: &Address,
        settings: &RemoteSettings,
        started: impl FnOnce(&Arc<Association>),
    ) -> Result<Arc<Association>, RemoteSendError> {
        let mut entries = lock(&self.entries);
        if let Some(live) = entries.get(remote).and_then(|e| e.weak.upgrade()) {
            return Ok(live);
        }
        if entries.len() >= MAX_ASSOCIATIONS {
            entries.retain(|_, e| e.weak.strong_count() > 0);
        }
        if entries.len() >= MAX_ASSOCIATIONS {
            return Err(RemoteSendError::Unavailable(format!(
                "cannot associate with {remote}: this node already talks to {MAX_ASSOCIATIONS} nodes"
            )));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let metered_for = self.metered_for.as_deref();
        let association = Arc::new_cyclic(|weak| {
            Association::new(remote, settings, id, weak.clone(), metered_for)
        });
        started(&association);
        entries.insert(
            remote.clone(),
            Entry {
                weak: Arc::downgrade(&association),
                kept: Some(association.clone()),
            },
        );
        Ok(association)
    }

    /// The association to `remote`, if there is one.
    pub(crate) fn find(&self, remote: &Address) -> Option<Arc<Association>> {
        lock(&self.entries).get(remote)?.weak.upgrade()
    }

    /// Every association alive, active or stopped.
    pub(crate) fn all(&self) -> Vec<Arc<Association>> {
        lock(&self.entries)
            .values()
            .filter_map(|e| e.weak.upgrade())
            .collect()
    }

    /// Lets go of the table's hold on a stopped association: it lives on
    /// only while something else holds it.
    pub(crate) fn release(&self, association: &Association) {
        if let Some(entry) = lock(&self.entries).get_mut(&association.remote) {
            if entry.weak.as_ptr() == std::ptr::from_ref(association) {
                entry.kept = None;
            }
        }
    }

    /// Holds a started association again.
    pub(crate) fn keep(&self, association: &Association) {
        if let Some(entry) = lock(&self.entries).get_mut(&association.remote) {
            if entry.weak.as_ptr() == std::ptr::from_ref(association) {
                entry.kept = entry.weak.upgrade();
            }
        }
    }

    /// Forgets the entries of associations that are gone, and returns
    /// their addresses (their detectors go too).
    pub(crate) fn sweep(&self) -> Vec<Address> {
        let mut gone = Vec::new();
        lock(&self.entries).retain(|address, e| {
            let live = e.weak.strong_count() > 0;
            if !live {
                gone.push(address.clone());
            }
            live
        });
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(port: u16) -> Address {
        format!("volley://peer@127.0.0.1:{port}").parse().unwrap()
    }

    fn create(table: &Associations, port: u16) -> Arc<Association> {
        table
            .get_or_create(&address(port), &RemoteSettings::default(), |_| {})
            .unwrap()
    }

    #[test]
    fn one_association_per_address_while_any_is_held() {
        let table = Associations::new();
        let first = create(&table, 1);
        assert!(Arc::ptr_eq(&first, &create(&table, 1)));
        table.release(&first);
        // Released by the table but held here: still the one found.
        let again = create(&table, 1);
        assert!(Arc::ptr_eq(&first, &again));
        assert!(table.sweep().is_empty());
        drop((first, again));
        // Nothing holds it: gone, swept, and a new one has a new id.
        assert!(table.find(&address(1)).is_none());
        assert_eq!(table.sweep(), vec![address(1)]);
        let fresh = create(&table, 1);
        assert_ne!(fresh.id, 1);
    }

    #[test]
    fn a_kept_association_survives_its_holders() {
        let table = Associations::new();
        let a = create(&table, 2);
        let id = a.id;
        table.release(&a);
        table.keep(&a);
        drop(a);
        assert_eq!(table.find(&address(2)).map(|a| a.id), Some(id));
        assert_eq!(table.all().len(), 1);
        assert!(table.sweep().is_empty());
    }
}
