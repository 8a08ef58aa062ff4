//! gRPC server reflection served by the gateway (`reflection` feature),
//! asked by tonic's reflection client over real HTTP/2, in both protocol
//! versions; the gateway's own methods are served beside it.

use crate::common;

use std::time::Duration;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet,
    MethodDescriptorProto, ServiceDescriptorProto,
};
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tonic_reflection::pb::{v1, v1alpha};
use volley::{Actor, ActorSystem, Context, HandleResult, Props, ReplyTo};
use volley_grpc::{Gateway, GatewayError, GatewaySettings, Reply};

#[derive(Clone, PartialEq, prost::Message)]
struct Ping {
    #[prost(string, tag = "1")]
    text: String,
}

struct Echo;

impl Actor for Echo {
    type Msg = (Ping, ReplyTo<Reply<Ping>>);
    fn handle(&mut self, _: &mut Context<Self>, (ping, reply_to): Self::Msg) -> HandleResult {
        reply_to.tell(Ok(ping));
        Ok(())
    }
}

/// `test.proto`: `message Ping { string text = 1; }` and
/// `service Svc { rpc Echo(Ping) returns (Ping); }`, as protoc would
/// describe it.
fn descriptors() -> &'static [u8] {
    let ping = DescriptorProto {
        name: Some("Ping".into()),
        field: vec![FieldDescriptorProto {
            name: Some("text".into()),
            number: Some(1),
            label: Some(Label::Optional as i32),
            r#type: Some(Type::String as i32),
            json_name: Some("text".into()),
            ..Default::default()
        }],
        ..Default::default()
    };
    let svc = ServiceDescriptorProto {
        name: Some("Svc".into()),
        method: vec![MethodDescriptorProto {
            name: Some("Echo".into()),
            input_type: Some(".test.Ping".into()),
            output_type: Some(".test.Ping".into()),
            ..Default::default()
        }],
        ..Default::default()
    };
    let file = FileDescriptorProto {
        name: Some("test.proto".into()),
        package: Some("test".into()),
        message_type: vec![ping],
        service: vec![svc],
        syntax: Some("proto3".into()),
        ..Default::default()
    };
    let set = FileDescriptorSet { file: vec![file] };
    Box::leak(set.encode_to_vec().into_boxed_slice())
}

struct Server {
    _system: ActorSystem,
    channel: Channel,
    _served: common::Served,
}

async fn server(reflection: bool) -> Server {
    let system = ActorSystem::new("grpc-reflection-test").unwrap();
    let echo = system.spawn("echo", Props::new(|| Echo)).unwrap();
    let mut builder = Gateway::builder(&system, GatewaySettings::default())
        .unary("/test.Svc/Echo", echo, |p: Ping, r| (p, r))
        .unwrap();
    if reflection {
        builder = builder.reflection(&[descriptors()]).unwrap();
    }
    let gateway = builder.build();
    let served = common::Served::start(gateway).await;
    let channel = served
        .endpoint()
        .timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    Server {
        _system: system,
        channel,
        _served: served,
    }
}

/// One v1 reflection request; its one response.
async fn ask_v1(
    s: &Server,
    request: v1::server_reflection_request::MessageRequest,
) -> Result<v1::server_reflection_response::MessageResponse, Status> {
    let mut client = v1::server_reflection_client::ServerReflectionClient::new(s.channel.clone());
    let request = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(request),
    };
    let mut answers = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await?
        .into_inner();
    let answer = answers.message().await?.expect("one response");
    Ok(answer.message_response.expect("a response"))
}

#[tokio::test]
async fn services_are_listed() {
    use v1::server_reflection_request::MessageRequest;
    use v1::server_reflection_response::MessageResponse;
    let s = server(true).await;
    let MessageResponse::ListServicesResponse(list) =
        ask_v1(&s, MessageRequest::ListServices(String::new()))
            .await
            .unwrap()
    else {
        panic!("not a service list");
    };
    let mut names: Vec<_> = list.service.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(names, ["grpc.reflection.v1.ServerReflection", "test.Svc"]);
}

#[tokio::test]
async fn a_symbols_file_is_found() {
    use v1::server_reflection_request::MessageRequest;
    use v1::server_reflection_response::MessageResponse;
    let s = server(true).await;
    let answer = ask_v1(&s, MessageRequest::FileContainingSymbol("test.Svc".into()))
        .await
        .unwrap();
    let MessageResponse::FileDescriptorResponse(files) = answer else {
        panic!("not a file: {answer:?}");
    };
    let file = FileDescriptorProto::decode(&files.file_descriptor_proto[0][..]).unwrap();
    assert_eq!(file.name(), "test.proto");
    assert_eq!(file.service[0].method[0].name(), "Echo");
    assert_eq!(file.message_type[0].name(), "Ping");
    // tonic's service ends the call NOT_FOUND for an unknown symbol: its
    // status comes through the gateway as it is.
    let e = ask_v1(&s, MessageRequest::FileContainingSymbol("test.Nope".into()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert!(e.message().contains("test.Nope"), "{e:?}");
}

#[tokio::test]
async fn the_older_v1alpha_is_served_too() {
    use v1alpha::server_reflection_request::MessageRequest;
    use v1alpha::server_reflection_response::MessageResponse;
    let s = server(true).await;
    let mut client =
        v1alpha::server_reflection_client::ServerReflectionClient::new(s.channel.clone());
    let request = v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("not a service list");
    };
    assert!(
        list.service.iter().any(|s| s.name == "test.Svc"),
        "{list:?}"
    );
}

#[tokio::test]
async fn methods_are_served_beside_it_and_without_it_reflection_is_unimplemented() {
    for reflection in [true, false] {
        let s = server(reflection).await;
        let mut grpc = tonic::client::Grpc::new(s.channel.clone());
        grpc.ready().await.unwrap();
        let reply = grpc
            .unary(
                Request::new(Ping { text: "hi".into() }),
                http::uri::PathAndQuery::from_static("/test.Svc/Echo"),
                tonic_prost::ProstCodec::<Ping, Ping>::default(),
            )
            .await
            .unwrap();
        assert_eq!(reply.into_inner().text, "hi");
        let listed = ask_v1(
            &s,
            v1::server_reflection_request::MessageRequest::ListServices(String::new()),
        )
        .await;
        match (reflection, listed) {
            (true, Ok(_)) => {}
            (false, Err(e)) => assert_eq!(e.code(), Code::Unimplemented, "{e:?}"),
            (r, other) => panic!("reflection {r}: {other:?}"),
        }
    }
}

#[test]
fn unreadable_descriptors_are_refused() {
    let system = ActorSystem::new("grpc-reflection-bad").unwrap();
    let result = Gateway::builder(&system, GatewaySettings::default())
        .reflection(&[b"\xff\xff not a descriptor set"]);
    match result {
        Err(GatewayError::BadDescriptors(why)) => assert!(!why.is_empty()),
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("garbage accepted"),
    }
}
