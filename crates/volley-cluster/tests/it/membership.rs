//! Membership through seed nodes: join, leave, down (Pekko
//! `JoinSeedNodeSpec`, `NodeUpSpec`, `ConvergenceSpec`,
//! `MinMembersBeforeUpSpec`, `NodeLeavingAndExitingAndBeingRemovedSpec`,
//! `LeaderElectionSpec`).

use std::collections::BTreeMap;
use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig, Simulation};
use volley_cluster::{Addr, ClusterEvent, Identity, MemberStatus, UniqueAddress};

use crate::common::{all_up, cluster_events_of, run_until, seeded_cluster, STEP};

const LIMIT: Duration = Duration::from_secs(120);

/// How many times each node saw each kind of status event per member.
fn status_event_counts(sim: &Simulation) -> BTreeMap<(Addr, UniqueAddress, &'static str), usize> {
    let mut counts = BTreeMap::new();
    for node in sim.running() {
        let observer = node.addr();
        for event in cluster_events_of(sim, &node) {
            let (kind, member) = match event {
                ClusterEvent::MemberJoined { member } => ("joined", member),
                ClusterEvent::MemberUp { member } => ("up", member),
                ClusterEvent::MemberLeft { member } => ("left", member),
                ClusterEvent::MemberExited { member } => ("exited", member),
                ClusterEvent::MemberDowned { member } => ("downed", member),
                ClusterEvent::MemberRemoved { member, .. } => ("removed", member),
                _ => continue,
            };
            *counts
                .entry((observer.clone(), member.unique_address(), kind))
                .or_insert(0) += 1;
        }
    }
    counts
}

fn join_and_report(seed: u64, members: usize) -> (Simulation, Vec<Addr>) {
    let (mut sim, addrs) = seeded_cluster(SimConfig::lan(seed, members as u32), members);
    let took = run_until(&mut sim, LIMIT, "all Up everywhere", |sim| {
        all_up(sim, &addrs)
    });
    let swim = sim.run_until(LIMIT, STEP, Simulation::converged);
    eprintln!(
        "seed {seed}: {members} members all Up everywhere after {took:?} of virtual time, \
         every SWIM view whole {:?} later",
        swim.unwrap_or_else(|| panic!("seed {seed}: the SWIM views never became whole"))
    );
    (sim, addrs)
}

#[test]
fn five_members_join_through_seeds_and_all_see_everyone_up() {
    for seed in seeds(&[1, 2, 3]) {
        join_and_report(seed, 5);
    }
}

#[test]
fn fifty_members_join_through_seeds_and_see_each_transition_once() {
    for seed in seeds(&[4]) {
        each_transition_once(seed, 50);
    }
}

/// The larger run; `--ignored` runs it (in release).
#[test]
#[ignore = "long: 200 members"]
fn two_hundred_members_join_through_seeds_and_see_each_transition_once() {
    for seed in seeds(&[7]) {
        let wall = std::time::Instant::now();
        let mut sim = each_transition_once(seed, 200);
        eprintln!(
            "seed {seed}: 200 members took {:?} of wall time",
            wall.elapsed()
        );
        let per_member_per_s = |n: u64, time: Duration| n as f64 / 200.0 / time.as_secs_f64();
        for window in [Duration::from_secs(5), Duration::from_secs(25)] {
            let before = sim.stats();
            sim.run_for(window);
            let after = sim.stats();
            eprintln!(
                "seed {seed}: the next {window:?}: {:.0} B and {:.1} packets per member per s",
                per_member_per_s(after.bytes_sent - before.bytes_sent, window),
                per_member_per_s(after.packets_sent - before.packets_sent, window),
            );
        }
    }
}

