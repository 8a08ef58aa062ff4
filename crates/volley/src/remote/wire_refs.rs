//! `ActorRef`s inside messages, on the wire.
//!
//! An `ActorRef` serializes as a `u32`: its id in the sending connection's
//! [`ExportTable`]. The first time a ref is exported on a connection the
//! table assigns the id and queues a declaration (id → path and uid) that the
//! transport writes *before* the message, so the receiver's [`ImportTable`]
//! knows the id when the message arrives. After that, a ref costs four bytes
//! and no string work, however often it is sent: the same compression that
//! Artery and Proto.Actor apply to recipients, applied to reply-to refs too.
//!
//! Serde has no context parameter, so the tables are reached through scoped
//! thread-locals that the transport sets around (de)serializing one message
//! (`scoped-tls`: a borrowed value, no allocation, no reference count).
//! Serializing an `ActorRef` outside such a scope is an error, not a panic.

use std::any::Any;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::actor_ref::{ActorRef, AnyRef};

scoped_tls::scoped_thread_local!(static EXPORT: RefCell<ExportTable>);
scoped_tls::scoped_thread_local!(static IMPORT: ImportTable);

/// Hashes a `u64` uid with one multiplication (the Fx hash): SipHash showed
/// up at 2% of the remote send path, and uids are not attacker-chosen.
#[derive(Default)]
struct UidHasher(u64);

impl std::hash::Hasher for UidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type UidMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<UidHasher>>;

/// Ids `1..=TEMPORARY_IDS` are a ring for temporary refs (an ask's reply
/// handle: used once, then gone). Recycling them keeps both tables bounded
/// however many asks cross a connection; lasting refs get ids above it.
pub const TEMPORARY_IDS: u32 = 4096;

/// Refs this side of one connection has declared, by id.
pub struct ExportTable {
    by_uid: UidMap<Vec<(AnyRef, u32)>>,
    /// Direct-mapped cache from a target's address to its id: the table
    /// holds every lasting ref it declared, so an address cannot be reused
    /// by another actor while its entry is here. Turns the hash lookup of a
    /// reply-to ref sent with every message into one compare.
    recent: [(usize, u32); RECENT_SLOTS],
    next_id: u32,
    next_temporary: u32,
    pending: Vec<(u32, AnyRef)>,
}

const RECENT_SLOTS: usize = 16;

impl Default for ExportTable {
    fn default() -> Self {
        ExportTable {
            by_uid: UidMap::default(),
            recent: [(0, 0); RECENT_SLOTS],
            next_id: TEMPORARY_IDS,
            next_temporary: 0,
            pending: Vec::new(),
        }
    }
}

/// An ask's reply handle (local or remote): single-use, under `/temp`.
pub fn is_temporary(actor: &AnyRef) -> bool {
    actor.path().elements().starts_with("/temp/")
}

impl ExportTable {
    /// An empty table (0 means "no ref" on the wire).
    pub fn new() -> Self {
        ExportTable::default()
    }

    /// The id of `actor`, declaring it if it is new. A temporary ref gets
    /// the next id of the ring every time and is not remembered, so a
    /// connection that carries millions of asks keeps a bounded table.
    pub fn export(&mut self, actor: &AnyRef) -> u32 {
        let address = actor.target_address();
        self.export_at(address, || actor.clone())
    }

    /// `export` for a target known by address, building the handle only on
    /// a cache miss (saves two reference-count operations per message).
    fn export_at(&mut self, address: usize, make: impl FnOnce() -> AnyRef) -> u32 {
        let slot = (address >> 4) % RECENT_SLOTS;
        let (cached, id) = self.recent[slot];
        if cached == address && id != 0 {
            return id;
        }
        let actor = make();
        let id = self.export_slow(&actor);
        if id > TEMPORARY_IDS {
            self.recent[slot] = (address, id);
        }
        id
    }

    fn export_slow(&mut self, actor: &AnyRef) -> u32 {
        if is_temporary(actor) {
            self.next_temporary = self.next_temporary % TEMPORARY_IDS + 1;
            let id = self.next_temporary;
            self.pending.push((id, actor.clone()));
            return id;
        }
        let bucket = self.by_uid.entry(actor.uid()).or_default();
        if let Some((_, id)) = bucket
            .iter()
            .find(|(a, _)| a.same_target(actor) || a == actor)
        {
            return *id;
        }
        self.next_id += 1;
        let id = self.next_id;
        bucket.push((actor.clone(), id));
        self.pending.push((id, actor.clone()));
        id
    }

    /// The id of an already declared actor, without building a handle.
    pub fn find(&self, uid: u64, path: &crate::ActorPath) -> Option<u32> {
        self.by_uid
            .get(&uid)?
            .iter()
            .find(|(a, _)| a.path() == path)
            .map(|(_, id)| *id)
    }

    /// True when declarations wait to be written.
    #[inline]
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Declarations to write before the message that caused them.
    pub fn take_pending(&mut self) -> Vec<(u32, AnyRef)> {
        std::mem::take(&mut self.pending)
    }

