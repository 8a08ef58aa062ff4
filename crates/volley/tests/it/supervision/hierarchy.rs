//! Cases ported from Pekko's classic `SupervisorHierarchySpec`
//! (actor-tests), in volley's API:
//! - "restart manager and workers in AllForOne" →
//!   `restart_manager_and_workers_in_all_for_one`
//! - "send notification to supervisor when permanent failure" →
//!   `notify_the_supervisor_of_a_permanent_failure`
//! - "resume children after Resume" → `resume_children_after_resume`, and
//!   `resume_the_child_whose_failure_was_escalated` (the spec's stress
//!   test checks the same through its "not resumed" log)
//! - "suspend children while failing" →
//!   `children_keep_running_while_their_parent_awaits_a_decision` (a
//!   difference, see below)
//! - "handle failure in creation when supervision strategy returns Resume
//!   and Restart": in `pekko_supervisor_misc.rs`
//! - "survive being stressed" (its checks: no message lost, no instance
//!   handling messages after it was replaced, the tree whole at the end)
//!   → `a_stressed_hierarchy_loses_nothing`, a fixed script of failures on
//!   a tree of seven actors instead of a random one on 500.
//!
//! A bug these cases found, now fixed: a child whose failure its parent
//! escalated stayed suspended for ever when the grandparent resumed the
//! parent (`resume_the_child_whose_failure_was_escalated`).
//!
//! Differences from Pekko:
//! - A failed actor's children are not suspended with it: they keep
//!   handling messages while their parent waits for its supervisor's
//!   directive (docs/reference/supervision.md). The test pins that.
//!
//! Skipped, with the reason:
//! - The stress test's custom dispatcher that logs every suspend and
//!   resume, its GC check through weak references, and its
//!   "running on wrong thread" check: volley has no pluggable dispatcher
//!   hooks nor weak actor refs to observe; dispatcher placement is tested
//!   in `pekko_dispatchers.rs`.
//! - Typed `SupervisionSpec`'s nesting cases: volley has one strategy per
//!   parent (see the skipped list of `pekko_typed_supervision.rs`).

use crate::common;

use std::time::Duration;

use common::pekko::{child, supervisor, Latch, BLOCKING, T};
use volley::{
    Actor, ActorError, ActorRef, Context, Directive, Failure, FailureKind, HandleResult, Props,
    ReplyTo, SupervisorStrategy, Terminated,
};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

const QUIET: Duration = Duration::from_millis(300);

// ---------------------------------------------------------------------
// A supervisor that keeps its children when it restarts and reports its
// own restarts (the spec's `CountDownActor`).

enum CdMsg {
    Spawn(Props<FnActor<CdMsg>>, ReplyTo<ActorRef<CdMsg>>),
    Die,
}

fn cd(
    name: &'static str,
    events: &ActorRef<String>,
    strategy: SupervisorStrategy,
) -> Props<FnActor<CdMsg>> {
    actor_fn_with((), |_, ctx, msg| {
        match msg {
            CdMsg::Spawn(props, reply) => reply.tell(ctx.spawn_anonymous(props)?),
            CdMsg::Die => return Err(ActorError::new("killed on purpose")),
        }
        Ok(())
    })
    .with_supervisor_strategy(strategy)
    // Keeps its children on a restart.
    .on_pre_restart(|_, _ctx, _f| {})
    .on_restart({
        let events = events.clone();
        move |_, _ctx, _f| {
            events.tell(format!("restarted {name}"));
            Ok(())
        }
    })
    .props()
}

async fn spawn_in(parent: &ActorRef<CdMsg>, props: Props<FnActor<CdMsg>>) -> ActorRef<CdMsg> {
    parent
        .ask(|r| CdMsg::Spawn(props, r), T)
        .await
        .expect("the parent spawns")
}

/// The worker's failure escalates through the all-for-one manager; the
/// boss restarts the manager, which kept its workers, and every worker is
/// restarted with it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_manager_and_workers_in_all_for_one() {
    let system = common::system("hier-all-for-one").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let boss = supervisor(&system, SupervisorStrategy::one_for_one());
    let escalate = SupervisorStrategy::all_for_one().with_decider(|_| Directive::Escalate);
    let manager = child(&boss, cd("manager", &tx, escalate)).await;
    let worker = SupervisorStrategy::default;
    let one = spawn_in(&manager, cd("worker1", &tx, worker())).await;
    spawn_in(&manager, cd("worker2", &tx, worker())).await;
    spawn_in(&manager, cd("worker3", &tx, worker())).await;
    one.tell(CdMsg::Die);
    events.expect_msg_all_of(
        ["manager", "worker1", "worker2", "worker3"]
            .map(|n| format!("restarted {n}"))
            .into(),
    );
    events.expect_no_msg(QUIET);
    system.terminate().await;
}

