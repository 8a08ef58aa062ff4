//! WeaklyUp members (Pekko `MemberWeaklyUpSpec`): while a partition keeps
//! convergence out of reach, the leader of each side moves the joiners it
//! reaches to WeaklyUp after `allow_weakly_up_members`, and to Up once
//! the partition heals. No resolver runs, so the partition lasts.

use std::time::Duration;

use volley_cluster::sim::{seeds, SimConfig, Simulation};
use volley_cluster::{Addr, ClusterEvent, Identity, MemberStatus};

use crate::common::{addr, all_up, cluster_events_of, run_until};

const LIMIT: Duration = Duration::from_secs(120);
const WEAKLY_UP_AFTER: Duration = Duration::from_secs(3);
/// `leader_actions_interval` (the default).
const TICK: Duration = Duration::from_secs(1);

/// Pekko's five roles: `first`, `third` and `fourth` form the cluster;
/// `second` and `fifth` join during the partition.
struct Roles {
    first: Addr,
    second: Addr,
    third: Addr,
    fourth: Addr,
    fifth: Addr,
}

impl Roles {
    fn new() -> Self {
        Self {
            first: addr(0),
            second: addr(1),
            third: addr(2),
            fourth: addr(3),
            fifth: addr(4),
        }
    }

    fn side1(&self) -> Vec<Addr> {
        vec![self.first.clone(), self.second.clone()]
    }

    fn side2(&self) -> Vec<Addr> {
        vec![self.third.clone(), self.fourth.clone(), self.fifth.clone()]
    }

    fn all(&self) -> Vec<Addr> {
        let mut all = self.side1();
        all.extend(self.side2());
        all
    }
}

/// `first`, `third` and `fourth` Up, then split from the others as
/// Pekko's spec splits them: (first, second) / (third, fourth, fifth),
/// until each side sees the other's members unreachable.
fn three_up_then_split(seed: u64, weakly_up_after: Option<Duration>) -> (Simulation, Roles) {
    let mut config = SimConfig::lan(seed, 5);
    config.membership.allow_weakly_up_members = weakly_up_after;
    let mut sim = Simulation::new(config);
    let roles = Roles::new();
    let founders = [
        roles.first.clone(),
        roles.third.clone(),
        roles.fourth.clone(),
    ];
    for at in &founders {
        sim.start_node(&at.0, at.1);
    }
    for at in &founders {
        sim.join_seed_nodes(at, &founders[..1]);
    }
    run_until(&mut sim, LIMIT, "the first three Up", |sim| {
        all_up(sim, &founders)
    });
    sim.partition(&[roles.side1(), roles.side2()]);
    run_until(
        &mut sim,
        LIMIT,
        "each side sees the other unreachable",
        |sim| {
            unreachable_count(sim, &roles.first) == 2
                && unreachable_count(sim, &roles.third) == 1
                && unreachable_count(sim, &roles.fourth) == 1
        },
    );
    (sim, roles)
}

fn unreachable_count(sim: &Simulation, observer: &Addr) -> usize {
    sim.state(observer)
        .map_or(0, |state| state.unreachable.len())
}

/// `second` joins through `first`, `fifth` through `fourth`.
fn join_on_each_side(sim: &mut Simulation, roles: &Roles) {
    let first = sim.node(&roles.first).expect("running").identity().clone();
    let fourth = sim.node(&roles.fourth).expect("running").identity().clone();
    sim.start_node(&roles.second.0, roles.second.1);
    sim.start_node(&roles.fifth.0, roles.fifth.1);
    sim.join(&roles.second, &first);
    sim.join(&roles.fifth, &fourth);
}

/// The status `observer` holds for the member at `member`, if any.
fn status_seen(sim: &Simulation, observer: &Addr, member: &Addr) -> Option<MemberStatus> {
    let state = sim.state(observer)?;
    let record = state.members.iter().find(|m| m.node.addr() == *member)?;
    Some(record.status)
}

/// Whether every node of `side` holds four members, `joiner` WeaklyUp.
fn weakly_up_on(sim: &Simulation, side: &[Addr], joiner: &Addr) -> bool {
    side.iter().all(|observer| {
        sim.state(observer)
            .is_some_and(|state| state.members.len() == 4)
            && status_seen(sim, observer, joiner) == Some(MemberStatus::WeaklyUp)
    })
}

/// When `observer` published `wanted` about the member at `member`.
fn event_at(
    sim: &Simulation,
    observer: &Addr,
    member: &Addr,
    wanted: fn(&ClusterEvent) -> Option<&volley_cluster::MemberRecord>,
) -> Option<Duration> {
    sim.cluster_trace()
        .iter()
        .filter(|entry| entry.node.addr() == *observer)
        .find(|entry| wanted(&entry.event).is_some_and(|m| m.node.addr() == *member))
        .map(|entry| entry.at)
}

