//! The shard region (Pekko's `ShardRegion`): one per entity type per
//! node. It sends each entity's messages to the shard that owns it, hosts
//! as children the shards its coordinator gives it, and keeps, per shard,
//! what comes while the shard's home is unknown.
//!
//! - A message for a shard with no known home is buffered (bounded, one
//!   limit for all shards; past it a counted dead letter) and the region
//!   asks the coordinator `GetShardHome` once; the answer `ShardHome`
//!   sends the buffer on, in order.
//! - Messages for shards in other nodes' regions go in batches, one per
//!   region, each sent once the region has handled what was queued
//!   when it began (`region_outbox.rs`); a hand-off marker goes behind
//!   its destination's batch.
//! - `HostShard` starts the shard here and answers `ShardStarted`.
//! - `BeginHandOff` forgets the home (what comes next is buffered), sends
//!   the home a hand-off marker behind what went there, and acks;
//!   `HandOff` waits for the markers it names ([`HandOffMarkers`]), then
//!   stops the shard's entities behind what they were sent, puts what
//!   waited for stopping entities before the buffer, and answers
//!   `ShardStopped`.
//! - Unanswered registration and `GetShardHome` are asked again every
//!   `retry_interval`.
//! - On a cluster: a registration names the shards hosted here (a new
//!   coordinator asks for it with `RegisterAgain`); the region stops
//!   when its own member is downed or removed; and when its node shuts
//!   down it has its shards handed off, then stops
//!   (`GracefulShutdown`, in coordinated shutdown).
//! - With remembered entities (`region_remember.rs`): a registration
//!   names the shards the node's store remembers, a hand-off carries the
//!   shard's ids to its next home, and a shard stopped by a store failure
//!   starts again after `shard_failure_backoff`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use foldhash::fast::RandomState as FastHash;
use tokio::sync::oneshot;

use volley::{Actor, ActorRef, Context, DeadLetterReason, HandleResult, Props};
use volley_remote::Remoting;

use super::allocation::ShardId;
use super::link::Link;
use super::protocol::{CoordinatorMsg, RegionControl, RoutedMessage, ShardEnvelope};
use super::region_buffer::RegionBuffer;
use super::region_counters::RegionCounters;
use super::region_markers::HandOffMarkers;
use super::region_members::authority_of;
use super::region_outbox::{Outbox, SizeOf};
use super::region_state::{self, CurrentShardRegionState, ShardState};
use super::remembering::Remembering;
use super::settings::ShardingSettings;
use super::shard::{EntityFactory, HandedOff, Shard, ShardMsg};
use crate::member::ClusterEvent;
use crate::runtime::Cluster;

/// What a region takes.
pub enum RegionMsg<M: Send + 'static> {
    /// A message for entity `entity_id`, of shard `shard` (checked by the
    /// sender against the entity type's extractor).
    Deliver {
        /// The entity's shard.
        shard: ShardId,
        /// The entity.
        entity_id: Arc<str>,
        /// The message.
        msg: M,
    },
    /// From the coordinator.
    Control(RegionControl),
    /// From another region: it sends no more of `shard`'s messages here.
    HandOffMarker {
        /// The shard.
        shard: ShardId,
        /// The other region.
        from: ActorRef<RegionControl>,
    },
    /// The markers of `shard`'s hand-off did not all come in time.
    MarkerTimeout(ShardId),
    /// From a hosted shard: it stopped its entities for a hand-off.
    HandedOff(HandedOff<M>),
    /// A hosted shard stopped.
    ShardTerminated(ShardId, ActorRef<ShardMsg<M>>),
    /// Time to ask again what is unanswered.
    Retry,
    /// Another node's region, the home of some shards, stopped (or its
    /// member was removed).
    RegionTerminated(ActorRef<RegionControl>),
    /// A change of the cluster's membership (on a cluster).
    Member(ClusterEvent),
    /// From another region: entities' messages, in order
    /// ([`ShardEnvelope::Messages`]).
    DeliverAll(Vec<RoutedMessage<M>>),
    /// From the region to itself: send the batches of messages for other
    /// regions (`region_outbox.rs`).
    SendBatches,
    /// The node leaves: hand every shard off, then stop; the sender is
    /// dropped when the region has stopped (coordinated shutdown's
    /// `cluster-sharding-shutdown-region`).
    GracefulShutdown(oneshot::Sender<()>),
    /// A hosted shard stopped by a failure of the store: start it again
    /// (remembered entities).
    RestartShard(ShardId),
    /// What the region hosts (`Sharding::shard_region_state`).
    GetState(oneshot::Sender<CurrentShardRegionState>),
}

