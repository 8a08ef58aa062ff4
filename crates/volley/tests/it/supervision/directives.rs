//! Supervision directives, restart limits, all-for-one, escalation, and what
//! a restart keeps.

use crate::common;

use std::time::Duration;

use common::eventually;
use volley::{
    Actor, ActorRef, ActorSystem, Context, Directive, Failure, HandleResult, Props,
    SupervisorStrategy,
};
use volley_testkit::{actor_fn_with, TestProbe};

#[derive(Debug, thiserror::Error)]
#[error("bad input {0}")]
struct BadInput(u32);

#[derive(Clone)]
enum Work {
    Add(u32),
    Fail(u32),
    Panic,
    Get(ActorRef<u32>),
}

/// Sums what it gets; reports lifecycle hooks to the probe.
struct Worker {
    name: &'static str,
    total: u32,
    events: ActorRef<String>,
}

impl Actor for Worker {
    type Msg = Work;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.events.tell(format!("{} start", self.name));
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Work) -> HandleResult {
        match msg {
            Work::Add(n) => self.total += n,
            Work::Fail(code) => return Err(BadInput(code).into()),
            Work::Panic => panic!("worker panicked on purpose"),
            Work::Get(reply) => reply.tell(self.total),
        }
        Ok(())
    }

    fn pre_restart(&mut self, ctx: &mut Context<Self>, failure: &Failure, message: Option<Work>) {
        let what = match message {
            Some(Work::Fail(code)) => format!("Fail({code})"),
            Some(_) => "other".to_string(),
            None => "none".to_string(),
        };
        self.events.tell(format!(
            "{} pre_restart {} msg={what}",
            self.name,
            failure.is_panic()
        ));
        ctx.stop_all_children();
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.events.tell(format!("{} stop", self.name));
    }

    fn keep_for_restart(msg: &Work) -> Option<Work> {
        Some(msg.clone())
    }
}

