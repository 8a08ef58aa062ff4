//! The shard coordinator (Pekko's `ShardCoordinator`): it decides which
//! region hosts each shard, with the least-shards strategy, and moves
//! shards in rebalance rounds. For now it runs in the process of its
//! regions, one per entity type; it becomes a cluster singleton when
//! regions run on several nodes.
//!
//! - `GetShardHome` for an unallocated shard allocates it, tells the
//!   chosen region `HostShard`, and answers every asker `ShardHome` once
//!   the region says `ShardStarted`.
//! - Every `rebalance_interval` the strategy picks shards to move. For
//!   each: `BeginHandOff` to every region; with every ack, `HandOff` to
//!   the hosting region; on its `ShardStopped` the shard is deallocated
//!   and the askers of the round get its new home. A round that is not
//!   acked within `handoff_timeout` ends with the shard where it was.

use std::collections::HashMap;

use volley::{Actor, ActorRef, Context, HandleResult, Props};

use super::allocation::{RebalanceGate, ShardId};
use super::coordinator_state::CoordinatorState;
use super::protocol::{CoordinatorMsg, RegionControl};
use super::settings::ShardingSettings;

/// A shard being started: its region, and who asked where it is.
struct Starting {
    host: ActorRef<RegionControl>,
    askers: Vec<ActorRef<RegionControl>>,
}

/// A shard being moved.
struct Round {
    from: ActorRef<RegionControl>,
    unacked: Vec<ActorRef<RegionControl>>,
    askers: Vec<ActorRef<RegionControl>>,
    hand_off_sent: bool,
}

/// The coordinator of one entity type.
pub struct ShardCoordinator {
    settings: ShardingSettings,
    state: CoordinatorState,
    starting: HashMap<ShardId, Starting>,
    rounds: HashMap<ShardId, Round>,
}

const REBALANCE_TIMER: &str = "rebalance";

fn hand_off_timer(shard: ShardId) -> String {
    format!("hand-off-{}", shard.0)
}

fn add_asker(askers: &mut Vec<ActorRef<RegionControl>>, region: ActorRef<RegionControl>) {
    if !askers.contains(&region) {
        askers.push(region);
    }
}

impl ShardCoordinator {
    /// The props of a coordinator with these settings.
    pub fn props(settings: ShardingSettings) -> Props<Self> {
        Props::new(move || ShardCoordinator {
            settings,
            state: CoordinatorState::default(),
            starting: HashMap::new(),
            rounds: HashMap::new(),
        })
    }

    fn register(&mut self, ctx: &mut Context<Self>, region: ActorRef<RegionControl>) {
        if self.state.register(region.clone()) {
            ctx.watch_with(&region, CoordinatorMsg::RegionTerminated(region.clone()));
        }
        let coordinator = ctx.myself();
        region.tell(RegionControl::RegisterAck { coordinator });
    }

    fn get_shard_home(&mut self, shard: ShardId, region: ActorRef<RegionControl>) {
        if let Some(round) = self.rounds.get_mut(&shard) {
            return add_asker(&mut round.askers, region);
        }
        if let Some(starting) = self.starting.get_mut(&shard) {
            return add_asker(&mut starting.askers, region);
        }
        if let Some(home) = self.state.home(shard) {
            let region_of_home = home.clone();
            return region.tell(RegionControl::ShardHome {
                shard,
                region: region_of_home,
            });
        }
        // With no region yet, the asker asks again on its retry timer.
        if let Some(host) = self.state.allocate(&self.settings.allocation, shard) {
            host.tell(RegionControl::HostShard { shard });
            self.starting.insert(
                shard,
                Starting {
                    host,
                    askers: vec![region],
                },
            );
        }
    }

    fn shard_started(&mut self, shard: ShardId, region: &ActorRef<RegionControl>) {
        let Some(starting) = self.starting.remove(&shard) else {
            return;
        };
        if starting.host != *region {
            self.starting.insert(shard, starting);
            return;
        }
        for asker in starting.askers {
            let region = region.clone();
            asker.tell(RegionControl::ShardHome { shard, region });
        }
    }

