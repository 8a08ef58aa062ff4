//! Dispatcher-independent invariants of Pekko's actor model (actor-tests),
//! in volley's API:
//!
//! - `dispatch/ActorModelSpec`: "dynamically handle its own life cycle"
//!   and "not double-deregister" (an actor starts once, stops once),
//!   "process messages one at a time", "handle queueing from multiple
//!   threads", "not process messages for a suspended actor" (a failure
//!   awaiting its supervisor's decision), "handle waves of actors",
//!   "continue to process messages when a thread gets interrupted and
//!   throws an exception", "... when exception is thrown";
//! - `ConsistencySpec`: "provide memory consistency";
//! - `ActorTimeoutSpec`: "use explicitly supplied timeout".
//!
//! The spec's instrumented dispatcher counts registers, unregisters and
//! processed messages; here the subject counts its starts, stops and
//! handler calls, and an in-flight count catches two calls at once. Each
//! ActorModelSpec case runs on the default dispatcher of the kind under
//! test (`#[each_dispatcher]`) and on a one-thread one of that kind.
//!
//! Differences: a failing handler drops the request's reply handle, so
//! its ask fails at once with `ReplyDropped` (Pekko's future stays empty
//! until its timeout); a panic stands for the interrupted thread.
//!
//! Skipped, with the reason:
//! - "... interrupted and doesn't throw an exception": Rust threads have
//!   no interrupt flag.
//! - "use implicitly supplied timeout": volley's `ask` takes its timeout
//!   as an argument. Pekko's `Props.empty` target, in volley, drops the
//!   reply handle: `ReplyDropped` at once (tests/pekko_ask.rs).
//! - The dispatcher shutdown counts (`stops`) and "process messages in
//!   parallel" (see tests/pekko_dispatchers.rs): volley's dispatchers live
//!   as long as their system.
//! - `suspend()`/`resume()` by hand: volley has no such API.

use crate::common;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::eventually;
use common::pekko::{child, with_blocking_pool, Supervisor, BLOCKING, T};
use volley::{
    Actor, ActorError, ActorRef, ActorSystem, AskError, Context, Directive, DispatcherKind,
    DispatcherSettings, Failure, HandleResult, Props, ReplyTo, Settings, SupervisorStrategy,
};

/// A count-down latch whose waits say whether it opened.
#[derive(Clone)]
struct Latch(Arc<(Mutex<usize>, Condvar)>);

impl Latch {
    fn new(count: usize) -> Self {
        Latch(Arc::new((Mutex::new(count), Condvar::new())))
    }
    fn count_down(&self) {
        *self.0 .0.lock().unwrap() -= 1;
        self.0 .1.notify_all();
    }
    fn opens_within(&self, max: Duration) -> bool {
        let n = self.0 .0.lock().unwrap();
        *self.0 .1.wait_timeout_while(n, max, |n| *n > 0).unwrap().0 == 0
    }
    fn opens(&self) -> bool {
        self.opens_within(Duration::from_secs(20))
    }
}

/// Where the subjects run: the default dispatcher, or [`ONE`].
#[derive(Clone, Copy, Debug)]
enum On {
    Default,
    OneThread,
}
const BOTH: [On; 2] = [On::Default, On::OneThread];
/// A dispatcher of one thread, of the kind under test.
const ONE: &str = "one-thread";

fn kind_under_test() -> DispatcherKind {
    volley_testkit::DispatcherUnderTest::get()
}

/// Settings with a dispatcher `name` of the kind under test: `threads`
/// threads (on `app-runtime`: the system runtime's) and `throughput`.
fn with_pool(mut settings: Settings, name: &str, threads: usize, throughput: usize) -> Settings {
    let kind = kind_under_test();
    if kind == DispatcherKind::AppRuntime {
        settings.io_threads = threads;
    }
    let pool = DispatcherSettings {
        kind,
        threads,
        throughput,
        ..Default::default()
    };
    settings.dispatchers.insert(name.into(), pool);
    settings
}

/// A system with the [`BLOCKING`] pool and, `OneThread`, with [`ONE`].
fn system(name: &str, on: On) -> ActorSystem {
    let mut settings = with_blocking_pool(Settings::default());
    if let On::OneThread = on {
        settings = with_pool(settings, ONE, 1, DispatcherSettings::default().throughput);
    }
    common::system_with(&format!("{name}-{on:?}"), settings).unwrap()
}

