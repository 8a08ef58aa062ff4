//! Which Rust types travel under which wire type ids, and which actor kinds
//! may be spawned remotely.
//!
//! Registration happens before the transport starts and is frozen after, so
//! lookups on the hot path take no lock. Per type the registry keeps two
//! monomorphized functions (encode from `&dyn Any`, decode-and-deliver), so
//! neither direction allocates or dispatches through a trait object per
//! message.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use serde::de::DeserializeOwned;
use serde::Serialize;
use volley::{Actor, ActorSystem, AnyRef, MessageBatch, Props};

use crate::transport::refs::tables::{with_request_handle, ExportTable, ImportTable};
use crate::transport::support::FastMap;

use crate::serialization::direct::{self, DirectCodec};
use crate::serialization::{BincodeSerializer, SerializeError, Serializer, SerializerId};

/// Why a message could not be delivered after it was read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeliverError {
    #[error("recipient ref id {0} is not declared on this connection")]
    UnknownRecipient(u32),
    #[error("recipient does not accept {0}")]
    WrongProtocol(&'static str),
    #[error(transparent)]
    Deserialize(#[from] SerializeError),
    #[error("serializer {0} is not the one registered for this type")]
    WrongSerializer(SerializerId),
}

/// Encodes a message into the frame being built, naming the refs in it by
/// the connection's export table. The error is boxed so that the result
/// is one word in a register: every remote send returns it.
pub(crate) type EncodeFn =
    fn(&(dyn Any + Send), &mut BytesMut, &RefCell<ExportTable>) -> Result<(), Box<SerializeError>>;
pub(crate) type DeliverToFn = fn(&[u8], &ImportTable, &AnyRef) -> Result<(), DeliverError>;
/// Decodes a run of payloads for one recipient and delivers them together;
/// what cannot be delivered goes to the callback, the rest in order. The
/// next argument makes the reply handle of a payload that came in a
/// Request, from its correlation id. With the last one true, a run whose
/// recipient is a uid-less local ref that is stale (`ImportTable::is_stale`)
/// is left undelivered and [`Stale`] returned, for the caller to rebind it
/// and try again.
pub(crate) type DeliverRunFn = fn(
    Payloads<'_>,
    &ImportTable,
    u32,
    &mut Option<Box<dyn Any + Send>>,
    &mut dyn FnMut(DeliverError),
    &dyn Fn(u64) -> Option<AnyRef>,
    bool,
) -> Result<(), Stale>;

/// A run not delivered because its recipient's binding is stale.
#[derive(Debug)]
pub(crate) struct Stale;
/// Decodes one payload and delivers it with the sender's trace context.
pub(crate) type DeliverTracedFn =
    fn(&[u8], &ImportTable, u32, volley::TraceParent) -> Result<(), DeliverError>;
pub(crate) type SpawnFn =
    Arc<dyn Fn(&ActorSystem, &[u8], Option<&str>) -> Result<AnyRef, String> + Send + Sync>;

#[derive(Clone, Copy)]
pub(crate) struct OutboundType {
    pub(crate) wire_id: u32,
    pub(crate) serializer: SerializerId,
    pub(crate) encode: EncodeFn,
}

#[derive(Clone, Copy)]
pub(crate) struct InboundType {
    pub(crate) name: &'static str,
    pub(crate) serializer: SerializerId,
    /// Decode and deliver to a ref found by other means (an ask's reply
    /// handle, found by correlation id).
    pub(crate) deliver_to: DeliverToFn,
    /// Decode and deliver a run of messages for one recipient
    /// (`transport::delivery`).
    pub(crate) deliver_run: DeliverRunFn,
    /// Decode and deliver one message that came with a trace context.
    pub(crate) deliver_traced: DeliverTracedFn,
    /// Register a remote ref under a service key of this protocol in a
    /// receptionist (the cluster receptionist's entries from other nodes).
    pub(crate) mirror: volley::MirrorFn,
}

/// Registrations, built before the transport starts.
#[derive(Default, Clone)]
pub struct Registry {
    /// Outbound registrations in registration order: a ref remembers the
    /// index of the type it last sent (`RouteHint::outbound_type`), so a send
    /// checks one entry instead of hashing.
    pub(crate) outbound: Vec<(TypeId, OutboundType)>,
    /// Index into `outbound`, by type.
    pub(crate) by_type: FastMap<TypeId, usize>,
    pub(crate) by_wire_id: FastMap<u32, InboundType>,
    pub(crate) kinds: HashMap<String, SpawnFn>,
}

/// A registration that conflicts with an earlier one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Two types under one wire id.
    #[error("wire type id {id} is already registered for {existing}")]
    DuplicateId {
        /// The id.
        id: u32,
        /// The type that has it.
        existing: &'static str,
    },
    /// One type under two ids.
    #[error("type {0} is already registered")]
    DuplicateType(&'static str),
    /// Two spawnable kinds with one name.
    #[error("spawnable kind {0:?} is already registered")]
    DuplicateKind(String),
}

/// How a registered type's payloads are written and read: through a serde
/// [`Serializer`] inside the connection's ref-table scopes ([`Serde`]), or
/// by a [`DirectCodec`] handed the tables ([`Direct`]), which needs no
/// scope at all.
pub(crate) trait Codec<M> {
    /// The serializer id in the frames.
    fn id() -> SerializerId;
    /// Appends `msg`'s payload; `exports` names the refs in it.
    fn encode(
        msg: &M,
        buf: &mut BytesMut,
        exports: &RefCell<ExportTable>,
    ) -> Result<(), SerializeError>;
    /// Runs `f`, which decodes payloads of the connection whose table is
    /// `imports`, in the scope those payloads need.
    fn scope<R>(imports: &ImportTable, f: impl FnOnce() -> R) -> R;
    /// Decodes one payload, inside [`Codec::scope`]; `request` is the reply
    /// handle of the Request frame it came in (what ref id 0 names).
    fn decode(
        payload: &[u8],
        imports: &ImportTable,
        request: Option<AnyRef>,
    ) -> Result<M, SerializeError>;
}

/// The serde path: `S` finds the connection's tables through the scoped
/// thread-locals of `refs/tables.rs`.
pub(crate) struct Serde<S>(PhantomData<S>);

impl<M, S: Serializer<M> + Default> Codec<M> for Serde<S> {
    #[inline]
    fn id() -> SerializerId {
        S::default().id()
    }

    #[inline]
    fn encode(
        msg: &M,
        buf: &mut BytesMut,
        exports: &RefCell<ExportTable>,
    ) -> Result<(), SerializeError> {
        ExportTable::scope(exports, || S::default().encode(msg, buf))
    }

    #[inline]
    fn scope<R>(imports: &ImportTable, f: impl FnOnce() -> R) -> R {
        imports.scope(f)
    }

    #[inline]
    fn decode(
        payload: &[u8],
        _imports: &ImportTable,
        request: Option<AnyRef>,
    ) -> Result<M, SerializeError> {
        match request {
            None => S::default().decode(payload),
            Some(handle) => with_request_handle(handle, || S::default().decode(payload)),
        }
    }
}

/// The direct path (`serialization/direct.rs`): the tables are arguments.
pub(crate) struct Direct;

impl<M: DirectCodec> Codec<M> for Direct {
    #[inline]
    fn id() -> SerializerId {
        SerializerId::BINCODE
    }

    #[inline]
    fn encode(
        msg: &M,
        buf: &mut BytesMut,
        exports: &RefCell<ExportTable>,
    ) -> Result<(), SerializeError> {
        direct::encode_with(msg, buf, Some(exports))
    }

    #[inline]
    fn scope<R>(_imports: &ImportTable, f: impl FnOnce() -> R) -> R {
        f()
    }

    #[inline]
    fn decode(
        payload: &[u8],
        imports: &ImportTable,
        request: Option<AnyRef>,
    ) -> Result<M, SerializeError> {
        match request {
            None => direct::decode_with(payload, Some(imports), None),
            Some(handle) => {
                let handle = volley::remote::codec::ImportedRef::once(handle);
                direct::decode_with(payload, Some(imports), Some(&handle))
            }
        }
    }
}

fn encode<M: Send + 'static, C: Codec<M>>(
    msg: &(dyn Any + Send),
    buf: &mut BytesMut,
    exports: &RefCell<ExportTable>,
) -> Result<(), Box<SerializeError>> {
    let Some(m) = msg.downcast_ref::<M>() else {
        return Err(Box::new(SerializeError::Encode {
            serializer: C::id(),
            source: "message is not of its registered type".into(),
        }));
    };
    // A serializer (or a `Serialize` impl) that panics must not leave half
    // a payload in the lane's buffer, nor unwind through the lane's lock:
    // the message fails like one that does not serialize (Artery likewise
    // drops a message whose serializer throws and keeps the connection).
    let start = buf.len();
    match std::panic::catch_unwind(AssertUnwindSafe(|| C::encode(m, buf, exports))) {
        Ok(outcome) => outcome.map_err(Box::new),
        Err(panic) => {
            buf.truncate(start);
            Err(Box::new(SerializeError::Encode {
                serializer: C::id(),
                source: format!("serializer panicked: {}", panic_text(&*panic)).into(),
            }))
        }
    }
}

