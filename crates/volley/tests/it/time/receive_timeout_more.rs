//! Receive-timeout cases from Pekko's specs that `receive_timeout.rs` does
//! not already cover, in volley's API and on manual time. From the classic
//! `ReceiveTimeoutSpec` (actor-tests): "classify messages that do not
//! influence the timeout", "carry the configured timeout duration", "get
//! timeout while receiving only NotInfluenceReceiveTimeout messages", "get
//! timeout while receiving NotInfluenceReceiveTimeout messages scheduled
//! with Timers", "work correctly if the timeout is changed multiple times
//! while handling a NotInfluenceReceiveTimeout message", "get the timeout
//! when scheduled immediately on restart" (#28266) and "Will cancel
//! receive timeout task if stopped". From the typed specs
//! (actor-typed-tests): `CancelReceiveTimeoutSpec`'s "silently discard a
//! stale ReceiveTimeout after cancelReceiveTimeout", and
//! `ActorContextSpec`'s "set small receive timeout" and "set large
//! receive timeout".
//!
//! Two cases go further than Pekko, which documents that a timeout
//! already enqueued may still be delivered: in volley a signal queued
//! behind a message that counts, or queued before the timeout was
//! replaced, is not delivered (docs/reference/receive-timeout.md).
//!
//! To get a signal queued behind other messages, the actor is held on a
//! latch while the manual clock is advanced (which enqueues the due signal
//! before it returns), then let go. A "pong" answered with no "timeout"
//! before it shows that no signal was delivered.

use crate::common;

use std::time::Duration;

use common::pekko::{Latch, ManualCase as Case, BLOCKING};
use volley::{Actor, ActorError, ActorRef, Context, Failure, HandleResult, Props};
use volley_testkit::TestProbe;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

#[derive(Clone)]
enum Msg {
    /// Counts as activity; answered with "pong".
    Tick,
    /// Does not count (Pekko's `NotInfluenceReceiveTimeout`); answered
    /// with "pong".
    Quiet,
    /// Quiet: sets the timeout; answered with "set".
    Set(Duration),
    /// Quiet: sets the first timeout, then the second, in one handler.
    SetTwice(Duration, Duration),
    /// Quiet: cancels the timeout; answered with "cancelled".
    Cancel,
    /// Quiet: answers "held", waits for the latch, then handles the
    /// message it carries.
    Hold(Latch, Box<Msg>),
    /// Counts: answers "held" and waits for the latch.
    BusyHold(Latch),
    /// Counts: answers "crashing" and fails.
    Crash,
    /// Sets the timeout and stops the actor in one handler.
    SetAndStop(Duration),
    /// Quiet: arms a single timer that sends `Quiet` after the delay.
    ScheduleQuiet(Duration),
    /// Sent by the repeating timer of `Opts::ticks`; counted, not
    /// answered, and quiet.
    QuietTick,
    /// The same, but counting as activity.
    BusyTick,
    /// Quiet: answers "ticks <n>", the timer ticks handled so far.
    Count,
}

/// What a subject does besides answering.
#[derive(Clone, Default)]
struct Opts {
    /// Set in `pre_start`, that is in every incarnation.
    on_start: Option<Duration>,
    /// Set in `post_restart` only (the spec's `RestartingChild`).
    on_restart: Option<Duration>,
    /// Sends itself `Quiet` from `on_receive_timeout`.
    quiet_self_on_timeout: bool,
    /// A repeating timer ticking at this interval, and whether its ticks
    /// count as activity (`BusyTick`) or not (`QuietTick`).
    ticks: Option<(Duration, bool)>,
}

/// Reports to the probe what it handles, its hooks, and each timeout as
/// "timeout <the timeout set then>".
struct Subject {
    to: ActorRef<String>,
    opts: Opts,
    ticks: u32,
}

impl Subject {
    fn tell(&self, what: impl Into<String>) {
        self.to.tell(what.into());
    }
}

