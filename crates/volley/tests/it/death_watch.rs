//! Cases ported from Pekko's `DeathWatchSpec` (actor-tests) and the typed
//! `WatchSpec` (actor-typed-tests), in volley's API.
//!
//! Skipped, with the reason:
//! - DeathWatchSpec "only notify when watching" and the untyped
//!   `Terminated`-as-`Any` cases: volley's `Terminated` is a signal, never a
//!   message an actor can be sent by others.
//! - DeathWatchSpec "not be able to watch / unwatch a remote ref" and the
//!   "address terminated" cases: remoting has its own suites.
//! - DeathWatchSpec "stopped mid-unwatch" variants: they depend on Pekko's
//!   internal `DeathWatchNotification`, not stageable from the API.
//! - WatchSpec "watch with a stopped behavior / adapter refs": no behaviors
//!   or adapters in volley.

use crate::common;

use std::time::Duration;

use common::pekko::T;
use volley::{
    Actor, ActorError, ActorRef, Context, HandleResult, Props, ReplyTo, SupervisorStrategy,
    Terminated, ToAnyRef,
};
use volley_testkit::{actor_fn, actor_fn_with, eventually_async, FnActor, TestProbe};

#[derive(Debug)]
enum TargetMsg {
    Fail,
    Echo(u32, ActorRef<u32>),
}

/// Does nothing; fails on `Fail`.
fn target() -> Props<FnActor<TargetMsg>> {
    actor_fn(|_ctx, msg| match msg {
        TargetMsg::Fail => Err(ActorError::new("fails on purpose")),
        TargetMsg::Echo(n, to) => {
            to.tell(n);
            Ok(())
        }
    })
}

/// A watcher driven by commands; reports each `Terminated` (signal or
/// `watch_with` message) as a string.
struct Watcher(ActorRef<String>);
enum WatcherMsg {
    Watch(volley::AnyRef),
    WatchWith(volley::AnyRef, String),
    Unwatch(volley::AnyRef),
    Custom(String),
    Ping(ReplyTo<()>),
}
impl Actor for Watcher {
    type Msg = WatcherMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: WatcherMsg) -> HandleResult {
        match msg {
            WatcherMsg::Watch(r) => ctx.watch(&r),
            WatcherMsg::WatchWith(r, m) => ctx.watch_with(&r, WatcherMsg::Custom(m)),
            WatcherMsg::Unwatch(r) => ctx.unwatch(&r),
            WatcherMsg::Custom(m) => self.0.tell(m),
            WatcherMsg::Ping(r) => r.tell(()),
        }
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.0.tell(format!("terminated {}", t.actor.path().name()));
        Ok(())
    }
}

fn watcher(system: &volley::ActorSystem) -> (ActorRef<WatcherMsg>, TestProbe<String>) {
    let events = TestProbe::<String>::new(system);
    let tx = events.actor_ref();
    let w = system
        .spawn_anonymous(Props::new(move || Watcher(tx.clone())))
        .unwrap();
    (w, events)
}

/// Waits until `w` has handled every command sent before.
async fn sync(w: &ActorRef<WatcherMsg>) {
    w.ask(WatcherMsg::Ping, T).await.unwrap();
}

/// DeathWatchSpec, "notify with one Terminated message when an Actor is
/// stopped".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_terminated_when_stopped() {
    let system = common::system("dw-stopped").unwrap();
    let target = system.spawn("t1", target()).unwrap();
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&target);
    system.stop(&target);
    let t = probe.expect_terminated(&target);
    assert_eq!(t.actor.path(), target.path());
    probe.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// DeathWatchSpec, "notify with one Terminated message when an Actor is
/// already dead".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_terminated_when_already_dead() {
    let system = common::system("dw-dead").unwrap();
    let target = system.spawn("t2", target()).unwrap();
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&target);
    system.stop(&target);
    probe.expect_terminated(&target);
    let (w, events) = watcher(&system);
    w.tell(WatcherMsg::Watch(target.to_any()));
    events.expect_msg("terminated t2".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// DeathWatchSpec, "notify with all monitors with one Terminated message
/// when an Actor is stopped".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_monitors_get_one_terminated() {
    let system = common::system("dw-all").unwrap();
    let target = system.spawn("t3", target()).unwrap();
    let watchers: Vec<_> = (0..3).map(|_| watcher(&system)).collect();
    for (w, _) in &watchers {
        w.tell(WatcherMsg::Watch(target.to_any()));
        sync(w).await;
    }
    system.stop(&target);
    for (_, events) in &watchers {
        events.expect_msg("terminated t3".to_string());
    }
    for (_, events) in &watchers {
        events.expect_no_msg(Duration::from_millis(100));
    }
    system.terminate().await;
}

