//! The verdict routing alone, against a fake node (`transport/fake.rs`):
//! a member's verdict is reported to the authority and changes nothing in
//! its association; a non-member's quarantines it, as without an
//! authority.

use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::transport::events::RemotingEvent;
use crate::transport::fake::{Asked, FakeNode, RecordingAuthority};
use crate::transport::incarnation::Incarnation;
use crate::transport::node::NodeContext;
use crate::transport::outbound::association::system_buffers::{Pending, SystemKind};
use crate::transport::outbound::association::{Origin, Refusal};
use crate::transport::outbound::OutboundContext;
use crate::transport::settings::RemoteSettings;
use crate::wire::Lane;

/// The fake node's members; any other uid is not one.
const MEMBER: u64 = 7;
const OTHER: u64 = 9;

fn peer() -> Address {
    Address::new("peer", "127.0.0.1", 2553).unwrap()
}

struct Setup {
    _rt: tokio::runtime::Runtime,
    fake: Arc<FakeNode>,
    authority: Arc<RecordingAuthority>,
    association: Arc<Association>,
}

/// A fake node with `settings` and an authority whose only member is
/// `MEMBER`, associated with incarnation `uid` of the peer.
fn node_with(settings: RemoteSettings, uid: u64) -> Setup {
    with_members(settings, &[MEMBER], uid)
}

/// [`node_with`], with the authority's `members`.
fn with_members(settings: RemoteSettings, members: &[u64], uid: u64) -> Setup {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let authority = RecordingAuthority::of(members);
    let fake = {
        let _guard = rt.enter();
        Arc::new(FakeNode::with_settings(settings).with_authority(authority.clone()))
    };
    let association = fake.associate(&peer(), Origin::Vouched).unwrap();
    fake.handshake_seen(&association, Incarnation::new(uid, None), Lane::Control)
        .unwrap();
    fake.take_asked();
    Setup {
        _rt: rt,
        fake,
        authority,
        association,
    }
}

fn node(uid: u64) -> Setup {
    node_with(RemoteSettings::default(), uid)
}

fn quarantined(asked: &[Asked], uid: u64) -> bool {
    asked.iter().any(
        |a| matches!(a, Asked::Published(RemotingEvent::Quarantined { uid: u, .. }) if *u == uid),
    )
}

/// The member's association is untouched and the authority told once.
fn assert_reported(s: &Setup, report: MemberReport) {
    assert_eq!(s.authority.take_reports(), vec![(peer(), MEMBER, report)]);
    assert!(!s.association.is_down(), "a member stays associated");
    assert_eq!(s.fake.take_asked(), vec![], "nothing else asked");
}

/// The non-member's incarnation is quarantined, the authority not told.
fn assert_quarantined(s: &Setup) {
    assert!(s.association.is_down());
    assert!(quarantined(&s.fake.take_asked(), OTHER));
    assert_eq!(s.authority.take_reports(), vec![]);
}

#[test]
fn an_unreachable_member_is_reported_and_a_non_member_quarantined() {
    let s = node(MEMBER);
    s.fake.node_unreachable(&peer());
    assert_reported(&s, MemberReport::Unreachable);
    s.fake.node_reachable(&peer());
    assert_reported(&s, MemberReport::Reachable);
    // Each change is reported.
    s.fake.node_unreachable(&peer());
    assert_reported(&s, MemberReport::Unreachable);

    let s = node(OTHER);
    s.fake.node_unreachable(&peer());
    assert_quarantined(&s);
}

/// An actor for the recipient of a pending system message.
struct Idle;

impl volley::Actor for Idle {
    type Msg = ();
    fn handle(&mut self, _ctx: &mut volley::Context<Self>, _msg: ()) -> volley::HandleResult {
        Ok(())
    }
}

