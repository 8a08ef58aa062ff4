//! grpc_bench's Greeter served by a pool of actors through the gRPC
//! gateway (`volley-grpc`).
//!
//! Run it with `cargo run -p volley-examples --release --example greeter`,
//! then call it with any gRPC client and
//! `crates/volley-grpc/proto/helloworld.proto`, for instance
//! `ghz --insecure --proto crates/volley-grpc/proto/helloworld.proto
//! --call helloworld.Greeter.SayHello -d '{"request":{"name":"a"}}'
//! 127.0.0.1:50051`.

use volley::ActorSystem;
use volley_examples::greeter_app::gateway;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let system = ActorSystem::new("greeter")?;
    let (gateway, _pool) = gateway(&system, 4)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await?;
    println!("serving helloworld.Greeter on {}", listener.local_addr()?);
    volley_grpc::serve(listener, gateway, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    system.terminate().await;
    Ok(())
}
