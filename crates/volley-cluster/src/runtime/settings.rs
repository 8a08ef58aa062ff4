//! The `[cluster]` section of the actor system's settings: Akka's names,
//! durations with units (`gossip_interval = "1s"`), and foca's timings in
//! `[cluster.swim]`.

use std::collections::{BTreeMap, BTreeSet};
use std::num::{NonZeroU32, NonZeroUsize};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::member::MembershipConfig;
use crate::runtime::error::ClusterError;
use crate::runtime::sbr_section::SplitBrainResolverSection;
use crate::sharding::ShardingSection;
use crate::singleton::SingletonSection;

/// The name of this crate's section in the actor system's settings.
pub const SECTION: &str = "cluster";

/// The cluster size foca's LAN defaults are derived from (its
/// `max_transmissions` and, unless set, `suspect_to_down_after`).
const FOCA_BASE_SIZE: u32 = 16;

/// Makes the `[cluster]` section known to `volley::Settings`, so settings
/// that hold it parse. Idempotent; [`ClusterSettings::from_system_settings`]
/// calls it too.
pub fn register_settings() {
    volley::Settings::register_section(SECTION).expect("`cluster` is not a core settings key");
}

/// How this node takes part in a cluster (`[cluster]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSettings {
    /// The cluster's name, carried by every cluster frame: frames naming
    /// another cluster are refused (counted). Default `"volley"`.
    pub name: String,
    /// Addresses to join through (`"volley://system@host:port"`), Akka's
    /// `seed-nodes`. The first forms the cluster alone after
    /// `seed_node_timeout` if it is this node. Empty: join by hand
    /// (`Cluster::join`).
    pub seed_nodes: Vec<String>,
    /// This node's roles.
    pub roles: Vec<String>,
    /// This node's application version, dotted. Default `"0.0.0"`.
    pub app_version: String,
    /// No Joining member moves Up before the cluster holds this many.
    /// Default 1.
    pub min_nr_of_members: usize,
    /// Per role, no Joining member moves Up before the cluster holds this
    /// many members with the role (`[cluster.role_min_nr_of_members]`,
    /// Akka's `role.<name>.min-nr-of-members`). Default none.
    pub role_min_nr_of_members: BTreeMap<String, usize>,
    /// The membership's periodic work: digests, announces, join retries.
    /// Default 1 s.
    #[serde(with = "humantime_serde")]
    pub gossip_interval: Duration,
    /// How often the leader acts at convergence. Default 1 s.
    #[serde(with = "humantime_serde")]
    pub leader_actions_interval: Duration,
    /// The first seed forms the cluster alone after this. Default 5 s.
    #[serde(with = "humantime_serde")]
    pub seed_node_timeout: Duration,
    /// A node not yet a member announces itself again this often.
    /// Default 10 s.
    #[serde(with = "humantime_serde")]
    pub retry_unsuccessful_join_after: Duration,
    /// Removed members' tombstones are kept this long. Default 24 h.
    #[serde(with = "humantime_serde")]
    pub prune_gossip_tombstones_after: Duration,
    /// A node that has not joined through its seed nodes this long after
    /// it began runs coordinated shutdown (reason
    /// `ClusterJoinUnsuccessful`), as Akka's
    /// `shutdown-after-unsuccessful-join-seed-nodes`. Absent (the
    /// default): it keeps trying.
    #[serde(with = "humantime_serde")]
    pub shutdown_after_unsuccessful_join_seed_nodes: Option<Duration>,
    /// The most members the table holds, and the most tombstones of
    /// removed ones; gossip naming more is refused and counted
    /// (`Cluster::refused_table_full`). Default 10,000.
    pub max_members: usize,
    /// Cluster frames waiting for the driver task; past it a frame is
    /// dropped and counted (`Cluster::inbound_dropped`). Default 1024.
    pub inbound_queue: usize,
    /// Run the system's coordinated shutdown (reason `ClusterDowning`)
    /// when this node sees itself downed, as Akka's
    /// `run-coordinated-shutdown-when-down`. Default true.
    pub run_coordinated_shutdown_when_down: bool,
    /// `Cluster::leave` runs the system's coordinated shutdown (reason
    /// `ClusterLeaving`), as an Akka node that leaves does: its phases
    /// hand the sharding regions' shards off, make the node Leaving, hand
    /// its singletons over, confirm the exit to the leader, and terminate
    /// the system. False: `Cluster::leave` only makes the node Leaving;
    /// it confirms its exit as soon as it is Exiting and keeps running
    /// once Removed. Default true.
    pub run_coordinated_shutdown_when_leaving: bool,
    /// How long the leader waits for a reachable Exiting member to
    /// confirm its exit before it removes it anyway (counted in
    /// `Cluster::exiting_timeouts`). Default 30 s.
    #[serde(with = "humantime_serde")]
    pub exiting_confirm_timeout: Duration,
    /// How long the leader goes without convergence (a member
    /// unreachable) before it moves the Joining members it reaches to
    /// WeaklyUp, as Akka's `allow-weakly-up-members`: a duration
    /// (`"7s"`), or `"off"` (also `false`) to keep Joining members
    /// Joining until convergence; `"on"` (also `true`) is the default.
    /// Default 7 s.
    #[serde(with = "crate::runtime::settings_duration_or_off")]
    pub allow_weakly_up_members: Option<Duration>,
    /// foca's (SWIM's) timings.
    pub swim: SwimSettings,
    /// The split-brain resolver (`[cluster.split_brain_resolver]`).
    /// Default: keep-majority, `stable_after` by cluster size.
    pub split_brain_resolver: SplitBrainResolverSection,
    /// The defaults of this node's singletons (`[cluster.singleton]`).
    pub singleton: SingletonSection,
    /// The defaults of this node's sharded entity types
    /// (`[cluster.sharding]`), read by
    /// `ShardingSettings::from_system_settings`.
    pub sharding: ShardingSection,
}

