//! What a session does with each client frame, whatever the transport.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::frame::{ClientFrame, ErrorCode, ServerFrame};
use crate::service::{Failure, OnAnswer};
use crate::session::Session;

/// Handles one frame after the `hello`. Never blocks: an ask is sent and
/// its answer queued by its callback when it comes.
pub(crate) fn handle(session: &Arc<Session>, frame: ClientFrame) {
    match frame {
        ClientFrame::Hello { .. } => session.fail(
            None,
            Failure::new(ErrorCode::BadFrame, "hello is the first frame only"),
        ),
        ClientFrame::Tell { service, msg } => {
            if let Err(failure) = tell(session, &service, msg) {
                session.fail(None, failure);
            }
        }
        ClientFrame::Ask {
            id,
            service,
            msg,
            timeout_ms,
        } => ask(session, id, &service, msg, timeout_ms),
        ClientFrame::Sub { topic } => subscribe(session, topic),
        ClientFrame::Unsub { topic } => {
            let removed = session
                .subscriptions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&topic);
            if let Some(subscription) = removed {
                subscription.cancel();
            }
        }
        ClientFrame::Ack { seq } => session.outbox.ack(seq),
        ClientFrame::Ping { n } => session.outbox.push_control(&ServerFrame::Pong { n }),
        // The transport notes that the client answered; nothing else to do.
        ClientFrame::Pong { .. } => {}
    }
}

/// Runs a service's code (its message type's `Deserialize`, its `make`):
/// a panic there answers `internal` instead of ending the connection.
fn guarded<T>(service: &str, run: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    std::panic::catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|_| Err(panicked(service)))
}

pub(crate) fn panicked(service: &str) -> Failure {
    tracing::error!(service, "a web service's code panicked");
    Failure::new(
        ErrorCode::Internal,
        format!("the service {service:?} panicked"),
    )
}

fn unknown_service(service: &str) -> Failure {
    Failure::new(
        ErrorCode::UnknownService,
        format!("no service named {service:?}"),
    )
}

fn tell(session: &Session, service: &str, msg: serde_json::Value) -> Result<(), Failure> {
    let target = session
        .gateway
        .services
        .get(service)
        .ok_or_else(|| unknown_service(service))?;
    let client = session
        .client()
        .ok_or_else(|| Failure::new(ErrorCode::Internal, "session starting"))?;
    guarded(service, || target.tell(msg, client))
}

fn ask(
    session: &Arc<Session>,
    id: u64,
    service: &str,
    msg: serde_json::Value,
    timeout_ms: Option<u64>,
) {
    let settings = &session.gateway.settings;
    let Some(target) = session.gateway.services.get(service) else {
        return session.fail(Some(id), unknown_service(service));
    };
    let Some(client) = session.client() else {
        return session.fail(
            Some(id),
            Failure::new(ErrorCode::Internal, "session starting"),
        );
    };
    let timeout = timeout_ms
        .map(Duration::from_millis)
        .unwrap_or(settings.default_ask_timeout)
        .min(settings.max_ask_timeout);
    let open = session.open_asks.fetch_add(1, Ordering::AcqRel);
    if open >= settings.max_open_asks {
        session.open_asks.fetch_sub(1, Ordering::AcqRel);
        let text = format!("more than {} asks open", settings.max_open_asks);
        return session.fail(Some(id), Failure::new(ErrorCode::Overloaded, text));
    }
    // The answer is queued from the ask's callback, on the thread that
    // ends the ask (the service's, for a reply): no task waits for it.
    let asker = session.clone();
    let on_answer: OnAnswer = Box::new(move |result| answered(&asker, id, result));
    if let Err(failure) = guarded(service, || target.ask(msg, client, timeout, on_answer)) {
        session.open_asks.fetch_sub(1, Ordering::AcqRel);
        session.fail(Some(id), failure);
    }
}

/// What the service pushed before it replied reaches the client before
/// the reply ([`Session::answer`]).
fn answered(session: &Session, id: u64, result: Result<serde_json::Value, Failure>) {
    session.open_asks.fetch_sub(1, Ordering::AcqRel);
    session.answer(id, result);
}

fn subscribe(session: &Session, topic: String) {
    let Some(entry) = session.gateway.topics.get(&topic) else {
        let text = format!("no topic named {topic:?}");
        return session.fail(None, Failure::new(ErrorCode::UnknownTopic, text));
    };
    let Some(actor) = session.actor.get() else {
        return;
    };
    let mut subscriptions = session
        .subscriptions
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let std::collections::hash_map::Entry::Vacant(vacant) = subscriptions.entry(topic) {
        let name = Arc::from(vacant.key().as_str());
        vacant.insert(entry.subscribe(actor, session.via_actor.clone(), name));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use volley::{ActorSystem, ReplyTo, Settings};
    use volley_testkit::actor_fn;

    use crate::frame::{ClientFrame, Encoding};
    use crate::outbox::Taken;
    use crate::service::{Call, Reply};
    use crate::{WebGateway, WebSettings};

    /// The service runs on a pool and the test's current-thread runtime
    /// never yields: the answer is queued by the replier's thread, with
    /// no task of the gateway's runtime in between.
    #[tokio::test]
    async fn an_answer_is_queued_by_the_replier_with_no_task_in_between() {
        let settings = Settings {
            ask_spin: Duration::ZERO,
            ..Settings::default()
        };
        let system = ActorSystem::with_settings("inbound-test", settings).unwrap();
        let double = actor_fn(|_ctx, (call, reply_to): (Call<i64>, ReplyTo<Reply<i64>>)| {
            reply_to.tell(Ok(2 * call.msg));
            Ok(())
        });
        let double = system.spawn("double", double).unwrap();
        let gateway = WebGateway::builder(&system, WebSettings::default())
            .ask_service("double", double, |call, reply_to| (call, reply_to))
            .unwrap()
            .build();
        let hello = ClientFrame::Hello {
            v: crate::frame::PROTOCOL_VERSION,
            token: None,
            resume: None,
            last_seq: None,
        };
        let headers = http::HeaderMap::new();
        let session = gateway
            .open(&hello, &headers, Encoding::Json)
            .unwrap()
            .session;
        let (generation, _) = session.outbox.attach(None);
        let ask = ClientFrame::Ask {
            id: 7,
            service: "double".into(),
            msg: json!(21),
            timeout_ms: None,
        };
        super::handle(&session, ask);
        let mut got = Vec::new();
        volley_testkit::await_cond("the answer queued", || {
            if let Taken::Frames(frames) = session.outbox.take(generation) {
                got.extend(frames);
            }
            !got.is_empty()
        });
        let reply: serde_json::Value = serde_json::from_slice(&got[0]).unwrap();
        assert_eq!(
            (&reply["t"], &reply["id"], &reply["msg"]),
            (&json!("reply"), &json!(7), &json!(42))
        );
        assert_eq!(
            session.open_asks.load(std::sync::atomic::Ordering::Acquire),
            0
        );
    }
}