/// Where a shard lives, as far as this region knows.
enum Home<M: Send + 'static> {
    /// In this region.
    Here,
    /// In another node's region: its `control` and `deliver` children.
    Elsewhere(ActorRef<RegionControl>, ActorRef<ShardEnvelope<M>>),
}

/// The child that takes the coordinator's [`RegionControl`].
pub const CONTROL: &str = "control";
/// The child that takes other regions' [`ShardEnvelope`]s.
pub const DELIVER: &str = "deliver";

/// A hosted shard's hand-off: its answer and its actor's stop.
#[derive(Default)]
struct Stopping {
    answered: bool,
    stopped: bool,
    /// The ids its next home starts (remembered entities).
    remembered: Vec<String>,
}

#[path = "region_remember.rs"]
mod remember;

/// The region of entity type `A` on this node.
pub struct ShardRegion<A: Actor> {
    factory: EntityFactory<A>,
    settings: ShardingSettings,
    coordinator: ActorRef<CoordinatorMsg>,
    registered: bool,
    remoting: Option<Remoting>,
    control: Option<ActorRef<RegionControl>>,
    /// Read for every message, as is `hosted` for one hosted here.
    homes: HashMap<ShardId, Home<A::Msg>, FastHash>,
    hosted: HashMap<ShardId, ActorRef<ShardMsg<A::Msg>>, FastHash>,
    asked: HashSet<ShardId>,
    /// Other regions that stopped.
    gone: HashSet<ActorRef<RegionControl>>,
    /// Shards in hand-off here: whether each has answered and stopped
    /// (the two may come in either order).
    stopping: HashMap<ShardId, Stopping>,
    /// Shard actors get fresh names: one may start again while the
    /// actor of its previous hand-off is still stopping.
    spawned: u64,
    buffer: RegionBuffer<A::Msg>,
    /// What waits to go to other regions, batched.
    outbox: Outbox<A::Msg>,
    markers: HandOffMarkers,
    counters: Arc<RegionCounters>,
    /// Set once the node leaves: who waits for this region to stop.
    shutting_down: Option<Vec<oneshot::Sender<()>>>,
    /// The node's store, when the entity type remembers its entities.
    remember: Option<Remembering>,
    /// Shards the store remembers and that are not hosted here: named in
    /// the registration, so that the coordinator starts them here.
    remembered: BTreeSet<ShardId>,
    /// A proxy: routes messages to shards elsewhere, hosts none.
    proxy: bool,
}

/// What a region on a cluster has besides its settings.
pub(crate) struct RegionExtras<M> {
    /// The entity type's store, when it remembers its entities.
    pub(crate) remember: Option<Remembering>,
    /// How to measure a message for a batch to another region (without
    /// it, each message goes alone).
    pub(crate) size_of: Option<SizeOf<M>>,
    /// The region is a proxy: it registers as one and hosts no shard.
    pub(crate) proxy: bool,
}

const RETRY_TIMER: &str = "retry";

fn marker_timer(shard: ShardId) -> String {
    format!("markers-{}", shard.0)
}

impl<A: Actor> ShardRegion<A> {
    /// The props of a region that registers with `coordinator`, builds
    /// entities with `factory`, and counts in `counters` the messages its
    /// full buffer refused and the hand-offs that timed out waiting for
    /// markers. Shards hosted by other nodes' regions are reached
    /// through `remoting`; without it, every shard lives here.
    pub fn props(
        factory: EntityFactory<A>,
        settings: ShardingSettings,
        coordinator: ActorRef<CoordinatorMsg>,
        counters: Arc<RegionCounters>,
        remoting: Option<Remoting>,
    ) -> Props<Self> {
        let extras = RegionExtras {
            remember: None,
            size_of: None,
            proxy: false,
        };
        Self::props_remembering(factory, settings, coordinator, counters, remoting, extras)
    }

