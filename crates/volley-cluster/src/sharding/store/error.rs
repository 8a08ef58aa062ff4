//! Why a remembered-entities store refused an operation.

use std::path::PathBuf;

/// What went wrong with a store. A failed write changed nothing: each
/// operation is one transaction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another store instance has the file open, in this process or
    /// another: one file takes one instance at a time (it holds an OS
    /// lock on the file while open). Share the instance among the entity
    /// types of a node instead of opening the file twice.
    #[error("store file {path} is in use by another store instance")]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The file is not a store, or is damaged beyond the database's own
    /// repair.
    #[error("store file {path} is corrupt: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the database found.
        reason: String,
    },
    /// The file was written by a later layout of this store.
    #[error("store file {path} has schema version {found}; this build reads {supported}")]
    UnsupportedSchema {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this build writes and reads.
        supported: u32,
    },
    /// The file is a database of something else: it has tables but no
    /// schema version of this store. Left as it is.
    #[error("store file {path} is a database of something else, not a store")]
    ForeignDatabase {
        /// The file.
        path: PathBuf,
    },
    /// Reading or writing the file failed (disk full, permissions).
    #[error("i/o on store file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An entity id to record is empty: no entity has one.
    #[error("an entity id to remember is empty")]
    EmptyEntityId,
    /// Any other failure of the database, with its message.
    #[error("store file {path}: {reason}")]
    Backend {
        /// The file.
        path: PathBuf,
        /// The database's message.
        reason: String,
    },
}

/// A [`StoreError`] that can be cloned and compared (by its message), as
/// [`ShardingError`](crate::sharding::ShardingError) and the event
/// stream's events are.
#[derive(Debug, Clone)]
pub struct SharedStoreError(pub std::sync::Arc<StoreError>);

impl std::fmt::Display for SharedStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

impl PartialEq for SharedStoreError {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for SharedStoreError {}

impl From<StoreError> for SharedStoreError {
    fn from(error: StoreError) -> Self {
        Self(std::sync::Arc::new(error))
    }
}
