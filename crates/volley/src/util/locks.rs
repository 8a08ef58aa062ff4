//! The standard library's locks, taken without regard to poisoning.
//!
//! A lock is poisoned when a thread panicked while holding it. Every user
//! callback runs under `catch_unwind` before it can hold one of the
//! runtime's locks, and the runtime's own critical sections only push, pop
//! or swap collections, so the data behind a poisoned lock is still
//! consistent, and refusing it would turn one failure into a stuck node.
//! The lock-free protocols' locks live in `crate::util::sync` instead.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes `l` for reading.
pub(crate) fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// Takes `l` for writing.
pub(crate) fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}
