//! `BackoffSupervisor` restarting its child on failure (classic
//! `BackoffOpts.onFailure`, Pekko's `BackoffOnRestartSupervisor`), ported
//! from Pekko's `BackoffSupervisorSpec` and
//! `BackoffOnRestartSupervisorSpec`. Every case runs in each documented way
//! of configuring it, which must all count, reset and stop alike. The
//! delays run on a manual clock.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::backoff::{letter_for, Cmd, Event, Supervised, MS};
use volley::{
    BackoffMsg, BackoffOptions, DeadLetter, DeadLetterReason, Directive, Failure,
    SupervisorStrategy,
};
use volley_testkit::TestProbe;

/// The documented ways to have a `BackoffSupervisor` restart a failed child
/// after a backoff.
#[derive(Debug, Clone, Copy)]
enum Way {
    /// `BackoffOptions::on_failure`, every setting on the options.
    OnFailureOptions,
    /// On-stop options with a `restart_with_backoff` child strategy, the
    /// limit and reset period on the options.
    BackoffStrategy,
    /// The same, the limit and reset period on the strategy.
    BackoffStrategyLimited,
}

const WAYS: [Way; 3] = [
    Way::OnFailureOptions,
    Way::BackoffStrategy,
    Way::BackoffStrategyLimited,
];

/// What a case configures; each way puts it where that way puts it.
#[derive(Clone, Copy)]
struct Config {
    min: Duration,
    max: Duration,
    max_restarts: Option<u32>,
    reset_after: Option<Duration>,
    stash_capacity: Option<usize>,
    /// The strategy's own restart limit: at most this many in the window.
    window: Option<(u32, Duration)>,
    /// Stops the child on `Cmd::ThrowStopping`.
    stop_on_stopping: bool,
}

impl Config {
    fn new(min: Duration, max: Duration) -> Config {
        Config {
            min,
            max,
            max_restarts: None,
            reset_after: None,
            stash_capacity: None,
            window: None,
            stop_on_stopping: false,
        }
    }

    /// The decider and window limit, on `strategy`.
    fn decide(&self, mut strategy: SupervisorStrategy) -> SupervisorStrategy {
        if self.stop_on_stopping {
            strategy = strategy.with_decider(|f: &Failure| {
                if f.to_string().contains("stopping") {
                    Directive::Stop
                } else {
                    Directive::Restart
                }
            });
        }
        if let Some((max, within)) = self.window {
            strategy = strategy.with_max_restarts(max, within);
        }
        strategy
    }

    fn options(&self, way: Way) -> BackoffOptions {
        let (min, max) = (self.min, self.max);
        match way {
            Way::OnFailureOptions => {
                let o = BackoffOptions::on_failure(min, max, 0.0)
                    .with_supervisor_strategy(self.decide(SupervisorStrategy::one_for_one()));
                let o = set(o, self.max_restarts, BackoffOptions::with_max_restarts);
                let o = set(
                    o,
                    self.reset_after,
                    BackoffOptions::with_reset_backoff_after,
                );
                set(o, self.stash_capacity, BackoffOptions::with_stash_capacity)
            }
            Way::BackoffStrategy => {
                let o = BackoffOptions::on_stop(min, max, 0.0);
                let o = set(o, self.max_restarts, BackoffOptions::with_max_restarts);
                let o = set(
                    o,
                    self.reset_after,
                    BackoffOptions::with_reset_backoff_after,
                );
                o.with_supervisor_strategy(self.backoff_strategy())
            }
            Way::BackoffStrategyLimited => {
                let s = self.backoff_strategy();
                let s = set(
                    s,
                    self.max_restarts,
                    SupervisorStrategy::with_backoff_max_restarts,
                );
                let s = set(
                    s,
                    self.reset_after,
                    SupervisorStrategy::with_reset_backoff_after,
                );
                BackoffOptions::on_stop(min, max, 0.0).with_supervisor_strategy(s)
            }
        }
    }

    fn backoff_strategy(&self) -> SupervisorStrategy {
        let s = SupervisorStrategy::restart_with_backoff(self.min, self.max, 0.0);
        let s = set(
            s,
            self.stash_capacity,
            SupervisorStrategy::with_backoff_stash_capacity,
        );
        self.decide(s)
    }

