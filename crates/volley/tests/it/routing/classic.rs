//! Cases ported from Pekko's routing specs (actor-tests, `routing`):
//! `RoundRobinSpec`, `RandomSpec`, `BroadcastSpec`, `SmallestMailboxSpec`,
//! `ConsistentHashingRouterSpec`, `ResizerSpec` and `RoutingSpec`, in
//! volley's API.
//!
//! Skipped, with the reason:
//! - every `FromConfig` / deployment-config case: volley routers are built
//!   in code, not from configuration.
//! - RoutingSpec "NoRouter", "RouterConfig withFallback", "ScatterGather
//!   / TailChopping from config": no such configuration layer.
//! - RoutingSpec "use specified resizer when resizer not configured": no
//!   configured resizer to fall back from.
//! - ConsistentHashingRouterSpec `ConsistentHashableEnvelope` and
//!   `ConsistentHashable` messages: a key closure on the typed message
//!   covers both; the closure case is ported.
//! - ResizerSpec "grow as needed under pressure" / "backoff" on a live pool:
//!   timing dependent; the resizer's arithmetic is ported instead.
//! - SmallestMailboxSpec "deliver messages to idle actor" with suspended
//!   routees: volley cannot see that a routee is busy (documented); the
//!   queue-length case is ported.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use volley::{
    ActorError, ActorPath, ActorRef, ConsistentHashing, Directive, Props, RandomRouting, ReplyTo,
    Resizer, Router, RouterMsg, SmallestMailbox, SupervisorStrategy,
};
use volley_testkit::{actor_fn, FnActor, TestProbe};

const T: Duration = Duration::from_secs(10);

#[derive(Clone)]
enum Work {
    /// Report this routee's path to the probe.
    Who(ActorRef<ActorPath>),
    /// Wait at the barrier (blocks the thread).
    Block(Arc<Barrier>),
    /// Fail.
    Fail,
    /// Report a (key, path) pair.
    Keyed(u32, ActorRef<(u32, ActorPath)>),
}

fn worker() -> Props<FnActor<Work>> {
    actor_fn(|ctx, msg: Work| {
        match msg {
            Work::Who(to) => to.tell(ctx.path().clone()),
            Work::Block(b) => {
                b.wait();
            }
            Work::Fail => return Err(ActorError::new("fails on purpose")),
            Work::Keyed(k, to) => to.tell((k, ctx.path().clone())),
        }
        Ok(())
    })
}

fn counts(paths: Vec<ActorPath>) -> HashMap<ActorPath, usize> {
    let mut m = HashMap::new();
    for p in paths {
        *m.entry(p).or_insert(0) += 1;
    }
    m
}

/// RoundRobinSpec, "round robin pool must deliver messages in a round robin
/// fashion": each routee gets the same share.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_pool_shares_evenly() {
    let system = common::system("rr-pool").unwrap();
    let router = Router::pool(5, worker()).spawn(&system, "rr").unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    for _ in 0..50 {
        router.tell(Work::Who(probe.actor_ref()));
    }
    let c = counts(probe.receive_n(50));
    assert_eq!(c.len(), 5, "{c:?}");
    assert!(c.values().all(|&n| n == 10), "{c:?}");
    system.terminate().await;
}

/// RoundRobinSpec, "round robin group must deliver messages in a round
/// robin fashion".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_group_shares_evenly() {
    let system = common::system("rr-group").unwrap();
    let refs: Vec<_> = (0..3)
        .map(|i| system.spawn(&format!("w{i}"), worker()).unwrap())
        .collect();
    let router = Router::group(refs).spawn(&system, "rr").unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    for _ in 0..30 {
        router.tell(Work::Who(probe.actor_ref()));
    }
    let c = counts(probe.receive_n(30));
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c.values().all(|&n| n == 10), "{c:?}");
    system.terminate().await;
}

/// RoundRobinSpec, "round robin pool must be able to shut down its
/// instance": stopping the router stops every routee.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_pool_stops_routees() {
    let system = common::system("rr-shutdown").unwrap();
    let router = Router::pool(4, worker()).spawn(&system, "rr").unwrap();
    let routees = router.current_routees(T).await.unwrap();
    assert_eq!(routees.len(), 4);
    let probes: Vec<_> = routees
        .iter()
        .map(|r| {
            let p = TestProbe::<()>::new(&system);
            p.watch(r);
            p
        })
        .collect();
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&router.to_any());
    system.stop(&router.to_any());
    for (p, r) in probes.iter().zip(&routees) {
        p.expect_terminated(r);
    }
    probe.expect_terminated(&router.to_any());
    system.terminate().await;
}

