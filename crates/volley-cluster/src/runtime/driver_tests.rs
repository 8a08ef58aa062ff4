use std::num::NonZeroU32;
use std::time::Duration;

use volley_remote::wire::Address;

use super::claims_its_connection;
use crate::core::{ClusterCore, Input};
use crate::formation;
use crate::member::wire::{self, DataPage, Digest, Seen};
use crate::node_id::NodeId;
use crate::outbox::Channel;
use crate::runtime::inbound::Received;

/// A SWIM packet (an announce) from `127.0.0.1:2552`, incarnation 7.
fn announce() -> Vec<u8> {
    let config = foca::Config::new_lan(NonZeroU32::new(3).expect("non-zero"));
    let mut core = ClusterCore::new(NodeId::new("127.0.0.1", 2552, 7, 1), config, 1);
    let target = NodeId::new("127.0.0.1", 2553, 0, 0);
    let outputs = core.handle(Duration::ZERO, Input::Join(target));
    outputs
        .packets
        .into_iter()
        .next()
        .expect("an announce")
        .bytes
}

fn frame(port: u16, uid: u64, payload: Vec<u8>) -> Received {
    on_channel(Channel::Swim, port, uid, payload)
}

fn on_channel(channel: Channel, port: u16, uid: u64, payload: Vec<u8>) -> Received {
    Received {
        from: Address::new("sys", "127.0.0.1", port).expect("an address"),
        uid,
        channel,
        payload,
    }
}

/// An anti-entropy digest and a data page from `127.0.0.1:2552`,
/// incarnation 7, in their formation envelope.
fn digest_and_page() -> [(Channel, Vec<u8>); 2] {
    let from = NodeId::new("127.0.0.1", 2552, 7, 1);
    let digest = wire::encode_digest(&Digest {
        from: from.clone(),
        seen: Seen {
            version: 1,
            hash: 2,
        },
        seen_hash: 3,
        services_hash: 4,
    });
    let page = wire::encode_page(&DataPage::default(), &from);
    [
        (Channel::SyncDigest, formation::seal(None, &digest)),
        (Channel::SyncData, formation::seal(None, &page)),
    ]
}

#[test]
fn a_swim_packet_must_come_from_the_node_it_names() {
    assert!(claims_its_connection(&frame(2552, 7, announce())));
    assert!(
        !claims_its_connection(&frame(2554, 7, announce())),
        "another address"
    );
    assert!(
        !claims_its_connection(&frame(2552, 8, announce())),
        "another incarnation"
    );
    // What does not decode is the core's to refuse, and count.
    assert!(claims_its_connection(&frame(2552, 7, vec![1, 2, 3])));
}

#[test]
fn an_anti_entropy_message_must_come_from_the_node_it_names() {
    for (channel, payload) in digest_and_page() {
        let from = |port, uid| on_channel(channel, port, uid, payload.clone());
        assert!(claims_its_connection(&from(2552, 7)), "{channel:?}");
        assert!(
            !claims_its_connection(&from(2554, 7)),
            "{channel:?} from another address"
        );
        assert!(
            !claims_its_connection(&from(2552, 8)),
            "{channel:?} from another incarnation"
        );
    }
    let unreadable = on_channel(Channel::SyncData, 2552, 7, formation::seal(None, &[1]));
    assert!(claims_its_connection(&unreadable));
}
