//! `ActorRef`s inside messages, on the wire: the per-connection tables and
//! the id policy behind volley's ref codec hook (`volley::remote::codec`).
//!
//! An `ActorRef` serializes as a `u32`: its id in the sending connection's
//! [`ExportTable`]. The first time a ref is exported on a connection the
//! table assigns the id and queues a declaration (id → path and uid) that
//! the lane writes *before* the message, so the receiver's [`ImportTable`]
//! knows the id when the message arrives. After that, a ref costs four
//! bytes and no string work, however often it is sent: the same compression
//! that Artery and Proto.Actor apply to recipients, applied to reply-to refs
//! too.
//!
//! The codec's functions reach the connection's table through scoped
//! thread-locals that the lane (writing) and the reader set around one
//! message (`scoped-tls`: a borrowed value, no allocation, no reference
//! count).

use std::cell::RefCell;
use std::sync::Arc;

use volley::remote::codec::{self, ImportedRef, RefCodec, RefToEncode};
use volley::{ActorPath, AnyRef, TargetKey};

use crate::transport::refs::id_slots::{Full, IdSlots};
use crate::transport::refs::limit_error::LimitError;
use crate::transport::settings::LimitSettings;
use crate::transport::support::FastMap;
use crate::wire::REQUEST_REPLY_REF;
use import_bytes::{ImportBudget, ImportMeter};
use lasting_ids::LastingIds;
use selections::Selections;

/// A local reply handle must be registered here so that replies can find
/// it; a remote one (an ask of another node, passed on) is addressed by
/// that node's own correlation id.
pub(crate) fn is_local_reply_handle(actor: &AnyRef) -> bool {
    actor.is_reply_handle() && actor.as_remote().is_none()
}

scoped_tls::scoped_thread_local!(static EXPORT: RefCell<ExportTable>);
scoped_tls::scoped_thread_local!(static IMPORT: ImportTable);
// The reply handle of the Request frame being decoded: what ref id 0 means
// in its payload.
scoped_tls::scoped_thread_local!(static REQUEST: ImportedRef);

/// This transport's ref codec, installed when remoting starts.
pub(crate) const REF_CODEC: RefCodec = RefCodec {
    name: "volley-remote",
    encode: encode_in_scope,
    decode: decode_in_scope,
};

/// Installs [`REF_CODEC`] (idempotent).
pub(crate) fn install_codec() -> Result<(), codec::CodecConflict> {
    codec::install(REF_CODEC)
}

#[inline]
fn encode_in_scope(actor: &RefToEncode<'_>) -> Option<u32> {
    if !EXPORT.is_set() {
        return None;
    }
    EXPORT.with(|t| Some(t.borrow_mut().export_at(actor.key(), || actor.to_any())))
}

#[inline]
fn decode_in_scope(id: u32, found: &mut dyn FnMut(Option<&ImportedRef>)) -> bool {
    if !IMPORT.is_set() {
        return false;
    }
    if id == REQUEST_REPLY_REF {
        // Only a Request's payload may name its own reply handle; anywhere
        // else 0 is an undeclared id.
        match REQUEST.is_set() {
            true => REQUEST.with(|handle| found(Some(handle))),
            false => found(None),
        }
        return true;
    }
    IMPORT.with(|t| found(t.get(id)));
    true
}

/// Decodes (with `decode`) the payload of a Request whose reply handle is
/// `handle`: ref id 0 in the payload is that handle.
pub(crate) fn with_request_handle<R>(handle: AnyRef, decode: impl FnOnce() -> R) -> R {
    REQUEST.set(&ImportedRef::once(handle), decode)
}

/// Where [`ExportTable`] puts the first local reply handle of a message that
/// may travel as a Request. Armed between messages, so that the common
/// send pays nothing to arm it; the lane turns it off around the rare
/// frames that cannot be Requests.
enum RequestSlot {
    /// The message being encoded cannot be a Request (a reply, a traced
    /// message): reply handles are declared.
    Off,
    /// It can, and has not met a local reply handle yet.
    Armed,
    /// Its payload names this handle as ref id 0.
    Taken(AnyRef),
}

/// Ids `1..=TEMPORARY_IDS` are a ring for temporary refs (an ask's reply
/// handle: used once, then gone). Recycling them keeps both tables bounded
/// however many asks cross a connection; lasting refs get ids above it.
pub(crate) const TEMPORARY_IDS: u32 = 4096;

