//! The core's membership work: the periodic tick, leader actions, leave
//! and down, this node's Seen, and turning table changes into events.

use std::mem;
use std::time::Duration;

use foca::Member;

use super::join::JoinPlan;
use super::{ClusterCore, RefusedBy};
use crate::event::MembershipEvent;
use crate::member::event::status_events;
use crate::member::knowledge::StatusChange;
use crate::member::leader::{ExitingProgress, ExitingRemoval, WithoutConvergence};
use crate::member::wire::{self, Item, Seen};
use crate::member::{
    leader, ClusterEvent, ClusterState, MemberRecord, MemberStatus, UniqueAddress,
};
use crate::outbox::{ClusterTimer, TimerAt};

impl ClusterCore {
    /// Every `gossip_interval`: join retries, tombstone pruning, the
    /// digest, announces to members foca does not know, leader actions.
    pub(super) fn tick(&mut self, now: Duration) -> Result<(), RefusedBy> {
        self.outbox.timers.push(TimerAt {
            at: now.saturating_add(self.config.gossip_interval),
            timer: ClusterTimer::Tick,
        });
        self.sbr_tick_due = true;
        self.unmonitored_check_due = true;
        self.join_tick(now)?;
        {
            let mut knowledge = self.knowledge.lock();
            knowledge
                .table
                .prune(now, self.config.prune_gossip_tombstones_after);
            knowledge.forget_strangers_seen();
            self.unreachable
                .retain(|member| !knowledge.table.is_removed(member));
        }
        let cooled = self.suspect_to_down_after;
        self.hinted.retain(|_, at| now < at.saturating_add(cooled));
        let interval = self.config.gossip_interval;
        self.sync_answered
            .retain(|_, at| now < at.saturating_add(interval));
        self.send_digest();
        self.announce_to_unknown()?;
        if now >= self.next_leader_actions {
            self.next_leader_actions = now.saturating_add(self.config.leader_actions_interval);
            self.leader_actions()?;
        }
        Ok(())
    }

    /// The leader's moves as soon as it sees convergence after a change,
    /// rather than at its next `leader_actions_interval` (Akka's leader
    /// acts only on its tick): each move still waits for every member to
    /// have seen the one before, so only the tick's wait goes. The check
    /// runs when the table, the seen-set or reachability changed since
    /// the last one; the tick still acts on whatever this misses.
    fn leader_actions_on_change(&mut self) -> Result<(), RefusedBy> {
        if self.join != JoinPlan::Joined || self.leader.as_ref() != Some(&self.me) {
            return Ok(());
        }
        let checked = {
            let mut knowledge = self.knowledge.lock();
            // A leader picked among Joining members only (no member is Up
            // yet) sees convergence vacuously, and two joiners that do not
            // know of each other's Up would both number members: only the
            // tick acts then, as before, unless this node is alone.
            let up = knowledge
                .table
                .get(&self.me)
                .is_some_and(|own| own.status.counts_for_convergence());
            if !up && knowledge.table.len() > 1 {
                return Ok(());
            }
            let table = knowledge.table.hash();
            let confirmed = knowledge.exiting_confirmed.len();
            (
                table,
                knowledge.seen_hash(),
                self.unreachable.len(),
                confirmed,
            )
        };
        if self.leader_checked == Some(checked) {
            return Ok(());
        }
        self.leader_checked = Some(checked);
        self.leader_actions()
    }

    /// The leader's moves (design §3.4): at convergence, and Joining to
    /// WeaklyUp once it has gone without for `allow_weakly_up_members`.
    fn leader_actions(&mut self) -> Result<(), RefusedBy> {
        if self.join != JoinPlan::Joined || self.leader.as_ref() != Some(&self.me) {
            self.unconverged_since = None;
            return Ok(());
        }
        if self.converged() {
            self.unconverged_since = None;
            self.leader_actions_at_convergence()
        } else {
            let since = *self.unconverged_since.get_or_insert(self.outbox.now);
            self.move_joining_to_weakly_up(since)
        }
    }