    /// [`props`](Self::props), with `extras`.
    pub(crate) fn props_remembering(
        factory: EntityFactory<A>,
        settings: ShardingSettings,
        coordinator: ActorRef<CoordinatorMsg>,
        counters: Arc<RegionCounters>,
        remoting: Option<Remoting>,
        extras: RegionExtras<A::Msg>,
    ) -> Props<Self> {
        let RegionExtras {
            remember,
            size_of,
            proxy,
        } = extras;
        Props::new(move || ShardRegion {
            factory: factory.clone(),
            settings: settings.clone(),
            coordinator: coordinator.clone(),
            registered: false,
            remoting: remoting.clone(),
            control: None,
            homes: HashMap::default(),
            hosted: HashMap::default(),
            asked: HashSet::new(),
            gone: HashSet::new(),
            stopping: HashMap::new(),
            spawned: 0,
            buffer: RegionBuffer::new(settings.buffer_size),
            outbox: Outbox::new(
                size_of,
                settings.remote_batch_messages,
                settings.remote_batch_bytes,
                counters.clone(),
            ),
            markers: HandOffMarkers::default(),
            counters: counters.clone(),
            shutting_down: None,
            remember: remember.clone(),
            remembered: BTreeSet::new(),
            proxy,
        })
    }

    fn control(&self) -> ActorRef<RegionControl> {
        self.control.clone().expect("set in pre_start")
    }

    fn deliver(&mut self, ctx: &mut Context<Self>, shard: ShardId, id: Arc<str>, msg: A::Msg) {
        match self.homes.get(&shard) {
            // Told through the borrowed ref: a clone would write the
            // shard's reference count, a line its own thread writes too.
            Some(Home::Here) => match self.hosted.get(&shard) {
                Some(local) => local.tell(ShardMsg::Deliver { entity_id: id, msg }),
                None => match self.local_shard(ctx, shard) {
                    Some(local) => local.tell(ShardMsg::Deliver { entity_id: id, msg }),
                    None => dead_letter::<A>(ctx, DeadLetterReason::Undeliverable),
                },
            },
            Some(Home::Elsewhere(_, region)) => {
                if self.outbox.push(region, shard, id, msg) {
                    ctx.myself().tell(RegionMsg::SendBatches);
                }
            }
            None => self.buffer_for(ctx, shard, id, msg),
        }
    }

    fn buffer_for(&mut self, ctx: &mut Context<Self>, shard: ShardId, id: Arc<str>, msg: A::Msg) {
        if self.buffer.push(shard, (id, msg)).is_err() {
            self.counters.dropped.fetch_add(1, Relaxed);
            return dead_letter::<A>(ctx, DeadLetterReason::BufferOverflow);
        }
        if self.asked.insert(shard) {
            self.ask_home(shard);
        }
    }

    fn ask_home(&self, shard: ShardId) {
        if self.registered {
            let region = self.control();
            self.coordinator
                .tell(CoordinatorMsg::GetShardHome { shard, region });
        }
    }

    /// The hosted shard's actor, started again if it stopped.
    fn local_shard(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
    ) -> Option<ActorRef<ShardMsg<A::Msg>>> {
        if let Some(local) = self.hosted.get(&shard) {
            return Some(local.clone());
        }
        let remember = self.remember.clone();
        let settings = self.settings.shard;
        let props = Shard::props_remembering(shard, self.factory.clone(), settings, remember);
        self.spawned += 1;
        match ctx.spawn(&format!("{}-{}", shard.0, self.spawned), props) {
            Ok(local) => {
                ctx.watch_with(&local, RegionMsg::ShardTerminated(shard, local.clone()));
                self.hosted.insert(shard, local.clone());
                Some(local)
            }
            Err(error) => {
                tracing::warn!(%shard, %error, "a shard could not be started");
                None
            }
        }
    }