enum ParentMsg {
    Spawn(&'static str, ActorRef<ActorRef<Work>>),
}

async fn setup(
    name: &str,
    strategy: SupervisorStrategy,
) -> (ActorSystem, ActorRef<ParentMsg>, TestProbe<String>) {
    let system = common::system(name).unwrap();
    let events = TestProbe::<String>::new(&system);
    // Spawns workers on request and supervises them with `strategy`.
    let parent = actor_fn_with(events.actor_ref(), |events, ctx, msg| {
        let ParentMsg::Spawn(name, reply) = msg;
        let events = events.clone();
        let child = ctx.spawn(
            name,
            Props::new(move || Worker {
                name,
                total: 0,
                events: events.clone(),
            }),
        )?;
        reply.tell(child);
        Ok(())
    })
    .on_stop(|events, _ctx| events.tell("parent stop".into()))
    .with_supervisor_strategy(strategy)
    .props();
    let parent = system.spawn("parent", parent).unwrap();
    (system, parent, events)
}

async fn spawn_worker(parent: &ActorRef<ParentMsg>, name: &'static str) -> ActorRef<Work> {
    parent
        .ask(|r| ParentMsg::Spawn(name, r), Duration::from_secs(5))
        .await
        .unwrap()
}

async fn total(w: &ActorRef<Work>) -> u32 {
    w.ask(Work::Get, Duration::from_secs(5)).await.unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn resume_keeps_state() {
    let strategy = SupervisorStrategy::one_for_one().with_decider(|_| Directive::Resume);
    let (system, parent, events) = setup("resume", strategy).await;
    let w = spawn_worker(&parent, "w").await;
    events.expect_msg("w start".to_string());
    w.tell(Work::Add(5));
    w.tell(Work::Fail(1));
    w.tell(Work::Add(2));
    assert_eq!(total(&w).await, 7);
    events.expect_no_msg(Duration::from_millis(50));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn restart_resets_state_keeps_mailbox_and_ref_and_passes_the_message() {
    let (system, parent, events) = setup("restart", SupervisorStrategy::default()).await;
    let w = spawn_worker(&parent, "w").await;
    events.expect_msg("w start".to_string());
    w.tell(Work::Add(5));
    w.tell(Work::Fail(9));
    for _ in 0..100 {
        w.tell(Work::Add(1));
    }
    // The same ref still works, the 100 messages queued behind the failure
    // were all handled by the new instance, the old total is gone.
    assert_eq!(total(&w).await, 100);
    events.expect_msg("w pre_restart false msg=Fail(9)".to_string());
    events.expect_msg("w start".to_string());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_is_a_failure_like_any_other() {
    let (system, parent, events) = setup("panic", SupervisorStrategy::default()).await;
    let w = spawn_worker(&parent, "w").await;
    events.expect_msg("w start".to_string());
    w.tell(Work::Add(3));
    w.tell(Work::Panic);
    w.tell(Work::Add(4));
    assert_eq!(total(&w).await, 4);
    events.expect_msg("w pre_restart true msg=other".to_string());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn stop_directive_stops_the_child() {
    let (system, parent, events) = setup("stopdir", SupervisorStrategy::stopping()).await;
    let w = spawn_worker(&parent, "w").await;
    events.expect_msg("w start".to_string());
    w.tell(Work::Fail(1));
    events.expect_msg("w stop".to_string());
    eventually("worker terminated", || w.is_terminated());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn restart_limit_stops_the_child() {
    let strategy = SupervisorStrategy::one_for_one().with_max_restarts(2, Duration::from_secs(60));
    let (system, parent, events) = setup("limit", strategy).await;
    let w = spawn_worker(&parent, "w").await;
    events.expect_msg("w start".to_string());
    for i in 0..3 {
        w.tell(Work::Fail(i));
    }
    assert_eq!(
        events.receive_n(5),
        vec![
            "w pre_restart false msg=Fail(0)",
            "w start",
            "w pre_restart false msg=Fail(1)",
            "w start",
            "w stop"
        ]
    );
    eventually("worker terminated", || w.is_terminated());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn decider_sees_the_error_type() {
    let strategy =
        SupervisorStrategy::one_for_one().with_decider(|f| match f.downcast_ref::<BadInput>() {
            Some(BadInput(0)) => Directive::Resume,
            _ => Directive::Stop,
        });
    let (system, parent, events) = setup("decider", strategy).await;
    let w = spawn_worker(&parent, "w").await;
    events.expect_msg("w start".to_string());
    w.tell(Work::Add(1));
    w.tell(Work::Fail(0));
    assert_eq!(total(&w).await, 1);
    w.tell(Work::Fail(7));
    events.expect_msg("w stop".to_string());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn all_for_one_restarts_the_siblings() {
    let (system, parent, events) = setup("afo", SupervisorStrategy::all_for_one()).await;
    let a = spawn_worker(&parent, "a").await;
    events.expect_msg("a start".to_string());
    let b = spawn_worker(&parent, "b").await;
    events.expect_msg("b start".to_string());
    b.tell(Work::Add(10));
    assert_eq!(total(&b).await, 10);
    a.tell(Work::Fail(1));
    let mut got = events.receive_n(4);
    got.sort();
    assert_eq!(
        got,
        vec![
            "a pre_restart false msg=Fail(1)",
            "a start",
            "b pre_restart false msg=none",
            "b start"
        ]
    );
    assert_eq!(total(&b).await, 0, "sibling was restarted too");
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn escalate_fails_the_parent() {
    let strategy = SupervisorStrategy::one_for_one().with_decider(|_| Directive::Escalate);
    let (system, parent, events) = setup("escalate", strategy).await;
    let w = spawn_worker(&parent, "w").await;
    events.expect_msg("w start".to_string());
    w.tell(Work::Fail(3));
    // The parent fails; /user restarts it, and its default pre_restart stops
    // the child and runs its post_stop (in either order, as in Akka: the
    // restart does not wait for the children before calling post_stop).
    let mut got = events.receive_n(2);
    got.sort();
    assert_eq!(got, vec!["parent stop", "w stop"]);
    eventually("child stopped with the parent's restart", || {
        w.is_terminated()
    });
    // The restarted parent still answers through the same ref.
    let w2 = spawn_worker(&parent, "w").await;
    events.expect_msg("w start".to_string());
    assert_eq!(total(&w2).await, 0);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_failing_pre_start_stops_the_actor_by_default() {
    let system = common::system("initfail").unwrap();
    let fails_to_start =
        actor_fn_with((), |_, _ctx, ()| Ok(())).on_start(|_, _ctx| Err("no database".into()));
    let a = system.spawn("a", fails_to_start.props()).unwrap();
    eventually("actor stopped", || a.is_terminated());
    system.terminate().await;
}
