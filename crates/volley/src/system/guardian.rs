//! The root, `/user` and `/system` guardians: actors that only supervise.
//! `/system` holds the runtime's own actors (the receptionist, the
//! watchers of async waits for an actor's end) and is made on first use.
//!
//! Akka's contract, kept here: the actor system ends with its user
//! guardian. Stopping `/user` (`system.stop` of the ref `lookup("/user")`
//! gives) runs the coordinated shutdown, as `terminate` does; otherwise
//! the system would live on unable to spawn anything. During a shutdown
//! already under way, that run joins it.

use std::sync::Arc;

use crate::actor::cell::ActorCell;
use crate::actor::context::Context;
use crate::actor::definition::{Actor, HandleResult, Props};
use crate::system::actor_system::ActorSystem;
use crate::system::coordinated_shutdown::ShutdownReason;
use crate::util::locks::lock;

/// The root and `/user` guardians.
pub(crate) struct Guardian;

/// Guardians accept no messages.
pub(crate) enum NoMessages {}

impl Actor for Guardian {
    type Msg = NoMessages;

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: NoMessages) -> HandleResult {
        match msg {}
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: crate::Terminated) -> HandleResult {
        Ok(())
    }

    fn post_stop(&mut self, ctx: &mut Context<Self>) {
        if ctx.path().elements() != "/user" {
            return;
        }
        let system = ctx.system().clone();
        system.runtime_handle().spawn(async move {
            system
                .coordinated_shutdown()
                .run(ShutdownReason::GuardianStopped)
                .await;
        });
    }
}

/// The `/system` guardian, created on first use; `None` once the system
/// is terminating.
pub(crate) fn system_guardian(system: &ActorSystem) -> Option<Arc<ActorCell<Guardian>>> {
    let mut slot = lock(&system.shared.system_guardian);
    if let Some(guardian) = slot.upgrade() {
        return Some(guardian);
    }
    let root = lock(&system.shared.root).clone()?;
    let guardian = root
        .spawn_child_cell(Some("system"), Props::new(|| Guardian))
        .ok()?;
    *slot = Arc::downgrade(&guardian);
    Some(guardian)
}