    fn on_control(&mut self, ctx: &mut Context<Self>, control: RegionControl) {
        match control {
            // The coordinator's own address is not kept: the one given
            // (its singleton proxy, on a cluster) follows it when it moves.
            RegionControl::RegisterAck { .. } => {
                self.registered = true;
                let waiting: Vec<ShardId> = self.buffer.shards().collect();
                waiting.into_iter().for_each(|shard| self.ask_home(shard));
            }
            RegionControl::HostShard { shard, .. } if self.proxy => {
                tracing::warn!(%shard, "a sharding proxy was told to host a shard; it hosts none");
            }
            RegionControl::HostShard { shard, remembered } => {
                if self.record_handed(ctx, shard, remembered) {
                    self.host(ctx, shard);
                }
            }
            RegionControl::ShardHome { shard, region } => self.home_known(ctx, shard, region),
            RegionControl::BeginHandOff { shard } => self.begin_hand_off(shard),
            RegionControl::HandOff {
                shard,
                markers_from,
            } => self.hand_off_after_markers(ctx, shard, markers_from),
            RegionControl::RegisterAgain => self.register(),
            RegionControl::ForgetShard { shard } => self.forget_shard(ctx, shard),
            RegionControl::HandOverRemembered { shard, home } => {
                self.hand_over_remembered(ctx, shard, &home)
            }
            RegionControl::GetStats { reply_to } => self.report_stats(ctx, reply_to),
            RegionControl::CurrentRegions { .. } | RegionControl::Stats { .. } => {
                tracing::debug!("a region got an answer meant for a stats query; dropped");
            }
            RegionControl::AddRemembered { shard, ids, from } => {
                self.add_remembered(ctx, shard, ids, &from)
            }
        }
    }

    fn host(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        if self.local_shard(ctx, shard).is_none() {
            return; // not started: the coordinator's request stays open
        }
        self.remembered.remove(&shard);
        self.homes.insert(shard, Home::Here);
        let region = self.control();
        self.coordinator
            .tell(CoordinatorMsg::ShardStarted { shard, region });
        self.flush(ctx, shard);
    }

    fn home_known(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        region: ActorRef<RegionControl>,
    ) {
        let home = if region == self.control() {
            Home::Here
        } else if self.gone.contains(&region) {
            // The coordinator has not seen it stop yet: the buffer waits,
            // and the retry asks again.
            return;
        } else {
            match self.deliver_child_of(&region) {
                Some(deliver) => {
                    ctx.watch_with(&region, RegionMsg::RegionTerminated(region.clone()));
                    Home::Elsewhere(region, deliver)
                }
                // Unreachable without remoting: as above.
                None => return,
            }
        };
        self.homes.insert(shard, home);
        self.flush(ctx, shard);
    }

    /// A region that hosted shards stopped: they are homeless until the
    /// coordinator places them again, and it is never a home again.
    fn region_terminated(&mut self, region: ActorRef<RegionControl>) {
        self.homes
            .retain(|_, home| !matches!(home, Home::Elsewhere(r, _) if *r == region));
        self.gone.insert(region);
    }

    /// The `deliver` child of the region whose control child is `region`.
    fn deliver_child_of(
        &self,
        region: &ActorRef<RegionControl>,
    ) -> Option<ActorRef<ShardEnvelope<A::Msg>>> {
        let remoting = self.remoting.as_ref()?;
        let control = region.path().to_string();
        let base = control.strip_suffix(CONTROL)?;
        match remoting.resolve(&format!("{base}{DELIVER}")) {
            Ok(deliver) => Some(deliver),
            Err(error) => {
                tracing::warn!(%region, %error, "a region's deliver child cannot be resolved");
                None
            }
        }
    }

    /// Sends on, in order, what waited for `shard`'s home.
    fn flush(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        self.asked.remove(&shard);
        for (id, msg) in self.buffer.take(shard) {
            self.deliver(ctx, shard, id, msg);
        }
        self.stop_when_handed_off(ctx);
    }

