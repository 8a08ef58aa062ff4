//! The detector under manual time. The scenarios and expected values are
//! those of Akka's `AccrualFailureDetectorSpec`, plus the properties the
//! transport relies on.

use std::time::{Duration, Instant};

use super::*;

/// Settings as Akka's spec builds its detectors: threshold 8, 1000
/// samples, 100 ms floor, no acceptable pause, 1 s first estimate.
fn spec_settings() -> FailureDetectorSettings {
    FailureDetectorSettings {
        heartbeat_interval: Duration::from_millis(1000),
        threshold: 8.0,
        acceptable_heartbeat_pause: Duration::ZERO,
        min_std_deviation: Duration::from_millis(100),
        max_sample_size: 1000,
    }
}

/// Manual time: each `next` moves to the next step, `steps[0]` being the
/// start and every later entry the time since the previous call.
struct Steps {
    now: Instant,
    steps: Vec<u64>,
    taken: usize,
}

impl Steps {
    fn new(steps: &[u64]) -> Self {
        Steps {
            now: Instant::now(),
            steps: steps.to_vec(),
            taken: 0,
        }
    }

    fn next(&mut self) -> Instant {
        let step = self.steps[self.taken];
        self.taken += 1;
        self.now += Duration::from_millis(step);
        self.now
    }

    /// `n` heartbeats, one per step.
    fn beats(&mut self, fd: &mut PhiAccrualFailureDetector, n: usize) {
        for _ in 0..n {
            fd.heartbeat(self.next());
        }
    }
}

/// Akka's spec detector with 3 s of acceptable pause.
fn with_3s_pause() -> PhiAccrualFailureDetector {
    PhiAccrualFailureDetector::new(&FailureDetectorSettings {
        acceptable_heartbeat_pause: Duration::from_millis(3000),
        ..spec_settings()
    })
}

/// The probability `F` that phi stands for.
fn cdf(phi: f64) -> f64 {
    1.0 - 10f64.powf(-phi)
}

fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() <= tolerance
}

#[test]
fn the_logistic_approximation_is_close_to_the_normal_cdf() {
    for (diff, expected) in [
        (0.0, 0.5),
        (6.0, 0.7257),
        (15.0, 0.9332),
        (20.0, 0.97725),
        (25.0, 0.99379),
        (35.0, 0.99977),
    ] {
        let got = cdf(phi(diff, 0.0, 10.0));
        assert!(close(got, expected, 0.001), "cdf({diff}) = {got}");
    }
    assert!(close(cdf(phi(40.0, 0.0, 10.0)), 0.99997, 0.0001));
    for x in 0..40 {
        assert!(phi(x as f64, 0.0, 10.0) < phi((x + 1) as f64, 0.0, 10.0));
    }
    assert!(close(cdf(phi(22.0, 20.0, 3.0)), 0.7475, 0.001));
}

#[test]
fn outliers_keep_their_precision() {
    assert!(close(phi(10.0, 0.0, 1.0), 38.0, 1.0));
    assert_eq!(phi(-25.0, 0.0, 1.0), 0.0);
}

#[test]
fn phi_values_are_realistic() {
    for (diff, expected) in [
        (0.0, 0.0),
        (500.0, 0.1),
        (1000.0, 0.3),
        (1200.0, 1.6),
        (1400.0, 4.7),
        (1600.0, 10.8),
        (1700.0, 15.3),
    ] {
        let got = phi(diff, 1000.0, 100.0);
        assert!(close(got, expected, 0.1), "phi({diff}) = {got}");
    }
    // A wider spread makes the same silence less suspicious.
    assert!(phi(1100.0, 1000.0, 500.0) < phi(1100.0, 1000.0, 100.0));
}

#[test]
fn a_node_never_heard_from_is_not_suspected() {
    let fd = PhiAccrualFailureDetector::new(&spec_settings());
    let now = Instant::now();
    assert_eq!(fd.phi(now), 0.0);
    assert_eq!(fd.phi(now + Duration::from_secs(3600)), 0.0);
    assert!(fd.last_heartbeat().is_none());
}

#[test]
fn one_heartbeat_is_judged_by_the_first_estimate() {
    let mut t = Steps::new(&[0, 1000, 1000, 1000]);
    let mut fd = PhiAccrualFailureDetector::new(&spec_settings());
    fd.heartbeat(t.next());
    assert!(close(fd.phi(t.next()), 0.3, 0.2));
    assert!(close(fd.phi(t.next()), 4.5, 0.3));
    assert!(fd.phi(t.next()) > 15.0);
}

#[test]
fn phi_uses_the_first_interval_after_the_second_heartbeat() {
    let mut t = Steps::new(&[0, 100, 100, 100]);
    let mut fd = PhiAccrualFailureDetector::new(&spec_settings());
    fd.heartbeat(t.next());
    assert!(fd.phi(t.next()) > 0.0);
    fd.heartbeat(t.next());
    assert!(fd.phi(t.next()) > 0.0);
}

