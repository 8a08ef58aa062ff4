//! An HTTP API in front of an actor: axum handlers ask a counter actor
//! that runs on the same tokio runtime (the `app-runtime` dispatcher).
//!
//! Run it with `cargo run -p volley-examples --example http_counter`, then
//! `curl -X POST localhost:3000/add/5` and `curl localhost:3000/count`.

use volley_examples::http_counter_app::{routes, start};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (system, counter) = start()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, routes(counter))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    system.terminate().await;
    Ok(())
}
