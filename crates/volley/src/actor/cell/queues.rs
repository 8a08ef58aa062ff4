//! A cell's two queues and the bits that decide who runs the cell.
//!
//! # The protocol
//! `state` holds three bits. `SCHEDULED` is owned by whoever is responsible
//! for running the cell: a sender that flips it from 0 to 1 submits the cell
//! to its dispatcher, and only the holder runs it, so two activations never
//! overlap. `HAS_SYS` says the system queue is non-empty, so the activation
//! loop checks one atomic per message instead of taking a lock.
//! `TERMINATED` is set once, after `post_stop`; a sender that sees it drains
//! the mailbox to dead letters itself, so no message is left behind in a
//! dead cell.
//!
//! Why no wake-up is lost, and why each ordering is what it is:
//!
//! - **User message.** The sender pushes under the mailbox lock, *then*
//!   reads `state`; the runner, handing back, clears `SCHEDULED` (an RMW),
//!   *then* takes the mailbox lock to look for work. The lock orders the two
//!   critical sections: if the sender's came first, the runner sees the
//!   message and reschedules; if the runner's came first, the sender's lock
//!   acquisition synchronises with the runner's unlock, which follows the
//!   clear, so the sender's load happens after the clear and cannot see the
//!   stale `SCHEDULED` (coherence): it schedules the cell. That is why the
//!   sender may skip the RMW when its plain load sees `SCHEDULED`: the
//!   common case under load costs one load. The order that matters is
//!   program order around the lock (push, then read; clear, then look),
//!   which is why the mailbox's lock must be a real lock, never a queue
//!   with weaker orderings.
//! - **System message.** The sender sets `HAS_SYS` and `SCHEDULED` in one
//!   RMW under the system-queue lock, and the runner clears `HAS_SYS` under
//!   the same lock as it empties the queue: until the queue is closed, the
//!   bit is set exactly while the queue holds a message, so the runner's
//!   `Acquire` load of it stands in for taking the lock. Against the
//!   hand-back, the sender's `fetch_or` and the runner's `fetch_and` are RMWs
//!   of one atomic, so one of them sees the other: the sender sees
//!   `SCHEDULED` clear and submits, or the runner's re-check sees `HAS_SYS`.
//! - **Hand-back.** Clearing `SCHEDULED` and re-checking are two steps, so
//!   a sender can slip in between and see the bit clear; whoever then sets
//!   it again first (the sender's `fetch_or` or the runner's) runs the cell,
//!   and the other one does not. `AcqRel` on every RMW carries the actor's
//!   state from one activation to the next holder.
//! - **Termination.** `TERMINATED` is set before the terminator drains the
//!   mailbox; a sender pushes before it reads `state`. The same lock argument
//!   as for a user message says one of them sees the message. The system
//!   queue is closed under its lock, so a system message is either queued
//!   before (and answered by the terminator) or refused (and answered by the
//!   sender).
//!
//! `loom_tests` below model-check these claims against this very code.

use crate::actor::mailbox::{Mailbox, MailboxConfig, Priority};
use crate::util::sync::{lock, AtomicU8, Mutex, Ordering};

const SCHEDULED: u8 = 1;
const HAS_SYS: u8 = 2;
const TERMINATED: u8 = 4;

/// What a sender must do after pushing a user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Somebody already runs the cell; nothing to do.
    Running,
    /// The sender took `SCHEDULED`: it submits the cell.
    Schedule,
    /// The cell has terminated: the sender drains the mailbox to dead letters.
    Terminated,
}

/// What the end of an activation decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandBack {
    /// Work is waiting: the cell stays scheduled and goes to the back of the
    /// queue.
    Yield,
    /// `SCHEDULED` is clear: the cell is idle until a sender schedules it.
    Idle,
    /// Work arrived after the clear and the runner took `SCHEDULED` back
    /// first: it submits the cell as a newly woken one.
    Reacquired,
}

#[derive(Debug)]
struct SystemQueue<S> {
    queue: SystemBatch<S>,
    closed: bool,
}

