//! Five members, each with its resolver, through a clean, an asymmetric and
//! a flapping partition, for every strategy (`scenario_harness.rs` says
//! how they are fed). Default timings: five members give stable-after 7 s
//! and down-all-when-unstable 5.25 s. The harness applies a network change
//! at the next tick, so the resolvers notice it 1 s after it happens.

use std::time::Duration;

use super::scenario_harness::Cluster;
use crate::sbr::{ActiveStrategy, Decision, DowningReason, SbrSettings, TICK_INTERVAL};

const HOSTS: [&str; 5] = ["a", "b", "c", "d", "e"];
const STABLE_AFTER: Duration = Duration::from_secs(7);
const DOWN_ALL_WHEN_UNSTABLE: Duration = Duration::from_millis(5250);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn settings(active_strategy: ActiveStrategy) -> SbrSettings {
    let mut settings = SbrSettings {
        active_strategy,
        ..SbrSettings::default()
    };
    settings.static_quorum.quorum_size = Some(3);
    settings
}

const ALL: [ActiveStrategy; 4] = [
    ActiveStrategy::KeepMajority,
    ActiveStrategy::StaticQuorum,
    ActiveStrategy::KeepOldest,
    ActiveStrategy::DownAll,
];

/// A 3/2 split, both ways: the side the strategy keeps downs the other,
/// the other side's leader downs its own side, each after stable-after.
#[test]
fn clean_partition() {
    let expected: [(ActiveStrategy, &[&str]); 4] = [
        (ActiveStrategy::KeepMajority, &["a", "b", "c"]),
        (ActiveStrategy::StaticQuorum, &["a", "b", "c"]),
        (ActiveStrategy::KeepOldest, &["a", "b", "c"]),
        (ActiveStrategy::DownAll, &[]),
    ];
    for (strategy, survivors) in expected {
        let mut cluster = Cluster::new(&HOSTS, &settings(strategy));
        cluster.partition(&["a", "b", "c"], &["d", "e"]);
        cluster.run_until(secs(60));
        assert_eq!(cluster.running(), survivors, "{strategy:?}");
        let noticed = TICK_INTERVAL;
        for decided in &cluster.decisions {
            assert_eq!(
                decided.at,
                noticed + STABLE_AFTER,
                "{strategy:?} by {}",
                decided.by
            );
            assert_eq!(decided.downing.reason, DowningReason::Stable);
        }
        let deciders: Vec<&str> = cluster.decisions.iter().map(|d| d.by.as_str()).collect();
        assert_eq!(
            deciders,
            ["a", "d"],
            "{strategy:?}: each side's leader decides"
        );
        assert!(cluster.decisions[1].downing.down_self || strategy == ActiveStrategy::DownAll);
    }
}

/// keep-oldest with the oldest cut off alone: with down-if-alone (the
/// default) it downs itself and the four others stay.
#[test]
fn clean_partition_isolating_the_oldest() {
    let mut cluster = Cluster::new(&HOSTS, &settings(ActiveStrategy::KeepOldest));
    cluster.partition(&["a"], &["b", "c", "d", "e"]);
    cluster.run_until(secs(60));
    assert_eq!(cluster.running(), ["b", "c", "d", "e"]);

    let mut keep_it = settings(ActiveStrategy::KeepOldest);
    keep_it.keep_oldest.down_if_alone = false;
    let mut cluster = Cluster::new(&HOSTS, &keep_it);
    cluster.partition(&["a"], &["b", "c", "d", "e"]);
    cluster.run_until(secs(60));
    assert_eq!(cluster.running(), ["a"]);
}

/// One link broken one way: `a` stops hearing `b`, while `b` still gets
/// `a`'s gossip through the others. `a` and `b` are indirectly connected and
/// are downed; the three fully connected members stay (down-all downs all).
#[test]
fn asymmetric_partition() {
    for strategy in ALL {
        let mut cluster = Cluster::new(&HOSTS, &settings(strategy));
        cluster.cut_one_way("b", "a");
        cluster.run_until(secs(60));
        let survivors: &[&str] = match strategy {
            ActiveStrategy::DownAll => &[],
            _ => &["c", "d", "e"],
        };
        assert_eq!(cluster.running(), survivors, "{strategy:?}");
        let first = &cluster.decisions[0];
        assert_eq!(first.at, TICK_INTERVAL + STABLE_AFTER, "{strategy:?}");
        if strategy != ActiveStrategy::DownAll {
            assert_eq!(first.downing.decision, Decision::DownIndirectlyConnected);
        }
    }
}

