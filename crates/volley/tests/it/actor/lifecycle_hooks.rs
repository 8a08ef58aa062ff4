//! Cases ported from Pekko's `ActorLifeCycleSpec` (actor-tests), in
//! volley's API. Pekko's `Kill` is a message that fails the actor here.
//!
//! Ported elsewhere: "not break supervisor strategy due to unhandled
//! exception in preStart" is `pekko_supervisor.rs`'s
//! `an_instance_whose_pre_start_failed_gets_no_other_hook`.
//!
//! Skipped, with the reason:
//! - "have a non null context after termination": a volley `Context` is
//!   borrowed by the handler and cannot be captured by a future that
//!   outlives it, so there is nothing to be null.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::log_capture;
use common::pekko::{child, supervisor, T};
use volley::{
    Actor, ActorError, ActorRef, Context, Directive, Failure, HandleResult, Props, ReplyTo,
    SupervisorStrategy,
};
use volley_testkit::TestProbe;

/// The spec's `LifeCycleTestActor`: reports each hook with its
/// generation (counted across instances).
struct LifeCycle {
    events: ActorRef<String>,
    generation: usize,
}

enum LcMsg {
    Kill,
    Status(ReplyTo<String>),
}

impl LifeCycle {
    fn new(events: &ActorRef<String>) -> impl Fn() -> LifeCycle + Send + Sync + 'static {
        let events = events.clone();
        let generations = Arc::new(AtomicUsize::new(0));
        move || LifeCycle {
            events: events.clone(),
            generation: generations.fetch_add(1, Ordering::SeqCst),
        }
    }

    fn answer(&self, msg: LcMsg) -> HandleResult {
        match msg {
            LcMsg::Kill => Err(ActorError::new("killed")),
            LcMsg::Status(r) => {
                r.tell(format!("OK {}", self.generation));
                Ok(())
            }
        }
    }

    fn report(&self, what: &str) {
        self.events.tell(format!("{what} {}", self.generation));
    }
}

impl Actor for LifeCycle {
    type Msg = LcMsg;
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.report("preStart");
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.report("postStop");
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: LcMsg) -> HandleResult {
        self.answer(msg)
    }
}

/// The same, also reporting `pre_restart` and `post_restart`.
struct Restarter(LifeCycle);

impl Actor for Restarter {
    type Msg = LcMsg;
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.0.report("preStart");
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.0.report("postStop");
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<LcMsg>) {
        self.0.report("preRestart");
    }
    fn post_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure) -> HandleResult {
        self.0.report("postRestart");
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: LcMsg) -> HandleResult {
        self.0.answer(msg)
    }
}

fn three_restarts() -> SupervisorStrategy {
    SupervisorStrategy::one_for_one()
        .with_max_restarts_total(3)
        .with_decider(|_| Directive::Restart)
}

/// ActorLifeCycleSpec, "invoke preRestart, preStart, postRestart when using
/// OneForOneStrategy": each restart runs the old generation's
/// `pre_restart` and the new one's `post_restart`; past the limit the
/// last generation gets `post_stop`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_hooks_run_on_the_right_generation() {
    let system = common::system("lc-restart-hooks").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, three_restarts());
    let make = LifeCycle::new(&tx);
    let restarter = child(&sup, Props::new(move || Restarter(make()))).await;
    events.expect_msg("preStart 0".to_string());
    for gen in 0..3 {
        restarter.tell(LcMsg::Kill);
        events.expect_msg(format!("preRestart {gen}"));
        events.expect_msg(format!("postRestart {}", gen + 1));
        let status = restarter.ask(LcMsg::Status, T).await.unwrap();
        assert_eq!(status, format!("OK {}", gen + 1));
    }
    restarter.tell(LcMsg::Kill);
    events.expect_msg("postStop 3".to_string());
    events.expect_no_msg(Duration::from_millis(300));
    system.terminate().await;
}

