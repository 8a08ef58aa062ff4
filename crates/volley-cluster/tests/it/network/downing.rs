//! The split-brain resolver on the network: a member that goes silent is
//! downed by the leader of the others after `stable_after`, removed, and
//! its watches end once; a node on the losing side downs itself.

use std::time::Duration;

use volley::ActorRef;
use volley_cluster::MemberStatus;
use volley_testkit::remote::Node;
use volley_testkit::{actor_fn, await_cond_within, TestProbe};

use super::{deadline, expect_removed, formed, nodes};

/// Watches the actor `name` on `on` from `from`, once the watch is in
/// place there.
fn watch_remote(from: &Node, on: &Node, name: &str) -> (TestProbe<u32>, ActorRef<u32>) {
    on.system
        .spawn(name, actor_fn(|_ctx, _n: u32| Ok(())))
        .expect("spawned");
    let target: ActorRef<u32> = from.remote_ref(on, name);
    let watcher = TestProbe::<u32>::new(&from.system);
    watcher.watch(&target);
    await_cond_within(deadline(), "the watch is in place", || {
        on.remoting.incoming_watches(from.remoting.address()) == 1
    });
    (watcher, target)
}

/// The third of three nodes goes silent (its remoting stops without a
/// goodbye, as a crash): the leader of the two others downs it after
/// `stable_after`, both see it Removed from Down, and a watch of an actor
/// there ends with exactly one `Terminated`. No `Cluster::down` is called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_member_is_downed_by_the_resolver_and_its_watches_end_once() {
    let mut nodes = nodes();
    let (members, clusters, probes) = formed(&mut nodes, 3).await;
    let (watcher, target) = watch_remote(&members[0], &members[2], "target");
    let gone = clusters[2].self_member().clone();

    members[2].remoting.shutdown();
    for probe in &probes[..2] {
        expect_removed(probe, &gone, MemberStatus::Down);
    }
    watcher.expect_terminated_within(deadline(), &target);
    for cluster in &clusters[..2] {
        let state = cluster.state();
        assert_eq!(state.members.len(), 2, "{state:?}");
        assert!(state.members.iter().all(|m| m.status == MemberStatus::Up));
    }
    watcher.expect_no_msg(Duration::from_millis(500));
    nodes.stop_all().await;
}
