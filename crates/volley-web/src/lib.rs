//! A WebSocket gateway, with an HTTP long-poll fallback, for volley:
//! browsers and JavaScript programs tell and ask actors, subscribe to
//! topics, and are actors themselves that services push to.
//!
//! ```no_run
//! # use volley::{Actor, ActorSystem, Context, HandleResult, Props, ReplyTo};
//! # use volley_web::{Call, Reply, WebGateway, WebSettings};
//! struct Echo;
//! impl Actor for Echo {
//!     type Msg = (Call<String>, ReplyTo<Reply<String>>);
//!     fn handle(&mut self, _: &mut Context<Self>, (call, reply_to): Self::Msg) -> HandleResult {
//!         reply_to.tell(Ok(call.msg));
//!         Ok(())
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let system = ActorSystem::new("web")?;
//! let echo = system.spawn("echo", Props::new(|| Echo))?;
//! let gateway = WebGateway::builder(&system, WebSettings::default())
//!     .ask_service("echo", echo, |call, reply_to| (call, reply_to))?
//!     .build();
//! // Mounted in an application's router...
//! let app = axum::Router::new().nest("/volley", gateway.router());
//! # let _ = app;
//! // ...or served alone.
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! gateway.serve(listener, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Each client session is an actor. A service gets each message as a
//! [`Call`], with the session's [`ClientRef`]: the client's identity (from
//! the auth hook), and refs to the client's actors, which a service tells
//! (a `push` frame) and watches (`Terminated` when the session ends for
//! good). The protocol is in `docs/web-protocol.md`; guarantees, settings
//! and what is not there yet in `docs/web.md`.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod auth;
mod client;
pub mod frame;
mod gateway;
mod inbound;
mod longpoll;
mod outbox;
mod serve;
mod service;
mod session;
mod settings;
mod tag_first;
mod topic;
mod ws;
mod ws_close;

pub use auth::AuthRequest;
pub use client::{ClientRef, INBOX};
pub use frame::{ClientFrame, Encoding, ErrorCode, ServerFrame};
pub use gateway::{WebGateway, WebGatewayBuilder, WebGatewayError};
pub use service::{Call, Reply, ServiceError};
pub use settings::{Origins, SlowConsumer, WebSettings};