/// ActorLifeCycleSpec, "default for preRestart and postRestart is to call
/// postStop and preStart respectively".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_restart_hooks_call_post_stop_and_pre_start() {
    let system = common::system("lc-default-hooks").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, three_restarts());
    let restarter = child(&sup, Props::new(LifeCycle::new(&tx))).await;
    events.expect_msg("preStart 0".to_string());
    for gen in 0..3 {
        restarter.tell(LcMsg::Kill);
        events.expect_msg(format!("postStop {gen}"));
        events.expect_msg(format!("preStart {}", gen + 1));
        let status = restarter.ask(LcMsg::Status, T).await.unwrap();
        assert_eq!(status, format!("OK {}", gen + 1));
    }
    restarter.tell(LcMsg::Kill);
    events.expect_msg("postStop 3".to_string());
    events.expect_no_msg(Duration::from_millis(300));
    system.terminate().await;
}

/// Reports only with the trait's default `pre_restart` and `post_restart`.
struct Plain(ActorRef<String>);
impl Actor for Plain {
    type Msg = ReplyTo<&'static str>;
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.0.tell("preStart".into());
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.0.tell("postStop".into());
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, r: Self::Msg) -> HandleResult {
        r.tell("OK");
        Ok(())
    }
}

/// ActorLifeCycleSpec, "not invoke preRestart and postRestart when never
/// restarted using OneForOneStrategy", with the trait's own defaults.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_restart_hooks_without_a_restart() {
    let system = common::system("lc-never-restarted").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, three_restarts());
    let a = child(&sup, Props::new(move || Plain(tx.clone()))).await;
    events.expect_msg("preStart".to_string());
    assert_eq!(a.ask(|r| r, T).await.unwrap(), "OK");
    assert!(system.stop(&a));
    events.expect_msg("postStop".to_string());
    events.expect_no_msg(Duration::from_millis(300));
    system.terminate().await;
}

struct PanicsInPostStop;
impl Actor for PanicsInPostStop {
    type Msg = ();
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        panic!("hurrah (on purpose)");
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        Ok(())
    }
}

/// ActorLifeCycleSpec, "log failures in postStop": the panic is logged as
/// an error and the stop completes.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_in_post_stop_are_logged() {
    common::quiet_deliberate_panics();
    log_capture::install();
    let name = volley_testkit::DispatcherUnderTest::name("lc-post-stop-logged");
    let system = common::system(&name).unwrap();
    let a = system
        .spawn("hurrah", Props::new(|| PanicsInPostStop))
        .unwrap();
    a.graceful_stop();
    TestProbe::<()>::new(&system).expect_terminated(&a);
    let logged = log_capture::logged(&["hurrah", "post_stop panicked", &name]);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0].level, tracing::Level::ERROR);
    system.terminate().await;
}

/// Answers 42, or 43 once it has switched (Pekko's `become`).
struct Switching {
    switched: bool,
}

enum SwMsg {
    Become(ReplyTo<&'static str>),
    Fail,
    Hello(ReplyTo<u32>),
}

impl Actor for Switching {
    type Msg = SwMsg;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: SwMsg) -> HandleResult {
        match msg {
            SwMsg::Become(r) => {
                self.switched = true;
                r.tell("ok");
            }
            SwMsg::Fail if self.switched => return Err(ActorError::new("buh")),
            SwMsg::Fail => {}
            SwMsg::Hello(r) => r.tell(if self.switched { 43 } else { 42 }),
        }
        Ok(())
    }
}

/// ActorLifeCycleSpec, "clear the behavior stack upon restart": volley has
/// no behavior stack; the state a handler switched is the instance's, and
/// a restart starts over from the props.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_clears_what_the_handler_switched() {
    let system = common::system("lc-clear-behavior").unwrap();
    let a = system
        .spawn("a", Props::new(|| Switching { switched: false }))
        .unwrap();
    assert_eq!(a.ask(SwMsg::Hello, T).await.unwrap(), 42);
    assert_eq!(a.ask(SwMsg::Become, T).await.unwrap(), "ok");
    assert_eq!(a.ask(SwMsg::Hello, T).await.unwrap(), 43);
    a.tell(SwMsg::Fail);
    assert_eq!(a.ask(SwMsg::Hello, T).await.unwrap(), 42);
    system.terminate().await;
}