impl Actor for Subject {
    type Msg = Msg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if let Some(after) = self.opts.on_start {
            ctx.set_receive_timeout(after);
        }
        if let Some((interval, busy)) = self.opts.ticks {
            let tick = |busy| if busy { Msg::BusyTick } else { Msg::QuietTick };
            ctx.schedule_with_fixed_delay("ticks", interval, interval, tick(busy));
        }
        self.tell("started");
        Ok(())
    }

    fn post_restart(&mut self, ctx: &mut Context<Self>, _failure: &Failure) -> HandleResult {
        if let Some(after) = self.opts.on_restart {
            ctx.set_receive_timeout(after);
        }
        self.tell("restarted");
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.tell("stopped");
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Tick | Msg::Quiet => self.tell("pong"),
            Msg::Set(after) => {
                ctx.set_receive_timeout(after);
                self.tell("set");
            }
            Msg::SetTwice(first, second) => {
                ctx.set_receive_timeout(first);
                ctx.set_receive_timeout(second);
                self.tell("set");
            }
            Msg::Cancel => {
                ctx.cancel_receive_timeout();
                self.tell("cancelled");
            }
            Msg::Hold(latch, then) => {
                self.tell("held");
                latch.wait();
                return self.handle(ctx, *then);
            }
            Msg::BusyHold(latch) => {
                self.tell("held");
                latch.wait();
            }
            Msg::Crash => {
                self.tell("crashing");
                return Err(ActorError::new("crashing on purpose"));
            }
            Msg::SetAndStop(after) => {
                ctx.set_receive_timeout(after);
                ctx.stop_self();
            }
            Msg::ScheduleQuiet(after) => {
                ctx.schedule_once("quiet", after, Msg::Quiet);
                self.tell("scheduled");
            }
            Msg::QuietTick | Msg::BusyTick => self.ticks += 1,
            Msg::Count => self.tell(format!("ticks {}", self.ticks)),
        }
        Ok(())
    }

    fn on_receive_timeout(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.tell(format!("timeout {:?}", ctx.receive_timeout()));
        if self.opts.quiet_self_on_timeout {
            ctx.myself().tell(Msg::Quiet);
        }
        Ok(())
    }

    fn influences_receive_timeout(msg: &Msg) -> bool {
        matches!(
            msg,
            Msg::Tick | Msg::BusyTick | Msg::BusyHold(_) | Msg::Crash | Msg::SetAndStop(_)
        )
    }
}

impl Case {
    /// Spawns a subject under `/user` (which restarts it when it fails)
    /// and waits until it has started.
    fn spawn_subject(&self, opts: Opts) -> ActorRef<Msg> {
        let to = self.probe.actor_ref();
        let subject = self
            .system
            .spawn_anonymous(
                Props::new(move || Subject {
                    to: to.clone(),
                    opts: opts.clone(),
                    ticks: 0,
                })
                .with_dispatcher(BLOCKING),
            )
            .unwrap();
        self.expect_report("started");
        subject
    }

    fn expect_report(&self, what: &str) {
        self.probe.expect_msg(what.to_string());
    }

    fn advance(&self, d: Duration) {
        self.time.advance(d);
    }

    /// Answered with "pong" and nothing before it: no signal was queued
    /// ahead of this message.
    fn ping(&self, subject: &ActorRef<Msg>) {
        subject.tell(Msg::Quiet);
        self.expect_report("pong");
    }

    async fn end(self) {
        self.system.terminate().await;
    }
}

/// An actor that overrides nothing about the timeout but `on_receive_timeout`.
struct Plain(ActorRef<String>);

impl Actor for Plain {
    type Msg = &'static str;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.set_receive_timeout(s(100));
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: &'static str) -> HandleResult {
        self.0.tell(format!("got {msg}"));
        Ok(())
    }
    fn on_receive_timeout(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.0.tell("timeout".into());
        Ok(())
    }
}

/// "classify messages that do not influence the timeout": by default
/// every message counts; an actor excludes some by overriding
/// `influences_receive_timeout`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_counts_unless_the_actor_excludes_it() {
    assert!(<Plain as Actor>::influences_receive_timeout(&"anything"));
    assert!(Subject::influences_receive_timeout(&Msg::Tick));
    assert!(!Subject::influences_receive_timeout(&Msg::Quiet));

    let case = Case::new("prt-classify");
    let to = case.probe.actor_ref();
    let plain = case
        .system
        .spawn("plain", Props::new(move || Plain(to.clone())))
        .unwrap();
    case.time.wait_for_timers(1);
    case.advance(s(99));
    plain.tell("a");
    case.expect_report("got a");
    // The first signal, due at 100, finds "a" 1 s old and waits for the
    // rest: the next "got" comes with nothing before it.
    case.advance(s(1));
    plain.tell("b");
    case.expect_report("got b");
    case.advance(s(100));
    case.expect_report("timeout");
    case.end().await;
}

/// "carry the configured timeout duration": Pekko's `ReceiveTimeout`
/// message carries it; in volley the handler reads it from the context.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_handler_sees_the_duration_that_was_set() {
    let case = Case::new("prt-duration");
    let subject = case.spawn_subject(Opts {
        on_start: Some(s(500)),
        ..Opts::default()
    });
    case.advance(s(500));
    case.expect_report("timeout Some(500s)");
    subject.tell(Msg::Set(Duration::from_millis(1500)));
    case.expect_report("set");
    case.advance(Duration::from_millis(1500));
    case.expect_report("timeout Some(1.5s)");
    case.end().await;
}

