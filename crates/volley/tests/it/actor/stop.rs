//! Cases ported from Pekko's typed `StopSpec` and `ActorContextSpec`
//! (actor-typed-tests), in volley's API. A typed `Behaviors.stopped` is
//! `ctx.stop_self()` here, its post-stop callback and the `PostStop`
//! signal are both `post_stop`, and `Behaviors.setup` is `pre_start` (run
//! again, as `post_restart`, on a restart).
//!
//! From `StopSpec`: "execute the post stop when stopping after setup",
//! "execute the post stop", "execute the post stop early". From
//! `ActorContextSpec`: "signal post stop after voluntary termination",
//! "restart and stop a child actor", "stop a child actor", "not reset
//! behavior upon resume", "stop upon stop", "not stop non-child actor",
//! "return the right context info", "return right info about children",
//! "not have problems stopping already stopped child". Also typed's
//! "not throw when spawning with a name already in use after the actor
//! stopped": a parent reuses a child's name in its `Terminated` handler
//! (a regression test for a bug this port found).
//!
//! Ported elsewhere: `ActorContextSpec`'s "set small/large receive
//! timeout" (`pekko_receive_timeout.rs`); "reset behavior upon restart"
//! (`pekko_lifecycle.rs`, `a_restart_clears_what_the_handler_switched`);
//! "watch a child actor before/after its termination", "unwatch a child
//! actor before its termination" and "terminate upon not handling
//! Terminated" (`pekko_death_watch.rs`).
//!
//! Skipped, with the reason:
//! - "signal PostStop and then execute the post stop": volley has one
//!   hook, `post_stop`, not a signal plus a callback given at stop time.
//! - "execute the post stop when wrapped" (#25082), "canonicalize
//!   behaviors", "be usable from Behavior.interpretMessage", and the
//!   decorated variants of `ActorContextSpec` (`transformMessages`,
//!   nested `setup`, `intercept`): there are no behaviors to wrap.
//! - "create a named adapter": a message adapter is not an actor and has
//!   no name of its own; it has its actor's path (`adapters.rs`).
//! - "not allow null messages": there is no null in Rust.
//! - "schedule a message" (`scheduleOnce` to any ref): volley's timers
//!   send to the actor itself (`pekko_timers.rs`).

use crate::common;

use std::time::Duration;

use common::pekko::{child, supervisor, with_blocking_pool, BLOCKING, T};
use volley::{
    Actor, ActorError, ActorRef, AnyRef, Context, Directive, Failure, HandleResult, Props, ReplyTo,
    SupervisorStrategy, Terminated,
};
use volley_testkit::{actor_fn, eventually_async, FnActor, TestProbe};

/// Reports its hooks and messages; stops itself when told, or from
/// `pre_start` / `post_restart` when built to.
struct Subject {
    report: ActorRef<String>,
    stop_in_pre_start: bool,
    stop_in_post_restart: bool,
    count: u32,
}

enum Cmd {
    Ping,
    Stop,
    Fail,
    /// Spawns a child "B" and answers with the names of `child("B")`.
    Create(ReplyTo<Vec<String>>),
    /// Answers with the child of that name, if any.
    Child(String, ReplyTo<Vec<String>>),
    /// Answers with all the children's names.
    All(ReplyTo<Vec<String>>),
    /// Answers with the system's name and its own ref.
    Info(ReplyTo<(String, AnyRef)>),
    /// `ctx.stop(r)`, answering whether it was a child being stopped.
    StopRef(AnyRef, ReplyTo<bool>),
}

impl Subject {
    fn props(report: &ActorRef<String>, tune: fn(&mut Subject)) -> Props<Subject> {
        let report = report.clone();
        Props::new(move || {
            let mut s = Subject {
                report: report.clone(),
                stop_in_pre_start: false,
                stop_in_post_restart: false,
                count: 0,
            };
            tune(&mut s);
            s
        })
    }

    fn say(&self, what: impl Into<String>) {
        self.report.tell(what.into());
    }
}

fn names(refs: impl IntoIterator<Item = AnyRef>) -> Vec<String> {
    let mut names: Vec<String> = refs
        .into_iter()
        .map(|r| r.path().name().to_string())
        .collect();
    names.sort();
    names
}

