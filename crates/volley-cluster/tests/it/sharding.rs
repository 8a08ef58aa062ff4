//! Sharding on one node. Each entity reports its start, its messages and
//! its stop to one probe.
//!
//! - `shard`: the shard actor alone;
//! - `region`: `ClusterSharding::init`, `EntityRef` and the region with
//!   its coordinator;
//! - `protocol`: a region driven through Pekko's protocol by a test
//!   standing in for the coordinator;
//! - `remember`: remembered entities, in memory and in a redb file.

mod coordinator;
mod protocol;
mod region;
mod remember;
mod shard;

use std::sync::Arc;

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo};
use volley_cluster::sharding::{passivate, EntityFactory};
use volley_testkit::TestProbe;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    Started(String),
    Got(String, u32),
    Stopped(String),
}

#[derive(Debug)]
pub(crate) enum Rec {
    Num(u32),
    /// Answers `<id>:<n>`.
    Echo(u32, ReplyTo<String>),
    /// Asks its shard to passivate it (for good, with remembered entities).
    Passivate,
    /// Stops itself without passivating.
    StopSelf,
}

pub(crate) struct Recorder {
    id: String,
    events: ActorRef<Event>,
}

impl Actor for Recorder {
    type Msg = Rec;
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.events.tell(Event::Started(self.id.clone()));
        Ok(())
    }
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Rec) -> HandleResult {
        match msg {
            Rec::Num(n) => self.events.tell(Event::Got(self.id.clone(), n)),
            Rec::Echo(n, reply) => reply.tell(format!("{}:{n}", self.id)),
            Rec::Passivate => assert!(passivate(ctx, &self.id), "a sharded entity"),
            Rec::StopSelf => ctx.stop_self(),
        }
        Ok(())
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.events.tell(Event::Stopped(self.id.clone()));
    }
}

/// Recorders that report to a new probe.
pub(crate) fn recorders(system: &ActorSystem) -> (EntityFactory<Recorder>, TestProbe<Event>) {
    let events = TestProbe::<Event>::new(system);
    let to = events.actor_ref();
    let factory: EntityFactory<Recorder> = Arc::new(move |id: &str| {
        let (id, events) = (id.to_owned(), to.clone());
        Props::new(move || Recorder {
            id: id.clone(),
            events: events.clone(),
        })
    });
    (factory, events)
}

/// Events in a fixed order, for comparing what several entities did.
pub(crate) fn sorted(mut events: Vec<Event>) -> Vec<Event> {
    events.sort_by_key(|e| format!("{e:?}"));
    events
}

pub(crate) fn started(id: &str) -> Event {
    Event::Started(id.into())
}
pub(crate) fn got(id: &str, n: u32) -> Event {
    Event::Got(id.into(), n)
}
pub(crate) fn stopped(id: &str) -> Event {
    Event::Stopped(id.into())
}