/// Decodes one plain payload; a serializer that panics on the peer's bytes
/// makes the message undeliverable instead of ending the connection's
/// reader.
#[inline]
fn decode_guarded<M, C: Codec<M>>(
    imports: &ImportTable,
    payload: &[u8],
) -> Result<M, SerializeError> {
    C::scope(imports, || {
        guarded(C::id(), || C::decode(payload, imports, None))
    })
}

/// `decode()`, with a panic in it made the decode error of `serializer`.
#[inline]
fn guarded<M>(
    serializer: SerializerId,
    decode: impl FnOnce() -> Result<M, SerializeError>,
) -> Result<M, SerializeError> {
    std::panic::catch_unwind(AssertUnwindSafe(decode))
        .unwrap_or_else(|panic| Err(panicked(serializer, &*panic)))
}

fn panic_text(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Decodes one payload, inside the codec's scope; one that came in a
/// Request with its reply handle as ref id 0. Without a panic guard: the
/// caller holds one ([`guarded`], [`decode_run`]).
#[inline]
fn decode_unguarded<M, C: Codec<M>>(
    payload: &[u8],
    imports: &ImportTable,
    reply: u64,
    handle_of: &dyn Fn(u64) -> Option<AnyRef>,
) -> Result<M, SerializeError> {
    match reply {
        0 => C::decode(payload, imports, None),
        // Without a handle (no way back to the peer), ref id 0 is
        // undeclared and the message fails to decode, saying so.
        correlation => C::decode(payload, imports, handle_of(correlation)),
    }
}

/// Decodes payloads `0..len` of a run in order (`decode(i)`) into `batch`,
/// under one panic guard for the run instead of one per message: a
/// serializer that panics fails its own message only (as
/// [`guarded`] would), and decoding goes on with the next one under
/// a new guard.
#[inline]
fn decode_run<M>(
    len: usize,
    serializer: SerializerId,
    mut keep: impl FnMut(M),
    failed: &mut dyn FnMut(DeliverError),
    mut decode: impl FnMut(usize) -> Result<M, SerializeError>,
) {
    let mut next = 0;
    while next < len {
        let guarded = std::panic::catch_unwind(AssertUnwindSafe(|| {
            while next < len {
                let i = next;
                // Counted before decoding: a panic skips this payload.
                next += 1;
                match decode(i) {
                    Ok(msg) => keep(msg),
                    Err(e) => failed(e.into()),
                }
            }
        }));
        if let Err(panic) = guarded {
            failed(panicked(serializer, &*panic).into());
        }
    }
}

/// The error of a payload whose serializer panicked while decoding it.
fn panicked(serializer: SerializerId, panic: &(dyn Any + Send)) -> SerializeError {
    SerializeError::Decode {
        serializer,
        source: format!("serializer panicked: {}", panic_text(panic)).into(),
    }
}

fn deliver<M: Send + 'static, C: Codec<M>>(
    payload: &[u8],
    reply: u64,
    imports: &ImportTable,
    recipient: u32,
    handle_of: &dyn Fn(u64) -> Option<AnyRef>,
) -> Result<(), DeliverError> {
    let decode = || {
        C::scope(imports, || {
            guarded(C::id(), || {
                decode_unguarded::<M, C>(payload, imports, reply, handle_of)
            })
        })
    };
    // The common case first: the handle cached for this protocol, borrowed
    // (no reference count per message).
    let entry = imports
        .get(recipient)
        .ok_or(DeliverError::UnknownRecipient(recipient))?;
    if let Some(target) = entry.typed_ref::<M>() {
        let msg: M = decode()?;
        target.tell(msg);
        return Ok(());
    }
    let target = entry
        .typed::<M>()
        .ok_or(DeliverError::WrongProtocol(std::any::type_name::<M>()))?;
    let msg: M = decode()?;
    target.tell(msg);
    Ok(())
}

