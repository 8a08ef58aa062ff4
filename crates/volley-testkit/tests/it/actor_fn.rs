//! `actor_fn` and `actor_fn_with`: closures as actors, fresh on each
//! restart, with hooks and a supervisor strategy.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use volley::{ActorError, ActorRef, ActorSystem, SupervisorStrategy};
use volley_testkit::{actor_fn, actor_fn_with, TestProbe};

#[test]
fn a_closure_handles_each_message_with_its_own_state() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let system = rt.block_on(async { ActorSystem::new("actor-fn").unwrap() });
    let probe = TestProbe::<usize>::new(&system);
    let to = probe.actor_ref();
    let mut seen = 0;
    let counter = system
        .spawn(
            "counter",
            actor_fn(move |_ctx, ()| {
                seen += 1;
                to.tell(seen);
                Ok(())
            }),
        )
        .unwrap();
    for _ in 0..3 {
        counter.tell(());
    }
    assert_eq!(probe.receive_n(3), vec![1, 2, 3]);
    rt.block_on(system.terminate());
}

#[test]
fn a_restart_starts_from_a_fresh_clone_of_the_closure() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let system = rt.block_on(async { ActorSystem::new("actor-fn-restart").unwrap() });
    let probe = TestProbe::<usize>::new(&system);
    let incarnations = Arc::new(AtomicUsize::new(0));
    let made = incarnations.clone();
    let mut seen = 0;
    // Fails on its second message: the default decider restarts it.
    let actor: ActorRef<ActorRef<usize>> = system
        .spawn(
            "flaky",
            actor_fn(move |_ctx, to: ActorRef<usize>| {
                if seen == 0 {
                    made.fetch_add(1, Ordering::SeqCst);
                }
                seen += 1;
                to.tell(seen);
                match seen {
                    2 => Err(ActorError::new("second message fails")),
                    _ => Ok(()),
                }
            }),
        )
        .unwrap();
    for _ in 0..3 {
        actor.tell(probe.actor_ref());
    }
    assert_eq!(probe.receive_n(3), vec![1, 2, 1], "the count restarts");
    assert_eq!(incarnations.load(Ordering::SeqCst), 2);
    rt.block_on(system.terminate());
}

/// Fails on "fail", else reports the message with how many it has seen.
fn reporting(to: &mut (ActorRef<String>, usize), msg: &'static str) -> Result<(), ActorError> {
    if msg == "fail" {
        return Err(ActorError::new("asked to fail"));
    }
    to.1 += 1;
    to.0.tell(format!("{msg} {}", to.1));
    Ok(())
}

#[test]
fn hooks_share_the_state_and_a_restart_runs_stop_then_start_by_default() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let system = rt.block_on(async { ActorSystem::new("actor-fn-hooks").unwrap() });
    let probe = TestProbe::<String>::new(&system);
    let props = actor_fn_with((probe.actor_ref(), 0), |s, _ctx, msg| reporting(s, msg))
        .on_start(|s, _ctx| {
            s.0.tell(format!("start {}", s.1));
            Ok(())
        })
        .on_stop(|s, _ctx| s.0.tell(format!("stop {}", s.1)))
        .props();
    let actor = system.spawn("hooked", props).unwrap();
    for msg in ["a", "b", "fail", "c"] {
        actor.tell(msg);
    }
    let seen = probe.receive_n(6);
    assert_eq!(seen, ["start 0", "a 1", "b 2", "stop 2", "start 0", "c 1"]);
    system.stop(&actor);
    probe.expect_msg("stop 1".into());
    rt.block_on(system.terminate());
}

#[test]
fn restart_hooks_replace_the_stop_and_start_hooks_on_a_restart() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let system = rt.block_on(async { ActorSystem::new("actor-fn-restart-hooks").unwrap() });
    let probe = TestProbe::<String>::new(&system);
    let props = actor_fn_with((probe.actor_ref(), 0), |s, _ctx, msg| reporting(s, msg))
        .on_start(|s, _ctx| {
            s.0.tell("start".into());
            Ok(())
        })
        .on_stop(|s, _ctx| s.0.tell("stop".into()))
        .on_pre_restart(|s, _ctx, _failure| s.0.tell(format!("pre_restart after {}", s.1)))
        .on_restart(|s, _ctx, _failure| {
            s.0.tell("restarted".into());
            Ok(())
        })
        .props();
    let actor = system.spawn("restart-hooked", props).unwrap();
    for msg in ["a", "fail", "b"] {
        actor.tell(msg);
    }
    let seen = probe.receive_n(5);
    assert_eq!(
        seen,
        ["start", "a 1", "pre_restart after 1", "restarted", "b 1"]
    );
    rt.block_on(system.terminate());
}

#[test]
fn the_supervisor_strategy_applies_to_children_spawned_in_a_hook() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let system = rt.block_on(async { ActorSystem::new("actor-fn-strategy").unwrap() });
    let probe = TestProbe::<ActorRef<()>>::new(&system);
    let failing = actor_fn(|_ctx, ()| Err(ActorError::new("child fails")));
    let parent = actor_fn_with(probe.actor_ref(), |_, _ctx, ()| Ok(()))
        .on_start(move |to, ctx| {
            to.tell(ctx.spawn("child", failing.clone())?);
            Ok(())
        })
        .with_supervisor_strategy(SupervisorStrategy::stopping())
        .props();
    system.spawn("parent", parent).unwrap();
    let child = probe
        .receive_one(volley_testkit::default_timeout())
        .expect("the child");
    probe.watch(&child);
    child.tell(());
    // The default strategy would restart it; the one set here stops it.
    probe.expect_terminated(&child);
    rt.block_on(system.terminate());
}
