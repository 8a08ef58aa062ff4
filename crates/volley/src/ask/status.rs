//! Akka Typed's `StatusReply` and `askWithStatus`: a reply that is a value
//! or an error, and an ask that turns an error reply into the ask's own
//! error.
//!
//! Built on the plain ask: `ask_with_status` asks for a `StatusReply<T>`
//! and unwraps it, so the plain ask's path is untouched.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{AskError, ReplyTo};
use crate::actor::actor_ref::ActorRef;
use crate::actor::context::Context;
use crate::actor::definition::Actor;

/// A reply that is either a value or an error (Akka Typed's
/// `StatusReply`): what a responder answers to
/// [`ActorRef::ask_with_status`] and [`Context::ask_with_status`]. A plain
/// `Result<T, E>` reply does the same job with an error type of the
/// protocol's own; `StatusReply` is for protocols that want Akka's
/// convention: one reply type, and an error that fails the ask.
///
/// ```
/// use std::time::Duration;
/// use volley::{Actor, ActorSystem, AskStatusError, Context, HandleResult, Props, ReplyTo, StatusReply};
///
/// struct Withdraw(u64, ReplyTo<StatusReply<u64>>);
/// struct Account { balance: u64 }
///
/// impl Actor for Account {
///     type Msg = Withdraw;
///     fn handle(&mut self, _ctx: &mut Context<Self>, Withdraw(n, reply): Withdraw) -> HandleResult {
///         if n > self.balance {
///             reply.tell(StatusReply::error("insufficient funds"));
///         } else {
///             self.balance -= n;
///             reply.tell(StatusReply::success(self.balance));
///         }
///         Ok(())
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let system = ActorSystem::new("doc").unwrap();
/// let account = system.spawn("account", Props::new(|| Account { balance: 10 })).unwrap();
/// let t = Duration::from_secs(1);
/// assert_eq!(account.ask_with_status(|r| Withdraw(4, r), t).await, Ok(6));
/// let refused = account.ask_with_status(|r| Withdraw(7, r), t).await.unwrap_err();
/// assert!(matches!(refused, AskStatusError::Error(_)));
/// assert_eq!(refused.status_error().unwrap().to_string(), "insufficient funds");
/// system.terminate().await;
/// # });
/// ```
///
/// Over the wire (with volley-remote's serde serializers) an error
/// travels as its text: a custom error arrives as a
/// [`StatusError::message`] error.
#[derive(Debug, Clone)]
pub enum StatusReply<T> {
    /// The request succeeded with this value.
    Success(T),
    /// The request failed.
    Error(StatusError),
}

impl<T> StatusReply<T> {
    /// A successful reply.
    pub fn success(value: T) -> Self {
        StatusReply::Success(value)
    }

    /// An error reply with a text (Akka's `StatusReply.error(message)`).
    pub fn error(message: impl Into<String>) -> Self {
        StatusReply::Error(StatusError::message(message))
    }

    /// An error reply carrying `error` (Akka's
    /// `StatusReply.error(exception)`); the asker can downcast it.
    pub fn error_from(error: impl StdError + Send + Sync + 'static) -> Self {
        StatusReply::Error(StatusError::from_error(error))
    }

    /// True for a success.
    pub fn is_success(&self) -> bool {
        matches!(self, StatusReply::Success(_))
    }

    /// True for an error.
    pub fn is_error(&self) -> bool {
        matches!(self, StatusReply::Error(_))
    }

    /// The value, or the error.
    pub fn into_result(self) -> Result<T, StatusError> {
        match self {
            StatusReply::Success(value) => Ok(value),
            StatusReply::Error(error) => Err(error),
        }
    }
}

impl StatusReply<()> {
    /// A success without a value (Akka's `StatusReply.Ack`).
    pub fn ack() -> Self {
        StatusReply::Success(())
    }
}

impl<T, E: StdError + Send + Sync + 'static> From<Result<T, E>> for StatusReply<T> {
    fn from(result: Result<T, E>) -> Self {
        match result {
            Ok(value) => StatusReply::Success(value),
            Err(error) => StatusReply::error_from(error),
        }
    }
}

/// The error of a [`StatusReply::Error`]: a text (Akka's
/// `StatusReply.ErrorMessage`), or an error value of the responder's.
/// Cheap to clone. Its `Display` is the text, or the error's own.
#[derive(Clone)]
pub struct StatusError(Repr);

