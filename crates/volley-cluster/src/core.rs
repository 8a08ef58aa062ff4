//! `ClusterCore`: the deterministic membership state machine (design §1.4).
//!
//! It owns foca and is driven only through [`ClusterCore::handle`]: it
//! reads no clock (the caller says what time it is), opens no socket (it
//! returns the packets to send) and draws randomness from a seeded RNG, so
//! the same inputs at the same times give the same outputs. A tokio driver
//! and the simulator in [`crate::sim`] are its two callers.

use std::mem;
use std::time::Duration;

use foca::{Config, Foca, Identity, Member, NoCustomBroadcast, Timer};
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;

use crate::codec::ClusterCodec;
use crate::event::MembershipEvent;
use crate::node_id::NodeId;
use crate::outbox::{Outbox, Packet, TimerAt};
use crate::view::MembershipView;

/// One thing that happened to the core.
#[derive(Debug, Clone)]
pub enum Input<'a> {
    /// A packet from another member, as it arrived.
    Packet(&'a [u8]),
    /// A timer the core asked for earlier ([`TimerAt`]), now due.
    Timer(Timer<NodeId>),
    /// Join the cluster through this member (foca's announce).
    Join(NodeId),
    /// Spread pending updates now, besides foca's periodic gossip.
    Gossip,
    /// Leave the cluster: declare this node down and tell a few members.
    Leave,
}

impl Input<'_> {
    fn name(&self) -> &'static str {
        match self {
            Input::Packet(_) => "packet",
            Input::Timer(_) => "timer",
            Input::Join(_) => "join",
            Input::Gossip => "gossip",
            Input::Leave => "leave",
        }
    }
}

/// Why foca refused an input.
#[derive(Debug, thiserror::Error)]
#[error("the membership core refused a {input}: {source}")]
pub struct Refused {
    /// The kind of input.
    pub input: &'static str,
    /// foca's reason (a malformed or oversized packet, a packet from this
    /// node itself, ...).
    #[source]
    pub source: foca::Error,
}

/// What the core wants done after one input.
#[derive(Debug, Default)]
pub struct Outputs {
    /// Packets to send, in order.
    pub packets: Vec<Packet>,
    /// Timers to deliver back when due.
    pub timers: Vec<TimerAt>,
    /// What changed in the membership, in order.
    pub events: Vec<MembershipEvent>,
    /// Set when foca refused the input. foca may have acted on part of it
    /// first (a packet's updates are applied before its broadcasts are
    /// read), so the outputs above still hold and must still be carried out.
    pub refused: Option<Refused>,
}

type SwimFoca = Foca<NodeId, ClusterCodec, Xoshiro256PlusPlus, NoCustomBroadcast>;

/// The membership state machine of one node.
pub struct ClusterCore {
    foca: SwimFoca,
    outbox: Outbox,
    view: MembershipView,
}

impl ClusterCore {
    /// A core for `identity`, with foca's `config`, its randomness drawn
    /// from `seed` (the same seed and inputs replay the same run).
    pub fn new(identity: NodeId, config: Config, seed: u64) -> Self {
        let rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        Self {
            foca: Foca::new(identity, config, rng, ClusterCodec),
            outbox: Outbox::default(),
            view: MembershipView::default(),
        }
    }

    /// Handles one input at `now` (any monotonic clock, as long as every
    /// call and every [`TimerAt`] uses the same one).
    pub fn handle(&mut self, now: Duration, input: Input<'_>) -> Outputs {
        self.outbox.now = now;
        let name = input.name();
        let removal = match &input {
            Input::Timer(Timer::RemoveDown(member)) => Some(member.clone()),
            _ => None,
        };
        let result = match input {
            Input::Packet(bytes) => self.foca.handle_data(bytes, &mut self.outbox),
            Input::Timer(timer) => self.foca.handle_timer(timer, &mut self.outbox),
            Input::Join(via) => self.foca.announce(via, &mut self.outbox),
            Input::Gossip => self.foca.gossip(&mut self.outbox),
            Input::Leave => self.foca.leave_cluster(&mut self.outbox),
        };
        let mut outputs = Outputs {
            packets: mem::take(&mut self.outbox.packets),
            timers: mem::take(&mut self.outbox.timers),
            events: Vec::new(),
            refused: result.err().map(|source| Refused {
                input: name,
                source,
            }),
        };
        let notifications = mem::take(&mut self.outbox.notifications);
        self.view.apply(notifications, &mut outputs.events);
        if let Some(member) = removal {
            // foca forgets a down member on this timer without a
            // notification; the view reports it.
            let still_known = self.knows_addr(&member);
            self.view
                .forget_if_gone(&member, still_known, &mut outputs.events);
        }
        outputs
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

    /// Updates still waiting to be piggybacked on packets (a metric).
    pub fn updates_backlog(&self) -> usize {
        self.foca.updates_backlog()
    }

    fn knows_addr(&self, member: &NodeId) -> bool {
        let addr = member.addr();
        self.foca
            .iter_membership_state()
            .any(|known| known.id().addr() == addr)
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
