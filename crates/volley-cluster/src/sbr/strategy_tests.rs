//! The strategy cases of Pekko's `SplitBrainResolverSpec` (file
//! `cluster/src/test/scala/org/apache/pekko/cluster/sbr/SplitBrainResolverSpec.scala`),
//! each naming the case it ports. Members A–G are Pekko's (`fixtures.rs`).

use super::fixtures::*;
use crate::sbr::{Decision, Strategy};

fn static_quorum(quorum_size: usize, role: Option<&str>) -> Setup {
    Setup::new(Strategy::StaticQuorum {
        quorum_size,
        role: role.map(str::to_owned),
    })
}

fn keep_majority(role: Option<&str>) -> Setup {
    Setup::new(Strategy::KeepMajority {
        role: role.map(str::to_owned),
    })
}

fn keep_oldest(down_if_alone: bool, role: Option<&str>) -> Setup {
    Setup::new(Strategy::KeepOldest {
        down_if_alone,
        role: role.map(str::to_owned),
    })
}

/// StaticQuorum "down unreachable when enough reachable nodes".
#[test]
fn static_quorum_downs_the_side_below_quorum() {
    let mut s = static_quorum(3, None);
    s.side1 = vec![a(), c(), e()];
    s.side2 = vec![b(), d()];
    s.assert_downing(&s.side2.clone());
}

/// StaticQuorum "down reachable when not enough reachable nodes".
#[test]
fn static_quorum_downs_both_sides_when_neither_has_quorum() {
    let mut s = static_quorum(3, None);
    s.side1 = vec![a(), b()];
    s.side2 = vec![c(), d()];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);
}

/// StaticQuorum "down unreachable when enough reachable nodes with role".
#[test]
fn static_quorum_counts_only_the_role() {
    let mut s = static_quorum(2, Some("role3"));
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e()];
    s.assert_downing(&s.side2.clone());
}

/// StaticQuorum "down all if N > static-quorum.size * 2 - 1".
#[test]
fn static_quorum_downs_all_when_the_cluster_outgrew_the_quorum() {
    let mut s = static_quorum(3, None);
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e(), f()];
    s.assert_downing(&[a(), b(), c(), d(), e(), f()]);
    assert!(s.strategy.too_many_for_quorum(&s.view(&s.side1)));
}

/// StaticQuorum "handle joining".
#[test]
fn static_quorum_does_not_count_joining_members() {
    let mut s = static_quorum(3, None);
    s.side1 = vec![a(), b(), joining(c())];
    s.side2 = vec![d(), e(), joining(f())];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);

    s.side1 = vec![a(), b(), c()];
    assert_eq!(s.decide(&s.side1), Decision::DownUnreachable);
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);

    s.side1 = vec![a(), b(), joining(c())];
    s.side2 = vec![d(), e(), f()];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    assert_eq!(s.decide(&s.side2), Decision::DownUnreachable);

    s.side1 = vec![a(), b(), c()];
    assert_eq!(s.decide(&s.side1), Decision::DownAll);
    assert_eq!(s.decide(&s.side2), Decision::DownAll);
}

/// StaticQuorum "handle leaving/exiting".
#[test]
fn static_quorum_counts_leaving_but_not_exiting() {
    let mut s = static_quorum(3, None);
    s.side1 = vec![a(), b(), leaving(c())];
    s.side2 = vec![d(), e()];
    assert_eq!(s.decide(&s.side1), Decision::DownUnreachable);
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);

    s.side1 = vec![a(), b(), exiting(c())];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);
}

/// KeepMajority "down minority partition: {A, C, E} | {B, D} => {A, C, E}".
#[test]
fn keep_majority_downs_the_minority() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), c(), e()];
    s.side2 = vec![b(), d()];
    s.assert_downing(&s.side2.clone());
}

/// KeepMajority "down minority partition: {A, B} | {C, D, E} => {C, D, E}".
#[test]
fn keep_majority_downs_the_minority_holding_the_lowest_address() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b()];
    s.side2 = vec![c(), d(), e()];
    s.assert_downing(&s.side1.clone());
}

/// KeepMajority "down self when alone: {B} | {A, C} => {A, C}".
#[test]
fn keep_majority_downs_a_member_alone() {
    let mut s = keep_majority(None);
    s.side1 = vec![b()];
    s.side2 = vec![a(), c()];
    s.assert_downing(&s.side1.clone());
}

