use std::num::NonZeroU32;

use foca::{Codec, Header, Message};
use proptest::prelude::*;

use super::*;
use crate::member::{MemberRecord, MemberStatus};

const NOW: Duration = Duration::from_secs(100);

/// `body` as a node in no cluster yet sends it (formation 0).
fn sealed(body: &[u8]) -> Vec<u8> {
    crate::formation::seal(None, body)
}

fn config() -> Config {
    Config::new_lan(NonZeroU32::new(3).expect("non-zero"))
}

fn core(port: u16, seed: u64) -> ClusterCore {
    ClusterCore::new(
        NodeId::new("10.0.0.1", port, u64::from(port), 1),
        config(),
        seed,
    )
}

/// Hands every packet of `outputs` addressed to `to` over, returning what
/// `to` produced.
fn deliver(outputs: &Outputs, to: &mut ClusterCore) -> Outputs {
    let mut produced = Outputs::default();
    let recipient = to.identity().clone();
    for packet in outputs.packets.iter().filter(|p| p.to == recipient) {
        let mut step = to.handle(NOW, Input::Packet(&packet.bytes));
        assert!(step.refused.is_none(), "{:?}", step.refused);
        produced.packets.append(&mut step.packets);
        produced.events.append(&mut step.events);
    }
    produced
}

/// Two cores that joined each other, `a` through `b`.
fn joined_pair(seed: u64) -> (ClusterCore, ClusterCore) {
    let (mut a, mut b) = (core(1, seed), core(2, seed + 1));
    let announce = a.handle(NOW, Input::Join(b.identity().clone()));
    let feed = deliver(&announce, &mut b);
    deliver(&feed, &mut a);
    (a, b)
}

#[test]
fn two_cores_join_through_their_packets_alone() {
    let (mut a, mut b) = (core(1, 1), core(2, 2));
    let announce = a.handle(NOW, Input::Join(b.identity().clone()));
    assert_eq!(announce.packets.len(), 1);
    let feed = deliver(&announce, &mut b);
    assert!(feed.events.contains(&MembershipEvent::Joined));
    assert!(feed.events.contains(&MembershipEvent::MemberUp {
        member: a.identity().clone()
    }));
    let joined = deliver(&feed, &mut a);
    assert_eq!(
        joined.events,
        [
            MembershipEvent::MemberUp {
                member: b.identity().clone()
            },
            MembershipEvent::Joined
        ]
    );
    assert_eq!(a.members().collect::<Vec<_>>(), [b.identity()]);
}

#[test]
fn a_member_that_leaves_shows_as_unreachable() {
    let (mut a, mut b) = joined_pair(1);
    let leave = a.handle(NOW, Input::Leave);
    assert!(leave.refused.is_none());
    let told = deliver(&leave, &mut b);
    assert_eq!(
        told.events,
        [
            MembershipEvent::MemberUnreachable {
                member: a.identity().clone()
            },
            MembershipEvent::Alone
        ]
    );
}

#[test]
fn a_node_that_shuts_down_leaves_the_swim_group_once() {
    let (mut a, mut b) = joined_pair(2);
    let shutdown = a.handle(NOW, Input::Shutdown);
    assert!(shutdown.refused.is_none());
    let told = deliver(&shutdown, &mut b);
    assert!(told.events.contains(&MembershipEvent::MemberUnreachable {
        member: a.identity().clone()
    }));
    let again = a.handle(NOW, Input::Shutdown);
    assert!(again.refused.is_none() && again.packets.is_empty());
}

#[test]
fn timers_are_due_at_now_plus_foca_s_delay() {
    let (mut a, mut b) = (core(1, 1), core(2, 2));
    let announce = a.handle(NOW, Input::Join(b.identity().clone()));
    let feed = deliver(&announce, &mut b);
    let joined = a.handle(NOW, Input::Packet(&feed.packets[0].bytes));
    let probe = joined
        .timers
        .iter()
        .find(|t| matches!(t.timer, ClusterTimer::Swim(Timer::ProbeRandomMember(_))))
        .expect("joining arms the probe timer");
    assert_eq!(probe.at, NOW + config().probe_period);
}

