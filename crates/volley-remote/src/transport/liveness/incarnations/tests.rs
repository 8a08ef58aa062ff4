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
    fake.handshake_seen(&association, 7, Lane::Ordinary)
        .unwrap();
    assert!(
        fake.take_asked().is_empty(),
        "a user lane announces nothing"
    );
    fake.handshake_seen(&association, 7, Lane::Control).unwrap();
    fake.handshake_seen(&association, 7, Lane::Control).unwrap();
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
    fake.handshake_seen(&association, 7, Lane::Control).unwrap();
    fake.take_asked();
    fake.handshake_seen(&association, 8, Lane::Control).unwrap();
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
        fake.handshake_seen(&association, 7, Lane::Control),
        Err(Refusal::Gone(7)),
        "the old incarnation cannot come back"
    );
    assert!(!association.is_down());
}

#[test]
fn a_quarantined_incarnation_is_refused_and_a_new_one_is_welcome() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, 7, Lane::Control).unwrap();
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
        fake.handshake_seen(&association, 7, Lane::Ordinary),
        Err(Refusal::Quarantined(7))
    );
    fake.handshake_seen(&association, 9, Lane::Control).unwrap();
    assert!(
        !association.is_down(),
        "a new incarnation brings it back up"
    );
}

#[test]
fn a_node_that_said_goodbye_is_gone_once_its_last_connection_ends_and_not_quarantined() {
    let (_rt, fake, association) = node();
    fake.handshake_seen(&association, 7, Lane::Control).unwrap();
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
        fake.handshake_seen(&association, 7, Lane::Control),
        Err(Refusal::Gone(7)),
        "gone, not quarantined"
    );
}