/// What the subjects count (the spec's `InterceptorStats`): starts,
/// stops, restarts, handler calls, handler calls begun while another was
/// in flight, and (not reported) the calls in flight.
#[derive(Default)]
struct Stats([AtomicU64; 6]);
const IN_FLIGHT: usize = 5;

impl Stats {
    fn bump(&self, i: usize) -> u64 {
        self.0[i].fetch_add(1, SeqCst)
    }
    fn get(&self) -> [u64; 5] {
        std::array::from_fn(|i| self.0[i].load(SeqCst))
    }
}

type Answer = Result<&'static str, &'static str>;

/// The spec's `DispatcherActor`'s messages.
enum M {
    CountDown(Latch),
    AwaitLatch(Latch),
    Wait(Duration),
    /// Sleeps, adds one to `tally[id]`, counts down.
    WaitAck(Duration, Arc<Vec<AtomicU32>>, usize, Latch),
    Reply(&'static str, ReplyTo<Answer>),
    CountDownNStop(Latch),
    DoubleStop,
    /// Answers an error, then panics (the spec's `Interrupt`).
    Interrupt(ReplyTo<Answer>),
    /// Fails; the reply handle is dropped unanswered.
    Fail(ReplyTo<Answer>),
    /// How many messages this instance has handled, this one included.
    Seen(ReplyTo<u64>),
}

struct Model {
    stats: Arc<Stats>,
    seen: u64,
}

/// Leaves the in-flight count when dropped, a panic's unwinding included.
struct InFlight(Arc<Stats>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0 .0[IN_FLIGHT].fetch_sub(1, SeqCst);
    }
}

impl Actor for Model {
    type Msg = M;
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.stats.bump(0);
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.stats.bump(1);
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<M>) {}
    fn post_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure) -> HandleResult {
        self.stats.bump(2);
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, msg: M) -> HandleResult {
        if self.stats.bump(IN_FLIGHT) != 0 {
            self.stats.bump(4);
        }
        let _in_flight = InFlight(self.stats.clone());
        self.stats.bump(3);
        self.seen += 1;
        match msg {
            M::CountDown(latch) => latch.count_down(),
            M::AwaitLatch(latch) => assert!(latch.opens(), "the test never released"),
            M::Wait(d) => std::thread::sleep(d),
            M::WaitAck(d, tally, id, latch) => {
                std::thread::sleep(d);
                tally[id].fetch_add(1, SeqCst);
                latch.count_down();
            }
            M::Reply(text, reply) => reply.tell(Ok(text)),
            M::CountDownNStop(latch) => {
                latch.count_down();
                ctx.stop_self();
            }
            M::DoubleStop => {
                ctx.stop_self();
                ctx.stop_self();
            }
            M::Interrupt(reply) => {
                reply.tell(Err("Ping!"));
                panic!("interrupted on purpose");
            }
            M::Fail(_reply) => return Err(ActorError::new("failing on purpose")),
            M::Seen(reply) => reply.tell(self.seen),
        }
        Ok(())
    }
}

fn model(stats: &Arc<Stats>, on: On) -> Props<Model> {
    let stats = stats.clone();
    let props = Props::new(move || Model {
        stats: stats.clone(),
        seen: 0,
    });
    match on {
        On::Default => props,
        On::OneThread => props.with_dispatcher(ONE),
    }
}

/// A subject under `/user` and its stats.
fn subject(system: &ActorSystem, on: On) -> (Arc<Stats>, ActorRef<M>) {
    let stats = Arc::new(Stats::default());
    (
        stats.clone(),
        system.spawn_anonymous(model(&stats, on)).unwrap(),
    )
}

/// Waits for `actor` to terminate (after its `post_stop`), then checks
/// its [starts, stops, restarts, handler calls, overlapping calls].
fn after_stop(actor: &ActorRef<M>, stats: &Stats, expected: [u64; 5], on: On) {
    eventually("the subject to terminate", || actor.is_terminated());
    assert_eq!(stats.get(), expected, "{on:?}");
}

