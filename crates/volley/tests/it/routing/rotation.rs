//! Sender-side routing from several threads: each sender's round-robin
//! rotation (per thread and router), and the cached routee lists of sending
//! threads after the routees change.

use crate::common;

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::Duration;

use volley::{ActorRef, Props, Router, RouterRef, SmallestMailbox};
use volley_testkit::{actor_fn_with, FnActor};

const T: Duration = Duration::from_secs(5);

/// A message from sender `from` (its `n`-th), or a request for what came.
enum Msg {
    From { from: usize, n: u64 },
    Got(ActorRef<Vec<(usize, u64)>>),
}

/// Keeps what came, and hands it over (emptied) on `Got`.
fn recorder() -> Props<FnActor<Msg, Vec<(usize, u64)>>> {
    actor_fn_with(Vec::new(), |got, _ctx, msg: Msg| {
        match msg {
            Msg::From { from, n } => got.push((from, n)),
            Msg::Got(reply) => reply.tell(std::mem::take(got)),
        }
        Ok(())
    })
    .props()
}

/// What each routee got since the last call, by routee index.
async fn takes(routees: &[ActorRef<Msg>]) -> Vec<Vec<(usize, u64)>> {
    let mut all = Vec::new();
    for r in routees {
        all.push(r.ask(Msg::Got, T).await.unwrap());
    }
    all
}

