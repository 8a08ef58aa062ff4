//! Cases ported from Pekko's typed `ActorContextAskSpec`,
//! `ActorContextPipeToSelfSpec` and `MessageAdapterSpec`
//! (actor-typed-tests, `scaladsl`), in volley's API: `Context::ask`,
//! `Context::pipe_to` and `Context::message_adapter`.
//!
//! Ported here: from the ask spec "provide a safe ask", "fail actor when
//! mapping does not match response" (as volley's difference: the panic is
//! logged, the actor runs on), "deal with timeouts in ask" (an ask to a
//! terminated actor), "must timeout if recipient doesn't reply in time",
//! "receive replies in same order as sent", and the three `askWithStatus`
//! cases with a `Result` reply (their `StatusReply` form is in
//! `pekko_status_reply.rs`);
//! from the pipe-to-self spec "handle success" and "handle failure"; from
//! the adapter spec "use the right adapter" (as volley's difference: a
//! second adapter replaces nothing), "not break if wrong/unknown response
//! type" (as a downcast) and "not catch exception thrown after adapter,
//! when processing the message". One case more: a panic in `ctx.ask`'s
//! request function fails the asking actor, as Pekko's does.
//!
//! Elsewhere: "map messages inside the actor", "stop when exception from
//! adapter" and "redirect to DeadLetter after termination" are in
//! `adapters.rs`; the panic in a `pipe_to` mapping is in
//! `pekko_typed_supervision.rs`.
//!
//! Not ported: "handle adapted null" (Rust has no null message), and the
//! specs' thread-name checks: volley runs the mappings of `ask`,
//! `pipe_to` and adapters outside the actor (docs/reference/ask.md and
//! docs/reference/message-adapters.md); what carries over is that the mapped message is
//! handled by the actor, in its own state.

use crate::common;

use std::time::Duration;

use volley::{ActorRef, AskError, Context, DeadLetter, Directive, Props, ReplyTo};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, SupervisorProbe, TestProbe};

/// Long enough never to be reached by a passing test.
const LONG: Duration = Duration::from_secs(60);