/// "dynamically handle its own life cycle", "not double-deregister":
/// stopped twice, or stopping itself twice, an actor starts once and
/// stops once; a message after its stop is not handled.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_starts_once_and_stops_once() {
    for on in BOTH {
        let system = system("model-life", on);
        let (stats, a) = subject(&system, on);
        eventually("the subject to start", || stats.get()[0] == 1);
        assert!(system.stop(&a), "{on:?}");
        system.stop(&a);
        after_stop(&a, &stats, [1, 1, 0, 0, 0], on);
        a.tell(M::Wait(Duration::ZERO));
        assert_eq!(stats.get(), [1, 1, 0, 0, 0], "{on:?}");

        let (stats, b) = subject(&system, on);
        b.tell(M::DoubleStop);
        b.tell(M::Wait(Duration::ZERO));
        after_stop(&b, &stats, [1, 1, 0, 1, 0], on);
        system.terminate().await;
    }
}

/// "process messages one at a time": a message queued behind a slow one
/// waits for it, on a pool of many threads as on one.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_handles_one_message_at_a_time() {
    for on in BOTH {
        let system = system("model-one", on);
        let (stats, a) = subject(&system, on);
        let (start, one_at_a_time) = (Latch::new(1), Latch::new(1));
        a.tell(M::CountDown(start.clone()));
        assert!(start.opens(), "{on:?}: the first message");
        assert_eq!(stats.get(), [1, 0, 0, 1, 0], "{on:?}");
        a.tell(M::Wait(Duration::from_millis(300)));
        a.tell(M::CountDown(one_at_a_time.clone()));
        assert!(one_at_a_time.opens(), "{on:?}: the one behind");
        system.stop(&a);
        after_stop(&a, &stats, [1, 1, 0, 3, 0], on);
        system.terminate().await;
    }
}

/// "handle queueing from multiple threads": ten threads tell one actor
/// at once; every message is handled exactly once, one at a time.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_from_many_threads_are_each_handled_once() {
    const THREADS: usize = 10;
    const EACH: usize = 40;
    for on in BOTH {
        let system = system("model-queueing", on);
        let (stats, a) = subject(&system, on);
        let tally: Arc<Vec<_>> = Arc::new((0..THREADS * EACH).map(|_| AtomicU32::new(0)).collect());
        let all = Latch::new(THREADS * EACH);
        let senders: Vec<_> = (0..THREADS)
            .map(|t| {
                let (a, tally, all) = (a.clone(), tally.clone(), all.clone());
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        // Every fourth message sleeps, to widen any overlap.
                        let d = Duration::from_millis((i % 4 == 0) as u64);
                        a.tell(M::WaitAck(d, tally.clone(), t * EACH + i, all.clone()));
                    }
                })
            })
            .collect();
        senders.into_iter().for_each(|s| s.join().unwrap());
        assert!(all.opens(), "{on:?}: all messages handled");
        let counts: Vec<u32> = tally.iter().map(|c| c.load(SeqCst)).collect();
        assert!(counts.iter().all(|&c| c == 1), "{on:?}: {counts:?}");
        system.stop(&a);
        after_stop(&a, &stats, [1, 1, 0, (THREADS * EACH) as u64, 0], on);
        system.terminate().await;
    }
}

/// "not process messages for a suspended actor": while its supervisor's
/// decider holds its failure undecided, the actor handles nothing; once
/// resumed it handles what was queued meanwhile, with its state kept.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_actor_handles_nothing_until_its_supervisor_decides() {
    for on in BOTH {
        let system = system("model-suspended", on);
        let (deciding, release) = (Latch::new(1), Latch::new(1));
        let (d, r) = (deciding.clone(), release.clone());
        let strategy = SupervisorStrategy::one_for_one().with_decider(move |_| {
            d.count_down();
            assert!(r.opens(), "the test never released the decider");
            Directive::Resume
        });
        let sup = Props::new(move || Supervisor(strategy.clone())).with_dispatcher(BLOCKING);
        let sup = system.spawn_anonymous(sup).unwrap();
        let stats = Arc::new(Stats::default());
        let a = child(&sup, model(&stats, on)).await;
        let dropped = Err(AskError::ReplyDropped(a.path().to_string()));
        assert_eq!(a.ask(M::Fail, T).await, dropped, "{on:?}");
        assert!(deciding.opens(), "{on:?}: the decider runs");
        let done = Latch::new(1);
        a.tell(M::CountDown(done.clone()));
        let quiet = Duration::from_millis(500);
        assert!(!done.opens_within(quiet), "{on:?}: handled while suspended");
        assert_eq!(stats.get(), [1, 0, 0, 1, 0], "{on:?}");
        release.count_down();
        assert!(done.opens(), "{on:?}: resumed");
        assert_eq!(a.ask(M::Seen, T).await, Ok(3), "{on:?}: the state is kept");
        system.stop(&a);
        after_stop(&a, &stats, [1, 1, 0, 3, 0], on);
        system.terminate().await;
    }
}

