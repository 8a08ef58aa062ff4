//! Joining: through seed nodes or one member, retried until the node is a
//! member (design §3.3).
//!
//! foca sends one announce per call and never retries a lost one, and it
//! answers any announce, so a few nodes that announce to each other form
//! a SWIM group of their own. Membership is what tells a cluster apart
//! from such a group: a node becomes a member (adds its Joining record)
//! only once foca is active and its table holds another member's record,
//! which only a formed cluster has. Until then it announces again every
//! `retry_unsuccessful_join_after`; only the first seed forms a cluster
//! by itself, as Akka's first seed does: at once when it is the only
//! seed, as soon as every other seed has said it is not a member either
//! (Akka's `InitJoinNack`), or after `seed_node_timeout`.
//!
//! foca has no such question, so the membership's digest answers it: a
//! node that is not yet a member sends its digest to each join target
//! foca holds at every tick, and the digest of a node without a cluster
//! carries the hash of an empty table. A member that gets one answers
//! with its table, which teaches the joiner the cluster at once.
//!
//! A node that heard from a cluster has adopted its formation (the
//! formation gate, `formation_gate.rs`) and never forms one of its own: the
//! first seed too keeps joining the cluster that answered it, whatever
//! its `seed_node_timeout` says, since forming alone beside a cluster it
//! knows of would make a second one.

use std::time::Duration;

use foca::Identity;

use std::collections::BTreeSet;

use super::{ClusterCore, RefusedBy};
use crate::member::{MemberRecord, MemberTable};
use crate::node_id::{Addr, NodeId};

/// Where the node is in joining.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum JoinPlan {
    /// Not asked to join.
    Idle,
    /// Joining through `targets` (seeds or one member).
    Pending {
        targets: Vec<NodeId>,
        /// Set for the first seed: when it forms the cluster alone.
        form_alone_at: Option<Duration>,
        next_retry: Duration,
        /// The first seed's: the targets whose digest said they are not
        /// members either.
        not_members: BTreeSet<Addr>,
    },
    /// A member (its record is in the table, or was).
    Joined,
}

/// An identity to announce to at `addr`: foca accepts an announce by
/// address, so the uid and the start time are not needed.
fn announce_target((host, port): Addr) -> NodeId {
    NodeId::new(host, port, 0, 0)
}

impl ClusterCore {
    pub(super) fn join_seed_nodes(
        &mut self,
        now: Duration,
        seeds: Vec<Addr>,
    ) -> Result<(), RefusedBy> {
        let me = self.identity().addr();
        let first = seeds.first() == Some(&me);
        let targets: Vec<NodeId> = seeds
            .into_iter()
            .filter(|seed| *seed != me)
            .map(announce_target)
            .collect();
        if first && targets.is_empty() {
            // The only seed: nobody else could hold a cluster.
            self.start_join(now, targets, Some(now))?;
            return self.join_tick(now);
        }
        let form_alone_at = first.then(|| now.saturating_add(self.config.seed_node_timeout));
        self.start_join(now, targets, form_alone_at)
    }

    pub(super) fn join_via(&mut self, now: Duration, via: NodeId) -> Result<(), RefusedBy> {
        self.start_join(now, vec![via], None)
    }

    fn start_join(
        &mut self,
        now: Duration,
        targets: Vec<NodeId>,
        form_alone_at: Option<Duration>,
    ) -> Result<(), RefusedBy> {
        if self.join == JoinPlan::Joined {
            return Ok(());
        }
        self.announce_all(&targets)?;
        self.join = JoinPlan::Pending {
            targets,
            form_alone_at,
            next_retry: now.saturating_add(self.config.retry_unsuccessful_join_after),
            not_members: BTreeSet::new(),
        };
        Ok(())
    }

    fn announce_all(&mut self, targets: &[NodeId]) -> Result<(), RefusedBy> {
        for target in targets {
            self.foca.announce(target.clone(), &mut self.outbox)?;
        }
        Ok(())
    }

    /// The join's share of the periodic tick: the digest to the targets
    /// foca holds, then a retry, or forming alone.
    pub(super) fn join_tick(&mut self, now: Duration) -> Result<(), RefusedBy> {
        let JoinPlan::Pending {
            targets,
            form_alone_at,
            ..
        } = &mut self.join
        else {
            return Ok(());
        };
        if form_alone_at.is_some_and(|at| now >= at) && self.gate.ours().is_none() {
            return self.become_member();
        }
        let wanted: Vec<Addr> = targets.iter().map(NodeId::addr).collect();
        let held: Vec<NodeId> = self
            .members()
            .filter(|m| wanted.contains(&m.addr()))
            .cloned()
            .collect();
        for target in held {
            self.send_digest_to(target);
        }
        let JoinPlan::Pending {
            next_retry,
            targets,
            ..
        } = &mut self.join
        else {
            return Ok(());
        };
        if now < *next_retry {
            return Ok(());
        }
        *next_retry = now.saturating_add(self.config.retry_unsuccessful_join_after);
        let targets = targets.clone();
        self.announce_all(&targets)
    }

    /// Becomes a member once foca is active and a cluster is known.
    pub(super) fn join_if_cluster_known(&mut self) -> Result<(), RefusedBy> {
        if !matches!(self.join, JoinPlan::Pending { .. }) || self.foca.num_members() == 0 {
            return Ok(());
        }
        let cluster_known = {
            let knowledge = self.knowledge.lock();
            let other = knowledge
                .table
                .records()
                .any(|record| record.unique_address() != self.me);
            other
        };
        if cluster_known {
            self.become_member()?;
        }
        Ok(())
    }

    /// A digest reached the first seed while it waits: `from` is not a
    /// member when its table is empty. Forms the cluster once every other
    /// seed has said so.
    pub(super) fn note_join_answer(
        &mut self,
        from: &NodeId,
        table_hash: u64,
    ) -> Result<(), RefusedBy> {
        let JoinPlan::Pending {
            targets,
            form_alone_at: Some(_),
            not_members,
            ..
        } = &mut self.join
        else {
            return Ok(());
        };
        if table_hash != MemberTable::default().hash() {
            return Ok(());
        }
        let addr = from.addr();
        if targets.iter().any(|t| t.addr() == addr) {
            not_members.insert(addr);
        }
        let all_said = targets.iter().all(|t| not_members.contains(&t.addr()));
        if all_said && self.gate.ours().is_none() {
            return self.become_member();
        }
        Ok(())
    }

    /// Adds this node's Joining record. A node that heard from no
    /// cluster forms a new formation here (the first seed alone); one
    /// that did keeps the formation it adopted.
    fn become_member(&mut self) -> Result<(), RefusedBy> {
        self.join = JoinPlan::Joined;
        self.found_formation();
        let record = MemberRecord::joining(
            self.identity().clone(),
            self.config.app_version.clone(),
            self.config.roles.clone(),
        );
        self.publish(record)
    }
}
