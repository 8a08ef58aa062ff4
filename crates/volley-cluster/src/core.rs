//! `ClusterCore`: the deterministic membership state machine (design §1.4).
//!
//! It owns foca and the member table and is driven only through
//! [`ClusterCore::handle`]: it reads no clock (the caller says what time it
//! is), opens no socket (it returns the packets to send) and draws
//! randomness from seeded RNGs, so the same inputs at the same times give
//! the same outputs. A tokio driver and the simulator in [`crate::sim`] are
//! its two callers.

mod downing;
mod formation_gate;
mod join;
mod membership;
mod reachability;
mod services;
mod suspicion;
mod sync;
mod unmonitored;

use std::collections::{BTreeMap, BTreeSet};
use std::mem;
use std::time::Duration;

use foca::{Config, Foca, Identity, Member, Timer};
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;

use crate::codec::{ClusterCodec, CodecError};
use crate::event::MembershipEvent;
use crate::member::knowledge::SharedKnowledge;
use crate::member::{ClusterEvent, MemberTable, MembershipConfig, UniqueAddress};
use crate::node_id::{Addr, NodeId};
use crate::outbox::{Channel, ClusterTimer, Outbox, Packet, TimerAt};
use crate::receptionist::{ServiceChange, ServiceEntry, ServiceRefused, ServiceRegistry};
use crate::sbr::{Downing, SplitBrainResolver};
use crate::view::MembershipView;

use self::formation_gate::FormationGate;
pub use self::formation_gate::{FormationRefusals, FormationRefused};
use self::join::JoinPlan;

