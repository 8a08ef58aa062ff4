//! Actors written as one closure, for tests whose actor has one purpose
//! (Akka Typed's `Behaviors.receiveMessage`): echo, forward, count, fail.
//!
//! A test that needs state across messages keeps it in the closure's
//! captures; one that needs lifecycle hooks or supervision of its own
//! writes an [`Actor`] as usual.

use volley::{Actor, Context, HandleResult, Props};

/// The handler an [`FnActor`] runs for each message.
type Handler<M> = Box<dyn FnMut(&mut Context<FnActor<M>>, M) -> HandleResult + Send>;

/// An actor whose `handle` is a closure: made by [`actor_fn`].
pub struct FnActor<M: Send + 'static> {
    handler: Handler<M>,
}

impl<M: Send + 'static> Actor for FnActor<M> {
    type Msg = M;

    fn handle(&mut self, ctx: &mut Context<Self>, msg: M) -> HandleResult {
        (self.handler)(ctx, msg)
    }
}

/// Props of an actor that runs `handler` for each message. Each
/// incarnation (the first and every restart) gets a fresh clone of
/// `handler`, as a factory gives a fresh actor; state meant to outlive a
/// restart goes in an `Arc` the closure captures.
///
/// ```
/// use volley::{ActorSystem, ActorRef};
/// use volley_testkit::{actor_fn, TestProbe};
///
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() {
/// let system = ActorSystem::new("doc").unwrap();
/// let probe = TestProbe::<u32>::new(&system);
/// let echo = system
///     .spawn("echo", actor_fn(|_ctx, (n, to): (u32, ActorRef<u32>)| {
///         to.tell(n);
///         Ok(())
///     }))
///     .unwrap();
/// echo.tell((7, probe.actor_ref()));
/// probe.expect_msg(7);
/// system.terminate().await;
/// # }
/// ```
pub fn actor_fn<M, F>(handler: F) -> Props<FnActor<M>>
where
    M: Send + 'static,
    F: FnMut(&mut Context<FnActor<M>>, M) -> HandleResult + Clone + Send + Sync + 'static,
{
    Props::new(move || FnActor {
        handler: Box::new(handler.clone()),
    })
}
