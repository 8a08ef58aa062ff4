//! Apache Pekko's failure detector specs, ported onto volley's detector and
//! its per-address registry (`liveness/reachability.rs`), under a fake clock as
//! Pekko drives them: every step is one call of Pekko's `clock()`, i.e. one
//! `heartbeat` or one `isAvailable`/`phi`. No sleeps.
//!
//! Ported here:
//!
//! - `FailureDetectorRegistrySpec` (`DefaultFailureDetectorRegistry` ↔
//!   [`Reachability`], with the spec's detector: threshold 8, 1000 samples,
//!   10 ms deviation floor, no pause, 1 s first estimate):
//!   "mark node as available after a series of successful heartbeats",
//!   "mark node as dead if heartbeat are missed",
//!   "accept some configured missing heartbeats",
//!   "fail after configured acceptable missing heartbeats",
//!   "mark node as available after explicit removal of connection",
//!   "mark node as available after explicit removal of connection and
//!   receiving heartbeat again".
//! - `AccrualFailureDetectorSpec`, the cases that say something about a
//!   registry, replayed through [`Reachability`]: "return phi value of 0.0
//!   on startup for each address, when no heartbeats", "return phi based on
//!   guess when only one heartbeat" (the one heartbeat being
//!   [`Reachability::expect`]'s), and "mark node as available if it starts
//!   heartbeat again after being marked dead due to detection of failure"
//!   (with the events the monitor publishes at each verdict).
//!
//! The rest of `AccrualFailureDetectorSpec` (the CDF, outliers, realistic
//! phi values, the single-detector scenarios, maxSampleSize, and the
//! `HeartbeatHistory` statistics) is ported already, with Pekko's values
//! and tolerances, in `tests.rs`; it is not repeated here.
//!
//! How the registry maps: Pekko's `heartbeat(resource)` is
//! `peer(address).heartbeat(now)`; `isAvailable(resource)` is
//! `check(now)` followed by `is_available(address)`, because volley's
//! answer is the monitor's last verdict (docs/reference/remoting.md#failure-detection),
//! not a fresh evaluation; `isMonitoring(resource)` is
//! `is_available(address).is_some()`; `remove(resource)` is `forget`.
//!
//! Documented differences, asserted as volley behaves:
//!
//! - After `forget`, `is_available` is `None` ("not watched"), where
//!   Pekko's registry answers `isAvailable = true` for a resource it does
//!   not know (`Remoting::is_reachable` documents `None` for a removed
//!   association). Both mean "not judged unreachable".
//! - A node is watched from the accepted connection (`peer`) or from
//!   `expect`, not from its first heartbeat: a node with a detector and no
//!   heartbeat yet is `Some(true)` with phi 0, where Pekko's registry has
//!   no entry (`isMonitoring = false`).
//!
//! Skipped, with the reason:
//!
//! - `DeadlineFailureDetectorSpec` (all five cases): volley has no
//!   deadline detector, only the phi accrual one, and the deadline cases'
//!   verdicts do not carry over to phi (e.g. "fail after configured
//!   acceptable missing heartbeats" expects a 5 s silence to fail against
//!   a 4 s pause + 1 s interval deadline, where phi over the same history
//!   is about 0.6).
//! - The registry's `reset()` (clear every detector): volley has no such
//!   call; `restart` resets one address for a new incarnation and is
//!   tested with the incarnation logic.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::*;
use crate::transport::liveness::reachability::{Reachability, ReachabilityEvent};
use crate::wire::Address;

/// Pekko's fake clock: the first entry is the start, every later one the
/// time since the previous reading; each reading takes one step.
struct FakeClock {
    now: Instant,
    steps: VecDeque<u64>,
}

impl FakeClock {
    fn new(steps: &[u64]) -> Self {
        FakeClock {
            now: Instant::now(),
            steps: steps.iter().copied().collect(),
        }
    }

