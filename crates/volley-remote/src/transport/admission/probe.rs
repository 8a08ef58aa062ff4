//! Before a node that dialed this one is dialed back, its claimed address
//! is checked: this node connects there once and handshakes, and only if
//! the node that answers is the incarnation that dialed (same uid) does it
//! start an association.
//!
//! Without the check, every address a peer claims in a handshake costs an
//! association slot (there are 4,096 and they are not reused), so a peer
//! that handshakes under thousands of made-up addresses locks out the
//! nodes that come after it, and each made-up address gets three lanes
//! that redial it forever. With it, a claim that does not answer costs at
//! most one connection attempt and no slot; its messages are still
//! delivered, but nothing goes back to it (`handshake/trust.rs`).
//!
//! The check is itself limited: it opens at most one connection per
//! claimed `host:port` per [`WINDOW`], whatever system name or uid the
//! claims carry (a place holds one node at a time, so one answer settles
//! every claim of it), and at most [`MAX_IN_FLIGHT`] at once. A claim the
//! limit leaves unchecked is not confirmed, so not dialed back. Each check
//! and each claim the limit refused are counted in the metrics
//! (`volley_remote_address_checks_total`,
//! `volley_remote_address_checks_limited_total`).
//!
//! A claim of a node that exists (someone else's address and uid, both of
//! which any node tells whoever connects to it) still passes: the check
//! stops redirection, not impersonation, which is what the shared secret
//! is for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::Counter;
use tokio::sync::OnceCell;

use crate::transport::admission::AdmissionContext;
use crate::transport::handshake::setup;
use crate::transport::support::lock;
use crate::wire::{Address, Lane};

/// How long what a checked place answered (or that nothing did) is
/// remembered: no other check connects there meanwhile.
pub(crate) const WINDOW: Duration = Duration::from_secs(5);
/// Most checks under way at once; past it, a claim is not checked (and so
/// not dialed back) until one ends.
const MAX_IN_FLIGHT: usize = 64;
/// Most outcomes remembered.
const MAX_REMEMBERED: usize = 4096;

/// A claimed address's `host:port`: where a check connects.
type Place = (String, u16);

/// The checks under way and what recently checked places answered.
pub(crate) struct Probes {
    in_flight: Mutex<HashMap<Place, InFlight>>,
    recent: Mutex<HashMap<Place, Outcome>>,
    metrics: Option<CheckMetrics>,
}

/// A check under way: the claim it checks, and its answer once there.
struct InFlight {
    claimed: Address,
    answer: Arc<OnceCell<Option<u64>>>,
}

/// What a check of one place found: the address it asked for, and the
/// incarnation that answered as that address (so a claim with another uid,
/// a spoof of a real node, cannot make this node doubt the real one), or
/// nothing.
struct Outcome {
    claimed: Address,
    there: Option<u64>,
    at: Instant,
}

/// The check's counters, while the system's metrics are on.
struct CheckMetrics {
    confirmed: Counter,
    refuted: Counter,
    silent: Counter,
    limited: Counter,
}

