//! User code that the runtime runs outside `handle` (supervisor strategies
//! and deciders, lifecycle hooks, `on_terminated`, `keep_for_restart`,
//! batch-end hooks) may panic: the panic is handled as Akka handles an
//! exception there, and the dispatcher thread survives. Every system here has
//! one dispatcher thread, and each test ends by asking an unrelated actor on
//! it: a killed thread would leave that ask unanswered.

use crate::common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{eventually, quiet_deliberate_panics};
use volley::batch_end::{self, BatchEnd};
use volley::{
    Actor, ActorRef, ActorSystem, AnyRef, Context, Directive, DispatcherSettings, Failure,
    HandleResult, Props, Settings, SupervisorStrategy, Terminated, ToAnyRef,
};
use volley_testkit::{actor_fn, TestProbe};

fn one_thread_system(name: &str) -> ActorSystem {
    quiet_deliberate_panics();
    let settings = Settings {
        default_dispatcher: DispatcherSettings {
            threads: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    common::system_with(name, settings).unwrap()
}

/// Skips events until one contains `what`.
fn wait_for(events: &TestProbe<String>, what: &str) -> String {
    loop {
        let e = events.receive_msg();
        if e.contains(what) {
            return e;
        }
    }
}

/// Skips events until each of `all` has been seen, in any order.
fn wait_for_all(events: &TestProbe<String>, all: &[&str]) {
    let mut left: Vec<&str> = all.to_vec();
    while !left.is_empty() {
        let e = events.receive_msg();
        left.retain(|what| !e.contains(what));
    }
}

/// A one-thread system with a recording supervisor `top` under `/user`.
fn with_top(
    name: &str,
) -> (
    ActorSystem,
    ActorRef<Job>,
    ActorRef<String>,
    TestProbe<String>,
) {
    let system = one_thread_system(name);
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let top = system
        .spawn("top", Supervisor::props(Strategy::Recording, &tx))
        .unwrap();
    (system, top, tx, events)
}

/// Waits for the next decision of a recording decider and checks that it
/// mentions each of `parts`.
fn expect_decision(events: &TestProbe<String>, parts: &[&str]) {
    let decided = wait_for(events, "decided on");
    for part in parts {
        assert!(decided.contains(part), "expected {part:?} in {decided:?}");
    }
}

/// Ends a test: the dispatcher thread still serves; then shuts down.
async fn finish(system: ActorSystem) {
    dispatcher_still_serves(&system).await;
    system.terminate().await;
}

/// The dispatcher thread is alive: a fresh actor on it answers.
async fn dispatcher_still_serves(system: &ActorSystem) {
    let echo = system
        .spawn_anonymous(actor_fn(|_, (n, reply): (u32, ActorRef<u32>)| {
            reply.tell(n);
            Ok(())
        }))
        .expect("spawn echo");
    let answer = echo
        .ask(|r| (7, r), Duration::from_secs(5))
        .await
        .expect("the dispatcher thread no longer runs actors");
    assert_eq!(answer, 7);
}

/// Where a [`Fragile`] panics.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PanicIn {
    Nowhere,
    PreStart,
    PreRestart,
    PostRestart,
    PostStop,
    OnTerminated,
}

enum Msg {
    /// Fails the handler with an error (not a panic).
    Fail,
    /// `keep_for_restart` panics on this one.
    PanicInKeep,
    Watch(AnyRef),
    /// Defers a panicking batch-end hook, then one that counts.
    DeferHooks(Arc<AtomicU32>),
    Ping(ActorRef<String>),
}

struct Fragile {
    panic_in: PanicIn,
    events: ActorRef<String>,
}

impl Fragile {
    fn props(panic_in: PanicIn, events: &ActorRef<String>) -> Props<Fragile> {
        let events = events.clone();
        Props::new(move || Fragile {
            panic_in,
            events: events.clone(),
        })
    }

    fn event(&self, ctx: &Context<Self>, what: &str) {
        self.events.tell(format!("{} {what}", ctx.path().name()));
    }
}

impl Actor for Fragile {
    type Msg = Msg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if self.panic_in == PanicIn::PreStart {
            panic!("pre_start on purpose");
        }
        self.event(ctx, "started");
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Fail => return Err("failed on purpose".into()),
            Msg::PanicInKeep => {}
            Msg::Watch(target) => ctx.watch(&target),
            Msg::DeferHooks(count) => {
                assert!(batch_end::defer(|| Arc::new(PanickingHook)));
                assert!(batch_end::defer(|| Arc::new(CountingHook(count))));
            }
            Msg::Ping(reply) => reply.tell(format!("pong from {}", ctx.path().name())),
        }
        Ok(())
    }

    fn pre_restart(&mut self, ctx: &mut Context<Self>, _failure: &Failure, _message: Option<Msg>) {
        if self.panic_in == PanicIn::PreRestart {
            panic!("pre_restart on purpose");
        }
        self.event(ctx, "pre_restart");
    }

    fn post_restart(&mut self, ctx: &mut Context<Self>, _failure: &Failure) -> HandleResult {
        if self.panic_in == PanicIn::PostRestart {
            panic!("post_restart on purpose");
        }
        self.event(ctx, "restarted");
        Ok(())
    }

    fn post_stop(&mut self, ctx: &mut Context<Self>) {
        if self.panic_in == PanicIn::PostStop {
            panic!("post_stop on purpose");
        }
        self.event(ctx, "stopped");
    }

    fn on_terminated(&mut self, ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        if self.panic_in == PanicIn::OnTerminated {
            panic!("on_terminated on purpose");
        }
        self.event(ctx, &format!("saw {} terminate", t.actor.path().name()));
        Ok(())
    }

    fn keep_for_restart(msg: &Msg) -> Option<Msg> {
        if let Msg::PanicInKeep = msg {
            panic!("keep_for_restart on purpose");
        }
        None
    }
}

