//! The hosting region's side of the hand-off marker (design §4).
//!
//! A region that sent a shard's messages to its home sends that home a
//! `HandOffMarker` behind them when it acks `BeginHandOff`, through the
//! home's `deliver` child, the channel its messages took: when the
//! marker comes, every message it sent before has come. The coordinator's
//! `HandOff` names the regions that sent one, and the home stops the
//! shard only once each of their markers has come, so no message sent
//! to the old home is still on its way when the shard moves: the new
//! home gets them first, in their order. A marker may come before the
//! `HandOff` (it goes region to region, the `HandOff` through the
//! coordinator), so early ones are kept until the next `HandOff` of
//! their shard. At most one per shard and region is kept.

use std::collections::{HashMap, HashSet};

use volley::ActorRef;

use super::allocation::ShardId;
use super::protocol::RegionControl;

type Regions = HashSet<ActorRef<RegionControl>>;

/// Markers that came, and hand-offs that wait for markers.
#[derive(Default)]
pub(crate) struct HandOffMarkers {
    /// Markers that came before their shard's `HandOff`.
    early: HashMap<ShardId, Regions>,
    /// Shards whose `HandOff` came, and the markers they still wait for.
    awaiting: HashMap<ShardId, Regions>,
}

impl HandOffMarkers {
    /// `HandOff` of `shard`, whose markers come from `from`: whether the
    /// shard may be handed off now (else it waits for the rest).
    pub(crate) fn hand_off(&mut self, shard: ShardId, from: Vec<ActorRef<RegionControl>>) -> bool {
        let early = self.early.remove(&shard).unwrap_or_default();
        let missing: Regions = from.into_iter().filter(|r| !early.contains(r)).collect();
        if missing.is_empty() {
            return true;
        }
        self.awaiting.insert(shard, missing);
        false
    }

    /// A marker for `shard` from `from` came: whether it was the last one
    /// a waiting hand-off needed.
    pub(crate) fn marker(&mut self, shard: ShardId, from: ActorRef<RegionControl>) -> bool {
        let Some(missing) = self.awaiting.get_mut(&shard) else {
            self.early.entry(shard).or_default().insert(from);
            return false;
        };
        missing.remove(&from);
        if missing.is_empty() {
            self.awaiting.remove(&shard);
            return true;
        }
        false
    }

    /// Stops waiting for `shard`'s markers: how many had not come, if
    /// its hand-off was waiting.
    pub(crate) fn give_up(&mut self, shard: ShardId) -> Option<usize> {
        self.awaiting.remove(&shard).map(|missing| missing.len())
    }

    /// Whether `shard`'s hand-off waits for markers.
    pub(crate) fn is_waiting(&self, shard: ShardId) -> bool {
        self.awaiting.contains_key(&shard)
    }
}
