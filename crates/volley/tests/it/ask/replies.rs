//! `ask`: the reply paths (at once, after the polling window, never), the
//! end of the exchange as the reply handle's watchers see it, and asks
//! from many tasks at once.

use crate::common;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use volley::{ActorRef, ActorSystem, AskError, ReplyTo, Settings};
use volley_testkit::{actor_fn, actor_fn_with, eventually, TestProbe};

enum Req {
    /// Replies `n + 1` at once.
    Inc(u64, ReplyTo<u64>),
    /// Replies `n + 1` after `ms` milliseconds (a timer of the actor's own).
    Later(u64, u64, ReplyTo<u64>),
    /// Keeps the handle and never replies.
    Keep(ReplyTo<u64>),
    /// Drops the handle without replying.
    Drop(ReplyTo<u64>),
    /// Replies to what `Later` put off.
    Due(u64, ReplyTo<u64>),
}

/// The handles a server hands to the test, to be watched.
type Handles = Arc<Mutex<Vec<ReplyTo<u64>>>>;

/// Serves `Req`; hands the handles it keeps to `handles` when given.
fn spawn_server(system: &ActorSystem, handles: Option<Handles>) -> ActorRef<Req> {
    let kept = Vec::<ReplyTo<u64>>::new();
    let server = actor_fn_with(kept, move |kept, ctx, msg: Req| {
        match msg {
            Req::Inc(n, r) => r.tell(n + 1),
            Req::Later(n, ms, r) => {
                ctx.schedule_once(n, Duration::from_millis(ms), Req::Due(n + 1, r))
            }
            Req::Due(n, r) => r.tell(n),
            Req::Keep(r) => {
                if let Some(handles) = &handles {
                    handles.lock().unwrap().push(r.clone());
                }
                kept.push(r);
            }
            Req::Drop(r) => drop(r),
        }
        Ok(())
    });
    system.spawn_anonymous(server.props()).unwrap()
}

fn server(system: &ActorSystem) -> ActorRef<Req> {
    spawn_server(system, None)
}

/// A reply after the polling window: the ask parks, is woken, and gets it.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_reply_after_the_polling_window_wakes_the_ask() {
    let system = common::system("ask-late").unwrap();
    let s = server(&system);
    let answer = s
        .ask(|r| Req::Later(41, 30, r), Duration::from_secs(10))
        .await;
    assert_eq!(answer, Ok(42));
    system.terminate().await;
}

/// With the window off (`ask_spin = "0s"`) every ask parks at once and is
/// woken by its reply.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_without_a_polling_window_are_answered() {
    let settings = Settings {
        ask_spin: Duration::ZERO,
        ..Settings::default()
    };
    let system = common::system_with("ask-park", settings).unwrap();
    let s = server(&system);
    for n in 0..1_000 {
        assert_eq!(
            s.ask(|r| Req::Inc(n, r), Duration::from_secs(10)).await,
            Ok(n + 1)
        );
    }
    system.terminate().await;
}

/// A reply handle dropped without a reply ends the ask at once, well
/// before its timeout.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_dropped_reply_handle_ends_the_ask_before_its_timeout() {
    let system = common::system("ask-dropped").unwrap();
    let s = server(&system);
    let started = std::time::Instant::now();
    let answer = s.ask(Req::Drop, Duration::from_secs(30)).await;
    assert!(
        matches!(answer, Err(AskError::ReplyDropped(_))),
        "{answer:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    system.terminate().await;
}

/// Many tasks asking at once on a multi-threaded runtime: every answer
/// is the right one (each ask polls its own exchange).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_asks_from_many_tasks_each_get_their_own_reply() {
    let system = common::system("ask-many").unwrap();
    let s = server(&system);
    let tasks: Vec<_> = (0..64u64)
        .map(|t| {
            let s = s.clone();
            tokio::spawn(async move {
                for i in 0..200u64 {
                    let n = t * 1_000 + i;
                    let answer = s.ask(|r| Req::Inc(n, r), Duration::from_secs(10)).await;
                    assert_eq!(answer, Ok(n + 1));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    system.terminate().await;
}

/// As Akka's PromiseActorRef: once its ask is over (answered or timed
/// out) a reply handle is terminated. A watcher that was there hears it
/// when the ask times out; one that watches afterwards hears it at once.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn the_reply_handle_of_a_timed_out_ask_is_terminated_for_its_watchers() {
    let system = common::system("ask-watch").unwrap();
    let handles = Handles::default();
    let s = spawn_server(&system, Some(handles.clone()));
    let early = TestProbe::<()>::new(&system);
    // Watched while the ask waits: told when it times out.
    let waiting = {
        let s = s.clone();
        tokio::spawn(async move { s.ask(Req::Keep, Duration::from_millis(300)).await })
    };
    let handle = eventually("the server to hand out the reply handle", || {
        handles.lock().unwrap().first().cloned()
    })
    .await;
    early.watch(&handle);
    assert!(matches!(
        waiting.await.unwrap(),
        Err(AskError::Timeout { .. })
    ));
    early.expect_terminated(&handle);
    // Watched after the timeout: told at once.
    assert!(handle.is_terminated());
    TestProbe::<()>::new(&system).expect_terminated(&handle);
    system.terminate().await;
}

/// `try_ask` refuses at once when the bounded mailbox is full, where
/// `ask` waits for room; both get their answer once there is room.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_ask_refuses_a_full_mailbox_at_once() {
    // A pool: the handler blocks its thread, which an `app-runtime`
    // dispatcher must not (docs/reference/dispatchers.md).
    let system = ActorSystem::new("try-ask").unwrap();
    let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let taken = Arc::new(AtomicUsize::new(0));
    let (g, counted) = (gate.clone(), taken.clone());
    // Counts the requests it has taken, blocks its thread until the gate
    // opens, then answers 7.
    let gated = actor_fn(move |_ctx, reply_to: ReplyTo<u64>| {
        counted.fetch_add(1, Ordering::SeqCst);
        let (open, cv) = &*g;
        let mut open = open.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        reply_to.tell(7);
        Ok(())
    });
    let actor = system
        .spawn(
            "gated",
            gated.with_mailbox(volley::MailboxConfig::Bounded {
                capacity: 1,
                overflow: volley::Overflow::DropNewest,
            }),
        )
        .unwrap();
    let t = Duration::from_secs(10);
    // The first blocks the actor, the second fills the mailbox.
    let first = tokio::spawn({
        let a = actor.clone();
        async move { a.ask(|r| r, t).await }
    });
    // Taken by the actor, which now blocks.
    volley_testkit::await_cond("the first ask taken", || taken.load(Ordering::SeqCst) == 1);
    // An ask queues its request when first polled.
    let mut second = std::pin::pin!(actor.ask(|r| r, t));
    let pending = std::future::poll_fn(|cx| Poll::Ready(second.as_mut().poll(cx).is_pending()));
    assert!(pending.await, "answered while the actor blocks");
    let refused = actor.try_ask(|r: ReplyTo<u64>| r, t).await;
    assert!(
        matches!(&refused, Err(AskError::MailboxFull(p)) if p.contains("/user/gated")),
        "{refused:?}"
    );
    // `ask` waits for room instead.
    let third = tokio::spawn({
        let a = actor.clone();
        async move { a.ask(|r| r, t).await }
    });
    // A window for it to end wrongly (what is checked).
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!third.is_finished());
    {
        let (open, cv) = &*gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
    assert_eq!(first.await.unwrap(), Ok(7));
    assert_eq!(second.await, Ok(7));
    assert_eq!(third.await.unwrap(), Ok(7));
    system.terminate().await;
}
