//! A gRPC gateway for volley: unary and server-streaming gRPC methods
//! answered by actors.
//!
//! ```no_run
//! # use volley::{Actor, ActorSystem, Context, HandleResult, Props, ReplyTo};
//! # use volley_grpc::{Gateway, GatewaySettings, Reply};
//! #[derive(Clone, PartialEq, prost::Message)]
//! struct Ping {
//!     #[prost(string, tag = "1")]
//!     text: String,
//! }
//!
//! struct Echo;
//! impl Actor for Echo {
//!     type Msg = (Ping, ReplyTo<Reply<Ping>>);
//!     fn handle(&mut self, _: &mut Context<Self>, (ping, reply_to): Self::Msg) -> HandleResult {
//!         reply_to.tell(Ok(ping));
//!         Ok(())
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let system = ActorSystem::new("svc")?;
//! let echo = system.spawn("echo", Props::new(|| Echo))?;
//! let gateway = Gateway::builder(&system, GatewaySettings::default())
//!     .unary("/demo.Echo/Ping", echo, |ping: Ping, reply_to| (ping, reply_to))?
//!     .build();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await?;
//! volley_grpc::serve(listener, gateway, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! **Why not tonic's server.** tonic serves each call through its
//! streaming machinery (a decoder stream, a boxed body, a stream of one
//! response). The gateway's unary path is what Akka gRPC's climb in
//! grpc_bench came from: read the request body whole, decode its one
//! message in place, ask, encode the reply once into the response's only
//! data frame, status in the trailers; a failure is a Trailers-Only
//! response. It sits directly on hyper's HTTP/2 server, which tonic uses
//! too, and speaks tonic's [`Status`](tonic::Status), so actors and
//! clients see the types they know. The gateway is also a
//! `tower::Service`, to mount beside tonic services.
//!
//! **Statuses.** The actor's `Err(status)` is sent as it is. Otherwise:
//! no answer before the deadline (the gateway's `default_timeout`, or the
//! client's shorter `grpc-timeout`) is DEADLINE_EXCEEDED; a terminated
//! actor, a full bounded mailbox or a terminated system is UNAVAILABLE; an
//! actor that fails (or drops the request) without replying is INTERNAL,
//! naming it; a body that is not one protobuf message of the method's
//! request type is INVALID_ARGUMENT; a request over `max_request_bytes` is
//! RESOURCE_EXHAUSTED; an unknown method, or a request compressed with
//! any `grpc-encoding`, is UNIMPLEMENTED (the latter with
//! `grpc-accept-encoding: identity`); a compressed flag without a
//! `grpc-encoding` is INTERNAL.
//!
//! **Server streaming.** [`GatewayBuilder::server_streaming`] tells an
//! actor the request and a [`ResponseStream`]; the actor sends with
//! `try_send` (never blocking: `Full` when the call's bounded buffer is,
//! `Closed` once the client cancelled or the deadline passed), asks for a
//! message when there is room again (`notify_when_ready`) or when the call
//! is cancelled (`notify_when_closed`), and ends with `finish`. A dropped
//! stream ends the call INTERNAL; the deadline ends it DEADLINE_EXCEEDED.
//!
//! **Metadata.** [`GatewayBuilder::unary_with_metadata`] hands the actor
//! the request's custom metadata with the message ([`Call`]) and sends the
//! headers and trailers its reply carries ([`WithMetadata`]): what an
//! actor needs to check an `authorization` header, or a client to read a
//! request id back. [`GatewayBuilder::server_streaming_with_metadata`]
//! hands a streaming method's actor the request's metadata too.
//!
//! **Reflection** (feature `reflection`): `GatewayBuilder::reflection`
//! serves tonic's reflection service over the descriptors given.
//!
//! Not yet: client streaming, bidirectional streaming, compression,
//! response metadata on server-streaming calls.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod body;
mod frame;
mod gateway;
pub mod health;
mod health_watch;
mod http2_limits;
mod metadata;
#[cfg(feature = "reflection")]
mod reflection;
mod request_body;
mod server;
mod streaming;
mod unary;

pub use body::UnaryBody;
pub use gateway::{Gateway, GatewayBuilder, GatewayError, GatewaySettings};
pub use http2_limits::Http2Limits;
pub use metadata::{Call, WithMetadata};
pub use server::serve;
pub use streaming::{ResponseStream, StreamSendError};
pub use unary::{AskTarget, Reply};