impl Actor for Subject {
    type Msg = Cmd;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.say("preStart");
        if self.stop_in_pre_start {
            ctx.stop_self();
        }
        Ok(())
    }
    fn post_restart(&mut self, ctx: &mut Context<Self>, _f: &Failure) -> HandleResult {
        self.say("postRestart");
        if self.stop_in_post_restart {
            ctx.stop_self();
        }
        Ok(())
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<Cmd>) {
        self.say("preRestart");
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.say("postStop");
    }
    fn handle(&mut self, ctx: &mut Context<Self>, cmd: Cmd) -> HandleResult {
        match cmd {
            Cmd::Ping => {
                self.count += 1;
                self.say(format!("pong {}", self.count));
            }
            Cmd::Stop => ctx.stop_self(),
            Cmd::Fail => return Err(ActorError::new("boom")),
            Cmd::Create(reply) => {
                ctx.spawn("B", idle())?;
                reply.tell(names(ctx.child("B")));
            }
            Cmd::Child(name, reply) => reply.tell(names(ctx.child(&name))),
            Cmd::All(reply) => reply.tell(names(ctx.children())),
            Cmd::Info(reply) => {
                reply.tell((ctx.system().name().to_string(), ctx.myself().to_any()))
            }
            Cmd::StopRef(r, reply) => reply.tell(ctx.stop(&r)),
        }
        Ok(())
    }
}

/// Does nothing (typed's `Behaviors.empty`).
fn idle() -> Props<FnActor<()>> {
    actor_fn(|_, ()| Ok(()))
}

/// StopSpec, "execute the post stop when stopping after setup" (and
/// "execute the post stop early", #25096, an actor that is stopped from
/// the start): `stop_self` in `pre_start` stops the actor before any
/// message; `post_stop` runs once, watchers hear of it, and what was sent
/// meanwhile is not handled.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_in_pre_start_runs_post_stop() {
    let system = common::system("stop-in-setup").unwrap();
    let events = TestProbe::<String>::new(&system);
    let props = Subject::props(&events.actor_ref(), |s| s.stop_in_pre_start = true);
    let r = system.spawn_anonymous(props).unwrap();
    r.tell(Cmd::Ping);
    events.watch(&r);
    events.expect_msg("preStart".into());
    events.expect_msg("postStop".into());
    events.expect_terminated(&r);
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// StopSpec, "execute the post stop", and ActorContextSpec, "signal post
/// stop after voluntary termination": a handler stops its actor; the
/// messages before it are handled, those after it are not.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_from_a_handler_runs_post_stop() {
    let system = common::system("stop-in-handler").unwrap();
    let events = TestProbe::<String>::new(&system);
    let r = system
        .spawn_anonymous(Subject::props(&events.actor_ref(), |_| {}))
        .unwrap();
    events.watch(&r);
    events.expect_msg("preStart".into());
    r.tell(Cmd::Ping);
    r.tell(Cmd::Stop);
    r.tell(Cmd::Ping);
    events.expect_msg("pong 1".into());
    events.expect_msg("postStop".into());
    events.expect_terminated(&r);
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// StopSpec, "execute the post stop early", as an outside stop: an actor
/// stopped right after `spawn`, before it can have run, still starts
/// (`pre_start`) and then stops (`post_stop`), once each; the message
/// queued before the stop is not handled (a stop does not wait for it).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_stopped_at_once_starts_and_stops_once() {
    let system = common::system("stop-early").unwrap();
    let events = TestProbe::<String>::new(&system);
    for _ in 0..20 {
        let r = system
            .spawn_anonymous(Subject::props(&events.actor_ref(), |_| {}))
            .unwrap();
        r.tell(Cmd::Ping);
        assert!(system.stop(&r));
        events.watch(&r);
        events.expect_msg("preStart".into());
        // The ping may or may not come first: the stop races the start.
        let first = events.receive_msg();
        if first == "pong 1" {
            events.expect_msg("postStop".into());
        } else {
            assert_eq!(first, "postStop");
        }
        events.expect_terminated(&r);
    }
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// `system.stop` of a top-level actor goes to the actor itself: a second
/// stop while it stops changes nothing (one `post_stop`, one
/// `Terminated`), and a stop after its end answers false.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_top_level_actor_stopped_twice_stops_once() {
    let system = common::system("stop-twice").unwrap();
    let events = TestProbe::<String>::new(&system);
    let r = system
        .spawn_anonymous(Subject::props(&events.actor_ref(), |_| {}))
        .unwrap();
    events.watch(&r);
    events.expect_msg("preStart".into());
    assert!(system.stop(&r));
    // True if it came before the end, false after: either way no effect.
    let _ = system.stop(&r);
    events.expect_msg("postStop".into());
    events.expect_terminated(&r);
    assert!(!system.stop(&r), "a terminated actor was stopped again");
    events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// StopSpec's "stopping after setup", for the setup of a restarted
