//! The stash, cases ported from Pekko's `ActorWithStashSpec` (classic)
//! and typed `StashBufferSpec` to volley's API.

use crate::common;

use std::time::Duration;

use common::eventually;
use volley::{ActorError, ActorRef, Props};
use volley_testkit::{actor_fn_with, FnActor, TestProbe};

enum Msg {
    /// Handled when open, stashed when closed.
    Work(u32),
    /// Opens and hands back everything stashed.
    Open,
    /// Hands back the oldest `n` stashed messages, staying closed.
    Release(usize),
    /// Fails the actor.
    Fail,
}

/// Stashes work while closed; reports what it handles.
fn gate(events: &ActorRef<String>) -> Props<FnActor<Msg, bool>> {
    let events = events.clone();
    actor_fn_with(false, move |open, ctx, msg: Msg| {
        match msg {
            Msg::Work(n) if !*open => ctx.stash(Msg::Work(n))?,
            Msg::Work(n) => {
                events.tell(format!("work {n}"));
            }
            Msg::Open => {
                *open = true;
                let n = ctx.unstash_all();
                events.tell(format!("unstashed {n}"));
            }
            Msg::Release(n) => {
                *open = true;
                let released = ctx.unstash(n);
                events.tell(format!(
                    "released {released} of {}",
                    released + ctx.stash_len()
                ));
                // Closed again once the released ones are handled.
                ctx.myself().tell(Msg::Work(u32::MAX));
            }
            Msg::Fail => return Err(ActorError::new("failing on purpose")),
        }
        Ok(())
    })
    .props()
}

/// ActorWithStashSpec "re-receive unstashed messages": stashed messages
/// come back in the order they were stashed, ahead of messages that
/// arrived after them.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstash_all_hands_back_in_order_ahead_of_newer_messages() {
    let system = common::system("stash-order").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let a = system.spawn("a", gate(&tx)).unwrap();
    for n in 1..=3 {
        a.tell(Msg::Work(n));
    }
    a.tell(Msg::Open);
    a.tell(Msg::Work(4));
    events.expect_msg("unstashed 3".to_string());
    assert_eq!(
        events.receive_n(4),
        vec!["work 1", "work 2", "work 3", "work 4"]
    );
    system.terminate().await;
}

/// StashBufferSpec "unstash a number of messages": only the oldest `n`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstash_n_hands_back_the_oldest_n() {
    let system = common::system("stash-n").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let a = system.spawn("a", gate(&tx)).unwrap();
    for n in 1..=4 {
        a.tell(Msg::Work(n));
    }
    a.tell(Msg::Release(2));
    events.expect_msg("released 2 of 4".to_string());
    assert_eq!(
        events.receive_n(3),
        vec!["work 1", "work 2", format!("work {}", u32::MAX).as_str()]
    );
    a.tell(Msg::Open);
    events.expect_msg("unstashed 2".to_string());
    assert_eq!(events.receive_n(2), vec!["work 3", "work 4"]);
    system.terminate().await;
}

/// ActorWithStashSpec "process stashed messages after restart" (typed
/// semantics: the new instance gets them first) and, with
/// `drop_stash_on_restart`, "discard stashed messages on restart" to
/// dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_hands_the_stash_to_the_new_instance_or_drops_it() {
    common::quiet_deliberate_panics();
    let system = common::system("stash-restart").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let keeps = system.spawn("keeps", gate(&tx)).unwrap();
    keeps.tell(Msg::Work(1));
    keeps.tell(Msg::Work(2));
    keeps.tell(Msg::Fail);
    // The new instance is closed too: it stashes them again; opening it
    // hands back both.
    keeps.tell(Msg::Open);
    events.expect_msg("unstashed 2".to_string());
    assert_eq!(events.receive_n(2), vec!["work 1", "work 2"]);

    let before = system.dead_letter_count();
    let drops = system
        .spawn("drops", gate(&tx).drop_stash_on_restart())
        .unwrap();
    drops.tell(Msg::Work(1));
    drops.tell(Msg::Work(2));
    drops.tell(Msg::Fail);
    drops.tell(Msg::Open);
    events.expect_msg("unstashed 0".to_string());
    eventually("two dead letters", || {
        system.dead_letter_count() - before == 2
    });
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// StashBufferSpec "fail when stash is full": past the capacity the
/// message goes to dead letters and the actor fails (here restarted by
/// its guardian, with what it had stashed).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_stash_fails_the_actor_and_dead_letters_the_message() {
    common::quiet_deliberate_panics();
    let system = common::system("stash-full").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let before = system.dead_letter_count();
    let a = system.spawn("a", gate(&tx).with_stash_capacity(2)).unwrap();
    for n in 1..=3 {
        a.tell(Msg::Work(n));
    }
    eventually("the third stashed is a dead letter", || {
        system.dead_letter_count() - before == 1
    });
    a.tell(Msg::Open);
    events.expect_msg("unstashed 2".to_string());
    assert_eq!(events.receive_n(2), vec!["work 1", "work 2"]);
    system.terminate().await;
}

/// What is stashed when the actor stops goes to dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_actor_dead_letters_its_stash() {
    let system = common::system("stash-stop").unwrap();
    let _events = TestProbe::<String>::new(&system);
    let tx = _events.actor_ref();
    let before = system.dead_letter_count();
    let a = system.spawn("a", gate(&tx)).unwrap();
    for n in 1..=5 {
        a.tell(Msg::Work(n));
    }
    a.graceful_stop();
    eventually("stopped", || a.is_terminated());
    eventually("five dead letters", || {
        system.dead_letter_count() - before == 5
    });
    system.terminate().await;
}
