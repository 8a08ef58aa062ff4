//! `actor_fn`: a closure as an actor, fresh on each restart.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use volley::{ActorError, ActorRef, ActorSystem};
use volley_testkit::{actor_fn, TestProbe};

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
