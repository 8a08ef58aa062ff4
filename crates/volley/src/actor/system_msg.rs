//! System messages: the runtime's own traffic between cells (creation,
//! supervision, death watch, stopping). They travel in a queue of their own
//! and are handled before any user message.

use std::sync::Arc;

use crate::actor::actor_ref::AnyRef;
use crate::error::Failure;

pub(crate) enum SystemMsg {
    /// `watcher` wants a `Terminated` when this actor stops.
    Watch(AnyRef),
    /// `watcher` no longer wants it.
    Unwatch(AnyRef),
    /// The actor with this uid, which this one watched, has terminated.
    DeathWatchNotification(u64),
    /// A child failed and is suspended, waiting for a directive.
    Failed {
        child: AnyRef,
        failure: Arc<Failure>,
    },
    /// A child finished stopping; its name is free again.
    ChildTerminated(AnyRef),
    /// Directive from the parent: carry on with the same state.
    Resume,
    /// Directive from the parent: replace the actor instance.
    Restart(Arc<Failure>),
    /// Directive from the parent: run `pre_restart` now, create the new
    /// instance after the backoff's delay. Boxed: rare, and bigger than the
    /// others.
    RestartAfter(Box<crate::supervision::backoff::BackoffRestart>),
    /// The backoff's delay has passed: create the new instance.
    BackoffElapsed,
    /// Stop now: children first, then `post_stop`. Queued user messages go to
    /// dead letters.
    Stop,
}
