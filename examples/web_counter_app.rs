//! A counter actor shared by browser tabs through the web gateway
//! (`volley-web`): the actor, the gateway's services and topic, and the
//! static page directory, shared by the `web_counter` example and its
//! tests (the Rust ones, and the TypeScript client's).
//!
//! What the server offers (stable: the TypeScript tests rely on it):
//! - `GET /ws?enc=json|msgpack`, `/lp/open|send|recv|close`: the gateway
//!   (docs/web-protocol.md), default settings but for those the command
//!   line sets.
//! - service `counter` (asks), with messages `"get"`, `{"add": n}` (n an
//!   integer), `{"push": any}` (the counter pushes `any` to the asking
//!   client's `"inbox"` actor, then replies) and `"drop"` (the server drops
//!   the client's connection, keeping its session, then replies); each
//!   answered with the counter's value, an integer.
//! - service `counter_tell` (tells), the same messages, no answer.
//! - topic `counter`: the new value after each `add`.
//! - every other path: the files of the page directory (`/` is
//!   `index.html`).

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use volley::{
    Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo, Topic, TopicCommand,
};
use volley_web::{Call, Reply, WebGateway, WebGatewayError, WebSettings};

/// What a client sends the counter.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterCmd {
    /// Answers the value.
    Get,
    /// Adds `n` (negative subtracts) and publishes the new value.
    Add(i64),
    /// Pushes the value given to the client's `"inbox"` actor.
    Push(Value),
    /// Drops the client's connection; its session stays, to be resumed.
    Drop,
}

/// The counter's protocol.
pub enum CounterMsg {
    /// An ask from a client.
    Ask(Call<CounterCmd>, ReplyTo<Reply<i64>>),
    /// A tell from a client.
    Tell(Call<CounterCmd>),
}

/// The counter: one value, every change published on its topic.
pub struct Counter {
    value: i64,
    topic: ActorRef<TopicCommand<i64>>,
}

impl Counter {
    fn apply(&mut self, call: Call<CounterCmd>) -> i64 {
        match call.msg {
            CounterCmd::Get => {}
            CounterCmd::Add(n) => {
                self.value = self.value.saturating_add(n);
                self.topic.tell(TopicCommand::Publish(self.value));
            }
            CounterCmd::Push(msg) => call.client.inbox::<Value>().tell(msg),
            CounterCmd::Drop => call.client.drop_connection(),
        }
        self.value
    }
}

impl Actor for Counter {
    type Msg = CounterMsg;

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: CounterMsg) -> HandleResult {
        match msg {
            CounterMsg::Ask(call, reply_to) => reply_to.tell(Ok(self.apply(call))),
            CounterMsg::Tell(call) => {
                self.apply(call);
            }
        }
        Ok(())
    }
}

/// Spawns the counter and its topic, and builds the gateway over them.
pub fn gateway(
    system: &ActorSystem,
    settings: WebSettings,
) -> Result<WebGateway, Box<dyn std::error::Error>> {
    let topic = system.spawn("counter-topic", Topic::props::<i64>("counter"))?;
    let counter_topic = topic.clone();
    let counter = system.spawn(
        "counter",
        Props::new(move || Counter {
            value: 0,
            topic: counter_topic.clone(),
        }),
    )?;
    let gateway = build(system, settings, counter, topic)?;
    Ok(gateway)
}

fn build(
    system: &ActorSystem,
    settings: WebSettings,
    counter: ActorRef<CounterMsg>,
    topic: ActorRef<TopicCommand<i64>>,
) -> Result<WebGateway, WebGatewayError> {
    Ok(WebGateway::builder(system, settings)
        .ask_service("counter", counter.clone(), CounterMsg::Ask)?
        .tell_service("counter_tell", counter, CounterMsg::Tell)?
        .topic("counter", topic)?
        .build())
}

/// The gateway's routes, and the files of `pages` for every other path.
pub fn routes(gateway: &WebGateway, pages: PathBuf) -> axum::Router {
    let pages = Arc::new(pages);
    gateway
        .router()
        .fallback(move |uri: Uri| static_file(pages.clone(), uri))
}

/// The page directory beside this file.
pub fn default_pages() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("web_counter")
}

async fn static_file(pages: Arc<PathBuf>, uri: Uri) -> Response {
    let relative = uri.path().trim_start_matches('/');
    let relative = if relative.is_empty() {
        "index.html"
    } else {
        relative
    };
    // Plain names only: no `..`, no absolute paths.
    let safe = Path::new(relative)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if !safe {
        return StatusCode::NOT_FOUND.into_response();
    }
    let path = pages.join(relative);
    let read = tokio::task::spawn_blocking({
        let path = path.clone();
        move || std::fs::read(path)
    });
    match read.await {
        Ok(Ok(bytes)) => ([(header::CONTENT_TYPE, content_type(&path))], bytes).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}
