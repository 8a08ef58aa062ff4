//! Topics a client may subscribe to: volley topics registered by name.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::Serialize;
use volley::{ActorRef, TopicCommand};

use crate::session::SessionMsg;

/// A topic with its message type erased.
pub(crate) trait WebTopic: Send + Sync {
    /// Subscribes the session; the returned ref is what unsubscribes it.
    /// `via_actor`: the session's count of frames passing through its
    /// actor, which each message adds to.
    fn subscribe(
        &self,
        session: &ActorRef<SessionMsg>,
        via_actor: Arc<AtomicUsize>,
        name: Arc<str>,
    ) -> Subscription;
}

/// A session's subscription to one topic.
pub(crate) struct Subscription {
    unsubscribe: Box<dyn FnOnce() + Send>,
}

impl Subscription {
    pub(crate) fn cancel(self) {
        (self.unsubscribe)()
    }
}

pub(crate) struct TypedTopic<M: Clone + Send + 'static> {
    pub(crate) topic: ActorRef<TopicCommand<M>>,
}

impl<M: Clone + Serialize + Send + 'static> WebTopic for TypedTopic<M> {
    fn subscribe(
        &self,
        session: &ActorRef<SessionMsg>,
        via_actor: Arc<AtomicUsize>,
        name: Arc<str>,
    ) -> Subscription {
        let subscriber = session.adapt(move |msg: M| {
            via_actor.fetch_add(1, Ordering::AcqRel);
            SessionMsg::Publish {
                topic: name.clone(),
                msg: serde_json::to_value(msg).map_err(|e| e.to_string()),
            }
        });
        self.topic.tell(TopicCommand::Subscribe(subscriber.clone()));
        let topic = self.topic.clone();
        Subscription {
            unsubscribe: Box::new(move || topic.tell(TopicCommand::Unsubscribe(subscriber))),
        }
    }
}
