//! [`TestProbe`]: an actor ref whose messages the test reads and asserts on.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use volley::{
    Actor, ActorRef, ActorSystem, AnyRef, Context, HandleResult, Props, Terminated, ToAnyRef,
};

use crate::pilot::{AutoPilot, Ignore, Pilot};
use crate::wait::{implicit_timeout, Inbox, Limit};

/// What a probe received: a message sent to its ref, or the end of an actor
/// it watches.
enum Event<M> {
    Msg(M),
    Terminated(AnyRef),
}

impl<M: fmt::Debug> fmt::Display for Event<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Msg(m) => write!(f, "{m:?}"),
            Event::Terminated(actor) => write!(f, "Terminated({})", actor.path()),
        }
    }
}

/// What a [`TestProbe::fish_for`] fisher says about one message. A `bool`
/// converts: `true` is `Complete`, `false` is `ContinueAndIgnore`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FishingOutcome {
    /// This is the message fished for: stop and return the kept messages.
    Complete,
    /// Keep this message and fish on.
    Continue,
    /// Drop this message and fish on.
    ContinueAndIgnore,
    /// Fail the test with this reason.
    Fail(String),
}

impl From<bool> for FishingOutcome {
    fn from(done: bool) -> Self {
        if done {
            FishingOutcome::Complete
        } else {
            FishingOutcome::ContinueAndIgnore
        }
    }
}

/// What a probe's actor takes: the messages under test (through the
/// adapter the probe hands out as its ref), and the test's requests.
/// One actor does both, so a `Terminated` reaches the test behind the
/// messages the dead actor sent the probe, as with Akka's TestProbe.
pub(crate) enum ProbeMsg<M> {
    Msg(M),
    Watch(AnyRef),
    Unwatch(AnyRef),
    Pilot(Option<Pilot<M>>),
    Ignore(Option<Ignore<M>>),
}

struct ProbeActor<M: Send + 'static> {
    tx: Sender<Event<M>>,
    pilot: Option<Pilot<M>>,
    ignore: Option<Ignore<M>>,
}

impl<M: Send + 'static> Actor for ProbeActor<M> {
    type Msg = ProbeMsg<M>;

    fn handle(&mut self, ctx: &mut Context<Self>, msg: ProbeMsg<M>) -> HandleResult {
        match msg {
            ProbeMsg::Msg(m) => {
                // As in Akka, the pilot sees every message, ignored or not.
                if let Some(pilot) = &mut self.pilot {
                    if pilot(&m) == AutoPilot::Stop {
                        self.pilot = None;
                    }
                }
                if !self.ignore.as_ref().is_some_and(|ignore| ignore(&m)) {
                    // The test may have dropped its probe: nobody listens.
                    drop(self.tx.send(Event::Msg(m)));
                }
            }
            ProbeMsg::Watch(target) => ctx.watch(&target),
            ProbeMsg::Unwatch(target) => ctx.unwatch(&target),
            ProbeMsg::Pilot(pilot) => self.pilot = pilot,
            ProbeMsg::Ignore(ignore) => self.ignore = ignore,
        }
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        let _ = self.tx.send(Event::Terminated(t.actor));
        Ok(())
    }
}

/// A real [`ActorRef<M>`] for the test to hand to actors under test, and
/// assertions on what it receives (Akka's `TestProbe`).
///
/// The ref points at a small actor on the system's default dispatcher that
/// passes every message into a channel the probe reads, so it works
/// wherever a ref does: on a work-stealing pool, on an `app-runtime`
/// dispatcher, as a watcher, as a subscriber of the event stream.
///
/// Expectations block the calling thread (inside a multi-thread tokio
/// runtime they tell tokio first, so actors on that runtime keep running;
/// a current-thread runtime running the system's actors would stall).
/// Those given no timeout wait [`default_timeout`](crate::default_timeout),
/// or what is left of an enclosing [`within`](crate::within). A failed
/// expectation panics naming what arrived instead, or that nothing did.
/// Dropping the probe stops its actors.
pub struct TestProbe<M: Send + 'static> {
    system: ActorSystem,
    /// The ref handed out: an adapter into `control`.
    actor: ActorRef<M>,
    pub(crate) control: ActorRef<ProbeMsg<M>>,
    inbox: Inbox<Event<M>>,
    /// What the probe watches: `expect_terminated` watches its target only
    /// if `watch` did not, since a second watch of an actor whose
    /// `Terminated` already arrived would bring a second one (as in Akka).
    watching: Mutex<Vec<AnyRef>>,
}

