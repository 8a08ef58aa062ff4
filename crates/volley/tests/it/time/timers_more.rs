//! Cases ported from Pekko's timer specs, in volley's API and on manual
//! time: the typed `TimerSpec` (actor-typed-tests, `Behaviors.withTimers`)
//! and the classic `TimerSpec` / `TimersAndStashSpec` (actor-tests,
//! `Actor with Timers`). The ported cases are "schedule non-repeated
//! ticks", "replace timer", "cancel timer", "cancel timers when
//! restarted", "discard timers from old incarnation after restart" (alt 1
//! and alt 2), "cancel timers when stopped from exception", "cancel timers
//! when stopped voluntarily", "allow for nested timers" (as two keys on one
//! actor), "discard TimerMsg on restart", "discard TimerMsg when exception
//! from withTimers block" (as a failing `pre_start`), "Timers combined with
//! stashing work", and the scheduler's `cancelAll`. Repeated ticks, a
//! replaced timer that had not fired yet, and "not leak timers when
//! PostStop is used" are in `timers.rs`.
//!
//! Not ported: "handle AutoReceivedMessages automatically" (a timer
//! cannot send a `PoisonPill`: it sends the actor's own message type),
//! the `FsmTimerSpec` run (volley has no FSM), "keep timers when behavior
//! changes" (timers belong to the actor, not to a behavior), and the
//! stash variants `UnboundedStash`/`UnrestrictedStash` (volley has one
//! stash).
//!
//! Where Pekko makes an old message land in the mailbox by sleeping in
//! the handler, these tests hold the actor on a latch, advance the manual
//! clock (which enqueues the due message before it returns), then let the
//! actor go: the stale message is then certainly queued, and a `Sync`
//! answered before any `tock` shows that it was discarded.

use crate::common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::pekko::{child, supervisor, Latch, ManualCase as Case, BLOCKING};
use volley::{
    Actor, ActorError, ActorRef, Context, Directive, Failure, HandleResult, Props,
    SupervisorStrategy,
};

/// The interval of the fixture's timer "T".
const INTERVAL: Duration = Duration::from_secs(10);

