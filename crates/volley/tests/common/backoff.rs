//! The actor under test of the backoff suites (`backoff.rs`,
//! `backoff_supervisor.rs`, `backoff_on_failure.rs`), and their helpers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley::{
    Actor, ActorRef, ActorSystem, BackoffMsg, BackoffOptions, BackoffSupervisor, Context,
    DeadLetter, Failure, HandleResult, Props, Settings,
};
use volley_testkit::{ManualTime, TestProbe};

pub const MS: fn(u64) -> Duration = Duration::from_millis;

/// What the actor under test reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Started,
    StartFailed,
    PreRestart,
    PostStop,
    Pong(u32),
    State(u32),
}

#[derive(Debug, thiserror::Error)]
#[error("{0} on purpose")]
pub struct Boom(pub &'static str);

#[derive(Debug)]
pub enum Cmd {
    Throw,
    /// Fails with an error the strategy stops on.
    ThrowStopping,
    Increment,
    GetState,
    Ping(u32),
    Die,
}

pub struct Target {
    pub probe: ActorRef<Event>,
    pub state: u32,
    /// Fails `pre_start` while set (e.g. a resource that is not there).
    pub fail_start: Arc<AtomicBool>,
}

impl Actor for Target {
    type Msg = Cmd;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        if self.fail_start.load(Ordering::SeqCst) {
            self.probe.tell(Event::StartFailed);
            return Err(Boom("start failed").into());
        }
        self.probe.tell(Event::Started);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: Cmd) -> HandleResult {
        match msg {
            Cmd::Throw => return Err(Boom("normal").into()),
            Cmd::ThrowStopping => return Err(Boom("stopping").into()),
            Cmd::Increment => self.state += 1,
            Cmd::GetState => self.probe.tell(Event::State(self.state)),
            Cmd::Ping(n) => self.probe.tell(Event::Pong(n)),
            Cmd::Die => ctx.stop_self(),
        }
        Ok(())
    }

    fn pre_restart(&mut self, ctx: &mut Context<Self>, _failure: &Failure, _msg: Option<Cmd>) {
        self.probe.tell(Event::PreRestart);
        ctx.stop_all_children();
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.probe.tell(Event::PostStop);
    }
}

pub fn target(probe: &TestProbe<Event>, fail_start: &Arc<AtomicBool>) -> Props<Target> {
    let (probe, fail_start) = (probe.actor_ref(), fail_start.clone());
    Props::new(move || Target {
        probe: probe.clone(),
        state: 0,
        fail_start: fail_start.clone(),
    })
}

/// The next dead letter for `recipient`: dropped test probes leave dead
/// letters of their own, skipped here.
pub fn letter_for<M: Send + 'static>(
    dead: &TestProbe<DeadLetter>,
    recipient: &ActorRef<M>,
) -> DeadLetter {
    let path = recipient.path().to_string();
    let mut letters = dead.fish_for(|l| l.recipient == path);
    letters.pop().expect("fish_for returns the catch last")
}

/// A `BackoffSupervisor` of a [`Target`], on a manual clock, its child
/// started.
pub struct Supervised {
    pub system: ActorSystem,
    pub time: ManualTime,
    pub probe: TestProbe<Event>,
    pub supervisor: ActorRef<BackoffMsg<Cmd>>,
    /// Watches the supervisor.
    pub watcher: TestProbe<()>,
    /// Fails the child's `pre_start` while set.
    pub fail_start: Arc<AtomicBool>,
}

impl Supervised {
    pub fn new(name: &str, options: BackoffOptions) -> Supervised {
        super::quiet_deliberate_panics();
        let time = ManualTime::new();
        let system = super::system_with(name, time.settings(Settings::default())).unwrap();
        let probe = TestProbe::new(&system);
        let fail_start = Arc::new(AtomicBool::new(false));
        let child = target(&probe, &fail_start);
        let supervisor = system
            .spawn("supervisor", BackoffSupervisor::props(child, options))
            .unwrap();
        probe.expect_msg(Event::Started);
        let watcher = TestProbe::new(&system);
        watcher.watch(&supervisor);
        Supervised {
            system,
            time,
            probe,
            supervisor,
            watcher,
            fail_start,
        }
    }

    pub fn current_child(&self) -> Option<ActorRef<Cmd>> {
        let replies = TestProbe::new(&self.system);
        self.supervisor
            .tell(BackoffMsg::GetCurrentChild(replies.actor_ref()));
        replies.receive_msg()
    }

    pub fn restart_count(&self) -> u32 {
        let replies = TestProbe::new(&self.system);
        self.supervisor
            .tell(BackoffMsg::GetRestartCount(replies.actor_ref()));
        replies.receive_msg()
    }

    /// Stops the current child (with `how`) and waits until the
    /// supervisor has armed its restart.
    pub fn stop_child(&self, how: Cmd) -> ActorRef<Cmd> {
        let child = self.current_child().expect("a child");
        let watcher = TestProbe::<()>::new(&self.system);
        watcher.watch(&child);
        child.tell(how);
        self.probe.expect_msg(Event::PostStop);
        watcher.expect_terminated(&child);
        self.time.wait_for_timers(1);
        child
    }
}
