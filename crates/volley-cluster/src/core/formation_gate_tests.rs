use super::*;
use crate::codec::Writer;
use crate::formation::seal;
use crate::node_id::NodeId;

fn formation(value: u64) -> Formation {
    Formation::from_wire(value).expect("not 0")
}

/// A body that starts, as every channel's does, with its sender's id.
fn body_from(port: u16) -> Vec<u8> {
    let mut body = Vec::new();
    Writer(&mut body).node_id(&NodeId::new("10.0.0.1", port, u64::from(port), 1));
    body.push(0xee);
    body
}

#[test]
fn a_node_without_a_formation_adopts_the_first_it_hears_and_refuses_others() {
    let mut gate = FormationGate::default();
    let first = seal(Some(formation(1)), &body_from(1));
    let admitted = gate.admit(Channel::Swim, &first).expect("let through");
    assert_eq!(admitted.adopted, Some(formation(1)));
    assert_eq!(admitted.body, &body_from(1)[..]);
    assert_eq!(gate.ours(), Some(formation(1)));
    let again = gate
        .admit(Channel::SyncData, &first)
        .expect("its own formation");
    assert_eq!(again.adopted, None);
    let other = seal(Some(formation(2)), &body_from(2));
    assert_eq!(
        gate.admit(Channel::SyncDigest, &other).err(),
        Some(FormationRefused::OtherFormation {
            ours: formation(1),
            theirs: formation(2)
        })
    );
    assert_eq!(
        gate.refusals(),
        FormationRefusals {
            other_formation: 1,
            bad_envelope: 0
        }
    );
}

#[test]
fn a_sender_in_no_cluster_is_let_through_and_gives_no_formation() {
    let mut gate = FormationGate::default();
    let joiner = seal(None, &body_from(3));
    assert_eq!(
        gate.admit(Channel::Swim, &joiner).expect("through").adopted,
        None
    );
    assert_eq!(gate.ours(), None);
    gate.set(formation(5));
    assert!(
        gate.admit(Channel::Swim, &joiner).is_ok(),
        "a joiner is heard"
    );
    assert_eq!(gate.refusals(), FormationRefusals::default());
}

#[test]
fn a_payload_without_the_envelope_is_refused_and_counted() {
    let mut gate = FormationGate::default();
    gate.set(formation(5));
    assert_eq!(
        gate.admit(Channel::Swim, &body_from(4)).err(),
        Some(FormationRefused::Envelope(EnvelopeError::Missing))
    );
    assert_eq!(
        gate.admit(Channel::Swim, &[0, 9]).err(),
        Some(FormationRefused::Envelope(EnvelopeError::UnknownVersion(9)))
    );
    assert_eq!(gate.refusals().bad_envelope, 2);
    assert_eq!(gate.ours(), Some(formation(5)), "nothing adopted");
}

#[test]
fn each_peer_is_logged_once_and_the_logged_set_is_bounded() {
    let mut gate = FormationGate::default();
    gate.set(formation(1));
    let from_seven = seal(Some(formation(2)), &body_from(7));
    for _ in 0..3 {
        let _refused = gate.admit(Channel::Swim, &from_seven);
    }
    assert_eq!(gate.logged.len(), 1);
    for port in 0..(MAX_PEERS_LOGGED as u16 + 10) {
        let _refused = gate.admit(Channel::Swim, &seal(Some(formation(2)), &body_from(port)));
    }
    assert_eq!(gate.logged.len(), MAX_PEERS_LOGGED);
    assert_eq!(
        gate.refusals().other_formation,
        3 + MAX_PEERS_LOGGED as u64 + 10
    );
}