/// Queues a system message to the peer, never acknowledged.
fn pending_system_message(s: &Setup) {
    let recipient = {
        let _guard = s._rt.enter();
        s.fake
            .system()
            .spawn_anonymous(volley::Props::new(|| Idle))
            .unwrap()
            .to_any()
    };
    lock(&s.association.control)
        .outbox
        .unacked
        .push_back(Pending {
            seq: 1,
            kind: SystemKind::Watch,
            recipient,
            sender: None,
            payload: Vec::new(),
            queued_at: Instant::now(),
        });
}

#[test]
fn overdue_system_messages_of_a_member_are_reported_once() {
    let s = node(MEMBER);
    pending_system_message(&s);
    let limit = s.fake.settings().give_up_system_message_after;
    let later = Instant::now() + limit * 2;
    s.fake.give_up_overdue_system_messages(later);
    assert_reported(&s, MemberReport::SystemMessagesOverdue { limit });
    // The monitor's next ticks: told already.
    s.fake.give_up_overdue_system_messages(later);
    assert_eq!(s.authority.take_reports(), vec![]);
    assert_eq!(
        lock(&s.association.control).outbox.unacked.len(),
        1,
        "kept, within system_message_buffer_size"
    );

    let s = node(OTHER);
    pending_system_message(&s);
    s.fake.give_up_overdue_system_messages(later);
    assert_quarantined(&s);
}

/// Control-lane settings under which a few frames overflow it.
fn small_control_lane() -> RemoteSettings {
    let mut settings = RemoteSettings::default();
    settings.limits.max_control_queue_bytes = 16;
    settings
}

/// Fills the control lane past its bound (nothing writes it in a fake).
fn overflow_control_lane(s: &Setup) {
    let lane = s.association.lane(Lane::Control);
    let refused = (0..64).any(|_| {
        lane.send_pdu(&*s.fake, &crate::wire::Pdu::Heartbeat)
            .is_err()
    });
    assert!(refused, "the lane refuses past its bound");
}

#[test]
fn a_members_control_lane_overflow_is_reported_once_and_the_lane_keeps_refusing() {
    let s = node_with(small_control_lane(), MEMBER);
    overflow_control_lane(&s);
    s.fake.check_control_queue(&s.association);
    assert_reported(&s, MemberReport::ControlQueueOverflow { limit_bytes: 16 });
    overflow_control_lane(&s);
    s.fake.check_control_queue(&s.association);
    assert_eq!(s.authority.take_reports(), vec![], "told already");
    let lane = s.association.lane(Lane::Control);
    assert!(lane.refused_frames() >= 2, "each refusal counted");

    let s = node_with(small_control_lane(), OTHER);
    overflow_control_lane(&s);
    s.fake.check_control_queue(&s.association);
    assert_quarantined(&s);
}

#[test]
fn a_member_that_quarantined_this_node_is_reported_not_obeyed() {
    let s = node(MEMBER);
    s.fake
        .peer_left(&s.association, MEMBER, DisassociationReason::Quarantined);
    assert_reported(&s, MemberReport::QuarantinedThisNode);
    // Its handshake refusals, at each reconnect: told already.
    s.fake
        .refused_by_peer(&s.association, DisassociationReason::Quarantined);
    assert_eq!(s.authority.take_reports(), vec![]);
    assert!(!s.association.is_down());

    let s = node(OTHER);
    s.fake
        .peer_left(&s.association, OTHER, DisassociationReason::Quarantined);
    assert_quarantined(&s);
}

#[test]
fn a_new_incarnation_of_a_member_may_be_reported_again() {
    // A restart, which the authority counts as the same member.
    let s = with_members(RemoteSettings::default(), &[MEMBER, MEMBER + 1], MEMBER);
    for uid in [MEMBER, MEMBER + 1] {
        s.fake
            .handshake_seen(&s.association, Incarnation::new(uid, None), Lane::Control)
            .unwrap();
        s.fake
            .peer_left(&s.association, uid, DisassociationReason::Quarantined);
    }
    let told: Vec<u64> = s.authority.take_reports().iter().map(|r| r.1).collect();
    assert_eq!(told, vec![MEMBER, MEMBER + 1]);
}

