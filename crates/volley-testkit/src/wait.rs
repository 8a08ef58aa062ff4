//! Waiting for what actors report: the channel behind every probe, the
//! default timeout and the deadline of [`within`].

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, SpawnError};

/// `VOLLEY_TEST_TIME_FACTOR` when it is set to a positive number, else 1:
/// how much slower than a quiet machine the tests may run.
fn time_factor() -> f64 {
    static FACTOR: OnceLock<f64> = OnceLock::new();
    *FACTOR.get_or_init(|| {
        std::env::var("VOLLEY_TEST_TIME_FACTOR")
            .ok()
            .and_then(|f| f.parse::<f64>().ok())
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(1.0)
    })
}

/// What an expectation waits at most when it is given no timeout and runs
/// outside [`within`]: 5 s, times `VOLLEY_TEST_TIME_FACTOR` when that is
/// set (a loaded CI machine may want 2 or 3). A passing expectation waits
/// only until its message is there, so a long default costs only failing
/// tests.
pub fn default_timeout() -> Duration {
    dilated(Duration::from_secs(5))
}

/// `d` times `VOLLEY_TEST_TIME_FACTOR` (Akka's `dilated`). The testkit
/// scales only its defaults ([`default_timeout`], the window of
/// [`TestProbe::expect_no_msg_default`](crate::TestProbe::expect_no_msg_default));
/// a duration the test passes (to `within`, `expect_no_msg`, the
/// `_within` variants) is taken as it is, so scale it with this where a
/// slow machine should get more time.
pub fn dilated(d: Duration) -> Duration {
    d.mul_f64(time_factor())
}

/// The window of `expect_no_msg_default`: 100 ms, dilated (Akka Typed's
/// `expect-no-message-default`).
pub(crate) fn no_msg_window() -> Duration {
    dilated(Duration::from_millis(100))
}

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs `block` and asserts it finished within `max` (Akka's `within`).
/// Expectations inside that take no explicit timeout wait only for the time
/// left, so a slow block fails where it is slow. Nested blocks get at most
/// what the outer one has left ([`remaining`] reads what is left). The
/// deadline is per thread: it applies to every probe the block uses.
/// Unlike Akka, `max` is not dilated: write `within(dilated(max), ..)`
/// for that (see [`dilated`]).
#[track_caller]
pub fn within<R>(max: Duration, block: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let outer = DEADLINE.with(Cell::get);
    let max = match outer {
        Some(deadline) => max.min(deadline.saturating_duration_since(start)),
        None => max,
    };
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(outer);
    DEADLINE.with(|d| d.set(Some(start + max)));
    let out = block();
    let took = start.elapsed();
    assert!(
        took <= max,
        "the block took {took:?}, longer than its `within` limit of {max:?}"
    );
    out
}

/// The time left in the enclosing [`within`] block (Akka's `remaining`):
/// zero once its deadline has passed. Panics outside `within`, where
/// there is no deadline to speak of; see [`remaining_or_default`].
#[track_caller]
pub fn remaining() -> Duration {
    match DEADLINE.with(Cell::get) {
        Some(deadline) => deadline.saturating_duration_since(Instant::now()),
        None => panic!("`remaining` may only be called inside `within`"),
    }
}

/// The time left in the enclosing [`within`] block, or the
/// [`default_timeout`] outside one (Akka's `remainingOrDefault`): what an
/// expectation given no timeout would wait now. Handy for a `_within`
/// variant or an `ask` timeout that should follow the same limit.
pub fn remaining_or_default() -> Duration {
    implicit_timeout().time
}

/// Runs `check` until it returns without panicking, trying every 100 ms
/// for at most the default timeout or what is left of [`within`] (Akka's
/// `awaitAssert`); returns what it returned. `check` holds ordinary
/// `assert!`s. If it still panics at the deadline, the test fails with its
/// last panic message. The failed tries' messages are printed like any
/// panic's (the test harness captures them for a passing test).
#[track_caller]
pub fn await_assert<R>(check: impl FnMut() -> R) -> R {
    await_assert_in(implicit_timeout(), check)
}

/// [`await_assert`] trying for at most `max`.
#[track_caller]
pub fn await_assert_within<R>(max: Duration, check: impl FnMut() -> R) -> R {
    await_assert_in(Limit::given(max), check)
}

#[track_caller]
fn await_assert_in<R>(limit: Limit, mut check: impl FnMut() -> R) -> R {
    let deadline = Instant::now() + limit.time;
    loop {
        let err = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut check)) {
            Ok(out) => return out,
            Err(err) => err,
        };
        let now = Instant::now();
        if now >= deadline {
            let text = err
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| err.downcast_ref::<&str>().copied())
                .unwrap_or("a panic without a message");
            panic!("still failing after {limit}: {text}");
        }
        let pause = Duration::from_millis(100).min(deadline - now);
        blocking(|| std::thread::sleep(pause));
    }
}

