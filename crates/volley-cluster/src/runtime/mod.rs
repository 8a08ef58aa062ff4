//! The cluster on the network (design §8 step 7): the glue between the
//! sans-IO [`ClusterCore`](crate::ClusterCore), volley's actor system and
//! volley-remote's transport.
//!
//! - `cluster`: [`Cluster`], the API (start, join, leave, down, state);
//! - `driver`: the tokio task that owns the core;
//! - `inbound`: the transport hook, which only enqueues;
//! - `outgoing`: the core's packets as datagrams;
//! - `authority`: the cluster as the transport's membership authority;
//! - `phases`: the coordinated-shutdown phases, and shutdown when downed;
//! - `shared`: what the driver publishes for other threads; `metrics`:
//!   the `volley_cluster_*` metrics;
//! - `timers`: the core's timers on the driver's clock;
//! - `member_callbacks`: code run when this node is Up or removed;
//! - `settings`: the `[cluster]` section, `sbr_section` its
//!   `[cluster.split_brain_resolver]`; `error`: [`ClusterError`].

mod authority;
mod by_address;
mod cluster;
mod driver;
mod error;
mod inbound;
mod member_callbacks;
mod metrics;
mod outgoing;
mod phases;
mod sbr_section;
mod settings;
mod settings_duration_or_off;
mod shared;
mod timers;

pub use self::cluster::Cluster;
pub(crate) use self::driver::Command;
pub use self::error::ClusterError;
pub use self::metrics::CLUSTER_METRIC_NAMES;
pub use self::sbr_section::{
    KeepOldestSection, RoleSection, SplitBrainResolverSection, StaticQuorumSection,
};
pub use self::settings::{register_settings, ClusterSettings, SwimSettings, SECTION};
