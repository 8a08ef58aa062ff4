//! More cases from Pekko's routing specs, in volley's API: classic
//! `ScatterGatherFirstCompletedSpec` ("return response, even if one of the
//! actors has stopped"), `TailChoppingSpec` ("return response from second
//! actor after inactivity from first one", "throw exception if no result
//! will arrive within given time", "reply ASAP"), `RouteeCreationSpec`
//! ("result in visible routees", "allow sending to context.parent") and
//! `ConfiguredLocalRoutingSpec` "not get confused when trying to
//! wildcard-configure children". The rest of `ConfiguredLocalRoutingSpec`
//! that needs no configuration, and the typed `PoolRouterSpec` and
//! `RoutersSpec` cases, are in `pekko_routers_more_typed.rs`.
//!
//! Scatter-gather and tail-chopping are requests on any router in volley
//! (`RouterRef::scatter_gather`, `RouterRef::tail_chopping`), not router
//! kinds, and they fail with a `RoutingError` instead of replying with a
//! `Status.Failure`. Difference from Pekko: there the first completed ask
//! ends the request even if it failed; volley waits for the first reply
//! and fails only when every ask has failed or the timeout passed (see
//! docs/reference/routers.md#ask-style-routing). The routees below never sleep: a routee
//! that must be slow holds the reply handle until the test releases it, so
//! "slow" is decided by the test, not by the clock.
//!
//! Covered elsewhere: the "deliver a broadcast message using the !" cases
//! of both specs (`pekko_routing.rs`: a broadcast reaches every routee
//! whatever the logic) and scatter-gather "without routees should reply
//! immediately" (`routers.rs`: an immediate `NoRoutees`, where Pekko
//! answers with a `TimeoutException`).

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use volley::{
    Actor, ActorPath, ActorRef, Context, HandleResult, Props, ReplyTo, Router, RouterMsg,
    RouterRef, RoutingError,
};
use volley_testkit::{actor_fn_with, FnActor, TestProbe};

const T: Duration = Duration::from_secs(10);

/// What a routee does with a request.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Answers at once with its name.
    Answer,
    /// Keeps the reply handle until `Release`.
    Hold,
    /// Drops the reply handle (the ask fails at once), then reports
    /// "dropped <name>".
    Drop,
}

#[derive(Clone)]
enum Req {
    /// A request; reported to the spy as "asked <name>".
    Ask(ReplyTo<String>),
    /// How many `Ask`s this routee has had.
    Times(ReplyTo<usize>),
    /// Answer the held requests.
    Release,
    /// Stop if this is the routee's name.
    StopIf(&'static str),
}

struct Routee {
    mode: Mode,
    spy: ActorRef<String>,
    times: usize,
    held: Vec<ReplyTo<String>>,
}

impl Routee {
    fn props(mode: Mode, spy: &TestProbe<String>) -> Props<Routee> {
        let spy = spy.actor_ref();
        Props::new(move || Routee {
            mode,
            spy: spy.clone(),
            times: 0,
            held: Vec::new(),
        })
    }
}

impl Actor for Routee {
    type Msg = Req;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Req) -> HandleResult {
        let name = ctx.path().name().to_string();
        match msg {
            Req::Ask(reply) => {
                self.times += 1;
                self.spy.tell(format!("asked {name}"));
                match self.mode {
                    Mode::Answer => reply.tell(name),
                    Mode::Hold => self.held.push(reply),
                    Mode::Drop => {
                        drop(reply);
                        self.spy.tell(format!("dropped {name}"));
                    }
                }
            }
            Req::Times(reply) => reply.tell(self.times),
            Req::Release => {
                for reply in self.held.drain(..) {
                    reply.tell(name.clone());
                }
            }
            Req::StopIf(who) => {
                if who == name {
                    ctx.stop_self();
                }
            }
        }
        Ok(())
    }
}

/// A group of routees named `name`, with their modes.
fn group(
    system: &volley::ActorSystem,
    spy: &TestProbe<String>,
    routees: &[(&str, Mode)],
) -> (RouterRef<Req>, Vec<ActorRef<Req>>) {
    let refs: Vec<ActorRef<Req>> = routees
        .iter()
        .map(|(name, mode)| system.spawn(name, Routee::props(*mode, spy)).unwrap())
        .collect();
    let router = Router::group(refs.clone()).spawn(system, "router").unwrap();
    (router, refs)
}

async fn times(routees: &[ActorRef<Req>]) -> Vec<usize> {
    let mut all = Vec::new();
    for r in routees {
        all.push(r.ask(Req::Times, T).await.unwrap());
    }
    all
}

