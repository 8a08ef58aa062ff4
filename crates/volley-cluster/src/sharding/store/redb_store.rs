//! The store in a file on the node's disk, on the embedded database redb
//! (cargo feature `redb-store`): B-trees, copy-on-write pages with
//! checksums, and a commit that returns once it is synced to disk.
//!
//! Layout, schema version 1: `entities` holds one key per remembered
//! entity, `(entity type, shard, entity id)`, so a shard's entities are one
//! key range; `shards` one key per allocated shard, `(entity type,
//! shard)`; `meta` the schema version, checked on open.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use redb::{Database, Durability, ReadableDatabase, TableDefinition, WriteTransaction};

use super::error::StoreError;
use super::remember::{RememberStore, StoreUpdate};
use crate::sharding::ShardId;

const ENTITIES: TableDefinition<(&str, u32, &str), ()> = TableDefinition::new("entities");
const SHARDS: TableDefinition<(&str, u32), ()> = TableDefinition::new("shards");
const META: TableDefinition<&str, u32> = TableDefinition::new("meta");
const SCHEMA_KEY: &str = "schema_version";
/// The layout this build writes and reads.
const SCHEMA_VERSION: u32 = 1;

/// Remembered entities and allocated shards in one redb file. One
/// instance per file: a second open, in this process or another, is
/// refused with [`StoreError::Locked`]. Share it (`Arc`) among the entity
/// types of a node.
pub struct RedbStore {
    db: Database,
    path: PathBuf,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .finish()
    }
}

