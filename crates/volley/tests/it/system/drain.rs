//! Shutdown that drains (`Settings::drain_on_shutdown`, on by default):
//! at `terminate`, each actor handles the messages queued before its stop,
//! parents before their children, until `shutdown_phase_timeout`; past
//! it whoever is left stops at once and what they had queued becomes
//! counted dead letters. Pekko has no draining (its actors stop at once,
//! as with `drain_on_shutdown = false`), so there is no spec to port.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use common::pekko::Latch;
use common::Log;
use volley::{
    Actor, ActorRef, ActorSystem, Context, DispatcherKind, DispatcherSettings, HandleResult, Props,
    Settings,
};
use volley_testkit::actor_fn;

/// The actors that block their thread run on a pool of their own,
/// [`BLOCKING`], whatever the default dispatcher's kind under test: on
/// `app-runtime` they would block the runtime that shutdown runs on.
fn system(name: &str, phase_timeout_ms: u64, drain: bool) -> ActorSystem {
    let mut settings = Settings {
        shutdown_phase_timeout: Duration::from_millis(phase_timeout_ms),
        drain_on_shutdown: drain,
        ..Settings::default()
    };
    settings.dispatchers.insert(
        BLOCKING.into(),
        DispatcherSettings {
            kind: DispatcherKind::WorkStealing,
            threads: 2,
            ..DispatcherSettings::default()
        },
    );
    common::system_with(name, settings).unwrap()
}

const BLOCKING: &str = "blocking";

/// A bound on how long terminate may take before the test fails instead of
/// hanging: far below the phase timeouts the tests set where it matters.
async fn terminate(system: &ActorSystem) {
    tokio::time::timeout(Duration::from_secs(30), system.terminate())
        .await
        .expect("terminate() did not complete");
}

enum Work {
    /// Waits for the latch (so the next messages queue up).
    Hold(Latch, Sender<()>),
    /// Counts one.
    Count,
    /// Sleeps, then counts one.
    Slow(Duration),
}

/// Counts what it handles; logs its `post_stop`.
struct Worker {
    handled: Arc<AtomicUsize>,
    log: Log,
    name: &'static str,
}

impl Actor for Worker {
    type Msg = Work;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Work) -> HandleResult {
        match msg {
            Work::Hold(latch, started) => {
                let _ = started.send(());
                latch.wait();
            }
            Work::Count => {
                self.handled.fetch_add(1, Ordering::SeqCst);
            }
            Work::Slow(d) => {
                std::thread::sleep(d);
                self.handled.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        let n = self.handled.load(Ordering::SeqCst);
        self.log.push(format!("{} stopped after {n}", self.name));
    }
}

fn worker(name: &'static str, handled: &Arc<AtomicUsize>, log: &Log) -> Props<Worker> {
    let (handled, log) = (handled.clone(), log.clone());
    Props::new(move || Worker {
        handled: handled.clone(),
        log: log.clone(),
        name,
    })
    .with_dispatcher(BLOCKING)
}

/// Terminates while `held` is held by `latch`, opening it once the stop
/// has reached `held`: draining, a graceful stop queued behind its
/// messages; not, a system message.
async fn terminate_while_held(system: &ActorSystem, held: &ActorRef<Work>, latch: &Latch) {
    let queued = held.mailbox_len();
    let done = tokio::spawn({
        let system = system.clone();
        async move { terminate(&system).await }
    });
    volley_testkit::await_cond("the stop to reach the held actor", || {
        held.mailbox_len() > queued || held.has_pending_system_messages()
    });
    latch.count_down();
    done.await.unwrap();
}

/// Holds `actor` in a handler until the returned latch opens, with `n`
/// counted messages queued behind.
fn hold_with_queue(actor: &ActorRef<Work>, n: usize) -> Latch {
    let latch = Latch::new(1);
    let (started, is_started) = std::sync::mpsc::channel();
    actor.tell(Work::Hold(latch.clone(), started));
    is_started.recv_timeout(Duration::from_secs(10)).unwrap();
    for _ in 0..n {
        actor.tell(Work::Count);
    }
    latch
}

/// Messages queued before `terminate` are handled, not dead-lettered.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_queued_before_terminate_are_handled() {
    let system = system("drain-queued", 10_000, true);
    let (handled, log) = (Arc::new(AtomicUsize::new(0)), Log::default());
    let a = system.spawn("a", worker("a", &handled, &log)).unwrap();
    let latch = hold_with_queue(&a, 100);
    terminate_while_held(&system, &a, &latch).await;
    assert_eq!(handled.load(Ordering::SeqCst), 100);
    assert_eq!(log.events(), vec!["a stopped after 100"]);
    assert_eq!(system.dead_letter_count(), 0);
}

