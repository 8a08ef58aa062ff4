//! Services: actors registered by name, told or asked by clients.
//!
//! A service's actor gets each client message as a [`Call`]: the message,
//! decoded into the service's own type, and the session's [`ClientRef`],
//! which names the client's identity and makes refs to the client's
//! actors. An ask service also gets a `ReplyTo<Reply<R>>`.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use volley::{ActorRef, AskError, ReplyTo, TellError};

use crate::client::ClientRef;
use crate::frame::ErrorCode;

/// A client's message to a service, with the client it came from.
#[derive(Clone)]
pub struct Call<M> {
    /// The message, decoded into the service's type.
    pub msg: M,
    /// The session it came from: its identity, and refs to its actors.
    pub client: ClientRef,
}

/// An error a service answers an ask with; the client gets an `error`
/// frame with this code and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    /// The code of the `error` frame (the service's own, e.g. `"not_found"`).
    pub code: String,
    /// What went wrong, for a human.
    pub text: String,
}

impl ServiceError {
    /// An error with `code` and `text`.
    pub fn new(code: impl Into<String>, text: impl Into<String>) -> Self {
        ServiceError {
            code: code.into(),
            text: text.into(),
        }
    }
}

/// What an ask service's reply handle takes.
pub type Reply<R> = Result<R, ServiceError>;

/// Why a client frame failed: what its `error` frame says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) code: String,
    pub(crate) text: String,
}

impl Failure {
    pub(crate) fn new(code: ErrorCode, text: impl Into<String>) -> Self {
        Failure {
            code: code.as_str().to_string(),
            text: text.into(),
        }
    }
}

/// Where an ask's answer goes once it comes: called once, on whichever
/// thread ends the ask (see `ActorRef::try_ask_then`).
pub(crate) type OnAnswer = Box<dyn FnOnce(Result<Value, Failure>) + Send>;

/// A service with its types erased, as the gateway's table holds it.
pub(crate) trait Service: Send + Sync {
    fn tell(&self, msg: Value, client: ClientRef) -> Result<(), Failure>;
    /// Sends the ask now; `answer` gets its outcome. An `Err` means the
    /// ask was not sent and `answer` is never called.
    fn ask(
        &self,
        msg: Value,
        client: ClientRef,
        timeout: Duration,
        answer: OnAnswer,
    ) -> Result<(), Failure>;
}

fn decode<M: DeserializeOwned>(msg: Value) -> Result<M, Failure> {
    serde_json::from_value(msg).map_err(|e| {
        Failure::new(
            ErrorCode::BadMessage,
            format!("the message is not a {}: {e}", std::any::type_name::<M>()),
        )
    })
}

fn tell_failure<T>(e: TellError<T>) -> Failure {
    match e {
        TellError::Full(_) => Failure::new(ErrorCode::Overloaded, "the service's mailbox is full"),
        _ => Failure::new(ErrorCode::Internal, "the service has terminated"),
    }
}

fn ask_failure(e: AskError) -> Failure {
    let code = match e {
        AskError::Timeout { .. } => ErrorCode::Timeout,
        AskError::MailboxFull(_) => ErrorCode::Overloaded,
        _ => ErrorCode::Internal,
    };
    Failure::new(code, e.to_string())
}

/// A service that takes tells: `make` turns each call into the actor's
/// message.
pub(crate) struct TellService<M, T: Send + 'static, F> {
    pub(crate) target: ActorRef<T>,
    pub(crate) make: F,
    pub(crate) types: PhantomData<fn(M)>,
}

impl<M, T, F> Service for TellService<M, T, F>
where
    M: DeserializeOwned + Send + 'static,
    T: Send + 'static,
    F: Fn(Call<M>) -> T + Send + Sync + 'static,
{
    fn tell(&self, msg: Value, client: ClientRef) -> Result<(), Failure> {
        let msg = decode::<M>(msg)?;
        self.target
            .try_tell((self.make)(Call { msg, client }))
            .map_err(tell_failure)
    }

    fn ask(&self, _: Value, _: ClientRef, _: Duration, _: OnAnswer) -> Result<(), Failure> {
        Err(Failure::new(
            ErrorCode::BadMessage,
            "this service takes tells only",
        ))
    }
}

/// A service that answers asks: `make` turns each call and a reply handle
/// into the actor's message.
pub(crate) struct AskService<M, R, T: Send + 'static, F> {
    /// The service's name, for the text of an `internal` error.
    pub(crate) name: Arc<str>,
    pub(crate) target: ActorRef<T>,
    pub(crate) make: F,
    pub(crate) types: PhantomData<fn(M) -> R>,
}

impl<M, R, T, F> Service for AskService<M, R, T, F>
where
    M: DeserializeOwned + Send + 'static,
    R: Serialize + Send + 'static,
    T: Send + 'static,
    F: Fn(Call<M>, ReplyTo<Reply<R>>) -> T + Send + Sync + 'static,
{
    fn tell(&self, _: Value, _: ClientRef) -> Result<(), Failure> {
        Err(Failure::new(
            ErrorCode::BadMessage,
            "this service answers asks only",
        ))
    }

    fn ask(
        &self,
        msg: Value,
        client: ClientRef,
        timeout: Duration,
        answer: OnAnswer,
    ) -> Result<(), Failure> {
        let msg = decode::<M>(msg)?;
        let call = Call { msg, client };
        let name = self.name.clone();
        self.target.try_ask_then(
            |reply_to| (self.make)(call, reply_to),
            timeout,
            move |reply| answer(encode_reply(&name, reply)),
        );
        Ok(())
    }
}

/// The answer frame's content: the reply encoded, or why there is none.
/// Runs the reply's `Serialize` (service code): a panic there answers
/// `internal`, as one in the service's `make` does.
fn encode_reply<R: Serialize>(
    service: &str,
    reply: Result<Reply<R>, AskError>,
) -> Result<Value, Failure> {
    match reply.map_err(ask_failure)? {
        Ok(answer) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            serde_json::to_value(answer)
        }))
        .map_err(|_| crate::inbound::panicked(service))?
        .map_err(|e| {
            Failure::new(
                ErrorCode::Internal,
                format!("the reply does not encode: {e}"),
            )
        }),
        Err(e) => Err(Failure {
            code: e.code,
            text: e.text,
        }),
    }
}
