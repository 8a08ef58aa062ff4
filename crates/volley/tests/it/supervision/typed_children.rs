//! Cases of Pekko's typed `SupervisionSpec` about children and messages
//! during a restart, in volley's API (see `pekko_typed_supervision.rs`
//! for the mapping and the skipped cases). A restarting volley actor
//! waits for the children being stopped before it creates the new
//! instance; the messages that arrive meanwhile stay queued, in order,
//! as typed's restart stashes them.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::pekko::{child, supervisor, with_blocking_pool, Latch, BLOCKING, T};
use common::typed_target::{restart_on, Cmd, Exc, Target};
use volley::{Actor, ActorError, ActorRef, Context, HandleResult, Props, SupervisorStrategy};
use volley_testkit::{actor_fn, FnActor, TestProbe};

fn backoff() -> SupervisorStrategy {
    let ms = Duration::from_millis(10);
    SupervisorStrategy::restart_with_backoff(ms, ms, 0.0).with_decider(
        common::typed_target::on_failure(1, volley::Directive::Restart),
    )
}

/// Does nothing; stopped by the test to produce a `Terminated`.
fn another() -> Props<FnActor<()>> {
    actor_fn(|_, ()| Ok(()))
}

/// A child whose `post_stop` blocks on `latch`. On a pool of its own: a
/// blocking hook on an `app-runtime` dispatcher would hold a runtime
/// thread, which the probes need too (docs/reference/dispatchers.md).
fn slow_child(probe: &ActorRef<String>, latch: &Latch) -> Props<Target> {
    let latch = latch.clone();
    Target::props_with(probe, move |t| t.slow_stop = Some(latch.clone())).with_dispatcher(BLOCKING)
}

/// A system on the dispatcher kind under test, with a pool for the
/// children that block.
fn system(name: &str) -> volley::ActorSystem {
    common::system_with(name, with_blocking_pool(volley::Settings::default())).unwrap()
}

/// SupervisionSpec, "stop children when restarting" and "stop children
/// when backoff": the new instance waits for the children to stop; a
/// message sent meanwhile, and the `Terminated` of a watched actor, reach
/// it afterwards.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_children_when_restarting() {
    let system = system("tsc-stop-children");
    for (i, strategy) in [restart_on(1), backoff()].into_iter().enumerate() {
        let parent_events = TestProbe::<String>::new(&system);
        let tx = parent_events.actor_ref();
        let child_events = TestProbe::<String>::new(&system);
        let child_tx = child_events.actor_ref();
        let sup = supervisor(&system, strategy);
        let r = child(&sup, Target::props(&tx)).await;
        let another = system.spawn(&format!("another-{i}"), another()).unwrap();
        r.tell(Cmd::Watch(another.to_any()));
        let slow_stop = Latch::new(1);
        for name in ["child-1", "child-2"] {
            r.tell(Cmd::CreateChild(
                name.into(),
                slow_child(&child_tx, &slow_stop),
            ));
        }
        r.tell(Cmd::GetState);
        parent_events.expect_msg("state 0 [child-1,child-2]".to_string());
        r.tell(Cmd::Throw(Exc(1)));
        parent_events.expect_msg("preRestart".to_string());
        r.tell(Cmd::GetState);
        system.stop(&another);
        parent_events.expect_no_msg(Duration::from_millis(200));
        slow_stop.count_down();
        child_events.expect_msg("postStop".to_string());
        child_events.expect_msg("postStop".to_string());
        parent_events.expect_msg("state 0 []".to_string());
        parent_events.expect_msg(format!("terminated another-{i}"));
    }
    system.terminate().await;
}

