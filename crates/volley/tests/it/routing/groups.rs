//! Cases ported from Pekko Typed's `RoutersSpec` ("group router"), against
//! `Router::group_of(key)`: a router over the actors registered under a
//! receptionist key.
//!
//! Ported: "handle a changing set of routees" (registered, then more, then
//! one stopped), "publish Dropped when there are no routees" (as a dead
//! letter), "route messages across routees registered to the
//! receptionist" (round robin reaches each), and the group router's
//! stash of what comes before the first listing (`InitialGroupRouterImpl`:
//! messages sent at once after spawning reach a routee registered before,
//! in order). Skipped: "not route to unreachable when there are
//! reachable" (no cluster). `preferLocalRoutees` is in volley-remote's
//! `remote_receptionist.rs`.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use volley::{ActorRef, ActorSystem, DeadLetter, RoundRobin, Router, ServiceKey};
use volley_testkit::{actor_fn, TestProbe};

fn worker(
    system: &ActorSystem,
    name: &'static str,
    report: &TestProbe<(&'static str, u32)>,
) -> ActorRef<u32> {
    let to = report.actor_ref();
    // Reports every number it gets, tagged with its name.
    let worker = actor_fn(move |_, n: u32| {
        to.tell((name, n));
        Ok(())
    });
    system.spawn(name, worker).unwrap()
}

/// Registers `service` under `key` and waits for the acknowledgement.
async fn register(system: &ActorSystem, key: &ServiceKey<u32>, service: &ActorRef<u32>) {
    let ack = TestProbe::new(system);
    system
        .receptionist()
        .unwrap()
        .register_with_ack(key, service, ack.actor_ref());
    ack.receive_msg();
}

/// Waits until the router routes to `n` actors.
async fn routees_become(router: &volley::RouterRef<u32>, n: usize) {
    let start = std::time::Instant::now();
    while router.routees().len() != n {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "never {n} routees"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Who got the next `n` numbers, counted.
fn tally(report: &TestProbe<(&'static str, u32)>, n: usize) -> HashMap<&'static str, usize> {
    let mut seen = HashMap::new();
    for _ in 0..n {
        *seen.entry(report.receive_msg().0).or_default() += 1;
    }
    seen
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn what_is_sent_before_the_first_listing_reaches_a_routee_in_order() {
    let system = common::system("group-initial").unwrap();
    let report = TestProbe::new(&system);
    let key = ServiceKey::<u32>::new("initial");
    let w = worker(&system, "w", &report);
    register(&system, &key, &w).await;
    let router = Router::group_of(key).spawn(&system, "router").unwrap();
    // At once: the router has no listing yet, and holds them for it.
    for n in 0..100 {
        router.tell(n);
    }
    for n in 0..100 {
        report.expect_msg(("w", n));
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn the_routees_follow_the_listings() {
    let system = common::system("group-changing").unwrap();
    let report = TestProbe::new(&system);
    let key = ServiceKey::<u32>::new("changing");
    let router = Router::group_of(key.clone())
        .with_logic(RoundRobin::new())
        .spawn(&system, "router")
        .unwrap();
    let w1 = worker(&system, "w1", &report);
    register(&system, &key, &w1).await;
    routees_become(&router, 1).await;
    for n in 0..4 {
        router.tell(n);
    }
    assert_eq!(tally(&report, 4), HashMap::from([("w1", 4)]));
    let w2 = worker(&system, "w2", &report);
    register(&system, &key, &w2).await;
    routees_become(&router, 2).await;
    for n in 0..10 {
        router.tell(n);
    }
    assert_eq!(tally(&report, 10), HashMap::from([("w1", 5), ("w2", 5)]));
    // A stopped service leaves the listing, and the router's routees.
    system.stop(&w1);
    routees_become(&router, 1).await;
    for n in 0..4 {
        router.tell(n);
    }
    assert_eq!(tally(&report, 4), HashMap::from([("w2", 4)]));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn with_no_services_messages_are_dead_letters() {
    let system = common::system("group-empty").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let router = Router::group_of(ServiceKey::<u32>::new("nobody"))
        .spawn(&system, "router")
        .unwrap();
    router.tell(1);
    let letter = dead.receive_msg();
    assert_eq!(letter.message_type, std::any::type_name::<u32>());
    // Still running: a service registered later gets what follows.
    let report = TestProbe::new(&system);
    let w = worker(&system, "late", &report);
    register(&system, &ServiceKey::new("nobody"), &w).await;
    routees_become(&router, 1).await;
    router.tell(2);
    report.expect_msg(("late", 2));
    dead.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}