struct PanickingHook;

impl BatchEnd for PanickingHook {
    fn run(&self) {
        panic!("batch-end hook on purpose");
    }
}

struct CountingHook(Arc<AtomicU32>);

impl BatchEnd for CountingHook {
    fn run(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// How a [`Supervisor`]'s strategy behaves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Strategy {
    /// Records each failure, then applies Akka's default decider.
    Recording,
    /// The decider panics.
    PanickingDecider,
    /// `supervisor_strategy()` itself panics.
    PanickingMethod,
}

type Job = Box<dyn FnOnce(&mut Context<Supervisor>) + Send>;

/// A parent that runs jobs (spawning, watching, stopping children) and
/// reports what its strategy decided and which watched actor terminated.
struct Supervisor {
    strategy: Strategy,
    events: ActorRef<String>,
}

impl Supervisor {
    fn props(strategy: Strategy, events: &ActorRef<String>) -> Props<Supervisor> {
        let events = events.clone();
        Props::new(move || Supervisor {
            strategy,
            events: events.clone(),
        })
    }
}

impl Actor for Supervisor {
    type Msg = Job;

    fn handle(&mut self, ctx: &mut Context<Self>, job: Job) -> HandleResult {
        job(ctx);
        Ok(())
    }

    fn on_terminated(&mut self, ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.events.tell(format!(
            "{} saw {} terminate",
            ctx.path().name(),
            t.actor.path().name()
        ));
        Ok(())
    }

