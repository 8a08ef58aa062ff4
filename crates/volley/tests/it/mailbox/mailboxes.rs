//! Cases ported from Pekko's mailbox specs to volley's API:
//!
//! - `MailboxConfigSpec` (`MailboxSpec` and its default, priority, stable
//!   priority and control-aware variants): "create a bounded mailbox with
//!   10 capacity", "numberOfMessages should be consistent with queue
//!   size" (unbounded and bounded), "dequeue what was enqueued properly"
//!   for unbounded and bounded mailboxes, and the bounded one that drops
//!   half of what is sent (capacity 10, 20 sent);
//! - `SingleConsumerOnlyMailboxVerificationSpec`: "support pathological
//!   ping-ponging" for the unbounded and the bounded case;
//! - `ActorMailboxSpec`: "get an unbounded message queue by default", "get
//!   a bounded message queue when it's configured as mailbox", "get a
//!   bounded control aware message queue" (what each queue does, since
//!   volley has no queue types to look at);
//! - typed `MailboxSelectorSpec`: "default to unbounded", "select a
//!   bounded mailbox", "set capacity on a bounded mailbox".
//!
//! A test fills a mailbox while its actor blocks in a handler: the mailbox
//! is reached only through `tell`, `try_tell` and `mailbox_len`, so "what
//! the queue holds" is what the actor handles afterwards.
//!
//! Differences from Pekko (docs/reference/mailboxes.md): `mailbox_len`
//! counts the batch the actor took too, the message in hand included
//! (`IN_HAND`); and a bound counts the queue only, so with a batch taken
//! (all that was queued, for an unordered mailbox) up to `capacity` more
//! can wait. The blocked actors here took only the blocking message.
//!
//! Skipped, with the reason:
//! - push timeouts (`mailbox-push-timeout-time`): a volley `tell` never
//!   blocks; `ActorRef::send` waits for room instead (tested in
//!   `timers_mailboxes.rs` through `ask`).
//! - several consumers of one queue (`maxConsumers = 4`): a volley
//!   mailbox has one consumer, its actor, like Pekko's single-consumer
//!   mailboxes (`maxConsumers = 1`).
//! - `CustomMailboxSpec`, `MailboxSelectorSpec` "select an arbitrary
//!   mailbox from config" and every `ActorMailboxSpec` case about
//!   deployment config, dispatcher-level mailboxes, `RequiresMessageQueue`
//!   and mailbox requirements: volley mailboxes are chosen in code on the
//!   `Props`, and there is no pluggable queue type.
//! - `ActorMailboxSpec` deque-based cases and "mixed with Stash": volley's
//!   stash works with every mailbox (`pekko_stash.rs`, `stash.rs`).
//! - priority order itself: `mailbox_order.rs` ports
//!   `PriorityDispatcherSpec`, `StablePriorityDispatcherSpec` and
//!   `ControlAwareDispatcherSpec`.

use crate::common;

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use volley::{
    ActorRef, ActorSystem, DeadLetter, DeadLetterReason, MailboxConfig, Overflow, Props, ReplyTo,
    Settings, TellError,
};
use volley_testkit::{actor_fn_with, FnActor, TestProbe};

const T: Duration = Duration::from_secs(10);

/// A gate that blocks a handler until the test opens it.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<(bool, bool)>, Condvar)>);

impl Gate {
    /// Called by the handler: notes that it is waiting, then waits (at
    /// most 10 s) for `open`.
    fn block(&self) {
        let mut st = self.0 .0.lock().unwrap();
        st.0 = true;
        self.0 .1.notify_all();
        let _ = self.0 .1.wait_timeout_while(st, T, |st| !st.1).unwrap();
    }
    /// Waits until a handler blocks here.
    fn wait_blocked(&self) {
        let st = self.0 .0.lock().unwrap();
        let (st, _) = self.0 .1.wait_timeout_while(st, T, |st| !st.0).unwrap();
        assert!(st.0, "the actor never blocked");
    }
    fn open(&self) {
        self.0 .0.lock().unwrap().1 = true;
        self.0 .1.notify_all();
    }
}

enum Msg {
    /// Blocks at the gate.
    Block(Gate),
    /// Recorded.
    Item(u64),
    /// Answers with everything recorded so far, in order.
    Report(ReplyTo<Vec<u64>>),
}

