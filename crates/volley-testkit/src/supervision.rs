//! [`SupervisorProbe`]: a parent that records what happens to its children.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use volley::{
    Actor, ActorRef, ActorSystem, AnyRef, Context, Directive, Failure, FailureKind, HandleResult,
    LifecycleEvent, LifecycleKind, Props, SupervisorStrategy, ToAnyRef,
};

use crate::wait::{implicit_timeout, spawn_forwarder, Inbox, Limit};

/// What kind of failure a child had (volley's `FailureKind`, without the
/// error value, which cannot be copied out of the decider).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureSort {
    /// A handler or hook returned an error.
    Error,
    /// A handler or hook panicked.
    Panic,
    /// `pre_start` or `post_restart` failed.
    Initialization,
    /// An unhandled `Terminated`.
    DeathPact,
    /// A grandchild's failure that the child escalated.
    Escalated,
}

/// A child's failure as its supervisor saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaughtFailure {
    /// The failed actor's path.
    pub actor: String,
    /// What kind of failure.
    pub sort: FailureSort,
    /// The failure as volley displays it (names the error or panic text).
    pub message: String,
    /// What the decider answered. A restart past the restart limit still
    /// reads `Restart` here; the child's `Stopped` event follows.
    pub directive: Directive,
}

impl CaughtFailure {
    fn of(failure: &Failure, directive: Directive) -> Self {
        let sort = match failure.kind {
            FailureKind::Error(_) => FailureSort::Error,
            FailureKind::Panic(_) => FailureSort::Panic,
            FailureKind::Initialization(_) => FailureSort::Initialization,
            FailureKind::DeathPact(_) => FailureSort::DeathPact,
            FailureKind::Escalated(_) => FailureSort::Escalated,
        };
        CaughtFailure {
            actor: failure.actor.clone(),
            sort,
            message: failure.to_string(),
            directive,
        }
    }
}

/// What a [`SupervisorProbe`] records, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisionEvent {
    /// A child failed and the decider chose a directive.
    Failed(CaughtFailure),
    /// A child's `pre_start` succeeded (the first time; `spawn` waits for
    /// it and does not record it).
    Started(String),
    /// A child was restarted.
    Restarted(String),
    /// A child terminated.
    Stopped(String),
}

impl fmt::Display for SupervisionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SupervisionEvent::Failed(c) => write!(f, "Failed({}, {:?})", c.message, c.directive),
            SupervisionEvent::Started(a) => write!(f, "Started({a})"),
            SupervisionEvent::Restarted(a) => write!(f, "Restarted({a})"),
            SupervisionEvent::Stopped(a) => write!(f, "Stopped({a})"),
        }
    }
}

type Decider = Arc<dyn Fn(&Failure) -> Directive + Send + Sync>;

/// The strategy's parts; read at every failure, so changes apply at once.
#[derive(Clone)]
struct Config {
    decider: Decider,
    limit: Option<(u32, Option<Duration>)>,
}

type Command = Box<dyn FnOnce(&mut Context<Parent>) + Send>;

struct Parent {
    tx: Sender<SupervisionEvent>,
    config: Arc<Mutex<Config>>,
}

impl Actor for Parent {
    type Msg = Command;

    fn handle(&mut self, ctx: &mut Context<Self>, command: Command) -> HandleResult {
        command(ctx);
        Ok(())
    }

    fn supervisor_strategy(&self) -> SupervisorStrategy {
        let config = self
            .config
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let tx = self.tx.clone();
        let strategy = SupervisorStrategy::one_for_one().with_decider(move |failure| {
            let directive = (config.decider)(failure);
            let caught = CaughtFailure::of(failure, directive);
            let _ = tx.send(SupervisionEvent::Failed(caught));
            directive
        });
        match config.limit {
            Some((max, Some(window))) => strategy.with_max_restarts(max, window),
            Some((max, None)) => strategy.with_max_restarts_total(max),
            None => strategy,
        }
    }
}

