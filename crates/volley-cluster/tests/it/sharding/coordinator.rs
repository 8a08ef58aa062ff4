//! The coordinator driven through Pekko's protocol by the test, which
//! stands in for the regions: allocation, and a rebalance round when a
//! second region registers, at once and again when a round ends.

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
    registered(system, coordinator, false)
}

/// A region, or a proxy, that registered and got its ack.
fn registered(system: &ActorSystem, coordinator: &ActorRef<CoordinatorMsg>, proxy: bool) -> Region {
    let probe = TestProbe::<RegionControl>::new(system);
    let me = probe.actor_ref();
    coordinator.tell(CoordinatorMsg::Register {
        region: me.clone(),
        shards: Vec::new(),
        remembered: Vec::new(),
        proxy,
    });
    probe.expect_msg_pf(|msg| match msg {
        RegionControl::RegisterAck { .. } => Some(()),
        _ => None,
    });
    Region { probe, me }
}

/// A region that registered and was given shards 0 to 3.
fn region_hosting_four_shards(
    system: &ActorSystem,
    coordinator: &ActorRef<CoordinatorMsg>,
) -> Region {
    let first = region(system, coordinator);
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
    first
}

/// A coordinator with `rebalance_interval` set to `every`, a first region
/// hosting shards 0 to 3, and a second that registered after: both have
/// been told the round that moves shard 0 began.
fn second_region_joins(
    name: &str,
    every: Duration,
) -> (ActorSystem, ActorRef<CoordinatorMsg>, Region, Region) {
    let system = ActorSystem::new(name).unwrap();
    let settings = ShardingSettings {
        rebalance_interval: every,
        ..ShardingSettings::default()
    };
    let coordinator = system
        .spawn("coordinator", ShardCoordinator::props(settings))
        .unwrap();
    let first = region_hosting_four_shards(&system, &coordinator);
    let second = region(&system, &coordinator);
    // A round moves one shard (a tenth of four, at least one), the oldest.
    assert_eq!(first.expect(begin), ShardId(0));
    assert_eq!(second.expect(begin), ShardId(0));
    (system, coordinator, first, second)
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
    let (system, coordinator, first, second) =
        second_region_joins("coordinator-rebalance", Duration::from_millis(50));
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

fn begin(msg: &RegionControl) -> Option<ShardId> {
    match msg {
        RegionControl::BeginHandOff { shard } => Some(*shard),
        _ => None,
    }
}

/// With no tick in sight (an interval of an hour), a region that
/// registers for the first time gets a round at once; a region that
/// registers while that round moves its shard gets the next round as
/// soon as the first one ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joining_region_gets_a_round_at_once_and_one_asked_meanwhile_follows_the_first() {
    let (system, coordinator, first, second) =
        second_region_joins("coordinator-join-round", Duration::from_secs(3600));
    // Registered during the round: the next one waits for its end.
    let third = region(&system, &coordinator);
    third.probe.expect_no_msg(Duration::from_millis(20));
    for region in [&first, &second] {
        coordinator.tell(CoordinatorMsg::BeginHandOffAck {
            shard: ShardId(0),
            region: region.me.clone(),
            marker_to: None,
        });
    }
    first.probe.expect_msg_pf(|msg| match msg {
        RegionControl::HandOff {
            shard: ShardId(0), ..
        } => Some(()),
        _ => None,
    });
    coordinator.tell(CoordinatorMsg::ShardStopped {
        shard: ShardId(0),
        region: first.me.clone(),
        remembered: Vec::new(),
    });
    for region in [&first, &second, &third] {
        assert_eq!(region.expect(begin), ShardId(1));
    }
    system.terminate().await;
}

/// A proxy (Pekko's `startProxy`, or a member without the entity type's
/// role) is a registered region that gets no shard: with only a proxy
/// registered a shard is not allocated; once a region registers, the
/// proxy's next ask allocates the shard there and the proxy learns the
/// home; the proxy is told of a rebalance round as every region is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_gets_homes_but_never_hosts_a_shard() {
    let system = ActorSystem::new("coordinator-proxy").unwrap();
    let settings = ShardingSettings {
        rebalance_interval: Duration::from_millis(50),
        ..ShardingSettings::default()
    };
    let coordinator = system
        .spawn("coordinator", ShardCoordinator::props(settings))
        .unwrap();
    let proxy = registered(&system, &coordinator, true);
    let ask = |shard| {
        coordinator.tell(CoordinatorMsg::GetShardHome {
            shard: ShardId(shard),
            region: proxy.me.clone(),
        })
    };
    ask(3);
    let first = region(&system, &coordinator);
    ask(3);
    assert_eq!(first.expect(host_shard), ShardId(3));
    coordinator.tell(CoordinatorMsg::ShardStarted {
        shard: ShardId(3),
        region: first.me.clone(),
    });
    // The proxy's first message since its ack: no HostShard came before.
    let home = proxy.probe.expect_msg_pf(|msg| match msg {
        RegionControl::ShardHome { shard, region } => Some((shard, region)),
        _ => None,
    });
    assert_eq!(home, (ShardId(3), first.me.clone()));
    for n in 0..3 {
        ask(n);
        assert_eq!(first.expect(host_shard), ShardId(n));
        coordinator.tell(CoordinatorMsg::ShardStarted {
            shard: ShardId(n),
            region: first.me.clone(),
        });
        assert_eq!(proxy.expect(shard_home), ShardId(n));
    }
    // A second region joins: a round moves a shard, and the proxy hears
    // of it as the regions do (it buffers for the shard meanwhile).
    let second = region(&system, &coordinator);
    let moved = first.expect(begin);
    assert_eq!(second.expect(begin), moved);
    assert_eq!(proxy.expect(begin), moved);
    system.terminate().await;
}
