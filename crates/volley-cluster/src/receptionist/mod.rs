//! The cluster receptionist's replicated registry (design §5): which
//! services each member registered, as a map of single-writer versioned
//! owner sets, carried by the membership's custom broadcasts and repaired
//! by its anti-entropy.
//!
//! - `entry`: one registration as it travels ([`ServiceEntry`]);
//! - `owner_set`: one member's registrations and their version;
//! - `registry`: the map of owner sets and its merge (the CRDT);
//! - `bounds`: the limits a set must keep, and the typed refusal;
//! - `wire`: the owner set's bytes;
//! - `mirror`: the runtime glue, between volley's local receptionist and
//!   the core.

mod bounds;
mod entry;
pub(crate) mod mirror;
mod owner_set;
mod registry;
pub(crate) mod wire;

pub use self::bounds::{ServiceBounds, ServiceRefused};
pub use self::entry::{ServiceChange, ServiceEntry};
pub use self::owner_set::OwnerSet;
pub use self::registry::ServiceRegistry;
