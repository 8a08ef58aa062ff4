//! The split-brain resolver in the core (design §4.2): the core's cluster
//! events become the resolver's inputs, the core's tick is its tick, and
//! its decisions become `Down`s. It lives here, not in the runtime, so the
//! simulator drives the same code as the network.

use std::mem;
use std::time::Duration;

use super::{ClusterCore, Outputs, Refused, RefusedBy};
use crate::member::{ClusterEvent, MemberRecord, MemberStatus, UniqueAddress};
use crate::node_id::NodeId;
use crate::sbr::{Downing, SbrInput, SbrMember, SbrSettings, SbrStatus, SplitBrainResolver};

/// The resolver's key for a member: its incarnation alone. A record's
/// `NodeId` carries the SWIM epoch, which grows when foca renews the
/// member, and the resolver needs one key per member in every input.
pub(crate) fn sbr_node(member: &UniqueAddress) -> NodeId {
    NodeId::new(member.host.clone(), member.port, member.uid, 0)
}

/// The resolver for `me`, or none when the settings hold none; settings
/// it refuses are logged and leave it off (the runtime checks them first,
/// with a typed error).
pub(super) fn resolver_for(
    me: &UniqueAddress,
    settings: Option<SbrSettings>,
) -> Option<SplitBrainResolver> {
    match SplitBrainResolver::new(sbr_node(me), settings?, Duration::ZERO) {
        Ok(resolver) => Some(resolver),
        Err(refused) => {
            tracing::error!(%refused, "split-brain resolver settings refused: no resolver runs");
            None
        }
    }
}

/// A record as the resolver sees it; a Removed one leaves its view.
fn sbr_member(record: &MemberRecord) -> Option<SbrMember> {
    let status = match record.status {
        MemberStatus::Joining => SbrStatus::Joining,
        MemberStatus::WeaklyUp => SbrStatus::WeaklyUp,
        MemberStatus::Up => SbrStatus::Up,
        MemberStatus::Leaving => SbrStatus::Leaving,
        MemberStatus::Exiting => SbrStatus::Exiting,
        MemberStatus::Down => SbrStatus::Down,
        MemberStatus::Removed => return None,
    };
    Some(SbrMember {
        node: sbr_node(&record.unique_address()),
        status,
        roles: record.roles.clone(),
        up_number: record.up_number,
    })
}

/// What one cluster event tells the resolver.
fn sbr_input(event: &ClusterEvent, me: &UniqueAddress) -> Option<SbrInput> {
    let node = |member: &MemberRecord| sbr_node(&member.unique_address());
    Some(match event {
        ClusterEvent::MemberJoined { member }
        | ClusterEvent::MemberWeaklyUp { member }
        | ClusterEvent::MemberUp { member }
        | ClusterEvent::MemberLeft { member }
        | ClusterEvent::MemberExited { member }
        | ClusterEvent::MemberDowned { member } => SbrInput::Member(sbr_member(member)?),
        ClusterEvent::MemberRemoved { member, .. } => SbrInput::Removed(node(member)),
        ClusterEvent::UnreachableMember { member } => SbrInput::Unreachable(node(member)),
        ClusterEvent::ReachableMember { member } => SbrInput::Reachable(node(member)),
        ClusterEvent::LeaderChanged { leader } => SbrInput::Leader(leader.as_ref() == Some(me)),
        ClusterEvent::RoleLeaderChanged { .. } | ClusterEvent::CurrentClusterState { .. } => {
            return None
        }
    })
}

impl ClusterCore {
    /// Feeds the resolver this input's cluster events, then its tick if
    /// the core ticked, and carries out what it decides.
    pub(super) fn resolve_split_brain(&mut self, now: Duration, outputs: &mut Outputs) {
        let tick = mem::take(&mut self.sbr_tick_due);
        let Some(resolver) = self.resolver.as_mut() else {
            return;
        };
        let mut decided = None;
        let inputs = outputs
            .cluster_events
            .iter()
            .filter_map(|event| sbr_input(event, &self.me))
            .chain(tick.then_some(SbrInput::Tick));
        for input in inputs {
            if let Some(downing) = resolver.handle(now, input) {
                decided = Some(downing);
            }
        }
        if let Some(downing) = decided {
            self.act_on(now, downing, outputs);
        }
    }

