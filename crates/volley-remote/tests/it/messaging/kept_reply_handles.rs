//! The reply handle of a request (which travels by correlation id, with no
//! declaration) used as a ref by the asked node's handler: handed to another
//! local actor which answers, or kept and watched and answered later
//! (Akka: an ask's temporary actor can be forwarded and watched like any
//! other ref).

use crate::common;

use std::time::Duration;

use common::{node, remote_ref, spawn_calculator, Calc, T};
use tokio::sync::mpsc;
use volley::{Actor, ActorRef, Context, HandleResult, Props, Terminated};
use volley_remote::RemoteSettings;
use volley_testkit::actor_fn;

/// A asks B's forwarder from tasks; the forwarder hands each request, with
/// its reply handle, to a calculator on B, which answers the asker.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_handle_handed_to_another_local_actor_is_answered_by_it() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    let calc = spawn_calculator(&b, "calc");
    let forward = actor_fn(move |_ctx, msg: Calc| {
        calc.tell(msg);
        Ok(())
    });
    b.system.spawn("forwarder", forward).unwrap();
    let forwarder = remote_ref(&a, &b, "forwarder");
    let asks = (0..100i64).map(|i| {
        let forwarder = forwarder.clone();
        tokio::spawn(async move {
            let sum = forwarder
                .ask(
                    |reply_to| Calc::Add {
                        a: i,
                        b: 2,
                        reply_to,
                    },
                    T,
                )
                .await;
            (i, sum)
        })
    });
    for ask in asks.collect::<Vec<_>>() {
        let (i, sum) = ask.await.unwrap();
        assert_eq!(sum, Ok(i + 2));
    }
    for n in [&a, &b] {
        assert_eq!(n.system.dead_letter_count(), 0);
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

/// What the keeper tells the test.
#[derive(Debug, PartialEq)]
enum Kept {
    Watching,
    Terminated,
}

/// Keeps the reply handle of an `Add` and watches it; answers it when told
/// `Seq`. Answers a `Blob` at once and watches its handle after. Reports to the test what it does and when the handle ends.
struct Keeper {
    kept: Option<(i64, ActorRef<i64>)>,
    report: mpsc::UnboundedSender<Kept>,
}

impl Actor for Keeper {
    type Msg = Calc;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Calc) -> HandleResult {
        match msg {
            Calc::Add { a, b, reply_to } => {
                ctx.watch(&reply_to);
                self.kept = Some((a + b, reply_to));
                let _ = self.report.send(Kept::Watching);
            }
            Calc::Blob(_, reply_to) => {
                // Answered first, watched after: the ask is over by the
                // time the watch arrives.
                reply_to.tell(0);
                ctx.watch(&reply_to);
                let _ = self.report.send(Kept::Watching);
            }
            Calc::Seq { .. } => {
                if let Some((sum, reply_to)) = self.kept.take() {
                    reply_to.tell(sum);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: Terminated) -> HandleResult {
        let _ = self.report.send(Kept::Terminated);
        Ok(())
    }
}

/// The keeper's next report.
/// Spawns the keeper on `on` as `/user/keeper`; returns what it reports.
fn spawn_keeper(on: &common::Node) -> mpsc::UnboundedReceiver<Kept> {
    let (report, reports) = mpsc::unbounded_channel();
    on.system
        .spawn(
            "keeper",
            Props::new(move || Keeper {
                kept: None,
                report: report.clone(),
            }),
        )
        .unwrap();
    reports
}

async fn next(reports: &mut mpsc::UnboundedReceiver<Kept>, what: &str) -> Kept {
    let next = tokio::time::timeout(T, reports.recv()).await;
    next.unwrap_or_else(|_| panic!("the keeper did not report {what}"))
        .expect("open")
}

/// B's handler keeps the reply handle of A's ask and watches it; the ask
/// stays open until B answers through the kept handle, and once the ask
/// has ended the watcher on B gets `Terminated` for the handle.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_reply_handle_is_answered_later_and_its_watcher_told_when_the_ask_ends() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    let mut reports = spawn_keeper(&b);
    spawn_calculator(&b, "calc");
    // Connected first, so the kept ask's handle travels in a Request.
    assert_eq!(common::add(&remote_ref(&a, &b, "calc"), 1, 2).await, 3);
    let keeper = remote_ref(&a, &b, "keeper");
    let asking = keeper.clone();
    let ask = tokio::spawn(async move {
        asking
            .ask(
                |reply_to| Calc::Add {
                    a: 40,
                    b: 2,
                    reply_to,
                },
                T,
            )
            .await
    });
    assert_eq!(next(&mut reports, "watching").await, Kept::Watching);
    // Time passing is the test: nothing answers the ask while B keeps
    // the handle.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!ask.is_finished(), "the ask ended before B answered it");
    // The watch has reached A (on the control lane) before B answers.
    common::await_incoming_watches(&a, &b, 1);
    keeper.tell(Calc::Seq { from: 0, n: 0 });
    let outcome = tokio::time::timeout(T, ask).await.unwrap().unwrap();
    assert_eq!(outcome, Ok(42));
    assert_eq!(next(&mut reports, "terminated").await, Kept::Terminated);
    a.system.terminate().await;
    b.system.terminate().await;
}

/// A watch of a reply handle whose ask is already over (answered) is
/// answered with `Terminated` at once, as for an actor that is gone.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_handle_watched_after_its_ask_ended_gives_terminated() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    let mut reports = spawn_keeper(&b);
    let keeper = remote_ref(&a, &b, "keeper");
    let outcome = keeper
        .ask(|reply_to| Calc::Blob(Vec::new(), reply_to), T)
        .await;
    assert_eq!(outcome, Ok(0));
    assert_eq!(next(&mut reports, "watching").await, Kept::Watching);
    assert_eq!(next(&mut reports, "terminated").await, Kept::Terminated);
    a.system.terminate().await;
    b.system.terminate().await;
}
