//! The resolver cases of Pekko's `SplitBrainResolverSpec` ("Split Brain
//! Resolver" must ...), each naming the case it ports, on a virtual clock:
//! where Pekko sleeps, these advance `now`.

use std::time::Duration;

use super::fixtures::*;
use crate::node_id::NodeId;
use crate::sbr::{
    ActiveStrategy, Decision, DownAllWhenUnstable, Downing, DowningReason, SbrInput, SbrMember,
    SbrSettings, SplitBrainResolver, StableAfter, StaticQuorumSettings,
};

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// One resolver and the virtual clock driving it.
struct Harness {
    sbr: SplitBrainResolver,
    now: Duration,
}

impl Harness {
    fn new(me: &SbrMember, settings: SbrSettings) -> Self {
        let sbr = SplitBrainResolver::new(me.node.clone(), settings, Duration::ZERO)
            .expect("valid settings");
        Self {
            sbr,
            now: Duration::ZERO,
        }
    }

    fn keep_majority(
        me: &SbrMember,
        stable_after: Duration,
        down_all: DownAllWhenUnstable,
    ) -> Self {
        Self::new(
            me,
            settings(ActiveStrategy::KeepMajority, stable_after, down_all),
        )
    }

    fn feed(&mut self, input: SbrInput) -> Option<Downing> {
        self.sbr.handle(self.now, input)
    }

    fn quiet(&mut self, input: SbrInput) {
        assert_eq!(self.feed(input), None, "no decision on input");
    }

    fn up(&mut self, members: &[SbrMember]) {
        for m in members {
            self.quiet(SbrInput::Member(m.clone()));
        }
    }

    fn leader(&mut self, leader: bool) {
        self.quiet(SbrInput::Leader(leader));
    }

    fn unreachable(&mut self, members: &[SbrMember]) {
        for m in members {
            self.quiet(SbrInput::Unreachable(m.node.clone()));
        }
    }

    fn reachable(&mut self, members: &[SbrMember]) {
        for m in members {
            self.quiet(SbrInput::Reachable(m.node.clone()));
        }
    }

    /// As Pekko's `reachabilityChanged`: the subjects become unreachable,
    /// then the observation table is replaced.
    fn observations(&mut self, observed: &[(SbrMember, SbrMember)]) {
        let subjects: Vec<SbrMember> = observed.iter().map(|(_, s)| s.clone()).collect();
        self.unreachable(&subjects);
        let table: Vec<(NodeId, NodeId)> = observed
            .iter()
            .map(|(o, s)| (o.node.clone(), s.node.clone()))
            .collect();
        self.quiet(SbrInput::Observations(table));
    }

    fn advance_to(&mut self, at: Duration) {
        assert!(at >= self.now, "the virtual clock only moves forward");
        self.now = at;
    }

    fn tick(&mut self) -> Option<Downing> {
        self.feed(SbrInput::Tick)
    }

    fn expect_no_decision(&mut self) {
        assert_eq!(self.tick(), None, "no decision at {:?}", self.now);
    }

    fn expect_down(&mut self, expected: &[SbrMember]) -> Downing {
        let downing = self
            .tick()
            .unwrap_or_else(|| panic!("a decision at {:?}", self.now));
        assert_eq!(downing.nodes, nodes(expected), "downed at {:?}", self.now);
        downing
    }
}

fn settings(
    active_strategy: ActiveStrategy,
    stable_after: Duration,
    down_all_when_unstable: DownAllWhenUnstable,
) -> SbrSettings {
    SbrSettings {
        active_strategy,
        stable_after: StableAfter::Fixed(stable_after),
        down_all_when_unstable,
        ..SbrSettings::default()
    }
}

const OFF: DownAllWhenUnstable = DownAllWhenUnstable::Off;

/// "down unreachable when leader".
#[test]
fn downs_unreachable_when_leader() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.unreachable(&[b()]);
    let downing = h.expect_down(&[b()]);
    assert_eq!(downing.reason, DowningReason::Stable);
    assert!(!downing.down_self);
}

/// "not down unreachable when not leader".
#[test]
fn does_not_down_when_not_leader() {
    let mut h = Harness::keep_majority(&b(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c()]);
    h.leader(false);
    h.unreachable(&[c()]);
    h.expect_no_decision();
}

