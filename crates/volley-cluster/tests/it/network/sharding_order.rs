//! Issue 34's message accounting: 1,000 entities take steady traffic from
//! senders on two nodes while a node joins (its region takes shards by
//! rebalance) and another shuts down (its region hands its shards off).
//! Every message must arrive exactly once or be a counted dead letter,
//! and per sender each entity must see its numbers in increasing order
//! (design §4: the hand-off marker).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use volley::{Actor, Context, DeadLetter, HandleResult, Props};
use volley_cluster::sharding::{
    ClusterSharding, Entity, EntityRef, EntityTypeKey, HashShards, ShardEnvelope, Sharding,
    ShardingSettings,
};
use volley_cluster::{Cluster, MemberStatus};
use volley_testkit::await_cond_within;
use volley_testkit::remote::Node;

use super::{
    all_up, deadline, expect_removed, form, oldest_index, quick, sharding_nodes, start_nodes,
};

/// Message `n` (from 1, per entity) of sender `sender`.
#[derive(Debug, Serialize, Deserialize)]
struct Numbered {
    sender: u8,
    n: u32,
}

/// What the entities got and where they started, shared by every node.
#[derive(Default)]
struct Received {
    /// (sender, entity id) to the numbers received, in order.
    got: HashMap<(u8, String), Vec<u32>>,
    /// Entity starts per port.
    starts: HashMap<u16, usize>,
    /// How many instances of each entity are alive now.
    alive: HashMap<String, usize>,
    /// Entities that were ever alive twice at once (issue 34's invariant).
    twice: Vec<String>,
    total: u64,
}

type Shared = Arc<Mutex<Received>>;

fn with<T>(record: &Shared, f: impl FnOnce(&mut Received) -> T) -> T {
    f(&mut record.lock().expect("record lock"))
}

struct Recorder {
    id: String,
    port: u16,
    record: Shared,
}

impl Actor for Recorder {
    type Msg = Numbered;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        with(&self.record, |r| {
            *r.starts.entry(self.port).or_default() += 1;
            let alive = r.alive.entry(self.id.clone()).or_default();
            *alive += 1;
            if *alive > 1 {
                r.twice.push(self.id.clone());
            }
        });
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        with(&self.record, |r| {
            if let Some(alive) = r.alive.get_mut(&self.id) {
                *alive -= 1;
            }
        });
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Numbered) -> HandleResult {
        with(&self.record, |r| {
            r.got
                .entry((msg.sender, self.id.clone()))
                .or_default()
                .push(msg.n);
            r.total += 1;
        });
        Ok(())
    }
}

/// Counts, on one node, the dead letters that are entity messages: the
/// message itself (sharding's own dead letters, an entity's mailbox) or
/// its envelope between regions. The regions' and shards' own mailboxes
/// carry control messages too, so their type says nothing: an entity
/// message lost in one shows as missing and uncounted, and fails the test.
struct DeadLetterCounter(Arc<AtomicU64>);

impl Actor for DeadLetterCounter {
    type Msg = DeadLetter;

    fn handle(&mut self, _ctx: &mut Context<Self>, letter: DeadLetter) -> HandleResult {
        let entity_message = [
            std::any::type_name::<Numbered>(),
            std::any::type_name::<ShardEnvelope<Numbered>>(),
        ];
        if entity_message.contains(&letter.message_type) {
            self.0.fetch_add(1, Relaxed);
        }
        Ok(())
    }
}

fn count_dead_letters(node: &Node, counted: &Arc<AtomicU64>) {
    let counted = counted.clone();
    let counter = node
        .system
        .spawn(
            "numbered-dead-letters",
            Props::new(move || DeadLetterCounter(counted.clone())),
        )
        .expect("a counter starts");
    node.system.event_stream().subscribe(counter);
}

const ENTITIES: usize = 1_000;
const SHARDS: u32 = 40;

fn start_sharding(node: &Node, record: &Shared) -> Sharding<Numbered> {
    let (record, port) = (record.clone(), node.remoting.address().port());
    let entity = Entity::new(EntityTypeKey::new("numbered"), move |id| {
        let (id, record) = (id.to_owned(), record.clone());
        Props::new(move || Recorder {
            id: id.clone(),
            port,
            record: record.clone(),
        })
    })
    .with_extractor(HashShards::new(SHARDS).expect("shards"), SHARDS)
    .with_settings(ShardingSettings {
        retry_interval: Duration::from_millis(100),
        rebalance_interval: Duration::from_millis(100),
        handoff_timeout: Duration::from_secs(10),
        down_removal_margin: Duration::from_secs(3),
        ..ShardingSettings::default()
    });
    ClusterSharding::init_on_cluster(&node.system, &node.remoting, entity).expect("sharding starts")
}

/// A sender on one node: every 5 ms, the next 25 entities (in turn) get
/// their next number, until told to stop. Pacing, not synchronisation:
/// the traffic must span the moves.
struct Sender {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<u64>,
}