/// The spec's boss: spawns `n` subjects, watches each, tells each to
/// count down and stop, and counts their `Terminated`.
#[derive(Clone)]
struct Boss {
    props: Props<Model>,
    n: usize,
    counted: Latch,
    stopped: Latch,
}

impl Actor for Boss {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<Self>, _run: ()) -> HandleResult {
        for _ in 0..self.n {
            let subject = ctx.spawn_anonymous(self.props.clone())?;
            ctx.watch(&subject);
            subject.tell(M::CountDownNStop(self.counted.clone()));
        }
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: volley::Terminated) -> HandleResult {
        self.stopped.count_down();
        Ok(())
    }
}

/// "handle waves of actors": three waves of short-lived actors, each
/// started once, counted once and stopped once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waves_of_short_lived_actors_are_all_counted() {
    const WAVE: usize = 2000;
    for on in BOTH {
        let system = system("model-waves", on);
        let stats = Arc::new(Stats::default());
        for wave in 1..=3u64 {
            let (counted, stopped) = (Latch::new(WAVE), Latch::new(WAVE));
            let boss = Boss {
                props: model(&stats, on),
                n: WAVE,
                counted: counted.clone(),
                stopped: stopped.clone(),
            };
            let boss = system
                .spawn_anonymous(Props::new(move || boss.clone()))
                .unwrap();
            boss.tell(());
            assert!(counted.opens(), "{on:?}: wave {wave} counted down");
            assert!(stopped.opens(), "{on:?}: wave {wave} stopped");
            let n = wave * WAVE as u64;
            // Shared by thousands of actors, the stats cannot count overlaps.
            assert_eq!(stats.get()[..4], [n, n, 0, n], "{on:?}: wave {wave}");
            system.stop(&boss);
        }
        system.terminate().await;
    }
}

/// "continue to process messages when a thread gets interrupted and
/// throws an exception", "continue to process messages when exception is
/// thrown": a handler that panics or fails is supervised, and the actor
/// handles the messages queued behind it, resumed or restarted, on the
/// same (possibly only) thread.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_handler_does_not_stop_the_messages_behind_it() {
    common::quiet_deliberate_panics();
    for directive in [Directive::Restart, Directive::Resume] {
        for on in BOTH {
            let system = system("model-failing", on);
            let strategy = SupervisorStrategy::one_for_one().with_decider(move |_| directive);
            let sup = Props::new(move || Supervisor(strategy.clone()));
            let sup = system.spawn_anonymous(sup).unwrap();
            let stats = Arc::new(Stats::default());
            let a = child(&sup, model(&stats, on)).await;
            let reply = |text| move |r| M::Reply(text, r);
            // Each ask sends its request when first polled: in this order.
            let (f1, f2, f3, f4, f5, f6) = tokio::join!(
                a.ask(reply("foo"), T),
                a.ask(reply("bar"), T),
                a.ask(M::Interrupt, T),
                a.ask(reply("foo2"), T),
                a.ask(M::Fail, T),
                a.ask(reply("bar2"), T),
            );
            let case = format!("{directive:?} on {on:?}");
            let answered = [Ok("foo"), Ok("bar"), Err("Ping!"), Ok("foo2"), Ok("bar2")];
            assert_eq!([f1, f2, f3, f4, f6], answered.map(Ok), "{case}");
            let dropped = Err(AskError::ReplyDropped(a.path().to_string()));
            assert_eq!(f5, dropped, "{case}");
            // Restarted twice, the last instance has seen "bar2" and this.
            let (seen, restarts) = match directive {
                Directive::Resume => (7, 0),
                _ => (2, 2),
            };
            assert_eq!(a.ask(M::Seen, T).await, Ok(seen), "{case}");
            assert_eq!(stats.get(), [1, 0, restarts, 7, 0], "{case}");
            system.terminate().await;
        }
    }
}