    /// A supervisor configured `way`, its child started.
    fn start(&self, case: &str, way: Way) -> Supervised {
        let name = format!("{case}-{way:?}").to_lowercase();
        Supervised::new(&name, self.options(way))
    }
}

/// `value` with `setting` applied, if there is one.
fn set<T, V>(value: T, setting: Option<V>, apply: impl FnOnce(T, V) -> T) -> T {
    match setting {
        Some(v) => apply(value, v),
        None => value,
    }
}

/// Fails the child and waits until its restart is armed.
fn fail(s: &Supervised) {
    s.supervisor.tell(BackoffMsg::Msg(Cmd::Throw));
    s.probe.expect_msg(Event::PreRestart);
    s.time.wait_for_timers(1);
}

/// The child restarts at `delay` and not a moment before.
fn expect_restart_after(s: &Supervised, delay: Duration) {
    advance_to_restart(s, delay);
    s.probe.expect_msg(Event::Started);
}

/// The child's restart at `delay` fails to start.
fn expect_restart_after_failed_start(s: &Supervised, delay: Duration) {
    advance_to_restart(s, delay);
    s.probe.expect_msg(Event::StartFailed);
}

fn advance_to_restart(s: &Supervised, delay: Duration) {
    assert_eq!(s.time.next_due(), Some(delay), "the backoff's delay");
    s.time.advance(delay - MS(1));
    assert_eq!(s.time.pending_timers(), 1, "restarted early");
    s.time.advance(MS(1));
}

/// The child fails once more and is stopped for good, and the supervisor
/// with it; nothing is left armed.
fn expect_stop_on_failure(s: &Supervised, how: Cmd) {
    let child = s.current_child().expect("a child");
    let child_watcher = TestProbe::<()>::new(&s.system);
    child_watcher.watch(&child);
    s.supervisor.tell(BackoffMsg::Msg(how));
    s.probe.expect_msg(Event::PostStop);
    child_watcher.expect_terminated(&child);
    s.watcher.expect_terminated(&s.supervisor);
    assert_eq!(s.time.pending_timers(), 0, "no restart is armed");
}

/// BackoffOnRestartSupervisorSpec "restart the child with an exponential
/// back off" (200, 400, 800, 1600 ms), BackoffSupervisorSpec "forward
/// messages to the child" and "support custom supervision strategy": each
/// restart is counted as soon as it is decided, and the child keeps its
/// ref meanwhile.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_each_restart_and_backs_off_exponentially() {
    let config = Config::new(MS(200), Duration::from_secs(10));
    for way in WAYS {
        let s = config.start("backoff-fail-exponential", way);
        let c1 = s.current_child().expect("a child");
        s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(1)));
        s.probe.expect_msg(Event::Pong(1));
        assert_eq!(s.restart_count(), 0, "{way:?}");
        for (n, delay) in [(1, 200), (2, 400), (3, 800), (4, 1600)] {
            fail(&s);
            assert_eq!(s.restart_count(), n, "{way:?}");
            assert_eq!(s.current_child().as_ref(), Some(&c1), "{way:?}");
            expect_restart_after(&s, MS(delay));
        }
        s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(2)));
        s.probe.expect_msg(Event::Pong(2));
        s.system.terminate().await;
    }
}

/// BackoffSupervisorSpec "stop restarting the child after reaching
/// maxNrOfRetries limit (Backoff.onFailure)": two restarts, counted; the
/// third failure stops the child and the supervisor.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_past_the_restart_limit() {
    let config = Config {
        max_restarts: Some(2),
        ..Config::new(MS(100), Duration::from_secs(3))
    };
    for way in WAYS {
        let s = config.start("backoff-fail-max", way);
        assert_eq!(s.restart_count(), 0, "{way:?}");
        for (n, delay) in [(1, 100), (2, 200)] {
            fail(&s);
            assert_eq!(s.restart_count(), n, "{way:?}");
            expect_restart_after(&s, MS(delay));
        }
        expect_stop_on_failure(&s, Cmd::Throw);
        s.system.terminate().await;
    }
}

