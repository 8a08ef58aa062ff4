//! The scenarios of Akka's `LeastShardAllocationStrategySpec`, on three
//! regions A, B and C whose shards are numbered from 1 in that order.

use super::*;

type Allocation = Vec<(&'static str, MemberStatus, &'static str, Vec<ShardId>)>;

/// A holds shards 1..=a, B the next b, C the next c; all Up, one version.
fn allocations(a: u32, b: u32, c: u32) -> Allocation {
    let range = |from: u32, count: u32| (from..from + count).map(ShardId).collect();
    vec![
        ("A", MemberStatus::Up, "1.0.0", range(1, a)),
        ("B", MemberStatus::Up, "1.0.0", range(1 + a, b)),
        ("C", MemberStatus::Up, "1.0.0", range(1 + a + b, c)),
    ]
}

fn entries(allocation: &Allocation) -> Vec<RegionEntry<'_, &'static str>> {
    allocation
        .iter()
        .map(|(region, status, version, shards)| RegionEntry {
            region: *region,
            status: *status,
            app_version: version,
            shards,
        })
        .collect()
}

fn unlimited() -> LeastShardAllocation {
    LeastShardAllocation::new(1000, 1.0).unwrap()
}

fn rebalance(strategy: &LeastShardAllocation, allocation: &Allocation) -> Vec<u32> {
    let moved = strategy.rebalance(&entries(allocation), RebalanceGate::default());
    moved.into_iter().map(|s| s.0).collect()
}

/// The allocation once `moved` is handed off and each shard, in order,
/// allocated again by the strategy.
fn after(strategy: &LeastShardAllocation, allocation: &Allocation, moved: &[u32]) -> Allocation {
    let mut next: Allocation = allocation
        .iter()
        .map(|(r, s, v, shards)| {
            let kept = shards.iter().filter(|s| !moved.contains(&s.0)).copied();
            (*r, *s, *v, kept.collect())
        })
        .collect();
    let mut sorted = moved.to_vec();
    sorted.sort();
    for shard in sorted {
        let region = *strategy.allocate(&entries(&next)).unwrap();
        let entry = next.iter_mut().find(|e| e.0 == region).unwrap();
        entry.3.push(ShardId(shard));
    }
    next
}

fn counts(allocation: &Allocation) -> Vec<usize> {
    allocation.iter().map(|e| e.3.len()).collect()
}

/// One round: `rebalance` moves `moved`, and re-allocating them gives
/// regions of `sizes`; the allocation after it.
fn round(s: &LeastShardAllocation, a: &Allocation, moved: &[u32], sizes: &[usize]) -> Allocation {
    assert_eq!(rebalance(s, a), moved);
    let next = after(s, a, moved);
    assert_eq!(counts(&next), sizes);
    next
}

#[test]
fn a_new_shard_goes_to_the_region_with_the_fewest() {
    let allocation = allocations(1, 1, 0);
    assert_eq!(unlimited().allocate(&entries(&allocation)), Some(&"C"));
}

#[test]
fn no_region_no_allocation() {
    let none: Vec<RegionEntry<'_, &str>> = Vec::new();
    assert_eq!(unlimited().allocate(&none), None);
    assert!(unlimited()
        .rebalance(&none, RebalanceGate::default())
        .is_empty());
}

#[test]
fn rebalances_1_2_0_to_1_1_1() {
    round(&unlimited(), &allocations(1, 2, 0), &[2], &[1, 1, 1]);
}

#[test]
fn rebalances_2_0_0_to_1_1_0() {
    round(&unlimited(), &allocations(2, 0, 0), &[1], &[1, 1, 0]);
}

#[test]
fn leaves_1_1_0_alone() {
    assert!(rebalance(&unlimited(), &allocations(1, 1, 0)).is_empty());
}

#[test]
fn rebalances_3_0_0_to_1_1_1() {
    round(&unlimited(), &allocations(3, 0, 0), &[1, 2], &[1, 1, 1]);
}

#[test]
fn rebalances_4_4_0_to_3_3_2() {
    round(&unlimited(), &allocations(4, 4, 0), &[1, 5], &[3, 3, 2]);
}

#[test]
fn rebalances_4_4_2_in_the_second_phase() {
    round(&unlimited(), &allocations(4, 4, 2), &[1], &[3, 4, 3]);
}

#[test]
fn rebalances_5_5_0_in_two_rounds() {
    let s = unlimited();
    let a = round(&s, &allocations(5, 5, 0), &[1, 6], &[4, 4, 2]);
    round(&s, &a, &[2], &[3, 4, 3]);
}

#[test]
fn rebalances_50_0_50_in_two_rounds() {
    let (s, a) = (unlimited(), allocations(50, 0, 50));
    let first = rebalance(&s, &a);
    let expected: Vec<u32> = (1..=16).chain(51..=66).collect();
    let mut got = first.clone();
    got.sort();
    assert_eq!(got, expected);
    let a = after(&s, &a, &first);
    let mut c = counts(&a);
    c.sort();
    assert_eq!(c, [32, 34, 34]);
    let second = rebalance(&s, &a);
    assert_eq!(second, [17]);
    let mut c = counts(&after(&s, &a, &second));
    c.sort();
    assert_eq!(c, [33, 33, 34]);
}

#[test]
fn the_absolute_limit_caps_a_round() {
    let s = LeastShardAllocation::new(3, 1.0).unwrap();
    round(&s, &allocations(1, 9, 0), &[2, 3, 4], &[2, 6, 2]);
}

#[test]
fn the_relative_limit_caps_a_round() {
    let s = LeastShardAllocation::new(5, 0.3).unwrap();
    round(&s, &allocations(1, 9, 0), &[2, 3, 4], &[2, 6, 2]);
}

