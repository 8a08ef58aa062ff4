//! Actors: lifecycle and its hooks, paths and refs, messaging, adapters,
//! stopping, and panics in user code.

mod actor_ref;
mod adapters;
mod graceful_stop;
mod lifecycle;
mod lifecycle_hooks;
mod messaging;
mod model;
mod panics;
mod paths;
mod stop;
mod user_code_panics;