fn deliver_run<M: Send + 'static, C: Codec<M>>(
    payloads: Payloads<'_>,
    imports: &ImportTable,
    recipient: u32,
    slot: &mut Option<Box<dyn Any + Send>>,
    failed: &mut dyn FnMut(DeliverError),
    handle_of: &dyn Fn(u64) -> Option<AnyRef>,
    may_rebind: bool,
) -> Result<(), Stale> {
    let reply_of = |i: usize| payloads.replies.map_or(0, |r| r[i]);
    let Some(target) = imports.get(recipient).and_then(|r| r.typed_ref::<M>()) else {
        if may_rebind && imports.is_stale(recipient) {
            return Err(Stale);
        }
        // Unknown id, or a ref used with a second protocol: the rare
        // paths, one message at a time.
        for (i, payload) in payloads.bytes.iter().enumerate() {
            let reply = reply_of(i);
            if let Err(e) = deliver::<M, C>(payload, reply, imports, recipient, handle_of) {
                failed(e);
            }
        }
        return Ok(());
    };
    // The common case pays one load (most connections have no uid-less
    // local ref), or one more for a live target: the map is looked at only
    // for what would be dead letters.
    if may_rebind
        && imports.has_selections()
        && target.is_terminated()
        && imports.may_rebind(recipient)
    {
        return Err(Stale);
    }
    let batch = stage::<M>(slot);
    let keep = |msg| batch.push(msg);
    C::scope(imports, || {
        let id = C::id();
        match payloads.replies {
            // Plain messages only, as if Requests did not exist.
            None => decode_run(payloads.bytes.len(), id, keep, failed, |i| {
                C::decode(payloads.bytes[i], imports, None)
            }),
            Some(replies) => decode_run(payloads.bytes.len(), id, keep, failed, |i| {
                decode_unguarded::<M, C>(payloads.bytes[i], imports, replies[i], handle_of)
            }),
        }
    });
    target.tell_batch(batch);
    Ok(())
}