/// One thing that happened to the core.
#[derive(Debug, Clone)]
pub enum Input<'a> {
    /// A SWIM packet from another member, as it arrived.
    Packet(&'a [u8]),
    /// An anti-entropy digest from another member.
    SyncDigest(&'a [u8]),
    /// An anti-entropy data page from another member.
    SyncData(&'a [u8]),
    /// A timer the core asked for earlier ([`TimerAt`]), now due.
    Timer(ClusterTimer),
    /// Join the cluster through this member (Akka's `Cluster::join`):
    /// announce to it, again every `retry_unsuccessful_join_after` until
    /// joined.
    Join(NodeId),
    /// Join through seed nodes (Akka's `seed-nodes`); the first seed forms
    /// the cluster alone after `seed_node_timeout` (design §3.3).
    JoinSeedNodes(Vec<Addr>),
    /// Spread pending updates now, besides foca's periodic gossip.
    Gossip,
    /// Leave gracefully: Up to Leaving by this node, then Exiting and
    /// Removed by the leader, then out of the SWIM group. A node that never
    /// joined leaves the SWIM group at once.
    Leave,
    /// Down a member (what the split-brain resolver, or an operator, asks).
    Down(UniqueAddress),
    /// Make another member leave gracefully (Akka's `Cluster.leave` of
    /// another's address): its status goes to Leaving here, and the
    /// member, seeing it, leaves as if it had asked. This node's own
    /// address is [`Input::Leave`].
    LeaveMember(UniqueAddress),
    /// This node, Exiting, finished its exiting tasks (Akka's
    /// `ExitingCompleted`): it tells the others, so that the leader may
    /// remove it. Ignored unless this node is Exiting.
    ConfirmExiting,
    /// The transport lost its connection to this member (its process may
    /// have died): suspect it now rather than at its turn to be probed
    /// (design §3.5). A live member refutes the suspicion as SWIM's
    /// protocol has it; a dead one is unreachable after
    /// `suspect_to_down_after`.
    ConnectionLost(UniqueAddress),
    /// This node stops: it leaves the SWIM group now, whatever its status
    /// (the last cluster phase of a coordinated shutdown, design §3.6).
    Shutdown,
    /// One of this node's services was registered (or, with `registered`
    /// false, left): the cluster receptionist replicates it.
    Service {
        /// The service.
        entry: ServiceEntry,
        /// Registered or gone.
        registered: bool,
    },
}

impl<'a> Input<'a> {
    /// The input for a packet that arrived on `channel`.
    pub fn received(channel: Channel, bytes: &'a [u8]) -> Self {
        match channel {
            Channel::Swim => Input::Packet(bytes),
            Channel::SyncDigest => Input::SyncDigest(bytes),
            Channel::SyncData => Input::SyncData(bytes),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Input::Packet(_) => "packet",
            Input::SyncDigest(_) => "sync digest",
            Input::SyncData(_) => "sync data",
            Input::Timer(_) => "timer",
            Input::Join(_) => "join",
            Input::JoinSeedNodes(_) => "join through seed nodes",
            Input::Gossip => "gossip",
            Input::Leave => "leave",
            Input::Down(_) => "down",
            Input::LeaveMember(_) => "leave of a member",
            Input::ConfirmExiting => "exiting confirmation",
            Input::ConnectionLost(_) => "connection lost",
            Input::Shutdown => "shutdown",
            Input::Service { .. } => "service registration",
        }
    }
}

/// What refused an input.
#[derive(Debug, thiserror::Error)]
pub enum RefusedBy {
    /// foca (a malformed or oversized packet, a packet from this node
    /// itself, a bad custom broadcast, ...).
    #[error(transparent)]
    Swim(#[from] foca::Error),
    /// The membership (a malformed anti-entropy message).
    #[error(transparent)]
    Membership(#[from] CodecError),
    /// A registration beyond the cluster receptionist's bounds.
    #[error(transparent)]
    Services(#[from] ServiceRefused),
    /// The payload's formation envelope: from another formation of the
    /// cluster, or from an older build.
    #[error(transparent)]
    Formation(#[from] FormationRefused),
    /// A `Down` of a member the table does not hold.
    #[error("no member {0} to down")]
    UnknownMember(UniqueAddress),
}

/// Why the core refused an input.
#[derive(Debug, thiserror::Error)]
#[error("the membership core refused a {input}: {source}")]
pub struct Refused {
    /// The kind of input.
    pub input: &'static str,
    /// The reason.
    #[source]
    pub source: RefusedBy,
}

/// What the core wants done after one input.
#[derive(Debug, Default)]
pub struct Outputs {
    /// Packets to send, in order.
    pub packets: Vec<Packet>,
    /// Timers to deliver back when due.
    pub timers: Vec<TimerAt>,
    /// What changed in the SWIM group, in order.
    pub events: Vec<MembershipEvent>,
    /// What changed in the membership, as Akka's cluster events, in order.
    pub cluster_events: Vec<ClusterEvent>,
    /// What the split-brain resolver decided, already carried out (the
    /// Downs are among `cluster_events`); for logs and metrics.
    pub downings: Vec<Downing>,
    /// Other members' services that appeared or left, in order.
    pub service_changes: Vec<ServiceChange>,
    /// Set when the input was refused. foca may have acted on part of it
    /// first (a packet's updates are applied before its broadcasts are
    /// read), so the outputs above still hold and must still be carried out.
    pub refused: Option<Refused>,
}

type SwimFoca = Foca<NodeId, ClusterCodec, Xoshiro256PlusPlus, SharedKnowledge>;

/// Distinguishes the membership's RNG stream from foca's.
const MEMBERSHIP_RNG_STREAM: u64 = 0x6d65_6d62_6572_7321;

/// The membership state machine of one node.
pub struct ClusterCore {
    foca: SwimFoca,
    outbox: Outbox,
    view: MembershipView,
    config: MembershipConfig,
    knowledge: SharedKnowledge,
    rng: Xoshiro256PlusPlus,
    me: UniqueAddress,
    /// Members foca holds down (unreachable), by incarnation.
    unreachable: BTreeSet<UniqueAddress>,
    join: JoinPlan,
    /// This node's own Seen version, bumped when its table changes.
    seen_version: u64,
    /// The table hash this node last announced as seen.
    seen_hash: Option<u64>,
    leader: Option<UniqueAddress>,
    next_leader_actions: Duration,
    /// What the leader last checked for convergence: the table's hash,
    /// the seen-set's hash, how many members are unreachable and how many
    /// Exiting members confirmed.
    leader_checked: Option<(u64, u64, usize, usize)>,
    /// foca's `suspect_to_down_after` (foca does not hand its config back).
    suspect_to_down_after: Duration,
    /// foca's `probe_period`.
    probe_period: Duration,
    /// Since when each member of the table has been unknown to foca
    /// (`unmonitored.rs`).
    unmonitored_since: BTreeMap<UniqueAddress, Duration>,
    /// The members judged unreachable for being unknown to foca.
    judged_unmonitored: BTreeSet<UniqueAddress>,
    /// Whether the tick asked for the judgement of unmonitored members.
    unmonitored_check_due: bool,
    /// When each member was last suspected on a lost connection: once per
    /// `suspect_to_down_after` at most, so a link that keeps failing while
    /// the member lives (refuting each time) does not churn suspicions.
    hinted: BTreeMap<UniqueAddress, Duration>,
    /// When this node last sent each peer its table (anti-entropy), so
    /// that a peer is answered once per half `gossip_interval` at most.
    sync_answered: BTreeMap<UniqueAddress, Duration>,
    /// The leader of each role, as last published.
    role_leaders: BTreeMap<String, Option<UniqueAddress>>,
    /// Digests and push-pull pages left unanswered by that limit.
    sync_answers_withheld: u64,
    tick_scheduled: bool,
    /// Whether this input added membership items to push out at once.
    push_broadcasts: bool,
    /// Whether this node has left the SWIM group (removed or downed).
    left_swim: bool,
    /// The split-brain resolver, when the settings hold one.
    resolver: Option<SplitBrainResolver>,
    /// Whether the core ticked in this input (the resolver's tick).
    sbr_tick_due: bool,
    /// Since when this node has seen each Exiting member Exiting: the
    /// leader's clock for `exiting_confirm_timeout`.
    exiting_since: BTreeMap<UniqueAddress, Duration>,
    /// Whether this node told the others it finished exiting.
    exiting_confirmed: bool,
    /// Exiting members the leader removed without their confirmation
    /// because `exiting_confirm_timeout` passed.
    exiting_timeouts: u64,
    /// Since when this node, as the leader, has seen no convergence: the
    /// clock of `allow_weakly_up_members`.
    unconverged_since: Option<Duration>,
    /// This node's formation, and the payloads refused for theirs.
    gate: FormationGate,
}

impl ClusterCore {
    /// A core for `identity`, with foca's `config` and the default
    /// membership settings, its randomness drawn from `seed` (the same
    /// seed and inputs replay the same run).
    pub fn new(identity: NodeId, config: Config, seed: u64) -> Self {
        Self::with_membership(identity, config, MembershipConfig::default(), seed)
    }

    /// A core with explicit membership settings.
    pub fn with_membership(
        identity: NodeId,
        swim: Config,
        config: MembershipConfig,
        seed: u64,
    ) -> Self {
        let knowledge = SharedKnowledge::default();
        let me = UniqueAddress::of(&identity);
        {
            let mut knowledge = knowledge.lock();
            knowledge.prune_after = config.prune_gossip_tombstones_after;
            knowledge.table = MemberTable::with_max_members(config.max_members);
            knowledge.service_bounds = config.service_bounds;
            knowledge.services = ServiceRegistry::new(me.clone());
        }
        let rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let suspect_to_down_after = swim.suspect_to_down_after;
        let probe_period = swim.probe_period;
        let resolver = downing::resolver_for(&me, config.split_brain_resolver.clone());
        Self {
            foca: Foca::with_custom_broadcast(identity, swim, rng, ClusterCodec, knowledge.clone()),
            outbox: Outbox::default(),
            view: MembershipView::default(),
            config,
            knowledge,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ MEMBERSHIP_RNG_STREAM),
            me,
            unreachable: BTreeSet::new(),
            join: JoinPlan::Idle,
            seen_version: 0,
            seen_hash: None,
            leader: None,
            next_leader_actions: Duration::ZERO,
            leader_checked: None,
            suspect_to_down_after,
            probe_period,
            unmonitored_since: BTreeMap::new(),
            judged_unmonitored: BTreeSet::new(),
            unmonitored_check_due: false,
            hinted: BTreeMap::new(),
            sync_answered: BTreeMap::new(),
            role_leaders: BTreeMap::new(),
            sync_answers_withheld: 0,
            tick_scheduled: false,
            push_broadcasts: false,
            left_swim: false,
            resolver,
            sbr_tick_due: false,
            exiting_since: BTreeMap::new(),
            exiting_confirmed: false,
            exiting_timeouts: 0,
            unconverged_since: None,
            gate: FormationGate::default(),
        }
    }

    /// Handles one input at `now` (any monotonic clock, as long as every
    /// call and every [`TimerAt`] uses the same one).
    pub fn handle(&mut self, now: Duration, input: Input<'_>) -> Outputs {
        self.outbox.now = now;
        self.knowledge.lock().now = now;
        let name = input.name();
        let removal = match &input {
            Input::Timer(ClusterTimer::Swim(Timer::RemoveDown(member))) => Some(member.clone()),
            _ => None,
        };
        let result = self.dispatch(now, input);
        let mut outputs = Outputs {
            refused: result.err().map(|source| Refused {
                input: name,
                source,
            }),
            ..Outputs::default()
        };
        self.after_input(now, removal, &mut outputs);
        outputs.packets = mem::take(&mut self.outbox.packets);
        outputs.timers = mem::take(&mut self.outbox.timers);
        outputs.service_changes = self.knowledge.lock().services.take_changes();
        outputs
    }

    fn dispatch(&mut self, now: Duration, input: Input<'_>) -> Result<(), RefusedBy> {
        match input {
            Input::Packet(bytes) => self.gated(Channel::Swim, bytes, |core, body| {
                Ok(core.foca.handle_data(body, &mut core.outbox)?)
            })?,
            Input::SyncDigest(bytes) => {
                self.gated(Channel::SyncDigest, bytes, Self::receive_digest)?
            }
            Input::SyncData(bytes) => self.gated(Channel::SyncData, bytes, Self::receive_page)?,
            Input::Timer(ClusterTimer::Swim(timer)) if self.is_refuted_verdict(&timer) => {}
            Input::Timer(ClusterTimer::Swim(timer)) => {
                let probe_period = matches!(timer, Timer::ProbeRandomMember(_));
                self.foca.handle_timer(timer, &mut self.outbox)?;
                if probe_period {
                    self.tell_suspects()?;
                }
            }
            Input::Timer(ClusterTimer::Tick) => self.tick(now)?,
            Input::Join(via) => self.join_via(now, via)?,
            Input::JoinSeedNodes(seeds) => self.join_seed_nodes(now, seeds)?,
            Input::Gossip => self.foca.gossip(&mut self.outbox)?,
            Input::Leave => self.leave()?,
            Input::Down(member) => self.down(&member)?,
            Input::LeaveMember(member) => self.leave_member(&member)?,
            Input::ConfirmExiting => self.confirm_exiting()?,
            Input::ConnectionLost(member) => self.suspect_at_once(now, &member)?,
            Input::Shutdown => self.leave_swim()?,
            Input::Service { entry, registered } => self.update_local_service(entry, registered)?,
        }
        Ok(())
    }

    /// Turns what foca and the table reported into events, and reacts.
    fn after_input(&mut self, now: Duration, removal: Option<NodeId>, outputs: &mut Outputs) {
        let notifications = mem::take(&mut self.outbox.notifications);
        self.view.apply(notifications, &mut outputs.events);
        if let Some(member) = removal {
            // foca forgets a down member on this timer without a
            // notification; the view reports it.
            let still_known = self.knows_addr(&member);
            self.view
                .forget_if_gone(&member, still_known, &mut outputs.events);
        }
        self.schedule_tick(now);
        if let Err(refused) = self.settle(&outputs.events, &mut outputs.cluster_events) {
            outputs.refused.get_or_insert(Refused {
                input: "membership follow-up",
                source: refused,
            });
        }
        self.resolve_split_brain(now, outputs);
    }

    /// This node's current identity (its epoch grows when foca renews it).
    pub fn identity(&self) -> &NodeId {
        self.foca.identity()
    }

    /// The members foca holds active (alive or suspect), this node excluded.
    pub fn members(&self) -> impl Iterator<Item = &NodeId> {
        self.foca.iter_members().map(Member::id)
    }

    /// How many members foca holds active.
    pub fn num_members(&self) -> usize {
        self.foca.num_members()
    }

    /// Every member foca remembers, down ones included, with its state.
    pub fn membership_state(&self) -> impl Iterator<Item = &Member<NodeId>> {
        self.foca.iter_membership_state()
    }

    /// The cluster receptionist's registry as this node holds it.
    pub fn services(&self) -> ServiceRegistry {
        self.knowledge.lock().services.clone()
    }

    /// Updates still waiting to be piggybacked on packets (a metric).
    pub fn updates_backlog(&self) -> usize {
        self.foca.updates_backlog()
    }

    /// Membership items still waiting to be piggybacked (a metric).
    pub fn broadcast_backlog(&self) -> usize {
        self.foca.custom_broadcast_backlog()
    }

    fn knows_addr(&self, member: &NodeId) -> bool {
        let addr = member.addr();
        self.foca
            .iter_membership_state()
            .any(|known| known.id().addr() == addr)
    }

    fn schedule_tick(&mut self, now: Duration) {
        if !self.tick_scheduled && self.join != JoinPlan::Idle {
            self.tick_scheduled = true;
            self.outbox.timers.push(TimerAt {
                at: now.saturating_add(self.config.gossip_interval),
                timer: ClusterTimer::Tick,
            });
        }
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "core_formation_tests.rs"]
mod formation_tests;