/// "down unreachable when becoming leader".
#[test]
fn downs_unreachable_when_becoming_leader() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c()]);
    h.leader(false);
    h.unreachable(&[c()]);
    h.leader(true);
    h.expect_down(&[c()]);
}

/// "down unreachable after specified duration".
#[test]
fn downs_unreachable_only_after_stable_after() {
    let mut h = Harness::keep_majority(&a(), Duration::from_secs(2), OFF);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.unreachable(&[b()]);
    h.advance_to(ms(1000));
    h.expect_no_decision();
    h.advance_to(ms(1999));
    h.expect_no_decision();
    h.advance_to(ms(2000));
    h.expect_down(&[b()]);
}

/// "down unreachable when becoming leader inbetween detection and specified
/// duration".
#[test]
fn downs_when_becoming_leader_during_the_wait() {
    let mut h = Harness::keep_majority(&a(), Duration::from_secs(2), OFF);
    h.up(&[a(), b(), c()]);
    h.leader(false);
    h.unreachable(&[c()]);
    h.leader(true);
    h.expect_no_decision();
    h.advance_to(ms(1000));
    h.expect_no_decision();
    h.advance_to(ms(2000));
    h.expect_down(&[c()]);
}

/// "not down unreachable when loosing leadership inbetween detection and
/// specified duration".
#[test]
fn does_not_down_when_losing_leadership_during_the_wait() {
    let mut h = Harness::keep_majority(&a(), Duration::from_secs(1), OFF);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.unreachable(&[c()]);
    h.leader(false);
    h.expect_no_decision();
    h.advance_to(ms(1500));
    h.expect_no_decision();
}

/// "down when becoming Weakly-Up leader" (Pekko issue #436): a WeaklyUp
/// leader decides too, and its side, not counted, goes.
#[test]
fn a_weakly_up_leader_decides() {
    let mut h = Harness::keep_majority(&weakly_up(a()), Duration::ZERO, OFF);
    h.up(&[c()]);
    h.up(&[weakly_up(a()), weakly_up(b())]);
    h.unreachable(&[c()]);
    h.leader(true);
    let downing = h.expect_down(&[a(), b()]);
    assert!(downing.down_self);
    assert_eq!(downing.decision, Decision::DownReachable);
}

/// "not down when unreachable become reachable inbetween detection and
/// specified duration".
#[test]
fn does_not_down_a_member_reachable_again() {
    let mut h = Harness::keep_majority(&a(), Duration::from_secs(1), OFF);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.unreachable(&[b()]);
    h.reachable(&[b()]);
    h.expect_no_decision();
    h.advance_to(ms(1500));
    h.expect_no_decision();
}

/// "not down when unreachable is removed inbetween detection and specified
/// duration".
#[test]
fn does_not_down_a_removed_member() {
    let mut h = Harness::keep_majority(&a(), Duration::from_secs(1), OFF);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.unreachable(&[b()]);
    h.quiet(SbrInput::Removed(b().node));
    h.expect_no_decision();
    h.advance_to(ms(1500));
    h.expect_no_decision();
}

/// "not down when unreachable is already Down".
#[test]
fn does_not_down_a_member_already_down() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.quiet(SbrInput::Member(downed(b())));
    h.expect_no_decision();
    assert!(h.sbr.instability().is_none(), "a downed member settles");
}

/// "down minority partition".
#[test]
fn downs_the_minority_partition() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.observations(&[(a(), b()), (c(), d())]);
    h.expect_down(&[b(), d()]);
}

/// "keep partition with oldest".
#[test]
fn keep_oldest_keeps_the_partition_with_the_oldest() {
    let strategy = settings(ActiveStrategy::KeepOldest, Duration::ZERO, OFF);
    let mut h = Harness::new(&a(), strategy);
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.observations(&[(a(), b()), (a(), c()), (e(), d())]);
    h.expect_down(&[b(), c(), d()]);
}

