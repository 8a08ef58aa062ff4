//! `StatusReply` and `ask_with_status`, ported from Pekko's
//! `StatusReplySpec` (actor-tests, `org/apache/pekko/pattern/`), the
//! `askWithStatus` cases of Pekko Typed's `AskSpec` (actor-typed-tests,
//! `org/apache/pekko/actor/typed/AskSpec.scala`) and of its
//! `ActorContextAskSpec` (`.../typed/scaladsl/`).
//!
//! Ported: StatusReplySpec "pattern match success", "pattern match success
//! (Ack)", "pattern match error with text", "pattern match error with
//! exception" (`replies_match_as_success_or_error`); "flatten a
//! Future[StatusReply]" (`a_reply_flattens_into_a_result`); its
//! `askWithStatus` "unwrap success", "unwrap Error with message", "unwrap
//! Error with exception", which are AskSpec's "unwrap nested response a
//! successful response", "fail future for a fail response with text" and
//! "... with custom exception" (`ask_with_status_unwraps_*`);
//! ActorContextAskSpec's "unwrap successful StatusReply messages using
//! askWithStatus", "unwrap error message StatusReply messages using
//! askWithStatus" and "unwrap error with custom exception StatusReply
//! messages using askWithStatus" (`ctx_ask_with_status_*`). Added: a failed
//! ask stays an ask error, and an error reply crosses serde as its text.
//!
//! Skipped: "not throw exception if null" (Rust has no null replies).

use crate::common;

use std::time::Duration;

use volley::{AskError, AskStatusError, ReplyTo, StatusError, StatusReply};
use volley_testkit::{actor_fn, actor_fn_with, TestProbe};

const T: Duration = Duration::from_secs(10);

/// Pekko's `TestException`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TestException(&'static str);

impl std::fmt::Display for TestException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for TestException {}

/// The specs' `Request`.
#[derive(Debug)]
struct Request(ReplyTo<StatusReply<String>>);

#[volley_testkit::each_dispatcher]
#[test]
fn replies_match_as_success_or_error() {
    match StatusReply::success("woho!") {
        StatusReply::Success("woho!") => {}
        other => panic!("not a success: {other:?}"),
    }
    assert!(matches!(StatusReply::ack(), StatusReply::Success(())));
    let text = StatusReply::<u32>::error("boho!");
    assert!(text.is_error() && !text.is_success());
    let StatusReply::Error(error) = text else {
        panic!("not an error")
    };
    assert!(error.is_message());
    assert_eq!(error.to_string(), "boho!");
    let custom = StatusReply::<u32>::error_from(TestException("boho!"));
    let StatusReply::Error(error) = custom else {
        panic!("not an error")
    };
    assert!(!error.is_message());
    assert_eq!(error.downcast_ref(), Some(&TestException("boho!")));
    assert_eq!(error.to_string(), "boho!");
}

#[volley_testkit::each_dispatcher]
#[test]
fn a_reply_flattens_into_a_result() {
    assert_eq!(StatusReply::success("woho").into_result(), Ok("woho"));
    assert_eq!(StatusReply::ack().into_result(), Ok(()));
    let text = StatusReply::<()>::error("boo").into_result().unwrap_err();
    assert_eq!(text, StatusError::message("boo"));
    let custom = StatusReply::<()>::error_from(TestException("boo")).into_result();
    assert_eq!(
        custom.unwrap_err().downcast_ref(),
        Some(&TestException("boo"))
    );
    let from_result: StatusReply<u32> = Err(TestException("no")).into();
    assert!(from_result.is_error());
}

