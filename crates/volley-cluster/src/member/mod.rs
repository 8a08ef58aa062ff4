//! Membership as Akka users know it (design §3): member records with a
//! status, roles, app version and up-number, merged as a join-semilattice
//! and spread as foca custom broadcasts and by anti-entropy; the leader,
//! convergence, and the cluster events.

mod config;
pub(crate) mod event;
pub(crate) mod knowledge;
pub(crate) mod leader;
pub(crate) mod pages;
mod record;
mod state;
mod status;
mod table;
pub(crate) mod wire;

pub use self::config::MembershipConfig;
pub(crate) use self::config::DEFAULT_WEAKLY_UP_AFTER;
pub use self::event::{state_as_events, ClusterEvent, InitialState};
pub use self::record::{MemberRecord, UniqueAddress};
pub use self::state::ClusterState;
pub use self::status::MemberStatus;
pub use self::table::MemberTable;