fn start_sender(sender: u8, sharding: &Sharding<Numbered>) -> Sender {
    let refs: Vec<EntityRef<Numbered>> = (0..ENTITIES)
        .map(|n| sharding.entity_ref(&format!("e-{n}")).expect("an id"))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let task = tokio::spawn(async move {
        let mut next = vec![0u32; refs.len()];
        let (mut at, mut sent) = (0, 0u64);
        while !stopped.load(Relaxed) {
            for _ in 0..25 {
                next[at] += 1;
                refs[at].tell(Numbered {
                    sender,
                    n: next[at],
                });
                at = (at + 1) % refs.len();
                sent += 1;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        sent
    });
    Sender { stop, task }
}

/// No entity alive twice; per sender and entity, no number twice, none
/// out of order. Returns how many are missing (gaps, and numbers past the last received).
fn check_order(record: &Shared, sent_per_entity: &HashMap<(u8, String), u32>) -> u64 {
    with(record, |r| {
        assert!(r.twice.is_empty(), "alive twice: {:?}", r.twice);
        let mut missing = 0u64;
        let mut out_of_order = Vec::new();
        for (key, &sent) in sent_per_entity {
            let got = r.got.get(key).map(Vec::as_slice).unwrap_or(&[]);
            if got.windows(2).any(|w| w[0] >= w[1]) {
                out_of_order.push((key.clone(), got.to_vec()));
            }
            missing += u64::from(sent) - got.len() as u64;
        }
        let shown: Vec<_> = out_of_order.iter().take(3).collect();
        assert!(
            out_of_order.is_empty(),
            "{} (sender, entity) pairs out of order or twice, e.g. {shown:?}",
            out_of_order.len()
        );
        missing
    })
}

/// How many each sender sent to each entity: a sender that sent `total`
/// in turn gave every entity `total / ENTITIES`, the first ones one more.
fn sent_per_entity(totals: &[(u8, u64)]) -> HashMap<(u8, String), u32> {
    let mut sent = HashMap::new();
    for &(sender, total) in totals {
        for n in 0..ENTITIES {
            let extra = u64::from((n as u64) < total % ENTITIES as u64);
            let count = total / ENTITIES as u64 + extra;
            sent.insert((sender, format!("e-{n}")), count as u32);
        }
    }
    sent
}

/// Three nodes with traffic from the coordinator's node and another; a
/// fourth joins and takes shards; the third shuts down and hands its
/// shards off; `dwell` of traffic around each change.
async fn accounting_through_join_and_leave(dwell: Duration) {
    let mut nodes = sharding_nodes::<Numbered>();
    let mut members = start_nodes(&mut nodes, 3).await;
    let (mut clusters, probes) = form(&members);
    let record = Shared::default();
    let dead = Arc::new(AtomicU64::new(0));
    members.iter().for_each(|m| count_dead_letters(m, &dead));
    let shardings: Vec<_> = members.iter().map(|n| start_sharding(n, &record)).collect();
    let oldest = oldest_index(&clusters);
    let (other, leaver) = ((oldest + 1) % 3, (oldest + 2) % 3);
    let senders = [
        (0, start_sender(0, &shardings[oldest])),
        (1, start_sender(1, &shardings[other])),
    ];
    let leaver_port = members[leaver].remoting.address().port();
    let started_on = |port: u16| with(&record, |r| r.starts.get(&port).copied().unwrap_or(0));
    await_cond_within(deadline(), "the leaver hosts entities", || {
        started_on(leaver_port) > 0
    });
    tokio::time::sleep(dwell).await; // pacing: traffic before the join

    let joiner = start_nodes(&mut nodes, 1).await.remove(0);
    count_dead_letters(&joiner, &dead);
    let seeds: Vec<&Node> = members.iter().collect();
    let cluster = Cluster::start(&joiner.system, &joiner.remoting, quick("test", &seeds))
        .expect("a cluster starts");
    clusters.push(cluster);
    all_up(&clusters);
    let joiner_port = joiner.remoting.address().port();
    let _joined = start_sharding(&joiner, &record);
    members.push(joiner);
    await_cond_within(deadline(), "the joiner takes shards", || {
        started_on(joiner_port) > 0
    });
    tokio::time::sleep(dwell).await; // pacing: traffic through rebalances

    let gone = clusters[leaver].self_member().clone();
    members[leaver].system.terminate().await;
    expect_removed(&probes[oldest], &gone, MemberStatus::Exiting);
    tokio::time::sleep(dwell).await; // pacing: traffic after the leave

    let mut totals = Vec::new();
    for (id, sender) in senders {
        sender.stop.store(true, Relaxed);
        totals.push((id, sender.task.await.expect("the sender runs")));
    }
    let all_sent: u64 = totals.iter().map(|(_, n)| n).sum();
    // Bursts of 25 tells from a task: the regions batch what crosses.
    let batched: u64 = shardings.iter().map(Sharding::batched_messages).sum();
    assert!(batched > 0, "the regions sent batches");
    await_cond_within(deadline(), "every message arrives or is counted", || {
        with(&record, |r| r.total) + dead.load(Relaxed) >= all_sent
    });
    let missing = check_order(&record, &sent_per_entity(&totals));
    let counted = dead.load(Relaxed);
    eprintln!("{all_sent} sent to {ENTITIES} entities ({batched} in batches); {missing} missing, {counted} dead letters");
    assert_eq!(
        missing, counted,
        "every lost message is a counted dead letter"
    );
    // Together: one by one, each would wait its own leave out.
    let [a, b, c] = [3, other, oldest].map(|index| members[index].system.clone());
    tokio::join!(a.terminate(), b.terminate(), c.terminate());
    nodes.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_arrives_once_in_order_per_sender_through_a_join_and_a_leave() {
    accounting_through_join_and_leave(Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a soak: seconds of traffic around each move"]
async fn soak_every_message_arrives_once_in_order_per_sender_through_a_join_and_a_leave() {
    accounting_through_join_and_leave(Duration::from_secs(5)).await;
}