#[derive(Clone)]
enum Cmd {
    /// The message of timer "T"; reported as `tock n`.
    Tick(u32),
    /// The message of a named timer; reported as `tock name`.
    Named(&'static str),
    /// Starts a repeating timer `name` sending `Named(name)` every interval.
    StartNamed(&'static str),
    /// Replaces "T" with a repeating timer of the next number.
    Bump,
    /// Cancels "T"; reports `cancelled <whether it was active>`.
    Cancel,
    /// Cancels every timer; reports `cancelled all`.
    CancelAll,
    /// Arms single timer "X" (one second, `Named("x")`), reports
    /// `waiting`, waits for the latch, then fails.
    ArmThenThrow(Latch),
    /// Reports `waiting`, waits for the latch, then handles the command.
    Slow(Latch, Box<Cmd>),
    Throw,
    End,
    /// Reports `synced`.
    Sync,
    /// Reports `<key> active=<bool>`.
    Active(&'static str),
}

/// How the fixture's incarnations start.
#[derive(Clone, Default)]
struct Setup {
    /// "T" repeats with a fixed delay; otherwise it fires once.
    repeat: bool,
    /// "T" starts at the number of this incarnation (1, 2, ...) rather
    /// than at 1 (the spec's `startCounter`).
    numbered_by_start: bool,
    /// The first incarnation arms "T", reports `waiting`, waits for this
    /// latch and then fails in `pre_start`; later ones arm nothing.
    fail_first_start: Option<Latch>,
}

/// The specs' `Target`: arms timer "T" when it starts and reports its
/// ticks, and whether "T" is active in `pre_restart` and `post_stop`.
struct Target {
    monitor: ActorRef<String>,
    setup: Setup,
    starts: Arc<AtomicU32>,
    count: u32,
}

impl Target {
    fn tell(&self, what: impl Into<String>) {
        self.monitor.tell(what.into());
    }
}

impl Actor for Target {
    type Msg = Cmd;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let start = self.starts.fetch_add(1, Ordering::SeqCst) + 1;
        self.count = if self.setup.numbered_by_start {
            start
        } else {
            1
        };
        if self.setup.fail_first_start.is_some() && start > 1 {
            // Pekko's restarted behavior arms nothing.
            return Ok(());
        }
        if self.setup.repeat {
            ctx.schedule_with_fixed_delay("T", INTERVAL, INTERVAL, Cmd::Tick(self.count));
        } else {
            ctx.schedule_once("T", INTERVAL, Cmd::Tick(self.count));
        }
        match &self.setup.fail_first_start {
            Some(latch) if start == 1 => {
                self.tell("waiting");
                latch.wait();
                Err(ActorError::new("failing to start on purpose"))
            }
            _ => Ok(()),
        }
    }

    // Like the spec's: reports, and does not call `post_stop`.
    fn pre_restart(&mut self, ctx: &mut Context<Self>, _f: &Failure, _m: Option<Cmd>) {
        self.tell(format!("pre-restart active={}", ctx.is_timer_active("T")));
    }

    fn post_stop(&mut self, ctx: &mut Context<Self>) {
        self.tell(format!("post-stop active={}", ctx.is_timer_active("T")));
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: Cmd) -> HandleResult {
        match msg {
            Cmd::Tick(n) => self.tell(format!("tock {n}")),
            Cmd::Named(name) => self.tell(format!("tock {name}")),
            Cmd::StartNamed(name) => {
                ctx.schedule_with_fixed_delay(name, INTERVAL, INTERVAL, Cmd::Named(name))
            }
            Cmd::Bump => {
                self.count += 1;
                ctx.schedule_with_fixed_delay("T", INTERVAL, INTERVAL, Cmd::Tick(self.count));
            }
            Cmd::Cancel => {
                let was_active = ctx.cancel_timer("T");
                self.tell(format!("cancelled {was_active}"));
            }
            Cmd::CancelAll => {
                ctx.cancel_all_timers();
                self.tell("cancelled all");
            }
            Cmd::ArmThenThrow(latch) => {
                ctx.schedule_once("X", Duration::from_secs(1), Cmd::Named("x"));
                self.tell("waiting");
                latch.wait();
                return Err(ActorError::new("failing on purpose"));
            }
            Cmd::Slow(latch, then) => {
                self.tell("waiting");
                latch.wait();
                return self.handle(ctx, *then);
            }
            Cmd::Throw => return Err(ActorError::new("failing on purpose")),
            Cmd::End => ctx.stop_self(),
            Cmd::Sync => self.tell("synced"),
            Cmd::Active(key) => self.tell(format!("{key} active={}", ctx.is_timer_active(key))),
        }
        Ok(())
    }
}

impl Case {
    fn props(&self, setup: Setup) -> Props<Target> {
        let monitor = self.probe.actor_ref();
        let starts = Arc::new(AtomicU32::new(0));
        Props::new(move || Target {
            monitor: monitor.clone(),
            setup: setup.clone(),
            starts: starts.clone(),
            count: 0,
        })
        .with_dispatcher(BLOCKING)
    }

    /// Spawns the fixture under `/user` (which restarts it when it fails)
    /// and waits until its timer "T" is armed.
    fn spawn(&self, setup: Setup) -> ActorRef<Cmd> {
        let armed = self.time.pending_timers();
        let target = self.system.spawn_anonymous(self.props(setup)).unwrap();
        self.time.wait_for_timers(armed + 1);
        target
    }

    fn expect(&self, what: &str) {
        self.probe.expect_msg(what.to_string());
    }

    /// Shows that everything queued for `target` before, stale timer
    /// messages included, has been handled without a report.
    fn sync(&self, target: &ActorRef<Cmd>) {
        target.tell(Cmd::Sync);
        self.expect("synced");
    }

    /// Has `target` handle `then` while a tick of every due timer is
    /// queued behind it: the actor waits on a latch while the clock moves
    /// by `by`.
    fn slow_while_advancing(&self, target: &ActorRef<Cmd>, by: Duration, then: Cmd) {
        let latch = Latch::new(1);
        target.tell(Cmd::Slow(latch.clone(), Box::new(then)));
        self.expect("waiting");
        self.time.advance(by);
        latch.count_down();
    }
}

fn repeating() -> Setup {
    Setup {
        repeat: true,
        ..Setup::default()
    }
}

/// "schedule non-repeated ticks": one tick, then nothing; the timer is
/// active until its message is handled and not after, and is not active
/// in `post_stop`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_timer_ticks_once_and_is_inactive_after_its_tick() {
    let case = Case::new("pekko-timer-single");
    let target = case.spawn(Setup::default());
    target.tell(Cmd::Active("T"));
    case.expect("T active=true");
    case.time.advance(INTERVAL);
    case.expect("tock 1");
    target.tell(Cmd::Active("T"));
    case.expect("T active=false");
    assert_eq!(case.time.pending_timers(), 0);
    case.time.advance(INTERVAL * 10);
    case.sync(&target);
    target.tell(Cmd::End);
    case.expect("post-stop active=false");
    case.probe.expect_terminated(&target);
    case.system.terminate().await;
}

/// "replace timer": a tick of the old "T" is queued when the actor
/// replaces "T"; that tick is discarded, and the new timer's ticks come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replacing_a_timer_discards_the_old_timers_queued_tick() {
    let case = Case::new("pekko-timer-replace");
    let target = case.spawn(repeating());
    case.time.advance(INTERVAL);
    case.expect("tock 1");
    case.slow_while_advancing(&target, INTERVAL, Cmd::Bump);
    case.sync(&target);
    assert_eq!(
        case.time.next_due(),
        Some(INTERVAL),
        "the new timer counts from the bump"
    );
    case.time.advance(INTERVAL);
    case.expect("tock 2");
    target.tell(Cmd::End);
    case.expect("post-stop active=false");
    case.system.terminate().await;
}

