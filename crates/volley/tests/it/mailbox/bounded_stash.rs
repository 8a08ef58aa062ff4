//! Cases ported from Pekko's classic `ActorWithBoundedStashSpec`
//! (actor-tests), in volley's API, with two neighbouring facts of the
//! classic stash (`ActorWithStashSpec`'s unstash ahead of a queued
//! `PoisonPill`) and of dead letters (`DeadLetterSupressionSpec`'s
//! ordinary message to a dead actor):
//!
//! - "end up in DeadLetters in case of a capacity violation when
//!   configured via mailbox" → `unstashing_into_a_small_bounded_mailbox_loses_nothing`
//!   (a difference, below);
//! - "throw a StashOverflowException in case of a stash capacity
//!   violation when configured via mailbox" →
//!   `a_full_stash_refuses_the_message_and_the_stop_dead_letters_the_rest`;
//! - a stash capacity of 0 → `a_stash_of_capacity_zero_refuses_at_once`;
//! - unstashed messages are handled before a graceful stop queued behind
//!   them → `unstashed_messages_go_ahead_of_a_queued_graceful_stop`;
//! - DeadLetterSupressionSpec, the ordinary message sent to a dead actor
//!   (directly and through a ref found before it died) →
//!   `a_message_to_a_dead_actor_is_one_dead_letter_naming_it`;
//! - ActorRefSpec "stop when sent a poison pill" and DeathWatchSpec's
//!   ordering of `Terminated`, with a full bounded mailbox (the bounded
//!   queue of ActorMailboxSpec) →
//!   `a_graceful_stop_into_a_full_mailbox_comes_after_all_it_found_there`,
//!   `a_terminated_into_a_full_mailbox_pushes_nothing_out`.
//!
//! A volley bug these found, now fixed (`src/actor/mailbox.rs`): a graceful stop or
//! a `Terminated` that found a bounded mailbox full evicted the oldest
//! queued message to make room, under `DropNewest` too, so a message
//! queued before the stop, or the dead actor's last words to its watcher,
//! were lost; and under `DropOldest` later messages could evict the queued
//! stop itself, so the actor never stopped. Such signals now go in past
//! the bound and are never evicted (docs/reference/mailboxes.md).
//!
//! Differences from Pekko (docs/reference/stash.md):
//! - Pekko's `unstashAll` prepends to the mailbox, so with a bounded deque
//!   mailbox of 10 the first of 11 unstashed messages does not fit and is
//!   a dead letter. volley hands unstashed messages back ahead of the
//!   queue without meeting the mailbox's bound (a bound counts the queue
//!   only), so none is lost.
//! - The message that a full stash refuses is itself a dead letter
//!   (`DeadLetterReason::StashOverflow`), published before the stashed ones
//!   that the stop dead-letters; Pekko's `StashOverflowException` leaves
//!   it to the actor, and only the stashed 20 become dead letters.
//! - `DeadLetter` names the recipient's path and the message's type, not
//!   the message or its sender (volley refs carry no sender).
//!
//! Skipped, with the reason: the variants "configured via dispatcher" and
//! "get stash capacity from aliased dispatchers" (volley sets mailbox and
//! stash capacity on the `Props`, not in dispatcher configuration), and
//! `DeadLetterSupressionSpec`'s suppressed messages and `/deadLetters`
//! target (no `DeadLetterSuppression` marker and no dead-letters actor; see
//! `pekko_event_stream.rs`).

use crate::common;

use std::time::Duration;

use common::pekko::{with_blocking_pool, Latch, BLOCKING, T};
use volley::{
    Actor, ActorRef, AnyRef, Context, DeadLetter, DeadLetterReason, HandleResult, LifecycleEvent,
    LifecycleKind, MailboxConfig, Overflow, Props, ReplyTo, Terminated,
};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

enum Stash {
    /// Stashed; answered "ok" while the actor is not stashing everything.
    Hello(u32, ReplyTo<String>),
    /// Unstashes everything and from then on stashes every `Hello`.
    World,
    /// Answers how many are stashed (never stashed itself).
    Len(ReplyTo<usize>),
}

/// The spec's `StashingActor` (and, with `stop_on_overflow`,
/// `StashingActorWithOverflow`).
struct Stasher {
    stash_all: bool,
    stop_on_overflow: bool,
    events: ActorRef<String>,
}

