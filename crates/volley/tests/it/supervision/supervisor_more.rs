//! Cases ported from Pekko's classic `SupervisorSpec` (actor-tests), in
//! volley's API. The spec's `Supervisor`, `PingPongActor` and helpers are
//! in `common::pekko`; `ping` asks for a pong and expects the "ping"
//! report, `kill` makes the actor fail and expects its `post_restart`
//! report. `pekko_supervisor.rs` holds the spec's cases about children
//! kept through a restart, the decider that panics, and pre-creation
//! check failures.
//!
//! Skipped, with the reason:
//! - "treats maxNrOfRetries = -1 as maxNrOfRetries = 1 if withinTimeRange
//!   is non-infinite Duration": volley's limits are explicit counts
//!   (`with_max_restarts(n, window)`, `with_max_restarts_total(n)`, none
//!   for no limit); there is no -1 to interpret.
//! - "log pre-creation check failures" with a mailbox type whose creation
//!   throws: volley's mailbox kinds are fixed, and the one pre-creation
//!   check that can fail (a bounded mailbox of capacity 0) is ported in
//!   `pekko_supervisor.rs` as a spawn error, the form such failures take
//!   in volley.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::pekko::{child, supervisor, PingPong, Pp, SupMsg, EXCEPTION_MESSAGE, T};
use volley::{
    Actor, ActorError, ActorRef, Context, Directive, Failure, FailureKind, HandleResult, Props,
    ReplyTo, SupervisorStrategy, Terminated,
};
use volley_testkit::{actor_fn_with, TestProbe};

const WINDOW: Duration = Duration::from_secs(5);

async fn ping(actor: &ActorRef<Pp>, events: &TestProbe<String>) {
    let pong = actor.ask(|r| Pp::Ping(Some(r)), T).await.unwrap();
    assert_eq!(pong, "pong");
    events.expect_msg("ping".to_string());
}

async fn kill(actor: &ActorRef<Pp>, events: &TestProbe<String>) {
    let answer = actor.ask(Pp::DieReply, T).await.unwrap();
    assert_eq!(answer, Err(EXCEPTION_MESSAGE.to_string()));
    events.expect_msg(EXCEPTION_MESSAGE.to_string()); // from post_restart
}

async fn kill_expect_no_restart(actor: &ActorRef<Pp>, events: &TestProbe<String>) {
    let answer = actor.ask(Pp::DieReply, T).await.unwrap();
    assert_eq!(answer, Err(EXCEPTION_MESSAGE.to_string()));
    events.expect_no_msg(Duration::from_millis(500));
}

/// `OneForOneStrategy(maxNrOfRetries, within)(List(classOf[Exception]))`:
/// restarts on any error, within a limit.
fn one_for_one(max: u32, within: Duration) -> SupervisorStrategy {
    SupervisorStrategy::one_for_one()
        .with_max_restarts(max, within)
        .with_decider(|_| Directive::Restart)
}

fn all_for_one(max: u32, within: Duration) -> SupervisorStrategy {
    SupervisorStrategy::all_for_one()
        .with_max_restarts(max, within)
        .with_decider(|_| Directive::Restart)
}

/// The spec's `Master`: watches its PingPong child and reports its end;
/// no restart allowed.
struct Master {
    events: ActorRef<String>,
    temp: Option<ActorRef<Pp>>,
}

impl Actor for Master {
    type Msg = ();
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let temp = ctx.spawn_anonymous(PingPong::props(&self.events))?;
        ctx.watch(&temp);
        self.temp = Some(temp);
        Ok(())
    }
    fn supervisor_strategy(&self) -> SupervisorStrategy {
        SupervisorStrategy::one_for_one()
            .with_max_restarts_total(0)
            .with_decider(|_| Directive::Restart)
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        if self.temp.as_ref().is_some_and(|c| c.to_any() == t.actor) {
            self.events.tell("terminated".into());
        }
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, _die: ()) -> HandleResult {
        self.temp.as_ref().expect("a child").tell(Pp::Die);
        Ok(())
    }
}

/// SupervisorSpec, "not restart child more times than permitted".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_restart_child_more_times_than_permitted() {
    let system = common::system("sup-permitted").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let master = system
        .spawn(
            "master",
            Props::new(move || Master {
                events: tx.clone(),
                temp: None,
            }),
        )
        .unwrap();
    master.tell(());
    events.expect_msg("terminated".to_string());
    events.expect_no_msg(Duration::from_millis(500));
    system.terminate().await;
}

#[derive(Default)]
struct Counts {
    pre_restarts: usize,
    post_restarts: usize,
    pre_starts: usize,
    post_stops: usize,
}