/// Refs this side of one connection has declared, by id.
pub(crate) struct ExportTable {
    by_uid: FastMap<u64, Vec<(AnyRef, u32)>>,
    /// Direct-mapped cache from a target's identity to its id: the table
    /// holds every lasting ref it declared, so an identity cannot be reused
    /// by another actor while its entry is here. Turns the hash lookup of a
    /// reply-to ref sent with every message into one compare.
    recent: [(Option<TargetKey>, u32); RECENT_SLOTS],
    /// The ids of lasting refs (at most `limits.max_exported_refs`), and
    /// when those of stopped actors may be used again (`lasting_ids.rs`).
    ids: LastingIds,
    next_temporary: u32,
    pending: Vec<(u32, AnyRef)>,
    request: RequestSlot,
    max_lasting: usize,
    /// How many lasting refs `by_uid` holds.
    lasting_len: usize,
}

/// Warnings about a full export table, at most this many a second.
static FULL_LOG: std::sync::LazyLock<volley::remote::LogLimiter> =
    std::sync::LazyLock::new(|| volley::remote::LogLimiter::new(1));

const RECENT_SLOTS: usize = 16;

impl Default for ExportTable {
    fn default() -> Self {
        ExportTable {
            by_uid: FastMap::default(),
            recent: [(None, 0); RECENT_SLOTS],
            ids: LastingIds::new(usize::MAX),
            next_temporary: 0,
            pending: Vec::new(),
            request: RequestSlot::Armed,
            max_lasting: usize::MAX,
            lasting_len: 0,
        }
    }
}

impl ExportTable {
    /// An empty table (0 means "no ref" on the wire).
    pub(crate) fn new() -> Self {
        ExportTable::default()
    }

    /// An empty table that declares at most `max` lasting refs.
    pub(crate) fn with_max(max: usize) -> Self {
        ExportTable {
            ids: LastingIds::new(max),
            max_lasting: max,
            ..ExportTable::default()
        }
    }

    /// The id of `actor`, declaring it if it is new. A reply handle gets
    /// the next id of the ring every time and is not remembered, so a
    /// connection that carries millions of asks keeps a bounded table; so
    /// does a new lasting ref while all lasting ids are in use.
    pub(crate) fn export(&mut self, actor: &AnyRef) -> u32 {
        self.export_at(actor.target_key(), || actor.clone())
    }

    /// `export` for a target known by identity, building the handle only on
    /// a cache miss (saves two reference-count operations per message).
    #[inline]
    pub(crate) fn export_at(&mut self, key: TargetKey, make: impl FnOnce() -> AnyRef) -> u32 {
        let slot = slot_of(key);
        let (cached, id) = self.recent[slot];
        if cached == Some(key) && id != 0 {
            return id;
        }
        let actor = make();
        let id = self.export_slow(&actor);
        if id > TEMPORARY_IDS {
            self.recent[slot] = (Some(key), id);
        }
        id
    }

    fn export_slow(&mut self, actor: &AnyRef) -> u32 {
        if actor.is_reply_handle() {
            if is_local_reply_handle(actor) {
                match &self.request {
                    RequestSlot::Armed => {
                        self.request = RequestSlot::Taken(actor.clone());
                        return REQUEST_REPLY_REF;
                    }
                    RequestSlot::Taken(first) if first.same_target(actor) => {
                        return REQUEST_REPLY_REF;
                    }
                    _ => {}
                }
            }
            return self.declare_once(actor);
        }
        if let Some(bucket) = self.by_uid.get(&actor.uid()) {
            if let Some((_, id)) = bucket
                .iter()
                .find(|(a, _)| a.same_target(actor) || a == actor)
            {
                return *id;
            }
        }
        if self.ids.wants_sweep() {
            self.release_stopped();
        }
        let Some(id) = self.ids.next() else {
            if FULL_LOG.allow() {
                tracing::info!(
                    path = %actor.path(),
                    "every lasting ref id of a connection is in use (limits.max_exported_refs = {}): refs past them are declared with each message that carries them",
                    self.max_lasting
                );
            }
            return self.declare_once(actor);
        };
        self.by_uid
            .entry(actor.uid())
            .or_default()
            .push((actor.clone(), id));
        self.lasting_len += 1;
        self.pending.push((id, actor.clone()));
        id
    }

