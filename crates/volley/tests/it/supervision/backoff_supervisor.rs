//! `BackoffSupervisor` with `BackoffOptions::on_stop` (classic
//! `BackoffOpts.onStop`) and its on-failure variant, ported from Pekko's
//! `BackoffSupervisorSpec`. The delays run on a manual clock.

use crate::common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use common::backoff::{letter_for, target, Cmd, Event, MS};
use volley::{
    ActorRef, ActorSystem, BackoffMsg, BackoffOptions, BackoffSupervisor, DeadLetter,
    DeadLetterReason, Settings, SupervisorStrategy,
};
use volley_testkit::{ManualTime, TestProbe};

struct OnStop {
    system: ActorSystem,
    time: ManualTime,
    probe: TestProbe<Event>,
    supervisor: ActorRef<BackoffMsg<Cmd>>,
}

impl OnStop {
    fn new(name: &str, options: BackoffOptions) -> OnStop {
        common::quiet_deliberate_panics();
        let time = ManualTime::new();
        let system = common::system_with(name, time.settings(Settings::default())).unwrap();
        let probe = TestProbe::new(&system);
        let child = target(&probe, &Arc::new(AtomicBool::new(false)));
        let supervisor = system
            .spawn("supervisor", BackoffSupervisor::props(child, options))
            .unwrap();
        probe.expect_msg(Event::Started);
        OnStop {
            system,
            time,
            probe,
            supervisor,
        }
    }

    fn current_child(&self) -> Option<ActorRef<Cmd>> {
        let replies = TestProbe::new(&self.system);
        self.supervisor
            .tell(BackoffMsg::GetCurrentChild(replies.actor_ref()));
        replies.receive_msg()
    }

    fn restart_count(&self) -> u32 {
        let replies = TestProbe::new(&self.system);
        self.supervisor
            .tell(BackoffMsg::GetRestartCount(replies.actor_ref()));
        replies.receive_msg()
    }

    /// Stops the current child (with `how`) and waits until the
    /// supervisor has armed its restart.
    fn stop_child(&self, how: Cmd) -> ActorRef<Cmd> {
        let child = self.current_child().expect("a child");
        let watcher = TestProbe::<()>::new(&self.system);
        watcher.watch(&child);
        child.tell(how);
        self.probe.expect_msg(Event::PostStop);
        watcher.expect_terminated(&child);
        self.time.wait_for_timers(1);
        child
    }
}

fn on_stop_options() -> BackoffOptions {
    BackoffOptions::on_stop(MS(100), Duration::from_secs(3), 0.2)
}

/// BackoffSupervisorSpec "start child again when it stops when using
/// `Backoff.onStop`", and "forward messages to the child".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_stop_starts_the_child_again() {
    let s = OnStop::new("backoff-on-stop", on_stop_options());
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
    let s = OnStop::new("backoff-on-stop-stopping", options);
    assert_eq!(s.restart_count(), 0);
    let c1 = s.stop_child(Cmd::Throw);
    assert_eq!(s.restart_count(), 1);
    s.time.advance(MS(120));
    s.probe.expect_msg(Event::Started);
    assert_ne!(s.current_child().expect("a new child"), c1);
    s.system.terminate().await;
}

/// BackoffSupervisorSpec "forward messages to the child" and "support
/// custom supervision strategy" with `onFailure` options: the child's
/// failures restarted with a backoff, in place, the ref kept.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_failure_through_a_backoff_strategy() {
    let strategy = SupervisorStrategy::restart_with_backoff(MS(100), Duration::from_secs(3), 0.0);
    let options = on_stop_options().with_supervisor_strategy(strategy);
    let s = OnStop::new("backoff-on-failure", options);
    let c1 = s.current_child().expect("a child");
    s.supervisor.tell(BackoffMsg::Msg(Cmd::Throw));
    s.probe.expect_msg(Event::PreRestart);
    s.time.wait_for_timers(1);
    s.time.advance(MS(100));
    s.probe.expect_msg(Event::Started);
    assert_eq!(s.current_child(), Some(c1));
    s.supervisor.tell(BackoffMsg::Msg(Cmd::Ping(1)));
    s.probe.expect_msg(Event::Pong(1));
    s.system.terminate().await;
}

/// BackoffSupervisorSpec "support manual reset".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_stop_manual_reset() {
    let options = on_stop_options().with_reset_backoff_after(Duration::from_secs(3600));
    let s = OnStop::new("backoff-on-stop-reset", options);
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
    let s = OnStop::new("backoff-on-stop-no-child", options);
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
    let s = OnStop::new("backoff-on-stop-max", options);
    let watcher = TestProbe::<()>::new(&s.system);
    watcher.watch(&s.supervisor);
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
    watcher.expect_terminated(&s.supervisor);
    s.system.terminate().await;
}
