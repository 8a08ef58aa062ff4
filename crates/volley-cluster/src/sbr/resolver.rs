//! The split-brain resolver: waits for membership and reachability to stay
//! unchanged for `stable_after`, then lets the strategy decide; downs all
//! when they keep changing for too long. Sans-IO: driven by
//! [`SplitBrainResolver::handle`] with the caller's clock.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::node_id::NodeId;
use crate::sbr::decision::Decision;
use crate::sbr::member::{SbrMember, SbrStatus};
use crate::sbr::partition::{Counting, Observation, Partition};
use crate::sbr::settings::{SbrSettings, SbrSettingsError};
use crate::sbr::strategy::Strategy;

/// How often the driver should send [`SbrInput::Tick`] (Akka's resolver
/// ticks every second): decisions are taken on ticks only, so one may come
/// up to this late.
pub const TICK_INTERVAL: Duration = Duration::from_secs(1);

/// What the resolver is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SbrInput {
    /// A member joined, or its status or roles changed. Up and Exiting
    /// restart the wait for stability; Down counts as a reachability change
    /// (the member is leaving the view), as in Akka.
    Member(SbrMember),
    /// A member was removed from the membership.
    Removed(NodeId),
    /// This side cannot reach the member any more.
    Unreachable(NodeId),
    /// This side reaches the member again.
    Reachable(NodeId),
    /// The whole table of who observed whom as unreachable.
    Observations(Vec<Observation>),
    /// The members that have seen this node's current membership state.
    SeenBy(Vec<NodeId>),
    /// Whether this node is now the leader of its side.
    Leader(bool),
    /// A member quarantined this node's incarnation.
    QuarantinedBy(NodeId),
    /// Time passed; send every [`TICK_INTERVAL`].
    Tick,
}

/// Why members are downed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DowningReason {
    /// The state was stable for `stable_after` and the strategy decided.
    Stable,
    /// Reachability kept changing past `stable_after +
    /// down_all_when_unstable` since its first change.
    Unstable,
    /// The strategy downed indirectly connected members, and some were
    /// still indirectly connected without the links between them, so all
    /// are downed instead.
    IndirectlyConnectedUnresolved,
    /// This member quarantined this node.
    QuarantinedBy(NodeId),
}

/// A decision to act on: mark `nodes` Down, this node last. When
/// `down_self` holds, this node is on the losing side and must shut down
/// once it has told the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downing {
    /// The decision acted on.
    pub decision: Decision,
    /// Why.
    pub reason: DowningReason,
    /// Every member to down, this node included when `down_self`.
    pub nodes: BTreeSet<NodeId>,
    /// Whether this node downs itself.
    pub down_self: bool,
}

/// The reachability changes since the first one not yet resolved (healed,
/// downed or removed), for logs and for the down-all limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instability {
    /// When the first change came.
    pub first: Duration,
    /// When the latest change came.
    pub latest: Duration,
    /// How many changes came.
    pub changes: u64,
}

/// One node's split-brain resolver.
#[derive(Debug, Clone)]
pub struct SplitBrainResolver {
    self_node: NodeId,
    settings: SbrSettings,
    strategy: Strategy,
    view: Partition,
    leader: bool,
    self_added: bool,
    removed: bool,
    stable_deadline: Duration,
    instability: Option<Instability>,
}

impl SplitBrainResolver {
    /// A resolver for `self_node`, started at `now`, if the settings hold.
    pub fn new(
        self_node: NodeId,
        settings: SbrSettings,
        now: Duration,
    ) -> Result<Self, SbrSettingsError> {
        let strategy = settings.strategy()?;
        let mut resolver = Self {
            self_node,
            settings,
            strategy,
            view: Partition::new(),
            leader: false,
            self_added: false,
            removed: false,
            stable_deadline: now,
            instability: None,
        };
        resolver.restart_stable_wait(now);
        Ok(resolver)
    }

    /// Feeds one input at `now` (any monotonic clock, the same for every
    /// call); returns the members to down, if a decision was taken.
    pub fn handle(&mut self, now: Duration, input: SbrInput) -> Option<Downing> {
        if self.removed {
            return None;
        }
        match input {
            SbrInput::Member(member) => self.member_changed(now, member),
            SbrInput::Removed(node) => self.member_removed(node),
            SbrInput::Unreachable(node) => self.reachability_changed(now, &node, true),
            SbrInput::Reachable(node) => self.reachability_changed(now, &node, false),
            SbrInput::Observations(observations) => self.view.set_observations(observations),
            SbrInput::SeenBy(seen_by) => self.view.set_seen_by(seen_by),
            SbrInput::Leader(leader) => self.leader = leader,
            SbrInput::QuarantinedBy(node) => return self.quarantined_by(now, node),
            SbrInput::Tick => return self.tick(now),
        }
        None
    }

