//! The membership authority mode (docs/reference/remoting.md#membership-authority):
//! a cluster's members are not given up by the transport; their
//! verdicts are reported to the authority, which removes them with
//! `Remoting::member_removed`. As Pekko's `ClusterRemoteWatcher`
//! (`ClusterDeathWatchSpec`: a removed member's watchers get `Terminated`;
//! `quarantine-removed-node-after`) and its split-brain resolver's
//! `DownSelfQuarantinedByRemote`.

use crate::common;
use crate::raw_peer;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::holding_relay::{behind_holding_relay, HoldingRelay};
use common::{Node, T};
use volley::ActorRef;
use volley_remote::transport::{AuthorityAlreadySet, MemberReport, MembershipAuthority};
use volley_remote::wire::{Address, Disassociate, DisassociateReason, Lane, Pdu};
use volley_remote::{AssociationState, RemoteSettings, RemotingEvent};
use volley_testkit::TestProbe;

/// What an authority was told: the member, its incarnation, the report.
type Reported = (Address, u64, MemberReport);

/// An authority with a fixed list of members, which passes its reports to
/// a probe.
struct TestAuthority {
    members: Mutex<HashSet<(Address, u64)>>,
    reports: ActorRef<Reported>,
}

impl MembershipAuthority for TestAuthority {
    fn is_member(&self, address: &Address, uid: u64) -> bool {
        self.members
            .lock()
            .unwrap()
            .contains(&(address.clone(), uid))
    }
    fn report(&self, address: &Address, uid: u64, report: MemberReport) {
        self.reports.tell((address.clone(), uid, report));
    }
}

/// Sets on `node` an authority whose members are `members` (node and
/// uid); returns the probe its reports go to.
fn authority(node: &Node, members: &[&Node]) -> TestProbe<Reported> {
    let reports = TestProbe::new(&node.system);
    let members = members
        .iter()
        .map(|m| (m.remoting.address().clone(), m.remoting.uid()))
        .collect();
    let authority = Arc::new(TestAuthority {
        members: Mutex::new(members),
        reports: reports.actor_ref(),
    });
    node.remoting
        .set_membership_authority(authority.clone())
        .unwrap();
    assert_eq!(
        node.remoting.set_membership_authority(authority),
        Err(AuthorityAlreadySet)
    );
    reports
}

/// Waits for `report` on `member` among what `reports` got.
fn await_report(reports: &TestProbe<Reported>, member: &Node, report: MemberReport) {
    let uid = member.remoting.uid();
    reports.fish_for_within(T, |(_, u, r)| *u == uid && *r == report);
}

fn quarantined(events: &[RemotingEvent]) -> Vec<&RemotingEvent> {
    let gone = |e: &&RemotingEvent| {
        matches!(
            e,
            RemotingEvent::Quarantined { .. }
                | RemotingEvent::Disassociated {
                    reason: volley_remote::DisassociationReason::Unreachable,
                    ..
                }
        )
    };
    events.iter().filter(gone).collect()
}

/// Heartbeats every 50 ms, a node given up after about a second of
/// silence: patient enough for a loaded machine, quick for a partition.
fn detector() -> RemoteSettings {
    let mut settings = common::quick_detector();
    settings.failure_detector.acceptable_heartbeat_pause = Duration::from_millis(1000);
    settings
}

/// Two nodes behind holding relays, not yet associated: a test sets
/// their authorities first, so that a verdict on the way is a report.
async fn pair(a_settings: RemoteSettings) -> (Node, HoldingRelay, Node, HoldingRelay) {
    let (a, relay_a) = behind_holding_relay("ma-a", a_settings).await;
    let (b, relay_b) = behind_holding_relay("ma-b", detector()).await;
    (a, relay_a, b, relay_b)
}

/// Associates `a` and `b` both ways.
async fn associate(a: &Node, b: &Node) {
    common::spawn_calculator(a, "calc");
    common::spawn_calculator(b, "calc");
    // Each asks the other: both associations have shaken hands.
    assert_eq!(
        common::add(&common::remote_ref(a, b, "calc"), 1, 2).await,
        3
    );
    assert_eq!(
        common::add(&common::remote_ref(b, a, "calc"), 1, 2).await,
        3
    );
}

