//! The gRPC interoperability test cases of `StreamingOutputCall`, the
//! second half of `interop.rs` (whose module doc lists every case ported
//! and every case skipped, with the reason): `server_streaming`,
//! `server_compressed_streaming` (answered uncompressed),
//! `status_code_and_message`, `special_status_message`,
//! `timeout_on_sleeping_server` and `cancel_after_first_response`, the
//! last four on `StreamingOutputCall` where the interop suite uses
//! `FullDuplexCall` (bidirectional, which the gateway does not do).
//!
//! The actor answers as the interop server does: one response of
//! `size` zero bytes per `ResponseParameters`, in order, each after its
//! `interval_us` (a timer, never a blocking sleep), then OK or the
//! request's `response_status`. Its calls' buffer holds 2 responses, so it
//! also waits for room (`notify_when_ready`).

use crate::common;
use common::wait_for;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use volley::{Actor, ActorSystem, Context, HandleResult, Props};
use volley_grpc::{Gateway, GatewaySettings, ResponseStream, StreamSendError};

use crate::interop_messages;
use interop_messages::{BoolValue, EchoStatus, Payload};

#[derive(Clone, PartialEq, prost::Message)]
struct ResponseParameters {
    #[prost(int32, tag = "1")]
    size: i32,
    #[prost(int32, tag = "2")]
    interval_us: i32,
    #[prost(message, optional, tag = "3")]
    compressed: Option<BoolValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct StreamingOutputCallRequest {
    #[prost(int32, tag = "1")]
    response_type: i32,
    #[prost(message, repeated, tag = "2")]
    response_parameters: Vec<ResponseParameters>,
    #[prost(message, optional, tag = "3")]
    payload: Option<Payload>,
    #[prost(message, optional, tag = "7")]
    response_status: Option<EchoStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct StreamingOutputCallResponse {
    #[prost(message, optional, tag = "1")]
    payload: Option<Payload>,
}

type Out = StreamingOutputCallResponse;

const STREAMING_CALL: &str = "/grpc.testing.TestService/StreamingOutputCall";
const SPECIAL: &str = "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n";

enum Msg {
    Start(StreamingOutputCallRequest, ResponseStream<Out>),
    /// Send what is due on a call: its interval passed, or there is room.
    Next(u64),
    /// The call ended before the actor finished it.
    Closed(u64),
}

struct Call {
    params: VecDeque<ResponseParameters>,
    status: Option<EchoStatus>,
    kind: i32,
    stream: ResponseStream<Out>,
}

/// What the actor did: responses sent per call, calls it was told ended.
#[derive(Default, Debug)]
struct Log {
    sent: HashMap<u64, usize>,
    closed: Vec<u64>,
}

/// `StreamingOutputCall`, or with `sleeping` a server that holds every
/// call without sending.
struct Streamer {
    sleeping: bool,
    calls: HashMap<u64, Call>,
    next: u64,
    log: Arc<Mutex<Log>>,
}

fn echo_status(status: Option<&EchoStatus>) -> Result<(), Status> {
    match status {
        Some(s) if s.code != 0 => Err(Status::new(Code::from_i32(s.code), s.message.clone())),
        _ => Ok(()),
    }
}

fn payload(kind: i32, size: i32) -> Result<Payload, Status> {
    if kind != 0 {
        return Err(Status::invalid_argument("unsupported response_type"));
    }
    let size = usize::try_from(size).map_err(|_| Status::invalid_argument("negative size"))?;
    Ok(Payload {
        r#type: 0,
        body: vec![0; size],
    })
}

impl Streamer {
    fn pump(&mut self, ctx: &mut Context<Self>, id: u64) {
        let me = ctx.myself();
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        let end = loop {
            let Some(params) = call.params.front_mut() else {
                break echo_status(call.status.as_ref());
            };
            if params.interval_us > 0 {
                let delay = Duration::from_micros(params.interval_us as u64);
                params.interval_us = 0;
                ctx.schedule_once(format!("call-{id}"), delay, Msg::Next(id));
                return;
            }
            let response = match payload(call.kind, params.size) {
                Ok(payload) => Out {
                    payload: Some(payload),
                },
                Err(status) => break Err(status),
            };
            match call.stream.try_send(&response) {
                Ok(()) => {
                    call.params.pop_front();
                    *self.log.lock().unwrap().sent.entry(id).or_default() += 1;
                }
                Err(StreamSendError::Full) => {
                    call.stream
                        .notify_when_ready(&me, Msg::Next(id), Msg::Closed(id));
                    return;
                }
                // The client went away: `Closed(id)` is on its way.
                Err(StreamSendError::Closed) => return,
            }
        };
        if let Some(call) = self.calls.remove(&id) {
            call.stream.finish(end);
        }
    }
}

impl Actor for Streamer {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Start(request, stream) => {
                let id = self.next;
                self.next += 1;
                stream.notify_when_closed(&ctx.myself(), Msg::Closed(id));
                let call = Call {
                    params: request.response_parameters.into(),
                    status: request.response_status,
                    kind: request.response_type,
                    stream,
                };
                self.calls.insert(id, call);
                if !self.sleeping {
                    self.pump(ctx, id);
                }
            }
            Msg::Next(id) => self.pump(ctx, id),
            Msg::Closed(id) => {
                if self.calls.remove(&id).is_some() {
                    self.log.lock().unwrap().closed.push(id);
                }
            }
        }
        Ok(())
    }
}

