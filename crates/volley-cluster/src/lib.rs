//! volley cluster membership: a sans-IO core on foca (SWIM) and a seeded
//! simulator to drive it.
//!
//! This crate is steps 4 to 6 and part of 7 of `docs/design/cluster.md` (§8):
//!
//! - [`NodeId`] is a member's identity: address, incarnation uid, start
//!   time and SWIM epoch;
//! - [`ClusterCodec`] is foca's packet layout for it, little-endian and
//!   fixed, specified in `docs/reference/cluster.md`;
//! - [`ClusterCore`] owns foca and the member table and is driven by
//!   [`handle(now, input)`](ClusterCore::handle), which returns packets to
//!   send, timers to schedule, SWIM-level [`MembershipEvent`]s and Akka's
//!   [`ClusterEvent`]s;
//! - membership as Akka's: [`MemberRecord`]s with a [`MemberStatus`],
//!   spread as foca custom broadcasts and by anti-entropy, joining through
//!   seed nodes, the leader and convergence, [`ClusterState`];
//! - [`sim`] runs many cores over a virtual clock and a seeded network
//!   with loss, delay and partitions;
//! - [`Cluster`] runs one node's core on volley-remote (step 7, first
//!   slice): a driver task, the `[cluster]` settings, events on the
//!   system's event stream. The core and the simulator do not use it.
//!
//! [`singleton`] runs one instance of an actor on the oldest member and
//! hands it over when that member leaves or is downed.
//!
//! The split-brain resolver ([`sbr`]) runs in the core when its settings
//! hold one (`MembershipConfig::split_brain_resolver`; on by default on
//! the network, `[cluster.split_brain_resolver]`): it downs what stays
//! unreachable, and only the leader of each side acts.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod codec;
mod core;
mod event;
mod formation;
mod member;
mod node_id;
mod outbox;
mod receptionist;
mod runtime;
pub mod sbr;
pub mod sharding;
pub mod sim;
pub mod singleton;
mod view;

pub use crate::codec::{ClusterCodec, CodecError, MAX_HOST_LEN};
pub use crate::core::{
    ClusterCore, FormationRefusals, FormationRefused, Input, Outputs, Refused, RefusedBy,
};
pub use crate::event::MembershipEvent;
pub use crate::formation::{EnvelopeError, Formation, ENVELOPE_LEN, ENVELOPE_VERSION};
pub use crate::member::{
    state_as_events, ClusterEvent, ClusterState, InitialState, MemberRecord, MemberStatus,
    MemberTable, MembershipConfig, UniqueAddress,
};
pub use crate::node_id::{Addr, NodeId};
pub use crate::outbox::{Channel, ClusterTimer, Packet, TimerAt};
pub use crate::receptionist::{
    OwnerSet, ServiceBounds, ServiceChange, ServiceEntry, ServiceRefused, ServiceRegistry,
};
pub use crate::runtime::{
    register_settings, Cluster, ClusterError, ClusterSettings, KeepOldestSection, RoleSection,
    SplitBrainResolverSection, StaticQuorumSection, SwimSettings, CLUSTER_METRIC_NAMES, SECTION,
};
pub use foca::{Config, Identity, Member, State, Timer};
