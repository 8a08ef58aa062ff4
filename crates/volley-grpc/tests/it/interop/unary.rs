//! The gRPC interoperability test cases (grpc/grpc's
//! `doc/interop-test-descriptions.md`, which grpc-java, grpc-go and Akka
//! gRPC run), ported against the gateway: `grpc.testing.TestService`'s
//! unary and server-streaming methods answered by actors as the interop
//! server answers them, called by tonic's client (or a bare HTTP/2 client
//! where the case looks at the wire: message flags, raw headers).
//!
//! Ported, here: `empty_unary`, `large_unary`, `client_compressed_unary`
//! (as the spec's failure for an unsupported encoding), the
//! `server_compressed_unary` request (answered uncompressed: see its test),
//! `custom_metadata` (unary; through `unary_with_metadata`),
//! `status_code_and_message` and `special_status_message` (unary),
//! `unimplemented_method`, `unimplemented_service`,
//! `timeout_on_sleeping_server` (unary). In `interop_streaming.rs`:
//! `server_streaming`, `server_compressed_streaming`, the streaming halves
//! of `status_code_and_message`, `special_status_message` and
//! `timeout_on_sleeping_server` (on `StreamingOutputCall`, where the
//! interop suite uses `FullDuplexCall`), and `cancel_after_first_response`
//! (likewise).
//!
//! Skipped, with the reason: `client_streaming`,
//! `client_compressed_streaming`, `cancel_after_begin` (need
//! `StreamingInputCall`, client streaming), `ping_pong`, `empty_stream`
//! (need `FullDuplexCall`, bidirectional streaming): the gateway does not
//! do those (documented "not yet"). `cacheable_unary` (GET requests
//! through a caching proxy: the gateway takes POSTs only). The auth cases
//! (`compute_engine_creds`, `jwt_token_creds`, `oauth2_auth_token`,
//! `per_rpc_creds`, `google_default_credentials`): they need TLS and
//! Google credentials, neither of which the gateway has. Client-side
//! cases (`rpc_soak`, `channel_soak`, `pick_first_unary`, ...) and the
//! "TODO" `concurrent_large_unary` test the client's channel.
//!
//! Compression: the gateway neither decompresses nor compresses (see the
//! compression tests). Timeouts are sent as `grpc-timeout` alone.

use crate::common;

use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use volley::{Actor, ActorSystem, Context, HandleResult, Props, ReplyTo};
use volley_grpc::{Call, Gateway, GatewaySettings, Reply, WithMetadata};

use crate::interop_messages;
use interop_messages::{BoolValue, EchoStatus, Payload};

#[derive(Clone, PartialEq, prost::Message)]
struct Empty {}

