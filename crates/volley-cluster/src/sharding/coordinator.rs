//! The shard coordinator (Pekko's `ShardCoordinator`): it decides which
//! region hosts each shard, with the least-shards strategy, and moves
//! shards in rebalance rounds. One per entity type: in the process of
//! its regions on one node, a cluster singleton on a cluster.
//!
//! - `GetShardHome` for an unallocated shard allocates it, tells the
//!   chosen region `HostShard`, and answers every asker `ShardHome` once
//!   the region says `ShardStarted`.
//! - Every `rebalance_interval` the strategy picks shards to move. For
//!   each: `BeginHandOff` to every region; with every ack, `HandOff` to
//!   the hosting region; on its `ShardStopped` the shard is deallocated
//!   and the askers of the round get its new home. A round that is not
//!   acked within `handoff_timeout` ends with the shard where it was.
//! - A region that registers for the first time also asks for a round,
//!   so a joining node gets shards without waiting up to an interval; a
//!   round asked for (by the tick or a registration) while shards are
//!   still moving or starting runs as soon as they are done, instead of
//!   at the next tick. Rounds still come at most one per ask, each
//!   within the strategy's limits, so the pace stays bounded.
//!
//! On a cluster (as a singleton) two more rules keep an entity from
//! running twice:
//! - A region that stops frees its shards only once nothing of it can
//!   still run: at once if its actor stopped on a member that stays, else
//!   once its member is removed, plus `down_removal_margin`
//!   ([`RegionMembers`]). Meanwhile its shards have no home to give.
//! - A new coordinator (the singleton moved) asks the region of every
//!   member to register again with the shards it hosts, and allocates
//!   nothing until all have or `coordinator_state_wait` passed (design
//!   §3: the regions are the state).
//! - A region that shuts down (`GracefulShutdownReq`) has every shard
//!   handed off, beyond the rebalance limits, and gets no new one.
//!
//! With remembered entities (`coordinator_remember.rs`) it records every
//! shard it allocates, and starts shards without waiting for a message:
//! those the regions' stores remember, and any recorded shard left
//! without a home (Pekko's remember-shards).

use std::collections::{BTreeSet, HashMap};

use volley::{Actor, ActorRef, Context, HandleResult, Props};
use volley_remote::Remoting;

use super::allocation::ShardId;
use super::coordinator_state::CoordinatorState;
use super::protocol::{CoordinatorMsg, RegionControl};
use super::region_members::RegionMembers;
use super::remembering::Remembering;
use super::settings::ShardingSettings;

#[path = "coordinator_cluster.rs"]
mod cluster_side;
use cluster_side::OnCluster;

#[path = "coordinator_remember.rs"]
mod remember;

/// What a region's `Register` says of it.
struct Registration {
    /// The shards it hosts.
    shards: Vec<ShardId>,
    /// The shards its store remembers entities of.
    remembered: Vec<ShardId>,
    /// It is a proxy: it hosts nothing.
    proxy: bool,
}

/// A shard being started: its region, and who asked where it is.
struct Starting {
    host: ActorRef<RegionControl>,
    askers: Vec<ActorRef<RegionControl>>,
}

/// A shard being moved.
struct Round {
    from: ActorRef<RegionControl>,
    unacked: Vec<ActorRef<RegionControl>>,
    /// Regions that acked with a hand-off marker sent to `from`.
    markers_from: Vec<ActorRef<RegionControl>>,
    askers: Vec<ActorRef<RegionControl>>,
    hand_off_sent: bool,
}

