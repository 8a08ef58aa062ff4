//! The cluster receptionist on the network: a service registered on one
//! member is listed on every other as a remote ref, and leaves every
//! listing when it is deregistered, when its actor stops and when its
//! member leaves the cluster; while its member is unreachable it is in
//! `Listing::all_services` only.

use std::collections::HashSet;
use std::time::Duration;

use volley::{ActorRef, ActorSystem, Listing, RoundRobin, Router, ServiceKey};
use volley_cluster::Cluster;
use volley_testkit::remote::Node;
use volley_testkit::{actor_fn, FishingOutcome, TestProbe};

use super::{all_up, deadline, formed, nodes, quick, start_nodes};

fn key() -> ServiceKey<u32> {
    ServiceKey::new("workers")
}

/// A probe subscribed to `key()`'s listings on `system`.
fn subscribed(system: &ActorSystem) -> TestProbe<Listing<u32>> {
    let probe = TestProbe::new(system);
    system
        .receptionist()
        .expect("a receptionist")
        .subscribe(&key(), probe.actor_ref());
    probe
}

/// Waits for a listing of exactly the services whose paths end with
/// `names` (in any order).
fn expect_listing(probe: &TestProbe<Listing<u32>>, names: &[&str]) {
    probe.fish_for_within(deadline(), |listing| {
        let mut listed: Vec<String> = listing
            .services
            .iter()
            .map(|service| service.path().name().to_owned())
            .collect();
        listed.sort();
        let mut wanted: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        wanted.sort();
        if listed == wanted {
            FishingOutcome::Complete
        } else {
            FishingOutcome::Continue
        }
    });
}

fn worker(system: &ActorSystem, name: &str) -> ActorRef<u32> {
    system
        .spawn(name, actor_fn(|_ctx, _n: u32| Ok(())))
        .expect("spawned")
}

/// Registered on A: listed on B and C as a remote ref that reaches the
/// actor; deregistered on A: gone on B and C; registered again and
/// stopped: gone again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_is_listed_on_every_member_until_deregistered_or_stopped() {
    let mut nodes = nodes();
    let (members, _clusters, _probes) = formed(&mut nodes, 3).await;
    let others: Vec<_> = members[1..].iter().map(|n| subscribed(&n.system)).collect();
    for probe in &others {
        expect_listing(probe, &[]);
    }
    let (reached, reached_ref) = members[0].probe::<u32>();
    let forward = reached_ref.clone();
    let service = members[0]
        .system
        .spawn(
            "w",
            actor_fn(move |_ctx, n: u32| {
                forward.tell(n);
                Ok(())
            }),
        )
        .expect("spawned");
    let receptionist = members[0].system.receptionist().expect("a receptionist");
    receptionist.register(&key(), &service);
    for probe in &others {
        expect_listing(probe, &["w"]);
    }
    let listed = members[1]
        .system
        .receptionist()
        .expect("a receptionist")
        .lookup(&key(), deadline())
        .await
        .expect("a listing");
    for remote in &listed.services {
        remote.tell(7);
    }
    reached.expect_msg_within(deadline(), 7);

    receptionist.deregister(&key(), &service);
    for probe in &others {
        expect_listing(probe, &[]);
    }
    let second = worker(&members[0].system, "w2");
    receptionist.register(&key(), &second);
    for probe in &others {
        expect_listing(probe, &["w2"]);
    }
    members[0].system.stop(&second);
    for probe in &others {
        expect_listing(probe, &[]);
    }
    nodes.stop_all().await;
}

/// A member that leaves takes its services out of the others' listings;
/// services of the members that stay are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_leaves_takes_its_services_out_of_every_listing() {
    let mut nodes = nodes();
    let (members, clusters, _probes) = formed(&mut nodes, 3).await;
    let stays = subscribed(&members[0].system);
    for (node, name) in members.iter().zip(["a", "b", "c"]).skip(1) {
        let service = worker(&node.system, name);
        node.system
            .receptionist()
            .expect("a receptionist")
            .register(&key(), &service);
    }
    expect_listing(&stays, &["b", "c"]);
    clusters[2].leave().expect("the cluster runs");
    expect_listing(&stays, &["b"]);
    nodes.stop_all().await;
}

/// Akka's `ClusterReceptionistSpec` "work with services registered before
/// node joins cluster": a service registered on a node before it starts
/// its cluster is listed on the members once it has joined, and a service
/// of theirs is listed on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_registered_before_its_node_joined_is_listed_once_it_has() {
    let mut nodes = nodes();
    let members = start_nodes(&mut nodes, 2).await;
    let early = worker(&members[1].system, "early");
    let receptionist = members[1].system.receptionist().expect("a receptionist");
    receptionist.register(&key(), &early);
    let first = Cluster::start(
        &members[0].system,
        &members[0].remoting,
        quick("test", &[&members[0]]),
    )
    .expect("a cluster starts");
    all_up(std::slice::from_ref(&first));
    let member_side = subscribed(&members[0].system);
    let theirs = worker(&members[0].system, "theirs");
    members[0]
        .system
        .receptionist()
        .expect("a receptionist")
        .register(&key(), &theirs);
    expect_listing(&member_side, &["theirs"]);
    let joiner_side = subscribed(&members[1].system);
    expect_listing(&joiner_side, &["early"]);

    let joiner = Cluster::start(
        &members[1].system,
        &members[1].remoting,
        quick("test", &[&members[0]]),
    )
    .expect("a cluster starts");
    all_up(&[first, joiner]);
    expect_listing(&member_side, &["early", "theirs"]);
    expect_listing(&joiner_side, &["early", "theirs"]);
    nodes.stop_all().await;
}