#[derive(Clone, PartialEq, prost::Message)]
struct SimpleRequest {
    #[prost(int32, tag = "1")]
    response_type: i32,
    #[prost(int32, tag = "2")]
    response_size: i32,
    #[prost(message, optional, tag = "3")]
    payload: Option<Payload>,
    #[prost(bool, tag = "4")]
    fill_username: bool,
    #[prost(bool, tag = "5")]
    fill_oauth_scope: bool,
    #[prost(message, optional, tag = "6")]
    response_compressed: Option<BoolValue>,
    #[prost(message, optional, tag = "7")]
    response_status: Option<EchoStatus>,
    #[prost(message, optional, tag = "8")]
    expect_compressed: Option<BoolValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SimpleResponse {
    #[prost(message, optional, tag = "1")]
    payload: Option<Payload>,
    #[prost(string, tag = "2")]
    username: String,
    #[prost(string, tag = "3")]
    oauth_scope: String,
}

const EMPTY_CALL: &str = "/grpc.testing.TestService/EmptyCall";
const UNARY_CALL: &str = "/grpc.testing.TestService/UnaryCall";

/// The interop suite's special status message: whitespace, a BMP and a
/// non-BMP character.
const SPECIAL: &str = "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n";

enum Unary {
    Empty(Empty, ReplyTo<Reply<Empty>>),
    Simple(
        Call<SimpleRequest>,
        ReplyTo<Reply<WithMetadata<SimpleResponse>>>,
    ),
}

/// `EmptyCall` and `UnaryCall`, as the interop server answers them.
struct TestService;

impl Actor for TestService {
    type Msg = Unary;
    fn handle(&mut self, _: &mut Context<Self>, msg: Unary) -> HandleResult {
        match msg {
            Unary::Empty(empty, reply_to) => reply_to.tell(Ok(empty)),
            Unary::Simple(call, reply_to) => {
                let answer = unary_call(call.message).map(|message| {
                    let mut answer = WithMetadata::new(message);
                    echo_metadata(&call.metadata, &mut answer);
                    answer
                });
                reply_to.tell(answer)
            }
        }
        Ok(())
    }
}

/// What the interop server echoes: `x-grpc-test-echo-initial` as initial
/// metadata, `x-grpc-test-echo-trailing-bin` as trailing metadata.
fn echo_metadata<T>(request: &tonic::metadata::MetadataMap, answer: &mut WithMetadata<T>) {
    const INITIAL: &str = "x-grpc-test-echo-initial";
    const TRAILING: &str = "x-grpc-test-echo-trailing-bin";
    if let Some(v) = request.get(INITIAL) {
        answer.headers.insert(INITIAL, v.clone());
    }
    if let Some(v) = request.get_bin(TRAILING) {
        answer.trailers.insert_bin(TRAILING, v.clone());
    }
}

fn unary_call(request: SimpleRequest) -> Reply<SimpleResponse> {
    if let Some(status) = request.response_status.filter(|s| s.code != 0) {
        return Err(Status::new(Code::from_i32(status.code), status.message));
    }
    if request.expect_compressed.is_some_and(|c| c.value) {
        // The gateway hands its actors only requests that came uncompressed.
        return Err(Status::invalid_argument("expected a compressed request"));
    }
    if request.response_type != 0 {
        return Err(Status::invalid_argument("unsupported response_type"));
    }
    let size = usize::try_from(request.response_size)
        .map_err(|_| Status::invalid_argument("negative response_size"))?;
    let body = vec![0; size];
    Ok(SimpleResponse {
        payload: Some(Payload { r#type: 0, body }),
        ..SimpleResponse::default()
    })
}

/// The "sleeping server": holds every call, answering none.
struct Sleeper(Vec<ReplyTo<Reply<SimpleResponse>>>);

impl Actor for Sleeper {
    type Msg = ReplyTo<Reply<SimpleResponse>>;
    fn handle(&mut self, _: &mut Context<Self>, reply_to: Self::Msg) -> HandleResult {
        self.0.push(reply_to);
        Ok(())
    }
}

struct Server {
    _system: ActorSystem,
    channel: Channel,
    port: u16,
    _served: common::Served,
}

/// The interop server, or with `sleeping` one whose `UnaryCall` never
/// answers.
async fn server(sleeping: bool) -> Server {
    let system = ActorSystem::new("grpc-interop").unwrap();
    let settings = GatewaySettings {
        default_timeout: Duration::from_secs(60),
        ..GatewaySettings::default()
    };
    let builder = Gateway::builder(&system, settings);
    let gateway = if sleeping {
        let sleeper = system
            .spawn("sleeper", Props::new(|| Sleeper(Vec::new())))
            .unwrap();
        builder.unary(UNARY_CALL, sleeper, |_: SimpleRequest, r| r)
    } else {
        let service = system.spawn("test-service", Props::new(|| TestService));
        let service = service.unwrap();
        builder
            .unary(EMPTY_CALL, service.clone(), |e: Empty, r| {
                Unary::Empty(e, r)
            })
            .unwrap()
            .unary_with_metadata(UNARY_CALL, service, |s: Call<SimpleRequest>, r| {
                Unary::Simple(s, r)
            })
    };
    let served = common::Served::start(gateway.unwrap().build()).await;
    let channel = served.endpoint().connect().await.unwrap();
    Server {
        _system: system,
        channel,
        port: served.port,
        _served: served,
    }
}

/// A unary call by tonic's client, at most a minute.
async fn call<Req, Resp>(s: &Server, path: &str, request: Request<Req>) -> Result<Resp, Status>
where
    Req: prost::Message + Send + 'static,
    Resp: prost::Message + Default + Send + 'static,
{
    let mut grpc = tonic::client::Grpc::new(s.channel.clone());
    grpc.ready().await.unwrap();
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    let path = http::uri::PathAndQuery::try_from(path).unwrap();
    let call = grpc.unary(request, path, codec);
    let response = tokio::time::timeout(Duration::from_secs(60), call).await;
    response
        .expect("no answer within a minute")
        .map(|r| r.into_inner())
}

/// The large_unary request: 314159 bytes wanted for 271828 sent.
fn large() -> SimpleRequest {
    SimpleRequest {
        response_size: 314159,
        payload: Some(Payload {
            r#type: 0,
            body: vec![0; 271828],
        }),
        ..SimpleRequest::default()
    }
}

fn assert_zeros(payload: &Option<Payload>, size: usize) {
    let payload = payload.as_ref().expect("a payload");
    assert_eq!(payload.r#type, 0, "COMPRESSABLE");
    assert_eq!(payload.body.len(), size);
    assert!(payload.body.iter().all(|b| *b == 0), "not all zeros");
}

fn echo(code: i32, message: &str) -> SimpleRequest {
    SimpleRequest {
        response_status: Some(EchoStatus {
            code,
            message: message.into(),
        }),
        ..SimpleRequest::default()
    }
}

/// A call by a bare HTTP/2 client, for what tonic's client neither sends
/// nor shows: message flags, raw header values. The response's headers,
/// body and trailers.
async fn bare(port: u16, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Bare {
    use http_body_util::BodyExt;
    let mut send = common::bare_http2(port).await;
    let mut request = http::Request::post(format!("http://127.0.0.1:{port}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(http_body_util::Full::new(Bytes::from(body)));
    let response = send.send_request(request.unwrap()).await.unwrap();
    let headers = response.headers().clone();
    let collected = response.into_body().collect().await.unwrap();
    let trailers = collected.trailers().cloned().unwrap_or_default();
    Bare {
        headers,
        body: collected.to_bytes(),
        trailers,
    }
}

struct Bare {
    headers: HeaderMap,
    body: Bytes,
    trailers: HeaderMap,
}

impl Bare {
    /// The status, from the trailers or, Trailers-Only, the headers.
    fn status(&self) -> Status {
        Status::from_header_map(&self.trailers)
            .or_else(|| Status::from_header_map(&self.headers))
            .expect("a grpc-status")
    }
}

/// `message` as one length-prefixed gRPC message with the given flag.
fn framed(flag: u8, message: &[u8]) -> Vec<u8> {
    let mut body = vec![flag];
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(message);
    body
}

/// `data` in the gzip format, in stored (uncompressed) deflate blocks: a
/// real gzip member, made without a compression library.
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let chunks: Vec<&[u8]> = data.chunks(0xffff).collect();
    let chunks = if chunks.is_empty() {
        vec![&[][..]]
    } else {
        chunks
    };
    for (i, chunk) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    let mut crc = !0u32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    out.extend_from_slice(&(!crc).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// Percent-decoding as gRPC's spec defines it for `grpc-message`.
fn percent_decode(raw: &[u8]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let hex = raw
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex
            .filter(|_| raw[i] == b'%')
            .map(|h| u8::from_str_radix(h, 16))
        {
            Some(Ok(byte)) => {
                out.push(byte);
                i += 3;
            }
            _ => {
                out.push(raw[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn empty_unary() {
    let s = server(false).await;
    let reply: Empty = call(&s, EMPTY_CALL, Request::new(Empty {})).await.unwrap();
    assert_eq!(reply, Empty {});
    // On the wire: a zero-byte message each way.
    let answer = bare(s.port, EMPTY_CALL, &[], framed(0, &[])).await;
    assert_eq!(answer.body.as_ref(), &framed(0, &[])[..]);
    assert_eq!(answer.status().code(), Code::Ok);
}

#[tokio::test]
async fn large_unary() {
    let s = server(false).await;
    let reply: SimpleResponse = call(&s, UNARY_CALL, Request::new(large())).await.unwrap();
    assert_zeros(&reply.payload, 314159);
    assert_eq!(
        reply,
        SimpleResponse {
            payload: reply.payload.clone(),
            ..SimpleResponse::default()
        }
    );
}

/// The probe and the uncompressed call pass; the compressed one is
/// UNIMPLEMENTED, naming the encodings the gateway takes.
#[tokio::test]
async fn client_compressed_unary() {
    let s = server(false).await;
    let expect = |value| SimpleRequest {
        expect_compressed: Some(BoolValue { value }),
        ..large()
    };
    let probe: Result<SimpleResponse, _> = call(&s, UNARY_CALL, Request::new(expect(true))).await;
    let e = probe.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");

    let message = prost::Message::encode_to_vec(&expect(true));
    let headers = [("grpc-encoding", "gzip"), ("grpc-accept-encoding", "gzip")];
    let answer = bare(s.port, UNARY_CALL, &headers, framed(1, &gzip(&message))).await;
    let e = answer.status();
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    assert_eq!(
        e.message(),
        "grpc-encoding \"gzip\" is not supported; supported: identity"
    );
    assert_eq!(answer.headers["grpc-accept-encoding"], "identity");
    assert!(answer.body.is_empty());

    let reply: SimpleResponse = call(&s, UNARY_CALL, Request::new(expect(false)))
        .await
        .unwrap();
    assert_zeros(&reply.payload, 314159);
}

/// The compression spec's ill-constructed message: the compressed flag
/// set, no `grpc-encoding` (or `identity`).
#[tokio::test]
async fn a_compressed_flag_without_an_encoding_is_internal() {
    let s = server(false).await;
    let message = prost::Message::encode_to_vec(&large());
    for headers in [&[][..], &[("grpc-encoding", "identity")][..]] {
        let answer = bare(s.port, UNARY_CALL, headers, framed(1, &message)).await;
        let e = answer.status();
        assert_eq!(e.code(), Code::Internal, "{headers:?}: {e:?}");
        assert_eq!(
            e.message(),
            "the message's compressed flag is set, but the request has no grpc-encoding"
        );
    }
}

/// A client that takes gzip and asks for a compressed response gets it
/// uncompressed (flag 0, no `grpc-encoding`): the gateway does not
/// compress, which the compression spec allows and the interop case does
/// not.
#[tokio::test]
async fn server_compressed_unary_is_answered_uncompressed() {
    let s = server(false).await;
    for compressed in [true, false] {
        let request = SimpleRequest {
            response_compressed: Some(BoolValue { value: compressed }),
            ..large()
        };
        let message = prost::Message::encode_to_vec(&request);
        let headers = [("grpc-accept-encoding", "gzip")];
        let answer = bare(s.port, UNARY_CALL, &headers, framed(0, &message)).await;
        assert_eq!(answer.status().code(), Code::Ok);
        assert!(answer.headers.get("grpc-encoding").is_none());
        assert_eq!(answer.body[0], 0, "the compressed flag");
        let len = u32::from_be_bytes(answer.body[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, answer.body.len() - 5);
        let reply: SimpleResponse = prost::Message::decode(&answer.body[5..]).unwrap();
        assert_zeros(&reply.payload, 314159);
    }
}

/// Not yet: the gateway gives its actors no request metadata and sends
/// no response metadata but the status, so the echo keys are not echoed.
/// The call itself, with an ASCII and a binary key, succeeds.
#[tokio::test]
async fn custom_metadata() {
    let s = server(false).await;
    let mut grpc = tonic::client::Grpc::new(s.channel.clone());
    grpc.ready().await.unwrap();
    let mut request = Request::new(large());
    let initial = "test_initial_metadata_value".parse().unwrap();
    request
        .metadata_mut()
        .insert("x-grpc-test-echo-initial", initial);
    let trailing = tonic::metadata::MetadataValue::from_bytes(&[0xab, 0xab, 0xab]);
    request
        .metadata_mut()
        .insert_bin("x-grpc-test-echo-trailing-bin", trailing.clone());
    let codec = tonic_prost::ProstCodec::<SimpleRequest, SimpleResponse>::default();
    let path = http::uri::PathAndQuery::from_static(UNARY_CALL);
    let response = grpc.unary(request, path, codec).await.unwrap();
    // tonic merges a unary call's trailers into its metadata.
    let metadata = response.metadata();
    let initial = metadata.get("x-grpc-test-echo-initial").unwrap();
    assert_eq!(initial, "test_initial_metadata_value");
    let echoed = metadata.get_bin("x-grpc-test-echo-trailing-bin");
    assert_eq!(echoed, Some(&trailing));
    assert_zeros(&response.get_ref().payload, 314159);
}

/// Where the initial and the trailing metadata travel, on the wire: in
/// the response's headers and in its trailers, next to `grpc-status`.
#[tokio::test]
async fn custom_metadata_travels_in_the_headers_and_the_trailers() {
    let s = server(false).await;
    let headers = [
        ("x-grpc-test-echo-initial", "hello"),
        ("x-grpc-test-echo-trailing-bin", "q6ur"),
    ];
    let body = framed(0, &prost::Message::encode_to_vec(&large()));
    let raw = bare(s.port, UNARY_CALL, &headers, body).await;
    assert_eq!(
        raw.headers.get("x-grpc-test-echo-initial").unwrap(),
        "hello"
    );
    assert!(raw.headers.get("x-grpc-test-echo-trailing-bin").is_none());
    assert_eq!(raw.trailers.get("grpc-status").unwrap(), "0");
    assert_eq!(
        raw.trailers.get("x-grpc-test-echo-trailing-bin").unwrap(),
        "q6ur"
    );
    assert!(raw.trailers.get("x-grpc-test-echo-initial").is_none());
}

#[tokio::test]
async fn status_code_and_message() {
    let s = server(false).await;
    let request = Request::new(echo(2, "test status message"));
    let e = call::<_, SimpleResponse>(&s, UNARY_CALL, request)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unknown);
    assert_eq!(e.message(), "test status message");
}

/// The message comes back whole through tonic's decoding, and on the wire
/// it is percent-encoded as the spec says: visible ASCII only, every
/// other byte (UTF-8's included) as `%XX` in upper case.
#[tokio::test]
async fn special_status_message() {
    let s = server(false).await;
    let e = call::<_, SimpleResponse>(&s, UNARY_CALL, Request::new(echo(2, SPECIAL)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unknown);
    assert_eq!(e.message(), SPECIAL);

    let message = prost::Message::encode_to_vec(&echo(2, SPECIAL));
    let answer = bare(s.port, UNARY_CALL, &[], framed(0, &message)).await;
    // Trailers-Only: the status is in the headers.
    assert_eq!(answer.headers["grpc-status"], "2");
    let raw = answer.headers["grpc-message"].as_bytes();
    assert!(raw.iter().all(|b| (0x20..=0x7e).contains(b)), "{raw:?}");
    let raw_text = std::str::from_utf8(raw).unwrap();
    for encoded in ["%09%0A", "%0D%0A", "%E2%98%BA", "%F0%9F%98%88"] {
        assert!(raw_text.contains(encoded), "{raw_text}");
    }
    assert_eq!(percent_decode(raw), SPECIAL);
}

#[tokio::test]
async fn unimplemented_method() {
    let s = server(false).await;
    let path = "/grpc.testing.TestService/UnimplementedCall";
    let e = call::<_, Empty>(&s, path, Request::new(Empty {}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    assert_eq!(e.message(), format!("no method {path}"));
}

#[tokio::test]
async fn unimplemented_service() {
    let s = server(false).await;
    let path = "/grpc.testing.UnimplementedService/UnimplementedCall";
    let e = call::<_, Empty>(&s, path, Request::new(Empty {}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    assert_eq!(e.message(), format!("no method {path}"));
}

/// The interop case's 1 ms deadline, by a bare client: tonic's channel
/// enforces a `grpc-timeout` itself and, its timer firing first, ends the
/// call CANCELLED "Timeout expired" on the client's side (tonic's mapping,
/// docs/reference/grpc.md), which says nothing of the server.
#[tokio::test]
async fn timeout_on_sleeping_server() {
    let s = server(true).await;
    let request = SimpleRequest {
        payload: Some(Payload {
            r#type: 0,
            body: vec![0; 27182],
        }),
        ..SimpleRequest::default()
    };
    let message = prost::Message::encode_to_vec(&request);
    let headers = [("grpc-timeout", "1m")];
    let answer = bare(s.port, UNARY_CALL, &headers, framed(0, &message)).await;
    let e = answer.status();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert!(answer.body.is_empty());
}
