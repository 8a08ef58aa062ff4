//! Backoff supervision: `SupervisorStrategy::restart_with_backoff` (Akka
//! typed's `restartWithBackoff`, classic `BackoffOpts.onFailure`) and
//! `BackoffSupervisor` with `BackoffOptions::on_stop` (classic
//! `BackoffOpts.onStop`), ported from Pekko's `BackoffOnRestartSupervisorSpec`,
//! `BackoffSupervisorSpec` and typed `SupervisionSpec`. The delays run on a
//! manual clock, so the tests say exactly when a restart may happen.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::backoff::{letter_for, target, Cmd, Event, Target, MS};
use volley::{
    Actor, ActorRef, ActorSystem, BackoffOptions, Context, DeadLetter, DeadLetterReason, Directive,
    Failure, HandleResult, Props, Settings, SupervisorStrategy,
};
use volley_testkit::{ManualTime, TestProbe};

struct Parent {
    strategy: SupervisorStrategy,
    child: Props<Target>,
}

enum ParentMsg {
    Child(ActorRef<ActorRef<Cmd>>),
    /// Spawns another child like the first.
    Spawn(&'static str, ActorRef<ActorRef<Cmd>>),
    CountChildren(ActorRef<usize>),
}

impl Actor for Parent {
    type Msg = ParentMsg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.spawn("child", self.child.clone())?;
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: ParentMsg) -> HandleResult {
        match msg {
            ParentMsg::Child(reply) => {
                let child = ctx.child("child").and_then(|c| c.downcast::<Cmd>());
                reply.tell(child.expect("the child is there"));
            }
            ParentMsg::Spawn(name, reply) => reply.tell(ctx.spawn(name, self.child.clone())?),
            ParentMsg::CountChildren(reply) => reply.tell(ctx.children().len()),
        }
        Ok(())
    }

    fn supervisor_strategy(&self) -> SupervisorStrategy {
        self.strategy.clone()
    }
}

struct Setup {
    system: ActorSystem,
    time: ManualTime,
    probe: TestProbe<Event>,
    parent: ActorRef<ParentMsg>,
    child: ActorRef<Cmd>,
    fail_start: Arc<AtomicBool>,
    /// Watches; kept apart from `probe`, whose messages from the child
    /// and `Terminated`s take different paths and may arrive in any order.
    watcher: TestProbe<()>,
}

impl Setup {
    /// A parent with `strategy` and its child, started (or, with
    /// `fail_first_start`, failed to start).
    fn new(name: &str, strategy: SupervisorStrategy, fail_first_start: bool) -> Setup {
        common::quiet_deliberate_panics();
        let time = ManualTime::new();
        let system = common::system_with(name, time.settings(Settings::default())).unwrap();
        let probe = TestProbe::new(&system);
        let fail_start = Arc::new(AtomicBool::new(fail_first_start));
        let child = target(&probe, &fail_start);
        let parent = system
            .spawn(
                "parent",
                Props::new(move || Parent {
                    strategy: strategy.clone(),
                    child: child.clone(),
                }),
            )
            .unwrap();
        let replies = TestProbe::new(&system);
        parent.tell(ParentMsg::Child(replies.actor_ref()));
        let child = replies.receive_msg();
        let watcher = TestProbe::new(&system);
        watcher.watch(&child);
        Setup {
            system,
            time,
            probe,
            parent,
            child,
            fail_start,
            watcher,
        }
    }

    /// Waits until the child has armed its backoff, then checks that it
    /// does not restart a moment before `delay` and does at `delay`.
    fn expect_restart_after(&self, delay: Duration) {
        self.time.wait_for_timers(1);
        assert_eq!(self.time.next_due(), Some(delay), "the backoff's delay");
        self.time.advance(delay - MS(1));
        assert_eq!(self.time.pending_timers(), 1, "restarted early");
        self.time.advance(MS(1));
        self.probe.expect_msg(Event::Started);
    }

