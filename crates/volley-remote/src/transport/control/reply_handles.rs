//! The reply handles of this node's asks that wait for a remote answer.
//!
//! When a local ask's reply handle travels to a peer (inside a request), it
//! is declared by a correlation id instead of a path, and kept here until
//! the reply names that id. A handle is taken out by its first reply, so a
//! second reply, or one after the ask timed out, finds nothing and becomes
//! a dead letter, as a late reply is in Akka.
//!
//! The correlation id is a keyed hash of the handle's uid (SipHash with
//! this process's random keys), not the uid itself: uids are counted, so a
//! peer that saw one could guess the next asks' ids and answer them in the
//! asked node's place. And a reply is taken only from the association the
//! request was declared to, unless `trust.replies_from_any_node` lets a
//! node the request was forwarded to answer.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

use volley::AnyRef;

use crate::transport::outbound::association::AssociationId;
use crate::transport::support::lock;

/// A waiting handle and the association its request went to.
struct Waiting {
    handle: AnyRef,
    association: Option<AssociationId>,
}

/// Handles waiting for replies, by correlation id.
pub(crate) struct ReplyHandles {
    waiting: Mutex<Table>,
    /// The secret keys of the correlation ids.
    keys: RandomState,
}

/// The waiting handles, and the size at which finished ones are next
/// swept out.
struct Table {
    /// Keyed by correlation ids, which are keyed hashes already: the map
    /// needs no second keyed hash of its own.
    by_id: HashMap<u64, Waiting, foldhash::fast::RandomState>,
    sweep_at: usize,
}

impl Default for ReplyHandles {
    fn default() -> Self {
        ReplyHandles {
            waiting: Mutex::new(Table {
                by_id: HashMap::default(),
                sweep_at: SWEEP_FROM,
            }),
            keys: RandomState::new(),
        }
    }
}

/// Why a reply found no handle to take.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotTaken {
    /// No ask waits under that id: it was answered, timed out, or never
    /// existed (a late reply, or a guess).
    NotWaiting,
    /// An ask waits under that id, but its request went to another node.
    WrongNode,
}

/// How many handles may wait before finished ones are swept out.
const SWEEP_FROM: usize = 1024;

impl ReplyHandles {
    /// The correlation id `handle` is declared by on the wire; never 0.
    pub(crate) fn correlation_of(&self, handle: &AnyRef) -> u64 {
        self.keys.hash_one(handle.uid()).max(1)
    }

    /// Lets a reply from the association `association` find `handle` by its
    /// correlation id, which it returns. Handles whose ask has ended are
    /// swept out whenever the table has doubled since the last sweep, so
    /// asks that time out do not pile up, and a table whose size hovers
    /// around one value is not swept on every insert.
    pub(crate) fn register(&self, handle: &AnyRef, association: Option<AssociationId>) -> u64 {
        let correlation = self.correlation_of(handle);
        let mut table = lock(&self.waiting);
        if table.by_id.len() >= table.sweep_at {
            table.by_id.retain(|_, w| !w.handle.is_terminated());
            table.sweep_at = (2 * table.by_id.len()).max(SWEEP_FROM);
        }
        table.by_id.insert(
            correlation,
            Waiting {
                handle: handle.clone(),
                association,
            },
        );
        correlation
    }

    /// The waiting handle `correlation`, left in place.
    pub(crate) fn find(&self, correlation: u64) -> Option<AnyRef> {
        lock(&self.waiting)
            .by_id
            .get(&correlation)
            .map(|w| w.handle.clone())
            .filter(|h| !h.is_terminated())
    }

    /// Takes the waiting handle of each of `correlations`, in order, into
    /// `taken`: a handle accepts one reply. `from`: the association the
    /// replies came on; `None` when any node may answer. One lock of the
    /// table serves the whole run of replies that came together.
    pub(crate) fn take_run(
        &self,
        correlations: &[u64],
        from: Option<AssociationId>,
        taken: &mut Vec<Result<AnyRef, NotTaken>>,
    ) {
        let start = taken.len();
        {
            let mut table = lock(&self.waiting);
            for &correlation in correlations {
                taken.push(take_one(&mut table.by_id, correlation, from));
            }
        }
        // Outside the lock: asking a handle whether its ask has ended
        // locks the ask's own state.
        for handle in &mut taken[start..] {
            if matches!(handle, Ok(h) if h.is_terminated()) {
                *handle = Err(NotTaken::NotWaiting);
            }
        }
    }
}