/// Asks `probe` with status, answers with `reply`, and hands back the
/// ask's outcome.
async fn ask_answered_with(reply: StatusReply<String>) -> Result<String, AskStatusError> {
    let system = common::system("ask-with-status").unwrap();
    let probe = TestProbe::<Request>::new(&system);
    let target = probe.actor_ref();
    let ask = tokio::spawn(async move { target.ask_with_status(Request, T).await });
    let Request(reply_to) = probe.receive_msg();
    reply_to.tell(reply);
    let outcome = ask.await.unwrap();
    system.terminate().await;
    outcome
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_with_status_unwraps_a_success() {
    let outcome = ask_answered_with(StatusReply::success("goodie".into())).await;
    assert_eq!(outcome, Ok("goodie".to_string()));
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_with_status_unwraps_an_error_text_into_the_asks_error() {
    let outcome = ask_answered_with(StatusReply::error("boom")).await;
    let error = outcome.unwrap_err();
    assert_eq!(error, AskStatusError::Error(StatusError::message("boom")));
    assert_eq!(error.status_error().unwrap().to_string(), "boom");
    assert_eq!(error.to_string(), "the actor replied with an error: boom");
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_with_status_unwraps_a_custom_error_into_the_asks_error() {
    let outcome = ask_answered_with(StatusReply::error_from(TestException("boom"))).await;
    let error = outcome.unwrap_err();
    let status = error.status_error().expect("an error reply");
    assert_eq!(status.downcast_ref(), Some(&TestException("boom")));
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_ask_with_status_stays_an_ask_error() {
    let system = common::system("ask-with-status-timeout").unwrap();
    let probe = TestProbe::<Request>::new(&system);
    let silent = probe.actor_ref();
    let outcome = silent
        .ask_with_status(Request, Duration::from_millis(50))
        .await;
    assert!(
        matches!(outcome, Err(AskStatusError::Ask(AskError::Timeout { .. }))),
        "{outcome:?}"
    );
    assert!(outcome.unwrap_err().status_error().is_none());
    system.terminate().await;
}

async fn ctx_ask_answered_with(reply: StatusReply<String>, expected: &str) {
    let system = common::system("ctx-ask-with-status").unwrap();
    let report = TestProbe::<String>::new(&system);
    // Answers each request with the reply it was made with.
    let responder = actor_fn(move |_, Request(reply_to)| {
        reply_to.tell(reply.clone());
        Ok(())
    });
    let responder = system.spawn("responder", responder).unwrap();
    // Asks `responder` as it starts, with `ctx.ask_with_status`, and
    // reports what its mapping turned the outcome into.
    let asker = actor_fn_with(report.actor_ref(), |report, _ctx, msg: String| {
        report.tell(msg);
        Ok(())
    })
    .on_start(move |_, ctx| {
        ctx.ask_with_status(&responder, Request, T, |outcome| match outcome {
            Ok(value) => format!("ok: {value}"),
            Err(AskStatusError::Error(e)) => match e.downcast_ref::<TestException>() {
                Some(custom) => format!("custom error: {custom:?}"),
                None => format!("error text: {e}"),
            },
            Err(AskStatusError::Ask(e)) => format!("ask failed: {e}"),
        });
        Ok(())
    });
    system.spawn("asker", asker.props()).unwrap();
    report.expect_msg(expected.to_string());
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctx_ask_with_status_maps_a_success_to_its_value() {
    ctx_ask_answered_with(StatusReply::success("pong".into()), "ok: pong").await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctx_ask_with_status_maps_an_error_text_to_the_error() {
    ctx_ask_answered_with(StatusReply::error("boho"), "error text: boho").await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctx_ask_with_status_maps_a_custom_error_to_the_error() {
    let reply = StatusReply::error_from(TestException("boho"));
    ctx_ask_answered_with(reply, "custom error: TestException(\"boho\")").await;
}

#[volley_testkit::each_dispatcher]
#[test]
fn an_error_reply_crosses_serde_as_its_text() {
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Envelope {
        ok: StatusReply<u32>,
        failed: StatusReply<u32>,
    }
    let sent = Envelope {
        ok: StatusReply::success(7),
        failed: StatusReply::error_from(TestException("disk full")),
    };
    let text = toml::to_string(&sent).unwrap();
    let got: Envelope = toml::from_str(&text).unwrap();
    assert_eq!(got.ok.into_result(), Ok(7));
    let error = got.failed.into_result().unwrap_err();
    assert_eq!(error, StatusError::message("disk full"));
}
