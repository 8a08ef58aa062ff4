use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use volley::{ActorRef, ActorSystem};
use volley_testkit::TestProbe;

use super::{bincode_size, Outbox, SizeOf};
use crate::sharding::allocation::ShardId;
use crate::sharding::protocol::ShardEnvelope;

/// What one remote message carried: the numbers, and whether they came
/// as a batch.
#[derive(Debug, PartialEq)]
enum Sent {
    Alone(u32),
    Batch(Vec<u32>),
}

fn sent(envelope: ShardEnvelope<u32>) -> Sent {
    match envelope {
        ShardEnvelope::Message { msg, .. } => Sent::Alone(msg),
        ShardEnvelope::Messages(all) => Sent::Batch(all.into_iter().map(|m| m.msg).collect()),
        ShardEnvelope::HandOffMarker { .. } => panic!("no marker here"),
    }
}

/// Odd numbers cannot be measured (as a message holding an `ActorRef`).
fn odd_alone(n: &u32, scratch: &mut BytesMut) -> Option<usize> {
    n.is_multiple_of(2)
        .then(|| bincode_size(n, scratch))
        .flatten()
}

fn outbox(size_of: SizeOf<u32>, max_messages: usize, max_bytes: usize) -> Outbox<u32> {
    Outbox::new(Some(size_of), max_messages, max_bytes, Arc::default())
}

fn push(outbox: &mut Outbox<u32>, to: &ActorRef<ShardEnvelope<u32>>, n: u32) -> bool {
    outbox.push(to, ShardId(n % 3), format!("e{n}").into(), n)
}

fn probe(system: &ActorSystem) -> (TestProbe<ShardEnvelope<u32>>, ActorRef<ShardEnvelope<u32>>) {
    let probe = TestProbe::new(system);
    let to = probe.actor_ref();
    (probe, to)
}

type Probe = TestProbe<ShardEnvelope<u32>>;

fn system_and_probe(name: &str) -> (ActorSystem, Probe, ActorRef<ShardEnvelope<u32>>) {
    let system = ActorSystem::new(name).unwrap();
    let (probe, to) = probe(&system);
    (system, probe, to)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_wait_per_destination_and_go_as_one_batch_each_in_order() {
    let system = ActorSystem::new("outbox-batches").unwrap();
    let ((a, to_a), (b, to_b)) = (probe(&system), probe(&system));
    let mut outbox = outbox(bincode_size::<u32>, 64, 4096);
    let asked: Vec<bool> = (0..6)
        .map(|n| push(&mut outbox, if n % 2 == 0 { &to_a } else { &to_b }, n))
        .collect();
    // Only the first asks for `SendBatches`; nothing goes before it.
    assert_eq!(asked, [true, false, false, false, false, false]);
    a.expect_no_msg(Duration::from_millis(50));
    outbox.send_all();
    assert_eq!(sent(a.receive_msg()), Sent::Batch(vec![0, 2, 4]));
    assert_eq!(sent(b.receive_msg()), Sent::Batch(vec![1, 3, 5]));
    assert_eq!(outbox.counters.batched.load(Relaxed), 6);
    // Sent: the next message asks again; one alone goes as `Message`.
    assert!(push(&mut outbox, &to_a, 6));
    outbox.send_all();
    assert_eq!(sent(a.receive_msg()), Sent::Alone(6));
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_batch_goes_at_once_by_count_or_by_bytes() {
    let (system, a, to_a) = system_and_probe("outbox-full");
    let mut by_count = outbox(bincode_size::<u32>, 3, 4096);
    for n in 0..4 {
        let _ = push(&mut by_count, &to_a, n);
    }
    assert_eq!(sent(a.receive_msg()), Sent::Batch(vec![0, 1, 2]));
    by_count.send_all();
    assert_eq!(sent(a.receive_msg()), Sent::Alone(3));
    // 4 bytes a number, 12 of routing, 2 or 3 of id: two fit in 40.
    let mut by_bytes = outbox(bincode_size::<u32>, 64, 40);
    for n in 0..5 {
        let _ = push(&mut by_bytes, &to_a, n);
    }
    assert_eq!(sent(a.receive_msg()), Sent::Batch(vec![0, 1]));
    assert_eq!(sent(a.receive_msg()), Sent::Batch(vec![2, 3]));
    by_bytes.send_all();
    assert_eq!(sent(a.receive_msg()), Sent::Alone(4));
    // One over the limit alone goes alone at once.
    let mut tiny = outbox(bincode_size::<u32>, 64, 8);
    assert!(!push(&mut tiny, &to_a, 7));
    assert_eq!(sent(a.receive_msg()), Sent::Alone(7));
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_goes_alone_or_a_send_to_first_sends_what_waited_for_its_destination() {
    let system = ActorSystem::new("outbox-alone").unwrap();
    let ((a, to_a), (b, to_b)) = (probe(&system), probe(&system));
    let mut outbox = outbox(odd_alone, 64, 4096);
    let _ = push(&mut outbox, &to_a, 0);
    let _ = push(&mut outbox, &to_a, 2);
    let _ = push(&mut outbox, &to_b, 4);
    let _ = push(&mut outbox, &to_a, 5); // not measurable: after 0 and 2
    assert_eq!(sent(a.receive_msg()), Sent::Batch(vec![0, 2]));
    assert_eq!(sent(a.receive_msg()), Sent::Alone(5));
    b.expect_no_msg(Duration::from_millis(50)); // b's batch still waits
    outbox.send_to(&to_b); // as before a hand-off marker to b
    assert_eq!(sent(b.receive_msg()), Sent::Alone(4));
    outbox.send_all();
    a.expect_no_msg(Duration::from_millis(50));
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_measure_or_with_batches_of_one_every_message_goes_alone() {
    let (system, a, to_a) = system_and_probe("outbox-off");
    for mut outbox in [
        Outbox::new(None, 64, 4096, Arc::default()),
        outbox(bincode_size::<u32>, 1, 4096),
    ] {
        assert!(!push(&mut outbox, &to_a, 0));
        assert_eq!(sent(a.receive_msg()), Sent::Alone(0));
    }
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_holding_an_actor_ref_cannot_be_measured_outside_a_connection() {
    let (system, _a, to_a) = system_and_probe("outbox-ref");
    let mut scratch = BytesMut::new();
    assert_eq!(bincode_size(&Some(to_a), &mut scratch), None);
    assert_eq!(bincode_size(&7u64, &mut scratch), Some(8));
    system.terminate().await;
}
