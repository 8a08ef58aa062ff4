//! Cluster packets that must be refused (design §8 step 9): malformed on
//! each channel, oversized, and a member's address claimed by another
//! node. Each is refused with a log line and counted
//! (`Cluster::refused_inputs`); the cluster carries on.

use std::sync::Arc;
use std::time::Duration;

use volley_cluster::{Cluster, ClusterCore, Config, Input, NodeId};
use volley_remote::transport::ClusterInbound;
use volley_remote::wire::{Address, ClusterChannel};
use volley_testkit::actor_fn;
use volley_testkit::await_cond_within;
use volley_testkit::remote::{Node, Nodes};

use super::{all_up, deadline, formed, nodes, start_nodes};
use crate::log_capture;

/// A hook that makes a plain node able to send cluster frames of the
/// cluster `test`; what it receives is dropped.
struct Sender;

impl ClusterInbound for Sender {
    fn cluster_name(&self) -> &str {
        "test"
    }

    fn receive(&self, _: &Address, _: u64, _: ClusterChannel, _: &[u8]) {}
}

/// Two members, and a node outside the cluster that sends cluster frames
/// to the first, which dials it back (as it would a node that joins), so
/// its frames reach the cluster rather than being refused by the
/// transport.
struct Scene {
    nodes: Nodes,
    members: Vec<Node>,
    clusters: Vec<Cluster>,
    stranger: Node,
}

async fn scene() -> Scene {
    log_capture::install_at(tracing::Level::INFO);
    let mut nodes = nodes();
    let (members, clusters, _probes) = formed(&mut nodes, 2).await;
    let stranger = start_nodes(&mut nodes, 1).await.remove(0);
    stranger
        .remoting
        .install_cluster_hook(Arc::new(Sender))
        .expect("no hook yet");
    stranger
        .system
        .spawn("target", actor_fn(|_ctx, _n: u32| Ok(())))
        .expect("spawned");
    members[0].remote_ref::<u32>(&stranger, "target").tell(1);
    Scene {
        nodes,
        members,
        clusters,
        stranger,
    }
}

impl Scene {
    /// Sends `payload` from the stranger to the first member until its
    /// cluster has refused one more input than before (the first sends
    /// may go before the association is up).
    fn refused_once_more(&self, channel: ClusterChannel, payload: &[u8]) {
        self.refused_once_more_by(0, channel, payload);
    }

    /// [`Self::refused_once_more`], by member `at` (which must have dialed
    /// the stranger).
    fn refused_once_more_by(&self, at: usize, channel: ClusterChannel, payload: &[u8]) {
        let (to, cluster) = (&self.members[at], &self.clusters[at]);
        let before = cluster.refused_inputs();
        let uid = to.remoting.uid();
        await_cond_within(deadline(), &format!("a refused {channel:?} packet"), || {
            let _sent =
                self.stranger
                    .remoting
                    .send_cluster(to.remoting.address(), uid, channel, payload);
            cluster.refused_inputs() > before
        });
    }

    /// The members still see each other Up; nobody else is a member.
    async fn whole(mut self) {
        all_up(&self.clusters);
        self.nodes.stop_all().await;
    }
}

/// A SWIM packet (an announce to `to`) from a node with `identity`.
fn swim_packet(identity: NodeId, to: &Node) -> Vec<u8> {
    let mut core = ClusterCore::new(identity, Config::simple(), 7);
    let via = NodeId::new(
        to.remoting.address().host(),
        to.remoting.address().port(),
        0,
        0,
    );
    let outputs = core.handle(Duration::ZERO, Input::Join(via));
    outputs
        .packets
        .into_iter()
        .next()
        .expect("an announce to send")
        .bytes
}

fn identity_of(node: &Node) -> NodeId {
    let address = node.remoting.address();
    NodeId::new(address.host(), address.port(), node.remoting.uid(), 1)
}

/// Bytes that are no packet of any channel.
const GARBAGE: [u8; 64] = [0xA5; 64];

/// [`GARBAGE`] behind the formation envelope of a sender in no cluster
/// (marker 0, version 1, formation 0): the envelope passes, the body not.
fn enveloped_garbage() -> Vec<u8> {
    let mut bytes = vec![0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0];
    bytes.extend_from_slice(&GARBAGE);
    bytes
}

/// Malformed bytes on each channel are refused, counted and logged, with
/// or without a formation envelope (without one, as a peer of an older
/// build would send, they are counted as a bad envelope too); the members
/// stay Up and the cluster stays whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_packets_on_each_channel_are_refused() {
    let scene = scene().await;
    for channel in [
        ClusterChannel::Swim,
        ClusterChannel::SyncDigest,
        ClusterChannel::SyncData,
    ] {
        scene.refused_once_more(channel, &enveloped_garbage());
        let bad_envelopes = scene.clusters[0].refused_bad_envelope();
        scene.refused_once_more(channel, &GARBAGE);
        await_cond_within(deadline(), "a bad envelope counted", || {
            scene.clusters[0].refused_bad_envelope() > bad_envelopes
        });
    }
    assert_logged("cluster input refused");
    assert_logged("without a readable formation envelope");
    scene.whole().await;
}

/// A SWIM packet far over `max_packet_size` (a real one, padded) is
/// refused and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_swim_packet_is_refused() {
    let scene = scene().await;
    let mut packet = swim_packet(identity_of(&scene.stranger), &scene.members[0]);
    packet.resize(32 * 1024, 0);
    scene.refused_once_more(ClusterChannel::Swim, &packet);
    assert_logged("cluster input refused");
    scene.whole().await;
}

/// A node that sends a SWIM packet naming another member as its sender is
/// refused: the member it claims to be stays as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_claiming_another_members_address_is_refused() {
    let scene = scene().await;
    let claimed = swim_packet(identity_of(&scene.members[1]), &scene.members[0]);
    scene.refused_once_more(ClusterChannel::Swim, &claimed);
    assert_logged(&claim_refused(&scene.stranger));
    scene.whole().await;
}

/// A node's refusals are logged within a limit of its own: a flood of bad
/// input refused by one member does not hide the next refusal of another
/// member of the same process (when the limit was the process's, the
/// flood spent the second's lines and the claim below went unlogged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_members_flood_of_refusals_leaves_anothers_refusal_logged() {
    let scene = scene().await;
    // The second member dials the stranger back too: its frames reach it.
    scene.members[1]
        .remote_ref::<u32>(&scene.stranger, "target")
        .tell(1);
    // Four times the lines a node logs a second (5), each refused.
    for _ in 0..20 {
        scene.refused_once_more_by(1, ClusterChannel::Swim, &enveloped_garbage());
    }
    let claimed = swim_packet(identity_of(&scene.members[1]), &scene.members[0]);
    scene.refused_once_more(ClusterChannel::Swim, &claimed);
    assert_logged(&claim_refused(&scene.stranger));
    scene.whole().await;
}

/// The start of the warning about a packet from `stranger` that claims
/// another member as its sender.
fn claim_refused(stranger: &Node) -> String {
    format!(
        "cluster input refused: a cluster frame whose sender is not its connection's node from={} ",
        stranger.remoting.address()
    )
}

/// Panics unless some log line at INFO or above contains `needle`.
pub fn assert_logged(needle: &str) {
    let lines = log_capture::lines_with(needle);
    assert!(!lines.is_empty(), "no log line contains {needle:?}");
}