/// "log warning if N > static-quorum.size * 2 - 1": the strategy says so,
/// and downs all.
#[test]
fn static_quorum_too_many_members_downs_all() {
    let mut settings = settings(ActiveStrategy::StaticQuorum, Duration::ZERO, OFF);
    settings.static_quorum = StaticQuorumSettings {
        quorum_size: Some(2),
        role: None,
    };
    let mut h = Harness::new(&a(), settings);
    h.up(&[a(), b(), c(), d()]);
    assert!(h.sbr.strategy().too_many_for_quorum(h.sbr.view()));
    h.leader(true);
    h.unreachable(&[c(), d()]);
    let downing = h.expect_down(&[a(), b(), c(), d()]);
    assert_eq!(downing.decision, Decision::DownAll);
}

/// "down indirectly connected: {(A, B), C} => {C}".
#[test]
fn downs_indirectly_connected_members() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.observations(&[(a(), b()), (b(), a())]);
    let downing = h.expect_down(&[a(), b()]);
    assert_eq!(downing.decision, Decision::DownIndirectlyConnected);
    assert!(downing.down_self);
}

/// "down indirectly connected when combined with crashed: {(A, B), D, E} |
/// {C} => {D, E}".
#[test]
fn downs_indirectly_connected_and_crashed_members() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.observations(&[(a(), b()), (b(), a()), (b(), c())]);
    h.expect_down(&[a(), b(), c()]);
}

/// "down indirectly connected when combined with clean partition: {A, (B,
/// C)} | {D, E} => {A}", from both sides.
#[test]
fn downs_indirectly_connected_alongside_a_clean_partition() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.observations(&[
        (b(), c()),
        (c(), b()),
        (a(), d()),
        (b(), d()),
        (b(), e()),
        (c(), e()),
    ]);
    h.expect_down(&[b(), c(), d(), e()]);

    let mut h = Harness::keep_majority(&d(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.observations(&[(d(), a()), (d(), b()), (e(), b()), (e(), c())]);
    let downing = h.expect_down(&[d(), e()]);
    assert!(downing.down_self);
}

/// "down indirectly connected when combined with partition and exiting:
/// {A, B, C, D} | {E, F-exiting} => {A, B, C, D}" and "{E-exiting, F}".
#[test]
fn downs_indirectly_connected_beside_an_exiting_member() {
    for (exiting_one, other) in [(f(), e()), (e(), f())] {
        let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
        h.up(&[a(), b(), c(), d(), e(), f()]);
        h.quiet(SbrInput::Member(exiting(exiting_one.clone())));
        h.leader(true);
        let mut observed = Vec::new();
        for observer in [a(), b(), c(), d()] {
            observed.push((observer.clone(), e()));
            observed.push((observer, f()));
        }
        observed.push((e(), f()));
        h.observations(&observed);
        h.expect_down(&[other]);
    }
}

/// "down all in self data centers" (one data center here).
#[test]
fn down_all_downs_every_member() {
    let mut h = Harness::new(&a(), settings(ActiveStrategy::DownAll, Duration::ZERO, OFF));
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.unreachable(&[c()]);
    let downing = h.expect_down(&[a(), b(), c()]);
    assert!(downing.down_self);
}

/// "double DownIndirectlyConnected when indirectly connected happens before
/// clean partition: {A, B, C} | {(D, E), (F, G)} => {}": Pekko's resolver
/// catches the strategy's exception and downs all; here the typed error
/// does the same.
#[test]
fn downs_all_when_indirect_connections_remain_after_filtering() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, OFF);
    h.up(&[a(), b(), c(), d(), e(), f(), g()]);
    h.leader(true);
    h.quiet(SbrInput::SeenBy(vec![a().node, b().node, c().node]));
    h.observations(&[
        (d(), e()),
        (g(), f()),
        (a(), d()),
        (a(), e()),
        (a(), f()),
        (a(), g()),
    ]);
    let downing = h.expect_down(&[a(), b(), c(), d(), e(), f(), g()]);
    assert_eq!(downing.reason, DowningReason::IndirectlyConnectedUnresolved);
    assert_eq!(downing.decision, Decision::DownAll);
}