#[test]
fn the_same_seed_gives_the_same_packets() {
    let run = |seed| {
        let (mut a, _) = joined_pair(seed);
        a.handle(NOW, Input::Gossip).packets
    };
    assert_eq!(run(5), run(5));
}

#[test]
fn an_oversized_packet_is_refused() {
    let mut a = core(1, 1);
    let bytes = sealed(&vec![0; config().max_packet_size.get() + 1]);
    let outputs = a.handle(NOW, Input::Packet(&bytes));
    let refused = outputs.refused.expect("refused");
    assert!(
        matches!(refused.source, RefusedBy::Swim(foca::Error::DataTooBig)),
        "{refused}"
    );
    assert_eq!(refused.input, "packet");
}

#[test]
fn a_packet_claiming_to_be_from_this_node_is_refused() {
    let mut a = core(1, 1);
    let header = Header {
        src: a.identity().clone(),
        src_incarnation: 0,
        dst: a.identity().clone(),
        message: Message::Ping(1),
    };
    let mut bytes = Vec::new();
    ClusterCodec
        .encode_header(&header, &mut bytes)
        .expect("encodes");
    let refused = a
        .handle(NOW, Input::Packet(&sealed(&bytes)))
        .refused
        .expect("refused");
    assert!(matches!(
        refused.source,
        RefusedBy::Swim(foca::Error::DataFromOurselves)
    ));
}

#[test]
fn a_truncated_or_trailing_byte_packet_is_refused() {
    let mut a = core(1, 1);
    let header = Header {
        src: NodeId::new("10.0.0.2", 9, 9, 9),
        src_incarnation: 0,
        dst: a.identity().clone(),
        message: Message::Ping(1),
    };
    let mut bytes = Vec::new();
    ClusterCodec
        .encode_header(&header, &mut bytes)
        .expect("encodes");
    let truncated = a.handle(NOW, Input::Packet(&sealed(&bytes[..bytes.len() - 1])));
    assert!(matches!(
        truncated.refused.expect("refused").source,
        RefusedBy::Swim(foca::Error::Decode(_))
    ));
    bytes.push(0);
    let trailing = a.handle(NOW, Input::Packet(&sealed(&bytes)));
    assert!(matches!(
        trailing.refused.expect("refused").source,
        RefusedBy::Swim(foca::Error::MalformedPacket)
    ));
}

proptest! {
    #[test]
    fn arbitrary_packets_never_panic_the_core(bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
        let mut a = core(1, 1);
        let _ = a.handle(NOW, Input::Packet(&bytes));
    }

    #[test]
    fn a_valid_header_with_arbitrary_updates_never_panics_the_core(
        tail in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let mut a = core(1, 1);
        let header = Header {
            src: NodeId::new("10.0.0.2", 9, 9, 9),
            src_incarnation: 0,
            dst: a.identity().clone(),
            message: Message::Gossip,
        };
        let mut bytes = Vec::new();
        ClusterCodec.encode_header(&header, &mut bytes).expect("encodes");
        bytes.extend_from_slice(&tail);
        let _ = a.handle(NOW, Input::Packet(&sealed(&bytes)));
    }
}

#[test]
fn downing_a_member_the_table_does_not_hold_is_refused() {
    let mut a = core(1, 7);
    let stranger = crate::member::UniqueAddress::of(&NodeId::new("10.0.0.9", 9, 9, 1));
    let refused = a
        .handle(NOW, Input::Down(stranger.clone()))
        .refused
        .expect("refused");
    assert!(
        matches!(&refused.source, RefusedBy::UnknownMember(m) if *m == stranger),
        "{refused}"
    );
}

#[test]
fn malformed_sync_messages_are_refused_with_a_typed_error() {
    let mut a = core(1, 7);
    let (short, empty) = (sealed(&[0, 1]), sealed(&[]));
    for input in [Input::SyncDigest(&short), Input::SyncData(&empty)] {
        let refused = a.handle(NOW, input).refused.expect("refused");
        assert!(
            matches!(refused.source, RefusedBy::Membership(_)),
            "{refused}"
        );
    }
}