/// `per_sender` messages from each of `senders` threads at once.
fn send_from_threads(router: &RouterRef<Msg>, senders: usize, per_sender: u64) {
    let start = Arc::new(Barrier::new(senders));
    let threads: Vec<_> = (0..senders)
        .map(|from| {
            let (router, start) = (router.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                for n in 0..per_sender {
                    router.tell(Msg::From { from, n });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Waits until the routees have handled `total` messages, then returns
/// how many of each sender's messages each routee got.
async fn per_sender_counts(routees: &[ActorRef<Msg>], total: usize) -> Vec<HashMap<usize, usize>> {
    let mut counts = vec![HashMap::new(); routees.len()];
    let mut seen = 0;
    let deadline = std::time::Instant::now() + T;
    while seen < total && std::time::Instant::now() < deadline {
        for (i, got) in takes(routees).await.into_iter().enumerate() {
            seen += got.len();
            for (from, _) in got {
                *counts[i].entry(from).or_insert(0) += 1;
            }
        }
    }
    assert_eq!(seen, total, "messages handled");
    counts
}

/// Concurrent senders each visit every routee evenly: their rotations are
/// their own, so no sender's share depends on how the others interleave
/// (with one shared counter, a sender gets whichever turns are left).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_concurrent_sender_visits_every_routee_evenly() {
    let system = common::system("rr-senders").unwrap();
    let router = Router::pool(4, recorder()).spawn(&system, "pool").unwrap();
    let routees = router.current_routees(T).await.unwrap();
    let (senders, per_sender) = (3, 4_000);
    send_from_threads(&router, senders, per_sender);
    let counts = per_sender_counts(&routees, senders * per_sender as usize).await;
    for (i, c) in counts.iter().enumerate() {
        for from in 0..senders {
            assert_eq!(
                c.get(&from),
                Some(&1_000),
                "routee {i} from sender {from}: {c:?}"
            );
        }
    }
    system.terminate().await;
}

/// One thread alternating between two routers keeps a rotation per router:
/// each router's routees get equal shares (one rotation per thread would
/// send every other message of each router to the same half).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sender_keeps_a_rotation_per_router() {
    let system = common::system("rr-two").unwrap();
    let a = Router::pool(2, recorder()).spawn(&system, "a").unwrap();
    let b = Router::pool(2, recorder()).spawn(&system, "b").unwrap();
    let (ra, rb) = (
        a.current_routees(T).await.unwrap(),
        b.current_routees(T).await.unwrap(),
    );
    for n in 0..100 {
        a.tell(Msg::From { from: 0, n });
        b.tell(Msg::From { from: 0, n });
    }
    for routees in [&ra, &rb] {
        let counts = per_sender_counts(routees, 100).await;
        assert!(counts.iter().all(|c| c[&0] == 50), "{counts:?}");
    }
    system.terminate().await;
}

/// Smallest-mailbox ties (idle routees) spread over every routee in the
/// sender's rotation. (One thread: the test's task does not move.)
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn smallest_mailbox_ties_rotate() {
    let system = common::system("sm-ties").unwrap();
    let router = Router::pool(3, recorder())
        .with_logic(SmallestMailbox::new())
        .spawn(&system, "pool")
        .unwrap();
    let routees = router.current_routees(T).await.unwrap();
    let mut total = vec![0; 3];
    for n in 0..30 {
        // Every routee idle (its last activation over), so the pick is a tie.
        common::eventually("routees idle", || router.mailbox_len() == 0);
        router.tell(Msg::From { from: 0, n });
        let deadline = std::time::Instant::now() + T;
        loop {
            let got = takes(&routees).await;
            if let Some(k) = got.iter().position(|g| !g.is_empty()) {
                total[k] += 1;
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "message {n} not handled"
            );
        }
    }
    assert_eq!(total, vec![10, 10, 10]);
    system.terminate().await;
}

/// Threads that routed before a routee was removed (and so cache the old
/// list) never route to it after they have observed the removal.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_routee_gets_nothing_once_the_removal_is_observed() {
    let system = common::system("rr-remove").unwrap();
    let routees: Vec<_> = (0..3)
        .map(|i| system.spawn(&format!("r{i}"), recorder()).unwrap())
        .collect();
    let router = Router::group(routees.clone())
        .spawn(&system, "group")
        .unwrap();
    router.current_routees(T).await.unwrap();
    let senders = 2;
    let (go_tx, go_rx): (Vec<_>, Vec<_>) = (0..senders).map(|_| mpsc::channel::<()>()).unzip();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let threads: Vec<_> = go_rx
        .into_iter()
        .enumerate()
        .map(|(from, go)| {
            let (router, done) = (router.clone(), done_tx.clone());
            thread::spawn(move || {
                // Before the removal: 0..300 (every routee, cached list).
                for n in 0..300 {
                    router.tell(Msg::From { from, n });
                }
                done.send(()).unwrap();
                go.recv().unwrap();
                // After: 1_000..1_300.
                for n in 1_000..1_300 {
                    router.tell(Msg::From { from, n });
                }
            })
        })
        .collect();
    for _ in 0..senders {
        done_rx.recv().unwrap();
    }
    router.remove_routee(routees[0].clone());
    // Answered after the removal: the list without r0 is published.
    let now = router.current_routees(T).await.unwrap();
    assert_eq!(now, routees[1..].to_vec());
    // Each sender learns of it through its channel, after the removal.
    for go in &go_tx {
        go.send(()).unwrap();
    }
    for t in threads {
        t.join().unwrap();
    }
    let got = {
        let deadline = std::time::Instant::now() + T;
        let mut got: Vec<Vec<(usize, u64)>> = vec![Vec::new(); 3];
        let mut seen = 0;
        while seen < senders * 600 && std::time::Instant::now() < deadline {
            for (i, g) in takes(&routees).await.into_iter().enumerate() {
                seen += g.len();
                got[i].extend(g);
            }
        }
        assert_eq!(seen, senders * 600);
        got
    };
    assert_eq!(got[0].len(), senders * 100, "r0 got its share before");
    assert!(got[0].iter().all(|&(_, n)| n < 1_000), "r0 after removal");
    for (i, g) in got.iter().enumerate().skip(1) {
        let after = g.iter().filter(|&&(_, n)| n >= 1_000).count();
        assert_eq!(
            after,
            senders * 150,
            "routee r{i}'s share after the removal"
        );
    }
    system.terminate().await;
}

/// A router whose routees are routers: each level keeps its own rotation
/// on the sending thread, so the innermost routees get equal shares.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_of_routers_rotates_at_each_level() {
    let system = common::system("rr-nested").unwrap();
    let inner: Vec<_> = (0..2)
        .map(|i| {
            Router::pool(2, recorder())
                .spawn(&system, &format!("inner{i}"))
                .unwrap()
        })
        .collect();
    let mut leaves = Vec::new();
    for r in &inner {
        leaves.extend(r.current_routees(T).await.unwrap());
    }
    let outer = Router::group(inner.iter().map(|r| r.to_actor_ref()).collect())
        .spawn(&system, "outer")
        .unwrap();
    outer.current_routees(T).await.unwrap();
    for n in 0..40 {
        outer.tell(Msg::From { from: 0, n });
    }
    let counts = per_sender_counts(&leaves, 40).await;
    assert!(counts.iter().all(|c| c[&0] == 10), "{counts:?}");
    system.terminate().await;
}

/// A group that holds its own routed ref: a message routed to it is
/// routed again, on the same thread, inside the first routing (this
/// thread's view is in use then). Every message still ends at the real
/// routee, in the order sent.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_routing_to_itself_routes_again_on_the_same_thread() {
    let system = common::system("rr-self").unwrap();
    let recorder = system.spawn_anonymous(recorder()).unwrap();
    let group = Router::group(vec![recorder.clone()])
        .spawn(&system, "self-group")
        .unwrap();
    group.add_routee(group.to_actor_ref());
    assert_eq!(group.current_routees(T).await.unwrap().len(), 2);
    thread::spawn({
        let group = group.clone();
        move || {
            for n in 0..20 {
                group.tell(Msg::From { from: 0, n });
            }
        }
    })
    .join()
    .unwrap();
    let mut got = Vec::new();
    for _ in 0..50 {
        got.extend(takes(std::slice::from_ref(&recorder)).await.remove(0));
        if got.len() >= 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let want: Vec<_> = (0..20).map(|n| (0, n)).collect();
    assert_eq!(got, want);
    system.terminate().await;
}