    fn children(&self) -> usize {
        let replies = TestProbe::new(&self.system);
        self.parent
            .tell(ParentMsg::CountChildren(replies.actor_ref()));
        replies.receive_msg()
    }
}

/// BackoffOnRestartSupervisorSpec "restart the child with an exponential
/// back off" (200 ms, 400 ms, 800 ms, 1600 ms), with typed
/// SupervisionSpec's check that `pre_restart` runs at once; and that one
/// child is left.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_with_exponential_backoff() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(200), Duration::from_secs(10), 0.0);
    let s = Setup::new("backoff-exponential", strategy, false);
    s.probe.expect_msg(Event::Started);
    for delay in [200, 400, 800, 1600] {
        s.child.tell(Cmd::Throw);
        s.probe.expect_msg(Event::PreRestart);
        s.expect_restart_after(MS(delay));
    }
    assert_eq!(s.children(), 1);
    s.child.tell(Cmd::Ping(1));
    s.probe.expect_msg(Event::Pong(1));
    s.system.terminate().await;
}

/// BackoffOnRestartSupervisorSpec "stop on exceptions as dictated by the
/// supervisor strategy".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_when_the_decider_says_so() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(200), Duration::from_secs(10), 0.0)
        .with_decider(|f: &Failure| {
            if f.to_string().contains("stopping") {
                Directive::Stop
            } else {
                Directive::Restart
            }
        });
    let s = Setup::new("backoff-decider-stops", strategy, false);
    s.probe.expect_msg(Event::Started);
    s.child.tell(Cmd::ThrowStopping);
    s.probe.expect_msg(Event::PostStop);
    s.watcher.expect_terminated(&s.child);
    assert_eq!(s.time.pending_timers(), 0, "no restart is armed");
    s.system.terminate().await;
}

/// BackoffOnRestartSupervisorSpec "respect maxNrOfRetries property of
/// OneForOneStrategy": the strategy's restart limit still applies.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn respects_the_restart_limit() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(200), Duration::from_secs(10), 0.0)
        .with_max_restarts(5, Duration::from_secs(30));
    let s = Setup::new("backoff-max-restarts", strategy, false);
    s.probe.expect_msg(Event::Started);
    for _ in 0..5 {
        s.child.tell(Cmd::Throw);
        s.probe.expect_msg(Event::PreRestart);
        s.time.wait_for_timers(1);
        s.time.advance(Duration::from_secs(10));
        s.probe.expect_msg(Event::Started);
    }
    s.child.tell(Cmd::Throw);
    s.probe.expect_msg(Event::PostStop);
    s.watcher.expect_terminated(&s.child);
    s.system.terminate().await;
}

/// All-for-one with a backoff (no Pekko case: its backoff supervisors have
/// one child): the sibling restarts too, after the failed child's delay.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_for_one_backs_off_every_child() {
    let strategy = SupervisorStrategy::all_for_one().with_backoff(BackoffOptions::new(
        MS(300),
        Duration::from_secs(10),
        0.0,
    ));
    let s = Setup::new("backoff-all-for-one", strategy, false);
    s.probe.expect_msg(Event::Started);
    let replies = TestProbe::new(&s.system);
    s.parent
        .tell(ParentMsg::Spawn("sibling", replies.actor_ref()));
    let sibling = replies.receive_msg();
    s.probe.expect_msg(Event::Started);
    s.child.tell(Cmd::Throw);
    s.probe.expect_msg(Event::PreRestart);
    s.probe.expect_msg(Event::PreRestart);
    s.time.wait_for_timers(2);
    assert_eq!(s.time.next_due(), Some(MS(300)));
    s.time.advance(MS(299));
    assert_eq!(s.time.pending_timers(), 2, "restarted early");
    s.time.advance(MS(1));
    s.probe.expect_msg(Event::Started);
    s.probe.expect_msg(Event::Started);
    sibling.tell(Cmd::Ping(1));
    s.probe.expect_msg(Event::Pong(1));
    s.system.terminate().await;
}

