//! Apache Pekko's `artery.SendQueueSpec` (the queue between the senders
//! and an outbound stream), carried over to volley's lanes: the facts it
//! checks, observed from outside, with volley's API.
//!
//! - "deliver first message" (a message offered to an idle queue is
//!   delivered without another one behind it to push it): lone messages,
//!   each sent only once the one before was answered, from a plain thread,
//!   a task and an actor, with the dispatcher writing (the default) and
//!   with the writer task writing (`batching.dispatcher_writes = false`):
//!   `a_lone_message_to_an_idle_lane_is_delivered`.
//! - "support multiple producers", "deliver messages enqueued before
//!   materialization" and "deliver bursts of messages": threads, tasks
//!   and actors sending at once, from before the first connection, in
//!   bursts with pauses between them; every message arrives and each
//!   producer's arrive in its order:
//!   `producers_of_every_kind_at_once_keep_their_order`.
//! - "deliver all messages": covered by
//!   `tell_and_ask.rs::four_senders_messages_arrive_in_order_and_none_is_lost`
//!   (four tasks), which this file extends to threads and actors.
//!
//! Nothing skipped: the spec's five cases are all above.

use crate::common;

use std::time::Duration;

use common::{node, spawn_calculator, Calc, Node, Relay, T};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use volley::{Actor, ActorRef, Context, HandleResult, Props};
use volley_remote::transport::BatchingSettings;
use volley_remote::RemoteSettings;

/// Sends on to `target` what it is told to, from inside its handler: the
/// dispatcher's write path.
struct Forwarder(ActorRef<Calc>);

impl Actor for Forwarder {
    type Msg = Calc;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Calc) -> HandleResult {
        self.0.tell(msg);
        Ok(())
    }
}

/// On `n`, sends `Seq { from, 0..n }` to `target`, continuing its own
/// count from one burst to the next.
struct Producer {
    target: ActorRef<Calc>,
    from: u32,
    next: u64,
}

impl Actor for Producer {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, n: u64) -> HandleResult {
        for _ in 0..n {
            self.target.tell(Calc::Seq {
                from: self.from,
                n: self.next,
            });
            self.next += 1;
        }
        Ok(())
    }
}

fn relay(n: &Node, name: &str) -> (ActorRef<i64>, UnboundedReceiver<i64>) {
    let (tx, rx) = unbounded_channel();
    let r = n
        .system
        .spawn(name, Props::new(move || Relay(tx.clone())))
        .unwrap();
    (r, rx)
}

async fn answer(rx: &mut UnboundedReceiver<i64>, what: &str) -> i64 {
    match tokio::time::timeout(T, rx.recv()).await {
        Ok(Some(n)) => n,
        _ => panic!("no answer to {what}: a lone message stayed queued"),
    }
}

async fn lone_messages(dispatcher_writes: bool) {
    let settings = RemoteSettings {
        batching: BatchingSettings {
            dispatcher_writes,
            ..BatchingSettings::default()
        },
        ..RemoteSettings::default()
    };
    let a = node("lone-a", settings.clone()).await;
    let b = node("lone-b", settings).await;
    spawn_calculator(&b, "calc");
    let calc = common::remote_ref(&a, &b, "calc");
    let (reply_to, mut rx) = relay(&a, "answers");
    let forwarder = a
        .system
        .spawn("forwarder", Props::new(move || Forwarder(calc.clone())))
        .unwrap();
    let calc = common::remote_ref(&a, &b, "calc");
    for i in 0..40i64 {
        let msg = Calc::Add {
            a: i,
            b: 1,
            reply_to: reply_to.clone(),
        };
        let how = match i % 3 {
            0 => {
                let calc = calc.clone();
                std::thread::spawn(move || calc.tell(msg)).join().unwrap();
                "from a thread"
            }
            1 => {
                let calc = calc.clone();
                tokio::spawn(async move { calc.tell(msg) }).await.unwrap();
                "from a task"
            }
            _ => {
                forwarder.tell(msg);
                "from an actor"
            }
        };
        // B's answer is a lone message too, sent by its calculator.
        assert_eq!(answer(&mut rx, &format!("message {i} {how}")).await, i + 1);
        if i % 4 == 0 {
            // Now and then long enough for every writer to go idle.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_message_to_an_idle_lane_is_delivered() {
    lone_messages(true).await;
    lone_messages(false).await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_of_every_kind_at_once_keep_their_order() {
    let a = node("producers-a", RemoteSettings::default()).await;
    let b = node("producers-b", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    // Nothing has gone to B yet: the first messages wait for the lanes'
    // first connection.
    let calc = common::remote_ref(&a, &b, "calc");
    const BURSTS: u64 = 4;
    const PER_BURST: u64 = 500;
    let actors: Vec<_> = (0..3u32)
        .map(|from| {
            let target = calc.clone();
            a.system
                .spawn(
                    &format!("producer{from}"),
                    Props::new(move || Producer {
                        target: target.clone(),
                        from,
                        next: 0,
                    }),
                )
                .unwrap()
        })
        .collect();
    let mut sent_by_tasks = [0u64; 3];
    for burst in 0..BURSTS {
        for p in &actors {
            p.tell(PER_BURST);
        }
        let threads: Vec<_> = (3..6u32)
            .map(|from| {
                let calc = calc.clone();
                std::thread::spawn(move || {
                    for n in burst * PER_BURST..(burst + 1) * PER_BURST {
                        calc.tell(Calc::Seq { from, n });
                    }
                })
            })
            .collect();
        let tasks: Vec<_> = (6..9u32)
            .map(|from| {
                let calc = calc.clone();
                let start = sent_by_tasks[(from - 6) as usize];
                tokio::spawn(async move {
                    for n in start..start + PER_BURST {
                        calc.send(Calc::Seq { from, n }).await.unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for t in tasks {
            t.await.unwrap();
        }
        for s in &mut sent_by_tasks {
            *s += PER_BURST;
        }
        // All of this burst arrives before the next one starts.
        let expected = (burst + 1) * PER_BURST * 9;
        let start = std::time::Instant::now();
        loop {
            let report = calc
                .ask(Calc::Report, T)
                .await
                .expect("the calculator answers");
            assert_eq!(report[1], 0, "messages out of order: {report:?}");
            if report[0] == expected {
                break;
            }
            assert!(report[0] < expected, "more than was sent: {report:?}");
            assert!(
                start.elapsed() < T,
                "burst {burst}: {} of {expected} arrived",
                report[0]
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A pause between bursts, so that the next one finds idle writers.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(a.system.dead_letter_count(), 0);
    assert_eq!(b.system.dead_letter_count(), 0);
    a.system.terminate().await;
    b.system.terminate().await;
}
