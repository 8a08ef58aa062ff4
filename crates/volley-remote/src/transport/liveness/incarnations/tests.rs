//! The incarnation rules alone, against a fake node (`transport/fake.rs`):
//! what each verdict changes in the association, and what it asks of the
//! layers around it, in order.

use std::sync::Arc;

use super::*;
use crate::transport::fake::{Asked, FakeNode};
use crate::transport::outbound::OutboundContext;

fn peer() -> Address {
    Address::new("peer", "127.0.0.1", 2553).unwrap()
}

fn node() -> (tokio::runtime::Runtime, FakeNode, Arc<Association>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = {
        let _guard = rt.enter();
        FakeNode::new()
    };
    let association = fake
        .associate(
            &peer(),
            crate::transport::outbound::association::Origin::Vouched,
        )
        .unwrap();
    (rt, fake, association)
}

#[test]
fn the_first_handshake_on_the_control_lane_announces_the_incarnation_once() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Ordinary)
        .unwrap();
    assert!(
        fake.take_asked().is_empty(),
        "a user lane announces nothing"
    );
    fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Control)
        .unwrap();
    fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Control)
        .unwrap();
    assert_eq!(
        fake.take_asked(),
        vec![Asked::Published(RemotingEvent::Associated {
            remote: peer(),
            uid: 7
        })]
    );
    assert_eq!(lock(&association.control).uid, Some(7));
}

#[test]
fn a_new_incarnation_ends_the_old_one_before_any_event_tells_of_it() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Control)
        .unwrap();
    fake.take_asked();
    fake.handshake_seen(&association, Incarnation::new(8, None), Lane::Control)
        .unwrap();
    assert_eq!(
        fake.take_asked(),
        vec![
            Asked::EndInbound(peer(), 7),
            Asked::Published(RemotingEvent::Disassociated {
                remote: peer(),
                reason: DisassociationReason::Restarted,
            }),
            Asked::EndWatches(peer()),
            Asked::Published(RemotingEvent::AddressTerminated {
                remote: peer(),
                uid: Some(7),
                reason: DisassociationReason::Restarted,
            }),
            Asked::Published(RemotingEvent::Associated {
                remote: peer(),
                uid: 8
            }),
        ]
    );
    assert_eq!(
        fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Control),
        Err(Refusal::Gone(7)),
        "the old incarnation cannot come back"
    );
    assert!(!association.is_down());
}

#[test]
fn a_quarantined_incarnation_is_refused_and_a_new_one_is_welcome() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Control)
        .unwrap();
    fake.take_asked();
    fake.quarantine(&association, "a test");
    assert!(association.is_down());
    let asked = fake.take_asked();
    assert_eq!(asked[0], Asked::EndInbound(peer(), 7));
    assert!(
        asked.contains(&Asked::Published(RemotingEvent::Quarantined {
            remote: peer(),
            uid: 7,
            reason: "a test".to_string(),
        }))
    );
    assert_eq!(
        fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Ordinary),
        Err(Refusal::Quarantined(7))
    );
    fake.handshake_seen(&association, Incarnation::new(9, None), Lane::Control)
        .unwrap();
    assert!(
        !association.is_down(),
        "a new incarnation brings it back up"
    );
}

#[test]
fn a_node_that_said_goodbye_is_gone_once_its_last_connection_ends_and_not_quarantined() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Control)
        .unwrap();
    fake.reader_started(&association, 7);
    fake.reader_started(&association, 7);
    fake.goodbye_heard(&association, 7);
    fake.take_asked();
    fake.reader_ended(&association, 7);
    assert!(!association.is_down(), "one connection is still open");
    fake.reader_ended(&association, 7);
    assert!(association.is_down());
    assert!(fake
        .take_asked()
        .contains(&Asked::Published(RemotingEvent::Disassociated {
            remote: peer(),
            reason: DisassociationReason::Shutdown,
        })));
    assert_eq!(
        fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Control),
        Err(Refusal::Gone(7)),
        "gone, not quarantined"
    );
}