/// KeepMajority "keep half with lowest address when equal size partition:
/// {A, B} | {C, D} => {A, B}".
#[test]
fn keep_majority_keeps_the_half_with_the_lowest_address() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b()];
    s.side2 = vec![c(), d()];
    s.assert_downing(&s.side2.clone());
}

/// KeepMajority "keep node with lowest address in two node cluster: {A} |
/// {B} => {A}".
#[test]
fn keep_majority_keeps_the_lowest_address_of_two() {
    let mut s = keep_majority(None);
    s.side1 = vec![a()];
    s.side2 = vec![b()];
    s.assert_downing(&s.side2.clone());
}

/// KeepMajority "down minority partition with role: {A*, B*} | {C, D*, E}
/// => {A*, B*}".
#[test]
fn keep_majority_counts_only_the_role() {
    let mut s = keep_majority(Some("role3"));
    s.side1 = vec![a(), b()];
    s.side2 = vec![c(), d(), e()];
    s.assert_downing(&s.side2.clone());
}

/// KeepMajority "keep half with lowest address with role when equal size
/// partition: {A, D*, E} | {B, C*} => {B, C*}".
#[test]
fn keep_majority_breaks_a_tie_by_the_lowest_address_with_the_role() {
    let mut s = keep_majority(Some("role2"));
    s.side1 = vec![a(), d(), e()];
    s.side2 = vec![b(), c()];
    s.assert_downing(&s.side1.clone());
}

/// KeepMajority "down all when no node with role: {C} | {E} => {}".
#[test]
fn keep_majority_downs_all_when_no_member_has_the_role() {
    let mut s = keep_majority(Some("role3"));
    s.side1 = vec![c()];
    s.side2 = vec![e()];
    s.assert_downing(&[c(), e()]);
}

/// KeepMajority "not count joining node, but down it: {B, D} | {Aj, C} =>
/// {B, D}".
#[test]
fn keep_majority_does_not_count_a_joining_member_but_downs_it() {
    let mut s = keep_majority(None);
    s.side1 = vec![b(), d()];
    s.side2 = vec![joining(a()), c()];
    s.assert_downing(&s.side2.clone());
}

/// KeepMajority "down minority partition and joining node: {A, Bj} | {C,
/// D, E} => {C, D, E}".
#[test]
fn keep_majority_downs_a_joining_member_on_the_minority() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), joining(b())];
    s.side2 = vec![c(), d(), e()];
    s.assert_downing(&s.side1.clone());
}

/// KeepMajority "down each part when split in 3 too small parts: {A, B} |
/// {C, D} | {E} => {}".
#[test]
fn keep_majority_downs_every_part_of_a_three_way_split_without_majority() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b()];
    s.side2 = vec![c(), d()];
    s.side3 = vec![e()];
    for side in [s.side1.clone(), s.side2.clone(), s.side3.clone()] {
        s.assert_downing_side(&side, &side);
    }
}

/// KeepMajority "detect edge case of membership change: {A, B, F', G'} |
/// {C, D, E} => {A, B, F, G}".
#[test]
fn keep_majority_downs_all_when_members_joining_there_may_be_up() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), f(), g()];
    s.side2 = vec![c(), d(), e()];
    assert_eq!(s.decide(&s.side1), Decision::DownUnreachable);
    assert_eq!(s.nodes_to_down(&s.side1), Ok(nodes(&s.side2)));

    // F and G went Up on side 1 as the partition began; side 2 still sees
    // them joining.
    s.side1 = vec![a(), b(), joining(f()), joining(g())];
    assert_eq!(s.decide(&s.side2), Decision::DownAll);
    assert_eq!(
        s.nodes_to_down(&s.side2),
        Ok(nodes(&[a(), b(), c(), d(), e(), f(), g()]))
    );
}

/// KeepMajority "detect edge case of membership change when equal size:
/// {A, B, F'} | {C, D, E} => {A, B, F}".
#[test]
fn keep_majority_downs_all_when_a_joining_member_could_make_a_tie() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), f()];
    s.side2 = vec![c(), d(), e()];
    assert_eq!(s.decide(&s.side1), Decision::DownUnreachable);
    assert_eq!(s.nodes_to_down(&s.side1), Ok(nodes(&s.side2)));

    s.side1 = vec![a(), b(), joining(f())];
    assert_eq!(s.decide(&s.side2), Decision::DownAll);
    assert_eq!(
        s.nodes_to_down(&s.side2),
        Ok(nodes(&[a(), b(), c(), d(), e(), f()]))
    );
}

