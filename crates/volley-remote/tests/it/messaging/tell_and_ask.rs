//! Two systems in one process over loopback: tell, ask with a reply ref
//! across nodes, ordering, volume, remote spawn, size limits.

use crate::common;
use std::sync::Arc;

use std::time::Duration;

use common::{add, node, patient_detector, remote_ref, spawn_calculator, Calc, T};
use volley::{Actor, ActorRef, Context, HandleResult, Props};
use volley_remote::transport::RemoteSpawnError;
use volley_remote::RemoteSettings;
use volley_testkit::actor_fn;

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tell_and_ask_across_nodes() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let path = format!("{}/user/calc", b.remoting.address());
    let calc = a.remoting.resolve::<Calc>(&path).unwrap();
    assert_eq!(calc.path().to_string(), path);
    // ask: the reply handle travels as a ref and the answer comes back.
    let sum = add(&calc, 40, 2).await;
    assert_eq!(sum, 42);
    for i in 0..10 {
        let sum = add(&calc, i, i).await;
        assert_eq!(sum, 2 * i);
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_senders_messages_arrive_in_order_and_none_is_lost() {
    let a = node("alpha", patient_detector()).await;
    let b = node("beta", patient_detector()).await;
    spawn_calculator(&b, "calc");
    let calc = remote_ref(&a, &b, "calc");
    const SENDERS: u32 = 4;
    const PER_SENDER: u64 = 100_000;
    let senders: Vec<_> = (0..SENDERS)
        .map(|from| {
            let calc = calc.clone();
            tokio::spawn(async move {
                for n in 0..PER_SENDER {
                    // `send` waits when the outbound queue is full, so
                    // backpressure never drops anything here.
                    calc.send(Calc::Seq { from, n }).await.unwrap();
                }
            })
        })
        .collect();
    for s in senders {
        s.await.unwrap();
    }
    expect_all_in_order(&calc, SENDERS as u64 * PER_SENDER).await;
    assert_eq!(a.system.dead_letter_count(), 0);
    assert_eq!(b.system.dead_letter_count(), 0);
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_spawn_when_enabled_and_a_clear_error_when_not() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node(
        "beta",
        RemoteSettings {
            remote_spawn: true,
            ..RemoteSettings::default()
        },
    )
    .await;
    let calc: ActorRef<Calc> = a
        .remoting
        .spawn_remote(b.remoting.address(), "calculator", Some("spawned"), &(), T)
        .await
        .unwrap();
    assert!(calc.path().to_string().ends_with("/user/spawned"));
    let sum = add(&calc, 1, 2).await;
    assert_eq!(sum, 3);
    assert!(b.system.lookup("/user/spawned").unwrap().is_some());

    let err = a
        .remoting
        .spawn_remote::<Calc, ()>(b.remoting.address(), "nonesuch", None, &(), T)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nonesuch"), "{err}");
    // A's side has remote spawn disabled (the default).
    let err = b
        .remoting
        .spawn_remote::<Calc, ()>(a.remoting.address(), "calculator", None, &(), T)
        .await
        .unwrap_err();
    assert!(
        matches!(err, RemoteSpawnError::Refused(ref m) if m.contains("disabled")),
        "{err}"
    );
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_messages_use_the_large_lane_and_oversized_ones_fail_at_the_sender() {
    let a = node(
        "alpha",
        RemoteSettings {
            max_frame_size: 1024 * 1024,
            ..RemoteSettings::default()
        },
    )
    .await;
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let calc = remote_ref(&a, &b, "calc");
    // 512 KiB: over the 64 KiB threshold, under the 1 MiB maximum.
    let len = calc
        .ask(|r| Calc::Blob(vec![7; 512 * 1024], r), T)
        .await
        .unwrap();
    assert_eq!(len, 512 * 1024);
    // 2 MiB: refused at the sender, counted as a dead letter; the connection
    // stays up.
    let before = a.system.dead_letter_count();
    let (probe, _keep) = reply_probe(&a);
    calc.tell(Calc::Blob(vec![7; 2 * 1024 * 1024], probe));
    assert_eq!(a.system.dead_letter_count(), before + 1);
    let sum = add(&calc, 2, 2).await;
    assert_eq!(sum, 4);
    a.system.terminate().await;
    b.system.terminate().await;
}

fn reply_probe(n: &common::Node) -> (ActorRef<i64>, ()) {
    (
        n.system
            .spawn_anonymous(actor_fn(|_ctx, _reply: i64| Ok(())))
            .unwrap(),
        (),
    )
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct NotRegistered(u8);

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unregistered_type_is_an_error_at_the_sender() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    let r = a
        .remoting
        .resolve::<NotRegistered>(&format!("{}/user/x", b.remoting.address()))
        .unwrap();
    let before = a.system.dead_letter_count();
    r.tell(NotRegistered(1));
    assert_eq!(a.system.dead_letter_count(), before + 1);
    assert!(matches!(r.try_tell(NotRegistered(2)), Ok(())));
    assert_eq!(a.system.dead_letter_count(), before + 2);
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_for_a_missing_actor_is_a_dead_letter_on_the_receiver() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let missing = remote_ref(&a, &b, "nobody");
    let calc = remote_ref(&a, &b, "calc");
    missing.tell(Calc::Seq { from: 0, n: 0 });
    // The connection still serves the live actor.
    let sum = add(&calc, 1, 1).await;
    assert_eq!(sum, 2);
    assert_eq!(b.system.dead_letter_count(), 1);
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Sends `Seq` messages in slices of 5 000 per activation, so every send
/// happens on a dispatcher thread and is written by it at the end of its
/// batch (or handed to the writer task when the socket is full). A full
/// outbound queue (backpressure) makes it retry a millisecond later.
struct Flooder {
    to: ActorRef<Calc>,
    total: u64,
    sent: u64,
    /// Told once every message is on its way.
    done: Arc<tokio::sync::Notify>,
}

impl Actor for Flooder {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        let end = (self.sent + 5_000).min(self.total);
        while self.sent < end {
            let seq = Calc::Seq {
                from: 0,
                n: self.sent,
            };
            if self.to.try_tell(seq).is_err() {
                ctx.schedule_once("retry", Duration::from_millis(1), ());
                return Ok(());
            }
            self.sent += 1;
        }
        if self.sent < self.total {
            ctx.myself().tell(());
        } else {
            self.done.notify_one();
        }
        Ok(())
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_by_actors_are_flushed_by_their_dispatcher_in_order() {
    flood_from_an_actor(patient_detector()).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_by_actors_arrive_in_order_through_the_writer_task_too() {
    let mut settings = patient_detector();
    settings.batching.dispatcher_writes = false;
    flood_from_an_actor(settings).await;
}

async fn flood_from_an_actor(settings: RemoteSettings) {
    let a = node("alpha", settings.clone()).await;
    let b = node("beta", settings).await;
    spawn_calculator(&b, "calc");
    let calc = remote_ref(&a, &b, "calc");
    // Several times what fills the lane's `max_pending_bytes`, so that the
    // flood meets a full lane again and again.
    const TOTAL: u64 = 400_000;
    let done = Arc::new(tokio::sync::Notify::new());
    let flooder = a
        .system
        .spawn_anonymous(Props::new({
            let (calc, done) = (calc.clone(), done.clone());
            move || Flooder {
                to: calc.clone(),
                total: TOTAL,
                sent: 0,
                done: done.clone(),
            }
        }))
        .unwrap();
    flooder.tell(());
    // Only then is there room on the lane for the reports asked below:
    // the flood keeps it full, and a tell to a full lane is refused.
    // As long as the last report may take (`expect_all_in_order`).
    tokio::time::timeout(Duration::from_secs(300), done.notified())
        .await
        .expect("the flooder sent everything within five minutes");
    expect_all_in_order(&calc, TOTAL).await;
    assert_eq!(a.system.dead_letter_count(), 0);
    assert_eq!(b.system.dead_letter_count(), 0);
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Waits (up to five minutes: a debug build on a loaded machine handles a
/// flood of messages slowly) until the calculator has counted `total`
/// `Seq` messages, failing at once on a gap or reordering.
async fn expect_all_in_order(calc: &ActorRef<Calc>, total: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    loop {
        // The report queues behind whatever of the flood the calculator
        // has not handled yet: it may wait for as long as the whole test.
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let report = match calc.ask(Calc::Report, left.max(T)).await {
            Ok(report) => report,
            Err(e) => panic!("no report within the deadline ({e}): the calculator is stuck"),
        };
        assert_eq!(report[1], 0, "out-of-order or missing deliveries");
        if report[0] == total {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {} of {total} arrived",
            report[0]
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