    /// Akka's `moveJoiningToWeaklyUp` ([`leader::weakly_up_moves`]).
    fn move_joining_to_weakly_up(&mut self, since: Duration) -> Result<(), RefusedBy> {
        let moves = {
            let knowledge = self.knowledge.lock();
            let without = WithoutConvergence {
                unreachable: &self.unreachable,
                me: &self.me,
                since,
                now: self.outbox.now,
                weakly_up_after: self.config.allow_weakly_up_members,
                may_move_up: leader::min_nr_fulfilled(
                    &knowledge.table,
                    self.config.min_nr_of_members,
                    &self.config.role_min_nr_of_members,
                ),
            };
            leader::weakly_up_moves(&knowledge.table, &without)
        };
        for record in moves {
            tracing::info!(
                member = %record.unique_address(),
                without_convergence_ms = self.outbox.now.saturating_sub(since).as_millis() as u64,
                "leader moves a Joining member to WeaklyUp without convergence"
            );
            self.publish(record)?;
        }
        Ok(())
    }

    /// The leader's moves at convergence, which the caller has seen.
    fn leader_actions_at_convergence(&mut self) -> Result<(), RefusedBy> {
        let changes = {
            let knowledge = self.knowledge.lock();
            let knowledge = &*knowledge;
            let exiting = self.exiting_progress(&knowledge.exiting_confirmed);
            let may_move_up = leader::min_nr_fulfilled(
                &knowledge.table,
                self.config.min_nr_of_members,
                &self.config.role_min_nr_of_members,
            );
            let changes = leader::leader_actions(&knowledge.table, may_move_up, &exiting);
            let removals: Vec<(UniqueAddress, Option<ExitingRemoval>)> = changes
                .iter()
                .filter(|record| record.status == MemberStatus::Removed)
                .filter(|record| {
                    knowledge
                        .table
                        .get(&record.unique_address())
                        .is_some_and(|known| known.status == MemberStatus::Exiting)
                })
                .map(|record| {
                    let member = record.unique_address();
                    let why = exiting.removal(&member);
                    (member, why)
                })
                .collect();
            (changes, removals)
        };
        let (changes, removals) = changes;
        for (member, why) in removals {
            self.note_exiting_removal(&member, why);
        }
        for record in changes {
            self.publish(record)?;
        }
        Ok(())
    }