/// "cancel timer": a tick queued when the actor cancels the timer is not
/// handled, nothing comes afterwards, and a second cancel finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_timer_discards_its_queued_tick_and_ends_it() {
    let case = Case::new("pekko-timer-cancel");
    let target = case.spawn(repeating());
    case.time.advance(INTERVAL);
    case.expect("tock 1");
    case.slow_while_advancing(&target, INTERVAL, Cmd::Cancel);
    case.expect("cancelled true");
    case.sync(&target);
    assert_eq!(case.time.pending_timers(), 0);
    case.time.advance(INTERVAL * 10);
    target.tell(Cmd::Active("T"));
    case.expect("T active=false");
    target.tell(Cmd::Cancel);
    case.expect("cancelled false");
    target.tell(Cmd::End);
    case.expect("post-stop active=false");
    case.system.terminate().await;
}

/// Classic "cancel timers when restarted": `pre_restart` already sees no
/// active timer; the new incarnation arms its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_cancels_the_timers_before_pre_restart() {
    let case = Case::new("pekko-timer-restart");
    let target = case.spawn(repeating());
    target.tell(Cmd::Throw);
    case.expect("pre-restart active=false");
    target.tell(Cmd::Active("T"));
    case.expect("T active=true");
    assert_eq!(
        case.time.pending_timers(),
        1,
        "only the new incarnation's timer"
    );
    target.tell(Cmd::End);
    case.expect("post-stop active=false");
    case.system.terminate().await;
}