    /// The node leaves: ask the coordinator to hand every shard off. A
    /// coordinator on this node still runs (its singleton hands over in
    /// `cluster-exiting`, after this phase), so it moves this region's
    /// shards before it moves itself, as Pekko orders it.
    fn graceful_shutdown(&mut self, ctx: &mut Context<Self>, waiter: oneshot::Sender<()>) {
        if !self.registered {
            return drop(waiter);
        }
        self.shutting_down.get_or_insert_with(Vec::new).push(waiter);
        let region = self.control();
        self.coordinator
            .tell(CoordinatorMsg::GracefulShutdownReq { region });
        self.stop_when_handed_off(ctx);
    }

    /// A region shutting down stops once it hosts nothing and has sent
    /// on everything it kept.
    fn stop_when_handed_off(&mut self, ctx: &mut Context<Self>) {
        let done = self.hosted.is_empty() && self.stopping.is_empty() && self.buffer.is_empty();
        if done && self.shutting_down.is_some() {
            tracing::info!("every shard handed off: the shard region stops");
            self.shutting_down = None;
            ctx.stop_self();
        }
    }

    /// Forgets `shard`'s home unless it is here: the host keeps
    /// delivering until `HandOff`. A home elsewhere gets a marker behind
    /// what this region sent it, on the same channel, and the ack names
    /// it: the home hands off only once the marker has come (design §4).
    fn begin_hand_off(&mut self, shard: ShardId) {
        let region = self.control();
        let marker_to = match self.homes.get(&shard) {
            Some(Home::Here) => None,
            Some(Home::Elsewhere(home, deliver)) => {
                let from = region.clone();
                self.outbox.send_to(deliver); // the marker comes behind them
                deliver.tell(ShardEnvelope::HandOffMarker { shard, from });
                Some(home.clone())
            }
            None => None,
        };
        if marker_to.is_some() {
            self.homes.remove(&shard);
        }
        self.coordinator.tell(CoordinatorMsg::BeginHandOffAck {
            shard,
            region,
            marker_to,
        });
    }

    /// `HandOff` of `shard`: at once if every region it names has sent
    /// its marker, else when the last comes or after `handoff_timeout`.
    /// Meanwhile the shard keeps taking messages.
    fn hand_off_after_markers(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        markers_from: Vec<ActorRef<RegionControl>>,
    ) {
        if self.markers.is_waiting(shard) {
            return; // the same round's `HandOff` again
        }
        if self.markers.hand_off(shard, markers_from) {
            return self.hand_off(ctx, shard);
        }
        let timeout = self.settings.handoff_timeout;
        ctx.schedule_once(
            marker_timer(shard),
            timeout,
            RegionMsg::MarkerTimeout(shard),
        );
    }

    fn marker_came(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        from: ActorRef<RegionControl>,
    ) {
        if self.markers.marker(shard, from) {
            ctx.cancel_timer(marker_timer(shard));
            self.hand_off(ctx, shard);
        }
    }

    fn marker_timeout(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        if let Some(missing) = self.markers.give_up(shard) {
            self.counters.marker_timeouts.fetch_add(1, Relaxed);
            tracing::warn!(%shard, missing, "hand-off markers did not all come in time: the shard moves without them");
            self.hand_off(ctx, shard);
        }
    }

    fn hand_off(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        self.homes.remove(&shard);
        match self.hosted.remove(&shard) {
            Some(local) => {
                self.stopping.insert(shard, Stopping::default());
                local.tell(ShardMsg::HandOff(ctx.message_adapter(RegionMsg::HandedOff)));
            }
            None if !self.stopping.contains_key(&shard) => {
                let region = self.control();
                self.coordinator.tell(CoordinatorMsg::ShardStopped {
                    shard,
                    region,
                    remembered: Vec::new(),
                });
            }
            None => {}
        }
    }

    /// The shard stopped its entities: what waited for them goes first
    /// to the shard's next home. The coordinator hears of it once the
    /// shard's actor has stopped too.
    fn handed_off(&mut self, ctx: &mut Context<Self>, handed: HandedOff<A::Msg>) {
        let shard = handed.shard;
        self.buffer.push_front(shard, handed.undelivered);
        if self.buffer.has(shard) && self.asked.insert(shard) {
            self.ask_home(shard);
        }
        if let Some(stopping) = self.stopping.get_mut(&shard) {
            stopping.answered = true;
            stopping.remembered = handed.remembered;
        }
        self.finish_hand_off(ctx, shard);
    }