struct Server {
    _system: ActorSystem,
    gateway: Gateway,
    channel: Channel,
    log: Arc<Mutex<Log>>,
    _served: common::Served,
}

async fn server(sleeping: bool) -> Server {
    let system = ActorSystem::new("grpc-interop-streaming").unwrap();
    let log = Arc::new(Mutex::new(Log::default()));
    let l = log.clone();
    let streamer = system
        .spawn(
            "streamer",
            Props::new(move || Streamer {
                sleeping,
                calls: HashMap::new(),
                next: 0,
                log: l.clone(),
            }),
        )
        .unwrap();
    let settings = GatewaySettings {
        default_timeout: Duration::from_secs(60),
        stream_buffer: 2,
        ..GatewaySettings::default()
    };
    let gateway = Gateway::builder(&system, settings)
        .server_streaming(STREAMING_CALL, streamer, Msg::Start)
        .unwrap()
        .build();
    let served = common::Served::start(gateway.clone()).await;
    let channel = served.endpoint().connect().await.unwrap();
    Server {
        _system: system,
        gateway,
        channel,
        log,
        _served: served,
    }
}

async fn open(
    s: &Server,
    request: Request<StreamingOutputCallRequest>,
) -> Result<tonic::Streaming<Out>, Status> {
    let mut grpc = tonic::client::Grpc::new(s.channel.clone());
    grpc.ready().await.unwrap();
    let codec = tonic_prost::ProstCodec::<StreamingOutputCallRequest, Out>::default();
    let path = http::uri::PathAndQuery::from_static(STREAMING_CALL);
    grpc.server_streaming(request, path, codec)
        .await
        .map(|r| r.into_inner())
}

/// Every response and the status the call ended with, within a minute.
async fn drain(call: Result<tonic::Streaming<Out>, Status>) -> (Vec<Out>, Status) {
    let mut stream = match call {
        Ok(stream) => stream,
        Err(status) => return (Vec::new(), status),
    };
    let mut got = Vec::new();
    let all = async {
        loop {
            match stream.message().await {
                Ok(Some(response)) => got.push(response),
                Ok(None) => return Status::ok(""),
                Err(status) => return status,
            }
        }
    };
    let status = tokio::time::timeout(Duration::from_secs(60), all).await;
    (got, status.expect("the call did not end within a minute"))
}

fn sizes(sizes: &[i32]) -> Vec<ResponseParameters> {
    let param = |&size| ResponseParameters {
        size,
        ..ResponseParameters::default()
    };
    sizes.iter().map(param).collect()
}