/// "down all when unstable, scenario 1": reachability changes every second
/// with stable-after 2 s; at stable-after + down-all-when-unstable (3 s)
/// after the first change every member is downed.
#[test]
fn downs_all_when_unstable_scenario_1() {
    let mut h = Harness::keep_majority(&a(), ms(2000), DownAllWhenUnstable::After(ms(1000)));
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.observations(&[(b(), d()), (b(), e())]);
    h.expect_no_decision();

    h.advance_to(ms(1000));
    h.observations(&[(b(), d())]);
    h.reachable(&[e()]);
    h.expect_no_decision();

    h.advance_to(ms(2000));
    h.observations(&[(b(), d()), (b(), e())]);
    h.expect_no_decision();

    h.advance_to(ms(3000));
    h.observations(&[(b(), d())]);
    h.reachable(&[e()]);
    let downing = h.expect_down(&[a(), b(), c(), d(), e()]);
    assert_eq!(downing.reason, DowningReason::Unstable);
}

/// "down all when unstable, scenario 2": the same, with changes that reset
/// the stable deadline at uneven times (Pekko's elapsed times).
#[test]
fn downs_all_when_unstable_scenario_2() {
    let mut h = Harness::keep_majority(&a(), ms(2000), DownAllWhenUnstable::After(ms(500)));
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.observations(&[(a(), e()), (b(), d()), (c(), d())]);
    h.expect_no_decision();

    h.advance_to(ms(600));
    h.observations(&[(a(), e()), (b(), d())]);
    h.expect_no_decision();

    h.advance_to(ms(1200));
    h.observations(&[(a(), e())]);
    h.reachable(&[d()]);
    h.expect_no_decision();

    h.advance_to(ms(1800));
    h.observations(&[(a(), e()), (b(), d()), (c(), d())]);
    h.expect_no_decision();

    h.advance_to(ms(2800));
    h.observations(&[(a(), e()), (b(), d())]);
    let downing = h.expect_down(&[a(), b(), c(), d(), e()]);
    assert_eq!(downing.reason, DowningReason::Unstable);
}

/// "not down all when becoming stable again".
#[test]
fn does_not_down_all_once_stable_again() {
    let mut h = Harness::keep_majority(&a(), ms(2000), DownAllWhenUnstable::After(ms(1000)));
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.observations(&[(b(), d()), (b(), e())]);
    h.expect_no_decision();

    h.advance_to(ms(1100));
    h.observations(&[(b(), d())]);
    h.reachable(&[e()]);
    h.expect_no_decision();

    h.advance_to(ms(1700));
    h.expect_no_decision();
    h.observations(&[]);
    h.reachable(&[d()]);
    assert!(h.sbr.instability().is_none(), "all healed");
    h.advance_to(ms(2300));
    h.expect_no_decision();
    h.advance_to(ms(5400));
    h.expect_no_decision();
}

/// Down-all for instability runs on every node, not only the leader (as
/// Pekko's tick does), so both sides of a flapping link give up.
#[test]
fn downs_all_when_unstable_also_when_not_leader() {
    let mut h = Harness::keep_majority(&c(), ms(2000), DownAllWhenUnstable::After(ms(1000)));
    h.up(&[a(), b(), c()]);
    h.leader(false);
    h.unreachable(&[b()]);
    h.advance_to(ms(2999));
    h.expect_no_decision();
    h.advance_to(ms(3000));
    h.expect_down(&[a(), b(), c()]);
}

/// Each membership or reachability change restarts the wait for
/// stability: Up, Exiting, unreachable, reachable and Down do, Joining and
/// Leaving do not (as Pekko's resolver).
#[test]
fn changes_restart_the_stable_deadline() {
    let stable = ms(2000);
    let restarts = |input: SbrInput| {
        let mut h = Harness::keep_majority(&a(), stable, OFF);
        h.up(&[a(), b(), c(), d(), e()]);
        h.advance_to(ms(500));
        h.quiet(input);
        h.sbr.stable_deadline() == ms(2500)
    };
    assert!(restarts(SbrInput::Unreachable(b().node)));
    assert!(restarts(SbrInput::Member(f())));
    assert!(restarts(SbrInput::Member(exiting(b()))));
    assert!(restarts(SbrInput::Member(downed(b()))));
    assert!(!restarts(SbrInput::Member(joining(f()))));
    assert!(!restarts(SbrInput::Member(leaving(b()))));
    assert!(!restarts(SbrInput::Removed(b().node)));

    let mut h = Harness::keep_majority(&a(), stable, OFF);
    h.up(&[a(), b(), c(), d(), e()]);
    h.leader(true);
    h.unreachable(&[b()]);
    h.advance_to(ms(1500));
    h.unreachable(&[c()]);
    h.advance_to(ms(2000));
    h.expect_no_decision();
    h.advance_to(ms(3499));
    h.expect_no_decision();
    h.advance_to(ms(3500));
    h.expect_down(&[b(), c()]);
}

