//! Cases ported from Pekko's `LocalReceptionistSpec` and
//! `LocalReceptionistBehaviorSpec` (actor-typed-tests), against
//! `system.receptionist()`.
//!
//! Ported: "register a service", "register two services", "register two
//! services with the same key", "unregister services when they
//! terminate", "unregister programmatically", "unregister per service key,
//! not service actor", "unregister and re-register same service actor",
//! "support subscribing to service changes", "support subscribing to
//! different services with the same subscriber", "work with ask" (as
//! `lookup` from async code), "be present in the system".
//!
//! Differences: a volley actor has one protocol, so the actor registered
//! under two keys here is registered under two ids of one protocol (Pekko
//! narrows one `Any` behavior to two service types). Skipped: "not
//! conflict with the ClusterClient receptionist default name" (no cluster
//! client).

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use volley::{ActorRef, ActorSystem, Listing, Registered, ServiceKey};
use volley_testkit::{actor_fn, TestProbe};

/// The services' protocol: `Stop` stops them, anything else is ignored.
#[derive(Debug)]
enum Service {
    Stop,
}

fn key_a() -> ServiceKey<Service> {
    ServiceKey::new("service-a")
}

fn key_b() -> ServiceKey<Service> {
    ServiceKey::new("service-b")
}

fn service(system: &ActorSystem) -> ActorRef<Service> {
    let stoppable = actor_fn(|ctx, Service::Stop| {
        ctx.stop_self();
        Ok(())
    });
    system.spawn_anonymous(stoppable).unwrap()
}

fn listing(key: ServiceKey<Service>, services: &[&ActorRef<Service>]) -> Listing<Service> {
    let services: HashSet<_> = services.iter().map(|s| (*s).clone()).collect();
    Listing {
        key,
        all_services: services.clone(),
        services,
        services_were_added_or_removed: true,
    }
}

#[volley_testkit::each_dispatcher]
#[test]
fn registered_services_are_found_by_key() {
    let system = common::system("receptionist-find").unwrap();
    let receptionist = system.receptionist().unwrap();
    let acks = TestProbe::<Registered<Service>>::new(&system);
    let found = TestProbe::<Listing<Service>>::new(&system);
    let (a1, a2, b) = (service(&system), service(&system), service(&system));
    for (key, s) in [(key_a(), &a1), (key_a(), &a2), (key_b(), &b)] {
        receptionist.register_with_ack(&key, s, acks.actor_ref());
        acks.expect_msg(Registered {
            key,
            service: s.clone(),
        });
    }
    receptionist.find(&key_a(), found.actor_ref());
    found.expect_msg(listing(key_a(), &[&a1, &a2]));
    receptionist.find(&key_b(), found.actor_ref());
    found.expect_msg(listing(key_b(), &[&b]));
    receptionist.find(&ServiceKey::new("service-c"), found.actor_ref());
    found.expect_msg(listing(ServiceKey::new("service-c"), &[]));
}

#[volley_testkit::each_dispatcher]
#[test]
fn a_service_that_terminates_leaves_every_key() {
    let system = common::system("receptionist-terminate").unwrap();
    let receptionist = system.receptionist().unwrap();
    let acks = TestProbe::<Registered<Service>>::new(&system);
    let (a, b, c) = (service(&system), service(&system), service(&system));
    for (key, s) in [(key_a(), &a), (key_b(), &b), (key_a(), &c), (key_b(), &c)] {
        receptionist.register_with_ack(&key, s, acks.actor_ref());
        acks.receive_msg();
    }
    let found = TestProbe::<Listing<Service>>::new(&system);
    receptionist.find(&key_a(), found.actor_ref());
    found.expect_msg(listing(key_a(), &[&a, &c]));
    c.tell(Service::Stop);
    common::eventually("c to leave both listings", || {
        receptionist.find(&key_a(), found.actor_ref());
        receptionist.find(&key_b(), found.actor_ref());
        found.receive_msg() == listing(key_a(), &[&a])
            && found.receive_msg() == listing(key_b(), &[&b])
    });
}

#[volley_testkit::each_dispatcher]
#[test]
fn subscribers_get_the_listing_now_and_after_each_change() {
    let system = common::system("receptionist-subscribe").unwrap();
    let receptionist = system.receptionist().unwrap();
    let subscriber = TestProbe::<Listing<Service>>::new(&system);
    receptionist.subscribe(&key_a(), subscriber.actor_ref());
    subscriber.expect_msg(listing(key_a(), &[]));
    let (a1, a2) = (service(&system), service(&system));
    receptionist.register(&key_a(), &a1);
    subscriber.expect_msg(listing(key_a(), &[&a1]));
    receptionist.register(&key_a(), &a2);
    subscriber.expect_msg(listing(key_a(), &[&a1, &a2]));
    // Registering again changes nothing, so nobody is told.
    receptionist.register(&key_a(), &a2);
    a1.tell(Service::Stop);
    subscriber.expect_msg(listing(key_a(), &[&a2]));
    a2.tell(Service::Stop);
    subscriber.expect_msg(listing(key_a(), &[]));
    subscriber.expect_no_msg(Duration::from_millis(100));
}