/// The coordinator of one entity type.
pub struct ShardCoordinator {
    settings: ShardingSettings,
    state: CoordinatorState,
    starting: HashMap<ShardId, Starting>,
    rounds: HashMap<ShardId, Round>,
    on_cluster: Option<OnCluster>,
    /// The node's store, when the entity type remembers its entities.
    remember: Option<Remembering>,
    /// The shards recorded in the store as allocated.
    recorded: BTreeSet<ShardId>,
    /// Handed-off shards not yet started elsewhere: their remembered ids
    /// and the region that handed them off (told `ForgetShard` once the
    /// shard has started elsewhere).
    handed: HashMap<ShardId, (Vec<String>, ActorRef<RegionControl>)>,
    /// Shards whose ids regions' stores remember, with those regions: a
    /// homeless one is placed in one of them, and the others hand their
    /// ids to where it runs.
    reported: HashMap<ShardId, Vec<ActorRef<RegionControl>>>,
    /// A round was asked for while another was moving shards: it runs
    /// when they are done.
    round_pending: bool,
}

const REBALANCE_TIMER: &str = "rebalance";

/// The timer that resends `HostShard` for `shard`.
fn host_timer(shard: ShardId) -> String {
    format!("host-{}", shard.0)
}

fn hand_off_timer(shard: ShardId) -> String {
    format!("hand-off-{}", shard.0)
}

fn add_asker(askers: &mut Vec<ActorRef<RegionControl>>, region: ActorRef<RegionControl>) {
    if !askers.contains(&region) {
        askers.push(region);
    }
}

impl ShardCoordinator {
    /// The props of a coordinator with these settings, for the regions
    /// of its own node.
    pub fn props(settings: ShardingSettings) -> Props<Self> {
        Self::props_remembering(settings, None)
    }

    /// [`props`](Self::props), with the node's store when the entity type
    /// remembers its entities.
    pub(crate) fn props_remembering(
        settings: ShardingSettings,
        remember: Option<Remembering>,
    ) -> Props<Self> {
        Props::new(move || Self::new(settings.clone(), None, remember.clone()))
    }

    /// The props of a coordinator of the regions named `region_name` on
    /// the members of the cluster `remoting`'s system belongs to.
    pub fn props_on_cluster(
        settings: ShardingSettings,
        remoting: Remoting,
        region_name: String,
    ) -> Props<Self> {
        Self::props_on_cluster_remembering(settings, remoting, region_name, None)
    }

    /// [`props_on_cluster`](Self::props_on_cluster), with the node's store
    /// when the entity type remembers its entities.
    pub(crate) fn props_on_cluster_remembering(
        settings: ShardingSettings,
        remoting: Remoting,
        region_name: String,
        remember: Option<Remembering>,
    ) -> Props<Self> {
        Props::new(move || {
            let on_cluster = OnCluster {
                remoting: remoting.clone(),
                region_name: region_name.clone(),
                cluster: None,
                self_authority: String::new(),
                members: RegionMembers::default(),
                terminating: HashMap::new(),
                startup: None,
            };
            Self::new(settings.clone(), Some(on_cluster), remember.clone())
        })
    }

    fn new(
        settings: ShardingSettings,
        on_cluster: Option<OnCluster>,
        remember: Option<Remembering>,
    ) -> Self {
        ShardCoordinator {
            settings,
            state: CoordinatorState::default(),
            starting: HashMap::new(),
            rounds: HashMap::new(),
            on_cluster,
            remember,
            recorded: BTreeSet::new(),
            handed: HashMap::new(),
            reported: HashMap::new(),
            round_pending: false,
        }
    }

    fn register(
        &mut self,
        ctx: &mut Context<Self>,
        region: ActorRef<RegionControl>,
        registration: Registration,
    ) {
        let Registration {
            shards,
            remembered,
            proxy,
        } = registration;
        if self.is_terminating(&region) {
            return;
        }
        let first_time = self.state.register(region.clone(), proxy);
        if first_time {
            ctx.watch_with(&region, CoordinatorMsg::RegionTerminated(region.clone()));
            self.refresh_region_members();
        }
        for shard in shards {
            self.claim(shard, &region);
        }
        self.adopt_remembered(&region, remembered);
        let coordinator = ctx.myself();
        region.tell(RegionControl::RegisterAck { coordinator });
        self.restore_shards(ctx);
        // A new coordinator's start-up re-registers every region: those
        // are not joiners, and the tick paces what they need.
        let joined = first_time && !self.in_startup();
        let at = self.authority(&region);
        if let Some(startup) = self.on_cluster.as_mut().and_then(|c| c.startup.as_mut()) {
            startup.unregistered.remove(&at);
            if startup.unregistered.is_empty() {
                self.end_startup(ctx);
            }
        }
        if joined {
            self.round_pending = true;
        }
        self.run_pending_round(ctx);
    }

