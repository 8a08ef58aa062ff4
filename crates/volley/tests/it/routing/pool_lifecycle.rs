//! Routers in the hierarchy: elastic pools, death watch on a router,
//! stopping with the parent, and many concurrent senders on the fast path.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::eventually;
use volley::{ActorRef, Props, Resizer, Router, RouterRef};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

const T: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Gate {
    entered: AtomicBool,
    open: AtomicBool,
}

enum Work {
    Note(u64),
    Noted(ActorRef<Vec<u64>>),
    Block(Arc<Gate>),
}

fn worker() -> Props<FnActor<Work, Vec<u64>>> {
    actor_fn_with(Vec::new(), |noted, _ctx, msg: Work| {
        match msg {
            Work::Note(n) => noted.push(n),
            Work::Noted(reply) => reply.tell(noted.clone()),
            Work::Block(gate) => {
                gate.entered.store(true, Ordering::Release);
                while !gate.open.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        Ok(())
    })
    .props()
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn resizer_grows_under_pressure_and_shrinks_when_idle() {
    // A routee blocks its thread: pool threads only (see
    // `routers::smallest_mailbox_avoids_the_backlogged_routee`).
    let system = volley::ActorSystem::new("resize").unwrap();
    let resizer = Resizer::new(1, 3).with_interval(Duration::from_millis(10));
    let router = Router::pool(1, worker())
        .with_resizer(resizer)
        .spawn(&system, "elastic")
        .unwrap();
    assert_eq!(router.current_routees(T).await.unwrap().len(), 1);
    let gate = Arc::new(Gate::default());
    router.tell(Work::Block(gate.clone()));
    eventually("routee blocked", || gate.entered.load(Ordering::Acquire));
    for n in 0..10 {
        router.tell(Work::Note(n));
    }
    // The only routee is busy: one more (ceil(20% of 1)); then one of two
    // is busy, which is neither full pressure nor idle, so it stays at two.
    eventually("pool grew", || router.routees().len() == 2);
    gate.open.store(true, Ordering::Release);
    eventually("pool shrank back", || router.routees().len() == 1);
    assert!(!router.is_terminated());
    system.terminate().await;
}

enum ParentMsg {
    MakePool(ActorRef<RouterRef<Work>>),
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn stopping_the_parent_stops_router_and_routees_and_watchers_hear_of_it() {
    let system = common::system("parent").unwrap();
    // Makes a pool of its own on request.
    let parent = actor_fn(|ctx, ParentMsg::MakePool(reply)| {
        reply.tell(Router::pool(3, worker()).spawn_child(ctx, "pool")?);
        Ok(())
    });
    let parent = system.spawn("parent", parent).unwrap();
    let router = parent.ask(ParentMsg::MakePool, T).await.unwrap();
    let routees = router.current_routees(T).await.unwrap();
    assert_eq!(routees.len(), 3);
    let found = system.identify("/user/parent/pool").await.unwrap();
    assert_eq!(found.actor.as_ref(), Some(&router.to_any()));
    let watcher = TestProbe::<()>::new(&system);
    let pool = router.to_any();
    watcher.watch(&pool);
    assert!(system.stop(&parent));
    watcher.expect_terminated(&pool);
    assert_eq!(pool.path().elements(), "/user/parent/pool");
    assert!(router.is_terminated());
    assert!(routees.iter().all(|r| r.is_terminated()));
    // The pool's Terminated can arrive while its parent is still finishing
    // its own stop (post_stop runs after its last child is gone).
    eventually("parent stopped", || parent.is_terminated());
    for path in ["/user/parent", "/user/parent/pool"] {
        assert!(system.identify(path).await.unwrap().actor.is_none());
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn graceful_stop_of_the_router_stops_its_routees() {
    let system = common::system("graceful").unwrap();
    let router = Router::pool(2, worker()).spawn(&system, "pool").unwrap();
    let routees = router.current_routees(T).await.unwrap();
    router.to_actor_ref().graceful_stop();
    eventually("router stopped", || router.is_terminated());
    assert!(routees.iter().all(|r| r.is_terminated()));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn many_senders_route_concurrently_without_loss_or_reordering() {
    let system = common::system("fast").unwrap();
    let router = Router::pool(4, worker()).spawn(&system, "pool").unwrap();
    const SENDERS: u64 = 4;
    const EACH: u64 = 2000;
    let threads: Vec<_> = (0..SENDERS)
        .map(|s| {
            let r = router.to_actor_ref();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    r.tell(Work::Note(s * 1_000_000 + i));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let routees = router.current_routees(T).await.unwrap();
    eventually("all handled", || router.mailbox_len() == 0);
    let mut total = 0;
    for r in &routees {
        let got = r.ask(Work::Noted, T).await.unwrap();
        total += got.len() as u64;
        for s in 0..SENDERS {
            let mine: Vec<u64> = got.iter().copied().filter(|n| n / 1_000_000 == s).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "sender {s} reordered");
        }
    }
    assert_eq!(total, SENDERS * EACH);
    system.terminate().await;
}