/// Records the items it gets; hands them over (emptied) on `Report`.
type Recorder = FnActor<Msg, Vec<u64>>;

fn recorder() -> Props<Recorder> {
    actor_fn_with(Vec::new(), |recorded, _ctx, msg: Msg| {
        match msg {
            Msg::Block(gate) => gate.block(),
            Msg::Item(n) => recorded.push(n),
            Msg::Report(reply) => reply.tell(std::mem::take(recorded)),
        }
        Ok(())
    })
    .props()
}

/// A system whose actors can block one thread and still leave one: on
/// `app-runtime` they run on the system's runtime, of two threads here.
fn system(name: &str) -> ActorSystem {
    let settings = Settings {
        io_threads: 2,
        ..Settings::default()
    };
    common::system_with(name, settings).unwrap()
}

/// A recorder blocked at a gate, which the test opens.
fn blocked(system: &ActorSystem, props: Props<Recorder>) -> (ActorRef<Msg>, Gate) {
    let actor = system.spawn_anonymous(props).unwrap();
    let gate = Gate::default();
    actor.tell(Msg::Block(gate.clone()));
    gate.wait_blocked();
    (actor, gate)
}

/// What `mailbox_len` counts besides the queue while the actor is in a
/// handler: the message in hand. Pekko's `numberOfMessages` counts the
/// queue only; volley counts the batch its actor took last too
/// (docs/reference/mailboxes.md). Here each blocked actor took only the
/// blocking message, so the batch is that one.
const IN_HAND: usize = 1;

async fn report(actor: &ActorRef<Msg>) -> Vec<u64> {
    actor
        .ask(Msg::Report, T)
        .await
        .expect("the recorder reports")
}

/// MailboxSpec: "create a bounded mailbox with 10 capacity": ten fit, the
/// eleventh is a dead letter (published on the event stream, for this
/// recipient), and the ten queued are handled, first in first out.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_mailbox_of_ten_takes_ten_and_dead_letters_the_eleventh() {
    let system = system("bounded-10");
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let props = recorder().with_mailbox(MailboxConfig::bounded(10, Overflow::DropNewest));
    let (actor, gate) = blocked(&system, props);
    for n in 1..=10 {
        actor.tell(Msg::Item(n));
    }
    // Ten queued, and the message in hand (see `IN_HAND`).
    assert_eq!(actor.mailbox_len(), 10 + IN_HAND);
    actor.tell(Msg::Item(11));
    let letter = dead.receive_msg();
    assert_eq!(letter.reason, DeadLetterReason::MailboxOverflow);
    assert_eq!(letter.recipient, actor.path().to_string());
    assert_eq!(actor.mailbox_len(), 10 + IN_HAND);
    gate.open();
    assert_eq!(report(&actor).await, (1..=10).collect::<Vec<_>>());
    system.terminate().await;
}

/// MailboxSpec: "UnboundedMailbox.numberOfMessages should be consistent
/// with queue size" and the bounded one (capacity 1000): the count follows
/// each of 100 tells (plus the message in hand, see `IN_HAND`), and goes
/// back to 0 once the actor has handled them.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_message_count_follows_the_queue() {
    let system = system("counts");
    for mailbox in [
        MailboxConfig::Unbounded,
        MailboxConfig::bounded(1000, Overflow::DropNewest),
    ] {
        let (actor, gate) = blocked(&system, recorder().with_mailbox(mailbox));
        assert_eq!(actor.mailbox_len(), IN_HAND, "{mailbox:?}");
        for n in 1..=100 {
            actor.tell(Msg::Item(n));
            assert_eq!(actor.mailbox_len(), n as usize + IN_HAND, "{mailbox:?}");
        }
        gate.open();
        assert_eq!(report(&actor).await.len(), 100);
        common::eventually("an empty mailbox", || actor.mailbox_len() == 0);
    }
    system.terminate().await;
}

/// How each producer numbers its messages: producer `p`'s `i`th is
/// `p * 1_000_000 + i`.
const PRODUCERS: u64 = 20;
const PER_PRODUCER: u64 = 500;

