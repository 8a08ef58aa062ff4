//! Remote ask at volume, late replies, two nodes asking each other at once,
//! and pluggable serializers.

use crate::common;

use std::time::Duration;

use common::{add, node, remote_ref, spawn_calculator, Calc, T};
use serde::{Deserialize, Serialize};
use volley::{Actor, ActorRef, ActorSystem, AskError, Context, HandleResult, Props, Settings};
use volley_remote::serialization::PostcardSerializer;
use volley_remote::{Registry, RemoteSettings, Remoting};
use volley_testkit::{actor_fn, FnActor};

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_asks_in_flight() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let calc = remote_ref(&a, &b, "calc");
    let mut asks = tokio::task::JoinSet::new();
    for i in 0..100_000i64 {
        let calc = calc.clone();
        asks.spawn(async move {
            let sum = calc
                .ask(
                    |reply_to| Calc::Add {
                        a: i,
                        b: 1,
                        reply_to,
                    },
                    Duration::from_secs(60),
                )
                .await;
            (i, sum)
        });
    }
    let mut answered = 0;
    while let Some(joined) = asks.join_next().await {
        let (i, sum) = joined.unwrap();
        assert_eq!(sum, Ok(i + 1));
        answered += 1;
    }
    assert_eq!(answered, 100_000);
    a.system.terminate().await;
    b.system.terminate().await;
}

/// Delays the first answer, answers the re-delivered request.
struct SlowOnce {
    seen: bool,
}
impl Actor for SlowOnce {
    type Msg = Calc;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Calc) -> HandleResult {
        match msg {
            Calc::Add { a, b, reply_to } if !self.seen => {
                self.seen = true;
                ctx.pipe_to(tokio::time::sleep(Duration::from_millis(200)), move |_| {
                    Calc::Add { a, b, reply_to }
                });
            }
            Calc::Add { a, b, reply_to } => reply_to.tell(a + b),
            _ => {}
        }
        Ok(())
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_remote_reply_is_a_dead_letter() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    b.system
        .spawn("slow", Props::new(|| SlowOnce { seen: false }))
        .unwrap();
    let slow = remote_ref(&a, &b, "slow");
    let before = a.system.dead_letter_count() + b.system.dead_letter_count();
    let err = slow
        .ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 1,
                reply_to,
            },
            Duration::from_millis(50),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, AskError::Timeout { .. }), "{err}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while a.system.dead_letter_count() + b.system.dead_letter_count() == before {
        assert!(std::time::Instant::now() < deadline, "late reply vanished");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    a.system.terminate().await;
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_asking_each_other_flat_out_do_not_deadlock() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&a, "calc");
    spawn_calculator(&b, "calc");
    let to_b = remote_ref(&a, &b, "calc");
    let to_a = remote_ref(&b, &a, "calc");
    let blast = |calc: ActorRef<Calc>| async move {
        let mut asks = tokio::task::JoinSet::new();
        for i in 0..20_000i64 {
            let calc = calc.clone();
            asks.spawn(async move {
                calc.ask(
                    |reply_to| Calc::Add {
                        a: i,
                        b: i,
                        reply_to,
                    },
                    Duration::from_secs(60),
                )
                .await
                .map(|s| s == 2 * i)
            });
        }
        let mut ok = 0;
        while let Some(r) = asks.join_next().await {
            if r.unwrap() == Ok(true) {
                ok += 1;
            }
        }
        ok
    };
    let (ab, ba) = tokio::join!(tokio::spawn(blast(to_b)), tokio::spawn(blast(to_a)));
    assert_eq!(ab.unwrap(), 20_000);
    assert_eq!(ba.unwrap(), 20_000);
    a.system.terminate().await;
    b.system.terminate().await;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Compact {
    values: Vec<u32>,
}