    fn shard_terminated(
        &mut self,
        ctx: &mut Context<Self>,
        shard: ShardId,
        actor: &ActorRef<ShardMsg<A::Msg>>,
    ) {
        if self.hosted.get(&shard) == Some(actor) {
            self.hosted.remove(&shard);
            self.restart_shard_later(ctx, shard);
        } else if let Some(stopping) = self.stopping.get_mut(&shard) {
            stopping.stopped = true;
            self.finish_hand_off(ctx, shard);
        }
    }

    fn finish_hand_off(&mut self, ctx: &mut Context<Self>, shard: ShardId) {
        if self
            .stopping
            .get(&shard)
            .is_some_and(|s| s.answered && s.stopped)
        {
            let stopping = self.stopping.remove(&shard).unwrap_or_default();
            if self.remember.is_some() {
                // In the store until `ForgetShard`: reported to a new
                // coordinator meanwhile.
                self.remembered.insert(shard);
            }
            let region = self.control();
            self.coordinator.tell(CoordinatorMsg::ShardStopped {
                shard,
                region,
                remembered: stopping.remembered,
            });
            self.stop_when_handed_off(ctx);
        }
    }

    fn retry(&mut self, ctx: &mut Context<Self>) {
        ctx.schedule_once(RETRY_TIMER, self.settings.retry_interval, RegionMsg::Retry);
        if !self.registered {
            return self.register();
        }
        if self.shutting_down.is_some() {
            let region = self.control();
            self.coordinator
                .tell(CoordinatorMsg::GracefulShutdownReq { region });
        }
        let waiting: Vec<ShardId> = self.buffer.shards().collect();
        waiting.into_iter().for_each(|shard| self.ask_home(shard));
    }

    /// Registers with the coordinator, with the shards hosted here (a new
    /// coordinator rebuilds its map from them). A shard in hand-off
    /// counts until it has stopped: its `ShardStopped` frees it.
    /// Answers a stats query (`Sharding::cluster_sharding_stats`) with
    /// the number of entities of each shard hosted here.
    fn report_stats(&self, ctx: &mut Context<Self>, reply_to: ActorRef<RegionControl>) {
        let address = match &self.remoting {
            Some(remoting) => remoting.address().to_string(),
            None => ctx.system().name().to_owned(),
        };
        self.collect_state(ctx, move |state| {
            let count = |s: &ShardState| u32::try_from(s.entity_ids.len()).unwrap_or(u32::MAX);
            reply_to.tell(RegionControl::Stats {
                address,
                shards: state.shards.iter().map(|s| (s.shard, count(s))).collect(),
                failed: state.failed.into_iter().collect(),
            });
        });
    }

    /// Asks the hosted shards for their entities and hands the whole to
    /// `done`, off the region's thread (`region_state.rs`).
    fn collect_state(
        &self,
        ctx: &mut Context<Self>,
        done: impl FnOnce(CurrentShardRegionState) + Send + 'static,
    ) {
        let shards = self.hosted.iter().map(|(id, shard)| (*id, shard.clone()));
        let timeout = self.settings.shard_region_query_timeout;
        let runtime = ctx.system().runtime_handle();
        region_state::collect(&runtime, shards.collect(), timeout, done);
    }

    fn register(&self) {
        let region = self.control();
        let mut shards: Vec<ShardId> = self.hosted.keys().copied().collect();
        shards.extend(self.stopping.keys().copied());
        let remembered = self.remembered.iter().copied().collect();
        self.coordinator.tell(CoordinatorMsg::Register {
            region,
            shards,
            remembered,
            proxy: self.proxy,
        });
    }

