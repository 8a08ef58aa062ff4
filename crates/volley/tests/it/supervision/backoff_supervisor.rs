//! `BackoffSupervisor` with `BackoffOptions::on_stop` (classic
//! `BackoffOpts.onStop`), ported from Pekko's `BackoffSupervisorSpec`; its
//! on-failure variant has `backoff_on_failure.rs`. The delays run on a
//! manual clock.

use crate::common;

use std::time::Duration;

use common::backoff::{letter_for, Cmd, Event, Supervised, MS};
use volley::{BackoffMsg, BackoffOptions, DeadLetter, DeadLetterReason, SupervisorStrategy};
use volley_testkit::TestProbe;

fn on_stop_options() -> BackoffOptions {
    BackoffOptions::on_stop(MS(100), Duration::from_secs(3), 0.2)
}

/// BackoffSupervisorSpec "start child again when it stops when using
/// `Backoff.onStop`", and "forward messages to the child".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_stop_starts_the_child_again() {
    let s = Supervised::new("backoff-on-stop", on_stop_options());
    s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(1)));
    s.probe.expect_msg(Event::Pong(1));
    let c1 = s.stop_child(Cmd::Die);
    assert_eq!(s.current_child(), None);
    // 100 ms stretched by at most 20 %.
    assert!(s
        .time
        .next_due()
        .is_some_and(|d| d >= MS(100) && d <= MS(120)));
    s.time.advance(MS(120));
    s.probe.expect_msg(Event::Started);
    let c2 = s.current_child().expect("a new child");
    assert_ne!(c2, c1);
    s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(2)));
    s.probe.expect_msg(Event::Pong(2));
    s.system.terminate().await;
}

/// BackoffSupervisorSpec "support custom supervision strategy" and
/// "support default stopping strategy when using `Backoff.onStop`": a
/// failure the strategy stops on hands the child to the backoff, and the
/// restart count shows it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_stop_with_a_stopping_strategy() {
    let options = on_stop_options().with_supervisor_strategy(SupervisorStrategy::stopping());
    let s = Supervised::new("backoff-on-stop-stopping", options);
    assert_eq!(s.restart_count(), 0);
    let c1 = s.stop_child(Cmd::Throw);
    assert_eq!(s.restart_count(), 1);
    s.time.advance(MS(120));
    s.probe.expect_msg(Event::Started);
    assert_ne!(s.current_child().expect("a new child"), c1);
    s.system.terminate().await;
}

/// BackoffSupervisorSpec "support manual reset".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_stop_manual_reset() {
    let options = on_stop_options().with_reset_backoff_after(Duration::from_secs(3600));
    let s = Supervised::new("backoff-on-stop-reset", options);
    s.stop_child(Cmd::Die);
    assert_eq!(s.restart_count(), 1);
    s.time.advance(MS(120));
    s.probe.expect_msg(Event::Started);
    s.supervisor.tell(BackoffMsg::Reset);
    assert_eq!(s.restart_count(), 0);
    s.system.terminate().await;
}

/// BackoffSupervisorSpec "not reply to sender if replyWhileStopped is NOT
/// specified": with no stash, a message while there is no child is a dead
/// letter; with one, it waits for the next child (a volley option).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_stop_messages_while_there_is_no_child() {
    let options = on_stop_options().with_stash_capacity(1);
    let s = Supervised::new("backoff-on-stop-no-child", options);
    let dead = TestProbe::<DeadLetter>::on_event_stream(&s.system);
    s.stop_child(Cmd::Die);
    s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(1)));
    s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(2)));
    let letter = letter_for(&dead, &s.supervisor);
    assert_eq!(letter.reason, DeadLetterReason::BackoffOverflow);
    assert_eq!(letter.message_type, std::any::type_name::<Cmd>());
    s.time.advance(MS(120));
    s.probe.expect_msg(Event::Started);
    s.probe.expect_msg(Event::Pong(1));
    s.system.terminate().await;
}

/// BackoffSupervisorSpec "stop restarting the child after reaching
/// maxNrOfRetries limit (Backoff.onStop)".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_stop_gives_up_after_max_restarts() {
    // Never healthy long enough to start over: advancing the clock past a
    // restart must not count as running time.
    let options = on_stop_options()
        .with_max_restarts(2)
        .with_reset_backoff_after(Duration::from_secs(3600));
    let s = Supervised::new("backoff-on-stop-max", options);
    assert_eq!(s.restart_count(), 0);
    let mut previous = None;
    for n in 1..=2 {
        let stopped = s.stop_child(Cmd::Die);
        assert_eq!(s.restart_count(), n);
        assert_ne!(Some(&stopped), previous.as_ref());
        previous = Some(stopped);
        s.time.advance(Duration::from_secs(1));
        s.probe.expect_msg(Event::Started);
    }
    let c3 = s.current_child().expect("a third child");
    c3.tell(Cmd::Die);
    s.probe.expect_msg(Event::PostStop);
    s.watcher.expect_terminated(&s.supervisor);
    s.system.terminate().await;
}
