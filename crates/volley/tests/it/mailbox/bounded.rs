//! Bounded mailboxes, throughput batching and dispatcher settings (the
//! timer cases are in `timers.rs`).

use crate::common;

use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use common::eventually;
use volley::{
    Actor, ActorRef, ActorSystem, Context, DispatcherSettings, HandleResult, MailboxConfig,
    MessageBatch, Overflow, Props, Settings, TellError,
};
use volley_testkit::{actor_fn, FnActor, TestProbe};

/// Blocks its dispatcher thread until released, so mailboxes fill up;
/// says so when it starts to.
struct Gate {
    opened: Receiver<()>,
    entered: Sender<()>,
}

/// A gate actor, and what closes and opens it.
struct GateControl {
    gate: ActorRef<()>,
    open: Sender<()>,
    entered: Receiver<()>,
}

impl GateControl {
    /// Returns once the gate blocks its thread.
    fn close(&self) {
        self.gate.tell(());
        self.entered
            .recv_timeout(Duration::from_secs(10))
            .expect("the gate blocks its thread");
    }

    fn open(&self) {
        self.open.send(()).unwrap();
    }
}

/// A gate actor (on `dispatcher`, if given).
fn spawn_gate(system: &ActorSystem, dispatcher: Option<&str>) -> GateControl {
    let (open, opened) = channel();
    let (entered, entered_rx) = channel();
    let opened = std::sync::Mutex::new(Some(opened));
    let mut props = Props::new(move || Gate {
        opened: opened.lock().unwrap().take().expect("one gate"),
        entered: entered.clone(),
    });
    if let Some(d) = dispatcher {
        props = props.with_dispatcher(d);
    }
    GateControl {
        gate: system.spawn("gate", props).unwrap(),
        open,
        entered: entered_rx,
    }
}

impl Actor for Gate {
    type Msg = ();
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        let _ = self.entered.send(());
        self.opened.recv_timeout(Duration::from_secs(10)).ok();
        Ok(())
    }
}

/// Reports each number it gets, after its name.
fn recorder(name: &'static str, events: ActorRef<String>) -> Props<FnActor<u32>> {
    actor_fn(move |_ctx, n: u32| {
        events.tell(format!("{name}{n}"));
        Ok(())
    })
}

/// A recorder named `name` reporting to `events`, with `mailbox`.
fn spawn_recorder(
    system: &ActorSystem,
    name: &'static str,
    events: &ActorRef<String>,
    mailbox: MailboxConfig,
) -> ActorRef<u32> {
    system
        .spawn(name, recorder(name, events.clone()).with_mailbox(mailbox))
        .unwrap()
}

fn one_thread(throughput: usize) -> Settings {
    Settings {
        default_dispatcher: DispatcherSettings {
            threads: 1,
            throughput,
            ..Default::default()
        },
        ..Settings::default()
    }
}

/// Spawns two recorders on a one-thread dispatcher, has an actor on that
/// thread queue three messages for each, and returns the first `expect`
/// messages in the order they were handled, and how many were dropped.
fn interleaving(system: &ActorSystem, mailbox: MailboxConfig, expect: usize) -> (Vec<String>, u64) {
    let events = TestProbe::<String>::new(system);
    let tx = events.actor_ref();
    let a = spawn_recorder(system, "a", &tx, mailbox);
    let b = spawn_recorder(system, "b", &tx, mailbox);
    // Fills both mailboxes from inside the dispatcher, so that both
    // recorders sit on the worker's own queue in a known order.
    let kick = actor_fn(move |_, ()| {
        for n in 1..=3 {
            a.tell(n);
        }
        for n in 1..=3 {
            b.tell(n);
        }
        Ok(())
    });
    let kick = system.spawn("kick", kick).unwrap();
    let before = system.dead_letter_count();
    kick.tell(());
    let order = events.receive_n(expect);
    events.expect_no_msg(Duration::from_millis(30));
    (order, system.dead_letter_count() - before)
}