    fn exiting_progress<'a>(
        &'a self,
        confirmed: &'a std::collections::BTreeSet<UniqueAddress>,
    ) -> ExitingProgress<'a> {
        ExitingProgress {
            confirmed,
            unreachable: &self.unreachable,
            since: &self.exiting_since,
            now: self.outbox.now,
            timeout: self.config.exiting_confirm_timeout,
        }
    }

    /// Logs why the leader removes an Exiting member; counts removals
    /// without a confirmation because the timeout passed.
    fn note_exiting_removal(&mut self, member: &UniqueAddress, why: Option<ExitingRemoval>) {
        match why {
            Some(ExitingRemoval::TimedOut) => {
                self.exiting_timeouts += 1;
                tracing::warn!(
                    %member,
                    timeout_ms = self.config.exiting_confirm_timeout.as_millis() as u64,
                    "leader removes an Exiting member that did not confirm its exit in time"
                );
            }
            Some(ExitingRemoval::Unreachable) => {
                tracing::info!(%member, "leader removes an unreachable Exiting member");
            }
            Some(ExitingRemoval::Confirmed) | None => {
                tracing::debug!(%member, "leader removes an Exiting member that confirmed");
            }
        }
    }

    /// Tells the others this node finished its exiting tasks (Akka's
    /// `ExitingCompleted`, which sends `ExitingConfirmed`): once, and only
    /// while it is Exiting.
    pub(super) fn confirm_exiting(&mut self) -> Result<(), RefusedBy> {
        let exiting = self
            .knowledge
            .lock()
            .table
            .get(&self.me)
            .is_some_and(|own| own.status == MemberStatus::Exiting);
        if !exiting || self.exiting_confirmed {
            return Ok(());
        }
        self.exiting_confirmed = true;
        tracing::info!(node = %self.me, "exiting tasks done: confirming the exit");
        self.add_item(&Item::ExitingConfirmed(self.me.clone()))
    }

    /// Exiting members removed without confirming, on this node's
    /// leadership, because `exiting_confirm_timeout` passed.
    pub fn exiting_timeouts(&self) -> u64 {
        self.exiting_timeouts
    }

    /// Records, tombstones and seen entries of other nodes' gossip refused
    /// because the table held `max_members` already.
    pub fn refused_table_full(&self) -> u64 {
        self.knowledge.lock().refused_full
    }

    /// Whether this node confirmed its exit.
    pub fn exiting_confirmed(&self) -> bool {
        self.exiting_confirmed
    }

    /// Applies a record this node decided and spreads it: foca's handler
    /// merges it into the table when it is added.
    pub(super) fn publish(&mut self, record: MemberRecord) -> Result<(), RefusedBy> {
        self.add_item(&Item::Record(record))
    }

    /// Adds an item to foca's backlog and has it pushed out at once
    /// (not pushing Seen entries saves a fifth of the burst after a joint
    /// start but costs the leader a second or two of convergence).
    fn add_item(&mut self, item: &Item) -> Result<(), RefusedBy> {
        self.foca.add_broadcast(&wire::encode_item(item))?;
        self.push_broadcasts = true;
        Ok(())
    }

    /// Up (or Joining) to Leaving, by this node.
    pub(super) fn leave(&mut self) -> Result<(), RefusedBy> {
        let own = self.knowledge.lock().table.get(&self.me).cloned();
        match own {
            Some(record) if record.status < MemberStatus::Leaving => {
                self.publish(record.with_status(MemberStatus::Leaving))
            }
            Some(_) => Ok(()),
            None => self.leave_swim(),
        }
    }

    /// Moves `member` to Leaving and spreads it (this node: [`leave`]);
    /// nothing if it is Leaving or further already.
    ///
    /// [`leave`]: Self::leave
    pub(super) fn leave_member(&mut self, member: &UniqueAddress) -> Result<(), RefusedBy> {
        if *member == self.me {
            return self.leave();
        }
        let record = self.knowledge.lock().table.get(member).cloned();
        match record {
            None => Err(RefusedBy::UnknownMember(member.clone())),
            Some(record) if record.status < MemberStatus::Leaving => {
                self.publish(record.with_status(MemberStatus::Leaving))
            }
            Some(_) => Ok(()),
        }
    }

    /// Downs `member`, and tells foca so that it stops probing it.
    pub(super) fn down(&mut self, member: &UniqueAddress) -> Result<(), RefusedBy> {
        if !self.mark_down(member)? || *member == self.me {
            return Ok(());
        }
        let known = self
            .members()
            .find(|id| UniqueAddress::of(id) == *member)
            .cloned();
        if let Some(id) = known {
            self.foca
                .apply_many(std::iter::once(Member::down(id)), true, &mut self.outbox)?;
        }
        Ok(())
    }

    /// Marks `member` Down in the table and spreads it; false when it was
    /// Down or Removed already.
    pub(super) fn mark_down(&mut self, member: &UniqueAddress) -> Result<bool, RefusedBy> {
        let record = self.knowledge.lock().table.get(member).cloned();
        let Some(record) = record else {
            return Err(RefusedBy::UnknownMember(member.clone()));
        };
        if record.status >= MemberStatus::Down {
            return Ok(false);
        }
        self.publish(record.with_status(MemberStatus::Down))?;
        Ok(true)
    }

    pub(super) fn leave_swim(&mut self) -> Result<(), RefusedBy> {
        if !self.left_swim {
            self.left_swim = true;
            self.foca.leave_cluster(&mut self.outbox)?;
        }
        Ok(())
    }

    /// After every input: reachability, joining, this node's Seen, its
    /// own fate, events, the leader, and pushing new items out.
    pub(super) fn settle(
        &mut self,
        swim_events: &[MembershipEvent],
        events: &mut Vec<ClusterEvent>,
    ) -> Result<(), RefusedBy> {
        let mut reachability = Vec::new();
        self.track_reachability(swim_events, &mut reachability)?;
        if mem::take(&mut self.unmonitored_check_due) {
            self.track_unmonitored(&mut reachability);
        }
        self.join_if_cluster_known()?;
        self.leader_actions_on_change()?;
        self.announce_seen()?;
        let changes = mem::take(&mut self.knowledge.lock().changes);
        self.follow_own_fate(&changes)?;
        for change in &changes {
            let member = change.record.unique_address();
            match change.record.status {
                MemberStatus::Exiting => {
                    self.exiting_since.entry(member).or_insert(self.outbox.now);
                }
                MemberStatus::Removed => {
                    self.unreachable.remove(&member);
                    self.exiting_since.remove(&member);
                }
                MemberStatus::Down => {
                    self.exiting_since.remove(&member);
                }
                _ => {}
            }
        }
        events.extend(status_events(changes));
        events.append(&mut reachability);
        let leader = {
            let knowledge = self.knowledge.lock();
            leader::leader_of(&knowledge.table, &self.unreachable, &self.me)
        };
        if leader != self.leader {
            self.leader = leader.clone();
            events.push(ClusterEvent::LeaderChanged { leader });
        }
        self.role_leaders_changed(events);
        if mem::take(&mut self.push_broadcasts) {
            self.foca.broadcast(&mut self.outbox)?;
        }
        Ok(())
    }

    /// Publishes `RoleLeaderChanged` for each role whose leader changed,
    /// and with no leader for a role no member has any more.
    fn role_leaders_changed(&mut self, events: &mut Vec<ClusterEvent>) {
        let now = {
            let knowledge = self.knowledge.lock();
            leader::role_leaders(&knowledge.table, &self.unreachable, &self.me)
        };
        if now == self.role_leaders {
            return;
        }
        for (role, leader) in &now {
            if self.role_leaders.get(role) != Some(leader) {
                events.push(ClusterEvent::RoleLeaderChanged {
                    role: role.clone(),
                    leader: leader.clone(),
                });
            }
        }
        for role in self.role_leaders.keys().filter(|r| !now.contains_key(*r)) {
            events.push(ClusterEvent::RoleLeaderChanged {
                role: role.clone(),
                leader: None,
            });
        }
        self.role_leaders = now;
    }

    /// Tells the others which table this node now holds, when it changed.
    fn announce_seen(&mut self) -> Result<(), RefusedBy> {
        if self.join != JoinPlan::Joined {
            return Ok(());
        }
        let hash = self.knowledge.lock().table.hash();
        if self.seen_hash == Some(hash) {
            return Ok(());
        }
        self.seen_hash = Some(hash);
        self.seen_version += 1;
        let seen = Seen {
            version: self.seen_version,
            hash,
        };
        self.add_item(&Item::Seen {
            member: self.me.clone(),
            seen,
        })
    }

    /// A node that sees itself Down or Removed leaves the SWIM group; one
    /// that sees itself Exiting confirms at once unless the runtime runs
    /// exiting tasks first (`confirm_exiting_on_request`).
    fn follow_own_fate(&mut self, changes: &[StatusChange]) -> Result<(), RefusedBy> {
        let exiting = changes.iter().any(|change| {
            change.record.unique_address() == self.me
                && change.record.status == MemberStatus::Exiting
        });
        if exiting && !self.config.confirm_exiting_on_request {
            self.confirm_exiting()?;
        }
        let gone = changes.iter().any(|change| {
            change.record.unique_address() == self.me && change.record.status >= MemberStatus::Down
        });
        if gone {
            self.leave_swim()?;
        }
        Ok(())
    }

    /// The membership as this node sees it now.
    pub fn state(&self) -> ClusterState {
        let mut knowledge = self.knowledge.lock();
        let hash = knowledge.table.hash();
        let members: Vec<MemberRecord> = knowledge.table.records().cloned().collect();
        let unreachable = members
            .iter()
            .filter(|record| self.unreachable.contains(&record.unique_address()))
            .cloned()
            .collect();
        let mut seen_by: Vec<UniqueAddress> = knowledge
            .seen
            .iter()
            .filter(|(_, seen)| seen.hash == hash)
            .map(|(member, _)| member.clone())
            .collect();
        if self.seen_hash == Some(hash) && !seen_by.contains(&self.me) {
            seen_by.push(self.me.clone());
            seen_by.sort();
        }
        ClusterState {
            self_member: knowledge.table.get(&self.me).cloned(),
            members,
            unreachable,
            leader: self.leader.clone(),
            role_leaders: self.role_leaders.clone(),
            seen_by,
        }
    }

    /// How many members of this node's table `filter` accepts, without
    /// copying the table as [`ClusterCore::state`] does (a simulation of
    /// many members checks every node often).
    pub fn count_members(&self, filter: impl Fn(&MemberRecord) -> bool) -> usize {
        let knowledge = self.knowledge.lock();
        knowledge
            .table
            .records()
            .filter(|record| filter(record))
            .count()
    }

    /// How many members this node's table holds (Removed ones not counted).
    pub fn table_len(&self) -> usize {
        self.knowledge.lock().table.len()
    }

    /// The leader this node computes.
    pub fn leader(&self) -> Option<&UniqueAddress> {
        self.leader.as_ref()
    }

    /// This node as a member: its address and uid.
    pub fn unique_address(&self) -> &UniqueAddress {
        &self.me
    }

    /// Whether this node sees convergence (what lets its leader act).
    pub fn converged(&self) -> bool {
        let mut knowledge = self.knowledge.lock();
        let hash = knowledge.table.hash();
        leader::converged(
            &knowledge.table,
            &knowledge.seen,
            &self.unreachable,
            &self.me,
            hash,
        )
    }
}