    fn supervisor_strategy(&self) -> SupervisorStrategy {
        match self.strategy {
            Strategy::Recording => {
                let events = self.events.clone();
                SupervisorStrategy::one_for_one().with_decider(move |f| {
                    events.tell(format!("decided on {f}"));
                    SupervisorStrategy::default_decider(f)
                })
            }
            Strategy::PanickingDecider => SupervisorStrategy::one_for_one()
                .with_decider(|_| -> Directive { panic!("decider on purpose") }),
            Strategy::PanickingMethod => panic!("supervisor_strategy on purpose"),
        }
    }
}

/// Spawns `props` as `name` under `parent`, watched by it.
fn spawn_watched<A: Actor>(
    parent: &ActorRef<Job>,
    name: &'static str,
    props: Props<A>,
) -> ActorRef<A::Msg> {
    let (tx, rx) = std::sync::mpsc::channel();
    parent.tell(Box::new(move |ctx: &mut Context<Supervisor>| {
        let child = ctx.spawn(name, props).expect("spawn child");
        ctx.watch(&child);
        tx.send(child).unwrap();
    }));
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the parent did not spawn")
}

async fn ping(actor: &ActorRef<Msg>) -> String {
    actor
        .ask(Msg::Ping, Duration::from_secs(5))
        .await
        .expect("no answer")
}

/// Akka: an exception in the decider fails the supervisor with that
/// exception. Here its own supervisor sees the panic, and the child whose
/// failure could not be decided is stopped rather than left suspended.
async fn supervisor_failure_case(name: &str, strategy: Strategy, text: &str) {
    let (system, top, tx, events) = with_top(name);
    let mid = spawn_watched(&top, "mid", Supervisor::props(strategy, &tx));
    let child = spawn_watched(&mid, "child", Fragile::props(PanicIn::Nowhere, &tx));
    wait_for(&events, "child started");
    child.tell(Msg::Fail);
    expect_decision(&events, &["/user/top/mid panicked", text]);
    eventually("the undecided child stopped", || child.is_terminated());
    // The default decider restarts mid (once its child is gone), which then
    // runs jobs again.
    let (tx2, rx2) = std::sync::mpsc::channel();
    mid.tell(Box::new(move |ctx: &mut Context<Supervisor>| {
        tx2.send(ctx.children().len()).unwrap();
    }));
    assert_eq!(rx2.recv_timeout(Duration::from_secs(10)).unwrap(), 0);
    finish(system).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panicking_decider_fails_the_supervisor() {
    supervisor_failure_case(
        "decider-panic",
        Strategy::PanickingDecider,
        "decider on purpose",
    )
    .await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panicking_supervisor_strategy_fails_the_supervisor() {
    supervisor_failure_case(
        "strategy-panic",
        Strategy::PanickingMethod,
        "supervisor_strategy on purpose",
    )
    .await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_in_pre_start_is_an_initialization_failure() {
    let (system, top, tx, events) = with_top("pre-start-panic");
    let child = spawn_watched(&top, "child", Fragile::props(PanicIn::PreStart, &tx));
    expect_decision(&events, &["child failed to start", "pre_start on purpose"]);
    // The default decider stops an actor that failed to start.
    wait_for(&events, "top saw child terminate");
    assert!(child.is_terminated());
    finish(system).await;
}

/// Akka publishes an exception in `preRestart` as an error and goes on with
/// the restart (it is best-effort), and so does volley.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_in_pre_restart_is_logged_and_the_restart_goes_on() {
    let (system, top, tx, events) = with_top("pre-restart-panic");
    let child = spawn_watched(&top, "child", Fragile::props(PanicIn::PreRestart, &tx));
    wait_for(&events, "child started");
    child.tell(Msg::Fail);
    expect_decision(&events, &["failed on purpose"]);
    // The fresh instance ran post_restart and answers.
    let next = events.receive_msg();
    assert_eq!(
        next, "child restarted",
        "pre_restart's panic stopped the restart"
    );
    assert_eq!(ping(&child).await, "pong from child");
    finish(system).await;
}

/// Akka: an exception in `postRestart` is a PostRestartException, an
/// initialization failure, which the default decider answers with a stop.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_in_post_restart_fails_the_restart_and_stops_the_actor() {
    let (system, top, tx, events) = with_top("post-restart-panic");
    let child = spawn_watched(&top, "child", Fragile::props(PanicIn::PostRestart, &tx));
    wait_for(&events, "child started");
    child.tell(Msg::Fail);
    expect_decision(&events, &["failed on purpose"]);
    expect_decision(
        &events,
        &["child failed to start", "post_restart on purpose"],
    );
    wait_for(&events, "top saw child terminate");
    assert!(child.is_terminated());
    finish(system).await;
}

/// A panic in `post_stop` is logged; the stop completes: watchers get
/// `Terminated` and the parent frees the name.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_in_post_stop_still_completes_the_stop() {
    let (system, top, tx, events) = with_top("post-stop-panic");
    let child = spawn_watched(&top, "child", Fragile::props(PanicIn::PostStop, &tx));
    let other_watcher = spawn_watched(&top, "other", Fragile::props(PanicIn::Nowhere, &tx));
    other_watcher.tell(Msg::Watch(child.to_any_ref()));
    let target = child.clone();
    top.tell(Box::new(move |ctx: &mut Context<Supervisor>| {
        ctx.stop(&target);
    }));
    wait_for_all(
        &events,
        &["top saw child terminate", "other saw child terminate"],
    );
    assert!(child.is_terminated());
    // The parent was told: the name is free again.
    let (tx2, rx2) = std::sync::mpsc::channel();
    let props = Fragile::props(PanicIn::Nowhere, &tx);
    top.tell(Box::new(move |ctx: &mut Context<Supervisor>| {
        tx2.send(ctx.spawn("child", props).is_ok()).unwrap();
    }));
    assert!(rx2.recv_timeout(Duration::from_secs(10)).unwrap());
    finish(system).await;
}

/// A panic in `on_terminated` is a failure of the watcher, like one in a
/// handler: its supervisor decides (by default, a restart).
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_in_on_terminated_is_a_failure_of_the_watcher() {
    let (system, top, tx, events) = with_top("on-terminated-panic");
    let watcher = spawn_watched(&top, "watcher", Fragile::props(PanicIn::OnTerminated, &tx));
    let victim = system
        .spawn("victim", Fragile::props(PanicIn::Nowhere, &tx))
        .unwrap();
    watcher.tell(Msg::Watch(victim.to_any_ref()));
    assert_eq!(ping(&watcher).await, "pong from watcher");
    system.stop(&victim);
    expect_decision(
        &events,
        &["/user/top/watcher panicked: on_terminated on purpose"],
    );
    wait_for(&events, "watcher restarted");
    assert_eq!(ping(&watcher).await, "pong from watcher");
    finish(system).await;
}

/// `keep_for_restart` runs before the handler, on the same message: a panic
/// there is a failure of the handler.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_in_keep_for_restart_is_a_handler_failure() {
    let (system, top, tx, events) = with_top("keep-panic");
    let child = spawn_watched(&top, "child", Fragile::props(PanicIn::Nowhere, &tx));
    child.tell(Msg::PanicInKeep);
    expect_decision(&events, &["child panicked: keep_for_restart on purpose"]);
    wait_for(&events, "child restarted");
    assert_eq!(ping(&child).await, "pong from child");
    finish(system).await;
}

/// A batch-end hook that panics is logged; the hooks after it still run,
/// and the thread keeps running actors.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panicking_batch_end_hook_leaves_the_other_hooks_and_the_thread() {
    let system = one_thread_system("hook-panic");
    let _events = TestProbe::<String>::new(&system);
    let tx = _events.actor_ref();
    let actor = system
        .spawn("deferrer", Fragile::props(PanicIn::Nowhere, &tx))
        .unwrap();
    let count = Arc::new(AtomicU32::new(0));
    actor.tell(Msg::DeferHooks(count.clone()));
    eventually("the hook after the panicking one ran", || {
        count.load(Ordering::SeqCst) == 1
    });
    assert_eq!(ping(&actor).await, "pong from deferrer");
    actor.tell(Msg::DeferHooks(count.clone()));
    eventually("the hooks ran again", || count.load(Ordering::SeqCst) == 2);
    finish(system).await;
}
