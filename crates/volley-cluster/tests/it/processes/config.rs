//! How a node process starts: its ports, seeds and cluster settings, in
//! one environment variable from the test to the child.

use std::collections::HashMap;
use std::time::Duration;

use volley_cluster::ClusterSettings;
use volley_remote::RemoteSettings;

/// Set in a node process: its [`NodeConfig`], encoded.
pub const NODE_ENV: &str = "VOLLEY_CLUSTER_NODE";

/// The resolver's `stable_after` for the process cases.
pub const STABLE_AFTER: Duration = Duration::from_secs(5);

/// The system name every node shares.
pub const SYSTEM: &str = "cluster";

/// One node's configuration.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// Where the node listens.
    pub bind: u16,
    /// What it advertises: its relay's port.
    pub port: u16,
    /// The advertised ports of its seed nodes.
    pub seeds: Vec<u16>,
    /// `[cluster] name`.
    pub cluster: String,
    /// `[remote] secret`.
    pub secret: Option<String>,
    /// `[cluster.swim] suspect_to_down_after`.
    pub suspect_ms: u64,
    /// The split-brain resolver's strategy (`keep-majority`,
    /// `static-quorum` with a quorum of 3, `keep-oldest`, `down-all`), or
    /// `off`.
    pub strategy: String,
    /// Whether the node runs the singleton `counter` (`singleton.rs`),
    /// and its `down_removal_margin`.
    pub singleton: Option<Duration>,
    /// Whether the node runs the sharded entity type `tracked`
    /// (`entities.rs`), and its `down_removal_margin`.
    pub sharding: Option<Duration>,
    /// `[cluster] seed_node_timeout`, when not the process cases' 5 s.
    pub seed_node_timeout: Option<Duration>,
}

impl NodeConfig {
    pub fn encode(&self) -> String {
        let seeds: Vec<String> = self.seeds.iter().map(u16::to_string).collect();
        let mut s = format!(
            "bind={};port={};seeds={};cluster={};suspect={};strategy={}",
            self.bind,
            self.port,
            seeds.join(","),
            self.cluster,
            self.suspect_ms,
            self.strategy
        );
        if let Some(secret) = &self.secret {
            s.push_str(&format!(";secret={secret}"));
        }
        if let Some(margin) = self.singleton {
            s.push_str(&format!(";singleton={}", margin.as_millis()));
        }
        if let Some(margin) = self.sharding {
            s.push_str(&format!(";sharding={}", margin.as_millis()));
        }
        if let Some(timeout) = self.seed_node_timeout {
            s.push_str(&format!(";seed_timeout={}", timeout.as_millis()));
        }
        s
    }

    pub fn decode(s: &str) -> Self {
        let kv: HashMap<&str, &str> = s.split(';').filter_map(|p| p.split_once('=')).collect();
        let number = |key: &str| kv[key].parse().expect("a number");
        let millis = |key: &str| {
            kv.get(key)
                .map(|ms| Duration::from_millis(ms.parse().expect("a number")))
        };
        NodeConfig {
            bind: number("bind") as u16,
            port: number("port") as u16,
            seeds: kv["seeds"]
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|p| p.parse().expect("a port"))
                .collect(),
            cluster: kv["cluster"].to_owned(),
            secret: kv.get("secret").map(|s| (*s).to_owned()),
            suspect_ms: number("suspect"),
            strategy: kv["strategy"].to_owned(),
            singleton: millis("singleton"),
            sharding: millis("sharding"),
            seed_node_timeout: millis("seed_timeout"),
        }
    }

    /// Listens on `bind`, advertises `port`, reconnects soon after a peer
    /// restarts.
    pub fn remote(&self) -> RemoteSettings {
        RemoteSettings {
            port: self.bind,
            canonical_port: Some(self.port),
            secret: self.secret.clone(),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_millis(400),
            ..RemoteSettings::default()
        }
    }

    /// The network tests' quick timings, with this node's seeds and
    /// suspicion window.
    pub fn cluster(&self) -> ClusterSettings {
        let seeds = self.seeds.iter().map(|p| address(*p)).collect();
        let mut settings = crate::network::quick_with_seeds(&self.cluster, seeds);
        settings.swim.suspect_to_down_after = Some(Duration::from_millis(self.suspect_ms));
        // Akka's default. The network tests' 500 ms is too short for a
        // first seed restarted on a loaded machine: it heard from no other
        // seed in time, formed a cluster of its own, and that cluster
        // merged into the old one with up-number 1, so the singleton and
        // every shard ran on two nodes at once (see the CHANGELOG). A
        // fresh cluster does not wait for it: the other seeds' answers
        // that they are not members either let the first form at once.
        settings.seed_node_timeout = self.seed_node_timeout.unwrap_or(Duration::from_secs(5));
        // Longer than the spread of one partition's detections: a side
        // that decides while it has seen only some of the other side
        // unreachable takes itself for the majority and downs them, and
        // both sides live on. In-process tests partition nobody, so their
        // 1 s is enough there.
        settings.split_brain_resolver.stable_after = Some(STABLE_AFTER);
        let resolver = &mut settings.split_brain_resolver;
        resolver.active_strategy = self.strategy.clone();
        if self.strategy == "static-quorum" {
            resolver.static_quorum.quorum_size = Some(3);
        }
        settings
    }
}

/// The address of the node that advertises `port`.
pub fn address(port: u16) -> String {
    format!("volley://{SYSTEM}@127.0.0.1:{port}")
}
