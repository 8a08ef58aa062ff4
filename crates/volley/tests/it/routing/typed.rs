//! More cases from Pekko's routing specs, in volley's API: the parts of
//! classic `ConfiguredLocalRoutingSpec` that need no configuration
//! ("support custom router", "load settings from config for local child
//! router of system actor"), typed `PoolRouterSpec` ("use the default
//! dispatcher per default for its routees", "use the specified dispatcher
//! for its routees") and typed `RoutersSpec` (pool "support broadcast" with
//! a broadcast predicate, group "handle a changing set of routees").
//! Scatter-gather, tail-chopping and routee creation are in
//! `pekko_routers_more.rs`.
//!
//! Covered elsewhere (`pekko_routing.rs`, `routers.rs`): typed pool "create
//! n children and route messages to", "keep routing to the rest of the
//! children if some children stops", "stops if all children stops"; group
//! "route messages across routees" and "publish Dropped messages when
//! there are no routees available" (dead letters); `ConfiguredLocalRoutingSpec`
//! "be picked up from Props" (a pool of n has n routees).
//!
//! Not ported: every `FromConfig` / deployment-config case of
//! `ConfiguredLocalRoutingSpec` (volley routers are built in code), the
//! receptionist listing and reachability cases of `RoutersSpec` (volley has
//! no receptionist or cluster; a group takes its routees as refs), and the
//! cluster-typed `GroupRouterSpec` (prefer-local routees across nodes).

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use volley::{
    ActorPath, ActorRef, DispatcherKind, DispatcherSettings, Props, ReplyTo, Routees, Router,
    RouterRef, RoutingError, RoutingLogic, SelectError, Selection, Settings,
};
use volley_testkit::{actor_fn, FnActor, TestProbe};

const T: Duration = Duration::from_secs(10);

/// Numbered messages for the custom logic.
#[derive(Clone)]
struct Numbered(usize, ActorRef<ActorPath>);

/// Tells the path of the routee that got it.
fn echo() -> Props<FnActor<Numbered>> {
    actor_fn(|ctx, Numbered(_, to)| {
        to.tell(ctx.path().clone());
        Ok(())
    })
}

/// Sends message `n` to routee `n`; refuses numbers past the last routee.
struct ByNumber;
impl RoutingLogic<Numbered> for ByNumber {
    fn select(
        &self,
        msg: &Numbered,
        routees: &Routees<Numbered>,
    ) -> Result<Selection<Numbered>, SelectError> {
        if msg.0 < routees.len() {
            Ok(Selection::One(msg.0))
        } else {
            Err(SelectError::Rejected(format!("no routee {}", msg.0)))
        }
    }
}

/// ConfiguredLocalRoutingSpec, "support custom router": a logic of the
/// user's decides the routee from the message, and its refusal reaches the
/// sender as `Rejected` (a dead letter on `tell`).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_logic_picks_the_routee_from_the_message() {
    let system = common::system("custom").unwrap();
    let router = Router::pool(3, echo())
        .with_logic(ByNumber)
        .spawn(&system, "custom")
        .unwrap();
    let routees = router.current_routees(T).await.unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    for n in [2, 0, 1, 2] {
        router.tell(Numbered(n, probe.actor_ref()));
        assert_eq!(&probe.receive_msg(), routees[n].path());
    }
    let err = router.route(Numbered(7, probe.actor_ref())).unwrap_err();
    assert_eq!(
        err,
        RoutingError::Rejected {
            router: router.path().to_string(),
            reason: "no routee 7".to_string()
        }
    );
    let before = system.dead_letter_count();
    router.tell(Numbered(9, probe.actor_ref()));
    assert_eq!(system.dead_letter_count(), before + 1);
    probe.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// ConfiguredLocalRoutingSpec, "load settings from config for local child
/// router of system actor", without the config: a pool of six spawned by
/// an actor spreads ten messages over all six routees.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_spawned_by_an_actor_spreads_over_all_its_routees() {
    // Spawns a pool of six as its child.
    let parent = actor_fn(|ctx, reply: ReplyTo<RouterRef<Numbered>>| {
        let pool = Router::pool(6, echo())
            .spawn_child(ctx, "round")
            .map_err(|e| volley::ActorError::new(e.to_string()))?;
        reply.tell(pool);
        Ok(())
    });
    let system = common::system("child-pool").unwrap();
    let parent = system.spawn("sys-parent", parent).unwrap();
    let router = parent.ask(|r| r, T).await.unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    for n in 0..10 {
        router.tell(Numbered(n, probe.actor_ref()));
    }
    let paths: HashSet<ActorPath> = probe.receive_n(10).into_iter().collect();
    assert_eq!(paths.len(), 6, "{paths:?}");
    assert!(paths
        .iter()
        .all(|p| p.elements().starts_with("/user/sys-parent/round/")));
    system.terminate().await;
}