#[volley_testkit::each_dispatcher]
#[test]
fn deregistering_tells_subscribers_and_a_service_can_come_back() {
    let system = common::system("receptionist-deregister").unwrap();
    let receptionist = system.receptionist().unwrap();
    let subscriber = TestProbe::<Listing<Service>>::new(&system);
    receptionist.subscribe(&key_a(), subscriber.actor_ref());
    subscriber.expect_msg(listing(key_a(), &[]));
    let a = TestProbe::<Service>::new(&system);
    receptionist.register(&key_a(), &a.actor_ref());
    subscriber.expect_msg(listing(key_a(), &[&a.actor_ref()]));
    receptionist.deregister(&key_a(), &a.actor_ref());
    subscriber.expect_msg(listing(key_a(), &[]));
    receptionist.register(&key_a(), &a.actor_ref());
    subscriber.expect_msg(listing(key_a(), &[&a.actor_ref()]));
}

#[volley_testkit::each_dispatcher]
#[test]
fn deregistering_is_per_key_not_per_actor() {
    let system = common::system("receptionist-per-key").unwrap();
    let receptionist = system.receptionist().unwrap();
    let subscriber = TestProbe::<Listing<Service>>::new(&system);
    receptionist.subscribe(&key_a(), subscriber.actor_ref());
    subscriber.expect_msg(listing(key_a(), &[]));
    receptionist.subscribe(&key_b(), subscriber.actor_ref());
    subscriber.expect_msg(listing(key_b(), &[]));
    // The probe is kept: dropping it would stop its actor.
    let probe = TestProbe::<Service>::new(&system);
    let s = probe.actor_ref();
    receptionist.register(&key_a(), &s);
    receptionist.register(&key_b(), &s);
    subscriber.expect_msg(listing(key_a(), &[&s]));
    subscriber.expect_msg(listing(key_b(), &[&s]));
    receptionist.deregister(&key_a(), &s);
    subscriber.expect_msg(listing(key_a(), &[]));
    receptionist.find(&key_b(), subscriber.actor_ref());
    subscriber.expect_msg(listing(key_b(), &[&s]));
}

#[volley_testkit::each_dispatcher]
#[test]
fn one_subscriber_follows_several_keys() {
    let system = common::system("receptionist-several").unwrap();
    let receptionist = system.receptionist().unwrap();
    let subscriber = TestProbe::<Listing<Service>>::new(&system);
    receptionist.subscribe(&key_a(), subscriber.actor_ref());
    receptionist.subscribe(&key_b(), subscriber.actor_ref());
    subscriber.expect_msg(listing(key_a(), &[]));
    subscriber.expect_msg(listing(key_b(), &[]));
    let (a, b) = (service(&system), service(&system));
    receptionist.register(&key_a(), &a);
    subscriber.expect_msg(listing(key_a(), &[&a]));
    receptionist.register(&key_b(), &b);
    subscriber.expect_msg(listing(key_b(), &[&b]));
    // Unsubscribed from one key: only the other's changes come.
    receptionist.unsubscribe(&key_a(), &subscriber.actor_ref());
    receptionist.deregister(&key_a(), &a);
    receptionist.deregister(&key_b(), &b);
    subscriber.expect_msg(listing(key_b(), &[]));
    subscriber.expect_no_msg(Duration::from_millis(100));
}

#[volley_testkit::each_dispatcher]
#[test]
fn keys_of_one_id_and_two_protocols_are_two_keys() {
    let system = common::system("receptionist-types").unwrap();
    let receptionist = system.receptionist().unwrap();
    let numbers = TestProbe::<u32>::new(&system);
    let a = service(&system);
    receptionist.register(&key_a(), &a);
    receptionist.register(&ServiceKey::<u32>::new("service-a"), &numbers.actor_ref());
    let found = TestProbe::<Listing<Service>>::new(&system);
    receptionist.find(&key_a(), found.actor_ref());
    found.expect_msg(listing(key_a(), &[&a]));
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_has_one_receptionist_that_async_code_can_ask() {
    let system = common::system("receptionist-ask").unwrap();
    let receptionist = system.receptionist().unwrap();
    let empty = receptionist
        .lookup(&key_a(), Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(empty, listing(key_a(), &[]));
    let a = service(&system);
    // Another handle reaches the same registry.
    system.receptionist().unwrap().register(&key_a(), &a);
    let found = receptionist
        .lookup(&key_a(), Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(found, listing(key_a(), &[&a]));
    let path = "/system/receptionist";
    assert!(system.lookup(path).unwrap().is_some(), "{path} exists");
    system.terminate().await;
    assert!(system.receptionist().is_err(), "none once terminated");
}
