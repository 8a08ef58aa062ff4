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
//! [`FAILURE_MEMORY`], and no slot; its messages are still delivered, but
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

/// How long a claim that did not answer is remembered.
const FAILURE_MEMORY: Duration = Duration::from_secs(5);
/// Most checks under way at once; past it, a claim is not checked (and so
/// not dialed back) until one ends.
const MAX_IN_FLIGHT: usize = 64;
/// Most failed claims remembered.
const MAX_REMEMBERED: usize = 4096;

/// The checks under way and the claims that recently failed one.
#[derive(Default)]
pub(crate) struct Probes {
    in_flight: Mutex<HashMap<Address, Arc<OnceCell<bool>>>>,
    failed: Mutex<HashMap<(String, u16), Instant>>,
}

impl RemotingCore {
    /// True if `claimed` answers as incarnation `uid`; concurrent checks of
    /// one claim (a node's lanes connect at once) share one connection.
    pub(crate) async fn confirm_claim(&self, claimed: &Address, uid: u64) -> bool {
        let key = (claimed.host().to_string(), claimed.port());
        if let Some(at) = lock(&self.probes.failed).get(&key) {
            if at.elapsed() < FAILURE_MEMORY {
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
        let confirmed = *cell.get_or_init(|| self.probe(claimed, uid)).await;
        lock(&self.probes.in_flight).remove(claimed);
        if !confirmed {
            let mut failed = lock(&self.probes.failed);
            if failed.len() >= MAX_REMEMBERED {
                failed.retain(|_, at| at.elapsed() < FAILURE_MEMORY);
                if failed.len() >= MAX_REMEMBERED {
                    failed.clear();
                }
            }
            failed.insert(key, Instant::now());
        }
        confirmed
    }

    async fn probe(&self, claimed: &Address, uid: u64) -> bool {
        // Half the handshake time: the peer waits for this check before
        // its own handshake is answered.
        let within = self.settings.handshake_timeout() / 2;
        let answered =
            tokio::time::timeout(within, handshake::dial(self, claimed, Lane::Control)).await;
        match answered {
            Ok(Ok(dialed)) if dialed.accepted.peer_uid == uid => true,
            Ok(Ok(dialed)) => {
                self.trust.log_refused(
                    claimed,
                    &format!(
                        "not dialing back: the node at the address a peer claimed is incarnation {}, not {uid}",
                        dialed.accepted.peer_uid
                    ),
                );
                false
            }
            Ok(Err(e)) => {
                let what =
                    format!("not dialing back: the address a peer claimed does not answer ({e})");
                self.trust.log_refused(claimed, &what);
                false
            }
            Err(_) => {
                let what = "not dialing back: the address a peer claimed did not answer in time";
                self.trust.log_refused(claimed, what);
                false
            }
        }
    }
}