    /// `region` says it hosts `shard`: its home, unless another region
    /// has it, which keeps it (the claim can only follow a hand-off cut
    /// by the coordinator's move, design §3).
    fn claim(&mut self, shard: ShardId, region: &ActorRef<RegionControl>) {
        match self.state.home(shard) {
            None => self.state.assign(shard, region),
            Some(home) if home == region => {}
            Some(home) => {
                tracing::warn!(%shard, %home, claimant = %region, "two regions host one shard; the second hands it off");
                let markers_from = Vec::new();
                region.tell(RegionControl::HandOff {
                    shard,
                    markers_from,
                });
            }
        }
    }

    fn get_shard_home(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        region: ActorRef<RegionControl>,
    ) {
        if let Some(startup) = self.on_cluster.as_mut().and_then(|c| c.startup.as_mut()) {
            return startup.askers.push((shard, region));
        }
        if let Some(round) = self.rounds.get_mut(&shard) {
            return add_asker(&mut round.askers, region);
        }
        if let Some(starting) = self.starting.get_mut(&shard) {
            return add_asker(&mut starting.askers, region);
        }
        if let Some(home) = self.state.home(shard) {
            let region_of_home = home.clone();
            if self.is_terminating(&region_of_home) {
                return; // no home until it is freed; the asker asks again
            }
            return region.tell(RegionControl::ShardHome {
                shard,
                region: region_of_home,
            });
        }
        // With no region yet, or a store that failed, the asker asks
        // again on its retry timer.
        if !self.state.has_hosts() || !self.record_shard(ctx, shard) {
            return;
        }
        if let Some(host) = self.state.allocate(&self.settings.allocation, shard) {
            self.host_on(ctx, shard, host, vec![region]);
        }
    }

    /// Tells `host` to start `shard`, with the ids handed off for it, and
    /// again every `shard_start_timeout` until it says it did (Pekko's
    /// `ResendShardHost`): a lost `HostShard`, or a host that failed to
    /// start the shard, would otherwise leave the shard without a home
    /// and every rebalance round waiting for it.
    fn host_on(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        host: ActorRef<RegionControl>,
        askers: Vec<ActorRef<RegionControl>>,
    ) {
        self.send_host_shard(ctx, shard, &host);
        self.starting.insert(shard, Starting { host, askers });
    }

    fn send_host_shard(
        &self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        host: &ActorRef<RegionControl>,
    ) {
        let remembered = self.handed.get(&shard).map(|(ids, _)| ids.clone());
        host.tell(RegionControl::HostShard {
            shard,
            remembered: remembered.unwrap_or_default(),
        });
        let every = self.settings.shard_start_timeout;
        ctx.schedule_once(
            host_timer(shard),
            every,
            CoordinatorMsg::ResendHostShard(shard),
        );
    }

    /// The start of `shard` was not confirmed in time: the same host is
    /// told again, as long as it is the one the shard waits for.
    fn resend_host_shard(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        let Some(host) = self.starting.get(&shard).map(|s| s.host.clone()) else {
            return;
        };
        tracing::warn!(%shard, %host, "no ShardStarted within shard_start_timeout: HostShard again");
        self.send_host_shard(ctx, shard, &host);
    }

