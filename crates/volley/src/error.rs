//! Errors and failures.
//!
//! A handler returns [`ActorError`] for any error type (it converts from every
//! `std::error::Error`, like `anyhow`), so `?` works inside handlers. The
//! runtime wraps what went wrong, a returned error or a caught panic, in a
//! [`Failure`] that the supervisor's decider inspects.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

/// The error a handler or lifecycle hook returns. Any `std::error::Error` (and
/// `&str`/`String`) converts into it, so `?` works in handlers.
pub struct ActorError {
    inner: Box<dyn StdError + Send + Sync + 'static>,
}

impl ActorError {
    /// Wraps an error value.
    pub fn new(err: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        ActorError { inner: err.into() }
    }

    /// The wrapped error, for deciders that match on error types.
    pub fn downcast_ref<E: StdError + 'static>(&self) -> Option<&E> {
        self.inner.downcast_ref::<E>()
    }

    /// The wrapped error as a trait object.
    pub fn as_error(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.inner
    }
}

impl<E: Into<Box<dyn StdError + Send + Sync + 'static>>> From<E> for ActorError {
    fn from(err: E) -> Self {
        ActorError::new(err)
    }
}

impl fmt::Display for ActorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl fmt::Debug for ActorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

/// What kind of failure an actor suffered.
#[derive(Debug)]
pub enum FailureKind {
    /// A handler or hook returned an error.
    Error(ActorError),
    /// A handler or hook panicked; the panic payload's text.
    Panic(String),
    /// `pre_start` (or `post_restart`) failed: Akka's ActorInitializationException.
    /// The default decider stops such an actor.
    Initialization(Box<Failure>),
    /// The actor watched another actor and did not handle its `Terminated`
    /// signal: Akka's DeathPactException. The default decider stops the actor.
    DeathPact(String),
    /// A child's failure that its parent's decider escalated.
    Escalated(Arc<Failure>),
}

/// A failure of one actor, as seen by its supervisor.
#[derive(Debug)]
pub struct Failure {
    /// The path of the actor that failed.
    pub actor: String,
    /// What went wrong.
    pub kind: FailureKind,
}

impl Failure {
    /// The error a handler returned, if it was of type `E` (looking through
    /// initialization and escalation wrappers).
    pub fn downcast_ref<E: StdError + 'static>(&self) -> Option<&E> {
        match &self.kind {
            FailureKind::Error(e) => e.downcast_ref(),
            FailureKind::Initialization(inner) => inner.downcast_ref(),
            FailureKind::Escalated(inner) => inner.downcast_ref(),
            _ => None,
        }
    }

    /// True when the failure was a panic.
    pub fn is_panic(&self) -> bool {
        matches!(self.kind, FailureKind::Panic(_))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FailureKind::Error(e) => write!(f, "{} failed: {e}", self.actor),
            FailureKind::Panic(p) => write!(f, "{} panicked: {p}", self.actor),
            FailureKind::Initialization(inner) => {
                write!(f, "{} failed to start: {inner}", self.actor)
            }
            FailureKind::DeathPact(who) => write!(
                f,
                "{} did not handle Terminated({who}) (death pact)",
                self.actor
            ),
            FailureKind::Escalated(inner) => write!(f, "{} escalated: {inner}", self.actor),
        }
    }
}

/// Why a spawn was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// The parent already has a child of that name.
    #[error("an actor named {name:?} already exists under {parent}")]
    DuplicateName {
        /// The parent's path.
        parent: String,
        /// The name asked for.
        name: String,
    },
    /// The name is empty, starts with `$` (reserved for anonymous actors) or
    /// holds a character that is not allowed in a path element.
    #[error("invalid actor name {name:?}: {reason}")]
    InvalidName {
        /// The name asked for.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The parent is stopping or stopped, or the system is shutting down.
    #[error("cannot spawn under {parent}: it is terminating")]
    ParentTerminating {
        /// The parent's path.
        parent: String,
    },
    /// The props name a dispatcher that the settings do not define.
    #[error("no dispatcher named {0:?} is configured")]
    UnknownDispatcher(String),
    /// A bounded mailbox needs a capacity of at least one.
    #[error("a bounded mailbox needs a capacity of at least 1")]
    ZeroCapacity,
}

/// Why `try_tell` did not enqueue a message; the message is handed back.
#[derive(PartialEq, Eq, thiserror::Error)]
pub enum TellError<M> {
    /// The bounded mailbox is full.
    #[error("mailbox full")]
    Full(M),
    /// The actor has terminated.
    #[error("actor terminated")]
    Terminated(M),
}

impl<M> TellError<M> {
    /// Takes the message back.
    pub fn into_inner(self) -> M {
        match self {
            TellError::Full(m) | TellError::Terminated(m) => m,
        }
    }
}

impl<M> fmt::Debug for TellError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TellError::Full(_) => f.write_str("Full(..)"),
            TellError::Terminated(_) => f.write_str("Terminated(..)"),
        }
    }
}

/// Why a system could not start.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    /// The system name is empty, or holds a character other than an ASCII
    /// letter, digit, `-` or `_` (or starts with `-` or `_`).
    #[error("invalid actor system name {name:?}: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The settings are invalid.
    #[error(transparent)]
    Settings(#[from] crate::settings::SettingsError),
    /// A thread or the I/O runtime could not be started.
    #[error("cannot start the actor system's threads: {0}")]
    Io(#[from] std::io::Error),
}

/// Why a shutdown hook was not added.
#[derive(Debug, thiserror::Error)]
pub enum ShutdownHookError {
    /// Termination had already begun; the hooks registered before it run,
    /// this one never will.
    #[error("shutdown hook {hook:?} not added: actor system {system:?} is already terminating")]
    Terminating {
        /// The hook's name.
        hook: &'static str,
        /// The system's name.
        system: String,
    },
}
