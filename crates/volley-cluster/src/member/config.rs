//! The membership settings, with Akka's names where they fit.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::sbr::SbrSettings;

/// Akka's default `allow-weakly-up-members`.
pub(crate) const DEFAULT_WEAKLY_UP_AFTER: Duration = Duration::from_secs(7);

/// How membership behaves on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembershipConfig {
    /// This node's roles (Akka `roles`).
    pub roles: BTreeSet<String>,
    /// This node's application version, dotted (Akka `app-version`).
    pub app_version: String,
    /// Joining members are not moved Up before the table holds this many
    /// members (Akka `min-nr-of-members`).
    pub min_nr_of_members: usize,
    /// Per role, no Joining member is moved Up before the table holds this
    /// many members with the role (Akka's
    /// `role.<name>.min-nr-of-members`).
    pub role_min_nr_of_members: std::collections::BTreeMap<String, usize>,
    /// How often a node sends its digest to one random member, and how
    /// often the core's own timer runs (Akka `gossip-interval`).
    pub gossip_interval: Duration,
    /// How often the leader acts at convergence (Akka
    /// `leader-actions-interval`); checked on the core's timer.
    pub leader_actions_interval: Duration,
    /// The first seed forms the cluster alone when it learnt of none
    /// within this time (Akka `seed-node-timeout`).
    pub seed_node_timeout: Duration,
    /// A node not yet joined announces itself again this often (Akka
    /// `retry-unsuccessful-join-after`).
    pub retry_unsuccessful_join_after: Duration,
    /// Tombstones of removed members are kept this long (Akka
    /// `prune-gossip-tombstones-after`).
    pub prune_gossip_tombstones_after: Duration,
    /// The most members the table holds, and the most tombstones of
    /// removed ones: a record or tombstone of a member new to a full
    /// table is refused and counted (no peer's gossip grows the table
    /// without end). Akka has no such bound.
    pub max_members: usize,
    /// The largest anti-entropy data page, in bytes.
    pub max_sync_page_bytes: usize,
    /// How many members the table holds but foca does not know are
    /// announced to on each run of the core's timer.
    pub announces_to_unknown_per_tick: usize,
    /// The split-brain resolver that downs unreachable members (design
    /// §4); `None`: none, only `Input::Down` downs a member. The core's
    /// default is `None` (the simulator's tests of membership alone);
    /// the runtime's `[cluster]` default is keep-majority.
    pub split_brain_resolver: Option<SbrSettings>,
    /// Whether this node confirms its own exiting only when asked
    /// (`Input::ConfirmExiting`, which the runtime sends once coordinated
    /// shutdown finished the exiting phases); false: it confirms as soon
    /// as it sees itself Exiting (the core alone has no exiting tasks).
    pub confirm_exiting_on_request: bool,
    /// How long the leader waits for an Exiting member that stays
    /// reachable to confirm before it removes it anyway (Akka's leader
    /// waits without bound: a node in coordinated shutdown confirms or
    /// stops).
    pub exiting_confirm_timeout: Duration,
    /// How long the leader goes without convergence before it moves the
    /// Joining members it reaches to WeaklyUp (Akka
    /// `allow-weakly-up-members`, 7 s); `None`: off, Joining members wait
    /// for convergence.
    pub allow_weakly_up_members: Option<Duration>,
    /// The cluster receptionist's limits on each member's services.
    pub service_bounds: crate::receptionist::ServiceBounds,
}

impl Default for MembershipConfig {
    fn default() -> Self {
        Self {
            roles: BTreeSet::new(),
            app_version: "0.0.0".to_owned(),
            min_nr_of_members: 1,
            role_min_nr_of_members: std::collections::BTreeMap::new(),
            gossip_interval: Duration::from_secs(1),
            leader_actions_interval: Duration::from_secs(1),
            seed_node_timeout: Duration::from_secs(5),
            retry_unsuccessful_join_after: Duration::from_secs(10),
            prune_gossip_tombstones_after: Duration::from_secs(24 * 3600),
            max_members: super::table::DEFAULT_MAX_MEMBERS,
            max_sync_page_bytes: 64 * 1024,
            announces_to_unknown_per_tick: 3,
            split_brain_resolver: None,
            confirm_exiting_on_request: false,
            exiting_confirm_timeout: Duration::from_secs(30),
            allow_weakly_up_members: Some(DEFAULT_WEAKLY_UP_AFTER),
            service_bounds: crate::receptionist::ServiceBounds::default(),
        }
    }
}
