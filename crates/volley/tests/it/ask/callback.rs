//! `ActorRef::ask_then` and `try_ask_then`: the ask's outcome goes to a
//! callback, with the errors the future form gives (a reply, a timeout, a
//! terminated recipient, a dropped handle, a full mailbox, a terminated
//! system), in the order of the replies, and a panicking callback does
//! not fail the replier.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use volley::{ActorRef, ActorSystem, AskError, DispatcherKind, ReplyTo, Settings};
use volley_testkit::actor_fn_with;

/// Long enough never to be reached by a passing test.
const LONG: Duration = Duration::from_secs(60);

enum Req {
    /// Replies `n + 1`.
    Inc(u64, ReplyTo<u64>),
    /// Keeps the handle and never replies.
    Keep(ReplyTo<u64>),
    /// Drops the handle without replying.
    Drop(ReplyTo<u64>),
}

fn spawn_server(system: &ActorSystem, name: &str) -> ActorRef<Req> {
    let server = actor_fn_with(Vec::new(), |kept, _ctx, msg: Req| {
        match msg {
            Req::Inc(n, r) => r.tell(n + 1),
            Req::Keep(r) => kept.push(r),
            Req::Drop(r) => drop(r),
        }
        Ok(())
    });
    system.spawn(name, server.props()).unwrap()
}

type Outcomes = mpsc::UnboundedReceiver<Result<u64, AskError>>;
type Callback = Box<dyn FnOnce(Result<u64, AskError>) + Send>;

/// Makes callbacks that send their outcomes to the returned receiver.
fn outcomes() -> (impl Fn() -> Callback + Clone, Outcomes) {
    let (tx, rx) = mpsc::unbounded_channel();
    let then = move || -> Callback {
        let tx = tx.clone();
        Box::new(move |result| {
            let _ = tx.send(result);
        })
    };
    (then, rx)
}

async fn next(rx: &mut Outcomes) -> Result<u64, AskError> {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("the callback ran within 10 s")
        .expect("the callback ran")
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn ask_then_hands_the_reply_to_the_callback() {
    let system = common::system("ask-then-reply").unwrap();
    let server = spawn_server(&system, "server");
    let (then, mut rx) = outcomes();
    server.ask_then(|r| Req::Inc(6, r), LONG, then());
    assert_eq!(next(&mut rx).await, Ok(7));
    server.try_ask_then(|r| Req::Inc(41, r), LONG, then());
    assert_eq!(next(&mut rx).await, Ok(42));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_unanswered_ask_then_times_out_with_the_futures_error() {
    let system = common::system("ask-then-timeout").unwrap();
    let server = spawn_server(&system, "server");
    let (then, mut rx) = outcomes();
    let after = Duration::from_millis(50);
    server.ask_then(Req::Keep, after, then());
    let got = next(&mut rx).await;
    let future = server.ask(Req::Keep, after).await;
    assert_eq!(got, future);
    assert!(
        matches!(&got, Err(AskError::Timeout { target, after: a }) if target.contains("/user/server") && *a == after),
        "{got:?}"
    );
    system.terminate().await;
}

/// A terminated recipient fails the ask before `ask_then` returns.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn ask_then_to_a_terminated_actor_fails_at_once() {
    let system = common::system("ask-then-dead").unwrap();
    let server = spawn_server(&system, "server");
    system.stop(&server);
    volley_testkit::eventually("the server terminated", || server.is_terminated()).await;
    let got = Arc::new(Mutex::new(None));
    let slot = got.clone();
    server.ask_then(Req::Keep, LONG, move |r| *slot.lock().unwrap() = Some(r));
    let got = got.lock().unwrap().take();
    assert!(
        matches!(&got, Some(Err(AskError::RecipientTerminated(p))) if p.contains("/user/server")),
        "{got:?}"
    );
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_dropped_reply_handle_fails_ask_then_at_once() {
    let system = common::system("ask-then-dropped").unwrap();
    let server = spawn_server(&system, "server");
    let (then, mut rx) = outcomes();
    server.ask_then(Req::Drop, LONG, then());
    let got = next(&mut rx).await;
    assert!(
        matches!(&got, Err(AskError::ReplyDropped(p)) if p.contains("/user/server")),
        "{got:?}"
    );
    system.terminate().await;
}

/// The reply handle outlives the system (the test keeps it): the waiting
/// ask ends with `SystemTerminated`, not at its timeout.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_waiting_ask_then_ends_when_the_system_terminates() {
    let system = common::system("ask-then-shutdown").unwrap();
    let (handles, mut kept) = mpsc::unbounded_channel::<ReplyTo<u64>>();
    let keeper = volley_testkit::actor_fn(move |_ctx, r: ReplyTo<u64>| {
        let _ = handles.send(r);
        Ok(())
    });
    let keeper = system.spawn("keeper", keeper).unwrap();
    let (then, mut rx) = outcomes();
    keeper.ask_then(|r| r, LONG, then());
    let _handle = kept.recv().await.expect("the keeper passed the handle on");
    system.terminate().await;
    assert_eq!(next(&mut rx).await, Err(AskError::SystemTerminated));
    // And one made afterwards fails at once.
    keeper.ask_then(|r| r, LONG, then());
    let got = next(&mut rx).await;
    assert!(
        matches!(
            got,
            Err(AskError::SystemTerminated | AskError::RecipientTerminated(_))
        ),
        "{got:?}"
    );
}

/// One replier's replies reach the callbacks in the order it sent them.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_then_callbacks_run_in_the_order_of_the_replies() {
    let system = common::system("ask-then-order").unwrap();
    let server = spawn_server(&system, "server");
    let (then, mut rx) = outcomes();
    for n in 0..500 {
        server.ask_then(|r| Req::Inc(n, r), LONG, then());
    }
    for n in 0..500 {
        assert_eq!(next(&mut rx).await, Ok(n + 1));
    }
    system.terminate().await;
}

