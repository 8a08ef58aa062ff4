//! Values other crates keep once per system (Akka's extensions), so that
//! they can be found again from the system alone: the cluster of a node
//! is `Cluster::get(&system)` without handing the `Cluster` around.
//!
//! One value per type; the first registered stays. Nothing on a message
//! path reads them.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Mutex;

use crate::system::actor_system::ActorSystem;
use crate::util::locks::lock;

/// The values, by type.
#[derive(Default)]
pub(crate) struct Extensions(Mutex<HashMap<TypeId, Box<dyn Any + Send + Sync>>>);

impl ActorSystem {
    /// Keeps `value` as this system's extension of type `T`. A system
    /// keeps one value per type: if it has one already, that one stays and
    /// `value` comes back as the error.
    pub fn register_extension<T: Any + Send + Sync + Clone>(&self, value: T) -> Result<(), T> {
        let mut values = lock(&self.shared.extensions.0);
        if values.contains_key(&TypeId::of::<T>()) {
            return Err(value);
        }
        values.insert(TypeId::of::<T>(), Box::new(value));
        Ok(())
    }

    /// A clone of this system's extension of type `T`, if one was
    /// registered.
    pub fn extension<T: Any + Send + Sync + Clone>(&self) -> Option<T> {
        lock(&self.shared.extensions.0)
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
            .cloned()
    }
}
