//! Anti-entropy (design §3.2): every tick a digest of this node's table
//! and seen-set to one random active member; a member whose hashes differ
//! answers with its table in pages, and the first node answers back with
//! its own if, once merged, its table or seen-set still differs
//! (push-pull). Custom broadcasts are best effort; this makes the tables
//! meet for certain, and teaches a node that missed them everything.
//!
//! A node sends one peer its table once per half `gossip_interval` at
//! most: a peer sends one digest a tick, so only a faulty or hostile one
//! asks more often, and each answer is the whole table (pages). What is
//! withheld is asked again at the peer's next tick.

use std::collections::HashSet;

use rand::RngExt;

use super::{ClusterCore, RefusedBy};
use crate::codec::CodecError;
use crate::member::pages;
use crate::member::wire::{self, Digest, Seen};
use crate::member::UniqueAddress;
use crate::node_id::NodeId;
use crate::outbox::Channel;

/// What the other side of an anti-entropy exchange holds.
struct PeerHashes {
    table: u64,
    services: u64,
}

impl ClusterCore {
    pub(super) fn send_digest(&mut self) {
        let count = self.foca.num_members();
        if count == 0 {
            return;
        }
        let index = self.rng.random_range(0..count);
        let to = self.members().nth(index).cloned();
        if let Some(to) = to {
            self.send_digest_to(to);
        }
    }

    pub(super) fn send_digest_to(&mut self, to: NodeId) {
        let digest = {
            let mut knowledge = self.knowledge.lock();
            Digest {
                from: self.identity().clone(),
                seen: Seen {
                    version: self.seen_version,
                    hash: knowledge.table.hash(),
                },
                seen_hash: knowledge.seen_hash(),
                services_hash: knowledge.services.hash(),
            }
        };
        self.outbox
            .send(to, Channel::SyncDigest, &wire::encode_digest(&digest));
    }

    pub(super) fn receive_digest(&mut self, bytes: &[u8]) -> Result<(), RefusedBy> {
        let digest = wire::decode_digest(bytes)?;
        self.note_join_answer(&digest.from, digest.seen.hash)?;
        let differs = {
            let mut knowledge = self.knowledge.lock();
            knowledge.apply_seen(UniqueAddress::of(&digest.from), digest.seen);
            knowledge.table.hash() != digest.seen.hash
                || knowledge.seen_hash() != digest.seen_hash
                || knowledge.services.hash() != digest.services_hash
        };
        if differs && self.may_answer(&digest.from) {
            let peer = PeerHashes {
                table: digest.seen.hash,
                services: digest.services_hash,
            };
            self.send_pages(digest.from, true, peer);
        }
        Ok(())
    }

    pub(super) fn receive_page(&mut self, bytes: &[u8]) -> Result<(), RefusedBy> {
        let page = wire::decode_page(bytes)?;
        let answer = {
            let mut knowledge = self.knowledge.lock();
            for record in page.records {
                knowledge.apply_record(record);
            }
            for (member, ago) in page.tombstones {
                knowledge.apply_tombstone(member, ago);
            }
            for (member, seen) in page.seen {
                knowledge.apply_seen(member, seen);
            }
            let mut refused = None;
            for (owner, set) in page.services {
                if let Err(error) = knowledge.apply_services(&owner, set) {
                    refused = Some(error);
                }
            }
            if let Some(error) = refused {
                return Err(CodecError::from(error).into());
            }
            page.last
                && page.answer_wanted
                && (knowledge.table.hash() != page.table_hash
                    || knowledge.seen_hash() != page.seen_hash
                    || knowledge.services.hash() != page.services_hash)
        };
        if let (true, Some(from)) = (answer, page.from) {
            if !self.may_answer(&from) {
                return Ok(());
            }
            let peer = PeerHashes {
                table: page.table_hash,
                services: page.services_hash,
            };
            self.send_pages(from, false, peer);
        }
        Ok(())
    }