#[test]
fn a_round_moves_at_least_one_shard() {
    let s = LeastShardAllocation::new(20, 0.01).unwrap();
    assert_eq!(rebalance(&s, &allocations(2, 0, 0)), [1]);
}

#[test]
fn nothing_moves_while_the_gate_is_closed() {
    let a = allocations(10, 0, 0);
    let closed = [
        RebalanceGate {
            in_progress: true,
            ..RebalanceGate::default()
        },
        RebalanceGate {
            unreachable: true,
            ..RebalanceGate::default()
        },
        RebalanceGate {
            joining: true,
            ..RebalanceGate::default()
        },
    ];
    for gate in closed {
        assert!(
            unlimited().rebalance(&entries(&a), gate).is_empty(),
            "{gate:?}"
        );
    }
    assert!(!unlimited()
        .rebalance(&entries(&a), RebalanceGate::default())
        .is_empty());
}

/// A member on port `port`, with `status`.
fn member(port: u16, status: MemberStatus) -> crate::member::MemberRecord {
    let node = crate::node_id::NodeId::new("10.0.0.1", port, u64::from(port), 0);
    let roles = std::collections::BTreeSet::new();
    let mut record = crate::member::MemberRecord::joining(node, String::new(), roles);
    record.status = status;
    record
}

#[test]
fn the_cluster_state_closes_the_gate_while_a_member_is_unreachable_or_joining() {
    let up = |port| member(port, MemberStatus::Up);
    let settled = ClusterState {
        members: vec![up(1), up(2), member(3, MemberStatus::Leaving)],
        ..ClusterState::default()
    };
    assert_eq!(
        RebalanceGate::of_cluster(&settled),
        RebalanceGate::default()
    );
    for status in [MemberStatus::Joining, MemberStatus::WeaklyUp] {
        let joining = ClusterState {
            members: vec![up(1), member(2, status)],
            ..ClusterState::default()
        };
        let gate = RebalanceGate::of_cluster(&joining);
        assert!(gate.joining && !gate.unreachable, "{status:?}: {gate:?}");
    }
    let unreachable = ClusterState {
        members: vec![up(1), up(2)],
        unreachable: vec![up(2)],
        ..ClusterState::default()
    };
    let gate = RebalanceGate::of_cluster(&unreachable);
    assert!(gate.unreachable && !gate.joining, "{gate:?}");
}

#[test]
fn nothing_moves_during_a_rolling_update() {
    let mut a = allocations(5, 5, 0);
    a[1].2 = "1.0.1";
    assert!(rebalance(&unlimited(), &a).is_empty());
}

#[test]
fn prefers_staying_members_then_the_newest_version_then_the_fewest_shards() {
    let two = [ShardId(2), ShardId(3)];
    let one = [ShardId(1)];
    let entry = |region, status, app_version, shards| RegionEntry {
        region,
        status,
        app_version,
        shards,
    };
    let mut regions = vec![
        entry("fewest", MemberStatus::Up, "1.0.1", &[][..]),
        entry("leaving", MemberStatus::Leaving, "1.0.1", &[][..]),
        entry("most", MemberStatus::Up, "1.0.1", &two[..]),
        entry("old", MemberStatus::Up, "1.0.0", &[][..]),
        entry("one", MemberStatus::Up, "1.0.1", &one[..]),
    ];
    let strategy = unlimited();
    let mut order = Vec::new();
    while let Some(best) = strategy.allocate(&regions).copied() {
        order.push(best);
        regions.retain(|r| r.region != best);
    }
    assert_eq!(order, ["fewest", "one", "most", "old", "leaving"]);
}

#[test]
fn refuses_limits_that_could_never_move_a_shard() {
    use AllocationSettingsError::*;
    assert_eq!(LeastShardAllocation::new(0, 0.1), Err(ZeroAbsoluteLimit));
    assert_eq!(
        LeastShardAllocation::new(1, 0.0),
        Err(RelativeLimitOutOfRange(0.0))
    );
    assert_eq!(
        LeastShardAllocation::new(1, 1.5),
        Err(RelativeLimitOutOfRange(1.5))
    );
    assert!(matches!(
        LeastShardAllocation::new(1, f64::NAN),
        Err(RelativeLimitOutOfRange(_))
    ));
}

proptest::proptest! {
    /// Akka's randomized spec: from any allocation, rounds of rebalance and
    /// re-allocation end balanced (no two regions more than one shard
    /// apart), each round within its limit and losing no shard.
    #[test]
    fn any_allocation_ends_balanced_within_the_limits(
        initial in proptest::collection::vec(0u32..40, 1..8),
        absolute in 1usize..10,
        relative in 0.05f64..1.0,
    ) {
        let strategy = LeastShardAllocation::new(absolute, relative).unwrap();
        let names = ["A", "B", "C", "D", "E", "F", "G", "H"];
        let mut next = 1;
        let mut allocation: Allocation = initial
            .iter()
            .zip(names)
            .map(|(&count, name)| {
                let shards = (next..next + count).map(ShardId).collect();
                next += count;
                (name, MemberStatus::Up, "1.0.0", shards)
            })
            .collect();
        let total: usize = initial.iter().map(|&c| c as usize).sum();
        for _round in 0..=total {
            let moved = rebalance(&strategy, &allocation);
            if moved.is_empty() {
                break;
            }
            proptest::prop_assert!(moved.len() <= strategy.limit(total));
            allocation = after(&strategy, &allocation, &moved);
        }
        let sizes = counts(&allocation);
        proptest::prop_assert_eq!(sizes.iter().sum::<usize>(), total);
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        proptest::prop_assert!(max - min <= 1, "not balanced: {:?}", sizes);
    }
}