/// SupervisionSpec, "successfully restart after stopping watchWith'd
/// children": the `watch_with` message of a watched non-child arrives;
/// the one of the child the restart stopped does not (the restart unwatches
/// it first).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_after_stopping_watch_with_children() {
    let system = system("tsc-watch-with");
    let parent_events = TestProbe::<String>::new(&system);
    let tx = parent_events.actor_ref();
    let child_events = TestProbe::<String>::new(&system);
    let child_tx = child_events.actor_ref();
    let sup = supervisor(&system, restart_on(1));
    let r = child(&sup, Target::props(&tx)).await;
    let another = system.spawn("another", another()).unwrap();
    r.tell(Cmd::WatchWith(another.to_any(), 0));
    let slow_stop = Latch::new(1);
    r.tell(Cmd::CreateChild(
        "c".into(),
        slow_child(&child_tx, &slow_stop),
    ));
    r.tell(Cmd::GetState);
    parent_events.expect_msg("state 0 [c]".to_string());
    let c = r.ask(|reply| Cmd::ChildRef("c", reply), T).await.unwrap();
    r.tell(Cmd::WatchWith(c.expect("the child"), 1));
    r.tell(Cmd::Throw(Exc(1)));
    parent_events.expect_msg("preRestart".to_string());
    r.tell(Cmd::GetState);
    system.stop(&another);
    parent_events.expect_no_msg(Duration::from_millis(200));
    slow_stop.count_down();
    child_events.expect_msg("postStop".to_string());
    parent_events.expect_msg("state 0 []".to_string());
    parent_events.expect_msg("pong 0".to_string());
    parent_events.expect_no_msg(Duration::from_millis(300));
    system.terminate().await;
}

/// SupervisionSpec, "optionally NOT stop children when restarting" and
/// "... when backoff" (typed's `withStopChildren(false)`), pinned as
/// volley's documented difference: the children `pre_restart` keeps stay,
/// and are restarted with their parent (classic Akka's `finishRecreate`),
/// where typed leaves them untouched.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_children_stay_and_restart_with_the_parent() {
    let system = system("tsc-keep-children");
    for strategy in [restart_on(1), backoff()] {
        let parent_events = TestProbe::<String>::new(&system);
        let tx = parent_events.actor_ref();
        let child_events = TestProbe::<String>::new(&system);
        let child_tx = child_events.actor_ref();
        let sup = supervisor(&system, strategy);
        let r = child(&sup, Target::props_with(&tx, |t| t.keep_children = true)).await;
        r.tell(Cmd::CreateChild("kept".into(), Target::props(&child_tx)));
        r.tell(Cmd::IncrementState);
        r.tell(Cmd::GetState);
        parent_events.expect_msg("state 1 [kept]".to_string());
        r.tell(Cmd::Throw(Exc(1)));
        parent_events.expect_msg("preRestart".to_string());
        r.tell(Cmd::GetState);
        parent_events.expect_msg("state 0 [kept]".to_string());
        child_events.expect_msg("preRestart".to_string());
        child_events.expect_no_msg(Duration::from_millis(100));
    }
    system.terminate().await;
}

/// SupervisionSpec, "stop children when restarting second time during
/// unstash" and "stop children when backoff second time during unstash":
/// the messages queued during the first restart are handled in order by
/// the new instance, and the `Throw` among them restarts it again.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_children_when_restarting_a_second_time() {
    let system = system("tsc-second-time");
    for strategy in [restart_on(1), backoff()] {
        let parent_events = TestProbe::<String>::new(&system);
        let tx = parent_events.actor_ref();
        let child_events = TestProbe::<String>::new(&system);
        let child_tx = child_events.actor_ref();
        let sup = supervisor(&system, strategy);
        let r = child(&sup, Target::props(&tx)).await;
        let slow_stop = Latch::new(1);
        r.tell(Cmd::CreateChild(
            "child-1".into(),
            slow_child(&child_tx, &slow_stop),
        ));
        r.tell(Cmd::GetState);
        parent_events.expect_msg("state 0 [child-1]".to_string());
        r.tell(Cmd::Throw(Exc(1)));
        parent_events.expect_msg("preRestart".to_string());
        r.tell(Cmd::GetState);
        r.tell(Cmd::CreateChild("child-2".into(), Target::props(&child_tx)));
        r.tell(Cmd::GetState);
        r.tell(Cmd::Throw(Exc(1)));
        slow_stop.count_down();
        child_events.expect_msg("postStop".to_string()); // child-1
        parent_events.expect_msg("state 0 []".to_string());
        parent_events.expect_msg("state 0 [child-2]".to_string());
        child_events.expect_msg("postStop".to_string()); // child-2, by the second restart
        parent_events.expect_msg("preRestart".to_string());
        r.tell(Cmd::GetState);
        parent_events.expect_msg("state 0 []".to_string());
    }
    system.terminate().await;
}

