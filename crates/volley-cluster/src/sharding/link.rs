//! A region's faces for other nodes: a child that takes one protocol and
//! hands it to the region. Remote senders need an actor of their own
//! message type (the region's own holds entity messages and local
//! replies, which do not cross nodes), and a message adapter is local
//! only.

use volley::{Actor, ActorRef, Context, HandleResult, Props};

/// Forwards every `N` to its parent's adapter.
pub(crate) struct Link<N: Send + 'static> {
    parent: ActorRef<N>,
}

impl<N: Send + 'static> Link<N> {
    /// A link that forwards to `parent`.
    pub(crate) fn props(parent: ActorRef<N>) -> Props<Self> {
        Props::new(move || Link {
            parent: parent.clone(),
        })
    }
}

impl<N: Send + 'static> Actor for Link<N> {
    type Msg = N;

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: N) -> HandleResult {
        self.parent.tell(msg);
        Ok(())
    }
}
