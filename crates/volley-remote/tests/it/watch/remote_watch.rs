//! Remote death watch between two nodes of one process: `Terminated`
//! exactly once when the watched actor stops, when it was never there,
//! when its node is given up by the failure detector, and when its node
//! restarts with a new incarnation; unwatch across nodes; `is_terminated`
//! and asks to a dead remote actor; the lifecycle events.

use crate::common;
use crate::log_capture;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{
    add, await_incoming_watches, events_so_far, free_port, node, on_port, quick_detector,
    record_events, remote_ref, spawn_calculator, Calc, Node,
};
use volley::{
    Actor, ActorRef, AnyRef, AskError, Context, HandleResult, Props, TellError, Terminated,
    ToAnyRef,
};
use volley_remote::{DisassociationReason, RemotingEvent};

enum WatcherMsg {
    Watch(AnyRef),
    Unwatch(AnyRef),
}

/// Watches what it is told to and counts the `Terminated` it gets.
struct Watcher {
    terminated: Arc<AtomicUsize>,
    who: Arc<Mutex<Vec<String>>>,
}

impl Actor for Watcher {
    type Msg = WatcherMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: WatcherMsg) -> HandleResult {
        match msg {
            WatcherMsg::Watch(target) => ctx.watch(&target),
            WatcherMsg::Unwatch(target) => ctx.unwatch(&target),
        }
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.terminated.fetch_add(1, Ordering::SeqCst);
        self.who.lock().unwrap().push(t.actor.path().to_string());
        Ok(())
    }
}

struct Watching {
    watcher: ActorRef<WatcherMsg>,
    terminated: Arc<AtomicUsize>,
    who: Arc<Mutex<Vec<String>>>,
}

fn spawn_watcher(node: &Node, name: &str) -> Watching {
    let terminated = Arc::new(AtomicUsize::new(0));
    let who = Arc::new(Mutex::new(Vec::new()));
    let (t, w) = (terminated.clone(), who.clone());
    let watcher = node
        .system
        .spawn(
            name,
            Props::new(move || Watcher {
                terminated: t.clone(),
                who: w.clone(),
            }),
        )
        .unwrap();
    Watching {
        watcher,
        terminated,
        who,
    }
}

async fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    log_capture::install();
    let start = Instant::now();
    while !done() {
        if start.elapsed() >= limit {
            for e in log_capture::events(|_| true) {
                eprintln!("{:?} {}", e.level, e.text);
            }
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// An ask to `dead` fails at once with `RecipientTerminated`.
async fn assert_ask_fails_as_terminated(dead: &ActorRef<Calc>) {
    let err = dead
        .ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 1,
                reply_to,
            },
            common::T,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, AskError::RecipientTerminated(_)), "{err:?}");
}

