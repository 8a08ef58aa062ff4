//! The receive timeout, cases ported from Pekko's `ReceiveTimeoutSpec`
//! (actor-tests) to volley's API.

mod common;

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use common::probe;
use volley::{Actor, Context, HandleResult, Props};

enum Msg {
    /// Counts as activity.
    Tick,
    /// Does not count (Pekko's `NotInfluenceReceiveTimeout`).
    Quiet,
    /// Sets the timeout (in a message that does not count).
    QuietSet(Duration),
    /// Cancels the timeout (in a message that does not count).
    QuietCancel,
}

/// Reports each timeout; `set_in_pre_start` arms it at start, and
/// `once` cancels it on the first timeout.
struct Idle {
    events: Sender<String>,
    set_in_pre_start: Option<Duration>,
    once: bool,
}

impl Actor for Idle {
    type Msg = Msg;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if let Some(after) = self.set_in_pre_start {
            ctx.set_receive_timeout(after);
        }
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Tick | Msg::Quiet => {}
            Msg::QuietSet(after) => ctx.set_receive_timeout(after),
            Msg::QuietCancel => ctx.cancel_receive_timeout(),
        }
        Ok(())
    }
    fn on_receive_timeout(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let _ = self.events.send("timeout".into());
        if self.once {
            ctx.cancel_receive_timeout();
            assert_eq!(ctx.receive_timeout(), None);
        }
        Ok(())
    }
    fn influences_receive_timeout(msg: &Msg) -> bool {
        matches!(msg, Msg::Tick)
    }
}

fn idle(events: &Sender<String>, set: Option<Duration>, once: bool) -> Props<Idle> {
    let events = events.clone();
    Props::new(move || Idle {
        events: events.clone(),
        set_in_pre_start: set,
        once,
    })
}

fn within(events: &common::Events, limit: Duration) -> Option<String> {
    events.0.recv_timeout(limit).ok()
}

/// "get timeout".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_actor_gets_its_timeout() {
    let system = common::system("rt-get").unwrap();
    let (tx, events) = probe();
    let started = Instant::now();
    system
        .spawn("a", idle(&tx, Some(Duration::from_millis(200)), true))
        .unwrap();
    events.expect("timeout");
    assert!(started.elapsed() >= Duration::from_millis(200));
    system.terminate().await;
}

/// "reschedule timeout after regular receive": messages that count keep it
/// off; once they stop, it fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_keep_the_timeout_off() {
    let system = common::system("rt-reschedule").unwrap();
    let (tx, events) = probe();
    let a = system
        .spawn("a", idle(&tx, Some(Duration::from_millis(800)), true))
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1600) {
        a.tell(Msg::Tick);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(within(&events, Duration::from_millis(0)), None);
    let last = Instant::now();
    events.expect("timeout");
    assert!(
        last.elapsed() >= Duration::from_millis(700),
        "{:?}",
        last.elapsed()
    );
    system.terminate().await;
}

/// "be able to turn off timeout if desired".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_timeout_fires_no_more() {
    let system = common::system("rt-off").unwrap();
    let (tx, events) = probe();
    system
        .spawn("a", idle(&tx, Some(Duration::from_millis(100)), true))
        .unwrap();
    events.expect("timeout");
    events.none_for(500);
    system.terminate().await;
}

/// Without `once` it keeps firing, one timeout of silence apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncancelled_timeout_fires_again() {
    let system = common::system("rt-again").unwrap();
    let (tx, events) = probe();
    system
        .spawn("a", idle(&tx, Some(Duration::from_millis(100)), false))
        .unwrap();
    events.expect("timeout");
    let first = Instant::now();
    events.expect("timeout");
    assert!(first.elapsed() >= Duration::from_millis(90));
    system.terminate().await;
}

/// "not receive timeout message when not specified".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_timeout_unless_set() {
    let system = common::system("rt-none").unwrap();
    let (tx, events) = probe();
    let a = system.spawn("a", idle(&tx, None, true)).unwrap();
    a.tell(Msg::Tick);
    events.none_for(500);
    system.terminate().await;
}

/// "get timeout while receiving NotInfluenceReceiveTimeout messages".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_that_do_not_count_do_not_hold_it_off() {
    let system = common::system("rt-quiet").unwrap();
    let (tx, events) = probe();
    let a = system
        .spawn("a", idle(&tx, Some(Duration::from_millis(300)), true))
        .unwrap();
    let sender = tokio::spawn(async move {
        for _ in 0..30 {
            a.tell(Msg::Quiet);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert_eq!(
        within(&events, Duration::from_millis(1200)).as_deref(),
        Some("timeout"),
        "the quiet messages held it off"
    );
    sender.await.unwrap();
    system.terminate().await;
}

/// "be able to turn on timeout in NotInfluenceReceiveTimeout message
/// handler" and "be able to turn off timeout in NotInfluenceReceiveTimeout
/// message handler".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_does_not_count_can_set_or_cancel_it() {
    let system = common::system("rt-set-quiet").unwrap();
    let (tx, events) = probe();
    let a = system.spawn("a", idle(&tx, None, false)).unwrap();
    a.tell(Msg::QuietSet(Duration::from_millis(100)));
    events.expect("timeout");
    a.tell(Msg::QuietCancel);
    // A second timeout may come before the cancel is handled; then none.
    let _ = within(&events, Duration::from_millis(1000));
    events.none_for(400);
    system.terminate().await;
}
