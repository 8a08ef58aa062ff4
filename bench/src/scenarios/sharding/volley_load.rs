//! volley's side of the Pekko peer's `Load`: one row's load from this
//! member through `EntityRef`, at most `window` answers outstanding, then
//! the `row` line's fields. A tell load tells every message and asks for
//! an acknowledgement on every `ack_every`-th (and the last); an ask load
//! asks every message. [`StopFlag`] ends it early.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::{json, Map, Value};
use volley::AskError;
use volley_cluster::sharding::{EntityRef, Sharding};

use super::volley_book::{Add, Reply};
use super::volley_command::LoadSpec;

/// How long an ask (or a tell's acknowledgement) may go unanswered, as
/// the Pekko peer's `EntityRef.ask`.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// Set to end the running load: it sends nothing more and awaits what is
/// outstanding.
pub type StopFlag = Arc<AtomicBool>;

/// The answers of one load.
#[derive(Debug, Default, PartialEq)]
pub struct Tally {
    pub sent: u64,
    pub replies: u64,
    pub duplicate_replies: u64,
    /// Asks unanswered within [`ASK_TIMEOUT`], and ids refused.
    pub failures: u64,
    answered: HashSet<u64>,
}

impl Tally {
    /// The answer to message `seq`.
    pub fn answer(&mut self, seq: u64) {
        if self.answered.insert(seq) {
            self.replies += 1;
        } else {
            self.duplicate_replies += 1;
        }
    }

    /// The `row` line's fields, as the Pekko peer prints them.
    pub fn fields(&self, spec: &LoadSpec, elapsed: Duration) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("row".into(), json!(spec.row));
        fields.insert("sent".into(), json!(self.sent));
        fields.insert("replies".into(), json!(self.replies));
        fields.insert("duplicate_replies".into(), json!(self.duplicate_replies));
        fields.insert("failures".into(), json!(self.failures));
        fields.insert("window".into(), json!(spec.window));
        fields.insert("ack_every".into(), json!(spec.ack_every));
        fields.insert("elapsed_us".into(), json!(elapsed.as_micros() as u64));
        fields
    }
}

/// The references of a load's entities: made once each for a fixed set,
/// as a caller would keep them; a new one per message for new ids.
struct Refs {
    sharding: Sharding<Add>,
    kept: Vec<Option<EntityRef<Add>>>,
}

impl Refs {
    fn get(&mut self, spec: &LoadSpec, seq: u64) -> Option<EntityRef<Add>> {
        if spec.entities == 0 {
            return self.sharding.entity_ref(&spec.entity_of(seq)).ok();
        }
        let slot = &mut self.kept[(seq % spec.entities) as usize];
        if slot.is_none() {
            *slot = self.sharding.entity_ref(&spec.entity_of(seq)).ok();
        }
        slot.clone()
    }
}

/// Runs `spec` to its end (or `stop`); the `row` line's fields.
pub async fn run(sharding: Sharding<Add>, spec: LoadSpec, stop: StopFlag) -> Map<String, Value> {
    let started = Instant::now();
    let mut refs = Refs {
        sharding,
        kept: vec![None; spec.entities as usize],
    };
    let mut tally = Tally::default();
    let mut total = spec.total;
    let mut pending = FuturesUnordered::new();
    loop {
        if stop.load(Relaxed) {
            total = tally.sent;
        }
        while tally.sent < total && pending.len() < spec.window {
            let seq = tally.sent;
            tally.sent += 1;
            let Some(entity) = refs.get(&spec, seq) else {
                tally.failures += 1;
                continue;
            };
            if spec.answered(seq, total) {
                pending.push(ask(entity, seq));
            } else {
                entity.tell(Add {
                    seq,
                    reply_to: None,
                });
            }
        }
        match pending.next().await {
            Some((seq, Ok(_))) => tally.answer(seq),
            Some((_, Err(_))) => tally.failures += 1,
            None if tally.sent >= total => break,
            None => {}
        }
    }
    tally.fields(&spec, started.elapsed())
}

/// One ask: its message's number and its outcome.
async fn ask(entity: EntityRef<Add>, seq: u64) -> (u64, Result<Reply, AskError>) {
    let make = |reply_to| Add {
        seq,
        reply_to: Some(reply_to),
    };
    (seq, entity.ask(make, ASK_TIMEOUT).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_answer_to_one_message_is_counted_apart() {
        let mut tally = Tally::default();
        tally.answer(1);
        tally.answer(2);
        tally.answer(1);
        assert_eq!((tally.replies, tally.duplicate_replies), (2, 1));
    }

    #[test]
    fn the_row_line_has_the_pekko_peers_fields() {
        let spec = LoadSpec {
            row: "ask".into(),
            total: 3,
            window: 2,
            ack_every: 1,
            entities: 3,
            prefix: "e".into(),
            ask: true,
        };
        let tally = Tally {
            sent: 3,
            failures: 1,
            ..Tally::default()
        };
        let fields = tally.fields(&spec, Duration::from_millis(2));
        let keys: Vec<&str> = fields.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "row",
                "sent",
                "replies",
                "duplicate_replies",
                "failures",
                "window",
                "ack_every",
                "elapsed_us"
            ]
        );
        assert_eq!(fields["elapsed_us"], 2000);
    }
}