    /// Forgets everything: for a new connection.
    pub fn clear(&mut self) {
        *self = ExportTable::default();
    }

    /// How many refs are declared.
    pub fn len(&self) -> usize {
        self.by_uid.values().map(Vec::len).sum()
    }

    /// True if nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.by_uid.is_empty()
    }

    /// Runs `f` with this table as the one `ActorRef` serialization uses.
    pub fn scope<R>(table: &RefCell<ExportTable>, f: impl FnOnce() -> R) -> R {
        EXPORT.set(table, f)
    }
}

struct ImportSlot {
    actor: AnyRef,
    /// The typed handle for the protocol last used with this ref; a ref is
    /// almost always used with one type, so this makes the lookup free.
    typed: OnceCell<Box<dyn Any + Send + Sync>>,
}

/// Refs the peer has declared on one connection, by id.
#[derive(Default)]
pub struct ImportTable {
    slots: Vec<Option<ImportSlot>>,
}

impl ImportTable {
    /// An empty table.
    pub fn new() -> Self {
        ImportTable::default()
    }

    /// Binds `id` (re-declaring replaces the entry).
    pub fn declare(&mut self, id: u32, actor: AnyRef) {
        let index = id as usize;
        if self.slots.len() <= index {
            self.slots.resize_with(index + 1, || None);
        }
        self.slots[index] = Some(ImportSlot {
            actor,
            typed: OnceCell::new(),
        });
    }

    /// The ref declared as `id`.
    pub fn get(&self, id: u32) -> Option<&AnyRef> {
        self.slots.get(id as usize)?.as_ref().map(|s| &s.actor)
    }

    /// The ref declared as `id`, typed for protocol `M`; `None` if unknown
    /// or if the actor's protocol is not `M`.
    pub fn typed<M: Send + 'static>(&self, id: u32) -> Option<ActorRef<M>> {
        let slot = self.slots.get(id as usize)?.as_ref()?;
        let cached = slot
            .typed
            .get_or_init(|| Box::new(slot.actor.downcast::<M>()));
        match cached.downcast_ref::<Option<ActorRef<M>>>() {
            Some(typed) => typed.clone(),
            None => slot.actor.downcast::<M>(),
        }
    }

    /// Like [`ImportTable::typed`], but borrowed from the table's cache: no
    /// reference count is touched, which is what the reader wants per
    /// message. `None` also when the cache holds another protocol (then use
    /// `typed`).
    pub fn typed_ref<M: Send + 'static>(&self, id: u32) -> Option<&ActorRef<M>> {
        let slot = self.slots.get(id as usize)?.as_ref()?;
        slot.typed
            .get_or_init(|| Box::new(slot.actor.downcast::<M>()))
            .downcast_ref::<Option<ActorRef<M>>>()?
            .as_ref()
    }

    /// Runs `f` with this table as the one `ActorRef` deserialization uses.
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        IMPORT.set(self, f)
    }
}

impl<M: Send + 'static> Serialize for ActorRef<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !EXPORT.is_set() {
            return Err(S::Error::custom(
                "an ActorRef can only be serialized by a volley transport",
            ));
        }
        let address = self.target_address();
        let id = EXPORT.with(|t| t.borrow_mut().export_at(address, || self.to_any()));
        serializer.serialize_u32(id)
    }
}

impl<'de, M: Send + 'static> Deserialize<'de> for ActorRef<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = u32::deserialize(deserializer)?;
        if !IMPORT.is_set() {
            return Err(D::Error::custom(
                "an ActorRef can only be deserialized by a volley transport",
            ));
        }
        IMPORT.with(|t| t.typed::<M>(id)).ok_or_else(|| {
            D::Error::custom(format!(
                "actor ref id {id} is not declared, or not an actor of {}",
                std::any::type_name::<M>()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ask::unanswered_reply_handle;
    use crate::{Actor, ActorSystem, Context, HandleResult, Props};

    struct Nop;
    impl Actor for Nop {
        type Msg = ();
        fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
            Ok(())
        }
    }

    #[test]
    fn lasting_refs_keep_their_id_and_temporary_ones_use_a_bounded_ring() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let system = ActorSystem::new("wire-refs").unwrap();
        let a = system.spawn("a", Props::new(|| Nop)).unwrap().to_any();
        let mut table = ExportTable::new();
        let id = table.export(&a);
        assert!(id > TEMPORARY_IDS);
        assert_eq!(table.export(&a), id, "same ref, same id");
        assert_eq!(table.take_pending().len(), 1, "declared once");
        let mut seen = std::collections::HashSet::new();
        for _ in 0..3 * TEMPORARY_IDS {
            let temp = unanswered_reply_handle::<u32>(&system).to_any();
            let t = table.export(&temp);
            assert!((1..=TEMPORARY_IDS).contains(&t));
            seen.insert(t);
        }
        assert_eq!(seen.len(), TEMPORARY_IDS as usize, "the ring is reused");
        assert_eq!(table.len(), 1, "temporary refs are not remembered");
        assert_eq!(table.take_pending().len(), 3 * TEMPORARY_IDS as usize);
        rt.block_on(system.terminate());
    }
}