/// RoundRobinSpec / RoutingSpec, "evict terminated routees" and "pool
/// terminates when all routees have terminated".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_routees_are_evicted_then_pool_stops() {
    let system = common::system("rr-evict").unwrap();
    let router = Router::pool(2, worker()).spawn(&system, "rr").unwrap();
    let routees = router.current_routees(T).await.unwrap();
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&router.to_any());
    system.stop(&routees[0]);
    common::eventually("the stopped routee evicted", || router.routees().len() == 1);
    let rest = router.current_routees(T).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].path(), routees[1].path());
    probe.expect_no_msg(Duration::from_millis(100));
    system.stop(&routees[1]);
    probe.expect_terminated(&router.to_any());
    system.terminate().await;
}

/// RoundRobinSpec, "round robin group ... all routees terminated": volley's
/// group keeps running with no routees (docs/reference/routers.md#routees-that-terminate), and
/// a message to it is unroutable.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_without_routees_keeps_running() {
    let system = common::system("rr-group-empty").unwrap();
    let w = system.spawn("w", worker()).unwrap();
    let router = Router::group(vec![w.clone()]).spawn(&system, "g").unwrap();
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&router.to_any());
    system.stop(&w);
    probe.expect_terminated(&w);
    common::eventually("the routee evicted", || router.routees().is_empty());
    probe.expect_no_msg(Duration::from_millis(200));
    assert!(router.route(Work::Fail).is_err());
    system.terminate().await;
}

/// RandomSpec, "random pool must deliver messages in a random fashion":
/// every routee gets some, none gets all.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_pool_spreads() {
    let system = common::system("random").unwrap();
    let router = Router::pool(3, worker())
        .with_logic(RandomRouting::new())
        .spawn(&system, "rnd")
        .unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    for _ in 0..300 {
        router.tell(Work::Who(probe.actor_ref()));
    }
    let c = counts(probe.receive_n(300));
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c.values().all(|&n| n < 300), "{c:?}");
    system.terminate().await;
}

/// RoundRobinSpec / RandomSpec / BroadcastSpec, "deliver a broadcast
/// message using the !": a `Broadcast` reaches every routee, whatever the
/// logic.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_message_reaches_every_routee() {
    let system = common::system("broadcast-msg").unwrap();
    let router = Router::pool(4, worker())
        .with_logic(RandomRouting::new())
        .spawn(&system, "rnd")
        .unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    router.broadcast(Work::Who(probe.actor_ref()));
    let c = counts(probe.receive_n(4));
    assert_eq!(c.len(), 4, "{c:?}");
    probe.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// BroadcastSpec, "broadcast group must broadcast message using !": with
/// the broadcast logic every message reaches every routee.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_logic_sends_each_message_to_all() {
    let system = common::system("broadcast").unwrap();
    let refs: Vec<_> = (0..3)
        .map(|i| system.spawn(&format!("b{i}"), worker()).unwrap())
        .collect();
    let router = Router::group(refs)
        .with_logic(volley::BroadcastRouting::new())
        .spawn(&system, "bc")
        .unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    for _ in 0..5 {
        router.tell(Work::Who(probe.actor_ref()));
    }
    let c = counts(probe.receive_n(15));
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c.values().all(|&n| n == 5), "{c:?}");
    system.terminate().await;
}

/// SmallestMailboxSpec, "deliver messages to the routee with the fewest
/// messages": with one routee blocked behind queued work, new messages go
/// to the other. Blocks a thread, so it stays on the pool.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smallest_mailbox_avoids_the_backed_up_routee() {
    let system = volley::ActorSystem::new("smallest").unwrap();
    let busy = system.spawn("busy", worker()).unwrap();
    let idle = system.spawn("idle", worker()).unwrap();
    let gate = Arc::new(Barrier::new(2));
    let probe = TestProbe::<ActorPath>::new(&system);
    busy.tell(Work::Block(gate.clone()));
    for _ in 0..5 {
        busy.tell(Work::Who(probe.actor_ref()));
    }
    common::eventually("the busy routee backed up", || busy.mailbox_len() >= 5);
    let router = Router::group(vec![busy.clone(), idle.clone()])
        .with_logic(SmallestMailbox::new())
        .spawn(&system, "sm")
        .unwrap();
    router.current_routees(T).await.unwrap();
    for _ in 0..3 {
        router.tell(Work::Who(probe.actor_ref()));
    }
    for _ in 0..3 {
        assert_eq!(&probe.receive_msg(), idle.path());
    }
    gate.wait();
    for _ in 0..5 {
        assert_eq!(&probe.receive_msg(), busy.path());
    }
    system.terminate().await;
}

