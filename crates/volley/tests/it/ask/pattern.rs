//! Cases ported from Pekko's `AskSpec` (actor-tests, `pattern`) and the
//! typed `AskSpec` (actor-typed-tests), in volley's API.
//!
//! Skipped, with the reason:
//! - "return broken promises on EmptyLocalActorRefs", "work for
//!   ActorSelection", "send to DeadLetter when child does not exist":
//!   volley has no `ActorSelection`; a lookup of a missing path is `None`.
//! - "return broken promises on unsupported ActorRefs": every volley ref
//!   supports ask.
//! - "encode target name in temporary actor name", "proper path when
//!   promise actor terminated": a reply handle has no path under `/temp`.
//! - "return broken promises on negative timeout": `Duration` cannot be
//!   negative; the zero timeout is ported.
//! - typed "fail asking actor if responder function throws" /
//!   `context.ask` adapters: `Context::ask`, in `pekko_context_ask.rs`.

use crate::common;

use std::time::Duration;

use volley::{ActorRef, AskError, DeadLetter, ReplyTo};
use volley_testkit::{actor_fn, actor_fn_with, TestProbe};

const T: Duration = Duration::from_secs(10);

enum Msg {
    /// Replies with the number.
    Echo(u32, ReplyTo<u32>),
    /// Keeps the reply handle, answering never.
    Hold(ReplyTo<u32>),
    /// Answers the held handle with the number.
    Release(u32),
    /// Drops the reply handle unanswered.
    Ignore(ReplyTo<u32>),
}

fn server(system: &volley::ActorSystem, name: &str) -> ActorRef<Msg> {
    let held = Vec::<ReplyTo<u32>>::new();
    let server = actor_fn_with(held, |held, _ctx, msg: Msg| {
        match msg {
            Msg::Echo(n, r) => r.tell(n),
            Msg::Hold(r) => held.push(r),
            Msg::Release(n) => {
                for r in held.drain(..) {
                    r.tell(n);
                }
            }
            Msg::Ignore(r) => drop(r),
        }
        Ok(())
    });
    system.spawn(name, server.props()).unwrap()
}

/// typed AskSpec, "must succeed when the actor is alive": the reply
/// completes the ask.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_succeeds_when_alive() {
    let system = common::system("ask-alive").unwrap();
    let s = server(&system, "s");
    assert_eq!(s.ask(|r| Msg::Echo(7, r), T).await, Ok(7));
    system.terminate().await;
}

/// AskSpec, "return broken promises on DeadLetters" and typed AskSpec,
/// "must fail the future if the actor is already terminated".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_to_terminated_actor_fails_at_once() {
    let system = common::system("ask-dead").unwrap();
    let s = server(&system, "s");
    let probe = TestProbe::<()>::new(&system);
    system.stop(&s);
    probe.expect_terminated(&s);
    match s.ask(|r| Msg::Echo(1, r), T).await {
        Err(AskError::RecipientTerminated(path)) => assert!(path.ends_with("/user/s"), "{path}"),
        other => panic!("expected RecipientTerminated, got {other:?}"),
    }
    system.terminate().await;
}

/// AskSpec, "return broken promises on 0 timeout": a zero timeout fails the
/// ask with a timeout when no reply is there at once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_timeout_fails() {
    let system = common::system("ask-zero").unwrap();
    let s = server(&system, "s");
    match s.ask(Msg::Hold, Duration::ZERO).await {
        Err(AskError::Timeout { after, .. }) => assert_eq!(after, Duration::ZERO),
        other => panic!("expected a timeout, got {other:?}"),
    }
    system.terminate().await;
}