/// DeathWatchSpec, "notify with current monitors with one Terminated
/// message when an Actor is stopped": the one that unwatched gets none.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_current_monitors_get_terminated() {
    let system = common::system("dw-current").unwrap();
    let target = system.spawn("t4", target()).unwrap();
    let (w1, e1) = watcher(&system);
    let (w2, e2) = watcher(&system);
    let (w3, e3) = watcher(&system);
    for w in [&w1, &w2, &w3] {
        w.tell(WatcherMsg::Watch(target.to_any()));
    }
    w2.tell(WatcherMsg::Unwatch(target.to_any()));
    for w in [&w1, &w2, &w3] {
        sync(w).await;
    }
    system.stop(&target);
    e1.expect_msg("terminated t4".to_string());
    e3.expect_msg("terminated t4".to_string());
    e2.expect_no_msg(Duration::from_millis(300));
    e1.expect_no_msg(Duration::from_millis(50));
    e3.expect_no_msg(Duration::from_millis(50));
    system.terminate().await;
}

/// DeathWatchSpec, "notify with a Terminated message once when an Actor is
/// stopped but be able to rewatch": watching again afterwards gives one
/// more `Terminated`, at once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_once_then_rewatch() {
    let system = common::system("dw-rewatch").unwrap();
    let target = system.spawn("t5", target()).unwrap();
    let (w, events) = watcher(&system);
    w.tell(WatcherMsg::Watch(target.to_any()));
    w.tell(WatcherMsg::Watch(target.to_any()));
    sync(&w).await;
    system.stop(&target);
    events.expect_msg("terminated t5".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    w.tell(WatcherMsg::Watch(target.to_any()));
    events.expect_msg("terminated t5".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// Spawns a `target` child for each request; supervises with `strategy`.
fn supervisor(strategy: SupervisorStrategy) -> Props<FnActor<ReplyTo<ActorRef<TargetMsg>>>> {
    actor_fn_with((), |_, ctx, r: ReplyTo<ActorRef<TargetMsg>>| {
        r.tell(ctx.spawn_anonymous(target())?);
        Ok(())
    })
    .with_supervisor_strategy(strategy)
    .props()
}

/// DeathWatchSpec, "notify with a Terminated message once when an Actor is
/// terminated by failure" (its supervisor's decider says Stop).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_once_when_stopped_by_failure() {
    common::quiet_deliberate_panics();
    let system = common::system("dw-failure").unwrap();
    let sup = system
        .spawn("sup", supervisor(SupervisorStrategy::stopping()))
        .unwrap();
    let child = sup.ask(|r| r, T).await.unwrap();
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&child);
    let echo = TestProbe::<u32>::new(&system);
    child.tell(TargetMsg::Echo(1, echo.actor_ref()));
    echo.expect_msg(1);
    child.tell(TargetMsg::Fail);
    probe.expect_terminated(&child);
    probe.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// DeathWatchSpec, "fail a monitor which does not handle Terminated()":
/// the unhandled `Terminated` is a death pact failure, which the default
/// decider answers with Stop, so the monitor terminates too.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_without_handler_fails_with_death_pact() {
    let system = common::system("dw-pact").unwrap();
    let target = system.spawn("t6", target()).unwrap();
    // Watches the target and does not handle `Terminated`.
    let careless = actor_fn_with(target.clone(), |_, _ctx, ()| Ok(())).on_start(|t, ctx| {
        ctx.watch(t);
        Ok(())
    });
    let careless = system.spawn("careless", careless.props()).unwrap();
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&careless);
    careless.ask(|r: ReplyTo<()>| drop(r), T).await.ok();
    system.stop(&target);
    probe.expect_terminated(&careless);
    system.terminate().await;
}

/// DeathWatchSpec, "be able to watch a child with the same name after the
/// old died": the new child is a different actor, and its death is
/// reported on its own.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_new_child_with_same_name() {
    let system = common::system("dw-same-name").unwrap();
    // Spawns a child named "child" on request, replying with it.
    let parent = actor_fn(|ctx, r: ReplyTo<ActorRef<TargetMsg>>| {
        r.tell(ctx.spawn("child", target())?);
        Ok(())
    });
    let parent = system.spawn("parent", parent).unwrap();
    let probe = TestProbe::<()>::new(&system);
    let first = parent.ask(|r| r, T).await.unwrap();
    probe.watch(&first);
    system.stop(&first);
    probe.expect_terminated(&first);
    // The name is free once the parent has handled the child's end.
    let second = eventually_async("the parent to spawn the child again", async || {
        parent.ask(|r| r, T).await.ok()
    })
    .await;
    assert_eq!(second.path(), first.path());
    assert_ne!(second.to_any(), first.to_any());
    probe.watch(&second);
    probe.expect_no_msg(Duration::from_millis(200));
    system.stop(&second);
    probe.expect_terminated(&second);
    system.terminate().await;
}