#[test]
fn the_first_seed_forms_the_cluster_alone_after_the_seed_node_timeout() {
    let mut a = core(1, 7);
    let me = a.identity().addr();
    let other: crate::node_id::Addr = (std::sync::Arc::from("10.0.0.2"), 2);
    let start = a.handle(NOW, Input::JoinSeedNodes(vec![me, other]));
    assert_eq!(start.packets.len(), 1, "an announce to the other seed");
    let mut ticks = start.timers;
    let (_, events) = run_ticks(&mut a, &mut ticks, NOW + Duration::from_secs(8));
    let state = a.state();
    let me = state.self_member.expect("a member");
    assert_eq!(me.status, crate::member::MemberStatus::Up, "{events:?}");
    assert_eq!(me.up_number, 1);
    assert_eq!(state.leader, Some(me.unique_address()));
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            crate::member::ClusterEvent::MemberJoined { .. } => "joined",
            crate::member::ClusterEvent::MemberUp { .. } => "up",
            crate::member::ClusterEvent::LeaderChanged { .. } => "leader",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["joined", "leader", "up"]);
}

/// Hands `core` the membership's ticks among `timers` (and those they
/// arm) until `until`; returns the time of the last and the cluster
/// events they made.
fn run_ticks(
    core: &mut ClusterCore,
    timers: &mut Vec<TimerAt>,
    until: Duration,
) -> (Duration, Vec<ClusterEvent>) {
    let (mut now, mut events) = (NOW, Vec::new());
    while now < until {
        let Some(tick) = timers
            .iter()
            .position(|t| t.timer == ClusterTimer::Tick)
            .map(|i| timers.remove(i))
        else {
            break;
        };
        now = tick.at;
        let mut out = core.handle(now, Input::Timer(ClusterTimer::Tick));
        events.append(&mut out.cluster_events);
        timers.append(&mut out.timers);
    }
    (now, events)
}

/// A member of the table that foca never heard of (its record came, its
/// SWIM identity did not) is unreachable once it has been unknown for
/// `probe_period` plus `suspect_to_down_after`, not before, and reachable
/// again once foca holds it alive (`core/unmonitored.rs`). Before, it
/// was never probed and counted as reachable for ever: a node that had
/// joined just before a partition took its side for the majority.
#[test]
fn a_member_foca_never_heard_of_is_unreachable_after_the_grace() {
    let mut a = core(1, 7);
    let me = a.identity().addr();
    let mut ticks = a.handle(NOW, Input::JoinSeedNodes(vec![me])).timers;
    let (formed, _) = run_ticks(&mut a, &mut ticks, NOW + Duration::from_secs(8));
    assert_eq!(a.join, JoinPlan::Joined);
    let stranger = NodeId::new("10.0.0.9", 9, 9, 1);
    let record = MemberRecord::joining(stranger.clone(), "1".to_owned(), BTreeSet::new())
        .with_status(MemberStatus::Up);
    a.knowledge.lock().table.merge(record, formed);
    let grace = config().probe_period + config().suspect_to_down_after;
    let unreachable = |events: &[ClusterEvent]| {
        events.iter().any(|e| {
            matches!(e, ClusterEvent::UnreachableMember { member }
            if member.node.same_incarnation(&stranger))
        })
    };
    let (_, before) = run_ticks(
        &mut a,
        &mut ticks,
        formed + grace - Duration::from_millis(500),
    );
    assert!(
        !unreachable(&before),
        "unreachable before the grace: {before:?}"
    );
    let (_, after) = run_ticks(&mut a, &mut ticks, formed + grace + Duration::from_secs(2));
    assert!(unreachable(&after), "{after:?}");
    a.foca
        .apply_many(
            std::iter::once(Member::alive(stranger.clone())),
            false,
            &mut a.outbox,
        )
        .expect("applied");
    let until = formed + grace + Duration::from_secs(3);
    let (_, back) = run_ticks(&mut a, &mut ticks, until);
    let reachable = back.iter().any(|e| {
        matches!(e, ClusterEvent::ReachableMember { member }
            if member.node.same_incarnation(&stranger))
    });
    assert!(reachable, "{back:?}");
}

