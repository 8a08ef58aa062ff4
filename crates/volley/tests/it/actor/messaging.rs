//! tell, ask, ordering, pipe_to, dead letters and the event stream.

use crate::common;

use std::time::Duration;

use common::eventually;
use volley::{ActorRef, ActorSystem, AskError, DeadLetter, Props};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

enum Seq {
    Item { sender: usize, n: u64 },
    Report(ActorRef<Vec<u64>>),
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_from_one_sender_arrive_in_order() {
    let system = common::system("order").unwrap();
    const SENDERS: usize = 4;
    const PER_SENDER: u64 = 50_000;
    // Checks that each sender's numbers arrive in order: the number next
    // expected from each sender, and the violations seen.
    let expected = (vec![0; SENDERS], 0u64);
    let checker = actor_fn_with(expected, |(next, violations), _ctx, msg: Seq| {
        match msg {
            Seq::Item { sender, n } => {
                if next[sender] != n {
                    *violations += 1;
                }
                next[sender] = n + 1;
            }
            Seq::Report(to) => {
                let mut out = next.clone();
                out.push(*violations);
                to.tell(out);
            }
        }
        Ok(())
    });
    let checker = system.spawn("checker", checker.props()).unwrap();
    let threads: Vec<_> = (0..SENDERS)
        .map(|sender| {
            let c = checker.clone();
            std::thread::spawn(move || {
                for n in 0..PER_SENDER {
                    c.tell(Seq::Item { sender, n });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let report = checker
        .ask(Seq::Report, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(report[..SENDERS], [PER_SENDER; SENDERS]);
    assert_eq!(report[SENDERS], 0, "out-of-order deliveries");
    system.terminate().await;
}

enum Calc {
    Add(i64, i64, ActorRef<i64>),
    Ignore(#[allow(dead_code)] ActorRef<i64>),
    Slow(ActorRef<i64>),
}

fn calculator() -> Props<FnActor<Calc>> {
    actor_fn(|ctx, msg: Calc| {
        match msg {
            Calc::Add(a, b, reply) => reply.tell(a + b),
            Calc::Ignore(reply) => {
                // Keep the handle alive so the ask can only end by timeout.
                std::mem::forget(reply);
            }
            Calc::Slow(reply) => {
                ctx.pipe_to(tokio::time::sleep(Duration::from_millis(300)), move |_| {
                    Calc::Add(1, 1, reply)
                });
            }
        }
        Ok(())
    })
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn ask_gets_the_reply() {
    let system = common::system("ask").unwrap();
    let calc = system.spawn("calc", calculator()).unwrap();
    let sum = calc
        .ask(|r| Calc::Add(40, 2, r), Duration::from_secs(5))
        .await;
    assert_eq!(sum, Ok(42));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn ask_times_out_and_a_late_reply_is_a_dead_letter() {
    let system = common::system("ask-timeout").unwrap();
    let calc = system.spawn("calc", calculator()).unwrap();
    let err = calc
        .ask(Calc::Ignore, Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(matches!(err, AskError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("/user/calc"), "{err}");

    let before = system.dead_letter_count();
    let err = calc
        .ask(Calc::Slow, Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(matches!(err, AskError::Timeout { .. }));
    // The piped reply arrives ~250 ms after the timeout.
    eventually("late reply dead-lettered", || {
        system.dead_letter_count() > before
    });
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn ask_on_a_dead_actor_is_a_clear_error() {
    let system = common::system("ask-dead").unwrap();
    let calc = system.spawn("calc", calculator()).unwrap();
    calc.graceful_stop();
    eventually("calc stopped", || calc.is_terminated());
    let err = calc
        .ask(|r| Calc::Add(1, 2, r), Duration::from_secs(1))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        AskError::RecipientTerminated("volley://ask-dead/user/calc".into())
    );
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn dead_letters_are_counted_and_published() {
    let system = common::system("dl").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let sink = actor_fn(move |_, msg: DeadLetter| {
        tx.tell(format!("{} {:?}", msg.recipient, msg.reason));
        Ok(())
    });
    let sink = system.spawn("sink", sink).unwrap();
    system.event_stream().subscribe(sink);
    let calc = system.spawn("calc", calculator()).unwrap();
    calc.graceful_stop();
    eventually("calc stopped", || calc.is_terminated());
    let before = system.dead_letter_count();
    for _ in 0..3 {
        calc.tell(Calc::Add(1, 1, unused_reply(&system)));
    }
    assert_eq!(system.dead_letter_count(), before + 3);
    for _ in 0..3 {
        events.expect_msg("volley://dl/user/calc RecipientTerminated".to_string());
    }
    system.terminate().await;
}

/// A reply handle nobody reads.
fn unused_reply(system: &ActorSystem) -> ActorRef<i64> {
    system
        .spawn_anonymous(actor_fn(|_, _: i64| Ok(())))
        .unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn pipe_to_delivers_the_future_output_as_a_message() {
    let system = common::system("pipe").unwrap();
    let calc = system.spawn("calc", calculator()).unwrap();
    let v = calc.ask(Calc::Slow, Duration::from_secs(5)).await;
    assert_eq!(v, Ok(2));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn refs_compare_hash_and_display() {
    let system = common::system("refs").unwrap();
    let a = system.spawn("a", calculator()).unwrap();
    let b = system.spawn("b", calculator()).unwrap();
    let a2 = a.clone();
    assert_eq!(a, a2);
    assert_ne!(a, b);
    let set: std::collections::HashSet<_> = [a.clone(), a2, b.clone()].into_iter().collect();
    assert_eq!(set.len(), 2);
    assert!(a.to_string().starts_with("volley://refs/user/a#"));
    assert_eq!(a.to_any(), a);
    assert_eq!(a.to_any().downcast::<Calc>(), Some(a.clone()));
    assert!(a.to_any().downcast::<u32>().is_none());
    system.terminate().await;
}