/// BackoffOnRestartSupervisorSpec "keep restarting when failures happen
/// outside of withinTimeRange": each failure comes after the window has
/// passed (real time: the window is the restart limit's, not the
/// backoff's), so the limit of 3 is never reached.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_restarting_outside_the_limit_window() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(100), MS(800), 0.0)
        .with_max_restarts(3, MS(10));
    let s = Setup::new("backoff-window", strategy, false);
    s.probe.expect_msg(Event::Started);
    for _ in 0..5 {
        // At least the window: a lower bound, whatever the machine's load.
        std::thread::sleep(MS(20));
        s.child.tell(Cmd::Throw);
        s.probe.expect_msg(Event::PreRestart);
        s.time.wait_for_timers(1);
        s.time.advance(MS(800));
        s.probe.expect_msg(Event::Started);
    }
    s.child.tell(Cmd::Ping(1));
    s.probe.expect_msg(Event::Pong(1));
    s.system.terminate().await;
}

/// SupervisionSpec "publish dropped messages while backing off and stash is
/// full": two are kept and handled after the restart, in order; the others
/// are dead letters with a reason that says why.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drops_what_the_stash_cannot_hold() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(1000), MS(1000), 0.0)
        .with_backoff_stash_capacity(2);
    let s = Setup::new("backoff-stash-full", strategy, false);
    let dead = TestProbe::<DeadLetter>::on_event_stream(&s.system);
    s.probe.expect_msg(Event::Started);
    s.child.tell(Cmd::Throw);
    for n in 1..=4 {
        s.child.tell(Cmd::Ping(n));
    }
    s.probe.expect_msg(Event::PreRestart);
    for _ in 3..=4 {
        let letter = letter_for(&dead, &s.child);
        assert_eq!(letter.reason, DeadLetterReason::BackoffOverflow);
        assert_eq!(letter.recipient, s.child.path().to_string());
    }
    s.expect_restart_after(MS(1000));
    s.probe.expect_msg(Event::Pong(1));
    s.probe.expect_msg(Event::Pong(2));
    s.child.tell(Cmd::Ping(5));
    s.probe.expect_msg(Event::Pong(5));
    s.system.terminate().await;
}

/// SupervisionSpec "ensure unhandled message retention during unstash
/// exception when backoff": a held message that fails the new instance
/// sends it back to waiting, and the messages behind it are still kept.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_messages_across_repeated_failures() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(10), MS(10), 0.0)
        .with_backoff_stash_capacity(4);
    let s = Setup::new("backoff-retention", strategy, false);
    s.probe.expect_msg(Event::Started);
    s.child.tell(Cmd::Throw);
    s.child.tell(Cmd::Throw);
    s.child.tell(Cmd::Ping(1));
    s.child.tell(Cmd::Ping(2));
    s.probe.expect_msg(Event::PreRestart);
    s.expect_restart_after(MS(10));
    s.probe.expect_msg(Event::PreRestart);
    s.expect_restart_after(MS(10));
    s.probe.expect_msg(Event::Pong(1));
    s.probe.expect_msg(Event::Pong(2));
    s.system.terminate().await;
}

/// SupervisionSpec "restart after exponential backoff": with no stash,
/// messages are dead letters at once; the new instance starts from
/// scratch; the second restart waits twice as long.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_after_backoff_without_stash() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(1000), Duration::from_secs(10), 0.0)
        .with_reset_backoff_after(Duration::from_secs(10))
        .with_backoff_stash_capacity(0);
    let s = Setup::new("backoff-no-stash", strategy, false);
    let dead = TestProbe::<DeadLetter>::on_event_stream(&s.system);
    s.probe.expect_msg(Event::Started);
    for (n, delay) in [(1, 1000), (2, 2000)] {
        s.child.tell(Cmd::Increment);
        s.child.tell(Cmd::Throw);
        s.probe.expect_msg(Event::PreRestart);
        s.child.tell(Cmd::Ping(n));
        assert_eq!(
            letter_for(&dead, &s.child).reason,
            DeadLetterReason::BackoffOverflow
        );
        s.expect_restart_after(MS(delay));
        s.child.tell(Cmd::GetState);
        s.probe.expect_msg(Event::State(0));
    }
    s.system.terminate().await;
}