/// MailboxSpec: "dequeue what was enqueued properly" for unbounded and
/// bounded (capacity 10000) mailboxes, default, priority, stable priority
/// and control-aware: 20 threads send 500 messages each at once; the actor
/// handles each of the 10000 exactly once, and nothing is dropped. Where
/// the mailbox promises an order, each producer's messages keep theirs
/// (FIFO: all of them; control-aware: within each kind).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_from_concurrent_senders_is_handled_once() {
    let system = system("enqueue-dequeue");
    type Case = (&'static str, fn(Props<Recorder>) -> Props<Recorder>);
    let cases: [Case; 4] = [
        ("fifo", |p| p),
        ("priority", |p| {
            p.with_priority_mailbox(|m| match m {
                Msg::Item(n) => (n % 7) as i32,
                _ => i32::MAX,
            })
        }),
        ("stable-priority-equal", |p| p.with_priority_mailbox(|_| 0)),
        ("control-aware", |p| {
            p.with_control_aware_mailbox(|m| matches!(m, Msg::Item(n) if n % 10 == 0))
        }),
    ];
    for bounded in [false, true] {
        for (name, order) in cases {
            let mut props = order(recorder());
            if bounded {
                props = props.with_mailbox(MailboxConfig::bounded(10_000, Overflow::DropNewest));
            }
            let actor = system.spawn_anonymous(props).unwrap();
            let before = system.dead_letter_count();
            let start = Arc::new(std::sync::Barrier::new(PRODUCERS as usize));
            let producers: Vec<_> = (0..PRODUCERS)
                .map(|p| {
                    let (actor, start) = (actor.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        for i in 0..PER_PRODUCER {
                            actor.tell(Msg::Item(p * 1_000_000 + i));
                        }
                    })
                })
                .collect();
            for producer in producers {
                producer.join().unwrap();
            }
            let got = report(&actor).await;
            let case = format!("{name}, bounded: {bounded}");
            assert_eq!(got.len() as u64, PRODUCERS * PER_PRODUCER, "{case}");
            let distinct: HashSet<u64> = got.iter().copied().collect();
            assert_eq!(distinct.len(), got.len(), "{case}: a message came twice");
            assert!(
                got.iter()
                    .all(|n| n % 1_000_000 < PER_PRODUCER && n / 1_000_000 < PRODUCERS),
                "{case}: a message nobody sent"
            );
            assert_eq!(system.dead_letter_count(), before, "{case}: dropped");
            let keeps_order: Option<fn(u64) -> u64> = match name {
                "fifo" | "stable-priority-equal" => Some(|_| 0),
                "control-aware" => Some(|n| u64::from(n % 10 == 0)),
                _ => None,
            };
            if let Some(kind) = keeps_order {
                for p in 0..PRODUCERS {
                    for k in 0..2 {
                        let mine: Vec<u64> = got
                            .iter()
                            .copied()
                            .filter(|n| n / 1_000_000 == p && kind(*n) == k)
                            .collect();
                        assert!(
                            mine.windows(2).all(|w| w[0] < w[1]),
                            "{case}: producer {p} reordered"
                        );
                    }
                }
            }
        }
    }
    system.terminate().await;
}

/// MailboxSpec: "dequeue what was enqueued properly for bounded mailboxes
/// with 0 pushTimeout": capacity 10, 20 sent one producer after the
/// other while the actor cannot take any: 10 are handled, the first ten,
/// and 10 are dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_bounded_mailbox_drops_what_does_not_fit() {
    let system = system("drop-half");
    let props = recorder().with_mailbox(MailboxConfig::bounded(10, Overflow::DropNewest));
    let (actor, gate) = blocked(&system, props);
    let before = system.dead_letter_count();
    for range in [1..=10u64, 11..=20] {
        let actor = actor.clone();
        std::thread::spawn(move || range.for_each(|n| actor.tell(Msg::Item(n))))
            .join()
            .unwrap();
    }
    assert_eq!(system.dead_letter_count() - before, 10);
    gate.open();
    assert_eq!(report(&actor).await, (1..=10).collect::<Vec<_>>());
    system.terminate().await;
}

/// ActorMailboxSpec: "get an unbounded message queue by default";
/// MailboxSelectorSpec: "default to unbounded". Without a mailbox on its
/// props, an actor that cannot take any queues 20000 messages and drops
/// none; `try_tell` is never refused.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_mailbox_is_unbounded() {
    let system = system("default-unbounded");
    let (actor, gate) = blocked(&system, recorder());
    let before = system.dead_letter_count();
    for n in 0..10_000 {
        actor.tell(Msg::Item(n));
        assert!(actor.try_tell(Msg::Item(10_000 + n)).is_ok());
    }
    assert_eq!(actor.mailbox_len(), 20_000 + IN_HAND);
    assert_eq!(system.dead_letter_count(), before);
    gate.open();
    assert_eq!(report(&actor).await.len(), 20_000);
    system.terminate().await;
}

