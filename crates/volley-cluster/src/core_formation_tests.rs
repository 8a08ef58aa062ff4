//! The core's formation: formed by the first seed alone, adopted by a
//! joiner, never formed beside a cluster heard of, and another one's
//! payloads refused.

use std::num::NonZeroU32;

use foca::{Codec, Header, Message};

use super::*;
use crate::formation::{open, seal, Formation};
use crate::member::MemberStatus;

const NOW: Duration = Duration::from_secs(100);

fn core(port: u16) -> ClusterCore {
    let config = Config::new_lan(NonZeroU32::new(3).expect("non-zero"));
    let id = NodeId::new("10.0.0.1", port, u64::from(port), 1);
    ClusterCore::new(id, config, u64::from(port))
}

/// A core that formed a cluster alone, as its only seed.
fn formed(port: u16) -> ClusterCore {
    let mut core = core(port);
    let me = core.identity().addr();
    let outputs = core.handle(NOW, Input::JoinSeedNodes(vec![me]));
    assert!(outputs.refused.is_none());
    core
}

/// Hands `to` every packet of `outputs` addressed to it; what it produced.
fn deliver(outputs: &Outputs, to: &mut ClusterCore) -> Outputs {
    let recipient = to.identity().clone();
    let mut produced = Outputs::default();
    for packet in outputs.packets.iter().filter(|p| p.to == recipient) {
        let input = Input::received(packet.channel, &packet.bytes);
        let mut step = to.handle(NOW, input);
        assert!(step.refused.is_none(), "{:?}", step.refused);
        produced.packets.append(&mut step.packets);
    }
    produced
}

fn formation_of(packet: &Packet) -> Option<Formation> {
    open(&packet.bytes).expect("an envelope").formation
}

#[test]
fn the_only_seed_forms_a_formation_named_after_itself() {
    let a = formed(1);
    assert_eq!(
        a.formation(),
        Some(Formation::founded_by(a.unique_address()))
    );
    assert!(a.state().self_member.is_some());
}

#[test]
fn a_joiner_adopts_the_formation_of_the_cluster_it_joins() {
    let mut a = formed(1);
    let mut b = core(2);
    let announce = b.handle(NOW, Input::Join(a.identity().clone()));
    assert!(announce.packets.iter().all(|p| formation_of(p).is_none()));
    let feed = deliver(&announce, &mut a);
    assert!(!feed.packets.is_empty());
    assert!(feed
        .packets
        .iter()
        .all(|p| formation_of(p) == a.formation()));
    let answer = deliver(&feed, &mut b);
    assert_eq!(b.formation(), a.formation());
    assert!(answer
        .packets
        .iter()
        .all(|p| formation_of(p) == a.formation()));
    assert!(b.state().self_member.is_some(), "{:?}", b.state());
}

#[test]
fn a_payload_of_another_formation_is_refused_and_changes_nothing() {
    let mut a = formed(1);
    let mut b = core(2);
    let announce = b.handle(NOW, Input::Join(a.identity().clone()));
    let feed = deliver(&announce, &mut a);
    let mut apart = formed(3);
    let member_list = |core: &ClusterCore| -> Vec<crate::member::UniqueAddress> {
        core.state()
            .members
            .iter()
            .map(|m| m.unique_address())
            .collect()
    };
    let before = member_list(&apart);
    for packet in &feed.packets {
        let refused = apart
            .handle(NOW, Input::received(packet.channel, &packet.bytes))
            .refused
            .expect("refused");
        assert!(
            matches!(
                refused.source,
                RefusedBy::Formation(FormationRefused::OtherFormation { ours, theirs })
                    if Some(ours) == apart.formation() && Some(theirs) == a.formation()
            ),
            "{refused}"
        );
    }
    assert_eq!(
        apart.formation_refusals().other_formation,
        feed.packets.len() as u64
    );
    assert_eq!(member_list(&apart), before, "only itself");
    assert_eq!(apart.num_members(), 0, "foca never saw them");
}