/// "get timeout while receiving only NotInfluenceReceiveTimeout
/// messages": the actor sends itself a quiet message from its timeout
/// handler, and still times out again.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_handler_that_only_sends_itself_quiet_messages_times_out_again() {
    let case = Case::new("prt-only-quiet");
    case.spawn_subject(Opts {
        on_start: Some(s(100)),
        quiet_self_on_timeout: true,
        ..Opts::default()
    });
    for _ in 0..2 {
        case.advance(s(100));
        case.expect_report("timeout Some(100s)");
        case.expect_report("pong");
    }
    case.end().await;
}

/// "get timeout while receiving NotInfluenceReceiveTimeout messages
/// scheduled with Timers": quiet timer messages are delivered and do not
/// hold the timeout off. The other way round, timer messages that count
/// do hold it off, like any message that counts.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_timer_messages_do_not_hold_the_timeout_off_and_busy_ones_do() {
    let case = Case::new("prt-timers");
    let quiet = case.spawn_subject(Opts {
        on_start: Some(s(1000)),
        ticks: Some((s(100), false)),
        ..Opts::default()
    });
    for n in 1..10 {
        case.advance(s(100));
        quiet.tell(Msg::Count);
        case.expect_report(&format!("ticks {n}"));
    }
    case.advance(s(100));
    case.expect_report("timeout Some(1000s)");
    quiet.tell(Msg::Cancel);
    case.expect_report("cancelled");
    case.system.stop(&quiet);
    case.expect_report("stopped");

    let busy = case.spawn_subject(Opts {
        on_start: Some(s(150)),
        ticks: Some((s(100), true)),
        ..Opts::default()
    });
    for n in 1..10 {
        case.advance(s(100));
        busy.tell(Msg::Count);
        case.expect_report(&format!("ticks {n}"));
    }
    case.end().await;
}

/// "work correctly if the timeout is changed multiple times while
/// handling a NotInfluenceReceiveTimeout message": the last setting wins
/// and counts from when it was made, not from the first setting.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_changed_twice_in_a_quiet_message_counts_from_the_last_change() {
    let case = Case::new("prt-changed-twice");
    let subject = case.spawn_subject(Opts {
        on_start: Some(s(500)),
        ..Opts::default()
    });
    case.advance(s(250));
    for _ in 0..2 {
        subject.tell(Msg::SetTwice(s(1000), s(500)));
        case.expect_report("set");
    }
    // The first setting's deadline passes with no signal...
    case.advance(s(250));
    case.ping(&subject);
    // ...nor does the 1000 s one fire; the last one, 500 s from the
    // change, does.
    case.advance(s(249));
    case.ping(&subject);
    case.advance(s(1));
    case.expect_report("timeout Some(500s)");
    case.end().await;
}

/// "get the timeout when scheduled immediately on restart" (Pekko
/// #28266): a timeout set while the new instance starts fires.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_set_while_restarting_fires() {
    common::quiet_deliberate_panics();
    let case = Case::new("prt-restart");
    let subject = case.spawn_subject(Opts {
        on_restart: Some(s(50)),
        ..Opts::default()
    });
    assert_eq!(case.time.pending_timers(), 0);
    subject.tell(Msg::Crash);
    case.expect_report("crashing");
    // The default `pre_restart` calls `post_stop`.
    case.expect_report("stopped");
    case.expect_report("restarted");
    case.advance(s(49));
    case.ping(&subject);
    case.advance(s(1));
    case.expect_report("timeout Some(50s)");
    case.end().await;
}

/// "Will cancel receive timeout task if stopped": a timeout set by an
/// actor that stops in the same handler is cancelled with it; nothing
/// stays armed and no signal goes to dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_cancels_the_timeout() {
    let case = Case::new("prt-stop");
    let subject = case.spawn_subject(Opts::default());
    let dead_before = case.system.dead_letter_count();
    subject.tell(Msg::SetAndStop(s(200)));
    case.expect_report("stopped");
    common::eventually("the actor terminated", || subject.is_terminated());
    common::eventually("no timer armed", || case.time.pending_timers() == 0);
    case.advance(s(400));
    case.probe.expect_no_msg(Duration::from_millis(100));
    assert_eq!(case.system.dead_letter_count(), dead_before);
    case.end().await;
}

/// Holds `subject` on a latch, runs `meanwhile` (which queues messages
/// behind the held one and may advance the clock), then lets it go and
/// has it handle `then`.
fn while_held(case: &Case, subject: &ActorRef<Msg>, then: Msg, meanwhile: impl FnOnce()) {
    let latch = Latch::new(1);
    subject.tell(Msg::Hold(latch.clone(), Box::new(then)));
    case.expect_report("held");
    meanwhile();
    latch.count_down();
}