/// A panic in the callback, which runs in the replier's `reply_to.tell`,
/// is logged; the replier is not failed and answers on.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panicking_callback_does_not_fail_the_replier() {
    common::quiet_deliberate_panics();
    let system = common::system("ask-then-panic").unwrap();
    let starts = Arc::new(AtomicUsize::new(0));
    let started = starts.clone();
    let server = actor_fn_with(0u64, |count, _ctx, r: ReplyTo<u64>| {
        *count += 1;
        r.tell(*count);
        Ok(())
    })
    .on_start(move |_, _| {
        started.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let server = system.spawn("server", server.props()).unwrap();
    server.ask_then(|r| r, LONG, |_| panic!("a callback panics on purpose"));
    let (then, mut rx) = outcomes();
    server.ask_then(|r| r, LONG, then());
    // The count survived: the actor was not restarted.
    assert_eq!(next(&mut rx).await, Ok(2));
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    system.terminate().await;
}

/// A gated actor with a mailbox of one: `try_ask_then` is refused at once
/// while it is full, `ask_then` waits for room and is answered.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_ask_then_refuses_a_full_mailbox_and_ask_then_waits_for_room() {
    // A pool: the handler blocks its thread, which an `app-runtime`
    // dispatcher must not (docs/reference/dispatchers.md).
    let system = ActorSystem::new("try-ask-then").unwrap();
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let taken = Arc::new(AtomicUsize::new(0));
    let (g, counted) = (gate.clone(), taken.clone());
    let gated = volley_testkit::actor_fn(move |_ctx, reply_to: ReplyTo<u64>| {
        counted.fetch_add(1, Ordering::SeqCst);
        let (open, cv) = &*g;
        let mut open = open.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        reply_to.tell(7);
        Ok(())
    });
    let mailbox = volley::MailboxConfig::Bounded {
        capacity: 1,
        overflow: volley::Overflow::DropNewest,
    };
    let actor = system.spawn("gated", gated.with_mailbox(mailbox)).unwrap();
    let (then, mut rx) = outcomes();
    // The first blocks the actor, the second fills the mailbox.
    actor.ask_then(|r| r, LONG, then());
    volley_testkit::eventually("the first ask taken", || taken.load(Ordering::SeqCst) == 1).await;
    actor.ask_then(|r| r, LONG, then());
    let refused = Arc::new(Mutex::new(None));
    let slot = refused.clone();
    actor.try_ask_then(|r| r, LONG, move |r| *slot.lock().unwrap() = Some(r));
    let refused = refused.lock().unwrap().take();
    assert!(
        matches!(&refused, Some(Err(AskError::MailboxFull(p))) if p.contains("/user/gated")),
        "{refused:?}"
    );
    actor.ask_then(|r| r, LONG, then());
    // A window for the waiting ask to end wrongly (what is checked).
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(rx.try_recv().is_err(), "answered while the actor blocks");
    {
        let (open, cv) = &*gate;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
    for _ in 0..3 {
        assert_eq!(next(&mut rx).await, Ok(7));
    }
    assert_eq!(
        taken.load(Ordering::SeqCst),
        3,
        "the refused one never came"
    );
    system.terminate().await;
}

/// An actor on the caller's runtime runs in the call, as in an `ask`'s
/// first poll: its reply reaches the callback before `ask_then` returns.
#[tokio::test]
async fn an_actor_on_the_callers_runtime_answers_before_ask_then_returns() {
    let mut settings = Settings::default();
    settings.default_dispatcher.kind = DispatcherKind::AppRuntime;
    let handle = tokio::runtime::Handle::current();
    let system = ActorSystem::with_runtime("ask-then-inline", settings, handle).unwrap();
    let server = spawn_server(&system, "server");
    // The first ask lets the actor run on this thread.
    assert_eq!(server.ask(|r| Req::Inc(0, r), LONG).await, Ok(1));
    let got = Arc::new(Mutex::new(None));
    let slot = got.clone();
    server.ask_then(
        |r| Req::Inc(1, r),
        LONG,
        move |r| *slot.lock().unwrap() = Some(r),
    );
    assert_eq!(got.lock().unwrap().take(), Some(Ok(2)));
    system.terminate().await;
}
