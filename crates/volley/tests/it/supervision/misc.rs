//! Cases ported from Pekko's classic `SupervisorMiscSpec` and
//! `SupervisorTreeSpec` (actor-tests), in volley's API:
//! - SupervisorMiscSpec "restart a crashing actor and its dispatcher for
//!   any dispatcher" → `restart_crashing_actors_on_any_dispatcher` (the
//!   spec's pinned dispatcher is a pool of one thread here: volley has no
//!   pinned kind)
//! - "be able to create named children in its constructor" →
//!   `named_children_spawned_at_start_survive_a_restart`
//! - "not be able to recreate child when old child is alive" →
//!   `a_stopping_child_keeps_its_name`
//! - "be able to create a similar kid in the fault handling strategy" →
//!   `a_similar_kid_replaces_a_terminated_one`
//! - "have access to the failing child's reference in supervisorStrategy"
//!   → `the_decider_knows_the_failing_child`
//! - SupervisorHierarchySpec "handle failure in creation when
//!   supervision strategy returns Resume and Restart" →
//!   `failure_in_creation_with_resume_and_restart` (the rest of that spec
//!   is in `pekko_supervisor_hierarchy.rs`)
//! - SupervisorTreeSpec "be able to kill the middle actor and see itself
//!   and its child restarted" → `kill_the_middle_actor_of_three`
//!
//! Differences from Pekko:
//! - A strategy has no `handleChildTerminated` hook: a parent that wants
//!   to replace a child watches it and spawns the replacement in
//!   `on_terminated` (the name is free by then).
//! - The decider gets the `Failure`, whose `actor` is the failing child's
//!   path, not its `ActorRef` (there is no `sender()`); `ctx.child(name)`
//!   gives the ref.
//!
//! Skipped, with the reason:
//! - "be able to recreate child when old child is Terminated": already
//!   ported, as spawning the name again in `on_terminated`, in
//!   `pekko_typed_stop.rs`.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::pekko::{child, supervisor, SupMsg, T};
use volley::{
    Actor, ActorError, ActorRef, Context, Directive, DispatcherKind, DispatcherSettings,
    FailureKind, HandleResult, Props, ReplyTo, Settings, SpawnError, SupervisorStrategy,
    Terminated,
};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

const QUIET: Duration = Duration::from_millis(300);

/// Does nothing.
fn idle() -> Props<FnActor<()>> {
    actor_fn(|_, ()| Ok(()))
}