/// Counts its hooks in state shared by every instance (Pekko's case
/// returns the same instance on each restart).
struct Counted {
    events: ActorRef<String>,
    counts: Arc<Mutex<Counts>>,
}

enum CountedMsg {
    Crash,
    Ping(ReplyTo<&'static str>),
}

impl Actor for Counted {
    type Msg = CountedMsg;
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        let n = {
            let mut c = self.counts.lock().unwrap();
            c.pre_starts += 1;
            c.pre_starts
        };
        self.events.tell(format!("preStart{n}"));
        Ok(())
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<CountedMsg>) {
        let n = {
            let mut c = self.counts.lock().unwrap();
            c.pre_restarts += 1;
            c.pre_restarts
        };
        self.events.tell(format!("preRestart{n}"));
    }
    fn post_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure) -> HandleResult {
        let n = {
            let mut c = self.counts.lock().unwrap();
            c.post_restarts += 1;
            c.post_restarts
        };
        self.events.tell(format!("postRestart{n}"));
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        let n = {
            let mut c = self.counts.lock().unwrap();
            c.post_stops += 1;
            c.post_stops
        };
        self.events.tell(format!("postStop{n}"));
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: CountedMsg) -> HandleResult {
        match msg {
            CountedMsg::Crash => {
                self.events.tell("crashed".into());
                Err(ActorError::new("Expected"))
            }
            CountedMsg::Ping(r) => {
                r.tell("pong");
                Ok(())
            }
        }
    }
}

/// SupervisorSpec, "restart properly when same instance is returned": each
/// restart runs `pre_restart` then `post_restart` (not `pre_start` again);
/// the restart past the limit stops the child with one `post_stop`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_properly_within_the_limit_then_stop() {
    let system = common::system("sup-same-instance").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let master = supervisor(
        &system,
        SupervisorStrategy::one_for_one()
            .with_max_restarts_total(3)
            .with_decider(|_| Directive::Restart),
    );
    let counts = Arc::new(Mutex::new(Counts::default()));
    let c = child(
        &master,
        Props::new(move || Counted {
            events: tx.clone(),
            counts: counts.clone(),
        }),
    )
    .await;
    events.expect_msg("preStart1".to_string());
    assert_eq!(c.ask(CountedMsg::Ping, T).await.unwrap(), "pong");
    for i in 1..=3 {
        c.tell(CountedMsg::Crash);
        events.expect_msg("crashed".to_string());
        events.expect_msg(format!("preRestart{i}"));
        events.expect_msg(format!("postRestart{i}"));
        assert_eq!(c.ask(CountedMsg::Ping, T).await.unwrap(), "pong");
    }
    c.tell(CountedMsg::Crash);
    events.expect_msg("crashed".to_string());
    events.expect_msg("postStop1".to_string());
    events.expect_no_msg(Duration::from_millis(500));
    system.terminate().await;
}

/// SupervisorSpec, "not restart temporary actor" (all-for-one, no restart
/// allowed).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_restart_temporary_actor() {
    let system = common::system("sup-temporary").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, all_for_one(0, WINDOW));
    let temporary = child(&sup, PingPong::props(&tx)).await;
    kill_expect_no_restart(&temporary, &events).await;
    system.terminate().await;
}

/// The spec's `nestedSupervisorsAllForOne`: a top all-for-one supervisor
/// with a PingPong and a middle supervisor that escalates everything
/// (`AllForOneStrategy(...)(Nil)`), itself with two PingPongs.
async fn nested(
    system: &volley::ActorSystem,
    tx: &ActorRef<String>,
) -> (ActorRef<Pp>, ActorRef<Pp>, ActorRef<Pp>) {
    let top = supervisor(system, all_for_one(3, WINDOW));
    let a1 = child(&top, PingPong::props(tx)).await;
    let middle_strategy = all_for_one(3, WINDOW).with_decider(|_| Directive::Escalate);
    let middle: ActorRef<SupMsg> = child(
        &top,
        Props::new(move || common::pekko::Supervisor(middle_strategy.clone())),
    )
    .await;
    let a2 = child(&middle, PingPong::props(tx)).await;
    let a3 = child(&middle, PingPong::props(tx)).await;
    (a1, a2, a3)
}

/// SupervisorSpec, "start server for nested supervisor hierarchy".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_server_for_nested_supervisor_hierarchy() {
    let system = common::system("sup-nested-start").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let (a1, _, _) = nested(&system, &tx).await;
    ping(&a1, &events).await;
    events.expect_no_msg(Duration::from_millis(300));
    system.terminate().await;
}