/// ScatterGatherFirstCompletedSpec, "return response, even if one of the
/// actors has stopped": the stopped routee (the quicker one) may still be
/// in the routing table when the request goes out; its failed ask does not
/// end the request, the live routee's reply does.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scatter_gather_answers_even_if_one_routee_has_stopped() {
    let system = common::system("sg-stopped").unwrap();
    let spy = TestProbe::<String>::new(&system);
    let (router, refs) = group(
        &system,
        &spy,
        &[("quick", Mode::Answer), ("slow", Mode::Hold)],
    );
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&refs[0]);
    router.broadcast(Req::StopIf("quick"));
    watcher.expect_terminated(&refs[0]);
    let request = tokio::spawn({
        let router = router.clone();
        async move { router.scatter_gather(Req::Ask, T).await }
    });
    spy.expect_msg("asked slow".to_string());
    refs[1].tell(Req::Release);
    assert_eq!(request.await.unwrap().unwrap(), "slow");
    system.terminate().await;
}

/// Scatter-gather, the same with a routee that fails the request while it
/// is in the table (drops the reply handle): the request waits for the
/// routee that answers later.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scatter_gather_waits_for_a_reply_when_another_routee_fails_at_once() {
    let system = common::system("sg-dropped").unwrap();
    let spy = TestProbe::<String>::new(&system);
    let (router, refs) = group(
        &system,
        &spy,
        &[("dropper", Mode::Drop), ("slow", Mode::Hold)],
    );
    let request = tokio::spawn({
        let router = router.clone();
        async move { router.scatter_gather(Req::Ask, T).await }
    });
    spy.expect_msg_all_of(vec![
        "asked dropper".to_string(),
        "dropped dropper".to_string(),
        "asked slow".to_string(),
    ]);
    assert!(!request.is_finished(), "ended on the dropped request");
    refs[1].tell(Req::Release);
    assert_eq!(request.await.unwrap().unwrap(), "slow");
    system.terminate().await;
}

/// TailChoppingSpec, "return response from second actor after inactivity
/// from first one" (its assertion: only one routee was asked): a routee
/// that answers within the interval is the only one asked. The first
/// routee holds the request for a while (well inside the interval) before
/// it answers.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_chopping_asks_only_the_first_routee_when_it_answers_in_time() {
    let system = common::system("tc-first").unwrap();
    let spy = TestProbe::<String>::new(&system);
    let (router, refs) = group(&system, &spy, &[("a", Mode::Hold), ("b", Mode::Hold)]);
    let long = Duration::from_secs(60);
    let request = tokio::spawn({
        let router = router.clone();
        async move { router.tail_chopping(Req::Ask, long, 2 * long).await }
    });
    let first = spy.expect_msg_any_of(&["asked a".to_string(), "asked b".to_string()]);
    spy.expect_no_msg(Duration::from_millis(200));
    let first = if first.ends_with('a') { 0 } else { 1 };
    refs[first].tell(Req::Release);
    let who = request.await.unwrap().unwrap();
    assert_eq!(who, ["a", "b"][first]);
    let mut asked = times(&refs).await;
    asked.sort_unstable();
    assert_eq!(asked, vec![0, 1]);
    system.terminate().await;
}

/// TailChoppingSpec, "throw exception if no result will arrive within given
/// time": every routee is asked once, then the request fails with a
/// timeout (Pekko: `AskTimeoutException`).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_chopping_times_out_after_asking_every_routee_once() {
    let system = common::system("tc-timeout").unwrap();
    let spy = TestProbe::<String>::new(&system);
    let (router, refs) = group(&system, &spy, &[("a", Mode::Hold), ("b", Mode::Hold)]);
    let timeout = Duration::from_secs(1);
    let err = router
        .tail_chopping(Req::Ask, Duration::from_millis(10), timeout)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        RoutingError::Timeout {
            router: router.path().to_string(),
            after: timeout
        }
    );
    assert_eq!(times(&refs).await, vec![1, 1]);
    system.terminate().await;
}

/// TailChoppingSpec, "reply ASAP": once several routees were asked, the
/// first reply ends the request; the others are not waited for.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_chopping_answers_as_soon_as_any_asked_routee_replies() {
    let system = common::system("tc-asap").unwrap();
    let spy = TestProbe::<String>::new(&system);
    let (router, refs) = group(&system, &spy, &[("a", Mode::Hold), ("b", Mode::Hold)]);
    let request = tokio::spawn({
        let router = router.clone();
        async move {
            router
                .tail_chopping(Req::Ask, Duration::from_millis(10), T)
                .await
        }
    });
    spy.expect_msg_all_of(vec!["asked a".to_string(), "asked b".to_string()]);
    refs[1].tell(Req::Release);
    assert_eq!(request.await.unwrap().unwrap(), "b");
    system.terminate().await;
}

