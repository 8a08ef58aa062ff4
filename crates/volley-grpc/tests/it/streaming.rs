//! Server-streaming methods called by tonic's client over real HTTP/2:
//! order, statuses, every `Full` answered by a `ready`, a dropped stream
//! and the deadline. Cancellation and stalled clients: stream_cancel.rs.

use crate::common;
use common::wait_for;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use volley::{Actor, ActorSystem, Context, HandleResult, Props};
use volley_grpc::{Call, Gateway, GatewaySettings, ResponseStream, StreamSendError};

#[derive(Clone, PartialEq, prost::Message)]
struct Ping {
    #[prost(string, tag = "1")]
    text: String,
}

enum Msg {
    Start(Ping, ResponseStream<Ping>),
    Ready,
    Closed,
}

/// What the flooding actor saw.
#[derive(Default, Debug, Clone)]
struct Seen {
    sent: usize,
    full: usize,
    ready: usize,
    closed: usize,
    send_closed: usize,
}

const FLOOD: usize = 200;

struct Streamer {
    seen: Arc<Mutex<Seen>>,
    flood: Option<ResponseStream<Ping>>,
    held: Vec<ResponseStream<Ping>>,
}

impl Streamer {
    /// Sends until the buffer is full, the flood is over or the call is.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        let Some(stream) = self.flood.take() else {
            return;
        };
        loop {
            let mut seen = self.seen.lock().unwrap();
            if seen.sent == FLOOD {
                drop(seen);
                stream.finish(Ok(()));
                return;
            }
            let ping = Ping {
                text: seen.sent.to_string(),
            };
            match stream.try_send(&ping) {
                Ok(()) => seen.sent += 1,
                Err(StreamSendError::Full) => {
                    seen.full += 1;
                    drop(seen);
                    stream.notify_when_ready(&ctx.myself(), Msg::Ready, Msg::Closed);
                    self.flood = Some(stream);
                    return;
                }
                Err(StreamSendError::Closed) => {
                    seen.send_closed += 1;
                    return;
                }
            }
        }
    }
}

impl Actor for Streamer {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Start(ping, stream) => match ping.text.as_str() {
                "empty" => stream.finish(Ok(())),
                "err" => {
                    for i in 0..2 {
                        let _ = stream.try_send(&Ping {
                            text: i.to_string(),
                        });
                    }
                    stream.finish(Err(Status::aborted("stopped after two")));
                }
                "drop" => drop(stream),
                "hold" => self.held.push(stream),
                "flood" => {
                    stream.notify_when_closed(&ctx.myself(), Msg::Closed);
                    self.flood = Some(stream);
                    self.pump(ctx);
                }
                n => {
                    let n: usize = n.parse().unwrap_or(0);
                    for i in 0..n {
                        stream
                            .try_send(&Ping {
                                text: i.to_string(),
                            })
                            .unwrap();
                    }
                    stream.finish(Ok(()));
                }
            },
            Msg::Ready => {
                self.seen.lock().unwrap().ready += 1;
                self.pump(ctx);
            }
            Msg::Closed => self.seen.lock().unwrap().closed += 1,
        }
        Ok(())
    }
}

/// Streams back the request's `x-tag` values, then whether it saw any
/// reserved header among the metadata.
struct MetadataEcho;

impl Actor for MetadataEcho {
    type Msg = (Call<Ping>, ResponseStream<Ping>);
    fn handle(&mut self, _: &mut Context<Self>, (call, stream): Self::Msg) -> HandleResult {
        for tag in call.metadata.get_all("x-tag") {
            let text = tag.to_str().unwrap_or("?").to_string();
            stream.try_send(&Ping { text }).unwrap();
        }
        let reserved = call.metadata.keys().any(|k| match k {
            tonic::metadata::KeyRef::Ascii(k) => k.as_str().starts_with("grpc-"),
            tonic::metadata::KeyRef::Binary(k) => k.as_str().starts_with("grpc-"),
        });
        let text = format!("{}:{reserved}", call.message.text);
        stream.try_send(&Ping { text }).unwrap();
        stream.finish(Ok(()));
        Ok(())
    }
}