    /// Whether this node may send its table to `from` now (module doc);
    /// notes the answer when it may.
    fn may_answer(&mut self, from: &NodeId) -> bool {
        let now = self.outbox.now;
        let member = UniqueAddress::of(from);
        let every = self.config.gossip_interval / 2;
        match self.sync_answered.get(&member) {
            Some(at) if now < at.saturating_add(every) => {
                self.sync_answers_withheld += 1;
                false
            }
            _ => {
                self.sync_answered.insert(member, now);
                true
            }
        }
    }

    /// Digests and push-pull pages this node left unanswered because it
    /// had sent the peer its table less than half a `gossip_interval`
    /// before.
    pub fn sync_answers_withheld(&self) -> u64 {
        self.sync_answers_withheld
    }

    /// Sends this node's table to `to`, whose hashes are `peer`: without
    /// the records when the tables are equal (only the seen-sets differ, as
    /// they do for a while after every change), since those are most of the
    /// bytes, and without the service registry when the registries are
    /// equal.
    fn send_pages(&mut self, to: NodeId, answer_wanted: bool, peer: PeerHashes) {
        let pages = {
            let mut knowledge = self.knowledge.lock();
            let sections = pages::Sections {
                records: knowledge.table.hash() != peer.table,
                services: knowledge.services.hash() != peer.services,
            };
            pages::pages(
                &mut knowledge,
                answer_wanted,
                sections,
                self.config.max_sync_page_bytes,
            )
        };
        let from = self.identity().clone();
        for page in pages {
            let bytes = wire::encode_page(&page, &from);
            self.outbox.send(to.clone(), Channel::SyncData, &bytes);
        }
    }

    /// Announces to a few members the table holds but foca does not know
    /// (foca never merges two SWIM groups by itself: its periodic
    /// announces go only to members it knows).
    pub(super) fn announce_to_unknown(&mut self) -> Result<(), RefusedBy> {
        // One pass over foca's members into a set, not one per record:
        // every node runs this every tick, over tables of every member.
        let known: HashSet<(&str, u16, u64)> = self
            .foca
            .iter_membership_state()
            .map(|known| incarnation(known.id()))
            .collect();
        let mut candidates: Vec<NodeId> = {
            let knowledge = self.knowledge.lock();
            knowledge
                .table
                .records()
                .filter(|record| record.status < crate::member::MemberStatus::Down)
                .map(|record| &record.node)
                .filter(|node| !known.contains(&incarnation(node)))
                .filter(|node| {
                    let member = UniqueAddress::of(node);
                    member != self.me && !self.unreachable.contains(&member)
                })
                .cloned()
                .collect()
        };
        for _ in 0..self.config.announces_to_unknown_per_tick {
            if candidates.is_empty() {
                break;
            }
            let index = self.rng.random_range(0..candidates.len());
            let target = candidates.swap_remove(index);
            self.foca.announce(target, &mut self.outbox)?;
        }
        self.announce_to_one_unreachable()
    }

    /// Announces to one random unreachable member that is neither Down nor
    /// Removed, as Akka keeps heartbeating unreachable nodes: once a link
    /// heals, the member answers (or is told by foca that it was declared
    /// down and renews), and the two sides meet again within a tick or so
    /// instead of at foca's periodic announce to down members.
    fn announce_to_one_unreachable(&mut self) -> Result<(), RefusedBy> {
        let candidates: Vec<NodeId> = {
            let knowledge = self.knowledge.lock();
            self.unreachable
                .iter()
                .filter_map(|member| knowledge.table.get(member))
                .filter(|record| record.status < crate::member::MemberStatus::Down)
                .map(|record| record.node.clone())
                .collect()
        };
        if candidates.is_empty() {
            return Ok(());
        }
        let target = candidates[self.rng.random_range(0..candidates.len())].clone();
        self.foca.announce(target, &mut self.outbox)?;
        Ok(())
    }
}

/// A member's incarnation, the part of its identity that does not change
/// when foca renews it.
fn incarnation(id: &NodeId) -> (&str, u16, u64) {
    (id.host(), id.port(), id.uid())
}
