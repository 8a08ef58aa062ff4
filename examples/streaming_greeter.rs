//! A server-streaming gRPC method answered by an actor that respects the
//! client's pace: `helloworld.Greeter/SayHellos` on 127.0.0.1:50052.

use volley::ActorSystem;
use volley_examples::streaming_greeter_app::gateway;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let system = ActorSystem::new("streaming-greeter")?;
    let gateway = gateway(&system)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:50052").await?;
    println!(
        "serving helloworld.Greeter/SayHellos on {}",
        listener.local_addr()?
    );
    volley_grpc::serve(listener, gateway, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    system.terminate().await;
    Ok(())
}