/// Queued system messages, the first one inline: most actors only ever
/// get one at a time (the `Stop` that ends them, a parent's
/// `ChildTerminated`), and a vector allocates on its first push, which was
/// one of the few allocations left in spawning and stopping an actor.
/// `rest` is a `Vec`, not a deque: a batch is only ever pushed to and then
/// taken whole, and dropping an empty deque (three per stopped actor:
/// the drained batch, the closed queue's, the cell's) computes its two
/// halves and walks them, where an empty vector's drop is a test.
/// Invariant: `rest` is empty while `first` is `None`, so the order is
/// `first` then `rest`.
#[derive(Debug)]
pub(crate) struct SystemBatch<S> {
    first: Option<S>,
    rest: Vec<S>,
}

impl<S> Default for SystemBatch<S> {
    fn default() -> Self {
        SystemBatch {
            first: None,
            rest: Vec::new(),
        }
    }
}

impl<S> SystemBatch<S> {
    fn push(&mut self, msg: S) {
        if self.first.is_none() {
            debug_assert!(self.rest.is_empty());
            self.first = Some(msg);
        } else {
            self.rest.push(msg);
        }
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }
}

impl<S> IntoIterator for SystemBatch<S> {
    type Item = S;
    type IntoIter = std::iter::Chain<std::option::IntoIter<S>, std::vec::IntoIter<S>>;

    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

/// The user mailbox, the system queue and the scheduling bits of one cell.
pub(crate) struct Queues<M, S> {
    state: AtomicU8,
    mailbox: Mailbox<M>,
    system: Mutex<SystemQueue<S>>,
}

impl<M, S> Queues<M, S> {
    pub(crate) fn new(config: MailboxConfig, order: Option<Priority<M>>, traced: bool) -> Self {
        Queues {
            state: AtomicU8::new(0),
            mailbox: Mailbox::new(config, order, traced),
            system: Mutex::new(SystemQueue {
                queue: SystemBatch::default(),
                closed: false,
            }),
        }
    }

    #[inline]
    pub(crate) fn mailbox(&self) -> &Mailbox<M> {
        &self.mailbox
    }

    /// Takes `SCHEDULED` if nobody holds it; true if the caller now must
    /// submit the cell.
    pub(crate) fn try_schedule(&self) -> bool {
        self.state.fetch_or(SCHEDULED, Ordering::AcqRel) & SCHEDULED == 0
    }

    /// Called by a sender after a push to the mailbox.
    #[inline]
    pub(crate) fn after_push(&self) -> Pushed {
        let now = self.state.load(Ordering::Acquire);
        if now & (SCHEDULED | TERMINATED) == SCHEDULED {
            return Pushed::Running;
        }
        let prev = self.state.fetch_or(SCHEDULED, Ordering::AcqRel);
        if prev & TERMINATED != 0 {
            Pushed::Terminated
        } else if prev & SCHEDULED == 0 {
            Pushed::Schedule
        } else {
            Pushed::Running
        }
    }

    /// Queues a system message. `Ok(true)`: the caller took `SCHEDULED` and
    /// submits the cell. `Err`: the queue is closed (the cell terminated) and
    /// the message comes back for the caller to answer.
    pub(crate) fn push_system(&self, msg: S) -> Result<bool, S> {
        let mut q = lock(&self.system);
        if q.closed {
            return Err(msg);
        }
        q.queue.push(msg);
        let prev = self.state.fetch_or(SCHEDULED | HAS_SYS, Ordering::AcqRel);
        drop(q);
        Ok(prev & SCHEDULED == 0)
    }

    #[inline]
    pub(crate) fn has_system(&self) -> bool {
        self.state.load(Ordering::Acquire) & HAS_SYS != 0
    }

    /// Hands every queued system message to `f` (the runner, holding
    /// `SCHEDULED`), including those queued while `f` runs, until the queue
    /// is empty.
    #[inline]
    pub(crate) fn drain_system(&self, mut f: impl FnMut(S)) {
        // A clear `HAS_SYS` means an empty queue: skip the lock, before
        // the first batch and after each (a push while `f` ran set the bit
        // again). Taking a batch clears it, so this ends; taking once more
        // to find the queue empty cost a lock, an RMW and a dropped batch
        // in every activation that handled a system message.
        while self.has_system() {
            self.take_system().into_iter().for_each(&mut f);
        }
    }