    fn member_changed(&mut self, now: Duration, member: SbrMember) {
        let status = member.status;
        let node = member.node.clone();
        if node == self.self_node && matches!(status, SbrStatus::Up | SbrStatus::WeaklyUp) {
            self.self_added = true;
        }
        self.view.upsert(member);
        match status {
            SbrStatus::Up | SbrStatus::Exiting => self.restart_stable_wait(now),
            // As Akka: a downed member counts as a reachability change, and
            // may be the last unresolved one.
            SbrStatus::Down if node != self.self_node => {
                self.view.set_unreachable(&node, true);
                self.note_reachability_change(now);
            }
            _ => {}
        }
        self.forget_instability_if_settled();
    }

    fn member_removed(&mut self, node: NodeId) {
        if node == self.self_node {
            self.removed = true;
            return;
        }
        self.view.remove(&node);
        self.forget_instability_if_settled();
    }

    fn reachability_changed(&mut self, now: Duration, node: &NodeId, unreachable: bool) {
        if *node == self.self_node || !self.view.set_unreachable(node, unreachable) {
            return;
        }
        self.note_reachability_change(now);
    }

    fn note_reachability_change(&mut self, now: Duration) {
        self.instability = Some(match self.instability {
            None => Instability {
                first: now,
                latest: now,
                changes: 1,
            },
            Some(i) => Instability {
                latest: now,
                changes: i.changes + 1,
                ..i
            },
        });
        self.forget_instability_if_settled();
        self.restart_stable_wait(now);
    }

    fn quarantined_by(&mut self, now: Duration, node: NodeId) -> Option<Downing> {
        self.view.member(&node)?;
        let reason = DowningReason::QuarantinedBy(node);
        self.act(now, Decision::DownSelfQuarantinedByRemote, reason)
    }

    fn tick(&mut self, now: Duration) -> Option<Downing> {
        if let Some(instability) = self.instability {
            let stable_after = self.stable_after();
            match self.settings.down_all_when_unstable.margin(stable_after) {
                // On every node, leader or not, so that all sides give up
                // as early as possible.
                Some(margin)
                    if now.saturating_sub(instability.first)
                        >= stable_after.saturating_add(margin) =>
                {
                    return self.act(now, Decision::DownAll, DowningReason::Unstable);
                }
                None if now.saturating_sub(instability.latest) > stable_after.saturating_mul(2) => {
                    self.instability = None;
                }
                _ => {}
            }
        }
        if self.is_responsible()
            && !self.view.unreachable().is_empty()
            && now >= self.stable_deadline
        {
            let decision = self.strategy.decide(&self.view);
            return self.act(now, decision, DowningReason::Stable);
        }
        None
    }

    fn act(&mut self, now: Duration, decision: Decision, reason: DowningReason) -> Option<Downing> {
        let (decision, reason, nodes) =
            match self
                .strategy
                .nodes_to_down(&self.view, decision, &self.self_node)
            {
                Ok(nodes) => (decision, reason, nodes),
                Err(_) => (
                    Decision::DownAll,
                    DowningReason::IndirectlyConnectedUnresolved,
                    self.view.downable(),
                ),
            };
        if nodes.is_empty() {
            return None;
        }
        self.instability = None;
        self.restart_stable_wait(now);
        Some(Downing {
            down_self: nodes.contains(&self.self_node),
            decision,
            reason,
            nodes,
        })
    }

    fn restart_stable_wait(&mut self, now: Duration) {
        self.stable_deadline = now.saturating_add(self.stable_after());
    }

    fn forget_instability_if_settled(&mut self) {
        if self.view.all_unreachable_settled() {
            self.instability = None;
        }
    }

    /// Whether this node takes the strategy's decisions: it is the leader of
    /// its side and a member (Up or WeaklyUp) itself.
    pub fn is_responsible(&self) -> bool {
        self.leader && self.self_added
    }

    /// The `stable_after` in force for the current cluster size.
    pub fn stable_after(&self) -> Duration {
        let size = self.view.counted(None, Counting::PLAIN).len();
        self.settings.stable_after.for_size(size)
    }

    /// The `down_all_when_unstable` margin in force; `None` when off.
    pub fn down_all_when_unstable(&self) -> Option<Duration> {
        self.settings
            .down_all_when_unstable
            .margin(self.stable_after())
    }

    /// When the state will have been stable long enough to decide, unless
    /// it changes first.
    pub fn stable_deadline(&self) -> Duration {
        self.stable_deadline
    }

    /// The unresolved reachability changes, if any.
    pub fn instability(&self) -> Option<Instability> {
        self.instability
    }

    /// The resolver's view of the members.
    pub fn view(&self) -> &Partition {
        &self.view
    }

    /// The strategy in use.
    pub fn strategy(&self) -> &Strategy {
        &self.strategy
    }

    /// Whether this node was removed; the resolver then ignores all input.
    pub fn is_removed(&self) -> bool {
        self.removed
    }
}