enum WMsg {
    Status(ReplyTo<&'static str>),
    Kill,
}

/// Reports its restarts; fails on `Kill`.
fn worker(events: ActorRef<String>, name: &'static str) -> Props<FnActor<WMsg, ActorRef<String>>> {
    actor_fn_with(events, |_, _ctx, msg| match msg {
        WMsg::Status(reply) => {
            reply.tell("OK");
            Ok(())
        }
        WMsg::Kill => Err(ActorError::new("killed on purpose")),
    })
    .on_restart(move |events, _ctx, _f| {
        events.tell(format!("restarted {name}"));
        Ok(())
    })
    .props()
}

/// Four workers on three dispatchers of both kinds are each killed and
/// restarted, and each answers afterwards.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_crashing_actors_on_any_dispatcher() {
    let mut settings = Settings::default();
    for (name, kind) in [
        ("single", DispatcherKind::WorkStealing),
        ("app", DispatcherKind::AppRuntime),
    ] {
        let pool = DispatcherSettings {
            kind,
            threads: 1,
            ..Default::default()
        };
        settings.dispatchers.insert(name.into(), pool);
    }
    let system = common::system_with("misc-dispatchers", settings).unwrap();
    let events = TestProbe::<String>::new(&system);
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one()
            .with_max_restarts(3, Duration::from_secs(5))
            .with_decider(|_| Directive::Restart),
    );
    let mut workers = Vec::new();
    for (name, dispatcher) in [
        ("actor1", Some("single")),
        ("actor2", Some("single")),
        ("actor3", None),
        ("actor4", Some("app")),
    ] {
        let props = worker(events.actor_ref(), name);
        let props = match dispatcher {
            Some(d) => props.with_dispatcher(d),
            None => props,
        };
        workers.push(child(&sup, props).await);
    }
    for w in &workers {
        w.tell(WMsg::Kill);
    }
    events.expect_msg_all_of(
        ["actor1", "actor2", "actor3", "actor4"]
            .map(|n| format!("restarted {n}"))
            .into(),
    );
    for w in &workers {
        assert_eq!(w.ask(WMsg::Status, T).await.unwrap(), "OK");
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_children_spawned_at_start_survive_a_restart() {
    let system = common::system("misc-named").unwrap();
    let events = TestProbe::<String>::new(&system);
    // Spawns `bob` at start and fails on any message: the restart's
    // default hooks stop `bob` and the new instance spawns it again.
    let with_bob = actor_fn_with(events.actor_ref(), |_, _ctx, ()| {
        Err(ActorError::new("weird message, on purpose"))
    })
    .on_start(|events, ctx| {
        ctx.spawn("bob", idle())?;
        events.tell("pre_start".into());
        Ok(())
    });
    let a = system.spawn_anonymous(with_bob.props()).unwrap();
    a.tell(());
    events.expect_msg("pre_start".to_string());
    events.expect_msg("pre_start".to_string());
    events.expect_no_msg(QUIET);
    assert!(!a.is_terminated());
    let bob = system.lookup(&format!("{}/bob", a.path())).unwrap();
    assert!(bob.is_some(), "the new instance's bob runs");
    system.terminate().await;
}

/// A child asked to stop keeps its name until it has terminated.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_child_keeps_its_name() {
    let system = common::system("misc-alive").unwrap();
    let sup = supervisor(&system, SupervisorStrategy::default());
    let outcome = sup
        .ask(
            |reply: ReplyTo<Result<(), SpawnError>>| {
                SupMsg::Run(Box::new(move |ctx| {
                    let kid = ctx.spawn("foo", idle()).expect("a kid");
                    ctx.stop(&kid);
                    reply.tell(ctx.spawn("foo", idle()).map(|_| ()));
                }))
            },
            T,
        )
        .await
        .unwrap();
    assert!(
        matches!(outcome, Err(SpawnError::DuplicateName { .. })),
        "{outcome:?}"
    );
    system.terminate().await;
}

/// Watches `Robert`, stops it, and spawns a similar kid under the same
/// name when it has terminated.
struct Replacer(ActorRef<String>, Option<ActorRef<()>>);

impl Actor for Replacer {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<Self>, _engage: ()) -> HandleResult {
        let kid = ctx.spawn("Robert", idle())?;
        ctx.watch(&kid);
        ctx.stop(&kid);
        self.1 = Some(kid);
        Ok(())
    }
    fn on_terminated(&mut self, ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        let new_kid = ctx.spawn(t.actor.path().name(), idle())?;
        let old = self.1.as_ref().expect("the old kid");
        let same_path = new_kid.path() == old.path();
        let verdict = if new_kid != *old && same_path && !new_kid.is_terminated() {
            "green"
        } else {
            "red"
        };
        self.0.tell(verdict.into());
        Ok(())
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_similar_kid_replaces_a_terminated_one() {
    let system = common::system("misc-similar").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let parent = system
        .spawn_anonymous(Props::new(move || Replacer(tx.clone(), None)))
        .unwrap();
    parent.tell(());
    events.expect_msg("green".to_string());
    system.terminate().await;
}

/// The decider sees which child failed: its path, under the parent,
/// with the name it was given.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decider_knows_the_failing_child() {
    let system = common::system("misc-sender").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let strategy = SupervisorStrategy::one_for_one().with_decider(move |f| {
        tx.tell(f.actor.clone());
        Directive::Stop
    });
    let parent = supervisor(&system, strategy);
    let tx = events.actor_ref();
    let kid = parent
        .ask(
            |reply: ReplyTo<ActorRef<WMsg>>| {
                SupMsg::Run(Box::new(move |ctx| {
                    let props = worker(tx, "child");
                    reply.tell(ctx.spawn("child", props).expect("a child"))
                }))
            },
            T,
        )
        .await
        .unwrap();
    kid.tell(WMsg::Kill);
    let path = events.receive_msg();
    assert_eq!(path, format!("{}/child", parent.path()));
    assert_eq!(path, kid.path().to_string());
    events.expect_no_msg(QUIET);
    system.terminate().await;
}

// ---------------------------------------------------------------------
// SupervisorTreeSpec: three levels, each spawning the next.

enum TMsg {
    Spawn(ReplyTo<ActorRef<TMsg>>),
    Kill,
}