/// The detector's verdict on a member is reported, both ways and at each
/// change, and the member stays associated: no quarantine, and the
/// association works again once the partition heals.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_member_is_reported_not_quarantined() {
    let (a, relay_a, b, relay_b) = pair(detector()).await;
    let a_reports = authority(&a, &[&b]);
    let b_reports = authority(&b, &[&a]);
    associate(&a, &b).await;
    let (a_events, b_events) = (common::record_events(&a), common::record_events(&b));
    relay_a.hold(true, true);
    relay_b.hold(true, true);
    await_report(&a_reports, &b, MemberReport::Unreachable);
    await_report(&b_reports, &a, MemberReport::Unreachable);
    assert_eq!(a.remoting.is_reachable(b.remoting.address()), Some(false));
    assert_eq!(
        a.remoting.association_state(b.remoting.address()),
        Some(AssociationState::Active)
    );
    relay_a.heal();
    relay_b.heal();
    await_report(&a_reports, &b, MemberReport::Reachable);
    await_report(&b_reports, &a, MemberReport::Reachable);
    assert_eq!(
        common::add(&common::remote_ref(&a, &b, "calc"), 2, 3).await,
        5
    );
    for events in [&a_events, &b_events] {
        let seen = common::events_so_far(events);
        assert_eq!(quarantined(&seen), Vec::<&RemotingEvent>::new(), "{seen:?}");
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

/// A node the authority does not name is given up as without one.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_member_is_quarantined_as_before() {
    let (a, relay_a, b, relay_b) = pair(detector()).await;
    let a_reports = authority(&a, &[]);
    associate(&a, &b).await;
    let a_events = common::record_events(&a);
    relay_a.hold(true, true);
    relay_b.hold(true, true);
    let b_uid = b.remoting.uid();
    a_events.fish_for_within(
        T,
        |e| matches!(e, RemotingEvent::Quarantined { uid, .. } if *uid == b_uid),
    );
    a_reports.expect_no_msg(Duration::from_millis(200));
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Watchers on `on` of two actors on `of`: returns their counts of
/// `Terminated`, once both watches are in place.
async fn watch_two(on: &Node, of: &Node) -> Vec<Arc<std::sync::atomic::AtomicUsize>> {
    common::spawn_calculator(of, "w1");
    common::spawn_calculator(of, "w2");
    let mut counts = Vec::new();
    for name in ["w1", "w2"] {
        let (watcher, count) = common::spawn_counting_watcher(&on.system, &format!("watch-{name}"));
        watcher.tell(common::remote_ref(on, of, name).to_any());
        counts.push(count);
    }
    common::await_incoming_watches(of, on, 2);
    counts
}

/// Waits until each watcher got one `Terminated`, then checks that no
/// second one follows.
async fn one_terminated_each(counts: &[Arc<std::sync::atomic::AtomicUsize>]) {
    use std::sync::atomic::Ordering::SeqCst;
    common::eventually("each watcher told", || {
        counts.iter().all(|c| c.load(SeqCst) >= 1)
    })
    .await;
    // Time passing is the point: no second `Terminated` arrives.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let told: Vec<usize> = counts.iter().map(|c| c.load(SeqCst)).collect();
    assert_eq!(told, vec![1, 1]);
}

/// Node A, whose authority names node B a member, with two watchers of
/// B's actors, and A's events from then on.
struct WatchedMember {
    a: Node,
    b: Node,
    _relays: (HoldingRelay, HoldingRelay),
    counts: Vec<Arc<std::sync::atomic::AtomicUsize>>,
    events: TestProbe<RemotingEvent>,
    _reports: TestProbe<Reported>,
}

/// A [`WatchedMember`] whose A quarantines a member that left `delay`
/// after its removal.
async fn watched_member(delay: Duration) -> WatchedMember {
    let settings = RemoteSettings {
        quarantine_removed_node_after: delay,
        ..detector()
    };
    let (a, relay_a, b, relay_b) = pair(settings).await;
    let _reports = authority(&a, &[&b]);
    let counts = watch_two(&a, &b).await;
    let events = common::record_events(&a);
    WatchedMember {
        a,
        b,
        _relays: (relay_a, relay_b),
        counts,
        events,
        _reports,
    }
}

impl WatchedMember {
    async fn end(self) {
        self.a.system.terminate().await;
        self.b.system.terminate().await;
    }
}

/// A member removed as Down: its watchers get `Terminated` once each and
/// its incarnation is quarantined at once, long before the delay a
/// member that left would get.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_removed_as_down_is_terminated_once_and_quarantined_at_once() {
    let w = watched_member(Duration::from_secs(60)).await;
    let (a, b, counts, events) = (&w.a, &w.b, &w.counts, &w.events);
    let (b_address, b_uid) = (b.remoting.address().clone(), b.remoting.uid());
    a.remoting.member_removed(&b_address, b_uid, true);
    events.fish_for_within(
        T,
        |e| matches!(e, RemotingEvent::Quarantined { uid, .. } if *uid == b_uid),
    );
    one_terminated_each(counts).await;
    assert_eq!(
        a.remoting.association_state(&b_address),
        Some(AssociationState::Down)
    );
    w.end().await;
}

