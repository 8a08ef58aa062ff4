//! A session: what one client has open, across its connections.
//!
//! [`Session`] is shared by the session actor and the connection of the
//! moment; the actor is what services see of the client (pushes and
//! topic messages go through its mailbox into the outbox, and watching
//! it tells when the session ends). It stops when the client closes the
//! session, or when no connection resumed it within the grace period.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use volley::{Actor, ActorRef, Context, DeadLetterReason, HandleResult};

use crate::client::ClientRef;
use crate::frame::{close, ServerFrame};
use crate::gateway::Inner;
use crate::outbox::{Closing, Outbox, Pushed};
use crate::service::Failure;
use crate::topic::Subscription;

/// What a session actor is told.
pub(crate) enum SessionMsg {
    /// A message for a client actor (from a `ClientRef::actor` ref).
    Push {
        to: Arc<str>,
        msg: Result<Value, String>,
    },
    /// The answer to the client's ask `id`.
    Answered {
        id: u64,
        result: Result<Value, Failure>,
    },
    /// A message published on a topic the client subscribed to.
    Publish {
        topic: Arc<str>,
        msg: Result<Value, String>,
    },
    /// The connection of `generation` has gone; `for_good` when the client
    /// closed the session.
    Detached { generation: u64, for_good: bool },
    /// The grace period after the connection of `generation` left.
    GraceExpired { generation: u64 },
    /// Ends the session.
    Close(Closing),
    /// Drops the current connection, keeping the session.
    DropConnection,
}

pub(crate) struct Session {
    pub(crate) id: Arc<str>,
    pub(crate) identity: Option<Arc<str>>,
    pub(crate) outbox: Outbox,
    pub(crate) gateway: Arc<Inner>,
    pub(crate) subscriptions: Mutex<HashMap<String, Subscription>>,
    pub(crate) open_asks: AtomicUsize,
    pub(crate) actor: OnceLock<ActorRef<SessionMsg>>,
}

impl Session {
    /// The session's handle for services.
    pub(crate) fn client(&self) -> Option<ClientRef> {
        Some(ClientRef {
            session: self.id.clone(),
            identity: self.identity.clone(),
            actor: self.actor.get()?.clone(),
        })
    }

    /// Queues a sequenced frame; a full queue drops the oldest (counted)
    /// or ends the session, as the settings say.
    pub(crate) fn push(&self, make: impl FnOnce(u64) -> ServerFrame) {
        match self.outbox.push(make) {
            Pushed::Queued => {}
            Pushed::DroppedSent => {
                self.gateway
                    .stats
                    .dropped_sent
                    .fetch_add(1, Ordering::Relaxed);
            }
            Pushed::DroppedUnsent => self.dead_letter(DeadLetterReason::MailboxOverflow, 1),
            Pushed::Overflow => {
                let closing = Closing {
                    code: close::SLOW_CONSUMER,
                    reason: "slow consumer: the session's outbound queue is full".into(),
                };
                self.outbox.close(closing.clone());
                if let Some(actor) = self.actor.get() {
                    actor.tell(SessionMsg::Close(closing));
                }
            }
        }
    }

    /// The connection of `generation` has gone: unless another took over,
    /// the actor ends the session (`for_good`) or starts the grace period.
    pub(crate) fn detach(&self, generation: u64, for_good: bool) {
        if self.outbox.detach(generation) {
            if let Some(actor) = self.actor.get() {
                actor.tell(SessionMsg::Detached {
                    generation,
                    for_good,
                });
            }
        }
    }

    /// Sends an `error` frame.
    pub(crate) fn fail(&self, id: Option<u64>, failure: Failure) {
        self.push(|seq| ServerFrame::Error {
            seq,
            id,
            code: failure.code,
            text: failure.text,
        });
    }

    pub(crate) fn dead_letter(&self, reason: DeadLetterReason, count: usize) {
        let system = &self.gateway.system;
        let Some(actor) = self.actor.get() else {
            return;
        };
        for _ in 0..count {
            system.dead_letter(actor.path(), "volley_web::ServerFrame", reason);
        }
    }
}

/// The actor of a session.
pub(crate) struct SessionActor {
    pub(crate) session: Arc<Session>,
}

impl SessionActor {
    fn forward(&self, msg: Result<Value, String>, frame: impl FnOnce(u64, Value) -> ServerFrame) {
        match msg {
            Ok(value) => self.session.push(|seq| frame(seq, value)),
            Err(e) => {
                tracing::debug!(session = %self.session.id, "a message to the client does not serialize: {e}");
                self.session.dead_letter(DeadLetterReason::Undeliverable, 1);
            }
        }
    }
}

impl Actor for SessionActor {
    type Msg = SessionMsg;

    fn handle(&mut self, ctx: &mut Context<Self>, msg: SessionMsg) -> HandleResult {
        let settings = &self.session.gateway.settings;
        match msg {
            SessionMsg::Push { to, msg } => self.forward(msg, |seq, msg| ServerFrame::Push {
                seq,
                to: to.to_string(),
                msg,
            }),
            SessionMsg::Publish { topic, msg } => self.forward(msg, |seq, msg| ServerFrame::Pub {
                seq,
                topic: topic.to_string(),
                msg,
            }),
            SessionMsg::Detached {
                generation,
                for_good,
            } => {
                if !self.session.outbox.detached_since(generation) {
                    return Ok(());
                }
                if for_good {
                    ctx.stop_self();
                } else {
                    let expired = SessionMsg::GraceExpired { generation };
                    ctx.schedule_once("grace", settings.resume_grace, expired);
                }
            }
            SessionMsg::GraceExpired { generation } => {
                if self.session.outbox.detached_since(generation) {
                    ctx.stop_self();
                }
            }
            SessionMsg::Answered { id, result } => match result {
                Ok(msg) => self.session.push(|seq| ServerFrame::Reply { seq, id, msg }),
                Err(failure) => self.session.fail(Some(id), failure),
            },
            SessionMsg::DropConnection => self.session.outbox.drop_connection(),
            SessionMsg::Close(closing) => {
                self.session.outbox.close(closing);
                ctx.stop_self();
            }
        }
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        let session = &self.session;
        session.outbox.close(Closing {
            code: 1000,
            reason: "the session has ended".into(),
        });
        let unsent = session.outbox.unsent();
        session.dead_letter(DeadLetterReason::RecipientTerminated, unsent);
        let subscriptions = std::mem::take(
            &mut *session
                .subscriptions
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for (_, subscription) in subscriptions {
            subscription.cancel();
        }
        session.gateway.forget(&session.id);
    }
}