fn deliver_traced<M: Send + 'static, C: Codec<M>>(
    payload: &[u8],
    imports: &ImportTable,
    recipient: u32,
    context: volley::TraceParent,
) -> Result<(), DeliverError> {
    let target = imports
        .get(recipient)
        .ok_or(DeliverError::UnknownRecipient(recipient))?
        .typed::<M>()
        .ok_or(DeliverError::WrongProtocol(std::any::type_name::<M>()))?;
    let msg: M = decode_guarded::<M, C>(imports, payload)?;
    volley::remote::tell_with_trace_parent(&target, msg, context);
    Ok(())
}

fn deliver_to<M: Send + 'static, C: Codec<M>>(
    payload: &[u8],
    imports: &ImportTable,
    recipient: &AnyRef,
) -> Result<(), DeliverError> {
    let target = recipient
        .downcast::<M>()
        .ok_or(DeliverError::WrongProtocol(std::any::type_name::<M>()))?;
    let msg: M = decode_guarded::<M, C>(imports, payload)?;
    target.tell(msg);
    Ok(())
}

impl Registry {
    /// The outbound registration of `type_id`, found through the index the
    /// ref cached from its last send when it matches.
    #[inline]
    pub(crate) fn outbound_for(&self, type_id: TypeId, hint: &AtomicU64) -> Option<&OutboundType> {
        let at = hint.load(Ordering::Relaxed) as usize;
        match self.outbound.get(at.wrapping_sub(1)) {
            Some((id, ty)) if *id == type_id => Some(ty),
            _ => self.outbound_by_hash(type_id, hint),
        }
    }