/// An authority that, asked whether an incarnation is a member, first
/// runs `step` (once) and then says no: a verdict waits for that answer
/// with no lock held, so `step` lands where another thread's could.
#[derive(Default)]
struct Meanwhile {
    step: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl crate::transport::liveness::authority::MembershipAuthority for Meanwhile {
    fn is_member(&self, _address: &Address, _uid: u64) -> bool {
        let step = lock(&self.step).take();
        if let Some(step) = step {
            step();
        }
        false
    }
    fn report(&self, _address: &Address, _uid: u64, _report: MemberReport) {}
}

#[test]
fn an_old_incarnations_verdict_spares_a_new_one_that_shook_hands_meanwhile() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let meanwhile = Arc::new(Meanwhile::default());
    let fake = Arc::new({
        let _guard = rt.enter();
        FakeNode::new().with_authority(meanwhile.clone())
    });
    let association = fake
        .associate(
            &peer(),
            crate::transport::outbound::association::Origin::Vouched,
        )
        .unwrap();
    fake.handshake_seen(&association, Incarnation::new(7, None), Lane::Control)
        .unwrap();
    let (node, restarted) = (Arc::downgrade(&fake), association.clone());
    *lock(&meanwhile.step) = Some(Box::new(move || {
        let node = node.upgrade().expect("the test holds the node");
        node.handshake_seen(&restarted, Incarnation::new(8, None), Lane::Control)
            .unwrap();
    }));
    // Incarnation 7 says it quarantined this node; while the verdict is
    // made, incarnation 8 shakes hands.
    fake.peer_left(&association, 7, DisassociationReason::Quarantined);
    let control = lock(&association.control);
    assert_eq!(control.uid, Some(8));
    assert!(
        !association.is_down() && !control.dead.contains(&8),
        "the verdict on incarnation 7 took down incarnation 8"
    );
    assert!(control.dead.contains(&7), "7 was replaced, so gone");
}

/// Incarnation `uid` telling `stamp` in its handshake.
fn stamped(uid: u64, stamp: u64) -> Incarnation {
    Incarnation::new(uid, Some(stamp))
}

fn superseded(association: &Association) -> u64 {
    association.superseded_handshakes.load(Ordering::Relaxed)
}

#[test]
fn an_older_stamp_is_refused_counted_and_changes_nothing() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, stamped(8, 200), Lane::Control)
        .unwrap();
    fake.take_asked();
    for lane in [Lane::Control, Lane::Ordinary] {
        assert_eq!(
            fake.handshake_seen(&association, stamped(7, 100), lane),
            Err(Refusal::Superseded { uid: 7, current: 8 })
        );
    }
    assert_eq!(superseded(&association), 2, "each refused handshake counts");
    assert!(fake.take_asked().is_empty(), "no event, nothing ended");
    let control = lock(&association.control);
    assert_eq!((control.uid, control.stamp), (Some(8), Some(200)));
    assert!(!association.is_down());
    assert!(
        !control.dead.contains(&7),
        "judged again at its next handshake, not remembered as gone"
    );
    assert_eq!(control.superseded_logged, Some(7), "warned of once");
}

#[test]
fn a_tie_of_stamps_is_broken_by_the_uid() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, stamped(8, 200), Lane::Control)
        .unwrap();
    assert_eq!(
        fake.handshake_seen(&association, stamped(7, 200), Lane::Control),
        Err(Refusal::Superseded { uid: 7, current: 8 })
    );
    fake.handshake_seen(&association, stamped(9, 200), Lane::Control)
        .unwrap();
    assert_eq!(lock(&association.control).uid, Some(9));
}

