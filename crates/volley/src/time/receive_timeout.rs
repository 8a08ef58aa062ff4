//! The receive timeout (Akka's `setReceiveTimeout`): a signal to an actor
//! that got no message for a while.
//!
//! One timer task per armed timeout, not one per message: the activation
//! loop notes the time (one clock read) as it takes a message that counts,
//! before the handler runs, so that anything the handler sends is ordered
//! after the note (the loop has a copy without the check, for actors that
//! armed no timeout). The task, when it fires, checks whether the actor
//! has been idle long enough. If not, it is armed again for the time left;
//! so the signal comes the full timeout after the last message that counts
//! was taken (Akka counts from the end of its handler), and a busy actor costs no timer churn. A
//! generation number discards the signal of a timeout that was changed or
//! cancelled meanwhile.

use std::time::{Duration, Instant};

use crate::actor::actor_ref::ActorRef;
use crate::actor::mailbox::Envelope;
use crate::time::clock::{TimerDriver, TimerHandle};

/// An armed receive timeout.
pub(crate) struct ReceiveTimeout {
    pub(crate) after: Duration,
    last_activity: Instant,
    generation: u64,
    task: TimerHandle,
    driver: TimerDriver,
}

/// What to do with a fired timeout.
pub(crate) enum Fired {
    /// Not this timeout's signal (changed or cancelled since).
    Stale,
    /// A message came meanwhile; armed again for the time left.
    NotYet,
    /// Idle for the whole timeout: signal the actor (armed again already).
    Signal,
}

impl ReceiveTimeout {
    /// Arms a timeout of `after` for `me`, replacing `previous`.
    pub(crate) fn arm<M: Send + 'static>(
        previous: Option<Box<ReceiveTimeout>>,
        me: &ActorRef<M>,
        after: Duration,
        driver: TimerDriver,
    ) -> Box<ReceiveTimeout> {
        let generation = previous.as_ref().map_or(1, |p| p.generation + 1);
        let task = arm_signal(&driver, me, after, generation);
        Box::new(ReceiveTimeout {
            after,
            last_activity: driver.now(),
            generation,
            task,
            driver,
        })
    }

    /// A message that counts came in.
    #[inline]
    pub(crate) fn touch(&mut self) {
        self.last_activity = self.driver.now();
    }

    /// The timer of generation `generation` fired.
    pub(crate) fn fired<M: Send + 'static>(&mut self, generation: u64, me: &ActorRef<M>) -> Fired {
        if generation != self.generation {
            return Fired::Stale;
        }
        let now = self.driver.now();
        let idle = now.saturating_duration_since(self.last_activity);
        if idle < self.after {
            self.task = arm_signal(&self.driver, me, self.after - idle, self.generation);
            return Fired::NotYet;
        }
        self.last_activity = now;
        self.task = arm_signal(&self.driver, me, self.after, self.generation);
        Fired::Signal
    }
}

impl Drop for ReceiveTimeout {
    fn drop(&mut self) {
        self.task.cancel();
    }
}

fn arm_signal<M: Send + 'static>(
    driver: &TimerDriver,
    me: &ActorRef<M>,
    after: Duration,
    generation: u64,
) -> TimerHandle {
    let me = me.clone();
    driver.after(after, move || {
        me.send_envelope(Envelope::ReceiveTimeout(generation));
    })
}