/// ConsistentHashingRouterSpec, "select destination based on hashMapping":
/// messages with the same key go to the same routee; keys spread.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_hashing_same_key_same_routee() {
    let system = common::system("hashing").unwrap();
    let router = Router::pool(3, worker())
        .with_logic(ConsistentHashing::new(|m: &Work| match m {
            Work::Keyed(k, _) => Some(*k),
            _ => None,
        }))
        .spawn(&system, "ch")
        .unwrap();
    let probe = TestProbe::<(u32, ActorPath)>::new(&system);
    for _ in 0..3 {
        for k in 0..20 {
            router.tell(Work::Keyed(k, probe.actor_ref()));
        }
    }
    let mut owner: HashMap<u32, ActorPath> = HashMap::new();
    for (k, p) in probe.receive_n(60) {
        let prev = owner.entry(k).or_insert_with(|| p.clone());
        assert_eq!(*prev, p, "key {k} moved");
    }
    let used: HashSet<_> = owner.values().collect();
    assert!(used.len() > 1, "20 keys all on one routee");
    system.terminate().await;
}

/// ConsistentHashingRouterSpec, a message without a key: unroutable
/// (`MissingKey`), never a panic.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_hashing_without_key_is_refused() {
    let system = common::system("hashing-nokey").unwrap();
    let router = Router::pool(2, worker())
        .with_logic(ConsistentHashing::new(|m: &Work| match m {
            Work::Keyed(k, _) => Some(*k),
            _ => None,
        }))
        .spawn(&system, "ch")
        .unwrap();
    router.current_routees(T).await.unwrap();
    let err = router.route(Work::Fail).unwrap_err();
    assert!(
        matches!(err, volley::RoutingError::MissingKey { .. }),
        "{err:?}"
    );
    system.terminate().await;
}

/// RoutingSpec, "reply with routees / be controlled with management
/// messages": GetRoutees, RemoveRoutee, AddRoutee, AdjustPoolSize.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_messages() {
    let system = common::system("manage").unwrap();
    let router = Router::pool(3, worker()).spawn(&system, "m").unwrap();
    let routees = router.current_routees(T).await.unwrap();
    assert_eq!(routees.len(), 3);
    let probe = TestProbe::<()>::new(&system);
    router
        .control()
        .tell(RouterMsg::RemoveRoutee(routees[0].clone()));
    probe.expect_terminated(&routees[0]);
    assert_eq!(router.current_routees(T).await.unwrap().len(), 2);
    let extra = system.spawn("extra", worker()).unwrap();
    router.control().tell(RouterMsg::AddRoutee(extra.clone()));
    let now = router.current_routees(T).await.unwrap();
    assert_eq!(now.len(), 3);
    assert!(now.iter().any(|r| r.path() == extra.path()));
    router.control().tell(RouterMsg::AdjustPoolSize(2));
    assert_eq!(router.current_routees(T).await.unwrap().len(), 5);
    router.control().tell(RouterMsg::AdjustPoolSize(-1));
    common::eventually("pool shrunk", || router.routees().len() == 4);
    system.terminate().await;
}

/// RoutingSpec, "set supplied supervisorStrategy": the pool's strategy
/// decides its routees' failures (here Stop: the routee terminates).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supplied_supervisor_strategy_applies_to_routees() {
    common::quiet_deliberate_panics();
    let system = common::system("strategy").unwrap();
    let router = Router::pool(2, worker())
        .with_supervisor_strategy(
            SupervisorStrategy::one_for_one().with_decider(|_| Directive::Stop),
        )
        .spawn(&system, "s")
        .unwrap();
    let routees = router.current_routees(T).await.unwrap();
    let probe = TestProbe::<()>::new(&system);
    routees[0].tell(Work::Fail);
    probe.expect_terminated(&routees[0]);
    common::eventually("evicted", || router.routees().len() == 1);
    system.terminate().await;
}

/// RoutingSpec, "default to all-for-one-always-escalate strategy": volley
/// deliberately differs (docs/reference/routers.md#pools-and-groups): a pool restarts a
/// failed routee itself and nothing reaches the router's parent.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_strategy_restarts_the_routee() {
    common::quiet_deliberate_panics();
    let system = common::system("default-strategy").unwrap();
    let router = Router::pool(2, worker()).spawn(&system, "d").unwrap();
    let routees = router.current_routees(T).await.unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&router.to_any());
    routees[0].tell(Work::Fail);
    routees[0].tell(Work::Who(probe.actor_ref()));
    assert_eq!(&probe.receive_msg(), routees[0].path());
    watcher.expect_no_msg(Duration::from_millis(200));
    assert_eq!(router.current_routees(T).await.unwrap().len(), 2);
    system.terminate().await;
}

/// ResizerSpec, "DefaultResizer must use settings to evaluate capacity"
/// and "be possible to define initial size": the pool starts within the
/// bounds.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resizer_initial_size_within_bounds() {
    let r = Resizer::new(2, 3);
    assert_eq!(r.initial_size(0), 2);
    assert_eq!(r.initial_size(2), 2);
    assert_eq!(r.initial_size(10), 3);
    assert_eq!(
        r.capacity_delta(&[]),
        2,
        "no routees: grow to the lower bound"
    );
    assert_eq!(r.capacity_delta(&[0]), 1);
    let system = common::system("resizer-initial").unwrap();
    let router = Router::pool(1, worker())
        .with_resizer(Resizer::new(2, 3).with_interval(Duration::from_secs(3600)))
        .spawn(&system, "r")
        .unwrap();
    assert_eq!(router.current_routees(T).await.unwrap().len(), 2);
    system.terminate().await;
}

