//! Routers: logics, sender-side routing, management messages, routee
//! termination, supervision by a pool, ask-style requests and bad input.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::eventually;
use volley::{
    ActorRef, ActorSystem, BroadcastRouting, ConsistentHashing, Props, RandomRouting, Router,
    RouterRef, RoutingError, SmallestMailbox, SupervisorStrategy,
};
use volley_testkit::{actor_fn_with, FnActor};

const T: Duration = Duration::from_secs(5);

#[derive(Clone)]
enum Work {
    /// Remember `n`.
    Note(u64),
    /// Reply with everything noted so far.
    Noted(ActorRef<Vec<u64>>),
    /// Reply with this routee's name (for consistent hashing: keyed by `k`).
    Who(u64, ActorRef<String>),
    /// Keep the routee busy until the gate opens.
    Block(Arc<Gate>),
    /// Stop this routee.
    StopYourself,
    /// Fail (an error from the handler).
    Fail,
}

/// Lets a test hold a routee inside a handler, so that what is sent next
/// stays queued in its mailbox.
#[derive(Default)]
struct Gate {
    entered: AtomicBool,
    open: AtomicBool,
}

impl Gate {
    fn wait_entered(&self) {
        eventually("routee blocked", || self.entered.load(Ordering::Acquire));
    }
    fn open(&self) {
        self.open.store(true, Ordering::Release);
    }
}

/// What a worker noted, and the `Who` requests it left unanswered.
type Kept = (Vec<u64>, Vec<ActorRef<String>>);