    #[cold]
    #[inline(never)]
    fn outbound_by_hash(&self, type_id: TypeId, hint: &AtomicU64) -> Option<&OutboundType> {
        let at = *self.by_type.get(&type_id)?;
        hint.store(at as u64 + 1, Ordering::Relaxed);
        Some(&self.outbound[at].1)
    }

    /// Registers protocol `M` under the stable wire id `id`; both nodes must
    /// use the same id. `M` is usually an actor's whole protocol enum.
    pub fn register<M: Serialize + DeserializeOwned + Send + 'static>(
        &mut self,
        id: u32,
    ) -> Result<(), RegistryError> {
        self.register_with::<M, BincodeSerializer>(id)
    }

    /// Registers `M` with another payload format `S` (e.g. a protobuf
    /// serializer for messages shared with other languages). The serializer
    /// id travels in every message; the receiver must register the same.
    pub fn register_with<M: Send + 'static, S: Serializer<M> + Default>(
        &mut self,
        id: u32,
    ) -> Result<(), RegistryError> {
        self.register_codec::<M, Serde<S>>(id)
    }

    /// Registers `M`, which writes and reads its bincode bytes itself
    /// ([`DirectCodec`]), under `id`: the same bytes and serializer id as
    /// [`Registry::register`] (a peer may register `M` either way), without
    /// serde and without the per-message thread-local scopes that serde's
    /// `ActorRef`s need.
    pub fn register_direct<M: DirectCodec + Send + 'static>(
        &mut self,
        id: u32,
    ) -> Result<(), RegistryError> {
        self.register_codec::<M, Direct>(id)
    }

    fn register_codec<M: Send + 'static, C: Codec<M>>(
        &mut self,
        id: u32,
    ) -> Result<(), RegistryError> {
        // Whoever registers types is about to use remoting: make its
        // settings section known before settings are parsed.
        crate::transport::settings::register_settings();
        if let Some(existing) = self.by_wire_id.get(&id) {
            return Err(RegistryError::DuplicateId {
                id,
                existing: existing.name,
            });
        }
        let name = std::any::type_name::<M>();
        if self.by_type.contains_key(&TypeId::of::<M>()) {
            return Err(RegistryError::DuplicateType(name));
        }
        let outbound = OutboundType {
            wire_id: id,
            serializer: C::id(),
            encode: encode::<M, C>,
        };
        self.by_type.insert(TypeId::of::<M>(), self.outbound.len());
        self.outbound.push((TypeId::of::<M>(), outbound));
        self.by_wire_id.insert(
            id,
            InboundType {
                name,
                serializer: C::id(),
                deliver_to: deliver_to::<M, C>,
                deliver_run: deliver_run::<M, C>,
                deliver_traced: deliver_traced::<M, C>,
                mirror: volley::mirror_fn::<M>(),
            },
        );
        Ok(())
    }

    /// Registers the commands of topics of messages `M` under `id` (with
    /// [`TopicSerializer`](crate::serialization::TopicSerializer)), so
    /// that a topic's instances on other nodes, listed by a cluster
    /// receptionist, pass its publications on. Every node must register it
    /// under the same id.
    pub fn register_topic<M>(&mut self, id: u32) -> Result<(), RegistryError>
    where
        M: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.register_with::<volley::TopicCommand<M>, crate::serialization::TopicSerializer<M>>(id)
    }

    /// Lets remote nodes spawn actors of kind `kind` here, built by `make`
    /// from the arguments they send (when `remote_spawn` is enabled).
    pub fn spawnable<A, P>(
        &mut self,
        kind: &str,
        make: impl Fn(P) -> A + Send + Sync + 'static,
    ) -> Result<(), RegistryError>
    where
        A: Actor,
        P: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    {
        if self.kinds.contains_key(kind) {
            return Err(RegistryError::DuplicateKind(kind.to_string()));
        }
        let make = Arc::new(make);
        let spawn: SpawnFn = Arc::new(move |system: &ActorSystem, args: &[u8], name| {
            let args: P = BincodeSerializer
                .decode(args)
                .map_err(|e| format!("bad spawn arguments: {e}"))?;
            let make = make.clone();
            let props = Props::new(move || make(args.clone()));
            let actor = match name {
                Some(name) => system.spawn(name, props),
                None => system.spawn_anonymous(props),
            }
            .map_err(|e| e.to_string())?;
            Ok(actor.to_any())
        });
        self.kinds.insert(kind.to_string(), spawn);
        Ok(())
    }
}