/// `CancelReceiveTimeoutSpec` "silently discard a stale ReceiveTimeout
/// after cancelReceiveTimeout": a signal already queued when the timeout
/// is cancelled is dropped, and the actor goes on.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_queued_before_the_timeout_was_cancelled_is_dropped() {
    let case = Case::new("prt-stale-cancel");
    let subject = case.spawn_subject(Opts {
        on_start: Some(s(100)),
        ..Opts::default()
    });
    while_held(&case, &subject, Msg::Cancel, || case.advance(s(100)));
    case.expect_report("cancelled");
    case.ping(&subject);
    assert_eq!(case.time.pending_timers(), 0);
    case.end().await;
}

/// Not in Pekko (which may deliver it): a signal of a timeout replaced
/// after it was queued is dropped; the new timeout fires on its own
/// schedule.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_queued_before_the_timeout_was_replaced_is_dropped() {
    let case = Case::new("prt-stale-replace");
    let subject = case.spawn_subject(Opts {
        on_start: Some(s(100)),
        ..Opts::default()
    });
    while_held(&case, &subject, Msg::Set(s(300)), || case.advance(s(100)));
    case.expect_report("set");
    case.ping(&subject);
    // Only the new timeout's timer: the old signal armed nothing.
    assert_eq!(case.time.pending_timers(), 1);
    case.advance(s(299));
    case.ping(&subject);
    case.advance(s(1));
    case.expect_report("timeout Some(300s)");
    case.end().await;
}

/// Not in Pekko (which documents that a timeout enqueued just after
/// another message may still be delivered): a signal queued behind a
/// message that counts is not delivered, even when both are handled in
/// one activation; the timeout comes a full timeout after that message.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_counts_just_before_the_signal_holds_it_off() {
    let case = Case::new("prt-busy-before-signal");
    let subject = case.spawn_subject(Opts {
        on_start: Some(s(100)),
        ..Opts::default()
    });
    while_held(&case, &subject, Msg::Quiet, || {
        subject.tell(Msg::Tick);
        case.advance(s(100));
    });
    case.expect_report("pong");
    case.expect_report("pong");
    case.ping(&subject);
    case.advance(s(99));
    case.ping(&subject);
    case.advance(s(1));
    case.expect_report("timeout Some(100s)");
    case.end().await;
}

/// The silence is counted from when the last message that counts was
/// taken, before its handler ran: a test that waits for the handler's reply
/// and then advances the clock has the timeout counted from before the
/// advance, however long the handler goes on (Akka counts from the end of
/// the handler; docs/reference/receive-timeout.md).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_silence_counts_from_when_the_message_was_taken() {
    let case = Case::new("prt-taken");
    let subject = case.spawn_subject(Opts {
        on_start: Some(s(100)),
        ..Opts::default()
    });
    let latch = Latch::new(1);
    subject.tell(Msg::BusyHold(latch.clone()));
    case.expect_report("held");
    case.advance(s(100));
    latch.count_down();
    case.expect_report("timeout Some(100s)");
    case.end().await;
}

/// `ActorContextSpec` "set small receive timeout": a timeout of one
/// nanosecond, set in a handler, fires.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_nanosecond_timeout_fires() {
    let case = Case::new("prt-small");
    let subject = case.spawn_subject(Opts::default());
    subject.tell(Msg::Set(Duration::from_nanos(1)));
    case.expect_report("set");
    case.advance(Duration::from_nanos(1));
    case.expect_report("timeout Some(1ns)");
    case.end().await;
}

/// `ActorContextSpec` "set large receive timeout": with a timeout too long
/// to ever fire (here `Duration::MAX`, a minute in Pekko), the actor
/// still answers and its timers still deliver.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_timeout_leaves_the_actor_and_its_timers_working() {
    let case = Case::new("prt-large");
    let subject = case.spawn_subject(Opts::default());
    subject.tell(Msg::Set(Duration::MAX));
    case.expect_report("set");
    subject.tell(Msg::ScheduleQuiet(s(1)));
    case.expect_report("scheduled");
    case.advance(s(1));
    case.expect_report("pong");
    case.advance(s(365 * 24 * 3600));
    case.ping(&subject);
    subject.tell(Msg::Tick);
    case.expect_report("pong");
    case.end().await;

    // The same on real time (tokio's timer).
    let system = common::system("prt-large-real").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let to = probe.actor_ref();
    let subject = system
        .spawn(
            "a",
            Props::new(move || Subject {
                to: to.clone(),
                opts: Opts {
                    on_start: Some(Duration::MAX),
                    ..Opts::default()
                },
                ticks: 0,
            }),
        )
        .unwrap();
    probe.expect_msg("started".to_string());
    subject.tell(Msg::ScheduleQuiet(Duration::from_millis(1)));
    probe.expect_msg("scheduled".to_string());
    probe.expect_msg("pong".to_string());
    system.terminate().await;
}