    /// Subscribes to the membership, on a cluster.
    fn watch_own_member(&self, ctx: &mut Context<Self>) {
        if self.remoting.is_some() && Cluster::get(ctx.system()).is_some() {
            let events = ctx.message_adapter(RegionMsg::Member);
            ctx.system().event_stream().subscribe(events);
        }
    }

    /// A region whose own member is downed or removed stops, with its
    /// shards and entities (as Pekko's): the others place its shards
    /// again once it is removed and `down_removal_margin` passed. A
    /// hand-off no longer waits for the markers of another such member's
    /// region.
    fn on_member_event(&mut self, ctx: &mut Context<Self>, event: &ClusterEvent) {
        let member = match event {
            ClusterEvent::MemberDowned { member } | ClusterEvent::MemberRemoved { member, .. } => {
                member
            }
            _ => return,
        };
        let Some(cluster) = Cluster::get(ctx.system()) else {
            return;
        };
        if member.unique_address() == *cluster.self_member() {
            tracing::info!(status = ?member.status, "this member is downed or removed: its shard region stops");
            ctx.stop_self();
            return;
        }
        let at = authority_of(&member.unique_address());
        for shard in self
            .markers
            .forget(|r| r.path().authority() == Some(at.as_str()))
        {
            ctx.cancel_timer(marker_timer(shard));
            self.hand_off(ctx, shard);
        }
    }
}

fn dead_letter<A: Actor>(ctx: &Context<ShardRegion<A>>, reason: DeadLetterReason) {
    let message_type = std::any::type_name::<A::Msg>();
    ctx.system().dead_letter(ctx.path(), message_type, reason);
}

impl<A: Actor> Actor for ShardRegion<A> {
    type Msg = RegionMsg<A::Msg>;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let control = ctx.message_adapter(RegionMsg::Control);
        self.control = Some(ctx.spawn(CONTROL, Link::props(control))?);
        let deliver = ctx.message_adapter(|envelope: ShardEnvelope<A::Msg>| match envelope {
            ShardEnvelope::Message {
                shard,
                entity_id,
                msg,
            } => RegionMsg::Deliver {
                shard,
                entity_id,
                msg,
            },
            ShardEnvelope::Messages(messages) => RegionMsg::DeliverAll(messages),
            ShardEnvelope::HandOffMarker { shard, from } => {
                RegionMsg::HandOffMarker { shard, from }
            }
        });
        ctx.spawn(DELIVER, Link::props(deliver))?;
        self.read_remembered_shards(ctx);
        self.register();
        self.watch_own_member(ctx);
        ctx.schedule_once(RETRY_TIMER, self.settings.retry_interval, RegionMsg::Retry);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: Self::Msg) -> HandleResult {
        match msg {
            RegionMsg::Deliver {
                shard,
                entity_id,
                msg,
            } => self.deliver(ctx, shard, entity_id, msg),
            RegionMsg::Control(control) => self.on_control(ctx, control),
            RegionMsg::HandOffMarker { shard, from } => self.marker_came(ctx, shard, from),
            RegionMsg::MarkerTimeout(shard) => self.marker_timeout(ctx, shard),
            RegionMsg::HandedOff(handed) => self.handed_off(ctx, handed),
            RegionMsg::GracefulShutdown(waiter) => self.graceful_shutdown(ctx, waiter),
            RegionMsg::GetState(reply) => self.collect_state(ctx, move |state| {
                let _asker_gone = reply.send(state);
            }),
            RegionMsg::ShardTerminated(shard, actor) => self.shard_terminated(ctx, shard, &actor),
            RegionMsg::Retry => self.retry(ctx),
            RegionMsg::RegionTerminated(region) => self.region_terminated(region),
            RegionMsg::Member(event) => self.on_member_event(ctx, &event),
            RegionMsg::DeliverAll(messages) => {
                for RoutedMessage {
                    shard,
                    entity_id,
                    msg,
                } in messages
                {
                    self.deliver(ctx, shard, entity_id, msg);
                }
            }
            RegionMsg::SendBatches => self.outbox.send_all(),
            RegionMsg::RestartShard(shard) => self.restart_shard(ctx, shard),
        }
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        // Taken before the stop: they go as they would have.
        self.outbox.send_all();
    }
}
