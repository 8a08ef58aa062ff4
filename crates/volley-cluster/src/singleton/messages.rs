//! The hand-over protocol (Akka's `HandOverToMe`, `HandOverInProgress`,
//! `HandOverDone`) and the proxies' part of it, as they cross nodes. Both
//! types must be registered for remoting on every node
//! ([`register_singleton_types`](super::register_singleton_types)).

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use volley::ActorRef;

use crate::member::{ClusterEvent, UniqueAddress};

/// A member, as it travels in the protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberId {
    host: String,
    port: u16,
    uid: u64,
}

impl MemberId {
    /// The wire form of `member`.
    pub(crate) fn of(member: &UniqueAddress) -> Self {
        Self {
            host: member.host.to_string(),
            port: member.port,
            uid: member.uid,
        }
    }

    /// True if this names `member`.
    pub(crate) fn is(&self, member: &UniqueAddress) -> bool {
        *self.host == *member.host && self.port == member.port && self.uid == member.uid
    }
}

/// A singleton manager's protocol. The variants marked local never cross
/// nodes (they are not serialized).
#[derive(Serialize, Deserialize)]
pub enum ManagerMsg {
    /// From a new oldest to a member that may still run the instance.
    HandOverToMe {
        /// The asking manager, for the answers.
        from: ActorRef<ManagerMsg>,
    },
    /// The previous oldest is stopping its instance.
    HandOverInProgress {
        /// The answering member.
        by: MemberId,
    },
    /// The previous oldest runs no instance, and never will again.
    HandOverDone {
        /// The answering member.
        by: MemberId,
    },
    /// A proxy asks where the instance is; the manager running it answers
    /// [`ProxyControl::Located`].
    Identify {
        /// The proxy's link, for the answer.
        link: ActorRef<ProxyControl>,
    },
    /// A proxy confirms that it buffers and sends no more to the instance.
    Paused {
        /// The proxy's link.
        link: ActorRef<ProxyControl>,
    },
    /// Local: a membership change.
    #[serde(skip)]
    Cluster(ClusterEvent),
    /// Local: time to ask again.
    #[serde(skip)]
    Retry,
    /// Local: the proxies had their time to confirm.
    #[serde(skip)]
    PauseTimeout,
    /// Local: coordinated shutdown asks for the instance to stop before
    /// this node leaves; answered once it has.
    #[serde(skip)]
    Shutdown(oneshot::Sender<()>),
}

/// What managers tell a proxy (through its link actor).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ProxyControl {
    /// The instance runs on `holder`, under its manager.
    Located {
        /// The member running it.
        holder: MemberId,
    },
    /// Stop sending to the instance and buffer; answer
    /// [`ManagerMsg::Paused`].
    Pause {
        /// The manager about to stop its instance.
        manager: ActorRef<ManagerMsg>,
    },
}