/// A broken link beside a clean split: {a, b, c} | {d, e}, and `b` and `c`
/// stop hearing each other while both still hear `a`. The majority side
/// downs `b`, `c` (indirectly connected) and the minority; `a` alone stays
/// (Pekko's "{A, (B, C)} | {D, E} => {A}").
#[test]
fn asymmetric_link_beside_a_clean_partition() {
    let mut cluster = Cluster::new(&HOSTS, &settings(ActiveStrategy::KeepMajority));
    cluster.partition(&["a", "b", "c"], &["d", "e"]);
    cluster.cut_one_way("b", "c");
    cluster.cut_one_way("c", "b");
    cluster.run_until(secs(60));
    assert_eq!(cluster.running(), ["a"]);
}

/// A link that keeps flapping: `b`–`d` drops what goes one way, then what
/// goes the other way, switching every second, so reachability changes at
/// every tick and never all heals. No state is stable; every node downs all
/// within stable-after + down-all-when-unstable of the first change (plus
/// one tick), whatever the strategy: the flapping never stays unresolved.
#[test]
fn flapping_link_ends_in_down_all() {
    for strategy in ALL {
        let mut cluster = Cluster::new(&HOSTS, &settings(strategy));
        let first_change = TICK_INTERVAL;
        let limit = first_change + STABLE_AFTER + DOWN_ALL_WHEN_UNSTABLE + TICK_INTERVAL;
        let mut second = 0;
        while !cluster.running().is_empty() && cluster.now < secs(120) {
            cluster.heal();
            if second % 2 == 0 {
                cluster.cut_one_way("b", "d");
            } else {
                cluster.cut_one_way("d", "b");
            }
            second += 1;
            cluster.run_until(secs(second));
        }
        assert!(cluster.running().is_empty(), "{strategy:?}: all downed");
        assert!(
            cluster.now <= limit,
            "{strategy:?}: resolved at {:?}",
            cluster.now
        );
        let last = cluster.decisions.last().expect("a decision");
        assert_eq!(last.downing.reason, DowningReason::Unstable, "{strategy:?}");
        // The first tick at or past first change + 7 s + 5.25 s.
        assert_eq!(last.at, secs(14), "{strategy:?}");
        assert_eq!(
            cluster.decisions.len(),
            1,
            "{strategy:?}: the first to tick downs all"
        );
    }
}

/// A link that fails and fully heals every other second: as in Pekko, each
/// full heal resolves the instability (nothing is left unreachable), so the
/// measure starts again and nobody is downed; no member stays unreachable
/// longer than one flap.
#[test]
fn a_link_healing_fully_between_flaps_downs_nobody() {
    for strategy in ALL {
        let mut cluster = Cluster::new(&HOSTS, &settings(strategy));
        for second in 0..60 {
            if second % 2 == 0 {
                cluster.partition(&["b"], &["d"]);
            } else {
                cluster.heal();
            }
            cluster.run_until(secs(second + 1));
        }
        assert_eq!(cluster.running(), HOSTS, "{strategy:?}");
        assert!(cluster.decisions.is_empty(), "{strategy:?}");
    }
}

/// A partition healed before stable-after downs nobody
/// (`SurviveNetworkInstabilitySpec`'s heal cases).
#[test]
fn partition_healed_before_stable_after_downs_nobody() {
    for strategy in ALL {
        let mut cluster = Cluster::new(&HOSTS, &settings(strategy));
        cluster.partition(&["a", "b", "c"], &["d", "e"]);
        cluster.run_until(secs(5));
        cluster.heal();
        cluster.run_until(secs(120));
        assert_eq!(cluster.running(), HOSTS, "{strategy:?}");
        assert!(cluster.decisions.is_empty(), "{strategy:?}");
    }
}