    /// The next id of the ring, declared as `actor` for the frame being
    /// encoded and not remembered: a reply handle, used once, or a lasting
    /// ref for which no lasting id is free. The declaration travels next to
    /// the frame (in the same take of the queue), so it needs no care on a
    /// new connection.
    fn declare_once(&mut self, actor: &AnyRef) -> u32 {
        self.next_temporary = self.next_temporary % TEMPORARY_IDS + 1;
        let id = self.next_temporary;
        self.pending.push((id, actor.clone()));
        id
    }

    /// Takes the ids of refs to local actors that have stopped out of the
    /// table, to be given out again once that is safe (`lasting_ids.rs`).
    /// Sending such a ref again declares it anew.
    #[cold]
    fn release_stopped(&mut self) {
        self.release_where(|actor| actor.as_remote().is_none() && actor.is_terminated());
        self.ids.swept();
    }

    /// Takes the refs `gone` picks out of the table, as `release_stopped`
    /// does those of stopped actors; returns how many. The caller must
    /// make sure no route trusts the ids it cached for them (a remote
    /// ref's route caches its id: see `LaneState::generation`).
    #[cold]
    pub(crate) fn release_gone(&mut self, gone: impl FnMut(&AnyRef) -> bool) -> usize {
        self.release_where(gone)
    }

    fn release_where(&mut self, mut gone: impl FnMut(&AnyRef) -> bool) -> usize {
        let ExportTable {
            by_uid,
            recent,
            ids,
            lasting_len,
            ..
        } = self;
        let before = *lasting_len;
        by_uid.retain(|_, bucket| {
            bucket.retain(|(actor, id)| {
                if !gone(actor) {
                    return true;
                }
                // The cache must not answer for it: once the ref is
                // dropped, another actor may get its identity.
                for slot in recent.iter_mut().filter(|slot| slot.1 == *id) {
                    *slot = (None, 0);
                }
                ids.release(*id, actor.clone());
                *lasting_len -= 1;
                false
            });
            !bucket.is_empty()
        });
        before - *lasting_len
    }

    /// The id of an already declared actor, without building a handle.
    pub(crate) fn find(&self, uid: u64, path: &ActorPath) -> Option<u32> {
        self.by_uid
            .get(&uid)?
            .iter()
            .find(|(a, _)| a.path() == path)
            .map(|(_, id)| *id)
    }

    /// Whether the messages encoded next may carry their first local reply
    /// handle inline, as Requests (the default), or must declare it.
    #[inline]
    pub(crate) fn allow_requests(&mut self, allow: bool) {
        self.request = match allow {
            true => RequestSlot::Armed,
            false => RequestSlot::Off,
        };
    }

    /// The reply handle the message just encoded names as ref id 0, if it
    /// named one; the slot is armed again.
    #[inline]
    pub(crate) fn take_request(&mut self) -> Option<AnyRef> {
        match std::mem::replace(&mut self.request, RequestSlot::Armed) {
            RequestSlot::Taken(handle) => Some(handle),
            RequestSlot::Off | RequestSlot::Armed => None,
        }
    }

    /// Queues a declaration of `actor` as `id` again (for a frame written
    /// ahead of the queue that holds its first one); returns `id`.
    pub(crate) fn declare_again(&mut self, id: u32, actor: &AnyRef) -> u32 {
        self.pending.push((id, actor.clone()));
        id
    }

    /// True when declarations wait to be written.
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// True when the message just encoded needs more than its frame:
    /// declarations, or its reply handle's registration as a Request.
    #[inline]
    pub(crate) fn has_pending_or_request(&self) -> bool {
        !self.pending.is_empty() || matches!(self.request, RequestSlot::Taken(_))
    }

    /// Declarations to write before the message that caused them.
    pub(crate) fn take_pending(&mut self) -> Vec<(u32, AnyRef)> {
        std::mem::take(&mut self.pending)
    }

    /// Gives back the emptied vector `take_pending` returned, so that the
    /// next declaration (one per remote ask) reuses its allocation.
    pub(crate) fn give_back(&mut self, mut spare: Vec<(u32, AnyRef)>) {
        if self.pending.is_empty() {
            spare.clear();
            self.pending = spare;
        }
    }