    fn tick(&mut self) -> Instant {
        let step = self.steps.pop_front().expect("the spec's clock ran out");
        self.now += Duration::from_millis(step);
        self.now
    }
}

/// `FailureDetectorRegistrySpec.createFailureDetector`'s defaults.
fn registry_settings() -> FailureDetectorSettings {
    FailureDetectorSettings {
        heartbeat_interval: Duration::from_millis(1000),
        threshold: 8.0,
        acceptable_heartbeat_pause: Duration::ZERO,
        min_std_deviation: Duration::from_millis(10),
        max_sample_size: 1000,
    }
}

fn resource(port: u16) -> Address {
    Address::new("resource", "127.0.0.1", port).unwrap()
}

/// Pekko's `registry.heartbeat(resource)` at the clock's next reading.
fn heartbeat(registry: &Reachability, address: &Address, clock: &mut FakeClock) {
    registry.peer(address).unwrap().heartbeat(clock.tick());
}

/// Pekko's `registry.isAvailable(resource)` at the clock's next reading:
/// the monitor judges, then the verdict is read. Returns the events.
fn available(
    registry: &Reachability,
    address: &Address,
    clock: &mut FakeClock,
) -> (Option<bool>, Vec<ReachabilityEvent>) {
    let events = registry.check(clock.tick());
    (registry.is_available(address), events)
}

#[test]
fn registry_marks_node_available_after_a_series_of_heartbeats() {
    let mut clock = FakeClock::new(&[0, 1000, 100, 100]);
    let registry = Reachability::new(&registry_settings(), Duration::ZERO);
    let r1 = resource(1);
    for _ in 0..3 {
        heartbeat(&registry, &r1, &mut clock);
    }
    assert_eq!(available(&registry, &r1, &mut clock), (Some(true), vec![]));
}

#[test]
fn registry_marks_node_dead_if_heartbeats_are_missed() {
    let mut clock = FakeClock::new(&[0, 1000, 100, 100, 4000, 3000]);
    let registry = Reachability::new(
        &FailureDetectorSettings {
            threshold: 3.0,
            ..registry_settings()
        },
        Duration::ZERO,
    );
    let (r1, r2) = (resource(1), resource(2));
    heartbeat(&registry, &r1, &mut clock); // 0
    heartbeat(&registry, &r1, &mut clock); // 1000
    heartbeat(&registry, &r1, &mut clock); // 1100
    assert_eq!(available(&registry, &r1, &mut clock).0, Some(true)); // 1200
    heartbeat(&registry, &r2, &mut clock); // 5200, but unrelated resource
    let (verdict, events) = available(&registry, &r1, &mut clock); // 8200
    assert_eq!(verdict, Some(false));
    assert!(
        events.contains(&ReachabilityEvent::Unreachable(r1.clone())),
        "{events:?}"
    );
    // Beyond Pekko's assertion: resource2's heartbeat did not touch
    // resource1's detector, whose silence runs from 1100, not 5200.
    let phi = registry.phi(&r1, clock.now).unwrap();
    let expected = phi_of(7100.0, &[750, 1250, 1000, 100], 0.0, 10.0);
    assert!(
        (phi / expected - 1.0).abs() < 1e-9,
        "phi {phi}, expected {expected}"
    );
}

#[test]
fn registry_accepts_some_configured_missing_heartbeats() {
    let mut clock = FakeClock::new(&[0, 1000, 1000, 1000, 4000, 1000, 1000]);
    let registry = Reachability::new(
        &FailureDetectorSettings {
            acceptable_heartbeat_pause: Duration::from_millis(3000),
            ..registry_settings()
        },
        Duration::ZERO,
    );
    let r1 = resource(1);
    for _ in 0..4 {
        heartbeat(&registry, &r1, &mut clock);
    }
    assert_eq!(available(&registry, &r1, &mut clock), (Some(true), vec![]));
    heartbeat(&registry, &r1, &mut clock);
    assert_eq!(available(&registry, &r1, &mut clock), (Some(true), vec![]));
}

