//! Letting go of the refs of a gone incarnation, on one lane.

use std::sync::Arc;

use volley::remote::RemoteRef;
use volley::{ActorSystem, AnyRef, Settings};

use super::*;
use crate::transport::outbound::writer::Connection;
use crate::transport::refs::tables::tests::Nowhere;
use crate::transport::BatchingSettings;
use crate::wire::{Address, Encoder, Lane, MessageHeader, RefId, HEARTBEAT_FRAME};

fn held(lane: &OutboundLane) -> usize {
    lane.state.lock().exports.borrow().held()
}

fn export(lane: &OutboundLane, actor: &AnyRef) -> u32 {
    lane.state.lock().exports.get_mut().export(actor)
}

#[test]
fn refs_of_a_gone_incarnation_are_let_go_of_at_once_unless_a_queued_message_may_name_them() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let system = ActorSystem::with_settings("gone-refs", Settings::default()).unwrap();
    let remote = |path: &str, uid| {
        let path = volley::ActorPath::parse(path).unwrap();
        RemoteRef::new(path, uid, system.clone(), Arc::new(Nowhere)).to_any()
    };
    let peer = Address::new("peer", "127.0.0.1", 2552).unwrap();
    let lane = OutboundLane::<Connection>::new(
        Lane::Control,
        peer,
        64 * 1024,
        &BatchingSettings::default(),
        None,
    );
    let gone = GoneIncarnations {
        system: "peer",
        authority: "127.0.0.1:2552".to_string(),
        live: None,
        // Routes of these refs are no transport's: bound to no incarnation.
        bound_incarnation: |_| 0,
    };
    let old = remote("volley://peer@127.0.0.1:2552/user/a", 7);
    let any_incarnation = remote("volley://peer@127.0.0.1:2552/user/b", 0);
    let elsewhere = remote("volley://other@127.0.0.1:2553/user/a", 7);
    for actor in [&old, &any_incarnation, &elsewhere] {
        export(&lane, actor);
    }
    lane.state.lock().exports.get_mut().take_pending();
    // Heartbeats wait while the node is away; they name no ref.
    lane.state.lock().buf.extend_from_slice(&HEARTBEAT_FRAME);
    let generation = lane.state.lock().generation;
    assert_eq!(lane.forget_refs_of(&gone), 1);
    assert_eq!(
        held(&lane),
        2,
        "let go of at once: no queued frame names it"
    );
    assert_ne!(
        lane.state.lock().generation,
        generation,
        "cached ids are stale"
    );
    assert_eq!(lane.forget_refs_of(&gone), 0, "nothing more to drop");
    // A message queued may name the id: it keeps its meaning (and is
    // declared on a new connection) until a writer has taken the queue.
    let older = remote("volley://peer@127.0.0.1:2552/user/c", 8);
    let id = export(&lane, &older);
    let header = MessageHeader {
        recipient: RefId::new(id).unwrap(),
        sender: None,
        serializer: crate::serialization::SerializerId::BINCODE,
        type_id: 1,
    };
    let mut st = lane.state.lock();
    Encoder::for_lane(Lane::Control)
        .user_message_with(&mut st.buf, &header, |_| Ok(()))
        .unwrap();
    drop(st);
    assert_eq!(lane.forget_refs_of(&gone), 1);
    assert_eq!(held(&lane), 3);
    lane.state.lock().exports.get_mut().note_load();
    assert_eq!(held(&lane), 2, "let go of once the queue was taken");
    rt.block_on(system.terminate());
}