/// KeepMajority "detect safe edge case of membership change: {A, B} | {C,
/// D, E, F'} => {C, D, E, F}".
#[test]
fn keep_majority_stays_when_a_member_joining_here_cannot_turn_the_count() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b()];
    s.side2 = vec![c(), d(), e(), joining(f())];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    assert_eq!(s.nodes_to_down(&s.side1), Ok(nodes(&s.side1)));

    s.side2 = vec![c(), d(), e(), f()];
    assert_eq!(s.decide(&s.side2), Decision::DownUnreachable);
    assert_eq!(s.nodes_to_down(&s.side2), Ok(nodes(&s.side1)));
}

/// KeepMajority "detect edge case of leaving/exiting membership change:
/// {A', B} | {C, D} => {C, D}".
#[test]
fn keep_majority_does_not_count_a_leaving_member_that_may_be_exiting() {
    let mut s = keep_majority(None);
    s.side1 = vec![leaving(a()), b(), joining(e())];
    s.side2 = vec![c(), d()];
    assert_eq!(s.decide(&s.side1), Decision::DownAll);
    assert_eq!(
        s.nodes_to_down(&s.side1),
        Ok(nodes(&[a(), b(), c(), d(), e()]))
    );

    // Side 2 moved A to Exiting as the partition began.
    s.side1 = vec![exiting(a()), b()];
    assert_eq!(s.decide(&s.side2), Decision::DownUnreachable);
    assert_eq!(s.nodes_to_down(&s.side2), Ok(nodes(&[b()])));
}

/// KeepMajority "down indirectly connected: {(A, B)} => {}".
#[test]
fn keep_majority_downs_a_pair_that_only_lost_each_other() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b()];
    s.indirectly_connected = vec![(a(), b()), (b(), a())];
    s.assert_downing(&[a(), b()]);
}

/// KeepMajority "down indirectly connected: {(A, B), C} => {C}".
#[test]
fn keep_majority_keeps_the_fully_connected_member() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), c()];
    s.indirectly_connected = vec![(a(), b()), (b(), a())];
    s.assert_downing(&[a(), b()]);
}

/// KeepMajority "down indirectly connected: {(A, B, C)} => {}" and "{(A, B,
/// C, D)} => {}".
#[test]
fn keep_majority_downs_rings_of_indirect_connections() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), c()];
    s.indirectly_connected = vec![(a(), b()), (b(), c()), (c(), a())];
    s.assert_downing(&[a(), b(), c()]);

    s.side1 = vec![a(), b(), c(), d()];
    s.indirectly_connected = vec![(a(), d()), (d(), a()), (b(), c()), (c(), b())];
    s.assert_downing(&[a(), b(), c(), d()]);
}

/// KeepMajority "down indirectly connected: {(A, B, C), D, E} => {D, E}"
/// and "{A, (B, C), D, (E, F), G} => {A, D, G}".
#[test]
fn keep_majority_keeps_every_fully_connected_member() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), c(), d(), e()];
    s.indirectly_connected = vec![(a(), b()), (b(), c()), (c(), a())];
    s.assert_downing(&[a(), b(), c()]);

    s.side1 = vec![a(), b(), c(), d(), e(), f(), g()];
    s.indirectly_connected = vec![(b(), c()), (c(), b()), (e(), f()), (f(), e())];
    s.assert_downing(&[b(), c(), e(), f()]);
}

/// KeepMajority "down indirectly connected, detected via seen: {(A, B, C)}
/// => {}" and "{(A, B, C, D), E} => {E}".
#[test]
fn keep_majority_finds_indirect_connections_through_seen_state() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), c()];
    s.indirectly_connected = vec![(a(), b()), (a(), c())];
    s.assert_downing(&[a(), b(), c()]);

    s.side1 = vec![a(), b(), c(), d(), e()];
    s.indirectly_connected = vec![(b(), c()), (c(), b()), (a(), d())];
    s.assert_downing(&[a(), b(), c(), d()]);
}