/// Reports its path from `pre_restart`, which keeps the children.
fn level(events: ActorRef<String>) -> Props<FnActor<TMsg, ActorRef<String>>> {
    actor_fn_with(events, |events, ctx, msg| match msg {
        TMsg::Spawn(reply) => {
            reply.tell(ctx.spawn_anonymous(level(events.clone()))?);
            Ok(())
        }
        TMsg::Kill => Err(ActorError::new("killed on purpose")),
    })
    .with_supervisor_strategy(
        SupervisorStrategy::one_for_one().with_max_restarts(3, Duration::from_secs(1)),
    )
    .on_pre_restart(|events, ctx, _f| events.tell(ctx.path().to_string()))
    .props()
}

/// Killing the middle restarts it, and with it the last, which it kept;
/// the head is not restarted.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_the_middle_actor_of_three() {
    let system = common::system("misc-tree").unwrap();
    let events = TestProbe::<String>::new(&system);
    let head = system.spawn_anonymous(level(events.actor_ref())).unwrap();
    let middle = head.ask(TMsg::Spawn, T).await.unwrap();
    let last = middle.ask(TMsg::Spawn, T).await.unwrap();
    middle.tell(TMsg::Kill);
    events.expect_msg(middle.path().to_string());
    events.expect_msg(last.path().to_string());
    events.expect_no_msg(Duration::from_secs(1));
    // Both run again, the same actors.
    let grandchild = middle.ask(TMsg::Spawn, T).await.unwrap();
    assert!(grandchild
        .path()
        .to_string()
        .starts_with(&format!("{}/", middle.path())));
    last.ask(TMsg::Spawn, T).await.unwrap();
    system.terminate().await;
}

// ---------------------------------------------------------------------
// Failure in creation under a strategy that alternates Resume and
// Restart.

#[derive(Default)]
struct CreationCounts {
    attempts: AtomicUsize,
    started: AtomicUsize,
    post_restarts: AtomicUsize,
}

type Request = (&'static str, ReplyTo<String>);

/// Fails to start five times; the third and sixth attempts spawn a child
/// named `workingChild` first (the sixth can only if the third's was
/// stopped with its failed instance).
fn fail_child(counts: Arc<CreationCounts>) -> Props<FnActor<Request, Arc<CreationCounts>>> {
    actor_fn_with(counts, |_, ctx, (text, reply): Request| {
        reply.tell(format!("{text} {}", ctx.children().len()));
        Ok(())
    })
    .on_start(|counts, ctx| {
        let attempt = counts.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        if attempt <= 6 && attempt % 3 == 0 {
            ctx.spawn("workingChild", idle())?;
        }
        if attempt < 6 {
            return Err(ActorError::new("creation fails on purpose"));
        }
        counts.started.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
    .on_restart(|counts, _ctx, _f| {
        counts.post_restarts.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })
    .props()
}

/// Six attempts, alternately resumed and restarted, end in one started
/// instance that never saw `post_restart`, has the sixth attempt's
/// `workingChild`, and gets the message sent while it was failing.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_in_creation_with_resume_and_restart() {
    let system = common::system("hier-creation").unwrap();
    let counts = Arc::new(CreationCounts::default());
    let decided = counts.clone();
    let strategy = SupervisorStrategy::one_for_one().with_decider(move |f| match f.kind {
        FailureKind::Initialization(_) if decided.attempts.load(Ordering::SeqCst) % 2 == 0 => {
            Directive::Resume
        }
        FailureKind::Initialization(_) => Directive::Restart,
        _ => Directive::Escalate,
    });
    let fail_resumer = actor_fn_with(None, |child: &mut Option<ActorRef<Request>>, _ctx, msg| {
        child.as_ref().expect("a child").tell(msg);
        Ok(())
    })
    .on_start({
        let counts = counts.clone();
        move |child, ctx| {
            *child = Some(ctx.spawn("failChild", fail_child(counts.clone()))?);
            Ok(())
        }
    })
    .with_supervisor_strategy(strategy);
    let parent = system.spawn("failResumer", fail_resumer.props()).unwrap();
    let answer = parent.ask(|r| ("blahonga", r), T).await.unwrap();
    assert_eq!(answer, "blahonga 1");
    assert_eq!(counts.attempts.load(Ordering::SeqCst), 6);
    assert_eq!(counts.started.load(Ordering::SeqCst), 1);
    assert_eq!(counts.post_restarts.load(Ordering::SeqCst), 0);
    system.terminate().await;
}
