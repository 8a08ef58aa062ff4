//! gRPC client calls made from inside an actor: the actor starts a tonic
//! call with `ctx.pipe_to` and gets its outcome, reply or status, as a
//! message; it never blocks, and goes on handling other messages while
//! the call is in flight.

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
        /// tonic's `set_timeout`: the `grpc-timeout` header, and a timer
        /// in the client too.
        deadline: Option<Duration>,
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
            Msg::Call {
                text,
                deadline,
                reply_to,
            } => {
                // A channel is cheap to clone; the call runs on the
                // system's runtime, the actor is free meanwhile.
                let call = unary(self.channel.clone(), text, deadline);
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

async fn unary(
    channel: Channel,
    text: String,
    deadline: Option<Duration>,
) -> Result<String, Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let mut request = Request::new(Ping { text });
    if let Some(t) = deadline {
        request.set_timeout(t);
    }
    let codec = tonic_prost::ProstCodec::<Ping, Ping>::default();
    let path = http::uri::PathAndQuery::from_static("/test.Svc/Echo");
    grpc.unary(request, path, codec)
        .await
        .map(|r| r.into_inner().text)
}

struct Setup {
    _system: ActorSystem,
    caller: ActorRef<Msg>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// A gateway serving `/test.Svc/Echo`, and a caller actor whose channel
/// goes to it, or to `port` if given.
async fn setup(port: Option<u16>) -> Setup {
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gateway_port = listener.local_addr().unwrap().port();
    let (stop, stop_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(volley_grpc::serve(listener, gateway, async {
        let _ = stop_rx.await;
    }));
    let uri = format!("http://127.0.0.1:{}", port.unwrap_or(gateway_port));
    // Lazy: a channel to a closed port is made all the same, and its calls
    // fail UNAVAILABLE.
    let channel = Endpoint::from_shared(uri).unwrap().connect_lazy();
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
        _stop: stop,
    }
}

async fn call(s: &Setup, text: &str, deadline: Option<Duration>) -> Result<String, Status> {
    let text = text.to_string();
    s.caller
        .ask(
            |reply_to| Msg::Call {
                text,
                deadline,
                reply_to,
            },
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
    let s = setup(None).await;
    assert_eq!(call(&s, "hello", None).await.unwrap(), "hello");
    assert_eq!(answers(&s).await, 1);
}

#[tokio::test]
async fn the_actor_goes_on_while_a_call_is_in_flight() {
    let s = setup(None).await;
    let held = tokio::spawn({
        let caller = s.caller.clone();
        async move {
            caller
                .ask(
                    |reply_to| Msg::Call {
                        text: "hold".into(),
                        deadline: None,
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
    assert_eq!(call(&s, "meanwhile", None).await.unwrap(), "meanwhile");
    // The server's deadline comes back as a status message.
    let e = held.await.unwrap().unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert_eq!(answers(&s).await, 2);
}

/// tonic's own timer (`set_timeout`, or the `grpc-timeout` header, which
/// it reads too) ends a call CANCELLED ("Timeout expired"), not
/// DEADLINE_EXCEEDED, when it fires before the server answers.
#[tokio::test]
async fn the_clients_own_deadline_is_cancelled() {
    let s = setup(None).await;
    let e = call(&s, "hold", Some(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Cancelled, "{e:?}");
    assert!(e.message().contains("Timeout expired"), "{e:?}");
}

#[tokio::test]
async fn a_closed_port_is_unavailable() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let s = setup(Some(closed)).await;
    let e = call(&s, "hello", None).await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert_eq!(answers(&s).await, 1);
}
