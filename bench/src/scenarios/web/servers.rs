//! The servers `web` loads, each run as `volley-bench web-server KIND PORT`
//! in a process of its own: volley's gateway (`volley`) and the bare axum
//! echo server (`echo`, [`super::echo`]). Both answer the same asks to the
//! service `counter` (`{"add": n}`, answered with the new value).

use serde::Deserialize;
use volley::{
    Actor, ActorRef, ActorSystem, Context, DispatcherKind, HandleResult, Props, ReplyTo, Settings,
    Topic, TopicCommand,
};
use volley_web::{Call, Reply, WebGateway, WebSettings};

/// The hidden subcommand's name.
pub const SERVER_COMMAND: &str = "web-server";

/// The ask service both servers offer.
pub const COUNTER: &str = "counter";
/// The gateway's topic that the push clients subscribe to.
pub const FEED: &str = "feed";
/// The gateway's ask service that publishes `n` messages on [`FEED`].
pub const PUSHER: &str = "pusher";

/// What clients ask the counter.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterCmd {
    Get,
    Add(i64),
}

impl CounterCmd {
    /// The value after the command.
    pub fn apply(self, value: &mut i64) -> i64 {
        if let CounterCmd::Add(n) = self {
            *value = value.saturating_add(n);
        }
        *value
    }
}

struct Counter(i64);

impl Actor for Counter {
    type Msg = (Call<CounterCmd>, ReplyTo<Reply<i64>>);
    fn handle(&mut self, _: &mut Context<Self>, (call, reply_to): Self::Msg) -> HandleResult {
        reply_to.tell(Ok(call.msg.apply(&mut self.0)));
        Ok(())
    }
}

/// Publishes `n` numbered messages on the feed, then answers `n`.
struct Pusher(ActorRef<TopicCommand<u64>>);

impl Actor for Pusher {
    type Msg = (Call<u64>, ReplyTo<Reply<u64>>);
    fn handle(&mut self, _: &mut Context<Self>, (call, reply_to): Self::Msg) -> HandleResult {
        for i in 0..call.msg {
            self.0.tell(TopicCommand::Publish(i));
        }
        reply_to.tell(Ok(call.msg));
        Ok(())
    }
}

/// Serves `args[0]` (`volley`, `echo`) on 127.0.0.1:`args[1]` until stdin
/// closes.
pub fn serve(args: &[String]) -> crate::Result<()> {
    let [kind, port] = args else {
        return Err("usage: web-server KIND PORT".into());
    };
    let port: u16 = port.parse()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let stop = super::super::grpc::servers::stdin_closed();
        match kind.as_str() {
            "volley" => {
                // The system lives as long as the gateway serves.
                let (_system, gateway) = gateway()?;
                println!("ready");
                gateway.serve(listener, stop).await?;
            }
            "echo" => {
                println!("ready");
                axum::serve(listener, super::echo::router())
                    .with_graceful_shutdown(stop)
                    .await?;
            }
            other => return Err(format!("unknown server {other:?}").into()),
        }
        Ok(())
    })
}

/// The counter, the feed and its pusher behind a gateway with default
/// settings, on this runtime with the `app-runtime` dispatcher.
fn gateway() -> crate::Result<(ActorSystem, WebGateway)> {
    let settings = Settings {
        default_dispatcher: volley::DispatcherSettings {
            kind: DispatcherKind::AppRuntime,
            ..volley::DispatcherSettings::default()
        },
        ..Settings::default()
    };
    let system =
        ActorSystem::with_runtime("web-bench", settings, tokio::runtime::Handle::current())?;
    let counter = system.spawn("counter", Props::new(|| Counter(0)))?;
    let feed = system.spawn("feed", Topic::props::<u64>(FEED))?;
    let topic = feed.clone();
    let pusher = system.spawn("pusher", Props::new(move || Pusher(topic.clone())))?;
    let gateway = WebGateway::builder(&system, WebSettings::default())
        .ask_service(COUNTER, counter, |call, reply_to| (call, reply_to))?
        .ask_service(PUSHER, pusher, |call, reply_to| (call, reply_to))?
        .topic(FEED, feed)?
        .build();
    Ok((system, gateway))
}