impl Probes {
    /// No check made yet; counted for the system named `metered_for`, if
    /// its metrics are on.
    pub(crate) fn new(metered_for: Option<&str>) -> Self {
        let metrics = metered_for.map(|system| {
            let outcome = |outcome: &'static str| {
                let labels = [("system", system.to_string()), ("outcome", outcome.into())];
                metrics::counter!("volley_remote_address_checks_total", &labels)
            };
            CheckMetrics {
                confirmed: outcome("confirmed"),
                refuted: outcome("refuted"),
                silent: outcome("silent"),
                limited: metrics::counter!(
                    "volley_remote_address_checks_limited_total",
                    "system" => system.to_string()
                ),
            }
        });
        Probes {
            in_flight: Mutex::new(HashMap::new()),
            recent: Mutex::new(HashMap::new()),
            metrics,
        }
    }

    /// Whether a check of `claimed`'s place may start now: none is under
    /// way, and the last one's outcome is older than the window.
    pub(crate) fn is_due(&self, claimed: &Address) -> bool {
        let place = (claimed.host().to_string(), claimed.port());
        self.remembered(&place).is_none() && !lock(&self.in_flight).contains_key(&place)
    }

    /// What a check of `place` within the window found, if one did.
    fn remembered(&self, place: &Place) -> Option<(Address, Option<u64>)> {
        let recent = lock(&self.recent);
        let outcome = recent.get(place)?;
        (outcome.at.elapsed() < WINDOW).then(|| (outcome.claimed.clone(), outcome.there))
    }

    /// Records what the check of `place` found.
    fn remember(&self, place: Place, claimed: Address, there: Option<u64>) {
        let mut recent = lock(&self.recent);
        if recent.len() >= MAX_REMEMBERED {
            recent.retain(|_, o| o.at.elapsed() < WINDOW);
            if recent.len() >= MAX_REMEMBERED {
                recent.clear();
            }
        }
        let at = Instant::now();
        recent.insert(place, Outcome { claimed, there, at });
    }

    /// The check of `claimed` to wait for: the one under way there if it
    /// checks the same address, else a new one; `None` if the limit
    /// leaves the claim unchecked.
    fn join_or_start(&self, place: &Place, claimed: &Address) -> Option<Start> {
        let mut in_flight = lock(&self.in_flight);
        if let Some(check) = in_flight.get(place) {
            return (check.claimed == *claimed).then(|| Start::Join(check.answer.clone()));
        }
        if in_flight.len() >= MAX_IN_FLIGHT {
            return None;
        }
        let answer = Arc::new(OnceCell::new());
        let claimed = claimed.clone();
        in_flight.insert(
            place.clone(),
            InFlight {
                claimed,
                answer: answer.clone(),
            },
        );
        Some(Start::New(answer))
    }

    fn count_limited(&self) {
        if let Some(m) = &self.metrics {
            m.limited.increment(1);
        }
    }

    fn count_check(&self, there: Option<u64>, uid: u64) {
        if let Some(m) = &self.metrics {
            match there {
                Some(there) if there == uid => m.confirmed.increment(1),
                Some(_) => m.refuted.increment(1),
                None => m.silent.increment(1),
            }
        }
    }
}

/// A check under way until dropped, also when the claim that started it
/// is abandoned (remoting shuts down).
struct UnderWay<'p> {
    probes: &'p Probes,
    place: Place,
}

impl Drop for UnderWay<'_> {
    fn drop(&mut self) {
        lock(&self.probes.in_flight).remove(&self.place);
    }
}

/// How a claim gets its answer: from a check another claim started, or
/// from its own.
enum Start {
    Join(Arc<OnceCell<Option<u64>>>),
    New(Arc<OnceCell<Option<u64>>>),
}

/// True if `claimed` answers as incarnation `uid`; concurrent claims of
/// one address (a node's lanes connect at once) share one connection.
pub(crate) async fn confirm_claim(
    core: &impl AdmissionContext,
    claimed: &Address,
    uid: u64,
) -> bool {
    let probes = core.probes();
    let place = (claimed.host().to_string(), claimed.port());
    if let Some((checked, there)) = probes.remembered(&place) {
        let confirmed = checked == *claimed && there == Some(uid);
        if !confirmed {
            probes.count_limited();
        }
        return confirmed;
    }
    let answer = match probes.join_or_start(&place, claimed) {
        Some(Start::Join(answer)) => {
            return answer.get_or_init(|| probe(core, claimed)).await == &Some(uid)
        }
        Some(Start::New(answer)) => answer,
        None => {
            probes.count_limited();
            return false;
        }
    };
    let under_way = UnderWay { probes, place };
    let there = *answer.get_or_init(|| probe(core, claimed)).await;
    // Remembered before the check stops being under way, so that no
    // claim in between connects again.
    probes.remember(under_way.place.clone(), claimed.clone(), there);
    drop(under_way);
    probes.count_check(there, uid);
    if let Some(there) = there.filter(|there| *there != uid) {
        let what = format!("not dialing back: the node at the address a peer claimed is incarnation {there}, not {uid}");
        core.trust().log_refused(claimed, &what);
    }
    there == Some(uid)
}

/// The incarnation that answers at `claimed`, if any does in time.
async fn probe(core: &impl AdmissionContext, claimed: &Address) -> Option<u64> {
    // Half the handshake time: the peer waits for this check before
    // its own handshake is answered.
    let within = core.settings().handshake_timeout / 2;
    let answered = tokio::time::timeout(within, setup::dial(core, claimed, Lane::Control)).await;
    let why = match answered {
        Ok(Ok(dialed)) => return Some(dialed.accepted.peer_uid),
        Ok(Err(e)) => format!("does not answer ({e})"),
        Err(_) => "did not answer in time".to_string(),
    };
    let what = format!("not dialing back: the address a peer claimed {why}");
    core.trust().log_refused(claimed, &what);
    None
}