/// Joins `members` through seeds and checks that every node saw each
/// member's Joining (if it saw it) and Up exactly once, and no member
/// unreachable.
fn each_transition_once(seed: u64, members: usize) -> Simulation {
    let (sim, addrs) = join_and_report(seed, members);
    let counts = status_event_counts(&sim);
    for ((observer, member, kind), count) in &counts {
        assert_eq!(
            *count, 1,
            "seed {seed}: {observer:?} saw {member} {kind} {count} times"
        );
    }
    for node in sim.running() {
        let ups = counts
            .keys()
            .filter(|(observer, _, kind)| *observer == node.addr() && *kind == "up")
            .count();
        assert_eq!(ups, addrs.len(), "seed {seed}: {node} saw every member Up");
        assert!(
            cluster_events_of(&sim, &node)
                .all(|e| !matches!(e, ClusterEvent::UnreachableMember { .. })),
            "seed {seed}: {node} saw no false unreachability"
        );
    }
    sim
}

/// Whether no running node holds a record of `member`.
fn removed_everywhere(sim: &Simulation, member: &UniqueAddress) -> bool {
    sim.running().iter().all(|node| {
        sim.state(&node.addr())
            .is_some_and(|state| state.members.iter().all(|m| m.unique_address() != *member))
    })
}