/// "discard timers from old incarnation after restart, alt 1": the old
/// incarnation's tick queued behind the failing message is dropped; the
/// new incarnation's timer ("tock 2", from the start counter) counts from
/// the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_discards_the_old_incarnations_queued_tick() {
    let case = Case::new("pekko-timer-incarnation-1");
    let target = case.spawn(Setup {
        repeat: true,
        numbered_by_start: true,
        ..Setup::default()
    });
    case.time.advance(INTERVAL);
    case.expect("tock 1");
    case.slow_while_advancing(&target, INTERVAL, Cmd::Throw);
    case.expect("pre-restart active=false");
    case.sync(&target);
    case.time.advance(INTERVAL / 2);
    case.sync(&target);
    case.time.advance(INTERVAL / 2);
    case.expect("tock 2");
    target.tell(Cmd::End);
    case.expect("post-stop active=false");
    case.system.terminate().await;
}

/// "discard timers from old incarnation after restart, alt 2": the state
/// the old incarnation's timer carried ("tock 2" after a bump) is gone;
/// the new incarnation starts over at "tock 1".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_actor_starts_its_timers_over() {
    let case = Case::new("pekko-timer-incarnation-2");
    let target = case.spawn(repeating());
    case.time.advance(INTERVAL);
    case.expect("tock 1");
    target.tell(Cmd::Bump);
    case.sync(&target);
    case.time.advance(INTERVAL);
    case.expect("tock 2");
    case.slow_while_advancing(&target, INTERVAL, Cmd::Throw);
    case.expect("pre-restart active=false");
    case.sync(&target);
    case.time.advance(INTERVAL);
    case.expect("tock 1");
    target.tell(Cmd::End);
    case.expect("post-stop active=false");
    case.system.terminate().await;
}

/// "cancel timers when stopped from exception": under a stopping
/// supervisor a failure stops the actor; `post_stop` sees no active timer
/// and nothing stays armed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_that_stops_the_actor_cancels_its_timers() {
    let case = Case::new("pekko-timer-stop-failure");
    let sup = supervisor(&case.system, SupervisorStrategy::stopping());
    let target = child(&sup, case.props(repeating())).await;
    case.time.wait_for_timers(1);
    target.tell(Cmd::Throw);
    case.expect("post-stop active=false");
    case.probe.expect_terminated(&target);
    assert_eq!(case.time.pending_timers(), 0);
    let dead = case.system.dead_letter_count();
    case.time.advance(INTERVAL * 10);
    assert_eq!(case.system.dead_letter_count(), dead, "no tick was sent");
    case.system.terminate().await;
}

/// "cancel timers when stopped voluntarily" (classic: "cancel timers when
/// stopped"): `post_stop` already sees the repeating timer inactive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_itself_cancels_the_timers_before_post_stop() {
    let case = Case::new("pekko-timer-stop");
    let target = case.spawn(repeating());
    case.time.advance(INTERVAL);
    case.expect("tock 1");
    target.tell(Cmd::End);
    case.expect("post-stop active=false");
    case.probe.expect_terminated(&target);
    assert_eq!(case.time.pending_timers(), 0);
    case.system.terminate().await;
}

/// "allow for nested timers": two timers of one actor under different
/// keys both tick, and cancelling one leaves the other running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_under_different_keys_run_side_by_side() {
    let case = Case::new("pekko-timer-keys");
    let target = case.spawn(repeating());
    target.tell(Cmd::StartNamed("inner"));
    case.sync(&target);
    case.time.advance(INTERVAL);
    let mut ticks = case.probe.receive_n(2);
    ticks.sort();
    assert_eq!(ticks, ["tock 1", "tock inner"]);
    target.tell(Cmd::Cancel);
    case.expect("cancelled true");
    target.tell(Cmd::Active("inner"));
    case.expect("inner active=true");
    case.time.advance(INTERVAL);
    case.expect("tock inner");
    case.sync(&target);
    case.system.terminate().await;
}