/// A member that left: its watchers get `Terminated` at once, and its
/// incarnation is quarantined only after `quarantine_removed_node_after`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_left_is_quarantined_after_the_delay() {
    let delay = Duration::from_millis(500);
    let w = watched_member(delay).await;
    let (a, b, counts, events) = (&w.a, &w.b, &w.counts, &w.events);
    let (b_address, b_uid) = (b.remoting.address().clone(), b.remoting.uid());
    let removed = Instant::now();
    a.remoting.member_removed(&b_address, b_uid, false);
    let seen = events.fish_for_within(T, |e| match e {
        RemotingEvent::Quarantined { uid, .. } if *uid == b_uid => {
            volley_testkit::FishingOutcome::Complete
        }
        _ => volley_testkit::FishingOutcome::Continue,
    });
    assert!(
        removed.elapsed() >= delay,
        "quarantined {:?} after the removal",
        removed.elapsed()
    );
    assert!(
        matches!(
            seen.first(),
            Some(RemotingEvent::AddressTerminated { uid: Some(u), .. }) if *u == b_uid
        ),
        "the watches end first: {seen:?}"
    );
    one_terminated_each(counts).await;
    w.end().await;
}

/// A member's `Disassociate(Quarantined)`: it quarantined this node. The
/// authority is told (Pekko's resolver downs this node then); the
/// transport does not quarantine the member in turn.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_disassociate_quarantined_is_reported_not_obeyed() {
    // A peer driven by hand, known so that this node has an association
    // with it (nobody listens at its address).
    let port = common::free_port();
    let peer: Address = format!("volley://peer@127.0.0.1:{port}").parse().unwrap();
    let mut settings = detector();
    settings.trust.known_peers = vec![peer.to_string()];
    let a = common::node("ma-told", settings).await;
    let events = common::record_events(&a);
    let reports = TestProbe::new(&a.system);
    a.remoting
        .set_membership_authority(Arc::new(TestAuthority {
            members: Mutex::new([(peer.clone(), 1111)].into()),
            reports: reports.actor_ref(),
        }))
        .unwrap();
    let to = a.remoting.address().clone();
    let mut control = raw_peer::handshaken_as(&to, &peer, 1111, Lane::Control).await;
    events.fish_for_within(T, |e| {
        matches!(e, RemotingEvent::Associated { uid: 1111, .. })
    });
    let told = raw_peer::hostile::frames(
        Lane::Control,
        &[Pdu::Disassociate(Disassociate {
            reason: DisassociateReason::Quarantined,
            text: "you are quarantined",
        })],
    );
    tokio::io::AsyncWriteExt::write_all(&mut control, &told)
        .await
        .unwrap();
    reports.fish_for_within(T, |(_, uid, r)| {
        *uid == 1111 && *r == MemberReport::QuarantinedThisNode
    });
    let seen = common::events_so_far(&events);
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e, RemotingEvent::Quarantined { .. })),
        "{seen:?}"
    );
    assert_ne!(
        a.remoting.association_state(&peer),
        Some(AssociationState::Down)
    );
    a.system.terminate().await;
}

/// The detector's settings, with reconnects after 50 ms to 200 ms.
fn quick_reconnects() -> RemoteSettings {
    RemoteSettings {
        reconnect_backoff: Duration::from_millis(50),
        reconnect_backoff_max: Duration::from_millis(200),
        ..detector()
    }
}

/// A member's control connection that fails while serving is reported as
/// `ConnectionLost`, a hint the cluster turns into a SWIM suspicion; the
/// transport does nothing more: the member stays associated, is not
/// quarantined, and answers again over a new connection.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_lost_connection_is_reported_as_a_hint() {
    let b_port = common::free_port();
    let relay = common::relay::Relay::start(b_port).await;
    let a = common::node("ma-lost-a", quick_reconnects()).await;
    let b = common::node(
        "ma-lost-b",
        RemoteSettings {
            port: b_port,
            canonical_port: Some(relay.port),
            ..quick_reconnects()
        },
    )
    .await;
    let a_reports = authority(&a, &[&b]);
    associate(&a, &b).await;
    let a_events = common::record_events(&a);
    relay.cut();
    await_report(&a_reports, &b, MemberReport::ConnectionLost);
    // A message written into the cut connection is lost, as any send to a
    // failing connection: ask again until a new connection answers.
    let calc = common::remote_ref(&a, &b, "calc");
    let start = Instant::now();
    while common::ask_sum(&calc, Duration::from_millis(500))
        .await
        .ok()
        != Some(42)
    {
        assert!(start.elapsed() < T, "no answer over a new connection");
    }
    let seen = common::events_so_far(&a_events);
    assert_eq!(quarantined(&seen), Vec::<&RemotingEvent>::new(), "{seen:?}");
    a.system.terminate().await;
    b.system.terminate().await;
}