/// SupervisionSpec "fail if reaching maximum number of restarts with
/// backoff": every restart fails to start; after two the child stops.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_after_max_backoff_restarts() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(200), Duration::from_secs(10), 0.0)
        .with_backoff_max_restarts(2)
        .with_reset_backoff_after(Duration::from_secs(10));
    let s = Setup::new("backoff-max-backoff-restarts", strategy, false);
    s.probe.expect_msg(Event::Started);
    s.fail_start.store(true, Ordering::SeqCst);
    s.child.tell(Cmd::Throw);
    s.probe.expect_msg(Event::PreRestart);
    s.time.wait_for_timers(1);
    assert_eq!(s.time.next_due(), Some(MS(200)));
    s.time.advance(MS(200));
    s.probe.expect_msg(Event::StartFailed);
    // The instance whose `post_restart` failed did get created: it goes
    // through `pre_restart` like any other.
    s.probe.expect_msg(Event::PreRestart);
    s.time.wait_for_timers(1);
    assert_eq!(s.time.next_due(), Some(MS(400)));
    s.time.advance(MS(400));
    s.probe.expect_msg(Event::StartFailed);
    s.watcher.expect_terminated(&s.child);
    assert_eq!(s.time.pending_timers(), 0);
    s.system.terminate().await;
}

/// SupervisionSpec "reset exponential backoff count after reset timeout".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_starts_over_after_healthy_running() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(1000), Duration::from_secs(10), 0.0)
        .with_reset_backoff_after(MS(100));
    let s = Setup::new("backoff-reset", strategy, false);
    s.probe.expect_msg(Event::Started);
    s.child.tell(Cmd::Throw);
    s.probe.expect_msg(Event::PreRestart);
    s.expect_restart_after(MS(1000));
    // Ran for the reset period: the next restart waits the minimum again.
    s.time.advance(MS(100));
    s.child.tell(Cmd::Throw);
    s.probe.expect_msg(Event::PreRestart);
    s.expect_restart_after(MS(1000));
    // Failed at once: this one waits twice as long.
    s.child.tell(Cmd::Throw);
    s.probe.expect_msg(Event::PreRestart);
    s.expect_restart_after(MS(2000));
    s.system.terminate().await;
}

/// SupervisionSpec "restart with exponential backoff when deferred factory
/// throws": a failed first start is retried after the minimum delay.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_a_failed_start_after_the_backoff() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(100), Duration::from_secs(1), 0.0);
    let s = Setup::new("backoff-start-fails", strategy, true);
    s.probe.expect_msg(Event::StartFailed);
    s.fail_start.store(false, Ordering::SeqCst);
    s.expect_restart_after(MS(100));
    s.child.tell(Cmd::Ping(1));
    s.probe.expect_msg(Event::Pong(1));
    s.system.terminate().await;
}

/// A child stopped while it waits is not restarted: its timer is cancelled
/// and what it held goes to dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_waiting_cancels_the_restart() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(500), Duration::from_secs(10), 0.0);
    let s = Setup::new("backoff-stop-waiting", strategy, false);
    let dead = TestProbe::<DeadLetter>::on_event_stream(&s.system);
    s.probe.expect_msg(Event::Started);
    s.child.tell(Cmd::Throw);
    s.child.tell(Cmd::Ping(1));
    s.probe.expect_msg(Event::PreRestart);
    s.time.wait_for_timers(1);
    s.system.stop(&s.child);
    s.watcher.expect_terminated(&s.child);
    assert_eq!(
        letter_for(&dead, &s.child).reason,
        DeadLetterReason::RecipientTerminated
    );
    assert_eq!(s.time.pending_timers(), 0);
    s.time.advance(Duration::from_secs(1));
    s.probe.expect_no_msg(MS(50));
    s.system.terminate().await;
}

// ---- BackoffSupervisor, on stop ----
