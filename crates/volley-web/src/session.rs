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
use crate::outbox::{Closing, Grace, Left, Outbox, Pushed};
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
    /// The grace timer: the session ends if no connection came since
    /// the last one left, a grace period ago.
    GraceExpired,
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
    /// What services sent the client through the actor's mailbox and the
    /// actor has not handled yet (pushes, topic messages, answers behind
    /// them, dropped connections); see [`Session::answer`].
    pub(crate) via_actor: Arc<AtomicUsize>,
    pub(crate) actor: OnceLock<ActorRef<SessionMsg>>,
}

impl Session {
    /// The session's handle for services.
    pub(crate) fn client(&self) -> Option<ClientRef> {
        Some(ClientRef {
            session: self.id.clone(),
            identity: self.identity.clone(),
            actor: self.actor.get()?.clone(),
            via_actor: self.via_actor.clone(),
        })
    }

    /// Queues the answer to the client's ask `id`. Whatever the service
    /// sent the client before it replied is counted in `via_actor` from
    /// the moment it was sent until the actor has handled it: when nothing
    /// is counted, the reply goes into the outbox at once, and when
    /// something is, it follows it through the actor's mailbox.
    pub(crate) fn answer(&self, id: u64, result: Result<Value, Failure>) {
        if self.via_actor.load(Ordering::Acquire) == 0 {
            return self.queue_answer(id, result);
        }
        if let Some(actor) = self.actor.get() {
            self.via_actor.fetch_add(1, Ordering::AcqRel);
            actor.tell(SessionMsg::Answered { id, result });
        }
    }

    fn queue_answer(&self, id: u64, result: Result<Value, Failure>) {
        match result {
            Ok(msg) => self.push(|seq| ServerFrame::Reply { seq, id, msg }),
            Err(failure) => self.fail(Some(id), failure),
        }
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
            Pushed::Ended => self.dead_letter(DeadLetterReason::RecipientTerminated, 1),
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
    /// the actor ends the session (`for_good`) or starts the grace period
    /// (unless its timer runs already).
    pub(crate) fn detach(&self, generation: u64, for_good: bool) {
        let tell = match self.outbox.detach(generation) {
            Left::Replaced => false,
            Left::GraceRunning => for_good,
            Left::StartGrace => true,
        };
        if let (true, Some(actor)) = (tell, self.actor.get()) {
            actor.tell(SessionMsg::Detached {
                generation,
                for_good,
            });
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
            SessionMsg::Push { to, msg } => {
                self.forward(msg, |seq, msg| ServerFrame::Push {
                    seq,
                    to: to.to_string(),
                    msg,
                });
                self.session.via_actor.fetch_sub(1, Ordering::AcqRel);
            }
            SessionMsg::Publish { topic, msg } => {
                self.forward(msg, |seq, msg| ServerFrame::Pub {
                    seq,
                    topic: topic.to_string(),
                    msg,
                });
                self.session.via_actor.fetch_sub(1, Ordering::AcqRel);
            }
            SessionMsg::Answered { id, result } => {
                self.session.queue_answer(id, result);
                self.session.via_actor.fetch_sub(1, Ordering::AcqRel);
            }
            SessionMsg::Detached {
                generation,
                for_good,
            } => {
                if for_good {
                    if self.session.outbox.detached_since(generation) {
                        ctx.stop_self();
                    }
                } else {
                    // Even if a connection came back meanwhile: the timer
                    // then finds it attached and disarms.
                    let grace = settings.resume_grace;
                    ctx.schedule_once("grace", grace, SessionMsg::GraceExpired);
                }
            }
            SessionMsg::GraceExpired => {
                match self.session.outbox.grace_check(settings.resume_grace) {
                    Grace::Attached => {}
                    Grace::Expired => ctx.stop_self(),
                    Grace::Wait(left) => ctx.schedule_once("grace", left, SessionMsg::GraceExpired),
                }
            }
            SessionMsg::DropConnection => {
                self.session.outbox.drop_connection();
                self.session.via_actor.fetch_sub(1, Ordering::AcqRel);
            }
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

#[cfg(test)]
mod tests {
    use serde_json::json;
    use volley::{ActorSystem, DispatcherKind, Settings};

    use crate::frame::{ClientFrame, Encoding};
    use crate::outbox::Taken;
    use crate::{WebGateway, WebSettings};

    /// A session on a current-thread runtime: its actor runs only when
    /// the test yields.
    fn session() -> (ActorSystem, std::sync::Arc<super::Session>) {
        let mut settings = Settings::default();
        settings.default_dispatcher.kind = DispatcherKind::AppRuntime;
        let handle = tokio::runtime::Handle::current();
        let system = ActorSystem::with_runtime("session-test", settings, handle).unwrap();
        let gateway = WebGateway::builder(&system, WebSettings::default()).build();
        let hello = ClientFrame::Hello {
            v: crate::frame::PROTOCOL_VERSION,
            token: None,
            resume: None,
            last_seq: None,
        };
        let opened = gateway
            .open(&hello, &http::HeaderMap::new(), Encoding::Json)
            .unwrap();
        (system, opened.session)
    }

    fn frames(taken: Taken) -> Vec<serde_json::Value> {
        let Taken::Frames(frames) = taken else {
            panic!("{taken:?}")
        };
        frames
            .iter()
            .map(|f| serde_json::from_slice(f).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn an_answer_with_nothing_ahead_of_it_is_queued_at_once() {
        let (_system, session) = session();
        let (generation, _) = session.outbox.attach(None);
        session.answer(7, Ok(json!(1)));
        // No yield: the session actor has not run.
        let got = frames(session.outbox.take(generation));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((&got[0]["t"], &got[0]["id"]), (&json!("reply"), &json!(7)));
    }

    #[tokio::test]
    async fn an_answer_follows_what_was_pushed_before_it() {
        let (_system, session) = session();
        let (generation, _) = session.outbox.attach(None);
        session.client().unwrap().inbox::<&str>().tell("first");
        session.answer(7, Ok(json!(1)));
        assert!(frames(session.outbox.take(generation)).is_empty());
        volley_testkit::eventually("the actor queues both", || {
            session.via_actor.load(std::sync::atomic::Ordering::Acquire) == 0
        })
        .await;
        let got = frames(session.outbox.take(generation));
        let kinds: Vec<_> = got.iter().map(|f| f["t"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["push", "reply"], "{got:?}");
        // Nothing ahead any more: the next answer is queued at once.
        session.answer(8, Ok(json!(2)));
        assert_eq!(frames(session.outbox.take(generation)).len(), 1);
    }
}
