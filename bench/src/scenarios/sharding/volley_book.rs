//! volley's side of the Pekko peer's `Instances` and `Entity`: the
//! counting entity of `sharding`, and the member's book of its live
//! instances (id, count since the last `reset`, starts, stops, starts of
//! an id already alive here), read by the `check` and `shards` commands.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use volley::{Actor, ActorRef, Context, HandleResult};
use volley_cluster::sharding::ShardExtractor;

/// What the entity takes (the Pekko peer's `ShardMsg.Add`): a message
/// numbered `seq`, answered with the entity's count when it carries a
/// reply-to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Add {
    pub seq: u64,
    pub reply_to: Option<ActorRef<Reply>>,
}

/// An entity's answer (`ShardMsg.Reply`): the count after `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub seq: u64,
    pub value: u64,
}

/// This member's book of live entity instances.
#[derive(Default)]
pub struct Book {
    /// Live instances: id to the counter of the instance alive now.
    live: Mutex<HashMap<String, Arc<AtomicU64>>>,
    started: AtomicU64,
    stopped: AtomicU64,
    /// Starts of an id already alive on this member (must stay 0).
    local_duplicates: AtomicU64,
    /// Messages counted since the last reset, stopped instances included.
    received: AtomicU64,
}

impl Book {
    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<AtomicU64>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An instance of `id` started; its counter.
    fn started(&self, id: &str) -> Arc<AtomicU64> {
        self.started.fetch_add(1, Relaxed);
        let counter = Arc::new(AtomicU64::new(0));
        let mut live = self.live();
        if live.contains_key(id) {
            self.local_duplicates.fetch_add(1, Relaxed);
        } else {
            live.insert(id.to_string(), counter.clone());
        }
        counter
    }

    fn stopped(&self, id: &str, counter: &Arc<AtomicU64>) {
        self.stopped.fetch_add(1, Relaxed);
        let mut live = self.live();
        if live.get(id).is_some_and(|c| Arc::ptr_eq(c, counter)) {
            live.remove(id);
        }
    }

    /// One message counted by `counter`'s instance; its count now.
    fn count(&self, counter: &AtomicU64) -> u64 {
        self.received.fetch_add(1, Relaxed);
        counter.fetch_add(1, Relaxed) + 1
    }

    /// Zeroes every count (the live instances' and the member's total).
    pub fn reset(&self) {
        self.received.store(0, Relaxed);
        self.live().values().for_each(|c| c.store(0, Relaxed));
    }

    /// The `check` line's fields: live instances, messages counted since
    /// the reset, live instances whose count is not `expected` (when it is
    /// not negative), starts, stops, local duplicates, with `ids` every
    /// live id.
    pub fn check(&self, expected: i64, ids: bool) -> Map<String, Value> {
        let live = self.live();
        let mismatched = match u64::try_from(expected) {
            Ok(want) => live.values().filter(|c| c.load(Relaxed) != want).count(),
            Err(_) => 0,
        };
        let mut fields = Map::new();
        fields.insert("live".into(), json!(live.len()));
        fields.insert("received".into(), json!(self.received.load(Relaxed)));
        fields.insert("mismatched".into(), json!(mismatched));
        fields.insert("started".into(), json!(self.started.load(Relaxed)));
        fields.insert("stopped".into(), json!(self.stopped.load(Relaxed)));
        let duplicates = self.local_duplicates.load(Relaxed);
        fields.insert("local_duplicates".into(), json!(duplicates));
        if ids {
            fields.insert("ids".into(), json!(live.keys().collect::<Vec<_>>()));
        }
        fields
    }

    /// The shards this member hosts live entities of, with how many
    /// entities each. volley's sharding has no stats query yet, so this
    /// stands in for Pekko's `GetClusterShardingStats`: a hosted shard
    /// with no live entity is not counted.
    pub fn shards(&self, extractor: &dyn ShardExtractor) -> BTreeMap<u32, usize> {
        let mut shards = BTreeMap::new();
        for id in self.live().keys() {
            *shards.entry(extractor.shard_of(id).0).or_default() += 1;
        }
        shards
    }
}

/// The sharded entity: counts what it gets, answers when asked, books
/// its life in the member's [`Book`].
pub struct Counter {
    id: String,
    book: Arc<Book>,
    count: Arc<AtomicU64>,
}

impl Counter {
    pub fn new(id: &str, book: Arc<Book>) -> Self {
        Counter {
            id: id.to_string(),
            book,
            count: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Actor for Counter {
    type Msg = Add;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.count = self.book.started(&self.id);
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, add: Add) -> HandleResult {
        let value = self.book.count(&self.count);
        if let Some(reply_to) = add.reply_to {
            reply_to.tell(Reply {
                seq: add.seq,
                value,
            });
        }
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.book.stopped(&self.id, &self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_cluster::sharding::HashShards;

    #[test]
    fn the_book_counts_live_instances_and_their_messages() {
        let book = Book::default();
        let a = book.started("a");
        let b = book.started("b");
        book.count(&a);
        book.count(&a);
        book.count(&b);
        let check = book.check(2, false);
        assert_eq!(check["live"], 2);
        assert_eq!(check["received"], 3);
        assert_eq!(check["mismatched"], 1);
        assert!(check.get("ids").is_none());
        book.reset();
        assert_eq!(book.check(0, true)["mismatched"], 0);
        assert_eq!(book.check(-1, true)["ids"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_second_start_of_a_live_id_is_a_local_duplicate_and_its_stop_keeps_the_first() {
        let book = Book::default();
        let first = book.started("a");
        let second = book.started("a");
        assert_eq!(book.check(-1, false)["local_duplicates"], 1);
        book.stopped("a", &second);
        assert_eq!(book.check(-1, false)["live"], 1);
        book.stopped("a", &first);
        let check = book.check(-1, false);
        assert_eq!(
            (check["live"].clone(), check["stopped"].clone()),
            (json!(0), json!(2))
        );
    }

    #[test]
    fn shards_are_those_of_the_live_ids() {
        let book = Book::default();
        let shards = HashShards::new(100).unwrap();
        for id in ["e1", "e2", "e3"] {
            book.started(id);
        }
        let hosted = book.shards(&shards);
        assert_eq!(hosted.values().sum::<usize>(), 3);
        assert!(hosted.contains_key(&shards.shard_of("e2").0));
    }
}