/// instance: `stop_self` in `post_restart` stops the actor; the new
/// instance's `post_stop` runs once, after the old one's `pre_restart`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_in_post_restart_runs_post_stop() {
    let system = common::system("stop-in-restart").unwrap();
    let events = TestProbe::<String>::new(&system);
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(|_| Directive::Restart),
    );
    let props = Subject::props(&events.actor_ref(), |s| s.stop_in_post_restart = true);
    let r = child(&sup, props).await;
    events.watch(&r);
    events.expect_msg("preStart".into());
    r.tell(Cmd::Fail);
    events.expect_msg("preRestart".into());
    events.expect_msg("postRestart".into());
    events.expect_msg("postStop".into());
    events.expect_terminated(&r);
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// ActorContextSpec, "restart and stop a child actor" and "stop a child
/// actor": a restarted child keeps working; its parent's `stop` ends it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_stops_a_restarted_child() {
    let system = common::system("stop-child").unwrap();
    let events = TestProbe::<String>::new(&system);
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(|_| Directive::Restart),
    );
    let c = child(&sup, Subject::props(&events.actor_ref(), |_| {})).await;
    events.watch(&c);
    events.expect_msg("preStart".into());
    c.tell(Cmd::Fail);
    events.expect_msg("preRestart".into());
    events.expect_msg("postRestart".into());
    c.tell(Cmd::Ping);
    events.expect_msg("pong 1".into());
    let stopped = sup.ask(
        |reply: ReplyTo<bool>| {
            let c = c.clone();
            common::pekko::SupMsg::Run(Box::new(move |ctx| reply.tell(ctx.stop(&c))))
        },
        T,
    );
    assert!(stopped.await.unwrap());
    events.expect_msg("postStop".into());
    events.expect_terminated(&c);
    system.terminate().await;
}

/// ActorContextSpec, "not reset behavior upon resume": the state survives
/// a failure the supervisor resumes.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_keeps_the_state() {
    let system = common::system("resume-state").unwrap();
    let events = TestProbe::<String>::new(&system);
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(|_| Directive::Resume),
    );
    let c = child(&sup, Subject::props(&events.actor_ref(), |_| {})).await;
    events.expect_msg("preStart".into());
    c.tell(Cmd::Ping);
    events.expect_msg("pong 1".into());
    c.tell(Cmd::Fail);
    c.tell(Cmd::Ping);
    events.expect_msg("pong 2".into());
    system.terminate().await;
}

/// ActorContextSpec, "stop upon stop": a failure its supervisor answers
/// with `Stop` ends the actor with `post_stop`, and its watcher hears.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_decided_stop_runs_post_stop() {
    let system = common::system("stop-upon-stop").unwrap();
    let events = TestProbe::<String>::new(&system);
    let sup = supervisor(&system, SupervisorStrategy::stopping());
    let c = child(&sup, Subject::props(&events.actor_ref(), |_| {})).await;
    events.watch(&c);
    events.expect_msg("preStart".into());
    c.tell(Cmd::Ping);
    events.expect_msg("pong 1".into());
    c.tell(Cmd::Fail);
    events.expect_msg("postStop".into());
    events.expect_terminated(&c);
    system.terminate().await;
}

/// ActorContextSpec, "not stop non-child actor": Pekko throws
/// `IllegalArgumentException`; volley's `ctx.stop` answers false and does
/// nothing. Either way the victim lives on, and so does the caller.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_of_a_non_child_does_nothing() {
    let system = common::system("non-child").unwrap();
    let events = TestProbe::<String>::new(&system);
    let victim = system.spawn_anonymous(idle()).unwrap();
    let a = system
        .spawn_anonymous(Subject::props(&events.actor_ref(), |_| {}))
        .unwrap();
    events.expect_msg("preStart".into());
    let v = victim.to_any();
    assert!(!a.ask(|r| Cmd::StopRef(v, r), T).await.unwrap());
    a.tell(Cmd::Ping);
    events.expect_msg("pong 1".into());
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&victim);
    watcher.expect_no_msg(Duration::from_millis(200));
    assert!(!victim.is_terminated());
    system.terminate().await;
}