struct Server {
    _system: ActorSystem,
    channel: Channel,
    seen: Arc<Mutex<Seen>>,
    _served: common::Served,
}

async fn server(settings: GatewaySettings) -> Server {
    let system = ActorSystem::new("grpc-stream-test").unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s = seen.clone();
    let streamer = system
        .spawn(
            "streamer",
            Props::new(move || Streamer {
                seen: s.clone(),
                flood: None,
                held: Vec::new(),
            }),
        )
        .unwrap();
    let stopped = system
        .spawn(
            "stopped",
            Props::new(|| Streamer {
                seen: Arc::default(),
                flood: None,
                held: Vec::new(),
            }),
        )
        .unwrap();
    system.stop(&stopped);
    // Stopped before the first call: a message that reaches an actor still
    // stopping is dropped with it (INTERNAL), not refused (UNAVAILABLE).
    common::wait_for("the actor to stop", || stopped.is_terminated()).await;
    let gateway = Gateway::builder(&system, settings)
        .server_streaming("/test.Svc/Stream", streamer, |p: Ping, s| Msg::Start(p, s))
        .unwrap()
        .server_streaming("/test.Svc/Stopped", stopped, |p: Ping, s| Msg::Start(p, s))
        .unwrap()
        .server_streaming_with_metadata(
            "/test.Svc/Metadata",
            system
                .spawn("metadata", Props::new(|| MetadataEcho))
                .unwrap(),
            |call: Call<Ping>, s| (call, s),
        )
        .unwrap()
        .build();
    let served = common::Served::start(gateway).await;
    let channel = served.endpoint().connect().await.unwrap();
    Server {
        _system: system,
        channel,
        seen,
        _served: served,
    }
}

async fn open(
    s: &Server,
    text: &str,
    timeout: Option<Duration>,
) -> Result<tonic::Streaming<Ping>, Status> {
    let mut grpc = tonic::client::Grpc::new(s.channel.clone());
    grpc.ready().await.unwrap();
    let mut request = Request::new(Ping { text: text.into() });
    if let Some(t) = timeout {
        let value = format!("{}m", t.as_millis()).parse().unwrap();
        request.metadata_mut().insert("grpc-timeout", value);
    }
    let codec = tonic_prost::ProstCodec::<Ping, Ping>::default();
    let path = http::uri::PathAndQuery::from_static("/test.Svc/Stream");
    grpc.server_streaming(request, path, codec)
        .await
        .map(|r| r.into_inner())
}

/// Every message, then the status the stream ended with.
async fn drain(mut stream: tonic::Streaming<Ping>) -> (Vec<String>, Status) {
    let mut got = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(p)) => got.push(p.text),
            Ok(None) => return (got, Status::ok("")),
            Err(status) => return (got, status),
        }
    }
}

#[tokio::test]
async fn messages_arrive_in_order_then_ok() {
    let s = server(GatewaySettings::default()).await;
    let (got, status) = drain(open(&s, "10", None).await.unwrap()).await;
    let want: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    assert_eq!(got, want);
    assert_eq!(status.code(), Code::Ok);
}

#[tokio::test]
async fn empty_stream_ends_ok() {
    let s = server(GatewaySettings::default()).await;
    let (got, status) = drain(open(&s, "empty", None).await.unwrap()).await;
    assert!(got.is_empty());
    assert_eq!(status.code(), Code::Ok);
}

#[tokio::test]
async fn actor_status_follows_its_messages() {
    let s = server(GatewaySettings::default()).await;
    let (got, status) = drain(open(&s, "err", None).await.unwrap()).await;
    assert_eq!(got, ["0", "1"]);
    assert_eq!(status.code(), Code::Aborted);
    assert_eq!(status.message(), "stopped after two");
}

#[tokio::test]
async fn dropped_stream_is_internal() {
    let s = server(GatewaySettings::default()).await;
    let (got, status) = drain(open(&s, "drop", None).await.unwrap()).await;
    assert!(got.is_empty());
    assert_eq!(status.code(), Code::Internal);
    assert!(status.message().contains("/test.Svc/Stream"), "{status:?}");
}

