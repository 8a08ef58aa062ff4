//! The streaming greeter, called by tonic's client: every reply, in order.

use volley::ActorSystem;
use volley_examples::greeter_app::{payload, HelloReply, HelloRequest};
use volley_examples::streaming_greeter_app::{gateway, SAY_HELLOS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_streaming_greeter_sends_n_replies_in_order() {
    let system = ActorSystem::new("streaming-greeter-test").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(volley_grpc::serve(
        listener,
        gateway(&system).unwrap(),
        std::future::pending(),
    ));
    let channel = tonic::transport::Channel::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let mut request = payload();
    request.request.as_mut().unwrap().n = 100;
    let mut stream = grpc
        .server_streaming(
            tonic::Request::new(request),
            http::uri::PathAndQuery::from_static(SAY_HELLOS),
            tonic_prost::ProstCodec::<HelloRequest, HelloReply>::default(),
        )
        .await
        .unwrap()
        .into_inner();
    let mut n = 0;
    while let Some(reply) = stream.message().await.unwrap() {
        let hello = reply.response.unwrap();
        assert_eq!(hello.n, n);
        assert_eq!(hello.name, "a name");
        n += 1;
    }
    assert_eq!(n, 100);
}