/// ConsistencySpec's actor, in plain fields: two halves that must sum to
/// 42, the last step seen, and how often either check failed.
struct Consistency {
    halves: (i64, i64),
    last_step: i64,
    broken: u64,
}

enum C {
    Step(i64),
    Done(ReplyTo<(u64, i64, (i64, i64))>),
}

impl Actor for Consistency {
    type Msg = C;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: C) -> HandleResult {
        match msg {
            C::Step(step) => {
                self.broken += u64::from(self.last_step != step - 1);
                if self.halves.0 + self.halves.1 == 42 {
                    self.halves = (self.halves.0 + 1, self.halves.1 - 1);
                } else {
                    self.broken += 1;
                }
                self.last_step = step;
            }
            C::Done(reply) => {
                reply.tell((self.broken, self.last_step, self.halves));
                ctx.stop_self();
            }
        }
        Ok(())
    }
}

/// ConsistencySpec "provide memory consistency": more actors than
/// threads, `throughput = 1` so that each message is an activation of its
/// own, free to run on another thread than the one before; every actor
/// sees every step, in order, on the state its previous handler wrote.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_written_by_one_handler_is_seen_by_the_next() {
    const THREADS: usize = 3;
    const STEPS: i64 = 10_000;
    let settings = with_pool(Settings::default(), "consistency", THREADS, 1);
    let system = common::system_with("consistency", settings).unwrap();
    let props = Props::new(|| Consistency {
        halves: (42, 0),
        last_step: -1,
        broken: 0,
    });
    let props = props.with_dispatcher("consistency");
    let actors: Vec<_> = (0..THREADS * 2 + 1)
        .map(|_| system.spawn_anonymous(props.clone()).unwrap())
        .collect();
    for step in 0..STEPS {
        actors.iter().for_each(|a| a.tell(C::Step(step)));
    }
    for a in &actors {
        let report = a.ask(C::Done, Duration::from_secs(120)).await;
        assert_eq!(
            report,
            Ok((0, STEPS - 1, (42 + STEPS, -STEPS))),
            "{}",
            a.path()
        );
    }
    system.terminate().await;
}

/// Awaits `ask`, which must time out after `after`, not before, naming
/// the busy actor.
async fn times_out(
    ask: impl std::future::Future<Output = Result<Answer, AskError>>,
    after: Duration,
) {
    let started = Instant::now();
    match ask.await {
        Err(AskError::Timeout { target, after: a }) => {
            assert!(
                target.ends_with("/user/busy") && a == after,
                "{target} {a:?}"
            );
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let took = started.elapsed();
    assert!(took >= after, "timed out after {took:?} < {after:?}");
    assert!(took < after + Duration::from_secs(10), "{took:?}");
}

/// ActorTimeoutSpec "use explicitly supplied timeout": an ask the target
/// never gets to (it is busy) fails with its own timeout, awaited where
/// it was made or in another task; the target's dispatcher plays no part.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_ask_times_out_with_its_own_timeout() {
    let system = system("model-timeout", On::Default);
    let stats = Arc::new(Stats::default());
    let busy = model(&stats, On::Default).with_dispatcher(BLOCKING);
    let busy = system.spawn("busy", busy).unwrap();
    let release = Latch::new(1);
    busy.tell(M::AwaitLatch(release.clone()));
    let (short, long) = (Duration::from_millis(200), Duration::from_millis(350));
    let elsewhere = busy.clone();
    let elsewhere =
        tokio::spawn(
            async move { times_out(elsewhere.ask(|r| M::Reply("late", r), long), long).await },
        );
    times_out(busy.ask(|r| M::Reply("late", r), short), short).await;
    elsewhere.await.unwrap();
    assert_eq!(stats.get()[3], 1, "the requests are still queued");
    release.count_down();
    system.terminate().await;
}
