//! `Cluster::subscribe` (Akka's `subscribe` with `InitialStateAsEvents`):
//! the current state as events, then every change, none missed or told
//! twice (Pekko's `ClusterDomainEventPublisherSpec`, "send events
//! corresponding to current state when subscribe").

use volley_cluster::{ClusterEvent, InitialState, MemberStatus, UniqueAddress};
use volley_testkit::{FishingOutcome, TestProbe};

use super::{all_up, deadline, formed, nodes, quick, start_nodes};

/// The member of a status event, if `event` is one.
fn member_of(event: &ClusterEvent) -> Option<(UniqueAddress, MemberStatus)> {
    let member = event.status_member()?;
    Some((member.unique_address(), member.status))
}

/// Two members Up: a listener subscribed on the first gets a `MemberUp`
/// for each and the leader at once, and one subscribed with
/// `InitialState::AsSnapshot` gets the state as one event; a third node
/// joins, and both listeners get its `MemberJoined` and then its
/// `MemberUp`, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_gets_the_state_as_events_then_every_change_once() {
    let mut nodes = nodes();
    let (members, clusters, _probes) = formed(&mut nodes, 2).await;
    let listener = TestProbe::<ClusterEvent>::new(&members[0].system);
    clusters[0]
        .subscribe(listener.actor_ref())
        .expect("the cluster runs");
    let snapshots = TestProbe::<ClusterEvent>::new(&members[0].system);
    clusters[0]
        .subscribe_with(snapshots.actor_ref(), InitialState::AsSnapshot)
        .expect("the cluster runs");
    let state = clusters[0].state();
    // The cluster is stable: the members and the leader are the same in
    // the snapshot and in `state()` read after it (`seen_by` may not be).
    match snapshots.receive_msg() {
        ClusterEvent::CurrentClusterState { state: told } => {
            assert_eq!(
                (&told.members, &told.leader),
                (&state.members, &state.leader)
            );
            assert!(told.unreachable.is_empty(), "{told:?}");
        }
        other => panic!("the snapshot comes first: {other:?}"),
    }
    let first = listener.receive_n(3);
    let mut up: Vec<_> = first.iter().filter_map(member_of).collect();
    up.sort();
    let mut expected: Vec<_> = state
        .members
        .iter()
        .map(|m| (m.unique_address(), MemberStatus::Up))
        .collect();
    expected.sort();
    assert_eq!(up, expected, "a MemberUp for each member: {first:?}");
    assert_eq!(
        first[2],
        ClusterEvent::LeaderChanged {
            leader: state.leader.clone()
        }
    );

    let joiner = start_nodes(&mut nodes, 1).await.remove(0);
    let seeds = [&members[0]];
    let third =
        volley_cluster::Cluster::start(&joiner.system, &joiner.remoting, quick("test", &seeds))
            .expect("a cluster starts");
    let mut all = clusters.clone();
    all.push(third.clone());
    all_up(&all);
    let newcomer = third.self_member().clone();
    let mut seen = Vec::new();
    listener.fish_for_within(deadline(), |event| {
        if let Some((member, status)) = member_of(event) {
            if member == newcomer {
                seen.push(status);
            }
            if status == MemberStatus::Up && member == newcomer {
                return FishingOutcome::Complete;
            }
        }
        FishingOutcome::Continue
    });
    // Joining, unless the record reached this node Up already.
    assert!(
        seen == [MemberStatus::Up] || seen == [MemberStatus::Joining, MemberStatus::Up],
        "{seen:?}"
    );
    // The snapshot's listener gets the same changes, as events.
    let mut seen_after_snapshot = Vec::new();
    snapshots.fish_for_within(deadline(), |event| {
        assert!(
            !matches!(event, ClusterEvent::CurrentClusterState { .. }),
            "one snapshot only"
        );
        match member_of(event) {
            Some((member, status)) if member == newcomer => {
                seen_after_snapshot.push(status);
                if status == MemberStatus::Up {
                    return FishingOutcome::Complete;
                }
            }
            _ => {}
        }
        FishingOutcome::Continue
    });
    assert_eq!(seen_after_snapshot, seen);
    // Subscribing again tells the state no second time: up to a marker
    // told after it, no MemberUp of the first two comes again.
    clusters[0]
        .subscribe(listener.actor_ref())
        .expect("the cluster runs");
    let marker = ClusterEvent::RoleLeaderChanged {
        role: "marker".to_owned(),
        leader: None,
    };
    await_subscribed(&members[0].system);
    listener.actor_ref().tell(marker.clone());
    let mut again = Vec::new();
    listener.fish_for_within(deadline(), |event| {
        if *event == marker {
            return FishingOutcome::Complete;
        }
        again.extend(member_of(event).filter(|m| expected.contains(m)));
        FishingOutcome::Continue
    });
    assert!(again.is_empty(), "told twice: {again:?}");
    nodes.stop_all().await;
}

/// Waits until the driver has handled the second subscribe: a probe
/// subscribed after it through the same command queue gets its first
/// event, so the driver is past the listener's command.
fn await_subscribed(system: &volley::ActorSystem) {
    let cluster = volley_cluster::Cluster::get(system).expect("a cluster");
    let after = TestProbe::<ClusterEvent>::new(system);
    cluster
        .subscribe(after.actor_ref())
        .expect("the cluster runs");
    after.receive_n_within(deadline(), 1);
}