/// foca's timings (`[cluster.swim]`), foca's names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SwimSettings {
    /// How often a member probes another. Default 1 s.
    #[serde(with = "humantime_serde")]
    pub probe_period: Duration,
    /// How long a probe waits for its ack before asking others to probe.
    /// Below `probe_period`. Default 500 ms.
    #[serde(with = "humantime_serde")]
    pub probe_rtt: Duration,
    /// How many members are asked to probe indirectly. Default 3.
    pub num_indirect_probes: usize,
    /// How long a suspect member has to refute before it is declared down
    /// (unreachable). Absent: foca's LAN rule for 16 members.
    #[serde(with = "humantime_serde")]
    pub suspect_to_down_after: Option<Duration>,
    /// How long foca remembers a down member. Default 24 h.
    #[serde(with = "humantime_serde")]
    pub remove_down_after: Duration,
    /// The largest SWIM packet, 512 to 65,535 bytes. Default 1400.
    pub max_packet_size: usize,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        let membership = MembershipConfig::default();
        ClusterSettings {
            name: "volley".to_owned(),
            seed_nodes: Vec::new(),
            roles: Vec::new(),
            app_version: membership.app_version,
            min_nr_of_members: membership.min_nr_of_members,
            role_min_nr_of_members: BTreeMap::new(),
            gossip_interval: membership.gossip_interval,
            leader_actions_interval: membership.leader_actions_interval,
            seed_node_timeout: membership.seed_node_timeout,
            retry_unsuccessful_join_after: membership.retry_unsuccessful_join_after,
            prune_gossip_tombstones_after: membership.prune_gossip_tombstones_after,
            max_members: membership.max_members,
            shutdown_after_unsuccessful_join_seed_nodes: None,
            inbound_queue: 1024,
            run_coordinated_shutdown_when_down: true,
            run_coordinated_shutdown_when_leaving: true,
            exiting_confirm_timeout: membership.exiting_confirm_timeout,
            allow_weakly_up_members: membership.allow_weakly_up_members,
            swim: SwimSettings::default(),
            split_brain_resolver: SplitBrainResolverSection::default(),
            singleton: SingletonSection::default(),
            sharding: ShardingSection::default(),
        }
    }
}

impl Default for SwimSettings {
    fn default() -> Self {
        SwimSettings {
            probe_period: Duration::from_secs(1),
            probe_rtt: Duration::from_millis(500),
            num_indirect_probes: 3,
            suspect_to_down_after: None,
            remove_down_after: Duration::from_secs(24 * 3600),
            max_packet_size: 1400,
        }
    }
}