/// A decision restarts the wait and forgets the instability, so the same
/// members are not downed again on the next tick while their Down spreads.
#[test]
fn a_decision_is_not_repeated_at_once() {
    let mut h = Harness::keep_majority(&a(), ms(1000), DownAllWhenUnstable::On);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.unreachable(&[c()]);
    h.advance_to(ms(1000));
    h.expect_down(&[c()]);
    assert!(h.sbr.instability().is_none());
    h.advance_to(ms(1999));
    h.expect_no_decision();
    h.quiet(SbrInput::Member(downed(c())));
    h.advance_to(ms(10_000));
    h.expect_no_decision();
}

/// With down-all-when-unstable off, the measure of instability is dropped
/// after twice stable-after without a change (Pekko's tick).
#[test]
fn instability_is_forgotten_after_twice_stable_after_when_down_all_is_off() {
    let mut h = Harness::keep_majority(&c(), ms(1000), OFF);
    h.up(&[a(), b(), c()]);
    h.unreachable(&[b()]);
    h.advance_to(ms(2000));
    h.expect_no_decision();
    assert!(h.sbr.instability().is_some());
    h.advance_to(ms(2001));
    h.expect_no_decision();
    assert!(h.sbr.instability().is_none());
}

/// A member that quarantined this node makes it down itself (Pekko's
/// `DownSelfQuarantinedByRemote`); a stranger's quarantine is ignored.
#[test]
fn downs_itself_when_quarantined_by_a_member() {
    let mut h = Harness::keep_majority(&a(), ms(1000), OFF);
    h.up(&[a(), b(), c()]);
    assert_eq!(h.feed(SbrInput::QuarantinedBy(node("stranger"))), None);
    let downing = h
        .feed(SbrInput::QuarantinedBy(b().node))
        .expect("a decision");
    assert_eq!(downing.nodes, nodes(&[a()]));
    assert!(downing.down_self);
    assert_eq!(downing.decision, Decision::DownSelfQuarantinedByRemote);
    assert_eq!(downing.reason, DowningReason::QuarantinedBy(b().node));
}

/// Once this node is removed the resolver stops (Pekko stops the actor).
#[test]
fn ignores_everything_once_removed() {
    let mut h = Harness::keep_majority(&a(), Duration::ZERO, DownAllWhenUnstable::On);
    h.up(&[a(), b(), c()]);
    h.leader(true);
    h.quiet(SbrInput::Removed(a().node));
    assert!(h.sbr.is_removed());
    h.unreachable(&[b()]);
    h.advance_to(ms(60_000));
    h.expect_no_decision();
}

/// Without `stable_after` set, it follows the cluster size (Pekko's
/// recommended table) and down-all-when-unstable derives from it: 3/4 of
/// it, at least 4 s.
#[test]
fn stable_after_grows_with_the_cluster() {
    let mut h = Harness::new(&a(), SbrSettings::default());
    h.up(&[a(), b(), c(), d(), e()]);
    assert_eq!(h.sbr.stable_after(), Duration::from_secs(7));
    assert_eq!(h.sbr.down_all_when_unstable(), Some(ms(5250)));
    h.leader(true);
    h.unreachable(&[e()]);
    h.advance_to(ms(6999));
    h.expect_no_decision();
    h.advance_to(ms(7000));
    h.expect_down(&[e()]);

    let mut h = Harness::new(&a(), SbrSettings::default());
    h.up(&[a(), b()]);
    assert_eq!(h.sbr.stable_after(), Duration::from_secs(7));
    for i in 0..20 {
        h.up(&[SbrMember::new(
            node(&format!("n{i:02}")),
            crate::sbr::SbrStatus::Up,
            10 + i,
        )]);
    }
    assert_eq!(h.sbr.stable_after(), Duration::from_secs(17));
    assert_eq!(h.sbr.down_all_when_unstable(), Some(ms(12_750)));
}