/// A supervising parent for the actors under test, recording each child's
/// failures (with the directive its decider chose), restarts and stops, for
/// the test to assert on in order.
///
/// The strategy is one-for-one with volley's default decider and no restart
/// limit unless [`SupervisorProbe::with_decider`] or a restart limit says
/// otherwise. Restarts and stops come from the event stream's
/// `LifecycleEvent`s, failures from the decider: failure, then its
/// consequence, in that order. Expectations wait like a
/// [`TestProbe`](crate::TestProbe)'s and panic naming what came instead.
pub struct SupervisorProbe {
    system: ActorSystem,
    parent: ActorRef<Command>,
    /// The lifecycle subscriber.
    lifecycle: ActorRef<LifecycleEvent>,
    config: Arc<Mutex<Config>>,
    inbox: Inbox<SupervisionEvent>,
    /// Children whose first failure `spawn` saw before their `Started`:
    /// that `Started` (not recorded, as `spawn` says) may still come, later,
    /// since it travels through the event stream and failures do not.
    late_starts: Mutex<Vec<String>>,
}

impl SupervisorProbe {
    /// A new supervising parent under `/user` (named
    /// `test-supervisor-N`). Panics if the system is terminating.
    #[track_caller]
    pub fn new(system: &ActorSystem) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let name = format!("test-supervisor-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = channel();
        let config = Arc::new(Mutex::new(Config {
            decider: Arc::new(SupervisorStrategy::default_decider),
            limit: None,
        }));
        let (ptx, pconfig) = (tx.clone(), config.clone());
        let parent = system
            .spawn(
                &name,
                Props::new(move || Parent {
                    tx: ptx.clone(),
                    config: pconfig.clone(),
                }),
            )
            .unwrap_or_else(|e| panic!("cannot spawn the supervisor probe {name:?}: {e}"));
        let children = format!("{}/", parent.path());
        let lifecycle = spawn_forwarder(system, None, tx, move |e: LifecycleEvent| {
            let name = e.actor.strip_prefix(&children)?;
            if name.contains('/') {
                return None;
            }
            Some(match e.kind {
                LifecycleKind::Started => SupervisionEvent::Started(e.actor),
                LifecycleKind::Restarted => SupervisionEvent::Restarted(e.actor),
                LifecycleKind::Stopped => SupervisionEvent::Stopped(e.actor),
            })
        })
        .unwrap_or_else(|e| panic!("cannot spawn the supervisor probe's listener: {e}"));
        system.event_stream().subscribe(lifecycle.clone());
        SupervisorProbe {
            system: system.clone(),
            parent,
            lifecycle,
            config,
            inbox: Inbox::new(rx),
            late_starts: Mutex::new(Vec::new()),
        }
    }

    /// Decides with `decider` from now on (recording what it answers).
    pub fn with_decider(
        self,
        decider: impl Fn(&Failure) -> Directive + Send + Sync + 'static,
    ) -> Self {
        self.update(|c| c.decider = Arc::new(decider));
        self
    }

    /// At most `max` restarts of a child within `window`
    /// (`SupervisorStrategy::with_max_restarts`).
    pub fn with_max_restarts(self, max: u32, window: Duration) -> Self {
        self.update(|c| c.limit = Some((max, Some(window))));
        self
    }

    /// At most `max` restarts of a child in all
    /// (`SupervisorStrategy::with_max_restarts_total`).
    pub fn with_max_restarts_total(self, max: u32) -> Self {
        self.update(|c| c.limit = Some((max, None)));
        self
    }

