//! Keyed timers owned by one actor.
//!
//! Each timer is armed on the system's timer driver (`crate::time::clock`: a small
//! task on the tokio runtime, or an entry on a manual clock) and sends a
//! `Timer` envelope tagged with the timer's generation id. The actor accepts
//! the envelope only while that generation is live, so cancelling a timer (or
//! replacing it, or stopping or restarting the actor) also discards a message
//! that was already queued: Akka's guarantee.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use crate::actor::actor_ref::ActorRef;
use crate::actor::mailbox::Envelope;
use crate::time::clock::{TimerDriver, TimerHandle};

/// Names a timer of one actor; starting a timer with a key that is active
/// replaces it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TimerKey {
    /// A named timer.
    Name(Cow<'static, str>),
    /// A numbered timer.
    Id(u64),
}

impl From<&'static str> for TimerKey {
    fn from(s: &'static str) -> Self {
        TimerKey::Name(Cow::Borrowed(s))
    }
}

impl From<String> for TimerKey {
    fn from(s: String) -> Self {
        TimerKey::Name(Cow::Owned(s))
    }
}

impl From<u64> for TimerKey {
    fn from(n: u64) -> Self {
        TimerKey::Id(n)
    }
}

impl fmt::Display for TimerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimerKey::Name(s) => f.write_str(s),
            TimerKey::Id(n) => write!(f, "#{n}"),
        }
    }
}

struct ActiveTimer {
    id: u64,
    repeating: bool,
    task: TimerHandle,
}

pub(crate) struct Timers {
    active: HashMap<TimerKey, ActiveTimer>,
    next_id: u64,
}

impl Timers {
    pub(crate) fn new() -> Self {
        Timers {
            active: HashMap::new(),
            next_id: 1,
        }
    }

    pub(crate) fn start_once<M: Send + 'static>(
        &mut self,
        driver: &TimerDriver,
        key: TimerKey,
        target: ActorRef<M>,
        delay: Duration,
        msg: M,
    ) {
        let id = self.next_generation(&key);
        let task = driver.after(delay, move || {
            target.send_envelope(Envelope::Timer { msg, id });
        });
        self.active.insert(
            key,
            ActiveTimer {
                id,
                repeating: false,
                task,
            },
        );
    }

    /// A repeating timer. `catch_up` (fixed rate) sends the ticks it
    /// missed at once when the runtime was late, so that the count over
    /// time stays right; otherwise (fixed delay) the next tick is a whole
    /// interval after the late one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_repeating<M: Clone + Send + 'static>(
        &mut self,
        driver: &TimerDriver,
        key: TimerKey,
        target: ActorRef<M>,
        initial_delay: Duration,
        interval: Duration,
        catch_up: bool,
        msg: M,
    ) {
        let id = self.next_generation(&key);
        let task = driver.every(initial_delay, interval, catch_up, move || {
            if target.is_terminated() {
                return false;
            }
            target.send_envelope(Envelope::Timer {
                msg: msg.clone(),
                id,
            });
            true
        });
        self.active.insert(
            key,
            ActiveTimer {
                id,
                repeating: true,
                task,
            },
        );
    }

    fn next_generation(&mut self, key: &TimerKey) -> u64 {
        self.cancel(key);
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub(crate) fn cancel(&mut self, key: &TimerKey) -> bool {
        match self.active.remove(key) {
            Some(t) => {
                t.task.cancel();
                true
            }
            None => false,
        }
    }

    pub(crate) fn cancel_all(&mut self) {
        for (_, t) in self.active.drain() {
            t.task.cancel();
        }
    }

    pub(crate) fn is_active(&self, key: &TimerKey) -> bool {
        self.active.contains_key(key)
    }

    /// Called when a timer envelope is dequeued: true if its generation is
    /// live. A single-shot timer is finished by its delivery.
    pub(crate) fn accept(&mut self, id: u64) -> bool {
        let key = self
            .active
            .iter()
            .find(|(_, t)| t.id == id)
            .map(|(k, t)| (k.clone(), t.repeating));
        match key {
            Some((_, true)) => true,
            Some((key, false)) => {
                self.active.remove(&key);
                true
            }
            None => false,
        }
    }
}

impl Drop for Timers {
    fn drop(&mut self) {
        self.cancel_all();
    }
}