/// The statuses each running node but `member` reported for it, in order.
fn transitions_seen(sim: &Simulation, member: &UniqueAddress) -> Vec<Vec<&'static str>> {
    sim.running()
        .iter()
        .filter(|node| UniqueAddress::of(node) != *member)
        .map(|node| {
            cluster_events_of(sim, node)
                .filter_map(|event| match event {
                    ClusterEvent::MemberLeft { member: m } if m.unique_address() == *member => {
                        Some("left")
                    }
                    ClusterEvent::MemberExited { member: m } if m.unique_address() == *member => {
                        Some("exited")
                    }
                    ClusterEvent::MemberDowned { member: m } if m.unique_address() == *member => {
                        Some("downed")
                    }
                    ClusterEvent::MemberRemoved { member: m, .. }
                        if m.unique_address() == *member =>
                    {
                        Some("removed")
                    }
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_leaving_leader_goes_leaving_exiting_removed_everywhere_and_hands_over() {
    for seed in seeds(&[5]) {
        let (mut sim, addrs) = join_and_report(seed, 10);
        let leaver = sim
            .state(&addrs[0])
            .and_then(|s| s.leader)
            .expect("a leader");
        let leaver_addr = (leaver.host.clone(), leaver.port);
        sim.leave(&leaver_addr);
        let took = run_until(&mut sim, LIMIT, "the leaver removed everywhere", |sim| {
            removed_everywhere(sim, &leaver)
        });
        eprintln!("seed {seed}: the leader left and was removed everywhere after {took:?}");
        for seen in transitions_seen(&sim, &leaver) {
            assert_eq!(seen, ["left", "exited", "removed"], "seed {seed}");
        }
        let rest: Vec<Addr> = addrs
            .iter()
            .filter(|a| **a != leaver_addr)
            .cloned()
            .collect();
        run_until(&mut sim, LIMIT, "the others agree on a new leader", |sim| {
            all_up(sim, &rest)
        });
        run_until(
            &mut sim,
            LIMIT,
            "the removed node out of the SWIM group",
            |sim| {
                rest.iter()
                    .all(|addr| sim.view(addr).iter().all(|id| id.addr() != leaver_addr))
            },
        );
    }
}

/// Five members, the leaver's exiting tasks run in the runtime
/// (`confirm_exiting_on_request`): whoever `confirms` says when it is
/// done. Returns the simulation once every node sees the leaver Exiting,
/// the leaver, and every address.
fn exiting_member(seed: u64, timeout: Duration) -> (Simulation, Addr, UniqueAddress, Vec<Addr>) {
    let mut config = SimConfig::lan(seed, 5);
    config.membership.confirm_exiting_on_request = true;
    config.membership.exiting_confirm_timeout = timeout;
    let (mut sim, addrs) = seeded_cluster(config, 5);
    run_until(&mut sim, LIMIT, "all Up everywhere", |sim| {
        all_up(sim, &addrs)
    });
    let leader = sim
        .state(&addrs[0])
        .and_then(|s| s.leader)
        .expect("a leader");
    let leaver_addr = addrs
        .iter()
        .find(|a| (&*a.0, a.1) != (&*leader.host, leader.port))
        .cloned()
        .expect("a member other than the leader");
    let leaver = sim
        .state(&leaver_addr)
        .expect("running")
        .self_member
        .expect("a member");
    sim.leave(&leaver_addr);
    let exiting = |sim: &Simulation| {
        sim.running().iter().all(|node| {
            sim.state(&node.addr()).is_some_and(|s| {
                s.members.iter().any(|m| {
                    m.unique_address() == leaver.unique_address()
                        && m.status == MemberStatus::Exiting
                })
            })
        })
    };
    run_until(&mut sim, LIMIT, "the leaver Exiting everywhere", exiting);
    (sim, leaver_addr, leaver.unique_address(), addrs)
}

/// Akka's `ExitingConfirmed`: the leader keeps an Exiting member until it
/// confirms (its singleton hand-over and shard hand-off done), then
/// removes it everywhere, with no timeout counted.
#[test]
fn the_leader_removes_an_exiting_member_only_once_it_confirmed() {
    for seed in seeds(&[11, 12]) {
        let (mut sim, leaver_addr, leaver, addrs) = exiting_member(seed, Duration::from_secs(3600));
        sim.run_for(Duration::from_secs(20));
        assert!(
            !removed_everywhere(&sim, &leaver)
                && sim
                    .state(&leaver_addr)
                    .and_then(|s| s.self_member)
                    .is_some(),
            "seed {seed}: removed before it confirmed"
        );
        sim.confirm_exiting(&leaver_addr);
        let took = run_until(&mut sim, LIMIT, "the leaver removed everywhere", |sim| {
            removed_everywhere(sim, &leaver)
        });
        eprintln!("seed {seed}: removed {took:?} after its confirmation");
        for addr in addrs.iter().filter(|a| **a != leaver_addr) {
            let timeouts = sim.node(addr).map_or(0, |core| core.exiting_timeouts());
            assert_eq!(timeouts, 0, "seed {seed}: {addr:?}");
        }
    }
}

/// An Exiting member that stays reachable and never confirms is removed
/// once `exiting_confirm_timeout` passed on the leader, which counts it.
#[test]
fn an_exiting_member_that_never_confirms_is_removed_at_the_timeout_and_counted() {
    for seed in seeds(&[13]) {
        let timeout = Duration::from_secs(15);
        let (mut sim, leaver_addr, leaver, addrs) = exiting_member(seed, timeout);
        let took = run_until(&mut sim, LIMIT, "the leaver removed everywhere", |sim| {
            removed_everywhere(sim, &leaver)
        });
        assert!(
            took >= timeout - Duration::from_secs(2),
            "seed {seed}: removed after {took:?}"
        );
        let timeouts: u64 = addrs
            .iter()
            .filter(|a| **a != leaver_addr)
            .map(|addr| sim.node(addr).map_or(0, |core| core.exiting_timeouts()))
            .sum();
        assert_eq!(
            timeouts, 1,
            "seed {seed}: one leader removed it, at the timeout"
        );
    }
}

#[test]
fn a_killed_member_is_unreachable_then_downed_then_removed_everywhere() {
    for seed in seeds(&[6]) {
        let (mut sim, addrs) = join_and_report(seed, 10);
        let victim_addr = addrs[7].clone();
        let victim = sim
            .state(&victim_addr)
            .and_then(|s| s.self_member)
            .expect("a member");
        let victim = victim.unique_address();
        sim.kill(&victim_addr);
        let took = run_until(
            &mut sim,
            LIMIT,
            "the killed member unreachable everywhere",
            |sim| {
                sim.running().iter().all(|node| {
                    sim.state(&node.addr())
                        .is_some_and(|s| s.unreachable.iter().any(|m| m.unique_address() == victim))
                })
            },
        );
        eprintln!("seed {seed}: a killed member was unreachable everywhere after {took:?}");
        sim.down(&addrs[2], &victim);
        let took = run_until(
            &mut sim,
            LIMIT,
            "the downed member removed everywhere",
            |sim| removed_everywhere(sim, &victim),
        );
        eprintln!("seed {seed}: downed and removed everywhere after {took:?}");
        for seen in transitions_seen(&sim, &victim) {
            assert_eq!(seen, ["downed", "removed"], "seed {seed}");
        }
        for node in sim.running() {
            let removed = cluster_events_of(&sim, &node).find_map(|event| match event {
                ClusterEvent::MemberRemoved {
                    member,
                    previous_status,
                } if member.unique_address() == victim => Some(*previous_status),
                _ => None,
            });
            assert_eq!(removed, Some(MemberStatus::Down), "seed {seed}");
        }
        let rest: Vec<Addr> = addrs
            .iter()
            .filter(|a| **a != victim_addr)
            .cloned()
            .collect();
        assert!(all_up(&sim, &rest), "seed {seed}: the others are all Up");
    }
}

#[test]
fn joining_members_wait_for_min_nr_of_members() {
    for seed in seeds(&[7]) {
        let mut config = SimConfig::lan(seed, 5);
        config.membership.min_nr_of_members = 5;
        let (mut sim, addrs) = seeded_cluster(config, 4);
        sim.run_for(Duration::from_secs(30));
        for addr in &addrs {
            let state = sim.state(addr).expect("running");
            assert!(
                state
                    .members
                    .iter()
                    .all(|m| m.status == MemberStatus::Joining),
                "seed {seed}: nobody Up before five members: {state:?}"
            );
        }
        let fifth = crate::common::addr(4);
        sim.start_node(&fifth.0, fifth.1);
        sim.join_seed_nodes(&fifth, &addrs[..3]);
        let mut all = addrs.clone();
        all.push(fifth);
        run_until(&mut sim, LIMIT, "all five Up", |sim| all_up(sim, &all));
    }
}

/// Akka's first seed joins itself as soon as every other seed has said it
/// is not a member (`InitJoinNack`), not only after `seed-node-timeout`
/// (Pekko `InitialMembersOfNewClusterSpec`, `JoinSeedNodeSpec`); a node
/// that is its only seed forms the cluster at once.
#[test]
fn seeds_started_together_form_the_cluster_before_the_seed_node_timeout() {
    for seed in seeds(&[11, 12, 13]) {
        let config = SimConfig::lan(seed, 3);
        let timeout = config.membership.seed_node_timeout;
        let (mut sim, addrs) = seeded_cluster(config, 3);
        let took = run_until(&mut sim, LIMIT, "all Up everywhere", |sim| {
            all_up(sim, &addrs)
        });
        assert!(
            took < timeout,
            "seed {seed}: all Up after {took:?}, not before the seed node timeout {timeout:?}"
        );
    }
    let config = SimConfig::lan(14, 1);
    let timeout = config.membership.seed_node_timeout;
    let (mut sim, addrs) = seeded_cluster(config, 1);
    let took = run_until(&mut sim, LIMIT, "the only seed Up", |sim| {
        all_up(sim, &addrs)
    });
    assert!(took < timeout, "the only seed Up after {took:?}");
}

/// The leader moves a member as soon as it sees convergence after a
/// change, not at its next `leader_actions_interval` tick: a leave goes
/// Leaving, Exiting and Removed everywhere in less than one interval on a
/// network with millisecond delays, where two ticks would take two.
#[test]
fn the_leader_acts_on_convergence_without_waiting_for_its_tick() {
    for seed in seeds(&[15, 16]) {
        let config = SimConfig::lan(seed, 3);
        let interval = config.membership.leader_actions_interval;
        let (mut sim, addrs) = seeded_cluster(config, 3);
        run_until(&mut sim, LIMIT, "all Up everywhere", |sim| {
            all_up(sim, &addrs)
        });
        let leaver = sim
            .state(&addrs[2])
            .and_then(|s| s.self_member)
            .expect("a member")
            .unique_address();
        sim.leave(&addrs[2]);
        let took = run_until(&mut sim, LIMIT, "the leaver removed everywhere", |sim| {
            removed_everywhere(sim, &leaver)
        });
        assert!(
            took < interval,
            "seed {seed}: removed everywhere {took:?} after the leave (leader_actions_interval {interval:?})"
        );
        for seen in transitions_seen(&sim, &leaver) {
            assert_eq!(seen, ["left", "exited", "removed"], "seed {seed}");
        }
    }
}