/// The order with "a" and "b" swapped if "b" went first: which of the two
/// runs first is the scheduler's business (the one woken last runs next),
/// how their messages interleave is what the tests check.
fn a_first(order: Vec<String>) -> Vec<String> {
    if order.first().is_some_and(|o| o.starts_with('b')) {
        order
            .into_iter()
            .map(|o| {
                o.replacen('a', "x", 1)
                    .replacen('b', "a", 1)
                    .replacen('x', "b", 1)
            })
            .collect()
    } else {
        order
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn throughput_batches_messages_per_activation() {
    let system = common::system_with("tp1", one_thread(1)).unwrap();
    let (order, _) = interleaving(&system, MailboxConfig::Unbounded, 6);
    assert_eq!(a_first(order), ["a1", "b1", "a2", "b2", "a3", "b3"]);
    system.terminate().await;

    let system = common::system_with("tp3", one_thread(3)).unwrap();
    let (order, _) = interleaving(&system, MailboxConfig::Unbounded, 6);
    assert_eq!(a_first(order), ["a1", "a2", "a3", "b1", "b2", "b3"]);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn throughput_deadline_ends_an_activation_early() {
    // throughput alone would let each actor handle all 20 of its messages
    // in one go; the 1 µs deadline ends every activation after one message.
    let mut settings = one_thread(1000);
    settings.default_dispatcher.throughput_deadline = Some(Duration::from_micros(1));
    let system = common::system_with("deadline", settings).unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    // Takes about a millisecond per message.
    let sluggish = |tag: &'static str| {
        let to = tx.clone();
        actor_fn(move |_, n: u32| {
            std::thread::sleep(Duration::from_millis(1));
            to.tell(format!("{tag}{n}"));
            Ok(())
        })
    };
    let a = system.spawn("a", sluggish("a")).unwrap();
    let b = system.spawn("b", sluggish("b")).unwrap();
    // Queue everything from inside the pool, so both actors wait on the
    // worker's own queue.
    let fill = actor_fn(move |_, ()| {
        for n in 0..20 {
            a.tell(n);
            b.tell(n);
        }
        Ok(())
    });
    let fill = system.spawn("fill", fill).unwrap();
    fill.tell(());
    let order = events.receive_n(40);
    let switches = order
        .windows(2)
        .filter(|w| w[0].as_bytes()[0] != w[1].as_bytes()[0])
        .count();
    assert!(switches >= 30, "activations were not cut short: {order:?}");
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn bounded_mailbox_drop_newest_and_drop_oldest() {
    let system = common::system_with("newest", one_thread(10)).unwrap();
    let (order, dropped) =
        interleaving(&system, MailboxConfig::bounded(2, Overflow::DropNewest), 4);
    assert_eq!(dropped, 2);
    assert_eq!(a_first(order), ["a1", "a2", "b1", "b2"]);
    system.terminate().await;

    let system = common::system_with("oldest", one_thread(10)).unwrap();
    let (order, dropped) =
        interleaving(&system, MailboxConfig::bounded(2, Overflow::DropOldest), 4);
    assert_eq!(dropped, 2);
    assert_eq!(a_first(order), ["a2", "a3", "b2", "b3"]);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn tell_all_delivers_a_batch_in_order_and_applies_bounds() {
    let system = common::system_with("batch", one_thread(10)).unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let r = spawn_recorder(&system, "r", &tx, MailboxConfig::Unbounded);
    let mut batch: Vec<u32> = (1..=5).collect();
    r.tell_all(&mut batch);
    assert!(batch.is_empty(), "tell_all drains the batch");
    assert_eq!(events.receive_n(5), ["r1", "r2", "r3", "r4", "r5"]);
    // The emptied Vec is reusable, and an empty batch is a no-op.
    r.tell_all(&mut batch);
    batch.extend([6, 7]);
    r.tell_all(&mut batch);
    assert_eq!(events.receive_n(2), ["r6", "r7"]);

    let gate = spawn_gate(&system, None);
    bounded_and_terminated_batches(&system, &events, &gate, &r, |to, ns| {
        let mut batch = ns.to_vec();
        to.tell_all(&mut batch);
        assert!(batch.is_empty());
    });
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn tell_batch_delivers_a_batch_in_order_and_applies_bounds() {
    let system = common::system_with("tell-batch", one_thread(10)).unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    // Held by a gate, so that a batch meets a busy mailbox too.
    let gate = spawn_gate(&system, None);
    let r = spawn_recorder(&system, "r", &tx, MailboxConfig::Unbounded);
    let mut batch = MessageBatch::with_capacity(4);
    batch.extend_for_test([1, 2, 3]);
    r.tell_batch(&mut batch);
    assert!(batch.is_empty(), "tell_batch empties the batch");
    assert_eq!(events.receive_n(3), ["r1", "r2", "r3"]);
    gate.close();
    for run in [[4, 5], [6, 7]] {
        batch.extend_for_test(run);
        r.tell_batch(&mut batch);
    }
    // An empty batch is a no-op.
    r.tell_batch(&mut batch);
    gate.open();
    assert_eq!(events.receive_n(4), ["r4", "r5", "r6", "r7"]);

    bounded_and_terminated_batches(&system, &events, &gate, &r, |to, ns| {
        let mut batch = MessageBatch::with_capacity(ns.len());
        ns.iter().for_each(|n| batch.push(*n));
        to.tell_batch(&mut batch);
        assert!(batch.is_empty());
    });
    system.terminate().await;
}

/// The second half of both batch tests, with `send` the way a batch is
/// told: a bounded mailbox applies its overflow rule to each message of
/// the batch and dead-letters what it drops; to a terminated actor (`r`,
/// stopped here), every message of the batch is a dead letter.
fn bounded_and_terminated_batches(
    system: &ActorSystem,
    events: &TestProbe<String>,
    gate: &GateControl,
    r: &ActorRef<u32>,
    send: impl Fn(&ActorRef<u32>, &[u32]),
) {
    let tx = events.actor_ref();
    let b = spawn_recorder(
        system,
        "b",
        &tx,
        MailboxConfig::bounded(2, Overflow::DropNewest),
    );
    gate.close();
    let before = system.dead_letter_count();
    send(&b, &[1, 2, 3, 4]);
    assert_eq!(system.dead_letter_count(), before + 2);
    gate.open();
    assert_eq!(events.receive_n(2), ["b1", "b2"]);

    r.graceful_stop();
    eventually("stopped", || r.is_terminated());
    let before = system.dead_letter_count();
    send(r, &[8, 9, 10]);
    assert_eq!(system.dead_letter_count(), before + 3);
}

/// Fills a batch (a test's shorthand for pushing each).
trait ExtendForTest {
    fn extend_for_test<const N: usize>(&mut self, ns: [u32; N]);
}

impl ExtendForTest for MessageBatch<u32> {
    fn extend_for_test<const N: usize>(&mut self, ns: [u32; N]) {
        for n in ns {
            self.push(n);
        }
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_waits_for_room_in_a_full_bounded_mailbox() {
    let system = common::system_with("ask-full", one_thread(10)).unwrap();
    let answerer = system
        .spawn(
            "answerer",
            // Answers every request with its number plus one.
            actor_fn(|_, (n, reply): (u32, ActorRef<u32>)| {
                reply.tell(n + 1);
                Ok(())
            })
            .with_mailbox(MailboxConfig::bounded(1, Overflow::DropNewest)),
        )
        .unwrap();
    // Block the only worker, then fill the mailbox.
    let gate = spawn_gate(&system, None);
    gate.close();
    let first = answerer.ask(|r| (1, r), Duration::from_secs(10));
    let second = answerer.ask(|r| (2, r), Duration::from_secs(10));
    let opener = async {
        // Opens while the second ask waits for room (it finds the mailbox
        // full as soon as it runs): pacing, not a synchronisation.
        tokio::time::sleep(Duration::from_millis(50)).await;
        gate.open();
    };
    let (first, second, ()) = tokio::join!(first, second, opener);
    // Before, the second request found the mailbox full, went to dead
    // letters, and its ask failed at once.
    assert_eq!((first, second), (Ok(2), Ok(3)));
    assert_eq!(system.dead_letter_count(), 0);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn try_tell_hands_the_message_back() {
    let system = common::system_with("offer", one_thread(10)).unwrap();
    let gate = spawn_gate(&system, None);
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let r = spawn_recorder(
        &system,
        "r",
        &tx,
        MailboxConfig::bounded(1, Overflow::DropNewest),
    );
    r.tell(0);
    events.expect_msg("r0".to_string());
    gate.close();
    assert!(r.try_tell(1).is_ok());
    assert_eq!(r.try_tell(2), Err(TellError::Full(2)));
    gate.open();
    events.expect_msg("r1".to_string());
    r.graceful_stop();
    eventually("stopped", || r.is_terminated());
    assert_eq!(r.try_tell(3), Err(TellError::Terminated(3)));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn zero_capacity_is_rejected() {
    let system = common::system("zero").unwrap();
    let _events = TestProbe::<String>::new(&system);
    let tx = _events.actor_ref();
    let err = system
        .spawn(
            "r",
            recorder("r", tx).with_mailbox(MailboxConfig::bounded(0, Overflow::DropNewest)),
        )
        .unwrap_err();
    assert_eq!(err, volley::SpawnError::ZeroCapacity);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn named_dispatchers_isolate_blocking_work() {
    let mut settings = one_thread(10);
    settings.dispatchers.insert(
        "blocking".into(),
        DispatcherSettings {
            threads: 1,
            ..DispatcherSettings::default()
        },
    );
    let system = common::system_with("isolated", settings).unwrap();
    let gate = spawn_gate(&system, Some("blocking"));
    gate.close();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let r = spawn_recorder(&system, "r", &tx, MailboxConfig::Unbounded);
    // The default dispatcher's only thread is free while the gate blocks.
    r.tell(1);
    events.expect_msg("r1".to_string());
    gate.open();
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn settings_file_and_bad_settings() {
    let dir = std::env::temp_dir().join(format!("volley-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.toml");
    std::fs::write(&good, "[default_dispatcher]\nthroughput = 7\nthreads = 1\n").unwrap();
    let settings = Settings::from_file(&good).unwrap();
    let system = common::system_with("fromfile", settings).unwrap();
    assert_eq!(system.settings().default_dispatcher.throughput, 7);
    system.terminate().await;

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[default_dispatcher]\nthroughput = -3\n").unwrap();
    let err = Settings::from_file(&bad).unwrap_err();
    assert!(err.to_string().contains("bad.toml"), "{err}");
    assert!(common::system("bad name!").is_err());
    std::fs::remove_dir_all(&dir).ok();
}