/// The payloads of a run and, if any came in a Request, each one's reply
/// handle correlation id (0 for a plain message).
#[derive(Clone, Copy)]
pub(crate) struct Payloads<'r> {
    pub(crate) bytes: &'r [&'r [u8]],
    pub(crate) replies: Option<&'r [u64]>,
}

/// Messages a stage is made for: a run's longest
/// (`inbound/delivery.rs`, `RUN_CAP`, which checks that they agree).
pub(crate) const STAGE_CAPACITY: usize = 64;

/// The staging batch of `M` kept in `slot`, made (or remade, if the slot
/// held another type's) on first use. Messages are decoded straight into
/// it, as the envelopes the mailbox keeps (`MessageBatch`).
pub(crate) fn stage<M: Send + 'static>(
    slot: &mut Option<Box<dyn Any + Send>>,
) -> &mut MessageBatch<M> {
    if !slot.as_ref().is_some_and(|b| b.is::<MessageBatch<M>>()) {
        *slot = Some(Box::new(MessageBatch::<M>::with_capacity(STAGE_CAPACITY)));
    }
    slot.as_mut()
        .and_then(|b| b.downcast_mut::<MessageBatch<M>>())
        .expect("the slot was just filled with a MessageBatch<M>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbound_lookup_through_the_refs_hint_follows_the_type() {
        let mut r = Registry::default();
        r.register::<u32>(7).unwrap();
        r.register::<String>(8).unwrap();
        let hint = AtomicU64::new(0);
        let wire = |t: TypeId| r.outbound_for(t, &hint).map(|o| o.wire_id);
        // First use hashes and remembers; a type switch re-learns; the hint
        // never answers for another type.
        assert_eq!(wire(TypeId::of::<String>()), Some(8));
        assert_eq!(hint.load(Ordering::Relaxed), 2);
        assert_eq!(wire(TypeId::of::<String>()), Some(8));
        assert_eq!(wire(TypeId::of::<u32>()), Some(7));
        assert_eq!(hint.load(Ordering::Relaxed), 1);
        assert_eq!(wire(TypeId::of::<u64>()), None, "unregistered");
        assert_eq!(hint.load(Ordering::Relaxed), 1, "a miss keeps the hint");
        // A stale or foreign hint is only a starting guess.
        hint.store(99, Ordering::Relaxed);
        assert_eq!(wire(TypeId::of::<u32>()), Some(7));
    }

    #[test]
    fn a_panic_in_a_run_fails_only_its_own_payload_and_the_run_goes_on_in_order() {
        // Each payload is one byte: 0 a panic, 1 an error, else a value.
        let payloads: [u8; 7] = [5, 0, 6, 1, 0, 0, 7];
        let mut batch = Vec::new();
        let mut failures = Vec::new();
        let serializer = SerializerId(SerializerId::FIRST_USER.0 + 1);
        decode_run(
            payloads.len(),
            serializer,
            |msg| batch.push(msg),
            &mut |e| failures.push(e.to_string()),
            |i| match payloads[i] {
                0 => panic!("payload {i} panicked"),
                1 => Err(SerializeError::Decode {
                    serializer,
                    source: "refused".into(),
                }),
                b => Ok(b),
            },
        );
        assert_eq!(batch, [5, 6, 7], "the others, in order");
        assert_eq!(failures.len(), 4, "{failures:?}");
        assert!(failures[0].contains("payload 1 panicked"), "{failures:?}");
        assert!(failures[1].contains("refused"), "{failures:?}");
        assert!(failures[2].contains("payload 4 panicked"), "{failures:?}");
        assert!(failures[3].contains("payload 5 panicked"), "{failures:?}");
    }
}
