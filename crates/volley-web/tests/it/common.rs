//! The test server (a counter, a log, a watcher and a topic behind a
//! gateway) and a WebSocket client.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use volley::{
    Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo, Settings, Terminated,
    Topic, TopicCommand,
};
use volley_web::{Call, Reply, ServiceError, WebGateway, WebGatewayBuilder, WebSettings};

/// How long a test waits for a frame.
pub fn patience() -> Duration {
    volley_testkit::default_timeout() * 2
}

/// What the test services saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The `log` service was told `msg` by a client of `identity`.
    Told {
        msg: String,
        identity: Option<String>,
    },
    /// The watcher watches the session.
    Watching(String),
    /// A watched session ended.
    Terminated,
}

/// The counter's commands.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cmd {
    Get,
    Add(i64),
    Push(Value),
    Drop,
    Never,
    Fail,
}

struct Counter {
    value: i64,
    unanswered: Vec<ReplyTo<Reply<i64>>>,
}

impl Actor for Counter {
    type Msg = (Call<Cmd>, ReplyTo<Reply<i64>>);

    fn handle(&mut self, _: &mut Context<Self>, (call, reply_to): Self::Msg) -> HandleResult {
        let answer = match call.msg {
            Cmd::Get => Ok(self.value),
            Cmd::Add(n) => {
                self.value += n;
                Ok(self.value)
            }
            Cmd::Push(msg) => {
                call.client.inbox::<Value>().tell(msg);
                Ok(self.value)
            }
            Cmd::Drop => {
                call.client.drop_connection();
                Ok(self.value)
            }
            Cmd::Never => {
                self.unanswered.push(reply_to);
                return Ok(());
            }
            Cmd::Fail => Err(ServiceError::new("nope", "failed on purpose")),
        };
        reply_to.tell(answer);
        Ok(())
    }
}

struct Log(mpsc::UnboundedSender<Event>);

impl Actor for Log {
    type Msg = Call<String>;
    fn handle(&mut self, _: &mut Context<Self>, call: Call<String>) -> HandleResult {
        let identity = call.client.identity().map(str::to_string);
        let _ = self.0.send(Event::Told {
            msg: call.msg,
            identity,
        });
        Ok(())
    }
}

struct Watcher(mpsc::UnboundedSender<Event>);

impl Actor for Watcher {
    type Msg = Call<()>;
    fn handle(&mut self, ctx: &mut Context<Self>, call: Call<()>) -> HandleResult {
        ctx.watch(&call.client.inbox::<Value>());
        let _ = self
            .0
            .send(Event::Watching(call.client.session_id().to_string()));
        Ok(())
    }
    fn on_terminated(&mut self, _: &mut Context<Self>, _: Terminated) -> HandleResult {
        let _ = self.0.send(Event::Terminated);
        Ok(())
    }
}

/// A gateway serving the test services on a port of its own.
pub struct Server {
    pub system: ActorSystem,
    pub gateway: WebGateway,
    pub addr: SocketAddr,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub news: ActorRef<TopicCommand<String>>,
}

impl Server {
    pub async fn start(settings: WebSettings) -> Server {
        Server::start_with(settings, |b| b).await
    }

    /// `extra` adds to the builder (an auth hook).
    pub async fn start_with(
        settings: WebSettings,
        extra: impl FnOnce(WebGatewayBuilder) -> WebGatewayBuilder,
    ) -> Server {
        let mut system_settings = Settings::default();
        system_settings.default_dispatcher.kind = volley::DispatcherKind::AppRuntime;
        let handle = tokio::runtime::Handle::current();
        let system = ActorSystem::with_runtime("web", system_settings, handle).unwrap();
        let (tx, events) = mpsc::unbounded_channel();
        let counter = system
            .spawn(
                "counter",
                Props::new(|| Counter {
                    value: 0,
                    unanswered: Vec::new(),
                }),
            )
            .unwrap();
        let log_tx = tx.clone();
        let log = system
            .spawn("log", Props::new(move || Log(log_tx.clone())))
            .unwrap();
        let watcher = system
            .spawn("watcher", Props::new(move || Watcher(tx.clone())))
            .unwrap();
        let news = system
            .spawn("news", Topic::props::<String>("news"))
            .unwrap();
        let builder = WebGateway::builder(&system, settings)
            .ask_service("counter", counter.clone(), |call, reply_to| {
                (call, reply_to)
            })
            .unwrap()
            .ask_service(
                "panicky_ask",
                counter,
                |_: Call<String>, _: ReplyTo<Reply<i64>>| panic!("on purpose"),
            )
            .unwrap()
            .tell_service("panicky", log.clone(), |_: Call<String>| {
                panic!("on purpose")
            })
            .unwrap()
            .tell_service("log", log, |call| call)
            .unwrap()
            .tell_service("watch", watcher, |call| call)
            .unwrap()
            .topic("news", news.clone())
            .unwrap();
        let gateway = extra(builder).build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(gateway.clone().serve(listener, std::future::pending()));
        Server {
            system,
            gateway,
            addr,
            events,
            news,
        }
    }

