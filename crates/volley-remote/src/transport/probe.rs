//! Before a node that dialed this one is dialed back, its claimed address
//! is checked: this node connects there once and handshakes, and only if
//! the node that answers is the incarnation that dialed (same uid) does it
//! start an association.
//!
//! Without the check, every address a peer claims in a handshake costs an
//! association slot (there are 4,096 and they are not reused), so a peer
//! that handshakes under thousands of made-up addresses locks out the
//! nodes that come after it, and each made-up address gets three lanes
//! that redial it forever. With it, a claim that does not answer costs one
//! connection attempt, at most one per `host:port` every
//! [`MEMORY`], and no slot; its messages are still delivered, but
//! nothing goes back to it (`trust.rs`).
//!
//! A claim of a node that exists (someone else's address and uid, both of
//! which any node tells whoever connects to it) still passes: the check
//! stops redirection, not impersonation, which is what the shared secret
//! is for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use super::core::RemotingCore;
use super::handshake;
use super::support::lock;
use crate::wire::{Address, Lane};

/// How long what a checked address answered (or that it did not) is
/// remembered.
const MEMORY: Duration = Duration::from_secs(5);
/// Most checks under way at once; past it, a claim is not checked (and so
/// not dialed back) until one ends.
const MAX_IN_FLIGHT: usize = 64;
/// Most outcomes remembered, of each kind.
const MAX_REMEMBERED: usize = 4096;

/// The checks under way, and what recently checked addresses answered:
/// the incarnation there (so a claim with another uid, a spoof of a real
/// node, cannot make this node doubt the real one), or nothing.
#[derive(Default)]
pub(crate) struct Probes {
    in_flight: Mutex<HashMap<Address, Arc<OnceCell<Option<u64>>>>>,
    answered: Mutex<HashMap<Address, (u64, Instant)>>,
    silent: Mutex<HashMap<(String, u16), Instant>>,
}

impl RemotingCore {
    /// True if `claimed` answers as incarnation `uid`; concurrent checks of
    /// one address (a node's lanes connect at once) share one connection.
    pub(crate) async fn confirm_claim(&self, claimed: &Address, uid: u64) -> bool {
        if let Some(&(there, at)) = lock(&self.probes.answered).get(claimed) {
            if at.elapsed() < MEMORY {
                return there == uid;
            }
        }
        let key = (claimed.host().to_string(), claimed.port());
        if let Some(at) = lock(&self.probes.silent).get(&key) {
            if at.elapsed() < MEMORY {
                return false;
            }
        }
        let cell = {
            let mut in_flight = lock(&self.probes.in_flight);
            if let Some(cell) = in_flight.get(claimed) {
                cell.clone()
            } else if in_flight.len() >= MAX_IN_FLIGHT {
                return false;
            } else {
                let cell = Arc::new(OnceCell::new());
                in_flight.insert(claimed.clone(), cell.clone());
                cell
            }
        };
        let there = *cell.get_or_init(|| self.probe(claimed)).await;
        lock(&self.probes.in_flight).remove(claimed);
        let now = Instant::now();
        match there {
            Some(there) => {
                remember(&self.probes.answered, claimed.clone(), (there, now), |v| {
                    v.1
                });
                if there != uid {
                    let what = format!("not dialing back: the node at the address a peer claimed is incarnation {there}, not {uid}");
                    self.trust.log_refused(claimed, &what);
                }
            }
            None => remember(&self.probes.silent, key, now, |at| *at),
        }
        there == Some(uid)
    }

    /// The incarnation that answers at `claimed`, if any does in time.
    async fn probe(&self, claimed: &Address) -> Option<u64> {
        // Half the handshake time: the peer waits for this check before
        // its own handshake is answered.
        let within = self.settings.handshake_timeout() / 2;
        let answered =
            tokio::time::timeout(within, handshake::dial(self, claimed, Lane::Control)).await;
        let why = match answered {
            Ok(Ok(dialed)) => return Some(dialed.accepted.peer_uid),
            Ok(Err(e)) => format!("does not answer ({e})"),
            Err(_) => "did not answer in time".to_string(),
        };
        let what = format!("not dialing back: the address a peer claimed {why}");
        self.trust.log_refused(claimed, &what);
        None
    }
}

/// Records `value` for `key`, forgetting expired entries (or, if none
/// expired, all) when the map is full; `at` reads when a value was
/// recorded.
fn remember<K: std::hash::Hash + Eq, V>(
    map: &Mutex<HashMap<K, V>>,
    key: K,
    value: V,
    at: impl Fn(&V) -> Instant,
) {
    let mut map = lock(map);
    if map.len() >= MAX_REMEMBERED {
        map.retain(|_, v| at(v).elapsed() < MEMORY);
        if map.len() >= MAX_REMEMBERED {
            map.clear();
        }
    }
    map.insert(key, value);
}