fn weakly_up_event(event: &ClusterEvent) -> Option<&volley_cluster::MemberRecord> {
    match event {
        ClusterEvent::MemberWeaklyUp { member } => Some(member),
        _ => None,
    }
}

fn unreachable_event(event: &ClusterEvent) -> Option<&volley_cluster::MemberRecord> {
    match event {
        ClusterEvent::UnreachableMember { member } => Some(member),
        _ => None,
    }
}

fn joined_event(event: &ClusterEvent) -> Option<&volley_cluster::MemberRecord> {
    match event {
        ClusterEvent::MemberJoined { member } => Some(member),
        _ => None,
    }
}

#[test]
fn joiners_on_each_side_of_a_partition_go_weakly_up_then_up_after_the_heal() {
    for seed in seeds(&[51, 52]) {
        let (mut sim, roles) = three_up_then_split(seed, Some(WEAKLY_UP_AFTER));
        join_on_each_side(&mut sim, &roles);
        run_until(&mut sim, LIMIT, "each joiner WeaklyUp on its side", |sim| {
            weakly_up_on(sim, &roles.side1(), &roles.second)
                && weakly_up_on(sim, &roles.side2(), &roles.fifth)
        });
        // Each side's leader (first; third, as first is out of its reach)
        // goes without convergence from when it sees the other side
        // unreachable, and moves the joiner `allow_weakly_up_members`
        // after that at the earliest; at the latest one leader tick after
        // that or after the joiner joined (its first check may wait for
        // a tick, and so may the move).
        let sides = [(&roles.first, &roles.second), (&roles.third, &roles.fifth)];
        for (leader, joiner) in sides {
            let unreachable = sim
                .cluster_trace()
                .iter()
                .find(|e| e.node.addr() == *leader && unreachable_event(&e.event).is_some())
                .map(|e| e.at)
                .expect("the other side unreachable");
            let joined = event_at(&sim, leader, joiner, joined_event).expect("joined");
            let weakly = event_at(&sim, leader, joiner, weakly_up_event).expect("weakly up");
            let due = unreachable + WEAKLY_UP_AFTER;
            assert!(
                weakly >= due && weakly <= due.max(joined) + 2 * TICK,
                "seed {seed}: {leader:?} saw the other side unreachable at {unreachable:?}, {joiner:?} \
                 joined at {joined:?} and WeaklyUp at {weakly:?}"
            );
            let state = sim.state(leader).expect("running");
            let record = state.members.iter().find(|m| m.node.addr() == *joiner);
            assert_eq!(record.map(|m| m.up_number), Some(0), "seed {seed}");
        }
        // Each side's leader leads its side. (A joiner judges a member of
        // the other side unreachable only a grace after it joined, as its
        // SWIM group never held it.)
        let leader_of = |at: &Addr| sim.state(at).and_then(|s| s.leader).map(|l| l.uid);
        let uid = |at: &Addr| sim.node(at).expect("running").identity().uid();
        for (leader, follower) in [(&roles.first, &roles.second), (&roles.third, &roles.fourth)] {
            assert_eq!(leader_of(leader), Some(uid(leader)), "seed {seed}");
            assert_eq!(leader_of(follower), Some(uid(leader)), "seed {seed}");
        }

        sim.heal();
        run_until(&mut sim, LIMIT, "all five Up everywhere", |sim| {
            all_up(sim, &roles.all())
        });
        for observer in roles.all() {
            let node = sim.node(&observer).expect("running").identity().clone();
            for joiner in [&roles.second, &roles.fifth] {
                let up = cluster_events_of(&sim, &node).any(|event| {
                    matches!(event, ClusterEvent::MemberUp { member } if member.node.addr() == *joiner)
                });
                assert!(up, "seed {seed}: {observer:?} saw {joiner:?} Up");
            }
        }
    }
}

#[test]
fn with_weakly_up_off_a_joiner_stays_joining_until_convergence() {
    for seed in seeds(&[53]) {
        let (mut sim, roles) = three_up_then_split(seed, None);
        join_on_each_side(&mut sim, &roles);
        run_until(&mut sim, LIMIT, "the joiner Joining on its side", |sim| {
            status_seen(sim, &roles.first, &roles.second) == Some(MemberStatus::Joining)
        });
        // Far longer than Akka's 7 s, on the virtual clock.
        sim.run_for(Duration::from_secs(30));
        assert_eq!(
            status_seen(&sim, &roles.first, &roles.second),
            Some(MemberStatus::Joining),
            "seed {seed}"
        );
        let weakly = sim
            .cluster_trace()
            .iter()
            .any(|entry| weakly_up_event(&entry.event).is_some());
        assert!(!weakly, "seed {seed}: no MemberWeaklyUp anywhere");
        sim.heal();
        run_until(&mut sim, LIMIT, "all five Up everywhere", |sim| {
            all_up(sim, &roles.all())
        });
    }
}