/// SupervisorSpec, "kill single actor OneForOne" and "call-kill-call single
/// actor OneForOne".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_single_actor_one_for_one() {
    let system = common::system("sup-single-141").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, one_for_one(3, WINDOW));
    let a = child(&sup, PingPong::props(&tx)).await;
    kill(&a, &events).await;
    ping(&a, &events).await;
    kill(&a, &events).await;
    ping(&a, &events).await;
    system.terminate().await;
}

/// SupervisorSpec, "kill single actor AllForOne" and "call-kill-call single
/// actor AllForOne".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_single_actor_all_for_one() {
    let system = common::system("sup-single-afo").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, all_for_one(3, WINDOW));
    let a = child(&sup, PingPong::props(&tx)).await;
    kill(&a, &events).await;
    ping(&a, &events).await;
    kill(&a, &events).await;
    ping(&a, &events).await;
    system.terminate().await;
}

/// SupervisorSpec, "kill multiple actors OneForOne 1", "... 2" and
/// "call-kill-call multiple actors OneForOne": only the failed one restarts.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_multiple_actors_one_for_one() {
    let system = common::system("sup-multi-141").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, one_for_one(3, WINDOW));
    let a1 = child(&sup, PingPong::props(&tx)).await;
    let a2 = child(&sup, PingPong::props(&tx)).await;
    let a3 = child(&sup, PingPong::props(&tx)).await;
    kill(&a1, &events).await;
    kill(&a3, &events).await;
    for a in [&a1, &a2, &a3] {
        ping(a, &events).await;
    }
    kill(&a2, &events).await;
    events.expect_no_msg(Duration::from_millis(200)); // the others did not restart
    for a in [&a1, &a2, &a3] {
        ping(a, &events).await;
    }
    system.terminate().await;
}

/// SupervisorSpec, "kill multiple actors AllForOne" and "call-kill-call
/// multiple actors AllForOne": all three restart.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_multiple_actors_all_for_one() {
    let system = common::system("sup-multi-afo").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, all_for_one(3, WINDOW));
    let a1 = child(&sup, PingPong::props(&tx)).await;
    let a2 = child(&sup, PingPong::props(&tx)).await;
    let a3 = child(&sup, PingPong::props(&tx)).await;
    for a in [&a1, &a2, &a3] {
        ping(a, &events).await;
    }
    kill(&a2, &events).await;
    events.expect_msg(EXCEPTION_MESSAGE.to_string());
    events.expect_msg(EXCEPTION_MESSAGE.to_string());
    for a in [&a1, &a2, &a3] {
        ping(a, &events).await;
    }
    system.terminate().await;
}

/// SupervisorSpec, "one-way kill single actor OneForOne" and "one-way
/// call-kill-call single actor OneForOne": the messages behind the failing
/// one are handled after the restart, in order.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_way_call_kill_call_one_for_one() {
    let system = common::system("sup-one-way").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(&system, one_for_one(3, WINDOW));
    let a = child(&sup, PingPong::props(&tx)).await;
    a.tell(Pp::Die);
    events.expect_msg(EXCEPTION_MESSAGE.to_string());
    a.tell(Pp::Ping(None));
    a.tell(Pp::Die);
    a.tell(Pp::Ping(None));
    events.expect_msg("ping".to_string());
    events.expect_msg(EXCEPTION_MESSAGE.to_string());
    events.expect_msg("ping".to_string());
    system.terminate().await;
}

/// SupervisorSpec, "restart killed actors in nested supervisor hierarchy":
/// the middle supervisor escalates, the top one restarts both its
/// children, and the middle one, keeping its children, restarts them too.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_killed_actors_in_nested_hierarchy() {
    let system = common::system("sup-nested-kill").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let (a1, a2, a3) = nested(&system, &tx).await;
    for a in [&a1, &a2, &a3] {
        ping(a, &events).await;
    }
    kill(&a2, &events).await;
    events.expect_msg(EXCEPTION_MESSAGE.to_string());
    events.expect_msg(EXCEPTION_MESSAGE.to_string());
    events.expect_no_msg(Duration::from_millis(200));
    for a in [&a1, &a2, &a3] {
        ping(a, &events).await;
    }
    system.terminate().await;
}

enum DyingMsg {
    Ping(ReplyTo<&'static str>),
    DieReply(ReplyTo<Result<(), String>>),
}

/// Fails to be created when `init % 3 == 1` (see [`DyingInstance::props`]),
/// panics in `pre_restart` when `init % 3 == 0`.
struct DyingInstance(usize);

impl Actor for DyingInstance {
    type Msg = DyingMsg;
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<DyingMsg>) {
        if self.0 % 3 == 0 {
            panic!("Don't wanna! (on purpose)");
        }
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: DyingMsg) -> HandleResult {
        match msg {
            DyingMsg::Ping(r) => {
                r.tell("pong");
                Ok(())
            }
            DyingMsg::DieReply(r) => {
                r.tell(Err("Expected".into()));
                Err(ActorError::new("Expected"))
            }
        }
    }
}

