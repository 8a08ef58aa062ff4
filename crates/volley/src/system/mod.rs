//! The actor system and what exists once per system: the
//! [`actor_system`] handle itself (dispatchers, the runtime, dead letters,
//! lookup), the [`guardian`] actors at the top of the tree, the
//! [`event_stream`], [`coordinated_shutdown`] and the waits for an actor's
//! end ([`termination`]).
//!
//! This is the top of the import order: the system spawns cells and owns
//! dispatchers, so it imports from `actor`, `dispatcher` and `time`. Lower
//! modules still name `ActorSystem` (every ref carries a handle to its
//! system) and `event_stream`'s dead-letter types; see the core crate
//! layout in docs/architecture.md.

pub(crate) mod actor_system;
pub mod coordinated_shutdown;
pub(crate) mod event_stream;
pub(crate) mod extensions;
pub(crate) mod guardian;
pub(crate) mod termination;