    fn rebalance(&mut self, ctx: &mut Context<Self>) {
        ctx.schedule_once(
            REBALANCE_TIMER,
            self.settings.rebalance_interval,
            CoordinatorMsg::RebalanceTick,
        );
        let gate = RebalanceGate {
            in_progress: !self.rounds.is_empty() || !self.starting.is_empty(),
            ..RebalanceGate::default()
        };
        for shard in self.state.to_rebalance(&self.settings.allocation, gate) {
            self.begin_round(ctx, shard);
        }
    }

    fn begin_round(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        let Some(from) = self.state.home(shard).cloned() else {
            return;
        };
        let unacked: Vec<_> = self.state.regions().cloned().collect();
        for region in &unacked {
            region.tell(RegionControl::BeginHandOff { shard });
        }
        let timeout = self.settings.handoff_timeout;
        ctx.schedule_once(
            hand_off_timer(shard),
            timeout,
            CoordinatorMsg::HandOffTimeout(shard),
        );
        let round = Round {
            from,
            unacked,
            askers: Vec::new(),
            hand_off_sent: false,
        };
        self.rounds.insert(shard, round);
        self.send_hand_off_when_acked(shard);
    }

    fn begin_hand_off_ack(&mut self, shard: ShardId, region: &ActorRef<RegionControl>) {
        if let Some(round) = self.rounds.get_mut(&shard) {
            round.unacked.retain(|r| r != region);
        }
        self.send_hand_off_when_acked(shard);
    }

    fn send_hand_off_when_acked(&mut self, shard: ShardId) {
        if let Some(round) = self.rounds.get_mut(&shard) {
            if round.unacked.is_empty() && !round.hand_off_sent {
                round.hand_off_sent = true;
                round.from.tell(RegionControl::HandOff { shard });
            }
        }
    }

    /// The shard stopped: it is free, and whoever asked meanwhile gets
    /// its next home.
    fn shard_stopped(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        ctx.cancel_timer(hand_off_timer(shard));
        self.state.deallocate(shard);
        let askers = self.rounds.remove(&shard).map(|r| r.askers);
        for asker in askers.unwrap_or_default() {
            self.get_shard_home(shard, asker);
        }
    }

    /// The round took too long: the shard stays, and the askers are told
    /// so (the regions that acked ask again when they need it).
    fn hand_off_timeout(&mut self, shard: ShardId) {
        let Some(round) = self.rounds.remove(&shard) else {
            return;
        };
        tracing::warn!(%shard, "a hand-off timed out; the shard stays where it was");
        for asker in round.askers {
            self.get_shard_home(shard, asker);
        }
    }

    /// A region stopped: its shards are free, and rounds stop waiting
    /// for it.
    fn region_terminated(&mut self, ctx: &mut Context<Self>, region: &ActorRef<RegionControl>) {
        let freed = self.state.remove(region);
        for round in self.rounds.values_mut() {
            round.unacked.retain(|r| r != region);
        }
        let waiting: Vec<ShardId> = self.rounds.keys().copied().collect();
        waiting
            .into_iter()
            .for_each(|s| self.send_hand_off_when_acked(s));
        for shard in freed {
            let starting = self.starting.remove(&shard);
            self.shard_stopped(ctx, shard);
            let askers = starting.map(|s| s.askers).unwrap_or_default();
            let askers = askers.into_iter().filter(|r| r != region);
            askers.for_each(|asker| self.get_shard_home(shard, asker));
        }
    }
}

impl Actor for ShardCoordinator {
    type Msg = CoordinatorMsg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let every = self.settings.rebalance_interval;
        ctx.schedule_once(REBALANCE_TIMER, every, CoordinatorMsg::RebalanceTick);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: CoordinatorMsg) -> HandleResult {
        match msg {
            CoordinatorMsg::Register { region } => self.register(ctx, region),
            CoordinatorMsg::GetShardHome { shard, region } => self.get_shard_home(shard, region),
            CoordinatorMsg::ShardStarted { shard, region } => self.shard_started(shard, &region),
            CoordinatorMsg::BeginHandOffAck { shard, region } => {
                self.begin_hand_off_ack(shard, &region)
            }
            CoordinatorMsg::ShardStopped { shard } => self.shard_stopped(ctx, shard),
            CoordinatorMsg::RegionTerminated(region) => self.region_terminated(ctx, &region),
            CoordinatorMsg::RebalanceTick => self.rebalance(ctx),
            CoordinatorMsg::HandOffTimeout(shard) => self.hand_off_timeout(shard),
        }
        Ok(())
    }
}
