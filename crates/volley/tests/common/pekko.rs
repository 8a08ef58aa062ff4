//! Fixtures of Pekko's actor specs in volley's API: the spec's
//! `Supervisor` (spawns what it is asked to and keeps its children across
//! its own restarts), `PingPongActor`, and a latch for "slow stop" hooks.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use volley::{
    Actor, ActorError, ActorRef, Context, Failure, FailureKind, HandleResult, Props, ReplyTo,
    SupervisorStrategy,
};

pub const T: Duration = Duration::from_secs(10);

/// SupervisorSpec's `ExceptionMessage`.
pub const EXCEPTION_MESSAGE: &str = "Expected exception; to test fault-tolerance";

/// The text of what first went wrong, through escalation and
/// initialization wrappers.
pub fn root_text(failure: &Failure) -> String {
    match &failure.kind {
        FailureKind::Error(e) => e.to_string(),
        FailureKind::Panic(text) | FailureKind::DeathPact(text) => text.clone(),
        FailureKind::Initialization(inner) => root_text(inner),
        FailureKind::Escalated(inner) => root_text(inner),
    }
}

type Job = Box<dyn FnOnce(&mut Context<Supervisor>) + Send>;

/// Pekko's test `Supervisor`: supervises with the strategy it is given,
/// runs what it is sent, and keeps its children when it restarts (its
/// `preRestart` does nothing).
pub struct Supervisor(pub SupervisorStrategy);

pub enum SupMsg {
    Run(Job),
}

impl Actor for Supervisor {
    type Msg = SupMsg;
    fn supervisor_strategy(&self) -> SupervisorStrategy {
        self.0.clone()
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<SupMsg>) {}
    fn handle(&mut self, ctx: &mut Context<Self>, msg: SupMsg) -> HandleResult {
        let SupMsg::Run(job) = msg;
        job(ctx);
        Ok(())
    }
}

/// Spawns a supervisor with `strategy` under `/user`.
pub fn supervisor(system: &volley::ActorSystem, strategy: SupervisorStrategy) -> ActorRef<SupMsg> {
    system
        .spawn_anonymous(Props::new(move || Supervisor(strategy.clone())))
        .expect("a supervisor")
}

/// Asks `supervisor` to spawn an anonymous child from `props`.
pub async fn child<B: Actor>(supervisor: &ActorRef<SupMsg>, props: Props<B>) -> ActorRef<B::Msg> {
    supervisor
        .ask(
            |reply: ReplyTo<ActorRef<B::Msg>>| {
                SupMsg::Run(Box::new(move |ctx| {
                    reply.tell(ctx.spawn_anonymous(props).expect("a child"))
                }))
            },
            T,
        )
        .await
        .expect("the supervisor answers")
}

/// SupervisorSpec's `PingPongActor`: reports to `send_to`, answers pings,
/// and dies on request; its `postRestart` reports the failure's text.
pub struct PingPong(pub ActorRef<String>);

pub enum Pp {
    /// Reports "ping"; answers "pong" to an asker.
    Ping(Option<ReplyTo<&'static str>>),
    /// Fails with [`EXCEPTION_MESSAGE`].
    Die,
    /// Answers the failure to the asker, then fails with it.
    DieReply(ReplyTo<Result<(), String>>),
}

impl PingPong {
    pub fn props(send_to: &ActorRef<String>) -> Props<PingPong> {
        let send_to = send_to.clone();
        Props::new(move || PingPong(send_to.clone()))
    }
}

impl Actor for PingPong {
    type Msg = Pp;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Pp) -> HandleResult {
        match msg {
            Pp::Ping(reply) => {
                self.0.tell("ping".into());
                if let Some(reply) = reply {
                    reply.tell("pong");
                }
                Ok(())
            }
            Pp::Die => Err(ActorError::new(EXCEPTION_MESSAGE)),
            Pp::DieReply(reply) => {
                reply.tell(Err(EXCEPTION_MESSAGE.into()));
                Err(ActorError::new(EXCEPTION_MESSAGE))
            }
        }
    }
    fn post_restart(&mut self, _ctx: &mut Context<Self>, failure: &Failure) -> HandleResult {
        self.0.tell(root_text(failure));
        Ok(())
    }
}

/// A count-down latch, for hooks that must wait for the test.
#[derive(Clone)]
pub struct Latch(Arc<(Mutex<usize>, Condvar)>);

impl Latch {
    pub fn new(count: usize) -> Self {
        Latch(Arc::new((Mutex::new(count), Condvar::new())))
    }

    pub fn count_down(&self) {
        let mut n = self.0 .0.lock().unwrap();
        *n = n.saturating_sub(1);
        self.0 .1.notify_all();
    }

    /// Waits until the count is 0, at most 10 s (as the specs' latches).
    pub fn wait(&self) {
        let n = self.0 .0.lock().unwrap();
        let _ = self.0 .1.wait_timeout_while(n, T, |n| *n > 0).unwrap();
    }
}

/// The pool that subjects blocking on a latch run on: a blocked actor on
/// the default dispatcher can hold back the probe it has just woken (or,
/// on an `app-runtime` dispatcher, a runtime thread the probes need;
/// docs/reference/dispatchers.md).
pub const BLOCKING: &str = "blocking";

/// `settings` with the [`BLOCKING`] pool: two threads of its own.
pub fn with_blocking_pool(mut settings: volley::Settings) -> volley::Settings {
    settings.dispatchers.insert(
        BLOCKING.into(),
        volley::DispatcherSettings {
            kind: volley::DispatcherKind::WorkStealing,
            threads: 2,
            ..Default::default()
        },
    );
    settings
}

/// A manual clock, a system on it (with the [`BLOCKING`] pool) and the
/// probe the subjects report to.
pub struct ManualCase {
    pub time: volley_testkit::ManualTime,
    pub system: volley::ActorSystem,
    pub probe: volley_testkit::TestProbe<String>,
}

impl ManualCase {
    pub fn new(name: &str) -> ManualCase {
        let time = volley_testkit::ManualTime::new();
        let settings = with_blocking_pool(time.settings(volley::Settings::default()));
        let system = super::system_with(name, settings).unwrap();
        let probe = volley_testkit::TestProbe::new(&system);
        ManualCase {
            time,
            system,
            probe,
        }
    }
}