/// Watches `target` and records, in handling order, the numbers it gets
/// and the target's end (a `TestProbe`'s watcher is a separate actor).
struct Recipient(ActorRef<TargetMsg>, ActorRef<String>);

impl Actor for Recipient {
    type Msg = u32;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.watch(&self.0);
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, n: u32) -> HandleResult {
        self.1.tell(n.to_string());
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: Terminated) -> HandleResult {
        self.1.tell("terminated".into());
        Ok(())
    }
}

/// DeathWatchSpec, "notify with Terminated when the watched actor is
/// stopped with a PoisonPill": a graceful stop handles the queued messages
/// first, and the watcher hears of them before the `Terminated`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_after_graceful_stop_and_after_its_messages() {
    let system = common::system("dw-poison").unwrap();
    let target = system.spawn("t7", target()).unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let t = target.clone();
    let recipient = Props::new(move || Recipient(t.clone(), tx.clone()));
    let recipient = system.spawn("recipient", recipient).unwrap();
    for n in 0..10 {
        target.tell(TargetMsg::Echo(n, recipient.clone()));
    }
    target.graceful_stop();
    for n in 0..10 {
        events.expect_msg(n.to_string());
    }
    events.expect_msg("terminated".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// DeathWatchSpec, "discard Terminated when unwatched between sysmsg and
/// processing": an `unwatch` sent after the target is dead but before the
/// watcher handled the `Terminated` cancels it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwatch_before_handling_discards_terminated() {
    let system = common::system("dw-discard").unwrap();
    let target = system.spawn("t8", target()).unwrap();
    let (w, events) = watcher(&system);
    w.tell(WatcherMsg::Watch(target.to_any()));
    sync(&w).await;
    // Queue the unwatch before the stop: it is handled before or after the
    // Terminated is queued, and either way no Terminated may be handled after it.
    w.tell(WatcherMsg::Unwatch(target.to_any()));
    system.stop(&target);
    let probe = TestProbe::<()>::new(&system);
    probe.expect_terminated(&target);
    sync(&w).await;
    events.expect_no_msg(Duration::from_millis(300));
    system.terminate().await;
}