impl ClusterSettings {
    /// Reads the `[cluster]` section of the system's settings (defaults
    /// when absent), validated.
    pub fn from_system_settings(settings: &volley::Settings) -> Result<Self, ClusterError> {
        register_settings();
        let parsed: ClusterSettings = match settings.extensions.get(SECTION) {
            None => ClusterSettings::default(),
            Some(value) => value
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| ClusterError::InvalidSettings(e.to_string()))?,
        };
        parsed.validate()?;
        Ok(parsed)
    }

    /// Checks what the types do not.
    pub fn validate(&self) -> Result<(), ClusterError> {
        let out_of_range = |key, reason| Err(ClusterError::OutOfRange { key, reason });
        let positive = [
            ("gossip_interval", self.gossip_interval),
            ("leader_actions_interval", self.leader_actions_interval),
            (
                "retry_unsuccessful_join_after",
                self.retry_unsuccessful_join_after,
            ),
            ("swim.probe_period", self.swim.probe_period),
            ("swim.probe_rtt", self.swim.probe_rtt),
            ("exiting_confirm_timeout", self.exiting_confirm_timeout),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, d)| d.is_zero()) {
            return out_of_range(key, "must be above zero");
        }
        if self.name.is_empty() || self.name.len() > usize::from(u16::MAX) {
            return out_of_range("name", "must be 1 to 65,535 bytes");
        }
        if self.min_nr_of_members == 0 {
            return out_of_range("min_nr_of_members", "must be at least 1");
        }
        if self
            .shutdown_after_unsuccessful_join_seed_nodes
            .is_some_and(|d| d.is_zero())
        {
            return out_of_range(
                "shutdown_after_unsuccessful_join_seed_nodes",
                "must be above zero",
            );
        }
        if self.role_min_nr_of_members.values().any(|n| *n == 0) {
            return out_of_range("role_min_nr_of_members", "each must be at least 1");
        }
        if self.max_members == 0 {
            return out_of_range("max_members", "must be at least 1");
        }
        if self.inbound_queue == 0 {
            return out_of_range("inbound_queue", "must be at least 1");
        }
        if self.swim.probe_rtt >= self.swim.probe_period {
            return out_of_range("swim.probe_rtt", "must be below swim.probe_period");
        }
        if self.swim.num_indirect_probes == 0 {
            return out_of_range("swim.num_indirect_probes", "must be at least 1");
        }
        if !(512..=65_535).contains(&self.swim.max_packet_size) {
            return out_of_range("swim.max_packet_size", "must be 512 to 65,535 bytes");
        }
        if self.allow_weakly_up_members.is_some_and(|d| d.is_zero()) {
            return out_of_range("allow_weakly_up_members", "must be above zero, or \"off\"");
        }
        if self.swim.suspect_to_down_after.is_some_and(|d| d.is_zero()) {
            return out_of_range("swim.suspect_to_down_after", "must be above zero");
        }
        self.split_brain_resolver.settings()?;
        self.singleton.validate()?;
        self.sharding.validate()?;
        Ok(())
    }

    /// The membership settings of the core.
    pub(crate) fn membership(&self) -> MembershipConfig {
        MembershipConfig {
            roles: self.roles.iter().cloned().collect::<BTreeSet<_>>(),
            app_version: self.app_version.clone(),
            min_nr_of_members: self.min_nr_of_members,
            role_min_nr_of_members: self.role_min_nr_of_members.clone(),
            gossip_interval: self.gossip_interval,
            leader_actions_interval: self.leader_actions_interval,
            seed_node_timeout: self.seed_node_timeout,
            retry_unsuccessful_join_after: self.retry_unsuccessful_join_after,
            prune_gossip_tombstones_after: self.prune_gossip_tombstones_after,
            max_members: self.max_members,
            // Checked by `validate`; refused settings run no resolver.
            split_brain_resolver: self.split_brain_resolver.settings().ok().flatten(),
            // The exiting-done phase of coordinated shutdown, or the
            // driver when none runs, confirms.
            confirm_exiting_on_request: true,
            exiting_confirm_timeout: self.exiting_confirm_timeout,
            allow_weakly_up_members: self.allow_weakly_up_members,
            ..MembershipConfig::default()
        }
    }

    /// foca's settings: its LAN defaults with the timings set here.
    pub(crate) fn swim(&self) -> foca::Config {
        let base_size = NonZeroU32::new(FOCA_BASE_SIZE).expect("non-zero");
        let mut config = foca::Config::new_lan(base_size);
        let swim = &self.swim;
        config.probe_period = swim.probe_period;
        config.probe_rtt = swim.probe_rtt;
        // Both checked non-zero by `validate`; the fallbacks are foca's.
        config.num_indirect_probes =
            NonZeroUsize::new(swim.num_indirect_probes).unwrap_or(config.num_indirect_probes);
        config.max_packet_size =
            NonZeroUsize::new(swim.max_packet_size).unwrap_or(config.max_packet_size);
        if let Some(after) = swim.suspect_to_down_after {
            config.suspect_to_down_after = after;
        }
        config.remove_down_after = Some(swim.remove_down_after);
        config
    }
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
