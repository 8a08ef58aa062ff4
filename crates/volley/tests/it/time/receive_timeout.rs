//! The receive timeout, cases ported from Pekko's `ReceiveTimeoutSpec`
//! (actor-tests) to volley's API, on manual time: each case advances the
//! clock to the exact instant the timeout is due, and proves it did not
//! fire a moment earlier with a reply that would have come after it. The
//! timeouts are minutes long, so only the manual clock can fire them while
//! a test runs.

use crate::common;

use std::time::Duration;

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, Settings};
use volley_testkit::{ManualTime, TestProbe};

#[derive(Debug, PartialEq)]
enum Seen {
    Timeout,
    Pong,
}

enum Msg {
    /// Counts as activity; answered with `Pong`.
    Tick,
    /// Does not count (Pekko's `NotInfluenceReceiveTimeout`); answered
    /// with `Pong`.
    Quiet,
    /// Sets the timeout (in a message that does not count).
    QuietSet(Duration),
    /// Cancels the timeout (in a message that does not count).
    QuietCancel,
}

/// Reports each timeout; `set_in_pre_start` arms it at start, and
/// `once` cancels it on the first timeout.
struct Idle {
    to: ActorRef<Seen>,
    set_in_pre_start: Option<Duration>,
    once: bool,
}

impl Actor for Idle {
    type Msg = Msg;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if let Some(after) = self.set_in_pre_start {
            ctx.set_receive_timeout(after);
        }
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Tick | Msg::Quiet => self.to.tell(Seen::Pong),
            Msg::QuietSet(after) => ctx.set_receive_timeout(after),
            Msg::QuietCancel => ctx.cancel_receive_timeout(),
        }
        Ok(())
    }
    fn on_receive_timeout(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.to.tell(Seen::Timeout);
        if self.once {
            ctx.cancel_receive_timeout();
            assert_eq!(ctx.receive_timeout(), None);
        }
        Ok(())
    }
    fn influences_receive_timeout(msg: &Msg) -> bool {
        matches!(msg, Msg::Tick)
    }
}

/// A system on manual time, the actor under test and the probe it reports
/// to. The actor has started (its `pre_start` armed what it arms) when
/// this returns.
struct Case {
    time: ManualTime,
    system: ActorSystem,
    probe: TestProbe<Seen>,
    actor: ActorRef<Msg>,
}

impl Case {
    fn new(name: &str, set: Option<u64>, once: bool) -> Case {
        let time = ManualTime::new();
        let system = common::system_with(name, time.settings(Settings::default())).unwrap();
        let probe = TestProbe::new(&system);
        let to = probe.actor_ref();
        let actor = system
            .spawn(
                "a",
                Props::new(move || Idle {
                    to: to.clone(),
                    set_in_pre_start: set.map(Duration::from_secs),
                    once,
                }),
            )
            .unwrap();
        let case = Case {
            time,
            system,
            probe,
            actor,
        };
        case.quiet_ping();
        case
    }

    fn advance_s(&self, s: u64) {
        self.time.advance(Duration::from_secs(s));
    }

    /// Proves no timeout is pending in the mailbox: a fired timeout's
    /// signal was enqueued before this message and would come first.
    fn quiet_ping(&self) {
        self.actor.tell(Msg::Quiet);
        self.probe.expect_msg(Seen::Pong);
    }

    /// No timeout is armed: a long silence brings no signal.
    fn expect_none_armed(&self) {
        assert_eq!(self.time.pending_timers(), 0);
        self.advance_s(10_000);
        self.quiet_ping();
    }

    async fn end(self) {
        self.system.terminate().await;
    }
}

/// "get timeout".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_actor_gets_its_timeout() {
    let case = Case::new("rt-get", Some(200), true);
    case.advance_s(199);
    case.quiet_ping();
    case.advance_s(1);
    case.probe.expect_msg(Seen::Timeout);
    case.end().await;
}

/// "reschedule timeout after regular receive": messages that count keep it
/// off; once they stop, it fires a full timeout after the last one.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_keep_the_timeout_off() {
    let case = Case::new("rt-reschedule", Some(800), true);
    for _ in 0..4 {
        case.advance_s(400);
        case.actor.tell(Msg::Tick);
        case.probe.expect_msg(Seen::Pong);
    }
    case.advance_s(400);
    case.quiet_ping();
    case.advance_s(399);
    case.quiet_ping();
    case.advance_s(1);
    case.probe.expect_msg(Seen::Timeout);
    case.end().await;
}

/// "be able to turn off timeout if desired".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_timeout_fires_no_more() {
    let case = Case::new("rt-off", Some(100), true);
    case.advance_s(100);
    case.probe.expect_msg(Seen::Timeout);
    case.quiet_ping();
    case.expect_none_armed();
    case.end().await;
}

/// Without `once` it keeps firing, one timeout of silence apart.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncancelled_timeout_fires_again() {
    let case = Case::new("rt-again", Some(100), false);
    case.advance_s(100);
    case.probe.expect_msg(Seen::Timeout);
    case.advance_s(99);
    case.quiet_ping();
    case.advance_s(1);
    case.probe.expect_msg(Seen::Timeout);
    case.end().await;
}

/// "not receive timeout message when not specified".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_timeout_unless_set() {
    let case = Case::new("rt-none", None, true);
    case.actor.tell(Msg::Tick);
    case.probe.expect_msg(Seen::Pong);
    case.expect_none_armed();
    case.end().await;
}

/// "get timeout while receiving NotInfluenceReceiveTimeout messages".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_that_do_not_count_do_not_hold_it_off() {
    let case = Case::new("rt-quiet", Some(300), true);
    for _ in 0..5 {
        case.advance_s(50);
        case.quiet_ping();
    }
    case.advance_s(50);
    case.probe.expect_msg(Seen::Timeout);
    case.end().await;
}

/// "be able to turn on timeout in NotInfluenceReceiveTimeout message
/// handler" and "be able to turn off timeout in NotInfluenceReceiveTimeout
/// message handler".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_does_not_count_can_set_or_cancel_it() {
    let case = Case::new("rt-set-quiet", None, false);
    case.actor.tell(Msg::QuietSet(Duration::from_secs(100)));
    case.quiet_ping();
    case.advance_s(100);
    case.probe.expect_msg(Seen::Timeout);
    case.actor.tell(Msg::QuietCancel);
    case.quiet_ping();
    case.expect_none_armed();
    case.end().await;
}

/// The real clock's path (tokio's timer), which every case above
/// replaces: the timeout comes, once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_real_time_the_timeout_comes_too() {
    let system = common::system("rt-real").unwrap();
    let probe = TestProbe::new(&system);
    let to = probe.actor_ref();
    system
        .spawn(
            "a",
            Props::new(move || Idle {
                to: to.clone(),
                set_in_pre_start: Some(Duration::from_millis(100)),
                once: true,
            }),
        )
        .unwrap();
    probe.expect_msg(Seen::Timeout);
    probe.expect_no_msg(Duration::from_millis(300));
    system.terminate().await;
}