/// Tail-chopping, a routee whose ask fails at once (here: it drops the
/// request) is skipped without waiting for the interval: the interval is
/// longer than the whole timeout, so waiting would time out. Repeated so
/// that the failing routee comes first in some runs (the order is random).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_chopping_skips_a_routee_that_fails_at_once_without_waiting() {
    let system = common::system("tc-skip").unwrap();
    let spy = TestProbe::<String>::new(&system);
    spy.ignore_msg(|_| true);
    let (router, refs) = group(
        &system,
        &spy,
        &[("dropper", Mode::Drop), ("answer", Mode::Answer)],
    );
    for _ in 0..6 {
        let who = router
            .tail_chopping(Req::Ask, Duration::from_secs(120), Duration::from_secs(20))
            .await
            .unwrap();
        assert_eq!(who, "answer");
    }
    assert!(times(&refs).await[0] > 0, "the dropper was never first");
    system.terminate().await;
}

/// An idle actor that runs `on_start` when it starts (to report about
/// itself).
fn starter(
    on_start: impl Fn(&mut Context<FnActor<()>>) + Send + Sync + 'static,
) -> Props<FnActor<()>> {
    actor_fn_with((), |_, _ctx, ()| Ok(()))
        .on_start(move |_, ctx| {
            on_start(ctx);
            Ok(())
        })
        .props()
}

/// RouteeCreationSpec, "result in visible routees": a routee looking itself
/// up by path while it starts finds itself.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routees_are_visible_by_path_when_they_start() {
    const N: usize = 100;
    let system = common::system("visible").unwrap();
    let probe = TestProbe::<Result<(), String>>::new(&system);
    let to = probe.actor_ref();
    let props = starter(move |ctx| {
        let path = ctx.path().to_string();
        let found = ctx.system().lookup(&path);
        let me = ctx.myself().to_any();
        to.tell(match found {
            Ok(Some(actor)) if actor == me => Ok(()),
            other => Err(format!("{path}: {other:?}")),
        });
    });
    let _router = Router::pool(N, props).spawn(&system, "pool").unwrap();
    for _ in 0..N {
        probe.receive_msg().unwrap();
    }
    system.terminate().await;
}

#[derive(Clone)]
enum Relay {
    One,
}

/// Sends `One` to its parent, the router, when it starts; reports its
/// path for each message it gets.
fn relayer(to: ActorRef<ActorPath>) -> Props<FnActor<Relay>> {
    actor_fn_with((), move |_, ctx, _msg| {
        to.tell(ctx.path().clone());
        Ok(())
    })
    .on_start(|_, ctx| {
        let parent = ctx
            .parent()
            .and_then(|p| p.downcast::<RouterMsg<Relay>>())
            .expect("the parent is the router actor");
        parent.tell(RouterMsg::Route(Relay::One));
        Ok(())
    })
    .props()
}

/// RouteeCreationSpec, "allow sending to context.parent": every routee
/// sends to its parent, the router, while it starts, and the router routes
/// each of those messages to a routee. In volley the parent is the router
/// actor, whose protocol is `RouterMsg`: the routee wraps its message in
/// `RouterMsg::Route`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routees_may_send_to_their_parent_router_when_they_start() {
    const N: usize = 100;
    let system = common::system("to-parent").unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    let to = probe.actor_ref();
    let _router = Router::pool(N, relayer(to)).spawn(&system, "pool").unwrap();
    assert_eq!(probe.receive_n(N).len(), N);
    probe.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// ConfiguredLocalRoutingSpec, "not get confused when trying to
/// wildcard-configure children": a pool of three creates exactly three
/// routees, each a direct child of the router.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pools_routees_are_its_direct_children_one_per_instance() {
    let system = common::system("children").unwrap();
    let probe = TestProbe::<ActorPath>::new(&system);
    let to = probe.actor_ref();
    let props = starter(move |ctx| to.tell(ctx.path().clone()));
    let router = Router::pool(3, props).spawn(&system, "weird").unwrap();
    let paths: HashSet<ActorPath> = probe.receive_n(3).into_iter().collect();
    assert_eq!(paths.len(), 3);
    for p in &paths {
        assert_eq!(
            p.elements(),
            format!("{}/{}", router.path().elements(), p.name()),
            "{p} is not a child of {}",
            router.path()
        );
    }
    probe.expect_no_msg(Duration::from_millis(200));
    let routees: HashSet<ActorPath> = router
        .current_routees(T)
        .await
        .unwrap()
        .iter()
        .map(|r| r.path().clone())
        .collect();
    assert_eq!(routees, paths);
    system.terminate().await;
}