/// Pekko's `withAutoReset`: once the child has run for the reset period
/// since its last restart, the count starts over, the next restart waits
/// the minimum again, and the limit counts from there.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_starts_over_after_the_reset_period() {
    let config = Config {
        max_restarts: Some(2),
        reset_after: Some(Duration::from_secs(1)),
        ..Config::new(MS(100), Duration::from_secs(10))
    };
    for way in WAYS {
        let s = config.start("backoff-fail-reset", way);
        for _ in 0..2 {
            for (n, delay) in [(1, 100), (2, 200)] {
                fail(&s);
                assert_eq!(s.restart_count(), n, "{way:?}");
                expect_restart_after(&s, MS(delay));
            }
            s.time.advance(MS(999));
            assert_eq!(s.restart_count(), 2, "{way:?}: reset early");
            s.time.advance(MS(1));
            assert_eq!(s.restart_count(), 0, "{way:?}");
        }
        fail(&s);
        expect_restart_after(&s, MS(100));
        fail(&s);
        expect_restart_after(&s, MS(200));
        expect_stop_on_failure(&s, Cmd::Throw);
        s.system.terminate().await;
    }
}

/// Pekko's default for on-failure options, `AutoReset(minBackoff)`: with
/// no reset period set anywhere, the count starts over once the child has
/// run for the minimum delay.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_starts_over_after_the_minimum_delay_by_default() {
    let config = Config::new(MS(100), Duration::from_secs(10));
    for way in WAYS {
        let s = config.start("backoff-fail-default-reset", way);
        fail(&s);
        expect_restart_after(&s, MS(100));
        assert_eq!(s.restart_count(), 1, "{way:?}");
        s.time.advance(MS(100));
        assert_eq!(s.restart_count(), 0, "{way:?}");
        s.system.terminate().await;
    }
}

/// BackoffSupervisorSpec "support manual reset" (on failure): `Reset`
/// starts the count over, and the next restart waits the minimum.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_reset() {
    let config = Config {
        reset_after: Some(Duration::from_secs(3600)),
        ..Config::new(MS(100), Duration::from_secs(10))
    };
    for way in WAYS {
        let s = config.start("backoff-fail-manual-reset", way);
        fail(&s);
        assert_eq!(s.restart_count(), 1, "{way:?}");
        expect_restart_after(&s, MS(100));
        fail(&s);
        expect_restart_after(&s, MS(200));
        s.supervisor.tell(BackoffMsg::Reset);
        assert_eq!(s.restart_count(), 0, "{way:?}");
        fail(&s);
        expect_restart_after(&s, MS(100));
        s.system.terminate().await;
    }
}

/// BackoffOnRestartSupervisorSpec "stop on exceptions as dictated by the
/// supervisor strategy": a `Stop` stops the supervisor too, and is not a
/// restart.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_when_the_strategy_stops_the_child() {
    let config = Config {
        stop_on_stopping: true,
        ..Config::new(MS(200), Duration::from_secs(10))
    };
    for way in WAYS {
        let s = config.start("backoff-fail-decider-stops", way);
        fail(&s);
        expect_restart_after(&s, MS(200));
        assert_eq!(s.restart_count(), 1, "{way:?}");
        expect_stop_on_failure(&s, Cmd::ThrowStopping);
        s.system.terminate().await;
    }
}

/// A restarted instance whose `pre_start` fails is decided like any
/// failure: Pekko's default decider stops it (and so the supervisor);
/// `restart_with_backoff`'s decider restarts it, counted.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_restart_is_decided_like_any_failure() {
    let config = Config::new(MS(100), Duration::from_secs(10));
    for way in WAYS {
        let s = config.start("backoff-fail-restart-fails", way);
        s.fail_start.store(true, Ordering::SeqCst);
        fail(&s);
        expect_restart_after_failed_start(&s, MS(100));
        match way {
            Way::OnFailureOptions => {
                s.probe.expect_msg(Event::PostStop);
                s.watcher.expect_terminated(&s.supervisor);
            }
            Way::BackoffStrategy | Way::BackoffStrategyLimited => {
                s.probe.expect_msg(Event::PreRestart);
                s.time.wait_for_timers(1);
                assert_eq!(s.restart_count(), 2, "{way:?}");
                s.fail_start.store(false, Ordering::SeqCst);
                expect_restart_after(&s, MS(200));
            }
        }
        s.system.terminate().await;
    }
}