#[tokio::test]
async fn deadline_ends_the_stream() {
    let s = server(GatewaySettings::default()).await;
    let result = status_of(open(&s, "hold", Some(Duration::from_millis(200))).await).await;
    assert_eq!(result.code(), Code::DeadlineExceeded);
}

#[tokio::test]
async fn slow_client_back_pressures_the_actor() {
    let settings = GatewaySettings {
        stream_buffer: 4,
        ..GatewaySettings::default()
    };
    let s = server(settings).await;
    let mut stream = open(&s, "flood", None).await.unwrap();
    // Not reading: the actor's burst fills the call's buffer faster than
    // hyper drains it, and it is told Full. (The 200 small responses fit
    // in HTTP/2's windows: stream_cancel.rs stalls a client for real.)
    // How many were sent by the time the test looks is a race: hyper
    // drains the buffer into the windows and the actor, told `ready`,
    // goes on, whether or not the client reads. What must hold is that
    // it was told Full, and (below) that every Full had its `ready`.
    let seen = s.seen.clone();
    wait_for("the actor to be told Full", || {
        seen.lock().unwrap().full >= 1
    })
    .await;
    let mut got = 0;
    while let Some(p) = stream.message().await.unwrap() {
        assert_eq!(p.text, got.to_string());
        got += 1;
    }
    assert_eq!(got, FLOOD);
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.sent, FLOOD);
    assert!(seen.ready >= 1, "{seen:?}");
    assert_eq!(seen.full, seen.ready, "{seen:?}");
    assert_eq!((seen.closed, seen.send_closed), (0, 0), "{seen:?}");
}

/// The status a streaming call ends with, whether it comes in the
/// response's headers (Trailers-Only) or after its messages.
async fn status_of(call: Result<tonic::Streaming<Ping>, Status>) -> Status {
    match call {
        Ok(stream) => drain(stream).await.1,
        Err(status) => status,
    }
}

async fn open_raw(s: &Server, path: &'static str, body: Vec<u8>) -> Status {
    let mut grpc = tonic::client::Grpc::new(s.channel.clone());
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static(path);
    let codec = common::RawCodec::<Ping>::default();
    let call = grpc.server_streaming(Request::new(body), path, codec).await;
    status_of(call.map(|r| r.into_inner())).await
}

/// The statuses of a call that cannot start: no actor, a request that is
/// not the method's message, one over the limit. None of them hangs.
#[tokio::test]
async fn a_call_that_cannot_start_has_its_status() {
    let s = server(GatewaySettings {
        max_request_bytes: 1024,
        ..GatewaySettings::default()
    })
    .await;
    let e = open_raw(&s, "/test.Svc/Stopped", vec![]).await;
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert!(e.message().contains("/user/stopped"), "{e:?}");
    let e = open_raw(&s, "/test.Svc/Stream", vec![0xff, 0xff, 0xff]).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let e = open_raw(&s, "/test.Svc/Stream", common::raw::with_text(4096)).await;
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    // The method still serves.
    let (got, status) = drain(open(&s, "2", None).await.unwrap()).await;
    assert_eq!((got.len(), status.code()), (2, Code::Ok));
}

#[tokio::test]
async fn a_stream_with_metadata_sees_the_request_metadata() {
    let s = server(GatewaySettings::default()).await;
    let mut grpc = tonic::client::Grpc::new(s.channel.clone());
    grpc.ready().await.unwrap();
    let mut request = Request::new(Ping { text: "hi".into() });
    request.metadata_mut().append("x-tag", "a".parse().unwrap());
    request.metadata_mut().append("x-tag", "b".parse().unwrap());
    request
        .metadata_mut()
        .insert("grpc-timeout", "5S".parse().unwrap());
    let codec = tonic_prost::ProstCodec::<Ping, Ping>::default();
    let path = http::uri::PathAndQuery::from_static("/test.Svc/Metadata");
    let stream = grpc.server_streaming(request, path, codec).await.unwrap();
    let (got, status) = drain(stream.into_inner()).await;
    assert_eq!(status.code(), Code::Ok);
    // Both values in order; `grpc-timeout` is the gateway's, not metadata.
    assert_eq!(got, ["a", "b", "hi:false"]);
}
