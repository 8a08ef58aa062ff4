//! A region driven through Pekko's protocol by the test, which stands in
//! for the coordinator: what the region buffers while a shard's home is
//! unknown, and a hand-off with traffic running.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use volley::{ActorRef, ActorSystem};
use volley_cluster::sharding::{
    CoordinatorMsg, RegionControl, RegionCounters, RegionMsg, ShardId, ShardRegion,
    ShardingSettings,
};
use volley_testkit::TestProbe;

use super::{got, recorders, started, stopped, Event, Rec};

struct Driven {
    region: ActorRef<RegionMsg<Rec>>,
    /// The region's control address, from its registration.
    control: ActorRef<RegionControl>,
    coordinator: TestProbe<CoordinatorMsg>,
    events: TestProbe<Event>,
    counters: Arc<RegionCounters>,
}

/// A registered region whose coordinator is a probe.
fn driven(system: &ActorSystem, buffer_size: usize) -> Driven {
    driven_with(
        system,
        ShardingSettings {
            buffer_size,
            ..ShardingSettings::default()
        },
    )
}

/// [`driven`] with these settings (never retrying on its own).
fn driven_with(system: &ActorSystem, settings: ShardingSettings) -> Driven {
    let (factory, events) = recorders(system);
    let coordinator = TestProbe::<CoordinatorMsg>::new(system);
    let settings = ShardingSettings {
        retry_interval: Duration::from_secs(60),
        ..settings
    };
    let counters = Arc::new(RegionCounters::default());
    let props = ShardRegion::props(
        factory,
        settings,
        coordinator.actor_ref(),
        counters.clone(),
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
        counters,
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

    fn expect_shard_stopped(&self) {
        self.coordinator.expect_msg_pf(|msg| match msg {
            CoordinatorMsg::ShardStopped {
                shard: ShardId(3), ..
            } => Some(()),
            _ => None,
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
        self.control.tell(RegionControl::HostShard {
            shard: ShardId(3),
            remembered: Vec::new(),
        });
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
    volley_testkit::await_cond("two refused", || driven.counters.dropped.load(Relaxed) == 2);
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
    driven.control.tell(RegionControl::HandOff {
        shard: ShardId(3),
        markers_from: Vec::new(),
    });
    driven.expect_shard_stopped();
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

impl Driven {
    /// Hosts shard 3 with entity "a" started, then tells `HandOff`
    /// naming `other`'s marker.
    fn host_and_hand_off_awaiting(&self, other: &ActorRef<RegionControl>) {
        self.send("a", 1);
        self.expect_get_shard_home();
        self.host();
        self.events.expect_msg(started("a"));
        self.events.expect_msg(got("a", 1));
        self.control.tell(RegionControl::HandOff {
            shard: ShardId(3),
            markers_from: vec![other.clone()],
        });
    }
}

/// Design §4: the host stops the shard only once the marker of every
/// region named in `HandOff` has come, and what comes before the marker
/// still reaches the entity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_waits_for_the_markers_it_names() {
    let system = ActorSystem::new("protocol-marker").unwrap();
    let driven = driven(&system, 1000);
    let other = TestProbe::<RegionControl>::new(&system);
    driven.host_and_hand_off_awaiting(&other.actor_ref());
    // Sent by the other region before its marker: delivered here.
    for n in 2..=20 {
        driven.send("a", n);
    }
    for n in 2..=20 {
        driven.events.expect_msg(got("a", n));
    }
    driven.coordinator.expect_no_msg(Duration::from_millis(50));
    driven.region.tell(RegionMsg::HandOffMarker {
        shard: ShardId(3),
        from: other.actor_ref(),
    });
    driven.events.expect_msg(stopped("a"));
    driven.expect_shard_stopped();
    assert_eq!(driven.counters.marker_timeouts.load(Relaxed), 0);
    system.terminate().await;
}

/// A marker may come before its `HandOff` (they take different ways):
/// the hand-off then goes at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marker_that_came_first_counts() {
    let system = ActorSystem::new("protocol-early-marker").unwrap();
    let driven = driven(&system, 1000);
    let other = TestProbe::<RegionControl>::new(&system);
    driven.region.tell(RegionMsg::HandOffMarker {
        shard: ShardId(3),
        from: other.actor_ref(),
    });
    driven.host_and_hand_off_awaiting(&other.actor_ref());
    driven.events.expect_msg(stopped("a"));
    driven.expect_shard_stopped();
    system.terminate().await;
}

/// A marker that never comes (its region's node crashed) holds the
/// hand-off `handoff_timeout` at most, and is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_marker_holds_the_hand_off_until_the_timeout_and_is_counted() {
    let system = ActorSystem::new("protocol-marker-timeout").unwrap();
    let settings = ShardingSettings {
        handoff_timeout: Duration::from_millis(200),
        ..ShardingSettings::default()
    };
    let driven = driven_with(&system, settings);
    let other = TestProbe::<RegionControl>::new(&system);
    driven.host_and_hand_off_awaiting(&other.actor_ref());
    driven.events.expect_msg(stopped("a"));
    driven.expect_shard_stopped();
    assert_eq!(driven.counters.marker_timeouts.load(Relaxed), 1);
    system.terminate().await;
}