impl Actor for Stasher {
    type Msg = Stash;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Stash) -> HandleResult {
        match msg {
            Stash::Hello(n, reply) if self.stash_all => {
                self.events.tell(format!("restash {n}"));
                ctx.stash(Stash::Hello(n, reply))?;
            }
            Stash::Hello(n, reply) => match ctx.stash(Stash::Hello(n, reply.clone())) {
                Ok(()) => reply.tell("ok".into()),
                Err(overflow) if self.stop_on_overflow => {
                    reply.tell(format!("STASHOVERFLOW at {n}: {overflow}"));
                    ctx.stop_self();
                }
                Err(overflow) => return Err(overflow.into()),
            },
            Stash::World => {
                self.stash_all = true;
                let n = ctx.unstash_all();
                self.events.tell(format!("unstashed {n}"));
            }
            Stash::Len(reply) => reply.tell(ctx.stash_len()),
        }
        Ok(())
    }
}

fn stasher(
    system: &volley::ActorSystem,
    mailbox: usize,
    stash: usize,
    stop_on_overflow: bool,
) -> (ActorRef<Stash>, TestProbe<String>) {
    let events = TestProbe::<String>::new(system);
    let tx = events.actor_ref();
    let props = Props::new(move || Stasher {
        stash_all: false,
        stop_on_overflow,
        events: tx.clone(),
    })
    .with_mailbox(MailboxConfig::bounded(mailbox, Overflow::DropNewest))
    .with_stash_capacity(stash);
    (system.spawn_anonymous(props).unwrap(), events)
}

async fn hello(stasher: &ActorRef<Stash>, n: u32) -> String {
    stasher.ask(|r| Stash::Hello(n, r), T).await.unwrap()
}

fn expect_dead_letters(
    dead: &TestProbe<DeadLetter>,
    recipient: &ActorRef<Stash>,
    reason: DeadLetterReason,
    n: usize,
) {
    for i in 0..n {
        let letter = dead.receive_msg();
        assert_eq!(
            (letter.recipient.as_str(), letter.reason),
            (recipient.path().to_string().as_str(), reason),
            "dead letter {i} of {n}"
        );
        assert!(letter.message_type.ends_with("Stash"), "{letter:?}");
    }
}

/// "end up in DeadLetters in case of a capacity violation when configured
/// via mailbox": eleven stashed, unstashed into a mailbox bounded to ten.
/// In volley nothing is lost: all eleven are handled (stashed again), and
/// only the stop makes them dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstashing_into_a_small_bounded_mailbox_loses_nothing() {
    let system = common::system("bstash-unstash").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let (stasher, events) = stasher(&system, 10, 20, false);
    for n in 1..=11 {
        assert_eq!(hello(&stasher, n).await, "ok");
    }
    stasher.tell(Stash::World);
    events.expect_msg("unstashed 11".to_string());
    for n in 1..=11 {
        events.expect_msg(format!("restash {n}"));
    }
    assert_eq!(stasher.ask(Stash::Len, T).await.unwrap(), 11);
    dead.expect_no_msg(Duration::from_millis(200));

    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&stasher);
    stasher.graceful_stop();
    watcher.expect_terminated(&stasher);
    expect_dead_letters(&dead, &stasher, DeadLetterReason::RecipientTerminated, 11);
    dead.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// "throw a StashOverflowException in case of a stash capacity violation
/// when configured via mailbox": twenty stashed, the twenty-first refused;
/// the actor answers and stops itself, and the twenty become dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_stash_refuses_the_message_and_the_stop_dead_letters_the_rest() {
    let system = common::system("bstash-overflow").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let (stasher, _events) = stasher(&system, 100, 20, true);
    for n in 1..=20 {
        assert_eq!(hello(&stasher, n).await, "ok");
    }
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&stasher);
    let answer = hello(&stasher, 21).await;
    assert!(answer.starts_with("STASHOVERFLOW at 21: "), "{answer}");
    assert!(answer.contains(&stasher.path().to_string()), "{answer}");
    assert!(answer.contains("20"), "{answer}");
    watcher.expect_terminated(&stasher);
    expect_dead_letters(&dead, &stasher, DeadLetterReason::StashOverflow, 1);
    expect_dead_letters(&dead, &stasher, DeadLetterReason::RecipientTerminated, 20);
    dead.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// A stash of capacity 0 refuses the first message: it is a dead letter,
