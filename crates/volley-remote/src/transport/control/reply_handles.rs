//! The reply handles of this node's asks that wait for a remote answer.
//!
//! When a local ask's reply handle travels to a peer (inside a request), it
//! is named by a correlation id instead of a path, and kept here until the
//! reply names that id. A handle is taken out by its first reply, so a
//! second reply, or one after the ask timed out, finds nothing and becomes
//! a dead letter, as a late reply is in Akka.
//!
//! The table is a slab: a correlation id is its slot's number (low 32 bits,
//! from 1) and a random tag drawn for that registration (high 32 bits).
//! Every ask from a task registers and takes one handle, so both are a slot
//! access, not a hashed map's insert and remove; and a reply that names an
//! unknown slot (out of range), an empty one (answered, expired) or a slot
//! since reused by another ask (the tag differs: a replayed or guessed id)
//! is turned away by the same O(1) look.
//!
//! The tag is from the operating system's random source (drawn a block at
//! a time), not counted: a peer that saw one id must not be able to guess
//! the next asks' ids and answer them in the asked node's place. And a
//! reply is taken only from the association the request was declared to,
//! unless `trust.replies_from_any_node` lets a node the request was
//! forwarded to answer.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ring::rand::{SecureRandom, SystemRandom};
use volley::AnyRef;

use crate::transport::outbound::association::AssociationId;
use crate::transport::support::lock;

/// A waiting handle and the association its request went to.
struct Waiting {
    handle: AnyRef,
    association: Option<AssociationId>,
}

/// One slot of the table: the tag of its current (or last) registration.
struct Slot {
    tag: u32,
    waiting: Option<Waiting>,
}

/// Handles waiting for replies, by correlation id.
pub(crate) struct ReplyHandles {
    waiting: Mutex<Table>,
}

/// The slots, the free ones, and the count at which finished handles are
/// next swept out.
struct Table {
    slots: Vec<Slot>,
    /// Empty slots, the most recently freed last (reused first: warm).
    free: Vec<u32>,
    /// Slots holding a handle.
    held: usize,
    sweep_at: usize,
    tags: Tags,
}

impl Default for ReplyHandles {
    fn default() -> Self {
        ReplyHandles {
            waiting: Mutex::new(Table {
                slots: Vec::new(),
                free: Vec::new(),
                held: 0,
                sweep_at: SWEEP_FROM,
                tags: Tags::new(),
            }),
        }
    }
}

/// Why a reply found no handle to take.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotTaken {
    /// No ask waits under that id: it was answered, timed out, or never
    /// existed (a late reply, a replayed one, or a guess).
    NotWaiting,
    /// An ask waits under that id, but its request went to another node.
    WrongNode,
}

/// How many handles may wait before finished ones are swept out.
const SWEEP_FROM: usize = 1024;

/// Random tags drawn from the operating system at a time.
const TAG_BLOCK: usize = 512;

/// The random tags of registrations: a block from the operating system's
/// source, used up one by one. Should the source fail, a keyed hash of a
/// counter (SipHash with this process's random keys) stands in.
struct Tags {
    block: Box<[u32; TAG_BLOCK]>,
    next: usize,
    source: SystemRandom,
    fallback: RandomState,
    counted: u64,
}

impl Tags {
    fn new() -> Self {
        Tags {
            block: Box::new([0; TAG_BLOCK]),
            next: TAG_BLOCK,
            source: SystemRandom::new(),
            fallback: RandomState::new(),
            counted: 0,
        }
    }

    fn next(&mut self) -> u32 {
        if self.next == TAG_BLOCK {
            self.refill();
        }
        let tag = self.block[self.next];
        self.next += 1;
        tag
    }

    #[cold]
    fn refill(&mut self) {
        let mut bytes = [0u8; 4 * TAG_BLOCK];
        let filled = self.source.fill(&mut bytes).is_ok();
        for (i, tag) in self.block.iter_mut().enumerate() {
            *tag = if filled {
                u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"))
            } else {
                self.counted += 1;
                self.fallback.hash_one(self.counted) as u32
            };
        }
        self.next = 0;
    }
}

