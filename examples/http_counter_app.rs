//! The http_counter example's service: an HTTP API whose handlers ask a
//! counter actor. The actor runs on the application's tokio runtime (the
//! `app-runtime` dispatcher), so a request's ask never leaves the thread
//! that serves it.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo, Settings};

/// How long a handler waits for the actor before answering 503.
const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// The counter's protocol.
pub enum CounterMsg {
    /// Adds to the count and answers the new count.
    Add(u64, ReplyTo<u64>),
    /// Answers the count.
    Get(ReplyTo<u64>),
}

/// Keeps one count.
#[derive(Default)]
pub struct Counter {
    count: u64,
}

impl Actor for Counter {
    type Msg = CounterMsg;

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: CounterMsg) -> HandleResult {
        match msg {
            CounterMsg::Add(n, reply) => {
                self.count = self.count.saturating_add(n);
                reply.tell(self.count);
            }
            CounterMsg::Get(reply) => reply.tell(self.count),
        }
        Ok(())
    }
}

/// Settings whose default dispatcher runs actors on the system's runtime.
pub fn settings() -> Settings {
    let mut settings = Settings::default();
    settings.default_dispatcher.kind = volley::DispatcherKind::AppRuntime;
    settings
}

/// Starts an actor system on the current tokio runtime, with the counter.
pub fn start() -> Result<(ActorSystem, ActorRef<CounterMsg>), Box<dyn std::error::Error>> {
    let system = ActorSystem::with_runtime(
        "http-counter",
        settings(),
        tokio::runtime::Handle::current(),
    )?;
    let counter = system.spawn("counter", Props::new(Counter::default))?;
    Ok((system, counter))
}

/// The routes: `GET /count` and `POST /add/{n}`, each answering the count
/// as text.
pub fn routes(counter: ActorRef<CounterMsg>) -> axum::Router {
    axum::Router::new()
        .route("/count", get(count))
        .route("/add/{n}", post(add))
        .with_state(counter)
}

async fn count(State(counter): State<ActorRef<CounterMsg>>) -> (StatusCode, String) {
    answer(counter.ask(CounterMsg::Get, ASK_TIMEOUT).await)
}

async fn add(
    State(counter): State<ActorRef<CounterMsg>>,
    Path(n): Path<u64>,
) -> (StatusCode, String) {
    answer(counter.ask(|r| CounterMsg::Add(n, r), ASK_TIMEOUT).await)
}

/// The count, or 503 with the reason when the actor did not answer.
fn answer(outcome: Result<u64, volley::AskError>) -> (StatusCode, String) {
    match outcome {
        Ok(count) => (StatusCode::OK, count.to_string()),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}