#[test]
fn heartbeats_make_a_node_monitored_and_available() {
    let mut t = Steps::new(&[0, 1000, 100, 100]);
    let mut fd = PhiAccrualFailureDetector::new(&spec_settings());
    t.beats(&mut fd, 3);
    assert!(fd.last_heartbeat().is_some());
    assert!(fd.is_available(t.next()));
}

#[test]
fn missed_heartbeats_make_a_node_unavailable() {
    let mut t = Steps::new(&[0, 1000, 100, 100, 7000]);
    let mut fd = PhiAccrualFailureDetector::new(&FailureDetectorSettings {
        threshold: 3.0,
        ..spec_settings()
    });
    t.beats(&mut fd, 3);
    assert!(fd.is_available(t.next()));
    assert!(!fd.is_available(t.next()));
}

#[test]
fn a_node_is_available_again_when_heartbeats_resume() {
    // 1000 regular beats, a five minute pause, then a 7 s pause that must
    // trip it again: the five minutes did not enter the statistics.
    let mut steps = vec![0];
    steps.extend([1000; 999]);
    steps.extend([5 * 60 * 1000, 100, 900, 100, 7000, 100, 900, 100, 900]);
    let mut t = Steps::new(&steps);
    let mut fd = with_3s_pause();
    t.beats(&mut fd, 1000);
    assert!(!fd.is_available(t.next()), "after the long pause");
    fd.heartbeat(t.next());
    assert!(fd.is_available(t.next()));
    fd.heartbeat(t.next());
    assert!(!fd.is_available(t.next()), "after the 7 s pause");
    fd.heartbeat(t.next());
    assert!(fd.is_available(t.next()));
    fd.heartbeat(t.next());
    assert!(fd.is_available(t.next()));
}

#[test]
fn missing_heartbeats_within_the_acceptable_pause_are_accepted() {
    let mut t = Steps::new(&[0, 1000, 1000, 1000, 4000, 1000, 1000]);
    let mut fd = with_3s_pause();
    t.beats(&mut fd, 4);
    assert!(fd.is_available(t.next()));
    fd.heartbeat(t.next());
    assert!(fd.is_available(t.next()));
}

#[test]
fn silence_beyond_the_acceptable_pause_fails() {
    let mut t = Steps::new(&[0, 1000, 1000, 1000, 1000, 1000, 500, 500, 5000]);
    let mut fd = with_3s_pause();
    t.beats(&mut fd, 6);
    assert!(fd.is_available(t.next()));
    fd.heartbeat(t.next());
    assert!(!fd.is_available(t.next()));
}

#[test]
fn only_the_last_max_sample_size_intervals_count() {
    let mut t = Steps::new(&[0, 100, 100, 100, 100, 600, 500, 500, 500, 500]);
    let mut fd = PhiAccrualFailureDetector::new(&FailureDetectorSettings {
        max_sample_size: 3,
        ..spec_settings()
    });
    t.beats(&mut fd, 4);
    let phi_at_100_ms = fd.phi(t.next());
    t.beats(&mut fd, 4);
    let phi_at_500_ms = fd.phi(t.next());
    assert!(close(phi_at_500_ms, phi_at_100_ms, 0.001));
}

/// `n` heartbeats 1 s apart from `start`, each found on time; returns when
/// the last arrived.
fn regular_beats(fd: &mut PhiAccrualFailureDetector, start: Instant, n: u64) -> Instant {
    for i in 0..n {
        let now = start + Duration::from_millis(1000 * i);
        assert!(fd.is_available(now), "beat {i} arrives on time");
        fd.heartbeat(now);
    }
    start + Duration::from_millis(1000 * (n - 1))
}

#[test]
fn phi_rises_with_silence_until_about_interval_plus_pause() {
    let mut fd = PhiAccrualFailureDetector::new(&FailureDetectorSettings::default());
    let last = regular_beats(&mut fd, Instant::now(), 50);
    let at = |ms: u64| last + Duration::from_millis(ms);
    // Phi stays at 0 (to the precision of a double) while the silence is
    // well within interval + pause, then climbs with every step.
    let mut previous = fd.phi(at(0));
    for ms in (100..=13_000).step_by(100) {
        let phi = fd.phi(at(ms));
        if ms >= 10_500 {
            assert!(phi > previous, "phi at {ms} ms: {phi} <= {previous}");
        } else {
            assert!(phi >= previous, "phi at {ms} ms: {phi} < {previous}");
        }
        previous = phi;
    }
    assert!(close(fd.phi(at(1000 + 10_000)), 0.3, 0.1));
    assert!(fd.is_available(at(1000 + 10_000)));
    assert!(!fd.is_available(at(1000 + 10_000 + 1000)));
}

#[test]
fn a_heartbeat_late_within_the_pause_does_not_trip_it() {
    let mut fd = PhiAccrualFailureDetector::new(&FailureDetectorSettings::default());
    let last = regular_beats(&mut fd, Instant::now(), 50);
    let late = last + Duration::from_millis(8000);
    assert!(fd.is_available(late));
    fd.heartbeat(late);
    regular_beats(&mut fd, late + Duration::from_millis(1000), 10);
}

