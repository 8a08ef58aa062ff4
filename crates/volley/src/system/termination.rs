//! Waiting for an actor's end from async code: [`AnyRef::terminated`],
//! [`ActorRef::terminated`] and Akka's `gracefulStop` pattern,
//! [`ActorRef::graceful_stop_and_wait`].
//!
//! The wait is an ordinary death watch by a short-lived actor under
//! `/system` (created with the first such wait; not `/temp`, whose paths
//! name ask reply handles on the wire), which answers the waiting
//! future through a oneshot channel and stops. Going through an actor,
//! rather than a bespoke watcher target, gives these waits exactly the
//! semantics of `ctx.watch`: a target that has already terminated answers
//! at once, a remote target's end is reported by remote death watch
//! (including its node becoming unreachable), and the watcher unwatches
//! when it stops. It costs one spawn per wait, which only code that waits
//! pays. A wait whose future is dropped stops its watcher.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::actor::actor_ref::{ActorRef, AnyRef};
use crate::actor::context::Context;
use crate::actor::definition::{Actor, HandleResult, Props, Terminated};
use crate::system::actor_system::ActorSystem;
use crate::util::locks::lock;

/// Why a wait for an actor's end gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StopError {
    /// The actor had not terminated within the timeout (Akka's
    /// `gracefulStop` fails with an `AskTimeoutException`). It may still
    /// stop later: the stop request stays queued.
    #[error("{target} did not terminate within {after:?}")]
    Timeout {
        /// The actor's path.
        target: String,
        /// The timeout.
        after: Duration,
    },
    /// This actor system shut down before the actor's end was known.
    #[error("the actor system terminated before {0} did")]
    SystemTerminated(String),
}

impl AnyRef {
    /// Resolves once the actor has terminated: at once if it already has,
    /// otherwise when its watchers would get `Terminated` (for a remote
    /// actor, also when its node is found unreachable or quarantined, as
    /// for `ctx.watch`). Fails only if this system shuts down first.
    pub async fn terminated(&self) -> Result<(), StopError> {
        wait_for_end(self, None, || {}).await
    }
}

impl<M: Send + 'static> ActorRef<M> {
    /// Resolves once the actor has terminated; see [`AnyRef::terminated`].
    pub async fn terminated(&self) -> Result<(), StopError> {
        wait_for_end(&self.to_any(), None, || {}).await
    }

    /// Akka's `gracefulStop`: queues a stop behind the messages already
    /// queued ([`ActorRef::graceful_stop`]) and resolves once the actor has
    /// terminated, `post_stop` included; [`StopError::Timeout`] if that
    /// takes longer than `timeout` (the stop stays queued). An actor that
    /// has already terminated resolves at once.
    pub async fn graceful_stop_and_wait(&self, timeout: Duration) -> Result<(), StopError> {
        wait_for_end(&self.to_any(), Some(timeout), || self.graceful_stop()).await
    }
}

/// Starts a watcher of `target` (giving up after `timeout`, if any), runs
/// `then` once the watcher exists, and waits for the watcher's answer.
async fn wait_for_end(
    target: &AnyRef,
    timeout: Option<Duration>,
    then: impl FnOnce(),
) -> Result<(), StopError> {
    let path = target.path().to_string();
    let system = target.target.system().clone();
    let (tx, rx) = oneshot::channel();
    let answer = Arc::new(Mutex::new(Some(tx)));
    let watched = target.clone();
    let props = Props::new(move || EndWatcher {
        target: watched.clone(),
        timeout,
        answer: answer.clone(),
    });
    let Some(watcher) = crate::system::guardian::system_guardian(&system)
        .and_then(|t| t.spawn_child(None, props).ok())
    else {
        // No watcher can start: the system is shutting down. The answer is
        // still right for an actor known to have ended.
        then();
        return match target.is_terminated() {
            true => Ok(()),
            false => Err(StopError::SystemTerminated(path)),
        };
    };
    let mut stop_on_drop = StopOnDrop(Some((system, watcher)));
    then();
    let outcome = rx.await;
    stop_on_drop.0 = None;
    match outcome {
        Ok(outcome) => outcome,
        // The watcher stopped without an answer: its system is ending.
        Err(_) => Err(StopError::SystemTerminated(path)),
    }
}

/// Stops the watcher of a wait that was given up (its future dropped).
struct StopOnDrop(Option<(ActorSystem, ActorRef<EndWatch>)>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some((system, watcher)) = self.0.take() {
            system.stop(&watcher);
        }
    }
}

/// What an [`EndWatcher`] gets besides `Terminated`.
pub(crate) enum EndWatch {
    /// The wait's timeout has passed.
    TimedOut,
}

/// Where a watcher answers its waiting future, once; shared by the
/// watcher's instances (its props may build more than one).
type Answer = Arc<Mutex<Option<oneshot::Sender<Result<(), StopError>>>>>;

/// Watches one actor for one waiting future.
struct EndWatcher {
    target: AnyRef,
    timeout: Option<Duration>,
    answer: Answer,
}

impl EndWatcher {
    fn answer(&self, ctx: &mut Context<Self>, outcome: Result<(), StopError>) {
        if let Some(tx) = lock(&self.answer).take() {
            let _ = tx.send(outcome);
        }
        ctx.stop_self();
    }
}

impl Actor for EndWatcher {
    type Msg = EndWatch;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.watch(&self.target);
        if let Some(after) = self.timeout {
            ctx.schedule_once("timeout", after, EndWatch::TimedOut);
        }
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: EndWatch) -> HandleResult {
        match msg {
            EndWatch::TimedOut => {
                let target = self.target.path().to_string();
                let after = self.timeout.unwrap_or_default();
                self.answer(ctx, Err(StopError::Timeout { target, after }));
            }
        }
        Ok(())
    }

    fn on_terminated(&mut self, ctx: &mut Context<Self>, _t: Terminated) -> HandleResult {
        self.answer(ctx, Ok(()));
        Ok(())
    }
}