    /// Marks the decided members Down, this node last, and reports the
    /// decision and the events it made.
    fn act_on(&mut self, now: Duration, downing: Downing, outputs: &mut Outputs) {
        tracing::warn!(
            node = %self.me,
            decision = ?downing.decision,
            reason = ?downing.reason,
            members = ?downing.nodes,
            down_self = downing.down_self,
            "split-brain resolver downs members"
        );
        let me = sbr_node(&self.me);
        let mut result = Ok(());
        for node in downing.nodes.iter().filter(|node| **node != me) {
            let member = UniqueAddress::of(node);
            // A side that goes keeps its SWIM links until it leaves, so
            // its own members still hear of their Down.
            let step = if downing.down_self {
                self.mark_down(&member).map(drop)
            } else {
                self.down(&member)
            };
            result = result.and(step);
        }
        if downing.down_self {
            result = result.and(self.push_now()).and(self.down(&self.me.clone()));
        }
        let first = outputs.cluster_events.len();
        result = result.and(self.settle(&[], &mut outputs.cluster_events));
        if let Err(source) = result {
            outputs.refused.get_or_insert(Refused {
                input: "split-brain resolver downing",
                source,
            });
        }
        if let Some(resolver) = self.resolver.as_mut() {
            // The decision restarted its wait: these Downs decide nothing.
            for event in &outputs.cluster_events[first..] {
                if let Some(input) = sbr_input(event, &self.me) {
                    let _restarted = resolver.handle(now, input);
                }
            }
        }
        outputs.downings.push(downing);
    }

    /// Pushes the membership items added so far to a few members now.
    fn push_now(&mut self) -> Result<(), RefusedBy> {
        self.push_broadcasts = false;
        self.foca.broadcast(&mut self.outbox)?;
        Ok(())
    }

    /// The split-brain resolver, when one runs (for its state in logs and
    /// tests).
    pub fn split_brain_resolver(&self) -> Option<&SplitBrainResolver> {
        self.resolver.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::{resolver_for, sbr_input};
    use crate::member::{ClusterEvent, MemberRecord, MemberStatus, UniqueAddress};
    use crate::node_id::NodeId;
    use crate::sbr::{SbrInput, SbrSettings, SbrStatus};

    fn record(epoch: u16, status: MemberStatus) -> MemberRecord {
        let node = NodeId::with_epoch("h", 1, 7, 1234, epoch);
        MemberRecord {
            status,
            up_number: 3,
            ..MemberRecord::joining(node, "1.0".into(), ["r".to_owned()].into())
        }
    }

    #[test]
    fn a_member_keeps_one_key_whatever_its_swim_epoch() {
        let me = UniqueAddress::of(&NodeId::new("h", 9, 9, 0));
        let key = |event: &ClusterEvent| match sbr_input(event, &me) {
            Some(SbrInput::Member(member)) => (member.node, member.status, member.up_number),
            other => panic!("{other:?}"),
        };
        let first = key(&ClusterEvent::MemberUp {
            member: record(0, MemberStatus::Up),
        });
        let renewed = key(&ClusterEvent::MemberDowned {
            member: record(5, MemberStatus::Down),
        });
        assert_eq!(first.0, renewed.0);
        assert_eq!((first.1, renewed.1), (SbrStatus::Up, SbrStatus::Down));
        let weakly = key(&ClusterEvent::MemberWeaklyUp {
            member: record(1, MemberStatus::WeaklyUp),
        });
        assert_eq!((weakly.0, weakly.1), (first.0.clone(), SbrStatus::WeaklyUp));
        assert_eq!(first.2, 3);
        let removed = ClusterEvent::MemberRemoved {
            member: record(2, MemberStatus::Removed),
            previous_status: MemberStatus::Down,
        };
        assert_eq!(sbr_input(&removed, &me), Some(SbrInput::Removed(first.0)));
    }

    #[test]
    fn only_this_node_as_leader_makes_it_responsible() {
        let me = UniqueAddress::of(&NodeId::new("h", 9, 9, 0));
        let other = UniqueAddress::of(&NodeId::new("h", 1, 7, 0));
        let leader = |leader| sbr_input(&ClusterEvent::LeaderChanged { leader }, &me);
        assert_eq!(leader(Some(me.clone())), Some(SbrInput::Leader(true)));
        assert_eq!(leader(Some(other)), Some(SbrInput::Leader(false)));
        assert_eq!(leader(None), Some(SbrInput::Leader(false)));
    }

    #[test]
    fn refused_settings_run_no_resolver() {
        let me = UniqueAddress::of(&NodeId::new("h", 9, 9, 0));
        assert!(resolver_for(&me, None).is_none());
        assert!(resolver_for(&me, Some(SbrSettings::default())).is_some());
        let no_quorum = SbrSettings {
            active_strategy: crate::sbr::ActiveStrategy::StaticQuorum,
            ..SbrSettings::default()
        };
        assert!(resolver_for(&me, Some(no_quorum)).is_none());
    }
}