#[test]
fn the_deviation_floor_keeps_a_regular_history_from_a_hair_trigger() {
    // Ten identical intervals fill the window: the measured deviation is 0.
    let floored = FailureDetectorSettings {
        threshold: 10.0,
        max_sample_size: 10,
        ..spec_settings()
    };
    let unfloored = FailureDetectorSettings {
        min_std_deviation: Duration::from_millis(1),
        ..floored.clone()
    };
    let start = Instant::now();
    let mut with_floor = PhiAccrualFailureDetector::new(&floored);
    let mut without = PhiAccrualFailureDetector::new(&unfloored);
    let last = regular_beats(&mut with_floor, start, 12);
    regular_beats(&mut without, start, 12);
    let a_bit_late = last + Duration::from_millis(1300);
    assert!(with_floor.is_available(a_bit_late));
    assert!(!without.is_available(a_bit_late));
}

#[test]
fn history_mean_and_variance() {
    let mut h = HeartbeatHistory::new(20);
    for x in [100, 200, 125, 340, 130] {
        h.push(x);
    }
    assert!(close(h.mean(), 179.0, 1e-5));
    assert!(close(h.variance(), 7584.0, 1e-5));
    let mut one = HeartbeatHistory::new(600);
    one.push(1000);
    assert!(close(one.variance(), 0.0, 1e-5));
}

#[test]
fn history_keeps_at_most_max_samples() {
    let mut h = HeartbeatHistory::new(3);
    for x in [100, 110, 90] {
        h.push(x);
    }
    assert!(close(h.mean(), 100.0, 1e-5));
    assert!(close(h.variance(), 66.666_666_7, 1e-5));
    h.push(140);
    assert!(close(h.mean(), 113.333_333, 1e-5));
    assert!(close(h.variance(), 422.222_222, 1e-5));
    h.push(80);
    assert!(close(h.mean(), 103.333_333, 1e-5));
    assert!(close(h.variance(), 688.888_888_89, 1e-5));
}

/// A detector whose first estimate's deviation (a quarter of the
/// interval) is the floor: a history that starts at the first heartbeat
/// and then sees regular ones stays at the floor.
fn floor_estimate_settings() -> FailureDetectorSettings {
    FailureDetectorSettings {
        heartbeat_interval: Duration::from_millis(400),
        threshold: 10.0,
        acceptable_heartbeat_pause: Duration::from_millis(1000),
        min_std_deviation: Duration::from_millis(100),
        max_sample_size: 200,
    }
}

/// Judging a node before its first heartbeat (`expect`) leaves nothing in
/// the statistics: the first real heartbeat, a few milliseconds later,
/// starts the history, and the deviation stays at its floor (a sample of
/// those few milliseconds would raise it to about twice the floor).
#[test]
fn judging_before_the_first_heartbeat_leaves_the_statistics_alone() {
    let start = Instant::now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    let mut expected_first = PhiAccrualFailureDetector::new(&floor_estimate_settings());
    let mut heartbeats_only = PhiAccrualFailureDetector::new(&floor_estimate_settings());
    expected_first.expect(at(0), Duration::from_secs(6));
    for ms in (3..=3 + 5 * 400).step_by(400) {
        expected_first.heartbeat(at(ms));
        heartbeats_only.heartbeat(at(ms));
        assert_eq!(expected_first.std_deviation(), 100.0, "at {ms} ms");
        assert_eq!(expected_first.mean(), 400.0, "at {ms} ms");
    }
    // The same verdicts as a detector that only ever saw the heartbeats.
    for silence in [0, 1000, 1500, 2000, 2500] {
        let now = at(2003 + silence);
        assert_eq!(expected_first.phi(now), heartbeats_only.phi(now));
    }
}

/// Before its first heartbeat, a node expected at `t0` is given the grace
/// on top of the usual silence; once it has sent one, the grace is gone.
#[test]
fn the_grace_lasts_until_the_first_heartbeat() {
    let start = Instant::now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    let grace = Duration::from_millis(6000);
    // Usual bound: mean 400 + pause 1000 + about six deviations of 100.
    let mut silent = PhiAccrualFailureDetector::new(&floor_estimate_settings());
    silent.expect(at(0), grace);
    assert!(silent.is_available(at(3000)), "judged without the grace");
    assert!(
        silent.is_available(at(6000 + 1400)),
        "judged within the grace"
    );
    assert!(!silent.is_available(at(6000 + 2400)), "never given up");
    let mut heard = PhiAccrualFailureDetector::new(&floor_estimate_settings());
    heard.expect(at(0), grace);
    heard.heartbeat(at(10));
    assert!(heard.is_available(at(10 + 1400)));
    assert!(
        !heard.is_available(at(10 + 2400)),
        "the grace outlived the first heartbeat"
    );
}

/// `expect` on a node already heard from changes nothing.
#[test]
fn expecting_a_node_already_heard_from_changes_nothing() {
    let start = Instant::now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    let mut fd = PhiAccrualFailureDetector::new(&floor_estimate_settings());
    fd.heartbeat(at(0));
    fd.expect(at(2000), Duration::from_secs(6));
    assert!(!fd.is_available(at(2400)), "expect restarted the silence");
}