async fn postcard_node(name: &str, postcard: bool) -> (ActorSystem, Remoting) {
    let system = ActorSystem::with_settings(name, Settings::default()).unwrap();
    let mut r = Registry::default();
    if postcard {
        r.register_with::<Compact, PostcardSerializer>(7).unwrap();
    } else {
        r.register::<Compact>(7).unwrap();
    }
    let remoting = Remoting::start_with(&system, r, RemoteSettings::default())
        .await
        .unwrap();
    (system, remoting)
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_serializers_plug_in_by_id() {
    let (sa, ra) = postcard_node("alpha", true).await;
    let (sb, rb) = postcard_node("beta", true).await;
    let (sc, rc) = postcard_node("gamma", false).await;
    let (tx, rx) = std::sync::mpsc::channel();
    let collect = actor_fn(move |_ctx, msg: Compact| {
        tx.send(msg).ok();
        Ok(())
    });
    sb.spawn("collect", collect).unwrap();
    let collect = ra
        .resolve::<Compact>(&format!("{}/user/collect", rb.address()))
        .unwrap();
    let msg = Compact {
        values: vec![1, 2, 300_000],
    };
    collect.tell(msg.clone());
    assert_eq!(rx.recv_timeout(T).unwrap(), msg);
    // gamma registered id 7 with bincode: beta refuses the serializer
    // mismatch and dead-letters the message.
    let from_c = rc
        .resolve::<Compact>(&format!("{}/user/collect", rb.address()))
        .unwrap();
    let before = sb.dead_letter_count();
    from_c.tell(msg.clone());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while sb.dead_letter_count() == before {
        assert!(
            std::time::Instant::now() < deadline,
            "mismatch not dead-lettered"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(rx.try_recv().is_err());
    sa.terminate().await;
    sb.terminate().await;
    sc.terminate().await;
}

/// Passes every request on, reply handle included, to another actor.
fn forwarder(to: ActorRef<Calc>) -> Props<FnActor<Calc>> {
    actor_fn(move |_ctx, msg| {
        to.tell(msg);
        Ok(())
    })
}

/// Settings that let a request be forwarded to a third node which answers
/// the asker directly (Akka's default; opt-in here, see
/// docs/reference/remote-security.md#differences-from-akka-remoting).
fn forwarding_allowed() -> RemoteSettings {
    let mut settings = RemoteSettings::default();
    settings.trust.dial_declared_nodes = true;
    settings.trust.replies_from_any_node = true;
    settings
}

/// A asks B, B forwards the request with A's reply handle to C, and C
/// answers A directly: the handle B got by correlation id must reach C as
/// a path C can route to A.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_handle_forwarded_to_a_third_node_still_reaches_the_asker() {
    let a = node("alpha", forwarding_allowed()).await;
    let b = node("beta", RemoteSettings::default()).await;
    let c = node("gamma", forwarding_allowed()).await;
    spawn_calculator(&c, "calc");
    let to_c = remote_ref(&b, &c, "calc");
    b.system.spawn("forwarder", forwarder(to_c)).unwrap();
    let forwarder = remote_ref(&a, &b, "forwarder");
    for i in 0..100 {
        let sum = forwarder
            .ask(
                |reply_to| Calc::Add {
                    a: i,
                    b: 2,
                    reply_to,
                },
                T,
            )
            .await
            .unwrap();
        assert_eq!(sum, i + 2);
    }
    for n in [&a, &b, &c] {
        assert_eq!(n.system.dead_letter_count(), 0);
    }
    for n in [a, b, c] {
        n.system.terminate().await;
    }
}

/// The same forwarding with default settings: C may not dial A because B
/// named it, so the ask times out, and C counts the refused reply.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_a_forwarded_request_cannot_make_the_third_node_dial_the_asker() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    let c = node("gamma", RemoteSettings::default()).await;
    spawn_calculator(&c, "calc");
    let to_c = remote_ref(&b, &c, "calc");
    b.system.spawn("forwarder", forwarder(to_c)).unwrap();
    let forwarder = remote_ref(&a, &b, "forwarder");
    let answer = forwarder
        .ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 2,
                reply_to,
            },
            Duration::from_millis(500),
        )
        .await;
    assert!(answer.is_err(), "C must not dial A: {answer:?}");
    let deadline = std::time::Instant::now() + T;
    while c.system.dead_letter_count() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "C did not count the refused reply"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for n in [a, b, c] {
        n.system.terminate().await;
    }
}

/// A asks an actor of its own, which passes the request, reply handle
/// included, to B: B's answer reaches the asker (a singleton proxy or a
/// router in front of a remote actor does this).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_request_passed_on_to_another_node_is_answered() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    spawn_calculator(&b, "calc");
    let to_b = remote_ref(&a, &b, "calc");
    let local = a.system.spawn("forwarder", forwarder(to_b)).unwrap();
    for i in 0..10 {
        assert_eq!(add(&local, i, 2).await, i + 2);
    }
    for n in [a, b] {
        n.system.terminate().await;
    }
}