impl DyingInstance {
    fn props(inits: Arc<AtomicUsize>) -> Props<DyingInstance> {
        Props::new(move || {
            let init = inits.fetch_add(1, Ordering::SeqCst);
            if init % 3 == 1 {
                panic!("Don't wanna! (on purpose)");
            }
            DyingInstance(init)
        })
    }
}

/// SupervisorSpec, "attempt restart when exception during restart": a
/// `pre_restart` that panics is logged and the restart goes on; a
/// constructor that panics fails the restart, and the next attempt
/// succeeds.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempt_restart_when_exception_during_restart() {
    common::quiet_deliberate_panics();
    let system = common::system("sup-restart-exc").unwrap();
    let sup = supervisor(&system, one_for_one(3, Duration::from_secs(10)));
    let inits = Arc::new(AtomicUsize::new(0));
    let dying = child(&sup, DyingInstance::props(inits.clone())).await;
    let answer = dying.ask(DyingMsg::DieReply, T).await.unwrap();
    assert_eq!(answer, Err("Expected".to_string()));
    assert_eq!(dying.ask(DyingMsg::Ping, T).await.unwrap(), "pong");
    assert_eq!(inits.load(Ordering::SeqCst), 3);
    system.terminate().await;
}

/// SupervisorSpec, "supervise exceptions on child actor initialize": a
/// restart after a failed `pre_start` creates a new instance, and the
/// message sent meanwhile is handled by it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supervise_exceptions_on_child_initialize() {
    let system = common::system("sup-child-init").unwrap();
    // Its child fails at creation the first time only.
    let created = Arc::new(AtomicUsize::new(0));
    let init_child = actor_fn_with((), |_, _ctx, reply: ReplyTo<&'static str>| {
        reply.tell("pong");
        Ok(())
    })
    .on_start(
        move |_, _ctx| match created.fetch_add(1, Ordering::SeqCst) {
            0 => Err(ActorError::new("deliberate test failure")),
            _ => Ok(()),
        },
    )
    .props();
    let restart_on_init = SupervisorStrategy::one_for_one().with_decider(|f| match f.kind {
        FailureKind::Initialization(_) => Directive::Restart,
        _ => Directive::Stop,
    });
    let parent = actor_fn_with(None, |child: &mut Option<ActorRef<_>>, _ctx, reply| {
        child.as_ref().expect("a child").tell(reply);
        Ok(())
    })
    .on_start(move |child, ctx| {
        *child = Some(ctx.spawn("child", init_child.clone())?);
        Ok(())
    })
    .with_supervisor_strategy(restart_on_init);
    let parent = system.spawn("parent", parent.props()).unwrap();
    assert_eq!(parent.ask(|r| r, T).await.unwrap(), "pong");
    system.terminate().await;
}

/// SupervisorSpec, "restarts a child infinitely if maxNrOfRetries = -1 and
/// withinTimeRange = Duration.Inf" (volley: no limit).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_a_child_infinitely_without_limit() {
    let system = common::system("sup-infinite").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(|_| Directive::Restart),
    );
    let a = child(&sup, PingPong::props(&tx)).await;
    for _ in 0..7 {
        kill(&a, &events).await;
    }
    ping(&a, &events).await;
    system.terminate().await;
}

/// SupervisorSpec, "treats withinTimeRange = Duration.Inf as a single
/// infinite restart window" (volley: `with_max_restarts_total`).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infinite_window_is_a_total_limit() {
    let system = common::system("sup-inf-window").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one()
            .with_max_restarts_total(3)
            .with_decider(|_| Directive::Restart),
    );
    let a = child(&sup, PingPong::props(&tx)).await;
    for _ in 0..3 {
        kill(&a, &events).await;
    }
    kill_expect_no_restart(&a, &events).await;
    system.terminate().await;
}

/// SupervisorSpec, "respects maxNrOfRetries with withinTimeRange whose
/// toMillis exceeds Int.MaxValue" (OneForOneStrategy and
/// AllForOneStrategy): a 30-day window still limits.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thirty_day_window_still_limits() {
    let system = common::system("sup-30-days").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let month = Duration::from_secs(30 * 24 * 3600);
    for strategy in [one_for_one(2, month), all_for_one(2, month)] {
        let sup = supervisor(&system, strategy);
        let a = child(&sup, PingPong::props(&tx)).await;
        kill(&a, &events).await;
        kill(&a, &events).await;
        kill_expect_no_restart(&a, &events).await;
    }
    system.terminate().await;
}