/// BackoffOnRestartSupervisorSpec "terminate when child terminates".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_when_the_child_stops_itself() {
    let config = Config::new(MS(200), Duration::from_secs(10));
    for way in WAYS {
        let s = config.start("backoff-fail-child-stops", way);
        expect_stop_on_failure(&s, Cmd::Die);
        s.system.terminate().await;
    }
}

/// BackoffOnRestartSupervisorSpec "respect maxNrOfRetries property of
/// OneForOneStrategy": the strategy's own limit, five restarts in 30 s;
/// the sixth failure stops the child and the supervisor.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_past_the_strategy_restart_limit() {
    let config = Config {
        window: Some((5, Duration::from_secs(30))),
        ..Config::new(MS(200), Duration::from_secs(10))
    };
    for way in WAYS {
        let s = config.start("backoff-fail-window-max", way);
        for (n, delay) in [(1, 200), (2, 400), (3, 800), (4, 1600), (5, 3200)] {
            fail(&s);
            assert_eq!(s.restart_count(), n, "{way:?}");
            expect_restart_after(&s, MS(delay));
        }
        expect_stop_on_failure(&s, Cmd::Throw);
        s.system.terminate().await;
    }
}

/// BackoffOnRestartSupervisorSpec "respect withinTimeRange property of
/// OneForOneStrategy": three restarts in the window, then the window
/// passes (real time: it is the strategy's limit, not the backoff's) and
/// three more are allowed; the fourth stops the supervisor.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_strategy_restart_limit_starts_over_with_its_window() {
    let window = Duration::from_secs(1);
    let config = Config {
        window: Some((3, window)),
        ..Config::new(MS(300), Duration::from_secs(10))
    };
    for way in WAYS {
        let s = config.start("backoff-fail-window", way);
        let restart = || {
            fail(&s);
            s.time.advance(Duration::from_secs(10));
            s.probe.expect_msg(Event::Started);
        };
        (0..3).for_each(|_| restart());
        // The window passing is what is tested.
        std::thread::sleep(window);
        (0..3).for_each(|_| restart());
        expect_stop_on_failure(&s, Cmd::Throw);
        s.system.terminate().await;
    }
}

/// BackoffOnRestartSupervisorSpec "keep restarting when failures happen
/// outside of withinTimeRange": each failure comes after the window has
/// passed, so the limit of three is never reached.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_restarting_outside_the_strategy_window() {
    let window = MS(10);
    let config = Config {
        window: Some((3, window)),
        ..Config::new(MS(100), MS(800))
    };
    for way in WAYS {
        let s = config.start("backoff-fail-outside-window", way);
        for _ in 0..5 {
            // At least the window, whatever the machine's load.
            std::thread::sleep(2 * window);
            fail(&s);
            s.time.advance(MS(800));
            s.probe.expect_msg(Event::Started);
        }
        s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(1)));
        s.probe.expect_msg(Event::Pong(1));
        s.system.terminate().await;
    }
}

/// BackoffSupervisorSpec "not reply to sender if replyWhileStopped is NOT
/// specified" (on failure): with no stash, a message that arrives while the
/// child waits out its backoff is a dead letter; with one, it waits for the
/// restarted child.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_while_the_child_waits() {
    let config = Config {
        stash_capacity: Some(1),
        ..Config::new(MS(100), Duration::from_secs(10))
    };
    for way in WAYS {
        let s = config.start("backoff-fail-waiting", way);
        let dead = TestProbe::<DeadLetter>::on_event_stream(&s.system);
        let child = s.current_child().expect("a child");
        fail(&s);
        s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(1)));
        s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(2)));
        let letter = letter_for(&dead, &child);
        assert_eq!(letter.reason, DeadLetterReason::BackoffOverflow, "{way:?}");
        expect_restart_after(&s, MS(100));
        s.probe.expect_msg(Event::Pong(1));
        s.system.terminate().await;
    }
}
