//! The greeter example, called by tonic's client: the payload comes back
//! whole, from a pool of actors, over concurrent calls.

use volley::ActorSystem;
use volley_examples::greeter_app::{gateway, payload, HelloReply, HelloRequest, SAY_HELLO};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_greeter_echoes_grpc_benchs_payload() {
    let system = ActorSystem::new("greeter-test").unwrap();
    let (gateway, _pool) = gateway(&system, 4).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(volley_grpc::serve(
        listener,
        gateway,
        std::future::pending(),
    ));
    let channel = tonic::transport::Channel::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut calls = Vec::new();
    for _ in 0..100 {
        let channel = channel.clone();
        calls.push(tokio::spawn(async move {
            let mut grpc = tonic::client::Grpc::new(channel);
            grpc.ready().await.unwrap();
            grpc.unary(
                tonic::Request::new(payload()),
                http::uri::PathAndQuery::from_static(SAY_HELLO),
                tonic_prost::ProstCodec::<HelloRequest, HelloReply>::default(),
            )
            .await
            .unwrap()
            .into_inner()
        }));
    }
    for call in calls {
        assert_eq!(call.await.unwrap().response, payload().request);
    }
    system.terminate().await;
}