#[test]
fn a_member_removed_as_down_is_terminated_and_quarantined_at_once() {
    let s = node(MEMBER);
    s.fake.member_removed(s.association.clone(), MEMBER, true);
    assert!(s.association.is_down());
    let asked = s.fake.take_asked();
    assert_eq!(asked[0], Asked::EndInbound(peer(), MEMBER));
    assert!(quarantined(&asked, MEMBER));
    assert_eq!(
        asked
            .iter()
            .filter(|a| **a == Asked::EndWatches(peer()))
            .count(),
        1,
        "{asked:?}"
    );
    assert_eq!(
        s.fake.handshake_seen(
            &s.association,
            Incarnation::new(MEMBER, None),
            Lane::Control
        ),
        Err(Refusal::Quarantined(MEMBER))
    );
}

#[test]
fn a_member_that_left_has_its_watches_ended_then_is_quarantined_after_the_delay() {
    let settings = RemoteSettings {
        quarantine_removed_node_after: Duration::ZERO,
        ..RemoteSettings::default()
    };
    let s = node_with(settings, MEMBER);
    s.fake.member_removed(s.association.clone(), MEMBER, false);
    let asked = s.fake.take_asked();
    // The watches end at once, before the quarantine.
    assert_eq!(asked[0], Asked::EndWatches(peer()));
    assert_eq!(
        asked[1],
        Asked::Published(RemotingEvent::AddressTerminated {
            remote: peer(),
            uid: Some(MEMBER),
            reason: DisassociationReason::Shutdown,
        })
    );
    assert!(quarantined(&asked, MEMBER));
    assert!(s.association.is_down());
}

#[test]
fn a_removed_incarnation_already_replaced_is_only_quarantined() {
    let s = node(MEMBER);
    s.fake
        .handshake_seen(&s.association, Incarnation::new(OTHER, None), Lane::Control)
        .unwrap();
    s.fake.take_asked();
    s.fake.member_removed(s.association.clone(), MEMBER, true);
    let asked = s.fake.take_asked();
    assert!(!s.association.is_down(), "the new incarnation stays up");
    assert!(!asked.contains(&Asked::EndWatches(peer())), "{asked:?}");
    assert_eq!(lock(&s.association.control).uid, Some(OTHER));
    assert!(lock(&s.association.control).quarantined.contains(&MEMBER));
}

#[test]
fn a_new_incarnation_of_a_member_quarantines_the_old_one() {
    let s = node(MEMBER);
    s.fake
        .handshake_seen(&s.association, Incarnation::new(OTHER, None), Lane::Control)
        .unwrap();
    assert!(quarantined(&s.fake.take_asked(), MEMBER));
    assert_eq!(
        s.fake.handshake_seen(
            &s.association,
            Incarnation::new(MEMBER, None),
            Lane::Ordinary
        ),
        Err(Refusal::Quarantined(MEMBER))
    );
    // A non-member's old incarnation is gone, as without an authority.
    s.fake
        .handshake_seen(
            &s.association,
            Incarnation::new(OTHER + 1, None),
            Lane::Control,
        )
        .unwrap();
    assert!(!quarantined(&s.fake.take_asked(), OTHER));
    assert_eq!(
        s.fake.handshake_seen(
            &s.association,
            Incarnation::new(OTHER, None),
            Lane::Ordinary
        ),
        Err(Refusal::Gone(OTHER))
    );
}

#[test]
fn the_authority_is_set_once() {
    let membership = Membership::default();
    membership.set(RecordingAuthority::of(&[])).unwrap();
    assert_eq!(
        membership.set(RecordingAuthority::of(&[])),
        Err(AuthorityAlreadySet)
    );
}
