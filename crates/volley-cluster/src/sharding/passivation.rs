//! Which entities a shard stops to save memory (Akka's passivation): the
//! ones idle for longer than a timeout, and, past a limit of active
//! entities, the least recently used. Bookkeeping only: the shard asks
//! the chosen entities to stop, buffers their messages meanwhile, and
//! starts an entity again on its next message.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::time::{Duration, Instant};

/// When to passivate entities. Both off keeps every entity until its
/// shard moves or it stops itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PassivationSettings {
    /// Passivate an entity that received nothing for this long.
    pub idle_timeout: Option<Duration>,
    /// Most active entities per region; past it, the least recently used
    /// are passivated.
    pub max_active: Option<usize>,
}

impl PassivationSettings {
    /// Whether anything is passivated: without an idle timeout or a
    /// maximum, a shard keeps no record of use at all.
    pub fn is_enabled(&self) -> bool {
        self.idle_timeout.is_some() || self.max_active.is_some()
    }
}

/// The active entities of a region, by last use. Touching, removing and
/// finding the least recently used are `O(log n)`.
#[derive(Debug)]
pub struct ActiveEntities<K> {
    stamp_of: HashMap<K, u64>,
    by_use: BTreeMap<u64, (Instant, K)>,
    next_stamp: u64,
}

impl<K> Default for ActiveEntities<K> {
    fn default() -> Self {
        Self {
            stamp_of: HashMap::new(),
            by_use: BTreeMap::new(),
            next_stamp: 0,
        }
    }
}

impl<K: Clone + Eq + Hash> ActiveEntities<K> {
    /// How many entities are active.
    pub fn len(&self) -> usize {
        self.stamp_of.len()
    }

    /// Whether no entity is active.
    pub fn is_empty(&self) -> bool {
        self.stamp_of.is_empty()
    }

    /// `entity` was used at `now` (started, or received a message): it
    /// becomes the most recently used. Calls give times that never go
    /// back, as a shard's clock does.
    pub fn touch(&mut self, entity: &K, now: Instant) {
        if let Some(stamp) = self.stamp_of.get(entity) {
            self.by_use.remove(stamp);
        }
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.stamp_of.insert(entity.clone(), stamp);
        self.by_use.insert(stamp, (now, entity.clone()));
    }

    /// `entity` stopped.
    pub fn remove(&mut self, entity: &K) {
        if let Some(stamp) = self.stamp_of.remove(entity) {
            self.by_use.remove(&stamp);
        }
    }

    /// The entities to passivate at `now`, least recently used first:
    /// those idle for at least the idle timeout, then as many more as the
    /// active count exceeds `max_active`. They stay listed until
    /// [`remove`](Self::remove)d, when they have stopped.
    pub fn to_passivate(&self, now: Instant, settings: &PassivationSettings) -> Vec<K> {
        let over_limit = settings
            .max_active
            .map_or(0, |max| self.len().saturating_sub(max));
        self.by_use
            .values()
            .enumerate()
            .take_while(|(index, (used, _))| {
                *index < over_limit
                    || settings
                        .idle_timeout
                        .is_some_and(|idle| now.saturating_duration_since(*used) >= idle)
            })
            .map(|(_, (_, entity))| entity.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(idle_ms: Option<u64>, max_active: Option<usize>) -> PassivationSettings {
        PassivationSettings {
            idle_timeout: idle_ms.map(Duration::from_millis),
            max_active,
        }
    }

    #[test]
    fn idle_entities_are_passivated_oldest_first() {
        let t0 = Instant::now();
        let mut active = ActiveEntities::default();
        active.touch(&"a", t0);
        active.touch(&"b", t0 + Duration::from_millis(100));
        active.touch(&"c", t0 + Duration::from_millis(900));
        let idle = settings(Some(500), None);
        assert_eq!(
            active.to_passivate(t0 + Duration::from_millis(550), &idle),
            ["a"]
        );
        assert_eq!(
            active.to_passivate(t0 + Duration::from_millis(700), &idle),
            ["a", "b"]
        );
        // A message makes "a" the most recently used: no longer idle.
        active.touch(&"a", t0 + Duration::from_millis(650));
        assert_eq!(
            active.to_passivate(t0 + Duration::from_millis(700), &idle),
            ["b"]
        );
    }

    #[test]
    fn past_the_limit_the_least_recently_used_are_passivated() {
        let t0 = Instant::now();
        let mut active = ActiveEntities::default();
        for (n, entity) in ["a", "b", "c", "d"].iter().enumerate() {
            active.touch(entity, t0 + Duration::from_millis(n as u64));
        }
        active.touch(&"a", t0 + Duration::from_millis(10));
        let limit = settings(None, Some(2));
        assert_eq!(active.to_passivate(t0, &limit), ["b", "c"]);
        active.remove(&"b");
        active.remove(&"c");
        assert_eq!(active.len(), 2);
        assert!(active.to_passivate(t0, &limit).is_empty());
    }

    #[test]
    fn off_passivates_nothing_and_removing_an_unknown_entity_is_harmless() {
        let t0 = Instant::now();
        let mut active = ActiveEntities::default();
        active.touch(&1u64, t0);
        active.remove(&2);
        assert!(active
            .to_passivate(t0 + Duration::from_secs(3600), &settings(None, None))
            .is_empty());
        assert_eq!(active.len(), 1);
        active.remove(&1);
        assert!(active.is_empty());
    }
}