/// ResizerSpec, "DefaultResizer must use settings to evaluate rampUp" and
/// "backoff": all busy grows by ceil(rate × n); few busy shrinks by
/// ceil(backoff_rate × n); otherwise steady.
#[volley_testkit::each_dispatcher]
#[test]
fn resizer_rampup_and_backoff() {
    let r = Resizer::new(1, 100).with_rampup_rate(0.2);
    assert_eq!(r.capacity_delta(&[1; 10]), 2);
    assert_eq!(r.capacity_delta(&[1; 5]), 1);
    let mut nine_busy = vec![1; 10];
    nine_busy[0] = 0;
    assert_eq!(r.capacity_delta(&nine_busy), 0);
    let b = Resizer::new(1, 100).with_backoff(0.3, 0.1);
    let busy =
        |n: usize, of: usize| -> Vec<usize> { (0..of).map(|i| usize::from(i < n)).collect() };
    assert_eq!(b.capacity_delta(&busy(10, 10)), 2, "all busy ramps up");
    assert_eq!(b.capacity_delta(&busy(4, 10)), 0);
    assert_eq!(b.capacity_delta(&busy(3, 10)), 0);
    assert_eq!(b.capacity_delta(&busy(2, 10)), -1);
    assert_eq!(b.capacity_delta(&busy(0, 10)), -1);
    assert_eq!(b.capacity_delta(&busy(1, 9)), -1);
    assert_eq!(b.capacity_delta(&busy(0, 9)), -1);
    assert_eq!(b.capacity_delta(&busy(0, 1)), 0, "at the lower bound");
}

/// ResizerSpec, "be possible to define very moderate rampup":
/// rate 0.1 on 3 busy routees still adds one.
#[volley_testkit::each_dispatcher]
#[test]
fn resizer_moderate_rampup_adds_at_least_one() {
    let r = Resizer::new(1, 10).with_rampup_rate(0.1);
    assert_eq!(r.capacity_delta(&[1, 1, 1]), 1);
    let capped = Resizer::new(1, 3).with_rampup_rate(1.0);
    assert_eq!(capped.capacity_delta(&[1, 1, 1]), 0, "at the upper bound");
}

/// RoutingSpec, the routed message and a routee reply: `router.ask` goes
/// to a routee and completes with its answer.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_ask_gets_a_routee_reply() {
    let system = common::system("router-ask").unwrap();
    let answer = actor_fn(|_, r: ReplyTo<u32>| {
        r.tell(42);
        Ok(())
    });
    let router = Router::pool(3, answer).spawn(&system, "a").unwrap();
    for _ in 0..6 {
        assert_eq!(router.ask(|r| r, T).await.unwrap(), 42);
    }
    system.terminate().await;
}

/// RoutingSpec, "not terminate when resizer is used": a resized pool whose
/// routees all stopped does not stop itself; its resizer grows it back to
/// the lower bound.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resized_pool_does_not_stop_when_routees_stop() {
    let system = common::system("resizer-stays").unwrap();
    let router = Router::pool(2, worker())
        .with_resizer(Resizer::new(2, 2).with_interval(Duration::from_millis(200)))
        .spawn(&system, "r")
        .unwrap();
    let routees = router.current_routees(T).await.unwrap();
    assert_eq!(routees.len(), 2);
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&router.to_any());
    for r in &routees {
        r.graceful_stop();
    }
    probe.expect_no_msg(Duration::from_secs(1));
    assert!(!router.is_terminated());
    common::eventually("the resizer grows the pool back", || {
        router.routees().len() == 2 && router.routees().iter().all(|r| !r.is_terminated())
    });
    system.terminate().await;
}

/// RoutingSpec, "start in-line for context.actorOf()": a pool spawned by
/// an actor routes at once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_spawned_by_an_actor_routes_at_once() {
    let system = common::system("inline").unwrap();
    let owner = actor_fn(|ctx, to: ActorRef<ActorPath>| {
        let pool = Router::pool(2, worker())
            .spawn_child(ctx, "pool")
            .map_err(|e| ActorError::new(e.to_string()))?;
        pool.tell(Work::Who(to));
        Ok(())
    });
    let owner = system.spawn("owner", owner).unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    owner.tell(probe.actor_ref());
    let p = probe.receive_msg();
    assert!(p.to_string().contains("/user/owner/pool/"), "{p}");
    system.terminate().await;
}
