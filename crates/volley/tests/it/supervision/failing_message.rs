//! Which message `pre_restart` gets after a failure, whatever way the
//! message reached `handle`. Ported from Pekko's classic
//! `TimersAndSupervisionSpec` (actor-tests, in `TimerSpec.scala`): "pass
//! the unwrapped timer message to preRestart for non-stash actors" →
//! `pre_restart_gets_the_timer_message_that_failed`. The same fact for the
//! other ways a message comes to `handle` (Pekko's `currentMessage`, which
//! `preRestart` gets, is whatever `receive` was handling):
//! - a `watch_with` message (DeathWatchSpec "watch with custom message",
//!   failing) → `pre_restart_gets_the_watch_with_message_that_failed`;
//! - an unstashed message (ActorWithStashSpec) →
//!   `pre_restart_gets_the_unstashed_message_that_failed`;
//! - a message through an adapter (typed `MessageAdapterSpec`) →
//!   `pre_restart_gets_the_adapted_message_that_failed`.
//!
//! A volley bug these found, now fixed (`src/actor/cell/lifecycle.rs`): a
//! `watch_with` message was handed to `handle` without `keep_for_restart`,
//! so a failure there gave `pre_restart` no message.
//!
//! volley hands `pre_restart` the message only when `keep_for_restart`
//! kept a copy (Rust moves the message into `handle`;
//! docs/reference/supervision.md): the actor here keeps the failing kinds.

use crate::common;

use std::time::Duration;

use volley::{
    Actor, ActorError, ActorRef, AnyRef, Context, Failure, HandleResult, Props, TimerKey,
};
use volley_testkit::{actor_fn, TestProbe};

#[derive(Debug)]
enum M {
    StartTimer,
    Scheduled,
    WatchIt(AnyRef),
    Gone(u32),
    Hold(u32),
    Release,
    Adapted(u32),
}

/// Fails on `Scheduled`, `Gone`, `Adapted` and, once released, on an
/// unstashed `Hold`; reports what `pre_restart` got, then what the new
/// instance handles.
struct Failing {
    events: ActorRef<String>,
    released: bool,
}

impl Actor for Failing {
    type Msg = M;
    fn keep_for_restart(msg: &M) -> Option<M> {
        match msg {
            M::Scheduled => Some(M::Scheduled),
            M::Gone(n) => Some(M::Gone(*n)),
            M::Hold(n) => Some(M::Hold(*n)),
            M::Adapted(n) => Some(M::Adapted(*n)),
            _ => None,
        }
    }
    fn pre_restart(&mut self, ctx: &mut Context<Self>, _f: &Failure, msg: Option<M>) {
        self.events.tell(format!("pre_restart {msg:?}"));
        ctx.cancel_all_timers();
    }
    fn handle(&mut self, ctx: &mut Context<Self>, msg: M) -> HandleResult {
        match msg {
            M::StartTimer => ctx.schedule_once(
                TimerKey::from("key"),
                Duration::from_millis(10),
                M::Scheduled,
            ),
            M::WatchIt(target) => {
                ctx.watch_with(&target, M::Gone(7));
                self.events.tell("watching".into());
            }
            M::Hold(n) if !self.released => ctx.stash(M::Hold(n))?,
            M::Release => {
                self.released = true;
                ctx.unstash_all();
            }
            other => return Err(ActorError::new(format!("failing on {other:?}"))),
        }
        Ok(())
    }
}

fn failing(system: &volley::ActorSystem) -> (ActorRef<M>, TestProbe<String>) {
    let events = TestProbe::<String>::new(system);
    let tx = events.actor_ref();
    let actor = system
        .spawn_anonymous(Props::new(move || Failing {
            events: tx.clone(),
            released: false,
        }))
        .unwrap();
    (actor, events)
}

/// TimersAndSupervisionSpec "pass the unwrapped timer message to
/// preRestart for non-stash actors".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_restart_gets_the_timer_message_that_failed() {
    let system = common::system("failing-timer").unwrap();
    let (actor, events) = failing(&system);
    actor.tell(M::StartTimer);
    events.expect_msg("pre_restart Some(Scheduled)".to_string());
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&actor);
    system.stop(&actor);
    watcher.expect_terminated(&actor);
    system.terminate().await;
}

/// A `watch_with` message is handled as any other, and so is a failure
/// in its handling: `pre_restart` gets it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_restart_gets_the_watch_with_message_that_failed() {
    let system = common::system("failing-watch-with").unwrap();
    let (actor, events) = failing(&system);
    let target = system.spawn_anonymous(actor_fn(|_, ()| Ok(()))).unwrap();
    actor.tell(M::WatchIt(target.to_any()));
    events.expect_msg("watching".to_string());
    system.stop(&target);
    events.expect_msg("pre_restart Some(Gone(7))".to_string());
    system.terminate().await;
}

/// An unstashed message that fails is the one `pre_restart` gets.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_restart_gets_the_unstashed_message_that_failed() {
    let system = common::system("failing-unstashed").unwrap();
    let (actor, events) = failing(&system);
    actor.tell(M::Hold(3));
    actor.tell(M::Release);
    events.expect_msg("pre_restart Some(Hold(3))".to_string());
    system.terminate().await;
}

/// A message that came through an adapter and fails is the one
/// `pre_restart` gets.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_restart_gets_the_adapted_message_that_failed() {
    let system = common::system("failing-adapted").unwrap();
    let (actor, events) = failing(&system);
    let adapter = actor.adapt(M::Adapted);
    adapter.tell(5);
    events.expect_msg("pre_restart Some(Adapted(5))".to_string());
    system.terminate().await;
}
