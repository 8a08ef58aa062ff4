//! The same seed replays the same run, event for event.

use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig, SimStats, TraceEntry};

use crate::common::{addr, cluster};

/// A run with every source of randomness at work: loss, spread delays, a
/// partition and its heal, a restart.
fn eventful_run(seed: u64) -> (Vec<TraceEntry>, SimStats) {
    let mut config = SimConfig::lan(seed, 20);
    config.network.loss = 0.05;
    config.network.max_latency = Duration::from_millis(20);
    let (mut sim, addrs) = cluster(config, 20);
    sim.run_for(Duration::from_secs(5));
    sim.partition(&[addrs[..12].to_vec(), addrs[12..].to_vec()]);
    sim.run_for(Duration::from_secs(15));
    sim.heal();
    sim.kill(&addr(5));
    sim.run_for(Duration::from_secs(3));
    sim.start_node(&addr(5).0, addr(5).1);
    let via = sim.node(&addr(0)).expect("running").identity().clone();
    sim.join(&addr(5), &via);
    sim.run_for(Duration::from_secs(20));
    (sim.trace().to_vec(), sim.stats())
}

#[test]
fn the_same_seed_replays_the_same_trace() {
    for seed in seeds(&[31]) {
        let (first, first_stats) = eventful_run(seed);
        let (second, second_stats) = eventful_run(seed);
        assert!(first.len() > 100, "seed {seed}: the run has events");
        assert_eq!(first, second, "seed {seed}: same trace");
        assert_eq!(first_stats, second_stats, "seed {seed}: same traffic");
        let (other, _) = eventful_run(seed + 1);
        assert_ne!(
            first,
            other,
            "seeds {seed} and {}: different runs",
            seed + 1
        );
    }
}