/// The boss allows one restart in its window: the second failure stops
/// the child, and the boss, watching it, hears of it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_the_supervisor_of_a_permanent_failure() {
    struct Boss {
        events: ActorRef<String>,
        crasher: Option<ActorRef<CdMsg>>,
    }
    impl Actor for Boss {
        type Msg = ();
        fn supervisor_strategy(&self) -> SupervisorStrategy {
            SupervisorStrategy::one_for_one()
                .with_max_restarts(1, Duration::from_secs(5))
                .with_decider(|_| Directive::Restart)
        }
        fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
            let props = cd("crasher", &self.events, SupervisorStrategy::default());
            let crasher = ctx.spawn("crasher", props)?;
            ctx.watch(&crasher);
            self.crasher = Some(crasher);
            Ok(())
        }
        fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
            self.events
                .tell(format!("terminated {}", t.actor.path().name()));
            Ok(())
        }
        fn handle(&mut self, _ctx: &mut Context<Self>, _kill: ()) -> HandleResult {
            self.crasher.as_ref().expect("a crasher").tell(CdMsg::Die);
            Ok(())
        }
    }
    let system = common::system("hier-permanent").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let boss = system
        .spawn_anonymous(Props::new(move || Boss {
            events: tx.clone(),
            crasher: None,
        }))
        .unwrap();
    boss.tell(());
    boss.tell(());
    events.expect_msg("restarted crasher".to_string());
    events.expect_msg("terminated crasher".to_string());
    events.expect_no_msg(QUIET);
    system.terminate().await;
}

// ---------------------------------------------------------------------
// The spec's `Resumer`: resumes every failing child.

enum RMsg {
    Spawn(ReplyTo<ActorRef<RMsg>>),
    Fail,
    Ping(ReplyTo<&'static str>),
}

fn resumer() -> Props<FnActor<RMsg>> {
    actor_fn_with((), |_, ctx, msg| {
        match msg {
            RMsg::Spawn(reply) => reply.tell(ctx.spawn_anonymous(resumer())?),
            RMsg::Fail => return Err(ActorError::new("failing on purpose")),
            RMsg::Ping(reply) => reply.tell("pong"),
        }
        Ok(())
    })
    .with_supervisor_strategy(SupervisorStrategy::one_for_one().with_decider(|_| Directive::Resume))
    .props()
}

async fn pong(actor: &ActorRef<RMsg>) -> &'static str {
    actor.ask(RMsg::Ping, T).await.expect("a pong")
}

/// boss → middle → worker; the middle fails and is resumed: it and its
/// worker carry on (a restart would have stopped the worker).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_children_after_resume() {
    let system = common::system("hier-resume").unwrap();
    let boss = system.spawn("resumer", resumer()).unwrap();
    let middle = boss.ask(RMsg::Spawn, T).await.unwrap();
    let worker = middle.ask(RMsg::Spawn, T).await.unwrap();
    assert_eq!(pong(&worker).await, "pong");
    middle.tell(RMsg::Fail);
    assert_eq!(pong(&middle).await, "pong");
    assert_eq!(pong(&worker).await, "pong");
    system.terminate().await;
}

/// The worker fails and its parent escalates; the grandparent resumes
/// the parent. The worker, suspended since its failure, must run again
/// (Akka resumes the child whose failure was escalated), and keeps its
/// state.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_the_child_whose_failure_was_escalated() {
    enum CMsg {
        Add,
        Fail,
        Get(ReplyTo<u32>),
    }
    let mut count = 0;
    let counter = actor_fn(move |_ctx, msg| {
        match msg {
            CMsg::Add => count += 1,
            CMsg::Fail => return Err(ActorError::new("failing on purpose")),
            CMsg::Get(reply) => reply.tell(count),
        }
        Ok(())
    });
    let system = common::system("hier-resume-escalated").unwrap();
    let resumer = common::pekko::supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(|_| Directive::Resume),
    );
    let escalating = SupervisorStrategy::one_for_one().with_decider(|_| Directive::Escalate);
    let middle = child(
        &resumer,
        Props::new(move || common::pekko::Supervisor(escalating.clone())),
    )
    .await;
    let worker = child(&middle, counter).await;
    worker.tell(CMsg::Add);
    worker.tell(CMsg::Fail);
    worker.tell(CMsg::Add);
    assert_eq!(worker.ask(CMsg::Get, T).await.expect("the worker runs"), 2);
    system.terminate().await;
}