/// Forwards what it gets to its child.
struct Parent {
    child: Option<ActorRef<Work>>,
    handled: Arc<AtomicUsize>,
    log: Log,
}

impl Actor for Parent {
    type Msg = Work;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.child = Some(ctx.spawn("child", worker("child", &self.handled, &self.log))?);
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Work) -> HandleResult {
        if let Work::Hold(latch, started) = msg {
            let _ = started.send(());
            latch.wait();
        } else {
            self.child.as_ref().expect("a child").tell(msg);
        }
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.log.push("parent stopped");
    }
}

/// Top-down: the parent drains first, and what it forwards while it drains
/// is queued before its child's stop, so the child handles all of it; the
/// parent stops after the child, as always.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_drain_before_their_children_and_stop_after_them() {
    let system = system("drain-top-down", 10_000, true);
    let (handled, log) = (Arc::new(AtomicUsize::new(0)), Log::default());
    let (h, l) = (handled.clone(), log.clone());
    let parent = system
        .spawn(
            "parent",
            Props::new(move || Parent {
                child: None,
                handled: h.clone(),
                log: l.clone(),
            })
            .with_dispatcher(BLOCKING),
        )
        .unwrap();
    let latch = hold_with_queue(&parent, 50);
    terminate_while_held(&system, &parent, &latch).await;
    assert_eq!(handled.load(Ordering::SeqCst), 50);
    assert_eq!(
        log.events(),
        vec!["child stopped after 50", "parent stopped"]
    );
    assert_eq!(system.dead_letter_count(), 0);
}

/// An actor that keeps sending to itself cannot hold shutdown: what it
/// sends after its stop was queued is behind the stop, so it stops there,
/// long before a drain deadline of ten minutes (the test's bound is 30 s).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_sending_to_itself_cannot_hold_shutdown() {
    let system = system("drain-looper", 600_000, true);
    let handled = Arc::new(AtomicUsize::new(0));
    let h = handled.clone();
    // Tells itself another message for each one it handles, for ever.
    let looper = actor_fn(move |ctx, ()| {
        h.fetch_add(1, Ordering::SeqCst);
        ctx.myself().tell(());
        Ok(())
    });
    let looper = system.spawn("looper", looper).unwrap();
    looper.tell(());
    common::eventually("the looper to loop", || {
        handled.load(Ordering::SeqCst) > 100
    });
    terminate(&system).await;
    assert!(looper.is_terminated());
    // Its last message to itself came after its stop: one dead letter.
    assert_eq!(system.dead_letter_count(), 1);
}

/// Past the deadline the actors still draining stop at once; what they had
/// queued is counted as dead letters, so every message is accounted for.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_stops_a_slow_drain_and_counts_the_rest() {
    // Draining all of it would take 50 s; the deadline is 200 ms.
    let system = system("drain-deadline", 200, true);
    let (handled, log) = (Arc::new(AtomicUsize::new(0)), Log::default());
    let slow = system
        .spawn("slow", worker("slow", &handled, &log))
        .unwrap();
    let total = 5_000;
    for _ in 0..total {
        slow.tell(Work::Slow(Duration::from_millis(10)));
    }
    terminate(&system).await;
    let handled = handled.load(Ordering::SeqCst) as u64;
    let dead = system.dead_letter_count();
    assert!(dead > 0, "the deadline cut the drain short");
    assert_eq!(handled + dead, total);
}

/// `drain_on_shutdown = false`: Akka's behaviour, the actors stop at once
/// and what was queued becomes dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_draining_queued_messages_are_dead_letters() {
    let system = system("drain-off", 10_000, false);
    let (handled, log) = (Arc::new(AtomicUsize::new(0)), Log::default());
    let a = system.spawn("a", worker("a", &handled, &log)).unwrap();
    let latch = hold_with_queue(&a, 100);
    terminate_while_held(&system, &a, &latch).await;
    assert_eq!(handled.load(Ordering::SeqCst), 0);
    assert_eq!(system.dead_letter_count(), 100);
}
