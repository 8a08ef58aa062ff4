//! `remote::Nodes`: nodes on loopback that talk, on the kind under test.
#![cfg(feature = "remote")]

use volley::{ActorRef, DispatcherKind};
use volley_remote::Registry;
use volley_testkit::remote::Nodes;
use volley_testkit::{actor_fn, DispatcherUnderTest};

fn registry() -> Registry {
    let mut registry = Registry::default();
    registry.register::<(u32, ActorRef<u32>)>(1).unwrap();
    registry.register::<u32>(2).unwrap();
    registry
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_talk_both_ways_on_the_kind_under_test() {
    let mut nodes = Nodes::new(registry);
    let a = nodes.start("alpha").await;
    let b = nodes.start("beta").await;
    assert_ne!(a.remoting.address(), b.remoting.address());
    let kind: DispatcherKind = DispatcherUnderTest::get();
    for node in [&a, &b] {
        assert_eq!(node.system.settings().default_dispatcher.kind, kind);
        let double = |_ctx: &mut _, (n, to): (u32, ActorRef<u32>)| {
            to.tell(2 * n);
            Ok(())
        };
        node.system.spawn("double", actor_fn(double)).unwrap();
    }
    let (probe_a, reply_a) = a.probe::<u32>();
    a.remote_ref::<(u32, ActorRef<u32>)>(&b, "double")
        .tell((3, reply_a));
    probe_a.expect_msg(6);
    let (probe_b, reply_b) = b.probe::<u32>();
    b.remote_ref::<(u32, ActorRef<u32>)>(&a, "double")
        .tell((5, reply_b));
    probe_b.expect_msg(10);
    nodes.stop_all().await;
    assert!(a.system.is_terminated() && b.system.is_terminated());
}
