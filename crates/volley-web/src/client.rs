//! The client as an actor: a service holds a [`ClientRef`] and makes
//! `ActorRef<M>`s to the client's actors from it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::Serialize;
use volley::ActorRef;

use crate::session::SessionMsg;

/// The name of the client actor [`ClientRef::inbox`] addresses.
pub const INBOX: &str = "inbox";

/// A session's handle, handed to services with each message.
///
/// Refs made from it are refs to the session actor: telling one sends a
/// `push` frame to the client; watching one (`ctx.watch`) yields
/// `Terminated` when the session ends for good (closed by the client, or
/// not resumed within the grace period).
#[derive(Clone)]
pub struct ClientRef {
    pub(crate) session: Arc<str>,
    pub(crate) identity: Option<Arc<str>>,
    pub(crate) actor: ActorRef<SessionMsg>,
    /// The session's count of frames passing through its actor.
    pub(crate) via_actor: Arc<AtomicUsize>,
}

impl std::fmt::Debug for ClientRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRef")
            .field("session", &self.session)
            .field("identity", &self.identity)
            .finish()
    }
}

impl ClientRef {
    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// Who the auth hook said the client is (`None` without a hook).
    pub fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// A ref to the client actor `name`: each message told to it goes to
    /// the client as `{"t":"push","to":name,"msg":...}`. A message that
    /// does not serialize is a dead letter.
    pub fn actor<M: Serialize + Send + 'static>(&self, name: &str) -> ActorRef<M> {
        let to: Arc<str> = Arc::from(name);
        let via_actor = self.via_actor.clone();
        self.actor.adapt(move |msg: M| {
            // Counted before it is sent: a reply sent after it waits for it.
            via_actor.fetch_add(1, Ordering::AcqRel);
            SessionMsg::Push {
                to: to.clone(),
                msg: serde_json::to_value(msg).map_err(|e| e.to_string()),
            }
        })
    }

    /// Drops the session's current connection (a WebSocket closes with
    /// 1012, a held long-poll `recv` answers `[]`), keeping the session:
    /// the client resumes it as after a network failure. For tests of
    /// reconnection, and for a server that sheds connections.
    pub fn drop_connection(&self) {
        // Counted as a push is: a reply sent after it comes after the drop.
        self.via_actor.fetch_add(1, Ordering::AcqRel);
        self.actor.tell(SessionMsg::DropConnection);
    }

    /// The client's default actor, `"inbox"`.
    pub fn inbox<M: Serialize + Send + 'static>(&self) -> ActorRef<M> {
        self.actor(INBOX)
    }
}

impl PartialEq for ClientRef {
    fn eq(&self, other: &Self) -> bool {
        self.session == other.session
    }
}

impl Eq for ClientRef {}