/// The protocol of a service that knows nothing of its clients.
enum Svc {
    /// Replies with the number.
    Echo(u32, ReplyTo<u32>),
    /// Keeps the reply handle and never answers.
    Hold(ReplyTo<u32>),
    /// Replies `Ok("pong")` when `ok`, else `Err(Refused(..))`.
    Status(bool, ReplyTo<Result<&'static str, Refused>>),
}

/// The error of a `Status` reply (Pekko's custom `StatusReply` exception).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refused(&'static str);

/// Answers `Echo` and `Status`; holds the `Hold` requests unanswered.
fn service(system: &volley::ActorSystem, name: &str) -> ActorRef<Svc> {
    let mut held = Vec::new();
    let service = actor_fn(move |_ctx, msg| {
        match msg {
            Svc::Echo(n, reply_to) => reply_to.tell(n),
            Svc::Hold(reply_to) => held.push(reply_to),
            Svc::Status(true, reply_to) => reply_to.tell(Ok("pong")),
            Svc::Status(false, reply_to) => reply_to.tell(Err(Refused("boho"))),
        }
        Ok(())
    });
    system.spawn(name, service).unwrap()
}

/// The client's actor: it counts the messages it has handled.
type Client = FnActor<String, u32>;

/// The specs' "snitch", named `name`: runs `setup` when it starts (where
/// Pekko's `Behaviors.setup` asks or pipes), then reports every message it
/// handles to `report` as `"<its name> #<how many so far>: <message>"`.
/// The count is the actor's own state: a mapped message that reaches it
/// was handled by the actor, not next to it.
fn client(
    system: &volley::ActorSystem,
    name: &str,
    report: &TestProbe<String>,
    setup: impl Fn(&mut Context<Client>) + Send + Sync + 'static,
) -> ActorRef<String> {
    let report = report.actor_ref();
    let client = actor_fn_with(0, move |handled, ctx, msg: String| {
        *handled += 1;
        let name = ctx.path().name().to_string();
        report.tell(format!("{name} #{handled}: {msg}"));
        Ok(())
    })
    .on_start(move |_, ctx| {
        setup(ctx);
        Ok(())
    });
    system.spawn(name, client.props()).unwrap()
}

/// An ask outcome as the client's message.
fn outcome(result: Result<u32, AskError>) -> String {
    match result {
        Ok(n) => format!("reply {n}"),
        Err(e) => format!("failed: {e}"),
    }
}

/// ActorContextAskSpec, "provide a safe ask": the reply comes back as the
/// asking actor's own message, handled in its own state.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_ctx_ask_reply_is_handled_by_the_asking_actor_as_its_own_message() {
    let system = common::system("ctx-ask-safe").unwrap();
    let report = TestProbe::<String>::new(&system);
    let svc = service(&system, "ping-pong");
    client(&system, "snitch", &report, move |ctx| {
        ctx.ask(&svc, |r| Svc::Echo(7, r), LONG, outcome);
    });
    report.expect_msg("snitch #1: reply 7".to_string());
    report.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// ActorContextAskSpec, "fail actor when mapping does not match response",
/// pinned as volley's difference: the mapping runs outside the actor, so
/// its panic is logged at error naming the actor, nothing is delivered,
/// and the actor is not failed (Pekko stops it).
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_in_a_ctx_ask_mapping_is_logged_and_the_actor_runs_on() {
    common::quiet_deliberate_panics();
    common::log_capture::install();
    let system = common::system("ctx-ask-mapping-panic").unwrap();
    let report = TestProbe::<String>::new(&system);
    let svc = service(&system, "ping-pong");
    let snitch = client(&system, "snitch", &report, move |ctx| {
        ctx.ask(
            &svc,
            |r| Svc::Echo(1, r),
            LONG,
            |_| -> String { panic!("the mapping does not match (on purpose)") },
        );
    });
    common::eventually("the mapping's panic to be logged", || {
        !common::log_capture::logged(&["mapping panicked", "ctx-ask-mapping-panic/user/snitch"])
            .is_empty()
    });
    snitch.tell("still here".to_string());
    report.expect_msg("snitch #1: still here".to_string());
    assert!(!snitch.is_terminated());
    system.terminate().await;
}

/// The same for the request function, as in Pekko: it runs in the
/// asking actor's handler, so its panic fails the actor (here restarted
/// by the default strategy, which resets its count), and nothing is sent.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panic_in_a_ctx_ask_request_function_fails_the_asking_actor() {
    common::quiet_deliberate_panics();
    let system = common::system("ctx-ask-make-panic").unwrap();
    let report = TestProbe::<String>::new(&system);
    let target = TestProbe::<u32>::new(&system);
    let (target_ref, report_ref) = (target.actor_ref(), report.actor_ref());
    // Asks `target` with a request function that panics when told "go";
    // reports everything else with its count, which a restart resets.
    let mut handled = 0;
    let asker = actor_fn(move |ctx, msg: String| {
        if msg == "go" {
            let make = |_: ReplyTo<u32>| -> u32 { panic!("no request (on purpose)") };
            ctx.ask(&target_ref, make, LONG, outcome);
        }
        handled += 1;
        report_ref.tell(format!("#{handled}: {msg}"));
        Ok(())
    });
    let asker = system.spawn("asker", asker).unwrap();
    asker.tell("a".to_string());
    report.expect_msg("#1: a".to_string());
    asker.tell("go".to_string());
    asker.tell("b".to_string());
    report.expect_msg("#1: b".to_string());
    target.expect_no_msg(Duration::from_millis(50));
    system.terminate().await;
}

/// ActorContextAskSpec, "deal with timeouts in ask" (Pekko asks dead
/// letters): a `ctx.ask` to a terminated actor fails with
/// `RecipientTerminated`, without waiting out its (long) timeout.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_ctx_ask_to_a_terminated_actor_fails_without_waiting_for_its_timeout() {
    let system = common::system("ctx-ask-dead").unwrap();
    let report = TestProbe::<String>::new(&system);
    let svc = service(&system, "gone");
    let watcher = TestProbe::<()>::new(&system);
    system.stop(&svc);
    watcher.expect_terminated(&svc);
    let path = svc.path().to_string();
    let target = svc.clone();
    client(&system, "snitch", &report, move |ctx| {
        ctx.ask(
            &target,
            |r| Svc::Echo(1, r),
            LONG,
            |result| match result {
                Err(AskError::RecipientTerminated(p)) => format!("terminated {p}"),
                other => format!("unexpected {other:?}"),
            },
        );
    });
    // The probe's wait (5 s by default) is far below the ask's timeout.
    report.expect_msg(format!("snitch #1: terminated {path}"));
    system.terminate().await;
}

/// ActorContextAskSpec, "must timeout if recipient doesn't reply in time":
/// the mapping gets `Timeout`, naming the asked actor and the timeout.
/// (Pekko's message also names the request's class; volley's does not.)
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_ctx_ask_that_gets_no_reply_times_out_naming_target_and_timeout() {
    let system = common::system("ctx-ask-timeout").unwrap();
    let report = TestProbe::<String>::new(&system);
    let svc = service(&system, "silent");
    let path = svc.path().to_string();
    client(&system, "snitch", &report, move |ctx| {
        ctx.ask(
            &svc,
            Svc::Hold,
            Duration::from_millis(10),
            |result| match result {
                Err(e @ AskError::Timeout { .. }) => format!("timeout: {e}"),
                other => format!("unexpected {other:?}"),
            },
        );
    });
    report.expect_msg(format!(
        "snitch #1: timeout: ask to {path} timed out after 10ms"
    ));
    system.terminate().await;
}