    /// Every lasting ref with its id, and the released ones not yet safe
    /// to reuse: what a new connection's peer must be told again before it
    /// reads frames queued for the old one.
    pub(crate) fn lasting(&self) -> impl Iterator<Item = (u32, &AnyRef)> {
        self.by_uid
            .values()
            .flat_map(|bucket| bucket.iter().map(|(actor, id)| (*id, actor)))
            .chain(self.ids.released())
    }

    /// The highest lasting id given out so far.
    pub(crate) fn highest_id(&self) -> u32 {
        self.ids.highest()
    }

    /// A writer took the lane's whole queue: ids released before now may be
    /// used again (`lasting_ids.rs`).
    #[inline]
    pub(crate) fn note_load(&mut self) {
        self.ids.note_load();
    }

    /// Forgets everything, to number afresh.
    pub(crate) fn clear(&mut self) {
        *self = ExportTable::with_max(self.max_lasting);
    }

    /// How many lasting refs are declared.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lasting_len
    }

    /// The refs the table holds: the lasting ones, and the released ones
    /// not yet let go of (what a new connection would declare).
    pub(crate) fn held(&self) -> usize {
        self.lasting_len + self.ids.released_len()
    }

    /// Runs `f` with this table as the one `ActorRef` serialization uses.
    pub(crate) fn scope<R>(table: &RefCell<ExportTable>, f: impl FnOnce() -> R) -> R {
        EXPORT.set(table, f)
    }
}

/// The cache slot of a target: its identity is an address, whose low bits
/// are alignment.
fn slot_of(key: TargetKey) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = crate::transport::support::FxHasher::default();
    key.hash(&mut h);
    (h.finish() >> 32) as usize % RECENT_SLOTS
}

/// Refs the peer has declared on one connection, by id: memory in
/// proportion to the entries whatever ids the peer picks, at most
/// `limits.max_imported_refs` of them (`refs/id_slots.rs`), and at most
/// `limits.max_imported_ref_bytes` of memory (`import_bytes.rs`).
/// It also carries the decode limits of the payloads read with it.
pub(crate) struct ImportTable {
    slots: IdSlots<ImportedRef>,
    /// The local paths the peer declared without a uid (from `resolve`),
    /// by id, bound or not: such a ref means whatever actor lives at the
    /// path when a message arrives, so the reader looks the path up again
    /// when the bound actor is gone or was never there (`rebind`). Kept
    /// apart from `slots` so that the lookup of every message's recipient
    /// stays as it is; capped like them.
    selections: Selections,
    budget: ImportBudget,
    max_depth: u32,
    max_collection_bytes: usize,
}

impl ImportTable {
    /// An empty table within `limits`, counted in `meter`.
    pub(crate) fn new(limits: &LimitSettings, meter: &Arc<ImportMeter>) -> Self {
        ImportTable {
            slots: IdSlots::new(limits.max_imported_refs),
            selections: Selections::default(),
            budget: ImportBudget::new(limits.max_imported_ref_bytes, meter.clone()),
            max_depth: limits.max_decode_depth,
            max_collection_bytes: limits.max_decode_collection_bytes,
        }
    }

    /// Binds `id` (re-declaring replaces the entry); a new id past the
    /// cap, or past the byte budget, is refused, and the connection must
    /// end.
    pub(crate) fn declare(&mut self, id: u32, actor: AnyRef) -> Result<(), LimitError> {
        // Checked first: a remote ask declares a reply handle, and most
        // connections never see a uid-less local path.
        let old_path = match self.selections.is_empty() {
            true => 0,
            false => self.selection_bytes(id),
        };
        let old = old_path + self.slot_bytes(id);
        let new = import_bytes::entry(&actor);
        self.budget.check(old, new)?;
        self.bind(id, actor)?;
        if old_path != 0 {
            self.selections.remove(id);
        }
        self.budget.commit(old, new);
        Ok(())
    }

    /// Puts `actor` in `id`'s slot; the caller accounts for it.
    fn bind(&mut self, id: u32, actor: AnyRef) -> Result<(), LimitError> {
        self.slots
            .insert(id, ImportedRef::new(actor))
            .map_err(|Full { max }| {
                self.budget.refused();
                LimitError::TooManyImportedRefs { max }
            })
    }

