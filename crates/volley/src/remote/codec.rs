//! How an `ActorRef` inside a message is serialized: through a hook that
//! the transport installs.
//!
//! An `ActorRef` on the wire is a `u32` that the transport assigns per
//! connection (and declares to the peer before the message that uses it);
//! what the number means is the transport's business. Serde has no context
//! parameter, so volley's `Serialize`/`Deserialize` impls for `ActorRef`
//! call the process's [`RefCodec`], whose functions find the connection's
//! tables in the transport's own scoped thread-locals, set around the
//! (de)serialization of one message. Serializing an `ActorRef` outside such
//! a scope, or with no codec installed, is an error, not a panic.

use std::any::Any;
use std::cell::OnceCell;
use std::sync::OnceLock;

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::actor::actor_ref::{ActorRef, AnyRef, TargetKey, ToAnyRef};

/// The functions through which every `ActorRef` in the process serializes.
#[derive(Clone, Copy, Debug)]
pub struct RefCodec {
    /// Who provides it, e.g. `"volley-remote"`: installing a codec of
    /// another name is refused.
    pub name: &'static str,
    /// The id of `actor` on the connection being written; `None` when no
    /// connection's scope is set on this thread.
    pub encode: fn(&RefToEncode<'_>) -> Option<u32>,
    /// Calls `found` with the ref declared as `id` on the connection being
    /// read (`None` if unknown); returns false when no connection's scope
    /// is set on this thread.
    pub decode: DecodeFn,
}

/// [`RefCodec::decode`]: looks `id` up and hands the entry to `found`.
pub type DecodeFn = fn(id: u32, found: &mut dyn FnMut(Option<&ImportedRef>)) -> bool;

static CODEC: OnceLock<RefCodec> = OnceLock::new();

/// Another codec is installed already.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the ActorRef codec of {installed} is installed in this process already")]
pub struct CodecConflict {
    /// The installed codec's name.
    pub installed: &'static str,
}

/// Installs the process's ref codec. Installing the same codec again is a
/// no-op; a different one is refused (one transport per process).
pub fn install(codec: RefCodec) -> Result<(), CodecConflict> {
    let installed = CODEC.get_or_init(|| codec);
    if installed.name == codec.name {
        Ok(())
    } else {
        Err(CodecConflict {
            installed: installed.name,
        })
    }
}

/// A ref being serialized: its identity for caches, and the handle itself
/// when the transport needs it (a cache miss).
pub struct RefToEncode<'a> {
    key: TargetKey,
    actor: &'a dyn ToAnyRef,
}

impl RefToEncode<'_> {
    /// Identity of the target object, for a cache in front of the table.
    #[inline]
    pub fn key(&self) -> TargetKey {
        self.key
    }

    /// The type-erased handle (two reference-count operations: use
    /// [`RefToEncode::key`] first).
    pub fn to_any(&self) -> AnyRef {
        self.actor.to_any_ref()
    }
}

/// A ref a peer declared, as kept in a connection's import table, with its
/// typed handle cached: a ref is almost always used with one protocol, so
/// the reader's per-message lookup touches no reference count.
pub struct ImportedRef {
    actor: AnyRef,
    typed: OnceCell<Box<dyn Any + Send + Sync>>,
    /// Read once (a request's reply handle): caching its typed handle would
    /// cost an allocation that nobody reuses.
    once: bool,
}

impl ImportedRef {
    /// An entry for `actor`.
    pub fn new(actor: AnyRef) -> Self {
        ImportedRef {
            actor,
            typed: OnceCell::new(),
            once: false,
        }
    }

    /// An entry for `actor` that is read about once, so its typed handle is
    /// not cached.
    pub fn once(actor: AnyRef) -> Self {
        ImportedRef {
            once: true,
            ..ImportedRef::new(actor)
        }
    }

    /// The type-erased handle.
    pub fn actor(&self) -> &AnyRef {
        &self.actor
    }

    /// The handle typed for protocol `M`; `None` if the actor's protocol is
    /// not `M`.
    #[inline]
    pub fn typed<M: Send + 'static>(&self) -> Option<ActorRef<M>> {
        if self.once {
            return self.actor.downcast::<M>();
        }
        let cached = self
            .typed
            .get_or_init(|| Box::new(self.actor.downcast::<M>()));
        match cached.downcast_ref::<Option<ActorRef<M>>>() {
            Some(typed) => typed.clone(),
            None => self.actor.downcast::<M>(),
        }
    }

    /// Like [`ImportedRef::typed`], but borrowed from the cache; `None` also
    /// when the cache holds another protocol, or for an entry made with
    /// [`ImportedRef::once`] (then use `typed`).
    #[inline]
    pub fn typed_ref<M: Send + 'static>(&self) -> Option<&ActorRef<M>> {
        if self.once {
            return None;
        }
        self.typed
            .get_or_init(|| Box::new(self.actor.downcast::<M>()))
            .downcast_ref::<Option<ActorRef<M>>>()?
            .as_ref()
    }
}

impl<M: Send + 'static> Serialize for ActorRef<M> {
    #[inline]
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let actor = RefToEncode {
            key: self.target_key(),
            actor: self,
        };
        match CODEC.get().and_then(|codec| (codec.encode)(&actor)) {
            Some(id) => serializer.serialize_u32(id),
            None => Err(S::Error::custom(
                "an ActorRef can only be serialized by a volley transport",
            )),
        }
    }
}

impl<'de, M: Send + 'static> Deserialize<'de> for ActorRef<M> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = u32::deserialize(deserializer)?;
        let mut typed = None;
        let in_scope = CODEC.get().is_some_and(|codec| {
            (codec.decode)(id, &mut |found| {
                typed = found.and_then(ImportedRef::typed::<M>)
            })
        });
        if !in_scope {
            return Err(D::Error::custom(
                "an ActorRef can only be deserialized by a volley transport",
            ));
        }
        typed.ok_or_else(|| {
            D::Error::custom(format!(
                "actor ref id {id} is not declared, or not an actor of {}",
                std::any::type_name::<M>()
            ))
        })
    }
}
