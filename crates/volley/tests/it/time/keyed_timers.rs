//! Keyed timers on manual time: single and repeating, replaced, cancelled,
//! and cancelled by a restart or a stop. Each case advances the clock to
//! the instant a timer is due and shows with a `Sync` reply that it did
//! not fire earlier (a fired timer's message would be queued first). The
//! delays are seconds to minutes long, so only the manual clock can fire
//! them while a test runs.

use crate::common;

use std::time::Duration;

use volley::{ActorRef, ActorSystem, Props, Settings};
use volley_testkit::{actor_fn, FnActor, ManualTime, TestProbe};

#[derive(Clone)]
enum Tick {
    StartOnce(&'static str, Duration),
    StartRepeat(&'static str, Duration),
    Cancel(&'static str),
    Fired(&'static str),
    Fail,
    StopMe,
    /// Answers `synced`.
    Sync,
    /// Answers whether timer `t` is active.
    Active,
}

/// Starts, cancels and reports its timers as told, to `to`.
fn ticker(to: ActorRef<String>) -> Props<FnActor<Tick>> {
    actor_fn(move |ctx, msg: Tick| {
        match msg {
            Tick::StartOnce(key, delay) => ctx.schedule_once(key, delay, Tick::Fired(key)),
            Tick::StartRepeat(key, interval) => {
                ctx.schedule_repeatedly(key, interval, Tick::Fired(key))
            }
            Tick::Cancel(key) => {
                ctx.cancel_timer(key);
            }
            Tick::Fired(key) => to.tell(format!("fired {key}")),
            Tick::Fail => return Err("failing on purpose".into()),
            Tick::StopMe => ctx.stop_self(),
            Tick::Sync => to.tell("synced".into()),
            Tick::Active => to.tell(format!("active {}", ctx.is_timer_active("t"))),
        }
        Ok(())
    })
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

struct Case {
    time: ManualTime,
    system: ActorSystem,
    probe: TestProbe<String>,
    ticker: ActorRef<Tick>,
}

impl Case {
    fn new(name: &str) -> Case {
        let time = ManualTime::new();
        let system = common::system_with(name, time.settings(Settings::default())).unwrap();
        let probe = TestProbe::new(&system);
        let to = probe.actor_ref();
        let ticker = system.spawn("ticker", ticker(to)).unwrap();
        Case {
            time,
            system,
            probe,
            ticker,
        }
    }

    fn tell(&self, msg: Tick) {
        self.ticker.tell(msg);
    }

    /// Starts a timer and waits until the actor has armed it.
    fn arm(&self, start: Tick) {
        self.tell(start);
        self.sync();
    }

    fn advance_s(&self, s: u64) {
        self.time.advance(secs(s));
    }

    /// Everything sent before (and every timer fired before) is handled.
    fn sync(&self) {
        self.tell(Tick::Sync);
        self.probe.expect_msg("synced".into());
    }

    fn expect(&self, what: &str) {
        self.probe.expect_msg(what.into());
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_and_repeating_timers_fire_when_due() {
    let case = Case::new("timers");
    case.arm(Tick::StartOnce("once", secs(10)));
    case.advance_s(9);
    case.sync();
    case.advance_s(1);
    case.expect("fired once");
    case.arm(Tick::StartRepeat("rep", secs(10)));
    case.advance_s(35);
    assert_eq!(case.probe.receive_n(3), ["fired rep"; 3]);
    case.sync();
    case.advance_s(5);
    case.expect("fired rep");
    case.tell(Tick::Cancel("rep"));
    case.sync();
    case.advance_s(1000);
    case.sync();
    assert_eq!(case.time.pending_timers(), 0);
    case.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_timer_fires_once_at_its_new_time() {
    let case = Case::new("replace");
    case.tell(Tick::StartOnce("k", secs(20)));
    case.arm(Tick::StartOnce("k", secs(40)));
    case.advance_s(20);
    case.sync();
    case.advance_s(20);
    case.expect("fired k");
    case.advance_s(1000);
    case.sync();
    case.system.terminate().await;
}

/// The fired message already queued when the actor fails is discarded
/// with the timer: after the restart nothing of it arrives.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_are_cancelled_on_restart() {
    let case = Case::new("timer-restart");
    case.arm(Tick::StartRepeat("t", secs(20)));
    case.advance_s(20);
    case.expect("fired t");
    case.tell(Tick::Fail);
    case.advance_s(20);
    case.tell(Tick::Active);
    case.expect("active false");
    case.advance_s(1000);
    case.sync();
    assert_eq!(case.time.pending_timers(), 0);
    case.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_are_cancelled_on_stop() {
    let case = Case::new("timer-stop");
    case.arm(Tick::StartRepeat("t", secs(5)));
    case.advance_s(5);
    case.expect("fired t");
    let before = case.system.dead_letter_count();
    case.tell(Tick::StopMe);
    case.probe.expect_terminated(&case.ticker);
    assert_eq!(case.time.pending_timers(), 0);
    case.advance_s(1000);
    // A cancelled repeating timer sends nothing more, not even dead letters.
    assert_eq!(case.system.dead_letter_count(), before);
    case.system.terminate().await;
}

/// The real clock's path (tokio's timer), which the cases above replace.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_real_time_timers_fire_too() {
    let system = common::system("timers-real").unwrap();
    let probe = TestProbe::new(&system);
    let to = probe.actor_ref();
    let ticker = system.spawn("ticker", ticker(to)).unwrap();
    ticker.tell(Tick::StartOnce("once", Duration::from_millis(10)));
    probe.expect_msg("fired once".into());
    ticker.tell(Tick::StartRepeat("rep", Duration::from_millis(10)));
    assert_eq!(probe.receive_n(3), ["fired rep"; 3]);
    system.terminate().await;
}