/// ActorContextSpec, "not have problems stopping already stopped child":
/// the first `stop` stops it; a second while it stops changes nothing
/// (it is still a child, so it may answer true); once the parent has
/// heard of its end, `stop` answers false. The child stops once and the
/// parent carries on.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_stopped_child_again_is_harmless() {
    let system = common::system("stop-twice").unwrap();
    let events = TestProbe::<String>::new(&system);
    let a = system
        .spawn_anonymous(Subject::props(&events.actor_ref(), |_| {}))
        .unwrap();
    events.expect_msg("preStart".into());
    assert_eq!(a.ask(Cmd::Create, T).await.unwrap(), ["B"]);
    let b = a.ask(|r| Cmd::Child("B".into(), r), T).await.unwrap();
    assert_eq!(b, ["B"]);
    let child = system.lookup(&format!("{}/B", a.path())).unwrap().unwrap();
    events.watch(&child);
    let c = child.clone();
    assert!(a.ask(|r| Cmd::StopRef(c, r), T).await.unwrap());
    let c = child.clone();
    a.ask(|r| Cmd::StopRef(c, r), T).await.unwrap();
    events.expect_terminated(&child);
    eventually_async("the stopped child to leave the children", async || {
        a.ask(Cmd::All, T).await.unwrap().is_empty()
    })
    .await;
    let c = child.clone();
    assert!(!a.ask(|r| Cmd::StopRef(c, r), T).await.unwrap());
    events.expect_no_msg(Duration::from_millis(100));
    a.tell(Cmd::Ping);
    events.expect_msg("pong 1".into());
    system.terminate().await;
}

/// ActorContextSpec, "return the right context info": the context names
/// the system and the actor's own ref.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_names_the_system_and_the_actor() {
    let system = common::system("context-info").unwrap();
    let events = TestProbe::<String>::new(&system);
    let a = system
        .spawn_anonymous(Subject::props(&events.actor_ref(), |_| {}))
        .unwrap();
    let (name, me) = a.ask(Cmd::Info, T).await.unwrap();
    assert_eq!(name, system.name());
    assert_eq!(me, a);
    system.terminate().await;
}

/// ActorContextSpec, "return right info about children": `child` finds
/// a child by name (and nothing for another name), `children` lists it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_lists_and_finds_children() {
    let system = common::system("context-children").unwrap();
    let events = TestProbe::<String>::new(&system);
    let a = system
        .spawn_anonymous(Subject::props(&events.actor_ref(), |_| {}))
        .unwrap();
    let created = a.ask(Cmd::Create, T).await.unwrap();
    assert_eq!(created, ["B"]);
    let none = a.ask(|r| Cmd::Child("A".into(), r), T).await.unwrap();
    assert!(none.is_empty());
    assert_eq!(a.ask(Cmd::All, T).await.unwrap(), created);
    system.terminate().await;
}

/// Spawns child `c{n}` for each `n` it is sent and stops it; spawns a new
/// child of that name when it hears of the old one's end.
struct Respawner {
    report: ActorRef<String>,
}

impl Actor for Respawner {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut Context<Self>, n: u32) -> HandleResult {
        // On a pool of its own, so that the child's end and its parent's
        // handling of it run on different threads.
        let props = idle().with_dispatcher(BLOCKING);
        let child = ctx.spawn(&format!("c{n}"), props)?;
        // Both orders: a watch that reaches the child after its stop is
        // answered at its end.
        if n % 2 == 0 {
            ctx.watch(&child);
            ctx.stop(&child);
        } else {
            ctx.stop(&child);
            ctx.watch(&child);
        }
        Ok(())
    }
    fn on_terminated(&mut self, ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        let name = t.actor.path().name().to_string();
        match ctx.spawn(&name, idle()) {
            Ok(_) => self.report.tell(format!("respawned {name}")),
            Err(e) => self.report.tell(format!("{e}")),
        }
        Ok(())
    }
}

/// Reusing a name once its owner has stopped (LocalActorRefProviderSpec's
/// uniqueness rule, and typed's "not throw when spawning with a name
/// already in use after the actor stopped"): a parent that watches its
/// child can spawn a new child of that name as soon as it handles the
/// child's `Terminated`, as in Pekko, where the parent forgets the child
/// before it delivers `Terminated`. Repeated, since a wrong order of the
/// two would show only now and then.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_reuses_a_childs_name_when_it_hears_of_its_end() {
    let settings = with_blocking_pool(volley::Settings::default());
    let system = common::system_with("reuse-on-terminated", settings).unwrap();
    let reports = TestProbe::<String>::new(&system);
    let tx = reports.actor_ref();
    let parent = system
        .spawn_anonymous(Props::new(move || Respawner { report: tx.clone() }))
        .unwrap();
    for n in 0..1000 {
        parent.tell(n);
        reports.expect_msg(format!("respawned c{n}"));
    }
    system.terminate().await;
}