/// Waits until `cond` holds, looking every 10 ms (Akka's `awaitCond`), for
/// at most the default timeout or what is left of [`within`]; panics
/// naming `what` if it never holds. For state that no probe hears about:
/// a counter, a flag, a ref's `is_terminated()`.
#[track_caller]
pub fn await_cond(what: &str, cond: impl FnMut() -> bool) {
    await_cond_in(implicit_timeout(), what, cond)
}

/// [`await_cond`] waiting for at most `max`.
#[track_caller]
pub fn await_cond_within(max: Duration, what: &str, cond: impl FnMut() -> bool) {
    await_cond_in(Limit::given(max), what, cond)
}

#[track_caller]
fn await_cond_in(limit: Limit, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit.time;
    blocking(|| loop {
        if cond() {
            return;
        }
        let now = Instant::now();
        if now >= deadline {
            panic!("timed out after {limit} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(10).min(deadline - now));
    })
}

/// The timeout of an expectation given none, and how to name it.
pub(crate) fn implicit_timeout() -> Limit {
    match DEADLINE.with(Cell::get) {
        Some(deadline) => Limit {
            time: deadline.saturating_duration_since(Instant::now()),
            in_within: true,
        },
        None => Limit {
            time: default_timeout(),
            in_within: false,
        },
    }
}

/// How long an expectation waits.
#[derive(Clone, Copy)]
pub(crate) struct Limit {
    pub(crate) time: Duration,
    /// Set by [`within`]: the failure names that.
    pub(crate) in_within: bool,
}

impl Limit {
    pub(crate) fn given(time: Duration) -> Self {
        Limit {
            time,
            in_within: false,
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.in_within {
            write!(f, "{:?} (the time left in `within`)", self.time)
        } else {
            write!(f, "{:?}", self.time)
        }
    }
}

/// A channel that actors report into and the test reads with timeouts.
/// Not `Sync`: one test thread reads it.
pub(crate) struct Inbox<T> {
    rx: Receiver<T>,
    /// Taken from the channel but not consumed yet.
    held: RefCell<VecDeque<T>>,
}

impl<T> Inbox<T> {
    pub(crate) fn new(rx: Receiver<T>) -> Self {
        Inbox {
            rx,
            held: RefCell::new(VecDeque::new()),
        }
    }

    /// The next item, waiting until `deadline`; `None` if none came.
    pub(crate) fn next_by(&self, deadline: Instant) -> Option<T> {
        if let Some(item) = self.held.borrow_mut().pop_front() {
            return Some(item);
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        // Every sender gone means nothing more can come: the same to a test
        // as nothing coming in time.
        blocking(|| self.rx.recv_timeout(wait)).ok()
    }

    /// The next item within `limit`.
    pub(crate) fn next_within(&self, limit: Limit) -> Option<T> {
        self.next_by(Instant::now() + limit.time)
    }

    /// Puts `items` back in front, in their order, for the next reads.
    pub(crate) fn hold(&self, items: Vec<T>) {
        let mut held = self.held.borrow_mut();
        for item in items.into_iter().rev() {
            held.push_front(item);
        }
    }
}

/// Runs a blocking wait. On a multi-thread tokio runtime (an async test)
/// the runtime is told, so that it moves its other tasks off this thread:
/// actors on an `app-runtime` dispatcher of the test's own runtime keep
/// running while the test waits for them.
pub(crate) fn blocking<R>(wait: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) if rt.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

type Map<T, E> = Arc<dyn Fn(T) -> Option<E> + Send + Sync>;

/// An actor that maps each message it gets and reports the result into a
/// channel; what a probe's ref points at.
struct Forwarder<T, E> {
    tx: Sender<E>,
    map: Map<T, E>,
}

/// Spawns a [`Forwarder`] named `name` (a generated name if `None`).
pub(crate) fn spawn_forwarder<T: Send + 'static, E: Send + 'static>(
    system: &ActorSystem,
    name: Option<&str>,
    tx: Sender<E>,
    map: impl Fn(T) -> Option<E> + Send + Sync + 'static,
) -> Result<ActorRef<T>, SpawnError> {
    let map: Map<T, E> = Arc::new(map);
    let props = Props::new(move || Forwarder {
        tx: tx.clone(),
        map: map.clone(),
    });
    match name {
        Some(name) => system.spawn(name, props),
        None => system.spawn_anonymous(props),
    }
}

impl<T: Send + 'static, E: Send + 'static> Actor for Forwarder<T, E> {
    type Msg = T;

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: T) -> HandleResult {
        if let Some(event) = (self.map)(msg) {
            // The test may have dropped its probe: then nobody listens.
            let _ = self.tx.send(event);
        }
        Ok(())
    }
}

/// What a waited-for condition returns: `bool`, done when `true`, or
/// `Option<T>`, done when `Some`, whose value the wait then returns (the
/// reply handle an actor handed out, the listing that finally came).
pub trait Condition {
    /// What the wait returns once the condition holds.
    type Output;
    /// `Some` once the condition holds.
    fn holds(self) -> Option<Self::Output>;
}

impl Condition for bool {
    type Output = ();
    fn holds(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Condition for Option<T> {
    type Output = T;
    fn holds(self) -> Option<T> {
        self
    }
}

/// [`await_cond`] for async tests: waits until `cond` holds (returns
/// `true`, or `Some`, whose value it returns), looking every 10 ms without
/// blocking the runtime's thread, for at most the default timeout
/// (dilated); panics naming `what` if it never holds. For state no probe
/// hears about, on a runtime that must keep running meanwhile (a remote
/// node's tasks, a metric sampled by a task). A condition that must itself
/// await (an `ask`) takes [`eventually_async`].
#[track_caller]
pub fn eventually<'a, C: Condition + 'a>(
    what: &'a str,
    cond: impl FnMut() -> C + 'a,
) -> impl std::future::Future<Output = C::Output> + 'a {
    eventually_within(default_timeout(), what, cond)
}

/// [`eventually`] waiting for at most `max` (taken as it is, like every
/// duration a test passes).
#[track_caller]
pub fn eventually_within<'a, C: Condition + 'a>(
    max: Duration,
    what: &'a str,
    mut cond: impl FnMut() -> C + 'a,
) -> impl std::future::Future<Output = C::Output> + 'a {
    eventually_async_within(max, what, move || std::future::ready(cond()))
}

/// [`eventually`] for a condition that awaits: `cond` is an async closure
/// (`async || probe_target.ask(Get, t).await.ok()`), called again 10 ms
/// after each try that does not hold, until the default timeout (dilated);
/// panics naming `what` if it never holds. A try still running at the
/// deadline is dropped, so a stuck `ask` cannot outlast the wait.
#[track_caller]
pub fn eventually_async<'a, C: Condition + 'a>(
    what: &'a str,
    cond: impl AsyncFnMut() -> C + 'a,
) -> impl std::future::Future<Output = C::Output> + 'a {
    eventually_async_within(default_timeout(), what, cond)
}

/// [`eventually_async`] waiting for at most `max` (taken as it is, like
/// every duration a test passes).
#[track_caller]
pub fn eventually_async_within<'a, C: Condition + 'a>(
    max: Duration,
    what: &'a str,
    mut cond: impl AsyncFnMut() -> C + 'a,
) -> impl std::future::Future<Output = C::Output> + 'a {
    let caller = std::panic::Location::caller();
    async move {
        let deadline = Instant::now() + max;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // A zero `left` still polls the try once before it times out.
            if let Ok(outcome) = tokio::time::timeout(left, cond()).await {
                if let Some(out) = outcome.holds() {
                    return out;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                panic!("timed out after {max:?} waiting for {what} (at {caller})");
            }
            tokio::time::sleep(Duration::from_millis(10).min(deadline - now)).await;
        }
    }
}
