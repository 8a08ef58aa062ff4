//! Publish and subscribe: Akka Typed's `Topic`, across nodes once a
//! cluster receptionist lists the instances of other nodes and the
//! topic's commands are registered for remoting (volley-remote's
//! `Registry::register_topic`).
//!
//! A topic is an actor; subscribers are plain `ActorRef<M>`s. Several
//! topic actors of one name and message type form one topic: each keeps
//! its own subscribers and finds the others through the system's
//! receptionist, under a key of the topic's name and type, where an
//! instance registers itself while it has subscribers (as Akka's does). A
//! message published to any instance goes to its own subscribers and to
//! every other instance, which hands it to theirs.

use std::collections::HashSet;

use crate::actor::actor_ref::ActorRef;
use crate::actor::context::Context;
use crate::actor::definition::{Actor, HandleResult, Props, Terminated};
use crate::ask::ReplyTo;
use crate::discovery::receptionist::{Listing, ServiceKey};
use crate::system::event_stream::DeadLetterReason;

/// What a topic actor is told.
pub enum TopicCommand<M: Clone + Send + 'static> {
    /// Send `M` to every subscriber of the topic, on every instance.
    /// With none anywhere, it is a dead letter (`NoRoutee`; Akka's
    /// `Dropped`).
    Publish(M),
    /// Adds a subscriber (watched: it leaves when it terminates).
    /// Subscribing twice is subscribing once.
    Subscribe(ActorRef<M>),
    /// Removes a subscriber.
    Unsubscribe(ActorRef<M>),
    /// Replies with the topic's [`TopicStats`].
    GetTopicStats(ReplyTo<TopicStats>),
    /// Traffic between a topic's instances; cannot be built outside volley.
    Internal(TopicInternal<M>),
}

impl<M: Clone + Send + 'static> TopicCommand<M> {
    /// What of this command crosses nodes, for a remoting serializer: the
    /// message of a publish (`false`) or of a copy one instance relays to
    /// another (`true`). Subscriptions, stats requests and listings hold
    /// local refs and have none.
    pub fn remote_parts(&self) -> Option<(bool, &M)> {
        match self {
            TopicCommand::Publish(msg) => Some((false, msg)),
            TopicCommand::Internal(TopicInternal(Between::Published(msg))) => Some((true, msg)),
            _ => None,
        }
    }

    /// The command [`TopicCommand::remote_parts`] came from.
    pub fn from_remote_parts(relayed: bool, msg: M) -> Self {
        if relayed {
            TopicCommand::Internal(TopicInternal(Between::Published(msg)))
        } else {
            TopicCommand::Publish(msg)
        }
    }
}

/// Traffic between a topic's instances (see [`TopicCommand::Internal`]).
pub struct TopicInternal<M: Clone + Send + 'static>(Between<M>);

enum Between<M: Clone + Send + 'static> {
    /// Published at another instance: for this one's subscribers only.
    Published(M),
    /// The instances registered for the topic, from the receptionist.
    Instances(Listing<TopicCommand<M>>),
}

/// How many subscribe where, as a topic instance sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicStats {
    /// Subscribers of this instance.
    pub local_subscriber_count: usize,
    /// Instances of the topic that have subscribers, this one included if
    /// it has some (as the receptionist last listed them).
    pub topic_instance_count: usize,
}

/// Makes topic actors.
pub struct Topic;

impl Topic {
    /// The props of an instance of the topic `name` for messages `M`
    /// (Akka Typed's `Topic[M](name)`); spawn it like any actor.
    pub fn props<M: Clone + Send + 'static>(name: &str) -> Props<TopicActor<M>> {
        let key = ServiceKey::new(format!("volley-topic:{name}"));
        Props::new(move || TopicActor {
            key: key.clone(),
            subscribers: Vec::new(),
            instances: HashSet::new(),
        })
    }
}

/// A topic instance (see [`Topic::props`]).
pub struct TopicActor<M: Clone + Send + 'static> {
    key: ServiceKey<TopicCommand<M>>,
    subscribers: Vec<ActorRef<M>>,
    /// Every instance registered, this one included while it has
    /// subscribers.
    instances: HashSet<ActorRef<TopicCommand<M>>>,
}

impl<M: Clone + Send + 'static> TopicActor<M> {
    fn deliver(&self, msg: &M) {
        for s in &self.subscribers {
            s.tell(msg.clone());
        }
    }

    /// Registers this instance with the receptionist when its first
    /// subscriber comes, and deregisters it when its last goes.
    fn announce(&self, ctx: &mut Context<Self>, had: usize) -> HandleResult {
        let now = self.subscribers.len();
        if (had == 0) == (now == 0) {
            return Ok(());
        }
        let receptionist = ctx.system().receptionist()?;
        let me = ctx.myself();
        match now {
            0 => receptionist.deregister(&self.key, &me),
            _ => receptionist.register(&self.key, &me),
        }
        Ok(())
    }
}

impl<M: Clone + Send + 'static> Actor for TopicActor<M> {
    type Msg = TopicCommand<M>;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let instances = ctx
            .myself()
            .adapt(|listing| TopicCommand::Internal(TopicInternal(Between::Instances(listing))));
        ctx.system().receptionist()?.subscribe(&self.key, instances);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: TopicCommand<M>) -> HandleResult {
        match msg {
            TopicCommand::Publish(msg) => {
                let me = ctx.myself();
                let others: Vec<_> = self.instances.iter().filter(|i| **i != me).collect();
                if self.subscribers.is_empty() && others.is_empty() {
                    let recipient = ctx.path().clone();
                    let ty = std::any::type_name::<M>();
                    ctx.system()
                        .dead_letter(&recipient, ty, DeadLetterReason::NoRoutee);
                    return Ok(());
                }
                for other in others {
                    let copy = Between::Published(msg.clone());
                    other.tell(TopicCommand::Internal(TopicInternal(copy)));
                }
                self.deliver(&msg);
            }
            TopicCommand::Subscribe(subscriber) => {
                if !self.subscribers.contains(&subscriber) && !subscriber.is_terminated() {
                    let had = self.subscribers.len();
                    ctx.watch(&subscriber);
                    self.subscribers.push(subscriber);
                    self.announce(ctx, had)?;
                }
            }
            TopicCommand::Unsubscribe(subscriber) => {
                let had = self.subscribers.len();
                self.subscribers.retain(|s| *s != subscriber);
                if self.subscribers.len() != had {
                    ctx.unwatch(&subscriber);
                    self.announce(ctx, had)?;
                }
            }
            TopicCommand::GetTopicStats(reply) => reply.tell(TopicStats {
                local_subscriber_count: self.subscribers.len(),
                topic_instance_count: self.instances.len(),
            }),
            TopicCommand::Internal(TopicInternal(Between::Published(msg))) => self.deliver(&msg),
            TopicCommand::Internal(TopicInternal(Between::Instances(listing))) => {
                self.instances = listing.services;
            }
        }
        Ok(())
    }

    fn on_terminated(&mut self, ctx: &mut Context<Self>, terminated: Terminated) -> HandleResult {
        let had = self.subscribers.len();
        self.subscribers.retain(|s| s.to_any() != terminated.actor);
        self.announce(ctx, had)
    }
}
