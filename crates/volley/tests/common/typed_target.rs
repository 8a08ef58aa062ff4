//! typed SupervisionSpec's `targetBehavior` in volley's API: a counter
//! with children and watches, reporting its signals (`pre_restart` as
//! "preRestart", `post_stop` as "postStop", `Terminated`) and its answers
//! as strings. Typed actors supervise themselves; here the spec's
//! `supervise(...).onFailure[E](strategy)` is the strategy of a parent
//! (`common::pekko::Supervisor`), whose decider matches on [`Exc`].

use volley::{
    Actor, ActorError, ActorRef, AnyRef, Context, Directive, Failure, HandleResult, Props, ReplyTo,
    SupervisorStrategy, Terminated,
};

use super::pekko::Latch;

/// The spec's `Exc1`, `Exc2` (an `Exc1`) and `Exc3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("exc-{0}")]
pub struct Exc(pub u8);

impl Exc {
    /// Whether this is (a subtype of) `Exc{kind}`: `Exc2` is an `Exc1`.
    pub fn is(self, kind: u8) -> bool {
        self.0 == kind || (kind == 1 && self.0 == 2)
    }
}

/// A decider for `onFailure[Exc{kind}](directive)`: anything else stops
/// the actor, as an exception a typed supervisor does not handle does.
pub fn on_failure(kind: u8, directive: Directive) -> impl Fn(&Failure) -> Directive {
    move |f| match f.downcast_ref::<Exc>() {
        Some(e) if e.is(kind) => directive,
        _ => Directive::Stop,
    }
}

/// `supervise(target).onFailure[Exc{kind}](restart)`.
pub fn restart_on(kind: u8) -> SupervisorStrategy {
    SupervisorStrategy::one_for_one().with_decider(on_failure(kind, Directive::Restart))
}

pub enum Cmd {
    Ping(u32),
    Throw(Exc),
    IncrementState,
    GetState,
    CreateChild(String, Props<Target>),
    Watch(AnyRef),
    /// `watchWith(ref, Ping(n))`.
    WatchWith(AnyRef, u32),
    /// The child of that name (the spec reads it from `State`).
    ChildRef(&'static str, ReplyTo<Option<AnyRef>>),
}

pub struct Target {
    pub monitor: ActorRef<String>,
    pub n: u32,
    pub slow_stop: Option<Latch>,
    pub slow_restart: Option<Latch>,
    /// Typed's `withStopChildren(false)`: `pre_restart` keeps them.
    pub keep_children: bool,
}

impl Target {
    pub fn new(monitor: &ActorRef<String>) -> Self {
        Target {
            monitor: monitor.clone(),
            n: 0,
            slow_stop: None,
            slow_restart: None,
            keep_children: false,
        }
    }

    pub fn props(monitor: &ActorRef<String>) -> Props<Target> {
        Self::props_with(monitor, |_| {})
    }

    /// Props of targets that `tune` adjusts.
    pub fn props_with(
        monitor: &ActorRef<String>,
        tune: impl Fn(&mut Target) + Send + Sync + 'static,
    ) -> Props<Target> {
        let monitor = monitor.clone();
        Props::new(move || {
            let mut t = Target::new(&monitor);
            tune(&mut t);
            t
        })
    }

    fn report(&self, event: String) {
        self.monitor.tell(event);
    }
}

impl Actor for Target {
    type Msg = Cmd;
    fn handle(&mut self, ctx: &mut Context<Self>, cmd: Cmd) -> HandleResult {
        match cmd {
            Cmd::Ping(n) => self.report(format!("pong {n}")),
            Cmd::Throw(e) => return Err(ActorError::new(e)),
            Cmd::IncrementState => self.n += 1,
            Cmd::GetState => {
                let mut names: Vec<String> = ctx
                    .children()
                    .iter()
                    .map(|c| c.path().name().to_string())
                    .collect();
                names.sort();
                self.report(format!("state {} [{}]", self.n, names.join(",")));
            }
            Cmd::CreateChild(name, props) => {
                ctx.spawn(&name, props)?;
            }
            Cmd::Watch(r) => ctx.watch(&r),
            Cmd::WatchWith(r, n) => ctx.watch_with(&r, Cmd::Ping(n)),
            Cmd::ChildRef(name, reply) => reply.tell(ctx.child(name)),
        }
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.report(format!("terminated {}", t.actor.path().name()));
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        if let Some(latch) = &self.slow_stop {
            latch.wait();
        }
        self.report("postStop".into());
    }
    /// Typed restarts signal `PreRestart` (not `PostStop`) and stop the
    /// children unless told not to.
    fn pre_restart(&mut self, ctx: &mut Context<Self>, _f: &Failure, _m: Option<Cmd>) {
        if let Some(latch) = &self.slow_restart {
            latch.wait();
        }
        self.report("preRestart".into());
        if !self.keep_children {
            for child in ctx.children() {
                ctx.unwatch(&child);
            }
            ctx.stop_all_children();
        }
    }
}
