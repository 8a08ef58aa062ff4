//! Where an entity type's remembered entities are kept
//! (`ShardingSettings::remember_store`), and how a node opens that store
//! once for all its entity types.

#[cfg(feature = "redb-store")]
use std::collections::HashMap;
#[cfg(feature = "redb-store")]
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(feature = "redb-store")]
use std::sync::{Mutex, PoisonError, Weak};

use volley::ActorSystem;

use super::error::StoreError;
use super::remember::RememberStore;

/// The store of a node's remembered entities.
#[derive(Clone)]
pub enum StoreLocation {
    /// A redb file on this node's disk (cargo feature `redb-store`),
    /// created if missing (its folder must exist). Every entity type of a
    /// system that names the same path shares one open store: redb lets
    /// one instance have a file at a time.
    #[cfg(feature = "redb-store")]
    File(PathBuf),
    /// This store, shared as it is (a `MemoryStore`, or an implementation
    /// of the trait on another database).
    Instance(Arc<dyn RememberStore>),
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            #[cfg(feature = "redb-store")]
            StoreLocation::File(path) => f.debug_tuple("File").field(path).finish(),
            StoreLocation::Instance(_) => f.write_str("Instance(..)"),
        }
    }
}

impl PartialEq for StoreLocation {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            #[cfg(feature = "redb-store")]
            (StoreLocation::File(a), StoreLocation::File(b)) => a == b,
            (StoreLocation::Instance(a), StoreLocation::Instance(b)) => Arc::ptr_eq(a, b),
            #[cfg(feature = "redb-store")]
            _ => false,
        }
    }
}

/// The stores a system opened, by file: kept weakly, so that a file is
/// closed (and free for another instance) once no actor uses it.
#[cfg(feature = "redb-store")]
#[derive(Clone, Default)]
struct OpenFiles(Arc<Mutex<HashMap<PathBuf, Weak<dyn RememberStore>>>>);

impl StoreLocation {
    /// The store, opened on `system` if it is a file no entity type of the
    /// system has open yet.
    #[cfg_attr(not(feature = "redb-store"), allow(unused_variables))]
    pub(crate) fn open(&self, system: &ActorSystem) -> Result<Arc<dyn RememberStore>, StoreError> {
        match self {
            StoreLocation::Instance(store) => Ok(store.clone()),
            #[cfg(feature = "redb-store")]
            StoreLocation::File(path) => {
                let _kept = system.register_extension(OpenFiles::default());
                let files = system
                    .extension::<OpenFiles>()
                    .expect("registered just now");
                let mut files = files.0.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(open) = files.get(path).and_then(Weak::upgrade) {
                    return Ok(open);
                }
                let store: Arc<dyn RememberStore> = Arc::new(super::RedbStore::open(path)?);
                files.insert(path.clone(), Arc::downgrade(&store));
                Ok(store)
            }
        }
    }
}