/// A difference from Pekko: while the slow resumer's decider holds the
/// boss's failure undecided, the boss handles nothing, but its
/// descendants are not suspended and keep answering.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_keep_running_while_their_parent_awaits_a_decision() {
    let settings = common::pekko::with_blocking_pool(volley::Settings::default());
    let system = common::system_with("hier-slow-resumer", settings).unwrap();
    let events = TestProbe::<String>::new(&system);
    let (latch, tx) = (Latch::new(1), events.actor_ref());
    let release = latch.clone();
    let slow = actor_fn_with((), |_, ctx, msg| {
        if let RMsg::Spawn(reply) = msg {
            reply.tell(ctx.spawn_anonymous(resumer())?);
        }
        Ok(())
    })
    .with_supervisor_strategy(SupervisorStrategy::one_for_one().with_decider(move |_| {
        tx.tell("deciding".into());
        latch.wait();
        Directive::Resume
    }));
    let slow = system
        .spawn("slowResumer", slow.props().with_dispatcher(BLOCKING))
        .unwrap();
    let boss = slow.ask(RMsg::Spawn, T).await.unwrap();
    let middle = boss.ask(RMsg::Spawn, T).await.unwrap();
    let worker = middle.ask(RMsg::Spawn, T).await.unwrap();
    assert_eq!(pong(&worker).await, "pong");
    boss.tell(RMsg::Fail);
    events.expect_msg("deciding".to_string());
    let boss_pong = tokio::spawn({
        let boss = boss.clone();
        async move { pong(&boss).await }
    });
    assert_eq!(pong(&worker).await, "pong");
    assert_eq!(pong(&middle).await, "pong");
    tokio::time::sleep(QUIET).await;
    assert!(!boss_pong.is_finished(), "the failed boss ran undecided");
    release.count_down();
    assert_eq!(boss_pong.await.unwrap(), "pong");
    system.terminate().await;
}

// ---------------------------------------------------------------------
// A reduced, deterministic "survive being stressed".

#[derive(Debug, thiserror::Error)]
#[error("failing on purpose: {0:?}, {1} supervisors up")]
struct Boom(Directive, usize);

enum NMsg {
    /// Fail; the directive applies `levels` supervisors up.
    Fail(Directive, usize),
    /// Answers "pong <path> <n>" to the probe.
    Ping(u32, ActorRef<String>),
}

/// A node of a binary tree `levels` deep under it. It keeps its children
/// across restarts, spawns again any that is missing after a restart or
/// has terminated, and reports if an instance handles a message after it
/// failed with a directive that replaces it.
struct Node {
    levels: usize,
    events: ActorRef<String>,
    replaced: bool,
}

const KIDS: [&str; 2] = ["0", "1"];

fn node(levels: usize, events: &ActorRef<String>) -> Props<Node> {
    let events = events.clone();
    Props::new(move || Node {
        levels,
        events: events.clone(),
        replaced: false,
    })
}

/// How many supervisors the failure has gone through before this one.
fn hops(failure: &Failure) -> usize {
    match &failure.kind {
        FailureKind::Escalated(inner) => 1 + hops(inner),
        _ => 0,
    }
}

impl Node {
    fn spawn_kid(&mut self, ctx: &mut Context<Self>, name: &str) -> HandleResult {
        let kid = ctx.spawn(name, node(self.levels - 1, &self.events))?;
        ctx.watch(&kid);
        Ok(())
    }
}