/// A window for a stray duplicate `Terminated` to arrive, before counting
/// that there is none: time passing is what this checks.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_remote_actor_that_stops_is_reported_once() {
    let a = node("watch-a", quick_detector()).await;
    let b = node("watch-b", quick_detector()).await;
    let calc = spawn_calculator(&b, "calc");
    let remote = remote_ref(&a, &b, "calc");
    assert_eq!(add(&remote, 1, 2).await, 3);
    let w = spawn_watcher(&a, "watcher");
    w.watcher.tell(WatcherMsg::Watch(remote.to_any_ref()));
    // The watch must be in place before the stop: it travels on the control
    // lane, the stop here is local to b.
    await_incoming_watches(&b, &a, 1);
    assert_eq!(
        w.terminated.load(Ordering::SeqCst),
        0,
        "no Terminated while alive"
    );
    calc.graceful_stop();
    wait_until(common::T, "Terminated", || {
        w.terminated.load(Ordering::SeqCst) > 0
    })
    .await;
    settle().await;
    assert_eq!(w.terminated.load(Ordering::SeqCst), 1, "exactly once");
    assert_eq!(w.who.lock().unwrap()[0], remote.path().to_string());
    // A path is whatever lives there: the death of its actor does not make
    // the path dead (resolve_rebinding.rs checks a ref with the uid).
    assert!(!remote.is_terminated(), "a path is not known dead");
    assert!(
        !w.watcher.is_terminated(),
        "the watcher handled it and lives"
    );
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_a_remote_actor_that_is_not_there_gives_terminated() {
    let a = node("watch-a", quick_detector()).await;
    let b = node("watch-b", quick_detector()).await;
    let missing = remote_ref(&a, &b, "nobody");
    let w = spawn_watcher(&a, "watcher");
    w.watcher.tell(WatcherMsg::Watch(missing.to_any_ref()));
    wait_until(common::T, "Terminated", || {
        w.terminated.load(Ordering::SeqCst) > 0
    })
    .await;
    settle().await;
    assert_eq!(w.terminated.load(Ordering::SeqCst), 1);
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwatched_remote_actor_stops_without_terminated() {
    let a = node("watch-a", quick_detector()).await;
    let b = node("watch-b", quick_detector()).await;
    let calc = spawn_calculator(&b, "calc");
    let other = spawn_calculator(&b, "other");
    let remote = remote_ref(&a, &b, "calc");
    let remote_other = remote_ref(&a, &b, "other");
    let w = spawn_watcher(&a, "watcher");
    w.watcher.tell(WatcherMsg::Watch(remote.to_any_ref()));
    w.watcher.tell(WatcherMsg::Watch(remote_other.to_any_ref()));
    // Both watches in place on b, then the unwatch arrived there.
    await_incoming_watches(&b, &a, 2);
    w.watcher.tell(WatcherMsg::Unwatch(remote.to_any_ref()));
    await_incoming_watches(&b, &a, 1);
    calc.graceful_stop();
    // The other one proves that notices flow, so the silence about the
    // first is the unwatch's doing.
    other.graceful_stop();
    wait_until(common::T, "Terminated of the other", || {
        w.terminated.load(Ordering::SeqCst) > 0
    })
    .await;
    settle().await;
    assert_eq!(w.terminated.load(Ordering::SeqCst), 1);
    assert_eq!(w.who.lock().unwrap()[0], remote_other.path().to_string());
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_actor_is_stopped_through_its_ref() {
    let a = node("watch-a", quick_detector()).await;
    let b = node("watch-b", quick_detector()).await;
    let calc = spawn_calculator(&b, "calc");
    let remote = remote_ref(&a, &b, "calc");
    assert_eq!(add(&remote, 2, 2).await, 4);
    remote.graceful_stop();
    wait_until(common::T, "the remote stop", || calc.is_terminated()).await;
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_goes_silent_is_given_up_and_its_watchers_told_once() {
    let a = node("watch-a", quick_detector()).await;
    let b = node("watch-b", quick_detector()).await;
    let events = record_events(&a);
    let names = ["w1", "w2", "w3"];
    let refs: Vec<_> = names
        .iter()
        .map(|n| {
            spawn_calculator(&b, n);
            remote_ref(&a, &b, n)
        })
        .collect();
    for r in &refs {
        assert_eq!(add(r, 1, 1).await, 2);
    }
    let w = spawn_watcher(&a, "watcher");
    for r in &refs {
        w.watcher.tell(WatcherMsg::Watch(r.to_any_ref()));
    }
    await_incoming_watches(&b, &a, 3);
    let b_address = b.remoting.address().clone();
    let b_uid = b.remoting.uid();
    // Silence without a goodbye: remoting stops, the process lives on.
    b.remoting.shutdown();
    wait_until(common::T, "three Terminated", || {
        w.terminated.load(Ordering::SeqCst) >= 3
    })
    .await;
    settle().await;
    assert_eq!(
        w.terminated.load(Ordering::SeqCst),
        3,
        "once per watched actor"
    );
    assert!(!w.watcher.is_terminated());
    for r in &refs {
        assert!(r.is_terminated(), "{} is known dead", r.path());
    }
    assert_ask_fails_as_terminated(&refs[0]).await;
    assert_eq!(a.remoting.is_reachable(&b_address), Some(false));
    // Nothing queues for a node that is gone: a send fails at once, a tell
    // is a counted dead letter.
    let sent = refs[1].send(Calc::Seq { from: 0, n: 0 }).await;
    assert!(matches!(sent, Err(TellError::Terminated(_))), "{sent:?}");
    let dead_letters = a.system.dead_letter_count();
    refs[1].tell(Calc::Seq { from: 0, n: 1 });
    assert_eq!(a.system.dead_letter_count(), dead_letters + 1);
    let events = events_so_far(&events);
    assert!(
        events.contains(&RemotingEvent::Associated {
            remote: b_address.clone(),
            uid: b_uid
        }),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, RemotingEvent::Quarantined { remote, uid, .. } if *remote == b_address && *uid == b_uid)),
        "{events:?}"
    );
    let terminated: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, RemotingEvent::AddressTerminated { .. }))
        .collect();
    assert_eq!(terminated.len(), 1, "{events:?}");
    assert!(
        matches!(
            terminated[0],
            RemotingEvent::AddressTerminated {
                reason: DisassociationReason::Unreachable,
                ..
            }
        ),
        "the detector is the reason: {events:?}"
    );
    // The lost connection may be reported first (a reconnect follows);
    // the end of the node once, and not again for the connections it drops.
    let ended = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                RemotingEvent::Disassociated {
                    reason: DisassociationReason::Unreachable,
                    ..
                }
            )
        })
        .count();
    assert_eq!(ended, 1, "{events:?}");
    let after_the_end = events
        .iter()
        .skip_while(|e| !matches!(e, RemotingEvent::AddressTerminated { .. }))
        .filter(|e| matches!(e, RemotingEvent::Disassociated { .. }))
        .count();
    assert_eq!(after_the_end, 0, "{events:?}");
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_is_a_new_incarnation_associated_at_once() {
    let port = free_port();
    let a = node("watch-a", quick_detector()).await;
    let events = record_events(&a);
    let b1 = node("watch-b", on_port(port)).await;
    spawn_calculator(&b1, "calc");
    let old = b1
        .system
        .lookup("/user/calc")
        .unwrap()
        .unwrap()
        .downcast::<Calc>()
        .unwrap();
    // A ref with the old actor's uid, as a message from b1 would carry it.
    let old_remote = a
        .remoting
        .resolve::<Calc>(&format!("{}/user/calc", b1.remoting.address()))
        .unwrap();
    assert_eq!(add(&old_remote, 1, 1).await, 2);
    let w = spawn_watcher(&a, "watcher");
    w.watcher.tell(WatcherMsg::Watch(old_remote.to_any_ref()));
    await_incoming_watches(&b1, &a, 1);
    let (old_uid, b_address) = (b1.remoting.uid(), b1.remoting.address().clone());
    drop(old);
    b1.remoting.shutdown();
    b1.system.terminate().await;
    // Back on the same port before the detector would notice.
    let b2 = node("watch-b", on_port(port)).await;
    spawn_calculator(&b2, "calc");
    assert_ne!(b2.remoting.uid(), old_uid);
    let fresh = remote_ref(&a, &b2, "calc");
    let start = Instant::now();
    loop {
        let answer = fresh
            .ask(
                |reply_to| Calc::Add {
                    a: 2,
                    b: 3,
                    reply_to,
                },
                Duration::from_millis(500),
            )
            .await;
        if answer == Ok(5) {
            break;
        }
        assert!(
            start.elapsed() < common::T,
            "the new incarnation never answered: {answer:?}"
        );
    }
    wait_until(
        common::T,
        "Terminated of the old incarnation's actor",
        || w.terminated.load(Ordering::SeqCst) > 0,
    )
    .await;
    settle().await;
    assert_eq!(w.terminated.load(Ordering::SeqCst), 1);
    let events = events_so_far(&events);
    assert!(
        events.contains(&RemotingEvent::Associated {
            remote: b_address.clone(),
            uid: b2.remoting.uid()
        }),
        "{events:?}"
    );
    assert!(
        events.iter().any(
            |e| matches!(e, RemotingEvent::AddressTerminated { uid: Some(u), .. } if *u == old_uid)
        ),
        "{events:?}"
    );
    assert!(
        !events.iter().any(
            |e| matches!(e, RemotingEvent::Quarantined { uid, .. } if *uid == b2.remoting.uid())
        ),
        "the new incarnation is not quarantined: {events:?}"
    );
    let _ = DisassociationReason::Restarted;
    a.system.terminate().await;
    b2.system.terminate().await;
}