/// Notes what it gets; a `mute` worker keeps `Who` requests unanswered.
fn worker(mute: bool) -> Props<FnActor<Work, Kept>> {
    actor_fn_with(
        Kept::default(),
        move |(noted, unanswered), ctx, msg: Work| {
            match msg {
                Work::Note(n) => noted.push(n),
                Work::Noted(reply) => reply.tell(noted.clone()),
                Work::Who(_, reply) if !mute => reply.tell(ctx.path().name().to_string()),
                Work::Who(_, reply) => unanswered.push(reply),
                Work::Block(gate) => {
                    gate.entered.store(true, Ordering::Release);
                    while !gate.open.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Work::StopYourself => ctx.stop_self(),
                Work::Fail => return Err("asked to fail".into()),
            }
            Ok(())
        },
    )
    .props()
}

fn key_of(msg: &Work) -> Option<u64> {
    match msg {
        Work::Who(k, _) => Some(*k),
        Work::Note(k) => Some(*k),
        _ => None,
    }
}

async fn noted(routee: &ActorRef<Work>) -> Vec<u64> {
    routee.ask(Work::Noted, T).await.unwrap()
}

/// Spawns `n` workers under /user named w0, w1, …
fn workers(system: &ActorSystem, n: usize) -> Vec<ActorRef<Work>> {
    (0..n)
        .map(|i| system.spawn(&format!("w{i}"), worker(false)).unwrap())
        .collect()
}

async fn ready(router: &RouterRef<Work>) -> Vec<ActorRef<Work>> {
    router.current_routees(T).await.unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn round_robin_pool_spreads_evenly_and_keeps_per_sender_order() {
    let system = common::system("rr").unwrap();
    let router = Router::pool(3, worker(false))
        .spawn(&system, "pool")
        .unwrap();
    // Sent before the routees exist: these pass through the router actor.
    for n in 0..30 {
        router.tell(Work::Note(n));
    }
    let routees = ready(&router).await;
    assert_eq!(routees.len(), 3);
    for n in 30..60 {
        router.tell(Work::Note(n));
    }
    eventually("all 60 handled", || router.mailbox_len() == 0);
    let mut all = Vec::new();
    for r in &routees {
        let got = noted(r).await;
        assert_eq!(got.len(), 20, "{r} got {got:?}");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "order kept: {got:?}");
        all.extend(got);
    }
    all.sort_unstable();
    assert_eq!(all, (0..60).collect::<Vec<_>>());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn random_routing_reaches_every_routee() {
    let system = common::system("random").unwrap();
    let router = Router::pool(3, worker(false))
        .with_logic(RandomRouting::new())
        .spawn(&system, "pool")
        .unwrap();
    let routees = ready(&router).await;
    for n in 0..300 {
        router.tell(Work::Note(n));
    }
    let mut total = 0;
    for r in &routees {
        let got = noted(r).await.len();
        assert!(got > 0, "{r} got nothing out of 300");
        total += got;
    }
    assert_eq!(total, 300);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn broadcast_logic_and_broadcast_envelope_reach_all() {
    let system = common::system("bcast").unwrap();
    let everyone = Router::pool(3, worker(false))
        .with_logic(BroadcastRouting::new())
        .spawn(&system, "everyone")
        .unwrap();
    everyone.tell(Work::Note(1));
    let rr = Router::pool(2, worker(false)).spawn(&system, "rr").unwrap();
    rr.broadcast(Work::Note(7));
    for r in ready(&everyone).await {
        assert_eq!(noted(&r).await, vec![1]);
    }
    for r in ready(&rr).await {
        assert_eq!(noted(&r).await, vec![7]);
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn consistent_hashing_is_sticky_and_removal_moves_only_the_removed_keys() {
    let system = common::system("hash").unwrap();
    let group = workers(&system, 4);
    let router = Router::group(group.clone())
        .with_logic(ConsistentHashing::new(key_of))
        .spawn(&system, "hash")
        .unwrap();
    ready(&router).await;
    let mut before = HashMap::new();
    for k in 0..200u64 {
        let who = router.ask(|r| Work::Who(k, r), T).await.unwrap();
        let again = router.ask(|r| Work::Who(k, r), T).await.unwrap();
        assert_eq!(who, again, "key {k} moved without a change");
        before.insert(k, who);
    }
    let owners: HashSet<&String> = before.values().collect();
    assert_eq!(owners.len(), 4, "every routee owns keys");

    router.remove_routee(group[1].clone());
    assert_eq!(ready(&router).await.len(), 3);
    let mut moved = 0;
    for k in 0..200u64 {
        let now = router.ask(|r| Work::Who(k, r), T).await.unwrap();
        if before[&k] == "w1" {
            assert_ne!(now, "w1");
            moved += 1;
        } else {
            assert_eq!(now, before[&k], "key {k} moved but its routee stayed");
        }
    }
    assert!(moved > 0);
    assert!(
        !group[1].is_terminated(),
        "a group routee is not stopped on removal"
    );
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn consistent_hash_message_without_key_is_an_error_not_a_panic() {
    let system = common::system("nokey").unwrap();
    let router = Router::pool(2, worker(false))
        .with_logic(ConsistentHashing::new(key_of))
        .spawn(&system, "hash")
        .unwrap();
    ready(&router).await;
    let dead_before = system.dead_letter_count();
    let err = router.route(Work::StopYourself).unwrap_err();
    assert!(
        matches!(err, RoutingError::MissingKey { .. }),
        "got {err:?}"
    );
    assert!(
        err.to_string().contains("no consistent-hashing key"),
        "{err}"
    );
    router.tell(Work::Fail); // no key either: dead letters, no panic
    let err = router.ask(Work::Noted, T).await.unwrap_err();
    assert!(
        matches!(err, RoutingError::MissingKey { .. }),
        "got {err:?}"
    );
    assert_eq!(system.dead_letter_count(), dead_before + 3);
    // The router still works for keyed messages.
    router.ask(|r| Work::Who(3, r), T).await.unwrap();
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn smallest_mailbox_avoids_the_backlogged_routee() {
    // A routee blocks its thread on the gate: pool threads only (on the
    // application-runtime dispatcher it would block a runtime thread that
    // the router needs, as docs/reference/dispatchers.md says of blocking handlers).
    let system = ActorSystem::new("smallest").unwrap();
    let group = workers(&system, 3);
    let gate = Arc::new(Gate::default());
    group[0].tell(Work::Block(gate.clone()));
    gate.wait_entered();
    for _ in 0..100 {
        group[0].tell(Work::Note(u64::MAX));
    }
    let router = Router::group(group.clone())
        .with_logic(SmallestMailbox::new())
        .spawn(&system, "smallest")
        .unwrap();
    ready(&router).await;
    for n in 0..20 {
        router.tell(Work::Note(n));
    }
    gate.open();
    let got = noted(&group[0]).await;
    assert!(
        got.iter().all(|&n| n == u64::MAX),
        "busy routee got {got:?}"
    );
    let others = noted(&group[1]).await.len() + noted(&group[2]).await.len();
    assert_eq!(others, 20);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn router_with_no_routees_errors_on_ask_and_dead_letters_on_tell() {
    let system = common::system("empty").unwrap();
    let group: RouterRef<Work> = Router::group(Vec::new()).spawn(&system, "group").unwrap();
    let pool = Router::pool(0, worker(false))
        .spawn(&system, "pool")
        .unwrap();
    for router in [&group, &pool] {
        assert!(ready(router).await.is_empty());
        let err = router.ask(Work::Noted, T).await.unwrap_err();
        assert_eq!(
            err,
            RoutingError::NoRoutees {
                router: router.path().to_string()
            }
        );
        assert!(err.to_string().contains("has no routees"), "{err}");
        let before = system.dead_letter_count();
        router.tell(Work::Note(1));
        router.to_actor_ref().tell(Work::Note(2));
        assert_eq!(system.dead_letter_count(), before + 2);
        assert!(matches!(
            router.route(Work::Note(3)),
            Err(RoutingError::NoRoutees { .. })
        ));
        let err = router.scatter_gather(Work::Noted, T).await.unwrap_err();
        assert!(matches!(err, RoutingError::NoRoutees { .. }), "{err:?}");
        let err = router
            .tail_chopping(Work::Noted, Duration::from_millis(10), T)
            .await
            .unwrap_err();
        assert!(matches!(err, RoutingError::NoRoutees { .. }), "{err:?}");
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn terminated_routees_leave_the_pool_and_the_pool_stops_when_empty() {
    let system = common::system("shrink").unwrap();
    let router = Router::pool(3, worker(false))
        .spawn(&system, "pool")
        .unwrap();
    let routees = ready(&router).await;
    routees[0].tell(Work::StopYourself);
    eventually("routee removed", || router.routees().len() == 2);
    assert!(!router.routees().contains(&routees[0]));
    assert_eq!(ready(&router).await.len(), 2);
    // Messages now reach only the live routees.
    for n in 0..10 {
        router.tell(Work::Note(n));
    }
    assert_eq!(
        noted(&routees[1]).await.len() + noted(&routees[2]).await.len(),
        10
    );
    routees[1].tell(Work::StopYourself);
    router.remove_routee(routees[2].clone());
    eventually("router stopped", || router.is_terminated());
    assert!(routees.iter().all(|r| r.is_terminated()));
    let id = system.identify("/user/pool").await.unwrap();
    assert!(id.actor.is_none());
    let err = router.ask(Work::Noted, T).await.unwrap_err();
    assert!(
        matches!(err, RoutingError::RouterTerminated { .. }),
        "{err:?}"
    );
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn the_pool_supervises_its_routees_with_its_own_strategy() {
    let system = common::system("supervise").unwrap();
    let router = Router::pool(2, worker(false))
        .with_supervisor_strategy(SupervisorStrategy::one_for_one().with_max_restarts_total(1))
        .spawn(&system, "pool")
        .unwrap();
    let routees = ready(&router).await;
    routees[0].tell(Work::Note(5));
    routees[0].tell(Work::Fail); // restarted: state reset, same ref
    assert_eq!(noted(&routees[0]).await, Vec::<u64>::new());
    assert_eq!(router.routees().len(), 2);
    routees[0].tell(Work::Fail); // second failure: over the limit, stopped
    eventually("failed routee stopped", || routees[0].is_terminated());
    eventually("and removed", || router.routees().len() == 1);
    assert!(!router.is_terminated());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn management_messages_add_remove_and_adjust() {
    let system = common::system("manage").unwrap();
    let router = Router::pool(1, worker(false))
        .spawn(&system, "pool")
        .unwrap();
    let first = ready(&router).await;
    let outsider = system.spawn("outsider", worker(false)).unwrap();
    router.add_routee(outsider.clone());
    router.adjust_pool_size(2);
    let all = ready(&router).await;
    assert_eq!(all.len(), 4);
    assert!(all.contains(&outsider) && all.contains(&first[0]));
    router.adjust_pool_size(-2);
    assert_eq!(ready(&router).await.len(), 2);
    router.remove_routee(outsider.clone());
    assert_eq!(ready(&router).await.len(), 1);
    assert!(
        !outsider.is_terminated(),
        "removal does not stop a non-child"
    );
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn scatter_gather_answers_with_the_first_reply() {
    let system = common::system("scatter").unwrap();
    let mut group = Vec::new();
    for (i, mute) in [true, false, true].into_iter().enumerate() {
        group.push(system.spawn(&format!("w{i}"), worker(mute)).unwrap());
    }
    let router = Router::group(group).spawn(&system, "scatter").unwrap();
    let who = router.scatter_gather(|r| Work::Who(0, r), T).await.unwrap();
    assert_eq!(who, "w1");
    let who = router
        .tail_chopping(|r| Work::Who(0, r), Duration::from_millis(5), T)
        .await
        .unwrap();
    assert_eq!(who, "w1");
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn scatter_gather_and_tail_chopping_time_out_when_nobody_answers() {
    let system = common::system("silent").unwrap();
    let router = Router::pool(2, worker(true))
        .spawn(&system, "pool")
        .unwrap();
    let short = Duration::from_millis(50);
    let err = router
        .scatter_gather(|r| Work::Who(0, r), short)
        .await
        .unwrap_err();
    assert!(matches!(err, RoutingError::Timeout { .. }), "{err:?}");
    let err = router
        .tail_chopping(|r| Work::Who(0, r), Duration::from_millis(10), short)
        .await
        .unwrap_err();
    assert!(matches!(err, RoutingError::Timeout { .. }), "{err:?}");
    system.terminate().await;
}

/// Pekko's routing specs, `AdjustPoolSize` below zero: the pool gives up
/// every routee it created and stays (the router actor does not stop, as
/// Pekko's `RouterPoolActor` does not); messages are then unroutable, and
/// the pool grows again on request.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_pool_shrunk_below_one_routee_stays_and_grows_again() {
    let system = common::system("shrink-below-one").unwrap();
    let router = Router::pool(2, worker(false))
        .spawn(&system, "pool")
        .unwrap();
    let before = ready(&router).await;
    router.adjust_pool_size(-5);
    eventually("every routee stopped", || {
        before.iter().all(|r| r.is_terminated())
    });
    assert!(router.current_routees(T).await.unwrap().is_empty());
    assert!(!router.is_terminated(), "the pool stays");
    assert!(matches!(
        router.route(Work::Note(1)),
        Err(RoutingError::NoRoutees { .. })
    ));
    router.adjust_pool_size(1);
    let after = ready(&router).await;
    assert_eq!(after.len(), 1);
    router.tell(Work::Note(7));
    assert_eq!(noted(&after[0]).await, vec![7]);
    system.terminate().await;
}