    fn take_system(&self) -> SystemBatch<S> {
        let mut q = lock(&self.system);
        self.state.fetch_and(!HAS_SYS, Ordering::AcqRel);
        std::mem::take(&mut q.queue)
    }

    fn has_work(&self, accepting: bool) -> bool {
        self.has_system() || (accepting && !self.mailbox.is_empty())
    }

    /// The end of an activation: keeps the cell scheduled while it has work;
    /// otherwise clears `SCHEDULED` and looks once more, since a sender that
    /// pushed before the clear saw the bit set and did not schedule.
    /// `accepting` is false while the actor handles no user messages
    /// (suspended, restarting): then only a system message is work.
    pub(crate) fn hand_back(&self, accepting: bool) -> HandBack {
        if self.has_work(accepting) {
            return HandBack::Yield;
        }
        self.state.fetch_and(!SCHEDULED, Ordering::AcqRel);
        if self.has_work(accepting) && self.try_schedule() {
            HandBack::Reacquired
        } else {
            HandBack::Idle
        }
    }

    /// Marks the cell terminated; the caller then drains the mailbox and
    /// closes the system queue.
    pub(crate) fn terminate(&self) {
        self.state.fetch_or(TERMINATED, Ordering::AcqRel);
    }

    #[inline]
    pub(crate) fn is_terminated(&self) -> bool {
        self.state.load(Ordering::Acquire) & TERMINATED != 0
    }

    /// Refuses system messages from now on; returns those still queued.
    pub(crate) fn close_system(&self) -> SystemBatch<S> {
        let mut q = lock(&self.system);
        q.closed = true;
        std::mem::take(&mut q.queue)
    }
}

#[cfg(test)]
mod tests {
    use super::SystemBatch;

    /// The inline first message comes out first, the rest in push order,
    /// and a taken batch leaves an empty one that holds the next push
    /// inline again.
    #[test]
    fn a_system_batch_keeps_push_order() {
        let mut batch = SystemBatch::default();
        assert!(batch.is_empty());
        for n in 1..=5 {
            batch.push(n);
        }
        assert_eq!(batch.len(), 5);
        let taken = std::mem::take(&mut batch);
        assert_eq!(taken.into_iter().collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
        batch.push(6);
        assert_eq!(batch.len(), 1);
        assert_eq!(batch.into_iter().collect::<Vec<_>>(), [6]);
    }
}

/// Model checks of the protocol above, run with
/// `RUSTFLAGS="--cfg loom" cargo test -p volley --release --lib loom`.
/// Each thread that takes `SCHEDULED` runs the cell itself, as a worker
/// would once the dispatcher hands it the cell; that makes a lost wake-up
/// visible as a message nobody handled once every thread has joined.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::actor::mailbox::Envelope;
    use loom::sync::Arc;
    use loom::thread;

    /// What the actor has handled. Behind a mutex taken with `try_lock`, as
    /// `ActorCell::inner` is taken by the holder of `SCHEDULED`: a second
    /// activation at the same time fails the `try_lock`.
    #[derive(Default)]
    struct Handled {
        user: Vec<u32>,
        system: Vec<u32>,
    }

    struct Cell {
        queues: Queues<u32, u32>,
        actor: loom::sync::Mutex<Handled>,
    }

    impl Cell {
        fn new() -> Arc<Self> {
            Arc::new(Cell {
                queues: Queues::new(MailboxConfig::Unbounded, None, false),
                actor: loom::sync::Mutex::new(Handled::default()),
            })
        }

        /// What `ActorCell::run` does with the cell, minus the actor:
        /// system messages, then the mailbox, then the hand-back, again
        /// for as long as the hand-back keeps the cell.
        fn run(&self) {
            loop {
                {
                    let mut actor = self
                        .actor
                        .try_lock()
                        .expect("two activations of one cell at once");
                    self.queues.drain_system(|msg| actor.system.push(msg));
                    let mut batch = std::collections::VecDeque::new();
                    self.queues.mailbox().take_all(&mut batch);
                    actor.user.extend(batch.into_iter().map(|env| match env {
                        Envelope::Msg(m) => m,
                        _ => unreachable!("only messages are sent"),
                    }));
                }
                match self.queues.hand_back(true) {
                    HandBack::Idle => return,
                    HandBack::Yield | HandBack::Reacquired => {}
                }
            }
        }