/// A key whose protocol is not registered for remoting stays on its node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_whose_protocol_is_not_remotable_stays_local() {
    let mut nodes = nodes();
    let (members, _clusters, _probes) = formed(&mut nodes, 2).await;
    let local_key = ServiceKey::<String>::new("local-only");
    let remote_listings = TestProbe::<Listing<String>>::new(&members[1].system);
    members[1]
        .system
        .receptionist()
        .expect("a receptionist")
        .subscribe(&local_key, remote_listings.actor_ref());
    let service = members[0]
        .system
        .spawn("s", actor_fn(|_ctx, _s: String| Ok(())))
        .expect("spawned");
    members[0]
        .system
        .receptionist()
        .expect("a receptionist")
        .register(&local_key, &service);
    // A remotable registration made after it, as a marker: once it is
    // listed on the other node, the first one would have been too.
    let marker = worker(&members[0].system, "marker");
    members[0]
        .system
        .receptionist()
        .expect("a receptionist")
        .register(&key(), &marker);
    expect_listing(&subscribed(&members[1].system), &["marker"]);
    let listings = remote_listings.receive_while(std::time::Duration::from_millis(200), |_| true);
    assert!(
        listings.iter().all(|listing| listing.services.is_empty()),
        "a non-remotable service was listed on another node"
    );
    nodes.stop_all().await;
}

/// `Router::group_of(key)` on A routes to a routee on every member, round
/// robin; with `prefer_local_routees` it keeps to A's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_router_over_a_key_routes_to_routees_on_every_member() {
    let mut nodes = nodes();
    let (members, _clusters, _probes) = formed(&mut nodes, 3).await;
    let (report, sink) = members[0].probe::<u32>();
    let sink_path = sink.path().name().to_owned();
    for (index, node) in members.iter().enumerate() {
        let to_sink: ActorRef<u32> = if index == 0 {
            sink.clone()
        } else {
            node.remote_ref(&members[0], &sink_path)
        };
        let routee = node
            .system
            .spawn(
                &format!("r{index}"),
                actor_fn(move |_ctx, _n: u32| {
                    to_sink.tell(index as u32);
                    Ok(())
                }),
            )
            .expect("spawned");
        node.system
            .receptionist()
            .expect("a receptionist")
            .register(&key(), &routee);
    }
    expect_listing(&subscribed(&members[0].system), &["r0", "r1", "r2"]);

    let router = Router::group_of(key())
        .with_logic(RoundRobin::new())
        .spawn(&members[0].system, "router")
        .expect("spawned");
    for n in 0..6 {
        router.tell(n);
    }
    let mut tally = [0; 3];
    for _ in 0..6 {
        tally[report.receive_msg_within(deadline()) as usize] += 1;
    }
    assert_eq!(tally, [2, 2, 2]);

    let local = Router::group_of(key())
        .prefer_local_routees()
        .spawn(&members[0].system, "local-router")
        .expect("spawned");
    for n in 0..6 {
        local.tell(n);
    }
    for _ in 0..6 {
        assert_eq!(report.receive_msg_within(deadline()), 0);
    }
    nodes.stop_all().await;
}

/// A member that goes silent is unreachable for as long as the resolver
/// waits (`stable_after`, long here): its services leave
/// `Listing::services` on the others, and stay in `all_services` (Akka's
/// `serviceInstances` and `allServiceInstances`); a subscriber is told,
/// with no service added or removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_members_services_leave_the_reachable_listing_only() {
    let mut nodes = nodes();
    let members = start_nodes(&mut nodes, 3).await;
    let seeds: Vec<&Node> = members.iter().collect();
    let clusters: Vec<Cluster> = members
        .iter()
        .map(|node| {
            let mut settings = quick("test", &seeds);
            settings.split_brain_resolver.stable_after = Some(Duration::from_secs(600));
            Cluster::start(&node.system, &node.remoting, settings).expect("a cluster starts")
        })
        .collect();
    all_up(&clusters);
    let stays = subscribed(&members[0].system);
    for (node, name) in members.iter().zip(["a", "b", "c"]).skip(1) {
        let service = worker(&node.system, name);
        node.system
            .receptionist()
            .expect("a receptionist")
            .register(&key(), &service);
    }
    expect_listing(&stays, &["b", "c"]);

    members[2].remoting.shutdown();
    let names = |services: &HashSet<ActorRef<u32>>| {
        let mut names: Vec<String> = services
            .iter()
            .map(|s| s.path().name().to_owned())
            .collect();
        names.sort();
        names
    };
    let listing = stays.fish_for_within(deadline(), |listing| {
        if names(&listing.services) == ["b"] {
            FishingOutcome::Complete
        } else {
            FishingOutcome::ContinueAndIgnore
        }
    });
    let listing = listing.last().expect("the listing fished for");
    assert_eq!(names(&listing.all_services), ["b", "c"]);
    assert!(!listing.services_were_added_or_removed);
    let state = clusters[0].state();
    assert_eq!(state.unreachable.len(), 1, "{state:?}");
    let looked_up = members[0]
        .system
        .receptionist()
        .expect("a receptionist")
        .lookup(&key(), deadline())
        .await
        .expect("a listing");
    assert_eq!(
        (names(&looked_up.services), names(&looked_up.all_services)),
        (vec!["b".to_owned()], vec!["b".to_owned(), "c".to_owned()])
    );
    nodes.stop_all().await;
}
