//! Which remote nodes this node still hears from: one phi accrual failure
//! detector per remote address, fed by the heartbeats its readers see, and
//! a monitor that turns the detectors' verdicts into reachability changes.
//!
//! Detection is arrival based. Each node sends heartbeats on its own
//! outbound control connection and an inbound connection only reads, so
//! there is no reply to wait for: the reading side records when heartbeats
//! arrive and judges the silence. Detectors are kept by address (the
//! handshake's `from`), not by connection, so a reconnect does not reset
//! what was learnt about the peer.
//!
//! A node is judged from this node's first contact with it (or with a new
//! incarnation of it), before its first heartbeat. That moment is not a
//! heartbeat: it is left out of the statistics, and the node gets the
//! longest reconnect pause (`outbound/backoff.rs`) on top of the usual silence to
//! send its first one, since its control lane may be sleeping off an
//! outage of this node while its other lanes already got through.
//!
//! The verdict users and later code see is the monitor's, not a fresh
//! evaluation: `is_available`, the log and the published events then never
//! disagree. The monitor ticks every half heartbeat interval, which is
//! small next to the acceptable pause.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;
use volley::remote::LogLimiter;

use crate::transport::liveness::failure_detector::PhiAccrualFailureDetector;
use crate::transport::outbound::association::MAX_ASSOCIATIONS;
use crate::transport::settings::FailureDetectorSettings;
use crate::transport::support::lock;
use crate::transport::support::log_limited;
use crate::wire::Address;

/// Events a slow subscriber may fall behind by before it misses some
/// (`broadcast`'s `Lagged`).
const EVENT_BACKLOG: usize = 256;

/// A change of a remote node's reachability, as the monitor published it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReachabilityEvent {
    /// No heartbeat from this node for longer than its detector accepts.
    Unreachable(Address),
    /// Heartbeats from a node reported unreachable arrive again.
    Reachable(Address),
}

/// The failure detector of one remote node.
pub(crate) struct PeerDetector {
    address: Address,
    settings: FailureDetectorSettings,
    state: Mutex<PeerState>,
}

struct PeerState {
    detector: PhiAccrualFailureDetector,
    /// The monitor's last verdict.
    reachable: bool,
    /// The node stopped its association with this one for idleness, and
    /// with it its heartbeats: its silence is not judged until it
    /// heartbeats again (`idle/`).
    paused: bool,
}

impl PeerDetector {
    /// Records a heartbeat from this node, arrived at `now`. The first one
    /// after a pause starts the judging afresh: the gap before it is the
    /// pause, not a sample of the node's heartbeat intervals.
    pub(crate) fn heartbeat(&self, now: Instant) {
        let mut state = lock(&self.state);
        if state.paused {
            state.paused = false;
            state.detector = PhiAccrualFailureDetector::new(&self.settings);
        }
        state.detector.heartbeat(now);
    }
}

/// Every remote node's failure detector, by address.
pub(crate) struct Reachability {
    settings: FailureDetectorSettings,
    /// The silence a node is granted, beyond the usual, before its first
    /// heartbeat.
    first_contact_grace: Duration,
    peers: Mutex<HashMap<Address, Arc<PeerDetector>>>,
    events: broadcast::Sender<ReachabilityEvent>,
    /// Handshakes name their sender freely: past the limit, new names are
    /// refused a detector, with a warning now and then.
    refused_log: LogLimiter,
}

impl Reachability {
    /// Detectors with `settings`, granting a node `first_contact_grace`
    /// more silence before its first heartbeat.
    pub(crate) fn new(settings: &FailureDetectorSettings, first_contact_grace: Duration) -> Self {
        Reachability {
            settings: settings.clone(),
            first_contact_grace,
            peers: Mutex::new(HashMap::new()),
            events: broadcast::channel(EVENT_BACKLOG).0,
            refused_log: LogLimiter::new(1),
        }
    }

    /// The detector of `address`, created when its first inbound connection
    /// is accepted. `None` once [`MAX_ASSOCIATIONS`] nodes have one: the
    /// connection still works, the node is just not watched.
    pub(crate) fn peer(&self, address: &Address) -> Option<Arc<PeerDetector>> {
        let mut peers = lock(&self.peers);
        if let Some(peer) = peers.get(address) {
            return Some(peer.clone());
        }
        if peers.len() >= MAX_ASSOCIATIONS {
            if self.refused_log.allow() {
                tracing::warn!(%address, "not watching this node: {MAX_ASSOCIATIONS} nodes are watched already");
            }
            return None;
        }
        let peer = Arc::new(PeerDetector {
            address: address.clone(),
            settings: self.settings.clone(),
            state: Mutex::new(PeerState {
                detector: PhiAccrualFailureDetector::new(&self.settings),
                reachable: true,
                paused: false,
            }),
        });
        peers.insert(address.clone(), peer.clone());
        Some(peer)
    }