/// KeepMajority "down indirectly connected when combined with crashed:
/// {(A, B), D, E} | {C} => {D, E}".
#[test]
fn keep_majority_downs_indirect_connections_and_a_crashed_member() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), d(), e()];
    s.side2 = vec![c()];
    s.indirectly_connected = vec![(a(), b()), (b(), a())];
    s.assert_downing_side(&s.side1.clone(), &[a(), b(), c()]);
}

/// KeepMajority "down indirectly connected when combined with clean
/// partition: {A, (B, C)} | {D, E} => {A}".
#[test]
fn keep_majority_downs_indirect_connections_and_the_minority_of_a_clean_split() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e()];
    s.indirectly_connected = vec![(b(), c()), (c(), b())];
    s.assert_downing_side(&s.side1.clone(), &[b(), c(), d(), e()]);

    // The clean partition came first, so side 2 never saw B and C lose
    // each other; it downs itself, leaving C up (an acceptable outcome).
    s.indirectly_connected = vec![];
    s.assert_downing_side(&s.side2.clone(), &[d(), e()]);

    s.indirectly_connected = vec![(b(), c()), (c(), b())];
    s.assert_downing_side(&s.side2.clone(), &[b(), c(), d(), e()]);
}

/// {A, (B, C)} | {D, E, F, G}, where the strategy keeps the right side: the
/// left side downs itself whether or not it saw B and C lose each other,
/// and the right side downs the left whether or not it saw that.
fn indirect_connections_on_the_losing_side(mut s: Setup) {
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e(), f(), g()];
    s.indirectly_connected = vec![(b(), c()), (c(), b())];
    s.assert_downing_side(&s.side1.clone(), &[a(), b(), c()]);

    // The clean partition came first: the right side never saw it.
    s.indirectly_connected = vec![];
    s.assert_downing_side(&s.side2.clone(), &[a(), b(), c()]);

    s.indirectly_connected = vec![(b(), c()), (c(), b())];
    s.assert_downing_side(&s.side2.clone(), &[a(), b(), c()]);
}

/// {A, B, C} | {(D, E), F, G}, where the strategy keeps the right side:
/// D and E are downed with the left side, by both sides, once seen.
fn indirect_connections_on_the_winning_side(mut s: Setup) {
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e(), f(), g()];
    s.assert_downing_side(&s.side1.clone(), &[a(), b(), c()]);

    s.indirectly_connected = vec![(d(), e()), (e(), d())];
    s.assert_downing_side(&s.side1.clone(), &[a(), b(), c(), d(), e()]);
    s.assert_downing_side(&s.side2.clone(), &[a(), b(), c(), d(), e()]);
}

/// KeepMajority "down indirectly connected on minority side, when combined
/// with clean partition: {A, (B, C)} | {D, E, F, G} => {D, E, F, G}".
#[test]
fn keep_majority_downs_a_minority_holding_indirect_connections() {
    indirect_connections_on_the_losing_side(keep_majority(None));
}

/// KeepMajority "down indirectly connected on majority side, when combined
/// with clean partition: {A, B, C} | {(D, E), F, G} => {F, G}".
#[test]
fn keep_majority_downs_indirect_connections_on_the_majority() {
    indirect_connections_on_the_winning_side(keep_majority(None));
}

/// KeepMajority "down indirectly connected spanning across a clean
/// partition: {A, (B), C} | {D, (E, F), G} => {D, G}".
#[test]
fn keep_majority_downs_indirect_connections_across_a_clean_split() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e(), f(), g()];
    s.indirectly_connected = vec![(b(), e()), (e(), f()), (f(), b())];
    s.assert_downing_side(&s.side1.clone(), &[a(), b(), c(), e(), f()]);
    s.assert_downing_side(&s.side2.clone(), &[a(), b(), c(), e(), f()]);
}

/// KeepMajority "down indirectly connected, detected via seen, combined
/// with clean partition: {A, B, C} | {(D, E), (F, G)} => {}".
#[test]
fn keep_majority_downs_all_when_the_majority_is_all_indirectly_connected() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e(), f(), g()];
    s.assert_downing_side(&s.side1.clone(), &[a(), b(), c()]);

    s.indirectly_connected = vec![(d(), e()), (g(), f())];
    s.assert_downing_side(&s.side2.clone(), &[a(), b(), c(), d(), e(), f(), g()]);
}