impl RedbStore {
    /// Opens the store at `path`, creating the file if it does not exist
    /// (its folder must). The whole file's checksums are verified first,
    /// so a damaged file is refused with [`StoreError::Corrupt`] instead of
    /// being read.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let opened = catch_unwind(AssertUnwindSafe(|| {
            Database::builder()
                .set_check_integrity_on_open(true)
                .create(&path)
        }));
        let db = match opened {
            Ok(result) => result.map_err(|e| classify(&path, e.into()))?,
            // redb checks what it reads; a panic is a damaged file it did
            // not foresee, and must not take the node down.
            Err(panic) => {
                let reason = crate::sharding::extractor::panic_reason(&*panic);
                return Err(StoreError::Corrupt { path, reason });
            }
        };
        let store = Self { db, path };
        store.check_schema()?;
        Ok(store)
    }

    /// The file this store writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the schema version into a new file, and refuses a file of
    /// another version, or a redb file of something else (tables but no
    /// version), which it must not write into.
    fn check_schema(&self) -> Result<(), StoreError> {
        let (has_tables, found) = self.read(|txn| {
            let has_tables = txn.list_tables()?.next().is_some();
            let Some(meta) = open_for_read(txn, META)? else {
                return Ok((has_tables, None));
            };
            Ok((has_tables, meta.get(SCHEMA_KEY)?.map(|v| v.value())))
        })?;
        let path = self.path.clone();
        match found {
            Some(SCHEMA_VERSION) => Ok(()),
            Some(found) => Err(StoreError::UnsupportedSchema {
                path,
                found,
                supported: SCHEMA_VERSION,
            }),
            None if has_tables => Err(StoreError::ForeignDatabase { path }),
            // A new file: the instance holds the file's lock, so no one
            // else wrote in between.
            None => self.write(|txn| {
                txn.open_table(META)?.insert(SCHEMA_KEY, SCHEMA_VERSION)?;
                Ok(())
            }),
        }
    }

    /// Runs `body` in one write transaction and commits it durably: when
    /// this returns `Ok`, the change is on disk. On an error nothing of it
    /// is applied (the transaction is dropped, which aborts it).
    fn write<T>(
        &self,
        body: impl FnOnce(&WriteTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        let run = || {
            let mut txn = self.db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            let value = body(&txn)?;
            txn.commit()?;
            Ok(value)
        };
        run().map_err(|e| classify(&self.path, e))
    }

    fn read<T>(
        &self,
        body: impl FnOnce(&redb::ReadTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        let run = || {
            let txn = self.db.begin_read()?;
            body(&txn)
        };
        run().map_err(|e| classify(&self.path, e))
    }
}

impl RememberStore for RedbStore {
    fn update(
        &self,
        entity_type: &str,
        shard: ShardId,
        update: &StoreUpdate,
    ) -> Result<(), StoreError> {
        update.check()?;
        self.write(|txn| {
            let mut table = txn.open_table(ENTITIES)?;
            for id in &update.started {
                table.insert((entity_type, shard.0, id.as_str()), ())?;
            }
            for id in &update.stopped {
                table.remove((entity_type, shard.0, id.as_str()))?;
            }
            Ok(())
        })
    }

    fn entities(&self, entity_type: &str, shard: ShardId) -> Result<BTreeSet<String>, StoreError> {
        self.read(|txn| {
            let Some(table) = open_for_read(txn, ENTITIES)? else {
                return Ok(BTreeSet::new());
            };
            let mut ids = BTreeSet::new();
            for entry in table.range((entity_type, shard.0, "")..)? {
                let (key, _) = entry?;
                let (name, key_shard, id) = key.value();
                if name != entity_type || key_shard != shard.0 {
                    break;
                }
                ids.insert(id.to_owned());
            }
            Ok(ids)
        })
    }

    fn shards_with_entities(&self, entity_type: &str) -> Result<BTreeSet<ShardId>, StoreError> {
        self.read(|txn| {
            let Some(table) = open_for_read(txn, ENTITIES)? else {
                return Ok(BTreeSet::new());
            };
            let mut shards = BTreeSet::new();
            let mut from = 0u32;
            // One range look-up per shard found: jump past the shard's
            // entities instead of reading them all.
            loop {
                let first = table.range((entity_type, from, "")..)?.next();
                let Some(entry) = first else { break };
                let (key, _) = entry?;
                let (name, shard, _) = key.value();
                if name != entity_type {
                    break;
                }
                shards.insert(ShardId(shard));
                let Some(next) = shard.checked_add(1) else {
                    break;
                };
                from = next;
            }
            Ok(shards)
        })
    }

    fn remove_shard(&self, entity_type: &str, shard: ShardId) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(ENTITIES)?;
            let range = (entity_type, shard.0, "")..;
            table.retain_in(range, |(name, key_shard, _), ()| {
                name != entity_type || key_shard != shard.0
            })?;
            Ok(())
        })
    }

    fn add_shard(&self, entity_type: &str, shard: ShardId) -> Result<(), StoreError> {
        self.write(|txn| {
            txn.open_table(SHARDS)?.insert((entity_type, shard.0), ())?;
            Ok(())
        })
    }

    fn allocated_shards(&self, entity_type: &str) -> Result<BTreeSet<ShardId>, StoreError> {
        self.read(|txn| {
            let Some(table) = open_for_read(txn, SHARDS)? else {
                return Ok(BTreeSet::new());
            };
            let mut shards = BTreeSet::new();
            for entry in table.range((entity_type, 0u32)..)? {
                let (key, _) = entry?;
                let (name, shard) = key.value();
                if name != entity_type {
                    break;
                }
                shards.insert(ShardId(shard));
            }
            Ok(shards)
        })
    }
}

/// The table, or `None` when no write created it yet.
fn open_for_read<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    table: TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>, redb::Error> {
    match txn.open_table(table) {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// redb's error as the store's.
fn classify(path: &Path, error: redb::Error) -> StoreError {
    let path = path.to_path_buf();
    match error {
        redb::Error::DatabaseAlreadyOpen | redb::Error::LockProtocolMismatch => {
            StoreError::Locked { path }
        }
        // redb reports a file without its magic number so.
        redb::Error::Io(source) if source.kind() == std::io::ErrorKind::InvalidData => {
            StoreError::Corrupt {
                path,
                reason: source.to_string(),
            }
        }
        redb::Error::Io(source) => StoreError::Io { path, source },
        redb::Error::Corrupted(reason) => StoreError::Corrupt { path, reason },
        e @ (redb::Error::UpgradeRequired(_) | redb::Error::RepairAborted) => StoreError::Corrupt {
            path,
            reason: e.to_string(),
        },
        other => StoreError::Backend {
            path,
            reason: other.to_string(),
        },
    }
}
