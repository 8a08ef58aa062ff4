//! A unary method: decode the request, ask an actor, encode its reply.
//!
//! The actor gets the decoded request and a reply handle for
//! `Result<Reply, Status>`: `Ok` is the response, `Err` a status of the
//! actor's choosing (INTERNAL for a failure, say). Whatever keeps the
//! actor from answering becomes a status too (`status_of_ask`), so no call
//! waits past its deadline.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use tonic::metadata::MetadataMap;
use tonic::Status;
use volley::{ActorRef, AskError, ReplyTo, RouterRef, RoutingError};

use crate::frame;

/// What a unary method's reply handle takes.
pub type Reply<T> = Result<T, Status>;

/// What a unary call is answered by: an actor, or a router that picks one.
pub trait AskTarget<M: Send + 'static>: Send + Sync + 'static {
    /// Sends `make(reply_to)` and waits for the reply, at most `timeout`.
    fn ask_for<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M + Send,
        timeout: Duration,
    ) -> impl Future<Output = Result<R, Status>> + Send;
}

impl<M: Send + 'static> AskTarget<M> for ActorRef<M> {
    async fn ask_for<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M + Send,
        timeout: Duration,
    ) -> Result<R, Status> {
        // `try_ask`: an actor whose bounded mailbox is full sheds the call
        // (UNAVAILABLE) instead of holding it until its deadline.
        self.try_ask(make, timeout)
            .await
            .map_err(|e| status_of_ask(&e))
    }
}

impl<M: Send + 'static> AskTarget<M> for RouterRef<M> {
    async fn ask_for<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M + Send,
        timeout: Duration,
    ) -> Result<R, Status> {
        self.ask(make, timeout).await.map_err(|e| match e {
            RoutingError::Ask(e) => status_of_ask(&e),
            RoutingError::Timeout { .. } => Status::deadline_exceeded(e.to_string()),
            RoutingError::MissingKey { .. } | RoutingError::Rejected { .. } => {
                Status::invalid_argument(e.to_string())
            }
            _ => Status::unavailable(e.to_string()),
        })
    }
}

/// The status a failed ask answers with.
pub(crate) fn status_of_ask(e: &AskError) -> Status {
    match e {
        AskError::Timeout { .. } => Status::deadline_exceeded(e.to_string()),
        AskError::RecipientTerminated(_)
        | AskError::MailboxFull(_)
        | AskError::SystemTerminated => Status::unavailable(e.to_string()),
        // The request reached nobody who answers: the handler failed with
        // it (the actor restarts), or it was dropped on the way.
        AskError::ReplyDropped(path) => Status::internal(format!(
            "{path} failed or dropped the request without replying"
        )),
    }
}

/// What a unary method answers: the encoded reply (length-prefixed), and
/// the response headers and trailers for a method with metadata.
pub(crate) struct UnaryReply {
    pub(crate) message: Bytes,
    /// Boxed: a plain method's reply stays two words bigger than its bytes.
    pub(crate) metadata: Option<Box<(MetadataMap, MetadataMap)>>,
}

impl UnaryReply {
    pub(crate) fn plain(message: Bytes) -> Self {
        UnaryReply {
            message,
            metadata: None,
        }
    }
}

/// The request message, or INVALID_ARGUMENT saying why not.
pub(crate) fn decode_request<Req: prost::Message + Default>(message: &[u8]) -> Result<Req, Status> {
    Req::decode(message).map_err(|e| {
        Status::invalid_argument(format!(
            "cannot decode the request as {}: {e}",
            std::any::type_name::<Req>()
        ))
    })
}

/// A method, with its types erased, as the gateway's table holds it.
pub(crate) trait UnaryMethod: Send + Sync {
    /// Decodes `message`, asks, and encodes the reply. `headers`: the
    /// request's, for a method that hands its metadata to the actor.
    fn call<'a>(
        &'a self,
        message: &[u8],
        headers: &HeaderMap,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = Result<UnaryReply, Status>> + Send + 'a>>;
}

/// A method from request type `Req` to response type `Resp`, answered by
/// `target` through messages `make` builds.
pub(crate) struct Typed<Req, Resp, M, T, F> {
    pub(crate) target: T,
    pub(crate) make: F,
    pub(crate) types: PhantomData<fn(Req) -> (Resp, M)>,
}

impl<Req, Resp, M, T, F> UnaryMethod for Typed<Req, Resp, M, T, F>
where
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
    M: Send + 'static,
    T: AskTarget<M>,
    F: Fn(Req, ReplyTo<Reply<Resp>>) -> M + Send + Sync + 'static,
{
    fn call<'a>(
        &'a self,
        message: &[u8],
        _headers: &HeaderMap,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = Result<UnaryReply, Status>> + Send + 'a>> {
        let request = decode_request::<Req>(message);
        Box::pin(async move {
            let request = request?;
            let reply = self
                .target
                .ask_for(|reply_to| (self.make)(request, reply_to), timeout)
                .await??;
            Ok(UnaryReply::plain(frame::encode(&reply)))
        })
    }
}