    /// Starts judging `address` from `now`, unless it is judged already: a
    /// node that never sends a heartbeat is given up after the usual
    /// silence plus the first-contact grace.
    pub(crate) fn expect(&self, address: &Address, now: Instant) {
        if let Some(peer) = self.peer(address) {
            lock(&peer.state)
                .detector
                .expect(now, self.first_contact_grace);
        }
    }

    /// A new incarnation of `address`: what was learnt of the old one's
    /// heartbeats does not apply; it starts reachable and is judged from
    /// `now` as at a first contact.
    pub(crate) fn restart(&self, address: &Address, now: Instant) {
        if let Some(peer) = self.peer(address) {
            let mut state = lock(&peer.state);
            state.detector = self.fresh_detector(now);
            state.reachable = true;
        }
    }

    /// A detector that judges from `now` a node yet to send a heartbeat.
    fn fresh_detector(&self, now: Instant) -> PhiAccrualFailureDetector {
        let mut detector = PhiAccrualFailureDetector::new(&self.settings);
        detector.expect(now, self.first_contact_grace);
        detector
    }

    /// Stops judging `address` until its next heartbeat: it said it stops
    /// its association with this node for idleness, heartbeats included.
    pub(crate) fn pause(&self, address: &Address) {
        if let Some(peer) = lock(&self.peers).get(address) {
            lock(&peer.state).paused = true;
        }
    }

    /// Judges `address` again from `now` if it was paused: this node
    /// started its own association with it again, and expects the node to
    /// answer with its heartbeats within the usual silence.
    pub(crate) fn resume(&self, address: &Address, now: Instant) {
        if let Some(peer) = lock(&self.peers).get(address) {
            let mut state = lock(&peer.state);
            if state.paused {
                state.paused = false;
                state.detector = self.fresh_detector(now);
            }
        }
    }

    /// The detector's phi for `address` now; `None` without a detector or
    /// while it is paused.
    pub(crate) fn phi(&self, address: &Address, now: Instant) -> Option<f64> {
        let peer = lock(&self.peers).get(address)?.clone();
        let state = lock(&peer.state);
        (!state.paused).then(|| state.detector.phi(now))
    }

    /// Drops the detector of `address`, whose association is gone.
    pub(crate) fn forget(&self, address: &Address) {
        lock(&self.peers).remove(address);
    }

    /// The monitor's verdict on `address`; `None` if no connection from it
    /// was ever accepted.
    pub(crate) fn is_available(&self, address: &Address) -> Option<bool> {
        let peer = lock(&self.peers).get(address)?.clone();
        let reachable = lock(&peer.state).reachable;
        Some(reachable)
    }