/// KeepMajority "double DownIndirectlyConnected when indirectly connected
/// happens before clean partition: {A, B, C} | {(D, E), (F, G)} => {}":
/// Pekko throws and its resolver downs all; here a typed error, and the
/// resolver downs all (`resolver_tests.rs`).
#[test]
fn keep_majority_reports_indirect_connections_left_after_filtering() {
    let mut s = keep_majority(None);
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e(), f(), g()];
    s.indirectly_connected = vec![(d(), e()), (g(), f())];
    assert_eq!(
        s.nodes_to_down(&s.side1),
        Err(crate::sbr::DoubleIndirectlyConnected)
    );
    s.assert_downing_side(&s.side2.clone(), &[a(), b(), c(), d(), e(), f(), g()]);
}

/// KeepOldest "keep partition with oldest".
#[test]
fn keep_oldest_keeps_the_side_with_the_oldest() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![a(), e()];
    s.side2 = vec![b(), c(), d()];
    s.assert_downing(&s.side2.clone());
}

/// KeepOldest "keep partition with oldest with role".
#[test]
fn keep_oldest_looks_at_the_oldest_with_the_role() {
    let mut s = keep_oldest(true, Some("role2"));
    s.side1 = vec![a(), e()];
    s.side2 = vec![b(), c(), d()];
    s.assert_downing(&s.side1.clone());
}

/// KeepOldest "keep partition with oldest unless alone".
#[test]
fn keep_oldest_downs_an_oldest_alone() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![e()];
    s.side2 = vec![a(), b(), c(), d()];
    s.assert_downing(&s.side1.clone());
}

/// KeepOldest "keep partition with oldest in two nodes cluster" and "keep
/// one single oldest".
#[test]
fn keep_oldest_keeps_the_oldest_of_two_even_alone() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![b()];
    s.side2 = vec![a()];
    s.assert_downing(&s.side2.clone());

    let mut s = keep_oldest(true, None);
    s.side2 = vec![a()];
    assert_eq!(s.nodes_to_down(&s.side2), Ok(nodes(&[])));
}

/// KeepOldest "keep oldest even when alone when downIfAlone = false".
#[test]
fn keep_oldest_keeps_an_oldest_alone_without_down_if_alone() {
    let mut s = keep_oldest(false, None);
    s.side1 = vec![e()];
    s.side2 = vec![a(), b(), c(), d()];
    s.assert_downing(&s.side2.clone());
}

/// KeepOldest "detect leaving/exiting edge case: keep partition with
/// oldest, scenario 1".
#[test]
fn keep_oldest_downs_all_when_the_oldest_leaving_may_be_exiting() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![a(), b(), d()];
    s.side2 = vec![c(), exiting(e())];
    assert_eq!(s.decide(&s.side1), Decision::DownUnreachable);
    assert_eq!(s.nodes_to_down(&s.side1), Ok(nodes(&[c()])));

    s.side2 = vec![c(), leaving(e())];
    assert_eq!(s.decide(&s.side2), Decision::DownAll);
    assert_eq!(
        s.nodes_to_down(&s.side2),
        Ok(nodes(&[a(), b(), c(), d(), e()]))
    );
}

/// KeepOldest "detect leaving/exiting edge case: keep partition with
/// oldest", scenarios 2 and 3.
#[test]
fn keep_oldest_leaving_edge_cases_scenarios_2_and_3() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![a(), leaving(e())];
    s.side2 = vec![b(), c(), d()];
    assert_eq!(s.decide(&s.side1), Decision::DownAll);
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);

    let mut s = keep_oldest(true, None);
    s.side1 = vec![a(), e()];
    s.side2 = vec![leaving(b()), leaving(c()), d()];
    s.assert_downing(&s.side2.clone());
}

/// KeepOldest "detect leaving/exiting edge case: keep partition with
/// oldest unless alone", scenarios 1, 3 and 4.
#[test]
fn keep_oldest_leaving_edge_cases_with_an_oldest_alone() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![leaving(d()), e()];
    s.side2 = vec![a(), b(), c()];
    assert_eq!(s.decide(&s.side1), Decision::DownAll);
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);

    s.side1 = vec![e()];
    s.side2 = vec![a(), b(), leaving(c())];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    assert_eq!(s.decide(&s.side2), Decision::DownUnreachable);

    s.side2 = vec![a(), leaving(b()), leaving(c()), leaving(d())];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    assert_eq!(s.decide(&s.side2), Decision::DownAll);
}

