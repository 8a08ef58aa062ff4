//! A region driven through Pekko's protocol by the test, which stands in
//! for the coordinator: what the region buffers while a shard's home is
//! unknown, and a hand-off with traffic running.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use volley::{ActorRef, ActorSystem};
use volley_cluster::sharding::{
    CoordinatorMsg, RegionControl, RegionMsg, ShardId, ShardRegion, ShardingSettings,
};
use volley_testkit::TestProbe;

use super::{got, recorders, started, stopped, Event, Rec};

struct Driven {
    region: ActorRef<RegionMsg<Rec>>,
    /// The region's control address, from its registration.
    control: ActorRef<RegionControl>,
    coordinator: TestProbe<CoordinatorMsg>,
    events: TestProbe<Event>,
    dropped: Arc<AtomicU64>,
}

/// A registered region whose coordinator is a probe.
fn driven(system: &ActorSystem, buffer_size: usize) -> Driven {
    let (factory, events) = recorders(system);
    let coordinator = TestProbe::<CoordinatorMsg>::new(system);
    let settings = ShardingSettings {
        buffer_size,
        retry_interval: Duration::from_secs(60),
        ..ShardingSettings::default()
    };
    let dropped = Arc::new(AtomicU64::new(0));
    let props = ShardRegion::props(
        factory,
        settings,
        coordinator.actor_ref(),
        dropped.clone(),
        None,
    );
    let region = system.spawn("region", props).unwrap();
    let control = coordinator.expect_msg_pf(|msg| match msg {
        CoordinatorMsg::Register { region, .. } => Some(region),
        _ => None,
    });
    control.tell(RegionControl::RegisterAck {
        coordinator: coordinator.actor_ref(),
    });
    Driven {
        region,
        control,
        coordinator,
        events,
        dropped,
    }
}

impl Driven {
    fn send(&self, id: &str, n: u32) {
        self.region.tell(RegionMsg::Deliver {
            shard: ShardId(3),
            entity_id: id.into(),
            msg: Rec::Num(n),
        });
    }

    fn expect_get_shard_home(&self) {
        self.coordinator.expect_msg_pf(|msg| match msg {
            CoordinatorMsg::GetShardHome {
                shard: ShardId(3), ..
            } => Some(()),
            _ => None,
        });
    }

    /// Tells the region to host shard 3 and waits for its answer.
    fn host(&self) {
        self.control
            .tell(RegionControl::HostShard { shard: ShardId(3) });
        self.coordinator.expect_msg_pf(|msg| match msg {
            CoordinatorMsg::ShardStarted {
                shard: ShardId(3), ..
            } => Some(()),
            _ => None,
        });
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_wait_for_the_home_and_then_arrive_in_order() {
    let system = ActorSystem::new("protocol-buffer").unwrap();
    let driven = driven(&system, 1000);
    for n in 1..=50 {
        driven.send("a", n);
    }
    // One question for the shard, however many messages wait.
    driven.expect_get_shard_home();
    driven.coordinator.expect_no_msg(Duration::from_millis(100));
    driven.events.expect_no_msg(Duration::from_millis(1));
    driven.host();
    driven.events.expect_msg(started("a"));
    for n in 1..=50 {
        driven.events.expect_msg(got("a", n));
    }
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_buffer_refuses_the_newest_and_counts_it() {
    let system = ActorSystem::new("protocol-overflow").unwrap();
    let driven = driven(&system, 3);
    for n in 1..=5 {
        driven.send("a", n);
    }
    driven.expect_get_shard_home();
    volley_testkit::await_cond("two refused", || {
        driven.dropped.load(std::sync::atomic::Ordering::Relaxed) == 2
    });
    assert_eq!(system.dead_letter_count(), 2);
    driven.host();
    driven.events.expect_msg(started("a"));
    for n in 1..=3 {
        driven.events.expect_msg(got("a", n));
    }
    driven.events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_with_traffic_running_loses_nothing() {
    let system = ActorSystem::new("protocol-hand-off").unwrap();
    let driven = driven(&system, 10_000);
    driven.send("a", 1);
    driven.expect_get_shard_home();
    driven.host();
    driven.events.expect_msg(started("a"));
    for n in 2..=100 {
        driven.send("a", n);
    }
    driven
        .control
        .tell(RegionControl::BeginHandOff { shard: ShardId(3) });
    driven.coordinator.expect_msg_pf(|msg| match msg {
        CoordinatorMsg::BeginHandOffAck { .. } => Some(()),
        _ => None,
    });
    // The hosting region keeps delivering until `HandOff`: what reaches
    // it from regions that have not acked yet is not held back behind
    // what they send once they have.
    for n in 101..=150 {
        driven.send("a", n);
    }
    let mut received: Vec<u32> = Vec::new();
    while received.last() != Some(&150) {
        if let Event::Got(_, n) = driven.events.receive_msg() {
            received.push(n);
        }
    }
    driven
        .control
        .tell(RegionControl::HandOff { shard: ShardId(3) });
    driven.coordinator.expect_msg_pf(|msg| match msg {
        CoordinatorMsg::ShardStopped {
            shard: ShardId(3), ..
        } => Some(()),
        _ => None,
    });
    // What comes after `HandOff` waits, and the region asks again.
    for n in 151..=200 {
        driven.send("a", n);
    }
    driven.expect_get_shard_home();
    // The shard comes back here: the entity starts again and gets the rest.
    driven.host();
    let mut lifecycle = Vec::new();
    while received.len() < 200 {
        match driven.events.receive_msg() {
            Event::Got(_, n) => received.push(n),
            other => lifecycle.push(other),
        }
    }
    assert_eq!(received, (1..=200).collect::<Vec<_>>());
    assert_eq!(lifecycle, vec![stopped("a"), started("a")]);
    assert_eq!(system.dead_letter_count(), 0);
    system.terminate().await;
}