/// ActorContextAskSpec, "receive replies in same order as sent": a
/// hundred asks made in one handler to one actor reach it in that order,
/// and their replies come back to the asker in it too, each once.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn ctx_ask_replies_arrive_in_the_order_the_asks_were_made() {
    const N: u32 = 100;
    let system = common::system("ctx-ask-order").unwrap();
    let report = TestProbe::<String>::new(&system);
    let svc = service(&system, "ping-pong");
    client(&system, "snitch", &report, move |ctx| {
        for n in 1..=N {
            ctx.ask(&svc, move |r| Svc::Echo(n, r), LONG, outcome);
        }
    });
    for n in 1..=N {
        report.expect_msg(format!("snitch #{n}: reply {n}"));
    }
    report.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// ActorContextAskSpec, "unwrap successful StatusReply messages using
/// askWithStatus", with a `Result` reply (the `StatusReply` form is in
/// `pekko_status_reply.rs`): its `Ok` reaches the mapping as the reply.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_ok_result_reply_reaches_the_ctx_ask_mapping_as_the_reply() {
    let system = common::system("ctx-ask-status-ok").unwrap();
    let report = TestProbe::<String>::new(&system);
    let svc = service(&system, "status");
    client(&system, "snitch", &report, move |ctx| {
        ctx.ask(&svc, |r| Svc::Status(true, r), LONG, status_outcome);
    });
    report.expect_msg("snitch #1: got pong".to_string());
    system.terminate().await;
}

/// ActorContextAskSpec, "unwrap error message StatusReply messages" and
/// "unwrap error with custom exception StatusReply messages": the
/// responder's own error type reaches the mapping intact, told apart
/// from a failure of the ask itself.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_err_result_reply_reaches_the_ctx_ask_mapping_as_the_responders_error() {
    let system = common::system("ctx-ask-status-err").unwrap();
    let report = TestProbe::<String>::new(&system);
    let svc = service(&system, "status");
    client(&system, "snitch", &report, move |ctx| {
        ctx.ask(&svc, |r| Svc::Status(false, r), LONG, status_outcome);
    });
    report.expect_msg("snitch #1: got error: Refused(\"boho\")".to_string());
    system.terminate().await;
}

fn status_outcome(result: Result<Result<&'static str, Refused>, AskError>) -> String {
    match result {
        Ok(Ok(reply)) => format!("got {reply}"),
        Ok(Err(refused)) => format!("got error: {refused:?}"),
        Err(e) => format!("ask failed: {e}"),
    }
}

/// ActorContextPipeToSelfSpec, "handle success": the future's output
/// comes back, mapped, as the actor's own message.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn pipe_to_hands_a_successful_output_to_the_actor() {
    let system = common::system("pipe-to-self-success").unwrap();
    let report = TestProbe::<String>::new(&system);
    client(&system, "pipe-to-self-spec-success", &report, |ctx| {
        ctx.pipe_to(async { Ok::<_, String>("hi") }, piped);
    });
    report.expect_msg("pipe-to-self-spec-success #1: ok: hi".to_string());
    system.terminate().await;
}

/// ActorContextPipeToSelfSpec, "handle failure": a failed output (a
/// future of `Result` that ends in `Err`) comes back just the same.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn pipe_to_hands_a_failed_output_to_the_actor() {
    let system = common::system("pipe-to-self-failure").unwrap();
    let report = TestProbe::<String>::new(&system);
    client(&system, "pipe-to-self-spec-failure", &report, |ctx| {
        ctx.pipe_to(
            async {
                tokio::task::yield_now().await;
                Err::<&str, _>("Fail".to_string())
            },
            piped,
        );
    });
    report.expect_msg("pipe-to-self-spec-failure #1: ko: Fail".to_string());
    system.terminate().await;
}

fn piped(output: Result<&'static str, String>) -> String {
    match output {
        Ok(s) => format!("ok: {s}"),
        Err(e) => format!("ko: {e}"),
    }
}