/// Spawns `child1` in `pre_start` and, while `throw` is set, `child2` too
/// before failing (typed's "exception in setup" cases).
struct SetupWithChildren {
    parent: ActorRef<String>,
    children: ActorRef<String>,
    slow: (Latch, Latch),
    throw: Arc<AtomicBool>,
}

impl Actor for SetupWithChildren {
    type Msg = Cmd;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.spawn("child1", slow_child(&self.children, &self.slow.0))?;
        if self.throw.load(Ordering::SeqCst) {
            ctx.spawn("child2", slow_child(&self.children, &self.slow.1))?;
            return Err(ActorError::new("exc from setup"));
        }
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, cmd: Cmd) -> HandleResult {
        match cmd {
            Cmd::GetState => {
                let mut names: Vec<_> = ctx
                    .children()
                    .iter()
                    .map(|c| c.path().name().to_string())
                    .collect();
                names.sort();
                self.parent.tell(format!("children [{}]", names.join(",")));
                Ok(())
            }
            Cmd::Throw(e) => Err(ActorError::new(e)),
            _ => Ok(()),
        }
    }
}

/// Typed's `restart.withLimit(10, 1.second)` and
/// `restartWithBackoff(10.millis, 10.millis, 0)`, restarting on anything.
fn limited_and_backoff(max: u32, within: Duration) -> [SupervisorStrategy; 2] {
    let ms = Duration::from_millis(10);
    [
        SupervisorStrategy::one_for_one()
            .with_max_restarts(max, within)
            .with_decider(|_| volley::Directive::Restart),
        SupervisorStrategy::restart_with_backoff(ms, ms, 0.0),
    ]
}

/// A [`SetupWithChildren`] under `strategy`, with what drives it.
struct SetupCase {
    r: volley::ActorRef<Cmd>,
    parent_events: TestProbe<String>,
    child_events: TestProbe<String>,
    slow: (Latch, Latch),
    throw: Arc<AtomicBool>,
}

async fn setup_case(
    system: &volley::ActorSystem,
    strategy: SupervisorStrategy,
    throw_first: bool,
) -> SetupCase {
    let parent_events = TestProbe::<String>::new(system);
    let tx = parent_events.actor_ref();
    let child_events = TestProbe::<String>::new(system);
    let child_tx = child_events.actor_ref();
    let slow = (Latch::new(1), Latch::new(1));
    let throw = Arc::new(AtomicBool::new(throw_first));
    let (s, t) = (slow.clone(), throw.clone());
    let sup = supervisor(system, strategy);
    let r = child(
        &sup,
        Props::new(move || SetupWithChildren {
            parent: tx.clone(),
            children: child_tx.clone(),
            slow: s.clone(),
            throw: t.clone(),
        }),
    )
    .await;
    SetupCase {
        r,
        parent_events,
        child_events,
        slow,
        throw,
    }
}

/// SupervisionSpec, "stop children when restart (with limit) from
/// exception in first setup" and "... when backoff ...": the children a
/// failed `pre_start` spawned are stopped before the next instance
/// starts (it reuses their names).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_children_spawned_by_a_failed_first_setup() {
    let system = system("tsc-first-setup");
    for strategy in limited_and_backoff(10, Duration::from_secs(1)) {
        let c = setup_case(&system, strategy, true).await;
        c.slow.0.count_down();
        c.child_events.expect_msg("postStop".to_string()); // child1
        c.throw.store(false, Ordering::SeqCst);
        c.slow.1.count_down();
        c.child_events.expect_msg("postStop".to_string()); // child2
        c.r.tell(Cmd::GetState);
        c.parent_events.expect_msg("children [child1]".to_string());
    }
    system.terminate().await;
}