#[derive(Clone)]
enum Cmd {
    ReplyWithAck(ActorRef<ActorPath>),
    BCast(ActorRef<ActorPath>),
}

/// Round-robin, except that messages matching the predicate go to every
/// routee (the typed pool's `withBroadcastPredicate`).
struct BroadcastWhen(fn(&Cmd) -> bool);
impl RoutingLogic<Cmd> for BroadcastWhen {
    fn select(&self, msg: &Cmd, routees: &Routees<Cmd>) -> Result<Selection<Cmd>, SelectError> {
        if routees.is_empty() {
            Err(SelectError::NoRoutees)
        } else if (self.0)(msg) {
            Ok(Selection::All(Cmd::clone))
        } else {
            Ok(Selection::One(routees.next_index()))
        }
    }
}

/// Typed RoutersSpec, pool "support broadcast" (`withBroadcastPredicate`),
/// as a custom logic: a matching message reaches each routee once, any
/// other message one routee.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_predicate_sends_matching_messages_to_every_routee() {
    let system = common::system("bcast-predicate").unwrap();
    let acker = actor_fn(|ctx, msg: Cmd| {
        let (Cmd::ReplyWithAck(to) | Cmd::BCast(to)) = msg;
        to.tell(ctx.path().clone());
        Ok(())
    });
    let router = Router::pool(4, acker)
        .with_logic(BroadcastWhen(|m| matches!(m, Cmd::BCast(_))))
        .spawn(&system, "pool")
        .unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    router.tell(Cmd::BCast(probe.actor_ref()));
    let paths: HashSet<ActorPath> = probe.receive_n(4).into_iter().collect();
    assert_eq!(paths.len(), 4);
    probe.expect_no_msg(Duration::from_millis(100));
    router.tell(Cmd::ReplyWithAck(probe.actor_ref()));
    assert!(paths.contains(&probe.receive_msg()));
    probe.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// Typed RoutersSpec, group "handle a changing set of routees": once the
/// group has seen a routee stop, every message reaches one of the others.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_keeps_routing_to_the_rest_when_a_routee_stops() {
    let system = common::system("group-change").unwrap();
    let refs: Vec<_> = (1..=3)
        .map(|i| system.spawn(&format!("routee-{i}"), echo()).unwrap())
        .collect();
    let router = Router::group(refs.clone()).spawn(&system, "group").unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    for n in 0..4 {
        router.tell(Numbered(n, probe.actor_ref()));
    }
    assert_eq!(probe.receive_n(4).len(), 4);
    system.stop(&refs[1]);
    common::eventually("the group saw the routee stop", || {
        router.routees().len() == 2
    });
    let before = system.dead_letter_count();
    for n in 0..4 {
        router.tell(Numbered(n, probe.actor_ref()));
    }
    for p in probe.receive_n(4) {
        assert_ne!(&p, refs[1].path());
    }
    assert_eq!(system.dead_letter_count(), before);
    system.terminate().await;
}

/// Reports the name of the thread it runs on.
fn which_thread() -> Props<FnActor<ReplyTo<String>>> {
    actor_fn(|_, reply: ReplyTo<String>| {
        reply.tell(std::thread::current().name().unwrap_or("").to_string());
        Ok(())
    })
}

fn with_blocking_dispatcher() -> Settings {
    let mut settings = Settings::default();
    settings.dispatchers.insert(
        "blocking".into(),
        DispatcherSettings {
            kind: DispatcherKind::WorkStealing,
            threads: 1,
            ..Default::default()
        },
    );
    settings
}

/// Typed PoolRouterSpec, "use the default dispatcher per default for its
/// routees".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_routees_run_on_the_default_dispatcher_unless_props_name_one() {
    let system = common::system_with("default-pool", with_blocking_dispatcher()).unwrap();
    let pool = Router::pool(1, which_thread())
        .spawn(&system, "default-pool")
        .unwrap();
    let thread = pool.ask(|r| r, T).await.unwrap();
    assert!(!thread.starts_with("volley-blocking-"), "{thread}");
    if system.settings().default_dispatcher.kind == DispatcherKind::WorkStealing {
        assert!(thread.starts_with("volley-default-"), "{thread}");
    }
    system.terminate().await;
}

/// Typed PoolRouterSpec, "use the specified dispatcher for its routees":
/// the routee props' dispatcher, not the router's.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_routees_run_on_the_dispatcher_their_props_name() {
    let system = common::system_with("blocking-pool", with_blocking_dispatcher()).unwrap();
    let pool = Router::pool(1, which_thread().with_dispatcher("blocking"))
        .spawn(&system, "pool-with-blocking-routees")
        .unwrap();
    let thread = pool.ask(|r| r, T).await.unwrap();
    assert!(thread.starts_with("volley-blocking-"), "{thread}");
    system.terminate().await;
}
