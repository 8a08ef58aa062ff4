//! A region's buffers: per shard, the messages that wait for the shard's
//! home, in the order they came, with one limit for all shards together.
//! A message past the limit is refused (the newest goes, as in Pekko's
//! region, so what waits keeps its order).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::allocation::ShardId;

/// One waiting message: its entity and itself.
pub(crate) type Waiting<M> = (Arc<str>, M);

/// Per-shard queues with a total limit.
pub(crate) struct RegionBuffer<M> {
    shards: HashMap<ShardId, VecDeque<Waiting<M>>>,
    total: usize,
    limit: usize,
}

impl<M> RegionBuffer<M> {
    /// Empty buffers holding at most `limit` messages in all.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            shards: HashMap::new(),
            total: 0,
            limit,
        }
    }

    /// Keeps `waiting` behind what `shard` has; hands it back when full.
    pub(crate) fn push(&mut self, shard: ShardId, waiting: Waiting<M>) -> Result<(), Waiting<M>> {
        if self.total >= self.limit {
            return Err(waiting);
        }
        self.shards.entry(shard).or_default().push_back(waiting);
        self.total += 1;
        Ok(())
    }

    /// Puts `older` (in its order) before what `shard` has: messages that
    /// were sent before those buffered here, handed back by a shard that
    /// stopped. They were counted once already, so the limit does not
    /// refuse them.
    pub(crate) fn push_front(&mut self, shard: ShardId, older: Vec<Waiting<M>>) {
        if older.is_empty() {
            return;
        }
        self.total += older.len();
        let queue = self.shards.entry(shard).or_default();
        for waiting in older.into_iter().rev() {
            queue.push_front(waiting);
        }
    }

    /// Everything `shard` has, oldest first, leaving it empty.
    pub(crate) fn take(&mut self, shard: ShardId) -> VecDeque<Waiting<M>> {
        let taken = self.shards.remove(&shard).unwrap_or_default();
        self.total -= taken.len();
        taken
    }

    /// Whether anything waits for `shard`.
    pub(crate) fn has(&self, shard: ShardId) -> bool {
        self.shards.contains_key(&shard)
    }

    /// Whether nothing waits for any shard.
    pub(crate) fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The shards something waits for.
    pub(crate) fn shards(&self) -> impl Iterator<Item = ShardId> + '_ {
        self.shards.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(n: u32) -> Waiting<u32> {
        ("e".into(), n)
    }

    #[test]
    fn the_limit_is_for_all_shards_and_refuses_the_newest() {
        let mut buffer = RegionBuffer::new(3);
        assert!(buffer.push(ShardId(1), w(1)).is_ok());
        assert!(buffer.push(ShardId(2), w(2)).is_ok());
        assert!(buffer.push(ShardId(1), w(3)).is_ok());
        assert_eq!(buffer.push(ShardId(2), w(4)).unwrap_err().1, 4);
        let one: Vec<u32> = buffer.take(ShardId(1)).into_iter().map(|w| w.1).collect();
        assert_eq!(one, vec![1, 3]);
        assert!(buffer.push(ShardId(2), w(5)).is_ok());
        assert!(!buffer.has(ShardId(1)));
    }

    #[test]
    fn handed_back_messages_go_first_in_their_order() {
        let mut buffer = RegionBuffer::new(1);
        assert!(buffer.push(ShardId(1), w(3)).is_ok());
        buffer.push_front(ShardId(1), vec![w(1), w(2)]);
        let all: Vec<u32> = buffer.take(ShardId(1)).into_iter().map(|w| w.1).collect();
        assert_eq!(all, vec![1, 2, 3]);
    }
}
