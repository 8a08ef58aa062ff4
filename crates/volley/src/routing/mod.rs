//! Routers: one address, many routees.
//!
//! A **pool** router ([`Router::pool`]) creates its routees as its own
//! children and supervises them with its own [`SupervisorStrategy`]
//! (`with_supervisor_strategy`); a **group** router ([`Router::group`])
//! routes to actors that exist already. Either way the router is an actor
//! (its management protocol is [`RouterMsg`]) plus a [`RouterRef`] handle.
//!
//! # The fast path
//! Routing a `tell` does not go through the router actor, which would make
//! it a single-actor bottleneck: as in Akka's routed ref, the routing logic
//! runs on the sender's thread against a shared snapshot of the routees and
//! enqueues directly into the chosen routee's mailbox. The snapshot is
//! replaced (never mutated) by the router actor when the routees change,
//! and each thread caches its own view of it keyed by a generation number,
//! so a routed `tell` costs one atomic load to validate the cache, the
//! logic (for round-robin a step of the thread's own rotation, no shared
//! write), and the routee's own enqueue; no lock.
//! See `shared.rs` for the cache and `routed_ref.rs` for the target.
//!
//! Until the router has created its routees, and while messages forwarded
//! in that phase are still queued, senders hand their messages to the router
//! actor instead, so no message is lost at start-up and no sender's message
//! overtakes one it sent earlier.
//!
//! # Logics
//! [`RoundRobin`] (the default), [`RandomRouting`], [`BroadcastRouting`],
//! [`ConsistentHashing`] (key from a closure, virtual nodes) and
//! [`SmallestMailbox`] (from [`ActorRef::mailbox_len`](crate::ActorRef::mailbox_len)).
//! A custom logic implements [`RoutingLogic`]. Scatter-gather-first-completed
//! and tail-chopping need replies, so they are the requests
//! [`RouterRef::scatter_gather`] and [`RouterRef::tail_chopping`].
//!
//! # Routees come and go
//! The router watches its routees. A routee that terminates leaves the
//! routing table; a pool router whose last routee is gone stops itself
//! (a group keeps running and sends to dead letters). A pool's [`Resizer`]
//! grows and shrinks it between bounds. Stopping the router stops a pool's
//! routees, since they are its children; stopping the router's parent stops
//! both.
//!
//! # Bad input
//! A message no routee can take (no routees; a consistent-hashing message
//! without a key) goes to dead letters on `tell`, never panics, and is an
//! error ([`RoutingError`]) from [`RouterRef::route`], [`RouterRef::ask`]
//! and the other requests.
//!
//! [`SupervisorStrategy`]: crate::SupervisorStrategy

mod broadcast;
mod builder;
mod consistent_hashing;
mod error;
mod keyed_group;
mod logic;
mod random;
mod requests;
mod resizer;
mod round_robin;
mod routed_ref;
mod router_actor;
mod router_ref;
mod shared;
mod smallest_mailbox;

pub use broadcast::{Broadcast, BroadcastRouting};
pub use builder::{GroupRouter, PoolRouter, Router};
pub use consistent_hashing::{ConsistentHashing, DEFAULT_VIRTUAL_NODES};
pub use error::{RoutingError, SelectError};
pub use keyed_group::{KeyedGroupRouter, KEYED_GROUP_STASH};
pub use logic::{Routees, RoutingLogic, Selection};
pub use random::RandomRouting;
pub use resizer::Resizer;
pub use round_robin::RoundRobin;
pub use router_actor::{Internal, RouterMsg};
pub use router_ref::RouterRef;
pub use smallest_mailbox::SmallestMailbox;
