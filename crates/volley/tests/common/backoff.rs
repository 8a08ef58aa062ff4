//! The actor under test of the backoff suites (`backoff.rs`,
//! `backoff_supervisor.rs`), and their helpers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley::{Actor, ActorRef, Context, DeadLetter, Failure, HandleResult, Props};
use volley_testkit::TestProbe;

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
