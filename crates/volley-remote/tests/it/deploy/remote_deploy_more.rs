//! `classic.ActorsLeakSpec`, as far as volley lets it be seen
//! (`Remoting::association_state`, `Remoting::is_reachable`): peers that
//! talk to a node, are watched by it, and leave (clean shutdown), on
//! fresh ports or restarted on one port, leave no association and no
//! failure detector behind once nothing refers to them. The rest of the
//! spec is listed, with why it is skipped, in `pekko_remote_deploy.rs`.

use crate::common;

use common::{
    add, await_incoming_watches, eventually, free_port, node, on_port, remote_ref,
    spawn_calculator, Node, T,
};
use std::time::Duration;

use volley::{Actor, Context, HandleResult, Props, Terminated};
use volley_remote::{AssociationState, RemoteSettings};

/// Quick detector, and associations stopped after 300 ms of idleness.
fn idling(port: u16) -> RemoteSettings {
    RemoteSettings {
        stop_idle_outbound_after: Duration::from_millis(300),
        ..on_port(port)
    }
}

/// Watches the ref it gets, and reports the `Terminated`.
struct Watch(tokio::sync::mpsc::UnboundedSender<()>);

impl Actor for Watch {
    type Msg = volley::AnyRef;
    fn handle(&mut self, ctx: &mut Context<Self>, target: volley::AnyRef) -> HandleResult {
        ctx.watch(&target);
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: Terminated) -> HandleResult {
        let _ = self.0.send(());
        Ok(())
    }
}

/// An association whose node left is `Down`; once nothing has moved on it
/// for `stop_idle_outbound_after` it is stopped like an idle one, and
/// the table lets go of it with its failure detector
/// (docs/reference/remoting.md#idle-associations): a node meeting ever new
/// peers does not fill its 4096
/// associations. It used to be skipped by the idle sweep and kept for ever
/// (`Some(Down)` / `Some(false)`). (One that remembers a quarantined
/// incarnation is kept: documented.)
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_that_talk_are_watched_and_leave_leave_no_association_behind() {
    let a = node("local", idling(0)).await;
    spawn_calculator(&a, "echo");
    let (tx, mut terminated) = tokio::sync::mpsc::unbounded_channel();
    let watcher = a
        .system
        .spawn("watcher", Props::new(move || Watch(tx.clone())))
        .unwrap();
    let same_port = free_port();
    let mut gone = Vec::new();
    // Three peers on fresh ports, then three incarnations on one port.
    for round in 0..6 {
        let port = if round < 3 { 0 } else { same_port };
        let peer = node("remote", idling(port)).await;
        // The peer talks first (an inbound connection, dialed back)...
        assert_eq!(
            add(&remote_ref(&peer, &a, "echo"), round, 1).await,
            round + 1
        );
        // ...then this node watches one of its actors, which stops.
        // A new name each round: each watch ends with its own death.
        let name = format!("stoppable-{round}");
        let stoppable = spawn_calculator(&peer, &name);
        let there = remote_ref(&a, &peer, &name);
        assert_eq!(add(&there, 1, 1).await, 2);
        watcher.tell(there.to_any());
        drop(there);
        // Wait for the watch to be in place: a Terminated needs it.
        await_incoming_watches(&peer, &a, 1);
        peer.system.stop(&stoppable);
        tokio::time::timeout(T, terminated.recv())
            .await
            .expect("the Terminated")
            .unwrap();
        let address = peer.remoting.address().clone();
        assert_eq!(
            a.remoting.association_state(&address),
            Some(AssociationState::Active)
        );
        peer.system.terminate().await;
        gone.push(address);
    }
    eventually("every association to a peer that left removed", || {
        gone.iter().all(|at| {
            a.remoting.association_state(at).is_none() && a.remoting.is_reachable(at).is_none()
        })
    })
    .await;
    // And the node still talks to a newcomer.
    let peer = node("remote", idling(0)).await;
    assert_eq!(add(&remote_ref(&peer, &a, "echo"), 2, 2).await, 4);
    peer.system.terminate().await;
    a.system.terminate().await;
}

/// A watch of a `resolve`d (uid-less) ref that ended with a death notice
/// leaves the path alive: resolved again on a restarted node, the path
/// reaches the new actor there. It used to stay dead for good (the path
/// itself was remembered), so every later ask failed with
/// `RecipientTerminated`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_watched_to_its_end_is_reached_again_on_a_restarted_node() {
    let a = node("local", idling(0)).await;
    let port = free_port();
    let address = watch_to_its_end_then_leave(&a, idling(port)).await;
    let again = node("remote", idling(port)).await;
    spawn_calculator(&again, "stoppable");
    // Until the node that left is let go of (idle, here 300 ms), sends to
    // it fail at once (docs/reference/remoting.md#delivery-of-user-messages); then the path
    // resolved again reaches the new incarnation's actor.
    eventually("the association with the node that left removed", || {
        a.remoting.association_state(&address).is_none()
    })
    .await;
    let fresh = remote_ref(&a, &again, "stoppable");
    assert_eq!(add(&fresh, 2, 2).await, 4);
    again.system.terminate().await;
    a.system.terminate().await;
}

/// The same, when the restarted node speaks first: its handshake makes the
/// new incarnation known, and with it the path lives again, however long
/// this node would keep the old association.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_watched_to_its_end_lives_again_once_the_new_incarnation_speaks() {
    let a = node("local", on_port(0)).await;
    spawn_calculator(&a, "echo");
    let port = free_port();
    watch_to_its_end_then_leave(&a, on_port(port)).await;
    let again = node("remote", on_port(port)).await;
    spawn_calculator(&again, "stoppable");
    assert_eq!(add(&remote_ref(&again, &a, "echo"), 3, 3).await, 6);
    let fresh = remote_ref(&a, &again, "stoppable");
    assert_eq!(add(&fresh, 2, 2).await, 4);
    again.system.terminate().await;
    a.system.terminate().await;
}

/// Starts a node "remote" with `settings`, has `a` watch its actor
/// "stoppable" through a `resolve`d ref (then dropped: a ref holds its
/// association), stops that actor, waits for the `Terminated`, and ends the
/// node; returns its address.
async fn watch_to_its_end_then_leave(
    a: &Node,
    settings: RemoteSettings,
) -> volley_remote::wire::Address {
    let (tx, mut terminated) = tokio::sync::mpsc::unbounded_channel();
    let watcher = a
        .system
        .spawn_anonymous(Props::new(move || Watch(tx.clone())))
        .unwrap();
    let peer = node("remote", settings).await;
    let stoppable = spawn_calculator(&peer, "stoppable");
    let there = remote_ref(a, &peer, "stoppable");
    assert_eq!(add(&there, 1, 1).await, 2);
    watcher.tell(there.to_any());
    drop(there);
    // Wait for the watch to be in place: a Terminated needs it.
    await_incoming_watches(&peer, a, 1);
    peer.system.stop(&stoppable);
    tokio::time::timeout(T, terminated.recv())
        .await
        .expect("the Terminated")
        .unwrap();
    let address = peer.remoting.address().clone();
    peer.system.terminate().await;
    address
}
