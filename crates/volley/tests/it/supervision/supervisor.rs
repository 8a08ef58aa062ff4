//! Cases ported from Pekko's `SupervisorSpec` and `SupervisionSpec`
//! (actor-tests), in volley's API: children that survive their parent's
//! restart are restarted with it (`finishRecreate`), a decider that
//! panics fails its supervisor without losing anything, and pre-creation
//! check failures (a bounded mailbox of capacity 0) are reported.

use crate::common;

use std::time::Duration;

use common::pekko::{child, supervisor, PingPong};
use volley::{
    Actor, ActorError, ActorRef, Context, Directive, Failure, HandleResult, MailboxConfig,
    Overflow, Props, ReplyTo, Router, SpawnError, SupervisorStrategy, Terminated,
};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

enum ChildMsg {
    Fail(&'static str),
    Ping(ReplyTo<&'static str>),
}

/// Reports its hooks; fails with the text it is given.
fn child_actor(events: ActorRef<String>) -> Props<FnActor<ChildMsg, ActorRef<String>>> {
    actor_fn_with(events, |_, _ctx, msg| match msg {
        ChildMsg::Fail(why) => Err(ActorError::new(why)),
        ChildMsg::Ping(r) => {
            r.tell("child green");
            Ok(())
        }
    })
    .on_start(|events, _ctx| {
        events.tell("child started".into());
        Ok(())
    })
    .on_restart(|events, _ctx, _f| {
        events.tell("child restarted".into());
        Ok(())
    })
    .props()
}

enum ParentMsg {
    Child(ReplyTo<ActorRef<ChildMsg>>),
    Fail,
    Ping(ReplyTo<&'static str>),
}

/// Keeps its child across its own restarts (its `pre_restart` stops
/// nothing), escalates the child's failures, and watches the child.
struct KeepingParent {
    events: ActorRef<String>,
    child: Option<ActorRef<ChildMsg>>,
}

impl Actor for KeepingParent {
    type Msg = ParentMsg;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let child = ctx.spawn("child", child_actor(self.events.clone()))?;
        self.child = Some(child);
        Ok(())
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<ParentMsg>) {
        self.events.tell("parent pre_restart".into());
    }
    fn post_restart(&mut self, ctx: &mut Context<Self>, _f: &Failure) -> HandleResult {
        self.events.tell("parent restarted".into());
        // The surviving child keeps its name: find it, do not spawn again.
        self.child = ctx.child("child").and_then(|c| c.downcast::<ChildMsg>());
        Ok(())
    }
    fn supervisor_strategy(&self) -> SupervisorStrategy {
        SupervisorStrategy::one_for_one().with_decider(|_| Directive::Escalate)
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: ParentMsg) -> HandleResult {
        match msg {
            ParentMsg::Child(r) => r.tell(self.child.clone().expect("a child")),
            ParentMsg::Fail => return Err(ActorError::new("parent fails")),
            ParentMsg::Ping(r) => r.tell("green"),
        }
        Ok(())
    }
}

const T: Duration = Duration::from_secs(10);

/// SupervisorSpec, "restart a child whose parent was restarted, keeping
/// it" (Akka's `finishRecreate`: the children that survive a restart are
/// restarted after the parent's `postRestart`): an escalated failure
/// restarts the parent, and the child, suspended by its own failure,
/// is restarted with it instead of staying suspended for ever.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_escalated_is_restarted_with_its_parent() {
    common::quiet_deliberate_panics();
    let system = common::system("finish-recreate").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let parent = system
        .spawn(
            "parent",
            Props::new(move || KeepingParent {
                events: tx.clone(),
                child: None,
            }),
        )
        .unwrap();
    events.expect_msg("child started".to_string());
    let child = parent.ask(ParentMsg::Child, T).await.unwrap();
    child.tell(ChildMsg::Fail("child fails"));
    events.expect_msg("parent pre_restart".to_string());
    events.expect_msg("parent restarted".to_string());
    events.expect_msg("child restarted".to_string());
    assert_eq!(child.ask(ChildMsg::Ping, T).await.unwrap(), "child green");
    assert_eq!(parent.ask(ParentMsg::Ping, T).await.unwrap(), "green");
    // The same child, not a new one.
    let again = parent.ask(ParentMsg::Child, T).await.unwrap();
    assert_eq!(again.path(), child.path());
    system.terminate().await;
}

/// The same when the parent fails on its own: its running child is
/// restarted too (Akka restarts every survivor).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_child_kept_by_a_restarted_parent_is_restarted() {
    let system = common::system("survivor").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let parent = system
        .spawn(
            "parent",
            Props::new(move || KeepingParent {
                events: tx.clone(),
                child: None,
            }),
        )
        .unwrap();
    events.expect_msg("child started".to_string());
    let child = parent.ask(ParentMsg::Child, T).await.unwrap();
    parent.tell(ParentMsg::Fail);
    events.expect_msg("parent pre_restart".to_string());
    events.expect_msg("parent restarted".to_string());
    events.expect_msg("child restarted".to_string());
    assert_eq!(child.ask(ChildMsg::Ping, T).await.unwrap(), "child green");
    events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

enum WatchingMsg {
    FailChild,
    Ping(ReplyTo<&'static str>),
    PingChild(ReplyTo<&'static str>),
}

/// SupervisorSpec, "not lose system messages when a NonFatal exception
/// occurs when processing a system message": its decider panics on
/// "OHNOES"; its `pre_restart` stops its children without unwatching them.
struct WatchingParent {
    events: ActorRef<String>,
    child: Option<ActorRef<ChildMsg>>,
}

impl Actor for WatchingParent {
    type Msg = WatchingMsg;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let child = ctx.spawn("child", child_actor(self.events.clone()))?;
        ctx.watch(&child);
        self.child = Some(child);
        Ok(())
    }
    fn pre_restart(&mut self, ctx: &mut Context<Self>, _f: &Failure, _m: Option<WatchingMsg>) {
        ctx.stop_all_children();
    }
    fn post_restart(&mut self, ctx: &mut Context<Self>, _f: &Failure) -> HandleResult {
        self.events.tell("parent restarted".into());
        self.pre_start(ctx)
    }
    fn supervisor_strategy(&self) -> SupervisorStrategy {
        SupervisorStrategy::one_for_one().with_decider(|failure| {
            if failure.to_string().contains("OHNOES") {
                panic!("the decider gives up on purpose");
            }
            Directive::Restart
        })
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        if t.actor.path().name() == "child" {
            self.events.tell("child terminated".into());
        }
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: WatchingMsg) -> HandleResult {
        let child = self.child.as_ref().expect("a child");
        match msg {
            WatchingMsg::FailChild => child.tell(ChildMsg::Fail("OHNOES")),
            WatchingMsg::Ping(r) => r.tell("green"),
            WatchingMsg::PingChild(r) => child.tell(ChildMsg::Ping(r)),
        }
        Ok(())
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_decider_fails_the_supervisor_and_loses_nothing() {
    common::quiet_deliberate_panics();
    let system = common::system("decider-panics").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let parent = system
        .spawn(
            "parent",
            Props::new(move || WatchingParent {
                events: tx.clone(),
                child: None,
            }),
        )
        .unwrap();
    events.expect_msg("child started".to_string());
    parent.tell(WatchingMsg::FailChild);
    events.expect_msg("parent restarted".to_string());
    // The new instance's child starts; the old one's end reaches the
    // new instance, which the old one's watch carried over.
    let mut got = events.receive_n(2);
    got.sort();
    assert_eq!(got, vec!["child started", "child terminated"]);
    assert_eq!(parent.ask(WatchingMsg::Ping, T).await.unwrap(), "green");
    assert_eq!(
        parent.ask(WatchingMsg::PingChild, T).await.unwrap(),
        "child green"
    );
    system.terminate().await;
}

/// Reports its hooks with its generation; its `pre_start` always fails.
struct NeverStarts {
    events: ActorRef<String>,
    generation: usize,
}

impl Actor for NeverStarts {
    type Msg = ();
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.events.tell(format!("pre_start {}", self.generation));
        Err(ActorError::new("test exception"))
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.events.tell(format!("post_stop {}", self.generation));
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<()>) {
        self.events.tell(format!("pre_restart {}", self.generation));
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        Ok(())
    }
}

/// Restarts initialization failures up to 3 times, then stops.
struct RestartsInit {
    events: ActorRef<String>,
}

impl Actor for RestartsInit {
    type Msg = ();
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let events = self.events.clone();
        let generation = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        ctx.spawn(
            "child",
            Props::new(move || NeverStarts {
                events: events.clone(),
                generation: generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
            }),
        )?;
        Ok(())
    }
    fn supervisor_strategy(&self) -> SupervisorStrategy {
        SupervisorStrategy::one_for_one()
            .with_max_restarts(3, Duration::from_secs(10))
            .with_decider(|failure| match failure.kind {
                volley::FailureKind::Initialization(_) => Directive::Restart,
                _ => Directive::Escalate,
            })
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        Ok(())
    }
}

/// ActorLifeCycleSpec, "not break supervisor strategy due to unhandled
/// exception in preStart": an instance whose `pre_start` failed gets no
/// other hook (no `pre_restart`, no `post_stop`); each restart starts a
/// new instance with `pre_start`, until the restart limit stops it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_whose_pre_start_failed_gets_no_other_hook() {
    let system = common::system("prestart-fails").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let _supervisor = system
        .spawn(
            "supervisor",
            Props::new(move || RestartsInit { events: tx.clone() }),
        )
        .unwrap();
    for i in 0..=3 {
        events.expect_msg(format!("pre_start {i}"));
    }
    events.expect_no_msg(Duration::from_millis(300));
    system.terminate().await;
}

enum GuardMsg {
    ChildGone(&'static str),
    Fail,
    Ping(ReplyTo<&'static str>),
}

/// Watches its child with a message of its own, keeps the default
/// `pre_restart`, and reports every watch message.
fn guard(events: ActorRef<String>) -> Props<FnActor<GuardMsg, ActorRef<String>>> {
    actor_fn_with(events, |events, _ctx, msg| {
        match msg {
            GuardMsg::ChildGone(who) => events.tell(format!("{who} gone")),
            GuardMsg::Fail => return Err(ActorError::new("guard fails")),
            GuardMsg::Ping(r) => r.tell("green"),
        }
        Ok(())
    })
    .on_start(|events, ctx| {
        let child = ctx.spawn("child", child_actor(events.clone()))?;
        ctx.watch_with(&child, GuardMsg::ChildGone("child"));
        Ok(())
    })
    .props()
}

/// DeathWatchSpec / typed WatchSpec: the children a restart stops (the
/// default `pre_restart` unwatches them first, as Akka's does) send the new
/// instance no `watch_with` message; the new instance's own child is
/// watched as usual.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_stopped_by_a_restart_send_no_watch_message() {
    let system = common::system("watch-with-restart").unwrap();
    let events = TestProbe::<String>::new(&system);
    let guard = system.spawn("guard", guard(events.actor_ref())).unwrap();
    events.expect_msg("child started".to_string());
    guard.tell(GuardMsg::Fail);
    // The new instance starts a new child; nothing says the old one went.
    events.expect_msg("child started".to_string());
    assert_eq!(guard.ask(GuardMsg::Ping, T).await.unwrap(), "green");
    events.expect_no_msg(Duration::from_millis(300));
    // Its own child's end does arrive.
    let child = system
        .lookup("/user/guard/child")
        .unwrap()
        .expect("the new child");
    child.graceful_stop();
    events.expect_msg("child gone".to_string());
    system.terminate().await;
}

/// Props that can never be created (a bounded mailbox of capacity 0); its
/// event sink is never told anything.
fn zero_capacity(system: &volley::ActorSystem) -> Props<PingPong> {
    let unused = TestProbe::<String>::new(system).actor_ref();
    PingPong::props(&unused).with_mailbox(MailboxConfig::Bounded {
        capacity: 0,
        overflow: Overflow::DropNewest,
    })
}

/// SupervisorSpec, "log pre-creation check failures" when "creating a
/// top-level actor", "a normal child actor", "a top-level router" and "a
/// router": volley checks before creating anything, so the spawn returns
/// the error; a child's spawn that fails with `?` fails the parent, whose
/// supervisor sees the `SpawnError`; a pool fails to start and stops.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_creation_check_failures_are_reported() {
    let system = common::system("sup-pre-creation").unwrap();
    assert_eq!(
        system.spawn("bad", zero_capacity(&system)).unwrap_err(),
        SpawnError::ZeroCapacity
    );
    assert!(system.lookup("/user/bad").unwrap().is_none());
    // A pool checks its routees' props when it creates them, in its own
    // start: it fails to initialize, and the default decider stops it.
    let router = Router::pool(1, zero_capacity(&system))
        .spawn(&system, "bad-router")
        .unwrap();
    TestProbe::<()>::new(&system).expect_terminated(&router);
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let top = supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(move |f| {
            tx.tell(format!("{:?}", f.downcast_ref::<SpawnError>()));
            Directive::Stop
        }),
    );
    // The spec's `Creator`: spawns what it is told and fails if it cannot.
    let creator = actor_fn(|ctx, ()| {
        ctx.spawn_anonymous(zero_capacity(ctx.system()))?;
        Ok(())
    });
    let creator = child(&top, creator).await;
    creator.tell(());
    events.expect_msg("Some(ZeroCapacity)".to_string());
    system.terminate().await;
}