    fn shard_started(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        region: &ActorRef<RegionControl>,
    ) {
        let Some(starting) = self.starting.remove(&shard) else {
            // Started on an earlier coordinator's word: it lives there.
            if self.state.is_registered(region) {
                self.claim(shard, region);
            }
            return;
        };
        if starting.host != *region {
            self.starting.insert(shard, starting);
            return;
        }
        ctx.cancel_timer(host_timer(shard));
        self.handed_over(shard, region);
        for asker in starting.askers {
            let region = region.clone();
            asker.tell(RegionControl::ShardHome { shard, region });
        }
        self.run_pending_round(ctx);
    }

    fn rebalance_tick(&mut self, ctx: &mut Context<Self>) {
        ctx.schedule_once(
            REBALANCE_TIMER,
            self.settings.rebalance_interval,
            CoordinatorMsg::RebalanceTick,
        );
        self.round_pending = true;
        self.run_pending_round(ctx);
    }

    /// Whether a new coordinator still waits for the regions to register.
    fn in_startup(&self) -> bool {
        self.on_cluster
            .as_ref()
            .is_some_and(|c| c.startup.is_some())
    }

    /// Whether shards are moving or starting, or the coordinator waits
    /// for regions (its start-up, or regions of a member going away).
    fn is_busy(&self) -> bool {
        let waiting = self
            .on_cluster
            .as_ref()
            .is_some_and(|c| c.startup.is_some() || c.terminating.values().any(|r| !r.is_empty()));
        !self.rounds.is_empty() || !self.starting.is_empty() || waiting
    }

    /// Runs the round asked for, once nothing is moving and the cluster
    /// lets it (no member unreachable or joining: then it waits for the
    /// member event that opens the gate).
    pub(super) fn run_pending_round(&mut self, ctx: &mut Context<Self>) {
        if !self.round_pending || self.is_busy() {
            return;
        }
        let gate = self.rebalance_gate();
        if gate.unreachable || gate.joining {
            return;
        }
        self.round_pending = false;
        for shard in self.state.to_rebalance(&self.settings.allocation, gate) {
            self.begin_round(ctx, shard);
        }
    }

    /// Hands off every shard of a region that shuts down, beyond the
    /// rebalance limits; the strategy gives it no new one.
    fn graceful_shutdown(&mut self, ctx: &mut Context<Self>, region: &ActorRef<RegionControl>) {
        for shard in self.state.leave(region) {
            if !self.rounds.contains_key(&shard) {
                self.begin_round(ctx, shard);
            }
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
            markers_from: Vec::new(),
            askers: Vec::new(),
            hand_off_sent: false,
        };
        self.rounds.insert(shard, round);
        self.send_hand_off_when_acked(shard);
    }

    /// A region acked; if it sent the hosting region a marker, the
    /// `HandOff` names it, and the host waits for the marker (design §4).
    fn begin_hand_off_ack(
        &mut self,
        shard: ShardId,
        region: &ActorRef<RegionControl>,
        marker_to: Option<ActorRef<RegionControl>>,
    ) {
        if let Some(round) = self.rounds.get_mut(&shard) {
            round.unacked.retain(|r| r != region);
            if marker_to.as_ref() == Some(&round.from) && !round.markers_from.contains(region) {
                round.markers_from.push(region.clone());
            }
        }
        self.send_hand_off_when_acked(shard);
    }

    fn send_hand_off_when_acked(&mut self, shard: ShardId) {
        if let Some(round) = self.rounds.get_mut(&shard) {
            if round.unacked.is_empty() && !round.hand_off_sent {
                round.hand_off_sent = true;
                let markers_from = round.markers_from.clone();
                round.from.tell(RegionControl::HandOff {
                    shard,
                    markers_from,
                });
            }
        }
    }

    /// `region` stopped the shard: it is free, unless it lives elsewhere
    /// (an answer from a region that had claimed it twice).
    fn region_stopped_shard(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        region: &ActorRef<RegionControl>,
        remembered: Vec<String>,
    ) {
        let elsewhere = self.state.home(shard).is_some_and(|home| home != region);
        if !elsewhere {
            if self.remember.is_some() {
                self.handed.insert(shard, (remembered, region.clone()));
            }
            self.shard_stopped(ctx, shard);
        }
    }