#[test]
fn registry_fails_after_the_configured_acceptable_missing_heartbeats() {
    let mut clock = FakeClock::new(&[0, 1000, 1000, 1000, 1000, 1000, 500, 500, 5000]);
    let registry = Reachability::new(
        &FailureDetectorSettings {
            acceptable_heartbeat_pause: Duration::from_millis(3000),
            ..registry_settings()
        },
        Duration::ZERO,
    );
    let r1 = resource(1);
    for _ in 0..6 {
        heartbeat(&registry, &r1, &mut clock);
    }
    assert_eq!(available(&registry, &r1, &mut clock), (Some(true), vec![]));
    heartbeat(&registry, &r1, &mut clock);
    assert_eq!(
        available(&registry, &r1, &mut clock),
        (
            Some(false),
            vec![ReachabilityEvent::Unreachable(r1.clone())]
        )
    );
}

#[test]
fn registry_forgets_a_removed_node() {
    let mut clock = FakeClock::new(&[0, 1000, 100, 100, 100]);
    let registry = Reachability::new(&registry_settings(), Duration::ZERO);
    let r1 = resource(1);
    for _ in 0..3 {
        heartbeat(&registry, &r1, &mut clock);
    }
    assert_eq!(available(&registry, &r1, &mut clock).0, Some(true));
    registry.forget(&r1);
    // Pekko: available (unknown resources are). volley: not watched.
    assert_eq!(available(&registry, &r1, &mut clock), (None, vec![]));
    assert_eq!(registry.phi(&r1, clock.now), None);
}

#[test]
fn registry_watches_a_removed_node_again_when_it_heartbeats() {
    let mut clock = FakeClock::new(&[0, 1000, 100, 1100, 1100, 1100, 1100, 1100, 100]);
    let registry = Reachability::new(&registry_settings(), Duration::ZERO);
    let r1 = resource(1);
    assert_eq!(registry.is_available(&r1), None, "not monitoring yet");
    heartbeat(&registry, &r1, &mut clock); // 0
    heartbeat(&registry, &r1, &mut clock); // 1000
    heartbeat(&registry, &r1, &mut clock); // 1100
    assert_eq!(available(&registry, &r1, &mut clock).0, Some(true)); // 2200
    registry.forget(&r1);
    assert_eq!(available(&registry, &r1, &mut clock).0, None); // 3300
                                                               // Heartbeats from the removed node: a fresh detector, not the old one.
    heartbeat(&registry, &r1, &mut clock); // 4400
    heartbeat(&registry, &r1, &mut clock); // 5500
    heartbeat(&registry, &r1, &mut clock); // 6600
    assert_eq!(available(&registry, &r1, &mut clock), (Some(true), vec![])); // 6700
                                                                             // The 3300 ms gap across the removal is no sample: the history is the
                                                                             // first estimate (750, 1250) and the two 1100 ms intervals.
    let phi = registry.phi(&r1, clock.now).unwrap();
    let expected = phi_of(100.0, &[750, 1250, 1100, 1100], 0.0, 10.0);
    assert!(
        (phi - expected).abs() < 1e-9,
        "phi {phi}, expected {expected}"
    );
}

