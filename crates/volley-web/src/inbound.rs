//! What a session does with each client frame, whatever the transport.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;

use crate::frame::{ClientFrame, ErrorCode, ServerFrame};
use crate::service::{AskFuture, Failure};
use crate::session::Session;

/// Handles one frame after the `hello`. Never blocks: an ask runs in a
/// task of its own and its answer is queued when it comes.
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

fn panicked(service: &str) -> Failure {
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
    let answer = match guarded(service, || target.ask(msg, client, timeout)) {
        Ok(answer) => answer,
        Err(failure) => {
            session.open_asks.fetch_sub(1, Ordering::AcqRel);
            return session.fail(Some(id), failure);
        }
    };
    send_ask(session, id, service, answer);
}

/// Sends the ask now (its first poll sends it: asks and tells reach their
/// services in the order of the client's frames), and hands its answer to
/// the session actor when it comes.
fn send_ask(session: &Arc<Session>, id: u64, service: &str, answer: AskFuture) {
    let name = service.to_string();
    let mut answer = Box::pin(async move {
        AssertUnwindSafe(answer)
            .catch_unwind()
            .await
            .unwrap_or_else(|_| Err(panicked(&name)))
    });
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if let std::task::Poll::Ready(result) = std::future::Future::poll(answer.as_mut(), &mut cx) {
        return answered(session, id, result);
    }
    let session = session.clone();
    tokio::spawn(async move {
        let result = answer.await;
        answered(&session, id, result);
    });
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