    /// The shard stopped: it is free, and whoever asked meanwhile gets
    /// its next home.
    fn shard_stopped(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        ctx.cancel_timer(hand_off_timer(shard));
        self.state.deallocate(shard);
        let askers = self.rounds.remove(&shard).map(|r| r.askers);
        for asker in askers.unwrap_or_default() {
            self.get_shard_home(ctx, shard, asker);
        }
        self.restore_shards(ctx);
        self.run_pending_round(ctx);
    }

    /// The round took too long: the shard stays, and the askers are told
    /// so (the regions that acked ask again when they need it).
    fn hand_off_timeout(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        let Some(round) = self.rounds.remove(&shard) else {
            return;
        };
        tracing::warn!(%shard, "a hand-off timed out; the shard stays where it was");
        for asker in round.askers {
            self.get_shard_home(ctx, shard, asker);
        }
        self.run_pending_round(ctx);
    }

    /// The region's shards are free, and rounds stop waiting for it.
    fn free_region(&mut self, ctx: &mut Context<Self>, region: &ActorRef<RegionControl>) {
        let at = self.authority(region);
        if let Some(on_cluster) = self.on_cluster.as_mut() {
            if let Some(regions) = on_cluster.terminating.get_mut(&at) {
                regions.retain(|r| r != region);
            }
        }
        let freed = self.state.remove(region);
        for round in self.rounds.values_mut() {
            round.unacked.retain(|r| r != region);
            // Its marker may have gone with it: the host does not wait.
            round.markers_from.retain(|r| r != region);
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
            askers.for_each(|asker| self.get_shard_home(ctx, shard, asker));
        }
        self.run_pending_round(ctx);
    }
}

impl Actor for ShardCoordinator {
    type Msg = CoordinatorMsg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let every = self.settings.rebalance_interval;
        ctx.schedule_once(REBALANCE_TIMER, every, CoordinatorMsg::RebalanceTick);
        self.read_recorded_shards(ctx);
        self.start_on_cluster(ctx);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: CoordinatorMsg) -> HandleResult {
        match msg {
            CoordinatorMsg::Register {
                region,
                shards,
                remembered,
                proxy,
            } => self.register(
                ctx,
                region,
                Registration {
                    shards,
                    remembered,
                    proxy,
                },
            ),
            CoordinatorMsg::GetShardHome { shard, region } => {
                self.get_shard_home(ctx, shard, region)
            }
            CoordinatorMsg::ShardStarted { shard, region } => {
                self.shard_started(ctx, shard, &region)
            }
            CoordinatorMsg::BeginHandOffAck {
                shard,
                region,
                marker_to,
            } => self.begin_hand_off_ack(shard, &region, marker_to),
            CoordinatorMsg::ShardStopped {
                shard,
                region,
                remembered,
            } => self.region_stopped_shard(ctx, shard, &region, remembered),
            CoordinatorMsg::GracefulShutdownReq { region } => self.graceful_shutdown(ctx, &region),
            CoordinatorMsg::RegionTerminated(region) => self.region_terminated(ctx, region),
            CoordinatorMsg::RebalanceTick => self.rebalance_tick(ctx),
            CoordinatorMsg::HandOffTimeout(shard) => self.hand_off_timeout(ctx, shard),
            CoordinatorMsg::Member(event) => self.on_member_event(ctx, &event),
            CoordinatorMsg::FreeRegion(region) => self.margin_over(ctx, &region),
            CoordinatorMsg::AskRegistrations => self.ask_registrations(ctx),
            CoordinatorMsg::StateWaitOver => self.end_startup(ctx),
            CoordinatorMsg::ResendHostShard(shard) => self.resend_host_shard(ctx, shard),
            CoordinatorMsg::GetCurrentRegions { reply_to } => {
                let regions = self.state.hosting_regions().cloned().collect();
                reply_to.tell(RegionControl::CurrentRegions { regions });
            }
        }
        Ok(())
    }
}