    pub async fn event(&mut self) -> Event {
        tokio::time::timeout(patience(), self.events.recv())
            .await
            .expect("no event in time")
            .expect("the services are gone")
    }

    /// Waits until the topic has `n` subscribers.
    pub async fn subscribers(&self, n: usize) {
        let news = self.news.clone();
        volley_testkit::eventually_async("the topic's subscribers", async || {
            let stats = news
                .ask(TopicCommand::GetTopicStats, patience())
                .await
                .ok()?;
            (stats.local_subscriber_count == n).then_some(())
        })
        .await
    }

    pub async fn connect(&self, query: &str) -> Ws {
        let url = format!("ws://{}/ws{query}", self.addr);
        Ws::open(url.into_client_request().unwrap()).await
    }

    /// A connected client that said hello; and its welcome.
    pub async fn client(&self) -> (Ws, Value) {
        let mut ws = self.connect("").await;
        let welcome = ws.hello(json!({"t": "hello", "v": 1})).await;
        (ws, welcome)
    }

    pub async fn stop(self) {
        self.system.terminate().await;
    }
}

/// A WebSocket client speaking JSON.
pub struct Ws {
    stream: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Ws {
    pub async fn open(request: http::Request<()>) -> Ws {
        let (stream, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        Ws { stream }
    }

    /// A client whose socket takes at most `receive_buffer` bytes it has
    /// not read (the kernel does not grow it): for tests of a client that
    /// stops reading, so that the server's writes back up soon.
    pub async fn open_unread(addr: SocketAddr, receive_buffer: u32) -> Ws {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(receive_buffer).unwrap();
        let tcp = socket.connect(addr).await.unwrap();
        let request = format!("ws://{addr}/ws").into_client_request().unwrap();
        let (stream, _) = tokio_tungstenite::client_async(request, MaybeTlsStream::Plain(tcp))
            .await
            .unwrap();
        Ws { stream }
    }

    pub async fn send(&mut self, frame: Value) {
        self.send_text(&frame.to_string()).await;
    }

    pub async fn send_text(&mut self, text: &str) {
        self.stream.send(Message::text(text)).await.unwrap();
    }

    /// Sends `message` as it is: a raw frame, a ping, anything.
    pub async fn send_message(&mut self, message: Message) {
        self.stream.send(message).await.unwrap();
    }

    /// The WebSocket stream, for a test that stops reading it.
    pub fn into_stream(self) -> WebSocketStream<MaybeTlsStream<TcpStream>> {
        self.stream
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.stream.send(Message::binary(bytes)).await.unwrap();
    }

    /// Says hello and returns the welcome.
    pub async fn hello(&mut self, hello: Value) -> Value {
        self.send(hello).await;
        let welcome = self.next().await;
        assert_eq!(welcome["t"], "welcome", "{welcome}");
        welcome
    }

    /// The next WebSocket message that is not a WebSocket-level ping.
    pub async fn message(&mut self) -> Message {
        loop {
            let next = tokio::time::timeout(patience(), self.stream.next()).await;
            match next.expect("no frame in time") {
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(message)) => return message,
                other => panic!("the connection ended: {other:?}"),
            }
        }
    }

    /// The next frame, decoded.
    pub async fn next(&mut self) -> Value {
        match self.message().await {
            Message::Text(text) => serde_json::from_str(&text).unwrap(),
            Message::Binary(bytes) => rmp_serde::from_slice(&bytes).unwrap(),
            other => panic!("not a frame: {other:?}"),
        }
    }

    /// Reads until the server closes; its close code and reason.
    pub async fn closed(&mut self) -> (u16, String) {
        loop {
            if let Message::Close(frame) = self.message().await {
                let frame = frame.expect("a close frame with a code");
                return (u16::from(frame.code), frame.reason.to_string());
            }
        }
    }

    /// Closes with `code`.
    pub async fn close(mut self, code: u16) {
        let frame = CloseFrame {
            code: code.into(),
            reason: "bye".into(),
        };
        let _ = self.stream.close(Some(frame)).await;
        // Reads the server's answering close, so the close is seen.
        while let Ok(Some(Ok(_))) = tokio::time::timeout(patience(), self.stream.next()).await {}
    }
}