/// Counts the `i64`s it gets, and remembers the last.
struct Tally(Arc<AtomicUsize>, Arc<Mutex<i64>>);

impl Actor for Tally {
    type Msg = i64;
    fn handle(&mut self, _ctx: &mut Context<Self>, n: i64) -> HandleResult {
        self.0.fetch_add(1, Ordering::SeqCst);
        *self.1.lock().unwrap() = n;
        Ok(())
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_flushes_what_is_queued_and_says_goodbye() {
    log_capture::install();
    let a = node("leave-a", quick_detector()).await;
    let b = node("leave-b", quick_detector()).await;
    let events = record_events(&a);
    let (count, last) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(0)));
    let (c, l) = (count.clone(), last.clone());
    a.system
        .spawn("tally", Props::new(move || Tally(c.clone(), l.clone())))
        .unwrap();
    spawn_calculator(&b, "calc");
    let w = spawn_watcher(&a, "watcher");
    let watched = remote_ref(&a, &b, "calc");
    assert_eq!(add(&watched, 1, 1).await, 2);
    w.watcher.tell(WatcherMsg::Watch(watched.to_any_ref()));
    await_incoming_watches(&b, &a, 1);
    let tally = b
        .remoting
        .resolve::<i64>(&format!("{}/user/tally", a.remoting.address()))
        .unwrap();
    for n in 1..=1000 {
        tally.tell(n);
    }
    let b_address = b.remoting.address().clone();
    b.system.terminate().await;
    wait_until(common::T, "all 1000 tells", || {
        count.load(Ordering::SeqCst) >= 1000
    })
    .await;
    assert_eq!(*last.lock().unwrap(), 1000, "in order, the last one last");
    wait_until(common::T, "Terminated", || {
        w.terminated.load(Ordering::SeqCst) > 0
    })
    .await;
    settle().await;
    assert_eq!(count.load(Ordering::SeqCst), 1000);
    assert_eq!(w.terminated.load(Ordering::SeqCst), 1);
    let events = events_so_far(&events);
    assert!(
        events.contains(&RemotingEvent::Disassociated {
            remote: b_address.clone(),
            reason: DisassociationReason::Shutdown
        }),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RemotingEvent::Quarantined { .. })),
        "a clean leave quarantines nothing: {events:?}"
    );
    // Other tests in this binary cut frames on purpose: only B's count.
    let cut = log_capture::events(|e| {
        e.text.contains("inside a frame") && e.text.contains(&b_address.to_string())
    });
    assert!(cut.is_empty(), "no frame cut part-way: {cut:?}");
    a.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_on_a_node_that_never_answers_ends_in_terminated() {
    let a = node("watch-a", quick_detector()).await;
    let events = record_events(&a);
    // Nobody listens there.
    let port = free_port();
    let nowhere = a
        .remoting
        .resolve::<Calc>(&format!("volley://ghost@127.0.0.1:{port}/user/calc"))
        .unwrap();
    let w = spawn_watcher(&a, "watcher");
    w.watcher.tell(WatcherMsg::Watch(nowhere.to_any_ref()));
    wait_until(common::T, "Terminated", || {
        w.terminated.load(Ordering::SeqCst) > 0
    })
    .await;
    settle().await;
    assert_eq!(w.terminated.load(Ordering::SeqCst), 1);
    assert!(nowhere.is_terminated(), "its node is down");
    events.fish_for(|e| {
        matches!(
            e,
            RemotingEvent::AddressTerminated {
                uid: None,
                reason: DisassociationReason::Unreachable,
                ..
            }
        )
    });
    a.system.terminate().await;
}
