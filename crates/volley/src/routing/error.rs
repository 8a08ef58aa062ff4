//! Why a message or a request could not be routed.

use std::time::Duration;

use crate::ask::AskError;

/// Why a routing logic could not pick a routee for one message. The router
/// turns it into a [`RoutingError`] naming itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// The router has no routees.
    #[error("no routees")]
    NoRoutees,
    /// A consistent-hashing router got a message its key extractor returned
    /// `None` for.
    #[error("the message has no consistent-hashing key")]
    MissingKey,
    /// A custom logic refused the message.
    #[error("{0}")]
    Rejected(String),
}

/// Why a routed message or request failed. A `tell` that fails this way sends
/// the message to dead letters; [`RouterRef::route`](super::RouterRef::route)
/// and the ask-style methods return the reason instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoutingError {
    /// The router has no routees (a group whose routees all terminated or
    /// were removed, or a pool that is stopping).
    #[error("router {router} has no routees")]
    NoRoutees {
        /// The router's path.
        router: String,
    },
    /// A consistent-hashing router got a message without a key.
    #[error("router {router}: message of type {message_type} has no consistent-hashing key")]
    MissingKey {
        /// The router's path.
        router: String,
        /// The message's Rust type.
        message_type: &'static str,
    },
    /// The routing logic refused the message.
    #[error("router {router} rejected the message: {reason}")]
    Rejected {
        /// The router's path.
        router: String,
        /// The logic's reason.
        reason: String,
    },
    /// The router has terminated.
    #[error("router {router} has terminated")]
    RouterTerminated {
        /// The router's path.
        router: String,
    },
    /// No routee answered a scatter-gather or tail-chopping request in time.
    #[error("no routee of {router} answered within {after:?}")]
    Timeout {
        /// The router's path.
        router: String,
        /// The request's overall timeout.
        after: Duration,
    },
    /// The request reached a routee but the ask failed.
    #[error(transparent)]
    Ask(#[from] AskError),
}

impl RoutingError {
    pub(crate) fn from_select(
        err: SelectError,
        router: String,
        message_type: &'static str,
    ) -> Self {
        match err {
            SelectError::NoRoutees => RoutingError::NoRoutees { router },
            SelectError::MissingKey => RoutingError::MissingKey {
                router,
                message_type,
            },
            SelectError::Rejected(reason) => RoutingError::Rejected { router, reason },
        }
    }
}