fn assert_zeros(response: &Out, size: usize) {
    let payload = response.payload.as_ref().expect("a payload");
    assert_eq!(payload.r#type, 0, "COMPRESSABLE");
    assert_eq!(payload.body.len(), size);
    assert!(payload.body.iter().all(|b| *b == 0), "not all zeros");
}

#[tokio::test]
async fn server_streaming() {
    let s = server(false).await;
    let request = StreamingOutputCallRequest {
        response_parameters: sizes(&[31415, 9, 2653, 58979]),
        ..StreamingOutputCallRequest::default()
    };
    let (got, status) = drain(open(&s, Request::new(request)).await).await;
    assert_eq!(status.code(), Code::Ok, "{status:?}");
    assert_eq!(got.len(), 4);
    for (response, size) in got.iter().zip([31415, 9, 2653, 58979]) {
        assert_zeros(response, size);
    }
}

/// Both responses come, in order, uncompressed (tonic's client would fail
/// a compressed one: it has no gzip here); the gateway does not compress.
#[tokio::test]
async fn server_compressed_streaming_is_answered_uncompressed() {
    let s = server(false).await;
    let mut params = sizes(&[31415, 92653]);
    params[0].compressed = Some(BoolValue { value: true });
    params[1].compressed = Some(BoolValue { value: false });
    let request = StreamingOutputCallRequest {
        response_parameters: params,
        ..StreamingOutputCallRequest::default()
    };
    let (got, status) = drain(open(&s, Request::new(request)).await).await;
    assert_eq!(status.code(), Code::Ok, "{status:?}");
    assert_eq!(got.len(), 2);
    assert_zeros(&got[0], 31415);
    assert_zeros(&got[1], 92653);
}

/// The status in the trailers after the response headers (a streaming
/// call's status never comes Trailers-Only), also after responses.
#[tokio::test]
async fn status_code_and_message() {
    let s = server(false).await;
    for before in [&[][..], &[9, 2653][..]] {
        let request = StreamingOutputCallRequest {
            response_parameters: sizes(before),
            response_status: Some(EchoStatus {
                code: 2,
                message: "test status message".into(),
            }),
            ..StreamingOutputCallRequest::default()
        };
        let (got, status) = drain(open(&s, Request::new(request)).await).await;
        assert_eq!(status.code(), Code::Unknown, "{status:?}");
        assert_eq!(status.message(), "test status message");
        assert_eq!(got.len(), before.len());
    }
}

#[tokio::test]
async fn special_status_message() {
    let s = server(false).await;
    let request = StreamingOutputCallRequest {
        response_status: Some(EchoStatus {
            code: 2,
            message: SPECIAL.into(),
        }),
        ..StreamingOutputCallRequest::default()
    };
    let (got, status) = drain(open(&s, Request::new(request)).await).await;
    assert!(got.is_empty());
    assert_eq!(status.code(), Code::Unknown, "{status:?}");
    assert_eq!(status.message(), SPECIAL);
}

/// The gateway's deadline ends a call its actor holds without sending.
/// (Its `grpc-timeout` is 300 ms: tonic's channel enforces only the
/// deadline until the response headers, which the gateway sends at once.)
#[tokio::test]
async fn timeout_on_sleeping_server() {
    let s = server(true).await;
    let mut request = Request::new(StreamingOutputCallRequest {
        response_parameters: sizes(&[31415]),
        payload: Some(Payload {
            r#type: 0,
            body: vec![0; 27182],
        }),
        ..StreamingOutputCallRequest::default()
    });
    request
        .metadata_mut()
        .insert("grpc-timeout", "300m".parse().unwrap());
    let (got, status) = drain(open(&s, request).await).await;
    assert!(got.is_empty());
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    wait_for("the actor is told", || s.log.lock().unwrap().closed == [0]).await;
    wait_for("the call is let go", || s.gateway.open_streams() == 0).await;
}

/// The client cancels after the first response (the second is due 10 s
/// later): the actor is told, and has sent nothing more; the gateway lets
/// the call go.
#[tokio::test]
async fn cancel_after_first_response() {
    let s = server(false).await;
    let mut params = sizes(&[31415, 9]);
    params[1].interval_us = 10_000_000;
    let request = StreamingOutputCallRequest {
        response_parameters: params,
        payload: Some(Payload {
            r#type: 0,
            body: vec![0; 27182],
        }),
        ..StreamingOutputCallRequest::default()
    };
    let mut stream = open(&s, Request::new(request)).await.unwrap();
    let first = stream.message().await.unwrap().unwrap();
    assert_zeros(&first, 31415);
    assert_eq!(s.gateway.open_streams(), 1);
    drop(stream);
    wait_for("the actor is told", || s.log.lock().unwrap().closed == [0]).await;
    wait_for("the call is let go", || s.gateway.open_streams() == 0).await;
    assert_eq!(s.log.lock().unwrap().sent[&0], 1);
}
