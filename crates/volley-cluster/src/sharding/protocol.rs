//! The protocol between regions and their coordinator, with Pekko's
//! names (`ShardCoordinator.Internal`): a region registers, asks where a
//! shard lives, hosts the shards it is told to, and hands them off.
//!
//! Neither type names the entities' message type, so a coordinator
//! serves any entity type and the protocol can cross nodes as it is; the
//! variants marked local never do.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use volley::ActorRef;

use super::allocation::ShardId;
use crate::member::ClusterEvent;

/// What a coordinator takes from regions (and from itself).
#[derive(Debug, Serialize, Deserialize)]
pub enum CoordinatorMsg {
    /// A region starts, or a new coordinator asked it
    /// ([`RegionControl::RegisterAgain`]): it may host shards, and hosts
    /// `shards` already. Answered with [`RegionControl::RegisterAck`].
    Register {
        /// The region's control address.
        region: ActorRef<RegionControl>,
        /// The shards the region hosts (or is stopping for a hand-off).
        shards: Vec<ShardId>,
        /// With remembered entities: the shards the region's store
        /// remembers entities of and that it does not host (after a
        /// restart of its node): the coordinator starts them there.
        #[serde(default)]
        remembered: Vec<ShardId>,
        /// The region is a proxy (on a member without the entity type's
        /// role, or started as one): it hosts no shard, but is told of
        /// hand-offs as every region is.
        #[serde(default)]
        proxy: bool,
    },
    /// Where does `shard` live? Answered with [`RegionControl::ShardHome`]
    /// once the shard has started somewhere.
    GetShardHome {
        /// The shard.
        shard: ShardId,
        /// The asking region.
        region: ActorRef<RegionControl>,
    },
    /// The region told to host `shard` has started it.
    ShardStarted {
        /// The shard.
        shard: ShardId,
        /// The hosting region.
        region: ActorRef<RegionControl>,
    },
    /// A region forgot `shard`'s home and buffers what comes for it.
    BeginHandOffAck {
        /// The shard.
        shard: ShardId,
        /// The acknowledging region.
        region: ActorRef<RegionControl>,
        /// The home it had sent the shard's messages to, and now a
        /// [`ShardEnvelope::HandOffMarker`] behind them (design §4).
        marker_to: Option<ActorRef<RegionControl>>,
    },
    /// The hosting region stopped `shard`'s entities: it may go elsewhere.
    ShardStopped {
        /// The shard.
        shard: ShardId,
        /// The region that hosted it.
        region: ActorRef<RegionControl>,
        /// With remembered entities: the ids to start at the shard's next
        /// home. The region keeps them in its store until
        /// [`RegionControl::ForgetShard`].
        #[serde(default)]
        remembered: Vec<String>,
    },
    /// A region is shutting down (its node leaves): hand off every shard
    /// it hosts and allocate none to it (Pekko's `GracefulShutdownReq`).
    GracefulShutdownReq {
        /// The region.
        region: ActorRef<RegionControl>,
    },
    /// Which regions may host shards (Pekko's `GetCurrentRegions`; proxies
    /// left out): answered with [`RegionControl::CurrentRegions`].
    GetCurrentRegions {
        /// Who asks.
        reply_to: ActorRef<RegionControl>,
    },
    // The local variants come last: serde numbers a variant by its place
    // when it writes and by its place among the variants it reads when it
    // reads, so a variant that crosses the wire after a skipped one would
    // be read as another (or refused).
    /// Local: a registered region stopped.
    #[serde(skip)]
    RegionTerminated(ActorRef<RegionControl>),
    /// Local: time for a rebalance round.
    #[serde(skip)]
    RebalanceTick,
    /// Local: the hand-off of `shard` took too long; it stays where it is.
    #[serde(skip)]
    HandOffTimeout(ShardId),
    /// Local: a change of the cluster's membership.
    #[serde(skip)]
    Member(ClusterEvent),
    /// Local: a removed member's margin is over; its region's shards are
    /// free.
    #[serde(skip)]
    FreeRegion(ActorRef<RegionControl>),
    /// Local: ask the regions that have not registered with this new
    /// coordinator again.
    #[serde(skip)]
    AskRegistrations,
    /// Local: a new coordinator waited long enough for the regions'
    /// registrations; it allocates from now on.
    #[serde(skip)]
    StateWaitOver,
    /// Local: `shard`'s host has not said it started it within
    /// `shard_start_timeout`; tell it again.
    #[serde(skip)]
    ResendHostShard(ShardId),
}