/// AskSpec, "include target information in AskTimeout" and "include
/// timeout information in AskTimeout"; typed AskSpec, "must fail the
/// future if the actor doesn't reply in time".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_names_target_and_duration() {
    let system = common::system("ask-timeout").unwrap();
    let s = server(&system, "silent");
    let after = Duration::from_millis(300);
    match s.ask(Msg::Hold, after).await {
        Err(AskError::Timeout { target, after: a }) => {
            assert!(target.ends_with("/user/silent"), "{target}");
            assert_eq!(a, after);
            let text = AskError::Timeout { target, after: a }.to_string();
            assert!(text.contains("silent"), "{text}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    system.terminate().await;
}

/// typed AskSpec, "must publish a dead letter if the response arrives
/// after the timeout" (AskSpec: the promise actor is gone, the reply goes
/// to dead letters).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_reply_is_a_dead_letter() {
    let system = common::system("ask-late").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let s = server(&system, "late");
    let r = s.ask(Msg::Hold, Duration::from_millis(100)).await;
    assert!(matches!(r, Err(AskError::Timeout { .. })), "{r:?}");
    s.tell(Msg::Release(5));
    let letter = dead.receive_msg();
    assert!(letter.message_type.contains("u32"), "{letter:?}");
    system.terminate().await;
}

/// AskSpec, "allow watching the promiseActor and send Terminated() when
/// completes": a watcher of the reply handle gets `Terminated` once the ask
/// is answered.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_handle_terminates_when_answered() {
    let system = common::system("ask-watch").unwrap();
    let s = server(&system, "s");
    let probe = TestProbe::<ReplyTo<u32>>::new(&system);
    // A middleman forwards the reply handle to the probe before answering.
    let p = probe.actor_ref();
    let ask = tokio::spawn({
        let s = s.clone();
        async move {
            s.ask(
                |r: ReplyTo<u32>| {
                    p.tell(r.clone());
                    Msg::Hold(r)
                },
                T,
            )
            .await
        }
    });
    let handle = probe.receive_msg();
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&handle);
    watcher.expect_no_msg(Duration::from_millis(100));
    s.tell(Msg::Release(3));
    assert_eq!(ask.await.unwrap(), Ok(3));
    watcher.expect_terminated(&handle);
    system.terminate().await;
}

/// AskSpec, "send to DeadLetter when answering to grandchild" (the second
/// answer to a completed ask): only the first reply counts, the second is a
/// dead letter.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_reply_is_a_dead_letter() {
    let system = common::system("ask-twice").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let twice = actor_fn(|_, r: ReplyTo<u32>| {
        r.tell(1);
        r.tell(2);
        Ok(())
    });
    let a = system.spawn("twice", twice).unwrap();
    assert_eq!(a.ask(|r| r, T).await, Ok(1));
    let letter = dead.receive_msg();
    assert!(letter.message_type.contains("u32"), "{letter:?}");
    system.terminate().await;
}

/// typed AskSpec, "must fail the future if the actor does not reply"
/// (volley: the request is dropped with its handle, so the ask fails at
/// once with `ReplyDropped` instead of waiting for its timeout, as
/// docs/reference/ask.md says).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_reply_handle_fails_the_ask() {
    let system = common::system("ask-dropped").unwrap();
    let s = server(&system, "s");
    match s.ask(Msg::Ignore, T).await {
        Err(AskError::ReplyDropped(path)) => assert!(path.ends_with("/user/s"), "{path}"),
        other => panic!("expected ReplyDropped, got {other:?}"),
    }
    system.terminate().await;
}

/// typed AskSpec, "must work for multiple concurrent asks": each ask gets
/// its own reply.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_asks_get_their_own_replies() {
    let system = common::system("ask-many").unwrap();
    let s = server(&system, "s");
    let tasks: Vec<_> = (0..50u32)
        .map(|n| {
            let s = s.clone();
            tokio::spawn(async move { s.ask(|r| Msg::Echo(n, r), T).await })
        })
        .collect();
    for (n, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap(), Ok(n as u32));
    }
    system.terminate().await;
}

/// AskSpec, "return broken promises on terminated system" (the typed
/// variant asks after `terminate`): the ask fails, it does not hang.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_after_system_terminated_fails() {
    let system = common::system("ask-system-gone").unwrap();
    let s = server(&system, "s");
    system.terminate().await;
    let r = s.ask(|r| Msg::Echo(1, r), T).await;
    assert!(
        matches!(
            r,
            Err(AskError::RecipientTerminated(_)) | Err(AskError::SystemTerminated)
        ),
        "{r:?}"
    );
}