#[test]
fn a_clock_at_its_end_does_not_panic_the_core() {
    let mut a = core(1, 7);
    let me = a.identity().addr();
    let outputs = a.handle(Duration::MAX, Input::JoinSeedNodes(vec![me]));
    assert!(outputs.timers.iter().all(|t| t.at == Duration::MAX));
    let _ = a.handle(Duration::MAX, Input::Timer(ClusterTimer::Tick));
}

fn service(n: u64, path_len: usize) -> ServiceEntry {
    ServiceEntry {
        key: std::sync::Arc::from("workers"),
        wire_type_id: 7,
        path: std::sync::Arc::from(
            format!("volley://s@10.0.0.1:1/user/{}", "w".repeat(path_len)).as_str(),
        ),
        uid: n,
    }
}

#[test]
fn a_local_registration_beyond_the_bounds_is_refused_and_changes_nothing() {
    let bounds = crate::receptionist::ServiceBounds {
        max_entries_per_member: 1,
        ..Default::default()
    };
    let membership = MembershipConfig {
        service_bounds: bounds,
        ..MembershipConfig::default()
    };
    let identity = NodeId::new("10.0.0.1", 1, 1, 1);
    let mut core = ClusterCore::with_membership(identity, config(), membership, 5);
    let me = core.unique_address().clone();
    let first = core.handle(
        NOW,
        Input::Service {
            entry: service(1, 1),
            registered: true,
        },
    );
    assert!(first.refused.is_none(), "{:?}", first.refused);
    let second = core.handle(
        NOW,
        Input::Service {
            entry: service(2, 1),
            registered: true,
        },
    );
    assert!(matches!(
        second.refused,
        Some(Refused {
            source: RefusedBy::Services(ServiceRefused::TooManyEntries { max: 1, .. }),
            ..
        })
    ));
    let too_long = core.handle(
        NOW,
        Input::Service {
            entry: service(3, 2000),
            registered: false,
        },
    );
    assert!(
        too_long.refused.is_none(),
        "removing what is not held changes nothing"
    );
    let held = core.services().get(&me).cloned().expect("own set");
    assert_eq!(held.version, 1);
    assert_eq!(held.entries.len(), 1);
}

/// A peer's digests are answered with the table once per half
/// `gossip_interval` at most; more are counted and left unanswered.
#[test]
fn a_peer_that_sends_digests_too_often_gets_the_table_once_per_half_interval() {
    let mut a = core(1, 7);
    let me = a.identity().addr();
    a.handle(NOW, Input::JoinSeedNodes(vec![me]));
    assert!(a.state().self_member.is_some(), "formed alone");
    let peer = NodeId::new("10.0.0.1", 2, 2, 1);
    let digest = crate::member::wire::encode_digest(&crate::member::wire::Digest {
        from: peer.clone(),
        seen: crate::member::wire::Seen {
            version: 1,
            hash: 12_345,
        },
        seen_hash: 1,
        services_hash: 2,
    });
    let digest = crate::formation::seal(a.formation(), &digest);
    let half = a.config.gossip_interval / 2;
    let pages_at = |a: &mut ClusterCore, at: Duration| {
        let outputs = a.handle(at, Input::SyncDigest(&digest));
        assert!(outputs.refused.is_none(), "{:?}", outputs.refused);
        let to_peer = |p: &&Packet| p.to == peer && p.channel == Channel::SyncData;
        outputs.packets.iter().filter(to_peer).count()
    };
    assert!(pages_at(&mut a, NOW) > 0, "the first digest is answered");
    assert_eq!(pages_at(&mut a, NOW + half / 2), 0, "too soon");
    assert_eq!(a.sync_answers_withheld(), 1);
    assert!(pages_at(&mut a, NOW + half) > 0, "half an interval later");
}