/// WatchSpec, "notify a parent of child termination because of failure
/// with a custom message" (`watchWith`): the message arrives through
/// `handle`, once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_with_custom_message() {
    common::quiet_deliberate_panics();
    let system = common::system("dw-watch-with").unwrap();
    let sup = system
        .spawn("sup", supervisor(SupervisorStrategy::stopping()))
        .unwrap();
    let child = sup.ask(|r| r, T).await.unwrap();
    let (w, events) = watcher(&system);
    w.tell(WatcherMsg::WatchWith(child.to_any(), "custom".into()));
    sync(&w).await;
    child.tell(TargetMsg::Fail);
    events.expect_msg("custom".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// WatchSpec, "allow idempotent invocations of watch" (same message twice):
/// one notification.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_watch_with() {
    let system = common::system("dw-idem").unwrap();
    let target = system.spawn("t9", target()).unwrap();
    let (w, events) = watcher(&system);
    w.tell(WatcherMsg::WatchWith(target.to_any(), "custom".into()));
    w.tell(WatcherMsg::WatchWith(target.to_any(), "custom".into()));
    sync(&w).await;
    system.stop(&target);
    events.expect_msg("custom".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// WatchSpec, "allow watch message definition after watch using unwatch":
/// watch, unwatch, then `watch_with`: the custom message arrives.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_with_after_unwatch() {
    let system = common::system("dw-rewatch-with").unwrap();
    let target = system.spawn("t10", target()).unwrap();
    let (w, events) = watcher(&system);
    w.tell(WatcherMsg::Watch(target.to_any()));
    w.tell(WatcherMsg::Unwatch(target.to_any()));
    w.tell(WatcherMsg::WatchWith(target.to_any(), "custom".into()));
    sync(&w).await;
    system.stop(&target);
    events.expect_msg("custom".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

enum DoubleMsg {
    /// Watch the target again, plainly.
    Rewatch,
    /// The message the first `watch_with` named.
    Custom,
}

/// Watches its target with a message, then again without one on request.
struct DoubleWatcher(ActorRef<TargetMsg>, ActorRef<String>);
impl Actor for DoubleWatcher {
    type Msg = DoubleMsg;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.watch_with(&self.0, DoubleMsg::Custom);
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, msg: DoubleMsg) -> HandleResult {
        let event = match msg {
            DoubleMsg::Rewatch => {
                ctx.watch(&self.0);
                "rewatched"
            }
            DoubleMsg::Custom => "custom",
        };
        self.1.tell(event.into());
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: Terminated) -> HandleResult {
        self.1.tell("signal".into());
        Ok(())
    }
}

/// WatchSpec, "fail if watch invocations with different messages": Pekko
/// Typed throws `IllegalStateException` when an actor watches the same
/// target again with a different termination message. volley differs, as
/// docs/reference/death-watch.md says: the later watch replaces the earlier one, and
/// the target's end arrives once, the way the last watch asked.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_again_with_different_message_replaces_it() {
    let system = common::system("dw-differ").unwrap();
    let target = system.spawn("t11", target()).unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let t = target.clone();
    let w = system
        .spawn(
            "double",
            Props::new(move || DoubleWatcher(t.clone(), tx.clone())),
        )
        .unwrap();
    w.tell(DoubleMsg::Rewatch);
    events.expect_msg("rewatched".to_string());
    system.stop(&target);
    events.expect_msg("signal".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// DeathWatchSpec, "not be able to watch itself": watching oneself is a
/// no-op (no Terminated at its own stop, no failure).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_itself_is_a_no_op() {
    struct SelfWatcher(ActorRef<String>);
    impl Actor for SelfWatcher {
        type Msg = ();
        fn handle(&mut self, ctx: &mut Context<Self>, _m: ()) -> HandleResult {
            let me = ctx.myself();
            ctx.watch(&me);
            self.0.tell("watched".into());
            Ok(())
        }
        fn on_terminated(&mut self, _c: &mut Context<Self>, _t: Terminated) -> HandleResult {
            self.0.tell("terminated".into());
            Ok(())
        }
    }
    let system = common::system("dw-self").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let a = system
        .spawn("self", Props::new(move || SelfWatcher(tx.clone())))
        .unwrap();
    a.tell(());
    events.expect_msg("watched".to_string());
    let probe = TestProbe::<()>::new(&system);
    system.stop(&a);
    probe.expect_terminated(&a);
    events.expect_no_msg(Duration::from_millis(200));
    let _ = a.to_any_ref();
    system.terminate().await;
}

/// DeathWatchSpec, "notify with a Terminated message once when an Actor is
/// stopped but not when restarted": two restarts give no `Terminated`, the
/// third failure (over the limit) stops it and gives exactly one.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_on_stop_not_on_restart() {
    common::quiet_deliberate_panics();
    let system = common::system("dw-restart").unwrap();
    let sup = system
        .spawn(
            "sup",
            supervisor(SupervisorStrategy::one_for_one().with_max_restarts_total(2)),
        )
        .unwrap();
    let child = sup.ask(|r| r, T).await.unwrap();
    let (w, events) = watcher(&system);
    w.tell(WatcherMsg::Watch(child.to_any()));
    sync(&w).await;
    let echo = TestProbe::<u32>::new(&system);
    child.tell(TargetMsg::Fail);
    child.tell(TargetMsg::Fail);
    child.tell(TargetMsg::Echo(1, echo.actor_ref()));
    echo.expect_msg(1);
    events.expect_no_msg(Duration::from_millis(200));
    assert!(!child.is_terminated());
    child.tell(TargetMsg::Fail);
    events.expect_msg(format!("terminated {}", child.path().name()));
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

enum StashMsg {
    Watch(volley::AnyRef, ReplyTo<()>),
    StartStashing(ReplyTo<()>),
    StopStashing,
    Custom,
}

/// Stashes everything while `stashing`; a `watch_with` message that
/// arrives meanwhile is stashed and comes back with `unstash_all`.
fn stashing_watcher(events: ActorRef<String>) -> Props<FnActor<StashMsg>> {
    let mut stashing = false;
    actor_fn(move |ctx, msg| {
        match msg {
            StashMsg::Watch(r, done) => {
                ctx.watch_with(&r, StashMsg::Custom);
                done.tell(());
            }
            StashMsg::StartStashing(done) => {
                stashing = true;
                done.tell(());
            }
            StashMsg::StopStashing => {
                stashing = false;
                ctx.unstash_all();
            }
            m if stashing => {
                events.tell("stashed".into());
                ctx.stash(m).map_err(|e| ActorError::new(e.to_string()))?;
            }
            StashMsg::Custom => events.tell("custom".into()),
        }
        Ok(())
    })
}

/// DeathWatchSpec, "stash watchWith termination message correctly"
/// (Pekko #29101): the custom termination message can be stashed and is
/// handled after unstashing.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_with_message_can_be_stashed() {
    let system = common::system("dw-stash").unwrap();
    let target = system.spawn("t12", target()).unwrap();
    let events = TestProbe::<String>::new(&system);
    let w = system
        .spawn("stasher", stashing_watcher(events.actor_ref()))
        .unwrap();
    let t = target.to_any();
    w.ask(|r| StashMsg::Watch(t, r), T).await.unwrap();
    w.ask(StashMsg::StartStashing, T).await.unwrap();
    system.stop(&target);
    events.expect_msg("stashed".to_string());
    w.tell(StashMsg::StopStashing);
    events.expect_msg("custom".to_string());
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}