/// and the error, returned from the handler, fails the actor (here it is
/// restarted by the default strategy and keeps answering).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stash_of_capacity_zero_refuses_at_once() {
    let system = common::system("bstash-zero").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let (stasher, _events) = stasher(&system, 10, 0, false);
    let refused = stasher
        .ask(|r| Stash::Hello(1, r), Duration::from_millis(300))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    expect_dead_letters(&dead, &stasher, DeadLetterReason::StashOverflow, 1);
    assert_eq!(stasher.ask(Stash::Len, T).await.unwrap(), 0);
    assert!(!stasher.is_terminated());
    system.terminate().await;
}

enum Gate {
    Work(u32),
    Open,
}

/// Unstashed messages are handled before a graceful stop that was queued
/// behind the message that unstashed them (as Pekko's `unstashAll`
/// prepends them to a mailbox holding a `PoisonPill`).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstashed_messages_go_ahead_of_a_queued_graceful_stop() {
    let system = common::system("bstash-stop").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    // Stashes work until opened, then unstashes it.
    let gated = actor_fn_with(false, move |open, ctx, msg: Gate| {
        match msg {
            Gate::Work(n) if !*open => ctx.stash(Gate::Work(n))?,
            Gate::Work(n) => tx.tell(format!("work {n}")),
            Gate::Open => {
                *open = true;
                ctx.unstash_all();
            }
        }
        Ok(())
    });
    let to = events.actor_ref();
    let gated = gated
        .on_stop(move |_, _ctx| to.tell("stopped".into()))
        .props();
    let gated = system
        .spawn_anonymous(gated.with_mailbox(MailboxConfig::bounded(4, Overflow::DropNewest)))
        .unwrap();
    for n in 1..=3 {
        gated.tell(Gate::Work(n));
    }
    gated.tell(Gate::Open);
    gated.graceful_stop();
    for e in ["work 1", "work 2", "work 3", "stopped"] {
        events.expect_msg(e.to_string());
    }
    dead.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

enum Held {
    /// Reports "blocked", then waits for the latch.
    Block(Latch),
    Work(u32),
    Watch(AnyRef),
}

/// Blocks on request, so that the test can fill its bounded mailbox.
struct Holder {
    events: ActorRef<String>,
}

impl Actor for Holder {
    type Msg = Held;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Held) -> HandleResult {
        match msg {
            Held::Block(latch) => {
                self.events.tell("blocked".into());
                latch.wait();
            }
            Held::Work(n) => self.events.tell(format!("work {n}")),
            Held::Watch(target) => {
                ctx.watch(&target);
                self.events.tell("watching".into());
            }
        }
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: Terminated) -> HandleResult {
        self.events.tell("terminated".into());
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.events.tell("stopped".into());
    }
}

/// A holder with a mailbox of 3, blocked in a handler (on a pool of its
/// own, so the probes keep running), with nothing queued.
fn held(
    system: &volley::ActorSystem,
    overflow: Overflow,
) -> (ActorRef<Held>, TestProbe<String>, Latch) {
    let events = TestProbe::<String>::new(system);
    let tx = events.actor_ref();
    let holder = system
        .spawn_anonymous(
            Props::new(move || Holder { events: tx.clone() })
                .with_mailbox(MailboxConfig::bounded(3, overflow))
                .with_dispatcher(BLOCKING),
        )
        .unwrap();
    let latch = Latch::new(1);
    holder.tell(Held::Block(latch.clone()));
    events.expect_msg("blocked".to_string());
    (holder, events, latch)
}