/// ActorMailboxSpec: "get a bounded message queue when it's configured as
/// mailbox" and "get a bounded control aware message queue when it's
/// configured as mailbox"; MailboxSelectorSpec: "select a bounded
/// mailbox". The bound holds (`try_tell` is refused at 1000), and the
/// control-aware one still puts control messages first.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_mailbox_on_the_props_is_bounded() {
    let system = system("bounded-props");
    let bound = MailboxConfig::bounded(1000, Overflow::DropNewest);
    for control_aware in [false, true] {
        let mut props = recorder().with_mailbox(bound);
        if control_aware {
            props = props.with_control_aware_mailbox(|m| matches!(m, Msg::Item(0)));
        }
        let (actor, gate) = blocked(&system, props);
        for n in 1..1000 {
            assert!(actor.try_tell(Msg::Item(n)).is_ok());
        }
        assert!(actor.try_tell(Msg::Item(0)).is_ok());
        match actor.try_tell(Msg::Item(1000)) {
            Err(TellError::Full(Msg::Item(1000))) => {}
            _ => panic!("a full mailbox hands the message back"),
        }
        gate.open();
        // Room again: the report is queued.
        let got = report(&actor).await;
        assert_eq!(got.len(), 1000);
        let expected_first = if control_aware { 0 } else { 1 };
        assert_eq!(got[0], expected_first, "control aware: {control_aware}");
    }
    system.terminate().await;
}

/// MailboxSelectorSpec: "set capacity on a bounded mailbox": capacity 2,
/// the actor blocked in its first message; the next two fit and the
/// fourth is a dead letter.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capacity_of_a_bounded_mailbox_is_the_one_given() {
    let system = system("capacity-2");
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let props = recorder().with_mailbox(MailboxConfig::bounded(2, Overflow::DropNewest));
    let (actor, gate) = blocked(&system, props);
    actor.tell(Msg::Item(2));
    actor.tell(Msg::Item(3));
    dead.expect_no_msg(Duration::from_millis(50));
    actor.tell(Msg::Item(4));
    assert_eq!(dead.receive_msg().reason, DeadLetterReason::MailboxOverflow);
    gate.open();
    assert_eq!(report(&actor).await, [2, 3]);
    system.terminate().await;
}

/// SingleConsumerOnlyMailboxVerificationSpec: "support pathological
/// ping-ponging" for the unbounded and the bounded (capacity 1) case,
/// with throughput 1: two actors bounce one message 200000 times (the
/// spec does 2 million), so each mailbox is emptied and refilled at every
/// step; neither loses the ball.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pathological_ping_pong_loses_nothing() {
    /// The ball carries who threw it, so each throws it back.
    struct Ball(ActorRef<Ball>);
    for mailbox in [
        MailboxConfig::Unbounded,
        MailboxConfig::bounded(1, Overflow::DropNewest),
    ] {
        let mut settings = Settings::default();
        settings.default_dispatcher.throughput = 1;
        let system = common::system_with("ping-pong", settings).unwrap();
        let done = TestProbe::<&'static str>::new(&system);
        let player = |name: &str| {
            let done = done.actor_ref();
            // Throws the ball back until it has done so `left` times.
            let player = actor_fn_with(100_000u64, move |left, ctx, Ball(other)| {
                *left -= 1;
                other.tell(Ball(ctx.myself()));
                if *left == 0 {
                    done.tell("done");
                    ctx.stop_self();
                }
                Ok(())
            });
            let player = player.props().with_mailbox(mailbox);
            system.spawn(name, player).unwrap()
        };
        let (a, b) = (player("a"), player("b"));
        let before = system.dead_letter_count();
        a.tell(Ball(b.clone()));
        done.expect_msg_within(Duration::from_secs(60), "done");
        done.expect_msg_within(Duration::from_secs(60), "done");
        // The last ball goes to a stopped actor: at most one dead letter.
        assert!(system.dead_letter_count() - before <= 1, "{mailbox:?}");
        system.terminate().await;
    }
}