/// Takes `correlation` out of `waiting` if a reply from `from` may answer
/// it. The common case is one lookup: a reply from the wrong node is rare,
/// and its handle is put back to wait for the real answer.
fn take_one(
    waiting: &mut HashMap<u64, Waiting, foldhash::fast::RandomState>,
    correlation: u64,
    from: Option<AssociationId>,
) -> Result<AnyRef, NotTaken> {
    let entry = waiting.remove(&correlation).ok_or(NotTaken::NotWaiting)?;
    if from.is_some() && entry.association.is_some() && entry.association != from {
        waiting.insert(correlation, entry);
        return Err(NotTaken::WrongNode);
    }
    Ok(entry.handle)
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use volley::{Actor, ActorSystem, AskError, Context, HandleResult, Props, ReplyTo};

    use super::*;

    /// Hands every reply handle it is asked with to the test, unanswered.
    struct Keeper(mpsc::Sender<AnyRef>);

    impl Actor for Keeper {
        type Msg = ReplyTo<u32>;
        fn handle(&mut self, _ctx: &mut Context<Self>, reply_to: ReplyTo<u32>) -> HandleResult {
            let _ = self.0.send(reply_to.to_any());
            Ok(())
        }
    }

    impl ReplyHandles {
        fn len(&self) -> usize {
            lock(&self.waiting).by_id.len()
        }

        /// The waiting handle `correlation`, taken out: it accepts one reply.
        /// `from`: the association the reply came on; `None` when any node may
        /// answer.
        fn take(&self, correlation: u64, from: Option<AssociationId>) -> Result<AnyRef, NotTaken> {
            let mut taken = Vec::with_capacity(1);
            self.take_run(&[correlation], from, &mut taken);
            taken.pop().unwrap_or(Err(NotTaken::NotWaiting))
        }
    }

    /// `rounds` × 500 concurrent asks, all timing out; every reply handle
    /// is registered, and every other one is also answered (taken).
    async fn asks_registered(system: &ActorSystem, table: &ReplyHandles, rounds: usize) {
        let (tx, rx) = mpsc::channel();
        let keeper = system
            .spawn_anonymous(Props::new(move || Keeper(tx.clone())))
            .unwrap();
        for _ in 0..rounds {
            let asks: Vec<_> = (0..500)
                .map(|_| {
                    let keeper = keeper.clone();
                    tokio::spawn(async move { keeper.ask(|r| r, Duration::from_millis(50)).await })
                })
                .collect();
            let mut ids = Vec::new();
            for _ in 0..500 {
                let handle = rx.recv_timeout(Duration::from_secs(10)).unwrap();
                ids.push(table.register(&handle, None));
            }
            for ask in asks {
                let outcome = ask.await.unwrap();
                assert!(
                    matches!(outcome, Err(AskError::Timeout { .. })),
                    "{outcome:?}"
                );
            }
            for id in ids.iter().step_by(2) {
                assert_eq!(table.take(*id, None).err(), Some(NotTaken::NotWaiting));
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn timed_out_and_answered_asks_leave_nothing_behind() {
        let system = ActorSystem::new("reply-handles").unwrap();
        let table = ReplyHandles::default();
        asks_registered(&system, &table, 10).await;
        // 5,000 registered, 2,500 taken, all timed out: the sweeps keep the
        // table at most one sweep's worth of finished handles.
        assert!(table.len() <= SWEEP_FROM, "{} handles kept", table.len());
        system.terminate().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_live_handle_is_found_and_taken_once() {
        let system = ActorSystem::new("reply-handles-live").unwrap();
        let table = ReplyHandles::default();
        let (tx, rx) = mpsc::channel();
        let keeper = system
            .spawn_anonymous(Props::new(move || Keeper(tx.clone())))
            .unwrap();
        let ask = tokio::spawn(async move { keeper.ask(|r| r, Duration::from_secs(10)).await });
        let handle = tokio::task::spawn_blocking(move || rx.recv().unwrap())
            .await
            .unwrap();
        let id = table.register(&handle, Some(7));
        assert_eq!(id, table.correlation_of(&handle));
        assert!(table.find(id).is_some());
        assert_eq!(table.take(id, Some(8)).err(), Some(NotTaken::WrongNode));
        let taken = table.take(id, Some(7)).unwrap();
        assert_eq!(table.take(id, Some(7)).err(), Some(NotTaken::NotWaiting));
        taken.downcast::<u32>().unwrap().tell(5);
        assert_eq!(ask.await.unwrap(), Ok(5));
        assert_eq!(table.len(), 0);
        system.terminate().await;
    }
}