/// ActorRefSpec's "stop when sent a poison pill" with a full bounded
/// mailbox (ActorMailboxSpec's bounded queue): the graceful stop comes
/// after every message queued before it, none of which it pushes out, and
/// a later message never pushes out the stop. A volley bug, fixed: the
/// stop evicted the oldest queued message (even under `DropNewest`), and
/// under `DropOldest` later messages could evict the stop itself, so the
/// actor never stopped.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_into_a_full_mailbox_comes_after_all_it_found_there() {
    let system =
        common::system_with("bstash-full-stop", with_blocking_pool(Default::default())).unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    for overflow in [Overflow::DropNewest, Overflow::DropOldest] {
        let (holder, events, latch) = held(&system, overflow);
        let watcher = TestProbe::<()>::new(&system);
        watcher.watch(&holder);
        for n in 1..=3 {
            holder.tell(Held::Work(n));
        }
        holder.graceful_stop();
        dead.expect_no_msg(Duration::from_millis(100));
        // Three more: each one dropped (DropNewest) or evicting the oldest
        // message, never the stop (DropOldest).
        for n in 4..=6 {
            holder.tell(Held::Work(n));
        }
        for _ in 4..=6 {
            let letter = dead.receive_msg();
            assert_eq!(
                letter.reason,
                DeadLetterReason::MailboxOverflow,
                "{overflow:?}"
            );
        }
        latch.count_down();
        let handled: &[&str] = match overflow {
            Overflow::DropNewest => &["work 1", "work 2", "work 3"],
            Overflow::DropOldest => &[],
        };
        for e in handled {
            events.expect_msg(e.to_string());
        }
        events.expect_msg("stopped".to_string());
        watcher.expect_terminated(&holder);
        // DropOldest: 4, 5 and 6 evicted 1, 2 and 3, and came after the
        // stop, so they are dead letters now.
        if overflow == Overflow::DropOldest {
            for _ in 4..=6 {
                let letter = dead.receive_msg();
                assert_eq!(letter.reason, DeadLetterReason::RecipientTerminated);
            }
        }
        dead.expect_no_msg(Duration::from_millis(100));
    }
    system.terminate().await;
}

/// DeathWatchSpec's ordering ("a watcher handles everything the dead actor
/// sent it before it learns of the death") with a full bounded mailbox:
/// the `Terminated` goes in behind what is queued and pushes nothing out.
/// A volley bug, fixed: it evicted the oldest queued message.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_into_a_full_mailbox_pushes_nothing_out() {
    let system =
        common::system_with("bstash-full-term", with_blocking_pool(Default::default())).unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let holder = system
        .spawn_anonymous(
            Props::new(move || Holder { events: tx.clone() })
                .with_mailbox(MailboxConfig::bounded(3, Overflow::DropNewest))
                .with_dispatcher(BLOCKING),
        )
        .unwrap();
    let target = system.spawn_anonymous(echo()).unwrap();
    holder.tell(Held::Watch(target.to_any()));
    let latch = Latch::new(1);
    holder.tell(Held::Block(latch.clone()));
    events.expect_msg("watching".to_string());
    events.expect_msg("blocked".to_string());
    // What the dead actor sent before it died (the test stands in for it).
    for n in 1..=3 {
        holder.tell(Held::Work(n));
    }
    let lifecycle = TestProbe::<LifecycleEvent>::on_event_stream(&system);
    system.stop(&target);
    // The target publishes its stop after it has notified its watchers:
    // the holder's death notice is queued, and the holder will push the
    // `Terminated` into its full mailbox before it takes another message.
    let target_path = target.path().to_string();
    lifecycle.fish_for(|e| e.actor == target_path && e.kind == LifecycleKind::Stopped);
    latch.count_down();
    for e in ["work 1", "work 2", "work 3", "terminated"] {
        events.expect_msg(e.to_string());
    }
    dead.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

/// Answers each `Hello` with "echo".
fn echo() -> Props<FnActor<Stash>> {
    actor_fn(|_, msg: Stash| {
        if let Stash::Hello(_, reply) = msg {
            reply.tell("echo".into());
        }
        Ok(())
    })
}

/// DeadLetterSupressionSpec, the ordinary message: sent to an actor that
/// has terminated, through its own ref or one found by path before it
/// died, it is one dead letter each, naming the actor; nothing else is
/// published.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_dead_actor_is_one_dead_letter_naming_it() {
    let system = common::system("bstash-dead").unwrap();
    let echo = system.spawn("echo", echo()).unwrap();
    let found = system
        .lookup("/user/echo")
        .unwrap()
        .and_then(|r| r.downcast::<Stash>())
        .expect("the echo, by path");
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&echo);
    echo.graceful_stop();
    watcher.expect_terminated(&echo);

    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let before = system.dead_letter_count();
    echo.tell(Stash::World);
    expect_dead_letters(&dead, &echo, DeadLetterReason::RecipientTerminated, 1);
    found.tell(Stash::World);
    expect_dead_letters(&dead, &echo, DeadLetterReason::RecipientTerminated, 1);
    dead.expect_no_msg(Duration::from_millis(200));
    assert_eq!(system.dead_letter_count() - before, 2);
    assert!(system.lookup("/user/echo").unwrap().is_none());
    system.terminate().await;
}