impl<M: Send + fmt::Debug + 'static> TestProbe<M> {
    /// A probe with a fresh actor under `/user` (named `test-probe-N`).
    /// Panics if the system is terminating.
    #[track_caller]
    pub fn new(system: &ActorSystem) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Self::named(system, &format!("test-probe-{n}"))
    }

    /// A probe whose actor is `/user/<name>`. Panics if the name is taken
    /// or the system is terminating.
    #[track_caller]
    pub fn named(system: &ActorSystem, name: &str) -> Self {
        let (tx, rx) = channel();
        let control = system
            .spawn(
                name,
                Props::new(move || ProbeActor {
                    tx: tx.clone(),
                    pilot: None,
                    ignore: None,
                }),
            )
            .unwrap_or_else(|e| panic!("cannot spawn the test probe {name:?}: {e}"));
        TestProbe {
            system: system.clone(),
            actor: control.adapt(ProbeMsg::Msg),
            control,
            inbox: Inbox::new(rx),
            watching: Mutex::new(Vec::new()),
        }
    }

    /// A probe subscribed to the system's event stream for `M`, e.g. a
    /// `TestProbe<DeadLetter>` or `TestProbe<LifecycleEvent>`; it sees the
    /// events published from now on.
    #[track_caller]
    pub fn on_event_stream(system: &ActorSystem) -> Self
    where
        M: Clone,
    {
        let probe = Self::new(system);
        system.event_stream().subscribe(probe.actor_ref());
        probe
    }

    /// The probe's ref, to hand to the actors under test.
    pub fn actor_ref(&self) -> ActorRef<M> {
        self.actor.clone()
    }

    /// Watches `target`: its end arrives as a `Terminated` among the
    /// probe's messages (see [`TestProbe::expect_terminated`]), behind
    /// every message the dead actor sent the probe before it ended, as in
    /// Akka (the probe's own actor makes the watch).
    pub fn watch(&self, target: &impl ToAnyRef) {
        let target = target.to_any_ref();
        let mut watching = self.watching.lock().unwrap_or_else(|e| e.into_inner());
        if !watching.contains(&target) {
            watching.push(target.clone());
            self.control.tell(ProbeMsg::Watch(target));
        }
    }

    /// Stops watching `target`.
    pub fn unwatch(&self, target: &impl ToAnyRef) {
        let target = target.to_any_ref();
        self.watching
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|w| *w != target);
        self.control.tell(ProbeMsg::Unwatch(target));
    }

    /// Asserts that the next message equals `expected`, and returns it.
    #[track_caller]
    pub fn expect_msg(&self, expected: M) -> M
    where
        M: PartialEq,
    {
        self.expect_msg_in(implicit_timeout(), expected)
    }

    /// [`TestProbe::expect_msg`] waiting at most `max`.
    #[track_caller]
    pub fn expect_msg_within(&self, max: Duration, expected: M) -> M
    where
        M: PartialEq,
    {
        self.expect_msg_in(Limit::given(max), expected)
    }

    #[track_caller]
    fn expect_msg_in(&self, limit: Limit, expected: M) -> M
    where
        M: PartialEq,
    {
        let what = format!("{expected:?}");
        let got = self.next_msg(limit, &what);
        assert!(got == expected, "expected {what}, got {got:?}");
        got
    }

    /// Asserts that the next message satisfies `matches`, and returns it.
    #[track_caller]
    pub fn expect_msg_matching(&self, matches: impl FnOnce(&M) -> bool) -> M {
        self.expect_msg_matching_in(implicit_timeout(), matches)
    }

    /// [`TestProbe::expect_msg_matching`] waiting at most `max`.
    #[track_caller]
    pub fn expect_msg_matching_within(&self, max: Duration, matches: impl FnOnce(&M) -> bool) -> M {
        self.expect_msg_matching_in(Limit::given(max), matches)
    }

    #[track_caller]
    fn expect_msg_matching_in(&self, limit: Limit, matches: impl FnOnce(&M) -> bool) -> M {
        let got = self.next_msg(limit, "a message that matches");
        assert!(matches(&got), "the message {got:?} does not match");
        got
    }

    /// Asserts that `extract` takes the next message, and returns what it
    /// made of it (Akka's `expectMsgPF`; with a `match` on the variant, the
    /// counterpart of `expectMessageType` / `expectMsgClass`). `None`
    /// fails the test, naming the message.
    #[doc(alias = "expectMsgPF")]
    #[doc(alias = "expectMessageType")]
    #[doc(alias = "expectMsgClass")]
    #[track_caller]
    pub fn expect_msg_pf<T>(&self, extract: impl FnOnce(M) -> Option<T>) -> T {
        self.expect_msg_pf_in(implicit_timeout(), extract)
    }

    /// [`TestProbe::expect_msg_pf`] waiting at most `max`.
    #[track_caller]
    pub fn expect_msg_pf_within<T>(
        &self,
        max: Duration,
        extract: impl FnOnce(M) -> Option<T>,
    ) -> T {
        self.expect_msg_pf_in(Limit::given(max), extract)
    }

    #[track_caller]
    fn expect_msg_pf_in<T>(&self, limit: Limit, extract: impl FnOnce(M) -> Option<T>) -> T {
        let got = self.next_msg(limit, "a message that matches");
        let shown = format!("{got:?}");
        extract(got).unwrap_or_else(|| panic!("the message {shown} does not match"))
    }

    /// Asserts that the next `expected.len()` messages are the `expected`
    /// ones in any order, each as often as it is listed (Akka's
    /// `expectMsgAllOf`); returns them in the order they came.
    #[track_caller]
    pub fn expect_msg_all_of(&self, expected: Vec<M>) -> Vec<M>
    where
        M: PartialEq,
    {
        let got = self.receive_n_in(implicit_timeout(), expected.len());
        let mut missing = expected;
        let mut unexpected = Vec::new();
        for m in &got {
            match missing.iter().position(|e| e == m) {
                Some(i) => drop(missing.swap_remove(i)),
                None => unexpected.push(m),
            }
        }
        assert!(
            missing.is_empty(),
            "expected also {missing:?}, got {unexpected:?} instead (all received: {got:?})"
        );
        got
    }

    /// Asserts that the next message is one of `expected` (Akka's
    /// `expectMsgAnyOf`), and returns it.
    #[track_caller]
    pub fn expect_msg_any_of(&self, expected: &[M]) -> M
    where
        M: PartialEq,
    {
        let what = format!("one of {expected:?}");
        let got = self.next_msg(implicit_timeout(), &what);
        assert!(expected.contains(&got), "expected {what}, got {got:?}");
        got
    }

    /// The next message, whatever it is.
    #[track_caller]
    pub fn receive_msg(&self) -> M {
        self.next_msg(implicit_timeout(), "a message")
    }

    /// [`TestProbe::receive_msg`] waiting at most `max`.
    #[track_caller]
    pub fn receive_msg_within(&self, max: Duration) -> M {
        self.next_msg(Limit::given(max), "a message")
    }

    /// The next message if one comes within `max`, else `None` (Akka's
    /// `receiveOne`): for a test that decides on what arrived. A
    /// `Terminated` next still fails the test.
    #[track_caller]
    pub fn receive_one(&self, max: Duration) -> Option<M> {
        match self.inbox.next_within(Limit::given(max))? {
            Event::Msg(m) => Some(m),
            other => panic!("expected a message or nothing, got {other}"),
        }
    }

    /// The next `n` messages, all within one timeout.
    #[track_caller]
    pub fn receive_n(&self, n: usize) -> Vec<M> {
        self.receive_n_in(implicit_timeout(), n)
    }

    /// [`TestProbe::receive_n`] waiting at most `max` for all of them.
    #[track_caller]
    pub fn receive_n_within(&self, max: Duration, n: usize) -> Vec<M> {
        self.receive_n_in(Limit::given(max), n)
    }

    #[track_caller]
    fn receive_n_in(&self, limit: Limit, n: usize) -> Vec<M> {
        let deadline = Instant::now() + limit.time;
        let mut got = Vec::with_capacity(n);
        while got.len() < n {
            match self.inbox.next_by(deadline) {
                Some(Event::Msg(m)) => got.push(m),
                Some(other) => panic!(
                    "expected {n} messages, got {} and then {other}: {got:?}",
                    got.len()
                ),
                None => panic!(
                    "expected {n} messages within {limit}, got only {}: {got:?}",
                    got.len()
                ),
            }
        }
        got
    }

    /// Takes messages while `keep` accepts them and each comes within
    /// `idle` of the one before (Akka's `receiveWhile`): what arrived so
    /// far, for checks over a whole series (counts, absences). Never
    /// fails: it returns when a message is not kept (that message, or a
    /// `Terminated`, stays first for the next expectation), when nothing
    /// comes for `idle`, or when the expectation's limit (the default
    /// timeout, or what is left of `within`) has passed.
    #[track_caller]
    pub fn receive_while(&self, idle: Duration, mut keep: impl FnMut(&M) -> bool) -> Vec<M> {
        let end = Instant::now() + implicit_timeout().time;
        let mut got = Vec::new();
        loop {
            let now = Instant::now();
            if now >= end {
                return got;
            }
            match self.inbox.next_by((now + idle).min(end)) {
                Some(Event::Msg(m)) if keep(&m) => got.push(m),
                Some(other) => {
                    self.inbox.hold(vec![other]);
                    return got;
                }
                None => return got,
            }
        }
    }

    /// Asserts that no message (and no `Terminated`) arrives for `d`.
    #[track_caller]
    pub fn expect_no_msg(&self, d: Duration) {
        if let Some(event) = self.inbox.next_within(Limit::given(d)) {
            panic!("expected no message for {d:?}, got {event}");
        }
    }

    /// Asserts that no message (and no `Terminated`) arrives for a short
    /// while: 100 ms times `VOLLEY_TEST_TIME_FACTOR` (Akka Typed's
    /// `expectNoMessage()`, whose `expect-no-message-default` is 100 ms).
    /// Like any absence check, it proves only that nothing came that
    /// soon.
    #[doc(alias = "expectNoMessage")]
    #[track_caller]
    pub fn expect_no_msg_default(&self) {
        self.expect_no_msg(crate::wait::no_msg_window());
    }

    /// Reads messages until `fisher` says [`FishingOutcome::Complete`],
    /// within one timeout; returns the messages it said to keep (the
    /// completing one last). A `bool` fisher returns just the message it
    /// accepted.
    #[track_caller]
    pub fn fish_for<O: Into<FishingOutcome>>(&self, fisher: impl FnMut(&M) -> O) -> Vec<M> {
        self.fish_for_in(implicit_timeout(), fisher)
    }

    /// [`TestProbe::fish_for`] waiting at most `max` in all.
    #[track_caller]
    pub fn fish_for_within<O: Into<FishingOutcome>>(
        &self,
        max: Duration,
        fisher: impl FnMut(&M) -> O,
    ) -> Vec<M> {
        self.fish_for_in(Limit::given(max), fisher)
    }

    #[track_caller]
    fn fish_for_in<O: Into<FishingOutcome>>(
        &self,
        limit: Limit,
        mut fisher: impl FnMut(&M) -> O,
    ) -> Vec<M> {
        let deadline = Instant::now() + limit.time;
        let mut kept = Vec::new();
        let mut seen = Vec::new();
        loop {
            let m = match self.inbox.next_by(deadline) {
                Some(Event::Msg(m)) => m,
                Some(other) => panic!("fishing, got {other}; messages so far: {seen:?}"),
                None => {
                    panic!("fishing: nothing completed within {limit}; messages so far: {seen:?}")
                }
            };
            match fisher(&m).into() {
                FishingOutcome::Complete => {
                    kept.push(m);
                    return kept;
                }
                FishingOutcome::Continue => {
                    seen.push(format!("{m:?}"));
                    kept.push(m);
                }
                FishingOutcome::ContinueAndIgnore => seen.push(format!("{m:?}")),
                FishingOutcome::Fail(reason) => panic!("fishing failed at {m:?}: {reason}"),
            }
        }
    }

    /// Watches `target` (if not yet) and asserts that the next thing to
    /// arrive is its `Terminated`. An actor that has already terminated
    /// passes at once.
    #[track_caller]
    pub fn expect_terminated(&self, target: &impl ToAnyRef) -> Terminated {
        self.expect_terminated_in(implicit_timeout(), target.to_any_ref())
    }

    /// [`TestProbe::expect_terminated`] waiting at most `max`.
    #[track_caller]
    pub fn expect_terminated_within(&self, max: Duration, target: &impl ToAnyRef) -> Terminated {
        self.expect_terminated_in(Limit::given(max), target.to_any_ref())
    }

    #[track_caller]
    fn expect_terminated_in(&self, limit: Limit, target: AnyRef) -> Terminated {
        // A no-op after `watch` (see `watching`).
        self.watch(&target);
        match self.inbox.next_within(limit) {
            Some(Event::Terminated(actor)) if actor == target => {
                // Ended: a later `watch` of it is a new watch.
                self.watching
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|w| *w != actor);
                Terminated { actor }
            }
            Some(other) => panic!("expected Terminated({}), got {other}", target.path()),
            None => panic!(
                "expected Terminated({}), but nothing arrived within {limit}",
                target.path()
            ),
        }
    }

    /// Runs `block` and asserts it finished within `max`: see
    /// [`within`](crate::within), which applies to every probe.
    #[track_caller]
    pub fn within<R>(&self, max: Duration, block: impl FnOnce() -> R) -> R {
        crate::within(max, block)
    }

    /// The time left in the enclosing `within`: see
    /// [`remaining`](crate::remaining), which panics outside one.
    #[track_caller]
    pub fn remaining(&self) -> Duration {
        crate::remaining()
    }

    /// The time left in the enclosing `within`, or the default timeout:
    /// see [`remaining_or_default`](crate::remaining_or_default).
    pub fn remaining_or_default(&self) -> Duration {
        crate::remaining_or_default()
    }

    #[track_caller]
    fn next_msg(&self, limit: Limit, what: &str) -> M {
        match self.inbox.next_within(limit) {
            Some(Event::Msg(m)) => m,
            Some(other) => panic!("expected {what}, got {other}"),
            None => panic!("expected {what}, but nothing arrived within {limit}"),
        }
    }
}

impl<M: Send + 'static> Drop for TestProbe<M> {
    fn drop(&mut self) {
        self.system.stop(&self.control);
    }
}

impl<M: Send + 'static> fmt::Debug for TestProbe<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TestProbe({})", self.actor.path())
    }
}
