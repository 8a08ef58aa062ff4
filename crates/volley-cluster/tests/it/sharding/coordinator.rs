//! The coordinator driven through Pekko's protocol by the test, which
//! stands in for the regions: allocation, and a rebalance round when a
//! second region registers.

use std::time::Duration;

use volley::{ActorRef, ActorSystem};
use volley_cluster::sharding::{
    CoordinatorMsg, RegionControl, ShardCoordinator, ShardId, ShardingSettings,
};
use volley_testkit::TestProbe;

struct Region {
    probe: TestProbe<RegionControl>,
    me: ActorRef<RegionControl>,
}

fn region(system: &ActorSystem, coordinator: &ActorRef<CoordinatorMsg>) -> Region {
    let probe = TestProbe::<RegionControl>::new(system);
    let me = probe.actor_ref();
    coordinator.tell(CoordinatorMsg::Register {
        region: me.clone(),
        shards: Vec::new(),
        remembered: Vec::new(),
    });
    probe.expect_msg_pf(|msg| match msg {
        RegionControl::RegisterAck { .. } => Some(()),
        _ => None,
    });
    Region { probe, me }
}

impl Region {
    /// The next message, which must be the one `pick` finds a shard in.
    fn expect(&self, pick: impl Fn(&RegionControl) -> Option<ShardId>) -> ShardId {
        self.probe.expect_msg_pf(|msg| pick(&msg))
    }
}

fn host_shard(msg: &RegionControl) -> Option<ShardId> {
    match msg {
        RegionControl::HostShard { shard, .. } => Some(*shard),
        _ => None,
    }
}

fn shard_home(msg: &RegionControl) -> Option<ShardId> {
    match msg {
        RegionControl::ShardHome { shard, .. } => Some(*shard),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_that_joins_gets_shards_by_a_hand_off_round() {
    let system = ActorSystem::new("coordinator-rebalance").unwrap();
    let settings = ShardingSettings {
        rebalance_interval: Duration::from_millis(50),
        ..ShardingSettings::default()
    };
    let coordinator = system
        .spawn("coordinator", ShardCoordinator::props(settings))
        .unwrap();
    let first = region(&system, &coordinator);
    for n in 0..4 {
        let (shard, region) = (ShardId(n), first.me.clone());
        coordinator.tell(CoordinatorMsg::GetShardHome { shard, region });
        assert_eq!(first.expect(host_shard), ShardId(n));
        coordinator.tell(CoordinatorMsg::ShardStarted {
            shard,
            region: first.me.clone(),
        });
        assert_eq!(first.expect(shard_home), ShardId(n));
    }
    let second = region(&system, &coordinator);
    // A round moves one shard (a tenth of four, at least one), the oldest.
    let begin = |msg: &RegionControl| match msg {
        RegionControl::BeginHandOff { shard } => Some(*shard),
        _ => None,
    };
    assert_eq!(first.expect(begin), ShardId(0));
    assert_eq!(second.expect(begin), ShardId(0));
    // The second region had sent the shard's messages to the first, and
    // a marker behind them (design §4): the `HandOff` names it.
    for (region, marker_to) in [(&second, Some(first.me.clone())), (&first, None)] {
        coordinator.tell(CoordinatorMsg::BeginHandOffAck {
            shard: ShardId(0),
            region: region.me.clone(),
            marker_to,
        });
    }
    let hand_off = first.probe.expect_msg_pf(|msg| match msg {
        RegionControl::HandOff {
            shard,
            markers_from,
        } => Some((shard, markers_from)),
        _ => None,
    });
    assert_eq!(hand_off, (ShardId(0), vec![second.me.clone()]));
    // Asked during the round, the home waits for its end.
    let asked = (ShardId(0), first.me.clone());
    coordinator.tell(CoordinatorMsg::GetShardHome {
        shard: asked.0,
        region: asked.1,
    });
    second.probe.expect_no_msg(Duration::from_millis(20));
    coordinator.tell(CoordinatorMsg::ShardStopped {
        shard: ShardId(0),
        region: first.me.clone(),
        remembered: Vec::new(),
    });
    assert_eq!(second.expect(host_shard), ShardId(0));
    coordinator.tell(CoordinatorMsg::ShardStarted {
        shard: ShardId(0),
        region: second.me.clone(),
    });
    let home = first.probe.expect_msg_pf(|msg| match msg {
        RegionControl::ShardHome {
            shard: ShardId(0),
            region,
        } => Some(region),
        _ => None,
    });
    assert_eq!(home, second.me);
    system.terminate().await;
}

/// A `HostShard` that gets no `ShardStarted` (lost on the way, or a host
/// that could not start the shard) is sent again every
/// `shard_start_timeout` (Pekko's `ResendShardHost`); once the host
/// answers, the asker gets the home and the resending stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_host_shard_is_sent_again_until_the_shard_starts() {
    let system = ActorSystem::new("coordinator-resend").unwrap();
    let settings = ShardingSettings {
        shard_start_timeout: Duration::from_millis(50),
        rebalance_interval: Duration::from_secs(3600),
        ..ShardingSettings::default()
    };
    let coordinator = system
        .spawn("coordinator", ShardCoordinator::props(settings))
        .unwrap();
    let host = region(&system, &coordinator);
    let shard = ShardId(7);
    coordinator.tell(CoordinatorMsg::GetShardHome {
        shard,
        region: host.me.clone(),
    });
    // The first is taken as lost: two more come, unasked.
    for _ in 0..3 {
        assert_eq!(host.expect(host_shard), shard);
    }
    coordinator.tell(CoordinatorMsg::ShardStarted {
        shard,
        region: host.me.clone(),
    });
    assert_eq!(host.expect(shard_home), shard);
    host.probe.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}
