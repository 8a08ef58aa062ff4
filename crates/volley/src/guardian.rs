//! The root and `/user` guardians: actors that only supervise.
//!
//! Akka's contract, kept here: the actor system ends with its user
//! guardian. Stopping `/user` (`system.stop` of the ref `lookup("/user")`
//! gives) runs the coordinated shutdown, as `terminate` does; otherwise
//! the system would live on unable to spawn anything. During a shutdown
//! already under way, that run joins it.

use crate::actor::{Actor, HandleResult};
use crate::context::Context;
use crate::coordinated_shutdown::ShutdownReason;

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
