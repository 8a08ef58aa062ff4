//! What the refs a peer declared on one connection keep in memory, as the
//! connection estimates it: the budget `limits.max_imported_ref_bytes`
//! holds each import table to, and the node's total over its connections
//! (`ImportMeter`, for the metrics).
//!
//! An estimate from the sizes of what an entry holds, each rounded up as
//! the allocator does, never a measurement: a declaration costs no
//! allocator call to account. What an entry shares with the rest of the
//! node (a local actor) is not counted; what was made for it (a handle to
//! a remote actor, its route, its path) is.

use std::mem::size_of;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use volley::remote::codec::ImportedRef;
use volley::remote::RemoteRef;
use volley::{ActorRef, AnyRef};

use crate::transport::refs::limit_error::LimitError;

/// The node's import tables together.
#[derive(Default)]
pub(crate) struct ImportMeter {
    bytes: AtomicUsize,
    refusals: AtomicU64,
}

impl ImportMeter {
    /// What every open connection's import table keeps, estimated.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Connections closed for declaring past `limits.max_imported_refs`
    /// or `limits.max_imported_ref_bytes`, and uid-less refs not bound
    /// again for the latter.
    pub(crate) fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }
}

/// One import table's share of memory, within its budget.
pub(super) struct ImportBudget {
    used: usize,
    max: usize,
    meter: Arc<ImportMeter>,
}

impl ImportBudget {
    pub(super) fn new(max: usize, meter: Arc<ImportMeter>) -> Self {
        ImportBudget {
            used: 0,
            max,
            meter,
        }
    }

    /// Whether an entry of `old` bytes may become one of `new`; a refusal
    /// is counted. Changes nothing.
    #[inline]
    pub(super) fn check(&self, old: usize, new: usize) -> Result<(), LimitError> {
        if new > old && self.used - old + new > self.max {
            self.refused();
            return Err(LimitError::ImportedRefBytes { max: self.max });
        }
        Ok(())
    }

    /// An entry of `old` bytes became one of `new`. The node's total is
    /// touched only when the table's changes: not when a reply handle
    /// replaces another in the ring, once per remote ask.
    #[inline]
    pub(super) fn commit(&mut self, old: usize, new: usize) {
        if new == old {
            return;
        }
        self.used = self.used - old + new;
        if new > old {
            self.meter.bytes.fetch_add(new - old, Ordering::Relaxed);
        } else {
            self.meter.bytes.fetch_sub(old - new, Ordering::Relaxed);
        }
    }

    /// Counts a declaration refused for a limit.
    #[cold]
    pub(super) fn refused(&self) {
        self.meter.refusals.fetch_add(1, Ordering::Relaxed);
    }

    /// The table's estimate.
    #[cfg(test)]
    pub(super) fn used(&self) -> usize {
        self.used
    }
}

impl Drop for ImportBudget {
    fn drop(&mut self) {
        self.meter.bytes.fetch_sub(self.used, Ordering::Relaxed);
    }
}

/// What an allocation of `n` bytes takes from the allocator: a header,
/// rounded up to 16, at least 32.
const fn heap(n: usize) -> usize {
    let chunk = (n + 8 + 15) & !15;
    if chunk < 32 {
        32
    } else {
        chunk
    }
}

/// A bound id: its slot (the dense vectors and the map of far ids keep up
/// to about twice the slots they fill), and the typed handle the first
/// decode caches in it.
pub(super) const SLOT: usize =
    2 * size_of::<Option<ImportedRef>>() + heap(size_of::<Option<ActorRef<()>>>());

/// A handle to a remote actor made for a declaration, with its route (a
/// shared one costs less).
const REMOTE: usize = heap(16 + size_of::<RemoteRef>()) + heap(16 + ROUTE_BYTES);

/// What a route to a remote actor takes at most; `outbound/route.rs`
/// checks at compile time that its `RouteHint` fits (the route is the
/// outbound side's, and the tables sit below it).
pub(crate) const ROUTE_BYTES: usize = 56;

/// An ask's reply handle, declared by id: its handle (the route is the
/// connection's) and the path it builds when asked for one.
const REPLY_HANDLE: usize = heap(16 + size_of::<RemoteRef>()) + heap(32);

/// A uid-less ref's map slot; its path counts twice (the shared string
/// grows by doubling, and keeps removed paths until it is rewritten).
const SELECTION: usize = 48;

/// What binding an id to `actor` costs, slot included.
#[inline]
pub(super) fn entry(actor: &AnyRef) -> usize {
    if actor.is_reply_handle() {
        return SLOT + REPLY_HANDLE;
    }
    let path = actor.path();
    match path.authority() {
        // A local actor: shared with the node.
        None => SLOT,
        // Made for the declaration: its path (elements, and the node's
        // name and address) and handle.
        Some(authority) => {
            let node = path.system().len() + 1 + authority.len();
            SLOT + REMOTE + heap(path.elements().len()) + heap(16 + node)
        }
    }
}

/// What a uid-less ref's path costs, apart from its slot.
#[inline]
pub(super) fn selection(elements: &str) -> usize {
    SELECTION + 2 * elements.len()
}
