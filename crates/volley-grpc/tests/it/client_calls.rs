//! gRPC client calls made from inside an actor: the actor starts a tonic
//! call with `ctx.pipe_to` and gets its outcome, reply or status, as a
//! message; it never blocks, and goes on handling other messages while
//! the call is in flight.

use crate::common;

use std::time::Duration;

use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Status};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo};
use volley_grpc::{Gateway, GatewaySettings, Reply};

#[derive(Clone, PartialEq, prost::Message)]
struct Ping {
    #[prost(string, tag = "1")]
    text: String,
}

/// The server's side: echoes, or keeps the reply handle (`hold`).
struct Echo {
    held: Vec<ReplyTo<Reply<Ping>>>,
}

impl Actor for Echo {
    type Msg = (Ping, ReplyTo<Reply<Ping>>);
    fn handle(&mut self, _: &mut Context<Self>, (ping, reply_to): Self::Msg) -> HandleResult {
        if ping.text == "hold" {
            self.held.push(reply_to);
        } else {
            reply_to.tell(Ok(ping));
        }
        Ok(())
    }
}

enum Msg {
    Call {
        text: String,
        reply_to: ReplyTo<Result<String, Status>>,
    },
    /// A call's outcome, from `pipe_to`.
    Answered {
        result: Result<String, Status>,
        reply_to: ReplyTo<Result<String, Status>>,
    },
    /// How many calls were answered so far.
    Answers(ReplyTo<usize>),
}

/// The actor that calls out.
struct Caller {
    channel: Channel,
    answered: usize,
}

impl Actor for Caller {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Call { text, reply_to } => {
                // A channel is cheap to clone; the call runs on the
                // system's runtime, the actor is free meanwhile.
                let call = unary(self.channel.clone(), text);
                ctx.pipe_to(call, move |result| Msg::Answered { result, reply_to });
            }
            Msg::Answered { result, reply_to } => {
                self.answered += 1;
                reply_to.tell(result);
            }
            Msg::Answers(reply_to) => reply_to.tell(self.answered),
        }
        Ok(())
    }
}

async fn unary(channel: Channel, text: String) -> Result<String, Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let request = Request::new(Ping { text });
    let codec = tonic_prost::ProstCodec::<Ping, Ping>::default();
    let path = http::uri::PathAndQuery::from_static("/test.Svc/Echo");
    grpc.unary(request, path, codec)
        .await
        .map(|r| r.into_inner().text)
}

struct Setup {
    _system: ActorSystem,
    caller: ActorRef<Msg>,
    _served: common::Served,
}

/// A gateway serving `/test.Svc/Echo`, and a caller actor whose channel
/// goes to it, or to `port` if given, with tonic's own `timeout` if given.
async fn setup(port: Option<u16>, timeout: Option<Duration>) -> Setup {
    let system = ActorSystem::new("grpc-client-test").unwrap();
    let echo = system
        .spawn("echo", Props::new(|| Echo { held: Vec::new() }))
        .unwrap();
    // The server's deadline for calls that set none.
    let settings = GatewaySettings {
        default_timeout: Duration::from_secs(1),
        ..GatewaySettings::default()
    };
    let gateway = Gateway::builder(&system, settings)
        .unary("/test.Svc/Echo", echo, |p: Ping, r| (p, r))
        .unwrap()
        .build();
    let served = common::Served::start(gateway).await;
    let endpoint = match port {
        Some(port) => Endpoint::from_shared(format!("http://127.0.0.1:{port}")).unwrap(),
        None => served.endpoint(),
    };
    // Lazy: a channel to a closed port is made all the same, and its calls
    // fail UNAVAILABLE.
    let endpoint = match timeout {
        Some(timeout) => endpoint.timeout(timeout),
        None => endpoint,
    };
    let channel = endpoint.connect_lazy();
    let caller = system
        .spawn(
            "caller",
            Props::new(move || Caller {
                channel: channel.clone(),
                answered: 0,
            }),
        )
        .unwrap();
    Setup {
        _system: system,
        caller,
        _served: served,
    }
}

async fn call(s: &Setup, text: &str) -> Result<String, Status> {
    let text = text.to_string();
    s.caller
        .ask(
            |reply_to| Msg::Call { text, reply_to },
            Duration::from_secs(30),
        )
        .await
        .unwrap()
}

async fn answers(s: &Setup) -> usize {
    s.caller
        .ask(Msg::Answers, Duration::from_secs(30))
        .await
        .unwrap()
}

#[tokio::test]
async fn the_reply_comes_back_as_a_message() {
    let s = setup(None, None).await;
    assert_eq!(call(&s, "hello").await.unwrap(), "hello");
    assert_eq!(answers(&s).await, 1);
}

#[tokio::test]
async fn the_actor_goes_on_while_a_call_is_in_flight() {
    let s = setup(None, None).await;
    let held = tokio::spawn({
        let caller = s.caller.clone();
        async move {
            caller
                .ask(
                    |reply_to| Msg::Call {
                        text: "hold".into(),
                        reply_to,
                    },
                    Duration::from_secs(30),
                )
                .await
                .unwrap()
        }
    });
    // Handled after the held call started, before it ended.
    assert_eq!(answers(&s).await, 0);
    assert_eq!(call(&s, "meanwhile").await.unwrap(), "meanwhile");
    // The server's deadline comes back as a status message.
    let e = held.await.unwrap().unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert_eq!(answers(&s).await, 2);
}

/// tonic's own timer (`Endpoint::timeout` here: it sends no header, so
/// the server's 1 s deadline cannot come first) ends a call CANCELLED
/// ("Timeout expired"), not DEADLINE_EXCEEDED.
#[tokio::test]
async fn the_clients_own_deadline_is_cancelled() {
    let s = setup(None, Some(Duration::from_millis(200))).await;
    let e = call(&s, "hold").await.unwrap_err();
    assert_eq!(e.code(), Code::Cancelled, "{e:?}");
    assert!(e.message().contains("Timeout expired"), "{e:?}");
}

#[tokio::test]
async fn a_closed_port_is_unavailable() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let s = setup(Some(closed), None).await;
    let e = call(&s, "hello").await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert_eq!(answers(&s).await, 1);
}