/// A payload from a build before the envelope is refused as such.
#[test]
fn a_payload_without_the_envelope_is_refused_as_an_older_builds() {
    let mut a = formed(1);
    let header = Header {
        src: NodeId::new("10.0.0.2", 9, 9, 9),
        src_incarnation: 0,
        dst: a.identity().clone(),
        message: Message::Ping(1),
    };
    let mut older = Vec::new();
    ClusterCodec
        .encode_header(&header, &mut older)
        .expect("encodes");
    older.extend_from_slice(&[0, 0]);
    let refused = a
        .handle(NOW, Input::Packet(&older))
        .refused
        .expect("refused");
    assert!(matches!(
        refused.source,
        RefusedBy::Formation(FormationRefused::Envelope(crate::EnvelopeError::Missing))
    ));
    assert_eq!(a.formation_refusals().bad_envelope, 1);
}

/// The first seed heard from a cluster (a ping of one of its members,
/// with no record in it) before its `seed_node_timeout`: it adopts that
/// formation and, the timeout passed, keeps asking that cluster for its
/// table rather than forming a second cluster beside it.
#[test]
fn a_first_seed_that_heard_of_a_cluster_does_not_form_alone() {
    let a = formed(1);
    let mut s = core(3);
    let seeds = vec![s.identity().addr(), a.identity().addr()];
    let start = s.handle(NOW, Input::JoinSeedNodes(seeds));
    let header = Header {
        src: a.identity().clone(),
        src_incarnation: 0,
        dst: s.identity().clone(),
        message: Message::Ping(1),
    };
    let mut ping = Vec::new();
    ClusterCodec
        .encode_header(&header, &mut ping)
        .expect("encodes");
    ping.extend_from_slice(&[0, 0]);
    let pinged = s.handle(NOW, Input::Packet(&seal(a.formation(), &ping)));
    assert!(pinged.refused.is_none(), "{:?}", pinged.refused);
    assert_eq!(s.formation(), a.formation());
    let mut timers = start.timers;
    let mut digests_to_a = 0;
    let end = NOW + 3 * MembershipConfig::default().seed_node_timeout;
    while let Some(i) = timers.iter().position(|t| t.timer == ClusterTimer::Tick) {
        let tick = timers.remove(i);
        if tick.at > end {
            break;
        }
        let mut out = s.handle(tick.at, Input::Timer(ClusterTimer::Tick));
        digests_to_a += out
            .packets
            .iter()
            .filter(|p| p.channel == Channel::SyncDigest && p.to.addr() == a.identity().addr())
            .count();
        timers.append(&mut out.timers);
    }
    assert_eq!(s.state().self_member, None, "it formed alone");
    assert_eq!(s.formation(), a.formation());
    assert!(digests_to_a > 0, "it asks the cluster it heard of");
    assert!(s
        .state()
        .members
        .iter()
        .all(|m| m.status != MemberStatus::Up));
}

/// Bytes that are no packet, behind an envelope naming some formation,
/// do not tie a joiner to it: it adopts the formation of the cluster that
/// then answers.
#[test]
fn garbage_behind_an_envelope_does_not_tie_a_joiner_to_its_formation() {
    let mut a = formed(1);
    let mut b = core(2);
    let announce = b.handle(NOW, Input::Join(a.identity().clone()));
    let bogus = Formation::from_wire(0xbad).expect("not 0");
    for channel in [Channel::Swim, Channel::SyncDigest, Channel::SyncData] {
        let garbage = seal(Some(bogus), &[0xa5; 40]);
        let refused = b.handle(NOW, Input::received(channel, &garbage)).refused;
        assert!(refused.is_some(), "{channel:?}");
        assert_eq!(b.formation(), None, "{channel:?}");
    }
    let feed = deliver(&announce, &mut a);
    deliver(&feed, &mut b);
    assert_eq!(b.formation(), a.formation());
}
