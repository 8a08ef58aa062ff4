//! The split-brain resolver wired into the core: a partition and a crash
//! resolved by downing, with no `Down` by hand (design §4.2, Pekko
//! `SplitBrainResolverIntegrationSpec`'s keep-majority cases).

use std::time::Duration;

use volley_cluster::sbr::{Decision, DowningReason, SbrSettings, StableAfter};
use volley_cluster::sim::{seeds, SimConfig, Simulation};
use volley_cluster::{Addr, ClusterEvent, Identity, MemberStatus};

use crate::common::{all_up, assert_nobody_lost, cluster_events_of, run_until, seeded_cluster};

const LIMIT: Duration = Duration::from_secs(120);
const STABLE_AFTER: Duration = Duration::from_secs(7);

/// Five members with keep-majority (the default strategy), all Up.
fn five_up(seed: u64) -> (Simulation, Vec<Addr>) {
    let mut config = SimConfig::lan(seed, 5);
    config.membership.split_brain_resolver = Some(SbrSettings {
        stable_after: StableAfter::Fixed(STABLE_AFTER),
        ..SbrSettings::default()
    });
    let (mut sim, addrs) = seeded_cluster(config, 5);
    run_until(&mut sim, LIMIT, "all Up everywhere", |sim| {
        all_up(sim, &addrs)
    });
    (sim, addrs)
}

/// The status `observer` holds for the member at `member`, if any.
fn status_seen(sim: &Simulation, observer: &Addr, member: &Addr) -> Option<MemberStatus> {
    let state = sim.state(observer)?;
    let record = state.members.iter().find(|m| m.node.addr() == *member)?;
    Some(record.status)
}

/// When `observer` first saw `member` unreachable.
fn unreachable_at(sim: &Simulation, observer: &Addr, member: &Addr) -> Option<Duration> {
    sim.cluster_trace()
        .iter()
        .filter(|entry| entry.node.addr() == *observer)
        .find(|entry| {
            matches!(&entry.event, ClusterEvent::UnreachableMember { member: m }
                if m.node.addr() == *member)
        })
        .map(|entry| entry.at)
}

#[test]
fn a_three_two_split_downs_the_minority_on_both_sides() {
    for seed in seeds(&[31, 32]) {
        let (mut sim, addrs) = five_up(seed);
        let (majority, minority) = addrs.split_at(3);
        sim.partition(&[majority.to_vec(), minority.to_vec()]);
        run_until(
            &mut sim,
            LIMIT,
            "the minority Removed by the majority and Down on itself",
            |sim| {
                majority.iter().all(|observer| {
                    minority.iter().all(|m| {
                        status_seen(sim, observer, m).is_none_or(|s| s == MemberStatus::Removed)
                    })
                }) && minority
                    .iter()
                    .all(|m| status_seen(sim, m, m).is_some_and(|s| s >= MemberStatus::Down))
            },
        );
        for observer in majority {
            for member in majority {
                assert_eq!(
                    status_seen(&sim, observer, member),
                    Some(MemberStatus::Up),
                    "seed {seed}: the majority keeps its members"
                );
            }
        }
        let downings = sim.downing_trace();
        let by_majority: Vec<_> = downings
            .iter()
            .filter(|d| majority.contains(&d.node.addr()))
            .collect();
        assert_eq!(
            by_majority.len(),
            1,
            "seed {seed}: one decision, by the majority's leader: {by_majority:?}"
        );
        let decision = &by_majority[0];
        assert_eq!(
            decision.node.addr(),
            majority[0],
            "seed {seed}: the leader decides"
        );
        assert_eq!(decision.downing.decision, Decision::DownUnreachable);
        assert!(!decision.downing.down_self);
        let downed: Vec<Addr> = decision.downing.nodes.iter().map(|n| n.addr()).collect();
        assert_eq!(downed, minority.to_vec(), "seed {seed}");
        let seen_at = unreachable_at(&sim, &majority[0], &minority[0]).expect("unreachable first");
        assert!(
            decision.at >= seen_at + STABLE_AFTER,
            "seed {seed}: decided at {:?}, {seen_at:?} + stable_after",
            decision.at
        );
        assert!(
            downings.iter().any(|d| minority.contains(&d.node.addr())
                && d.downing.down_self
                && d.downing.decision == Decision::DownReachable),
            "seed {seed}: the minority downs itself: {downings:?}"
        );
    }
}

#[test]
fn a_crashed_member_is_downed_after_stable_after_and_removed() {
    for seed in seeds(&[33, 34]) {
        let (mut sim, addrs) = five_up(seed);
        let crashed = addrs[4].clone();
        let survivors = &addrs[..4];
        sim.kill(&crashed);
        run_until(
            &mut sim,
            LIMIT,
            "the crashed member Removed everywhere",
            |sim| {
                survivors.iter().all(|observer| {
                    status_seen(sim, observer, &crashed).is_none_or(|s| s == MemberStatus::Removed)
                })
            },
        );
        let downings = sim.downing_trace();
        assert_eq!(downings.len(), 1, "seed {seed}: {downings:?}");
        let decision = &downings[0];
        assert_eq!(
            decision.node.addr(),
            addrs[0],
            "seed {seed}: the leader decides"
        );
        assert_eq!(decision.downing.reason, DowningReason::Stable);
        let downed: Vec<Addr> = decision.downing.nodes.iter().map(|n| n.addr()).collect();
        assert_eq!(downed, vec![crashed.clone()], "seed {seed}");
        let seen_at = unreachable_at(&sim, &addrs[0], &crashed).expect("unreachable first");
        assert!(decision.at >= seen_at + STABLE_AFTER, "seed {seed}");
        for observer in survivors {
            let events: Vec<_> = cluster_events_of(
                &sim,
                &sim.state(observer).unwrap().self_member.unwrap().node,
            )
            .filter_map(|event| match event {
                ClusterEvent::MemberRemoved {
                    member,
                    previous_status,
                } if member.node.addr() == crashed => Some(*previous_status),
                _ => None,
            })
            .collect();
            assert_eq!(
                events,
                vec![MemberStatus::Down],
                "seed {seed}: {observer:?} saw it removed once, from Down"
            );
        }
        assert!(
            all_up(&sim, survivors),
            "seed {seed}: the survivors stay Up"
        );
    }
}

/// A link cut one way only: SWIM's indirect probes reach the member
/// through the others, so nobody is suspected, nobody is downed, and the
/// resolver, which would down both ends as indirectly connected (Akka),
/// has nothing to decide (docs/reference/split-brain-resolver.md).
#[test]
fn a_link_cut_one_way_is_bridged_by_indirect_probes_and_downs_nobody() {
    for seed in seeds(&[35, 36]) {
        let (mut sim, addrs) = five_up(seed);
        let cut_before = sim.stats().packets_cut;
        sim.cut_one_way(&addrs[0], &addrs[1]);
        // Time passing is the test: detection, then `stable_after`, twice.
        sim.run_for(STABLE_AFTER * 4);
        assert!(
            sim.stats().packets_cut > cut_before,
            "seed {seed}: the cut dropped nothing"
        );
        assert!(all_up(&sim, &addrs), "seed {seed}: not all Up everywhere");
        assert_nobody_lost(&sim, seed);
    }
}