/// Pekko's `TimerScheduler.cancelAll`: every timer ends, and ticks of all
/// of them already queued are discarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_all_ends_every_timer_and_discards_their_queued_ticks() {
    let case = Case::new("pekko-timer-cancel-all");
    let target = case.spawn(repeating());
    target.tell(Cmd::StartNamed("other"));
    case.sync(&target);
    case.slow_while_advancing(&target, INTERVAL, Cmd::CancelAll);
    case.expect("cancelled all");
    case.sync(&target);
    for key in ["T", "other"] {
        target.tell(Cmd::Active(key));
        case.expect(&format!("{key} active=false"));
    }
    assert_eq!(case.time.pending_timers(), 0);
    case.time.advance(INTERVAL * 10);
    case.sync(&target);
    case.system.terminate().await;
}

/// "discard TimerMsg on restart": the handler arms a single timer whose
/// message is queued before the same handler fails; after the restart it
/// is not handled, and the actor goes on working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_timer_armed_by_the_failing_handler_is_discarded() {
    let case = Case::new("pekko-timer-armed-then-failed");
    let target = case.spawn(repeating());
    let latch = Latch::new(1);
    target.tell(Cmd::ArmThenThrow(latch.clone()));
    case.expect("waiting");
    case.time.advance(Duration::from_secs(1));
    latch.count_down();
    case.expect("pre-restart active=false");
    case.sync(&target);
    target.tell(Cmd::Active("X"));
    case.expect("X active=false");
    target.tell(Cmd::Tick(100));
    case.expect("tock 100");
    target.tell(Cmd::End);
    case.expect("post-stop active=false");
    case.system.terminate().await;
}

/// "discard TimerMsg when exception from withTimers block": `pre_start`
/// arms "T" and fails after its tick is queued; the supervisor restarts
/// the actor, which arms nothing this time: the queued tick is dropped
/// and the timer is gone, and the new incarnation works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_armed_by_a_failed_pre_start_is_discarded() {
    let case = Case::new("pekko-timer-failed-start");
    let sup = supervisor(
        &case.system,
        SupervisorStrategy::one_for_one().with_decider(|_| Directive::Restart),
    );
    let latch = Latch::new(1);
    let target = child(
        &sup,
        case.props(Setup {
            fail_first_start: Some(latch.clone()),
            ..Setup::default()
        }),
    )
    .await;
    case.expect("waiting");
    case.time.advance(INTERVAL);
    latch.count_down();
    case.sync(&target);
    assert_eq!(case.time.pending_timers(), 0);
    target.tell(Cmd::Active("T"));
    case.expect("T active=false");
    case.time.advance(INTERVAL * 10);
    target.tell(Cmd::Tick(100));
    case.expect("tock 100");
    case.system.terminate().await;
}

enum Stashing {
    Scheduled,
    StopStashing,
}

/// TimersAndStashSpec's actor: stashes the message of its single timer
/// until told to stop stashing, then reports what it gets.
struct StashingTarget {
    monitor: ActorRef<String>,
    stashing: bool,
}

impl Actor for StashingTarget {
    type Msg = Stashing;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.schedule_once("key", INTERVAL, Stashing::Scheduled);
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Stashing) -> HandleResult {
        match msg {
            Stashing::StopStashing => {
                self.stashing = false;
                ctx.unstash_all();
            }
            Stashing::Scheduled if self.stashing => {
                self.monitor.tell("saw-scheduled".into());
                ctx.stash(Stashing::Scheduled)?;
            }
            Stashing::Scheduled => self.monitor.tell("scheduled".into()),
        }
        Ok(())
    }
}

/// "Timers combined with stashing work": a timer's message that was
/// stashed is handled when unstashed (its single timer finished when it
/// was first handled; unstashing does not drop it as stale).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stashed_timer_message_is_handled_when_unstashed() {
    let case = Case::new("pekko-timer-stash");
    let monitor = case.probe.actor_ref();
    let target = case
        .system
        .spawn_anonymous(Props::new(move || StashingTarget {
            monitor: monitor.clone(),
            stashing: true,
        }))
        .unwrap();
    case.time.wait_for_timers(1);
    case.time.advance(INTERVAL);
    case.expect("saw-scheduled");
    target.tell(Stashing::StopStashing);
    case.expect("scheduled");
    case.system.terminate().await;
}