/// Replies of three protocols, for the adapter cases.
#[derive(Debug)]
struct Pong1(&'static str);
#[derive(Debug)]
struct Pong2(&'static str);

enum Ping {
    One(ActorRef<Pong1>),
    Two(ActorRef<Pong2>),
    Three(ActorRef<i32>),
}

/// MessageAdapterSpec, "use the right adapter": adapters of different
/// types each map with their own function. Pinned as volley's difference:
/// a second adapter for a type replaces nothing, so the first one still
/// maps with its own function (Pekko would use the newer one).
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn each_adapter_maps_with_its_own_function_and_none_is_replaced() {
    let system = common::system("adapter-right-one").unwrap();
    let report = TestProbe::<String>::new(&system);
    let pinger = actor_fn(|_, msg: Ping| {
        match msg {
            Ping::One(r) => r.tell(Pong1("hello-1")),
            Ping::Two(r) => r.tell(Pong2("hello-2")),
            Ping::Three(r) => r.tell(3),
        }
        Ok(())
    });
    let pinger = system.spawn("ping-pong", pinger).unwrap();
    client(&system, "snitch", &report, move |ctx| {
        let older = ctx.message_adapter(|p: Pong1| format!("older {}", p.0));
        let one = ctx.message_adapter(|p: Pong1| format!("1 {}", p.0));
        let two = ctx.message_adapter(|p: Pong2| format!("2 {}", p.0));
        let three = ctx.message_adapter(|n: i32| format!("{n} {n}"));
        pinger.tell(Ping::One(one));
        pinger.tell(Ping::Two(two));
        pinger.tell(Ping::Three(three));
        pinger.tell(Ping::One(older));
    });
    report.expect_msg("snitch #1: 1 hello-1".to_string());
    report.expect_msg("snitch #2: 2 hello-2".to_string());
    report.expect_msg("snitch #3: 3 3".to_string());
    report.expect_msg("snitch #4: older hello-1".to_string());
    system.terminate().await;
}

/// MessageAdapterSpec, "not break if wrong/unknown response type": Pekko
/// casts an adapter to a type nobody adapted, and the message is dropped
/// as unhandled. In volley the cast itself is refused: an adapter, once
/// untyped, downcasts to the type it adapts and to no other (not even its
/// actor's own), and it keeps working afterwards.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_adapter_downcasts_only_to_the_type_it_adapts() {
    let system = common::system("adapter-wrong-type").unwrap();
    let report = TestProbe::<String>::new(&system);
    let snitch = client(&system, "snitch", &report, |_| {});
    let adapter: ActorRef<Pong1> = snitch.adapt(|p: Pong1| format!("1 {}", p.0));
    let untyped = adapter.to_any();
    assert!(untyped.downcast::<Pong2>().is_none());
    assert!(untyped.downcast::<String>().is_none());
    assert!(snitch.to_any().downcast::<Pong1>().is_none());
    let again = untyped.downcast::<Pong1>().expect("the adapted type");
    again.tell(Pong1("hello-1"));
    report.expect_msg("snitch #1: 1 hello-1".to_string());
    system.terminate().await;
}

/// The actor of the next case: asks `pinger` for five echoes at start,
/// counts the wrapped replies it handles and fails on the third.
fn fails_on_third(pinger: ActorRef<Svc>, report: ActorRef<String>) -> Props<FnActor<String, u32>> {
    let stopped = report.clone();
    actor_fn_with(0, move |count, _ctx, msg: String| {
        *count += 1;
        report.tell(format!("{count} {msg}"));
        if *count == 3 {
            return Err("boom (on purpose)".into());
        }
        Ok(())
    })
    .on_start(move |_, ctx| {
        let replies = ctx.message_adapter(|n: u32| format!("hello-{n}"));
        for n in 1..=5 {
            pinger.tell(Svc::Echo(n, replies.clone()));
        }
        Ok(())
    })
    .on_stop(move |_, _ctx| stopped.tell("stopped".to_string()))
    .props()
}

/// MessageAdapterSpec, "not catch exception thrown after adapter, when
/// processing the message": a handler that fails on an adapted message
/// fails as on any other (its supervisor decides; here it stops it), and
/// the replies it had not handled become dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_failure_handling_an_adapted_message_is_an_ordinary_failure() {
    let system = common::system("adapter-after").unwrap();
    let report = TestProbe::<String>::new(&system);
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let supervisor = SupervisorProbe::new(&system).with_decider(|_| Directive::Stop);
    let pinger = service(&system, "ping-pong");
    let report_ref = report.actor_ref();
    let snitch = supervisor.spawn("snitch", fails_on_third(pinger, report_ref));
    report.expect_msg("1 hello-1".to_string());
    report.expect_msg("2 hello-2".to_string());
    report.expect_msg("3 hello-3".to_string());
    let failure = supervisor.expect_failure();
    assert!(failure.message.contains("boom"), "{}", failure.message);
    assert_eq!(failure.directive, Directive::Stop);
    supervisor.expect_stop(&snitch);
    report.expect_msg("stopped".to_string());
    let path = snitch.path().to_string();
    let mut undelivered = 0;
    dead.fish_for(|d| {
        if d.recipient == path {
            undelivered += 1;
        }
        undelivered == 2
    });
    report.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}