    fn update(&self, change: impl FnOnce(&mut Config)) {
        change(&mut self.config.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The supervising parent.
    pub fn parent(&self) -> AnyRef {
        self.parent.to_any()
    }

    /// Spawns a child of the supervising parent and waits until it has
    /// started: its `pre_start` ran (that `Started` is not recorded), or it
    /// failed, and the failure is the next event to expect. Panics if the
    /// spawn is refused or the child neither starts nor fails in time.
    #[track_caller]
    pub fn spawn<A: Actor>(&self, name: &str, props: Props<A>) -> ActorRef<A::Msg> {
        let (tx, rx) = channel();
        let child_name = name.to_string();
        self.parent.tell(Box::new(move |ctx: &mut Context<Parent>| {
            let _ = tx.send(ctx.spawn(&child_name, props));
        }));
        let limit = implicit_timeout();
        let child = match crate::wait::blocking(|| rx.recv_timeout(limit.time)) {
            Ok(Ok(child)) => child,
            Ok(Err(e)) => panic!("cannot spawn {name:?} under the supervisor probe: {e}"),
            Err(_) => panic!("the supervisor probe did not spawn {name:?} within {limit}"),
        };
        self.await_start(&child.path().to_string(), limit);
        child
    }

    #[track_caller]
    fn await_start(&self, child: &str, limit: Limit) {
        let deadline = Instant::now() + limit.time;
        let mut others = Vec::new();
        loop {
            match self.inbox.next_by(deadline) {
                Some(SupervisionEvent::Started(a)) if a == child => break,
                Some(SupervisionEvent::Failed(f)) if f.actor == child => {
                    others.push(SupervisionEvent::Failed(f));
                    lock_late(&self.late_starts).push(child.to_string());
                    break;
                }
                Some(other) => others.push(other),
                None => {
                    self.inbox.hold(others);
                    panic!("{child} neither started nor failed within {limit}");
                }
            }
        }
        self.inbox.hold(others);
    }

    /// The next event, whatever it is.
    #[track_caller]
    pub fn next_event(&self) -> SupervisionEvent {
        self.next_in(implicit_timeout(), "an event")
    }

    /// Asserts that the next event is a failure, and returns it.
    #[track_caller]
    pub fn expect_failure(&self) -> CaughtFailure {
        self.expect_failure_in(implicit_timeout())
    }

    /// [`SupervisorProbe::expect_failure`] waiting at most `max`.
    #[track_caller]
    pub fn expect_failure_within(&self, max: Duration) -> CaughtFailure {
        self.expect_failure_in(Limit::given(max))
    }

    #[track_caller]
    fn expect_failure_in(&self, limit: Limit) -> CaughtFailure {
        match self.next_in(limit, "a failure") {
            SupervisionEvent::Failed(f) => f,
            other => panic!("expected a failure, got {other}"),
        }
    }

    /// Asserts that the next event is `child`'s restart.
    #[track_caller]
    pub fn expect_restart(&self, child: &impl ToAnyRef) {
        let path = child.to_any_ref().path().to_string();
        self.expect(SupervisionEvent::Restarted(path));
    }

    /// Asserts that the next event is `child`'s end.
    #[track_caller]
    pub fn expect_stop(&self, child: &impl ToAnyRef) {
        let path = child.to_any_ref().path().to_string();
        self.expect(SupervisionEvent::Stopped(path));
    }

    /// Asserts that the next event is `expected`.
    #[track_caller]
    pub fn expect(&self, expected: SupervisionEvent) {
        let got = self.next_in(implicit_timeout(), &expected.to_string());
        assert!(got == expected, "expected {expected}, got {got}");
    }

    /// Asserts that nothing happens to any child for `d`.
    #[track_caller]
    pub fn expect_no_event(&self, d: Duration) {
        if let Some(event) = self.next_by(Instant::now() + d) {
            panic!("expected no supervision event for {d:?}, got {event}");
        }
    }

    #[track_caller]
    fn next_in(&self, limit: Limit, what: &str) -> SupervisionEvent {
        match self.next_by(Instant::now() + limit.time) {
            Some(event) => event,
            None => panic!("expected {what}, but nothing happened within {limit}"),
        }
    }

    /// The next event by `deadline`, less a `Started` that `spawn` has
    /// already accounted for.
    fn next_by(&self, deadline: Instant) -> Option<SupervisionEvent> {
        loop {
            let event = self.inbox.next_by(deadline)?;
            if let SupervisionEvent::Started(actor) = &event {
                let mut late = lock_late(&self.late_starts);
                if let Some(at) = late.iter().position(|a| a == actor) {
                    late.swap_remove(at);
                    continue;
                }
            }
            return Some(event);
        }
    }
}

impl Drop for SupervisorProbe {
    fn drop(&mut self) {
        self.system.event_stream().unsubscribe(&self.lifecycle);
        self.system.stop(&self.lifecycle);
        self.system.stop(&self.parent);
    }
}

impl fmt::Debug for SupervisorProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SupervisorProbe({})", self.parent.path())
    }
}

fn lock_late(late: &Mutex<Vec<String>>) -> std::sync::MutexGuard<'_, Vec<String>> {
    late.lock().unwrap_or_else(|e| e.into_inner())
}