#[test]
fn a_newer_stamp_is_a_restart() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, stamped(7, 100), Lane::Control)
        .unwrap();
    fake.take_asked();
    fake.handshake_seen(&association, stamped(8, 200), Lane::Control)
        .unwrap();
    let asked = fake.take_asked();
    assert_eq!(asked[0], Asked::EndInbound(peer(), 7));
    assert!(
        asked.contains(&Asked::Published(RemotingEvent::Disassociated {
            remote: peer(),
            reason: DisassociationReason::Restarted,
        }))
    );
    let control = lock(&association.control);
    assert_eq!((control.uid, control.stamp), (Some(8), Some(200)));
    assert!(control.dead.contains(&7));
    assert_eq!(superseded(&association), 0);
}

#[test]
fn without_a_stamp_a_new_uid_is_a_restart_as_before() {
    let (_rt, fake, association) = node();
    // The current incarnation told its stamp; the new one does not (a
    // node of handshake version 1): nothing is known of their order.
    fake.handshake_seen(&association, stamped(7, 100), Lane::Control)
        .unwrap();
    fake.handshake_seen(&association, Incarnation::new(8, None), Lane::Control)
        .unwrap();
    // And the other way round.
    fake.handshake_seen(&association, stamped(9, 50), Lane::Control)
        .unwrap();
    let control = lock(&association.control);
    assert_eq!((control.uid, control.stamp), (Some(9), Some(50)));
    assert!(control.dead.contains(&7) && control.dead.contains(&8));
    assert_eq!(superseded(&association), 0);
}

#[test]
fn a_replaced_uid_is_refused_with_or_without_a_stamp() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, stamped(7, 100), Lane::Control)
        .unwrap();
    fake.handshake_seen(&association, stamped(8, 200), Lane::Control)
        .unwrap();
    for late in [Incarnation::new(7, None), stamped(7, 100), stamped(7, 300)] {
        assert_eq!(
            fake.handshake_seen(&association, late, Lane::Ordinary),
            Err(Refusal::Gone(7))
        );
    }
    assert_eq!(superseded(&association), 0, "refused as gone, not by age");
}

#[test]
fn an_older_stamp_is_taken_once_the_current_incarnation_is_gone() {
    // A clock stepped back across a restart makes the new incarnation
    // look older: it waits for the old one to be given up, not for ever.
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, stamped(8, 200), Lane::Control)
        .unwrap();
    assert!(fake
        .handshake_seen(&association, stamped(7, 100), Lane::Control)
        .is_err());
    fake.quarantine(&association, "its heartbeats stopped");
    fake.handshake_seen(&association, stamped(7, 100), Lane::Control)
        .unwrap();
    assert!(!association.is_down());
    assert_eq!(lock(&association.control).uid, Some(7));
}

#[test]
fn a_stamp_learnt_later_orders_the_current_incarnation() {
    let (_rt, fake, association) = node();
    // First heard of through a recheck or a version-1 handshake...
    fake.handshake_seen(&association, Incarnation::new(8, None), Lane::Control)
        .unwrap();
    // ...then its stamped handshake tells its stamp.
    fake.handshake_seen(&association, stamped(8, 200), Lane::Ordinary)
        .unwrap();
    assert_eq!(
        fake.handshake_seen(&association, stamped(7, 100), Lane::Control),
        Err(Refusal::Superseded { uid: 7, current: 8 })
    );
}

#[test]
fn a_peer_cycling_uids_cannot_grow_the_memory_of_gone_ones() {
    let (_rt, fake, association) = node();
    let many = crate::transport::gone_uids::REMEMBERED_GONE as u64 * 3;
    for uid in 1..=many {
        fake.handshake_seen(&association, stamped(uid, uid), Lane::Ordinary)
            .unwrap();
    }
    let control = lock(&association.control);
    assert_eq!(
        control.dead.len(),
        crate::transport::gone_uids::REMEMBERED_GONE
    );
    assert!(control.dead.contains(&(many - 1)) && !control.dead.contains(&1));
}