/// What a coordinator tells a region.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum RegionControl {
    /// The coordinator knows the region.
    RegisterAck {
        /// The coordinator, for the region's later requests.
        coordinator: ActorRef<CoordinatorMsg>,
    },
    /// `shard` lives in `region`.
    ShardHome {
        /// The shard.
        shard: ShardId,
        /// Its home region.
        region: ActorRef<RegionControl>,
    },
    /// Start `shard` here; answer [`CoordinatorMsg::ShardStarted`].
    HostShard {
        /// The shard.
        shard: ShardId,
        /// With remembered entities: ids handed off by the shard's last
        /// home, to record here before the shard starts (it then starts
        /// every id its store remembers).
        #[serde(default)]
        remembered: Vec<String>,
    },
    /// `shard` is about to move: forget its home, buffer what comes for
    /// it, answer [`CoordinatorMsg::BeginHandOffAck`].
    BeginHandOff {
        /// The shard.
        shard: ShardId,
    },
    /// Stop `shard`'s entities once the markers of `markers_from` have
    /// come (or `handoff_timeout` passed); answer
    /// [`CoordinatorMsg::ShardStopped`].
    HandOff {
        /// The shard.
        shard: ShardId,
        /// The regions that sent this region a hand-off marker for the
        /// shard behind their messages: what they sent before it reaches
        /// the entities before they stop.
        markers_from: Vec<ActorRef<RegionControl>>,
    },
    /// A new coordinator started (the singleton moved): register with
    /// it, reporting the shards hosted here.
    RegisterAgain,
    /// With remembered entities: `shard` runs elsewhere with the ids this
    /// region remembered for it (handed off, or stale): forget them, unless
    /// the shard is hosted here again.
    ForgetShard {
        /// The shard.
        shard: ShardId,
    },
    /// With remembered entities: `shard` runs at `home`, and this region's
    /// store remembers ids of it too (its node came back after the shard
    /// started elsewhere): send them to `home` ([`AddRemembered`]), and
    /// forget them once `home` answers `ForgetShard`.
    ///
    /// [`AddRemembered`]: RegionControl::AddRemembered
    HandOverRemembered {
        /// The shard.
        shard: ShardId,
        /// Where it runs.
        home: ActorRef<RegionControl>,
    },
    /// From another region: ids it remembered for `shard`, which runs
    /// here: record them, start them, and answer `from` `ForgetShard`.
    AddRemembered {
        /// The shard.
        shard: ShardId,
        /// The entity ids.
        ids: Vec<String>,
        /// The region that sends them.
        from: ActorRef<RegionControl>,
    },
    /// The coordinator's answer to [`CoordinatorMsg::GetCurrentRegions`].
    CurrentRegions {
        /// The registered regions that may host shards.
        regions: Vec<ActorRef<RegionControl>>,
    },
    /// How many entities each shard hosted here has (Pekko's
    /// `GetShardRegionStats`): answered with [`RegionControl::Stats`].
    GetStats {
        /// Who asks.
        reply_to: ActorRef<RegionControl>,
    },
    /// A region's answer to [`RegionControl::GetStats`].
    Stats {
        /// The region's node, as its remoting address.
        address: String,
        /// Each shard that answered in time and its number of entities.
        shards: Vec<(ShardId, u32)>,
        /// The shards that did not answer within
        /// `shard_region_query_timeout`.
        failed: Vec<ShardId>,
    },
}

/// What one region sends another's `deliver` child: an entity's message
/// (or a batch of them) for shards the other hosts, or the marker that
/// ends them when the
/// shard moves. One channel for both, so the marker comes behind every
/// message sent before it. Register it for remoting, with the entity
/// type's message type, on every node:
/// `registry.register::<ShardEnvelope<M>>(id)`.
#[derive(Debug, Serialize, Deserialize)]
pub enum ShardEnvelope<M> {
    /// An entity's message.
    Message {
        /// The entity's shard.
        shard: ShardId,
        /// The entity (a string on the wire).
        #[serde(with = "shared_str")]
        entity_id: Arc<str>,
        /// The message.
        msg: M,
    },
    /// `from` got `BeginHandOff` for `shard`: it sends this region no
    /// more of the shard's messages (design §4).
    HandOffMarker {
        /// The shard.
        shard: ShardId,
        /// The sending region's control address.
        from: ActorRef<RegionControl>,
    },
    /// Entities' messages, in the order the sending region took them:
    /// the messages for one region that the sender handled in a row go
    /// as one remote message (`region_outbox.rs` says when). Last, so
    /// that the other variants keep their numbers on the wire.
    Messages(Vec<RoutedMessage<M>>),
}

/// One entity's message in a [`ShardEnvelope::Messages`].
#[derive(Debug, Serialize, Deserialize)]
pub struct RoutedMessage<M> {
    /// The entity's shard.
    pub shard: ShardId,
    /// The entity (a string on the wire).
    #[serde(with = "shared_str")]
    pub entity_id: Arc<str>,
    /// The message.
    pub msg: M,
}

/// An `Arc<str>` as a plain string on the wire, decoded into one
/// allocation (serde's own impl needs its `rc` feature, which the
/// workspace leaves off; through a `String` it would be two).
mod shared_str {
    use std::fmt;
    use std::sync::Arc;

    use serde::de::{Deserializer, Error, Visitor};
    use serde::Serializer;

    pub(super) fn serialize<S: Serializer>(id: &Arc<str>, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(id)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Arc<str>, D::Error> {
        input.deserialize_str(SharedStr)
    }

    struct SharedStr;

    impl Visitor<'_> for SharedStr {
        type Value = Arc<str>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }

        fn visit_str<E: Error>(self, v: &str) -> Result<Arc<str>, E> {
            Ok(v.into())
        }
    }
}