/// The correlation id of slot `index` under `tag`; never 0.
fn correlation(index: usize, tag: u32) -> u64 {
    (u64::from(tag) << 32) | (index as u64 + 1)
}

/// The slot index and tag `correlation` names, if it names a slot at all.
fn slot_of(correlation: u64) -> Option<(usize, u32)> {
    let number = correlation as u32;
    (number != 0).then(|| ((number - 1) as usize, (correlation >> 32) as u32))
}

impl Table {
    /// The slot `correlation` names, if it is in range and its tag matches.
    fn slot_mut(&mut self, correlation: u64) -> Option<&mut Slot> {
        let (index, tag) = slot_of(correlation)?;
        self.slots.get_mut(index).filter(|s| s.tag == tag)
    }

    /// The id `handle` was given (`cell`: its correlation cell), if its
    /// slot still holds it.
    fn registered(&mut self, handle: &AnyRef, cell: &AtomicU64) -> Option<(u64, &mut Waiting)> {
        let id = cell.load(Ordering::Relaxed);
        let waiting = self.slot_mut(id)?.waiting.as_mut()?;
        waiting.handle.same_target(handle).then_some((id, waiting))
    }

    /// Empties the slots of handles whose ask has ended.
    fn sweep(&mut self) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot
                .waiting
                .as_ref()
                .is_some_and(|w| w.handle.is_terminated())
            {
                slot.waiting = None;
                self.free.push(index as u32);
                self.held -= 1;
            }
        }
        self.sweep_at = (2 * self.held).max(SWEEP_FROM);
    }

    /// Puts `waiting` into a free slot under a fresh tag; returns its id.
    /// The tag is never the slot's previous one, so a late reply to the
    /// ask that last held the slot cannot reach this one.
    fn insert(&mut self, waiting: Waiting) -> u64 {
        let mut tag = self.tags.next();
        let index = match self.free.pop() {
            Some(index) => index as usize,
            None => {
                self.slots.push(Slot {
                    tag: !tag,
                    waiting: None,
                });
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[index];
        while tag == slot.tag {
            tag = self.tags.next();
        }
        slot.tag = tag;
        slot.waiting = Some(waiting);
        self.held += 1;
        correlation(index, tag)
    }

    /// Takes `correlation` out if a reply from `from` may answer it.
    fn take(&mut self, correlation: u64, from: Option<AssociationId>) -> Result<AnyRef, NotTaken> {
        let (index, tag) = slot_of(correlation).ok_or(NotTaken::NotWaiting)?;
        let slot = match self.slots.get_mut(index) {
            Some(slot) if slot.tag == tag => slot,
            _ => return Err(NotTaken::NotWaiting),
        };
        match &slot.waiting {
            None => return Err(NotTaken::NotWaiting),
            Some(w) if from.is_some() && w.association.is_some() && w.association != from => {
                return Err(NotTaken::WrongNode)
            }
            Some(_) => {}
        }
        let waiting = slot.waiting.take().ok_or(NotTaken::NotWaiting)?;
        self.free.push(index as u32);
        self.held -= 1;
        Ok(waiting.handle)
    }
}

impl ReplyHandles {
    /// The correlation id `handle` is named by on the wire; never 0.
    /// Registers it (for a reply from any association) if it has none.
    ///
    /// A handle that was registered keeps the id it was known by once its
    /// reply took it out of the table, whether its ask has ended yet or
    /// not (the reply takes it out, then ends the ask: a watch can come in
    /// between): a watch of it is answered with a death notice naming that
    /// id, the one the watcher's node knows (a new registration would name
    /// an ask nobody knows, and the watcher would never hear of the end).
    /// Only a reply or a sweep of an ended handle takes one out, so a
    /// handle with an id outside the table waits for no other answer.
    pub(crate) fn correlation_of(&self, handle: &AnyRef) -> u64 {
        if let Some(cell) = handle.correlation_cell() {
            if let Some((id, _)) = lock(&self.waiting).registered(handle, cell) {
                return id;
            }
            let known = cell.load(Ordering::Relaxed);
            if known != 0 {
                return known;
            }
        }
        self.register(handle, None)
    }

    /// Lets a reply from the association `association` find `handle` by its
    /// correlation id, which it returns: the same id each time `handle` is
    /// registered while it waits, with the association of the latest
    /// registration. Handles whose ask has ended are swept out whenever
    /// the table has doubled since the last sweep, so asks that time out
    /// do not pile up, and a table whose size hovers around one value is
    /// not swept on every insert.
    pub(crate) fn register(&self, handle: &AnyRef, association: Option<AssociationId>) -> u64 {
        // One virtual call for the cell, used for both the look-up and the
        // store.
        let cell = handle.correlation_cell();
        let mut table = lock(&self.waiting);
        if let Some((id, waiting)) = cell.and_then(|c| table.registered(handle, c)) {
            waiting.association = association;
            return id;
        }
        if table.held >= table.sweep_at {
            table.sweep();
        }
        let id = table.insert(Waiting {
            handle: handle.clone(),
            association,
        });
        if let Some(cell) = cell {
            cell.store(id, Ordering::Relaxed);
        }
        id
    }

    /// The waiting handle `correlation`, left in place.
    pub(crate) fn find(&self, correlation: u64) -> Option<AnyRef> {
        lock(&self.waiting)
            .slot_mut(correlation)
            .and_then(|s| s.waiting.as_ref())
            .map(|w| w.handle.clone())
            .filter(|h| !h.is_terminated())
    }

    /// Takes the waiting handle of each of `correlations`, in order, into
    /// `taken`: a handle accepts one reply. `from`: the association the
    /// replies came on; `None` when any node may answer. One lock of the
    /// table serves the whole run of replies that came together; a reply
    /// from the wrong node leaves the handle to wait for the real answer.
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
                taken.push(table.take(correlation, from));
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
            lock(&self.waiting).held
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

    /// A keeper actor and the reply handles of the asks made of it.
    struct KeptAsks {
        keeper: volley::ActorRef<ReplyTo<u32>>,
        handles: std::sync::Arc<Mutex<mpsc::Receiver<AnyRef>>>,
    }

    impl KeptAsks {
        fn new(system: &ActorSystem) -> Self {
            let (tx, rx) = mpsc::channel();
            let keeper = system
                .spawn_anonymous(Props::new(move || Keeper(tx.clone())))
                .unwrap();
            KeptAsks {
                keeper,
                handles: std::sync::Arc::new(Mutex::new(rx)),
            }
        }

        /// Starts an ask of the keeper: the ask, and its reply handle.
        async fn start(&self) -> (tokio::task::JoinHandle<Result<u32, AskError>>, AnyRef) {
            let keeper = self.keeper.clone();
            let ask = tokio::spawn(async move { keeper.ask(|r| r, Duration::from_secs(10)).await });
            let handles = self.handles.clone();
            let handle = tokio::task::spawn_blocking(move || handles.lock().unwrap().recv())
                .await
                .unwrap()
                .unwrap();
            (ask, handle)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_live_handle_is_found_and_taken_once() {
        let system = ActorSystem::new("reply-handles-live").unwrap();
        let table = ReplyHandles::default();
        let (ask, handle) = KeptAsks::new(&system).start().await;
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

    /// A handle answered is still named by the id it was registered under,
    /// not registered anew: once its reply has taken it out of the table
    /// but before its ask ends (a watch that comes in that moment must get
    /// a death notice the watcher's node knows), and after.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answered_handle_keeps_its_id() {
        let system = ActorSystem::new("reply-handles-answered").unwrap();
        let table = ReplyHandles::default();
        let (ask, handle) = KeptAsks::new(&system).start().await;
        let id = table.register(&handle, None);
        let taken = table.take(id, None).unwrap();
        assert!(!handle.is_terminated(), "the reply is not delivered yet");
        assert_eq!(table.correlation_of(&handle), id);
        taken.downcast::<u32>().unwrap().tell(5);
        assert_eq!(ask.await.unwrap(), Ok(5));
        assert!(handle.is_terminated());
        assert_eq!(table.correlation_of(&handle), id);
        assert_eq!(table.len(), 0, "nothing registered anew");
        system.terminate().await;
    }

    /// The ids a reply may name wrongly: one never given (out of range, or
    /// slot number 0), one already answered (replayed), and one whose slot
    /// a later ask reuses (its tag differs); none takes a handle. A handle
    /// registered again keeps its id and takes the new association.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unknown_replayed_and_reused_ids_take_nothing() {
        let system = ActorSystem::new("reply-handles-ids").unwrap();
        let table = ReplyHandles::default();
        let asks = KeptAsks::new(&system);
        let (first, h1) = asks.start().await;
        let id1 = table.register(&h1, Some(1));
        assert_eq!(
            table.register(&h1, Some(2)),
            id1,
            "registered again: same id"
        );
        assert_eq!(table.take(id1, Some(1)).err(), Some(NotTaken::WrongNode));
        let taken = table.take(id1, Some(2)).unwrap();
        taken.downcast::<u32>().unwrap().tell(1);
        assert_eq!(first.await.unwrap(), Ok(1));
        assert_eq!(table.take(id1, Some(2)).err(), Some(NotTaken::NotWaiting));

        let (second, h2) = asks.start().await;
        let id2 = table.register(&h2, Some(2));
        assert_eq!(id2 as u32, id1 as u32, "the freed slot is reused");
        assert_ne!(id2, id1, "under a new tag");
        // The first ask's id, replayed, does not take the second's handle.
        assert_eq!(table.take(id1, Some(2)).err(), Some(NotTaken::NotWaiting));
        assert!(table.find(id1).is_none());
        for unknown in [id2 + 1, id2 & !0xffff_ffff, u64::MAX, 1 << 32] {
            assert_eq!(
                table.take(unknown, Some(2)).err(),
                Some(NotTaken::NotWaiting)
            );
        }
        assert!(table.find(id2).is_some());
        table
            .take(id2, Some(2))
            .unwrap()
            .downcast::<u32>()
            .unwrap()
            .tell(2);
        assert_eq!(second.await.unwrap(), Ok(2));
        assert_eq!(table.len(), 0);
        system.terminate().await;
    }

    /// A slot reused under a tag drawn equal to its last one draws again:
    /// the previous ask's id never names the next one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reused_slot_never_gets_its_previous_tag() {
        let system = ActorSystem::new("reply-handles-tags").unwrap();
        let table = ReplyHandles::default();
        let asks = KeptAsks::new(&system);
        let (first, h1) = asks.start().await;
        let id1 = table.register(&h1, None);
        table
            .take(id1, None)
            .unwrap()
            .downcast::<u32>()
            .unwrap()
            .tell(1);
        assert_eq!(first.await.unwrap(), Ok(1));
        {
            // The next two tags drawn: the slot's last one, then another.
            let mut t = lock(&table.waiting);
            let at = t.tags.next.min(TAG_BLOCK - 2);
            t.tags.block[at] = (id1 >> 32) as u32;
            t.tags.block[at + 1] = !((id1 >> 32) as u32);
            t.tags.next = at;
        }
        let (second, h2) = asks.start().await;
        let id2 = table.register(&h2, None);
        assert_eq!(id2 as u32, id1 as u32, "the freed slot is reused");
        assert_eq!(id2 >> 32, u64::from(!((id1 >> 32) as u32)));
        assert_eq!(table.take(id1, None).err(), Some(NotTaken::NotWaiting));
        table
            .take(id2, None)
            .unwrap()
            .downcast::<u32>()
            .unwrap()
            .tell(2);
        assert_eq!(second.await.unwrap(), Ok(2));
        system.terminate().await;
    }
}