/// Phi after `silence_ms` for a history of `intervals`, computed here
/// from the spec's formula rather than the detector's statistics.
fn phi_of(silence_ms: f64, intervals: &[u64], pause_ms: f64, floor_ms: f64) -> f64 {
    let n = intervals.len() as f64;
    let mean = intervals.iter().sum::<u64>() as f64 / n;
    let variance = intervals
        .iter()
        .map(|&x| (x as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    phi(silence_ms, mean + pause_ms, variance.sqrt().max(floor_ms))
}

#[test]
fn each_address_has_phi_zero_before_any_heartbeat() {
    // AccrualFailureDetectorSpec, "return phi value of 0.0 on startup for
    // each address, when no heartbeats".
    let registry = Reachability::new(&registry_settings(), Duration::ZERO);
    let (r1, r2) = (resource(1), resource(2));
    assert_eq!(registry.phi(&r1, Instant::now()), None, "no detector yet");
    registry.peer(&r1).unwrap();
    registry.peer(&r2).unwrap();
    let later = Instant::now() + Duration::from_secs(3600);
    assert_eq!(registry.phi(&r1, later), Some(0.0));
    assert_eq!(registry.phi(&r2, later), Some(0.0));
    assert!(registry.check(later).is_empty());
    assert_eq!(registry.is_available(&r1), Some(true));
    assert_eq!(registry.is_available(&r2), Some(true));
}

#[test]
fn an_expected_node_is_judged_by_the_first_estimate() {
    // AccrualFailureDetectorSpec, "return phi based on guess when only one
    // heartbeat", with `expect` standing for the one heartbeat.
    let mut clock = FakeClock::new(&[0, 1000, 1000, 1000, 1000]);
    let registry = Reachability::new(
        &FailureDetectorSettings {
            min_std_deviation: Duration::from_millis(100),
            ..registry_settings()
        },
        Duration::ZERO,
    );
    let r1 = resource(1);
    registry.expect(&r1, clock.tick());
    let phi1 = registry.phi(&r1, clock.tick()).unwrap();
    assert!((phi1 - 0.3).abs() <= 0.2, "phi {phi1}");
    let phi2 = registry.phi(&r1, clock.tick()).unwrap();
    assert!((phi2 - 4.5).abs() <= 0.3, "phi {phi2}");
    let phi3 = registry.phi(&r1, clock.tick()).unwrap();
    assert!(phi3 > 15.0, "phi {phi3}");
    // A second `expect` is not a heartbeat: the silence still counts.
    registry.expect(&r1, clock.now);
    assert!(registry.phi(&r1, clock.now).unwrap() > 15.0);
    assert_eq!(
        available(&registry, &r1, &mut clock),
        (
            Some(false),
            vec![ReachabilityEvent::Unreachable(r1.clone())]
        )
    );
}

#[test]
fn registry_marks_node_available_again_when_heartbeats_resume() {
    // AccrualFailureDetectorSpec, "mark node as available if it starts
    // heartbeat again after being marked dead due to detection of
    // failure": 1000 regular beats, a five minute pause, then a 7 s pause
    // that must be detected again.
    let mut steps = vec![0];
    steps.extend([1000; 999]);
    steps.extend([5 * 60 * 1000, 100, 900, 100, 7000, 100, 900, 100, 900]);
    let mut clock = FakeClock::new(&steps);
    let registry = Reachability::new(
        &FailureDetectorSettings {
            acceptable_heartbeat_pause: Duration::from_millis(3000),
            min_std_deviation: Duration::from_millis(100),
            ..registry_settings()
        },
        Duration::ZERO,
    );
    let r1 = resource(1);
    let unreachable = ReachabilityEvent::Unreachable(r1.clone());
    let reachable = ReachabilityEvent::Reachable(r1.clone());
    let mut events = registry.subscribe();
    for _ in 0..1000 {
        heartbeat(&registry, &r1, &mut clock);
    }
    let expected = [
        (Some(false), vec![unreachable.clone()]), // after the long pause
        (Some(true), vec![reachable.clone()]),
        (Some(false), vec![unreachable.clone()]), // after the 7 s pause
        (Some(true), vec![reachable.clone()]),
        (Some(true), vec![]),
    ];
    for (i, want) in expected.into_iter().enumerate() {
        if i > 0 {
            heartbeat(&registry, &r1, &mut clock);
        }
        assert_eq!(available(&registry, &r1, &mut clock), want, "verdict {i}");
    }
    let published: Vec<_> = std::iter::from_fn(|| events.try_recv().ok()).collect();
    assert_eq!(
        published,
        [
            unreachable.clone(),
            reachable.clone(),
            unreachable,
            reachable
        ]
    );
}