        fn tell(&self, msg: u32) {
            assert!(self.queues.mailbox().push(Envelope::Msg(msg)).is_ok());
            match self.queues.after_push() {
                Pushed::Schedule => self.run(),
                Pushed::Running => {}
                Pushed::Terminated => unreachable!("nobody terminates the cell"),
            }
        }

        fn send_system(&self, msg: u32) {
            if self.queues.push_system(msg).expect("the queue is open") {
                self.run();
            }
        }
    }

    /// A tell and two system messages race the end of an activation: each
    /// is handled exactly once, by one runner at a time, and the cell ends
    /// up idle. (Two system messages, so that one can arrive while the
    /// runner empties the queue of the other.)
    #[test]
    fn loom_tell_and_system_message_race_the_hand_back() {
        loom::model(|| {
            let cell = Cell::new();
            // The spawner's `schedule_start`.
            assert!(cell.queues.try_schedule());
            let teller = {
                let cell = cell.clone();
                thread::spawn(move || cell.tell(1))
            };
            let watcher = {
                let cell = cell.clone();
                thread::spawn(move || {
                    cell.send_system(2);
                    cell.send_system(3);
                })
            };
            // The first activation, on the spawner's worker.
            cell.run();
            teller.join().unwrap();
            watcher.join().unwrap();

            let handled = cell.actor.try_lock().expect("no runner left");
            assert_eq!(handled.user, [1], "a lost or doubled tell");
            assert_eq!(handled.system, [2, 3], "a lost or doubled system message");
            assert!(cell.queues.mailbox().is_empty());
            assert!(
                cell.queues.try_schedule(),
                "SCHEDULED left set on an idle cell: no tell would wake it"
            );
        });
    }

    /// Two tells from two threads race the first activation's hand-back.
    #[test]
    fn loom_two_tells_race_the_hand_back() {
        loom::model(|| {
            let cell = Cell::new();
            assert!(cell.queues.try_schedule());
            let senders: Vec<_> = (1..=2)
                .map(|n| {
                    let cell = cell.clone();
                    thread::spawn(move || cell.tell(n))
                })
                .collect();
            cell.run();
            for s in senders {
                s.join().unwrap();
            }
            let mut handled = cell.actor.try_lock().expect("no runner left");
            handled.user.sort_unstable();
            assert_eq!(handled.user, [1, 2], "a lost or doubled tell");
            assert!(cell.queues.try_schedule(), "SCHEDULED left set");
        });
    }

    /// The cell terminates (as `finish_stop` does, holding `SCHEDULED` for
    /// good) while a tell and a system message arrive: each ends up with
    /// exactly one of the terminator or its sender, never with nobody.
    #[test]
    fn loom_termination_races_a_tell_and_a_system_message() {
        loom::model(|| {
            let cell = Cell::new();
            assert!(cell.queues.try_schedule());
            let teller = {
                let cell = cell.clone();
                thread::spawn(move || {
                    assert!(cell.queues.mailbox().push(Envelope::Msg(1)).is_ok());
                    match cell.queues.after_push() {
                        // The sender drains, as `drain_to_dead_letters` does.
                        Pushed::Terminated => drain(&cell.queues),
                        Pushed::Running => 0,
                        Pushed::Schedule => panic!("a terminated cell was scheduled"),
                    }
                })
            };
            let watcher = {
                let cell = cell.clone();
                thread::spawn(move || match cell.queues.push_system(2) {
                    // Refused: answered by the sender (`answer_for_the_dead`).
                    Err(_) => 1,
                    Ok(false) => 0,
                    Ok(true) => panic!("a terminated cell was scheduled"),
                })
            };
            cell.queues.terminate();
            let mut drained = drain(&cell.queues);
            let mut answered = cell.queues.close_system().len();
            drained += teller.join().unwrap();
            answered += watcher.join().unwrap();
            assert_eq!(drained, 1, "the tell was lost or dead-lettered twice");
            assert_eq!(answered, 1, "the system message was lost or answered twice");
            assert!(cell.queues.mailbox().is_empty());
        });
    }

    fn drain(queues: &Queues<u32, u32>) -> usize {
        std::iter::from_fn(|| queues.mailbox().pop()).count()
    }
}
