//! What a simulation records: the membership events every node saw, in
//! order, and counts of its traffic.

use std::time::Duration;

use crate::event::MembershipEvent;
use crate::member::ClusterEvent;
use crate::node_id::NodeId;
use crate::sbr::Downing;

/// One membership event, where and when it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    /// The virtual time.
    pub at: Duration,
    /// The identity of the node that saw it, at that time.
    pub node: NodeId,
    /// What it saw.
    pub event: MembershipEvent,
}

/// One cluster event, where and when it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterTraceEntry {
    /// The virtual time.
    pub at: Duration,
    /// The identity of the node that saw it, at that time.
    pub node: NodeId,
    /// What it saw.
    pub event: ClusterEvent,
}

/// One decision of a node's split-brain resolver, when it was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DowningTraceEntry {
    /// The virtual time.
    pub at: Duration,
    /// The identity of the node that decided, at that time.
    pub node: NodeId,
    /// What it decided (and carried out).
    pub downing: Downing,
}

/// Traffic counts of a simulation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Packets the nodes sent.
    pub packets_sent: u64,
    /// Bytes of those packets.
    pub bytes_sent: u64,
    /// Of those bytes, the anti-entropy digests'.
    pub digest_bytes_sent: u64,
    /// Of those bytes, the anti-entropy data pages' (the rest is foca's
    /// packets, with the membership items they piggyback).
    pub page_bytes_sent: u64,
    /// Packets dropped on a cut link.
    pub packets_cut: u64,
    /// Packets lost at random.
    pub packets_lost: u64,
    /// Packets that reached an address where no node ran.
    pub packets_undeliverable: u64,
    /// Inputs foca refused (malformed, from a stale identity, ...).
    pub inputs_refused: u64,
}
