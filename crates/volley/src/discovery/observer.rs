//! A hook on the receptionist's own changes, for a cluster receptionist
//! that replicates them to other nodes, and the typed way back: a
//! per-protocol function that registers a ref under a key named only by
//! its id, for a protocol known only to whoever made the function.
//!
//! Without an observer the receptionist pays one `Option` check per
//! registration change and nothing per message.

use std::any::TypeId;
use std::sync::Arc;

use super::receptionist::{Receptionist, ServiceKey};
use crate::actor::actor_ref::AnyRef;

/// A service that was registered under a key or left it (deregistered,
/// or terminated).
#[derive(Clone, Debug)]
pub struct ServiceRegistration {
    /// The key's id.
    pub key_id: Arc<str>,
    /// The key's protocol.
    pub protocol: TypeId,
    /// The protocol's type name, for logs.
    pub protocol_name: &'static str,
    /// The service (local or remote).
    pub service: AnyRef,
    /// True when it was registered, false when it left.
    pub registered: bool,
}

/// Told of every change to the receptionist's services, on the
/// receptionist's own thread: it must only hand the change on, never
/// block.
pub trait ServiceObserver: Send + Sync + 'static {
    /// One change.
    fn service_changed(&self, change: ServiceRegistration);
}

/// Registers (or, with the last argument false, deregisters) `service`
/// under the key with this id, for the protocol the function was made for
/// (see [`mirror_fn`]).
pub type MirrorFn = fn(&Receptionist, &str, &AnyRef, bool);

/// The [`MirrorFn`] of protocol `M`: it registers a ref (in practice a
/// remote one, whose protocol is checked when a message is sent) under
/// `ServiceKey::<M>::new(id)`.
pub fn mirror_fn<M: Send + 'static>() -> MirrorFn {
    mirror::<M>
}

fn mirror<M: Send + 'static>(
    receptionist: &Receptionist,
    key_id: &str,
    service: &AnyRef,
    registered: bool,
) {
    let key = ServiceKey::<M>::new(key_id);
    let Some(service) = service.downcast::<M>() else {
        return;
    };
    if registered {
        receptionist.register(&key, &service);
    } else {
        receptionist.deregister(&key, &service);
    }
}