impl Actor for Node {
    type Msg = NMsg;
    fn supervisor_strategy(&self) -> SupervisorStrategy {
        SupervisorStrategy::one_for_one().with_decider(|f| match f.downcast_ref::<Boom>() {
            // Passed up until it has gone through as many supervisors as
            // the failing node was told.
            Some(Boom(_, up)) if hops(f) < *up => Directive::Escalate,
            Some(Boom(directive, _)) => *directive,
            None => Directive::Escalate,
        })
    }
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if self.levels > 0 {
            for name in KIDS {
                self.spawn_kid(ctx, name)?;
            }
        }
        Ok(())
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<NMsg>) {}
    fn post_restart(&mut self, ctx: &mut Context<Self>, _f: &Failure) -> HandleResult {
        if self.levels > 0 {
            for name in KIDS {
                if ctx.child(name).is_none() {
                    self.spawn_kid(ctx, name)?;
                }
            }
        }
        Ok(())
    }
    fn on_terminated(&mut self, ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        let name = t.actor.path().name().to_string();
        if ctx.child(&name).is_none() {
            self.spawn_kid(ctx, &name)?;
        }
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, msg: NMsg) -> HandleResult {
        match msg {
            NMsg::Fail(directive, up) => {
                // A restart of this node or of an ancestor replaces this
                // instance (the ancestor's restart restarts the kept
                // children); a resume keeps it.
                self.replaced = directive == Directive::Restart;
                Err(ActorError::new(Boom(directive, up)))
            }
            NMsg::Ping(n, to) => {
                if self.replaced {
                    to.tell(format!("replaced instance ran: {}", ctx.path()));
                } else {
                    to.tell(format!("pong {} {n}", ctx.path()));
                }
                Ok(())
            }
        }
    }
}

const TREE: [&str; 7] = ["", "/0", "/0/0", "/0/1", "/1", "/1/0", "/1/1"];

/// The live actor at `/user/tree<suffix>`, waiting for it to be there
/// and, with `not`, to be another incarnation than `not`.
fn find(
    system: &volley::ActorSystem,
    suffix: &str,
    not: Option<&ActorRef<NMsg>>,
) -> ActorRef<NMsg> {
    let path = format!("/user/tree{suffix}");
    let mut found = None;
    common::eventually(&format!("{path} to be there"), || {
        found = system
            .lookup(&path)
            .unwrap()
            .and_then(|a| a.downcast::<NMsg>());
        found.is_some() && found.as_ref() != not
    });
    found.unwrap()
}

/// Every node of the tree answers, once.
fn whole_tree_answers(system: &volley::ActorSystem, events: &TestProbe<String>, round: u32) {
    let expected = TREE
        .iter()
        .map(|suffix| {
            let actor = find(system, suffix, None);
            actor.tell(NMsg::Ping(round, events.actor_ref()));
            format!("pong {} {round}", actor.path())
        })
        .collect();
    events.expect_msg_all_of(expected);
}

/// The spec's stress test, reduced to a fixed script on a tree of seven:
/// each step fails some nodes with a directive to apply so many
/// supervisors up, and pings them right behind the failure. Nothing
/// queued behind a resumed or restarted failure is lost, no replaced
/// instance handles a message, and after each step every node of the
/// tree (spawned again where a stop removed it) answers.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stressed_hierarchy_loses_nothing() {
    use Directive::{Restart, Resume, Stop};
    common::quiet_deliberate_panics();
    let system = common::system("hier-stress").unwrap();
    let events = TestProbe::<String>::new(&system);
    system.spawn("tree", node(2, &events.actor_ref())).unwrap();
    whole_tree_answers(&system, &events, 0);
    let script: &[&[(&str, Directive, usize)]] = &[
        &[("/0/0", Resume, 0)],
        &[("/0/1", Restart, 0)],
        &[("/1/0", Resume, 1)],
        &[("/1/1", Restart, 1)],
        &[("/0", Restart, 0)],
        &[("/0/0", Resume, 1), ("/0/1", Resume, 1)],
        &[("/1/0", Restart, 0), ("/1/1", Resume, 0)],
        &[("/0/0", Stop, 0)],
        &[("/1", Stop, 0)],
        &[("/1/0", Stop, 1)],
        &[("/0", Resume, 0)],
        &[("/0/1", Restart, 2)],
        &[("/1/1", Resume, 2)],
    ];
    let mut round = 1;
    for step in script {
        let mut expected = Vec::new();
        let mut stopped = Vec::new();
        for &(suffix, directive, up) in step.iter() {
            let target = find(&system, suffix, None);
            target.tell(NMsg::Fail(directive, up));
            if directive == Stop {
                // What is queued behind a stop goes to dead letters.
                stopped.push((suffix, target));
                continue;
            }
            for n in 0..5 {
                target.tell(NMsg::Ping(1000 * round + n, events.actor_ref()));
                expected.push(format!("pong {} {}", target.path(), 1000 * round + n));
            }
        }
        if !expected.is_empty() {
            events.expect_msg_all_of(expected);
        }
        for (suffix, old) in &stopped {
            find(&system, suffix, Some(old));
        }
        whole_tree_answers(&system, &events, round);
        round += 1;
    }
    events.expect_no_msg(QUIET);
    system.terminate().await;
}