/// KeepOldest "detect leaving/exiting edge case: DownReachable on both
/// sides when oldest leaving/exiting is alone" and "when one single oldest".
#[test]
fn keep_oldest_exiting_oldest_alone() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![d(), exiting(e())];
    s.side2 = vec![a(), b(), c()];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    s.side1 = vec![d(), leaving(e())];
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);

    let mut s = keep_oldest(true, None);
    s.side1 = vec![a()];
    s.side2 = vec![exiting(b())];
    assert_eq!(s.decide(&s.side1), Decision::DownUnreachable);
    s.side2 = vec![leaving(b())];
    assert_eq!(s.decide(&s.side2), Decision::DownAll);
}

/// KeepOldest "detect joining/up edge case: keep partition with oldest
/// unless alone, scenario 1" and "keep oldest even when alone when
/// downIfAlone = false".
#[test]
fn keep_oldest_joining_member_may_end_the_oldest_being_alone() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![joining(a()), e()];
    s.side2 = vec![b(), c(), d()];
    assert_eq!(s.decide(&s.side1), Decision::DownReachable);
    assert_eq!(s.decide(&s.side2), Decision::DownAll);

    s.strategy = Strategy::KeepOldest {
        down_if_alone: false,
        role: None,
    };
    assert_eq!(s.decide(&s.side1), Decision::DownUnreachable);
    assert_eq!(s.decide(&s.side2), Decision::DownReachable);
}

/// KeepOldest "down indirectly connected: {(A, B), C} => {C}".
#[test]
fn keep_oldest_downs_indirect_connections() {
    let mut s = keep_oldest(true, None);
    s.side1 = vec![a(), b(), c()];
    s.indirectly_connected = vec![(a(), b()), (b(), a())];
    s.assert_downing(&[a(), b()]);
}

/// KeepOldest "down indirectly connected on younger side, when combined
/// with clean partition: {A, (B, C)} | {D, E, F, G} => {D, E, F, G}".
#[test]
fn keep_oldest_downs_a_younger_side_holding_indirect_connections() {
    indirect_connections_on_the_losing_side(keep_oldest(true, None));
}

/// KeepOldest "down indirectly connected on oldest side, when combined with
/// clean partition: {A, B, C} | {(D, E), F, G} => {F, G}".
#[test]
fn keep_oldest_downs_indirect_connections_on_the_oldest_side() {
    indirect_connections_on_the_winning_side(keep_oldest(true, None));
}

/// DownAllNodes "down all" and "down all when any indirectly connected:
/// {(A, B), C} => {}".
#[test]
fn down_all_downs_every_member() {
    let mut s = Setup::new(Strategy::DownAll);
    s.side1 = vec![a(), b(), c()];
    s.side2 = vec![d(), e()];
    s.assert_downing(&[a(), b(), c(), d(), e()]);

    let mut s = Setup::new(Strategy::DownAll);
    s.side1 = vec![a(), b(), c()];
    s.indirectly_connected = vec![(a(), b()), (b(), a())];
    s.assert_downing(&[a(), b(), c()]);
}

/// Strategy "collect and filter members" (both orderings): which members
/// each count takes in, from both sides.
#[test]
fn counts_take_in_the_right_statuses() {
    use crate::sbr::partition::Counting;
    let mut s = keep_majority(None);
    s.side1 = vec![weakly_up(a()), b(), joining(c())];
    s.side2 = vec![d(), leaving(e()), downed(f()), exiting(g())];
    let count = |side: &[crate::sbr::SbrMember], up: bool, exiting: bool| {
        let how = Counting {
            including_possibly_up: up,
            excluding_possibly_exiting: exiting,
        };
        let view = s.view(side);
        (
            view.counted(None, how).len(),
            view.reachable_count(None, how),
            view.unreachable_count(None, how),
        )
    };
    assert_eq!(count(&s.side1, false, false), (3, 1, 2));
    assert_eq!(count(&s.side1, true, false), (5, 3, 2));
    assert_eq!(count(&s.side1, false, true), (2, 1, 1));
    assert_eq!(count(&s.side1, true, true), (4, 3, 1));
    assert_eq!(count(&s.side2, false, false), (3, 2, 1));
    assert_eq!(count(&s.side2, true, false), (5, 2, 3));
    assert_eq!(count(&s.side2, true, true), (4, 1, 3));
    let view = s.view(&s.side1);
    assert_eq!(view.downable(), nodes(&[a(), b(), c(), d(), e()]));
}