    /// What `id`'s slot costs now.
    #[inline]
    fn slot_bytes(&self, id: u32) -> usize {
        self.slots
            .get(id)
            .map_or(0, |e| import_bytes::entry(e.actor()))
    }

    /// What `id`'s uid-less path costs now.
    fn selection_bytes(&self, id: u32) -> usize {
        self.selections.get(id).map_or(0, import_bytes::selection)
    }

    /// Declares `id` as the uid-less ref to `path`, a path of this node,
    /// bound to `actor`: the actor there now if there is one (a control
    /// lane binds a placeholder that answers a watch when nobody is; it
    /// counts as terminated, so `rebind` replaces it). A new id past the
    /// cap, or past the byte budget, is refused, and the connection must
    /// end.
    pub(crate) fn declare_selection(
        &mut self,
        id: u32,
        path: ActorPath,
        actor: Option<AnyRef>,
    ) -> Result<(), LimitError> {
        let max = self.slots.max();
        if self.selections.len() >= max && !self.selections.contains(id) {
            self.budget.refused();
            return Err(LimitError::TooManyImportedRefs { max });
        }
        let old = self.selection_bytes(id) + self.slot_bytes(id);
        let elements = path.elements();
        let new = import_bytes::selection(elements) + actor.as_ref().map_or(0, import_bytes::entry);
        self.budget.check(old, new)?;
        match actor {
            Some(actor) => self.bind(id, actor)?,
            None => self.slots.remove(id),
        }
        self.selections.insert(id, elements);
        self.budget.commit(old, new);
        Ok(())
    }

    /// Unbinds `id`: messages naming it become dead letters.
    pub(crate) fn forget(&mut self, id: u32) {
        let old = self.selection_bytes(id) + self.slot_bytes(id);
        self.slots.remove(id);
        self.selections.remove(id);
        self.budget.commit(old, 0);
    }

    /// Whether the peer declared any uid-less ref to a local path.
    #[inline]
    pub(crate) fn has_selections(&self) -> bool {
        !self.selections.is_empty()
    }

    /// Whether `id` is a uid-less ref to a local path, which `rebind` may
    /// bind again. The reader asks only about a message that would
    /// otherwise be a dead letter.
    pub(crate) fn may_rebind(&self, id: u32) -> bool {
        self.selections.contains(id)
    }

    /// Binds the uid-less ref `id` to the live actor at its path now, if
    /// there is one; true if it did. A peer that keeps sending to a path
    /// with nobody there thus costs one path lookup per run of messages
    /// that are dead letters anyway, and no memory: nothing is kept.
    #[cold]
    pub(crate) fn rebind(&mut self, id: u32, system: &volley::ActorSystem) -> bool {
        let Some(elements) = self.selections.get(id) else {
            return false;
        };
        let Some(actor) = system.lookup(elements).ok().flatten() else {
            return false;
        };
        if self.slots.get(id).is_some_and(|old| old.actor() == &actor) {
            return false;
        }
        let old = self.slot_bytes(id);
        let new = import_bytes::entry(&actor);
        // Past the cap (the id was unbound and the table is full) or the
        // budget, the message stays a dead letter.
        if self.budget.check(old, new).is_err() || self.bind(id, actor).is_err() {
            return false;
        }
        self.budget.commit(old, new);
        true
    }

    /// Whether `id` is a uid-less local ref bound to no actor or to one
    /// that has terminated: one `rebind` should look up again.
    #[inline]
    pub(crate) fn is_stale(&self, id: u32) -> bool {
        // The map last: a live target answers with one load.
        self.has_selections()
            && self.get(id).is_none_or(|e| e.actor().is_terminated())
            && self.may_rebind(id)
    }

    /// The entry declared as `id`.
    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<&ImportedRef> {
        self.slots.get(id)
    }

    /// What the table keeps, as its budget counts it.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.budget.used()
    }

    /// Runs `f` with this table as the one `ActorRef` deserialization uses.
    /// Payloads decoded meanwhile are held to this connection's limits.
    pub(crate) fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        IMPORT.set(self, || {
            crate::serialization::with_decode_limits(self.max_depth, self.max_collection_bytes, f)
        })
    }
}

pub(crate) mod import_bytes;
mod lasting_ids;
mod selections;
#[cfg(test)]
pub(crate) mod tests;
