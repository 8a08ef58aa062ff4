//! What a parent does when a child fails: the [`strategy`] that decides
//! (one-for-one or all-for-one, restart limits), the [`backoff`] delays a
//! strategy can put before a restart, and the [`backoff_supervisor`] actor
//! built on them.
//!
//! The cell applies these decisions (`actor::cell::lifecycle` and
//! `actor::cell::backoff`); the modules here only decide and count, and
//! import nothing from the cell.

pub(crate) mod backoff;
pub(crate) mod backoff_supervisor;
pub(crate) mod strategy;