    /// Reachability changes from now on.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ReachabilityEvent> {
        self.events.subscribe()
    }

    /// Judges every detector at `now`: each change is logged and published,
    /// and returned.
    pub(crate) fn check(&self, now: Instant) -> Vec<ReachabilityEvent> {
        let peers: Vec<_> = lock(&self.peers).values().cloned().collect();
        let mut changes = Vec::new();
        for peer in peers {
            let mut state = lock(&peer.state);
            if state.paused {
                continue;
            }
            let available = state.detector.is_available(now);
            if available == state.reachable {
                continue;
            }
            state.reachable = available;
            let silent_ms = state
                .detector
                .last_heartbeat()
                .map_or(0, |last| now.saturating_duration_since(last).as_millis());
            let phi = state.detector.phi(now);
            let since = if state.detector.awaits_first_heartbeat() {
                " since first contact"
            } else {
                ""
            };
            drop(state);
            let event = if available {
                tracing::info!(node = %peer.address, "node {} reachable again", peer.address);
                ReachabilityEvent::Reachable(peer.address.clone())
            } else {
                log_limited!(
                    warn,
                    node = %peer.address,
                    "node {} unreachable: no heartbeat for {silent_ms} ms{since}, phi {phi:.1}",
                    peer.address
                );
                ReachabilityEvent::Unreachable(peer.address.clone())
            };
            // No subscriber is not an error: nobody needs to know yet.
            let _ = self.events.send(event.clone());
            changes.push(event);
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn settings() -> FailureDetectorSettings {
        FailureDetectorSettings {
            heartbeat_interval: Duration::from_millis(100),
            acceptable_heartbeat_pause: Duration::from_millis(500),
            ..FailureDetectorSettings::default()
        }
    }

    fn address(port: u16) -> Address {
        Address::new("peer", "127.0.0.1", port).unwrap()
    }

    #[test]
    fn changes_are_published_once_and_answered_by_is_available() {
        let reachability = Reachability::new(&settings(), Duration::ZERO);
        let mut events = reachability.subscribe();
        let a = address(1);
        assert_eq!(reachability.is_available(&a), None);
        let peer = reachability.peer(&a).unwrap();
        assert!(Arc::ptr_eq(&peer, &reachability.peer(&a).unwrap()));
        // Not yet heard from: reachable.
        assert_eq!(reachability.is_available(&a), Some(true));
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        for ms in (0..=1000).step_by(100) {
            peer.heartbeat(at(ms));
            assert!(reachability.check(at(ms + 50)).is_empty());
        }
        assert!(
            reachability.check(at(1000 + 600)).is_empty(),
            "within the pause"
        );
        let unreachable = ReachabilityEvent::Unreachable(a.clone());
        assert_eq!(
            reachability.check(at(1000 + 3000)),
            vec![unreachable.clone()]
        );
        assert_eq!(events.try_recv().unwrap(), unreachable);
        assert_eq!(reachability.is_available(&a), Some(false));
        // Reported once, not at every check.
        assert!(reachability.check(at(1000 + 4000)).is_empty());
        assert!(events.try_recv().is_err());
        peer.heartbeat(at(5100));
        let reachable = ReachabilityEvent::Reachable(a.clone());
        assert_eq!(reachability.check(at(5150)), vec![reachable.clone()]);
        assert_eq!(events.try_recv().unwrap(), reachable);
        assert_eq!(reachability.is_available(&a), Some(true));
    }

    #[test]
    fn each_node_is_judged_on_its_own() {
        let reachability = Reachability::new(&settings(), Duration::ZERO);
        let (quiet, chatty) = (address(1), address(2));
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        reachability.peer(&quiet).unwrap().heartbeat(at(0));
        let chatty_peer = reachability.peer(&chatty).unwrap();
        for ms in (0..=3000).step_by(100) {
            chatty_peer.heartbeat(at(ms));
        }
        assert_eq!(
            reachability.check(at(3050)),
            vec![ReachabilityEvent::Unreachable(quiet.clone())]
        );
        assert_eq!(reachability.is_available(&quiet), Some(false));
        assert_eq!(reachability.is_available(&chatty), Some(true));
    }
    /// A node this node has just contacted, or whose new incarnation just
    /// shook hands, is not given up before the grace (a full reconnect
    /// pause of its own) plus the usual silence has passed without a
    /// heartbeat: its control lane may still be sleeping off an outage.
    #[test]
    fn a_node_just_contacted_gets_a_full_reconnect_pause_to_heartbeat() {
        let grace = Duration::from_millis(3000);
        let reachability = Reachability::new(&settings(), grace);
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let (contacted, restarted) = (address(1), address(2));
        reachability.expect(&contacted, at(0));
        reachability.restart(&restarted, at(0));
        // Without the grace both would be given up by now (interval 100 +
        // pause 500 + about six deviations of 100).
        assert_eq!(reachability.check(at(2000)), vec![]);
        assert_eq!(reachability.check(at(3000 + 600)), vec![]);
        let given_up = reachability.check(at(3000 + 1600));
        assert_eq!(given_up.len(), 2, "{given_up:?}");
    }

    /// The first real heartbeat after `expect` starts the history: the
    /// node is then judged exactly as one that only ever sent heartbeats.
    #[test]
    fn the_first_heartbeat_after_first_contact_starts_the_history() {
        let reachability = Reachability::new(&settings(), Duration::from_millis(3000));
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let (expected, plain) = (address(1), address(2));
        reachability.expect(&expected, at(0));
        for ms in (2..=502).step_by(100) {
            reachability.peer(&expected).unwrap().heartbeat(at(ms));
            reachability.peer(&plain).unwrap().heartbeat(at(ms));
        }
        for silence in [100, 400, 700, 1000] {
            let now = at(502 + silence);
            assert_eq!(
                reachability.phi(&expected, now),
                reachability.phi(&plain, now),
                "{silence} ms after the last heartbeat"
            );
        }
    }
}
