//! The receptionist holds remote refs like local ones: a remote service
//! is listed, and leaves the listing when it stops or its node goes
//! silent (remote death watch).

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::{add, node, quick_detector, remote_ref, spawn_calculator, Calc, T};
use volley::{Listing, ServiceKey};
use volley_testkit::FishingOutcome;

fn key() -> ServiceKey<Calc> {
    ServiceKey::new("calculators")
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_service_is_listed_until_it_stops_or_its_node_goes() {
    let a = node("reception-a", quick_detector()).await;
    let b = node("reception-b", quick_detector()).await;
    let first = spawn_calculator(&b, "first");
    spawn_calculator(&b, "second");
    let (remote_first, remote_second) = (remote_ref(&a, &b, "first"), remote_ref(&a, &b, "second"));
    assert_eq!(add(&remote_first, 1, 2).await, 3);
    let receptionist = a.system.receptionist().unwrap();
    receptionist.register(&key(), &remote_first);
    receptionist.register(&key(), &remote_second);
    let listed = receptionist.lookup(&key(), T).await.unwrap();
    assert_eq!(listed.services.len(), 2);
    // Answers through the listing reach the remote actor.
    let any = listed.services.iter().next().unwrap().clone();
    assert_eq!(add(&any, 2, 2).await, 4);

    first.graceful_stop();
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let services = receptionist.lookup(&key(), T).await.unwrap().services;
        if services.len() == 1 {
            assert!(services.contains(&remote_second));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "first still listed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Silence without a goodbye: the failure detector gives b up.
    b.remoting.shutdown();
    loop {
        if receptionist
            .lookup(&key(), T)
            .await
            .unwrap()
            .services
            .is_empty()
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline + T,
            "second still listed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Akka Typed's group router with `preferLocalRoutees`: while a service of
/// the key lives on this node, the router routes to it only; once none
/// does, to the remote ones.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_router_preferring_local_routees_falls_back_to_remote_ones() {
    let a = node("prefer-a", quick_detector()).await;
    let b = node("prefer-b", quick_detector()).await;
    spawn_calculator(&b, "far");
    let far = remote_ref(&a, &b, "far");
    let near = spawn_calculator(&a, "near");
    let receptionist = a.system.receptionist().unwrap();
    receptionist.register(&key(), &far);
    receptionist.register(&key(), &near);
    let router = volley::Router::group_of(key())
        .prefer_local_routees()
        .spawn(&a.system, "calculators")
        .unwrap();
    let routees_become = |want: &volley::ActorRef<Calc>| {
        let (router, want) = (router.clone(), want.clone());
        common::eventually("the router's routees", move || {
            router.routees() == vec![want.clone()]
        })
    };
    routees_become(&near).await;
    assert_eq!(add(&router.to_actor_ref(), 2, 3).await, 5);
    a.system.stop(&near);
    routees_become(&far).await;
    assert_eq!(add(&router.to_actor_ref(), 4, 4).await, 8);
    a.system.terminate().await;
    b.system.terminate().await;
}

/// A node marked unreachable (a cluster receptionist's hook): its
/// services leave `Listing::services` and stay in `all_services`, local
/// services stay in both, subscribers get the change flagged as no
/// service added or removed; marked reachable again, they come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_nodes_services_leave_the_reachable_listing_until_it_is_back() {
    let a = node("reachable-a", quick_detector()).await;
    let b = node("reachable-b", quick_detector()).await;
    spawn_calculator(&b, "far");
    let far = remote_ref(&a, &b, "far");
    let near = spawn_calculator(&a, "near");
    let receptionist = a.system.receptionist().unwrap();
    let listings = volley_testkit::TestProbe::new(&a.system);
    receptionist.subscribe(&key(), listings.actor_ref());
    receptionist.register(&key(), &far);
    receptionist.register(&key(), &near);
    let all = [far.clone(), near.clone()]
        .into_iter()
        .collect::<HashSet<_>>();
    let both = |l: &Listing<Calc>| l.services == all && l.all_services == all;
    listings.fish_for_within(T, |l| {
        if both(l) {
            FishingOutcome::Complete
        } else {
            FishingOutcome::Continue
        }
    });

    let b_authority = far.path().authority().expect("a remote path").to_owned();
    receptionist.set_reachable(&b_authority, false);
    let listing = listings.receive_msg_within(T);
    assert_eq!(listing.services, [near.clone()].into_iter().collect());
    assert_eq!(listing.all_services, all);
    assert!(!listing.services_were_added_or_removed);
    let looked_up = receptionist.lookup(&key(), T).await.unwrap();
    assert_eq!(
        (looked_up.services.len(), looked_up.all_services.len()),
        (1, 2)
    );

    receptionist.set_reachable(&b_authority, true);
    let listing = listings.receive_msg_within(T);
    assert!(both(&listing) && !listing.services_were_added_or_removed);
    a.system.terminate().await;
    b.system.terminate().await;
}