/// SupervisionSpec, "stop children when restart (with limit) from
/// exception in later setup" and "... when backoff ...": a restart whose
/// `post_restart` (here the default, `pre_start`) fails stops what it
/// spawned too, and the next restart succeeds.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_children_spawned_by_a_failed_later_setup() {
    let system = system("tsc-later-setup");
    for strategy in limited_and_backoff(10, Duration::from_secs(1)) {
        let c = setup_case(&system, strategy, false).await;
        c.r.tell(Cmd::GetState);
        c.parent_events.expect_msg("children [child1]".to_string());
        c.throw.store(true, Ordering::SeqCst);
        c.r.tell(Cmd::Throw(Exc(1)));
        c.slow.0.count_down();
        c.child_events.expect_msg("postStop".to_string()); // the first child1
        c.child_events.expect_msg("postStop".to_string()); // the child1 of the failed setup
        c.throw.store(false, Ordering::SeqCst);
        c.slow.1.count_down();
        c.child_events.expect_msg("postStop".to_string()); // child2
        c.r.tell(Cmd::GetState);
        c.parent_events.expect_msg("children [child1]".to_string());
    }
    system.terminate().await;
}

/// SupervisionSpec, "ensure unhandled message retention during unstash
/// exception when restart" (the backoff variant is in `backoff.rs`): two
/// failures in a row, with `pre_restart` held by a latch and a child slow
/// to stop; the messages behind them are all handled, in order.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_survive_two_restarts_in_a_row() {
    let system = system("tsc-retention");
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let _child_events = TestProbe::<String>::new(&system);
    let child_tx = _child_events.actor_ref();
    let slow_restart = Latch::new(1);
    let latch = slow_restart.clone();
    let sup = supervisor(&system, restart_on(1));
    let r = child(
        &sup,
        Target::props_with(&tx, move |t| t.slow_restart = Some(latch.clone())),
    )
    .await;
    let child_slow_stop = Latch::new(1);
    r.tell(Cmd::CreateChild(
        "c".into(),
        slow_child(&child_tx, &child_slow_stop),
    ));
    r.tell(Cmd::GetState);
    events.expect_msg("state 0 [c]".to_string());
    r.tell(Cmd::Throw(Exc(1)));
    r.tell(Cmd::Throw(Exc(1)));
    r.tell(Cmd::Ping(1));
    r.tell(Cmd::Ping(2));
    events.expect_no_msg(Duration::from_millis(200));
    slow_restart.count_down();
    events.expect_msg("preRestart".to_string());
    child_slow_stop.count_down();
    events.expect_msg("preRestart".to_string());
    events.expect_msg("pong 1".to_string());
    events.expect_msg("pong 2".to_string());
    system.terminate().await;
}

/// Spawns a slow-stopping child, then fails the first `fails` starts.
struct FailingConstructor {
    probe: ActorRef<String>,
    slow_stop: Latch,
    fails: bool,
}

impl Actor for FailingConstructor {
    type Msg = Cmd;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.probe.tell("started".into());
        ctx.spawn_anonymous(slow_child(&self.probe, &self.slow_stop))?;
        if self.fails {
            return Err(ActorError::new("simulated exc from constructor"));
        }
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, cmd: Cmd) -> HandleResult {
        if let Cmd::Ping(n) = cmd {
            self.probe.tell(format!("pong {n}"));
        }
        Ok(())
    }
}

/// SupervisionSpec, "ensure stash message retention on start exception
/// when restart" and "... when backoff": two failed starts, each leaving a
/// child that is stopped before the next start; the messages sent during
/// it all reach the instance that starts.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_survive_failed_starts() {
    let system = system("tsc-start-retention");
    for strategy in limited_and_backoff(4, Duration::from_secs(10)) {
        let events = TestProbe::<String>::new(&system);
        let tx = events.actor_ref();
        let slow_stop = Latch::new(1);
        let count = Arc::new(AtomicUsize::new(0));
        let latch = slow_stop.clone();
        let sup = supervisor(&system, strategy);
        let r = child(
            &sup,
            Props::new(move || FailingConstructor {
                probe: tx.clone(),
                slow_stop: latch.clone(),
                fails: count.fetch_add(1, Ordering::SeqCst) < 2,
            }),
        )
        .await;
        events.expect_msg("started".to_string());
        r.tell(Cmd::Ping(1));
        r.tell(Cmd::Ping(2));
        slow_stop.count_down();
        for event in [
            "postStop", "started", "postStop", "started", "pong 1", "pong 2",
        ] {
            events.expect_msg(event.to_string());
        }
    }
    system.terminate().await;
}
