//! Message adapters (`Context::message_adapter`, `ActorRef::adapt`): Akka
//! Typed's `messageAdapter`. Cases after Pekko's typed MessageAdapterSpec
//! where they apply: replies of another protocol reach the actor wrapped,
//! in order with its own messages; an adapter is the actor for watching and
//! equality; a failing mapping loses only its own message.

use crate::common;

use std::time::Duration;

use volley::{ActorRef, ActorSystem};
use volley_testkit::{actor_fn, TestProbe};

/// The protocol of a service that knows nothing of its clients.
#[derive(Debug)]
enum ServiceMsg {
    Get { n: u32, reply_to: ActorRef<u32> },
}

/// A client whose own protocol wraps the service's replies.
#[derive(Debug)]
enum ClientMsg {
    Start(u32),
    Wrapped(u32),
    Plain(&'static str),
}

/// A service and a client of it whose reports go to the returned probe.
fn client_and_service(system: &ActorSystem) -> (TestProbe<String>, ActorRef<ClientMsg>) {
    let report = TestProbe::<String>::new(system);
    let report_ref = report.actor_ref();
    let service = actor_fn(|_, ServiceMsg::Get { n, reply_to }| {
        reply_to.tell(n * 10);
        Ok(())
    });
    let service = system.spawn("service", service).unwrap();
    // Asks the service through a message adapter; reports what comes.
    let client = actor_fn(move |ctx, msg: ClientMsg| {
        match msg {
            ClientMsg::Start(count) => {
                let replies = ctx.message_adapter(ClientMsg::Wrapped);
                for n in 1..=count {
                    service.tell(ServiceMsg::Get {
                        n,
                        reply_to: replies.clone(),
                    });
                }
            }
            ClientMsg::Wrapped(v) => report_ref.tell(format!("reply {v}")),
            ClientMsg::Plain(s) => report_ref.tell(format!("plain {s}")),
        }
        Ok(())
    });
    let client = system.spawn("client", client).unwrap();
    (report, client)
}

/// MessageAdapterSpec "must map messages by the adapter": the service's
/// `u32` replies arrive as the client's `Wrapped`, in the order sent.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn replies_of_another_protocol_arrive_wrapped_and_in_order() {
    let system = common::system("adapter-replies").unwrap();
    let (report, client) = client_and_service(&system);
    client.tell(ClientMsg::Start(50));
    for n in 1..=50 {
        report.expect_msg(format!("reply {}", n * 10));
    }
    system.terminate().await;
}

/// An adapter made from outside the actor delivers into the same mailbox
/// as the actor's own ref: one sender's messages keep their order across
/// the two refs.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_adapter_and_the_actors_own_ref_share_one_mailbox_order() {
    let system = common::system("adapter-order").unwrap();
    let (report, client) = client_and_service(&system);
    let wrapped: ActorRef<u32> = client.adapt(ClientMsg::Wrapped);
    for n in 0..20 {
        if n % 2 == 0 {
            wrapped.tell(n);
        } else {
            client.tell(ClientMsg::Plain(["a", "b"][n as usize % 4 / 2]));
        }
    }
    for n in 0..20u32 {
        let expected = if n % 2 == 0 {
            format!("reply {n}")
        } else {
            format!("plain {}", ["a", "b"][n as usize % 4 / 2])
        };
        report.expect_msg(expected);
    }
    system.terminate().await;
}

/// An adapter is its actor: equal to its ref, with its path, and watching
/// it watches the actor; once the actor is gone, messages to the adapter
/// are dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_adapter_is_the_actor_for_watching_and_equality() {
    let system = common::system("adapter-identity").unwrap();
    let (_report, client) = client_and_service(&system);
    let wrapped: ActorRef<u32> = client.adapt(ClientMsg::Wrapped);
    assert_eq!(wrapped.to_any(), client.to_any());
    assert_eq!(wrapped.path(), client.path());
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&wrapped);
    system.stop(&client);
    watcher.expect_terminated(&client);
    assert!(wrapped.is_terminated());
    let before = system.dead_letter_count();
    wrapped.tell(7);
    common::eventually("the dead letter", || system.dead_letter_count() > before);
    system.terminate().await;
}

/// A mapping that panics loses only its own message: the sender goes on,
/// the message is a dead letter, and the actor handles the next ones.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_panicking_mapping_is_a_dead_letter_not_a_crash() {
    let system = common::system("adapter-panic").unwrap();
    let (report, client) = client_and_service(&system);
    let picky: ActorRef<u32> = client.adapt(|n: u32| {
        assert!(n != 13, "unlucky");
        ClientMsg::Wrapped(n)
    });
    let before = system.dead_letter_count();
    picky.tell(12);
    picky.tell(13);
    picky.tell(14);
    report.expect_msg("reply 12".to_string());
    report.expect_msg("reply 14".to_string());
    report.expect_no_msg(Duration::from_millis(100));
    assert_eq!(system.dead_letter_count(), before + 1);
    system.terminate().await;
}