#[derive(Clone)]
enum Repr {
    Message(Arc<str>),
    Error(Arc<dyn StdError + Send + Sync>),
}

impl StatusError {
    /// An error that is just a text.
    pub fn message(message: impl Into<String>) -> Self {
        StatusError(Repr::Message(Arc::from(message.into())))
    }

    /// An error carrying `error`.
    pub fn from_error(error: impl StdError + Send + Sync + 'static) -> Self {
        StatusError(Repr::Error(Arc::new(error)))
    }

    /// True if the error is just a text ([`StatusError::message`]).
    pub fn is_message(&self) -> bool {
        matches!(self.0, Repr::Message(_))
    }

    /// The responder's error, if it is an `E`.
    pub fn downcast_ref<E: StdError + 'static>(&self) -> Option<&E> {
        match &self.0 {
            Repr::Message(_) => None,
            Repr::Error(error) => error.downcast_ref(),
        }
    }
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Message(text) => f.write_str(text),
            Repr::Error(error) => error.fmt(f),
        }
    }
}

impl fmt::Debug for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Message(text) => f.debug_tuple("StatusError::Message").field(text).finish(),
            Repr::Error(error) => f.debug_tuple("StatusError::Error").field(error).finish(),
        }
    }
}

impl StdError for StatusError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.0 {
            Repr::Message(_) => None,
            Repr::Error(error) => error.source(),
        }
    }
}

impl PartialEq for StatusError {
    /// Two texts are equal if they read the same; two errors if they are
    /// the same error (clones of one another).
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Message(a), Repr::Message(b)) => a == b,
            (Repr::Error(a), Repr::Error(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The wire form: an error is its text.
#[derive(Deserialize)]
enum Wire<T> {
    Success(T),
    Error(String),
}

/// `Wire` to write, borrowing the value (same variants, same order).
#[derive(Serialize)]
#[serde(rename = "Wire")]
enum WireRef<'a, T> {
    Success(&'a T),
    Error(String),
}

impl<T: Serialize> Serialize for StatusReply<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            StatusReply::Success(value) => WireRef::Success(value),
            StatusReply::Error(error) => WireRef::Error(error.to_string()),
        };
        wire.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for StatusReply<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Wire::deserialize(deserializer)? {
            Wire::Success(value) => StatusReply::Success(value),
            Wire::Error(text) => StatusReply::error(text),
        })
    }
}

/// Why an [`ActorRef::ask_with_status`] produced no value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskStatusError {
    /// The ask itself failed: no reply in time, the actor terminated, ...
    #[error(transparent)]
    Ask(#[from] AskError),
    /// The actor replied with [`StatusReply::Error`].
    #[error("the actor replied with an error: {0}")]
    Error(StatusError),
}

impl AskStatusError {
    /// The responder's error, if it replied with one.
    pub fn status_error(&self) -> Option<&StatusError> {
        match self {
            AskStatusError::Error(error) => Some(error),
            AskStatusError::Ask(_) => None,
        }
    }
}

fn flatten<T>(result: Result<StatusReply<T>, AskError>) -> Result<T, AskStatusError> {
    result?.into_result().map_err(AskStatusError::Error)
}

impl<M: Send + 'static> ActorRef<M> {
    /// Asks for a [`StatusReply`] and unwraps it (Akka Typed's
    /// `askWithStatus`): the value of a success, or the error of an
    /// error reply as [`AskStatusError::Error`]; a failed ask (timeout,
    /// terminated actor, ...) is [`AskStatusError::Ask`]. Waits as
    /// [`ActorRef::ask`] does.
    pub async fn ask_with_status<T: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<StatusReply<T>>) -> M,
        timeout: Duration,
    ) -> Result<T, AskStatusError> {
        flatten(self.ask(make, timeout).await)
    }
}

impl<A: Actor> Context<A> {
    /// [`Context::ask`] for a [`StatusReply`], unwrapped as
    /// [`ActorRef::ask_with_status`] does before `map` sees it (Akka
    /// Typed's `context.askWithStatus`).
    pub fn ask_with_status<N, T>(
        &self,
        target: &ActorRef<N>,
        make: impl FnOnce(ReplyTo<StatusReply<T>>) -> N + Send + 'static,
        timeout: Duration,
        map: impl FnOnce(Result<T, AskStatusError>) -> A::Msg + Send + 'static,
    ) where
        N: Send + 'static,
        T: Send + 'static,
    {
        self.ask(target, make, timeout, move |result| map(flatten(result)));
    }
}
